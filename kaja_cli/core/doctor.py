"""`kaja doctor`: every check as data (SPEC §7).

A check is a small function registered with `@check(id, group, about)`. It
looks at the files through a `Context` (read-only connections with a short
busy timeout, opened once and shared) and returns `Check` values: an id, a
group, a status (ok, warn, error), a one-line summary, details, and a fix.
A fix is either advice for a person (the command that would do it) or, when
`fixable`, a `Repair` that `--fix` applies.

Nothing here writes anything unless `run(..., fix=True)`, and the repairs are
the safe ones only: missing tables, columns and indexes, the search index,
checkpointing a WAL, switching to WAL mode, tightening permissions. Whatever
would delete user data (an orphaned image folder) is reported with the command
that removes it, never removed.

Adding a check (the lead's wipe marker, say): write a function taking the
`Context` (and a database name, with `per_database=True`) that returns a
`Check`, a list of them or None, and decorate it. The registry's order is the
report's order within each group.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sqlite3
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from kaja_cli.core import clock, db, images, schema, search_index
from kaja_cli.core import settings as settings_mod
from kaja_cli.core.fs import human_size
from kaja_cli.core.paths import LABELS, Overrides, Paths, companions, resolve
from kaja_cli.core.registry import DATABASES, Database, DatabaseFile
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, KajaError, SettingsError, UsageError

OK, WARN, ERROR = "ok", "warn", "error"
GROUPS = (
    "environment",
    "paths",
    "settings",
    "shared file",
    "search index",
    "images",
    "side databases",
    "sync",
)

# Doctor's own read-only connections: a lock wait never hangs it (SPEC §7).
READ_TIMEOUT_MS = 1000
# --fix's writes wait a little longer for a running agent to finish a turn.
FIX_TIMEOUT_MS = 3000

# The seed's legacy per-feature files, imported into the shared file and then
# kept as a rollback copy.
LEGACY_FILES = (
    "usage.db",
    "experience.db",
    "background_tasks.db",
    "schedules.db",
    "triggers.db",
    "artifacts.db",
)

# Thresholds. A WAL this large means checkpoints cannot keep up (a reader
# that never lets go); free pages above both limits are worth a VACUUM.
WAL_WARN_BYTES = 64 * 1024 * 1024
FREE_WARN_BYTES = 32 * 1024 * 1024
FREE_WARN_SHARE = 0.20
DISK_ERROR_BYTES = 50 * 1000 * 1000
DISK_WARN_BYTES = 500 * 1000 * 1000
OUTBOX_WARN_AGE = timedelta(days=7)
OUTBOX_WARN_ROWS = 10_000
SEARCH_SAMPLE = 16  # messages looked up in the index by the default check
MAX_LISTED = 20  # paths or ids listed in details before "… and N more"


# --- the data ------------------------------------------------------------------
@dataclass(frozen=True)
class Repair:
    """A safe repair `--fix` applies. One per `key`; run in `order`."""

    key: str
    order: int  # 0 permissions, 1 schema, 2 search index, 3 checkpoint
    run: Callable[[], str]  # returns what it did; raises on failure
    database: str | None = None  # the database it writes to, if any


@dataclass
class Check:
    """One finding: what was checked, how it went, and what would fix it."""

    id: str
    group: str
    status: str  # ok | warn | error
    summary: str
    details: list[str] = field(default_factory=list)
    fix: str | None = None
    fixable: bool = False  # `--fix` applies `fix`; otherwise it is advice for a person
    repairs: tuple[Repair, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "group": self.group,
            "status": self.status,
            "summary": self.summary,
            "details": list(self.details),
            "fix": self.fix,
            "fixable": self.fixable,
        }


@dataclass
class FixResult:
    """What one repair did (or why it could not)."""

    check: str
    done: bool
    message: str

    def to_dict(self) -> dict:
        return {"check": self.check, "done": self.done, "message": self.message}


@dataclass
class Report:
    versions: dict[str, str | bool]
    checks: list[Check]
    thorough: bool = False
    fixes: list[FixResult] | None = None  # None: --fix was not asked for

    @property
    def errors(self) -> int:
        return sum(c.status == ERROR for c in self.checks)

    @property
    def warnings(self) -> int:
        return sum(c.status == WARN for c in self.checks)

    @property
    def status(self) -> str:
        return ERROR if self.errors else WARN if self.warnings else OK

    def verdict(self) -> str:
        """The report's last line: "no problems" or "N errors, M warnings"."""
        if not self.errors and not self.warnings:
            return "no problems"
        return f"{plural(self.errors, 'error')}, {plural(self.warnings, 'warning')}"

    def grouped(self) -> list[tuple[str, list[Check]]]:
        order = {g: i for i, g in enumerate(GROUPS)}
        groups: dict[str, list[Check]] = {}
        for c in self.checks:
            groups.setdefault(c.group, []).append(c)
        return sorted(groups.items(), key=lambda kv: order.get(kv[0], len(order)))

    def to_dict(self) -> dict:
        out: dict = dict(self.versions)
        out["thorough"] = self.thorough
        out["status"] = self.status
        out["summary"] = {
            "errors": self.errors,
            "warnings": self.warnings,
            "ok": sum(c.status == OK for c in self.checks),
            "text": self.verdict(),
        }
        if self.fixes is not None:
            out["fixes"] = [f.to_dict() for f in self.fixes]
        out["checks"] = [c.to_dict() for _, group in self.grouped() for c in group]
        return out


# --- the registry --------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    id: str
    group: str
    about: str
    run: Callable
    per_database: bool = False
    needs_shared: bool = False  # skipped (silently, in a full run) without a readable shared file


CHECKS: list[Spec] = []


def check(
    id: str, group: str, about: str, *, per_database: bool = False, needs_shared: bool = False
) -> Callable:
    """Register a check function (see the module docstring)."""
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}")

    def register(fn: Callable) -> Callable:
        if any(s.id == id for s in CHECKS):
            raise ValueError(f"check {id!r} registered twice")
        CHECKS.append(Spec(id, group, about, fn, per_database, needs_shared))
        return fn

    return register


def list_checks() -> list[Spec]:
    return list(CHECKS)


DATABASE_NAMES = tuple(Database)


def _selected(spec: Spec, only: tuple[str, ...], db_name: str | None = None) -> bool:
    if not only:
        return True
    for sel in only:
        if sel == spec.id:
            return True
        if sel.startswith(spec.id + "."):
            if db_name is None or sel == f"{spec.id}.{db_name}":
                return True
    return False


def validate_selection(only: Iterable[str]) -> tuple[str, ...]:
    """The `--check` ids as given; UsageError (exit 2) for one that names no check."""
    selection = tuple(s.strip() for s in only if s.strip())
    for sel in selection:
        spec = _spec_of(sel)
        if spec is None:
            known = ", ".join(s.id for s in CHECKS)
            raise UsageError(
                f"--check: no check {sel!r}", hint=f"one of {known} (see --list-checks)"
            )
        suffix = sel[len(spec.id) + 1 :]
        if spec.per_database and suffix and suffix not in DATABASE_NAMES:
            raise UsageError(
                f"--check: no database {suffix!r} for {spec.id}",
                hint=f"one of {', '.join(DATABASE_NAMES)}",
            )
    return selection


def _spec_of(selector: str) -> Spec | None:
    return next((s for s in CHECKS if selector == s.id or selector.startswith(s.id + ".")), None)


def _require_results(selection: tuple[str, ...], checks: list[Check]) -> None:
    """A selector naming one result of a check (`paths.shared_db`) must match
    one: a typo must not run nothing and report "no problems"."""
    for sel in selection:
        spec = _spec_of(sel)
        if spec is not None and sel != spec.id and not any(_matches(c.id, sel) for c in checks):
            found = sorted({c.id for c in checks if _matches(c.id, spec.id)})
            raise UsageError(
                f"--check: {spec.id} has no result {sel!r}",
                hint=f"its results: {', '.join(found)}" if found else None,
            )


class _Background:
    """A check running on its own connection in a thread.

    quick_check reads every page of the file; the other checks use indexes
    and run beside it on the main connection (sqlite3 releases the GIL while
    SQLite works), so doctor takes about as long as quick_check alone.
    """

    def __init__(self, fn: Callable[[_Background], object]):
        self._fn = fn
        self.conn: sqlite3.Connection | None = None  # set by `fn`, for interrupt()
        self._value: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._value = self._fn(self)
        except BaseException as e:  # handed to the caller of result()
            self._error = e

    def interrupt(self) -> None:
        """Stop the statement running (Ctrl-C must not wait for a quick_check)."""
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.interrupt()

    def result(self) -> object:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class ImageScan:
    """What lies below `files/images/`, walked once per run."""

    exists: bool = False
    folders: dict[str, Path] = field(default_factory=dict)  # session id → folder
    files: list[tuple[str, Path]] = field(default_factory=list)  # (session id, file)
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
        now: datetime | None = None,
    ):
        self.paths = paths
        self.settings_error = settings_error
        self.thorough = thorough
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
        # The -wal/-shm/-journal files as they were before doctor opened
        # anything: reading a closed WAL file makes SQLite create a pair for
        # the time of the read, and those are doctor's own, not findings.
        self._companions = {p for f in self.databases() for p in companions(f.path) if p.exists()}

    # -- databases -------------------------------------------------------------
    @property
    def local(self) -> bool:
        return self.paths.mode != "cloud"

    def databases(self) -> list[DatabaseFile]:
        return self.paths.databases() if self.local else []

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
        if self.local and db.classify(path) in ("sqlite", "empty"):
            try:
                conn = self._stack.enter_context(
                    db.open_read(path, timeout_ms=READ_TIMEOUT_MS, as_found=True)
                )
                conn.set_progress_handler(_let_signals_in, 200_000)
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

    def integrity(self, name: str) -> tuple[list[str], float]:
        self.start_integrity(name)
        return self._background[name].result()  # type: ignore[return-value]

    # -- files -------------------------------------------------------------------
    def images(self) -> ImageScan:
        if self._image_scan is None:
            self._image_scan = _scan_images(self.paths.images_dir, self.uid)
        return self._image_scan

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


