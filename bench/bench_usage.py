"""`kaja usage` and `kaja usage reset --yes` on the benchmark store (issues 5, 29).

`kaja usage` reads kaja's rollups (issue 29): its floor is the `sqlite3`
command line running the raw aggregate SQL over the ledger, the same three
statements kaja would run without them (`report_queries`), both writing to
/dev/null. The first run (the warm-up) builds the rollups; the timed runs
read them, as every `kaja usage` after the first does. Goals: at most 1.5×
the raw SQL (on a small store start-up is most of it), and the issue's 150 ms
as a ratio to kaja's own start-up measured beside it (`kaja config paths
--json`, the start-up floor of issue 29): at most START_GOAL×, which is 150 ms
when start-up takes the README's ~110 ms. The reset's floor runs
`reset_queries()` in one transaction, with the sync triggers set aside and put
back, as kaja does.
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
START_GOAL = 1.35  # `kaja usage` over `kaja config paths --json`: 150 ms at ~110 ms start-up


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
                  "sqlite3 CLI: the 3 raw queries", goal=GOAL, note=size)  # fmt: skip
    bench.process("usage (rollups) vs start-up", bench.kaja("usage"),
                  bench.kaja("config", "paths", "--json"), "kaja config paths --json",
                  goal=START_GOAL, note="the issue's 150 ms at 10M calls")  # fmt: skip
    # A window cutting hours at both ends: whole days from the rollup, the cut
    # hours' whole hours, and the raw rows of the two cut hours.
    first = datetime.fromisoformat(last.replace("Z", "+00:00")) - timedelta(days=30, minutes=17)
    cut = first.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    end = (first + timedelta(days=20, minutes=29)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    queries, _ = usage.report_queries(have, "model", cut, end)
    bench.process("usage --since/--until inside hours",
                  bench.kaja("usage", "--since", cut, "--until", end),
                  bench.sqlite(_script(queries)), "sqlite3 CLI: the 3 raw queries", goal=GOAL)  # fmt: skip

    since = (datetime.fromisoformat(last.replace("Z", "+00:00")) - timedelta(days=90)).strftime(
        "%Y-%m-%dT00:00:00.000Z"
    )
    queries, _ = usage.report_queries(have, "day", since)
    bench.process("usage --by day --since 90d --json",
                  bench.kaja("usage", "--by", "day", "--since", since, "--json"),
                  bench.sqlite(_script(queries)), "sqlite3 CLI: the 3 raw queries", goal=GOAL)  # fmt: skip

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
