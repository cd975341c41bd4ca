"""Deleting sessions with every row that hangs off them, then their images.

Used by `kaja sessions delete` and `kaja wipe --owner`. The rows go inside the
caller's transaction; the image folders only after it committed (a rollback
must not have lost files).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from kaja_cli.core.db import table_names
from kaja_cli.core.images import session_dir

# (table, condition on the ids in temp._kaja_ids), children before parents.
_SESSION_ROWS = (
    (
        "tool_calls",
        "messageId IN (SELECT id FROM messages WHERE sessionId IN (SELECT id FROM temp._kaja_ids))",
    ),
    ("messages", "sessionId IN (SELECT id FROM temp._kaja_ids)"),
    ("session_summaries", "sessionId IN (SELECT id FROM temp._kaja_ids)"),
    ("model_calls", "sessionId IN (SELECT id FROM temp._kaja_ids)"),
    ("session_events", "sessionId IN (SELECT id FROM temp._kaja_ids)"),
    ("conversation_threads", "thread_id IN (SELECT id FROM temp._kaja_ids)"),
    ("sessions", "id IN (SELECT id FROM temp._kaja_ids)"),
)


def _load_ids(conn: sqlite3.Connection, session_ids: Iterable[str]) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _kaja_ids (id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp._kaja_ids")
    conn.executemany(
        "INSERT OR IGNORE INTO temp._kaja_ids (id) VALUES (?)", ((i,) for i in session_ids)
    )


def count_session_rows(conn: sqlite3.Connection, session_ids: Iterable[str]) -> dict[str, int]:
    """How many rows of each table `delete_session_rows` would delete."""
    _load_ids(conn, session_ids)
    present = table_names(conn)
    return {
        table: conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {cond}").fetchone()[0]
        for table, cond in _SESSION_ROWS
        if table in present
    }


def delete_session_rows(conn: sqlite3.Connection, session_ids: Iterable[str]) -> dict[str, int]:
    """Delete the sessions and every row hanging off them (caller's transaction).

    The search index follows through its triggers. Returns rows deleted per table.
    """
    _load_ids(conn, session_ids)
    present = table_names(conn)
    deleted = {}
    for table, cond in _SESSION_ROWS:
        if table in present:
            deleted[table] = conn.execute(f"DELETE FROM {table} WHERE {cond}").rowcount
    if "kaja_archived" in present:  # kaja's own mark, not a row of the conversation
        conn.execute("DELETE FROM kaja_archived WHERE sessionId IN (SELECT id FROM temp._kaja_ids)")
    conn.execute("DELETE FROM temp._kaja_ids")
    return deleted


def remove_image_folders(images_dir: Path, session_ids: Iterable[str]) -> list[Path]:
    """Remove `images/<sessionId>/` folders; returns those removed.

    A name that is not a safe single component is skipped; a folder that is a
    symlink loses the link, never its target; nothing outside the images
    folder is touched.
    """
    removed = []
    try:
        root = images_dir.resolve(strict=True)
    except OSError:
        return removed
    for sid in session_ids:
        folder = session_dir(images_dir, sid)
        if folder is None:
            continue
        if folder.is_symlink():
            folder.unlink()
            removed.append(folder)
        elif folder.is_dir() and folder.resolve().parent == root:
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
