"""`kaja search` on the server: the same messages, ranked the same way (SPEC §6, §10).

The engine part of `search` in cloud mode: the same functions as
`search.local`, which `search.search` and `search.reindex` ask for through
`store.part`.

The query is FTS4 syntax in both modes (`search.model.plain_match` writes
plain words as FTS4 phrases); `fts4` turns it into a `tsquery` over
`messages.kaja_search`, the words SQLite's tokenizer makes (`tokenizer`), so
the set of matching messages is local search's.

Ranking is BM25 exactly as local search computes it (FTS5's bm25(): k1 = 1.2,
b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, the true
average length), from the same numbers: N and the words in all from
`kaja_search_stats`, each phrase's n from a count of the messages holding it,
its hits in a message from `ts_rank_cd` (which, with every weight 1 and no
normalisation, is the number of times a phrase occurs: FTS4's matchinfo 'y'),
and the message's length from `kaja_words`, combined in SQL in FTS5's order
of operations so the server's top-n sort ranks the matches. Ties go to the
message stored first (`ctid`, as SQLite's rowid). The filters (owner, role,
since, session) are part of the one query.

A plain word also finds its other forms (`stems`), looked up in the server's
vocabulary (`kaja_search_terms`, in SQLite's byte order) and counted with the
GIN index, so the query and the ranking of each word's forms as one are local
search's (`search.rank.Bm25`). A server made before kaja stemmed has no
vocabulary until a writing kaja adds it: its words are then listed from the
messages (`ts_stat`, a scan), and a note says so.

Snippets are FTS4's own: the messages shown go into an FTS4 table in memory
and `snippet()` answers with the same query, as local search does for many
matches.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from kaja_cli.core.conversations.columns import columns
from kaja_cli.core.conversations.filter import ARCHIVE_TABLE
from kaja_cli.core.conversations.search import fts4, stems
from kaja_cli.core.conversations.search.model import (
    K1,
    MARK_END,
    MARK_START,
    SNIPPET_TOKENS,
    TOKENIZE,
    B,
    Hit,
    ProgressFactory,
    SearchResult,
    idf,
    parse_snippet,
    plain_match,
    plain_words,
)
from kaja_cli.core.owners import Owner
from kaja_cli.core.store.server import schema as pg_schema
from kaja_cli.errors import Failed

if TYPE_CHECKING:
    from kaja_cli.core.engine.postgres import Connection
    from kaja_cli.core.store import Store

_WEIGHTS = "'{1,1,1,1}'::float4[]"  # every position weighs 1: ts_rank_cd counts hits


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
    """`search.search` on kaja's schema (options already checked there). The
    server's index is kept by its own columns, so nothing is built here
    (`progress` has nothing to show). Archived sessions' messages are left
    out unless `archived` or a `session` is named, as locally."""
    match = query if fts else plain_match(query)
    cjk_words = not match.isascii() and _has_cjk(match)  # answered as local search does
    parsed = None if cjk_words else fts4.parse(match)  # malformed: exit 2 with SQLite's words
    stemming = parsed is not None and not fts and bool(languages)
    result = SearchResult(
        query=query, match=match, fts=fts, recent=recent, owner=owner.id if owner else None,
        all_owners=owner is None, limit=limit, location=store.where(),
    )  # fmt: skip
    with store.maybe_reader() as conn:
        if conn is None:
            result.source = "none"
            result.notes.append(f"no Kaja store in {result.location}: nothing to search")
            return result
        have = columns(conn, "messages", "sessions", ARCHIVE_TABLE, pg_schema.TERMS_TABLE)
        messages = have.get("messages", [])
        if "content" not in messages:
            result.source = "none"
            result.notes.append(f"{result.location} holds no messages: nothing to search")
            return result
        if pg_schema.SEARCH_COLUMN not in messages or pg_schema.WORDS_COLUMN not in messages:
            raise Failed(
                f"{result.location} has no search index",
                hint="`kaja search --reindex` makes it (it writes to the server)",
            )
        filters = _Filters(owner, roles, since, None, have)
        filters.until = until
        if session:
            from kaja_cli.core.conversations import sessions as core_sessions

            filters.session_id = core_sessions.find(conn, session, owner).id
        elif not archived:
            filters.hide_archived = result.archived_hidden = _any_archived(conn, have)
        conn.execute("BEGIN")  # one snapshot for every query below
        known: dict[str, int] = {}  # messages holding a word's tsquery, counted once
        groups = None
        if stemming:
            words = plain_words(query)
            plan = stems.plan(words, _vocabulary(conn, result, pg_schema.TERMS_TABLE in have), languages,
                              _form_counts(conn, known, words))  # fmt: skip
            result.match, groups = plan.match, plan.groups
            parsed = fts4.parse(plan.match)
        if parsed is None:
            _run_cjk(conn, result, filters)
        else:
            _run(conn, result, parsed, filters, groups, known)
        conn.execute("COMMIT")
    return result


def _has_cjk(match: str) -> bool:
    from kaja_cli.core.conversations.search import cjk

    return cjk.has_cjk(match)


def _run_cjk(conn: Connection, result: SearchResult, filters: _Filters) -> None:
    """Chinese, Japanese or Korean words: local search's bigrams and ranking
    over the server's messages in CJK (`cjk_server`), with the server's short ids."""
    from kaja_cli.core.conversations.search import cjk_server

    n, _ = stats(conn)
    cjk_server.search(conn, result, n, owner=filters.owner, roles=filters.roles,
                      since=filters.since, until=filters.until, session_id=filters.session_id,
                      hide_archived=filters.hide_archived)  # fmt: skip
    short = _short_ids(conn, sorted({h.session_id for h in result.hits if h.session_id}))
    for hit in result.hits:
        hit.session_short = short.get(hit.session_id) if hit.session_id else None


class _Filters:
    """What a message must be to be shown, as SQL over messages `m` and sessions `s`."""

    def __init__(self, owner: Owner | None, roles: tuple[str, ...], since: str | None,
                 session_id: str | None, have: dict[str, list[str]]) -> None:  # fmt: skip
        self.owner, self.roles, self.since, self.session_id = owner, roles, since, session_id
        self.sessions = "id" in have.get("sessions", [])
        self.hide_archived = False  # leave out archived sessions' messages
        self.until: str | None = None  # written before then (--until)

    def joins(self) -> str:
        """A message whose session is missing is nobody's but --all-owners'."""
        if not self.sessions:
            return ""
        kind = "LEFT JOIN" if self.owner is None else "JOIN"
        return f' {kind} sessions AS s ON s.id = m."sessionId"'

    def where(self) -> tuple[str, list[Any]]:
        parts, params = [], []
        if self.owner is not None:
            if not self.sessions:
                parts.append("false")
            else:
                cond, args = self.owner.sessions_where("s.owner")
                parts.append(cond)
                params.extend(args)
        if self.roles:
            parts.append(f"m.role IN ({', '.join('?' * len(self.roles))})")
            params.extend(self.roles)
        if self.since:
            parts.append('m."createdAt" >= ?')
            params.append(self.since)
        if self.until:
            parts.append('m."createdAt" < ?')
            params.append(self.until)
        if self.session_id:
            parts.append('m."sessionId" = ?')
            params.append(self.session_id)
        if self.hide_archived:
            parts.append(
                f'NOT EXISTS (SELECT 1 FROM {ARCHIVE_TABLE} AS ka WHERE ka."sessionId" = m."sessionId")'
            )
        return " AND ".join(parts) or "true", params


def _any_archived(conn: Connection, have: dict[str, list[str]]) -> bool:
    """Whether any session is archived (`kaja sessions archive`); a schema made
    before kaja kept archive marks on the server has none."""
    if "sessionId" not in have.get(ARCHIVE_TABLE, ()):
        return False
    return conn.execute(f"SELECT 1 FROM {ARCHIVE_TABLE} LIMIT 1").fetchone() is not None


def _vocabulary(conn: Connection, result: SearchResult, listed: bool) -> stems.Vocabulary:
    """The index's words in a range, in SQLite's byte order (COLLATE "C"), their
    counts left to `_form_counts` (only the forms need one). Without the word
    list (a server made before kaja stemmed), the words and their counts come
    from the messages themselves (ts_stat: a scan of the index column)."""
    noted: list[bool] = []

    def words(low: str, high: str, inclusive: bool) -> list[tuple[str, int | None]]:
        if not listed and not noted:
            noted.append(True)
            result.notes.append(
                f"{result.location} has no list of its search words yet: stemming read"
                " them from every message (any writing kaja, or `kaja search --reindex`,"
                " adds it)"
            )
        op = ">=" if inclusive else ">"
        if listed:
            rows = conn.execute(
                f"SELECT DISTINCT term FROM {pg_schema.TERMS_TABLE} WHERE term {op} CAST(? AS text)"
                ' COLLATE "C" AND term < CAST(? AS text) COLLATE "C" ORDER BY term',
                (low, high),
            )
            return [(r[0], None) for r in rows]
        rows = conn.execute(
            f"SELECT word, ndoc FROM ts_stat('SELECT {pg_schema.SEARCH_COLUMN} FROM messages')"
            f' WHERE word COLLATE "C" {op} CAST(? AS text) COLLATE "C"'
            ' AND word COLLATE "C" < CAST(? AS text) COLLATE "C"',
            (low, high),
        )
        return [(r[0], int(r[1])) for r in rows]

    return words


def _form_counts(conn: Connection, known: dict[str, int], words: list[str]) -> stems.Counts:
    """How many messages hold each word (the GIN index), kept in `known` by
    tsquery for the ranking's counts; the query's own `words` are counted in
    the same statement (the ranking asks for them next: one round trip less)."""

    def count(terms: list[str]) -> dict[str, int]:
        queries = [fts4.phrase_tsquery([fts4.Token(t)]) or "" for t in terms]
        own = [q for w in words if (q := fts4.phrase_tsquery([fts4.Token(w)]))]
        _counts(conn, queries + own, known)
        return {t: known[q] for t, q in zip(terms, queries, strict=True)}

    return count


def _run(
    conn: Connection,
    result: SearchResult,
    parsed: fts4.Query,
    filters: _Filters,
    groups: list[stems.Group] | None = None,
    known: dict[str, int] | None = None,
) -> None:
    """Rank, filter and show the matches (`groups`: the query's words as
    groups of its phrases, from stemming; each phrase its own word without)."""
    if parsed.tsquery is None or not parsed.phrases:
        return  # nothing can match (an empty phrase, say)
    known = {} if known is None else known
    counts = _counts(conn, [p.tsquery for p in parsed.phrases], known)  # with the stats
    n, words = stats(conn, known)
    if not n:
        return
    avgdl = words / n
    groups = groups or [[(i, None)] for i in range(len(counts))]
    idfs = [idf(n, max(counts[i] for i, _ in g)) for g in groups]  # as rank.Bm25
    want = result.limit + 1 if result.limit else None  # one more: are there more?
    rows = _ranked(conn, parsed, filters, groups, idfs, avgdl, want, recent=result.recent)
    if want is not None and len(rows) >= want:
        result.more = True
        rows = rows[: result.limit]
    result.hits = _details(conn, result.match, rows)


# In `known` beside the counts (`_counts`): the index's messages and words in all.
_STATS = ("", "")
_STATS_SQL = (f"(SELECT coalesce(sum(messages), 0) FROM {pg_schema.STATS_TABLE}),"
              f" (SELECT coalesce(sum(words), 0) FROM {pg_schema.STATS_TABLE})")  # fmt: skip


def stats(conn: Connection, known: dict | None = None) -> tuple[int, int]:
    """Messages in the index and their words in all (kaja_search_stats), as
    `_counts` read them into `known` beside the counts, else asked."""
    if known is not None and _STATS in known:
        return known[_STATS]
    row = conn.execute(f"SELECT {_STATS_SQL}").fetchone()
    return int(row[0]), int(row[1])


def _counts(conn: Connection, phrases: list[str], known: dict | None = None) -> list[int]:
    """How many messages hold each phrase (FTS4's matchinfo 'x', third value);
    those in `known` (by tsquery) are not counted again, and the others join
    it, with the index's stats (`stats`) the first time: one statement."""
    known = {} if known is None else known
    column = pg_schema.SEARCH_COLUMN
    asked = list(dict.fromkeys(p for p in phrases if p not in known))
    with_stats = _STATS not in known
    if asked or with_stats:
        selects = [f"(SELECT count(*) FROM messages WHERE {column} @@ CAST(? AS tsquery))"
                   for _ in asked] + ([_STATS_SQL] if with_stats else [])  # fmt: skip
        row = conn.execute(f"SELECT {', '.join(selects)}", asked).fetchone()
        known.update(zip(asked, (int(v) for v in row), strict=False))
        if with_stats:
            known[_STATS] = (int(row[-2]), int(row[-1]))
    return [known[p] for p in phrases]


_P = "CAST(? AS float8)"


def _score_sql(groups: list[stems.Group], idfs: list[float], avgdl: float) -> tuple[str, list]:
    """FTS5's bm25 over ts_rank_cd's hits and kaja_words, as local search
    computes it (search.rank.Bm25.sql: a word's hits are `stems.weight_sql`
    of its phrases'), in the same order of operations; with its parameters."""
    terms, params = [], []
    for group, value in zip(groups, idfs, strict=True):
        f = stems.weight_sql(group, _P)
        f = f if len(group) == 1 else f"({f})"
        inflected = [stems.INFLECTED] * sum(1 for _, w in group if w is not None)
        terms.append(f"{_P} * (({f} * {_P}) / ({f} + {_P} * ({_P} + {_P} * dl / {_P})))")
        params += [value, *inflected, K1 + 1.0, *inflected, K1, 1 - B, B, avgdl]
    return " + ".join(terms), params


def _ranked(
    conn: Connection,
    parsed: fts4.Query,
    filters: _Filters,
    groups: list[stems.Group],
    idfs: list[float],
    avgdl: float,
    want: int | None,
    *,
    recent: bool,
) -> list[tuple[Any, ...]]:
    """(id, score) of the best (or newest) `want` matches passing the filters."""
    column = pg_schema.SEARCH_COLUMN
    hits, hit_params = [], []
    for i, phrase in enumerate(parsed.phrases):
        rank = f"CAST(ts_rank_cd({_WEIGHTS}, m.{column}, CAST(? AS tsquery)) AS float8)"
        if phrase.condition is None:
            hits.append(f"{rank} AS f{i}")
            hit_params.append(phrase.tsquery)
        else:  # FTS4 counts the hits only where the phrase's branch matched
            hits.append(
                f"CASE WHEN m.{column} @@ CAST(? AS tsquery) THEN {rank} ELSE 0 END AS f{i}"
            )
            hit_params += [phrase.condition, phrase.tsquery]
    where, params = filters.where()
    score, score_params = _score_sql(groups, idfs, avgdl)
    order = 'h."createdAt" DESC, h.c DESC' if recent else "h.score DESC, h.c"
    limit = "ALL" if want is None else str(int(want))
    sql = (
        f'SELECT h.id, h.score FROM (SELECT m.id, m.ctid AS c, m."createdAt",'
        f' {score} AS score FROM (SELECT m.id, m.ctid, m."createdAt",'
        f" m.{pg_schema.WORDS_COLUMN} AS dl, {', '.join(hits)} FROM messages AS m{filters.joins()}"
        f" WHERE m.{column} @@ CAST(? AS tsquery) AND {where}) AS m) AS h"
        f" ORDER BY {order} LIMIT {limit}"
    )
    args = [*score_params, *hit_params, parsed.tsquery, *params]
    return conn.execute(sql, args).fetchall()


def _details(conn: Connection, match: str, ranked: list[tuple[Any, ...]]) -> list[Hit]:
    """The hits to show, in rank order, with their sessions and FTS4's snippets."""
    if not ranked:
        return []
    ids = [r[0] for r in ranked]
    rows = conn.execute(
        'SELECT m.id, m."sessionId", m.seq, m.role, m."createdAt", m.content, s.title, s.owner'
        ' FROM messages AS m LEFT JOIN sessions AS s ON s.id = m."sessionId"'
        " WHERE m.id = ANY(CAST(? AS text[]))",
        (ids,),
    ).fetchall()
    found = {r[0]: r for r in rows}
    snippets = _snippets(match, [(i, found[i][5]) for i in ids if i in found])
    short = _short_ids(conn, sorted({r[1] for r in rows if r[1]}))
    hits = []
    for mid, score in ranked:
        if mid not in found:
            continue
        _, sid, seq, role, created, content, title, owner = found[mid]
        text, spans = snippets.get(mid) or (" ".join(str(content or "").split())[:120], ())
        hits.append(
            Hit(message_id=mid, session_id=sid, session_short=short.get(sid) if sid else None,
                session_title=title, owner=owner, seq=seq, role=role, created_at=created,
                score=float(score), snippet=text, highlights=spans)
        )  # fmt: skip
    return hits


def _snippets(match: str, messages: list[tuple[str, str | None]]) -> dict[str, tuple[str, Any]]:
    """FTS4's snippet() of each message for `match`, from an FTS4 table in memory."""
    memory = sqlite3.connect(":memory:")
    try:
        memory.execute(f"CREATE VIRTUAL TABLE hits USING fts4(content, {TOKENIZE})")
        memory.executemany(
            "INSERT INTO hits(docid, content) VALUES (?, ?)",
            [(i, content) for i, (_, content) in enumerate(messages, 1)],
        )
        out = {}
        for docid, raw in memory.execute(
            f"SELECT docid, snippet(hits, char({ord(MARK_START)}), char({ord(MARK_END)}), '…',"
            f" -1, {SNIPPET_TOKENS}) FROM hits WHERE hits MATCH ?",
            (match,),
        ):
            out[messages[docid - 1][0]] = parse_snippet(raw or "")
        return out
    finally:
        memory.close()


def _short_ids(conn: Connection, ids: list[str]) -> dict[str, str]:
    """Each session id's short id, as `kaja sessions` shows it."""
    from kaja_cli.core.ids import short_id

    if not ids:
        return {}
    rows = conn.execute(
        "SELECT j, (SELECT max(id) FROM sessions WHERE id < j), (SELECT min(id) FROM sessions"
        " WHERE id > j) FROM unnest(CAST(? AS text[])) AS j",
        (ids,),
    )
    return {sid: short_id(sid, before, after) for sid, before, after in rows}


# --- kaja search --reindex ---------------------------------------------------------------------
def reindex(store: Store, progress: ProgressFactory | None = None) -> int:
    """Make the server's index again: the folding functions probed anew against
    this server and SQLite (after an upgrade of either), the indexed columns
    recomputed, the statistics recounted. One transaction (`progress` has no
    steps to show); returns the messages."""
    from kaja_cli.core.engine import db

    with store.writer() as conn:
        with db.transaction(conn):
            conn.execute("SELECT pg_advisory_xact_lock(?)", (pg_schema.LOCK,))
            return pg_schema.rebuild_search(conn)
