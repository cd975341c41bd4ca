"""Checks of cloud mode's server (SPEC §7, §10): one connection, a few seconds
at most, read-only, each finding one line.

`server.reachable` (connects within the URL's connect_timeout, 5 s by
default), `server.version`, `server.schema` (kaja's schema there, its version
against this kaja's, missing tables and columns: `--fix` adds them),
`server.others` (what kaja's schema holds that is not Kaja's, which `kaja
wipe` keeps: `kaja sync`'s shared ledger there is a warning),
`server.extensions` (unaccent, which search needs), `server.tables` (rows per
table), `server.search` (the search index: valid, its statistics in step with
the messages, its folding still SQLite's), `server.encryption` (TLS or not)
`server.pooler` (a connection pooler between kaja and the server, named
when seen), `server.privileges` (what the role may do: a read-only role reads, and
writes are refused) and `server.replica` (a read replica's lag behind the
server: `[memory] readUrl`'s, or the server's own when it is a replica, which
reads but refuses writes). Locally there is nothing to check here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group, Repair, RepairOrder
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.wording import plural
from kaja_cli.errors import KajaError

STATEMENT_TIMEOUT_MS = 10_000  # doctor never hangs on a query either
_G = Group.SERVER


@check(
    "server",
    _G,
    "cloud mode's PostgreSQL: reachable, version, kaja's schema, unaccent, rows per table,"
    " the search index, encryption, the role's privileges, a read replica's lag",
)
def check_server(ctx: Context) -> list[Check] | None:
    if ctx.store.server is None:  # a local store: no server to check
        return None
    from kaja_cli.core.engine import postgres as pg

    try:
        where = ctx.store.target()
    except KajaError as e:
        return [Check("server.reachable", _G, ERROR, e.message, fix=e.hint)]
    try:
        pg.driver()  # imported before the clock starts: the connection is timed, not Python
    except KajaError as e:
        return [Check("server.reachable", _G, ERROR, e.message, fix=e.hint)]
    start = time.perf_counter()
    try:
        with pg.connect(where) as conn:
            wait = STATEMENT_TIMEOUT_MS * (12 if ctx.thorough else 1)  # every code point: slower
            # Before the first statement: a pooler with no server connection
            # free keeps it waiting, and doctor waits its own few seconds (or
            # the settings' fewer).
            conn.set_statement_timeout(min(wait, conn.statement_timeout_ms))
            # Logged in is not answering (a proxy may stop relaying after the
            # login): reached means one statement answered too.
            conn.execute("SELECT 1")
            took = (time.perf_counter() - start) * 1000
            conn.set_statement_timeout(wait)
            out = [Check("server.reachable", _G, OK, f"reached {where.shown} in {took:.0f} ms")]
            for step in (
                _version,
                _schema,
                _others,
                _extensions,
                _tables,
                _search,
                _pooler,
                _encryption,
                _privileges,
                _replica,
            ):
                found = _safe(step, conn, ctx)
                if found is not None:
                    out.append(found)
            return out
    except KajaError as e:
        return [Check("server.reachable", _G, ERROR, e.message, fix=e.hint)]


def _safe(step: Callable, conn, ctx: Context) -> Check | None:
    try:
        return step(conn, ctx)
    except KajaError as e:
        name = step.__name__.strip("_")
        return Check(f"server.{name}", _G, ERROR, f"could not check: {e.message}", fix=e.hint)


def _version(conn, ctx: Context) -> Check:
    text, number = conn.execute(
        "SELECT pg_catalog.current_setting('server_version'),"
        " pg_catalog.current_setting('server_version_num')"
    ).fetchone()
    number = int(number)
    if number < 120000:
        return Check("server.version", _G, ERROR, f"PostgreSQL {text}: kaja needs 12 or later",
                     ["the search index is a generated column (PostgreSQL 12)"])  # fmt: skip
    return Check("server.version", _G, OK, f"PostgreSQL {text}")


def _schema(conn, ctx: Context) -> Check:
    from kaja_cli.core.store.server import schema

    where = conn.target
    state = schema.status(conn)
    if not state.exists:
        return Check("server.schema", _G, WARN, f"no Kaja store in {where.where}",
                     ["the agent (or `kaja demo`) makes it when it first writes"],
                     fix="run the agent in cloud mode, or check [memory] databaseSchema")  # fmt: skip
    if not state.kajas:
        return Check("server.schema", _G, ERROR, f"{where.where} is not Kaja's",
                     [f"its tables are another program's: {', '.join(sorted(state.tables))}"],
                     fix="point [memory] databaseSchema at Kaja's schema")  # fmt: skip
    if state.newer:
        return Check("server.schema", _G, ERROR,
                     f"schema version {state.version} is newer than this kaja's ({schema.SCHEMA_VERSION})",
                     ["this kaja reads it but never writes it"],
                     fix="pip install -U 'kaja-cli[postgres]'")  # fmt: skip
    missing = schema.missing(conn)
    if missing or state.version != schema.SCHEMA_VERSION:
        items = missing or [f"version {state.version}"]
        return Check(
            "server.schema", _G, WARN,
            f"schema {where.schema} lacks {plural(len(items), 'thing')} this kaja makes",
            items, fix=f"add them: {', '.join(items[:3])}", fixable=True,
            repairs=(Repair("server.schema", RepairOrder.SCHEMA, _apply(ctx), "server"),),
        )  # fmt: skip
    return Check(
        "server.schema", _G, OK, f"schema {where.schema}: version {state.version}, this kaja's"
    )


def _others(conn, ctx: Context) -> Check | None:
    from kaja_cli.core.ledger.sync import server as sync_server
    from kaja_cli.core.store.server import schema

    where = conn.target
    state = schema.status(conn)
    if not state.exists or not state.kajas:
        return None
    found = schema.contents(conn)
    details = [f"{t.kind} {t.name}" for t in found.others]
    details += [f"{t.kind} {t.name} uses {on}: `kaja wipe` refuses while it does"
                for t, on in found.dependents]  # fmt: skip
    if not details:
        return Check("server.others", _G, OK, f"schema {where.schema} holds only Kaja's objects")
    ledger = [t for t in found.others if t.name.rpartition(".")[2] in schema.LEDGER_OBJECTS]
    if ledger:
        return Check(
            "server.others", _G, WARN,
            f"schema {where.schema} also holds the shared usage ledger of `kaja sync`",
            [*details, "an earlier kaja made it here (the role is named like the schema);"
             " `kaja wipe` keeps it, and kaja sync keeps using it"],
            fix=f"move it while no sync runs: {sync_server.move_sql(where.schema)}",
        )  # fmt: skip
    return Check("server.others", _G, OK,
                 f"schema {where.schema} also holds {plural(len(found.others), 'thing')}"
                 " that are not Kaja's", [*details, "`kaja wipe` keeps them, and the schema"])  # fmt: skip


def _apply(ctx: Context) -> Callable[[], str]:
    def run() -> str:
        with ctx.store.writer():  # brings the schema up to date
            pass
        return "brought kaja's schema on the server up to date"

    return run


def _extensions(conn, ctx: Context) -> Check:
    from kaja_cli.core.store.server import schema

    where = schema.unaccent_schema(conn, create=False)
    if where is None:
        return Check("server.extensions", _G, ERROR, "the unaccent extension is missing",
                     ["search folds accents with it; kaja creates it when its role may"],
                     fix=schema.UNACCENT_HINT)  # fmt: skip
    return Check("server.extensions", _G, OK, f"unaccent is installed (schema {where})")


def _tables(conn, ctx: Context) -> Check | None:
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    state = schema.status(conn)
    if not state.kajas:
        return None
    if ctx.quick:  # every row of every account: in proportion to the server, not to you
        ctx.skip("server.tables", "counting every table's rows (reads every account's rows)")
        return None
    s = pg.quote(conn.target.schema)
    names = [t.name for t in schema.CLOUD_TABLES if t.name in state.tables]
    counts = conn.execute(
        "SELECT " + ", ".join(f"(SELECT count(*) FROM {s}.{pg.quote(n)})" for n in names)
    ).fetchone()
    details = [f"{n}: {c:,}" for n, c in zip(names, counts, strict=True)]
    total = dict(zip(names, counts, strict=True))
    return Check("server.tables", _G, OK,
                 f"{plural(total.get('sessions', 0), 'session')},"
                 f" {plural(total.get('messages', 0), 'message')}", details)  # fmt: skip


def _search(conn, ctx: Context) -> Check | None:
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema, tokenizer

    state = schema.status(conn)
    if not state.kajas or "messages" not in state.tables:
        return None
    s = pg.quote(conn.target.schema)
    columns = schema.present_columns(conn).get("messages", [])
    if schema.SEARCH_COLUMN not in columns or schema.STATS_TABLE not in state.tables:
        return Check("server.search", _G, ERROR, "the search index is missing",
                     fix="kaja search --reindex")  # fmt: skip
    valid = conn.execute(
        "SELECT i.indisvalid FROM pg_catalog.pg_index AS i WHERE i.indexrelid = to_regclass(?)",
        (f"{s}.{pg.quote(schema.SEARCH_INDEX)}",),
    ).fetchone()
    if not valid or not valid[0]:
        return Check("server.search", _G, ERROR, f"index {schema.SEARCH_INDEX} is missing or invalid",
                     fix="kaja search --reindex")  # fmt: skip
    if schema.search_functions_outdated(conn):
        return Check("server.search", _G, WARN,
                     "the search functions break where standard_conforming_strings is off",
                     ["a session with it off (a role's or the database's setting) cannot write a"
                      " message: the search index's functions do not parse there",
                      "made by an earlier kaja; remade, they index every message as before"],
                     fix="remake them (the tables' owner)", fixable=True,
                     repairs=(Repair("server.search", RepairOrder.SEARCH_INDEX, _remake(ctx), "server"),))  # fmt: skip
    kept = conn.execute(
        f"SELECT coalesce(sum(messages), 0), coalesce(sum(words), 0) FROM {s}.{schema.STATS_TABLE}"
    ).fetchone()
    if ctx.quick:  # counting reads every account's messages
        ctx.skip("server.search", "counting the messages against the search statistics"
                 " (reads every account's messages)")  # fmt: skip
        return Check("server.search", _G, OK, "the search index is valid",
                     [f"{plural(int(kept[0]), 'message', commas=True)},"
                      f" {plural(int(kept[1]), 'word', commas=True)} in its statistics"])  # fmt: skip
    messages, words = conn.execute(
        f"SELECT count(*), coalesce(sum({schema.WORDS_COLUMN}), 0) FROM {s}.messages"
    ).fetchone()
    details = [
        f"{plural(messages, 'message', commas=True)}, {plural(words, 'word', commas=True)} indexed"
    ]
    if (int(kept[0]), int(kept[1])) != (messages, words):
        return Check("server.search", _G, WARN, "the search statistics are out of step with the messages",
                     [*details, f"{schema.STATS_TABLE} says {plural(kept[0], 'message', commas=True)}, {plural(kept[1], 'word', commas=True)}",
                      "a writer ran with triggers disabled; rankings drift until they are recounted"],
                     fix="recount them", fixable=True,
                     repairs=(Repair("server.search", RepairOrder.SEARCH_INDEX, _recount(ctx), "server"),))  # fmt: skip
    if ctx.thorough:
        bad = tokenizer.verify(conn, conn.target.schema, every=True)
        if bad:
            return Check("server.search", _G, WARN,
                         f"the index folds {plural(len(bad), 'character')} unlike SQLite (U+{bad[0]:04X} first)",
                         [*details, "the server's unaccent or locale changed since the index was made"],
                         fix="kaja search --reindex")  # fmt: skip
        details.append("every code point folds as SQLite's tokenizer")
    return Check("server.search", _G, OK, "the search index is in step with the messages", details)


def _remake(ctx: Context) -> Callable[[], str]:
    def run() -> str:
        from kaja_cli.core.engine import db
        from kaja_cli.core.store.server import schema

        with ctx.store.writer() as conn, db.transaction(conn):
            conn.execute("SELECT pg_advisory_xact_lock(?)", (schema.LOCK,))
            schema.make_search_functions(conn)
        return "remade the search functions"

    return run


def _recount(ctx: Context) -> Callable[[], str]:
    def run() -> str:
        from kaja_cli.core.engine import db
        from kaja_cli.core.store.server import schema

        with ctx.store.writer() as conn, db.transaction(conn):
            messages, words = schema.recount(conn)  # type: ignore[arg-type]
        return (f"recounted the search statistics: {plural(messages, 'message', commas=True)},"
                f" {plural(words, 'word', commas=True)}")  # fmt: skip

    return run


def _pooler(conn, ctx: Context) -> Check | None:
    """A connection pooler between kaja and the server (None: none seen).
    PgBouncer and its kind answer the login themselves, with a process id of
    their own, then relay each transaction to a server connection of theirs."""
    said = conn.raw.info.backend_pid
    real = conn.execute("SELECT pg_catalog.pg_backend_pid()").fetchone()[0]
    if not said or said == real:
        return None
    return Check("server.pooler", _G, OK,
                 "reached through a connection pooler (PgBouncer or the like)",
                 [f"the login was answered as process {said}, the statements by the server's"
                  f" process {real}",
                  "kaja keeps nothing on a server connection between transactions; `kaja backup`"
                  " reads one snapshot, on one connection when the pool has none to spare",
                  "server.encryption below is kaja's link to the pooler; the pooler's own"
                  " to the server is the pooler's to encrypt"])  # fmt: skip


def _encryption(conn, ctx: Context) -> Check:
    """kaja's own link, as kaja's end of it sees it (through a pooler, the
    server's side of a connection is the pooler's link to the server)."""
    raw = conn.raw
    if raw.pgconn.ssl_in_use:
        version = raw.pgconn.ssl_attribute("protocol") or "TLS"
        return Check("server.encryption", _G, OK, f"the connection is encrypted ({version})")
    if _unix_socket(raw.fileno()):
        return Check("server.encryption", _G, OK,
                     "the connection is not encrypted: a Unix socket, on this machine")  # fmt: skip
    return Check("server.encryption", _G, WARN, "the connection is not encrypted",
                 ["the conversations cross the network in the clear"],
                 fix="add sslmode=require (or verify-full) to the database URL")  # fmt: skip


def _unix_socket(fileno: int) -> bool:
    """Whether the connection is a Unix socket: asked of the socket itself (a
    URL's `host` may name a socket's folder while its `hostaddr` makes libpq
    connect by TCP)."""
    import os
    import socket

    try:
        with socket.socket(fileno=os.dup(fileno)) as sock:
            return sock.family == getattr(socket, "AF_UNIX", None)
    except OSError:
        return False


def _privileges(conn, ctx: Context) -> Check | None:
    from kaja_cli.core.store.server import schema

    # From the catalog alone: a role that may not read the version table is
    # what this check is for (every command reads it).
    state = schema.status(conn, version_read=False)
    if not state.kajas:
        return None
    from kaja_cli.core.store.schema import CONVERSATION_TABLES

    written = [t.name for t in CONVERSATION_TABLES if t.name in state.tables]
    read = written + [t for t in (schema.VERSION_TABLE, schema.STATS_TABLE, schema.TERMS_TABLE)
                      if t in state.tables]  # fmt: skip
    may = "coalesce(pg_catalog.has_table_privilege(to_regclass(t), '{}'), false)"
    lacking = ("ARRAY(SELECT t FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS u(t, i)"
               " WHERE NOT ({}) ORDER BY i)")  # fmt: skip
    role, unreadable, read_only = conn.execute(
        f"SELECT current_user, {lacking.format(may.format('SELECT'))},"
        f" {lacking.format(' AND '.join(may.format(w) for w in ('INSERT', 'UPDATE', 'DELETE')))}",
        (read, written),
    ).fetchone()
    if unreadable:
        return Check("server.privileges", _G, ERROR,
                     f"role {role} may not read {', '.join(unreadable)}",
                     fix=f"GRANT SELECT ON ALL TABLES IN SCHEMA {conn.target.schema} TO {role}")  # fmt: skip
    if read_only:
        return Check("server.privileges", _G, WARN,
                     f"role {role} may only read: reading works, writing is refused",
                     [f"no INSERT, UPDATE or DELETE on {', '.join(read_only)}"],
                     fix="use a role that may write to delete, wipe or record")  # fmt: skip
    return Check("server.privileges", _G, OK, f"role {role} may read and write kaja's tables")


LAG_WARN_S = 60  # a replica this far behind answers reads with a minute-old store
# Which store a server holds: its cluster (a streaming replica has its primary's
# system identifier; NULL where the role may not ask) and the database in it (a
# replica's have its primary's oids).
_IDENTITY = (
    "CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')"
    " THEN (SELECT system_identifier FROM pg_catalog.pg_control_system()) END,"
    " (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())"
)


def _same_store(ours: list, theirs: tuple) -> bool:
    """Whether two servers' `_IDENTITY` say the same store: the same database
    oid, and the same cluster where both could tell."""
    (our_system, our_db), (their_system, their_db) = ours, theirs
    if our_system is not None and their_system is not None and our_system != their_system:
        return False
    return our_db == their_db


def _replica(conn, ctx: Context) -> Check | None:
    """The read replica's lag: `[memory] readUrl` against this server, or this
    server's own when it is a replica (None: no replica in play)."""
    from kaja_cli.core.engine import postgres as pg

    if pg.in_recovery(conn.raw):
        behind, ago = _replay(conn, None)
        return Check("server.replica", _G, WARN,
                     f"{conn.target.shown} is a read-only replica (in recovery):"
                     " reads work, writes are refused",
                     _lag_details(behind, ago, "received from its primary"),
                     fix="point memory.databaseUrl at the primary"
                         " (and memory.readUrl at this replica)")  # fmt: skip
    read = ctx.store.read_target()
    if read.url == conn.target.url:
        return None
    written, *ours = conn.execute(
        f"SELECT pg_catalog.pg_current_wal_lsn()::text, {_IDENTITY}"
    ).fetchone()
    try:
        with pg.connect(read) as replica:
            replica.set_statement_timeout(STATEMENT_TIMEOUT_MS)
            theirs = replica.execute(f"SELECT {_IDENTITY}").fetchone()
            same = _same_store(ours, theirs)
            recovering = pg.in_recovery(replica.raw)
            if not same:  # a replica of another store; or no replica at all (a logical one?)
                what, why = (
                    ("a replica of another store", "of another server than memory.databaseUrl's,"
                     " or another database on it")
                    if recovering
                    else ("another server or database, not a replica of memory.databaseUrl's",
                          "right for a logical replica of kaja's schema; anything else shows"
                          " another store than the one kaja writes")
                )  # fmt: skip
                return Check("server.replica", _G, ERROR if recovering else WARN,
                             f"memory.readUrl ({read.shown}) is {what}: reads show what it holds",
                             [why], fix="point memory.readUrl at a replica of memory.databaseUrl's"
                                        " server, the same database, or unset it")  # fmt: skip
            if not recovering:
                return Check("server.replica", _G, OK,
                             f"memory.readUrl ({read.shown}) is not a replica (not in recovery)",
                             ["reads go to that server, writes to memory.databaseUrl"])  # fmt: skip
            behind, ago = _replay(replica, written)
            paused = replica.execute("SELECT pg_catalog.pg_is_wal_replay_paused()").fetchone()[0]
    except KajaError as e:
        return Check("server.replica", _G, ERROR,
                     f"memory.readUrl: {e.message}", ["read commands fail while it does"],
                     fix="check memory.readUrl, or unset it to read from memory.databaseUrl")  # fmt: skip
    details = [f"replica {read.shown}", *_lag_details(behind, ago, "written on the server")]
    if behind == 0:
        return Check("server.replica", _G, OK,
                     "the read replica has replayed everything the server wrote", details)  # fmt: skip
    if paused:  # however recent its last replayed transaction, it replays no more
        details.append("its replay is paused (pg_wal_replay_pause()): it falls further behind")
    status = WARN if paused or (ago is not None and ago > LAG_WARN_S) else OK
    return Check("server.replica", _G, status,
                 f"the read replica is {_bytes(behind)}{_seconds(ago)} behind the server",
                 [*details, "reads may not show the latest writes yet"],
                 fix="check the replica's replication" if status == WARN else None)  # fmt: skip


