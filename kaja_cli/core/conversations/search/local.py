"""`kaja search` on the local engine: FTS4 over the store's SQLite file (SPEC §6).

Matching is FTS4's, over the index `store.search_index` keeps (`conversation_text`,
tokenizer unicode61 with remove_diacritics=2: accents and case are ignored);
plain queries are the model's (`search.model.plain_match`), and a query in
Chinese, Japanese or Korean asks the CJK index instead (`search.cjk_search`).

Ranking is BM25 exactly as FTS5's `bm25()` computes it (k1 = 1.2, b = 0.75,
idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, the true average length),
which is sqlite-fts4's `rank_bm25` over `matchinfo('pcnalx')` with FTS5's idf
floor and without `'a'`'s rounding to a whole number. No Python function is
called per row: the per-query numbers (idf per phrase, average length) come
from one `matchinfo('pcx')` and FTS4's `%_stat`, and the per-row ones (hits
per phrase from `matchinfo('y')`, length from the `%_docsize` blob) are
decoded and combined in SQL arithmetic (`search.rank`), in FTS5's order of
operations, so SQLite's own top-n sorter ranks the matches and Python sees
only the rows it shows. Ties go to the older message (lower rowid), as in
FTS5's `ORDER BY rank`.

Filters other than `--session` are checked on candidates in rank order, a
batch at a time, so the usual search (the acting owner's best 20) reads the
few messages it shows, not every match.

Without a usable index, a store kaja may write gets one (built in short
batches, as any writing kaja would); otherwise the messages are scanned into
a temporary FTS4 table with the same tokenizer, so the answer is the same,
only slower, and a note says why.

The engine part of `search` for a local store: the same functions as
`search.server`, which `search.search` and `search.reindex` ask for through
`store.part`.
"""

from __future__ import annotations

import os
import sqlite3
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli.core import values
from kaja_cli.core.conversations.filter import ARCHIVE_TABLE
from kaja_cli.core.conversations.search import stems
from kaja_cli.core.conversations.search.model import (
    SNIPPET_TOKENS,
    TOKENIZE,
    Hit,
    ProgressFactory,
    SearchResult,
    parse_snippet,
    plain_match,
    plain_words,
)
from kaja_cli.core.conversations.search.model import progress as progress_of
from kaja_cli.core.conversations.search.rank import Bm25, counts, stats
from kaja_cli.core.conversations.search.tables import NOT_KAJAS, Index, add_index
from kaja_cli.core.engine import db
from kaja_cli.core.ids import SHORT_ID_MIN, short_id
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import search_index
from kaja_cli.core.wording import plural
from kaja_cli.errors import NotFound, UsageError

if TYPE_CHECKING:
    from kaja_cli.core.conversations.search.cjk import Term
    from kaja_cli.core.store import Store

SCAN_TABLE = "kaja_scan"
_HITS_TABLE = "kaja_hits"
_SMALL_MATCH = 5000  # up to this many rows per phrase, snippets come from the index itself
_FIRST_RANKED = 512  # with filters, ranked candidates asked for at first (then all)
# Ranking a match (its matchinfo, length and score) costs about six times what
# listing one of the owner's messages does (measured on the benchmark store):
# the owner's messages are listed first when that saves ranking other owners'.
_RANK_COST = 6
_FIRST_BATCH = 48  # candidates checked against filters in the first round (then ×4)


