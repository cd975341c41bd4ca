"""Deleting sessions with every row that hangs off them, then their images.

Used by `kaja sessions delete` and `kaja wipe --owner`. The rows go inside the
caller's transaction; the image folders only after it committed (a rollback
must not have lost files). The session ids are a TEMP table in SQLite and an
array parameter on a PostgreSQL server (whose read-only transactions may not
create even a temporary table); the conditions are the same text.
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
from collections.abc import Iterable
from pathlib import Path

from kaja_cli.core.conversations.images import session_dir
from kaja_cli.core.engine import dialect
from kaja_cli.core.store import guard, schema

# (table, columns it needs, condition on the session ids {ids}), children
# before parents. A table another program left without one of those columns
# holds nothing that hangs off a session: it is skipped, never a reason to
# stop (SPEC §4: older and newer files).
_SESSION_ROWS = (
    (
        "tool_calls",
        {"tool_calls": {"messageId"}, "messages": {"id", "sessionId"}},
        '"messageId" IN (SELECT id FROM messages WHERE "sessionId" IN {ids})',
    ),
    ("messages", {"messages": {"sessionId"}}, '"sessionId" IN {ids}'),
    ("session_summaries", {"session_summaries": {"sessionId"}}, '"sessionId" IN {ids}'),
    ("model_calls", {"model_calls": {"sessionId"}}, '"sessionId" IN {ids}'),
    ("session_events", {"session_events": {"sessionId"}}, '"sessionId" IN {ids}'),
    ("conversation_threads", {"conversation_threads": {"thread_id"}}, "thread_id IN {ids}"),
    ("sessions", {"sessions": {"id"}}, "id IN {ids}"),
)


def _load_ids(conn: sqlite3.Connection, session_ids: Iterable[object]) -> tuple[str, tuple]:
    """The ids as SQL for `{ids}` and its parameters."""
    if dialect.of(conn) is dialect.POSTGRES:
        return "(SELECT unnest(CAST(? AS text[])))", (sorted({str(i) for i in session_ids}),)
    # No declared type: an id is compared as it is stored (TEXT, or an
    # INTEGER another program wrote).
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _kaja_ids (id PRIMARY KEY)")
    conn.execute("DELETE FROM temp._kaja_ids")
    conn.executemany(
        "INSERT OR IGNORE INTO temp._kaja_ids (id) VALUES (?)", ((i,) for i in session_ids)
    )
    return "(SELECT id FROM temp._kaja_ids)", ()


def _applicable(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    found = dialect.columns(conn, *{t for _, needs, _ in _SESSION_ROWS for t in needs})
    have = (
        {t: set(c) for t, c in found.items()} if found is not None else schema.present_columns(conn)
    )
    return [
        (table, cond)
        for table, needs, cond in _SESSION_ROWS
        if all(cols <= have.get(t, set()) for t, cols in needs.items())
    ]


def count_session_rows(conn: sqlite3.Connection, session_ids: Iterable[object]) -> dict[str, int]:
    """How many rows of each table `delete_session_rows` would delete."""
    ids, args = _load_ids(conn, session_ids)
    return {
        table: conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {cond.format(ids=ids)}", args
        ).fetchone()[0]
        for table, cond in _applicable(conn)
    }


def delete_session_rows(conn: sqlite3.Connection, session_ids: Iterable[object]) -> dict[str, int]:
    """Delete the sessions and every row hanging off them (caller's transaction).

    The search index follows (SQLite: its triggers; PostgreSQL: the indexed
    column goes with its row). Returns rows deleted per table.
    """
    ids, args = _load_ids(conn, session_ids)
    deleted = {}
    for table, cond in _applicable(conn):
        deleted[table] = conn.execute(
            f"DELETE FROM {table} WHERE {cond.format(ids=ids)}", args
        ).rowcount
    if not args:  # SQLite (the server has no archive marks: archiving is local)
        if "sessionId" in schema.present_columns(conn).get("kaja_archived", ()):
            # kaja's own mark, not a row of the conversation: not counted
            conn.execute(f"DELETE FROM kaja_archived WHERE sessionId IN {ids}")
        conn.execute("DELETE FROM temp._kaja_ids")
    return deleted


def images_link(images_dir: Path) -> Path | None:
    """`files/` or `files/images/` when it is a symbolic link: no image folder
    is deleted through it (SPEC §8), and a plan says so."""
    return guard.link_between(images_dir, images_dir.parent.parent)


def remove_image_folders(images_dir: Path, session_ids: Iterable[str]) -> list[Path]:
    """Remove `images/<sessionId>/` folders; returns those removed.

    A name that is not a safe single component is skipped; a folder that is a
    symlink loses the link, never its target; nothing outside the images
    folder is touched, and nothing at all through a symlinked `files/` or
    `images/` (`images_link`).
    """
    removed: list[Path] = []
    if images_link(images_dir) is not None:
        return removed
    for sid in session_ids:
        folder = session_dir(images_dir, sid)
        if folder is None:
            continue
        try:
            st = folder.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            folder.unlink()
            removed.append(folder)
        elif stat.S_ISDIR(st.st_mode):
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
