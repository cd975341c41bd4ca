"""Cloud mode with many accounts on one server (issue 42, item 1): your
commands cost what your rows cost, whatever the other accounts hold.

One throwaway server (tests/support/pg.py's) gets two databases through
kaja's own schema, by COPY, then VACUUM ANALYZE (what autovacuum does after such a load):

- ALONE: only your account's rows: a store (the conversations and the usage
  ledger) loaded with every session, note and dataset answer owned by
  `you@example.org` (`KAJA_ACCOUNT`);
- CROWDED: the same rows, plus 9 copies of that store spread over 99 other
  accounts (each copy's sessions over 11 accounts), every id rewritten
  (unique) and every owner set to the other account: the server holds 10×
  your rows. Rows go in interleaved (each of your rows, then its 9 copies),
  as many agents writing at once leave them on a shared server.

The step (`run.py --accounts-step`): `1M` (default) is yours 100k messages
(1,000 sessions), 1M in all; `10M` is yours the benchmark store's 1M, 10M in
all. A smoke run (`run.py --smoke`) uses the small store and 2 copies.

For each read (`sessions`, `resume --json` and `sessions export -f md|json` of
your largest session, `search` of a selective and a common word, `usage`,
`runs` (and `--subagents`, and `runs show` of your newest), `reviews`,
`notes`, `doctor --quick`; the usage ledger is the account's, `KAJA_ACCOUNT`
being set: core/store/whose.py), two process rows:

- kaja on CROWDED against kaja on ALONE (interleaved): goal ≤ 1.1×;
- kaja on CROWDED against `psql` running exactly the statements kaja sent
  (recorded from one in-process run of the same command on CROWDED), on
  CROWDED: goal ≤ 1.5×;

and an in-process row (information): the same command run in this process
(no start-up: Python, kaja, psycopg's import) against psycopg running the
same statements.

Then every recorded statement that reads kaja's tables is planned on CROWDED
with EXPLAIN (ANALYZE, BUFFERS), and checked: each scan of a table that grows
with the accounts must be an index scan whose index starts with the owner
column, or one keyed by ids (a session's, a message's, a run's) the statement
names itself (`= value`, `= ANY(array)`), which kaja found by your account
first. A sequential scan of such a table (of 1,000 rows or more), or an
index that starts with neither, is printed `NOT BY ACCOUNT` with its plan;
a lookup of search's vocabulary (`kaja_search_terms`, by word, every
account's words) is `shared`. Every plan goes to OUT/cloud-accounts-plans.txt.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
import time
import zlib
from contextlib import closing, contextmanager
from pathlib import Path

ACCOUNT = "you@example.org"
COPIES = 9  # others' rows: this many copies of yours
PER_COPY = 11  # accounts sharing each copy's sessions: 99 other accounts
STEPS = {"1M": (1_000, 100_000), "10M": (10_000, 1_000_000)}  # yours: (sessions, messages)
ALONE_GOAL, PSQL_GOAL = 1.1, 1.5
# Text ids a copy rewrites (a prefix per copy), integer ids (an offset per copy).
TEXT_IDS = {
    "sessions": ("id",), "messages": ("id", "sessionId"),
    "tool_calls": ("id", "messageId", "resultMessageId"), "session_summaries": ("sessionId",),
    "model_calls": ("sessionId",), "session_events": ("sessionId",),
    "runs": ("id", "parent_id", "thread_id"), "calls": ("run_id",), "tools": ("run_id",),
    "events": ("run_id",), "logs": ("run_id",), "media": ("run_id",), "feedback": ("run_id",),
    "reviews": ("run_id",),
}  # fmt: skip
INT_IDS = {"calls": "id", "tools": "id", "events": "id", "logs": "id", "media": "id",
           "feedback": "id"}  # fmt: skip
OWNED = ("notes", "dataset_answers", "dataset_versions")  # owner per row (sessions: per session)
# Tables that grow with the accounts: a scan of one must be by account or by ids.
GROWING = frozenset(TEXT_IDS) | set(OWNED) | {"kaja_search_terms", "kaja_archived"}


def cases(bench) -> None:
    from harness import postgres

    pg = postgres(bench, "cloud accounts")
    if pg is None:
        return
    psql = pg.psql
    step = bench.accounts_step
    if bench.judged:
        from run import build_store

        sessions, messages = STEPS[step]
        yours = build_store(bench.kaja_command, sessions, messages, bench.state_dir.parent)
        copies = COPIES
    else:  # a smoke run: the small store, two copies
        yours, copies = bench.state_dir, 2
    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-accounts-"))
    server = pg.server.start_new(pg.bindir)
    try:
        alone = server.create_database("kaja_alone").url
        crowded = server.create_database("kaja_crowded").url
        db = yours / "kaja.db"
        n = _load(bench, alone, db, 0)
        total = _load(bench, crowded, db, copies)
        bench.echo(f"(cloud accounts, step {step}: yours {n:,} messages; the crowded server"
                   f" {total:,} messages, {copies * PER_COPY + 1} accounts)")  # fmt: skip
        _reads(bench, psql, alone, crowded, db, scratch)
    finally:
        server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


# --- the reads -----------------------------------------------------------------------------------
def _reads(bench, psql: str, alone: str, crowded: str, db: Path, scratch: Path) -> None:
    from harness import IN_PROCESS, PROCESS, BenchError, Row, search_words

    sid, count = _largest(db)
    run_id = _newest_run(db)
    (selective, sn), (common, cn) = search_words(db)
    state = scratch / "state"
    state.mkdir()
    env = {k: v for k, v in bench.env.items() if not k.startswith("KAJA_")}
    env.update(KAJA_STATE_DIR=str(state), KAJA_CONFIG=str(state / "settings.toml"),
               KAJA_ACCOUNT=ACCOUNT)  # fmt: skip
    reads = [
        ("sessions", ("sessions",)),
        (f"resume --json ({count:,} messages)", ("resume", sid, "--json")),
        (f"search: selective word ({sn} matches)", ("search", selective)),
        (f"search: common word ({cn:,} matches)", ("search", common)),
        ("sessions export -f md (the largest)", ("sessions", "export", sid, "-f", "md")),
        ("sessions export -f json (the largest)", ("sessions", "export", sid, "-f", "json")),
        ("usage", ("usage",)),
        ("runs", ("runs",)),
        ("runs --subagents", ("runs", "--subagents")),
        ("runs show (your newest)", ("runs", "show", run_id)),
        ("reviews", ("reviews",)),
        ("notes", ("notes",)),
        ("doctor --quick", ("doctor", "--quick")),
    ]
    _start_up(bench, psql, crowded, env, scratch)
    report: list[str] = []
    summary: list[str] = []
    for name, argv in reads:
        try:
            sent = _recorded(crowded, argv, env, scratch)
        except BenchError as e:  # the read's rows say why; the next reads are still measured
            for side, timed, floor_what, goal in (
                ("crowded/alone", PROCESS, "kaja on ALONE", ALONE_GOAL),
                ("vs psql", PROCESS, "psql: the same statements, CROWDED", PSQL_GOAL),
                ("in-process", IN_PROCESS, "psycopg: the same statements, CROWDED", None),
            ):  # fmt: skip
                bench.add(Row.failed(f"accounts {name}: {side}", timed, floor_what, goal, str(e)))
            continue
        on_crowded = bench.kaja("--database-url", crowded, *argv)
        bench.process(f"accounts {name}: crowded/alone", on_crowded,
                      bench.kaja("--database-url", alone, *argv), "kaja on ALONE", goal=ALONE_GOAL,
                      env=env)  # fmt: skip
        floor = _psql(psql, crowded, sent, scratch / f"psql-{len(report)}.sql")
        bench.process(f"accounts {name}: vs psql", on_crowded, floor,
                      "psql: the same statements, CROWDED", goal=PSQL_GOAL, env=env)  # fmt: skip
        bench.in_process(f"accounts {name}: in-process", _in_process(crowded, argv, env, scratch),
                         _psycopg(crowded, sent), "psycopg: the same statements, CROWDED",
                         note="without start-up (Python, kaja, psycopg's import)")  # fmt: skip
        planned: set[str] = set()
        for sql, params in sent:
            if not _reads_tables(sql) or sql in planned:
                continue  # the same statement with other values (a run's neighbours): once
            planned.add(sql)
            try:
                plan, text = _explain(crowded, sql, params)
            except BenchError as e:  # a statement timeout under EXPLAIN ANALYZE: said, not fatal
                summary.append(f"{name}: {_short(sql)} → no plan: {e}")
                bench.echo(f"  PLAN {name}: {_short(sql)} → no plan: {e}")
                continue
            verdict = check(plan)
            line = f"{name}: {_short(sql)} → {verdict}"
            summary.append(line)
            bench.echo(("  PLAN " if verdict.startswith("NOT") else "  plan ") + line)
            report += [f"== {name}", sql, f"params: {params!r}", f"check: {verdict}", text, ""]
            if verdict.startswith("NOT"):
                bench.echo("    " + text.replace("\n", "\n    "))
    out = bench.state_dir.parent / "cloud-accounts-plans.txt"
    out.write_text("\n".join([*summary, "", *report]) + "\n")
    bench.echo(f"(cloud accounts: every plan in {out})")


def _start_up(bench, psql: str, crowded: str, env: dict, scratch: Path) -> None:
    """What every read's whole-process row against psql starts from: kaja's
    imports alone (no connection, no statement), without and with psycopg's,
    against psql running `notes`' statements (the smallest read). Where the
    imports alone pass the goal, no read that small can meet it in Python."""
    sent = _recorded(crowded, ("notes",), env, scratch)
    floor = _psql(psql, crowded, sent, scratch / "psql-start-up.sql")
    for what, modules in (("Python and kaja", "kaja_cli.app"),
                          ("Python, kaja and psycopg", "kaja_cli.app, psycopg")):  # fmt: skip
        bench.process(f"accounts start-up: {what}, imported only",
                      bench.python("-c", f"import {modules}"), floor,
                      "psql: notes' statements, CROWDED", env=env,
                      note=f"{PSQL_GOAL}× of the floor is what a small read's whole process may take")  # fmt: skip


_CATALOG = re.compile(r"\b(pg_catalog|information_schema)\.", re.I)
_TABLE = re.compile(r'\b(?:FROM|JOIN)\s+(?:"?kaja"?\.)?"?([a-z_]+)"?', re.I)


def _reads_tables(sql: str) -> bool:
    """A SELECT (or COPY of one) of kaja's tables, not the catalogs' alone."""
    s = sql.lstrip()
    if s[:6].upper() not in ("SELECT", "WITH (", "COPY (") and not s.upper().startswith("WITH"):
        return False
    return bool(set(_TABLE.findall(sql)) & GROWING)


def _short(sql: str) -> str:
    return " ".join(sql.split())[:110]


# --- recording the statements --------------------------------------------------------------------
Statement = tuple[str, object]


@contextmanager
def _recording():
    """Every statement psycopg sends (execute, stream, COPY), with its parameters."""
    import psycopg

    sent: list[Statement] = []
    execute, stream, copy = psycopg.Connection.execute, psycopg.Cursor.stream, psycopg.Cursor.copy

    def rec_execute(self, query, params=None, **kw):
        sent.append((str(query), params))
        return execute(self, query, params, **kw)

    def rec_stream(self, query, params=None, **kw):
        sent.append((str(query), params))
        return stream(self, query, params, **kw)

    def rec_copy(self, statement, params=None, **kw):
        sent.append((str(statement), params))
        return copy(self, statement, params, **kw)

    psycopg.Connection.execute, psycopg.Cursor.stream = rec_execute, rec_stream
    psycopg.Cursor.copy = rec_copy
    try:
        yield sent
    finally:
        psycopg.Connection.execute, psycopg.Cursor.stream = execute, stream
        psycopg.Cursor.copy = copy


def _recorded(url: str, argv: tuple[str, ...], env: dict, scratch: Path) -> list[Statement]:
    """The statements of one in-process run of `kaja --database-url URL ARGV`."""
    from tests.support import inprocess

    with _recording() as sent:
        code, _out, err = inprocess.run(("--database-url", url, *argv), env, None, scratch)
    if code != 0:
        from harness import BenchError

        raise BenchError(f"kaja {' '.join(argv)} failed ({code}): {err[-500:]}")
    return [s for s in sent if s[0].strip().upper() != "ROLLBACK"]


def _in_process(url: str, argv: tuple[str, ...], env: dict, scratch: Path):
    """kaja's command run in this process (`tests/support/inprocess`): no start-up."""
    from tests.support import inprocess

    def run() -> None:
        code, _out, err = inprocess.run(("--database-url", url, *argv), env, None, scratch)
        if code != 0:
            from harness import BenchError

            raise BenchError(f"kaja {' '.join(argv)} failed ({code}): {err[-500:]}")

    return run