def _raise_if_interrupted(error: BaseException | None = None) -> None:
    if _INTERRUPTED.is_set() or (error is not None and str(error) == "interrupted"):
        raise KeyboardInterrupt from None


def _integrity(path: Path, pragma: str, job: _Background) -> tuple[list[str], float]:
    """The integrity pragma's rows and how long it took. SQLite's own error when
    it stops before its first row (a damaged page): `check_integrity` says so."""
    start = time.perf_counter()
    rows: list[str] = []
    failure: sqlite3.DatabaseError | None = None
    with db.open_read(path, timeout_ms=READ_TIMEOUT_MS, as_found=True) as conn:
        job.conn = conn
        try:
            # Reading the file through a memory map is ~15% faster than read()
            # calls; the read transaction keeps the mapped size valid.
            conn.execute("PRAGMA mmap_size = 2147418112")
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


def _scan_images(root: Path, uid: int | None) -> ImageScan:
    scan = ImageScan()
    try:
        top = list(os.scandir(root))
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

    for entry in sorted(top, key=lambda e: e.name):
        note(entry)
        if not entry.is_dir(follow_symlinks=False) or not images.safe_name(entry.name):
            scan.strays.append(Path(entry.path))
            continue
        scan.folders[entry.name] = Path(entry.path)
        try:
            inner = sorted(os.scandir(entry.path), key=lambda e: e.name)
        except OSError:
            continue
        for f in inner:
            note(f)
            if f.is_file(follow_symlinks=False):
                scan.files.append((entry.name, Path(f.path)))
            else:
                scan.strays.append(Path(f.path))
    return scan


# --- running ---------------------------------------------------------------------
def locate(
    overrides: Overrides | None = None, environ: dict[str, str] | None = None
) -> tuple[Paths, SettingsError | None]:
    """Resolve the paths, going on with the defaults when settings.toml is bad."""
    failure: list[SettingsError] = []

    def load(path: Path) -> settings_mod.Settings:
        try:
            return settings_mod.load(path)
        except SettingsError as e:
            failure.append(e)
            return settings_mod.Settings(path=path, exists=path.exists())

    paths = resolve(overrides, environ, load_settings=load)
    return paths, (failure[0] if failure else None)


def run(
    overrides: Overrides | None = None,
    *,
    only: Iterable[str] = (),
    thorough: bool = False,
    fix: bool = False,
    environ: dict[str, str] | None = None,
    now: datetime | None = None,
) -> Report:
    """Run the checks (all, or those `only` names); with `fix`, repair, then check again."""
    selection = validate_selection(only)
    checks = _run_checks(overrides, selection, thorough, environ, now)
    _require_results(selection, checks)
    fixes = None
    if fix:
        fixes = apply_repairs(checks)
        if fixes:
            checks = _run_checks(overrides, selection, thorough, environ, now)
    return Report(versions=dict(versions()), checks=checks, thorough=thorough, fixes=fixes)


def _run_checks(
    overrides: Overrides | None,
    selection: tuple[str, ...],
    thorough: bool,
    environ: dict[str, str] | None,
    now: datetime | None,
) -> list[Check]:
    paths, settings_error = locate(overrides, environ)
    ctx = Context(paths, settings_error=settings_error, thorough=thorough, now=now)
    _INTERRUPTED.clear()
    previous = _on_ctrl_c(ctx)
    try:
        tasks = _plan(ctx, selection)
        # The whole-file reads (quick_check) start first, in a thread; every
        # other check runs beside them, and their results are collected last.
        for spec, name, _ in tasks:
            if spec.id == "integrity" and name is not None:
                ctx.start_integrity(name)
        results: list[list[Check]] = [[] for _ in tasks]
        order = sorted(range(len(tasks)), key=lambda i: tasks[i][0].id == "integrity")
        for i in order:
            results[i] = tasks[i][2]()
            _raise_if_interrupted()
        checks = _hold_back_writes_to_damaged(ctx, [c for r in results for c in r])
    except BaseException:
        ctx.close(interrupt=True)
        raise
    finally:
        _restore_ctrl_c(previous)
    ctx.close()
    return checks


def _on_ctrl_c(ctx: Context) -> object:
    import signal

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: object) -> None:
        _INTERRUPTED.set()
        ctx.interrupt()

    return signal.signal(signal.SIGINT, handler)


def _restore_ctrl_c(previous: object) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGINT, previous)  # type: ignore[arg-type]


def _plan(
    ctx: Context, selection: tuple[str, ...]
) -> list[tuple[Spec, str | None, Callable[[], list[Check]]]]:
    """What to run, in the report's order: (spec, database or None, run)."""
    tasks: list[tuple[Spec, str | None, Callable[[], list[Check]]]] = []
    db_specs = [s for s in CHECKS if s.per_database]
    db_done = False
    for spec in CHECKS:
        if spec.per_database:
            if not db_done:
                db_done = True
                tasks.extend(_plan_databases(ctx, db_specs, selection))
            continue
        if not _selected(spec, selection):
            continue
        tasks.append((spec, None, lambda spec=spec: _run_single(ctx, spec, selection)))
    return tasks


def _run_single(ctx: Context, spec: Spec, selection: tuple[str, ...]) -> list[Check]:
    if spec.needs_shared and ctx.conn("shared") is None:
        return [_not_checked(ctx, spec)] if selection else []
    found = _checks_of(spec.run(ctx))
    if selection:  # `--check orphans.messages`: the one result asked for
        found = [
            c for c in found if any(_matches(c.id, sel) or sel == spec.id for sel in selection)
        ]
    return found


def _plan_databases(ctx: Context, specs: list[Spec], selection: tuple[str, ...]):
    first = specs[0]  # `database`: whether the file exists and opens; the others need it
    for name in (f.name for f in ctx.databases()):
        wanted = [s for s in specs if _selected(s, selection, name)]
        if not wanted:
            continue
        if first not in wanted:
            # Not asked for, but it says why the asked-for checks cannot run.
            def why(name: str = name) -> list[Check]:
                found = _checks_of(first.run(ctx, name))
                return found if ctx.conn(name) is None else []

            yield first, name, why
        for spec in wanted:

            def one(spec: Spec = spec, name: str = name) -> list[Check]:
                if spec is not first and ctx.conn(name) is None:
                    return []
                return _checks_of(spec.run(ctx, name))

            yield spec, name, one


def _hold_back_writes_to_damaged(ctx: Context, checks: list[Check]) -> list[Check]:
    """No repair writes to a file found damaged: writing could make it worse.

    The findings stay; their fix becomes "recover the file first".
    """
    damaged = {
        c.id.split(".", 1)[1]
        for c in checks
        if c.status == ERROR and c.id.split(".", 1)[0] in ("database", "integrity") and "." in c.id
    }
    if not damaged:
        return checks
    out = []
    for c in checks:
        held = [r for r in c.repairs if r.database in damaged]
        if held:
            name = ctx.db_path(held[0].database or "shared").name
            rest = tuple(r for r in c.repairs if r.database not in damaged)
            c = replace(c, repairs=rest, fixable=bool(rest),
                        fix=f"recover {name} first (see its integrity check); then run kaja doctor --fix again")  # fmt: skip
        out.append(c)
    return out


def _checks_of(value: Check | Iterable[Check] | None) -> list[Check]:
    if value is None:
        return []
    if isinstance(value, Check):
        return [value]
    return list(value)


def _matches(check_id: str, selector: str) -> bool:
    return check_id == selector or check_id.startswith(selector + ".")


def _not_checked(ctx: Context, spec: Spec) -> Check:
    path = ctx.db_path("shared") if ctx.local else None
    reason = (
        "cloud mode keeps no local database" if path is None else f"no readable store at {path}"
    )
    return Check(spec.id, spec.group, OK, f"not checked: {reason}")


def apply_repairs(checks: list[Check]) -> list[FixResult]:
    """Run every distinct repair the checks attached, cheapest first."""
    seen: dict[str, tuple[Repair, str]] = {}
    for c in checks:
        for r in c.repairs:
            seen.setdefault(r.key, (r, c.id))
    results = []
    for repair, check_id in sorted(seen.values(), key=lambda rc: rc[0].order):
        try:
            message = repair.run()
            results.append(FixResult(check_id, True, message))
        except KajaError as e:
            results.append(FixResult(check_id, False, str(e)))
        except sqlite3.Error as e:
            results.append(FixResult(check_id, False, f"{repair.key}: {e}"))
        except OSError as e:
            results.append(FixResult(check_id, False, f"{e.filename or repair.key}: {e.strerror}"))
    return results


