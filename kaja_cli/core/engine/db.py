"""The one way kaja opens a SQLite file (SPEC §3).

- Reading: a `file:` URI with `mode=ro` (built with `Path.as_uri()`, so `#`, `?`
  and spaces work). It never creates the database; if SQLite had to create the
  `-wal`/`-shm` pair to read a cleanly closed WAL file, they are removed again
  the way SQLite itself does it, so a read leaves the folder as it found it.
  After a crash it does what any SQLite program's first read does: a hot
  `-journal` is rolled back (`recover_interrupted`: a short write open, only
  in a file that is Kaja's, never under another process), or it says in one
  line what is left and who can finish it (`NeedsRecovery`).
- Writing: the folder (0700) and file (0600) are created only when asked,
  `journal_mode=WAL`, `busy_timeout`, and `transaction()` = `BEGIN IMMEDIATE`,
  one per user action. Only a database the caller's `Expected` admits is
  opened for writing (the store passes the registry's `DatabaseFile`, which
  admits a file that is Kaja's by its tables and columns): another
  program's is refused before anything in it changes, WAL mode included.
- Either way, only regular files: a FIFO or a device at the database's path
  or at its -wal, -shm or -journal is refused before SQLite opens anything
  (it would block on a FIFO forever).
- `holder()` tells whether another process has a file open (a lock on the
  database or on its `-shm`), without taking any lock itself.

Any SQLite error leaving a `with open_read/open_write` block becomes a
`KajaError` with the right exit status.

The opener knows nothing of Kaja: whose a file is (`Expected.admit`, and
`recover` for a read) is the caller's word, passed in; statements are timed
for whoever listens (`timing`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from kaja_cli.core.engine import fs
from kaja_cli.errors import Busy, Failed, KajaError, NotADatabase, NotFound

BUSY_TIMEOUT_MS = 5000  # the seed's busy_timeout: how long any connection waits on a lock
SQLITE_HEADER = b"SQLite format 3\x00"

BUSY_HINT = "another process (Kaja or the Telegram bot) is writing; try again, or close it first"


FileKind = Literal["missing", "dir", "empty", "sqlite", "other", "special"]


def classify(path: Path) -> FileKind:
    """What is at a database's path: nothing, a folder, an empty file (SQLite
    reads it as an empty database), a SQLite file, something else, or
    something that is not a file at all (a FIFO, a device: never opened)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "other"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    try:
        head = read_head(path, len(SQLITE_HEADER))
    except fs.NotRegularFile:
        return "special"
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
    """Raise unless `path` is a SQLite file (or an empty one SQLite would accept)
    and its -wal, -shm and -journal, where there are any, are regular files.

    Writing into something else is refused (exit 5: an unsafe path); reading
    it is a failure (exit 1) with a pointer to doctor.
    """
    _required(path, writing)


def _required(path: Path, writing: bool) -> tuple[Path, list[Path]]:
    """`require_database`; then the file SQLite opens (a symlinked database:
    its target) and its -wal, -shm and -journal (`_journals`)."""
    kind = classify(path)
    if kind == "missing":
        raise NotFound(f"no database at {path}")
    if kind in ("dir", "other", "special"):
        what = {"dir": "a folder", "other": "a file"}.get(kind) or _what(path)
        raise _unusable(f"{path} is {what}, not a SQLite database", writing)
    real = Path(os.path.realpath(path))
    journals = _journals(real)
    for companion in journals:
        what = fs.regular_or_missing(companion)
        if what is not None:
            raise _unusable(
                f"{companion} is {what}, where SQLite keeps one of the database's own files", writing,
                hint="kaja opens only regular files; move it aside",
            )  # fmt: skip
    return real, journals


def _what(path: Path) -> str:
    try:
        return fs.what_is(os.stat(path))
    except OSError:
        return "not a file"


def _unusable(message: str, writing: bool, hint: str | None = None) -> KajaError:
    if writing:
        return NotADatabase(message, hint=hint)
    return Failed(message, hint=hint or NOT_A_DATABASE_HINT)


