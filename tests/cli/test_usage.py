"""`kaja usage` and `kaja usage reset` (core/usage.py, commands/usage.py), through the real command."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import select
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.store import Store, schema, search_index
from kaja_cli.core.store.paths import Overrides
from tests.conftest import KAJA, Kaja

LEDGER = schema.LEDGER_RESET_TABLES


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def store_of(kaja) -> Store:
    return Store.locate(Overrides(config=kaja.config, state_dir=kaja.state), environ={})


def build_ledger(kaja) -> None:
    """A small store whose every usage total is known (see the expected rows below)."""
    with Recorder(store_of(kaja), clock=lambda: _t("2026-11-05T12:00:00Z")) as rec:
        r1 = rec.start_run(source="interactive", at=_t("2026-11-01T10:00:00Z"), run_id="run_1")
        rec.end_run(r1, "completed", at=_t("2026-11-01T10:00:09Z"))
        r2 = rec.start_run(source="telegram", at=_t("2026-11-02T09:00:00Z"), run_id="run_2")
        rec.end_run(r2, "failed", error="model down", at=_t("2026-11-02T09:00:03Z"))
        r3 = rec.start_run(source="interactive", at=_t("2026-11-03T23:59:00Z"), run_id="run_3")
        calls = [
            (r1, "2026-11-01T10:00:01Z", "gpt-5", "openai", "interactive", 100, 20, 50, 1000, 1),
            (r1, "2026-11-01T10:00:05Z", "gpt-5", "openai", "interactive", 200, 30, 0, 2000, 1),
            (r2, "2026-11-02T09:00:01Z", "claude-haiku-4.5", "anthropic", "telegram", 300, 0, 0, 500, 0),
            (r3, "2026-11-03T23:59:59Z", "llama3.2:3b", "ollama", "interactive", 50, 10, None, 250, 1),
        ]  # fmt: skip
        for run, at, model, engine, source, p, c, cached, ms, ok in calls:
            rec.add_call(run, model=model, at=_t(at), engine=engine, source=source, prompt_tokens=p,
                         completion_tokens=c, cached_tokens=cached, duration_ms=ms, ok=ok)  # fmt: skip
        tools = [
            (r1, "web_search", "ok", 100, "2026-11-01T10:00:02Z"),
            (r1, "web_search", "ok", 100, "2026-11-01T10:00:03Z"),
            (r2, "web_search", "error", 300, "2026-11-02T09:00:02Z"),
            (r2, "shell", "denied", 10, "2026-11-02T09:00:02Z"),
            (r3, "shell", "ok", 30, "2026-11-03T23:59:58Z"),
            (r3, "run_tests", "error", 1000, "2026-11-03T23:59:58Z"),
            (r3, "run_tests", "error", 3000, "2026-11-03T23:59:59Z"),
        ]
        for run, tool, outcome, ms, at in tools:
            rec.add_tool(run, tool, outcome, at=_t(at), duration_ms=ms)
        for run, at in ((r1, "2026-11-01T10:00:00Z"), (r2, "2026-11-02T09:00:00Z")):
            rec.add_run_event(run, "WorkflowExecutionStarted", {}, at=_t(at))
        rec.insert("logs", at="2026-11-01T10:00:00.000Z", level="info", message="hi", run_id=r1)
        rec.insert("logs", at="2026-11-04T10:00:00.000Z", level="warn", message="slow", run_id="")
        rec.insert("media", run_id=r2, at="2026-11-02T09:00:01.000Z", kind="stt", outcome="ok")
        rec.insert("feedback", run_id=r1, at="2026-11-01T11:00:00.000Z", type="thumbs", value_num=1)
        rec.insert("reviews", run_id=r2, status="needs-review", flagged_at="2026-11-02T10:00:00.000Z",
                   updated_at="2026-11-02T10:00:00.000Z")  # fmt: skip
        rec.count_cache("2026-11-01T10:00", "web_fetch", hits=3, misses=1)
        rec.count_cache("2026-11-04T10:00", "web_fetch", hits=1)
        rec.insert("counters", or_replace=True, name="backfill:x", value="done")
        # Pending sync: two ledger rows (one old, one recent) and a schedule.
        rec.insert("sync_outbox", tbl="calls", key="1", op="upsert", at="2026-11-01T10:00:01.000Z")
        rec.insert(
            "sync_outbox", tbl="runs", key="run_3", op="upsert", at="2026-11-03T23:59:00.000Z"
        )
        rec.insert(
            "sync_outbox", tbl="schedules", key="sch_1", op="upsert", at="2026-11-03T00:00:00.000Z"
        )
        # Something outside the ledger that must survive.
        sid = rec.start_session(title="Tomatoes", model="gpt-5", at=_t("2026-11-01T09:59:00Z"))
        rec.add_message(
            sid, "user", "Why are my tomato leaves curling?", at=_t("2026-11-01T09:59:30Z")
        )
        rec.insert("schedules", id="sch_1", agent_id="kaja", cron="0 7 * * *", status="active")


EXPECTED_BY_MODEL = (
    "model\tgpt-5\t2\t0\t300\t50\t50\t350\t3000\n"
    "model\tclaude-haiku-4.5\t1\t1\t300\t0\t0\t300\t500\n"
    "model\tllama3.2:3b\t1\t0\t50\t10\t\t60\t250\n"
    "total\t4\t1\t650\t60\t50\t710\t3750\n"
)
EXPECTED_TOOLS = (
    "tool\trun_tests\t2\t0\t2\t0\t2\t2000\n"
    "tool\tweb_search\t3\t2\t1\t0\t1\t167\n"
    "tool\tshell\t2\t1\t0\t1\t1\t20\n"
)
EXPECTED_RUNS = "runs\tcompleted\t1\nruns\tfailed\t1\nruns\trunning\t1\n"


@pytest.fixture
def ledger(kaja):
    build_ledger(kaja)
    return kaja


def counts(db: Path, tables=(*LEDGER, "sync_outbox", "counters")) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {
            t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
            for t in tables
            if t in have
        }
    finally:
        conn.close()


def others_fingerprint(db: Path) -> dict[str, tuple[int, str]]:
    """Row count and a checksum of the contents of every table outside the usage ledger
    and kaja's rollups of it (a reset drops them; the next `kaja usage` builds them)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        out = {}
        for name in names:
            if name in LEDGER or name.startswith("kaja_usage_"):
                continue
            digest = hashlib.sha256()
            rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            for row in sorted(repr(r) for r in rows):
                digest.update(row.encode())
            out[name] = (len(rows), digest.hexdigest())
        # Every table, index and trigger, as declared (sync triggers set aside come back).
        declared = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"
                                       " WHERE name NOT LIKE 'kaja_usage%' AND tbl_name NOT LIKE 'kaja_usage%'"))  # fmt: skip
        out["(schema)"] = (len(declared), hashlib.sha256(repr(declared).encode()).hexdigest())
        return out
    finally:
        conn.close()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- kaja usage ---------------------------------------------------------------------