def _replay(conn, written: str | None) -> tuple[int, float | None]:
    """(bytes of WAL not replayed yet, seconds since the last transaction replayed:
    None when none was); against `written` (the primary's LSN), else what the
    replica has received."""
    upto = "CAST(? AS pg_lsn)" if written is not None else "pg_catalog.pg_last_wal_receive_lsn()"
    row = conn.execute(
        f"SELECT pg_catalog.pg_wal_lsn_diff({upto}, pg_catalog.pg_last_wal_replay_lsn()),"
        " EXTRACT(EPOCH FROM pg_catalog.clock_timestamp()"
        " - pg_catalog.pg_last_xact_replay_timestamp())",
        (written,) if written is not None else None,
    ).fetchone()
    behind = max(0, int(row[0] or 0))
    return behind, (None if row[1] is None else max(0.0, float(row[1])))


def _lag_details(behind: int, ago: float | None, what: str) -> list[str]:
    out = [f"{_bytes(behind)} of WAL {what} not replayed yet"]
    if ago is not None:
        out.append(f"last transaction replayed {ago:.1f} s ago")
    return out


def _bytes(n: int) -> str:
    return plural(n, "byte", commas=True)


def _seconds(ago: float | None) -> str:
    return f" ({ago:.0f} s)" if ago is not None else ""