def _journals(real: Path) -> list[Path]:
    """The -wal, -shm and -journal SQLite keeps beside a database (`real`: its
    real path; a symlinked database's are beside its target, where SQLite
    looks for them)."""
    return [fs.beside(real, s) for s in ("-wal", "-shm", "-journal")]


NOT_A_DATABASE_HINT = "check --db, KAJA_DB_PATH or [memory] dbPath; `kaja doctor` says more"
TOO_NEW_HINT = (
    "open it with a newer SQLite (kaja uses the one Python was built with),"
    " or the program that wrote it"
)


def format_too_new(path: Path) -> str | None:
    """Why this SQLite cannot read the file's format (a newer SQLite wrote
    it), from its header (https://sqlite.org/fileformat.html); else None."""
    try:
        head = read_head(path, 100)
    except OSError:
        return None
    if len(head) < 100 or head[:16] != SQLITE_HEADER:
        return None
    mine = sqlite3.sqlite_version
    if head[19] > 2:
        return f"its file format (read version {head[19]}) is newer than SQLite {mine} reads"
    schema_format = struct.unpack(">I", head[44:48])[0]
    if schema_format > 4:
        return f"its schema format ({schema_format}) is newer than SQLite {mine} reads"
    return None


def translate(error: sqlite3.Error, path: Path) -> KajaError:
    """A SQLite error as the one line a user should read."""
    text = str(error)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return Busy(f"{path} is busy", hint=BUSY_HINT)
    if "not a database" in low or "file is encrypted" in low or "unsupported file format" in low:
        newer = format_too_new(path)
        if newer:
            return Failed(f"{path}: {newer}", hint=TOO_NEW_HINT)
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


class Expected(Protocol):
    """What the caller expects a database it writes to be (the store's
    `DatabaseFile`): `admit` raises, before anything in the file changes,
    when it is not (another program's database: exit 5)."""

    def admit(self, conn: sqlite3.Connection, path: Path) -> object: ...


def _connect(uri: str, timeout_ms: int) -> sqlite3.Connection:
    from kaja_cli.core.engine import timing  # not on a TAB press's path (open_glance)

    # Timed for whoever listens (kaja's query profile: side/profiler.py).
    # `timeout` is SQLite's busy_timeout (sqlite3_busy_timeout): no PRAGMA needed.
    # Usable from a second thread (`engine.ahead`): SQLite's serialized mode
    # (`sqlite3.threadsafety` 3) keeps one statement at a time on it.
    conn = sqlite3.connect(
        uri, uri=True, timeout=timeout_ms / 1000, isolation_level=None,
        factory=timing.factory(), check_same_thread=False,
    )  # fmt: skip
    conn.text_factory = _text
    return conn


def stop_reading(conn: sqlite3.Connection) -> None:
    """Stop and wait for any thread still reading ahead on `conn`
    (`engine.ahead`): before it is closed, or its transaction ended. None can
    be unless that module was loaded."""
    ahead = sys.modules.get("kaja_cli.core.engine.ahead")
    if ahead is not None:
        ahead.stop(conn)


# The read connections `open_read` holds open on a WAL file, by id: the URI
# each was opened with, for `second_reader`; and the second readers opened
# beside each, closed with it.
_opened: dict[int, str] = {}
_seconds: dict[int, list[SecondReader]] = {}