def test_totals_by_model_tools_and_runs_piped(ledger):
    r = ledger("usage")
    assert r.code == 0, r
    assert r.out == EXPECTED_BY_MODEL + EXPECTED_TOOLS + EXPECTED_RUNS
    assert r.err == ""


def test_group_by_day_source_and_engine(ledger):
    r = ledger("usage", "--by", "day", "--tools", "0")
    assert r.code == 0, r
    assert r.out.splitlines()[:4] == [
        "day\t2026-11-01\t2\t0\t300\t50\t50\t350\t3000",
        "day\t2026-11-02\t1\t1\t300\t0\t0\t300\t500",
        "day\t2026-11-03\t1\t0\t50\t10\t\t60\t250",
        "total\t4\t1\t650\t60\t50\t710\t3750",
    ]
    r = ledger("usage", "--by", "source")
    assert r.out.splitlines()[:3] == [
        "source\tinteractive\t3\t0\t350\t60\t50\t410\t3250",
        "source\ttelegram\t1\t1\t300\t0\t0\t300\t500",
        "total\t4\t1\t650\t60\t50\t710\t3750",
    ]
    r = ledger("usage", "--by", "ENGINE")
    assert [line.split("\t")[1] for line in r.out.splitlines()[:3]] == [
        "openai",
        "anthropic",
        "ollama",
    ]


def test_since_and_until_filter_calls_tools_and_runs(ledger):
    r = ledger("usage", "--since", "2026-11-02", "--until", "2026-11-03")
    assert r.code == 0, r
    assert r.out == (
        "model\tclaude-haiku-4.5\t1\t1\t300\t0\t0\t300\t500\n"
        "total\t1\t1\t300\t0\t0\t300\t500\n"
        "tool\tshell\t1\t0\t0\t1\t1\t10\n"
        "tool\tweb_search\t1\t0\t1\t0\t1\t300\n"
        "runs\tfailed\t1\n"
    )
    r = ledger("usage", "--until", "2026-11-02T00:00:00Z", "--json")
    data = json.loads(r.out)
    assert [g["model"] for g in data["groups"]] == ["gpt-5"]
    assert data["until"] == "2026-11-02T00:00:00.000Z"
    assert data["runs"] == {"completed": 1}
    # An hour later than the last call: nothing.
    r = ledger("usage", "--since", "2026-11-04")
    assert r.out == "total\t0\t0\t0\t0\t0\t0\t0\n"
    assert "no model calls recorded since 2026-11-04T00:00:00.000Z" in r.err


def test_json_shape(ledger):
    r = ledger("usage", "--json", "--tools", "1")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["store"] == str(ledger.db)
    assert data["exists"] is True
    assert (data["by"], data["since"], data["until"]) == ("model", None, None)
    assert data["groups"][2] == {
        "model": "llama3.2:3b", "calls": 1, "failed": 0, "prompt_tokens": 50,
        "completion_tokens": 10, "cached_tokens": None, "tokens": 60, "duration_ms": 250,
    }  # fmt: skip
    assert data["total"] == {
        "calls": 4, "failed": 1, "prompt_tokens": 650, "completion_tokens": 60,
        "cached_tokens": 50, "tokens": 710, "duration_ms": 3750,
    }  # fmt: skip
    assert data["tools"] == [
        {"tool": "run_tests", "calls": 2, "failures": 2, "avg_ms": 2000,
         "outcomes": {"error": {"calls": 2, "avg_ms": 2000}}},
    ]  # fmt: skip
    assert data["tools_left_out"] == 2
    assert data["runs"] == {"completed": 1, "failed": 1, "running": 1}
    assert data["missing"] == []


def test_tools_limit_says_how_many_were_left_out(ledger):
    r = ledger("usage", "--tools", "1")
    assert r.out.count("\ntool\t") + r.out.startswith("tool\t") == 1
    assert "2 more tools (--tools 0 shows all)" in r.err


