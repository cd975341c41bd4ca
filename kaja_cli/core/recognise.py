"""Whether a database file is one kaja may open, and recognisably Kaja's
before kaja writes to it.

A path that is not a regular file (a FIFO, a device, a folder) is never
opened: opening a FIFO blocks until someone writes to it (SPEC §3).

kaja changes only files it can tell are Kaja's (SPEC §3): a file at the
shared file's path must have one of the registry's telltales (a table only
Kaja's shared file has: `notes` alone proves nothing), a side database one
of its own tables (`shared_cache`, `web_users`). A file with no tables at all
is one kaja or the agent created and has not filled yet.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from kaja_cli.core.db import table_names
from kaja_cli.core.registry import DatabaseFile
from kaja_cli.errors import Refused


def is_kajas(tables: set[str], file: DatabaseFile) -> bool:
    if not tables:
        return True
    telltales = file.spec.telltales
    if telltales:
        return any(t <= tables for t in telltales)
    return bool(tables & {t.name for t in file.tables})


def require_kajas(conn: sqlite3.Connection, file: DatabaseFile) -> None:
    """Refused (exit 5) unless the file `conn` reads is Kaja's `file`."""
    if not is_kajas(table_names(conn), file):
        raise Refused(
            f"{file.path} is a SQLite database, but not Kaja's {file.spec.noun}",
            hint="kaja changes nothing in it; check --db, --state-dir or KAJA_STATE_DIR",
        )


def require_regular(path: Path, what: str) -> None:
    """Refused (exit 5) when something other than a regular file is at `path`
    (a symbolic link to a regular file is one). A missing path passes: the
    caller says nothing is there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise Refused(f"{path} is a broken symbolic link, not {what}") from None
        return
    except OSError as e:
        raise Refused(f"{path} can't be opened: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise Refused(f"{path} is {kind}, not {what}", hint="kaja leaves it alone")