class SecondReader:
    """A second read-only connection to the database a first one reads, at the
    first one's snapshot whenever that can be shown (`join`): a long read split
    between the two runs SQLite on two processors at once (issue 40), where
    SQLite's memory statistics are off (`engine.memstatus`: else each thread
    waits on their one mutex for every string it builds).

    Two connections see the same snapshot when no transaction committed
    between their starts. `PRAGMA data_version` on this connection changes
    exactly when another connection committed since it last looked (a WAL
    reset by a checkpoint counts too: then the two are only not joined). It
    looks once before the first connection's transaction begins (`second_reader`,
    the caller's promise) and again as its own begins (`join`): the same
    number means the first's snapshot, taken in between, is its own.

    Only beside a WAL file (`open_read`): a reader of a rollback-journal file
    would wait behind a writer waiting for the first one's lock, and a file
    opened `immutable=1` is never looked at for changes. It never waits for a
    lock either: anything but a clean join is no join.
    """

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._seen = self._version()
        self._open = True
        self._turn = 0  # which `join` the transaction open now is of

    def _version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def join(self) -> tuple[sqlite3.Connection, int] | None:
        """This connection in a transaction at the first one's snapshot, if it
        began after the last look (the last `join`, or the opening), and the
        turn that `leave` ends; None when something committed since, or the
        connection could not begin (the first then reads alone)."""
        self.leave()
        self._turn += 1
        try:
            self.conn.execute("BEGIN")
            seen = self._version()  # takes this transaction's snapshot
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                self.leave()
            return None
        if seen == self._seen:
            return self.conn, self._turn
        self._seen = seen  # a look before the next transaction the first one begins
        self.leave()
        return None

    def leave(self, turn: int | None = None) -> None:
        """End the transaction `join` began (of that `turn` only: a late reader
        of an earlier session's pages leaves a later one's alone), once no
        thread reads it any longer."""
        if turn is not None and turn != self._turn:
            return
        stop_reading(self.conn)
        if self._open and self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def close(self) -> None:
        """Closed with the first connection (`open_read`), whose pages a caller's
        generator may still hold: `leave` then has nothing to end."""
        stop_reading(self.conn)
        self._open = False
        self.conn.close()


def second_reader(conn: Any) -> SecondReader | None:
    """A `SecondReader` beside `conn` (one `open_read` holds open on a WAL
    file, closed with it), or None: another engine or journal mode, one
    processor, or a second open that failed (the first connection then reads
    alone). Ask before `conn` begins the transaction the second one is to join."""
    uri = _opened.get(id(conn))
    if uri is None or _processors() < 2:
        return None
    try:
        second_conn = _connect(uri, 0)
    except sqlite3.Error:
        return None
    try:
        second = SecondReader(second_conn)
    except sqlite3.Error:
        second_conn.close()
        return None
    _seconds.setdefault(id(conn), []).append(second)
    return second


def _processors() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def usable_here(conn: sqlite3.Connection) -> bool:
    """Whether the calling thread may use `conn`: kaja's own connections may
    be used from any (`_connect`), one opened with sqlite3's default only
    from the thread that opened it (`engine.ahead` asks)."""
    try:
        conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)  # refused in another thread, as every call
    except sqlite3.ProgrammingError:
        return False
    return True


def _text(raw: bytes) -> str:
    """A TEXT value as str, even when another program stored bytes that are
    not UTF-8 (shown with U+FFFD): Python's default would fail the whole query."""
    return raw.decode("utf-8", "replace")


