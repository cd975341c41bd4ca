"""The one PostgreSQL client: connecting to a server, and the connections held.

psycopg is imported here only (in all of kaja), the first time a server is
needed: local start-up (every TAB press) never pays for it, and without it
kaja says in one line how to install it (`DriverMissing`). Two kinds of
connection come from it, with the same timeouts and the same errors:

- `connect()`: cloud mode's store (the store's server part, `store/server`),
  a `Connection` speaking the sqlite3 interface the query functions use;
- `open_driver()`: psycopg's own connection, for ledger sync's statements on
  its shared table (`ledger/sync/server.py`: COPY, psycopg's transactions).

What a connection promises, as `db.open_read`/`open_write` do locally:

- it never hangs: connecting gives up after `CONNECT_TIMEOUT` seconds (unless
  the URL says `connect_timeout`), a lock wait after `LOCK_TIMEOUT_MS` (busy,
  exit 4, like SQLite's busy timeout), a statement after `[memory]
  statementTimeout` seconds (the server cancels it; the URL's own
  `statement_timeout` wins, or `PGOPTIONS`' where the URL has no options),
  and kaja stops waiting for a server that does not answer at all
  `ANSWER_GRACE_S` after that (`Deadline`: exit 1);
- a reader's transactions are read-only: a read command cannot write, even by
  mistake;
- nothing kaja sets on a server connection outlives its transaction: a pooler
  in transaction mode (PgBouncer, how hosted servers are reached) hands the
  server connection to its next client, often the agent, after each one. The
  search path, the timeouts and read-only are `SET LOCAL`s at the start of
  every transaction kaja opens (`DeadlinedConnection.local_settings`), every
  statement runs in one, and no statement is prepared on the server (a
  prepared statement outlives its transaction);
- every psycopg error becomes one line with its exit status (`translate`):
  the password is never part of it (`core/masking.py`); the error keeps the
  server's own words (`ServerError.reason`) for a caller that says it in
  its own words (ledger sync);
- `Connection` speaks the sqlite3 interface the query functions use
  (`execute` with `?` and `:name` placeholders, cursors, `BEGIN IMMEDIATE`,
  `in_transaction`), and says `dialect = POSTGRES` for the few spellings
  that differ (`dialect`), and answers what its schema holds (`table_names`,
  `columns`).

Where the server is (`Target`) is the caller's to say: the store reads it
from the settings. The engine knows nothing of Kaja's schema.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from kaja_cli.core.engine import dialect, timing
from kaja_cli.core.masking import mask, scrub
from kaja_cli.errors import Busy, Failed, KajaError

CONNECT_TIMEOUT = 5  # seconds; libpq's own default is to wait forever
LOCK_TIMEOUT_MS = 5000  # as long as SQLite's busy timeout
STATEMENT_TIMEOUT_S = 60  # `[memory] statementTimeout` when it is not set
ANSWER_GRACE_S = 5  # past the statement timeout, a server that has not answered is not answering
INSTALL_HINT = "install it with: pip install 'kaja-cli[postgres]'"
# A DB-API connection and cursor of psycopg's (`open_driver`): named here, so
# that no other module imports psycopg, not even for its type hints.
DriverConnection = Any
DriverCursor = Any


class Target(NamedTuple):
    """Where a connection goes: the server's URL, the schema its statements
    use (None: the role's search_path), the account "you" means there (cloud
    mode), and how long a statement may run."""

    url: str
    schema: str | None = None
    account: str | None = None
    url_source: str = "settings [memory] databaseUrl"
    statement_timeout_s: float = STATEMENT_TIMEOUT_S

    @property
    def shown(self) -> str:
        """The URL as kaja may print it: the password as ***."""
        return mask(self.url)

    @property
    def where(self) -> str:
        """How a message names the store: `postgresql://kaja:***@db/kaja (schema kaja)`."""
        return f"{self.shown} (schema {self.schema})" if self.schema else self.shown

    @property
    def statement_timeout_ms(self) -> int:
        return max(1, round(self.statement_timeout_s * 1000))


class DriverMissing(Failed):
    """psycopg is not installed (the `postgres` extra)."""


class BadUrl(Failed):
    """The URL is not one libpq reads; `reason` says why (never the password)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def driver() -> Any:
    """The psycopg module; DriverMissing (exit 1) with the way to install it."""
    try:
        import psycopg
    except ImportError:
        raise DriverMissing(
            "cloud mode needs psycopg, the PostgreSQL driver", hint=INSTALL_HINT
        ) from None
    return psycopg


# --- errors -------------------------------------------------------------------------------
class ServerError(KajaError):
    """A psycopg error in one line (`translate`). Beside the message: the
    server's own words (`reason`, without the password), its SQLSTATE,
    whether it is DB-API's OperationalError (`operational`: the server or the
    connection failed, a lock or statement timeout included, not the
    statement itself), and whether there was no connection yet (`connecting`)."""

    reason: str = ""
    sqlstate: str = ""
    operational: bool = False
    connecting: bool = False


