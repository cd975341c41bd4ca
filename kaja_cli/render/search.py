"""What `kaja search` prints for a person or a pipe (the JSON is the
result's own `to_json()`; `--notes` is `render/notes.py`'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core.owners import label
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.conversations.search import SearchResult


def hits(result: SearchResult) -> None:
    """The matches: the session, its title, when, the role and the words in context."""
    found = result.hits
    if not found:
        return
    caption = None
    if result.more:
        caption = (
            f"showing the {'newest' if result.recent else 'best'} {len(found)}; "
            "more match (--limit N, or 0 for all)"
        )
    owners = result.all_owners
    # The match is what you came for: shown whole, wrapped. The session's
    # short id never gives way; on a narrow terminal the time, the role, the
    # owner and the title go, in that order (docs/guides/search.md).
    cols = [Col("session", style="cyan", kind="whole")]
    if owners:
        cols.append(Col("owner", kind="whole", drop=3))
    cols += [
        Col("title", kind="text", drop=4, min=12),
        Col("when", kind="whole", drop=1),
        Col("role", kind="whole", drop=2),
        Col("match", kind="text", min=30),
    ]
    rows, plain = [], []
    for h in found:
        who = [label(h.owner)] if owners else []
        rows.append(
            [h.session_short or "-", *who, h.session_title or "", render.relative_time(h.created_at),
             h.role or "", render.highlighted(h.snippet, h.highlights)]
        )  # fmt: skip
        plain.append(
            [h.session_id or "", *who, h.created_at or "", h.role or "", h.session_title or "",
             h.snippet]
        )  # fmt: skip
    render.table(cols, rows, caption=caption, plain_rows=plain)


def remarks(result: SearchResult, text: str) -> None:
    """After the hits, on stderr (with --json too): what the search noticed, or that
    nothing matched, and where it looked."""
    for line in result.notes:
        render.note(line)
    if not result.hits and result.source != "none":
        render.note(f"no matches for {text!r}{_whose(result)}")
        if result.archived_hidden:
            render.note("archived sessions were left out (--archived searches them too)")


def _whose(result: SearchResult) -> str:
    if result.all_owners:
        return ""
    who = result.owner or "the terminal"
    return f" in {who}'s messages (--all-owners searches everyone's)"