@contextmanager
def open_read(
    path: Path,
    *,
    timeout_ms: int = BUSY_TIMEOUT_MS,
    as_found: bool = False,
    recover: Recognise | None = None,
) -> Iterator[sqlite3.Connection]:
    """A read-only connection; never creates, migrates or modifies anything,
    but for what SQLite itself does on a read after a crash (below).

    `as_found` (doctor) leaves every file byte for byte as it was, a stale
    -shm included. A plain read-only open rebuilds a stale -shm (after a
    crash) in place; with both a -wal and a -shm there, `readonly_shm=1`
    reads through a private copy of the WAL index instead, and works the
    same beside a running agent. A -wal holding no committed change, or a
    -shm alone, with no process holding the file, is read with
    `immutable=1`: the main file is then the whole database.

    An interrupted write (a hot -journal, a -wal the read-only open cannot
    recover) is rolled back the way any SQLite connection would on its first
    read, with a short write open (`recover_interrupted`), when `recover`
    says the file is Kaja's; otherwise, and always `as_found`, it raises
    `NeedsRecovery` saying what is left and how to finish it.
    """
    # SQLite follows a symlinked database and keeps its -wal/-shm beside the
    # target: look for them there.
    real, (wal, shm, journal) = _required(path, writing=False)
    had = wal.exists(), shm.exists()
    uri = path.as_uri() + "?mode=ro"
    tidy = not had[0]  # a read of a closed WAL file leaves a -wal/-shm pair: remove it
    if as_found and any(had):
        uri, tidy = uri + _as_found(path, real, wal, shm), False
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
    rollback = _rollback_mode(real)
    if rollback:
        timeout_ms = min(timeout_ms, ROLLBACK_READ_WAIT_MS)
    with _busy_explained(path, rollback), _translated(path):
        conn = _connect(uri, timeout_ms)
        try:
            conn, uri = _through_interrupted_write(
                conn, path, real, uri, timeout_ms, as_found, recover
            )
            if not rollback and "immutable=1" not in uri:  # `second_reader`
                _opened[id(conn)] = uri
            yield conn
        finally:
            _opened.pop(id(conn), None)
            stop_reading(conn)  # a statement on a closed connection crashes
            for second in _seconds.pop(id(conn), ()):
                second.close()
            conn.close()
            if tidy and (wal.exists() or shm.exists()):
                _remove_read_leftovers(real, wal, shm, had)


# A file not in WAL mode: a writer's lock shuts every reader out until it
# commits, however long that is. A reader waits this long, then says why.
ROLLBACK_READ_WAIT_MS = 1000


def _rollback_mode(path: Path) -> bool:
    """Whether the header says rollback-journal mode (bytes 18-19 are 1, WAL is 2)."""
    try:
        head = read_head(path, 20)
    except OSError:
        return False
    return len(head) == 20 and head[18] == 1 and head[19] == 1


@contextmanager
def _busy_explained(path: Path, rollback: bool) -> Iterator[None]:
    try:
        yield
    except Busy as e:
        if not rollback:
            raise
        pid = holder(path)
        who = f"another process ({pid})" if pid is not None and pid > 0 else "another process"
        raise Busy(
            f"{path} is locked by {who}, and it is not in WAL mode: until that"
            " process commits, nothing can read it",
            hint="try again in a moment; `kaja doctor --fix` (with Kaja closed) switches it"
            " to WAL, where reading never waits",
        ) from e


def _as_found(path: Path, real: Path, wal: Path, shm: Path) -> str:
    """How to read a file with a -wal or -shm beside it without changing a byte.

    Through a private copy of the WAL index (`readonly_shm=1`) while another
    process holds the file or the -shm matches the -wal; the main file alone
    (`immutable=1`) when no committed change waits in the -wal. A -wal whose
    changes only a rebuilt -shm could show (it is gone, or from before the
    -wal was restarted) raises NeedsRecovery: a read-only open would fail
    there, after SQLite's ten seconds of retries.
    """
    if holder(real) is not None:
        return "&readonly_shm=1"
    commits = wal_commits(wal)
    if not commits:
        return "&immutable=1"
    if not shm.exists():
        raise _needs_recovery(path, wal, "its -shm is gone")
    if _shm_salts(shm) != _wal_salts(wal):
        raise _needs_recovery(path, wal, "its -shm is from before the -wal was restarted")
    return "&readonly_shm=1"


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
    path: Path, file: Expected, *, create: bool = False, timeout_ms: int = BUSY_TIMEOUT_MS
) -> Iterator[sqlite3.Connection]:
    """A read-write connection in WAL mode to the database `file` names;
    creates folder and file only if `create`. Refused, with nothing changed,
    when `file` does not admit it (`Expected`)."""
    if classify(path) == "missing":
        if not create:
            raise NotFound(f"no database at {path}")
        fs.ensure_private_dir(path.parent)
        fs.create_private_file(path)
    require_database(path, writing=True)
    with _translated(path):
        conn = _connect(path.as_uri() + "?mode=rw", timeout_ms)
        try:
            file.admit(conn, path)
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