def test_bad_options_are_usage_errors(ledger):
    assert ledger("usage", "--by", "week").code == 2
    r = ledger("usage", "--since", "last tuesday")
    assert r.code == 2 and r.err.startswith("kaja: --since: not a date or age")
    assert "Traceback" not in r.err
    assert ledger("usage", "reset", "--before", "soon").code == 2
    assert ledger("usage", "reset", "--wait", "-1").code == 2


def test_missing_store_says_nothing_recorded_and_where_it_looked(kaja):
    r = kaja("usage")
    assert (r.code, r.out) == (0, "")
    assert r.err == f"kaja: nothing recorded yet: no Kaja store at {kaja.db}\n"
    r = kaja("usage", "--json")
    data = json.loads(r.out)
    assert (r.code, data["exists"], data["groups"], data["total"]["calls"]) == (0, False, [], 0)
    assert not kaja.state.exists()  # reading created nothing


def _ledger_dump(db: Path) -> list[str]:
    """Every row and schema object of the file but kaja's usage rollups."""
    conn = sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)
    try:
        return [line for line in conn.iterdump() if "kaja_usage_" not in line]
    finally:
        conn.close()


def test_usage_changes_nothing_but_its_rollups(demo_store):
    """The first `kaja usage` writes its rollups (issue 29) and nothing else; once they
    are up to date, reading writes nothing at all, and `reset --dry-run` never does."""
    before = _ledger_dump(demo_store.db)
    assert demo_store("usage").code == 0
    assert _ledger_dump(demo_store.db) == before
    had_wal = (demo_store.state / "kaja.db-wal").exists()
    digest = file_digest(demo_store.db)
    for args in (("usage",), ("usage", "--by", "day", "--json"), ("usage", "reset", "--dry-run")):
        assert demo_store(*args).code == 0
    assert file_digest(demo_store.db) == digest
    assert (demo_store.state / "kaja.db-wal").exists() == had_wal


def test_a_demo_store_has_its_rollups_from_the_start(kaja):
    """`kaja demo` builds the rollups as it writes, so the store's first `kaja usage`
    reads them (on the 10M-message store it would build them for two minutes)
    and writes nothing, and its figures are the raw SQL's."""
    assert kaja("demo").code == 0
    digest = file_digest(kaja.db)
    r = kaja("usage", "--json", "--tools", "0")
    assert r.code == 0, r
    assert file_digest(kaja.db) == digest
    assert json.loads(r.out) == {**_raw_json(kaja), "store": json.loads(r.out)["store"]}


def _drop_rollups(db: Path) -> None:
    """kaja's rollups and their triggers gone, as in a store kaja has not yet read."""
    from kaja_cli.core.ledger.usage import rollups

    conn = sqlite3.connect(db)
    try:
        with conn:
            rollups.drop(conn)
    finally:
        conn.close()


def _raw_json(kaja: Kaja, *args: str) -> dict:
    """`kaja usage --json` as the raw SQL over the ledger gives it (no rollups read)."""
    from kaja_cli.core.ledger.report import UsageReport, fill, report_queries

    conn = sqlite3.connect(kaja.db.as_uri() + "?mode=ro", uri=True)
    try:
        by = args[args.index("--by") + 1] if "--by" in args else "model"
        since = args[args.index("--since") + 1] if "--since" in args else None
        until = args[args.index("--until") + 1] if "--until" in args else None
        queries, missing = report_queries(schema.present_columns(conn), by, since, until)
        rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
    finally:
        conn.close()
    result = UsageReport(str(kaja.db), True, by, since, until, missing=missing)
    return fill(result, rows).to_json(tools=0)


ROLLUP_READS = (
    (),
    ("--by", "day"),
    ("--by", "engine", "--since", "2026-11-28T10:30:00.000Z"),
    (
        "--by",
        "source",
        "--since",
        "2026-11-27T00:00:00.000Z",
        "--until",
        "2026-11-29T13:15:00.000Z",
    ),
)


