"""`kaja usage` from rollups equals the raw SQL over the ledger (issue 29).

Seeded random ledgers, edited between reads the ways a ledger changes: the
agent's inserts (some with explicit or reused ids), updates of any column,
deletes, INSERT OR REPLACE from a connection without recursive triggers (no
DELETE trigger fires), a column added, a VACUUM; each read compared figure
for figure with the raw report (`report_queries`), for every grouping and
windows that cut hours in two.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from kaja_cli.core.ledger.report import UsageReport, fill, report_queries
from kaja_cli.core.ledger.usage import rollups
from kaja_cli.core.store import schema

MODELS = ["gpt-5", "claude", "llama", None, 7, "GPT-5"]
SOURCES = ["tui", "telegram", None]
ENGINES = ["openai", "ollama", None]
TOOLS = ["shell", "read_file", "web", None]
OUTCOMES = ["ok", "error", "denied", None]
STATUS = ["completed", "failed", "running", None]


def _at(rng: random.Random) -> object:
    r = rng.random()
    if r < 0.02:
        return None
    if r < 0.03:
        return rng.choice([12345, "2026", "odd time", "2026-11-30T0ü:00"])
    day, hour, minute = rng.randint(28, 30), rng.randint(0, 5), rng.randint(0, 59)
    return f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"


def _tokens(rng: random.Random) -> object:
    return None if rng.random() < 0.1 else rng.randint(0, 5000)


def _call(rng: random.Random) -> dict:
    return {
        "at": _at(rng), "model": rng.choice(MODELS), "source": rng.choice(SOURCES),
        "engine": rng.choice(ENGINES), "prompt_tokens": _tokens(rng),
        "completion_tokens": _tokens(rng), "cached_tokens": _tokens(rng),
        "duration_ms": _tokens(rng), "ok": rng.choice([0, 1, 1, 1, None]),
    }  # fmt: skip


def _tool(rng: random.Random) -> dict:
    return {
        "at": _at(rng),
        "tool": rng.choice(TOOLS),
        "outcome": rng.choice(OUTCOMES),
        "duration_ms": _tokens(rng),
    }


def _run(rng: random.Random, n: int) -> dict:
    return {"id": f"run_{n}", "started_at": _at(rng), "status": rng.choice(STATUS)}


def _insert(conn: sqlite3.Connection, table: str, row: dict, verb: str = "INSERT") -> None:
    names = ", ".join(row)
    conn.execute(
        f"{verb} INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values())
    )


def _ledger(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # a test's file: no fsync per insert
    tables = tuple(t for t in schema.LEDGER_TABLES if t.name in ("calls", "tools", "runs"))
    conn.execute("BEGIN")
    schema.apply_tables(conn, tables, schema.Report())
    conn.execute("COMMIT")
    return conn


def _report(conn: sqlite3.Connection, by: str, since, until, *, raw: bool) -> dict:
    have = schema.present_columns(conn)
    conn.execute("BEGIN")
    queries, missing = report_queries(have, by, since, until)
    if raw:
        rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
    else:
        rows = rollups.report_rows(conn, have, by, since, until)
    conn.execute("COMMIT")
    result = UsageReport("x", True, by, since, until, missing=missing)
    return fill(result, rows).to_json(tools=0)


WINDOWS = [
    (None, None),
    ("2026-11-29T02:17:00.000Z", None),
    (None, "2026-11-30T03:41:30.000Z"),
    ("2026-11-28T04:00:00.000Z", "2026-11-30T01:00:00.000Z"),  # whole hours
    ("2026-11-29T00:30:00.000Z", "2026-11-29T00:45:00.000Z"),  # inside one hour
    ("2026", "2026-11-30"),
]


def _agree(conn: sqlite3.Connection, rng: random.Random) -> None:
    for since, until in [WINDOWS[0], *rng.sample(WINDOWS[1:], 2)]:
        for by in ("model", "day", "source", "engine"):
            fast = _report(conn, by, since, until, raw=False)
            slow = _report(conn, by, since, until, raw=True)
            assert fast == slow, (by, since, until)


def _catch_up(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA recursive_triggers = ON")  # as kaja's writer connections have it
    rollups.catch_up(conn)
    conn.execute("PRAGMA recursive_triggers = OFF")  # as an agent's may not


def _edit(conn: sqlite3.Connection, rng: random.Random, serial: list[int]) -> None:
    """One random change, as the agent, a sync import or a user with sqlite3 make them."""
    table = rng.choice(["calls", "tools", "runs"])
    op = rng.choice(["insert", "insert", "insert", "update", "delete", "replace", "explicit"])
    make = {"calls": _call, "tools": _tool}.get(table)

    def row() -> dict:
        if make:
            return make(rng)
        serial[0] += 1
        return _run(rng, serial[0])

    ids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
    if op == "insert" or not ids:
        for _ in range(rng.randint(1, 20)):
            _insert(conn, table, row())
    elif op == "update":
        victim = rng.choice(ids)
        new = row()
        new.pop("id", None)
        col = rng.choice(list(new))
        conn.execute(f"UPDATE {table} SET {col} = ? WHERE rowid = ?", (new[col], victim))
    elif op == "delete":
        top = rng.random() < 0.3  # the newest rows: their ids are handed out again
        victim = max(ids) if top else rng.choice(ids)
        conn.execute(
            f"DELETE FROM {table} WHERE rowid >= ?"
            if top
            else f"DELETE FROM {table} WHERE rowid = ?",
            (victim,),
        )
    elif op == "replace":
        new = row()
        if table == "runs":
            new["id"] = conn.execute(
                "SELECT id FROM runs WHERE rowid = ?", (rng.choice(ids),)
            ).fetchone()[0]
        else:
            new["id"] = rng.choice(ids)
        _insert(conn, table, new, "INSERT OR REPLACE")
    else:  # an explicit id below the newest (a gap filled, or a negative one)
        new = row()
        if table != "runs":
            taken = set(ids)
            free = [i for i in range(-3, max(ids)) if i not in taken]
            if free:
                new["id"] = rng.choice(free)
        _insert(conn, table, new)


@pytest.mark.parametrize("seed", range(5))
def test_rollups_equal_the_raw_sql_through_edits(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    conn = _ledger(tmp_path / "kaja.db")
    serial = [0]
    for _ in range(rng.randint(50, 300)):
        _edit(conn, rng, serial)
    _catch_up(conn)
    _agree(conn, rng)
    for _ in range(6):
        for _ in range(rng.randint(1, 15)):
            _edit(conn, rng, serial)
        # Read before folding in (dirty buckets and rows past W read raw), then after.
        _agree(conn, rng)
        _catch_up(conn)
        _agree(conn, rng)
        assert not conn.execute("SELECT count(*) FROM kaja_usage_dirty").fetchone()[0]


def test_rollups_are_used_and_small_chunks_fold_in(tmp_path: Path, monkeypatch) -> None:
    """The rollup is really read (not the raw fallback), across several write
    transactions when the rows are many."""
    monkeypatch.setattr(rollups, "CHUNK", 7)
    rng = random.Random(99)
    conn = _ledger(tmp_path / "kaja.db")
    for _ in range(100):
        row = _call(rng)
        row["at"] = f"2026-11-29T0{rng.randint(0, 5)}:{rng.randint(10, 59)}:00.000Z"
        row.update(
            prompt_tokens=rng.randint(0, 9), completion_tokens=1, cached_tokens=1, duration_ms=1
        )
        _insert(conn, "calls", row)
    _catch_up(conn)
    assert (
        conn.execute("SELECT last_rowid FROM kaja_usage_state WHERE tbl = 'calls'").fetchone()[0]
        == 100
    )
    # Change rollup rows behind the ledger's back: the report follows them. A read
    # with no window sums all time; whole days come from the days; a window cutting
    # a day reads that day's whole hours, and the raw rows of the hour it cuts.
    one = " WHERE rowid = (SELECT min(rowid) FROM {} WHERE bucket IS ?)"
    for table, bucket, more in (
        ("_all", None, 1000),
        ("_days", "2026-11-29", 100),
        ("", "2026-11-29T04", 10),
    ):
        table = "kaja_usage_calls" + table
        conn.execute(f"UPDATE {table} SET calls = calls + {more}" + one.format(table), (bucket,))
    for since, until, more in (
        (None, None, 1000),
        ("2026-11-28T12:00:00.000Z", "2026-11-30T00:00:00.000Z", 100),
        ("2026-11-29T02:30:00.000Z", "2026-11-29T05:00:00.000Z", 10),
    ):
        raw = _report(conn, "model", since, until, raw=True)["total"]["calls"]
        assert _report(conn, "model", since, until, raw=False)["total"]["calls"] == raw + more


def test_what_triggers_cannot_see_rebuilds_it(tmp_path: Path) -> None:
    """A trigger dropped, a column added, a VACUUM renumbering runs: rebuilt, not guessed."""
    rng = random.Random(5)
    conn = _ledger(tmp_path / "kaja.db")
    serial = [0]
    for _ in range(100):
        _edit(conn, rng, serial)
    _catch_up(conn)
    # Without the delete trigger, a delete goes unseen: the rollup must not be trusted.
    conn.execute("DROP TRIGGER kaja_usage_calls_delete")
    conn.execute("DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls LIMIT 5)")
    _agree(conn, rng)
    conn.execute("ALTER TABLE calls ADD COLUMN extra")
    conn.execute("UPDATE calls SET model = 'm' WHERE rowid % 3 = 0")
    _agree(conn, rng)
    _catch_up(conn)
    _agree(conn, rng)
    # runs' rowids are not its key: after deletes, VACUUM renumbers them.
    conn.execute("DROP TRIGGER kaja_usage_runs_delete")
    conn.execute("DELETE FROM runs WHERE rowid IN (SELECT rowid FROM runs ORDER BY rowid LIMIT 3)")
    conn.execute("CREATE TRIGGER kaja_usage_runs_delete AFTER DELETE ON runs BEGIN SELECT 1; END")
    conn.execute("VACUUM")
    for _ in range(5):
        _insert(conn, "runs", _run(rng, 10_000 + _))
    _agree(conn, rng)
    _catch_up(conn)
    _agree(conn, rng)


def test_odd_numbers_are_read_raw(tmp_path: Path) -> None:
    """Token counts REAL sums may not add exactly (reals, text, past 2**53): read raw."""
    conn = _ledger(tmp_path / "kaja.db")
    # The raw sum rounds 2**53 + 1 twice; the hours' sums add 2 to it, exactly.
    for hour, v in [(0, 2**53), (1, 1), (1, 1), (2, 0.5), (2, "12")]:
        _insert(
            conn, "calls", {"at": f"2026-11-29T0{hour}:00:00Z", "model": "m", "prompt_tokens": v}
        )
    _catch_up(conn)
    _agree(conn, random.Random(0))