class ServerFailed(ServerError, Failed):
    pass


class ServerBusy(ServerError, Busy):
    pass


def translate(error: Exception, where: Target, *, connecting: bool = False) -> ServerError:
    """A psycopg error as the one line a user should read (never the password).
    `connecting`: the error came before there was a connection to lose."""
    psycopg = driver()
    out = _translate(error, where, connecting)
    out.reason = scrub(_primary(error), where.url)
    out.sqlstate = getattr(error, "sqlstate", None) or ""
    out.operational = isinstance(error, psycopg.OperationalError)
    out.connecting = connecting
    return out


def _translate(error: Exception, where: Target, connecting: bool) -> ServerError:
    server = where.shown
    if getattr(error, "no_reply_s", None):
        return ServerFailed(
            f"the server at {server} stopped answering: no reply in {error.no_reply_s:.0f} s",  # type: ignore[attr-defined]
            hint="check the server and the network (or, through a connection pooler, whether its"
            " pool has a server connection free), then try again (what was not committed is"
            " rolled back); [memory] statementTimeout sets how long kaja waits",
        )
    state = getattr(error, "sqlstate", None) or ""
    text = scrub(_primary(error), where.url)  # libpq may quote the URL, or a piece of it
    low = text.lower()
    if connecting and not state:  # libpq's words are all there is before a connection
        if "authentication failed" in low or "no password supplied" in low:
            state = "28P01"
        elif "database" in low and "does not exist" in low:
            state = "3D000"
    if state in ("28P01", "28000"):
        return ServerFailed(
            f"the server at {server} refused the login: {text}",
            hint="check the user and password in the database URL",
        )
    if state == "3D000":
        return ServerFailed(f"{server}: {text}", hint="check the database name in the URL")
    if state == "55P03" or state in ("40001", "40P01"):
        return ServerBusy(
            f"{where.where} is busy: {text}",
            hint="another session holds kaja's tables; try again when it is done",
        )
    if state == "57014":
        return ServerFailed(
            f"the server cancelled the query ({text})",
            hint="raise [memory] statementTimeout (kaja config set memory.statementTimeout"
            " SECONDS), or ask for less (--limit, --since)",
        )
    if state == "42501":
        return ServerFailed(
            f"your role may not do this on {where.where}: {text}",
            hint="ask the database's owner for the privilege, or use a role that has it",
        )
    if connecting and not state.startswith("57P"):
        return ServerFailed(
            f"cannot reach the PostgreSQL server at {server}: {text}",
            hint="check the host and port in the database URL, and that the server runs",
        )
    if state.startswith("57P") or state.startswith("08") or _lost(error):
        return ServerFailed(
            f"lost the connection to the server at {server} ({text})",
            hint="nothing was changed: what was not committed rolled back; try again",
        )
    if state == "53100":
        return ServerFailed(f"the server at {server} is out of disk space ({text})")
    return ServerFailed(f"{where.where}: {text}")


def _primary(error: Exception) -> str:
    """The server's own words (libpq's, for a connection that failed)."""
    diag = getattr(error, "diag", None)
    text = getattr(diag, "message_primary", None) if diag is not None else None
    if not text:
        lines = str(error).strip().splitlines()
        text = lines[0] if lines else type(error).__name__
    return re.sub(r"\s+", " ", str(text)).strip()


def _lost(error: Exception) -> bool:
    text = str(error).lower()
    return any(
        words in text
        for words in ("server closed the connection", "connection is closed", "terminating connection",
                      "consuming input failed", "the connection is lost", "connection is lost")
    )  # fmt: skip


# --- placeholders -------------------------------------------------------------------------
_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\?|::|:[A-Za-z_]\w*|%""")


def placeholders(sql: str) -> str:
    """sqlite3's `?` and `:name` as psycopg's `%s` and `%(name)s`; a literal `%`
    doubled. Quoted strings and names, and `::` casts, are left alone."""

    def sub(m: re.Match[str]) -> str:
        token = m.group()
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        if token.startswith(":") and token != "::":
            return f"%({token[1:]})s"
        return token

    return _TOKEN.sub(sub, sql)


@contextmanager
def translated(where: Target) -> Iterator[None]:
    """psycopg errors inside the block as `ServerError`s (`translate`)."""
    psycopg = driver()
    try:
        yield
    except psycopg.Error as e:
        raise translate(e, where) from None


def missing_object_errors() -> tuple[type[BaseException], ...]:
    """psycopg's errors for a table or schema that is not there (for `except`)."""
    errors = driver().errors
    return (errors.UndefinedTable, errors.InvalidSchemaName)