def test_usage_from_rollups_equals_the_raw_sql_through_edits(demo_store):
    """What `kaja usage` prints from its rollups is the raw SQL's, figure for figure,
    before and after the agent writes, edits and deletes ledger rows."""

    def agree() -> None:
        for args in ROLLUP_READS:
            r = demo_store("usage", "--json", "--tools", "0", *args)
            assert r.code == 0, r
            data = json.loads(r.out)
            assert data == {**_raw_json(demo_store, *args), "store": data["store"]}, args

    agree()
    assert _count(demo_store.db, "SELECT count(*) FROM kaja_usage_calls") > 0
    conn = sqlite3.connect(demo_store.db)
    with conn:
        conn.execute(
            "INSERT INTO calls (at, model, prompt_tokens, completion_tokens, ok)"
            " VALUES ('2026-11-28T10:45:00.000Z', 'new-model', 100, 5, 0)"
        )
        conn.execute("UPDATE calls SET prompt_tokens = prompt_tokens + 7 WHERE id % 4 = 0")
        conn.execute("DELETE FROM calls WHERE id % 5 = 0")
        conn.execute("UPDATE tools SET outcome = 'error' WHERE id % 3 = 0")
        conn.execute("UPDATE runs SET status = 'failed' WHERE rowid % 2 = 0")
    conn.close()
    agree()


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def test_usage_on_a_file_it_may_not_write_reads_the_raw_rows(demo_store):
    """A store kaja may not write (read-only here) is still answered, from the raw rows."""
    _drop_rollups(demo_store.db)  # the demo built them: a store no kaja usage has read yet
    os.chmod(demo_store.db, 0o444)
    os.chmod(demo_store.state, 0o555)
    immutable = os.access(demo_store.db, os.W_OK)  # root: make the file immutable instead
    try:
        if immutable and subprocess.run(["chattr", "+i", str(demo_store.db)]).returncode:
            pytest.skip("root writes read-only files, and chattr +i is not available")
        r = demo_store("usage", "--json", "--tools", "0", "--by", "day")
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(demo_store.db)])
        os.chmod(demo_store.state, 0o700)
        os.chmod(demo_store.db, 0o600)
    assert (r.code, r.err) == (0, "")
    data = json.loads(r.out)
    assert data == {**_raw_json(demo_store, "--by", "day"), "store": data["store"]}
    assert (
        _count(demo_store.db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'kaja_usage%'")
        == 0
    )


@pytest.mark.process
def test_usage_while_the_agent_holds_the_write_lock_reads_without_waiting(demo_store):
    """Rollups behind the ledger, and the agent writing: kaja does not wait for the lock,
    it adds the raw rows the rollups lack."""
    assert demo_store("usage").code == 0
    agent = sqlite3.connect(demo_store.db, isolation_level=None)
    agent.execute("BEGIN IMMEDIATE")
    agent.execute(
        "INSERT INTO calls (at, model, prompt_tokens, ok) VALUES ('2026-11-28T10:00:00.000Z', 'x', 9, 1)"
    )
    agent.execute("DELETE FROM calls WHERE id % 7 = 0")
    agent.execute("COMMIT")
    agent.execute("BEGIN IMMEDIATE")  # and it goes on writing
    try:
        started = time.monotonic()
        r = demo_store.proc("usage", "--json", "--tools", "0", "--by", "day")
        took = time.monotonic() - started
    finally:
        agent.execute("ROLLBACK")
        agent.close()
    assert (r.code, r.err) == (0, "")
    data = json.loads(r.out)
    assert data == {**_raw_json(demo_store, "--by", "day"), "store": data["store"]}
    assert took < 4  # the lock is waited for 0.2 s, not the 5 s a writer waits
    dirty = "SELECT count(*) FROM kaja_usage_dirty"
    assert _count(demo_store.db, dirty) > 0  # read raw this time, folded in by the next read
    assert demo_store("usage").code == 0
    assert _count(demo_store.db, dirty) == 0


def test_usage_reset_drops_the_rollups_and_the_next_read_builds_them_again(demo_store):
    assert demo_store("usage").code == 0
    assert demo_store("usage", "reset", "--yes", "--before", "2026-11-29").code == 0
    names = "SELECT count(*) FROM sqlite_master WHERE name LIKE 'kaja_usage%'"
    assert _count(demo_store.db, names) == 0
    r = demo_store("usage", "--json", "--tools", "0")
    data = json.loads(r.out)
    assert data == {**_raw_json(demo_store), "store": data["store"]}
    assert _count(demo_store.db, names) > 0


def test_rollups_keep_the_store_kajas_and_the_agent_writing(demo_store):
    """After `kaja usage`: doctor finds nothing new to say, and the write API still writes
    (its inserts fire kaja's triggers)."""
    before = demo_store("doctor", "--json")
    assert demo_store("usage").code == 0
    after = demo_store("doctor", "--json")
    assert after.code == before.code
    assert json.loads(after.out)["summary"] == json.loads(before.out)["summary"]
    with Recorder(store_of(demo_store)) as rec:
        run = rec.start_run(agent="test")
        rec.add_call(run, model="after-rollups", prompt_tokens=11, completion_tokens=2)
        rec.end_run(run, "completed")
    data = json.loads(demo_store("usage", "--json").out)
    assert next(g for g in data["groups"] if g["model"] == "after-rollups")["prompt_tokens"] == 11
    # A backup holds the rollups with the rows they add up; wipe takes them with the file.
    archive = demo_store.root / "b.tar.gz"
    assert demo_store("backup", "-o", str(archive)).code == 0
    assert demo_store("wipe", "--yes").code == 0
    assert not demo_store.db.exists()
    assert demo_store("restore", str(archive), "--yes").code == 0
    data = json.loads(demo_store("usage", "--json", "--tools", "0").out)
    assert data == {**_raw_json(demo_store), "store": data["store"]}


def test_demo_store_totals_match_the_rows(demo_store):
    data = json.loads(demo_store("usage", "--json", "--tools", "0").out)
    conn = sqlite3.connect(demo_store.db)
    calls, prompt, completion = conn.execute(
        "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls"
    ).fetchone()
    assert (data["total"]["calls"], data["total"]["prompt_tokens"]) == (calls, prompt)
    assert data["total"]["completion_tokens"] == completion
    assert (
        sum(t["calls"] for t in data["tools"])
        == conn.execute("SELECT COUNT(*) FROM tools").fetchone()[0]
    )
    assert sum(data["runs"].values()) == conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def old_ledger(path: Path) -> None:
    """A ledger an older agent wrote: calls without engine/cached_tokens, no tools or media."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        PRAGMA journal_mode = WAL;
        CREATE TABLE runs (id TEXT PRIMARY KEY, agent, source, started_at, status);
        CREATE TABLE calls (id INTEGER PRIMARY KEY, at, model, prompt_tokens INTEGER,
                            completion_tokens INTEGER, duration_ms INTEGER, ok INTEGER);
        CREATE TABLE logs (id INTEGER PRIMARY KEY, level, message);
        CREATE TABLE counters (name TEXT PRIMARY KEY, value);
        INSERT INTO runs VALUES ('r1', 'kaja', 'interactive', '2025-01-01T00:00:00.000Z', 'completed');
        INSERT INTO calls VALUES (1, '2025-01-01T00:00:01.000Z', 'gpt-4o', 10, 5, 100, 1);
        INSERT INTO calls VALUES (2, '2025-06-01T00:00:01.000Z', 'gpt-4o', 20, 5, 100, 1);
        INSERT INTO logs VALUES (1, 'info', 'old'), (2, 'info', 'older');
        INSERT INTO counters VALUES ('marker', '1');
        """
    )
    conn.close()