# --- versions ----------------------------------------------------------------------
def fts4_available() -> bool:
    """FTS4 with the unicode61 tokenizer kaja's index uses is compiled into SQLite."""
    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(
                'CREATE VIRTUAL TABLE t USING fts4(content, tokenize=unicode61 "remove_diacritics=2")'
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True


@functools.cache
def versions() -> dict[str, str | bool]:
    from kaja_cli import __version__

    v = sys.version_info
    return {
        "kaja": __version__,
        "python": f"{v.major}.{v.minor}.{v.micro}",
        "sqlite": sqlite3.sqlite_version,
        "fts4": fts4_available(),
        "platform": platform_name(),
    }


def platform_name() -> str:
    """platform.platform()'s answer, without its ~15 ms import and probing on POSIX."""
    if not hasattr(os, "uname") or not hasattr(os, "confstr"):
        import platform

        return platform.platform()
    u = os.uname()  # never the node name: that is the host name
    name = f"{u.sysname}-{u.release}-{u.machine}"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        libc = None
    return f"{name}-with-{libc.replace(' ', '')}" if libc else name


# --- small helpers ---------------------------------------------------------------------
def _quote(path: Path | str) -> str:
    import shlex

    return shlex.quote(str(path))


def _listed(items: list, fmt: Callable[[object], str] = str) -> list[str]:
    lines = [fmt(i) for i in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        lines.append(f"… and {len(items) - MAX_LISTED} more")
    return lines


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _owner_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def _in_use(pid: int) -> str:
    name = _process_name(pid) if pid > 0 else None
    who = f"process {pid}" + (f" ({name})" if name else "") if pid > 0 else "another process"
    return f"in use by {who}: Kaja is running"


def _tighten(path: Path) -> str | None:
    """chmod go-rwx, nothing else (never adds a bit); None if the file has gone.

    Through a symlink the target's mode is read and changed (a link's own
    mode is always 0777 and means nothing).
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    os.chmod(path, mode & ~0o077)
    return f"{path}: {mode:04o} → {mode & ~0o077:04o}"


def _tighten_all(paths: list[Path]) -> Callable[[], str]:
    def run() -> str:
        done = [d for d in map(_tighten, paths) if d is not None]
        if not done:
            return "the files to tighten are gone"
        if len(done) == 1:
            return f"tightened permissions of {done[0]}"
        return f"tightened permissions of {len(done)} files and folders"

    return run


def _db_group(name: str) -> str:
    return "side databases" if DATABASES[Database(name)].side else "shared file"


def _safe(fn: Callable[[], Check | list[Check] | None], id: str, group: str, what: str):
    """Run a query-backed check; a damaged or busy file becomes a finding, not a crash."""
    try:
        return fn()
    except sqlite3.Error as e:
        _raise_if_interrupted(e)
        text = str(e)
        low = text.lower()
        if "locked" in low or "busy" in low:
            return Check(id, group, WARN, f"{what}: not checked, the file is busy ({text})")
        return Check(id, group, ERROR, f"{what}: could not be read: {text}")


# --- environment ---------------------------------------------------------------------------
@check("versions", "environment", "kaja, Python, SQLite and platform versions; FTS4 compiled in")
def check_versions(ctx: Context) -> Check:
    v = versions()
    summary = f"kaja {v['kaja']}, Python {v['python']}, SQLite {v['sqlite']}"
    details = [f"platform: {v['platform']}"]
    if not v["fts4"]:
        return Check(
            "versions",
            "environment",
            ERROR,
            summary + ": FTS4 is not compiled in",
            [*details, "kaja's search index needs SQLite with FTS4 and the unicode61 tokenizer"],
            fix="use a Python whose sqlite3 module has FTS4 (python.org and distribution builds do)",
        )
    return Check("versions", "environment", OK, summary + " with FTS4", details)


@check("disk-space", "environment", "free space where the files live")
def check_disk_space(ctx: Context) -> list[Check]:
    import shutil

    targets: dict[int, Path] = {}
    for folder in (ctx.paths.shared_db.path.parent, ctx.paths.state_dir.path):
        existing = _existing_ancestor(folder)
        try:
            targets.setdefault(existing.stat().st_dev, existing)
        except OSError:
            continue
    total_db = 0
    for f in ctx.databases():
        with contextlib.suppress(OSError):
            total_db += f.path.stat().st_size if f.path.is_file() else 0
    out = []
    for i, folder in enumerate(targets.values()):
        cid = "disk-space" if i == 0 else f"disk-space.{i + 1}"
        try:
            usage = shutil.disk_usage(folder)
        except OSError as e:
            out.append(
                Check(cid, "environment", WARN, f"free space on {folder}: unknown ({e.strerror})")
            )
            continue
        free = usage.free
        summary = f"{human_size(free)} free on the disk holding {folder}"
        details = [f"{human_size(usage.total)} in all, {free * 100 // max(usage.total, 1)}% free"]
        if free < DISK_ERROR_BYTES:
            out.append(Check(cid, "environment", ERROR, summary + ": Kaja cannot save", details,
                             fix="free some disk space"))  # fmt: skip
        elif free < DISK_WARN_BYTES or free < total_db:
            details.append(
                f"the databases take {human_size(total_db)}; a VACUUM needs as much again"
            )
            out.append(Check(cid, "environment", WARN, summary + ": running low", details,
                             fix="free some disk space"))  # fmt: skip
        else:
            out.append(Check(cid, "environment", OK, summary, details))
    return out


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


# --- paths -----------------------------------------------------------------------------------
_DATABASE_LOCATIONS = {spec.location for spec in DATABASES.values()}


def _exposure(mode: int) -> str | None:
    who = [w for w, bits in (("group", 0o070), ("others", 0o007)) if mode & bits]
    if not who:
        return None
    verb = "writable" if mode & 0o022 else "readable" if mode & 0o044 else "open"
    return f"{verb} by {' and '.join(who)}"


@check(
    "paths",
    "paths",
    "each location `kaja config paths` shows: its source, existence, owner and permissions",
)
def check_paths(ctx: Context) -> list[Check]:
    return [
        _path_check(ctx, name, loc.path, loc.source, kind)
        for name, loc, kind in ctx.paths.locations()
    ]


def _path_check(ctx: Context, name: str, path: Path, source: str, kind: str) -> Check:
    cid, label = f"paths.{name}", LABELS.get(name, name)
    head = f"{label}: {path} ({source})"
    try:
        st = path.stat()
    except FileNotFoundError:
        if name == "state_dir":
            return Check(cid, "paths", WARN, f"{head}: does not exist yet",
                         ["a fresh machine: Kaja creates it (0700) on its first start"])  # fmt: skip
        if name == "settings":
            return Check(cid, "paths", OK, f"{head}: not present, the defaults apply")
        return Check(cid, "paths", OK, f"{head}: not created yet")
    except OSError as e:
        return Check(cid, "paths", WARN, f"{head}: cannot be read ({e.strerror})",
                     fix="check the permissions of the folders above it")  # fmt: skip
    is_dir = stat.S_ISDIR(st.st_mode)
    mode = stat.S_IMODE(st.st_mode)
    what = "folder" if is_dir else human_size(st.st_size)
    if kind == "dir" and not is_dir:
        return Check(cid, "paths", ERROR, f"{head}: a file, where a folder should be",
                     fix=f"move it aside: mv -- {_quote(path)} {_quote(str(path) + '.bak')}")  # fmt: skip
    details = [f"mode {mode:04o}, owner {_owner_name(st.st_uid)}"]
    if path.is_symlink():
        details.append(f"a symlink to {path.resolve()}")
    problems: list[str] = []
    manual: list[str] = []
    loose: list[Path] = []
    exposure = _exposure(mode)
    if exposure:
        problems.append(f"mode {mode:04o}: {exposure}")
        loose.append(path)
    if ctx.uid is not None and st.st_uid != ctx.uid:
        problems.append(f"owned by {_owner_name(st.st_uid)}, not by you ({_owner_name(ctx.uid)})")
        manual.append(f"sudo chown -R {_owner_name(ctx.uid)} {_quote(path)}")
    if name in _DATABASE_LOCATIONS and not is_dir:
        if not mode & 0o200:
            problems.append("not writable by its owner: Kaja cannot save to it")
            manual.append(f"chmod u+w {_quote(path)}")
        elif not os.access(path, os.W_OK):  # never false for root, whatever the mode
            problems.append("not writable by you: Kaja running as you cannot save to it")
        for extra in filter(ctx.companion, companions(path)):
            with contextlib.suppress(OSError):
                m = stat.S_IMODE(extra.stat().st_mode)
                if _exposure(m):
                    details.append(f"{extra.name}: mode {m:04o}, {_exposure(m)}")
                    loose.append(extra)
                    if not problems:
                        problems.append(f"{extra.name} is {_exposure(m)}")
    if name == "state_dir" and is_dir and not mode & 0o200:
        problems.append("not writable by its owner: Kaja cannot create files in it")
        manual.append(f"chmod u+w {_quote(path)}")
    if name == "images":
        scan = ctx.images()
        files_dir = ctx.paths.files_dir
        with contextlib.suppress(OSError):
            m = stat.S_IMODE(files_dir.stat().st_mode)
            if _exposure(m):
                loose.append(files_dir)
                details.append(f"{files_dir}: mode {m:04o}, {_exposure(m)}")
        if scan.loose:
            loose.extend(scan.loose)
            problems.append(f"{len(scan.loose)} files and folders below are readable by others")
            details.extend(_listed(scan.loose, lambda p: f"open: {p}"))
        if scan.foreign:
            problems.append(f"{len(scan.foreign)} files and folders below belong to another user")
            manual.append(f"sudo chown -R {_owner_name(ctx.uid or 0)} {_quote(path)}")
        if not problems and loose:
            problems.append(f"{len(loose)} folders are readable by others")
    mine = [p for p in loose if _owned(p, ctx.uid)]
    if not problems:
        return Check(cid, "paths", OK, f"{head}: {what}, mode {mode:04o}", details)
    fixes = []
    if len(mine) > 3:
        fixes.append(f"chmod -R go-rwx {_quote(path)}")
    elif mine:
        fixes.append("chmod go-rwx " + " ".join(_quote(p) for p in mine))
    if manual:
        fixes.append(("and by hand: " if mine else "") + "; ".join(dict.fromkeys(manual)))
    return Check(
        cid, "paths", WARN, f"{head}: {problems[0]}", details + problems[1:],
        fix="; ".join(fixes) or None, fixable=bool(mine),
        repairs=(Repair(f"chmod:{path}", 0, _tighten_all(mine)),) if mine else (),
    )  # fmt: skip


def _owned(path: Path, uid: int | None) -> bool:
    try:
        return uid is None or path.lstat().st_uid == uid
    except OSError:
        return False


@check(
    "legacy-files",
    "paths",
    "legacy per-feature files (usage.db, experience.db, …) in the state dir",
)
def check_legacy_files(ctx: Context) -> list[Check]:
    state = ctx.paths.state_dir.path
    configured = {f.path for f in ctx.paths.databases()}
    found = [
        state / n for n in LEGACY_FILES if (state / n).is_file() and state / n not in configured
    ]
    if not found:
        return [Check("legacy-files", "paths", OK, "no legacy per-feature files in the state dir")]
    imported: dict[str, str] = {}
    conn = ctx.conn("shared") if ctx.local else None
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            for source, at in conn.execute("SELECT source, migrated_at FROM kaja_migrations"):
                imported[str(source)] = str(at or "")
                imported.setdefault(Path(str(source)).name, str(at or ""))
    out = []
    for p in found:
        cid = f"legacy-files.{p.stem}"
        when = imported.get(str(p), imported.get(p.name))
        size = human_size(p.stat().st_size)
        if when is not None:
            out.append(Check(
                cid, "paths", OK, f"{p.name} ({size}): imported {when[:10] or 'earlier'}, kept as a rollback copy",
                [f"{p}", "delete it once you no longer need to roll back"], fix=f"rm -- {_quote(p)}",
            ))  # fmt: skip
        else:
            out.append(Check(
                cid, "paths", WARN, f"{p.name} ({size}): a legacy per-feature file, not imported",
                [f"{p}", f"its rows are not in {ctx.paths.shared_db.path.name}: the agent imports "
                 "it at its next start (and keeps the file as a rollback copy)"],
                fix="start Kaja once (it imports legacy files at start-up)",
            ))  # fmt: skip
    return out


@check(
    "interrupted-wipe",
    "paths",
    "what an interrupted `kaja wipe` (or `wipe --owner`) left to finish",
)
def check_interrupted_wipe(ctx: Context) -> Check:
    from kaja_cli.core import wipe

    left = wipe.interrupted(ctx.paths)
    if left is None:
        return Check("interrupted-wipe", "paths", OK, "no unfinished wipe")
    # A -wal whose database is gone would be replayed into the next database
    # created at that name: that one is an error, the rest is unfinished work.
    orphan_wal = any(
        p.name.endswith("-wal") and not p.with_name(p.name.removesuffix("-wal")).exists()
        for p in left.remaining
    )
    return Check(
        "interrupted-wipe", "paths", ERROR if orphan_wal else WARN, left.summary,
        [*left.details, *(f"left: {p}" for p in left.remaining)],
        fix=" and ".join(f"`{c}`" for c in left.commands),
    )  # fmt: skip


# --- settings ---------------------------------------------------------------------------------
@check(
    "settings",
    "settings",
    "settings.toml parses (line and column of an error) and has no unknown keys",
)
def check_settings(ctx: Context) -> list[Check]:
    path = ctx.paths.settings_file.path
    err = ctx.settings_error
    if err is not None:
        return [Check(
            "settings", "settings", ERROR, err.message,
            ["until it is fixed, Kaja cannot start; the checks below use the default locations"],
            fix=err.hint or f"fix it, or move it aside: mv -- {_quote(path)} {_quote(str(path) + '.bak')}",
        )]  # fmt: skip
    settings = ctx.paths.settings
    if not settings.exists:
        return [Check("settings", "settings", OK, f"no {path.name}: the defaults apply")]
    out = [Check("settings", "settings", OK, f"{path.name} parses")]
    if settings.mode == "cloud":
        out[0].summary += ' (mode = "cloud": no local database, the database checks are skipped)'
    unknown = settings.unknown_keys()
    if unknown:
        known = ", ".join(
            f"[{t}] {k}" for t, keys in settings_mod.KNOWN_KEYS.items() for k in sorted(keys)
        )
        out.append(Check(
            "settings.keys", "settings", WARN, f"unknown keys in settings.toml: {', '.join(unknown)}",
            [f"kaja knows {known}", "a misspelt key is silently ignored"],
            fix="remove them, or correct their spelling",
        ))  # fmt: skip
    else:
        out.append(Check("settings.keys", "settings", OK, "no unknown keys in settings.toml"))
    return out


# --- each database ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Header:
    """The 100-byte SQLite header (https://sqlite.org/fileformat.html)."""

    page_size: int
    wal: bool
    page_count: int | None  # None when the header's count is not valid
    freelist: int
    version: str

    @classmethod
    def read(cls, path: Path) -> Header | None:
        try:
            raw = db.read_head(path, 100)  # never open-and-close a database file
        except OSError:
            return None
        if len(raw) < 100 or raw[:16] != db.SQLITE_HEADER:
            return None
        (page_size,) = struct.unpack(">H", raw[16:18])
        page_size = 65536 if page_size == 1 else page_size
        change, pages = struct.unpack(">II", raw[24:32])
        (freelist,) = struct.unpack(">I", raw[36:40])
        valid_for, number = struct.unpack(">II", raw[92:100])
        version = f"{number // 1000000}.{number // 1000 % 1000}.{number % 1000}"
        return cls(
            page_size=page_size,
            wal=raw[18] == 2 and raw[19] == 2,
            page_count=pages if pages and valid_for == change else None,
            freelist=freelist,
            version=version,
        )


@check(
    "database", "shared file",
    "each database exists, is SQLite (not a folder, another file, empty or truncated), opens read-only, is in WAL mode",
    per_database=True,
)  # fmt: skip
def check_database(ctx: Context, name: str) -> Check:
    path = ctx.db_path(name)
    cid, group, label = f"database.{name}", _db_group(name), path.name
    kind = db.classify(path)
    where = f"the path comes from: {ctx.file(name).source}"
    if kind == "other" and path.is_file() and not os.access(path, os.R_OK):
        return Check(cid, group, ERROR, f"{path} cannot be read: permission denied", [where],
                     fix=f"check its owner and mode: ls -l {_quote(path)}")  # fmt: skip
    if kind == "missing":
        if name == "shared":
            return Check(cid, group, WARN, f"no Kaja store at {path} yet",
                         ["a fresh machine: Kaja creates it on its first start", where],
                         fix="start Kaja (or `kaja demo` for a sample store), or point --db at the store")  # fmt: skip
        return Check(cid, group, OK, f"{label}: not created yet", [where])
    if kind in ("dir", "symlink-dir"):
        return Check(cid, group, ERROR, f"{path} is a folder, not a SQLite database", [where],
                     fix=_not_a_database_fix(ctx.file(name)))  # fmt: skip
    size = path.stat().st_size
    if kind == "other":
        return Check(cid, group, ERROR, f"{path} is not a SQLite database ({human_size(size)}, no SQLite header)",
                     [where, "kaja never writes to it"],
                     fix=_not_a_database_fix(ctx.file(name)))  # fmt: skip
    if kind == "empty":
        return Check(cid, group, WARN, f"{label}: an empty file (0 bytes)",
                     [str(path), "SQLite reads it as an empty database; Kaja creates the tables on its next start"],
                     fix="create the tables", fixable=True, repairs=(_schema_repair(ctx, name),))  # fmt: skip
    header = Header.read(path)
    details = [str(path), where]
    if header is None:
        return Check(cid, group, ERROR, f"{label}: the SQLite header is cut short ({size} bytes)", details,
                     fix="restore the file from a backup")  # fmt: skip
    details.append(f"page size {header.page_size}, last written by SQLite {header.version}")
    if header.page_count is not None and ctx.holder(name) is None:
        expected = header.page_count * header.page_size
        if size < expected:
            return Check(cid, group, ERROR,
                         f"{label} is truncated: its header counts {header.page_count} pages "
                         f"({human_size(expected)}), the file holds {human_size(size)}",
                         details, fix=_recover_advice(ctx.file(name)))  # fmt: skip
    if size % header.page_size:
        return Check(cid, group, ERROR, f"{label} is truncated: it ends in the middle of a page",
                     details, fix=_recover_advice(ctx.file(name)))  # fmt: skip
    err = ctx.open_error(name)
    if err is not None:
        if isinstance(err, Busy):
            return Check(
                cid, group, WARN, f"{label}: not checked, the file is busy", details, fix=err.hint
            )
        reason = ctx.open_reason(name) or err.message
        if _is_damage(reason):
            return Check(cid, group, ERROR, f"{label} is damaged: it cannot be opened ({reason})",
                         details, fix=_recover_advice(ctx.file(name)))  # fmt: skip
        return Check(cid, group, ERROR, f"{label} cannot be opened: {reason}", details,
                     fix=f"check the owner and mode of the file and its folder: "
                     f"ls -ld {_quote(path.parent)} {_quote(path)}")  # fmt: skip
    if not header.wal:
        return Check(cid, group, WARN, f"{label}: {human_size(size)}, not in WAL mode",
                     [*details, "without WAL, the terminal chat and the Telegram bot cannot use it at the same time"],
                     fix="switch it to WAL (needs Kaja closed)", fixable=True,
                     repairs=(_schema_repair(ctx, name),))  # fmt: skip
    return Check(cid, group, OK, f"{label}: SQLite, {human_size(size)}, WAL mode", details)


def _is_damage(reason: str) -> bool:
    low = reason.lower()
    return any(w in low for w in ("malformed", "corrupt", "not a database", "encrypted"))


def _not_a_database_fix(file: DatabaseFile) -> str:
    """Point the setting that placed it elsewhere; a side database is made anew."""
    names = file.spec.moved_by.names()
    if names:
        what = "the database file" if file.spec.host is None else f"the {file.spec.label} database"
        return f"point {', '.join(names[:-1])} or {names[-1]} at {what}"
    path, aside = file.path, _quote(str(file.path) + ".bak")
    return f"move it aside and Kaja creates a new one: mv -- {_quote(path)} {aside}"


def _recover_advice(file: DatabaseFile) -> str:
    path = file.path
    if file.spec.disposable:
        # The seed: the cache "churns constantly and can be deleted at any time".
        files = " ".join(_quote(p) for p in [path, *companions(path)[:2]])
        return f"the cache can be deleted at any time: close Kaja, then rm -f -- {files}"
    rescued = path.with_name(path.stem + "-recovered" + path.suffix)
    return (
        f"close Kaja, keep a copy of the file, then recover what SQLite can still read: "
        f"sqlite3 {_quote(path)} .recover | sqlite3 {_quote(rescued)}"
    )


@check("in-use", "shared file", "another process has the file open; a stale -wal or hot -journal with no holder",
       per_database=True)  # fmt: skip
def check_in_use(ctx: Context, name: str) -> Check:
    path = ctx.db_path(name)
    cid, group, label = f"in-use.{name}", _db_group(name), path.name
    wal, shm, journal = companions(path)
    pid = ctx.holder(name)
    wal_size = _size(wal) if ctx.companion(wal) else None
    if pid is not None:
        details = [f"-wal: {human_size(wal_size or 0)}"] if wal_size is not None else []
        return Check(cid, group, OK, f"{label}: {_in_use(pid)}", details)
    if wal_size:
        details = ["no process has the file open: its last writer stopped without closing it",
                   "the committed changes in it are replayed the next time the file is opened; nothing is lost"]  # fmt: skip
        if not ctx.companion(shm):
            details.append(
                "its -shm is gone: the other checks read the file without the -wal's changes"
            )
        return Check(cid, group, WARN, f"{label}: a stale -wal ({human_size(wal_size)}) with no process holding it",
                     details, fix="checkpoint its changes into the file", fixable=True,
                     repairs=(_checkpoint_repair(ctx, name),))  # fmt: skip
    if ctx.companion(journal) and _size(journal):
        return Check(cid, group, WARN, f"{label}: a hot -journal: a write was interrupted",
                     ["the next open rolls the interrupted write back"],
                     fix="roll it back (open the file for writing)", fixable=True,
                     repairs=(_checkpoint_repair(ctx, name),))  # fmt: skip
    details = (
        ["an empty -wal/-shm pair is left over: harmless"]
        if ctx.companion(wal) or ctx.companion(shm)
        else []
    )
    return Check(cid, group, OK, f"{label}: not open in another process", details)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


@check(
    "integrity", "shared file", "quick_check (integrity_check with --thorough)", per_database=True
)
def check_integrity(ctx: Context, name: str) -> Check:
    path = ctx.db_path(name)
    cid, group, label = f"integrity.{name}", _db_group(name), path.name
    pragma = ctx.integrity_pragma
    try:
        rows, seconds = ctx.integrity(name)
    except KajaError as e:
        _raise_if_interrupted()
        status = WARN if "busy" in str(e) else ERROR
        return Check(
            cid, group, status, f"{label}: {pragma} could not run: {e.message}", fix=e.hint
        )
    except sqlite3.Error as e:
        _raise_if_interrupted(e)
        text = str(e)
        if "locked" in text or "busy" in text:
            return Check(cid, group, WARN, f"{label}: {pragma} could not run: the file is busy")
        return Check(cid, group, ERROR, f"{label} is damaged: {text}", [f"{pragma} stopped on it"],
                     fix=_recover_advice(ctx.file(name)))  # fmt: skip
    if rows == ["ok"]:
        return Check(cid, group, OK, f"{label}: {pragma} passed", [f"took {seconds:.2f} s"])
    return Check(cid, group, ERROR, f"{label} is damaged: {pragma} found {plural(len(rows), 'problem')}"
                 + (" (the first 20)" if len(rows) >= 20 else ""), rows, fix=_recover_advice(ctx.file(name)))  # fmt: skip


def _describe_missing(items: list[str]) -> str:
    counts: dict[str, int] = {"table": 0, "column": 0, "index": 0, "step": 0}
    for m in items:
        what = m.split(" ", 1)[0]
        counts[what] = counts.get(what, 0) + 1
    words = {"step": "upgrade step"}
    return ", ".join(plural(n, words.get(what, what)) for what, n in counts.items() if n)


@check(
    "schema",
    "shared file",
    "the tables, columns and indexes kaja and the agent use",
    per_database=True,
)
def check_schema(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"schema.{name}", _db_group(name), path.name
    conn = ctx.conn(name)
    if conn is None or db.classify(path) == "empty":
        return None  # the database check says why

    def look() -> Check:
        file = ctx.file(name)
        kinds = ("table", "column", "index", "step")
        missing = sorted(
            (m for m in schema.missing(conn, file) if not m.startswith("search index")),
            key=lambda m: kinds.index(m.split(" ", 1)[0]) if m.split(" ", 1)[0] in kinds else 9,
        )
        expected = {t.name for t in file.tables}
        present = db.table_names(conn)
        extra = sorted(
            t for t in present - expected
            if not t.startswith(("sqlite_", schema.FTS_TABLE)) and t != "schedule_runs"
        )  # fmt: skip
        details = [f"also holds {', '.join(extra)} (written by another program?)"] if extra else []
        if missing:
            return Check(cid, group, WARN, f"{label}: missing {_describe_missing(missing)}",
                         _listed(missing) + details,
                         fix="add them (CREATE TABLE IF NOT EXISTS, ALTER TABLE … ADD COLUMN); no row changes",
                         fixable=True, repairs=(_schema_repair(ctx, name),))  # fmt: skip
        return Check(cid, group, OK, f"{label}: every table and column kaja expects ({plural(len(expected), 'table')})",
                     details)  # fmt: skip

    return _safe(look, cid, group, f"{label}: the schema")


@check(
    "space",
    "shared file",
    "WAL size and free pages (suggests a checkpoint or VACUUM)",
    per_database=True,
)
def check_space(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"space.{name}", _db_group(name), path.name
    conn = ctx.conn(name)
    if conn is None:
        return None

    def look() -> Check:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page_size
        total = conn.execute("PRAGMA page_count").fetchone()[0] * page_size
        wal = _size(path.with_name(path.name + "-wal")) or 0
        summary = f"{label}: -wal {human_size(wal)}, {human_size(free)} in free pages"
        problems, fixes, repairs = [], [], []
        if wal > WAL_WARN_BYTES:
            problems.append(
                f"the -wal has grown to {human_size(wal)}: checkpoints are not keeping up"
            )
            fixes.append("checkpoint it (--fix)")
            repairs.append(_checkpoint_repair(ctx, name))
        if free >= FREE_WARN_BYTES and free >= FREE_WARN_SHARE * max(total, 1):
            problems.append(f"{human_size(free)} of {human_size(total)} is free pages")
            fixes.append(f"close Kaja and the Telegram bot, then: sqlite3 {_quote(path)} VACUUM")
        if not problems:
            return Check(cid, group, OK, summary)
        return Check(cid, group, WARN, f"{label}: {'; '.join(problems)}", [summary],
                     fix="; ".join(fixes), fixable=bool(repairs), repairs=tuple(repairs))  # fmt: skip

    return _safe(look, cid, group, f"{label}: its size")


# --- repairs (run only by --fix) ---------------------------------------------------------------------
@contextmanager
def _writing(path: Path) -> Iterator[sqlite3.Connection]:
    with db.open_write(path, timeout_ms=FIX_TIMEOUT_MS) as conn:
        yield conn


def _schema_repair(ctx: Context, name: str) -> Repair:
    from kaja_cli.core.store import Store

    paths, path = ctx.paths, ctx.db_path(name)

    def run() -> str:
        header = Header.read(path)
        with _writing(path) as conn:  # opening for writing switches the file to WAL
            report = Store(paths).ensure_schema(conn, name)
        done = _squash(report.changes)
        if header is None or not header.wal:
            done.insert(0, "switched to WAL mode")
        return f"{path.name}: " + ("; ".join(done) or "nothing was missing")

    return Repair(f"schema:{name}", 1, run, name)


def _squash(changes: list[str]) -> list[str]:
    """ "created table a", "created table b" → "created tables a, b"."""
    grouped: dict[str, list[str]] = {}
    for c in changes:
        words = c.rsplit(" ", 1)
        key, item = (words[0], words[1]) if len(words) == 2 else (c, "")
        grouped.setdefault(key, []).append(item)
    out = []
    for key, items in grouped.items():
        if len(items) == 1:
            out.append(f"{key} {items[0]}".strip())
            continue
        verb, _, word = key.rpartition(" ")
        nouns = noun(len(items), word)
        shown = ", ".join(items[:3]) + (", …" if len(items) > 3 else "")
        count = f"{len(items)} " if len(items) > 3 else ""
        out.append(f"{verb} {count}{nouns} {shown}")
    return out


def _checkpoint_repair(ctx: Context, name: str) -> Repair:
    path = ctx.db_path(name)

    def run() -> str:
        in_use = db.holder(path) is not None
        # A running agent keeps writing: copy what can be copied without
        # waiting for it (PASSIVE); otherwise fold the whole -wal in and
        # truncate it (TRUNCATE waits at most the busy timeout).
        mode = "PASSIVE" if in_use else "TRUNCATE"
        before = _size(path.with_name(path.name + "-wal")) or 0
        with _writing(path) as conn:
            blocked, frames, done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        if blocked or (frames > 0 and done < frames):
            return f"{path.name}: checkpointed {done} of {frames} pages; Kaja is using the rest"
        return f"{path.name}: checkpointed the -wal ({human_size(before)}) into the file"

    return Repair(f"checkpoint:{name}", 3, run, name)


def _rebuild_repair(ctx: Context) -> Repair:
    path = ctx.db_path("shared")

    def run() -> str:
        # The rebuild holds the write lock throughout (about 6 s per million
        # messages here): a running agent would time out on its own writes.
        pid = db.holder(path)
        if pid is not None:
            raise Busy(
                f"{path.name}: not rebuilding the search index while it is {_in_use(pid)}",
                hint="close Kaja and the Telegram bot, then run kaja doctor --fix again",
            )
        with _writing(path) as conn:
            with db.transaction(conn):
                search_index.rebuild(conn)
            n = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        return f"{path.name}: rebuilt the search index ({n} messages)"

    return Repair("rebuild-search:shared", 2, run, "shared")


# --- orphans ------------------------------------------------------------------------------------------
def _leading_index(conn: sqlite3.Connection, table: str, column: str) -> bool:
    for row in conn.execute(f'PRAGMA index_list("{table}")'):
        cols = conn.execute(f'PRAGMA index_info("{row[1]}")').fetchall()
        if cols and cols[0][2] == column:
            return True
    return False


def _distinct_sql(conn: sqlite3.Connection, table: str, column: str) -> str:
    """SQL for the distinct non-NULL values of a column.

    With an index on it, a "loose index scan" (one seek per value) reads a few
    thousand index entries instead of all of them: on the benchmark store it
    finds the 10,000 session ids among 1,000,000 messages in ~25 ms, against
    ~60 ms for SELECT DISTINCT.
    """
    t, c = f'"{table}"', f'"{column}"'
    if _leading_index(conn, table, column):
        return (
            f"WITH RECURSIVE v(x) AS (SELECT min({c}) FROM {t} UNION ALL "
            f"SELECT (SELECT min({c}) FROM {t} WHERE {c} > v.x) FROM v WHERE v.x IS NOT NULL) "
            "SELECT x FROM v WHERE x IS NOT NULL"
        )
    return f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL"


_SESSION_CHILDREN = (
    ("orphans.messages", "messages", "messages without a session"),
    ("orphans.summaries", "session_summaries", "summaries of missing sessions"),
    ("orphans.events", "session_events", "timeline events of missing sessions"),
    ("orphans.model_calls", "model_calls", "model calls of missing sessions"),
)
ORPHAN_NOTE = "harmless: every listing skips them; they are left by a writer that stopped halfway"


@check(
    "orphans", "shared file",
    "rows whose parent is gone: messages, tool calls, tool results, summaries, events, model calls",
    needs_shared=True,
)  # fmt: skip
def check_orphans(ctx: Context) -> list[Check]:
    conn = ctx.conn("shared")
    assert conn is not None
    tables = db.table_names(conn)
    out: list[Check] = []
    if "sessions" in tables:
        for cid, table, what in _SESSION_CHILDREN:
            if table in tables:
                out.append(_safe(lambda c=cid, t=table, w=what: _session_orphans(conn, c, t, w),
                                 cid, "shared file", what))  # fmt: skip
    if "tool_calls" in tables and "messages" in tables:
        out.extend(
            _safe(
                lambda: _tool_call_orphans(conn), "orphans.tool_calls", "shared file", "tool calls"
            )
        )
    return out


def _session_orphans(conn: sqlite3.Connection, cid: str, table: str, what: str) -> Check:
    sql = (
        f"SELECT x FROM ({_distinct_sql(conn, table, 'sessionId')}) "
        "WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = x)"
    )
    missing = [r[0] for r in conn.execute(sql)]
    rows = conn.execute(f'SELECT count(*) FROM "{table}" WHERE sessionId IS NULL').fetchone()[0]
    for i in range(0, len(missing), 500):
        chunk = missing[i : i + 500]
        rows += conn.execute(
            f'SELECT count(*) FROM "{table}" WHERE sessionId IN ({",".join("?" * len(chunk))})',
            chunk,
        ).fetchone()[0]
    if not rows:
        return Check(cid, "shared file", OK, f"no {what}")
    details = [ORPHAN_NOTE, *_listed(missing, lambda s: f"missing session {s}")]
    return Check(cid, "shared file", WARN,
                 f"{what}: {rows} ({plural(len(missing), 'missing session')})", details)  # fmt: skip


def _tool_call_orphans(conn: sqlite3.Connection) -> list[Check]:
    # One pass over tool_calls, two lookups in the messages id index per row.
    no_message, no_result = conn.execute(
        "SELECT coalesce(sum(NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.messageId)), 0),"
        " coalesce(sum(t.resultMessageId IS NOT NULL AND"
        " NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.resultMessageId)), 0)"
        " FROM tool_calls t"
    ).fetchone()
    out = []
    if no_message:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM tool_calls t WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.messageId)"
            f" LIMIT {MAX_LISTED}")]  # fmt: skip
        out.append(Check("orphans.tool_calls", "shared file", WARN,
                         f"{plural(no_message, 'tool call')} without a message",
                         [ORPHAN_NOTE] + [f"tool call {i}" for i in ids]))  # fmt: skip
    else:
        out.append(
            Check("orphans.tool_calls", "shared file", OK, "no tool calls without a message")
        )
    if no_result:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM tool_calls t WHERE t.resultMessageId IS NOT NULL AND"
            " NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.resultMessageId)"
            f" LIMIT {MAX_LISTED}")]  # fmt: skip
        out.append(Check("orphans.tool_results", "shared file", WARN,
                         f"{plural(no_result, 'tool call')} whose result message is missing",
                         ["resume shows these calls without their result"] + [f"tool call {i}" for i in ids]))  # fmt: skip
    else:
        out.append(
            Check(
                "orphans.tool_results",
                "shared file",
                OK,
                "no tool results pointing at missing messages",
            )
        )
    return out


