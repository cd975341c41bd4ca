"""Deleting sessions with every row that hangs off them, then their images.

Used by `kaja sessions delete` and `kaja wipe --owner`. The rows go inside the
caller's transaction; the image folders only after it committed (a rollback
must not have lost files). The session ids are the engine's `in_ids` (a TEMP
table in SQLite, an array parameter on a PostgreSQL server); the conditions
are the same text on both but for that.
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kaja_cli.core.conversations.filter import ARCHIVE_TABLE
from kaja_cli.core.conversations.images import session_dir
from kaja_cli.core.engine import dialect
from kaja_cli.core.store import guard

# (table, columns it needs, condition on the session ids), children before
# parents; `{in_ids}` is the engine's "is one of the ids" (`dialect.in_ids`).
# A table another program left without one of those columns holds nothing
# that hangs off a session: it is skipped, never a reason to stop (SPEC §4:
# older and newer files). A pair (column, subquery) is "the column is one of
# the subquery's values", spelled by the engine too (`dialect.in_subquery`);
# `condition()` writes each out. On a server both are arrays an index is
# probed with: a subquery in `IN (…)` may hash-join a scan of the whole
# table instead, in every batch of a prune.
_SESSION_ROWS = (
    (
        "tool_calls",
        {"tool_calls": {"messageId"}, "messages": {"id", "sessionId"}},
        ('"messageId"', 'SELECT id FROM messages WHERE "sessionId" {in_ids}'),
    ),
    ("messages", {"messages": {"sessionId"}}, '"sessionId" {in_ids}'),
    ("session_summaries", {"session_summaries": {"sessionId"}}, '"sessionId" {in_ids}'),
    ("model_calls", {"model_calls": {"sessionId"}}, '"sessionId" {in_ids}'),
    ("session_events", {"session_events": {"sessionId"}}, '"sessionId" {in_ids}'),
    ("conversation_threads", {"conversation_threads": {"thread_id"}}, "thread_id {in_ids}"),
    ("sessions", {"sessions": {"id"}}, "id {in_ids}"),
)


def condition(cond: str | tuple[str, str], d: dialect.Dialect, in_ids: str) -> str:
    """One of the conditions above, written out for the engine `d` with
    `in_ids` (the first part of `d.in_ids`)."""
    if isinstance(cond, tuple):
        column, subquery = cond
        return d.in_subquery(column, subquery.format(in_ids=in_ids))
    return cond.format(in_ids=in_ids)


class Tables(NamedTuple):
    """What hangs off a session in this database (`tables()`): (table, condition)
    children first, and whether there are archive marks to drop."""

    rows: list[tuple[str, str | tuple[str, str]]]
    archive: bool


def tables(conn: sqlite3.Connection) -> Tables:
    """Asked of the catalog once; a caller deleting in many batches keeps it."""
    names = {t for _, needs, _ in _SESSION_ROWS for t in needs} | {ARCHIVE_TABLE}
    have = dialect.of(conn).columns(conn, *sorted(names), views=False)
    rows = [
        (table, cond)
        for table, needs, cond in _SESSION_ROWS
        if all(cols <= set(have.get(t, ())) for t, cols in needs.items())
    ]
    return Tables(rows, "sessionId" in have.get(ARCHIVE_TABLE, ()))


def count_session_rows(
    conn: sqlite3.Connection,
    session_ids: Iterable[object],
    *,
    given: dict[str, int] | None = None,
) -> dict[str, int]:
    """How many rows of each table `delete_session_rows` would delete (one
    statement); a table in `given` is not counted again (the caller knows)."""
    given = given or {}
    rows = tables(conn).rows
    if not rows:
        return {}
    asked = [(table, cond) for table, cond in rows if table not in given]
    found: tuple = ()
    if asked:
        d = dialect.of(conn)
        in_ids, args = d.in_ids(conn, session_ids)
        counts = ", ".join(
            f"(SELECT COUNT(*) FROM {table} WHERE {condition(cond, d, in_ids)})"
            for table, cond in asked
        )
        found = conn.execute(f"SELECT {counts}", args * len(asked)).fetchone()
    counted = {table: int(n) for (table, _), n in zip(asked, found, strict=True)}
    return {table: given[table] if table in given else counted[table] for table, _ in rows}


def delete_session_rows(
    conn: sqlite3.Connection, session_ids: Iterable[object], known: Tables | None = None
) -> dict[str, int]:
    """Delete the sessions and every row hanging off them (caller's transaction;
    `known`: `tables(conn)`, when the caller asked already).

    The search index follows (SQLite: its triggers; PostgreSQL: the indexed
    column goes with its row). Returns rows deleted per table.
    """
    return delete_measured(conn, session_ids, known)[0]


def delete_measured(
    conn: sqlite3.Connection,
    session_ids: Iterable[object],
    known: Tables | None = None,
    message_sum: str | None = None,
) -> tuple[dict[str, int], int]:
    """`delete_session_rows`, and the sum of `message_sum` (an expression of
    a message's columns, unqualified) over the messages it deleted: on a
    server from what the one statement returned, no read of its own."""
    known = known or tables(conn)
    d = dialect.of(conn)
    in_ids, args = d.in_ids(conn, session_ids)
    deletes = [(table, condition(cond, d, in_ids)) for table, cond in known.rows]
    # kaja's own mark, not a row of the conversation: not counted (a server
    # schema made before version 2 has no archive marks)
    if known.archive:
        deletes.append((ARCHIVE_TABLE, f'"sessionId" {in_ids}'))
    summed = ("messages", message_sum) if message_sum else None
    counts, total = d.delete_rows(conn, deletes, args, summed)  # on a server: one statement
    return {table: n for (table, _), n in zip(known.rows, counts, strict=False)}, total


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