def test_old_ledger_is_reported_as_far_as_it_goes(kaja):
    old_ledger(kaja.db)
    before = _ledger_dump(kaja.db)
    r = kaja("usage")
    assert r.code == 0, r
    assert r.out == (
        "model\tgpt-4o\t2\t0\t30\t10\t\t40\t200\ntotal\t2\t0\t30\t10\t\t40\t200\nruns\tcompleted\t1\n"
    )
    assert "lacks table tools, column calls.cached_tokens" in r.err
    data = json.loads(kaja("usage", "--by", "engine", "--json").out)
    assert data["groups"][0]["engine"] is None
    assert "column calls.engine" in data["missing"]
    assert _ledger_dump(kaja.db) == before  # only kaja's rollups were added


# --- a terminal -----------------------------------------------------------------------
def run_in_terminal(
    kaja, *args: str, answer: str | None = None, timeout: float = 60
) -> tuple[int, str]:
    """Run kaja with stdin, stdout and stderr on a pseudo-terminal; answer its question."""
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    p = subprocess.Popen(
        [KAJA, *args], stdin=sub, stdout=sub, stderr=sub, env=dict(kaja.env, COLUMNS="160")
    )
    os.close(sub)
    out = b""
    answered = answer is None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not answered and b"[y/n]" in out:
                os.write(main, answer.encode() + b"\r")
                answered = True
        elif p.poll() is not None:
            break
    code = p.wait(timeout=timeout)
    os.close(main)
    text = out.decode(errors="replace").replace("\r\n", "\n")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # styles (bold) are not asserted


def test_terminal_shows_tables_and_a_chart_of_tokens_per_day(ledger):
    code, out = run_in_terminal(ledger, "usage", "--by", "day")
    assert code == 0, out
    assert "model calls" in out and "tokens per day" in out and "tools that fail most" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("2026-")}
    assert list(lines) == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert lines["2026-11-01"].rstrip().endswith("█" * 30)  # the biggest day: a full bar
    assert "█" * 25 in lines["2026-11-02"] and "█" * 26 not in lines["2026-11-02"]
    assert "3.0 s" in lines["2026-11-01"] and "350" in lines["2026-11-01"]
    assert "\t" not in out


def test_reset_asks_on_a_terminal(ledger):
    code, out = run_in_terminal(ledger, "usage", "reset", answer="n")
    assert code == 1, out
    assert "Delete 23 usage rows and 2 pending sync rows from" in out
    assert "cancelled: nothing was changed" in out
    assert counts(ledger.db)["calls"] == 4
    code, out = run_in_terminal(ledger, "usage", "reset", answer="y")
    assert code == 0, out
    assert "deleted 23 usage rows and 2 pending sync rows" in out
    assert counts(ledger.db)["calls"] == 0


# --- kaja usage reset -------------------------------------------------------------------
PLAN = {"runs": 3, "calls": 4, "tools": 7, "events": 2, "logs": 2, "media": 1, "feedback": 1,
        "reviews": 1, "cache_stats": 2}  # fmt: skip


def test_dry_run_counts_and_deletes_nothing(ledger):
    before = counts(ledger.db)
    r = ledger("usage", "reset", "--dry-run")
    assert r.code == 0, r
    assert r.out == "".join(f"{t}\t{n}\n" for t, n in PLAN.items()) + "sync_outbox (pending)\t2\n"
    assert r.err == (
        "kaja: dry run: would delete 23 usage rows and 2 pending sync rows; nothing was deleted\n"
    )
    data = json.loads(ledger("usage", "reset", "--dry-run", "--json").out)
    assert data == {
        "store": str(ledger.db), "dry_run": True, "before": None, "tables": PLAN, "total": 23,
        "sync_outbox": 2, "skipped": {}, "vacuum": None,
    }  # fmt: skip
    assert counts(ledger.db) == before


def test_the_dry_run_total_on_a_terminal_is_the_sum_of_its_rows(ledger):
    code, out = run_in_terminal(ledger, "usage", "reset", "--dry-run")
    assert code == 0, out
    shown = {
        line.split()[0]: int(line.split()[-1])
        for line in out.splitlines()
        if line.split() and line.split()[-1].isdigit()
    }
    assert shown.pop("total") == sum(shown.values()) == 25  # 23 usage rows, 2 pending sync rows
    assert "would delete 23 usage rows and 2 pending sync rows; nothing was deleted" in out


def test_one_row_is_one_row(ledger):
    conn = sqlite3.connect(ledger.db)
    for table in LEDGER:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM sync_outbox WHERE tbl != 'schedules'")
    conn.execute("INSERT INTO calls (id, at, model) VALUES (1, '2026-11-01T00:00:00Z', 'x')")
    conn.commit()
    conn.close()
    r = ledger("usage", "reset", "--dry-run")
    assert r.err == "kaja: dry run: would delete 1 usage row; nothing was deleted\n", r


