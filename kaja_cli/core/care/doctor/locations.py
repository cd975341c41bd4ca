"""Checks of the paths: every location `kaja config paths` shows (its source,
existence, owner and permissions) and legacy per-feature files. What
interrupted commands left beside them is `pending`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kaja_cli.core import clock
from kaja_cli.core.care.doctor.common import listed, owner_name, quote, tighten_all
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group, Repair, RepairOrder
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.engine import db, fs
from kaja_cli.core.engine.fs import human_size
from kaja_cli.core.store import guard
from kaja_cli.core.store.paths import LABELS, Location, companions
from kaja_cli.core.store.registry import DATABASES
from kaja_cli.core.wording import noun, plural

_DATABASE_OF_LOCATION = {spec.location: spec.name for spec in DATABASES.values()}
_DATABASE_LOCATIONS = set(_DATABASE_OF_LOCATION)


def _exposure(mode: int) -> str | None:
    who = [w for w, bits in (("group", 0o070), ("others", 0o007)) if mode & bits]
    if not who:
        return None
    verb = "writable" if mode & 0o022 else "readable" if mode & 0o044 else "open"
    return f"{verb} by {' and '.join(who)}"


@check(
    "paths",
    Group.PATHS,
    "each location `kaja config paths` shows: its source, existence, owner and permissions",
)
def check_paths(ctx: Context) -> list[Check]:
    return [_path_check(ctx, location) for location in ctx.paths.locations()]


@dataclass
class _Findings:
    """What the look at one location found. The first problem is the summary;
    `manual` are commands for a person, `loose` the paths --fix may tighten."""

    details: list[str]
    problems: list[str] = field(default_factory=list)
    manual: list[str] = field(default_factory=list)
    loose: list[Path] = field(default_factory=list)


def _path_check(ctx: Context, location: Location) -> Check:
    name, (path, source), kind = location
    cid, head = f"paths.{name}", f"{LABELS.get(name, name)}: {path} ({source})"
    try:
        st = path.stat()
    except OSError as e:
        return _not_there(cid, head, name, e)
    is_dir, mode = stat.S_ISDIR(st.st_mode), stat.S_IMODE(st.st_mode)
    if kind == "dir" and not is_dir:
        return Check(cid, Group.PATHS, ERROR, f"{head}: {fs.what_is(st)}, where a folder should be",
                     fix=f"move it aside: mv -- {quote(path)} {quote(str(path) + '.bak')}")  # fmt: skip
    if kind == "file" and not is_dir and not stat.S_ISREG(st.st_mode):
        return Check(cid, Group.PATHS, ERROR, f"{head}: {fs.what_is(st)}, where a file should be",
                     ["kaja never opens it (a FIFO would block, a device is not a file)"],
                     fix=f"move it aside, or point {LABELS.get(name, name)} elsewhere")  # fmt: skip
    found = _Findings([f"mode {mode:04o}, owner {owner_name(st.st_uid)}"])
    if path.is_symlink():
        found.details.append(f"a symlink to {path.resolve()}")
    leave = _leave_alone(ctx, name, path)
    _look_at_mode_and_owner(ctx, path, st, found, leave)
    if name in _DATABASE_LOCATIONS and not is_dir and leave is None:
        _look_at_database_file(ctx, path, mode, found)
    if name == "state_dir" and is_dir and not mode & 0o200:
        found.problems.append("not writable by its owner: Kaja cannot create files in it")
        found.manual.append(f"chmod u+w {quote(path)}")
    if name == "images":
        _look_below_images(ctx, path, found)
    if not found.problems:
        what = "folder" if is_dir else human_size(st.st_size)
        return Check(cid, Group.PATHS, OK, f"{head}: {what}, mode {mode:04o}", found.details)
    return _warning(ctx, cid, head, path, found)


def _not_there(cid: str, head: str, name: str, error: OSError) -> Check:
    """A location that does not exist (yet), or cannot be looked at."""
    if not isinstance(error, FileNotFoundError):
        return Check(cid, Group.PATHS, WARN, f"{head}: cannot be read ({error.strerror})",
                     fix="check the permissions of the folders above it")  # fmt: skip
    if name == "state_dir":
        return Check(cid, Group.PATHS, WARN, f"{head}: does not exist yet",
                     ["a fresh machine: Kaja creates it (0700) on its first start"])  # fmt: skip
    if name == "settings":
        return Check(cid, Group.PATHS, OK, f"{head}: not present, the defaults apply")
    return Check(cid, Group.PATHS, OK, f"{head}: not created yet")


def _leave_alone(ctx: Context, name: str, path: Path) -> str | None:
    """Why kaja must not tighten this location (`guard.why_not_tighten`), or,
    for a database, why it is not Kaja's to change; None: it may."""
    if name in _DATABASE_LOCATIONS:
        database = _DATABASE_OF_LOCATION[name]
        known = {f.name for f in ctx.databases()}
        if database in known and ctx.foreign(database):
            return "not Kaja's database: kaja changes nothing in it"
        if db.classify(path) not in ("sqlite", "empty"):
            return "not a SQLite database: kaja changes nothing in it"
    why = guard.why_not_tighten(path, ctx.paths)
    return None if why == OTHER_USER else why


