"""`kaja sessions stats` on a SQLite file: the per-session rows in a temporary
table, the search index's pages (`dbstat`) and the file's size."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kaja_cli.core.conversations.stats import Source
from kaja_cli.core.store.search_index import FTS_TABLE

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

_INDEX_TABLES = tuple(f"{FTS_TABLE}_{s}" for s in ("segments", "segdir", "docsize", "stat"))


@contextmanager
def per_session(conn: sqlite3.Connection, select: str, args: list) -> Iterator[Source]:
    """The rows of `select` in `temp.kaja_stats`, made once (a read-only
    connection may: it lives in the connection's temp database)."""
    conn.execute("DROP TABLE IF EXISTS temp.kaja_stats")
    conn.execute(f"CREATE TEMP TABLE kaja_stats AS {select}", args)
    yield Source("temp.kaja_stats")


def index_bytes(conn: sqlite3.Connection) -> int | None:
    """Pages the search index's tables take (dbstat), or None when it can't say."""
    total = 0
    try:
        for name in _INDEX_TABLES:
            row = conn.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name = ? AND aggregate = TRUE", (name,)
            ).fetchone()
            total += int(row[0] or 0)
    except sqlite3.OperationalError:  # no dbstat in this SQLite
        return None
    return total or None


def database_bytes(store: Store, conn: sqlite3.Connection) -> int:
    """The shared file with its -wal."""
    path = store.path()
    size = 0
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            size += p.stat().st_size
        except OSError:
            pass
    return size
