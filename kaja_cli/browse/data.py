"""What `kaja browse` shows and does, without a screen: the rows of the list
(the listing of `kaja sessions`, or a `kaja search` by words or by meaning
grouped by session), a session's preview (the `kaja resume` replay), and the
actions (delete, archive, rename, export) through the same core calls as
their commands.

Plain functions over a `Store`: the screen (`browse.app`) calls them from its
worker threads, and the tests and the benchmark call them directly. Nothing
here imports Textual.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaja_cli.core.conversations.filter import Archived, SessionFilter

if TYPE_CHECKING:
    from kaja_cli.core.conversations.search.model import ProgressFactory
    from kaja_cli.core.conversations.transcript import Replay
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store import Store
    from kaja_cli.render import Line

# How many rows the list holds: the newest sessions with an empty search box,
# the sessions of the best-ranked messages with a query (one row per session,
# its best message's snippet shown).
LIST_LIMIT = 200
SEARCH_HITS = 20  # as `kaja search`: a common word costs what it does there (bench_browse)


@dataclass(frozen=True)
class Options:
    """What `kaja browse` was asked for: the filters of `kaja sessions` (the
    core's `SessionFilter`, its owner the acting owner or None for everyone),
    --owner as typed (who acts on a session), the search's --fts, and
    whether words are searched by meaning (Ctrl-S: `kaja search --semantic`)."""

    filter: SessionFilter
    owner_arg: str | None = None
    fts: bool = False
    limit: int = LIST_LIMIT
    semantic: bool = False

    @property
    def all_owners(self) -> bool:
        return self.filter.owner is None


@dataclass(frozen=True)
class Row:
    """One line of the list: a session, and with a query its best match."""

    id: str
    short_id: str
    title: str  # escaped (`render.text`), "" when untitled
    first_prompt: str | None
    owner: str | None
    updated_at: str | None
    messages: int | None = None
    pending: bool = False
    snippet: str | None = None  # the best matching message's words in context
    highlights: tuple[tuple[int, int], ...] = ()
    role: str | None = None
    seq: int | None = None
    message_id: str | None = None


@dataclass
class Page:
    """The rows for one state of the search box, and what the status line says."""

    query: str
    rows: list[Row]
    total: int | None = None  # sessions matching, before the limit (the listing only)
    more: bool = False  # more matched than the list holds
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # a bad --fts query, a store that cannot be read


def acting(store: Store, opts: Options) -> Owner:
    """Who acts on a session (delete, archive, rename): --owner, else "you"."""
    return store.owner(opts.owner_arg)


def load(store: Store, opts: Options, query: str, progress: ProgressFactory | None = None) -> Page:
    """The rows for `query`: the listing when it is blank, else a search (by
    meaning with `opts.semantic`; `progress` shows its index catching up)."""
    from kaja_cli.errors import KajaError

    try:
        if not query.strip():
            return _listing(store, opts)
        return _search(store, opts, query, progress)
    except KajaError as e:
        return Page(query, [], error=str(e))
    except sqlite3.Error as e:  # the semantic index held too long by another search (a shell's)
        if not opts.semantic:
            raise
        return Page(query, [], error=f"semantic search: {e}")


def _listing(store: Store, opts: Options) -> Page:
    from kaja_cli import render
    from kaja_cli.core.conversations import sessions

    result = sessions.listing(store, opts.filter._replace(limit=opts.limit))
    page = Page("", [], total=result.total, more=result.left_out > 0)
    if not result.store_exists:
        page.notes.append(f"no sessions: there is no Kaja store at {result.location}")
    elif not result.has_sessions_table:
        page.notes.append(f"no sessions: {result.location} has no sessions table")
    for s in result.sessions:
        r = s.row
        page.rows.append(
            Row(
                id=s.id,
                short_id=s.short_id,
                title=render.text(r.get("title")),
                first_prompt=s.first_prompt,
                owner=r.get("owner"),
                updated_at=r.get("updatedAt"),
                messages=s.message_count,
                pending=s.pending,
            )
        )
    return page


def _search(
    store: Store, opts: Options, query: str, progress: ProgressFactory | None = None
) -> Page:
    from kaja_cli import render
    from kaja_cli.core.conversations import search

    flt = opts.filter
    allowed = _allowed_ids(store, flt)
    hits = SEARCH_HITS if allowed is None else max(SEARCH_HITS, 4 * opts.limit)
    how = dict(owner=None if opts.all_owners else opts.owner_arg, all_owners=opts.all_owners,
               limit=hits, archived=flt.archived is not Archived.HIDE)  # fmt: skip
    if opts.semantic:  # the same hits, best first by meaning (no highlights: a message's start)
        from kaja_cli.core.conversations import semantic

        result = semantic.search(store, query, progress=progress, **how)
    else:
        result = search.search(store, query, fts=opts.fts, **how)
    page = Page(query, [], more=result.more, notes=list(result.notes))
    seen: set[str] = set()
    for h in result.hits:
        sid = h.session_id
        if sid is None or sid in seen or (allowed is not None and sid not in allowed):
            continue
        seen.add(sid)
        page.rows.append(
            Row(
                id=sid,
                short_id=h.session_short or sid[:8],
                title=render.text(h.session_title),
                first_prompt=None,
                owner=h.owner,
                updated_at=h.created_at,
                snippet=h.snippet,
                highlights=h.highlights,
                role=h.role,
                seq=h.seq,
                message_id=h.message_id,
            )
        )
        if opts.limit and len(page.rows) >= opts.limit:
            page.more = True
            break
    return page


def _allowed_ids(store: Store, flt: SessionFilter) -> set[str] | None:
    """The sessions the filters allow, when they narrow more than the search
    itself does (the owner, archived or not); None when they do not."""
    from kaja_cli.core.conversations.filter import matching_ids

    plain = flt._replace(owner=None, archived=Archived.HIDE, limit=0)
    if not plain.narrowed and flt.archived is not Archived.ONLY and flt.pending is None:
        return None
    with store.maybe_reader() as conn:
        if conn is None:
            return set()
        return set(matching_ids(conn, flt._replace(limit=0)))


# --- the preview -------------------------------------------------------------------------
@dataclass
class Preview:
    """A session's replay as `kaja resume` shows it, and the line to scroll to."""

    session_id: str
    lines: list[Line]
    target: int | None = None  # index into `lines` of the matching message's first line
    error: str | None = None


def preview(store: Store, opts: Options, row: Row) -> Preview:
    """The replay of `row`'s session; with a query, where its best match is."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.owners import Owner
    from kaja_cli.errors import KajaError
    from kaja_cli.render import replay

    try:
        rep: Replay = transcript.load_replay(store, row.id, Owner.parse(row.owner))
    except KajaError as e:
        return Preview(row.id, [], error=str(e))
    lines = replay.replay_lines(rep)
    return Preview(row.id, lines, _find(lines, row))


def fold(text: str) -> str:
    """Text as the search index compares it: no accents, no case."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


HEADER = 2  # the replay's first lines: the title and the facts (render.replay.header)


def _find(lines: Sequence[Line], row: Row) -> int | None:
    """The first line showing the matched words of `row`'s snippet (the
    longest run around the first highlight), ignoring accents and case; for
    a match by meaning (no highlights: the snippet is the message's start),
    the first line showing its first words."""
    if not row.snippet:
        return None
    if not row.highlights:
        first = fold(row.snippet).split()
        words = [" ".join(first[:n]) for n in (8, 4, 2) if len(first) >= n]
        return _first(lines, words, spaces=True)
    start, end = row.highlights[0]
    words = [fold(row.snippet[start:end])]
    # The snippet's own words around the match, then the match alone.
    around = fold(row.snippet.strip(" …."))
    if len(around) > 12:
        words.insert(0, around[:40])
    return _first(lines, words)


def _first(lines: Sequence[Line], words: list[str], *, spaces: bool = False) -> int | None:
    """The first line after the header holding one of `words`, the first
    found first (`spaces`: runs of white space in a line count as one)."""
    for needle in words:
        if not needle.strip():
            continue
        for n, line in enumerate(lines[HEADER:], start=HEADER):
            text = fold("".join(t for t, _ in line))
            if needle in (" ".join(text.split()) if spaces else text):
                return n
    return None


def still_there(store: Store, row: Row) -> bool:
    """Whether `row`'s session is still in the store (Enter prints only an id
    that `kaja resume` can open)."""
    with store.maybe_reader() as conn:
        if conn is None:
            return False
        return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (row.id,)).fetchone() is not None


