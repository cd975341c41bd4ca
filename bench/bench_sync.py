"""`kaja sync` against a PostgreSQL the benchmark starts itself (issue 15).

- First sync of the benchmark ledger (`kaja sync push` on a scratch copy: the
  whole history, ~1,000,000 calls and the runs, events, tools and logs around
  them; one run each side, it takes about a minute) against `psql \\copy`
  loading the very same rows (origin, tbl, key, row JSON, seq, writer) into an
  identical, empty `andromeda_ledger`: the cheapest way PostgreSQL takes those
  rows. kaja's extra is reading SQLite, the upsert that makes a batch
  idempotent, and each batch's local commit. Goal: at most 3×.
- Steady state: 1,000 new calls written by the agent (raw SQL, untimed; the
  triggers queue them), then a push. In-process: the core call (connection,
  lease and both commits included) against psycopg copying 1,000 rows into the
  same `andromeda_ledger`, three million rows in it, in a transaction rolled
  back. Goal: at most 3×. The whole `kaja sync push` against `psql` doing the
  same is information: importing psycopg alone takes 0.1-0.2 s here.

The server is `tests/support/pg.py`'s (initdb into a temporary folder, a Unix socket,
fsync off for both sides alike). Without PostgreSQL's binaries, no rows.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

from harness import IN_PROCESS, PROCESS, Row, interleave, time_call

REPO = Path(__file__).resolve().parents[1]
GOAL = 3.0
COLUMNS = "(origin, tbl, key, row, seq, writer)"


def cases(bench) -> None:
    sys.path.insert(0, str(REPO))
    from tests.support.pg import PgServer, find_bindir

    if find_bindir() is None:
        bench.echo("sync: no rows (no PostgreSQL binaries: apt-get install postgresql)")
        return
    server = PgServer.start_new()
    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-sync-"))
    try:
        _first_sync(bench, server, scratch)
        _steady_push(bench, server, scratch)
    finally:
        server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


def _env(bench, scratch: Path, url: str) -> dict:
    return dict(bench.env, KAJA_STATE_DIR=str(scratch), KAJA_CONFIG=str(scratch / "settings.toml"),
                USAGE_POSTGRES_URL=url)  # fmt: skip


def _psql(server, dbname: str, script: Path) -> list[str]:
    return [str(server.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
            server.url(dbname), "-f", str(script)]  # fmt: skip


def _copy_text(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


def _history_file(db: Path, out: Path, origin: str) -> int:
    """The rows a first sync sends, as COPY text: what the floor loads (made untimed)."""
    from kaja_cli.core.engine.db import open_read
    from kaja_cli.core.ledger.sync import rows as sync_rows

    n = 0
    with open_read(db) as conn, out.open("w", encoding="utf-8") as f:
        cols = sync_rows.Columns(conn)
        for table in (t for t in sync_rows.TABLES if t in cols.of):
            who = origin if table in sync_rows.OWNED else sync_rows.SHARED
            after = None
            while rows := sync_rows.history(conn, cols, table, after, 50_000):
                for _, key, row in rows:
                    n += 1
                    f.write(
                        f"{who}\t{table}\t{_copy_text(key)}\t{_copy_text(row)}\t{n}\t{origin}\n"
                    )
                after = rows[-1][0]
    return n


def _first_sync(bench, server, scratch: Path) -> None:
    from kaja_cli.core.ledger.sync import server as sync_server

    shutil.copyfile(bench.db, scratch / "kaja.db")
    with closing(sqlite3.connect(scratch / "kaja.db")) as conn:
        calls = conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    rows_file = scratch / "history.copy"
    rows = _history_file(scratch / "kaja.db", rows_file, "00000000-0000-0000-0000-000000000000")
    floor_db = server.create_database("bench_floor")
    with server.connect(floor_db.name) as pg:
        pg.execute(sync_server.schema_sql(sync_server.LEDGER_SCHEMA))
    script = scratch / "history.sql"
    script.write_text(f"\\copy andromeda_ledger {COLUMNS} FROM '{rows_file}'\n")
    floor_ms = bench.run(_psql(server, floor_db.name, script))
    target = server.create_database("bench_sync")
    kaja_ms = bench.run(bench.kaja("sync", "push"), _env(bench, scratch, target.url))
    sent = target.query("SELECT COUNT(*) FROM andromeda_ledger")[0][0]
    bench.add(Row("sync: first sync, the history", PROCESS, kaja_ms, floor_ms,
                  "psql \\copy of the same rows, empty table", GOAL, holds=sent == rows,
                  note=f"{rows:,} rows, {calls:,} calls, one run each"))  # fmt: skip


def _steady_push(bench, server, scratch: Path) -> None:
    """1,000 new calls, pushed to `bench_sync` (synced above, three million rows)."""
    from kaja_cli.core.ledger import sync
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    url = server.url("bench_sync")
    store = Store.locate(Overrides(state_dir=scratch, config=scratch / "settings.toml"), environ={})
    target = sync.Url(url, "bench")
    rows = [("o", "calls", f"k{i}", '{"model":"m","prompt_tokens":%d}' % i, i, "o")
            for i in range(1000)]  # fmt: skip

    def thousand_new_calls() -> None:
        with closing(sqlite3.connect(scratch / "kaja.db")) as conn, conn:
            conn.executemany(
                "INSERT INTO calls (run_id, at, model, prompt_tokens, completion_tokens, ok)"
                " VALUES ('run_x', '2026-11-29T12:00:00.000Z', 'bench', ?, 1, 1)",
                [(i,) for i in range(1000)],
            )

    def push() -> None:
        result = sync.sync(store, target, pull=False)
        if result.push is None or result.push.changes != 1000:
            raise RuntimeError(f"the push sent {result.push}")

    def copy() -> None:
        with (
            server.connect("bench_sync") as pg,
            pg.transaction(force_rollback=True),  # nothing stays
            pg.cursor() as cur,
            cur.copy(f"COPY andromeda_ledger {COLUMNS} FROM STDIN") as c,
        ):
            for row in rows:
                c.write_row(row)

    def setup() -> None:
        with closing(sqlite3.connect(scratch / "kaja.db")) as conn:
            if not conn.execute("SELECT COUNT(*) FROM sync_outbox").fetchone()[0]:
                thousand_new_calls()  # the floor's turn leaves them waiting

    k, f = interleave(lambda: time_call(push), lambda: time_call(copy), bench.repeat, setup)
    bench.add(Row("sync: push 1,000 new rows, core call", IN_PROCESS, k, f,
                  "psycopg COPY of 1,000 rows, same table", GOAL))  # fmt: skip
    one = scratch / "thousand.copy"
    one.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    script = scratch / "thousand.sql"
    script.write_text(f"BEGIN;\n\\copy andromeda_ledger {COLUMNS} FROM '{one}'\nROLLBACK;\n")
    bench.process("kaja sync push, 1,000 new rows", bench.kaja("sync", "push"),
                  _psql(server, "bench_sync", script), "psql \\copy of 1,000 rows, same table",
                  env=_env(bench, scratch, url), setup=setup)  # fmt: skip
