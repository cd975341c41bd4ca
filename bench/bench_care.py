"""Looking after a store (issue 19): `sessions prune` of a tenth of the
benchmark store, and `sessions export --all` of every session as JSON Lines.

Floors, both the `sqlite3` command line running the statements kaja runs,
taken from kaja's own query builders, output to /dev/null:

- prune: the same DELETEs over the same sessions (the cascade of
  `core/cascade.py`, the search index's triggers firing alike), in one
  transaction, on a fresh copy of the store before every run (kaja's and the
  floor's alike); kaja also plans (a read-only pass) and deletes in batches
  of its own transactions, as it does beside a running agent;
- export: for every session, the queries `core/export.py` runs (the session
  row, summaries, timeline, model calls, the pending call, the message
  count, and one row of JSON per message), from a script file.

Goals: export at most 1.3× its floor (issue 19); prune at most 1.5×, as
`usage reset`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from contextlib import closing

from bench_sessions import inline

from kaja_cli.core import cascade, transcript
from kaja_cli.core.session_filter import FILTER_TABLES, SessionFilter, where
from kaja_cli.core.sessions import columns

EXPORT_GOAL = 1.3
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
    lines += [f"DELETE FROM {table} WHERE {cond};" for table, cond in cascade._SESSION_ROWS]
    lines.append("COMMIT;")
    return "\n".join(lines)


def _export_script(conn: sqlite3.Connection, ids: list[str], images_dir) -> str:
    """The statements `sessions export --all -f jsonl` runs, for every session."""
    out = []
    for sid in ids:
        r = transcript.SessionReader(conn, sid, images_dir)
        out += [
            inline("SELECT 1 FROM sessions WHERE id = ?", (sid,)),
            inline("SELECT * FROM sessions WHERE id = ?", (sid,)),
            inline("SELECT * FROM session_summaries AS s WHERE sessionId = ? ORDER BY s.\"summaryFrom\"",
                   (sid,)),
            inline('SELECT e."seq", e."type", e."payload" FROM session_events AS e WHERE sessionId = ?'
                   ' ORDER BY e."seq"', (sid,)),
            inline('SELECT * FROM model_calls AS c WHERE sessionId = ? ORDER BY c."createdAt"', (sid,)),
            inline("SELECT count(*) FROM messages WHERE sessionId = ?", (sid,)),
            inline(*r.messages_sql(None, condense=False)),
        ]  # fmt: skip
    return "\n".join(out)


def cases(bench) -> None:
    store = bench.store()
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        before, ids = _tenth(conn)
        everyone = [r[0] for r in conn.execute(
            "SELECT id FROM sessions ORDER BY coalesce(updatedAt, createdAt) DESC, id DESC")]  # fmt: skip
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        pruned = conn.execute(
            "SELECT count(*) FROM messages WHERE sessionId IN (SELECT value FROM json_each(?))",
            (__import__("json").dumps(ids),),
        ).fetchone()[0]
        export_sql = _export_script(conn, everyone, store.paths.images_dir)

    script = bench.state_dir.parent / "export-floor.sql"
    script.write_text(export_sql)
    argv = bench.kaja("sessions", "export", "--all", "--all-owners", "-f", "jsonl")
    bench.process(f"sessions export --all -f jsonl ({len(everyone):,} sessions)", argv,
                  bench.sqlite(f".read {script}"), "sqlite3 CLI: the same queries per session",
                  goal=EXPORT_GOAL, note=f"{messages:,} messages")  # fmt: skip

    # The prune runs on a scratch copy (--state-dir), never on the benchmark store.
    scratch = bench.state_dir.parent / "prune-scratch"
    target = scratch / "kaja.db"

    def fresh() -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        shutil.copyfile(bench.db, target)
        os.sync()

    prune = bench.kaja("--state-dir", str(scratch), "--config", str(scratch / "settings.toml"),
                       "sessions", "prune", "--all-owners", "--before", before, "--yes")  # fmt: skip
    floor = bench.sqlite(_prune_script(ids), target, readonly=False)
    try:
        bench.process(f"sessions prune, a tenth ({len(ids):,} sessions)", prune, floor,
                      "sqlite3 CLI: the same DELETEs, one transaction", goal=PRUNE_GOAL,
                      setup=fresh, repeat=min(bench.repeat, 3),
                      note=f"{pruned:,} messages deleted, fresh copy each run")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        script.unlink(missing_ok=True)
