"""`kaja search`: full-text search across every past conversation."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, OWNER_HELP, count, store_of
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.conversations.search import SearchResult


def search(
    ctx: typer.Context,
    query: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="QUERY",
            help="Words to find: every word must match; accents, case and punctuation are ignored.",
            show_default=False,
        ),
    ] = None,
    fts: Annotated[
        bool,
        typer.Option(
            "--fts",
            help='QUERY is SQLite FTS4 query syntax: "a phrase", OR, NOT, NEAR, prefix*, ( ).',
        ),
    ] = False,
    recent: Annotated[
        bool, typer.Option("--recent", help="Newest first instead of best match first.")
    ] = False,
    owner: Annotated[
        str | None,
        typer.Option(
            metavar="ID",
            help=OWNER_HELP,
            autocompletion=hook("owner"),
        ),
    ] = None,
    all_owners: Annotated[
        bool,
        typer.Option("--all-owners", help="Search every owner's messages (adds an owner column)."),
    ] = False,
    session: Annotated[
        str | None,
        typer.Option(
            metavar="ID",
            help="Only this session: a full id or a unique prefix.",
            autocompletion=hook("session"),
        ),
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ROLE",
            autocompletion=hook("role"),
            help="Only messages with this role: user, assistant, tool or system (repeatable).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            help="Only messages since then: 2026-11-01, 2026-11-01T08:00, 3d, 12h, 2w.",
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", click_type=count(), help="Show at most this many; 0 shows all."
        ),
    ] = 20,
    reindex: Annotated[
        bool,
        typer.Option(
            "--reindex", help="Rebuild the search index from every message first (a progress bar)."
        ),
    ] = False,
    archived: Annotated[
        bool,
        typer.Option("--archived", help="Search archived sessions too (left out otherwise)."),
    ] = False,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Never page long output on a terminal.")
    ] = False,
    notes: Annotated[
        bool,
        typer.Option("--notes", help="Search the notes (the agent's memory) instead of messages."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Find messages across every past conversation, best match first.

    Plain words by default: every word must appear, in any order; accents
    and case don't matter (creme brulee finds "Crème brûlée") and
    punctuation is harmless (c++, don't). Chinese, Japanese and Korean
    words are found inside sentences (東京 in 私は東京に住んでいます).
    --fts takes SQLite's FTS4 syntax instead. Each hit shows its session, time, role and the words in
    context. Without a search index (a store another program made), kaja
    builds it when it may write the store, and otherwise scans the messages
    and says so. --notes searches the notes' keys, tags and content instead.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import search as core_search
    from kaja_cli.errors import UsageError

    text = " ".join(query or [])
    if notes:
        _notes(ctx, text, fts, recent, owner, all_owners, session, role, since, limit, reindex,
               no_pager, as_json)  # fmt: skip
        return
    store = store_of(ctx)
    if reindex:
        count = core_search.reindex(store, progress=render.progress)
        render.note(f"reindexed {render.plural(count, 'message')} in {store.where()}")
        if not text:
            if as_json:
                render.emit_json({"reindexed": {"path": store.where(), "messages": count}})
            return
    elif not text.strip():
        raise UsageError(
            "nothing to search for", hint="give some words, e.g. `kaja search tomato shade`"
        )
    result = core_search.search(
        store, text, fts=fts, owner=owner, all_owners=all_owners, session=session,
        roles=role or (), since=since, limit=limit, recent=recent, progress=render.progress,
        archived=archived,
    )  # fmt: skip
    if as_json:
        render.emit_json(_as_json(result))
    else:
        _print(render, result, no_pager)
    for line in result.notes:
        render.note(line)
    if not result.hits and result.source != "none":
        render.note(f"no matches for {text!r}{_whose(result)}")
        if result.archived_hidden:
            render.note("archived sessions were left out (--archived searches them too)")


def _notes(ctx, text, fts, recent, owner, all_owners, session, role, since, limit, reindex,
           no_pager, as_json) -> None:  # fmt: skip
    from kaja_cli.commands import notes
    from kaja_cli.errors import UsageError

    for name, given in (("--session", session), ("--role", role), ("--reindex", reindex)):
        if given:
            raise UsageError(f"{name} is for messages: it does not go with --notes")
    notes.search(ctx, text, fts=fts, recent=recent, owner=owner, all_owners=all_owners,
                 since=since, limit=limit, no_pager=no_pager, as_json=as_json)  # fmt: skip


def _whose(result: "SearchResult") -> str:
    if result.all_owners:
        return ""
    who = result.owner or "the terminal"
    return f" in {who}'s messages (--all-owners searches everyone's)"


def _as_json(result: "SearchResult") -> dict:
    return {
        "query": result.query,
        "match": result.match,
        "fts": result.fts,
        "order": "recent" if result.recent else "best",
        "owner": None if result.all_owners else (result.owner or "terminal"),
        "all_owners": result.all_owners,
        "limit": result.limit,
        "source": result.source,
        "more": result.more,
        "results": [
            {
                "message_id": h.message_id,
                "session_id": h.session_id,
                "session_title": h.session_title,
                "owner": h.owner,
                "seq": h.seq,
                "role": h.role,
                "created_at": h.created_at,
                "score": round(h.score, 6),
                "snippet": h.snippet,
                "highlights": [list(span) for span in h.highlights],
            }
            for h in result.hits
        ],
    }


def _print(render, result: "SearchResult", no_pager: bool) -> None:
    from kaja_cli.core.owners import label

    hits = result.hits
    if not hits:
        return
    caption = None
    if result.more:
        caption = (
            f"showing the {'newest' if result.recent else 'best'} {len(hits)}; "
            "more match (--limit N, or 0 for all)"
        )
    owners = result.all_owners
    Col = render.Col
    # The match is what you came for: shown whole, wrapped. The session's
    # short id never gives way; on a narrow terminal the time, the role, the
    # owner and the title go, in that order (README, "Searching").
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
    for h in hits:
        who = [label(h.owner)] if owners else []
        rows.append(
            [h.session_short or "-", *who, h.session_title or "", render.relative_time(h.created_at),
             h.role or "", render.highlighted(h.snippet, h.highlights)]
        )  # fmt: skip
        plain.append(
            [h.session_id or "", *who, h.created_at or "", h.role or "", h.session_title or "",
             h.snippet]
        )  # fmt: skip
    with render.paged(not no_pager):
        render.table(cols, rows, caption=caption, plain_rows=plain)