# --- the engine part's entry points ----------------------------------------------------
def search(
    store: Store,
    query: str,
    *,
    fts: bool,
    owner: Owner | None,
    session: str | None,
    roles: tuple[str, ...],
    since: str | None,
    limit: int,
    recent: bool,
    progress: ProgressFactory | None,
    archived: bool,
    until: str | None = None,
    languages: tuple[str, ...] = (),
) -> SearchResult:
    """`search.search` on the store's file (options already checked there;
    `owner` None: every owner's; `languages` the stemmers of a plain query,
    none for the exact words)."""
    from kaja_cli.core.store import guard  # as `store.recognise` imports it

    file = store.paths.file_of("shared")  # looked up once: the path and the guard's
    path = file.path
    result = SearchResult(
        query=query, match=query if fts else "", fts=fts, recent=recent,
        owner=owner.id if owner else None, all_owners=owner is None, limit=limit,
        location=str(path),
    )  # fmt: skip
    if not path.exists():
        result.source = "none"
        result.notes.append(f"no Kaja store at {path}: nothing to search")
        return result

    identity = _identity(path)
    with db.open_read(path, recover=guard.may_recover(file)) as conn:
        have, shape = _schema(conn, path, identity)
        if "content" not in have.get("messages", ()):
            result.source = "none"
            result.notes.append(f"{path} holds no messages: nothing to search")
            return result
        if not fts:
            result.match = plain_match(query)
        ix, terms = None, None
        if not result.match.isascii():  # else no CJK: a Latin search imports nothing more
            from kaja_cli.core.conversations.search import cjk_search

            ix, terms = cjk_search.choose(store, path, conn, progress, result)
        if ix is None:
            ix = _main_index(store, path, conn, progress, result, shape)
        # One snapshot for every query below (an index built above is in it);
        # each statement outside one would take and drop a read lock of its own.
        conn.execute("BEGIN")
        plan = None
        if not fts and ix.cjk is False and languages:
            plan = stems.plan(plain_words(query), _vocabulary(conn, ix), languages)
            result.match = plan.match
        filters = _Filters(owner, roles, since, None, have)
        filters.until = until
        if session:
            filters.session_id = _find_session(conn, session, owner, have)
        elif not archived:
            filters.hide_archived = result.archived_hidden = _any_archived(conn)
        try:
            _run(conn, ix, result, filters, terms, plan=plan)
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            if _bad_query(e):
                raise UsageError(
                    f"--fts: {e}",
                    hint='FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)',
                ) from None
            raise
    return result


def _main_index(
    store: Store,
    path: Path,
    conn: sqlite3.Connection,
    progress: ProgressFactory | None,
    result: SearchResult,
    shape: str | None = None,
) -> Index:
    """The main index, built first if the store may be written; else a scan
    (`shape`: `search_index.shape`, when known)."""
    state = search_index.state(conn, shape)
    built, why_not = False, None
    if state in (search_index.MISSING, search_index.FILLING):
        # In WAL this reader does not stand in the builder's way, and it
        # sees the new index at its next statement.
        built, why_not = _build(store, path, progress)
        state = search_index.state(conn)
    if state == search_index.READY:
        ix = Index("main", search_index.FTS_TABLE)
        if built:
            count = search_index.message_count(conn)
            result.notes.append(
                f"built the search index of {path} ({plural(count, 'message')}): the store had none"
            )
    else:
        count = _scan(conn, progress)
        ix = Index("temp", SCAN_TABLE)
        result.source = "scan"
        result.notes.append(_scan_note(path, state, why_not, count))
    return ix


def reindex(store: Store, progress: ProgressFactory | None = None) -> int:
    """Rebuild the index from every message: a short transaction to start it
    again empty, then batches, then incremental merges (`store.search_index`), and
    the CJK index too if the store has one. Returns how many messages it holds."""
    path = store.require()
    file = store.paths.file_of("shared")
    with db.open_write(path, file) as conn, progress_of(progress, "indexing messages", None) as bar:
        store.ensure_schema(conn, progress=bar)
        with db.transaction(conn):
            count = search_index.reset(conn)
        bar(0, count)
        search_index.finish(conn, bar)
    from kaja_cli.core.conversations.search import cjk_search

    cjk_search.reindex(store, path, progress)
    return count


# --- the index to use ----------------------------------------------------------------
def _build(store: Store, path: Path, progress: ProgressFactory | None) -> tuple[bool, str | None]:
    """Give the store its search index (`tables.add_index`): (built, why not)."""

    def ensure(conn: sqlite3.Connection) -> bool:
        search_index.ensure(conn, [])
        return True

    def fill(conn: sqlite3.Connection) -> None:
        with progress_of(progress, "building the search index", None) as bar:
            search_index.finish(conn, bar)

    return add_index(store, path, ensure, fill)


