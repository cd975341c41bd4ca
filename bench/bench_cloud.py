"""Cloud mode (issue 14): kaja on the benchmark store loaded into PostgreSQL,
against `psql` running the same SQL in the same run.

A throwaway server (tests/support/pg.py's, initdb into a temporary folder) gets the
benchmark store with COPY (sessions, messages, tool calls, summaries, model
calls, events, notes, datasets: the conversation tables), through kaja's own
schema, so the search index is computed as rows arrive; the load time is
printed. Then, for `sessions`, `sessions --all-owners --limit 0 --json`,
`resume --json` of the largest session and `search` (a selective and a common
word), the floor runs exactly the statements kaja sent (recorded from one run
of kaja's core call, parameters written in as literals by psycopg):

- process rows: `kaja --database-url URL …` against `psql -c '…'`, stdout on
  /dev/null on both sides;
- in-process rows: kaja's core call against psycopg running the same
  statements on a connection opened for the call, as kaja opens one.

Goals: ≤ 1.5× on the process rows, except where start-up (Python, kaja,
psycopg's import) is most of the time: there the goal is on the in-process
row, and the process row is printed for information, as in the local rows.
The common word's best 20 must be local search's best 20 (same messages,
same scores).

`sessions prune` of a tenth of the sessions (issue 28), as bench_prune.py
locally: `kaja --database-url URL sessions prune --all-owners --before WHEN
--yes` (its plan, then its batches, each a transaction on the server)
against `psql -1` running the same DELETEs over the same sessions (the
cascade of `core/conversations/cascade.py`, ids as an array) in one
transaction; before every run of either side the database is made again
from the loaded one (`CREATE DATABASE … TEMPLATE`), and kaja's state dir is
a scratch folder. Goal: ≤ 1.5×.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from contextlib import closing, contextmanager
from pathlib import Path

GOAL = 1.5
# The conversation tables, with the columns COPY fills (the search columns are generated).
TABLES = ("sessions", "messages", "tool_calls", "session_summaries", "model_calls",
          "session_events", "notes", "dataset_answers", "dataset_versions")  # fmt: skip


def cases(bench) -> None:
    from harness import postgres

    pg = postgres(bench, "cloud")
    if pg is None:
        return
    psql = pg.psql
    server = pg.server.start_new(pg.bindir)
    try:
        database = server.create_database("kaja_bench")
        _rows(bench, database.url, psql)
        _prune(bench, server, database.name, psql)
    finally:
        server.cleanup()


def _rows(bench, url: str, psql: str) -> None:
    from kaja_cli.core.conversations import sessions as core_sessions
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.conversations.search import search
    from kaja_cli.core.owners import Owner

    store = _load(bench, url)
    cloud = ["--database-url", url]

    def kaja(*argv: str) -> list[str]:
        return bench.kaja(*cloud, *argv)

    terminal = core_sessions.SessionFilter(Owner(), limit=20)
    everyone = core_sessions.SessionFilter(None, limit=0)
    sql = _recorded(lambda: core_sessions.listing(store, terminal))
    bench.process("cloud sessions", kaja("sessions"), _psql(psql, url, sql), PSQL,
                  note="mostly start-up (Python, kaja, psycopg): the goal is on the next row")  # fmt: skip
    bench.in_process("cloud sessions: core listing()", lambda: core_sessions.listing(store, terminal),
                     _psycopg(url, sql), PSYCOPG, goal=GOAL)  # fmt: skip
    sql = _recorded(lambda: core_sessions.listing_json(store, everyone))
    bench.process("cloud sessions --all-owners --limit 0 --json",
                  kaja("sessions", "--all-owners", "--limit", "0", "--json"),
                  _psql(psql, url, sql), PSQL, goal=GOAL)  # fmt: skip

    sid, owner, count = _largest(bench.db)
    who = Owner.parse(owner)
    sql = _recorded(lambda: list(transcript.load_context_json(store, sid, who).items))
    argv = kaja("resume", sid, "--json", *(["--owner", owner] if owner else []))
    bench.process(f"cloud resume --json ({count:,} messages)", argv, _psql(psql, url, sql), PSQL,
                  goal=GOAL)  # fmt: skip
    bench.in_process("cloud resume --json: core load_context_json()",
                     lambda: list(transcript.load_context_json(store, sid, who).items),
                     _psycopg(url, sql), PSYCOPG)  # fmt: skip

    from harness import search_words

    selective, common = search_words(bench.db)
    word, n = selective
    sql = _recorded(lambda: search(store, word, all_owners=True))
    bench.process(f"cloud search: selective word ({n} matches)", kaja("search", word, "--all-owners"),
                  _psql(psql, url, sql), PSQL,
                  note=f"'{word}', --all-owners; mostly start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("cloud search: selective word, core search()",
                     lambda: search(store, word, all_owners=True), _psycopg(url, sql), PSYCOPG,
                     goal=GOAL, repeat=max(bench.repeat, 15))  # fmt: skip
    word, n = common
    sql = _recorded(lambda: search(store, word, all_owners=True))
    same, detail = _same_as_local(bench, url, word)
    bench.process(f"cloud search: common word ({n:,} matches), best 20",
                  kaja("search", word, "--all-owners"), _psql(psql, url, sql), PSQL, goal=GOAL,
                  holds=same, note=f"'{word}'; top 20 = local search's: {'yes' if same else 'NO'}"
                                   f" ({detail})")  # fmt: skip
    bench.in_process("cloud search: common word, core search()",
                     lambda: search(store, word, all_owners=True), _psycopg(url, sql), PSYCOPG)  # fmt: skip
    _backup_rows(bench, url, psql, store)


def _backup_rows(bench, url: str, psql: str, store) -> None:
    """`kaja backup` in cloud mode (issue 28) against psql copying the same rows:
    the same `COPY (SELECT … WHERE <the account's rows>) TO STDOUT` per table,
    in one REPEATABLE READ transaction, into a file. kaja writes an uncompressed
    archive (`-o x.tar`): the rows in a SQLite file, the images, the manifest."""
    import tempfile

    from kaja_cli.core.care.backup import backup, scope
    from kaja_cli.core.owners import Owner

    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-backup-"))
    try:
        copies = _copies(url, scope, Owner())
        out = scratch / "copied.txt"
        floor = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-o", str(out),
                 "-c", "SET search_path = kaja",
                 "-c", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                 *(c for q in copies for c in ("-c", q)), "-c", "COMMIT"]  # fmt: skip
        archive = scratch / "backup.tar"
        bench.process("cloud backup -o x.tar (the terminal's rows)",
                      bench.kaja("--database-url", url, "backup", "-o", str(archive)), floor,
                      "psql: COPY of the same rows to a file", goal=GOAL,
                      note="the rows into a SQLite file, then the archive; gzip (the default name)"
                           " costs more")  # fmt: skip
        bench.in_process("cloud backup: core backup()",
                         lambda: backup(store, scratch / "core.tar"), _copied(url, copies),
                         "psycopg: COPY of the same rows")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _copies(url: str, scope, owner) -> list[str]:
    """The COPY statements of a cloud backup, parameters written in as literals."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("SET search_path = kaja")
        have: dict[str, set[str]] = {}
        for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'kaja'"
        ):
            have.setdefault(table, set()).add(column)
        cur = psycopg.ClientCursor(conn)
        out = []
        for table in scope.TABLES:
            cols = scope.columns(table, have)
            if not cols:
                continue
            cond, args = scope.where(table.name, owner, have)
            select = ", ".join(f"t.{scope.q(c.name)}" for c in cols)
            sql = f"COPY (SELECT {select} FROM kaja.{scope.q(table.name)} AS t WHERE {cond}) TO STDOUT"
            out.append(cur.mogrify(sql.replace("?", "%s"), args) if args else sql)
    return out