# --- the actions ----------------------------------------------------------------------------
def plan_delete(store: Store, opts: Options, row: Row) -> tuple[Any, Any, str]:
    """What deleting `row`'s session takes, and the question naming it: the
    plan of `kaja sessions delete` (its owner rule: another owner's session is
    refused), with Qdrant's points when the memory is there."""
    from kaja_cli.core import qdrant
    from kaja_cli.core.conversations import sessions

    plan = sessions.plan_deletion(store, [row.id], acting(store, opts))
    points = qdrant.plan_forget(store, [s.id for s in plan.sessions])
    return plan, points, describe(plan, points.points if points else 0)


def describe(plan: Any, points: int = 0) -> str:
    """“Delete session “title” (12 messages, 3 tool calls, 2 image files, 1.2 MB)?”"""
    from kaja_cli import render
    from kaja_cli.core.wording import plural

    s = plan.sessions[0]
    names = {"messages": "message", "tool_calls": "tool call", "session_summaries": "summary",
             "model_calls": "model call", "session_events": "event"}  # fmt: skip
    parts = [
        plural(plan.rows.get(t, 0), w, "summaries" if w == "summary" else None)
        for t, w in names.items()
        if plan.rows.get(t, 0)
    ] or ["no messages"]
    if plan.image_files:
        parts.append(plural(plan.image_files, "image file"))
        parts.append(render.human_size(plan.image_bytes))
    if points:
        parts.append(f"{plural(points, 'point')} in Qdrant")
    title = render.text(s.title) or "untitled"
    return f"Delete session {s.id} “{title}” with {', '.join(parts)}?"