def _vocabulary(conn: sqlite3.Connection, ix: Index) -> stems.Vocabulary:
    """The index's words in a range: read from its segments (`words.terms`),
    or, in a shape that reader does not know, from fts4aux (`words.aux_terms`,
    which also reads every doclist of the range)."""
    from kaja_cli.core.conversations.search import words

    def vocabulary(low: str, high: str, inclusive: bool) -> list[tuple[str, int | None]]:
        try:
            found = words.terms(conn, ix.schema, ix.name, low, high, inclusive)
        except words.Unreadable:
            found = words.aux_terms(conn, ix.schema, ix.name, low, high, inclusive)
        return [(t, None) for t, _ in found]

    return vocabulary


def _scan_note(path: Path, state: str, why_not: str | None, count: int) -> str:
    if why_not == NOT_KAJAS:
        reason = "it is not Kaja's store, so kaja adds no search index to it"
    elif state == search_index.FOREIGN:
        reason = (
            f"its {search_index.FTS_TABLE} is not kaja's search index "
            "(`kaja search --reindex` replaces it)"
        )
    elif state == search_index.FILLING:
        reason = f"its search index is still being built and it can't be written now ({why_not})"
    else:
        reason = f"it has no search index and can't be written now ({why_not})"
    return f"searched {path} by scanning its {plural(count, 'message')}: {reason}"


def _scan(conn: sqlite3.Connection, progress: ProgressFactory | None) -> int:
    """Index every message into a temporary FTS4 table of this connection."""
    conn.execute("PRAGMA temp.cache_size = -65536")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{SCAN_TABLE} USING fts4(content, {TOKENIZE})")
    upto = conn.execute("SELECT ifnull(max(rowid), 0) FROM main.messages").fetchone()[0]
    step = search_index.FILL_BATCH
    with progress_of(progress, "scanning messages", upto) as bar:
        for low in range(0, upto, step):
            conn.execute(
                f"INSERT INTO temp.{SCAN_TABLE}(docid, content)"
                " SELECT rowid, content FROM main.messages WHERE rowid > ? AND rowid <= ?",
                (low, low + step),
            )
            bar(min(low + step, upto), upto)
    return conn.execute("SELECT count(*) FROM main.messages").fetchone()[0]


# --- the query -----------------------------------------------------------------------
def _bad_query(error: sqlite3.OperationalError) -> bool:
    """SQLite refusing the query itself (a usage error), not the file."""
    low = str(error).lower()
    return any(
        w in low for w in ("malformed match", "fts expression", "expression tree is too large")
    )


def _int_array(values: Iterable[int]) -> str:
    """A JSON array of integers, for json_each()."""
    return "[" + ",".join(map(str, values)) + "]"


