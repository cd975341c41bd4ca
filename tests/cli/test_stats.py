"""`kaja stats queries` and `kaja stats slow` (core/query_stats.py), and
doctor's `query-profile` check, over the demo store's db-stats.db (the agent's
sample rows: five statements from three processes over three days, three
slow queries) and profiles written here with plain SQL."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import DEMO_NOW


def sample(kaja, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(kaja.state / "db-stats.db")) as conn:
        return conn.execute(sql).fetchall()


def keep_the_demo_profile(kaja) -> None:
    """A retention that covers the demo profile's age today. Each run of kaja adds its own
    statements to db-stats.db and prunes rows older than logging.database.retention_days (7)
    against the real clock, so with the default the demo's rows (the three days before
    DEMO_NOW) are gone after the first run once a week has passed (test_profiler.py checks
    the prune)."""
    age = datetime.now(UTC) - datetime.fromisoformat(DEMO_NOW.replace("Z", "+00:00"))
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(f"[logging.database]\nretention_days = {max(7, age.days + 5)}\n")


def queries(kaja, *args: str) -> dict:
    r = kaja("stats", "queries", "--json", *args)
    assert r.code == 0, r
    return json.loads(r.out)


# --- kaja stats queries ----------------------------------------------------------------
def test_queries_adds_up_every_process(demo_store):
    expected = sample(
        demo_store,
        "SELECT db, sql, sum(calls), round(sum(total_ms), 3), max(max_ms), sum(rows) FROM db_query_stats"
        " GROUP BY db, sql ORDER BY sum(total_ms) DESC",
    )
    doc = queries(demo_store)
    assert (doc["by"], doc["total"], doc["left_out"], doc["since"], doc["db"]) == (
        "total",
        5,
        0,
        None,
        None,
    )
    got = [
        (s["db"], s["sql"], s["calls"], s["total_ms"], s["max_ms"], s["rows"])
        for s in doc["statements"]
    ]
    assert got == expected
    first = doc["statements"][0]
    assert first["processes"] == ["scheduler", "telegram", "terminal"]
    assert first["avg_ms"] == round(first["total_ms"] / first["calls"], 3)
    assert first["first"] < first["last"] and len(first["first"]) == 16


def test_queries_piped_are_tab_separated_rows(demo_store):
    # The profile as kaja reads it: its run ends by pruning what is past the retention.
    ((n, t, m, r_),) = sample(
        demo_store,
        "SELECT sum(calls), round(sum(total_ms), 3), max(max_ms), sum(rows) FROM db_query_stats"
        " WHERE sql LIKE 'SELECT * FROM messages%'",
    )
    r = demo_store("stats", "queries")
    assert r.code == 0 and r.err == ""
    lines = [line.split("\t") for line in r.out.splitlines()]
    assert len(lines) == 5 and {len(cols) for cols in lines} == {9}
    calls, total, avg, top, rows, errors, db, processes, sql = lines[0]
    assert sql == "SELECT * FROM messages WHERE sessionId = ? ORDER BY seq"
    assert (db, processes, errors) == ("kaja.db", "scheduler,telegram,terminal", "0")
    assert (int(calls), float(total), float(top), int(rows)) == (n, t, m, r_)
    assert float(avg) == round(t / n, 3)


@pytest.mark.parametrize(
    ("by", "key"), [("calls", "calls"), ("max", "max_ms"), ("total", "total_ms")]
)
def test_queries_by(demo_store, by, key):
    values = [s[key] for s in queries(demo_store, "--by", by)["statements"]]
    assert values == sorted(values, reverse=True)


def test_queries_limit_db_and_since(demo_store):
    keep_the_demo_profile(demo_store)
    doc = queries(demo_store, "--limit", "2")
    assert (len(doc["statements"]), doc["total"], doc["left_out"]) == (2, 5, 3)
    r = demo_store("stats", "queries", "-n", "2")  # now with the first run's own statements
    assert re.fullmatch(r"kaja: \d+ more statements \(--limit 0 shows all\)\n", r.err), r
    cache = queries(demo_store, "--db", "cache")
    assert cache["db"] == "cache.db" and [s["db"] for s in cache["statements"]] == ["cache.db"]
    latest = sample(demo_store, "SELECT max(bucket) FROM db_query_stats")[0][0]
    recent = queries(demo_store, "--since", latest)
    assert recent["statements"] and all(s["first"] >= latest for s in recent["statements"])
    assert queries(demo_store, "--since", "2999-01-01")["statements"] == []


def test_kajas_own_queries_show_up_next_time(demo_store):
    assert demo_store("sessions").code == 0
    doc = queries(demo_store, "--limit", "0")
    assert any("kaja sessions" in s["processes"] for s in doc["statements"])


# --- kaja stats slow ------------------------------------------------------------------------
def test_slow_newest_first(demo_store):
    keep_the_demo_profile(demo_store)
    r = demo_store("stats", "slow", "--json")
    doc = json.loads(r.out)
    assert doc["total"] == 3
    ats = [q["at"] for q in doc["slow_queries"]]
    assert ats == sorted(ats, reverse=True)
    assert doc["slow_queries"][0] == {
        "at": "2026-11-29T10:53:00.000Z", "duration_ms": 88.0, "db": "kaja.db",
        "sql": "SELECT * FROM calls WHERE at >= ?", "pid": 4242, "process": "terminal", "rows": 5000,
    }  # fmt: skip
    plain = demo_store("stats", "slow", "--db", "cache").out
    assert plain == (
        "2026-11-29T00:53:00.000Z\t53.2\tcache.db\t4242\tterminal\t120\t"
        "DELETE FROM shared_cache WHERE expires_at < ?\n"
    )


# --- bad inputs -------------------------------------------------------------------------------
def test_no_profile_yet(kaja):
    for argv in (["stats", "queries"], ["stats", "slow"], ["stats", "queries", "--json"]):
        r = kaja(*argv)
        assert r.code == 0, r
        assert (
            r.err == f"kaja: no query profile yet: no db-stats.db at {kaja.state / 'db-stats.db'}\n"
        )
        assert r.out == "" or json.loads(r.out)["exists"] is False
    assert not kaja.state.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stats", "queries", "--by", "speed"], "Invalid value for '--by'"),
        (["stats", "queries", "--db", "nowhere"], "Invalid value for '--db'"),
        (["stats", "slow", "--since", "last tuesday"], "--since: not a date or age"),
        (["stats", "queries", "--limit", "-1"], "Invalid value for '--limit'"),
    ],
)
def test_bad_options_are_exit_2(demo_store, argv, message):
    r = demo_store(*argv)
    assert r.code == 2, r
    assert message in r.err and r.err.count("\n") == 1


def test_a_profile_that_is_not_sqlite(demo_store):
    (demo_store.state / "db-stats.db").write_text("not a database\n" * 100)
    r = demo_store("stats", "queries")
    assert r.code == 1
    assert r.err.startswith(
        f"kaja: {demo_store.state / 'db-stats.db'} is a file, not a SQLite database"
    )
    assert r.err.count("\n") == 1


def test_a_profile_without_its_tables(demo_store):
    (demo_store.state / "db-stats.db").unlink()
    with closing(sqlite3.connect(demo_store.state / "db-stats.db")) as conn:
        conn.execute("CREATE TABLE other (a)")
    r = demo_store("stats", "queries")
    assert r.code == 0 and r.err.startswith("kaja: no queries recorded in ")


def test_stats_alone_shows_help(kaja):
    r = kaja("stats")
    assert r.code == 2 and "queries" in r.out + r.err and "slow" in r.out + r.err


# --- doctor ------------------------------------------------------------------------------------
def profile(kaja, rows: list[tuple]) -> None:
    """A db-stats.db of (minutes before now, sql, calls, mean ms) rows."""
    kaja.state.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    with closing(sqlite3.connect(kaja.state / "db-stats.db")) as conn, conn:
        conn.execute("CREATE TABLE db_query_stats (bucket TEXT NOT NULL, pid INTEGER NOT NULL, db TEXT NOT NULL,"
                     " sql TEXT NOT NULL, calls INTEGER, total_ms REAL, max_ms REAL, rows INTEGER,"
                     " errors INTEGER, process, PRIMARY KEY (bucket, pid, db, sql))")  # fmt: skip
        conn.execute("CREATE TABLE db_slow_queries (id INTEGER PRIMARY KEY, at, pid INTEGER, process, db,"
                     " sql, duration_ms REAL, rows INTEGER)")  # fmt: skip
        for ago, sql, calls, mean in rows:
            bucket = (now - timedelta(minutes=ago)).strftime("%Y-%m-%dT%H:%M")
            conn.execute("INSERT INTO db_query_stats VALUES (?, 1, 'kaja.db', ?, ?, ?, ?, 0, 0, 'terminal')",
                         (bucket, sql, calls, calls * mean, mean * 1.5))  # fmt: skip


def doctor_checks(kaja) -> dict:
    r = kaja("doctor", "--check", "query-profile", "--json")
    return {c["id"]: c for c in json.loads(r.out)["checks"]}


def test_doctor_is_quiet_on_the_demo_store(demo_store):
    (check,) = doctor_checks(demo_store).values()
    assert check["status"] == "ok"
    assert check["summary"].startswith("db-stats.db: 5 statements in the last day recorded")
    assert check["summary"].endswith(
        "none usually slow or slower than before; 3 slow calls (`kaja stats slow`)"
    )


def test_doctor_reports_a_statement_whose_p95_grew(kaja):
    days = [
        (60 * 24 * d + m, "SELECT * FROM calls WHERE at >= ?", 10, 2.0)
        for d in (2, 3, 4)
        for m in range(3)
    ]
    now = [(m, "SELECT * FROM calls WHERE at >= ?", 10, 9.0) for m in range(3)]
    steady = [(m, "SELECT 1", 50, 0.1) for m in (1, 60 * 30)]
    profile(kaja, days + now + steady)
    checks = doctor_checks(kaja)
    grown = checks["query-profile.grown"]
    assert grown["status"] == "warn"
    assert (
        grown["summary"]
        == "1 statement got slower: p95 9.0 ms, was 2.0 ms before the last day recorded"
    )
    assert grown["details"] == [
        "kaja.db: p95 9.0 ms, was 2.0 ms, 30 calls: SELECT * FROM calls WHERE at >= ?"
    ]
    assert "kaja stats queries" in grown["fix"]
    assert kaja("doctor", "--check", "query-profile").code == 0  # a warning, not an error


def test_doctor_reports_a_statement_usually_slow(kaja):
    profile(kaja, [(m, "SELECT * FROM messages", 10, 120.0) for m in range(3)])
    check = doctor_checks(kaja)["query-profile.slow"]
    assert check["summary"] == (
        "1 statement usually slower than 50 ms (p95 up to 120 ms), in the last day recorded"
    )
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text("[logging.database]\nslow_ms = 200\n")
    assert doctor_checks(kaja)["query-profile"]["status"] == "ok"
    kaja.config.write_text("[logging.database]\nenabled = false\n")
    assert doctor_checks(kaja)["query-profile"]["summary"] == (
        "query profiling is off (logging.database.enabled = false)"
    )


def test_doctor_without_a_profile(kaja):
    assert doctor_checks(kaja)["query-profile"]["summary"] == "db-stats.db: no query profile yet"


@pytest.mark.process
def test_a_profile_the_agent_is_writing_still_reads(demo_store):
    """The agent holds db-stats.db's write lock: reading answers at once (WAL);
    the command's own profile is dropped after a short wait, not waited for."""
    import subprocess
    import sys

    from tests.unit.test_profiler import HOLD

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(demo_store.state / "db-stats.db")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "holding"
        r = demo_store("stats", "queries", "--json")
        slow = demo_store("stats", "slow")
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 0, r
    assert json.loads(r.out)["total"] == 5
    assert slow.code == 0 and len(slow.out.splitlines()) == 3
