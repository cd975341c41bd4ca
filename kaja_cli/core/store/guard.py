"""What kaja may write, create, convert, index, chmod or delete: one rule (SPEC §3).

- **Databases.** kaja changes a database only when it is recognisably Kaja's,
  by its tables *and their columns* (`recognise`, with the registry's
  telltales), or when it holds no table at all (a new or empty file: nothing
  of anyone's to change). `db.open_write` asks here before it changes
  anything, WAL mode included, and every writer goes through it: a schema
  upgrade, the search index build, `doctor --fix`, `usage reset`,
  `sessions delete`, `wipe --owner`, the agent's write API. `kaja wipe` asks
  before it deletes, doctor before it offers a repair or a chmod. Another
  program's database is read, and left as it is.
- **Files written on request** (`export -o`, settings.toml) are never one of
  the store's files (`store_files`: its databases, their journals, the wipe
  markers, anything under `files/`), compared by real path and by inode (a
  hard link is the same file), and only a regular file you own; a symbolic
  link is followed only to one (`write_target`, exit 5 otherwise).
- **A file kaja writes whole** (a backup's archive) is never written through
  a symbolic link, and never over an existing file it does not recognise as
  one it wrote, unless `--force` names it (`own_file_target`, exit 5); even
  then a link itself is replaced, never what it points to.
- **chmod** only of regular files, and of folders holding nothing but what
  kaja creates; never a device, a FIFO, a symlinked folder, your home folder
  or one above it, a shared sticky folder (`/tmp`'s 1777), or another
  user's (`why_not_tighten`).
- **Opening**: only regular files, never blocking (`fs.open_regular`).
- **Deleting**: never through a symbolic link (`real_folder`, and wipe's plan).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.engine import fs
from kaja_cli.core.engine.fs import home_or_above, is_home_or_above, safe_name
from kaja_cli.core.store.markers import SUFFIX, Operation
from kaja_cli.core.store.registry import (  # noqa: F401 - guard is where callers ask
    LEGACY_FILES,
    DatabaseFile,
    Verdict,
    not_kajas,
    recognise,
    require_kajas,
    telltales_match,
)
from kaja_cli.errors import Refused

if TYPE_CHECKING:
    from kaja_cli.core.store.paths import Paths

# The markers interrupted commands leave beside the shared file (core/store/markers.py).
MARKER_SUFFIX = SUFFIX[Operation.WIPE]  # `kaja.db.wiping`, `kaja.db.wiping-owner-…`: wipe's
RESTORE_MARKER_SUFFIX = SUFFIX[Operation.RESTORE]  # `kaja.db.restoring`: an interrupted restore's
PRUNE_SUFFIX = SUFFIX[Operation.PRUNE]  # `kaja.db.pruning`: the image folders a prune will remove


# --- is this database Kaja's? ------------------------------------------------------------
# Told by the registry's telltales (`registry.recognise`, `DatabaseFile.admit`);
# here, what follows from the verdict: a file whose interrupted write kaja may roll back.
def recognised_as_found(path: Path, file: DatabaseFile) -> Verdict | None:
    """`recognise` on the main file as it lies, past any -journal or -wal (None:
    unreadable): whose the file is, before an interrupted write is rolled back."""
    from kaja_cli.core.engine import db

    try:
        conn = db.connect_as_found(path)
        try:
            return recognise(conn, file)
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def may_recover(file: DatabaseFile) -> Callable[[Path], bool]:
    """Whether an interrupted write may be rolled back in the file at a path (a
    write, as SQLite's first read would do it): only in a file that is Kaja's,
    or has no table yet (one being created). Another program's is left alone."""

    def kajas(path: Path) -> bool:
        verdict = recognised_as_found(path, file)
        return verdict is not None and verdict.kajas

    return kajas


# --- the store's own files -----------------------------------------------------------------
def store_files(paths: Paths) -> list[Path]:
    """Every path of the store: its databases with their -wal, -shm and
    -journal, the wipe and restore markers and the files/ folder (with all it holds)."""
    from kaja_cli.core.store.paths import companions

    out = [paths.files_dir]
    for f in paths.databases():
        out += [f.path, *companions(f.path)]
    for suffix in (MARKER_SUFFIX, RESTORE_MARKER_SUFFIX):
        marker = fs.beside(paths.shared_db.path, suffix)
        out.append(marker)
        try:
            out += [
                marker.parent / n for n in os.listdir(marker.parent) if n.startswith(marker.name)
            ]
        except OSError:
            pass
    out.append(fs.beside(paths.shared_db.path, PRUNE_SUFFIX))
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def part_of_store(path: Path, protected: Iterable[Path]) -> Path | None:
    """The store file (or folder) `path` is, or lies in; None when it is none of them.

    By real path (links resolved, `..` folded) and by inode (a hard link to
    `kaja.db` under another name is still `kaja.db`)."""
    real = Path(os.path.realpath(path))
    me = _identity(real)
    for p in protected:
        other = Path(os.path.realpath(p))
        if real == other or other in real.parents:
            return p
        if me is not None and not os.path.isdir(other) and _identity(other) == me:
            return p
    return None


# --- files written on request ------------------------------------------------------------------
class Target(NamedTuple):
    """A file kaja writes on request: as named (`path`) and the file written (`real`)."""

    path: Path
    real: Path
    exists: bool

    @property
    def lock_path(self) -> Path:
        return self.real.with_name(f".{self.real.name}.lock")


def write_target(path: Path, protected: Iterable[Path] = (), *, what: str = "file") -> Target:
    """The file a write to `path` replaces; Refused (exit 5) when kaja must not.

    A symbolic link is followed (dotfiles kept in a repository) to a regular
    file you own, which is replaced and the link kept; a dangling link, a
    FIFO, a device, a folder, another user's or a read-only file is refused,
    and so is any of the store's files (`protected`, see `store_files`).
    """
    protected = list(protected)
    try:
        st = path.lstat()
    except FileNotFoundError:
        _not_protected(path, protected, what)
        return Target(path, Path(os.path.realpath(path)), False)
    if stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(path))
        try:
            st = real.stat()
        except OSError:
            raise Refused(
                f"{path} is a symbolic link to {real}, which does not exist",
                hint="kaja does not create files through a dangling link; fix or remove the link",
            ) from None
        if not stat.S_ISREG(st.st_mode):
            raise Refused(
                f"{path} is a symbolic link to {real}, which is {fs.what_is(st)}, not a regular file"
            )
    elif not stat.S_ISREG(st.st_mode):
        raise Refused(
            f"{path} is {fs.what_is(st)}, not a regular file: kaja writes a {what} only to one"
        )
    else:
        real = Path(os.path.realpath(path))  # the folder may be a link; the file is not
    _not_protected(path, protected, what)
    _check_writable(path, real, st)
    return Target(path, real, True)