class _Filters:
    """What a message must be to be shown, as SQL over messages `m` and sessions `s`."""

    def __init__(
        self,
        owner: Owner | None,  # None: every owner
        roles: tuple[str, ...],
        since: str | None,
        session_id: str | None,
        have: dict[str, set[str]],
    ) -> None:
        self.owner = owner
        self.roles = roles
        self.since = since
        self.session_id = session_id
        self.have = have
        self.hide_archived = False  # leave out archived sessions' messages
        self.until: str | None = None  # written before then (--until)
        self.owner_first = False  # the ranking reads only the owner's messages

    @property
    def narrows(self) -> bool:
        """Whether the filters checked after ranking can reject a match (the
        owner filter, when the ranking already kept only the owner's, cannot)."""
        return (
            (self.owner is not None and not self.owner_first)
            or bool(self.roles)
            or self.since is not None
            or self.until is not None
            or self.hide_archived
        )

    def col(self, alias: str, table: str, column: str) -> str:
        return f'{alias}."{column}"' if column in self.have.get(table, ()) else "NULL"

    def joins(self) -> str:
        """Messages to their sessions: an owner filter needs the session, so
        a message whose session is missing is nobody's but --all-owners'."""
        if "sessions" not in self.have:
            return ""
        kind = "LEFT JOIN" if self.owner is None else "JOIN"
        return f'{kind} main.sessions AS s ON s."id" = {self.col("m", "messages", "sessionId")}'

    def where(self) -> tuple[str, list]:
        parts, params = [], []
        if self.owner is not None:
            if "sessions" not in self.have:
                parts.append("0")  # no sessions: no message is known to be the owner's
            else:
                cond, args = self.owner.sessions_where(self.col("s", "sessions", "owner"))
                parts.append(cond)
                params.extend(args)
        if self.roles:
            parts.append(
                f"{self.col('m', 'messages', 'role')} IN ({','.join('?' * len(self.roles))})"
            )
            params.extend(self.roles)
        if self.since:
            parts.append(f"{self.col('m', 'messages', 'createdAt')} >= ?")
            params.append(self.since)
        if self.until:
            parts.append(f"{self.col('m', 'messages', 'createdAt')} < ?")
            params.append(self.until)
        if self.session_id:
            parts.append(f"{self.col('m', 'messages', 'sessionId')} = ?")
            params.append(self.session_id)
        if self.hide_archived:
            parts.append(
                f"NOT EXISTS (SELECT 1 FROM main.{ARCHIVE_TABLE} AS ka"
                f" WHERE ka.sessionId = {self.col('m', 'messages', 'sessionId')})"
            )
        return (" AND ".join(parts) or "1"), params


def _run(
    conn: sqlite3.Connection,
    ix: Index,
    result: SearchResult,
    filters: _Filters,
    terms: list[Term] | None = None,
    *,
    messages: int | None = None,
    plan: stems.Plan | None = None,
) -> None:
    """Rank, filter and show the matches of `ix` (`messages`: how many the
    store holds, when `conn` holds only some: the server's, in memory;
    `plan`: the query's words and their forms, from stemming)."""
    want = result.limit + 1 if result.limit else None  # one more: are there more?
    n, avgdl = stats(conn, ix)
    if ix.cjk and n:
        # idf over every message, as one index of them all would give it: a
        # message without CJK text holds none of the query's bigrams.
        n = max(n, _messages(conn) if messages is None else messages)
    found = counts(conn, ix, result.match) if n else []
    groups = None
    if plan is not None and plan.stemmed:
        # Forms no message holds any more (deleted since the index's last
        # merge) leave the query, as the server's counts leave them out.
        every = found or (counts(conn, ix, plan.any_match()) if n else [])
        plan, kept = plan.kept(every)
        result.match, groups = plan.match, plan.groups
        found = kept if found else []
    if not found:  # an empty index, or nothing matches
        return
    bm25 = Bm25(found, n, avgdl, groups)
    shown: dict[int, tuple] = {}  # the rows the filters read, as the hits show them
    if result.recent:
        picked = [(None, docid) for docid in _recent(conn, ix, result.match, filters, want)]
    else:
        picked = _best(conn, ix, result.match, filters, bm25, want, shown)
    if want is not None and len(picked) >= want:
        result.more = True
        picked = picked[: result.limit]
    result.hits = _details(conn, ix, result.match, picked, bm25, filters.have, terms, shown)


def _messages(conn: sqlite3.Connection) -> int:
    """How many messages the store has: the main index's count when it has one
    (one row read, where count(*) reads the table)."""
    if search_index.fill_state(conn) is None:
        try:
            n, _ = stats(conn, Index("main", search_index.FTS_TABLE))
        except sqlite3.OperationalError:  # no main index
            n = 0
        if n:
            return n
    return conn.execute("SELECT count(*) FROM main.messages").fetchone()[0]