# --- the search index -------------------------------------------------------------------------------------
def _varint(blob: bytes) -> int:
    """The first FTS3 varint of a blob (7 bits a byte, least significant first)."""
    value = shift = 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return value


_TOKEN = re.compile(r"[^\W_]+")


def _probe_word(text: str) -> str | None:
    """A word of `text` that the unicode61 tokenizer keeps whole: the longest ASCII one."""
    words = [w for w in _TOKEN.findall(text) if w.isascii() and len(w) >= 3]
    return max(words, key=len) if words else None


@check(
    "search-index", "search index",
    "the FTS4 index is present and in step with messages (counts and sampled lookups; "
    "FTS4 'integrity-check' with --thorough)",
    needs_shared=True,
)  # fmt: skip
def check_search_index(ctx: Context) -> Check:
    conn = ctx.conn("shared")
    assert conn is not None
    cid, group = "search-index", "search index"
    tables = db.table_names(conn)
    if "messages" not in tables:
        return Check(cid, group, OK, "no messages table: nothing to index")
    if schema.FTS_TABLE not in tables:
        return Check(cid, group, WARN, f"no search index ({schema.FTS_TABLE})",
                     ["`kaja search` scans every message instead, which is slow on a large store"],
                     fix="create it and index every message", fixable=True,
                     repairs=(_schema_repair(ctx, "shared"),))  # fmt: skip

    filling = (
        search_index.fill_state(conn) if search_index.state(conn) == search_index.FILLING else None
    )
    if filling is not None:
        upto, done = filling
        return Check(cid, group, WARN, f"the search index is being built: {done} of {upto} messages so far",
                     ["an index build was cut short (or is running now): the next writing kaja,",
                      "`kaja search` included, finishes it (one that can't write scans the messages)"],
                     fix="finish the build", fixable=True,
                     repairs=(_schema_repair(ctx, "shared"),))  # fmt: skip
    if not search_index.present(conn):
        return Check(cid, group, WARN, "the triggers that keep the search index current are missing",
                     ["messages written since then are not found by `kaja search`"],
                     fix="recreate them and index every message", fixable=True,
                     repairs=(_schema_repair(ctx, "shared"),))  # fmt: skip
    try:
        problems, details = _index_in_step(conn)
        if ctx.thorough:
            failure = _fts_integrity(conn)
            if failure is not None:
                return Check(cid, group, ERROR, f"the search index is damaged: FTS4 integrity-check: {failure}",
                             problems + details, fix="rebuild it from the messages", fixable=True,
                             repairs=(_rebuild_repair(ctx),))  # fmt: skip
            details.append("FTS4 integrity-check passed")
    except sqlite3.Error as e:
        _raise_if_interrupted(e)
        text = str(e)
        if "no such module" in text:
            return Check(cid, group, WARN, f"the search index cannot be read: {text}",
                         ["this SQLite lacks FTS4 (see the versions check)"])  # fmt: skip
        if "locked" in text or "busy" in text:
            return Check(cid, group, WARN, "the search index: not checked, the file is busy")
        return Check(cid, group, ERROR, f"the search index is damaged: {text}",
                     fix="rebuild it from the messages", fixable=True, repairs=(_rebuild_repair(ctx),))  # fmt: skip
    if problems:
        return Check(cid, group, WARN, f"the search index is out of step with messages: {problems[0]}",
                     [*problems[1:], *(d for d in details if d != problems[0]),
                      "`kaja search` misses messages or shows deleted ones"],
                     fix="rebuild it from the messages", fixable=True, repairs=(_rebuild_repair(ctx),))  # fmt: skip
    return Check(
        cid, group, OK, f"the search index is in step with messages ({details[0]})", details[1:]
    )