def _psycopg(url: str, statements: list[Statement]):
    """psycopg running the statements on a connection opened for the call, every row read."""
    import psycopg

    def run() -> None:
        try:
            _run()
        except psycopg.Error as e:  # a statement timeout on a big store: this row says so
            from harness import BenchError

            raise BenchError(f"psycopg: {e}") from e

    def _run() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            for query, params in statements:
                if query.lstrip()[:4].upper() == "COPY":
                    with conn.cursor() as cur, cur.copy(query, params) as copy:
                        for _block in copy:
                            pass
                    continue
                cur = conn.execute(query, params)
                if cur.description is not None:
                    cur.fetchall()

    return run


def _psql(psql: str, url: str, statements: list[Statement], script: Path) -> list[str]:
    """psql running the statements, parameters as literals, from a script (`-f`: one
    account's run ids as an array literal outgrow an argument's 128 kB), rows to stdout."""
    import psycopg

    with psycopg.connect(url) as conn:
        cur = psycopg.ClientCursor(conn)
        script.write_text("".join(_literal(cur, q, p).rstrip().rstrip(";") + ";\n"
                                  for q, p in statements))  # fmt: skip
    return [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-f", str(script)]


def _literal(cur, query: str, params) -> str:
    sql = cur.mogrify(query, params) if params else query
    # A binary COPY's rows are psql's to print as text, as kaja's are its own to decode.
    return sql.replace("TO STDOUT (FORMAT BINARY)", "TO STDOUT")


# --- the plans -----------------------------------------------------------------------------------
def _explain(url: str, sql: str, params) -> tuple[dict, str]:
    """(the JSON plan, the text plan) of EXPLAIN (ANALYZE, BUFFERS) on `url`."""
    import psycopg

    m = re.match(r"\s*COPY\s*\((.*)\)\s*TO\s+STDOUT.*$", sql, re.S | re.I)
    query = m.group(1) if m else sql
    from harness import BenchError

    with psycopg.connect(url) as conn:
        conn.execute("SET search_path = kaja")
        cur = psycopg.ClientCursor(conn)
        query = cur.mogrify(query, params) if params else query
        conn.execute("BEGIN READ ONLY")
        try:
            plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query}").fetchone()[0]
            text = "\n".join(r[0] for r in conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}"))
        except psycopg.Error as e:
            raise BenchError(f"EXPLAIN ANALYZE: {e}") from e
        conn.execute("ROLLBACK")
        indexes = dict(conn.execute(
            "SELECT c.relname, a.attname FROM pg_index AS i JOIN pg_class AS c ON c.oid ="
            " i.indexrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace JOIN pg_attribute"
            " AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] WHERE n.nspname = 'kaja'"
        ).fetchall())  # fmt: skip
    plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
    plan["first_columns"] = indexes
    return plan, text


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