def _best(
    conn: sqlite3.Connection,
    ix: Index,
    match: str,
    filters: _Filters,
    bm25: Bm25,
    want: int | None,
    shown: dict[int, tuple],
) -> list[tuple[float | None, int]]:
    """The best `want` matches that pass the filters, as (score, docid); the
    rows of those that passed go into `shown` (`_passing`).

    `--session` narrows the ranking query itself, and so does the owner when
    ranking every owner's matches would cost more than listing the owner's
    messages first (`_owner_first`): the index then ranks only the owner's.
    The other filters are checked on the ranking's output in rank order, with
    many more candidates than `want` asked for at once, and all of them in
    the rare case too few of those passed."""
    push, params = "", bm25.params()
    if filters.session_id:  # one session: rank only its messages
        push = f' AND {ix.name}.docid IN (SELECT rowid FROM main.messages WHERE "sessionId" = :sid)'
        params["sid"] = filters.session_id
    elif _owner_first(conn, filters, bm25):
        cond, args = filters.owner.sessions_where(filters.col("s", "sessions", "owner"))
        push = (
            f" AND {ix.name}.docid IN (SELECT m.rowid FROM main.messages AS m"
            f' JOIN main.sessions AS s ON s."id" = m."sessionId" WHERE {cond.replace("?", ":owner")})'
        )
        if args:
            params["owner"] = args[0]
        filters.owner_first = True
    sql = bm25.sql(ix, push)
    params["match"] = match
    if want is None:
        params["n"] = -1
        return _keep(conn, conn.execute(sql, params).fetchall(), filters, None, shown)
    params["n"] = max(want * 8, _FIRST_RANKED) if filters.narrows else want
    ranked = conn.execute(sql, params).fetchall()
    kept = _keep(conn, ranked, filters, want, shown)
    if len(kept) >= want or len(ranked) < params["n"]:
        return kept
    params["n"] = -1  # too few passed: rank them all, once
    return _keep(conn, conn.execute(sql, params).fetchall(), filters, want, shown)


def _owner_first(conn: sqlite3.Connection, filters: _Filters, bm25: Bm25) -> bool:
    """Whether to rank only the owner's messages: when ranking the others'
    matches would cost more than listing the owner's messages. The owner's
    share of the messages is taken as their share of the sessions (a count
    over the sessions' owner index, and the sessions' largest rowid)."""
    owner = filters.owner
    if owner is None or "id" not in filters.have.get("sessions", ()) or not bm25.n:
        return False
    if "sessionId" not in filters.have.get("messages", ()):
        return False
    cond, args = owner.sessions_where(filters.col("s", "sessions", "owner"))
    try:
        mine, every = conn.execute(
            f"SELECT (SELECT count(*) FROM main.sessions AS s WHERE {cond}),"
            " (SELECT ifnull(max(rowid), 0) FROM main.sessions)",
            args,
        ).fetchone()
    except sqlite3.OperationalError:  # sessions WITHOUT ROWID (another program's)
        mine, every = conn.execute(
            f"SELECT (SELECT count(*) FROM main.sessions AS s WHERE {cond}),"
            " (SELECT count(*) FROM main.sessions)",
            args,
        ).fetchone()
    share = min(1.0, mine / every) if every else 1.0
    return bm25.rows * (1 - share) * _RANK_COST > share * bm25.n


def _keep(
    conn: sqlite3.Connection,
    ranked: list[tuple[int, float]],
    filters: _Filters,
    want: int | None,
    shown: dict[int, tuple],
) -> list[tuple[float | None, int]]:
    """The first `want` of `ranked` (all with None) whose message passes the
    filters, as (score, docid), checked a batch at a time. Every candidate
    is checked, filters or not: a message another program deleted without
    the triggers may linger in the index. The rows read go into `shown`."""
    kept: list[tuple[float | None, int]] = []
    size = _FIRST_BATCH if want is None else max(want * 3, _FIRST_BATCH)
    start = 0
    while start < len(ranked) and (want is None or len(kept) < want):
        batch = ranked[start : start + size]
        # When nothing narrows, every message that passes is shown: what its
        # hit shows is read with it, its session's neighbours too (`_short_ids`).
        passing = _passing(conn, [docid for docid, _ in batch], filters, show=not filters.narrows)
        shown.update((docid, row) for docid, row in passing.items() if row is not None)
        kept.extend((score, docid) for docid, score in batch if docid in passing)
        start += size
        size *= 4
    return kept[:want] if want is not None else kept


