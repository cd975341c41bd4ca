"""kaja's own query profiler: what every Kaja process records in db-stats.db.

The seed ("db-stats.db") has every process time its queries: per-minute
totals keyed by (bucket, pid, db, sql) with calls, total_ms, max_ms, rows,
errors and the process name in `db_query_stats`, and each query slower than
`logging.database.slow_ms` (default 50) in `db_slow_queries`. kaja does the
same for its own commands:

- `begin()` (app.main, before a command runs) starts a session; `configure()`
  (when the command has located its store) reads the three settings and names
  the process (`kaja sessions delete`); `finish()` (when main ends, whatever
  the exit) writes the totals in one short transaction and prunes rows older
  than `logging.database.retention_days` (default 7). Shell completion never
  reaches `begin()`: a TAB press records nothing.
- While a session runs it listens to the engine's statement timing
  (`engine/timing.py`, `timing.listen(session)`): every connection the
  opener makes times each statement until its last row is fetched, and the
  session adds it to its totals. A statement counts once, when it is done.
- Statements are recorded with their placeholders, and with every literal
  replaced by `?` too (`LIMIT 20` → `LIMIT ?`): never a value.
- Nothing is written when profiling is off (`logging.database.enabled =
  false`), when nothing was recorded, when the command only read and
  db-stats.db does not exist yet, or after `discard()` (doctor and every
  --dry-run, which leave every file as they found it; demo, whose store is reproducible; wipe, which
  deletes db-stats.db; backup and restore, whose archive and store must be
  the same; optimize, whose checkpoint the write would undo). Writing gives up quietly after a short lock wait:
  profiling never fails a command (KAJA_DEBUG=1 shows why it was dropped).

Nothing here imports sqlite3 until a connection is opened: `begin()` is on
the start-up path of every command.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kaja_cli.core import clock
from kaja_cli.core.engine import timing

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.store.paths import Paths

DEFAULT_SLOW_MS = 50
DEFAULT_RETENTION_DAYS = 7
WRITE_TIMEOUT_MS = 500  # the agent flushes every 10 s: a longer wait means something is wrong
MAX_SLOW = 1000  # slow-log rows one process keeps; beyond that only the totals grow
MAX_SQL = 4000  # characters of a statement kept (a long script is cut, marked with …)


class _Totals:
    """One (minute, db, sql) key's totals in this process."""

    __slots__ = ("calls", "errors", "max_ms", "rows", "total_ms")

    def __init__(self) -> None:
        self.calls = self.rows = self.errors = 0
        self.total_ms = self.max_ms = 0.0