def own_file_target(
    path: Path, protected: Iterable[Path] = (), *, what: str, ours: Callable[[Path], bool],
    force: bool = False,
) -> Path:  # fmt: skip
    """Where a file kaja writes whole (a backup) goes: `path` itself, never
    through a link. Refused (exit 5): a symbolic link, or an existing file
    that `ours` does not recognise (one kaja did not write), unless `force`
    (then the link itself, or the file, is replaced); always one of the
    store's files, a folder, a FIFO, another user's or a read-only file."""
    protected = list(protected)
    try:
        st = path.lstat()
    except FileNotFoundError:
        _not_protected(path, protected, what)
        return path
    if stat.S_ISLNK(st.st_mode):
        _not_protected(path, protected, what)  # by what it points to: never into the store
        if not force:
            raise Refused(
                f"{path} is a symbolic link (to {os.path.realpath(path)}):"
                f" kaja never writes a {what} through a link",
                hint="name another file, or add --force to replace the link itself"
                " (what it points to is left as it is)",
            )
        return path
    target = write_target(path, protected, what=what)
    if not force and not ours(path):
        raise Refused(
            f"{path} exists and is not a kaja {what}: kaja replaces only what it wrote",
            hint="name another file, or add --force to replace it",
        )
    return target.path


def _not_protected(path: Path, protected: list[Path], what: str) -> None:
    hit = part_of_store(path, protected)
    if hit is not None:
        which = "" if Path(os.path.abspath(path)) == Path(os.path.abspath(hit)) else f" ({hit})"
        raise Refused(
            f"{path} is part of Kaja's store{which}: kaja never writes a {what} over it",
            hint="choose another path",
        )