def _passing(
    conn: sqlite3.Connection, docids: list[int], filters: _Filters, *, show: bool = False
) -> dict[int, tuple | None]:
    """Those of `docids` whose message passes the filters; with `show`, each
    with what its hit shows (`_shown`, its session's neighbours included), so
    the rows the filters read are not read again for the hits. Without, the
    candidates the filters reject cost no more than the filters' columns (a
    message's `createdAt` lies past its text: a long one's overflow pages)."""
    where, params = filters.where()
    near = show and "sessions" in filters.have
    columns = f", {_shown(filters, near)}" if show else ""
    rows = conn.execute(
        f"SELECT m.rowid{columns} FROM main.messages AS m {filters.joins()}"
        f" WHERE m.rowid IN (SELECT value FROM json_each(?)) AND {where}",
        (_int_array(docids), *params),
    )
    if not show:
        return {r[0]: None for r in rows}
    return {r[0]: _shown_row(r, near) for r in rows}


def _shown(f: _Filters, near: bool = False) -> str:
    """What a hit shows of its message and session (`_shown_row`), as SQL
    over messages `m` and sessions `s` (`_Filters.joins`); with `near`, the
    ids before and after its session's (`_short_ids`)."""
    sid = f.col("m", "messages", "sessionId")
    return (
        f"{f.col('m', 'messages', 'id')}, {sid},"
        f" {f.col('m', 'messages', 'seq')}, {f.col('m', 'messages', 'role')},"
        f" {f.col('m', 'messages', 'createdAt')}, {f.col('s', 'sessions', 'title')},"
        f" {f.col('s', 'sessions', 'owner')}"
    ) + (
        # `+`: compared as `_short_ids` compares its JSON text, with no affinity.
        f', (SELECT max("id") FROM main.sessions WHERE "id" < +{sid}),'
        f' (SELECT min("id") FROM main.sessions WHERE "id" > +{sid})'
        if near
        else ""
    )


def _shown_row(r: tuple, near: bool = False) -> tuple:
    """A row of `m.rowid, _shown(…)` as the hit shows it: ids and names of any
    type another program stored (an INTEGER id) as text; with `near`, then
    the session's short id (`_short_ids`), or None where that must be asked
    for as `_short_ids` asks (a session id that is not text as stored)."""
    row = (*map(values.text, r[1:3]), values.json_safe(r[3]), *map(values.text, r[4:8]))
    if not near:
        return row
    sid = r[2]
    if not sid or not isinstance(sid, str) or "\ufffd" in sid:
        return (*row, None)  # an id of another type, or not UTF-8 as stored
    return (*row, _short_id(sid, r[8], r[9]))


def _recent(
    conn: sqlite3.Connection, ix: Index, match: str, filters: _Filters, want: int | None
) -> list[int]:
    where, params = filters.where()
    created = filters.col("m", "messages", "createdAt")
    rows = conn.execute(
        f"SELECT {ix.name}.docid FROM {ix.table}"
        f" JOIN main.messages AS m ON m.rowid = {ix.name}.docid {filters.joins()}"
        f" WHERE {ix.name} MATCH ? AND {where}"
        f" ORDER BY {created} DESC, m.rowid DESC LIMIT ?",
        (match, *params, -1 if want is None else want),
    )
    return [r[0] for r in rows]


