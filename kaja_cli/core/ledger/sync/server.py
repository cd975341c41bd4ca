"""The PostgreSQL side of ledger sync: the shared table and the statements on it.

`andromeda_ledger` is the seed's meeting point: one row per ledger row of
every machine, keyed by `(origin, tbl, key)`, with the row as JSONB. Beside the
seed's columns it keeps:

- `seq`, a change sequence: every insert, update or deletion of a row takes
  the next value of `andromeda_ledger_seq`, and a pull asks for `seq > cursor`.
  Writers take `LOCK TABLE … IN EXCLUSIVE MODE` before drawing numbers, so
  numbers are drawn in commit order and the rows a reader can see always form
  a prefix of the sequence: a pull's cursor never jumps over a change that
  commits later. (Readers are not blocked: the lock allows SELECT.)
- `writer`, the origin that wrote the row last, so a pull skips its own
  changes (origin alone would not do for the rows shared under `'*'`).
- A deleted row stays as a tombstone (`row IS NULL`) with a new `seq`, so the
  other machines learn about the deletion.

Writing a row whose JSON is unchanged changes nothing (not even `seq`), and
tombstoning a tombstone or a key the server never had changes nothing: a
batch sent twice is a no-op. `andromeda_ledger_meta` holds the ledger's id
(a machine that finds a different id is talking to another server and starts
over); `andromeda_origins` names the host behind each origin.

Every statement names the ledger's schema: left to the role's `search_path`,
a role named like cloud mode's schema (`kaja`) had its ledger made in that
schema, and a cloud `kaja wipe` took it along. A new ledger is made in
`public`; one an earlier kaja made elsewhere is found where that kaja's
search_path put it (`ledger_schema`) and used there, so every machine keeps
meeting in the same tables, old kajas and new; `kaja doctor` says it should
move (`sync.health`, `doctor/server.py`).

The connection is the engine's one PostgreSQL client (`engine/postgres.py`:
psycopg imported there only, when sync is used, never at start-up; one
connect timeout, `[memory] statementTimeout`, the deadline on every round
trip, one error translation); here is only how sync says what went wrong.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.engine import postgres as pg
from kaja_cli.core.engine.postgres import DriverConnection, DriverCursor
from kaja_cli.core.masking import mask
from kaja_cli.core.store.server.schema import LEDGER_OBJECTS
from kaja_cli.errors import Failed

LOCK_TIMEOUT_MS = 30_000  # another machine pushing holds the ledger's lock
INSTALL_HINT = "pip install 'kaja-cli[postgres]'"
APPLICATION_NAME = "kaja sync"  # how the server's pg_stat_activity names sync's connection

LEDGER_SCHEMA = "public"  # where a new shared ledger is made

_DDL = """
CREATE TABLE IF NOT EXISTS {s}.andromeda_ledger (
  origin text NOT NULL,
  tbl text NOT NULL,
  key text NOT NULL,
  row jsonb,
  seq bigint NOT NULL,
  writer text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (origin, tbl, key)
);
CREATE SEQUENCE IF NOT EXISTS {s}.andromeda_ledger_seq;
CREATE INDEX IF NOT EXISTS andromeda_ledger_by_seq ON {s}.andromeda_ledger (seq);
CREATE TABLE IF NOT EXISTS {s}.andromeda_ledger_meta (name text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.andromeda_origins (
  origin text PRIMARY KEY,
  host text,
  first_sync timestamptz NOT NULL DEFAULT now(),
  last_sync timestamptz NOT NULL DEFAULT now()
);
"""
# Two machines creating the tables at once would collide on the catalog.
_SETUP_LOCK = 0x6B616A61  # "kaja"


def connect(
    url: str, *, timeout_s: float | None = None, statement_timeout_s: float = 60
) -> DriverConnection:
    """An autocommit connection (the engine's client, `pg.open_driver`);
    Failed (exit 1, one line) when the server does not answer. A statement
    runs at most `statement_timeout_s` on the server (`[memory]
    statementTimeout`), and kaja stops waiting for an answer a few seconds
    after that (`pg.Deadline`: the error says so). `timeout_s` bounds the
    connect (else the URL's connect_timeout, 5 s by default)."""
    where = pg.Target(url, statement_timeout_s=statement_timeout_s)
    try:
        return pg.open_driver(
            where, lock_timeout_ms=LOCK_TIMEOUT_MS, connect_timeout_s=timeout_s,
            application_name=APPLICATION_NAME,
        )  # fmt: skip
    except pg.DriverMissing:
        raise Failed("PostgreSQL support is not installed", hint=INSTALL_HINT) from None
    except pg.BadUrl as e:
        raise Failed(f"the PostgreSQL URL {mask(url)} does not parse: {e.reason}") from None
    except pg.ServerError as e:
        if e.connecting:
            raise Failed(f"cannot reach PostgreSQL at {mask(url)}: {e.reason}") from None
        raise _said(url, "connecting", e) from None  # logged in, then setting up failed


@contextmanager
def errors_of(url: str, doing: str) -> Iterator[None]:
    """The server's errors as one line; a lost connection says the next sync resumes."""
    try:
        with pg.translated(pg.Target(url)):
            yield
    except pg.DriverMissing:
        raise Failed("PostgreSQL support is not installed", hint=INSTALL_HINT) from None
    except pg.ServerError as e:
        raise _said(url, doing, e) from None


def _said(url: str, doing: str, error: pg.ServerError) -> Failed:
    """How sync says a server's error (the engine's translation, in sync's words)."""
    if error.operational:
        return Failed(
            f"lost the connection to PostgreSQL at {mask(url)} while {doing}: {error.reason}",
            hint="nothing is lost: the next `kaja sync` picks up where this one stopped",
        )
    return Failed(f"PostgreSQL at {mask(url)} refused {doing}: {error.reason}")


# --- the tables ---------------------------------------------------------------------------
def schema_sql(schema: str) -> str:
    """The ledger's tables in `schema` (CREATE … IF NOT EXISTS)."""
    return _DDL.format(s=_quote(schema))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def move_sql(schema: str) -> str:
    """The statements that move a ledger made in `schema` to `public`, where
    every kaja (old ones through their search_path) then finds it."""
    s = _quote(schema)
    moves = [f"ALTER {'SEQUENCE' if name.endswith('_seq') else 'TABLE'} {s}.{name}"
             f" SET SCHEMA {LEDGER_SCHEMA};" for name in LEDGER_OBJECTS]  # fmt: skip
    return " ".join(["BEGIN;", *moves, "COMMIT;"])


def ledger_schema(conn: DriverConnection) -> str | None:
    """The schema holding the shared ledger, None when there is none yet: the
    one the role's search_path finds first (where an earlier kaja made it,
    and where an earlier kaja still looks), else `public`."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE c.oid = coalesce(pg_catalog.to_regclass('andromeda_ledger_meta'),"
        " pg_catalog.to_regclass(%s))",
        (f"{_quote(LEDGER_SCHEMA)}.andromeda_ledger_meta",),
    ).fetchone()
    return row[0] if row else None


# The schema each connection found its ledger in (looked up once per connection).
_schemas: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def schema_of(conn: DriverConnection) -> str:
    """The schema this connection's ledger is in (or will be made in)."""
    schema = _schemas.get(conn)
    if schema is None:
        schema = _schemas[conn] = ledger_schema(conn) or LEDGER_SCHEMA
    return schema


def _in(conn: DriverConnection, name: str) -> str:
    """`name` qualified with the ledger's schema on this connection."""
    return f"{_quote(schema_of(conn))}.{name}"


def ledger_id(conn: DriverConnection, *, create: bool) -> str | None:
    """The shared ledger's id; with `create`, the tables are made first if need be.

    The meta table is made in the same transaction as the others, after them:
    its id being there means the rest is."""
    try:
        row = conn.execute(f"SELECT value FROM {_in(conn, 'andromeda_ledger_meta')}"
                           " WHERE name = 'ledger_id'").fetchone()  # fmt: skip
    except pg.missing_object_errors():
        row = None
    if row:
        return row[0]
    if not create:
        return None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
        # Under the lock, look again: another machine may have just made it.
        schema = _schemas[conn] = ledger_schema(conn) or LEDGER_SCHEMA
        conn.execute(schema_sql(schema))
        conn.execute(
            f"INSERT INTO {_in(conn, 'andromeda_ledger_meta')} (name, value)"
            " VALUES ('ledger_id', %s) ON CONFLICT (name) DO NOTHING",
            (str(uuid.uuid4()),),
        )
    return conn.execute(
        f"SELECT value FROM {_in(conn, 'andromeda_ledger_meta')} WHERE name = 'ledger_id'"
    ).fetchone()[0]


def register_origin(conn: DriverConnection, origin: str, host: str) -> None:
    conn.execute(
        f"INSERT INTO {_in(conn, 'andromeda_origins')} (origin, host) VALUES (%s, %s)"
        " ON CONFLICT (origin) DO UPDATE SET host = EXCLUDED.host, last_sync = now()",
        (origin, host),
    )


# --- push ---------------------------------------------------------------------------------
@dataclass
class Sent:
    """What a batch changed on the server (a batch sent twice: zeros)."""

    written: int = 0  # rows inserted or changed
    deleted: int = 0  # rows turned into tombstones


# (origin, tbl, key, row JSON text or None for a deletion)
Change = tuple[str, str, str, str | None]


def send(
    conn: DriverConnection,
    writer: str,
    changes: Iterable[Change],
    *,
    before_commit: Callable[[], None] | None = None,
) -> Sent:
    """Write one batch in one transaction: upserts and tombstones, idempotent."""
    sent = Sent()
    deletions = False
    with conn.transaction(), conn.cursor() as cur:
        # Made and dropped in the batch's own transaction: a temporary table
        # lives as long as its server connection, which a pooler hands on.
        cur.execute(
            "CREATE TEMP TABLE sync_in (origin text, tbl text, key text, row jsonb) ON COMMIT DROP"
        )
        with cur.copy("COPY sync_in (origin, tbl, key, row) FROM STDIN") as copy:
            for change in changes:
                copy.write_row(change)
                deletions = deletions or change[3] is None
        cur.execute(f"LOCK TABLE {_in(conn, 'andromeda_ledger')} IN EXCLUSIVE MODE")
        cur.execute(
            f"INSERT INTO {_in(conn, 'andromeda_ledger')} AS l (origin, tbl, key, row, seq, writer)"
            f" SELECT origin, tbl, key, row, {_next(conn)}, %s"
            " FROM sync_in WHERE row IS NOT NULL"
            " ON CONFLICT (origin, tbl, key) DO UPDATE SET row = EXCLUDED.row, seq = EXCLUDED.seq,"
            " writer = EXCLUDED.writer, updated_at = now()"
            " WHERE l.row IS DISTINCT FROM EXCLUDED.row",
            (writer,),
        )
        sent.written = max(cur.rowcount, 0)
        if deletions:
            sent.deleted = _tombstones(conn, cur, writer)
        if before_commit:
            before_commit()
    return sent


def _next(conn: DriverConnection) -> str:
    """The next change number (SQL)."""
    return "nextval('" + _in(conn, "andromeda_ledger_seq").replace("'", "''") + "')"


def _tombstones(conn: DriverConnection, cur: DriverCursor, writer: str) -> int:
    """Turn the staged deletions into tombstones (a key the server never had: nothing)."""
    cur.execute(
        f"UPDATE {_in(conn, 'andromeda_ledger')} AS l SET row = NULL, seq = {_next(conn)},"
        " writer = %s, updated_at = now() FROM sync_in AS d"
        " WHERE d.row IS NULL AND l.origin = d.origin AND l.tbl = d.tbl AND l.key = d.key"
        " AND l.row IS NOT NULL",
        (writer,),
    )
    return max(cur.rowcount, 0)


# --- pull ---------------------------------------------------------------------------------
@dataclass
class Fetched:
    rows: list[tuple[str, str, str, Any, int]]  # origin, tbl, key, row (dict or None), seq
    cursor: int  # where the next pull starts


def fetch(conn: DriverConnection, cursor: int, me: str, limit: int) -> Fetched:
    """The next changes other writers made after `cursor`, oldest first.

    One REPEATABLE READ snapshot: when fewer than `limit` rows come back, the
    cursor moves to the highest number that snapshot holds (every change up
    to it is either here or this machine's own)."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        rows = conn.execute(
            f"SELECT origin, tbl, key, row, seq FROM {_in(conn, 'andromeda_ledger')}"
            " WHERE seq > %s AND writer <> %s ORDER BY seq LIMIT %s",
            (cursor, me, limit),
        ).fetchall()
        top = cursor
        if len(rows) < limit:
            top = conn.execute(
                f"SELECT COALESCE(MAX(seq), 0) FROM {_in(conn, 'andromeda_ledger')}"
            ).fetchone()[0]
    return Fetched(rows, rows[-1][4] if len(rows) == limit else max(top, cursor))


def waiting(conn: DriverConnection, cursor: int, me: str) -> int:
    """How many changes of other writers a pull from `cursor` would bring."""
    return conn.execute(
        f"SELECT COUNT(*) FROM {_in(conn, 'andromeda_ledger')} WHERE seq > %s AND writer <> %s",
        (cursor, me),
    ).fetchone()[0]


# --- what the server holds ------------------------------------------------------------------
@dataclass
class OriginRows:
    origin: str
    host: str | None
    rows: int
    deleted: int
    last_sync: str | None


@dataclass
class Summary:
    ledger_id: str | None
    rows: int = 0
    origins: list[OriginRows] = field(default_factory=list)


def summary(conn: DriverConnection) -> Summary:
    """Rows per origin (tombstones apart), with each origin's host."""
    lid = ledger_id(conn, create=False)
    if lid is None:
        return Summary(None)
    rows = conn.execute(
        "SELECT l.origin, o.host, COUNT(l.row), COUNT(*) - COUNT(l.row),"
        f" {clock.postgres_iso('o.last_sync')}"
        f" FROM {_in(conn, 'andromeda_ledger')} AS l"
        f" LEFT JOIN {_in(conn, 'andromeda_origins')} AS o ON o.origin = l.origin"
        " GROUP BY l.origin, o.host, o.last_sync ORDER BY l.origin"
    ).fetchall()
    origins = [OriginRows(*r) for r in rows]
    return Summary(lid, sum(o.rows for o in origins), origins)


# --- kaja usage --all-machines ---------------------------------------------------------------
def _num(field_name: str) -> str:
    """A JSON number field as numeric (anything else, a string say, counts as NULL)."""
    return (
        f"CASE WHEN jsonb_typeof(row->'{field_name}') = 'number'"
        f" THEN (row->>'{field_name}')::numeric END"
    )


def _window(since: str | None, until: str | None, column: str) -> tuple[str, list[str]]:
    parts, params = [], []
    if since is not None:
        parts.append(f"row->>'{column}' >= %s COLLATE \"C\"")
        params.append(since)
    if until is not None:
        parts.append(f"row->>'{column}' < %s COLLATE \"C\"")
        params.append(until)
    return "".join(" AND " + p for p in parts), params


def usage_rows(
    conn: DriverConnection, by: str, since: str | None, until: str | None
) -> dict[str, list[tuple]]:
    """The three queries of `kaja usage`, over every machine's rows, in one snapshot.

    Same columns and meaning as `report.report_queries` (SQLite): calls grouped
    `by`, tools by (tool, outcome), runs by status; plus calls per origin."""
    key = clock.day_sql("row->>'at'") if by == "day" else f"row->>'{by}'"
    at, at_params = _window(since, until, "at")
    started, started_params = _window(since, until, "started_at")
    live = "row IS NOT NULL"
    ledger, origins = _in(conn, "andromeda_ledger"), _in(conn, "andromeda_origins")
    out: dict[str, list[tuple]] = {}
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        out["calls"] = conn.execute(
            f"SELECT {key} AS k, COUNT(*), SUM(CASE WHEN {_num('ok')} = 0 THEN 1 WHEN {_num('ok')} IS NOT NULL THEN 0 END),"
            f" SUM({_num('prompt_tokens')}), SUM({_num('completion_tokens')}),"
            f" SUM({_num('cached_tokens')}), SUM({_num('duration_ms')})"
            f" FROM {ledger} WHERE tbl = 'calls' AND {live}{at} GROUP BY k",
            at_params,
        ).fetchall()
        out["tools"] = conn.execute(
            f"SELECT row->>'tool' AS t, row->>'outcome' AS o, COUNT(*), SUM({_num('duration_ms')}),"
            f" COUNT({_num('duration_ms')}) FROM {ledger}"
            f" WHERE tbl = 'tools' AND {live}{at} GROUP BY t, o",
            at_params,
        ).fetchall()
        out["runs"] = conn.execute(
            f"SELECT row->>'status' AS s, COUNT(*) FROM {ledger}"
            f" WHERE tbl = 'runs' AND {live}{started} GROUP BY s",
            started_params,
        ).fetchall()
        out["machines"] = conn.execute(
            f"SELECT l.origin, o.host, COUNT(*), SUM({_num('prompt_tokens')}),"
            f" SUM({_num('completion_tokens')}) FROM {ledger} AS l"
            f" LEFT JOIN {origins} AS o ON o.origin = l.origin"
            f" WHERE tbl = 'calls' AND {live}{at} GROUP BY l.origin, o.host ORDER BY l.origin",
            at_params,
        ).fetchall()
    return {name: [tuple(_plain(v) for v in r) for r in rows] for name, rows in out.items()}


def _plain(value: Any) -> Any:
    """numeric (Decimal) sums as int, as SQLite gives them."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


# --- kaja runs --all-machines ------------------------------------------------------------------
def _value(value: Any) -> Any:
    """A JSON value as the local column holds it (`rows._decode`, as a pull stores it)."""
    from kaja_cli.core.ledger.sync.rows import decode

    return decode(value)


def _row(row: dict | None, key: str | None = None) -> dict[str, Any]:
    out = {name: _value(v) for name, v in (row or {}).items()}
    if key is not None and "id" not in out:  # an owned row's id is its key on the server
        out["id"] = int(key) if key.isdigit() else key
    return out


def run_rows(conn: DriverConnection) -> list[dict[str, Any]]:
    """Every live run of the shared ledger as a dict of its columns, with the
    `machine` it ran on: the host the agent recorded in it, else the host of
    the machine that pushed it, else that machine's origin."""
    rows = conn.execute(
        f"SELECT l.row, l.writer, o.host FROM {_in(conn, 'andromeda_ledger')} AS l"
        f" LEFT JOIN {_in(conn, 'andromeda_origins')} AS o ON o.origin = l.writer"
        " WHERE l.tbl = 'runs' AND l.row IS NOT NULL"
    ).fetchall()
    out = []
    for row, writer, host in rows:
        run = _row(row)
        if run.get("id") is None:
            continue
        run["id"] = str(run["id"])
        run["machine"] = str(run.get("host") or host or writer)
        out.append(run)
    return out


def run_figures(conn: DriverConnection) -> dict[str, tuple[int, int, int]]:
    """run id -> (model calls, tokens, tool calls) as the seed's query counts them:
    a call's tokens when both its prompt and completion tokens are numbers."""
    ledger = _in(conn, "andromeda_ledger")
    both = f"{_num('prompt_tokens')} + {_num('completion_tokens')}"
    out: dict[str, list[int]] = {}
    for run_id, n, tokens in conn.execute(
        f"SELECT row->>'run_id', COUNT(*), COALESCE(SUM({both}), 0) FROM {ledger}"
        " WHERE tbl = 'calls' AND row IS NOT NULL AND row->>'run_id' IS NOT NULL"
        " GROUP BY 1"
    ).fetchall():
        out[run_id] = [int(n), int(_plain(tokens)), 0]
    for run_id, n in conn.execute(
        f"SELECT row->>'run_id', COUNT(*) FROM {ledger}"
        " WHERE tbl = 'tools' AND row IS NOT NULL AND row->>'run_id' IS NOT NULL GROUP BY 1"
    ).fetchall():
        out.setdefault(run_id, [0, 0, 0])[2] = int(n)
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def tagged_rows(conn: DriverConnection, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The calls, tools, events, feedback and reviews of these runs, as dicts of their columns."""
    out: dict[str, list[dict[str, Any]]] = {}
    for table in ("calls", "tools", "events", "feedback", "reviews"):
        rows = conn.execute(
            f"SELECT key, row FROM {_in(conn, 'andromeda_ledger')} WHERE tbl = %s"
            " AND row IS NOT NULL AND row->>'run_id' = ANY(%s)",
            (table, run_ids),
        ).fetchall()
        owned = table in ("calls", "tools", "feedback")
        out[table] = [_row(row, key if owned else None) for key, row in rows]
    return out