# The schema's tables and views with their columns, in order (`Connection._catalog_now`).
_CATALOG = (
    "SELECT c.relname, a.attname FROM pg_catalog.pg_class AS c"
    " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
    " LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid"
    " AND a.attnum > 0 AND NOT a.attisdropped"
    " WHERE n.nspname = ? AND c.relkind IN ('r', 'p', 'v') ORDER BY c.relname, a.attnum"
)


def literal(text: str) -> str:
    """A string constant for a statement sent without parameters (or the body
    of a function, parsed again in each session that calls it): an escape
    string (E'…'), read the same whatever standard_conforming_strings says."""
    return "E'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


# --- the connection ----------------------------------------------------------------------
class Cursor:
    """A psycopg cursor as the query functions use a sqlite3 one."""

    def __init__(self, raw: Any, conn: Connection) -> None:
        self._raw = raw
        self._conn = conn

    @property
    def description(self) -> Any:
        return self._raw.description

    @property
    def rowcount(self) -> int:
        return self._raw.rowcount

    lastrowid = None  # PostgreSQL has no rowid: RETURNING says what was written

    def fetchone(self) -> Any:
        with self._conn.translated():
            return self._raw.fetchone() if self._raw.description is not None else None

    def fetchall(self) -> list[Any]:
        with self._conn.translated():
            return self._raw.fetchall() if self._raw.description is not None else []

    def fetchmany(self, size: int) -> list[Any]:
        with self._conn.translated():
            return self._raw.fetchmany(size)

    def __iter__(self) -> Iterator[Any]:
        if self._raw.description is None:
            return
        while True:
            with self._conn.translated():
                rows = self._raw.fetchmany(2000)
            if not rows:
                return
            yield from rows


class _NoResult:
    """The result of a statement that returns no rows and needs no connection
    (a ROLLBACK, which on a lost connection must not ask psycopg for a cursor)."""

    description = None
    rowcount = -1

    def fetchmany(self, size: int) -> list[Any]:
        return []


# Statements that leave the catalog as it was, by their first word: the rest
# (BEGIN, COMMIT, ROLLBACK, CREATE, ALTER, DROP, DO, …) forget what was read.
_READS_CATALOG_AS_IT_WAS = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "SHOW", "SET", "COPY",
                            "EXPLAIN", "VALUES", "LOCK")  # fmt: skip
# Of those, the statements that change no row either (what `remembered` keeps holds).
_ONLY_READS = ("SELECT", "SHOW", "SET", "EXPLAIN", "VALUES", "LOCK")