SMALL = 1_000  # rows: a sequential scan of fewer is the planner's choice, not a cost
KEYED = frozenset({"id", "sessionId", "messageId", "resultMessageId", "run_id", "thread_id",
                   "parent_id"})  # fmt: skip


def check(plan: dict) -> str:
    """`ok: …` when every scan of a growing table is by account (an index whose
    first column is the owner) or by ids the statement names; else what is not."""
    first = plan["first_columns"]
    bad, good, shared = [], [], []
    for node in _nodes(plan["Plan"]):
        table = node.get("Relation Name")
        kind = node["Node Type"]
        if kind == "Bitmap Index Scan":
            index = node["Index Name"]
            table = _index_table(plan["Plan"], index) or "?"
        if table not in GROWING:
            continue
        if kind == "Seq Scan":
            loops = node.get("Actual Loops", 1) or 1
            scanned = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
            if scanned < SMALL:
                good.append(f"Seq Scan on {table} ({scanned} rows: small)")
            else:
                bad.append(f"Seq Scan on {table} ({scanned:,} rows)")
            continue
        index = node.get("Index Name")
        if index is None:
            continue  # a Bitmap Heap Scan: its Bitmap Index Scan below is judged
        column = first.get(index, "?")
        cond = node.get("Index Cond", "")
        if table == "kaja_search_terms":
            shared.append(f"{index} (by word: the vocabulary every account shares)")
        elif column == "owner":
            good.append(f"{index} (owner)")
        elif column in KEYED and _by_value(cond, column) and node.get("Actual Loops", 1) <= 1:
            good.append(f"{index} ({column} given)")
        elif column == "id" and re.search(r"\bid [<>] ", cond):
            good.append(f"{index} (an id's neighbours: short ids)")
        elif column in KEYED and _by_value(cond, column):
            good.append(f"{index} ({column}, per outer row)")
        else:
            bad.append(f"{kind} {index} on {table} (first column {column}; {cond or 'no cond'})")
    if bad:
        return "NOT BY ACCOUNT: " + "; ".join(dict.fromkeys(bad + shared))
    if shared:
        return "shared: " + ", ".join(dict.fromkeys(shared + good))
    return "ok: " + ", ".join(dict.fromkeys(good)) if good else "ok: no growing table"


