"""The one way kaja opens a SQLite file (SPEC §3).

- Reading: a `file:` URI with `mode=ro` (built with `Path.as_uri()`, so `#`, `?`
  and spaces work). It never creates the database; if SQLite had to create the
  `-wal`/`-shm` pair to read a cleanly closed WAL file, they are removed again
  the way SQLite itself does it, so a read leaves the folder as it found it.
- Writing: the folder (0700) and file (0600) are created only when asked,
  `journal_mode=WAL`, `busy_timeout`, and `transaction()` = `BEGIN IMMEDIATE`,
  one per user action.
- `holder()` tells whether another process has a file open (a lock on the
  database or on its `-shm`), without taking any lock itself.

Any SQLite error leaving a `with open_read/open_write` block becomes a
`KajaError` with the right exit status.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from kaja_cli.core import fs, profiler
from kaja_cli.errors import Busy, Failed, KajaError, NotADatabase, NotFound

BUSY_TIMEOUT_MS = 5000  # the seed's busy_timeout: how long any connection waits on a lock
SQLITE_HEADER = b"SQLite format 3\x00"

BUSY_HINT = "another process (Kaja or the Telegram bot) is writing; try again, or close it first"


FileKind = Literal["missing", "dir", "empty", "sqlite", "other"]


def classify(path: Path) -> FileKind:
    """What is at a database's path: nothing, a folder, an empty file (SQLite
    reads it as an empty database), a SQLite file, or something else."""
    try:
        if path.is_dir():
            return "dir"
        head = read_head(path, len(SQLITE_HEADER))
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "other"
    if not head:
        return "empty"
    return "sqlite" if head == SQLITE_HEADER else "other"


def read_head(path: Path, size: int) -> bytes:
    """The first `size` bytes of a database file, read without ever closing a
    descriptor to it: closing one would drop every POSIX lock this process
    holds on the file, a live SQLite connection's included (see `_fd`)."""
    return os.pread(_fd(path), size, 0)


def require_database(path: Path, *, writing: bool = False) -> None:
    """Raise unless `path` is a SQLite file (or an empty one SQLite would accept).

    Writing into something else is refused (exit 5: an unsafe path); reading
    it is a failure (exit 1) with a pointer to doctor.
    """
    kind = classify(path)
    if kind == "missing":
        raise NotFound(f"no database at {path}")
    what = "a folder, not a SQLite database" if kind == "dir" else "not a SQLite database"
    if kind in ("dir", "other"):
        if writing:
            raise NotADatabase(f"{path} is {what}")
        raise Failed(f"{path} is {what}", hint=NOT_A_DATABASE_HINT)


NOT_A_DATABASE_HINT = "check --db, KAJA_DB_PATH or [memory] dbPath; `kaja doctor` says more"


def translate(error: sqlite3.Error, path: Path) -> KajaError:
    """A SQLite error as the one line a user should read."""
    text = str(error)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return Busy(f"{path} is busy", hint=BUSY_HINT)
    if "not a database" in low or "file is encrypted" in low:
        return Failed(f"{path} is not a SQLite database", hint=NOT_A_DATABASE_HINT)
    if "malformed" in low or "corrupt" in low:
        return Failed(f"{path} is damaged ({text})", hint="run `kaja doctor`")
    if "readonly" in low or "read-only" in low:
        return Failed(f"{path} is read-only", hint="check its permissions and those of its folder")
    if "disk is full" in low or "disk i/o" in low:
        return Failed(f"cannot write {path}: {text}", hint="free some disk space and try again")
    if "unable to open" in low:
        return Failed(f"cannot open {path}: {text}", hint="check the path and its permissions")
    return Failed(f"{path}: {text}")


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as e:
        raise translate(e, path) from e


def _connect(uri: str, timeout_ms: int) -> sqlite3.Connection:
    # While a command runs, its statements are timed into db-stats.db (core/profiler.py).
    conn = sqlite3.connect(
        uri, uri=True, timeout=timeout_ms / 1000, isolation_level=None, factory=profiler.factory()
    )
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
    return conn


