"""How a kaja command reads the store: every statement it ran (traced on the
connections `core/engine/db` opens, in-process), planned again on the store
with EXPLAIN QUERY PLAN. For tests that a command's cost follows its work,
not the store's size (issue 29)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

# Tables that grow with the store.
GROWING = ("runs", "calls", "tools", "events", "logs", "messages", "tool_calls", "session_events")


def traced_statements(kaja, monkeypatch, *argv: str) -> tuple[object, list[str]]:
    """Run `kaja *argv` in-process; (its result, the SQL of every statement it ran)."""
    from kaja_cli.core.engine import db

    seen: list[str] = []
    connect = db._connect

    def traced(uri: str, timeout_ms: int):
        conn = connect(uri, timeout_ms)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(db, "_connect", traced)
    try:
        r = kaja(*argv)
    finally:
        monkeypatch.undo()
    return r, seen


def plans(db: Path, statements: list[str]) -> dict[str, list[str]]:
    """Each read statement's query plan (its steps' text) on `db`."""
    out = {}
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn, conn:
        for sql in {s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))}:
            try:
                out[sql] = [step[3] for step in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            except sqlite3.OperationalError:  # a temp table of the connection that ran it
                continue
    return out


def full_scans(db: Path, statements: list[str]) -> list[tuple[str, str]]:
    """(step, statement) for every SCAN of a table that grows with the store."""
    return [
        (step, sql[:120])
        for sql, steps in plans(db, statements).items()
        for step in steps
        if any(step == f"SCAN {t}" or step.startswith(f"SCAN {t} ") for t in GROWING)
    ]