def _by_value(cond: str, column: str) -> bool:
    """The index condition pins its first column: `= value`, `= ANY(…)`, or an outer row's."""
    return bool(re.search(rf'"?{re.escape(column)}"?\s*=\s*', cond))


def _index_table(plan: dict, index: str) -> str | None:
    for node in _nodes(plan):
        if node.get("Index Name") == index:
            for parent in _nodes(plan):
                if any(c.get("Index Name") == index for c in _nodes(parent)) and parent.get(
                    "Relation Name"
                ):
                    return parent["Relation Name"]
    m = re.match(r"([a-z_]+?)_(kaja_search|session|owner|message|run|thread|pkey)", index)
    return m.group(1) if m else None


# --- the two databases ---------------------------------------------------------------------------
def _load(bench, url: str, db: Path, copies: int) -> int:
    """kaja's schema, then the store's conversations and ledger by COPY: your rows,
    each followed by its `copies` for the other accounts; VACUUM ANALYZE. Returns messages."""
    from harness import copy_into

    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides
    from kaja_cli.core.store.server import ddl, schema

    store = Store.locate(Overrides(database_url=url), environ=bench.env)
    start = time.perf_counter()
    messages = 0
    with store.writer(create=True) as conn:
        conn.set_statement_timeout(3_600_000)
        raw = conn.raw
        with closing(sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)) as src, raw.transaction():
            have = {r[1] for r in src.execute("SELECT type, name FROM sqlite_master")}
            for table in schema.CLOUD_TABLES:
                if table.name not in have:
                    continue
                columns = table.column_names
                names = ", ".join(ddl.quote(c) for c in columns)
                n_copies = copies if table.name in TEXT_IDS or table.name in OWNED else 0
                rewrite = _rewriter(table.name, columns, ddl.primary_key(table))
                rows = (out for row in src.execute(f"SELECT {names} FROM {table.name}")
                        for c in range(n_copies + 1) if (out := rewrite(row, c)) is not None)  # fmt: skip
                copied = copy_into(raw, table.name, columns, rows)
                messages += copied if table.name == "messages" else 0
    # A server's autovacuum runs after a load like this one (PostgreSQL 13 on
    # counts inserts); the bench does it at once, so that no read is timed
    # while it runs, and every read meets the server as it will stay: counted
    # (ANALYZE) and its pages marked visible (what index-only scans need).
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("VACUUM ANALYZE")
    bench.echo(f"(cloud accounts: {messages:,} messages and their sessions, tool calls, ledger…"
               f" loaded with COPY, then vacuumed, in {time.perf_counter() - start:.0f} s)")  # fmt: skip
    return messages


