"""Notes in the store's SQLite file: where they are, forgetting them with the
text overwritten on disk, and searching them in the store's own read-only
connection (the engine part of `side.notes`, through `store.part`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli.core.side.notes import ForgetPlan, Note, NoteSearch, deleting

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


def location(store: Store, *, writing: bool = False) -> Path:
    """The shared file's path. What is not a SQLite file (a FIFO would block)
    is never opened: exit 1 for a reading command, 5 for a writing one (the
    core's one rule, `db.require_database`)."""
    from kaja_cli.core.engine import db

    path = store.path()
    if os.path.lexists(path):
        db.require_database(path, writing=writing)
    return path


def forget(store: Store, plan: ForgetPlan) -> list[Note]:
    """One transaction; overwritten on disk (`secure_delete`): forgotten text
    does not linger in free pages."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import markers

    with store.writer() as conn:
        conn.execute("PRAGMA secure_delete = ON")
        with db.transaction(conn):
            gone = deleting(conn, plan)
            markers.checkpoint("notes-commit")
    return gone


def search(
    store: Store, result: NoteSearch, after: str | None, before: str | None = None
) -> NoteSearch:
    """The candidates go into a temporary FTS4 table of the store's read-only
    connection (`scan`): nothing is written to the file."""
    from kaja_cli.core.side.notes import scan

    path = store.path()
    if not path.exists():
        result.remarks.append(f"no Kaja store at {path}: no notes to search")
        return result
    with store.reader() as conn:
        return scan.search(conn, result, after, before)
