"""`kaja runs` and `kaja runs show` of a run with 1,000 model calls (issue 25).

Goal: kaja at most 1.5× the same SQL. The floor's SQL is exactly what kaja
ran: the statements are captured, with their parameters written in (SQLite's
expanded SQL, through a trace callback), by calling the same core functions
in this process (`core/audit/runs.py`), the catalog lookups that tell which
columns the file has included. Two rows each: the whole process against the
`sqlite3` command line, both writing to /dev/null (information: these queries
take milliseconds, so kaja's start-up is most of its time), and kaja's core
call with its `to_json()` against the same statements through the `sqlite3`
module, a connection per call, every row fetched (the goal).

The benchmark store's demo runs are small, so a big one is added once, the
way an agent writes it (ordinary SQL): `run_bench_1000`, the newest
top-level run, with 1,000 model calls, 250 tool calls, 500 events and a
subagent with 10 calls of its own. The sync_outbox rows its insert queued
are taken out again (the sync benchmark pushes that queue).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timedelta

GOAL = 1.5
RUN_ID = "run_bench_1000"
CHILD_ID = "run_bench_1000_sub"
CALLS, TOOLS, EVENTS, CHILD_CALLS = 1000, 250, 500, 10


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _ensure_big_run(db) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (RUN_ID,)).fetchone():
            return
        last = conn.execute("SELECT MAX(started_at) FROM runs").fetchone()[0]
        start = datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(seconds=1)
        conn.execute("BEGIN IMMEDIATE")
        seq = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM sync_outbox").fetchone()[0]
        end = start + timedelta(minutes=30)
        run_cols = "id, parent_id, agent, source, thread_id, prompt, started_at, ended_at, status"
        conn.execute(f"INSERT INTO runs ({run_cols}) VALUES (?, NULL, 'kaja', 'interactive', NULL,"
                     " 'Refactor the whole billing module', ?, ?, 'completed')",
                     (RUN_ID, _iso(start), _iso(end)))  # fmt: skip
        conn.execute(f"INSERT INTO runs ({run_cols}) VALUES (?, ?, 'researcher', 'subagent', NULL,"
                     " 'Read the billing tests', ?, ?, 'completed')",
                     (CHILD_ID, RUN_ID, _iso(start + timedelta(seconds=5)),
                      _iso(start + timedelta(seconds=60))))  # fmt: skip
        call_cols = ("run_id, at, engine, model, role, source, kind, prompt_tokens,"
                     " completion_tokens, cached_tokens, duration_ms, ttft_ms, tool_calls, purpose, ok")  # fmt: skip
        calls = [
            (run, _iso(start + timedelta(seconds=1.5 * i)), "anthropic", "claude-sonnet-4.5", "agent",
             "interactive", "chat", 1200 + i, 80 + i % 50, 900, 1400 + i % 300, 300 + i % 90,
             '["edit_file"]' if i % 4 == 0 else "[]", "answer", 1)
            for run, n in ((RUN_ID, CALLS), (CHILD_ID, CHILD_CALLS))
            for i in range(n)
        ]  # fmt: skip
        conn.executemany(f"INSERT INTO calls ({call_cols}) VALUES ({', '.join('?' * 15)})", calls)
        conn.executemany(
            "INSERT INTO tools (run_id, at, tool, outcome, duration_ms, arguments, result_chars)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(RUN_ID, _iso(start + timedelta(seconds=6 * i)), "edit_file",
              "ok" if i % 10 else "error", 40 + i, '{"path": "billing/invoice.py"}', 1200)
             for i in range(TOOLS)],
        )  # fmt: skip
        conn.executemany(
            "INSERT INTO events (run_id, event_id, at, type, attributes) VALUES (?, ?, ?, ?, ?)",
            [(RUN_ID, i + 1, _iso(start + timedelta(seconds=3 * i)), "ActivityTaskCompleted", "{}")
             for i in range(EVENTS)],
        )  # fmt: skip
        conn.execute("DELETE FROM sync_outbox WHERE seq > ?", (seq,))
        conn.execute("COMMIT")
    finally:
        conn.close()


def _captured(bench, call) -> list[str]:
    """The statements `call(store)` ran on kaja's connections."""
    from kaja_cli.core.engine import timing

    seen: list[str] = []

    class Traced(sqlite3.Connection):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.set_trace_callback(seen.append)

    factory = timing.factory
    timing.factory = lambda: Traced
    try:
        call(bench.store())
    finally:
        timing.factory = factory
    # `-- PRAGMA …` lines are SQLite's own, from inside pragma_table_info.
    return [s for s in seen if not s.lstrip().startswith("--")]


def _script(statements: list[str]) -> str:
    return ";\n".join(statements) + ";\n"


def _through_module(bench, statements: list[str]):
    uri = bench.db.as_uri() + "?mode=ro"

    def run() -> None:
        with closing(sqlite3.connect(uri, uri=True, isolation_level=None)) as conn:
            for sql in statements:
                conn.execute(sql).fetchall()

    return run


def cases(bench) -> None:
    from kaja_cli.core.audit import runs

    _ensure_big_run(bench.db)
    store = bench.store()

    def listing(store):
        return runs.listing(store, runs.RunFilter()).to_json()

    def show(store):
        return runs.show(store, RUN_ID).to_json()

    listed, shown = _captured(bench, listing), _captured(bench, show)
    same = "sqlite3 CLI: the same statements"
    module = "sqlite3 module: the same statements"
    size = f"{CALLS:,} calls, {TOOLS} tool calls, {EVENTS} events and a subagent"
    bench.process("runs", bench.kaja("runs"), bench.sqlite(_script(listed)), same,
                  note="20 newest top-level runs; mostly start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("runs --json: core listing().to_json()", lambda: listing(store),
                     _through_module(bench, listed), module, goal=GOAL)  # fmt: skip
    bench.process(f"runs show {RUN_ID}", bench.kaja("runs", "show", RUN_ID),
                  bench.sqlite(_script(shown)), same,
                  note=f"{size}; mostly start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("runs show --json: core show().to_json()", lambda: show(store),
                     _through_module(bench, shown), module, goal=GOAL)  # fmt: skip