def delete(store: Store, opts: Options, plan: Any, points: Any) -> str:
    """Delete as `kaja sessions delete` does: the rows in one transaction,
    the image folders, then Qdrant's points; what was done, in a line."""
    from kaja_cli.core import qdrant
    from kaja_cli.core.conversations import sessions
    from kaja_cli.core.wording import plural

    done = sessions.delete(store, plan, acting(store, opts))
    gone = qdrant.forget(points) if points else 0
    if not done.sessions:
        return "nothing deleted: the session was already gone"
    n = sum(done.rows.values())
    extra = f", {plural(gone, 'point')} from Qdrant" if gone else ""
    return f"deleted {done.sessions[0].id} ({plural(n, 'row')}{extra})"


def set_archived(store: Store, opts: Options, row: Row, on: bool) -> str:
    from kaja_cli import render
    from kaja_cli.core.conversations import archive

    done = archive.set_archived(store, [row.id], acting(store, opts), archived=on)
    verb = "archived" if on else "unarchived"
    s = (done.changed or done.unchanged)[0]
    title = render.text(s.title) or "(untitled)"
    return f"{verb} {s.id} {title}" if done.changed else f"{s.id} was already {verb}"


def rename(store: Store, opts: Options, row: Row, title: str) -> str:
    from kaja_cli import render
    from kaja_cli.core.conversations import archive

    done = archive.rename(store, row.id, title, acting(store, opts))
    return f"renamed {done.session.id} → {render.text(done.new_title)}"


def default_export_path(row: Row) -> str:
    import os

    from kaja_cli.core.conversations.export import file_for

    return os.path.join(os.getcwd(), file_for(row.id, "md"))


def export_markdown(store: Store, opts: Options, row: Row, output: str) -> str:
    """The session as `kaja sessions export ID -o FILE` writes Markdown: whole
    or not at all, readable only by you, never over one of the store's files."""
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core
    from kaja_cli.core.conversations.transcript import resolve
    from kaja_cli.errors import UsageError
    from kaja_cli.render.export import session_chunks, write

    if not output.strip():
        raise UsageError("no file given: nothing was written")
    target = core.output_target(store.paths, output.strip(), folder_wanted=False)
    if target.folder or target.path is None:
        raise UsageError(f"{output.strip()} is a folder: give a file name")
    with store.reader() as conn:
        sid = resolve(conn, row.id, acting(store, opts)).id
    docs = core.sessions(store, [sid])  # held: its connection reads the messages as written
    doc = next(docs, None)
    if doc is None:
        raise UsageError(f"session {sid} is gone: nothing was written")
    with core.private_file(target.real) as f:
        size = write(f, session_chunks(doc, "md", embed_images=True))
    docs.close()
    return f"wrote {target.path} ({render.human_size(size)})"