OTHER_USER = "it belongs to another user"  # a finding of its own (chown), not a reason to be quiet


def _loose(ctx: Context, path: Path) -> bool:
    """Whether --fix may tighten `path` (the guard's rule), else why not is said."""
    return guard.why_not_tighten(path, ctx.paths) in (None, OTHER_USER)


def _look_at_mode_and_owner(
    ctx: Context, path: Path, st: os.stat_result, found: _Findings, leave: str | None
) -> None:
    mode = stat.S_IMODE(st.st_mode)
    exposure = _exposure(mode)
    if exposure and leave is not None:
        found.details.append(f"{exposure}: kaja leaves its mode as it is ({leave})")
    elif exposure:
        found.problems.append(f"mode {mode:04o}: {exposure}")
        found.loose.append(path)
    if ctx.uid is not None and st.st_uid != ctx.uid:
        found.problems.append(
            f"owned by {owner_name(st.st_uid)}, not by you ({owner_name(ctx.uid)})"
        )
        found.manual.append(f"sudo chown -R {owner_name(ctx.uid)} {quote(path)}")


def _look_at_database_file(ctx: Context, path: Path, mode: int, found: _Findings) -> None:
    """Kaja must be able to write it; its -wal/-shm/-journal are as private as it is."""
    if not mode & 0o200:
        found.problems.append("not writable by its owner: Kaja cannot save to it")
        found.manual.append(f"chmod u+w {quote(path)}")
    elif not os.access(path, os.W_OK):  # never false for root, whatever the mode
        found.problems.append("not writable by you: Kaja running as you cannot save to it")
    for extra in filter(ctx.companion, companions(path)):
        with contextlib.suppress(OSError):
            exposure = _exposure(m := stat.S_IMODE(extra.stat().st_mode))
            if exposure and _loose(ctx, extra):
                found.details.append(f"{extra.name}: mode {m:04o}, {exposure}")
                found.loose.append(extra)
                if not found.problems:
                    found.problems.append(f"{extra.name} is {exposure}")


def _look_below_images(ctx: Context, path: Path, found: _Findings) -> None:
    """`files/` above the images folder, and everything below it."""
    scan = ctx.images()
    files_dir = ctx.paths.files_dir
    with contextlib.suppress(OSError):
        exposure = _exposure(m := stat.S_IMODE(files_dir.stat().st_mode))
        if exposure and _loose(ctx, files_dir):
            found.loose.append(files_dir)
            found.details.append(f"{files_dir}: mode {m:04o}, {exposure}")
    loose = [p for p in scan.loose if _loose(ctx, p)]
    if loose:
        found.loose.extend(loose)
        found.problems.append(f"{_files(len(loose))} below {noun(len(loose), 'is', 'are')}"
                              " readable by others")  # fmt: skip
        found.details.extend(listed(loose, lambda p: f"open: {p}"))
    if scan.foreign:
        n = len(scan.foreign)
        found.problems.append(f"{_files(n)} below {noun(n, 'belongs', 'belong')} to another user")
        found.manual.append(f"sudo chown -R {owner_name(ctx.uid or 0)} {quote(path)}")
    if not found.problems and found.loose:
        n = len(found.loose)
        found.problems.append(f"{plural(n, 'folder')} {noun(n, 'is', 'are')} readable by others")