def _rewriter(table: str, columns: list[str], key: list[str]):
    """row, copy → the row for copy `c` (0: yours), or None (a key already written)."""
    texts = [columns.index(c) for c in TEXT_IDS.get(table, ()) if c in columns]
    integer = columns.index(INT_IDS[table]) if table in INT_IDS else None
    session_owner = columns.index("owner") if table == "sessions" else None
    row_owner = columns.index("owner") if table in OWNED else None
    seen: set[tuple] = set()
    keyed = [columns.index(c) for c in key] if row_owner is not None else []

    def rewrite(row: tuple, c: int):
        out = list(row)
        if c:
            for i in texts:
                if out[i] is not None:
                    out[i] = f"a{c}-{out[i]}"
            if integer is not None and out[integer] is not None:
                out[integer] = int(out[integer]) + c * 1_000_000_000
        if session_owner is not None:
            out[session_owner] = _account(c, str(row[columns.index("id")]))
        if row_owner is not None:
            out[row_owner] = _account(c, str(row[row_owner]))
            k = tuple(out[i] for i in keyed)
            if k in seen:
                return None
            seen.add(k)
        return out

    return rewrite


def _account(c: int, spread_by: str) -> str:
    """Yours for copy 0; else one of that copy's PER_COPY accounts."""
    if c == 0:
        return ACCOUNT
    return f"user{(c - 1) * PER_COPY + zlib.crc32(spread_by.encode()) % PER_COPY}@example.org"


def _newest_run(db: Path) -> str:
    """Your newest turn in one of your sessions (a run in none is nobody's); its id
    is the same on ALONE and CROWDED: copies rewrite theirs."""
    with closing(sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)) as conn:
        return conn.execute(
            "SELECT id FROM runs WHERE parent_id IS NULL AND thread_id IN (SELECT id FROM sessions)"
            " ORDER BY started_at DESC LIMIT 1"
        ).fetchone()[0]


def _largest(db: Path) -> tuple[str, int]:
    with closing(sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)) as conn:
        return conn.execute(
            "SELECT sessionId, count(*) AS n FROM messages GROUP BY sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()
