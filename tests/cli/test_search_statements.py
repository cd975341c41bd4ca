"""What one `kaja search` asks of SQLite (search.local), as the query profile
(`db-stats.db`, `kaja stats queries`) records every statement a command runs:
the rows the filters check are the rows a hit shows, read once with their
sessions' neighbours (the short ids); and what a process remembers of a
store's schema between searches (`kaja browse` searches on every keystroke)
is read again as soon as the schema changes.

The same answers either way: test_search.py and test_search_stems.py pin the
hits, their order, scores, snippets and short ids.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

from kaja_cli.core.conversations import search
from kaja_cli.core.engine import timing
from kaja_cli.core.ids import short_id
from kaja_cli.core.store import Store
from tests.conftest import Kaja


def statements(k: Kaja, process: str) -> list[str]:
    """The statements a kaja process of this name recorded on kaja.db (normalized)."""
    with closing(sqlite3.connect(k.state / "db-stats.db")) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT sql FROM db_query_stats WHERE process = ? AND db = 'kaja.db' ORDER BY sql",
                (process,),
            )
        ]


def test_a_search_reads_the_messages_it_shows_once(demo_store: Kaja):
    r = demo_store("search", "tomato", "--all-owners", "--json")
    assert r.code == 0, r
    shown = json.loads(r.out)["results"]
    assert shown and all(h["session_id"] for h in shown)
    recorded = statements(demo_store, "kaja search")
    rows = [s for s in recorded if "FROM main.messages AS m" in s]
    # One statement reads the candidates' rows, their sessions and the
    # sessions' neighbours: no second read of the same rows for the hits,
    # no third for the short ids.
    assert len(rows) == 1, rows
    assert 'max("id")' in rows[0]
    assert not [s for s in recorded if "json_each(?) AS j" in s]
    # sqlite3.connect's timeout is SQLite's busy timeout: no PRAGMA for it.
    assert not [s for s in recorded if "busy_timeout" in s]


def test_every_way_of_searching_shows_the_same_short_ids(kaja: Kaja):
    """The short id a hit shows (`kaja sessions`' shortest unique prefix) is
    the same whether its session's neighbours were read with its row (the
    best matches, nothing narrowing) or asked for after (--recent, --role),
    for ids that share their first eight characters or hold a quote or a
    backslash, and for a session id another program stored as an INTEGER."""
    r = kaja("demo", "--seed", "1")
    assert r.code == 0, r
    db = kaja.state / "kaja.db"
    sids = ["0badcafe-0001", "0badcafe-0002", 'quo"te-\\id', "zz", 42]
    with closing(sqlite3.connect(db)) as conn:
        for i, sid in enumerate(sids):
            conn.execute(
                "INSERT INTO sessions (id, createdAt, updatedAt, title, owner)"
                " VALUES (?, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', ?, NULL)",
                (sid, f"odd {i}"),
            )
            conn.execute(
                "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
                " VALUES (?, ?, 0, 'user', 'zanzibar quokka', '2026-11-01T00:00:01.000Z')",
                (f"odd-m{i}", sid),
            )
        conn.commit()
        ids = sorted(
            r[0] for r in conn.execute("SELECT id FROM sessions WHERE typeof(id) = 'text'")
        )
    store = Store.locate(environ=kaja.env)
    expected = {
        sid: short_id(sid, ids[i - 1] if i else None, ids[i + 1] if i + 1 < len(ids) else None)
        for i, sid in enumerate(ids)
    }
    expected["42"] = "42"  # as `kaja sessions` shows it: an INTEGER id is its text
    for how in ({}, {"recent": True}, {"roles": ["user"]}):
        result = search.search(store, "quokka", all_owners=True, **how)
        shown = {h.session_id: h.session_short for h in result.hits}
        assert shown == {str(sid): expected[str(sid)] for sid in sids}, how
    assert expected["0badcafe-0001"] == "0badcafe-0001"  # the neighbours were needed


class _Recorded:
    """A query-profile listener (`timing.listen`): the statements run."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def opened(self, label: str, writable: bool) -> None:
        pass

    def record(self, label: str, sql: str, seconds: float, rows: int, error: bool) -> None:
        self.sql.append(sql)


def _search(store: Store, word: str) -> tuple[list[str], list[str]]:
    """(message ids found, the statements run on kaja.db) for one search in this process."""
    heard = _Recorded()
    timing.listen(heard)
    try:
        result = search.search(store, word, all_owners=True)
    finally:
        timing.listen(None)
    return [h.message_id for h in result.hits], heard.sql


def test_the_schema_is_read_once_per_process_until_it_changes(demo_store: Kaja):
    """In one process (a browse session), the second search does not read the
    columns and the index's triggers again; after another program changes the
    schema (a trigger dropped, a message written meanwhile without it), the
    next search sees it, as a new process would: the index is repaired and
    the message found."""
    store = Store.locate(environ=demo_store.env)
    first, sql = _search(store, "tomato")
    assert first
    assert any("table_info" in s for s in sql)
    again, sql = _search(store, "tomato")
    assert again == first
    assert not any("table_info" in s for s in sql)
    assert not any("FROM sqlite_master WHERE name IN" in s for s in sql)

    db = demo_store.state / "kaja.db"
    code = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], timeout=5)\n"
        "c.execute('DROP TRIGGER messages_fts_ai')\n"
        'c.execute("INSERT INTO messages (id, sessionId, seq, role, content, createdAt)'
        " SELECT 'added-m1', sessionId, 999, 'user', 'tomato quesadilla', createdAt"
        ' FROM messages LIMIT 1")\n'
        "c.commit()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    found, sql = _search(store, "quesadilla")
    assert found == ["added-m1"]  # the index was seen to be missing a trigger, and rebuilt
    assert any("table_info" in s for s in sql)
