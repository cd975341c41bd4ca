"""Reading a file another program wrote: which of the conversation tables'
columns it has, and a column in SQL that reads as NULL when it is missing.

Every conversation query starts here (SPEC §4: older and newer files must
stay readable): the listing and the filter (`sessions`, `filter`), one
session read back (`transcript`), the cascade of a delete, export and stats.
The engine's dialect answers the question (a file's `sqlite_master`, or
kaja's schema on the server).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kaja_cli.core.engine import dialect


def columns(conn: Any, *tables: str) -> dict[str, list[str]]:
    """The columns of those tables (or views) that exist, in their order; one query."""
    return dialect.of(conn).columns(conn, *tables)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def col(have: Sequence[str] | None, alias: str, name: str) -> str:
    """`alias."name"` when the column exists, else `NULL` (an older writer)."""
    return f"{alias}.{quote(name)}" if have and name in have else "NULL"
