"""`sessions prune` of a tenth of the benchmark store (issue 19), against the
`sqlite3` command line running the same DELETEs over the same sessions (the
cascade of `core/cascade.py`, the search index's triggers firing alike) in
one transaction, on a fresh copy of the store before every run, kaja's and
the floor's alike. With `--yes` kaja acts in one pass (it reads which sessions
the filters select, with their message counts, and reports what its statements
deleted) and deletes in batches, each its own transaction, as it does beside a
running agent.

Goal: at most 1.5×, as `usage reset`.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing

from kaja_cli.core.conversations import cascade
from kaja_cli.core.conversations.filter import FILTER_TABLES, SessionFilter, where
from kaja_cli.core.conversations.sessions import columns
from kaja_cli.core.engine import dialect

PRUNE_GOAL = 1.5


def _tenth(conn: sqlite3.Connection) -> tuple[str, list[str]]:
    """The time before which a tenth of the sessions were last updated, and their ids."""
    total = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    when = conn.execute(
        "SELECT coalesce(updatedAt, createdAt) AS w FROM sessions ORDER BY w LIMIT 1 OFFSET ?",
        (total // 10,),
    ).fetchone()[0]
    have = columns(conn, *FILTER_TABLES)
    cond, args = where(have, SessionFilter(None, limit=0, before=when, pending=False))
    ids = [r[0] for r in conn.execute(f"SELECT s.id FROM sessions AS s WHERE {cond}", args)]
    return when, ids


def _prune_script(ids: list[str]) -> str:
    rows = ",".join(f"('{i}')" for i in ids)
    lines = [
        "BEGIN IMMEDIATE;",
        "CREATE TEMP TABLE _kaja_ids (id TEXT PRIMARY KEY);",
        f"INSERT INTO temp._kaja_ids (id) VALUES {rows};",
    ]
    in_ids = "IN (SELECT id FROM temp._kaja_ids)"
    lines += [
        f"DELETE FROM {table} WHERE {cascade.condition(cond, dialect.SQLITE, in_ids)};"
        for table, _needs, cond in cascade._SESSION_ROWS
    ]
    lines.append("COMMIT;")
    return "\n".join(lines)


def cases(bench) -> None:
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        before, ids = _tenth(conn)
        pruned = conn.execute(
            "SELECT count(*) FROM messages WHERE sessionId IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        ).fetchone()[0]

    # On a scratch copy (its own state dir), never on the benchmark store.
    scratch = bench.state_dir.parent / "prune-scratch"
    target = scratch / "kaja.db"

    def fresh() -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        shutil.copyfile(bench.db, target)
        os.sync()

    env = bench.env | {
        "KAJA_STATE_DIR": str(scratch),
        "KAJA_CONFIG": str(scratch / "settings.toml"),
    }
    prune = bench.kaja("sessions", "prune", "--all-owners", "--before", before, "--yes")
    floor = bench.sqlite(_prune_script(ids), target, readonly=False)
    try:
        bench.process(f"sessions prune, a tenth ({len(ids):,} sessions)", prune, floor,
                      "sqlite3 CLI: the same DELETEs, one transaction", goal=PRUNE_GOAL,
                      setup=fresh, repeat=min(bench.repeat, 3), env=env,
                      note=f"{pruned:,} messages deleted, fresh copy each run")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
