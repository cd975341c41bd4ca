"""Notes in cloud mode: kaja's schema on the server, the account's notes (the
engine part of `side.notes`, through `store.part`).

Listing, showing and planning are the skeleton's SQL, which both engines
speak. Forgetting is one transaction on the server, through ordinary SQL.
Searching reads the acting owner's notes from the server (notes are few:
hundreds, not the messages' millions) in the order they were stored, into a
SQLite database in memory, and asks it exactly as local search asks the
store's file (`scan`: the same FTS4 tokenizer, query syntax and BM25), so
both engines find the same notes with the same scores. The server's own
full-text search would rank with other numbers (its index of messages is
built for messages only), and an index of notes there would be one more
thing for every writer to keep.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from kaja_cli.core.conversations.sessions import col
from kaja_cli.core.side.notes import (
    NOTE_COLUMNS,
    ForgetPlan,
    Note,
    NoteSearch,
    _have,
    _owner_where,
    _rows,
    _select,
    deleting,
)

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


def location(store: Store, *, writing: bool = False) -> str:
    """The server (password as ***) and schema: there is no file to check."""
    return store.where()


def forget(store: Store, plan: ForgetPlan) -> list[Note]:
    """One transaction on the server. PostgreSQL never overwrites freed space
    (SQLite's secure_delete has no equivalent): the rows' bytes stay on the
    server's disk until it reuses them (docs/guides/cloud.md)."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import markers

    with store.writer() as conn:
        with db.transaction(conn):
            gone = deleting(conn, plan)
            markers.checkpoint("notes-commit")
    return gone


def search(
    store: Store, result: NoteSearch, after: str | None, before: str | None = None
) -> NoteSearch:
    """The acting owner's notes (every owner's with --all-owners), read in one
    query in the order stored (`ctid`, as SQLite's rowid), searched in memory."""
    from kaja_cli.core.side.notes import scan

    with store.maybe_reader() as conn:
        if conn is None:
            result.remarks.append(f"no Kaja store in {result.location}: no notes to search")
            return result
        have = _have(conn)
        if have is None:
            result.remarks.append(f"{result.location} has no notes table: no notes to search")
            return result
        sql, args = _select(have), ()
        if result.owner is not None:
            where, args = _owner_where(result.owner, col(have, "n", "owner"))
            sql += f" WHERE {where}"
        rows = _rows(conn.execute(f"{sql} ORDER BY n.ctid", args))
    memory = sqlite3.connect(":memory:")
    try:
        names = [*NOTE_COLUMNS, *(c for c in have if c not in NOTE_COLUMNS)]
        quoted = ", ".join('"' + n.replace('"', '""') + '"' for n in names)
        memory.execute(f"CREATE TABLE notes ({quoted})")
        memory.executemany(
            f"INSERT INTO notes ({quoted}) VALUES ({', '.join('?' * len(names))})",
            [tuple(_sqlite_value(r[n]) for n in names) for r in rows],
        )
        return scan.search(memory, result, after, before)
    finally:
        memory.close()


def _sqlite_value(value: object) -> object:
    """A value SQLite can hold: what is not text, a number or bytes (a column
    of another type a newer writer added) as its text."""
    if value is None or isinstance(value, (str, int, float, bytes)):
        return value
    return str(value)
