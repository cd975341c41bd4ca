"""`kaja sessions stats` in cloud mode: kaja's schema on the server (SPEC §10).

The server's read-only transactions make no table, not even a temporary one:
the per-session rows are a `WITH` that each query starts with, all of them in
one snapshot (one transaction). The sizes are PostgreSQL's own: the search
index (`messages.kaja_search`'s GIN index) and kaja's tables with their
indexes and TOAST (`pg_total_relation_size`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kaja_cli.core.conversations.stats import Source
from kaja_cli.core.store.server import schema as pg_schema

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


@contextmanager
def per_session(conn: Any, select: str, args: list) -> Iterator[Source]:
    conn.execute("BEGIN")  # one snapshot for every query over the rows
    try:
        yield Source("kaja_stats", f"WITH kaja_stats AS ({select}) ", tuple(args))
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def index_bytes(conn: Any) -> int | None:
    """The search index's bytes on the server; None when there is none."""
    row = conn.execute(
        f"SELECT pg_catalog.pg_relation_size(c.oid) FROM {_IN_SCHEMA} AND c.relname = ?"
        " AND c.relkind = 'i'",
        (conn.target.schema, pg_schema.SEARCH_INDEX),
    ).fetchone()
    return (int(row[0]) or None) if row is not None else None


def database_bytes(store: Store, conn: Any) -> int:
    """kaja's tables in its schema, with their indexes and TOAST."""
    row = conn.execute(
        f"SELECT coalesce(sum(pg_catalog.pg_total_relation_size(c.oid)), 0) FROM {_IN_SCHEMA}"
        " AND c.relname = ANY(CAST(? AS text[])) AND c.relkind IN ('r', 'p')",
        (conn.target.schema, sorted(pg_schema.KAJA_TABLES)),
    ).fetchone()
    return int(row[0])


_IN_SCHEMA = (
    "pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
    " WHERE n.nspname = ?"
)
