"""`kaja search` for Chinese, Japanese or Korean words in cloud mode (SPEC §6, §10).

The server's index (`messages.kaja_search`) holds the words SQLite's
unicode61 tokenizer makes, and that tokenizer makes a run of CJK characters
one word: 東京 would never be found inside 私は東京に住んでいます. Local
search answers such a query from its bigram index (`cjk_index`), and this
module answers it the same way, with the same code:

- the server picks the messages holding CJK text (one query, a regular
  expression of the CJK ranges, `cjk.RANGES`), in the order they were stored
  (`ctid`, as SQLite's rowid), with their sessions' owners and titles;
- they go into a SQLite database in memory, each as `cjk.index_text` writes
  it, in an FTS4 table with the local index's tokenizer (`cjk_index.put`);
- local search's own ranking, filters and snippets (`search.local`) run on
  it, with the number of all the server's messages as N (local search's idf
  counts every message too).

So the matches, scores and snippets are local search's, to the last digit.
The cost grows with the messages in CJK on the server (all owners': the idf
counts them all), read at each CJK search; a Latin search never comes here.
`pg_trgm` was not used: its trigrams neither find a two-character word nor
give BM25's numbers over bigrams.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from kaja_cli.core.conversations.filter import ARCHIVE_TABLE
from kaja_cli.core.conversations.search import cjk, cjk_index, local
from kaja_cli.core.conversations.search.model import TOKENIZE, SearchResult
from kaja_cli.core.conversations.search.tables import Index
from kaja_cli.errors import UsageError

if TYPE_CHECKING:
    from kaja_cli.core.engine.postgres import Connection
    from kaja_cli.core.owners import Owner

_TABLE = "kaja_cjk"
_MESSAGES = ("id", "sessionId", "seq", "role", "createdAt", "content")
_SESSIONS = ("id", "owner", "title")


def pattern() -> str:
    """A PostgreSQL regular expression true for a text holding a CJK character."""
    return "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in cjk.RANGES) + "]"


def search(
    conn: Connection,
    result: SearchResult,
    messages: int,
    *,
    owner: Owner | None,
    roles: tuple[str, ...],
    since: str | None,
    session_id: str | None,
    hide_archived: bool = False,
    until: str | None = None,
) -> None:
    """Fill `result` (its `match` turned into bigram phrases) from the
    server's messages in CJK; `messages`: how many the server holds in all;
    `hide_archived`: leave out archived sessions' messages, as locally.
    The hits' short ids are the caller's to set: only some sessions are here."""
    terms = cjk.terms(result.match)
    result.match = cjk.match(result.match)
    cols = ", ".join(f'm."{c}"' for c in _MESSAGES)
    rows = conn.execute(
        f"SELECT {cols} FROM messages AS m WHERE m.content ~ ? ORDER BY m.ctid", (pattern(),)
    ).fetchall()
    sids = sorted({r[1] for r in rows if r[1] is not None})
    sessions = (
        conn.execute(
            "SELECT s.id, s.owner, s.title FROM sessions AS s WHERE s.id = ANY(CAST(? AS text[]))",
            (sids,),
        ).fetchall()
        if sids
        else []
    )
    archived = (
        [r[0] for r in conn.execute(f'SELECT "sessionId" FROM {ARCHIVE_TABLE}').fetchall()]
        if hide_archived
        else []
    )
    memory = sqlite3.connect(":memory:", isolation_level=None)  # BEGIN as local search does
    try:
        _load(memory, rows, sessions, archived)
        ix = Index("main", _TABLE, cjk=True)
        have = {"messages": set(_MESSAGES), "sessions": set(_SESSIONS)}
        filters = local._Filters(owner, roles, since, session_id, have)
        filters.hide_archived = hide_archived
        filters.until = until
        try:
            memory.execute("BEGIN")
            local._run(memory, ix, result, filters, terms, messages=messages)
            memory.execute("COMMIT")
        except sqlite3.OperationalError as e:
            if local._bad_query(e):
                raise UsageError(
                    f"--fts: {e}",
                    hint='FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)',
                ) from None
            raise
    finally:
        memory.close()


def _load(
    memory: sqlite3.Connection, rows: list[Any], sessions: list[Any], archived: list[str]
) -> None:
    """The messages (rowid in the server's order), sessions, archive marks and
    the CJK index, in one transaction (FTS4 writes a segment per transaction)."""
    memory.execute("PRAGMA cache_size = -65536")
    memory.execute("BEGIN")
    memory.execute(f"CREATE TABLE messages ({', '.join(_quoted(c) for c in _MESSAGES)})")
    memory.execute(f"CREATE TABLE sessions ({', '.join(_quoted(c) for c in _SESSIONS)})")
    memory.executemany(f"INSERT INTO messages VALUES ({', '.join('?' * len(_MESSAGES))})", rows)
    memory.executemany("INSERT INTO sessions VALUES (?, ?, ?)", sessions)
    memory.execute(f"CREATE TABLE {ARCHIVE_TABLE} (sessionId TEXT PRIMARY KEY)")
    memory.executemany(f"INSERT INTO {ARCHIVE_TABLE} VALUES (?)", ((a,) for a in archived))
    memory.execute(f"CREATE VIRTUAL TABLE {_TABLE} USING fts4(content, {TOKENIZE})")
    cjk_index.put(memory, _TABLE, memory.execute("SELECT rowid, content FROM messages"))
    memory.execute("COMMIT")


def _quoted(name: str) -> str:
    return '"' + name + '"'