@contextmanager
def open_read(
    path: Path, *, timeout_ms: int = BUSY_TIMEOUT_MS, as_found: bool = False
) -> Iterator[sqlite3.Connection]:
    """A read-only connection; never creates, migrates or modifies anything.

    `as_found` (doctor) leaves every file byte for byte as it was, a stale
    -shm included. A plain read-only open rebuilds a stale -shm (after a
    crash) in place; with both a -wal and a -shm there, `readonly_shm=1`
    reads through a private copy of the WAL index instead, and works the
    same beside a running agent. A -wal or -shm alone with no process holding
    the file is read with `immutable=1`: the main file as it stands.
    """
    require_database(path)
    # SQLite follows a symlinked database and keeps its -wal/-shm beside the
    # target: look for them there.
    real = Path(os.path.realpath(path))
    wal, shm, journal = (real.with_name(real.name + s) for s in ("-wal", "-shm", "-journal"))
    had = wal.exists(), shm.exists()
    uri = path.as_uri() + "?mode=ro"
    tidy = not had[0]  # a read of a closed WAL file leaves a -wal/-shm pair: remove it
    if as_found and all(had):
        uri, tidy = uri + "&readonly_shm=1", False
    elif as_found and any(had) and holder(real) is None:
        uri, tidy = uri + "&immutable=1", False
    elif (
        not any(had)
        and not journal.exists()  # a hot journal must be rolled back, not read past
        and not os.access(real.parent, os.W_OK)
        and holder(real) is None
    ):
        # A folder we cannot write (another user's store, a read-only mount):
        # SQLite cannot create the -shm a WAL read needs and would fail with
        # "attempt to write a readonly database". No -wal and no lock means
        # no writer: the file is complete as it stands, so read it as such.
        uri += "&immutable=1"
    with _translated(path):
        conn = _connect(uri, timeout_ms)
        try:
            yield conn
        finally:
            conn.close()
            if tidy and (wal.exists() or shm.exists()):
                _remove_read_leftovers(real, wal, shm, had)


def _remove_read_leftovers(path: Path, wal: Path, shm: Path, had: tuple[bool, bool]) -> None:
    """Undo the -wal/-shm a read-only open of a closed WAL file created.

    A read-write connection that closes last checkpoints (nothing to do: the
    WAL is empty) and deletes both, under SQLite's own lock, so a process
    that opened the file meanwhile keeps them. When that connection cannot
    write (a read-only file) the files go only if nobody holds them.
    """
    try:
        conn = sqlite3.connect(path.as_uri() + "?mode=rw", uri=True, timeout=0.2)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        pass
    if (wal.exists() or shm.exists()) and holder(path) is None:
        try:
            if wal.exists() and wal.stat().st_size == 0:
                wal.unlink()
            if not had[1] and not wal.exists():
                shm.unlink(missing_ok=True)
        except OSError:
            pass


@contextmanager
def open_write(
    path: Path, *, create: bool = False, timeout_ms: int = BUSY_TIMEOUT_MS
) -> Iterator[sqlite3.Connection]:
    """A read-write connection in WAL mode; creates folder and file only if `create`."""
    kind = classify(path)
    if kind == "missing":
        if not create:
            raise NotFound(f"no database at {path}")
        fs.ensure_private_dir(path.parent)
        fs.create_private_file(path)
    elif kind in ("dir", "other"):
        require_database(path, writing=True)
    with _translated(path):
        conn = _connect(path.as_uri() + "?mode=rw", timeout_ms)
        try:
            # REPLACE deletes the row it replaces without DELETE triggers unless
            # triggers recurse: the search index would keep the old text.
            conn.execute("PRAGMA recursive_triggers = ON")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise Failed(f"{path}: cannot switch to WAL mode (journal_mode is {mode})")
            yield conn
        finally:
            conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One user action: `BEGIN IMMEDIATE` … `COMMIT`, rolled back on any error.

    SQLite errors come out translated (busy → exit 4, disk full → one line),
    whoever holds the connection: the write API keeps its connections open
    across many transactions.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as e:
        raise translate(e, _path_of(conn)) from e
    try:
        yield conn
    except BaseException as e:
        _rollback(conn)
        if isinstance(e, sqlite3.Error):
            raise translate(e, _path_of(conn)) from e
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as e:
        _rollback(conn)
        raise translate(e, _path_of(conn)) from e


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # SQLite rolls back by itself when it cannot (a full disk, an I/O error)


def _path_of(conn: sqlite3.Connection) -> Path:
    try:
        return Path(conn.execute("PRAGMA database_list").fetchone()[2])
    except (sqlite3.Error, TypeError, IndexError):
        return Path("the database")