def _copied(url: str, copies: list[str]):
    import psycopg

    def run() -> None:
        with psycopg.connect(url) as conn:
            conn.execute("SET search_path = kaja")
            conn.commit()
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            for sql in copies:
                with conn.cursor().copy(sql) as copy:
                    for _block in copy:
                        pass
            conn.commit()

    return run


def _prune(bench, server, loaded: str, psql: str) -> None:
    """`sessions prune` of a tenth, on a fresh copy of the loaded database each run."""
    from bench_prune import PRUNE_GOAL, _tenth

    from kaja_cli.core.conversations import cascade
    from kaja_cli.core.engine import dialect

    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        before, ids = _tenth(conn)
        pruned = conn.execute(
            "SELECT count(*) FROM messages WHERE sessionId IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        ).fetchone()[0]
    scratch = bench.state_dir.parent / "cloud-prune-scratch"
    name = "kaja_prune"
    url = server.url(name)

    def fresh() -> None:
        shutil.rmtree(scratch / "state", ignore_errors=True)
        server.drop_database(name)
        server.create_database(name, template=loaded)

    scratch.mkdir(parents=True, exist_ok=True)
    # The floor: the cascade's DELETEs (less conversation_threads: it stays
    # local) with the ids as one array literal, as kaja binds them.
    literal = "'{" + ",".join(f'"{i}"' for i in ids) + "}'::text[]"
    in_ids = f"= ANY({literal})"
    script = scratch / "prune.sql"
    script.write_text(
        "SET search_path = kaja;\n"
        + "".join(
            f"DELETE FROM {table} WHERE {cascade.condition(cond, dialect.POSTGRES, in_ids)};\n"
            for table, _needs, cond in cascade._SESSION_ROWS
            if table != "conversation_threads"
        )
        + f'DELETE FROM kaja_archived WHERE "sessionId" {in_ids};\n'
    )
    floor = [psql, "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", str(script)]
    env = bench.env | {
        "KAJA_STATE_DIR": str(scratch / "state"),
        "KAJA_CONFIG": str(scratch / "settings.toml"),
    }
    prune = bench.kaja("--database-url", url, "sessions", "prune", "--all-owners", "--before",
                       before, "--yes")  # fmt: skip
    try:
        bench.process(f"cloud sessions prune, a tenth ({len(ids):,} sessions)", prune, floor,
                      "psql -1: the same DELETEs, one transaction", goal=PRUNE_GOAL,
                      setup=fresh, repeat=min(bench.repeat, 3), env=env,
                      note=f"{pruned:,} messages deleted, fresh copy each run")  # fmt: skip
        bench.in_process("cloud sessions prune: core selected() + execute()",
                         _core_prune(url, env, before), _psycopg_script(url, script),
                         "psycopg: the same DELETEs, one transaction", setup=fresh,
                         repeat=min(bench.repeat, 3),
                         note="without start-up (Python, kaja, psycopg's import)")  # fmt: skip
    finally:
        server.drop_database(name)
        shutil.rmtree(scratch, ignore_errors=True)


def _core_prune(url: str, env: dict, before: str):
    """kaja's core prune, as `sessions prune --all-owners --before WHEN --yes` calls it:
    the sessions selected, then deleted in one pass that measures what went."""
    from kaja_cli.core.conversations import prune
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    def run() -> None:
        store = Store.locate(Overrides(database_url=url), environ=env)
        flt = SessionFilter(None, limit=0, before=before)
        prune.execute(store, prune.selected(store, flt), measure=True)

    return run


def _psycopg_script(url: str, script: Path):
    """The floor's DELETEs through psycopg, one transaction, on a connection opened for the call."""
    import psycopg

    statements = [s for s in script.read_text().split(";\n") if s.strip()]

    def run() -> None:
        with psycopg.connect(url) as conn, conn.transaction():
            for statement in statements:
                conn.execute(statement)

    return run


PSQL = "psql: the same statements"
PSYCOPG = "psycopg: the same statements"


# --- the store on the server ---------------------------------------------------------------------
def _load(bench, url: str):
    """kaja's schema on the server, then the benchmark store's conversation tables by COPY."""
    from harness import copy_into

    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides
    from kaja_cli.core.store.server import schema

    store = Store.locate(Overrides(database_url=url), environ=bench.env)
    start = time.perf_counter()
    with store.writer(create=True) as conn:
        # One COPY per table computes the search index of every row: on a loaded
        # machine that is more than the statement timeout kaja's commands keep.
        conn.set_statement_timeout(3_600_000)
        raw = conn.raw
        rows = 0
        with (
            closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as src,
            raw.transaction(),
        ):
            for table in TABLES:
                columns = next(t for t in schema.CLOUD_TABLES if t.name == table).column_names
                names = ", ".join(f'"{c}"' for c in columns)
                rows += copy_into(raw, table, columns, src.execute(f"SELECT {names} FROM {table}"))
        raw.execute("ANALYZE")
    took = time.perf_counter() - start
    bench.echo(f"(cloud: loaded {rows:,} rows of the benchmark store into PostgreSQL with COPY in"
               f" {took:.0f} s, the search index computed as they arrived)")  # fmt: skip
    return store


def _largest(db: Path) -> tuple[str, str | None, int]:
    with closing(sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)) as conn:
        return conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()


