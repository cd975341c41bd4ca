"""What backup, restore and optimize may read, write and replace: `core/guard.py`'s
rule, with what these three commands add to it.

- **The archive `kaja backup` writes** is a file written on request
  (`guard.write_target`): never one of the store's files (`guard.store_files`,
  the restore markers included); a folder means "put it in there" under the
  default name.
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


def archive_target(paths: Paths, output: Path | None, now: datetime) -> Path:
    """The file `kaja backup` writes (the real path: a link is followed).

    None: the default name in the current folder; a folder: the default name
    in it. UsageError (exit 2) for a folder that does not exist; Refused
    (exit 5) for anything kaja must not replace (`guard.write_target`).
    """
    if output is None:
        output = Path.cwd() / default_name(now)
    elif output.is_dir():
        output = output / default_name(now)
    output = Path(os.path.abspath(output))
    target = guard.write_target(output, guard.store_files(paths), what="backup")
    if not target.real.parent.is_dir():
        raise UsageError(f"-o: no folder {target.real.parent}", hint="create it first")
    return target.real


def require_database_file(path: Path) -> None:
    """Refused (exit 5) unless `path` is a SQLite file (or empty) whose -wal,
    -shm and -journal are regular files (`db.require_database`)."""
    db.require_database(path, writing=True)
