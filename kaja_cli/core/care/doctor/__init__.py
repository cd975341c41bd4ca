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

This package: the runner is here, the registry in `registry`; `model` holds the data,
`context` what checks share during a run, `repairs` what `--fix` can do, and
one module per group of checks (`environment`, `locations`, `pending`,
`settings_file`, `databases`, `orphans`, `search`, `search_cjk`, `images`,
`audit` (the agent's tasks, schedules, artifacts), `side_data`, `query_profile`, `qdrant`), imported at the end
of this file in the report's order. `redaction` is `--redact`.

Adding a check: write a function taking the `Context` (and a database name,
with `per_database=True`) that returns a `Check`, a list of them or None,
decorate it, and import its module below. The registry's order is the
report's order within each group.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from kaja_cli.core.care.doctor.context import _INTERRUPTED, Context, raise_if_interrupted
from kaja_cli.core.care.doctor.model import (
    ERROR,
    GROUPS,
    OK,
    WARN,
    Check,
    FixResult,
    Group,
    ProgressFactory,
    Repair,
    RepairOrder,
    Report,
    Skipped,
    Status,
)
from kaja_cli.core.care.doctor.registry import CHECKS, Spec, check, list_checks
from kaja_cli.core.store import settings as settings_mod
from kaja_cli.core.store.paths import Overrides, Paths, resolve
from kaja_cli.core.store.registry import Database
from kaja_cli.errors import KajaError, SettingsError, UsageError

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


def _require_results(
    selection: tuple[str, ...], checks: list[Check], skipped: list[Skipped] = ()
) -> None:
    """A selector naming one result of a check (`paths.shared_db`) must match
    one (or a check --quick left out): a typo must not run nothing and report
    "no problems"."""
    ids = [c.id for c in checks]
    for sel in selection:
        spec = _spec_of(sel)
        if any(_matches(sel, s.check) or _matches(s.check, sel) for s in skipped):
            continue  # left out by --quick, and listed as such
        if spec is not None and sel != spec.id and not any(_matches(i, sel) for i in ids):
            found = sorted({c.id for c in checks if _matches(c.id, spec.id)})
            raise UsageError(
                f"--check: {spec.id} has no result {sel!r}",
                hint=f"its results: {', '.join(found)}" if found else None,
            )


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
    quick: bool = False,
    fix: bool = False,
    environ: dict[str, str] | None = None,
    now: datetime | None = None,
    progress: ProgressFactory | None = None,
) -> Report:
    """Run the checks (all, or those `only` names); with `fix`, repair, then check again.

    `quick` leaves out whatever reads in proportion to the store (the
    integrity pragma, the orphan and image scans, counting messages) and
    lists it in `Report.skipped`. `progress` (`render.progress`) shows the
    integrity check when the other checks are done before it.
    """
    if quick and thorough:
        raise UsageError("--quick and --thorough ask for opposite things: choose one")
    selection = validate_selection(only)
    run_ = _Run(overrides, selection, thorough, quick, environ, now, progress)
    checks, skipped = run_()
    _require_results(selection, checks, skipped)
    fixes = None
    if fix:
        fixes, tried = [], set()
        # A file rolled back (or recovered) can be checked only then: the
        # checks run again, and what they find now is repaired in turn.
        for _ in range(3):
            done = apply_repairs(checks, tried)
            if not done:
                break
            fixes += done
            checks, skipped = run_()
    return Report(versions=dict(versions()), checks=checks, thorough=thorough, quick=quick,
                  skipped=skipped, fixes=fixes, private=_private(overrides, environ))  # fmt: skip


def _private(overrides: Overrides | None, environ: dict[str, str] | None) -> dict[str, str]:
    """Cloud mode's server details that --redact hides (redaction.py)."""
    from kaja_cli.core.store import Store

    paths, _ = locate(overrides, environ)
    server = Store(paths).server  # None: the store is no server's
    if server is None:
        return {}
    out: dict[str, str] = {}
    if server.url.value:
        from kaja_cli.core.masking import mask

        out[mask(server.url.value)] = "<database url>"
        out.update(_url_parts(server.url.value))
    if server.read_url.value:
        from kaja_cli.core.masking import mask

        out[mask(server.read_url.value)] = "<read url>"
        out.update(_url_parts(server.read_url.value))
    if server.account.value:
        out[server.account.value] = "<account>"
    return out


def _url_parts(url: str) -> dict[str, str]:
    """The host, user and database of a libpq URL, each with its stand-in."""
    from urllib.parse import parse_qs, unquote, urlsplit

    from kaja_cli.core.masking import mask

    try:
        # Split as masked: a password holding `/ ? #` no longer hides the host.
        parts = urlsplit(mask(url))
        query = parse_qs(parts.query)
        found = {
            "<db-host>": _hosts(parts.netloc, query),
            "<db-user>": [unquote(parts.username or ""), *query.get("user", [])],
            "<database>": [unquote(parts.path.lstrip("/")), *query.get("dbname", [])],
        }
    except ValueError:
        return {}
    return {v: token for token, values in found.items() for v in values if len(v) > 1}


def _hosts(netloc: str, query: dict[str, list[str]]) -> list[str]:
    """Every host a libpq URL names: each of a list (`h1:5432,h2`, `?host=/a,/b`),
    and `hostaddr`'s addresses."""
    from urllib.parse import unquote

    out = []
    for part in netloc.rsplit("@", 1)[-1].split(","):
        if part.startswith("["):  # [IPv6]:port
            out.append(part[1:].split("]", 1)[0])
        else:
            out.append(unquote(part.split(":", 1)[0]))
    for value in (*query.get("host", []), *query.get("hostaddr", [])):
        out += value.split(",")
    return [h.strip() for h in out]


class _Run(NamedTuple):
    """One run of the checks, as `run` asked for it (called again after --fix)."""

    overrides: Overrides | None
    selection: tuple[str, ...]
    thorough: bool
    quick: bool
    environ: dict[str, str] | None
    now: datetime | None
    progress: ProgressFactory | None

    def __call__(self) -> tuple[list[Check], list[Skipped]]:
        paths, settings_error = locate(self.overrides, self.environ)
        ctx = Context(paths, settings_error=settings_error, thorough=self.thorough,
                      quick=self.quick, now=self.now)  # fmt: skip
        _INTERRUPTED.clear()
        previous = _on_ctrl_c(ctx)
        try:
            tasks = _plan(ctx, self.selection)
            # The whole-file reads (quick_check) start first, in a thread; every
            # other check runs beside them, and their results are collected last.
            for task in tasks:
                if task.spec.id == "integrity" and task.database is not None and not ctx.quick:
                    ctx.start_integrity(task.database)
            results: list[list[Check]] = [[] for _ in tasks]
            skipped: list[list[Skipped]] = [[] for _ in tasks]
            order = sorted(range(len(tasks)), key=lambda i: tasks[i].spec.id == "integrity")
            with _integrity_bar(ctx, self.progress):
                for i in order:
                    before = len(ctx.skipped)
                    results[i] = tasks[i].run()
                    skipped[i] = ctx.skipped[before:]
                    raise_if_interrupted()
            checks = _hold_back_writes_to_damaged(ctx, [c for r in results for c in r])
        except BaseException:
            ctx.close(interrupt=True)
            raise
        finally:
            _restore_ctrl_c(previous)
        ctx.close()
        return checks, [s for found in skipped for s in found]  # in the report's order


# The progress bar: shown when the files quick_check reads add up to this
# much (below it the whole run takes about a second), brought up to date
# this often.
PROGRESS_FROM_BYTES = 64 * 1024 * 1024
PROGRESS_EVERY_S = 0.1


@contextmanager
def _integrity_bar(ctx: Context, progress: ProgressFactory | None) -> Iterator[None]:
    """A bar of the integrity checks running in their threads (bytes read of
    those expected), drawn from a thread of its own while the other checks
    run, until they end. None without `progress`, on small files, or where
    the bytes read cannot be known (not Linux)."""
    sizes = {ctx.db_path(name): _size(ctx.db_path(name)) for name, _ in ctx.integrity_running()}
    now = ctx.integrity_progress() if progress is not None else None
    if progress is None or now is None or sum(sizes.values()) < PROGRESS_FROM_BYTES:
        yield
        return
    # Named: the files that take time (the side databases are done at once).
    names = ", ".join(p.name for p, size in sizes.items() if size >= PROGRESS_FROM_BYTES // 64)
    mb = 1 << 20
    stop = threading.Event()
    with progress(f"{ctx.integrity_pragma} {names} (MB read)", max(1, now[1] // mb)) as bar:

        def follow() -> None:
            while not stop.wait(PROGRESS_EVERY_S):
                found = ctx.integrity_progress()
                if found is None:
                    return
                bar(found[0] // mb, max(1, found[1] // mb))

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


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


class Task(NamedTuple):
    """One planned run of a check: for one database, or for the whole store."""

    spec: Spec
    database: str | None
    run: Callable[[], list[Check]]


def _plan(ctx: Context, selection: tuple[str, ...]) -> list[Task]:
    """What to run, in the report's order: (spec, database or None, run)."""
    tasks: list[Task] = []
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
        if ctx.quick and spec.scans is not None:
            tasks.append(Task(spec, None, lambda spec=spec: _skip(ctx, spec)))
            continue
        tasks.append(Task(spec, None, lambda spec=spec: _run_single(ctx, spec, selection)))
    return tasks


def _skip(ctx: Context, spec: Spec, name: str | None = None) -> list[Check]:
    """--quick: the check is left out, and the report says so."""
    if spec.needs_shared and ctx.conn("shared") is None:
        return []  # it would not have run anyway
    ctx.skip(f"{spec.id}.{name}" if name else spec.id, spec.scans or "")
    return []


def _run_single(ctx: Context, spec: Spec, selection: tuple[str, ...]) -> list[Check]:
    if spec.needs_shared and ctx.conn("shared") is None:
        return [_not_checked(ctx, spec)] if selection else []
    found = _checks_of(spec.run(ctx))
    if selection:  # `--check orphans.messages`: the one result asked for
        found = [
            c for c in found if any(_matches(c.id, sel) or sel == spec.id for sel in selection)
        ]
    return found


def _plan_databases(ctx: Context, specs: list[Spec], selection: tuple[str, ...]) -> Iterator[Task]:
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

            yield Task(first, name, why)
        for spec in wanted:

            def one(spec: Spec = spec, name: str = name) -> list[Check]:
                if spec is not first and not spec.unopened and ctx.conn(name) is None:
                    return []
                if ctx.quick and spec.scans is not None:
                    return _skip(ctx, spec, name)
                return _checks_of(spec.run(ctx, name))

            yield Task(spec, name, one)


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
            database = held[0].database or "shared"
            name = ctx.db_path(database).name
            rest = tuple(r for r in c.repairs if r.database not in damaged)
            fix = (
                f"none: {name} is not Kaja's, and kaja changes nothing in it"
                if ctx.foreign(database)
                else f"recover {name} first (see its integrity check); then run kaja doctor --fix again"
            )
            c = replace(c, repairs=rest, fixable=bool(rest), fix=fix)
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
    path = ctx.db_path("shared") if ctx.databases() else None
    reason = (
        "cloud mode keeps no local database" if path is None else f"no readable store at {path}"
    )
    return Check(spec.id, spec.group, OK, f"not checked: {reason}")


def apply_repairs(checks: list[Check], tried: set[str] | None = None) -> list[FixResult]:
    """Run every distinct repair the checks attached, cheapest first; none
    whose key is in `tried` (which gains the keys of those run)."""
    tried = set() if tried is None else tried
    seen: dict[str, tuple[Repair, str]] = {}
    for c in checks:
        for r in c.repairs:
            if r.key not in tried:
                seen.setdefault(r.key, (r, c.id))
    tried |= seen.keys()
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


# --- the checks ---------------------------------------------------------------------
# Imported last, in the report's order: each module registers its checks with
# `check` above as it loads.
# isort: off
from kaja_cli.core.care.doctor import environment, locations, pending  # noqa: E402
from kaja_cli.core.care.doctor import settings_file, server, databases  # noqa: E402
from kaja_cli.core.care.doctor import orphans, search, search_cjk, images, side_data  # noqa: E402
from kaja_cli.core.care.doctor import audit  # noqa: E402
from kaja_cli.core.care.doctor import query_profile, qdrant  # noqa: E402

# isort: on
from kaja_cli.core.care.doctor.environment import versions  # noqa: E402
from kaja_cli.core.care.doctor.redaction import redacted, redactor  # noqa: E402

__all__ = [
    "CHECKS",
    "DATABASE_NAMES",
    "ERROR",
    "GROUPS",
    "OK",
    "WARN",
    "Check",
    "Context",
    "FixResult",
    "Group",
    "Repair",
    "RepairOrder",
    "Report",
    "Status",
    "audit",
    "check",
    "databases",
    "environment",
    "images",
    "list_checks",
    "locations",
    "orphans",
    "pending",
    "qdrant",
    "query_profile",
    "redacted",
    "redactor",
    "run",
    "search",
    "search_cjk",
    "server",
    "settings_file",
    "side_data",
    "versions",
]  # fmt: skip
