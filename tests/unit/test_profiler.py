"""kaja's own query profiler (core/profiler.py): what every command adds to
db-stats.db when it ends, and when it adds nothing.

The demo store (seed 1) has a db-stats.db with the agent's sample rows; the
rows a test's own commands add are told apart by their `process` column
(`kaja …`)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import time

import pytest

from kaja_cli.core.side import profiler
from tests.support.sessions_support import BUDGET, TOMATO


def stats(kaja, where: str = "process LIKE 'kaja %'") -> list[sqlite3.Row]:
    conn = sqlite3.connect(kaja.state / "db-stats.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(f"SELECT * FROM db_query_stats WHERE {where} ORDER BY sql").fetchall()
    finally:
        conn.close()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def settings(kaja, text: str) -> None:
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(text)


# --- what a command adds ------------------------------------------------------------
def test_a_reading_command_adds_its_queries_to_an_existing_profile(demo_store):
    assert stats(demo_store) == []
    r = demo_store("sessions", "--all-owners")
    assert r.code == 0, r
    rows = stats(demo_store)
    assert rows, "nothing recorded"
    assert {r["process"] for r in rows} == {"kaja sessions"}
    assert {r["db"] for r in rows} == {"kaja.db"}
    assert all(r["calls"] >= 1 and r["total_ms"] >= 0 and r["max_ms"] <= r["total_ms"] + 1e-9
               for r in rows)  # fmt: skip
    assert all(len(r["bucket"]) == 16 for r in rows)  # one row per minute: 2026-12-01T12:30
    listing = [r for r in rows if r["sql"].startswith("WITH picked AS")]
    assert len(listing) == 1 and listing[0]["rows"] == 13  # every session, one row each
    assert listing[0]["pid"] > 0 and listing[0]["errors"] == 0


def test_a_reading_command_creates_no_profile(demo_store):
    (demo_store.state / "db-stats.db").unlink()
    for argv in (["sessions"], ["search", "tomato"], ["usage", "--json"], ["resume", TOMATO],
                 ["stats", "queries"], ["wipe", "--dry-run"], ["usage", "reset", "--dry-run"]):  # fmt: skip
        assert demo_store(*argv).code == 0
    assert not list(demo_store.state.glob("db-stats.db*"))


def test_a_writing_command_creates_the_profile(demo_store):
    (demo_store.state / "db-stats.db").unlink()
    r = demo_store("sessions", "delete", BUDGET, "--yes")
    assert r.code == 0, r
    rows = stats(demo_store)
    assert {r["process"] for r in rows} == {"kaja sessions delete"}
    deletes = [r for r in rows if r["sql"].startswith("DELETE FROM")]
    assert deletes and sum(r["rows"] for r in deletes) >= 14  # the budget session's messages
    mode = (demo_store.state / "db-stats.db").stat().st_mode & 0o777
    assert mode == 0o600


def test_statements_keep_placeholders_and_never_values(demo_store):
    words = ("zanzibarish", "482913", "s3cr3t-w0rd")
    assert demo_store("search", words[0], "--owner", "telegram:482913").code == 0
    assert demo_store("search", "--fts", f'"{words[2]}" OR tomato*', "--all-owners").code == 0
    assert demo_store("sessions", "--owner", "telegram:482913", "--since", "2026-11-01").code == 0
    assert demo_store("resume", TOMATO[:10], "--json").code == 0
    text = "\n".join(str(tuple(r)) for r in stats(demo_store, "1")) + (
        demo_store.state / "db-stats.db"
    ).read_bytes().decode("latin-1")
    for word in (*words, TOMATO, TOMATO[:10], "2026-11-01"):
        assert word not in text, word
    sqls = [r["sql"] for r in stats(demo_store)]
    assert any("MATCH" in s and "?" in s for s in sqls)


def test_a_failed_statement_counts_as_an_error(demo_store):
    r = demo_store("search", "--fts", '"unbalanced')
    assert r.code == 2
    assert any(row["errors"] for row in stats(demo_store))


def test_slow_queries_go_to_the_slow_log(demo_store):
    settings(demo_store, "[logging.database]\nslow_ms = 0\n")
    assert demo_store("sessions").code == 0
    conn = sqlite3.connect(demo_store.state / "db-stats.db")
    try:
        rows = conn.execute(
            "SELECT process, db, duration_ms, pid FROM db_slow_queries WHERE process LIKE 'kaja %'"
        ).fetchall()
    finally:
        conn.close()
    # 0 ms: every statement is slow, each one a row of the slow log.
    assert len(rows) == sum(r["calls"] for r in stats(demo_store))
    assert {(p, db) for p, db, _, _ in rows} == {("kaja sessions", "kaja.db")}
    assert all(ms > 0 and pid > 0 for _, _, ms, pid in rows)


def test_profiling_off_writes_nothing(demo_store):
    settings(demo_store, "[logging.database]\nenabled = false\n")
    before = digest(demo_store.state / "db-stats.db")
    assert demo_store("sessions", "delete", BUDGET, "--yes").code == 0
    assert demo_store("search", "tomato").code == 0
    assert digest(demo_store.state / "db-stats.db") == before


def test_a_bad_setting_means_the_default(demo_store):
    settings(demo_store, '[logging.database]\nslow_ms = "fast"\nenabled = "yes please"\n')
    assert demo_store("sessions").code == 0
    assert stats(demo_store)  # recorded, with the defaults


def test_old_rows_are_pruned_after_the_retention(demo_store):
    conn = sqlite3.connect(demo_store.state / "db-stats.db")
    with conn:
        conn.execute(
            "INSERT INTO db_query_stats (bucket, pid, db, sql, calls, total_ms, max_ms, rows, errors,"
            " process) VALUES ('2020-01-01T00:00', 1, 'kaja.db', 'SELECT 1', 1, 1, 1, 1, 0, 'old')"
        )
        conn.execute(
            "INSERT INTO db_slow_queries (at, pid, process, db, sql, duration_ms, rows)"
            " VALUES ('2020-01-01T00:00:00.000Z', 1, 'old', 'kaja.db', 'SELECT 1', 90, 1)"
        )
    conn.close()

    def old() -> int:
        c = sqlite3.connect(demo_store.state / "db-stats.db")
        try:
            return c.execute(
                "SELECT (SELECT count(*) FROM db_query_stats WHERE process = 'old')"
                " + (SELECT count(*) FROM db_slow_queries WHERE process = 'old')"
            ).fetchone()[0]
        finally:
            c.close()

    settings(demo_store, "[logging.database]\nretention_days = 3650\n")
    assert demo_store("sessions").code == 0
    assert old() == 2
    settings(demo_store, "")
    assert demo_store("sessions").code == 0
    assert old() == 0


# --- where it writes nothing ----------------------------------------------------------
def test_doctor_demo_and_wipe_leave_no_profile_of_their_own(kaja, demo_store):
    before = digest(demo_store.state / "db-stats.db")
    assert demo_store("doctor").code == 0
    assert demo_store("doctor", "--json").code == 0
    assert digest(demo_store.state / "db-stats.db") == before
    assert demo_store("wipe", "--yes").code == 0
    assert not list(demo_store.state.glob("db-stats.db*"))


@pytest.mark.parametrize("shell", ["zsh", "bash"])
def test_completing_records_nothing(demo_store, shell):
    from tests.cli.test_completion import requests, run_completion

    before = digest(demo_store.state / "db-stats.db")
    for words, incomplete in (
        (["resume"], ""),
        (["stats"], ""),
        (["stats", "queries", "--db"], ""),
    ):
        p = run_completion(requests(dict(demo_store.env), words, incomplete)[shell])
        assert p.returncode == 0 and p.stdout, p
    assert digest(demo_store.state / "db-stats.db") == before
    assert not (demo_store.state / "db-stats.db-wal").exists()


@pytest.mark.parametrize("what", ["folder", "foreign", "empty"])
def test_a_profile_that_is_not_one_is_left_alone(demo_store, what):
    path = demo_store.state / "db-stats.db"
    path.unlink()
    if what == "folder":
        path.mkdir()
    elif what == "foreign":
        path.write_text("root:x:0:0:root:/root:/bin/bash\n")
    else:
        path.write_bytes(b"")
    before = digest(path) if path.is_file() else None
    r = demo_store("sessions", "delete", BUDGET, "--yes")
    assert (r.code, r.out) == (0, ""), r
    assert "kaja: deleted 1 session" in r.err and r.err.count("\n") == 1
    if what == "folder":
        assert path.is_dir() and not list(path.iterdir())
    elif what == "foreign":
        assert digest(path) == before
    else:  # an empty file is an empty database to SQLite: kaja fills it in
        assert stats(demo_store)


def test_a_profile_held_by_another_process_is_given_up_quickly(demo_store):
    """The agent holds db-stats.db's write lock: the command ends as it would,
    without its profile, after a short wait (core/profiler.WRITE_TIMEOUT_MS)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(demo_store.state / "db-stats.db")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "holding"
        start = time.monotonic()
        r = demo_store.proc("sessions", "delete", BUDGET, "--yes")
        took = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert (r.code, r.out) == (0, ""), r
    assert r.err.startswith("kaja: deleted 1 session")
    assert took < profiler.WRITE_TIMEOUT_MS / 1000 + 10
    assert stats(demo_store) == []


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO db_slow_queries (at, sql) VALUES ('x', 'held')")
print("holding", flush=True)
time.sleep(120)
"""


# --- the recorder itself --------------------------------------------------------------
@pytest.mark.parametrize(
    ("sql", "recorded"),
    [
        ("SELECT * FROM t WHERE a = 'x''y' AND b = 42 LIMIT 20",
         "SELECT * FROM t WHERE a = ? AND b = ? LIMIT ?"),
        ('SELECT "col2", t1.x FROM "t 3" AS t1 WHERE y = -1.5e3', 'SELECT "col2", t1.x FROM "t 3" AS t1 WHERE y = -?'),
        ("SELECT x'00ff', 0x1F -- a comment 123\n FROM t /* 'secret' */", "SELECT ?, ? FROM t"),
        ("INSERT INTO t VALUES (?, :name, ?3)", "INSERT INTO t VALUES (?, :name, ?3)"),
        ("  PRAGMA busy_timeout = 5000 ", "PRAGMA busy_timeout = ?"),
    ],
)  # fmt: skip
def test_recorded_statements_carry_no_literal(sql, recorded):
    assert profiler.normalized(sql) == recorded


def _file(path):
    """A file of the shared database's kind at `path`, as `db.open_write` takes it."""
    from kaja_cli.core.store.registry import Database, DatabaseFile

    return DatabaseFile(Database.SHARED, path, "test", (Database.SHARED,))