# --- the same statements -------------------------------------------------------------------------
Statement = tuple[str, object]


@contextmanager
def _recording():
    """Every statement psycopg sends, with its parameters, while the block runs."""
    import psycopg

    sent: list[Statement] = []
    original = psycopg.Connection.execute

    def execute(self, query, params=None, **kw):
        sent.append((str(query), params))
        return original(self, query, params, **kw)

    psycopg.Connection.execute = execute  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Connection.execute = original  # type: ignore[method-assign]


def _recorded(call) -> list[Statement]:
    with _recording() as sent:
        call()
    return [s for s in sent if s[0].strip().upper() not in ("ROLLBACK",)]


def _psql(psql: str, url: str, statements: list[Statement]) -> list[str]:
    """psql running the statements, parameters as literals, rows to stdout."""
    import psycopg

    with psycopg.connect(url) as conn:
        cur = psycopg.ClientCursor(conn)
        commands = [c for q, p in statements for c in ("-c", cur.mogrify(q, p) if p else q)]
    # One -c per statement: psql sends each on its own, as kaja does (a single
    # string would be one implicit transaction).
    return [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, *commands]


def _psycopg(url: str, statements: list[Statement]):
    """psycopg running the statements on a connection opened for the call, every row fetched."""
    import psycopg

    def run() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            for query, params in statements:
                cur = conn.execute(query, params)
                if cur.description is not None:
                    cur.fetchall()

    return run


def _same_as_local(bench, url: str, word: str) -> tuple[bool, str]:
    """Whether the server's best 20 are local search's, same order, same scores."""

    def top(*cloud: str) -> list[tuple[str, float]]:
        p = subprocess.run(bench.kaja(*cloud, "search", word, "--all-owners", "--json"),
                           env=bench.env, capture_output=True, check=True, text=True)  # fmt: skip
        return [(h["message_id"], h["score"]) for h in json.loads(p.stdout)["results"]]

    got, want = top("--database-url", url), top()
    same = [g[0] for g in got] == [w[0] for w in want] and len(got) == 20
    worst = max((abs(g[1] - w[1]) for g, w in zip(got, want, strict=False)), default=0.0)
    return same, f"largest score difference {worst:.1e}"
