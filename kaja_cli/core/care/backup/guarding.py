"""What backup, restore and optimize may read, write and replace: `core/guard.py`'s
rule, with what these three commands add to it.

- **The archive `kaja backup` writes** is a file kaja writes whole
  (`guard.own_file_target`): never one of the store's files (`guard.store_files`,
  the restore markers included), never through a symbolic link, never over a
  file that is not a kaja backup, unless `--force` names it; a folder means
  "put it in there" under the default name.
- **A database is Kaja's** by `guard.recognise` (its tables and their
  columns); backup, restore and optimize refuse (exit 5) another program's.
- **A database file** is a SQLite file with regular -wal/-shm/-journal
  (`db.require_database`), else refused (exit 5).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from kaja_cli.core import clock
from kaja_cli.core.engine import db
from kaja_cli.core.store import guard
from kaja_cli.core.store.paths import Paths
from kaja_cli.errors import UsageError


def default_name(now: datetime) -> str:
    return f"kaja-backup-{clock.stamp(now)}.tar.gz"


def archive_target(
    paths: Paths, output: Path | None, now: datetime, *, force: bool = False
) -> Path:
    """The file `kaja backup` writes: the path itself, never through a link.

    None: the default name in the current folder; a folder: the default name
    in it. UsageError (exit 2) for a folder that does not exist; Refused
    (exit 5) for anything kaja must not replace (`guard.own_file_target`): a
    symbolic link, or a file that is not a kaja backup, unless `force`.
    """
    if output is None:
        output = Path.cwd() / default_name(now)
    elif output.is_dir():
        output = output / default_name(now)
    output = Path(os.path.abspath(output))
    if not output.parent.is_dir():
        raise UsageError(f"-o: no folder {output.parent}", hint="create it first")
    return guard.own_file_target(
        output, guard.store_files(paths), what="backup", ours=is_backup, force=force
    )


def is_backup(path: Path) -> bool:
    """Whether `path` is an archive `kaja backup` wrote (its first member is one of kaja's)."""
    from kaja_cli.core.care.backup import archive
    from kaja_cli.errors import KajaError

    try:
        archive.check_first_member(path)
    except KajaError:
        return False
    return True


def require_database_file(path: Path) -> None:
    """Refused (exit 5) unless `path` is a SQLite file (or empty) whose -wal,
    -shm and -journal are regular files (`db.require_database`)."""
    db.require_database(path, writing=True)
