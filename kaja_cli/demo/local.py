"""The demo's engine part for a local store (SQLite files), asked for with
`store.part` as `server` is: the same functions.

A local store keeps every table of SPEC §4 and the side databases; what is
already there is its files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli.core.store import Store

if TYPE_CHECKING:
    from kaja_cli.core.conversations.record import Recorder

# The tables the generated sessions fill (demo/generated.py).
BULK_TABLES = ("sessions", "messages", "tool_calls", "session_events", "runs", "calls", "tools",
               "events", "logs")  # fmt: skip


def keeps(table: str) -> bool:
    """Whether the store keeps `table` (a local store keeps them all)."""
    return True


def existing(store: Store) -> list[Path | str]:
    """The store's database files already there."""
    return [f.path for f in store.paths.databases() if f.path.exists() or f.path.is_symlink()]


@contextmanager
def bulk(rec: Recorder) -> Iterator[None]:
    """Many rows at once into a fresh store: the secondary indexes of the
    tables written and the search index are dropped before and built once
    after, from the rows (sorting once is much faster than keeping them up
    to date row by row). Cut short, the store lacks them: the demo's marker
    says it is partial, and the next writer's schema check creates them."""
    from kaja_cli.core.store import schema, search_index

    tables = tuple(schema.TABLES[t] for t in BULK_TABLES)
    conn = rec.conn()
    conn.execute("PRAGMA cache_size = -262144")  # 256 MiB: the primary keys' pages stay in memory
    with rec.transaction():
        for table in tables:
            for name, _ in table.indexes:
                conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        search_index.drop(conn)
    yield
    with rec.transaction():
        schema.apply_tables(conn, tables, schema.Report())
    with rec.transaction():
        search_index.build(conn)
    search_index.merge(conn)
