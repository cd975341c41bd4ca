"""Whether a database file is recognisably Kaja's, before kaja writes to it.

kaja changes only files it can tell are Kaja's (SPEC §3): a file at the
shared file's path must have one of the registry's telltales (a table only
Kaja's shared file has: `notes` alone proves nothing), a side database one
of its own tables (`shared_cache`, `web_users`). A file with no tables at all
is one kaja or the agent created and has not filled yet.
"""

from __future__ import annotations

import sqlite3

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