def _warning(ctx: Context, cid: str, head: str, path: Path, found: _Findings) -> Check:
    """The finding, with `chmod go-rwx` for what is ours (--fix does it) and the
    rest for a person to do."""
    mine = [p for p in found.loose if _owned(p, ctx.uid)]
    fixes = []
    if len(mine) > 3:
        fixes.append(f"chmod -R go-rwx {quote(path)}")
    elif mine:
        fixes.append("chmod go-rwx " + " ".join(quote(p) for p in mine))
    if found.manual:
        fixes.append(("and by hand: " if mine else "") + "; ".join(dict.fromkeys(found.manual)))
    repairs = (Repair(f"chmod:{path}", RepairOrder.PERMISSIONS, tighten_all(mine, ctx.paths)),)
    return Check(
        cid, Group.PATHS, WARN, f"{head}: {found.problems[0]}", found.details + found.problems[1:],
        fix="; ".join(fixes) or None, fixable=bool(mine), repairs=repairs if mine else (),
    )  # fmt: skip


def _owned(path: Path, uid: int | None) -> bool:
    try:
        return uid is None or path.lstat().st_uid == uid
    except OSError:
        return False


@check(
    "legacy-files",
    Group.PATHS,
    "legacy files in the state dir (usage.db, experience.db, …, .memory/ conversations)"
    " waiting for `kaja migrate`",
)
def check_legacy_files(ctx: Context) -> list[Check]:
    from kaja_cli.core.care import legacy

    found = legacy.legacy_paths(ctx.paths)
    memory = ctx.paths.state_dir.path / legacy.MEMORY_DIR
    threads = [f for _, _, f in legacy.thread_paths(memory)]
    if not found and not threads:
        return [Check("legacy-files", Group.PATHS, OK, "no legacy files in the state dir")]
    done: dict[str, str] = {}
    conn = ctx.conn("shared") if ctx.local else None
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            done = legacy.recorded(conn)
    out = [_legacy_file(ctx, p, legacy.was_imported(p, done)) for p in found]
    if threads:
        out.append(_conversation_files(memory, threads, done))
    return out


def _legacy_file(ctx: Context, p: Path, when: str | None) -> Check:
    cid, size = f"legacy-files.{p.stem}", human_size(p.stat().st_size)
    if when is not None:
        return Check(
            cid, Group.PATHS, OK, f"{p.name} ({size}): imported {clock.day_of(when) or 'earlier'}, kept as a rollback copy",
            [f"{p}", "delete it once you no longer need to roll back"], fix=f"rm -- {quote(p)}",
        )  # fmt: skip
    return Check(
        cid, Group.PATHS, WARN, f"{p.name} ({size}): a legacy per-feature file, not imported",
        [f"{p}", f"its rows are not in {ctx.paths.shared_db.path.name}: `kaja migrate` imports them "
         "(`--dry-run` shows what) and keeps the file as a rollback copy"],
        fix="kaja migrate",
    )  # fmt: skip


def _conversation_files(memory: Path, threads: list[Path], done: dict[str, str]) -> Check:
    waiting = [f for f in threads if str(f) not in done]
    cid = "legacy-files.conversations"
    if not waiting:
        return Check(cid, Group.PATHS, OK,
                     f"{memory}: {plural(len(threads), 'conversation file')}, all imported, kept as"
                     " a rollback copy")  # fmt: skip
    return Check(
        cid, Group.PATHS, WARN,
        f"{memory}: {len(waiting)} of {plural(len(threads), 'conversation file')} not imported",
        [*listed(waiting, str), "their conversations are not sessions yet: `kaja migrate` imports them"],
        fix="kaja migrate",
    )  # fmt: skip


def _files(n: int) -> str:
    return plural(n, "file or folder", "files and folders")