def _details(
    conn: sqlite3.Connection,
    ix: Index,
    match: str,
    picked: list[tuple[float | None, int]],
    bm25: Bm25,
    have: dict[str, set[str]],
    terms: list[Term] | None = None,
    shown: dict[int, tuple] | None = None,
) -> list[Hit]:
    """The hits to show, in `picked` order, with their sessions and snippets
    (for the CJK index, made from the messages' own text with `terms`);
    `shown`: the messages' rows as `_passing` read them, when it read every
    one picked."""
    if not picked:
        return []
    wanted = _int_array([docid for _, docid in picked])
    if shown and all(docid in shown for _, docid in picked):
        messages = {docid: shown[docid] for _, docid in picked}
    else:
        f = _Filters(None, (), None, None, have)
        rows = conn.execute(
            f"SELECT m.rowid, {_shown(f)} FROM main.messages AS m {f.joins()}"
            " WHERE m.rowid IN (SELECT value FROM json_each(?))",
            (wanted,),
        )
        messages = {r[0]: _shown_row(r) for r in rows}
    if bm25.rows <= _SMALL_MATCH:
        # Few matches: asking the index again for just these is cheap.
        name, table = ix.name, ix.table
    else:
        # Many: a temporary FTS4 table of just these messages answers snippet()
        # and matchinfo() for them as the index would, without walking its
        # long doclists again.
        name, table = _HITS_TABLE, f"temp.{_HITS_TABLE}"
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts4(content, {TOKENIZE})")
        conn.execute(f"DELETE FROM {table}")
        select = "SELECT rowid, content FROM main.messages WHERE rowid IN (SELECT value FROM json_each(?))"
        if ix.cjk:
            from kaja_cli.core.conversations.search import cjk_index

            cjk_index.put(conn, table, conn.execute(select, (wanted,)).fetchall())
        else:
            conn.execute(f"INSERT INTO {table}(docid, content) {select}", (wanted,))
    found: dict[int, tuple[str, float]] = {}
    p = bm25.phrases
    # The CJK index holds bigrams: its snippets are cut from the text below.
    snip = "''" if ix.cjk else f"snippet({name}, char(2), char(3), '…', -1, {SNIPPET_TOKENS})"
    # A hit's own score only where the ranking gave none (--recent).
    mi = f"matchinfo({name}, 'yl')" if any(s is None for s, _ in picked) else "NULL"
    for docid, snippet, info in conn.execute(
        f"SELECT docid, {snip}, {mi} FROM {table} WHERE {name} MATCH ?"
        " AND docid IN (SELECT value FROM json_each(?))",
        (match, wanted),
    ):
        own_score = 0.0
        if info is not None:
            numbers = array("I")
            numbers.frombytes(info)
            own_score = bm25.score(numbers[:p], numbers[p])
        found[docid] = (snippet or "", own_score)
    own = {}
    if ix.cjk and terms is not None:
        from kaja_cli.core.conversations.search import cjk_search

        own = cjk_search.snippets(conn, wanted, terms)
    short = {m[1]: m[7] for m in messages.values() if len(m) > 7 and m[7] is not None}
    rest = [m[1] for m in messages.values() if m[1] and m[1] not in short]
    if rest:
        short.update(_short_ids(conn, rest, have))
    hits = []
    for score, docid in picked:
        if docid not in messages or docid not in found:
            continue
        mid, sid, seq, role, created, title, owner = messages[docid][:7]
        raw, own_score = found[docid]
        text, spans = own[docid] if docid in own else parse_snippet(raw)
        hit = Hit(
            message_id=str(mid) if mid is not None else str(docid), session_id=sid,
            session_short=short.get(sid) if sid else None, session_title=title, owner=owner,
            seq=seq, role=role, created_at=created,
            score=own_score if score is None else score, snippet=text, highlights=spans,
        )  # fmt: skip
        hits.append(hit)
    return hits


def _short_ids(
    conn: sqlite3.Connection, ids: list[str], have: dict[str, set[str]]
) -> dict[str, str]:
    """Each session id's short id, as `kaja sessions` shows it (sessions.short_id)."""
    out = {sid: sid[:SHORT_ID_MIN] for sid in ids}
    if not out or "sessions" not in have:
        return out
    rows = conn.execute(
        'SELECT j.value, (SELECT max("id") FROM main.sessions WHERE "id" < j.value),'
        ' (SELECT min("id") FROM main.sessions WHERE "id" > j.value) FROM json_each(?) AS j',
        (_json_strings(out),),
    )
    for sid, before, after in rows:
        out[sid] = _short_id(sid, before, after)
    return out