def test_each_statement_counts_once_with_its_rows(tmp_path):
    from kaja_cli.core.engine import db, timing

    path = tmp_path / "t.db"
    profiler.begin()
    try:
        with db.open_write(path, _file(path), create=True) as conn:
            conn.execute("CREATE TABLE t (a)")
            conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(1000)])
            assert len(list(conn.execute("SELECT a FROM t"))) == 1000  # iterated
            for i, _row in enumerate(conn.execute("SELECT a FROM t WHERE a < 700")):
                if i == 9:
                    break  # left early: counted when the cursor goes
            assert conn.execute("SELECT a FROM t WHERE a < 5").fetchall() == [
                (i,) for i in range(5)
            ]
            cur = conn.execute("SELECT a FROM t WHERE a < 3")
            assert cur.fetchone() == (0,) and cur.fetchmany(5) == [(1,), (2,)]
            assert conn.execute("UPDATE t SET a = a WHERE a < 10").rowcount == 10
            with pytest.raises(sqlite3.OperationalError):
                conn.execute("SELECT nothing FROM t")
        session = profiler.active()
        assert session is not None and session.wrote
        # Left out: pragmas, and the look at sqlite_master saying whose file it is (core/guard.py).
        got = {
            sql: (t.calls, t.rows, t.errors)
            for (_, name, sql), t in session.totals.items()
            if name == "t.db" and not sql.startswith("PRAGMA") and "sqlite_master" not in sql
        }
    finally:
        profiler.discard()
    assert got == {
        "CREATE TABLE t (a)": (1, 0, 0),
        "INSERT INTO t VALUES (?)": (1, 1000, 0),
        "SELECT a FROM t": (1, 1000, 0),
        "SELECT a FROM t WHERE a < ?": (3, 5 + 3 + timing.FETCH_CHUNK, 0),
        "UPDATE t SET a = a WHERE a < ?": (1, 10, 0),
        "SELECT nothing FROM t": (1, 0, 1),
    }


def test_without_a_session_connections_are_sqlite3s_own(tmp_path):
    from kaja_cli.core.engine import db

    profiler.discard()
    with db.open_write(tmp_path / "t.db", _file(tmp_path / "t.db"), create=True) as conn:
        assert type(conn) is sqlite3.Connection