def fold_journal(path: Path, *, timeout_ms: int = 2000) -> bool:
    """Fold the -wal (or a hot -journal) into `path`, leaving one self-contained file.

    SQLite replays a `-wal` or hot `-journal` into whatever file next bears
    the database's name (a backup copied into place, say), so a journal that
    outlives its database can ruin another. After this, the file is in
    rollback mode with no companion: deleting it leaves nothing to replay,
    and a crash before the delete leaves a whole database (the next writer
    switches it back to WAL). Needs the file to itself: Busy when another
    process has it open. False when SQLite cannot do it (a damaged file, a
    read-only folder); the caller then deletes in the safest order it can.
    """
    try:
        conn = _connect(path.as_uri() + "?mode=rw", timeout_ms)
    except sqlite3.Error:
        return False
    try:
        # A read first: it runs WAL recovery or rolls back a hot journal.
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
    except sqlite3.Error as e:
        error = translate(e, path)
        if isinstance(error, Busy):
            raise error from e
        return False
    finally:
        conn.close()
    if str(mode).lower() != "delete":
        raise Busy(f"{path} is busy", hint=BUSY_HINT)
    return True


# --- is another process using the file? -------------------------------------
# SQLite's unix VFS locks bytes of the database file (PENDING at 0x40000000,
# RESERVED, then the SHARED range) and of the -shm file (the WAL write, read
# and recovery locks from byte 120, and the "dead man switch" at byte 128 that
# every connection holds while it has the WAL open). F_GETLK asks who would
# block a write lock on those bytes without taking one. The descriptors stay
# open for the life of the process: closing a descriptor drops every POSIX lock
# this process holds on the file, including those of its own SQLite
# connections.
_LOCK_RANGES = {"": (0x40000000, 512), "-shm": (120, 9)}
_probe_fds: dict[tuple[int, int], int] = {}


def _fd(path: Path) -> int:
    """A read-only descriptor to `path`, opened once per file and never
    closed: POSIX drops all of a process's locks on a file when any of its
    descriptors to it closes, so probing must never close one."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    fd = _probe_fds.get(key)
    if fd is None:
        fd = _probe_fds[key] = os.open(path, os.O_RDONLY)
    return fd


def holder(path: Path) -> int | None:
    """The pid of another process with `path` open (a lock held), else None."""
    if sys.platform == "win32":  # pragma: no cover - no POSIX locks there
        return None
    import fcntl

    path = Path(os.path.realpath(path))  # a symlinked database: its -shm is beside the target
    for suffix, (start, length) in _LOCK_RANGES.items():
        target = path.with_name(path.name + suffix)
        try:
            fd = _fd(target)
        except OSError:
            continue
        try:
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, _flock(fcntl.F_WRLCK, start, length))
        except OSError:
            continue
        kind, pid = _unflock(answer)
        if kind != fcntl.F_UNLCK:
            return pid or -1
    return None


# struct flock differs: Linux puts type and whence first, the BSDs last.
_FLOCK_BSD = sys.platform == "darwin" or "bsd" in sys.platform


def _flock(kind: int, start: int, length: int) -> bytes:
    if _FLOCK_BSD:
        return struct.pack("qqihh", start, length, 0, kind, os.SEEK_SET)
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def _unflock(data: bytes) -> tuple[int, int]:
    if _FLOCK_BSD:
        _start, _len, pid, kind, _whence = struct.unpack("qqihh", data)
    else:
        kind, _whence, _start, _len, pid = struct.unpack("hhqqi4x", data)
    return kind, pid


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    }


def column_names(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


# --- a glance for shell completion ------------------------------------------------
@contextmanager
def open_glance(path: Path) -> Iterator[sqlite3.Connection | None]:
    """A look at a database that never writes, never creates, never waits: for
    shell completion, which runs on every TAB press, often beside a running
    agent. None when there is nothing to look at (no file, a folder, not a
    regular file); a busy or unreadable file raises sqlite3.Error at once.

    Unlike `open_read`: no lock wait (`busy_timeout` 0), and no -wal/-shm
    pair created and tidied away. A file with its -wal and -shm (the agent is
    running) is read through a private copy of the WAL index
    (`readonly_shm`); one without, that no process holds, `immutable` (no
    locks, no side files); one held with no -shm (an exclusive writer) is busy.
    """
    try:
        st = os.stat(path)
    except OSError:
        yield None
        return
    import stat

    if not stat.S_ISREG(st.st_mode):
        yield None
        return
    real = Path(os.path.realpath(path))
    wal, shm = (real.with_name(real.name + s).exists() for s in ("-wal", "-shm"))
    uri = path.as_uri() + "?mode=ro"
    if wal and shm:
        uri += "&readonly_shm=1"
    elif holder(real) is not None:
        raise sqlite3.OperationalError(f"{path} is held by another process (database is locked)")
    else:
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        yield conn
    finally:
        conn.close()