class Connection:
    """A connection to kaja's schema on the server (see the module docstring)."""

    dialect = dialect.POSTGRES

    def __init__(self, raw: Any, where: Target, *, writable: bool) -> None:
        self.raw = raw
        self.target = where
        self.writable = writable
        self.statement_timeout_ms = where.statement_timeout_ms
        # A transaction kaja opened for statements run outside the caller's (`_carried`).
        self._implicit = False
        # The schema's tables and their columns, read once a transaction (`_catalog_now`),
        # and what was learnt from them (`remembered`).
        self._catalog: dict[str, list[str]] | None = None
        self._learnt: dict[str, Any] = {}
        # The query profile's name for it (`timing`): the server's schema, as a file's name.
        self.kaja_db = f"postgresql:{where.schema or ''}"
        if (listener := timing.listening()) is not None:
            listener.opened(self.kaja_db, writable)

    @contextmanager
    def timed(self, sql: str) -> Iterator[list[int]]:
        """Time the statement run in the block for the query profile (`timing`),
        as the local opener times each of SQLite's; the block puts its rows in
        the list it is given. Statements are recorded with their placeholders."""
        listener = timing.listening()
        rows = [0]
        if listener is None:
            yield rows
            return
        start = time.perf_counter()
        try:
            yield rows
        except BaseException:
            listener.record(self.kaja_db, sql, time.perf_counter() - start, 0, True)
            raise
        listener.record(self.kaja_db, sql, time.perf_counter() - start, max(rows[0], 0), False)

    def set_statement_timeout(self, ms: int) -> None:
        """Let statements run `ms` on the server from now on (in this
        transaction and every later one), and wait as long for their answers
        (plus the grace)."""
        self.raw.kaja_settings["statement_timeout"] = str(int(ms))
        if self.raw.info.transaction_status != IDLE:
            with self.translated():
                self.raw.execute(f"SET LOCAL statement_timeout = {int(ms)}")
        self.statement_timeout_ms = int(ms)
        self.raw.deadline.seconds = answer_within(int(ms))

    @contextmanager
    def waiting(self, ms: int) -> Iterator[None]:
        """Inside a transaction: the statements of the block may run `ms` (when
        that is longer than the statement timeout), then back to it."""
        if ms <= self.statement_timeout_ms:
            yield
            return
        before = self.execute("SHOW statement_timeout").fetchone()[0]
        self.execute(f"SET LOCAL statement_timeout = {int(ms)}")
        self.raw.deadline.seconds = answer_within(int(ms))
        try:
            yield
        finally:
            self.raw.deadline.seconds = answer_within(self.statement_timeout_ms)
        self.execute("SELECT pg_catalog.set_config('statement_timeout', ?, true)", (before,))

    def server_statement_timeout_ms(self) -> int:
        """The statement timeout the server applies to this session (0: none)."""
        with self.translated():
            return _server_statement_timeout_ms(self.raw)

    def translated(self) -> Any:
        return translated(self.target)

    # -- what the schema holds (the catalog, for `dialect.table_names`/`columns`) --
    def _forget(self) -> None:
        self._catalog = None
        self._learnt.clear()

    def _catalog_now(self) -> dict[str, list[str]]:
        """Every table's (and view's) columns in this connection's schema, a
        table without columns too: one statement, kept until the transaction
        ends or kaja changes the schema on this connection (each statement is
        a round trip to a hosted server; a command asked the catalog two to
        six times). Within a transaction the tables kaja has read cannot be
        altered by another session until it ends. Asked outside any
        transaction (a command's first look), it goes with the BEGIN of kaja's
        own transaction, in the same round trip (`_open_own`)."""
        if self._catalog is None:
            if not self._implicit and self.raw.info.transaction_status == IDLE:
                rows = self._open_own(_CATALOG.replace("?", literal(str(self.target.schema))))
            else:
                rows = self.execute(_CATALOG, (self.target.schema,)).fetchall()
            out: dict[str, list[str]] = {}
            for table, column in rows:
                columns = out.setdefault(table, [])
                if column is not None:
                    columns.append(column)
            self._catalog = out
        return self._catalog

    def table_names(self) -> set[str]:
        """The tables and views of this connection's schema."""
        return set(self._catalog_now())

    def remembered(self, key: str, make: Callable[[], Any]) -> Any:
        """`make()`, asked once while the catalog read is kept (`_catalog_now`):
        for what is read beside it, such as the schema's version."""
        self._catalog_now()
        if key not in self._learnt:
            self._learnt[key] = make()
        return self._learnt[key]

    def schema_exists(self) -> bool:
        row = self.execute(
            "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ?", (self.target.schema,)
        ).fetchone()
        return row is not None

    def columns(self) -> dict[str, list[str]]:
        """Every table's (and view's) columns in this connection's schema, in their order."""
        return {t: list(cols) for t, cols in self._catalog_now().items() if cols}

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Cursor:
        word = sql.lstrip()[:8].upper()
        if not word.startswith(_READS_CATALOG_AS_IT_WAS):
            self._forget()  # a transaction's end, or a statement that may change the schema
        elif self.writable and not word.startswith(_ONLY_READS):
            # A write: kaja's own version row among what it may change (a
            # reader's transactions are read-only: its WITHs change nothing).
            self._learnt.clear()
        if word.startswith("BEGIN"):
            return self._begin(sql)
        if sql.strip().upper() == "ROLLBACK":
            self.rollback()  # quietly: a lost connection has nothing to roll back
            return Cursor(_NoResult(), self)
        if sql.strip().upper() == "COMMIT":
            self._implicit = False
            with self.timed(sql), self.translated():
                return Cursor(self.raw.execute("COMMIT"), self)
        if word.startswith("VACUUM"):  # never in a transaction (see `runs_alone`)
            self._end_own("COMMIT", quietly=False)
            with self.timed(sql), self.translated():
                return Cursor(self.raw.execute(sql), self)
        with self.timed(sql) as rows, self.translated(), self._carried():
            if params is None or (not params and not isinstance(params, Mapping)):
                cur = Cursor(self.raw.execute(sql), self)  # not parsed for placeholders
            else:
                cur = Cursor(self.raw.execute(placeholders(sql), params), self)
            rows[0] = cur.rowcount
            return cur

    def copy_out(
        self, sql: str, params: Sequence[Any] = (), types: Sequence[str] = ()
    ) -> Iterator[tuple]:
        """The rows of `COPY (query) TO STDOUT (FORMAT BINARY)`, each a tuple of
        Python values of `types` (PostgreSQL type names, one per column)."""
        with self.timed(sql) as counted, self.translated(), self._carried(), self._whole():
            cur = self.raw.cursor()
            with cur.copy(placeholders(sql) if params else sql, params or None) as copy:
                copy.set_types(list(types))
                for row in copy.rows():
                    counted[0] += 1
                    yield row

    def rows_of(
        self, select: str, params: Sequence[Any] = (), types: Sequence[str] = ()
    ) -> Iterator[tuple]:
        """The rows of a SELECT whose columns are of `types` (PostgreSQL type
        names), each a tuple of Python values, read as they come: in chunks of
        STREAM_CHUNK rows (libpq 17's chunked mode: psycopg's C loaders make a
        chunk's values at once, one wait for the server per chunk), else by
        `copy_out` (a wait and a parse per row, in Python)."""
        if not _chunked():
            yield from self.copy_out(f"COPY ({select}) TO STDOUT (FORMAT BINARY)", params, types)
            return
        with self.timed(select) as counted, self.translated(), self._carried(), self._whole():
            cur = self.raw.cursor(binary=True)
            sql = placeholders(select) if params else select
            for row in cur.stream(sql, params or None, size=STREAM_CHUNK):
                counted[0] += 1
                yield row

    def copy_in(self, sql: str, rows: Any, types: Sequence[str] = ()) -> int:
        """`COPY table (columns) FROM STDIN`, writing `rows` (each value in
        PostgreSQL's text form; with `types`, the statement says `FORMAT
        BINARY` and the values are of those types); returns how many went in."""
        with self.timed(sql) as counted, self.translated(), self._carried(), self._whole():
            cur = self.raw.cursor()
            with cur.copy(sql) as copy:
                if types:
                    copy.set_types(list(types))
                for row in rows:
                    copy.write_row(row)
                    counted[0] += 1
        return counted[0]

    @contextmanager
    def _whole(self) -> Iterator[None]:
        """One deadline for a whole COPY (the server's statement timeout bounds it
        as one statement), not one per row: a COPY makes a round trip per row,
        and arming the deadline for each costs more than the row."""
        raw = self.raw
        deadline = getattr(raw, "deadline", None)
        if deadline is None:
            yield
            return
        with deadline.armed():
            raw.deadline = None  # the per-round-trip arming (`connection_class`) skipped
            try:
                yield
            except driver().Error:
                if not deadline.fired:
                    raise
                error = driver().OperationalError(
                    f"the server stopped answering (no reply in {deadline.seconds:.0f} s)"
                )
                error.no_reply_s = deadline.seconds  # type: ignore[attr-defined]
                raise error from None
            finally:
                raw.deadline = deadline

    def executemany(self, sql: str, rows: Any) -> Cursor:
        with self.timed(sql) as counted, self.translated(), self._carried():
            cur = self.raw.cursor()
            cur.executemany(placeholders(sql), list(rows))
            counted[0] = cur.rowcount
            return Cursor(cur, self)

    def _begin(self, sql: str) -> Cursor:
        # BEGIN IMMEDIATE (a write): READ COMMITTED, as SQLite's one writer sees
        # what is committed; a plain BEGIN (a read's snapshot): one snapshot for
        # every statement until COMMIT, as a SQLite read transaction. One round
        # trip: the end of kaja's own transaction, the caller's, kaja's settings.
        level = "READ COMMITTED" if "IMMEDIATE" in sql.upper() else "REPEATABLE READ"
        ending = "COMMIT; " if self._implicit else ""
        with self.timed(sql), self.translated():
            cur = self.raw.execute(
                f"{ending}BEGIN ISOLATION LEVEL {level}; {self.raw.local_settings()}"
            )
        self._implicit = False
        return Cursor(cur, self)

    @contextmanager
    def _carried(self) -> Iterator[None]:
        """The block's statement in a transaction that carries kaja's settings:
        the caller's, else one of kaja's own. A reader keeps its own open for
        its next statements (one round trip less each; ended by a BEGIN, a
        COMMIT or `close`); a writer's is committed after the statement, as
        autocommit would. A statement that fails ends kaja's own (the next one
        starts afresh, as in autocommit)."""
        if self._implicit or self.raw.info.transaction_status == IDLE:
            if not self._implicit:
                self._begin_own()
            try:
                yield
            except BaseException:
                self._end_own("ROLLBACK")
                raise
            if self.writable:
                self._end_own("COMMIT", quietly=False)
            return
        yield  # the caller's transaction

    def _open_own(self, select: str) -> list[Any]:
        """Open kaja's own transaction (`_carried`'s) and run `select` (no
        parameters) in it, in the same round trip as its BEGIN; its rows. A
        writer's is committed after it, as `_carried` does."""
        with self.timed(select) as counted, self.translated():
            cur = self._begin_own(select)
            try:
                while cur.nextset():  # BEGIN's and each SET's results, then the SELECT's
                    pass
                rows = cur.fetchall()
            except BaseException:
                self._end_own("ROLLBACK")
                raise
            counted[0] = len(rows)
            if self.writable:
                self._end_own("COMMIT", quietly=False)
        return rows

    def _begin_own(self, then: str = "") -> Any:
        """BEGIN kaja's own transaction with its settings, and `then` (a
        statement without parameters) in the same round trip; psycopg's cursor.
        Ours before it is sent: a statement that fails after the BEGIN ran
        leaves the transaction open, aborted, and it is rolled back."""
        self._implicit = True
        try:
            return self.raw.execute(
                f"{OWN_BEGIN}; {self.raw.local_settings()}" + (f"; {then}" if then else "")
            )
        except BaseException:
            self._end_own("ROLLBACK")
            raise

    def _end_own(self, word: str, *, quietly: bool = True) -> None:
        """COMMIT or ROLLBACK the transaction kaja opened (`_carried`), if one is open."""
        if not self._implicit:
            return
        self._implicit = False
        self._forget()
        try:
            self.raw.execute(word)
        except driver().Error:
            if not quietly:
                raise

    def rollback(self) -> None:
        """Roll back, quietly: on a lost connection there is nothing to roll back."""
        psycopg = driver()
        self._implicit = False
        self._forget()
        try:
            if self.raw.info.transaction_status != IDLE:
                self.raw.execute("ROLLBACK")
        except psycopg.Error:
            pass

    @property
    def in_transaction(self) -> bool:
        """Whether the caller's transaction is open (BEGIN … COMMIT), as sqlite3's
        `in_transaction` says; not kaja's own (`_carried`)."""
        return not self._implicit and self.raw.info.transaction_status in OPEN

    def close(self) -> None:
        self._end_own("ROLLBACK")  # a reader's own: it wrote nothing
        try:
            self.raw.close()
        except Exception:  # closing a lost connection
            pass


