"""`kaja usage` and `kaja usage reset --yes` on the benchmark store (issue 5).

Goal: kaja's whole process at most 1.5× the `sqlite3` command line running
the same SQL, both writing to /dev/null. Both sides run the same statements:
they come from kaja's core (`report_queries`, `reset_queries`), in one
transaction each (for the reset, with the sync triggers set aside and put
back, as kaja does).
A reset needs a fresh copy of the store before every run (kaja's and the
floor's alike); the copy is flushed to disk first so that neither side pays
for the other's writeback.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import datetime, timedelta

GOAL = 1.5


def _literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _script(queries, begin: str = "BEGIN") -> str:
    """The statements with their parameters written in, as one sqlite3 script."""
    out = [begin]
    for q in queries:
        parts = q.sql.split("?")
        assert len(parts) == len(q.params) + 1, q.sql
        text = parts[0] + "".join(
            _literal(p) + rest for p, rest in zip(q.params, parts[1:], strict=True)
        )
        out.append(text)
    out.append("COMMIT")
    return ";\n".join(out) + ";\n"


def cases(bench) -> None:
    from kaja_cli.core.ledger import usage
    from kaja_cli.core.store import schema

    conn = sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)
    try:
        have = schema.present_columns(conn)
        calls, last = conn.execute("SELECT COUNT(*), MAX(at) FROM calls").fetchone()
        rows = sum(
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in schema.LEDGER_RESET_TABLES
        )
    finally:
        conn.close()
    size = f"{calls:,} calls, {rows:,} ledger rows"

    queries, _ = usage.report_queries(have)
    bench.process("usage", bench.kaja("usage"), bench.sqlite(_script(queries)),
                  "sqlite3 CLI: the same 3 queries", goal=GOAL, note=size)  # fmt: skip

    since = (datetime.fromisoformat(last.replace("Z", "+00:00")) - timedelta(days=90)).strftime(
        "%Y-%m-%dT00:00:00.000Z"
    )
    queries, _ = usage.report_queries(have, "day", since)
    bench.process("usage --by day --since 90d --json",
                  bench.kaja("usage", "--by", "day", "--since", since, "--json"),
                  bench.sqlite(_script(queries)), "sqlite3 CLI: the same 3 queries", goal=GOAL)  # fmt: skip

    # The reset runs on a scratch copy (--state-dir), never on the benchmark store.
    scratch = bench.state_dir.parent / "usage-reset-scratch"
    target = scratch / "kaja.db"

    def fresh() -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        shutil.copyfile(bench.db, target)
        # An empty settings file of its own: --config must name one that exists (kaja refuses
        # a missing one, so a typo never means the defaults), and the user's never applies.
        (scratch / "settings.toml").write_text("")
        os.sync()

    reset = bench.kaja("--state-dir", str(scratch), "--config", str(scratch / "settings.toml"),
                       "usage", "reset", "--yes")  # fmt: skip
    # The sync triggers are set aside for the DELETEs, as kaja does (they would
    # otherwise run per row and cost SQLite's whole-table delete).
    aside = [f'DROP TRIGGER IF EXISTS "{name}"' for name in schema.SYNC_TRIGGERS]
    back = list(schema.SYNC_TRIGGERS.values())
    deletes = [usage.Query("aside", sql, ()) for sql in aside]
    deletes += usage.reset_queries(have)
    deletes += [usage.Query("back", sql, ()) for sql in back]
    floor = bench.sqlite(_script(deletes, "BEGIN IMMEDIATE"), target, readonly=False)
    try:
        bench.process("usage reset --yes", reset, floor, "sqlite3 CLI: the same DELETEs",
                      goal=GOAL, setup=fresh, note=f"{rows:,} rows deleted, fresh copy each run")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