def _short_id(sid: str, before: object, after: object) -> str:
    """A session's short id from the ids before and after it (`ids.short_id`)."""
    return short_id(sid, before and str(before), after and str(after))


# What a JSON string escapes: the quote, the backslash and the control characters.
_JSON_ESCAPE = {ord('"'): '\\"', ord("\\"): "\\\\", **{c: f"\\u{c:04x}" for c in range(32)}}


def _json_strings(values: Iterable[str]) -> str:
    """A JSON array of strings, for json_each() (without importing json)."""
    return "[" + ",".join(f'"{_json_escaped(v)}"' for v in values) + "]"


def _json_escaped(v: str) -> str:
    # Most ids need nothing escaped: checked in C, where `translate` looks up
    # every character (a control character is never printable).
    if v.isprintable() and '"' not in v and "\\" not in v:
        return v
    return v.translate(_JSON_ESCAPE)


def _any_archived(conn: sqlite3.Connection) -> bool:
    """Whether any session is archived (`kaja sessions archive`)."""
    try:
        return conn.execute(f"SELECT 1 FROM main.{ARCHIVE_TABLE} LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError:  # no such table: a store no kaja archived in
        return False


# What search reads of a store's schema (`_schema`), per file, for this process:
# (schema cookie, columns, the index's shape). A browse session searches on
# every keystroke.
_SCHEMAS: dict[tuple[int, int], tuple[int, dict[str, set[str]], str]] = {}
_SCHEMAS_KEPT = 8  # files remembered at most


def _schema(
    conn: sqlite3.Connection, path: Path, before: tuple[int, int] | None
) -> tuple[dict[str, set[str]], str]:
    """The columns search reads (`_columns`) and what the schema says of the
    search index (`search_index.shape`), read again only when the file's
    schema cookie has changed since this process last read them, as SQLite
    itself keeps a connection's parsed schema. The file is told by its
    device and inode (`_identity`, the same `before` `conn` was opened and
    after), which stay its own while this process lives: the opener keeps a
    descriptor to every database it looked at (`db.read_head`)."""
    cookie = _cookie(conn)
    key = before if before is not None and _identity(path) == before else None
    kept = _SCHEMAS.get(key) if key is not None else None
    if kept is not None and kept[0] == cookie:
        return kept[1], kept[2]
    have, shape = _columns(conn), search_index.shape(conn)
    if key is not None and _cookie(conn) == cookie:  # not changed meanwhile
        if len(_SCHEMAS) >= _SCHEMAS_KEPT:
            _SCHEMAS.clear()
        _SCHEMAS[key] = (cookie, have, shape)
    return have, shape


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` (device and inode); None when none is."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _cookie(conn: sqlite3.Connection) -> int:
    """The schema cookie: SQLite changes it with every change to the schema."""
    return conn.execute("PRAGMA main.schema_version").fetchone()[0]


def _columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Columns of the tables search reads (a file from another program may lack some)."""
    out: dict[str, set[str]] = {}
    for table in ("messages", "sessions"):
        columns = {r[1] for r in conn.execute(f"PRAGMA main.table_info({table})")}
        if columns:
            out[table] = columns
    if "id" not in out.get("sessions", ()):
        out.pop("sessions", None)  # nothing to join messages to
    return out


def _find_session(
    conn: sqlite3.Connection, ref: str, owner: Owner | None, have: dict[str, set[str]]
) -> str:
    from kaja_cli.core.conversations import sessions as core_sessions

    if not {"id", "owner", "title"} <= have.get("sessions", set()):
        raise NotFound(f"no session {ref!r}", hint="this store has no sessions table")
    return core_sessions.find(conn, ref, owner).id  # owner None: --all-owners
