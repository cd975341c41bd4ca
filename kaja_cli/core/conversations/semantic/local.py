"""`kaja search --semantic` on a local store: kaja's index beside it
(`index`), the model (`model`), the ranking described in the package
docstring. The engine part `semantic.search` asks for through `store.part`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kaja_cli.core import values
from kaja_cli.core.conversations.search.model import (
    Hit,
    ProgressFactory,
    SearchResult,
    parse_roles,
)
from kaja_cli.core.conversations.search.model import progress as progress_of
from kaja_cli.core.conversations.semantic import index, model, rank

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.store import Store

EXAMPLE = "kaja search --semantic my plants wilt in the heat"
_FIRST_CANDIDATES = 2000  # re-ranked by cosine at first (then ×8 while too few pass)
_SNIPPET_WORDS = 24


def require() -> None:
    """UsageError (exit 2) without the extra installed."""
    model.files()


def search(
    store: Store,
    query: str,
    *,
    owner: str | None = None,
    all_owners: bool = False,
    session: str | None = None,
    roles: Iterable[str] = (),
    since: str | None = None,
    until: str | None = None,
    limit: int = 20,
    progress: ProgressFactory | None = None,
    archived: bool = False,
) -> SearchResult:
    """The messages closest in meaning to `query`, best first (the options
    are `search.search`'s)."""
    from kaja_cli.core.conversations import search as words
    from kaja_cli.core.conversations.search import local
    from kaja_cli.core.engine import db

    require()
    wanted_roles = parse_roles(roles)
    acting, after, before = words.checked(store, query, owner=owner, all_owners=all_owners,
                                          since=since, until=until, limit=limit,
                                          example=EXAMPLE)  # fmt: skip
    path = store.path()
    result = SearchResult(
        query=query, match="", fts=False, recent=False, owner=acting.id if acting else None,
        all_owners=acting is None, limit=limit, location=str(path),
    )  # fmt: skip
    result.source = "semantic"
    if not path.exists():
        result.source = "none"
        result.notes.append(f"no Kaja store at {path}: nothing to search")
        return result
    with db.open_read(path, recover=store.recognise()) as conn:
        have = local._columns(conn)
        if "content" not in have.get("messages", ()):
            result.source = "none"
            result.notes.append(f"{path} holds no messages: nothing to search")
            return result
        filters = local._Filters(acting, wanted_roles, after, None, have)
        filters.until = before
        if session:
            filters.session_id = local._find_session(conn, session, acting, have)
        elif not archived:
            filters.hide_archived = result.archived_hidden = local._any_archived(conn)
        embedder = _Lazy()
        ix_path = store.paths.semantic_db
        with index.open_index(ix_path, create=True) as ix:
            assert ix is not None
            fresh = _up_to_date(ix, conn, str(path), embedder, progress)
            if fresh:
                result.notes.append(fresh)
            q = model.query_vector(ix, query)
            conn.execute("BEGIN")  # one snapshot of the store for the checks below
            picked = _best(ix, conn, q, filters, limit)
            conn.execute("COMMIT")
        if limit and len(picked) > limit:
            result.more = True
            picked = picked[:limit]
        result.hits = _hits(conn, picked, have)
    return result


def reindex(store: Store, progress: ProgressFactory | None = None) -> int:
    """Build the index again from every message; returns how many it holds."""
    from kaja_cli.core.engine import db

    require()
    path = store.require()
    with (
        db.open_read(path, recover=store.recognise()) as conn,
        index.open_index(store.paths.semantic_db, create=True) as ix,
    ):
        assert ix is not None
        index.clear(ix, str(path))
        _up_to_date(ix, conn, str(path), _Lazy(), progress)
        return ix.execute("SELECT ifnull(sum(n), 0) FROM semantic_chunks").fetchone()[0]


class _Lazy:
    """The model, loaded the first time it is needed (an up-to-date index
    with a query still needs it, but once)."""

    def __init__(self) -> None:
        self.model: model.Embedder | None = None

    def __call__(self) -> model.Embedder:
        if self.model is None:
            self.model = model.Embedder()
        return self.model


def _up_to_date(
    ix: sqlite3.Connection,
    store: sqlite3.Connection,
    where: str,
    embedder: _Lazy,
    progress: ProgressFactory | None,
) -> str | None:
    """Embed what the store added since the last search (all of it for a
    new index, or one made by another model or for another store); what to
    say when that was a build."""
    new = not index.usable(ix, where)
    if new:
        index.clear(ix, where)
    total = index.behind(ix, store)
    with progress_of(progress, "embedding messages", total or None) as bar:
        done = index.update(ix, store, embedder, bar)
    embedder.model = None  # its tokenizer and table, freed before a clustering's arrays
    index.organise(ix)
    if new and done:
        from kaja_cli.core.wording import plural

        return f"built the semantic index ({plural(done, 'message')}) in {index.FILE_NAME}"
    return None


# --- ranking (`rank`) ---------------------------------------------------------------
def _best(
    ix: sqlite3.Connection, store: sqlite3.Connection, q: list[float], filters, limit: int
) -> list[tuple[float, int]]:
    """The best `limit + 1` (all with 0) messages that pass the filters and
    are still there with the id they were embedded with, as (score, rowid)."""
    from kaja_cli.core.conversations.search import local

    ranker = rank.Ranker(ix, q)
    session = None
    if filters.session_id:  # one session: rank only its messages, each by cosine
        session = ranker.cosine([r[0] for r in store.execute(
            'SELECT rowid FROM main.messages WHERE "sessionId" = ?', (filters.session_id,)
        )])  # fmt: skip
    total = len(session) if session is not None else ranker.total
    want = limit + 1 if limit else None
    count = _FIRST_CANDIDATES if want is None else max(_FIRST_CANDIDATES, want * 20)
    where, params = filters.where()
    while True:
        ranked = session if session is not None else ranker.best(min(count, total))
        kept: list[tuple[float, int]] = []
        for start in range(0, len(ranked), 256):
            batch = ranked[start : start + 256]
            found = dict(
                store.execute(
                    f"SELECT m.rowid, {filters.col('m', 'messages', 'id')}"
                    f" FROM main.messages AS m {filters.joins()}"
                    f" WHERE m.rowid IN (SELECT value FROM json_each(?)) AND {where}",
                    (local._int_array([r for _, r, _ in batch]), *params),
                ).fetchall()
            )
            kept += [
                (score, r) for score, r, k in batch
                if r in found and model.key(r if found[r] is None else found[r]) == k
            ]  # fmt: skip
            if want is not None and len(kept) >= want:
                return kept[:want]
        if session is not None or count >= total:
            return kept
        count *= 8


def _hits(store: sqlite3.Connection, picked: list[tuple[float, int]], have) -> list[Hit]:
    """What a listing shows of each picked message: its session, the start of its text."""
    from kaja_cli.core.conversations.search import local

    if not picked:
        return []
    f = local._Filters(None, (), None, None, have)
    rows = store.execute(
        f"SELECT m.rowid, {f.col('m', 'messages', 'id')}, {f.col('m', 'messages', 'sessionId')},"
        f" {f.col('m', 'messages', 'seq')}, {f.col('m', 'messages', 'role')},"
        f" {f.col('m', 'messages', 'createdAt')}, {f.col('s', 'sessions', 'title')},"
        f" {f.col('s', 'sessions', 'owner')}, m.content FROM main.messages AS m {f.joins()}"
        " WHERE m.rowid IN (SELECT value FROM json_each(?))",
        (local._int_array([r for _, r in picked]),),
    )
    found = {r[0]: r[1:] for r in rows}
    short = local._short_ids(
        store, [values.text(v[1]) for v in found.values() if v[1] is not None], have
    )
    hits = []
    for score, rowid in picked:
        if rowid not in found:
            continue
        mid, sid, seq, role, created, title, owner, content = found[rowid]
        sid = values.text(sid)
        hits.append(Hit(
            message_id=values.text(mid) if mid is not None else str(rowid), session_id=sid,
            session_short=short.get(sid) if sid else None, session_title=values.text(title),
            owner=values.text(owner), seq=values.json_safe(seq), role=values.text(role),
            created_at=values.text(created), score=score, snippet=snippet(content),
            highlights=(),
        ))  # fmt: skip
    return hits


def snippet(content: object) -> str:
    """The start of a message on one line, as much as a word search's snippet."""
    words = str(content or "").split()
    text = " ".join(words[:_SNIPPET_WORDS])
    return text + ("…" if len(words) > _SNIPPET_WORDS else "")
