"""What the checks share during one run: the `Context`.

Read-only connections (one per database, short busy timeout, opened once and
kept for the run, through `db.open_read(as_found=True)` so nothing changes on
disk), the integrity pragma running in a thread beside the other checks, the
"in use" probe's answers, and one walk of the images folder. Also Ctrl-C:
a flag the runner's signal handler sets, which turns whatever error an
interrupted query raises back into KeyboardInterrupt, never a finding.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kaja_cli.core import clock
from kaja_cli.core.care.doctor.model import Skipped
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db
from kaja_cli.core.store import Store, guard, markers
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.errors import KajaError, SettingsError

# Doctor's own read-only connections: a lock wait never hangs it (SPEC §7).
READ_TIMEOUT_MS = 1000
# Bounded memory whatever the store's size (issue 29): no file mapped into
# the process (a map of the whole file made doctor's RSS the file's size:
# 1.1 GB on the benchmark store) and a small page cache, on every connection
# doctor opens. quick_check reads each page through read() instead: the same
# CPU time, measured on the benchmark store.
SCAN_MMAP_BYTES = 0
SCAN_CACHE_KIB = 2000  # SQLite's own default, said here so no build changes it
# quick_check reads the pages of tables twice (their b-trees, then their rows
# for NOT NULL), those of indexes once; integrity_check also looks up every
# row's index entries: about this many bytes per byte of file on Kaja's
# stores. The progress bar's total; it waits below 100% until the check ends.
INTEGRITY_READ_FACTOR = {"quick_check": 1.7, "integrity_check": 5.8}


def bound_memory(conn: sqlite3.Connection) -> None:
    """No memory map and a small page cache on one of doctor's connections."""
    conn.execute(f"PRAGMA mmap_size = {SCAN_MMAP_BYTES}")
    conn.execute(f"PRAGMA cache_size = -{SCAN_CACHE_KIB}")


