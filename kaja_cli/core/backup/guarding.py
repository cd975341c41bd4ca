"""What backup, restore and optimize may read, write and replace.

- **The archive `kaja backup` writes** is never one of the store's files: its
  databases with their -wal, -shm and -journal, the wipe and restore markers,
  anything under `files/`. Compared by real path (links resolved, `..`
  folded) and by inode (a hard link to `kaja.db` under another name is still
  `kaja.db`). A symbolic link is followed to a regular file; a dangling link,
  a FIFO, a device or another user's file is refused (exit 5). A folder means
  "put it in there" under the default name.
- **A database is Kaja's** by its tables: the registry's telltales (a table
  only Kaja's shared file has), else any table the registry gives it, or no
  table at all. Backup, restore and optimize refuse (exit 5) another
  program's database.

The foreign-file-safety work brings one rule of this kind for every command
(`core/guard.py`); until it is on main, this module is that rule for these
three commands.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from kaja_cli.core import db
from kaja_cli.core.paths import Paths, companions
from kaja_cli.core.registry import DatabaseFile
from kaja_cli.errors import Refused, UsageError

WIPE_MARKER_SUFFIX = ".wiping"
RESTORE_MARKER_SUFFIX = ".restoring"


def default_name(now: datetime) -> str:
    return f"kaja-backup-{now.strftime('%Y%m%dT%H%M%SZ')}.tar.gz"


# --- the store's own files ------------------------------------------------------------------
def store_files(paths: Paths) -> list[Path]:
    """Every path of the store: its databases with their companions, the
    wipe and restore markers, and the files/ folder (with all it holds)."""
    out = [paths.files_dir]
    for f in paths.databases():
        out += [f.path, *companions(f.path)]
    shared = paths.shared_db.path
    out += [shared.with_name(shared.name + s) for s in (WIPE_MARKER_SUFFIX, RESTORE_MARKER_SUFFIX)]
    try:
        out += [
            shared.parent / n
            for n in os.listdir(shared.parent)
            if n.startswith(shared.name + WIPE_MARKER_SUFFIX)
            or n.startswith(shared.name + RESTORE_MARKER_SUFFIX)
        ]
    except OSError:
        pass
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def part_of_store(path: Path, protected: Iterable[Path]) -> Path | None:
    """The store path that `path` is, or lies in; None when it is none of them."""
    real = Path(os.path.realpath(path))
    me = _identity(real)
    for p in protected:
        other = Path(os.path.realpath(p))
        if real == other or other in real.parents:
            return p
        if me is not None and not os.path.isdir(other) and _identity(other) == me:
            return p
    return None


def archive_target(paths: Paths, output: Path | None, now: datetime) -> Path:
    """The file `kaja backup` writes (the real path: a link is followed).

    None: the default name in the current folder; a folder: the default name
    in it. UsageError (exit 2) for a folder that does not exist; Refused
    (exit 5) for anything kaja must not replace.
    """
    if output is None:
        output = Path.cwd() / default_name(now)
    elif output.is_dir():
        output = output / default_name(now)
    output = Path(os.path.abspath(output))
    try:
        st = output.lstat()
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(output))
        try:
            st = real.stat()
        except OSError:
            raise Refused(
                f"{output} is a symbolic link to {real}, which does not exist",
                hint="kaja writes no file through a dangling link; fix or remove the link",
            ) from None
        output_real = real
    else:
        output_real = Path(os.path.realpath(output))
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise Refused(
            f"{output} is not a regular file (a FIFO or a device?): kaja writes a backup only to one"
        )
    if st is not None and hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise Refused(f"{output} belongs to another user: kaja replaces only your own files")
    if not output_real.parent.is_dir():
        raise UsageError(f"-o: no folder {output_real.parent}", hint="create it first")
    inside = part_of_store(output_real, store_files(paths))
    if inside is not None:
        raise Refused(
            f"{output} is part of Kaja's store ({inside}): a backup never replaces the store's files",
            hint="write it somewhere else, with -o FILE",
        )
    return output_real


# --- is a database Kaja's? ------------------------------------------------------------------
def kajas(conn: sqlite3.Connection, file: DatabaseFile) -> bool:
    """Whether the database on `conn` is the one `file` names, by its tables."""
    tables = {t for t in db.table_names(conn) if not t.startswith("sqlite_")}
    if not tables:
        return True
    telltales = [t for spec in file.specs for t in spec.telltales]
    if telltales:
        return any(t <= tables for t in telltales)
    return bool(tables & {t.name for t in file.tables})


def not_kajas(path: Path, file: DatabaseFile) -> Refused:
    return Refused(
        f"{path} is a SQLite database, but not Kaja's {file.spec.noun} (none of its tables is)",
        hint="kaja leaves another program's database alone; check --db and the settings",
    )


def require_database_file(path: Path) -> None:
    """Refused (exit 5) unless `path` is a regular SQLite file (or empty): never a
    folder, a link kaja would replace, a FIFO or another kind of file."""
    st = path.lstat()
    if stat.S_ISDIR(st.st_mode):
        raise Refused(f"{path} is a folder, not a Kaja database")
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise Refused(f"{path} is not a regular file, not a Kaja database")
    if db.classify(path) == "other":
        raise Refused(f"{path} is not a SQLite database")