# --- never waiting forever --------------------------------------------------------------
class Deadline:
    """Stops waiting for a server that does not answer. A round trip that
    outlasts `seconds` (the statement timeout the server keeps, plus a grace)
    has its connection's socket shut down by a watch thread: the wait fails at
    once, as on a dropped connection, and `fired` says why. (libpq has no limit
    on a query; TCP keepalives do not help when something between still answers
    for the server, a proxy or a frozen machine's kernel.)"""

    def __init__(self, fileno: int, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._fileno = fileno
        self._until: float | None = None
        self._closed = False
        self._wake = threading.Condition()
        threading.Thread(target=self._watch, name="kaja-deadline", daemon=True).start()

    @contextmanager
    def armed(self) -> Iterator[None]:
        with self._wake:
            nested = self._until is not None
            if not nested:
                self._until = time.monotonic() + self.seconds
                self._wake.notify()
        try:
            yield
        finally:
            if not nested:
                with self._wake:
                    self._until = None

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _watch(self) -> None:
        with self._wake:
            while not self._closed:
                if self._until is None:
                    self._wake.wait()
                elif (left := self._until - time.monotonic()) > 0:
                    self._wake.wait(left)
                else:
                    self.fired, self._until = True, None
                    self._shut()

    def _shut(self) -> None:
        import socket

        try:  # a duplicate shuts the one socket for every descriptor of it
            with socket.socket(fileno=socket.dup(self._fileno)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # closed meanwhile: nothing is waiting on it


_driver_connection: Any = None
STREAM_CHUNK = 2000  # rows a streamed SELECT hands over at once (`Connection.rows_of`)


def _chunked() -> bool:
    """Whether psycopg's libpq streams a result in chunks of rows (libpq 17)."""
    return bool(driver().capabilities.has_stream_chunked())


def connection_class() -> Any:
    """psycopg's Connection, each wait for the server under its `deadline`
    (every round trip goes through `wait`). A wait the deadline ended raises
    an OperationalError whose `no_reply_s` says how long kaja waited."""
    global _driver_connection
    if _driver_connection is None:
        psycopg = driver()

        class NoReply(psycopg.OperationalError):
            no_reply_s: float = 0.0

        class DeadlinedConnection(psycopg.Connection):
            deadline: Deadline | None = None
            statement_timeout_ms = 0  # as set up by `open_driver`
            # What kaja sets, as `SET LOCAL` at the start of each transaction
            # (never on the session: a pooler gives it to the next client).
            kaja_settings: dict[str, str]

            def local_settings(self) -> str:
                """The `SET LOCAL` statements that begin each of kaja's transactions."""
                return "; ".join(
                    f"SET LOCAL {name} {'TO' if name == 'search_path' else '='} {value}"
                    for name, value in self.kaja_settings.items()
                )

            @contextmanager
            def transaction(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
                """psycopg's transaction, beginning with kaja's settings when it
                is the outermost one (a savepoint is inside one that has them)."""
                outermost = self.info.transaction_status == IDLE
                with super().transaction(*args, **kwargs) as tx:
                    if outermost and self.kaja_settings:
                        super().execute(self.local_settings())
                    yield tx

            def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
                """A statement outside a transaction runs in one of its own, with
                kaja's settings, as autocommit would have run it alone."""
                if (
                    self.info.transaction_status == IDLE
                    and self.kaja_settings
                    and not runs_alone(query)
                ):
                    with self.transaction():
                        return super().execute(query, *args, **kwargs)
                return super().execute(query, *args, **kwargs)

            def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
                deadline = self.deadline
                if deadline is None:
                    return super().wait(gen, *args, **kwargs)
                with deadline.armed():
                    try:
                        return super().wait(gen, *args, **kwargs)
                    except psycopg.Error:
                        if not deadline.fired:
                            raise
                        error = NoReply(
                            f"the server stopped answering (no reply in {deadline.seconds:.0f} s)"
                        )
                        error.no_reply_s = deadline.seconds
                        raise error from None

            def close(self) -> None:
                if self.deadline is not None:
                    self.deadline.close()
                super().close()

        _driver_connection = DeadlinedConnection
    return _driver_connection


# The BEGIN of kaja's own transactions (`Connection._carried`), as autocommit
# runs each statement: named, not the role's default (a role defaulting to
# SERIALIZABLE cannot begin at all on a replica, which refuses that level).
OWN_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
IDLE = 0  # libpq's PQTRANS_IDLE: no transaction open on the connection
OPEN = (1, 2, 3)  # ACTIVE, INTRANS, INERROR (UNKNOWN, 4: the connection is lost: none is)
# Statements never wrapped in a transaction: those that begin or end one, and
# those the server runs only outside one (with the server's own timeouts, and
# naming their tables with the schema: kaja's search path is not theirs).
_ALONE = ("BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE",
          "VACUUM")  # fmt: skip


def runs_alone(query: Any) -> bool:
    """Whether the statement is run as it is, outside any transaction kaja opens."""
    return str(query).lstrip()[:10].upper().startswith(_ALONE)


def lock_wait_ms(lock_ms: int, statement_ms: int) -> int:
    """A lock wait ends before the statement timeout: it is reported busy (exit
    4), not as a statement the server cancelled, whatever the timeout is set to."""
    return max(1, min(lock_ms, statement_ms - 100))


def answer_within(statement_timeout_ms: int) -> float:
    """How long kaja waits for an answer when statements may run this long."""
    return statement_timeout_ms / 1000 + ANSWER_GRACE_S


def deadlined(raw: Any, statement_timeout_ms: int) -> Any:
    """`raw` (a `connection_class()` connection) waiting at most `answer_within`."""
    raw.deadline = Deadline(raw.fileno(), answer_within(statement_timeout_ms))
    return raw


def _params(url: str, connect_timeout_s: float | None, application_name: str) -> dict[str, Any]:
    """Connection parameters: the URL's, with kaja's defaults where it says
    nothing (`connect_timeout_s`, when given, bounds the wait whatever it says)."""
    psycopg = driver()
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as e:
        reason = scrub(_primary(e), url)  # libpq quotes the URL, or the piece it choked on
        raise BadUrl(
            f"the database URL {mask(url)} does not parse: {reason}", reason=reason
        ) from None
    extra: dict[str, Any] = {}
    if connect_timeout_s is not None:
        extra["connect_timeout"] = max(1, round(connect_timeout_s))
    elif "connect_timeout" not in given:
        extra["connect_timeout"] = CONNECT_TIMEOUT
    if "application_name" not in given:
        extra["application_name"] = application_name
    # kaja's text is Unicode: whatever PGCLIENTENCODING, the URL, the role or the
    # database say, a LATIN1 client cannot carry it (the server refuses to
    # convert) and an SQL_ASCII one hands back bytes, not text.
    extra["client_encoding"] = "UTF8"
    return extra


def open_driver(
    where: Target,
    *,
    lock_timeout_ms: int | None = None,
    connect_timeout_s: float | None = None,
    application_name: str = "kaja",
    settings: Mapping[str, str] | None = None,
) -> DriverConnection:
    """psycopg's connection (autocommit) to the server, set up as every kaja
    connection is: the connect timeout, `settings` ({name: value}), the
    statement timeout (the URL's own wins) with a lock wait that ends before
    it, all of them `SET LOCAL` in each transaction (never on the session:
    `DeadlinedConnection`), no statement prepared on the server, and the
    deadline on every round trip. Raises ServerError (exit 1, or 4 for a
    lock), BadUrl, DriverMissing: one line, never the password."""
    psycopg = driver()
    params = _params(where.url, connect_timeout_s, application_name)
    try:
        raw = connection_class().connect(where.url, autocommit=True, **params)
    except psycopg.Error as e:
        raise translate(e, where, connecting=True) from None
    except (ValueError, TypeError) as e:  # a parameter libpq parsed but psycopg cannot use
        reason = scrub(_primary(e), where.url)
        raise BadUrl(f"the database URL {mask(where.url)} cannot be used: {reason}",
                     reason=reason) from None  # fmt: skip
    statement_ms = where.statement_timeout_ms
    deadlined(raw, statement_ms)
    # A statement prepared on the server outlives its transaction: behind a
    # pooler the next transaction may find another connection, or another client this one.
    raw.prepare_threshold = None
    raw.kaja_settings = {}
    # psycopg's own transactions (sync's, and a statement run outside one) too
    # begin at a named level, not the role's default (`OWN_BEGIN`).
    raw.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
    try:
        with translated(where):
            wait = LOCK_TIMEOUT_MS if lock_timeout_ms is None else int(lock_timeout_ms)
            local = dict(settings or {})
            if _url_sets(where.url, "statement_timeout"):  # the URL's own wins
                own = _server_statement_timeout_ms(raw)  # 0: none
                statement_ms = max(statement_ms, own)
                # A lock wait still ends first, busy (exit 4), under the URL's timeout too.
                local["lock_timeout"] = str(lock_wait_ms(wait, own) if own else max(wait, 1))
            else:
                local["statement_timeout"] = str(statement_ms)
                local["lock_timeout"] = str(lock_wait_ms(wait, statement_ms))
            # Compiling a plan to machine code (the server's `jit`, on by
            # default) pays off for analytics that run for minutes; for kaja's
            # statements it cost more than it saved: a second or more of a
            # recursive walk whose rows the planner overestimates (`runs
            # --subagents`, `usage`, issue 42). The URL's own wins.
            # A server before PostgreSQL 11 has no such setting: SET LOCAL of
            # it would fail every transaction (and doctor's "kaja needs 12"
            # with it).
            if raw.info.server_version >= 110000 and not _url_sets(where.url, "jit"):
                local["jit"] = "off"
            # Every digit of a float: a role, database or PGOPTIONS asking for
            # fewer (extra_float_digits < 0) would round usage's sums and
            # search's scores as the server prints them.
            local["extra_float_digits"] = "3"
            # kaja's constants are written for it (a backslash is a backslash),
            # whatever the role or database set.
            local["standard_conforming_strings"] = "on"
        raw.kaja_settings = local
        raw.statement_timeout_ms = statement_ms
        raw.deadline.seconds = answer_within(statement_ms)
    except BaseException:
        raw.close()
        raise
    return raw


def _server_statement_timeout_ms(raw: DriverConnection) -> int:
    row = raw.execute(
        "SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'statement_timeout'"
    ).fetchone()
    return int(row[0]) if row else 0


@contextmanager
def connect(
    where: Target,
    *,
    writable: bool = False,
    lock_timeout_ms: int | None = None,
    primary: bool = False,
) -> Iterator[Connection]:
    """A connection to the server with the target's schema first on its search path.

    Readers' transactions are read-only. A writer, or a reader that must be
    the primary (`primary`: the look a write takes first), is refused on a
    replica (`ReadOnlyReplica`). Raises Failed (exit 1) saying why the server
    cannot be reached or refused, never showing the password."""
    settings = {"search_path": quote(str(where.schema))}
    if not writable:
        settings["transaction_read_only"] = "on"
    raw = open_driver(where, lock_timeout_ms=lock_timeout_ms, settings=settings)
    if writable or primary:
        try:
            refuse_replica(raw, where)
        except BaseException:
            raw.close()
            raise
    conn = Connection(raw, where, writable=writable)
    conn.statement_timeout_ms = raw.statement_timeout_ms
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.rollback()
        conn.close()


class ReadOnlyReplica(Failed):
    """A writing connection reached a server in recovery (a streaming replica)."""


def in_recovery(raw: DriverConnection) -> bool:
    """Whether the server is a replica (in recovery). A primary says so at the
    login (`in_hot_standby` off, PostgreSQL 14), and that is taken; anything
    else is asked (a round trip): a pooler answers the login from its pool's
    first, so a replica promoted since (a failover) still says "on" there."""
    if raw.info.parameter_status("in_hot_standby") == "off":
        return False
    return bool(raw.execute("SELECT pg_catalog.pg_is_in_recovery()").fetchone()[0])


def refuse_replica(raw: DriverConnection, where: Target) -> None:
    """ReadOnlyReplica (exit 1) before a write reaches a replica, which would
    refuse its first statement: kaja says which setting to point elsewhere."""
    with translated(where):
        replica = in_recovery(raw)
    if replica:
        source = where.url_source
        setting = (
            source.split(" ", 1)[1]
            if source.startswith(("env ", "flag "))
            else "memory.databaseUrl"
        )
        raise ReadOnlyReplica(
            f"{where.shown} is a read-only replica (in recovery): point {setting} at the primary"
        )


def _url_sets(url: str, setting: str) -> bool:
    """Whether the URL's `options` set this server setting (`-c statement_timeout=…`),
    or libpq's `PGOPTIONS` does where the URL has none (libpq reads it then)."""
    psycopg = driver()
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return False
    options = given["options"] if "options" in given else os.environ.get("PGOPTIONS", "")
    # libpq's spellings: `-c name=value`, `-cname=value`, `--name=value`.
    return re.search(rf"(?:-c\s*|--){re.escape(setting)}\s*=", str(options)) is not None


def quote(name: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'