def _check_writable(path: Path, real: Path, st: os.stat_result) -> None:
    named = f"{path} (a link to {real})" if real != path else str(path)
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise Refused(f"{named} belongs to another user: kaja changes only your own files")
    if not st.st_mode & stat.S_IWUSR:
        raise Refused(
            f"{named} is read-only (mode {stat.S_IMODE(st.st_mode):04o}): kaja leaves it as it is",
            hint="make it writable (chmod u+w) to let kaja change it",
        )


# --- chmod --------------------------------------------------------------------------------------
def why_not_tighten(path: Path, paths: Paths) -> str | None:
    """Why kaja must not chmod `path` (None: it may take permissions away).

    Regular files (a link to one: its target) and folders that hold nothing
    but what kaja creates; never anything else."""
    try:
        st = path.lstat()
    except OSError:
        return "it is gone"
    if stat.S_ISLNK(st.st_mode):
        try:
            st = path.stat()
        except OSError:
            return "a dangling symbolic link"
        if stat.S_ISDIR(st.st_mode):
            return "a symbolic link to a folder kaja did not make"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "it belongs to another user"
    if stat.S_ISREG(st.st_mode):
        return None
    if not stat.S_ISDIR(st.st_mode):
        return f"{fs.what_is(st)}, not a file kaja made"
    if is_home_or_above(path):
        return home_or_above(path)
    if st.st_mode & stat.S_ISVTX:
        return "a shared folder (sticky bit, like /tmp)"
    stranger = _stranger_in(path, paths)
    if stranger is not None:
        return f"it holds {stranger.name}, which kaja did not create"
    return None


def _stranger_in(folder: Path, paths: Paths) -> Path | None:
    """Something in `folder` kaja does not create, if any."""
    try:
        names = os.listdir(folder)
    except OSError:
        return folder
    ours = _own_names(folder, paths)
    for name in names:
        entry = folder / name
        if name in ours:
            continue
        if folder == paths.images_dir and safe_name(name) and entry.is_dir():
            continue  # a session's image folder
        if folder.parent == paths.images_dir and not entry.is_symlink() and entry.is_file():
            continue  # an image in a session's folder
        if name.startswith(".") and name.endswith(".tmp"):
            continue  # an atomic write under way (settings, an export)
        return entry
    return None


def _own_names(folder: Path, paths: Paths) -> set[str]:
    """The names kaja (or the agent) creates in `folder`."""
    from kaja_cli.core.store.paths import companions

    names: set[str] = set()
    for f in paths.databases():
        if f.path.parent == folder:
            names |= {f.path.name, *(c.name for c in companions(f.path))}
    shared = paths.shared_db.path
    if shared.parent == folder:
        names.add(paths.files_dir.name)
        names |= {n for n in _listing(folder)
                  if n.startswith((shared.name + MARKER_SUFFIX, shared.name + RESTORE_MARKER_SUFFIX))}  # fmt: skip
        names.add(shared.name + PRUNE_SUFFIX)
    if paths.files_dir == folder:
        names.add(paths.images_dir.name)
    if paths.state_dir.path == folder:
        names |= set(LEGACY_FILES)
    settings = paths.settings_file.path
    if settings.parent == folder:
        names |= {settings.name, f".{settings.name}.lock"}
    return names


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


# --- deleting ------------------------------------------------------------------------------------
def link_between(path: Path, base: Path) -> Path | None:
    """The first symbolic link on the way from `base` down to `path` (`base`
    itself may be one: a state dir kept elsewhere is the user's choice);
    None when there is none. kaja deletes nothing through one."""
    path, base = Path(os.path.normpath(path)), Path(os.path.normpath(base))
    if base not in path.parents:
        return None
    for p in reversed([path, *path.parents[: len(path.parents) - len(base.parents) - 1]]):
        if p.is_symlink():
            return p
    return None


def real_folder(path: Path, base: Path) -> bool:
    """Whether `path` and every folder between it and `base` is a real folder,
    not a symbolic link (`base` itself may be one: a state dir kept elsewhere
    is the user's choice): what kaja deletes there is what it looked at."""
    path, base = Path(os.path.normpath(path)), Path(os.path.normpath(base))
    if base not in path.parents:
        return False
    p = path
    while p != base:
        try:
            st = p.lstat()
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        p = p.parent
    return True
