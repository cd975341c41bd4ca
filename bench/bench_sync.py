"""`kaja sync` against a PostgreSQL the benchmark starts itself (issue 15).

- First sync of the benchmark ledger (`kaja sync push` on a scratch copy: the
  whole history, ~1,000,000 calls and the runs, events, tools and logs around
  them) against `psql \\copy` loading the very same rows (origin, tbl, key, row
  JSON, seq, writer) into an identical `andromeda_ledger` in an empty
  database: the cheapest way PostgreSQL takes those rows. kaja's extra is
  reading SQLite, the upsert that makes a batch idempotent, and the batches'
  local commits. Goal: at most 3×.
- Steady state: 1,000 new calls written by the agent (raw SQL; the triggers
  queue them), then a push: the core call timed in one process (connection,
  lease and both commits included) against psycopg copying 1,000 rows into the
  same `andromeda_ledger`, three million rows in it (rolled back after). Goal:
  at most 3×. The whole `kaja sync push` is reported beside it: importing
  psycopg alone costs ~0.1-0.2 s here.

The server is `tests/pg.py`'s (initdb into a temporary folder, a Unix socket,
fsync off for both sides alike).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _rows_file(db: Path, out: Path, origin: str) -> int:
    """The rows a first sync sends, as COPY text: what the floor loads."""
    from kaja_cli.core import sync_rows
    from kaja_cli.core.db import open_read

    n = 0
    with open_read(db) as conn, out.open("w", encoding="utf-8") as f:
        cols = sync_rows.Columns(conn)
        for table in sync_rows.TABLES:
            if table not in cols.of:
                continue
            who = origin if table in sync_rows.OWNED else sync_rows.SHARED
            after = None
            while rows := sync_rows.history(conn, cols, table, after, 50_000):
                for _, key, row in rows:
                    n += 1
                    f.write("\t".join((who, table, _copy_text(key), _copy_text(row), str(n),
                                       origin)) + "\n")  # fmt: skip
                after = rows[-1][0]
    return n


def _copy_text(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


def _psql(server, dbname: str, script: str) -> list[str]:
    return [str(server.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
            server.url(dbname), "-c", script]  # fmt: skip


def cases(bench) -> None:
    sys.path.insert(0, str(REPO))
    from kaja_cli.core import sync_server
    from tests.pg import PgServer, find_bindir

    if find_bindir() is None:
        print("sync: skipped (no PostgreSQL binaries: apt-get install postgresql)")
        return
    server = PgServer.start_new()
    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-sync-"))
    try:
        _first_sync(bench, server, scratch, sync_server.SCHEMA)
        _steady_push(bench, server, scratch)
    finally:
        server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


def _kaja_env(bench, scratch: Path, url: str) -> dict:
    env = dict(bench.env, KAJA_STATE_DIR=str(scratch), KAJA_CONFIG=str(scratch / "settings.toml"))
    env["USAGE_POSTGRES_URL"] = url
    return env


def _first_sync(bench, server, scratch: Path, schema: str) -> None:
    shutil.copyfile(bench.db, scratch / "kaja.db")
    conn = sqlite3.connect(scratch / "kaja.db")
    calls = conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    conn.close()
    # The floor's input, made before anything is timed (not part of either side).
    rows_file = scratch / "rows.copy"
    rows = _rows_file(scratch / "kaja.db", rows_file, "00000000-0000-0000-0000-000000000000")
    floor_db = server.create_database("bench_floor")
    with server.connect(floor_db.name) as pg:
        pg.execute(schema)
    os.sync()
    start = time.perf_counter()
    bench.time_cmd(_psql(server, floor_db.name,
                         f"\\copy andromeda_ledger (origin, tbl, key, row, seq, writer) FROM '{rows_file}'"))  # fmt: skip
    floor_ms = (time.perf_counter() - start) * 1000
    target = server.create_database("bench_sync")
    kaja_ms = bench.time_cmd(bench.kaja("sync", "push"), env=_kaja_env(bench, scratch, target.url))
    sent = target.query("SELECT COUNT(*) FROM andromeda_ledger")[0][0]
    if sent != rows:
        raise SystemExit(f"bench: the first sync sent {sent} rows, the ledger has {rows}")
    bench.add("sync: first sync (push the history)", kaja_ms, floor_ms,
              "psql \\copy: the same rows", goal=3,
              note=f"{rows:,} rows ({calls:,} calls), {rows / kaja_ms * 1000:,.0f} rows/s")  # fmt: skip


def _steady_push(bench, server, scratch: Path) -> None:
    """1,000 new calls, pushed: the core call, timed in one process (as `kaja
    sync` runs it, connection and lease included), against psycopg copying 1,000
    rows into the same table (connection included). The whole command, with
    Python's and psycopg's start-up, is reported beside it."""
    from kaja_cli.core import sync
    from kaja_cli.core.paths import Overrides
    from kaja_cli.core.store import Store

    url = server.url("bench_sync")
    store = Store.locate(Overrides(state_dir=scratch, config=scratch / "settings.toml"), environ={})
    target = sync.Url(url, "bench")
    rows = [("o", "calls", f"k{i}", '{"model":"m","prompt_tokens":%d}' % i, i, "o")
            for i in range(1000)]  # fmt: skip

    def thousand_new_calls() -> None:
        conn = sqlite3.connect(scratch / "kaja.db")
        with conn:
            conn.executemany(
                "INSERT INTO calls (run_id, at, model, prompt_tokens, completion_tokens, ok)"
                " VALUES ('run_x', '2026-11-29T12:00:00.000Z', 'bench', ?, 1, 1)",
                [(i,) for i in range(1000)],
            )
        conn.close()

    def kaja_push() -> float:
        thousand_new_calls()
        start = time.perf_counter()
        result = sync.sync(store, target, pull=False)
        elapsed = (time.perf_counter() - start) * 1000
        assert result.push is not None and result.push.changes == 1000, result
        return elapsed

    def copy() -> float:
        """The same table, three million rows in it; rolled back, so nothing stays."""
        start = time.perf_counter()
        with (
            server.connect("bench_sync") as pg,
            pg.transaction(force_rollback=True),
            pg.cursor() as cur,
            cur.copy("COPY andromeda_ledger (origin, tbl, key, row, seq, writer) FROM STDIN") as c,
        ):
            for row in rows:
                c.write_row(row)
        return (time.perf_counter() - start) * 1000

    kaja_push(), copy()  # warm-up
    ks, fs = [], []
    for _ in range(bench.repeat):
        ks.append(kaja_push())
        fs.append(copy())
    k, f = statistics.median(ks), statistics.median(fs)
    bench.add("sync: push 1,000 new rows (core call)", k, f, "psycopg COPY: 1,000 rows, same table",
              goal=3)  # fmt: skip
    env = _kaja_env(bench, scratch, url)
    whole = []
    for _ in range(bench.repeat):
        thousand_new_calls()
        whole.append(bench.time_cmd(bench.kaja("sync", "push"), env=env))
    w = statistics.median(whole)
    bench.add("sync: kaja sync push, 1,000 rows", w, f, "psycopg COPY: 1,000 rows, same table",
              goal_text="(info)", note=f"{w - k:.0f} ms of start-up (Python, typer, psycopg)")  # fmt: skip