def _index_in_step(conn: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """Cheap checks, bounded whatever the size: counts, the segment tree, a sample.

    FTS4's own 'integrity-check' re-tokenizes every message (2.2 s on the
    benchmark store, three times its quick_check), so it runs with
    --thorough only.
    """
    fts = schema.FTS_TABLE
    problems: list[str] = []
    messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    top_message = conn.execute("SELECT max(rowid) FROM messages").fetchone()[0]
    shadows = db.table_names(conn)
    if {f"{fts}_stat", f"{fts}_docsize"} <= shadows:
        # Kaja's index keeps document sizes (FTS4's default); one made by
        # another program with matchinfo=fts3 does not, and only gets sampled.
        row = conn.execute(f"SELECT value FROM {fts}_stat WHERE id = 0").fetchone()
        indexed = _varint(row[0]) if row and isinstance(row[0], bytes) else 0
        details = [f"{messages} messages, {indexed} indexed"]
        if indexed != messages:
            problems.append(f"{messages} messages, {indexed} indexed")
        top_doc = conn.execute(f"SELECT max(docid) FROM {fts}_docsize").fetchone()[0]
        if top_message != top_doc and not problems:
            problems.append(f"the last message is {top_message}, the last indexed one {top_doc}")
    else:
        details = [f"{messages} messages"]
    broken = conn.execute(
        f"SELECT count(*) FROM {fts}_segdir s WHERE"
        f" (s.start_block > 0 AND NOT EXISTS (SELECT 1 FROM {fts}_segments WHERE blockid = s.start_block))"
        f" OR (s.leaves_end_block > 0 AND NOT EXISTS (SELECT 1 FROM {fts}_segments WHERE blockid = s.leaves_end_block))"
    ).fetchone()[0]
    if broken:
        problems.append(f"{plural(broken, 'index segment')} point at missing blocks")
    # A sample of messages, spread over the table, each looked up in the index
    # by a word of its own under its own rowid: catches entries that point at
    # the wrong message, not only missing ones.
    # Two queries: SQLite answers min() or max() alone with one seek, both at once with a scan.
    lo = conn.execute("SELECT min(rowid) FROM messages").fetchone()[0]
    hi = top_message
    tried = missed = 0
    seen: set[int] = set()
    if lo is not None:
        steps = max(1, SEARCH_SAMPLE - 1)
        for i in range(SEARCH_SAMPLE):
            target = lo + (hi - lo) * i // steps
            found = conn.execute(
                "SELECT rowid, content FROM messages WHERE rowid >= ? AND content IS NOT NULL"
                " AND content != '' LIMIT 1",
                (target,),
            ).fetchone()
            if not found or found[0] in seen or not isinstance(found[1], str):
                continue
            seen.add(found[0])
            word = _probe_word(found[1])
            if word is None:
                continue
            tried += 1
            hit = conn.execute(
                f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ? AND docid = ?",
                (f'"{word}"', found[0]),
            ).fetchone()[0]
            missed += not hit
    details.append(f"{tried} sampled messages looked up by a word of their own, {missed} not found")
    if missed:
        problems.append(f"{missed} of {tried} sampled messages are not found under their own words")
    return problems, details


def _fts_integrity(conn: sqlite3.Connection) -> str | None:
    """FTS4's 'integrity-check' on a read-only connection; the error text, or None.

    The check is an INSERT, refused on a read-only file. So the index's four
    shadow tables are copied into the connection's temp schema, under an FTS4
    table reading the messages through a temp view, and checked there: the
    store's files are never written.
    """
    fts = schema.FTS_TABLE
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (fts,)).fetchone()[0]
    ddl, n = re.subn(
        r"^CREATE VIRTUAL TABLE\s+(IF NOT EXISTS\s+)?\S+",
        "CREATE VIRTUAL TABLE temp.doctor_fts",
        sql,
    )
    ddl, m = re.subn(r"""content\s*=\s*["'`]?messages["'`]?""", 'content="doctor_fts_content"', ddl)
    if not n or not m:
        return None  # not kaja's external-content index: nothing comparable to check
    conn.execute(
        "CREATE TEMP VIEW doctor_fts_content AS SELECT rowid AS rowid, content FROM main.messages"
    )
    try:
        conn.execute(ddl)
        present = db.table_names(conn)
        for shadow in ("segments", "segdir", "docsize", "stat"):
            if f"{fts}_{shadow}" in present:  # the same options made the same shadow tables
                conn.execute(
                    f"INSERT INTO temp.doctor_fts_{shadow} SELECT * FROM main.{fts}_{shadow}"
                )
        try:
            conn.execute("INSERT INTO temp.doctor_fts(doctor_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as e:
            _raise_if_interrupted(e)
            return str(e)
        return None
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("DROP TABLE IF EXISTS temp.doctor_fts")
            conn.execute("DROP VIEW IF EXISTS temp.doctor_fts_content")


# --- images ----------------------------------------------------------------------------------------------
_SHA_NAME = re.compile(r"^([0-9a-f]{64})\.[A-Za-z0-9]+$")


@check(
    "images", "images",
    "image folders of missing sessions, files messages refer to that are gone, "
    "files whose content no longer matches their sha256 name",
    needs_shared=True,
)  # fmt: skip
def check_images(ctx: Context) -> list[Check]:
    conn = ctx.conn("shared")
    assert conn is not None
    scan = ctx.images()
    tables = db.table_names(conn)
    out: list[Check] = []
    if "sessions" in tables:
        out.append(_safe(lambda: _orphan_folders(ctx, conn, scan), "images.orphan-folders", "images",
                         "image folders"))  # fmt: skip
    if "messages" in tables:
        out.append(_safe(lambda: _missing_files(ctx, conn, scan), "images.missing-files", "images",
                         "image references"))  # fmt: skip
    out.append(_image_content(scan))
    return out


def _orphan_folders(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    cid = "images.orphan-folders"
    orphans = [
        folder
        for sid, folder in scan.folders.items()
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None
    ]
    if not orphans:
        return Check(
            cid,
            "images",
            OK,
            f"no image folders of missing sessions ({plural(len(scan.folders), 'folder')})",
        )
    from kaja_cli.core.fs import tree_size

    size = sum(tree_size(f)[0] for f in orphans)
    command = "rm -r -- " + " ".join(_quote(f) for f in orphans[:MAX_LISTED])
    if len(orphans) > MAX_LISTED:
        command += f"  (and {len(orphans) - MAX_LISTED} more: see the details in --json)"
    return Check(
        cid, "images", WARN,
        f"{plural(len(orphans), 'image folder')} of sessions that no longer exist ({human_size(size)})",
        ["doctor never deletes them: remove them yourself once you are sure"] + [str(f) for f in orphans],
        fix=command,
    )  # fmt: skip


def _missing_files(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    cid = "images.missing-files"
    present = {(sid, p.name.split(".", 1)[0]) for sid, p in scan.files}
    images_dir = ctx.paths.images_dir
    referenced = unsafe = 0
    gone: list[Path] = []
    for sid, parts in conn.execute("SELECT sessionId, parts FROM messages WHERE parts IS NOT NULL"):
        for part in images.image_parts(parts):
            referenced += 1
            path = images.image_path(images_dir, sid, part.sha256, part.mime)
            if path is None:
                unsafe += 1
            elif (sid, part.sha256) not in present:
                gone.append(path)
    details = [f"{unsafe} references with unsafe names ignored"] if unsafe else []
    if not gone:
        return Check(cid, "images", OK,
                     f"every image messages refer to is there ({plural(referenced, 'reference')})", details)  # fmt: skip
    return Check(
        cid, "images", WARN,
        f"{len(gone)} of {plural(referenced, 'image file')} messages refer to are gone",
        [*details, "resume flags them as missing; restore them from a backup if you have one", *_listed(gone)],
    )  # fmt: skip


def _image_content(scan: ImageScan) -> Check:
    cid = "images.content"
    changed: list[Path] = []
    unnamed: list[Path] = []
    for _sid, path in scan.files:
        m = _SHA_NAME.match(path.name)
        if m is None:
            unnamed.append(path)
            continue
        try:
            with open(path, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            unnamed.append(path)
            continue
        if digest != m.group(1):
            changed.append(path)
    strays = scan.strays
    if changed:
        return Check(
            cid, "images", ERROR,
            f"{len(changed)} of {plural(len(scan.files), 'image file')} no longer match their sha256 name",
            ["the file was changed or damaged after it was saved", *_listed(changed)],
            fix="restore them from a backup",
        )  # fmt: skip
    if unnamed or strays:
        odd = unnamed + strays
        return Check(cid, "images", WARN,
                     f"{plural(len(odd), 'entry', 'entries')} in the images folder not named <session>/<sha256>.<ext>",
                     ["kaja ignores them", *_listed(odd)])  # fmt: skip
    return Check(
        cid,
        "images",
        OK,
        f"{plural(len(scan.files), 'image file')}, each matching its sha256 name",
    )


# --- side databases and sync -----------------------------------------------------------------------------
@check(
    "side-data",
    "side databases",
    "expired cache entries and web sign-in sessions (counts only, never a secret)",
)
def check_side_data(ctx: Context) -> list[Check]:
    now = clock.iso(ctx.now)
    out: list[Check] = []
    cache = ctx.conn("cache") if ctx.local else None
    if cache is not None and "shared_cache" in db.table_names(cache):

        def cache_counts() -> Check:
            total, expired = cache.execute(
                "SELECT count(*), coalesce(sum(expires_at IS NOT NULL AND expires_at < ?), 0) FROM shared_cache",
                (now,),
            ).fetchone()
            return Check("side-data.cache", "side databases", OK,
                         f"cache.db: {plural(total, 'entry', 'entries')}, {expired} expired",
                         ["expired entries are dropped as the cache is used"])  # fmt: skip

        out.append(_safe(cache_counts, "side-data.cache", "side databases", "cache.db"))
    auth = ctx.conn("auth") if ctx.local else None
    if auth is not None and {"web_users", "web_sessions"} <= db.table_names(auth):

        def auth_counts() -> Check:
            users = auth.execute("SELECT count(*) FROM web_users").fetchone()[0]
            sessions, expired = auth.execute(
                "SELECT count(*), coalesce(sum(expires_at IS NOT NULL AND expires_at < ?), 0) FROM web_sessions",
                (now,),
            ).fetchone()
            return Check("side-data.auth", "side databases", OK,
                         f"web-auth.db: {plural(users, 'account')}, {plural(sessions, 'sign-in session')}, "
                         f"{expired} expired", ["counts only: no name, hash or token is read"])  # fmt: skip

        out.append(_safe(auth_counts, "side-data.auth", "side databases", "web-auth.db"))
    return out


@check("sync-outbox", "sync", "changes waiting in sync_outbox to be pushed", needs_shared=True)
def check_sync_outbox(ctx: Context) -> Check | None:
    conn = ctx.conn("shared")
    assert conn is not None
    if "sync_outbox" not in db.table_names(conn):
        return None

    def look() -> Check:
        count, oldest = conn.execute("SELECT count(*), min(at) FROM sync_outbox").fetchone()
        if not count:
            return Check("sync-outbox", "sync", OK, "the sync outbox is empty")
        summary = f"{plural(count, 'change')} waiting to sync"
        when = clock.parse_stored(oldest)
        if when is not None:
            summary += f", the oldest from {oldest}"
        details = [
            "changes wait here while the sync server cannot be reached, then go out in order"
        ]
        stuck = count > OUTBOX_WARN_ROWS or (when is not None and ctx.now - when > OUTBOX_WARN_AGE)
        if stuck:
            return Check("sync-outbox", "sync", WARN, summary + ": sync looks stuck", details,
                         fix="check that sync is configured and the server reachable")  # fmt: skip
        return Check("sync-outbox", "sync", OK, summary, details)

    return _safe(look, "sync-outbox", "sync", "the sync outbox")


# --- redaction ---------------------------------------------------------------------------------------------
def redactor(environ: dict[str, str] | None = None) -> Callable[[str], str]:
    """A function replacing the home folder (~), user name (<user>) and host name (<host>)."""
    import getpass
    import socket

    env = os.environ if environ is None else environ
    homes: set[str] = set()
    users: set[str] = set()
    hosts: set[str] = set()
    if env.get("HOME"):
        homes.add(env["HOME"])
    with contextlib.suppress(Exception):
        homes.add(str(Path.home()))
    with contextlib.suppress(Exception):
        users.add(getpass.getuser())
    with contextlib.suppress(Exception):
        import pwd

        entry = pwd.getpwuid(os.geteuid())
        users.add(entry.pw_name)
        homes.add(entry.pw_dir)
    for name in ("USER", "LOGNAME", "USERNAME"):
        if env.get(name):
            users.add(env[name])
    with contextlib.suppress(Exception):
        hosts.add(socket.gethostname())
    with contextlib.suppress(Exception):
        hosts.add(os.uname().nodename)
    hosts |= {h.split(".", 1)[0] for h in hosts}
    for home in list(homes):
        with contextlib.suppress(OSError):
            homes.add(os.path.realpath(home))
    homes = {h.rstrip("/") for h in homes if len(h.rstrip("/")) > 1}
    users = {u for u in users if len(u) > 1}
    hosts = {h for h in hosts if len(h) > 1}
    rules: list[tuple[re.Pattern[str], str]] = []
    for home in sorted(homes, key=len, reverse=True):
        rules.append((re.compile(re.escape(home) + r"(?![\w.-])"), "~"))
    for names, token in ((users, "<user>"), (hosts, "<host>")):
        for name in sorted(names, key=len, reverse=True):
            rules.append(
                (
                    re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])", re.I),
                    token,
                )
            )

    def redact(text: str) -> str:
        for pattern, token in rules:
            text = pattern.sub(token, text)
        return text

    return redact


def redacted(report: Report, environ: dict[str, str] | None = None) -> Report:
    """The same report with the home folder, user name and host name replaced everywhere."""
    fn = redactor(environ)

    def deep(value):
        if isinstance(value, str):
            return fn(value)
        if isinstance(value, list):
            return [deep(v) for v in value]
        if isinstance(value, dict):
            return {k: deep(v) for k, v in value.items()}
        return value

    checks = [
        replace(c, summary=fn(c.summary), details=[fn(d) for d in c.details],
                fix=fn(c.fix) if c.fix else c.fix, repairs=())
        for c in report.checks
    ]  # fmt: skip
    fixes = None
    if report.fixes is not None:
        fixes = [replace(f, message=fn(f.message)) for f in report.fixes]
    return replace(report, versions=deep(report.versions), checks=checks, fixes=fixes)


__all__ = [
    "CHECKS",
    "ERROR",
    "GROUPS",
    "OK",
    "WARN",
    "Check",
    "Context",
    "FixResult",
    "Repair",
    "Report",
    "check",
    "list_checks",
    "redacted",
    "run",
    "versions",
]  # fmt: skip