def test_without_a_terminal_or_yes_it_refuses(ledger):
    before = counts(ledger.db)
    r = ledger("usage", "reset")
    assert r.code == 5
    assert r.err == "kaja: not deleting anything without confirmation: rerun with --yes\n"
    assert counts(ledger.db) == before


@pytest.mark.process  # the test keeps a connection to the store open across the runs
def test_reset_clears_only_the_ledger(ledger):
    others = others_fingerprint(ledger.db)
    r = ledger("usage", "reset", "--yes", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert (data["dry_run"], data["tables"], data["total"], data["sync_outbox"]) == (
        False,
        PLAN,
        23,
        2,
    )
    after = counts(ledger.db)
    assert all(after[t] == 0 for t in LEDGER)
    assert after["counters"] >= 1
    conn = sqlite3.connect(ledger.db)
    assert conn.execute("SELECT tbl, key FROM sync_outbox").fetchall() == [("schedules", "sch_1")]
    # Everything else is exactly as it was (the pending schedule row included).
    expected = dict(others)
    now = others_fingerprint(ledger.db)
    assert now.pop("sync_outbox")[0] == 1
    expected.pop("sync_outbox")
    assert now == expected
    r = ledger("usage", "reset", "--yes")
    assert (r.code, r.err) == (0, "kaja: the usage ledger has no rows: nothing to delete\n")


def test_reset_on_the_demo_store_keeps_everything_else(demo_store):
    # db-stats.db gains the reset's own query profile (core/profiler.py).
    side = {n: file_digest(demo_store.state / n) for n in ("cache.db", "web-auth.db")}
    others = others_fingerprint(demo_store.db)
    outbox = (
        sqlite3.connect(demo_store.db).execute("SELECT COUNT(*) FROM sync_outbox").fetchone()[0]
    )
    r = demo_store("usage", "reset", "--yes")
    assert r.code == 0, r
    assert r.out.endswith(f"sync_outbox (pending)\t{outbox}\n")  # the demo's are all ledger rows
    assert all(n == 0 for t, n in counts(demo_store.db).items() if t in LEDGER)
    now = others_fingerprint(demo_store.db)
    assert now.pop("sync_outbox") == (0, hashlib.sha256().hexdigest())
    others.pop("sync_outbox")
    # The sync_map row of an imported call goes with the calls (sync.after_reset).
    assert now.pop("sync_map") == (0, hashlib.sha256().hexdigest())
    others.pop("sync_map")
    assert now == others
    assert side == {n: file_digest(demo_store.state / n) for n in side}


@pytest.mark.process  # the test keeps a connection to the store open across the runs
def test_before_prunes_only_older_rows(ledger):
    r = ledger("usage", "reset", "--before", "2026-11-02", "--yes", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["before"] == "2026-11-02T00:00:00.000Z"
    assert data["tables"] == {"runs": 1, "calls": 2, "tools": 2, "events": 1, "logs": 1, "media": 0,
                              "feedback": 1, "reviews": 0, "cache_stats": 1}  # fmt: skip
    assert data["sync_outbox"] == 1  # call 1's; run_3's stays pending
    conn = sqlite3.connect(ledger.db)
    assert conn.execute("SELECT MIN(at) FROM calls").fetchone()[0] == "2026-11-02T09:00:01.000Z"
    assert conn.execute("SELECT id FROM runs ORDER BY id").fetchall() == [("run_2",), ("run_3",)]
    assert conn.execute("SELECT minute FROM cache_stats").fetchall() == [("2026-11-04T10:00",)]
    assert sorted(conn.execute("SELECT tbl FROM sync_outbox").fetchall()) == [
        ("runs",),
        ("schedules",),
    ]
    r = ledger("usage", "reset", "--before", "30d", "--dry-run")  # an age works too
    assert r.code == 0, r


SYNC_TRIGGERS = [
    f"CREATE TRIGGER {t}_sync_{op.lower()} AFTER {op} ON {t} BEGIN "
    f"INSERT INTO sync_outbox (tbl, key, op, at) VALUES ('{t}', CAST({row}.{key} AS TEXT), "
    f"'{'delete' if op == 'DELETE' else 'upsert'}', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')); END"
    for t, key in (("calls", "id"), ("tools", "id"), ("logs", "id"), ("feedback", "id"), ("media", "id"),
                   ("runs", "id"), ("events", "id"), ("reviews", "run_id"))
    for op, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
]  # fmt: skip


def add_sync_triggers(db: Path) -> None:
    conn = sqlite3.connect(db)
    with conn:
        for sql in SYNC_TRIGGERS:
            conn.execute(sql)
    conn.close()


def outbox_state(db: Path):
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT seq, tbl, key, op FROM sync_outbox ORDER BY seq").fetchall()
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'").fetchone()
        triggers = sorted(
            conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        )
        return rows, seq, triggers
    finally:
        conn.close()


@pytest.mark.parametrize("before", [None, "2026-11-02"])
def test_reset_queues_nothing_for_sync(ledger, before):
    add_sync_triggers(ledger.db)
    rows, seq, triggers = outbox_state(ledger.db)
    args = ["usage", "reset", "--yes"] + (["--before", before] if before else [])
    r = ledger(*args)
    assert r.code == 0, r
    after_rows, after_seq, after_triggers = outbox_state(ledger.db)
    dropped = {("calls", "1")} if before else {("calls", "1"), ("runs", "run_3")}
    assert after_rows == [row for row in rows if (row[1], row[2]) not in dropped]
    assert after_seq == seq
    assert after_triggers == triggers  # the agent's triggers are back, unchanged
    # …and still work.
    conn = sqlite3.connect(ledger.db)
    with conn:
        conn.execute("INSERT INTO calls (run_id, at, model) VALUES ('', '2026-12-01', 'm')")
    assert conn.execute("SELECT tbl, op FROM sync_outbox ORDER BY seq DESC LIMIT 1").fetchone() == (
        "calls",
        "upsert",
    )


def test_reset_drops_what_an_unknown_trigger_queues(ledger):
    # A trigger that reaches the outbox indirectly cannot be set aside; what it
    # queues during the reset is dropped and the outbox's sequence put back.
    conn = sqlite3.connect(ledger.db)
    with conn:
        conn.executescript(
            """
            CREATE TABLE audit (what);
            CREATE TRIGGER calls_audit AFTER DELETE ON calls BEGIN INSERT INTO audit VALUES ('gone'); END;
            CREATE TRIGGER audit_sync AFTER INSERT ON audit
              BEGIN INSERT INTO sync_outbox (tbl, key, op) VALUES ('audit', new.rowid, 'upsert'); END;
            """
        )
    conn.close()
    rows, seq, _ = outbox_state(ledger.db)
    assert ledger("usage", "reset", "--yes").code == 0
    after_rows, after_seq, _ = outbox_state(ledger.db)
    assert after_rows == [r for r in rows if r[1] == "schedules"]
    assert after_seq == seq
    assert counts(ledger.db)["calls"] == 0


def test_missing_store_needs_a_store_to_reset(kaja):
    for args in (("usage", "reset", "--yes"), ("usage", "reset", "--dry-run")):
        r = kaja(*args)
        assert r.code == 3
        assert r.err.startswith(f"kaja: no Kaja store at {kaja.db}")
    assert not kaja.state.exists()


def test_old_ledger_reset_clears_what_exists(kaja):
    old_ledger(kaja.db)
    r = kaja("usage", "reset", "--before", "2025-03-01", "--dry-run", "--json")
    data = json.loads(r.out)
    assert data["tables"] == {"runs": 1, "calls": 1}
    assert data["skipped"] == {
        "tools": "no such table", "events": "no such table", "logs": "its rows carry no time",
        "media": "no such table", "feedback": "no such table", "reviews": "no such table",
        "cache_stats": "no such table",
    }  # fmt: skip
    r = kaja("usage", "reset", "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["tables"] == {"runs": 1, "calls": 2, "logs": 2}
    # counters stay: the old file's marker, and the note of the kaja that upgraded the file
    assert counts(kaja.db) == {**dict.fromkeys(LEDGER, 0), "sync_outbox": 0, "counters": 2}
    conn = sqlite3.connect(kaja.db)
    assert conn.execute("SELECT value FROM counters WHERE name = 'marker'").fetchone() == ("1",)
    assert conn.execute(
        "SELECT count(*) FROM counters WHERE name = 'schema:upgraded'"
    ).fetchone() == (1,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# --- other processes ------------------------------------------------------------------------
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[3] == "write":
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO counters (name, value) VALUES ('holder', '1')")
else:
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM messages").fetchall()
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print("released", flush=True)
"""


def hold_write_lock(db: Path, seconds: float, mode: str = "write") -> subprocess.Popen:
    """Another process in a write (or, with mode="read", a read) transaction on `db`."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), str(seconds), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline() == "holding\n"
    return p


def test_busy_agent_exit_4_after_the_wait_nothing_deleted(ledger):
    before = counts(ledger.db)
    holder = hold_write_lock(ledger.db, 60)
    try:
        assert ledger("usage").code == 0  # reading is never blocked
        start = time.monotonic()
        r = ledger("usage", "reset", "--yes", "--wait", "0.6")
        elapsed = time.monotonic() - start
        assert r.code == 4, r
        assert r.err.startswith(
            f"kaja: the agent is busy writing to {ledger.db} (waited 0.6 s): nothing was deleted"
        )
        assert "--wait" in r.err and "Traceback" not in r.err
        assert 0.6 <= elapsed < 20
    finally:
        holder.kill()
        holder.wait()
    assert counts(ledger.db) == before


def test_reset_waits_for_the_agent_to_finish(ledger):
    holder = hold_write_lock(ledger.db, 0.8)
    try:
        r = ledger("usage", "reset", "--yes", "--wait", "30")
        assert r.code == 0, r
    finally:
        holder.wait(timeout=30)
    assert counts(ledger.db)["calls"] == 0
    conn = sqlite3.connect(ledger.db)
    assert conn.execute("SELECT value FROM counters WHERE name = 'holder'").fetchone() == ("1",)


BIG = 300_000  # rows in calls, and pending outbox rows: the sync has been offline a while


@pytest.fixture(scope="module")
def big_ledger(tmp_path_factory) -> Path:
    """A store with a large ledger and a large pending outbox, built with raw SQL."""
    k = Kaja(tmp_path_factory.mktemp("big-ledger"))
    build_ledger(k)
    conn = sqlite3.connect(k.db)
    with conn:
        conn.execute(
            f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG})
            INSERT INTO calls (run_id, at, model, engine, prompt_tokens, completion_tokens, duration_ms, ok)
            SELECT 'run_' || (i / 3), strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (i % 300000) || ' minutes'),
                   'gpt-5', 'openai', 400 + i % 900, 20 + i % 70, 500 + i % 2000, 1 FROM n"""
        )  # fmt: skip
        conn.execute(
            f"""WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {BIG})
            INSERT INTO sync_outbox (tbl, key, op, at) SELECT 'calls', i + 10, 'upsert', '2026-11-01' FROM n"""
        )
    conn.close()
    return k.state


@pytest.mark.skipif(
    sys.platform != "linux", reason="reads SQLite's lock on the -shm file (Linux flock layout)"
)
def test_kill_9_mid_reset_leaves_all_or_nothing(kaja, big_ledger):
    import shutil

    shutil.copytree(big_ledger, kaja.state, dirs_exist_ok=True)
    before = counts(kaja.db)
    assert before["calls"] > BIG and before["sync_outbox"] > BIG
    p = kaja.popen("usage", "reset", "--yes", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Wait until the reset holds the WAL write lock (byte 120 of the -shm
        # file, SQLite's WAL_WRITE_LOCK): it is inside its transaction.
        assert wait_for_write_lock(kaja.db, p, timeout=60), p.stderr.read() if p.stderr else ""
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL
    after = counts(kaja.db)
    zero = {t: (0 if t in LEDGER else n) for t, n in before.items()}
    zero["sync_outbox"] = 1  # the schedule's pending row
    # All or nothing; with a ~1 s transaction and the kill sent as soon as it
    # began, it is "all": the rows, and the pending outbox, are all still there.
    assert after in (before, zero), after
    assert after == before
    conn = sqlite3.connect(kaja.db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    # The next reset completes it.
    r = kaja("usage", "reset", "--yes")
    assert r.code == 0, r
    assert counts(kaja.db) == zero


def wait_for_write_lock(db: Path, p: subprocess.Popen, timeout: float) -> bool:
    shm = Path(f"{db}-shm")
    deadline = time.monotonic() + timeout
    fd = None
    try:
        while time.monotonic() < deadline and p.poll() is None:
            if fd is None and shm.exists():
                fd = os.open(shm, os.O_RDONLY)
            if fd is not None:
                query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 120, 1, 0)
                kind = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, query))[0]
                if kind != fcntl.F_UNLCK:
                    return True
            time.sleep(0.0005)
        return False
    finally:
        if fd is not None:
            os.close(fd)


# --- --vacuum ------------------------------------------------------------------------------
def search_hits(db: Path, word: str) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return sorted(r[0] for r in conn.execute(
            "SELECT m.content FROM conversation_text JOIN messages AS m ON m.rowid = conversation_text.docid"
            " WHERE conversation_text MATCH ?", (word,)))  # fmt: skip
    finally:
        conn.close()


def test_vacuum_gives_space_back_and_search_still_finds(kaja, big_ledger):
    import shutil

    shutil.copytree(big_ledger, kaja.state, dirs_exist_ok=True)
    assert search_hits(kaja.db, "tomato") == ["Why are my tomato leaves curling?"]
    r = kaja("usage", "reset", "--yes", "--vacuum", "--json")
    assert r.code == 0, r
    vac = json.loads(r.out)["vacuum"]
    assert vac["search_index"] == "checked"
    assert vac["freed_bytes"] == vac["bytes_before"] - vac["bytes_after"] > 10_000_000
    on_disk = kaja.db.stat().st_size + (
        Path(f"{kaja.db}-wal").stat().st_size if Path(f"{kaja.db}-wal").exists() else 0
    )
    assert on_disk == vac["bytes_after"]
    assert search_hits(kaja.db, "tomato") == ["Why are my tomato leaves curling?"]
    r = kaja("usage", "reset", "--yes", "--vacuum")  # nothing left to delete: vacuums all the same
    assert r.code == 0, r
    assert "given back to the disk" in r.err


def test_vacuum_when_the_agent_is_busy_or_reading(ledger):
    assert ledger("usage", "reset", "--yes").code == 0
    holder = hold_write_lock(ledger.db, 60)
    try:
        r = ledger("usage", "reset", "--yes", "--vacuum", "--wait", "0.3")
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 4, r
    assert r.err == (
        "kaja: the usage ledger has no rows: nothing to delete\n"
        f"kaja: the agent is busy writing to {ledger.db} (waited 0.3 s): VACUUM did not run:"
        " run `kaja usage reset --vacuum` again when it is idle\n"
    )
    holder = hold_write_lock(ledger.db, 60, mode="read")
    try:
        r = ledger("usage", "reset", "--yes", "--vacuum", "--wait", "0.3", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 0, r
    assert json.loads(r.out)["vacuum"]["readers_waited"] is True


def test_vacuum_rebuilds_the_search_index_when_rowids_move(tmp_path):
    """SQLite renumbers the rowids of a table without any index: the index must follow."""
    from kaja_cli.core.ledger.usage import local as usage

    db = tmp_path / "kaja.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE messages (id TEXT, sessionId, content)"
    )  # an older file: no key, no index
    conn.execute(search_index.FTS_DDL)
    for name, body in search_index.FTS_TRIGGERS.items():
        conn.execute(f"CREATE TRIGGER {name} {body}")
    words = ["apple", "banana", "cherry", "damson", "elder", "fig"]
    conn.executemany(
        "INSERT INTO messages VALUES (?, 's', ?)",
        [(f"m{i}", f"{w} {i}") for i, w in enumerate(words * 50)],
    )
    conn.execute("DELETE FROM messages WHERE rowid % 4 = 1")  # gaps that VACUUM closes
    expected = {
        w: sorted(
            r[0]
            for r in conn.execute("SELECT content FROM messages WHERE content LIKE ?", (w + "%",))
        )
        for w in words
    }
    result = usage.vacuum_in(conn, db)
    assert result.search_index == "rebuilt"
    conn.close()
    assert {w: search_hits(db, w) for w in words} == expected