class _Background:
    """A check running on its own connection in a thread.

    quick_check reads every page of the file; the other checks use indexes
    and run beside it on the main connection (sqlite3 releases the GIL while
    SQLite works), so doctor takes about as long as quick_check alone.
    """

    def __init__(self, fn: Callable[[_Background], object]):
        self._fn = fn
        self.conn: sqlite3.Connection | None = None  # set by `fn`, for interrupt()
        self.tid: int | None = None  # the thread's id: its bytes read, for progress
        self.start_bytes: int | None = None
        self._value: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        self.tid = threading.get_native_id()
        self.start_bytes = self.bytes_read()
        try:
            self._value = self._fn(self)
        except BaseException as e:  # handed to the caller of result()
            self._error = e

    def interrupt(self) -> None:
        """Stop the statement running (Ctrl-C must not wait for a quick_check)."""
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.interrupt()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def bytes_read(self) -> int | None:
        """What the thread has read since it began (Linux's per-thread counter,
        read() calls included when the kernel's cache answers), or None."""
        if self.tid is None:  # not started yet
            return 0 if os.path.exists("/proc/self/io") else None
        try:
            with open(f"/proc/self/task/{self.tid}/io", "rb") as f:
                for line in f:
                    if line.startswith(b"rchar:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    def result(self) -> object:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class ImageScan:
    """What lies below `files/images/`, walked once per run: how many folders
    and files, and the entries that are a problem. The folders and files
    themselves are walked again, lazily, by whoever needs each one
    (`Context.image_folders`, `Context.image_files`): never all in a list."""

    exists: bool = False
    folders: int = 0  # <safe session id>/ folders
    files: int = 0  # regular files in them
    strays: list[Path] = field(default_factory=list)  # anything not <safe id>/<file>
    loose: list[Path] = field(default_factory=list)  # readable by group or others
    foreign: list[Path] = field(default_factory=list)  # owned by another user


class Context:
    """What the checks share: the paths, read-only connections, scans."""

    def __init__(
        self,
        paths: Paths,
        *,
        settings_error: SettingsError | None = None,
        thorough: bool = False,
        quick: bool = False,
        now: datetime | None = None,
    ):
        self.paths = paths
        self.store = Store(paths)
        self.settings_error = settings_error
        self.thorough = thorough
        self.quick = quick  # --quick: nothing that reads in proportion to the store
        self.skipped: list[Skipped] = []  # what --quick left out, in the report's order
        self.now = now or clock.now()
        self.uid = os.geteuid() if hasattr(os, "geteuid") else None
        self._files = {f.name: f for f in paths.databases()}
        self._stack = ExitStack()
        self._conns: dict[str, sqlite3.Connection | None] = {}
        self._open_errors: dict[str, KajaError] = {}
        self._open_reasons: dict[str, str] = {}  # SQLite's own words
        self._background: dict[str, _Background] = {}
        self._image_scan: ImageScan | None = None
        self._holders: dict[str, int | None] = {}
        self._verdicts: dict[str, guard.Verdict | None] = {}
        # The -wal/-shm/-journal files as they were before doctor opened
        # anything: reading a closed WAL file makes SQLite create a pair for
        # the time of the read, and those are doctor's own, not findings.
        self._companions = {p for f in self.databases() for p in companions(f.path) if p.exists()}

    # -- databases -------------------------------------------------------------
    @property
    def local(self) -> bool:
        """The store's databases are files here (in cloud mode a server holds them)."""
        return self.store.server is None

    def databases(self) -> list[DatabaseFile]:
        """The store's database files, as the store has them (none in cloud mode)."""
        return self.store.local_files()

    def file(self, name: str) -> DatabaseFile:
        """A database file by its name (`Paths.databases()`)."""
        return self._files[Database(name)]

    def db_path(self, name: str) -> Path:
        return self.file(name).path

    def companion(self, path: Path) -> bool:
        """Whether this -wal/-shm/-journal was there before doctor started."""
        return path in self._companions

    def holder(self, name: str) -> int | None:
        if name not in self._holders:
            self._holders[name] = db.holder(self.db_path(name))
        return self._holders[name]

    def conn(self, name: str) -> sqlite3.Connection | None:
        """The read-only connection to a database; None if it cannot be opened."""
        if name in self._conns:
            return self._conns[name]
        path = self.db_path(name)
        conn = None
        if self.file(name) in self.databases() and db.classify(path) in ("sqlite", "empty"):
            try:
                conn = self._stack.enter_context(
                    db.open_read(path, timeout_ms=READ_TIMEOUT_MS, as_found=True)
                )
                conn.set_progress_handler(_let_signals_in, 200_000)
                bound_memory(conn)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except KajaError as e:
                self._open_errors[name] = e
                conn = None
            except sqlite3.Error as e:
                self._open_errors[name] = db.translate(e, path)
                self._open_reasons[name] = str(e)
                conn = None
        self._conns[name] = conn
        return conn

    def verdict(self, name: str) -> guard.Verdict | None:
        """Whose the database is, by its tables and columns (`guard.recognise`);
        None when it cannot be read."""
        if name not in self._verdicts:
            conn, found = self.conn(name), None
            if conn is not None:
                try:
                    found = guard.recognise(conn, self.file(name))
                except sqlite3.Error:
                    found = None
            self._verdicts[name] = found
        return self._verdicts[name]

    def foreign(self, name: str) -> bool:
        """Another program's database where one of Kaja's should be: read, never changed."""
        found = self.verdict(name)
        return found is not None and not found.kajas

    def open_error(self, name: str) -> KajaError | None:
        self.conn(name)
        return self._open_errors.get(name)

    def open_reason(self, name: str) -> str | None:
        self.conn(name)
        return self._open_reasons.get(name)

    def start_integrity(self, name: str) -> None:
        """Start quick_check (integrity_check with --thorough) of `name` in a thread."""
        if name in self._background or self.conn(name) is None:
            return
        path, pragma = self.db_path(name), self.integrity_pragma
        # The main connection is open (above) before the thread's and closed
        # after it: `db.open_read` removes the -wal/-shm it created only when
        # its connection is the last one.
        self._background[name] = _Background(lambda job: _integrity(path, pragma, job))

    @property
    def integrity_pragma(self) -> str:
        return "integrity_check" if self.thorough else "quick_check"

    def integrity_running(self) -> list[tuple[str, _Background]]:
        return [(n, job) for n, job in self._background.items() if not job.done()]

    def integrity_progress(self) -> tuple[int, int] | None:
        """(bytes read, bytes expected) of the integrity checks still running,
        None when nothing runs or the bytes read cannot be known here."""
        running = self.integrity_running()
        if not running:
            return None
        done = total = 0
        for name, job in running:
            read, start = job.bytes_read(), job.start_bytes
            if read is None:
                return None
            if start is None:  # the thread is starting
                read = start = 0
            try:
                size = self.db_path(name).stat().st_size
            except OSError:
                return None
            expected = int(size * INTEGRITY_READ_FACTOR[self.integrity_pragma]) + 1
            done += min(read - start, expected - 1)
            total += expected
        return done, total

    def skip(self, check_id: str, what: str) -> None:
        """Record what --quick left out of a check (`Report.skipped`)."""
        self.skipped.append(Skipped(check_id, what))

    def integrity(self, name: str) -> tuple[list[str], float]:
        self.start_integrity(name)
        return self._background[name].result()  # type: ignore[return-value]

    # -- files -------------------------------------------------------------------
    def images(self) -> ImageScan:
        if self._image_scan is None:
            self._image_scan = _scan_images(self.paths.images_dir, self.uid)
        return self._image_scan

    def image_folders(self) -> Iterator[tuple[str, Path]]:
        """(session id, folder) of each safely named folder, in name order."""
        for entry in _sorted_entries(self.paths.images_dir):
            if entry.is_dir(follow_symlinks=False) and images.safe_name(entry.name):
                yield entry.name, Path(entry.path)

    def image_files(self) -> Iterator[tuple[str, Path]]:
        """(session id, file) of each regular file in those folders, in name order."""
        for sid, folder in self.image_folders():
            for f in _sorted_entries(folder):
                if f.is_file(follow_symlinks=False):
                    yield sid, Path(f.path)

    def interrupt(self) -> None:
        """Stop every running query (safe from a signal handler)."""
        for conn in self._conns.values():
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.interrupt()
        for job in self._background.values():
            job.interrupt()

    def close(self, *, interrupt: bool = False) -> None:
        for job in self._background.values():
            if interrupt:
                job.interrupt()
            with contextlib.suppress(BaseException):
                job.result()
        self._stack.close()


# Ctrl-C during a long query. Python runs a signal handler only between
# bytecodes of the main thread, never inside sqlite3_step: so the handler
# `run` installs sets this flag and interrupts every connection, a progress
# handler gives it the chance to run mid-query, and whatever error the
# interrupted query raises (FTS4 reports it as a damaged index) becomes a
# KeyboardInterrupt again, never a finding.
_INTERRUPTED = threading.Event()


def _let_signals_in() -> int:
    """A progress handler: running Python code lets a pending signal handler run."""
    return 0


def raise_if_interrupted(error: BaseException | None = None) -> None:
    if _INTERRUPTED.is_set() or (error is not None and str(error) == "interrupted"):
        raise KeyboardInterrupt from None


def _integrity(path: Path, pragma: str, job: _Background) -> tuple[list[str], float]:
    """The integrity pragma's rows and how long it took. SQLite's own error when
    it stops before its first row (a damaged page): `check_integrity` says so."""
    markers.checkpoint("integrity")  # a test may hold the check here (the bar is drawn meanwhile)
    start = time.perf_counter()
    rows: list[str] = []
    failure: sqlite3.DatabaseError | None = None
    with db.open_read(path, timeout_ms=READ_TIMEOUT_MS, as_found=True) as conn:
        job.conn = conn
        try:
            bound_memory(conn)
            for row in conn.execute(f"PRAGMA {pragma}(20)"):  # one by one: SQLite may
                rows.extend(str(row[0]).splitlines())  # stop with an error after a few rows
        except sqlite3.DatabaseError as e:
            if rows:
                rows.append(f"{pragma} stopped: {e}")
            else:
                failure = e  # raised once the file is closed, as SQLite said it
    if failure is not None:
        raise failure
    return rows, time.perf_counter() - start


def _sorted_entries(folder: Path | str) -> list[os.DirEntry]:
    """One folder's entries by name ([] when it cannot be read)."""
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _scan_images(root: Path, uid: int | None) -> ImageScan:
    scan = ImageScan()
    try:
        os.scandir(root).close()
    except (FileNotFoundError, NotADirectoryError):
        return scan
    except OSError:
        scan.exists = True
        return scan
    scan.exists = True

    def note(entry: os.DirEntry) -> None:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            return
        if st.st_mode & 0o077:
            scan.loose.append(Path(entry.path))
        if uid is not None and st.st_uid != uid:
            scan.foreign.append(Path(entry.path))

    for entry in _sorted_entries(root):
        note(entry)
        if not entry.is_dir(follow_symlinks=False) or not images.safe_name(entry.name):
            scan.strays.append(Path(entry.path))
            continue
        scan.folders += 1
        for f in _sorted_entries(entry.path):
            note(f)
            if f.is_file(follow_symlinks=False):
                scan.files += 1
            else:
                scan.strays.append(Path(f.path))
    return scan
