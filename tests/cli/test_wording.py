"""Counts read as English wherever kaja counts (core/wording.py, issue 24).

Every count goes through `wording.plural`/`noun`: one of a thing is singular,
and a verb agrees with its count. These are the places that wrote their own
plural and said "1 changes" or "1 rows" before.
"""

from __future__ import annotations

import json
import sqlite3

from tests.conftest import Kaja


def _sql(kaja: Kaja, *statements: str) -> None:
    conn = sqlite3.connect(kaja.db, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def test_doctor_counts_one_waiting_change_and_one_dangling_sync_map_row(demo_store: Kaja):
    _sql(
        demo_store,
        "INSERT INTO sync_state (name, value) VALUES ('origin', 'o-here')",  # sync was used
        "DELETE FROM sync_outbox",
        "DELETE FROM sync_map",
        "INSERT INTO sync_outbox (tbl, key, op, at)"
        " VALUES ('runs', 'run_x', 'upsert', '2020-01-01T00:00:00.000Z')",
        "INSERT INTO sync_map (origin, tbl, key, local_id, seq)"
        " VALUES ('o-there', 'calls', '7', '999999', 1)",  # an import whose row is gone
    )
    r = demo_store("doctor", "--check", "sync", "--json")
    assert r.code == 0, r  # warnings only
    checks = {c["id"]: c for c in json.loads(r.out)["checks"]}
    assert checks["sync-progress"]["summary"] == (
        "1 change waits, the oldest from 2020-01-01T00:00:00.000Z,"
        " and no PostgreSQL URL is configured"
    )
    assert checks["sync-map"]["summary"] == "1 sync_map row names an imported row that is gone"


def test_wipe_owner_says_it_erased_one_row(demo_store: Kaja):
    _sql(demo_store, "INSERT INTO notes (owner, key, content) VALUES ('telegram:424242', 'k', 'v')")
    r = demo_store("wipe", "--owner", "telegram:424242", "--yes")
    assert r.code == 0, r
    assert r.err.splitlines()[-1] == "kaja: erased 1 row and 0 image folders of telegram:424242"


def test_the_file_records_one_change_in_the_singular(demo_store: Kaja):
    from kaja_cli import __version__

    _sql(demo_store, "DROP INDEX calls_at")  # the one thing the next writer brings back
    assert demo_store("usage", "reset", "--yes").code == 0
    conn = sqlite3.connect(demo_store.db)
    try:
        value = conn.execute(
            "SELECT value FROM counters WHERE name = 'schema:upgraded'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert value == f"kaja {__version__}: 1 change"