def fold_journal(path: Path, file: Expected, *, timeout_ms: int = 2000) -> bool:
    """Fold the -wal (or a hot -journal) into `path`, leaving one self-contained file.

    SQLite replays a `-wal` or hot `-journal` into whatever file next bears
    the database's name (a backup copied into place, say), so a journal that
    outlives its database can ruin another. After this, the file is in
    rollback mode with no companion: deleting it leaves nothing to replay,
    and a crash before the delete leaves a whole database (the next writer
    switches it back to WAL). Needs the file to itself: Busy when another
    process has it open. False when SQLite cannot do it (a damaged file, a
    read-only folder); the caller then deletes in the safest order it can.
    Refused for a database `file` does not admit: it is not converted.
    """
    require_database(path, writing=True)
    try:
        conn = _connect(path.as_uri() + "?mode=rw", timeout_ms)
    except sqlite3.Error:
        return False
    try:
        # A read first: it runs WAL recovery or rolls back a hot journal.
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        file.admit(conn, path)
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


# --- an interrupted write ------------------------------------------------------------
# A writer killed mid-transaction leaves a hot -journal (rollback mode), or a
# -wal whose index (-shm) must be rebuilt. Any read-write SQLite connection
# repairs either on its first read; a `mode=ro` one cannot, and SQLite says so
# with these extended result codes (https://sqlite.org/rescode.html).
SQLITE_CANTOPEN = 14
SQLITE_PROTOCOL = 15
SQLITE_READONLY_RECOVERY = 264
SQLITE_READONLY_CANTLOCK = 520
SQLITE_READONLY_ROLLBACK = 776
SQLITE_READONLY_CANTINIT = 1288
_WAL_UNREADABLE = {SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_READONLY_RECOVERY,
                   SQLITE_READONLY_CANTLOCK, SQLITE_READONLY_CANTINIT}  # fmt: skip

Recognise = Callable[[Path], bool]  # whether the caller may roll the file back (the store's guard)


class NeedsRecovery(Failed):
    """An interrupted write left `leftover` (a -journal or -wal) that must be
    rolled back before the file reads as it is, and this open may not do it."""

    def __init__(
        self, message: str, *, path: Path, leftover: Path, why: str | None, hint: str | None
    ):
        super().__init__(message, hint=hint)
        self.path = path
        self.leftover = leftover
        self.why = why  # for a -wal: why a read-only open cannot use it


def _needs_recovery(path: Path, leftover: Path, why: str | None = None) -> NeedsRecovery:
    verb = "roll back" if leftover.name.endswith("-journal") else "recover"
    extra = f" ({why})" if why else ""
    return NeedsRecovery(
        f"an interrupted write left {leftover}{extra}; it needs write access to {verb}",
        path=path,
        leftover=leftover,
        why=why,
        hint=f"run any kaja command (or `kaja doctor --fix`) as the owner of {path.name}",
    )