class Session:
    """What one command has recorded, and where it goes."""

    def __init__(self) -> None:
        self.process = "kaja"
        self.paths: Paths | None = None
        self.enabled = True
        self.slow_ms: float = DEFAULT_SLOW_MS
        self.retention_days = DEFAULT_RETENTION_DAYS
        self.wrote = False  # a connection opened for writing: the command is not read-only
        self.totals: dict[tuple[int, str, str], _Totals] = {}
        self.slow: list[tuple[str, str, str, float, int]] = []  # at, db, sql, ms, rows
        self.lock = threading.Lock()  # doctor and search read from threads too

    def opened(self, label: str, writable: bool) -> None:
        if writable:
            self.wrote = True

    def record(self, db: str, sql: str, seconds: float, rows: int, error: bool) -> None:
        if not self.enabled:
            return
        now = time.time()
        ms = seconds * 1000
        text = normalized(sql)
        with self.lock:
            totals = self.totals.get((int(now // 60), db, text))
            if totals is None:
                totals = self.totals[(int(now // 60), db, text)] = _Totals()
            totals.calls += 1
            totals.total_ms += ms
            totals.rows += max(rows, 0)
            totals.errors += error
            if ms > totals.max_ms:
                totals.max_ms = ms
            if ms > self.slow_ms and len(self.slow) < MAX_SLOW:
                at = clock.from_epoch(now - seconds)
                self.slow.append((_iso(at), db, text, ms, max(rows, 0)))


_session: Session | None = None


def begin() -> None:
    """Start recording this process's queries (a fresh session: in-process
    test runs call main() many times in one process)."""
    global _session
    _session = Session()
    timing.listen(_session)


def active() -> Session | None:
    return _session


def configure(paths: Paths, process: str) -> None:
    """The command's store and name: where the profile goes and what it is
    called; the settings decide whether and what to record."""
    session = _session
    if session is None:
        return
    session.paths, session.process = paths, process
    session.enabled = _setting(paths, "enabled", bool, True)
    session.slow_ms = _setting(paths, "slow_ms", int, DEFAULT_SLOW_MS)
    session.retention_days = _setting(paths, "retention_days", int, DEFAULT_RETENTION_DAYS)
    timing.listen(session if session.enabled else None)


def _setting(paths: Paths, leaf: str, kind: type, default: Any) -> Any:
    """A `logging.database` setting; a value kaja would reject means the default
    (commands go on; `kaja doctor` warns about it)."""
    from kaja_cli.core.store.settings import keys as settings_keys

    key = settings_keys.KEYS[f"logging.database.{leaf}"]
    value = paths.settings.lookup(key.parts)
    if value is None or not settings_keys.acceptable(key, value):
        return default
    return kind(value)


def discard() -> None:
    """Record nothing more and write nothing: the command promised to leave
    db-stats.db alone (doctor), makes its own (demo) or deletes it (wipe)."""
    global _session
    _session = None
    timing.listen(None)


def finish() -> None:
    """Write what the command recorded (the module docstring says when not).
    Never raises: profiling must not change how a command ends."""
    global _session
    session, _session = _session, None  # the write itself is not profiled
    timing.listen(None)
    if session is None or session.paths is None or not session.enabled:
        return
    with session.lock:
        if not session.totals:
            return
    try:
        write(session)
    except BaseException as e:  # a profile is never worth a failure
        if os.environ.get("KAJA_DEBUG"):
            sys.stderr.write(f"kaja: the query profile was not written: {e}\n")


def write(session: Session, *, now: datetime | None = None) -> bool:
    """Add the session's totals and slow queries to db-stats.db and prune old
    rows, in one transaction. False when it was not written (see `finish`)."""
    import sqlite3

    from kaja_cli.core.engine import db
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.registry import Database

    assert session.paths is not None
    store = Store(session.paths)  # db-stats.db is a local file in cloud mode too
    path = store.path(Database.STATS)
    if not session.wrote and not path.exists():
        return False
    file = session.paths.file_of(Database.STATS)
    with db.open_write(path, file, create=True, timeout_ms=WRITE_TIMEOUT_MS) as conn:
        # Statistics, not data: no waiting for the disk. Each fsync (the commit's,
        # and the checkpoint's when kaja closes the file last) costs ~10 ms here,
        # which a 150 ms command would feel; an OS crash at the wrong moment can
        # at worst damage db-stats.db, which doctor reports and deleting it mends.
        conn.execute("PRAGMA synchronous = OFF")
        # The schema is checked only when the tables are not there or the rows
        # do not fit (an older file): importing it costs more than the write.
        for attempt in (1, 2):
            if attempt == 2 or not _tables_there(conn):
                store.ensure_schema(conn, Database.STATS)
            try:
                with db.transaction(conn):
                    _add(conn, session)
                    prune(conn, session.retention_days, now=now)
                return True
            except sqlite3.OperationalError:
                if attempt == 2:
                    raise
    return False


def _tables_there(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
        " AND name IN ('db_query_stats', 'db_slow_queries')"
    ).fetchone()[0]
    return found == 2


_UPSERT = (
    "INSERT INTO db_query_stats (bucket, pid, db, sql, calls, total_ms, max_ms, rows, errors,"
    " process) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket, pid, db, sql) DO UPDATE"
    " SET calls = calls + excluded.calls, total_ms = total_ms + excluded.total_ms,"
    " max_ms = max(max_ms, excluded.max_ms), rows = rows + excluded.rows,"
    " errors = errors + excluded.errors, process = excluded.process"
)


def _add(conn: sqlite3.Connection, session: Session) -> None:
    pid = os.getpid()
    with session.lock:
        totals = list(session.totals.items())
        slow = list(session.slow)
    conn.executemany(
        _UPSERT,
        [
            (_bucket(minute), pid, db, sql, t.calls, round(t.total_ms, 3), round(t.max_ms, 3),
             t.rows, t.errors, session.process)
            for (minute, db, sql), t in totals
        ],
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO db_slow_queries (at, pid, process, db, sql, duration_ms, rows)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(at, pid, session.process, db, sql, round(ms, 3), rows) for at, db, sql, ms, rows in slow],
    )


def prune(conn: sqlite3.Connection, retention_days: int, *, now: datetime | None = None) -> int:
    """Drop rows older than the retention (in the caller's transaction)."""
    cutoff = (now or clock.now()) - timedelta(days=retention_days)
    gone = conn.execute(
        "DELETE FROM db_query_stats WHERE bucket < ?", (clock.minute(cutoff),)
    ).rowcount
    gone += conn.execute("DELETE FROM db_slow_queries WHERE at < ?", (_iso(cutoff),)).rowcount
    return gone


def _bucket(minute: int) -> str:
    return clock.minute(clock.from_epoch(minute * 60))


def _iso(dt: datetime) -> str:
    return clock.iso(dt)


# --- statements as recorded: placeholders, never values -----------------------------
_TOKENS = (
    r"""(?P<string>[xX]?'(?:[^']|'')*')"""  # a string or blob literal
    r"""|(?P<quoted>"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])"""  # a quoted name: kept
    r"""|(?P<number>(?<![\w$?:@])(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+))"""
    r"""|(?P<space>(?:\s|--[^\n]*|/\*.*?\*/)+)"""  # comments count as white space
)


@lru_cache(maxsize=1)
def _tokens() -> re.Pattern:
    return re.compile(_TOKENS, re.DOTALL)  # on first use: not on every start-up


@lru_cache(maxsize=2048)
def normalized(sql: str) -> str:
    """The statement as recorded: literals become `?`, comments and runs of
    white space one space. A value bound to a placeholder is never in the
    text; a value written into it is taken out here."""

    def one(m: re.Match) -> str:
        kind = m.lastgroup
        if kind in ("string", "number"):
            return "?"
        if kind == "space":
            return " "
        return m.group()

    text = _tokens().sub(one, sql).strip()
    return text if len(text) <= MAX_SQL else text[: MAX_SQL - 1] + "…"