def _through_interrupted_write(
    conn: sqlite3.Connection,
    path: Path,
    real: Path,
    uri: str,
    timeout_ms: int,
    as_found: bool,
    recover: Recognise | None,
) -> tuple[sqlite3.Connection, str]:
    """`conn` if it reads; else, after an interrupted write, a connection that
    does (see `open_read`), or NeedsRecovery; with the URI it was opened by."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn, uri
    except sqlite3.Error as e:
        code = getattr(e, "sqlite_errorcode", None)
        wal = fs.beside(real, "-wal")
        if code == SQLITE_READONLY_ROLLBACK:
            leftover = fs.beside(real, "-journal")
        elif (
            code in _WAL_UNREADABLE
            and wal.exists()
            and os.access(real, os.R_OK)  # else SQLite's own answer (permissions)
            and holder(real) is None
        ):
            leftover = wal
            if not wal_commits(wal) and "immutable=1" not in uri:
                # Nothing committed in it: the main file is the whole database.
                conn.close()
                uri = uri.replace("&readonly_shm=1", "") + "&immutable=1"
                return _connect(uri, timeout_ms), uri
        else:
            raise
    conn.close()
    if as_found or recover is None:
        raise _needs_recovery(path, leftover)
    recover_interrupted(path, leftover, recover, timeout_ms=timeout_ms)
    return _connect(uri, timeout_ms), uri


def recover_interrupted(
    path: Path, leftover: Path, recognise: Recognise, *, timeout_ms: int = BUSY_TIMEOUT_MS
) -> None:
    """Roll back an interrupted write (a hot -journal), or recover a -wal, as
    SQLite does on the first read of a read-write connection.

    Only while no other process holds the file (Busy, exit 4), only for a
    file `recognise` calls Kaja's (Failed otherwise: another
    program's file is left alone), and NeedsRecovery when kaja may not write
    the file or its folder.
    """
    pid = holder(path)
    if pid is not None:
        raise Busy(f"{path} is busy: process {pid} has it open", hint=BUSY_HINT)
    if not recognise(path):
        raise Failed(
            f"an interrupted write left {leftover}, and {path} is not recognisably Kaja's:"
            " kaja leaves it alone",
            hint="open it with the program that wrote it (any SQLite program rolls it back)",
        )
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        raise _needs_recovery(path, leftover)
    with _translated(path):
        conn = _connect(path.as_uri() + "?mode=rw", timeout_ms)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()


def connect_as_found(path: Path) -> sqlite3.Connection:
    """A connection to the main file as it lies, past any -journal or -wal,
    changing nothing: what tells whose a file is before anything is rolled back."""
    return _connect(path.as_uri() + "?mode=ro&immutable=1", 0)


def _wal_salts(wal: Path) -> bytes:
    """The salts of the -wal's header (a new pair each time the log restarts).
    SQLite locks no byte of a -wal: opening and closing one drops no lock."""
    try:
        with open(wal, "rb") as f:
            return f.read(24)[16:24]
    except OSError:
        return b""


def _shm_salts(shm: Path) -> bytes:
    """The salts the -shm's index header last saw in the -wal
    (https://sqlite.org/walformat.html#the_wal_index_file_format). Read
    through the descriptor that is never closed: SQLite locks the -shm."""
    try:
        return os.pread(_fd(shm), 40, 0)[32:40]
    except OSError:
        return b""


def wal_commits(wal: Path) -> int:
    """How many commit frames of the current log a -wal holds (0: none, so the
    main file is the whole database).

    From the WAL format (https://sqlite.org/fileformat.html#walformat):
    frames after the 32-byte header, each a 24-byte header (page number, the
    database size after a commit or 0, the log's two salts) and a page. A
    frame whose salts differ from the header's belongs to an earlier log and
    ends this one. Checksums are not verified: a torn last frame counts,
    which errs towards "there is something to recover".
    """
    try:
        fd = os.open(wal, os.O_RDONLY)
    except OSError:
        return 0
    try:
        head = os.pread(fd, 32, 0)
        if len(head) < 32 or head[:4] not in (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83"):
            return 0
        (page_size,) = struct.unpack(">I", head[8:12])
        salts = head[16:24]
        size = os.fstat(fd).st_size
        commits, offset = 0, 32
        while offset + 24 <= size:
            frame = os.pread(fd, 24, offset)
            if len(frame) < 24 or frame[8:16] != salts:
                break
            commits += struct.unpack(">I", frame[4:8])[0] != 0
            offset += 24 + page_size
        return commits
    finally:
        os.close(fd)


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
        fd = _probe_fds[key] = fs.open_regular(path)  # never a FIFO: it would block
    return fd


def holder(path: Path) -> int | None:
    """The pid of another process with `path` open (a lock held), else None."""
    if sys.platform == "win32":  # pragma: no cover - no POSIX locks there
        return None
    import fcntl

    path = Path(os.path.realpath(path))  # a symlinked database: its -shm is beside the target
    for suffix, (start, length) in _LOCK_RANGES.items():
        target = fs.beside(path, suffix)
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
    wal, shm = (fs.beside(real, s).exists() for s in ("-wal", "-shm"))
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
