"""`kaja wipe --owner`: erase everything one owner stored, in one transaction,
then their image folders (`plan_owner()`, `execute_owner()`)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from kaja_cli.core import values
from kaja_cli.core.care.wipe import hook
from kaja_cli.core.care.wipe.markers import (
    MARKER_VERSION,
    describe,
    listed_paths,
    live_sessions,
    marker_path,
    write_marker,
)
from kaja_cli.core.care.wipe.model import Leftovers, Mention, OwnerPlan, OwnerResult
from kaja_cli.core.care.wipe.reach import READ_TIMEOUT_MS, image_item, lstat_or_none
from kaja_cli.core.clock import now_iso
from kaja_cli.core.conversations import cascade, images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, schema
from kaja_cli.core.store.paths import Paths
from kaja_cli.errors import Busy, Interrupted, NotFound, Refused

# Rows that still refer to the owner after `--owner` and stay: the usage
# ledger, learning and services are not the conversation store (SPEC §8).
_OWNER_RUNS = (
    "run_id IN (SELECT id FROM runs WHERE thread_id IN (SELECT value FROM json_each(:ids)))"
)
_MENTIONS = (
    ("runs", "thread_id IN (SELECT value FROM json_each(:ids))", "usage ledger"),
    *((t, _OWNER_RUNS, "usage ledger") for t in ("calls", "tools", "events", "logs", "media")),
    ("feedback", "user_id IN (SELECT value FROM json_each(:res))", "usage ledger"),
    (
        "experience_runs",
        "resource_id IN (SELECT value FROM json_each(:res))"
        " OR thread_id IN (SELECT value FROM json_each(:ids))",
        "learning",
    ),
    ("schedules", "resource_id IN (SELECT value FROM json_each(:res))", "services"),
    ("background_tasks", "resource_id IN (SELECT value FROM json_each(:res))", "services"),
)
# Erased besides the sessions' rows, by their owner column (terminal: '').
_OWNER_TABLES = ("notes", "dataset_answers", "dataset_versions")
# The order rows are shown in.
ROW_ORDER = (
    "sessions", "messages", "tool_calls", "session_summaries", "model_calls", "session_events",
    "notes", "dataset_answers", "dataset_versions", "conversation_threads",
)  # fmt: skip


def _resource_ids(owner: Owner) -> str:
    """How other tables name the owner (`resource_id`, `user_id`), as a JSON list."""
    return json.dumps(["terminal", ""] if owner.is_terminal else [owner.id])


def _session_ids(conn: sqlite3.Connection, owner: Owner) -> list[Any]:
    """The owner's session ids as stored (of any type); a NULL id is left out:
    nothing hangs off it, and `_owner_rows` erases its row by the owner."""
    have = db.column_names(conn, "sessions")
    if "id" not in have or "owner" not in have:
        return []
    where, args = owner.sessions_where()
    return [
        r[0]
        for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", args)
        if r[0] is not None
    ]


def _id_texts(ids: list[Any]) -> str:
    """The ids as a JSON list of text, for json_each() (a BLOB id as its hex)."""
    return json.dumps([values.text(i) for i in ids])


def _owner_rows(
    conn: sqlite3.Connection, owner: Owner, ids: list[Any], *, delete: bool
) -> dict[str, int]:
    """Count (or delete, in the caller's transaction) everything of the owner's.

    Tables are taken as they are: one another program left without a column
    this needs is skipped (nothing of theirs can be found in it), never a
    reason to stop; a session row whose id is NULL goes by its owner."""
    have = schema.present_columns(conn)
    rows = (cascade.delete_session_rows if delete else cascade.count_session_rows)(conn, ids)
    verb = "DELETE" if delete else "SELECT COUNT(*)"
    wheres = [(t, {"owner"}, *owner.rows_where()) for t in _OWNER_TABLES]
    wheres.append(("sessions", {"id", "owner"}, "id IS NULL AND " + owner.sessions_where()[0],
                   owner.sessions_where()[1]))  # fmt: skip
    # Search threads of theirs beyond their sessions' (whose session is gone).
    wheres.append(
        (
            "conversation_threads",
            {"resource_id", "thread_id"},
            "resource_id IN (SELECT value FROM json_each(?))"
            " AND thread_id NOT IN (SELECT value FROM json_each(?))",
            (_resource_ids(owner), _id_texts(ids)),
        )
    )
    for table, needs, where, args in wheres:
        if needs <= have.get(table, set()):
            cur = conn.execute(f"{verb} FROM {table} WHERE {where}", args)
            rows[table] = rows.get(table, 0) + (cur.rowcount if delete else cur.fetchone()[0])
    return {t: rows[t] for t in ROW_ORDER if t in rows}


def _count(conn: sqlite3.Connection, table: str, cond: str, args: dict) -> int:
    """Rows of `table` that mention the owner; 0 when an older or newer table
    lacks a column the question needs (what is kept is only counted)."""
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {cond}", args).fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _owner_marker(paths: Paths, owner: Owner) -> Path:
    """One marker per owner, so two owners erased at once don't share one."""
    digest = hashlib.sha256(owner.label.encode()).hexdigest()[:12]
    main = marker_path(paths)
    return main.with_name(f"{main.name}-owner-{digest}")


def _no_whole_wipe_pending(paths: Paths) -> None:
    marker = marker_path(paths)
    if lstat_or_none(marker) is not None:
        raise Refused(
            "an interrupted `kaja wipe` has not finished",
            hint=f"run `kaja wipe` to finish it, or delete {marker} to keep what is left",
        )


def plan_owner(store: Store, owner: Owner) -> OwnerPlan:
    """What `kaja wipe --owner` would erase; reads, never writes.

    NotFound (exit 3) when the owner has nothing here and no interrupted
    wipe of theirs is left to finish: a mistyped id must not look done.
    """
    if store.cloud:
        from kaja_cli.core.care.wipe import cloud

        return cloud.plan_owner(store, owner)
    paths = store.paths
    _no_whole_wipe_pending(paths)
    with store.reader(timeout_ms=READ_TIMEOUT_MS, writing=True) as conn:
        ids = _session_ids(conn, owner)
        rows = _owner_rows(conn, owner, ids, delete=False)
        present = db.table_names(conn)
        args = {"ids": _id_texts(ids), "res": _resource_ids(owner)}
        mentions = [
            Mention(table, n, reason)
            for table, cond, reason in _MENTIONS
            if table in present and (n := _count(conn, table, cond, args))
        ]
    link = cascade.images_link(paths.images_dir)
    folders = [
        i
        for sid in (map(values.text, ids) if link is None else ())
        if (d := images.session_dir(paths.images_dir, sid)) and (i := image_item(d))
    ]
    leftovers = None
    marker = _owner_marker(paths, owner)
    if lstat_or_none(marker) is not None:
        detail, command, left = describe(marker, paths, live_sessions(paths))
        leftovers = Leftovers(detail, (detail,), (command,), (*left, marker))
        have = {i.path for i in folders}
        folders += [i for p in left if p not in have and link is None and (i := image_item(p))]
    if not sum(rows.values()) and not folders and leftovers is None:
        raise NotFound(
            f"nothing stored for owner {owner.label}",
            hint="`kaja sessions --all-owners` lists the owners",
        )
    return OwnerPlan(owner, rows, folders, mentions, leftovers, link)


def execute_owner(
    store: Store, owner: Owner, *, timeout_ms: int = db.BUSY_TIMEOUT_MS
) -> OwnerResult:
    """Erase one owner in one transaction, then their image folders (the package docstring)."""
    if store.cloud:
        from kaja_cli.core.care.wipe import cloud

        return cloud.execute_owner(store, owner, timeout_ms=timeout_ms)
    paths = store.paths
    _no_whole_wipe_pending(paths)
    marker = _owner_marker(paths, owner)
    wrote = committed = False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            conn.execute("PRAGMA secure_delete = ON")  # erased text does not linger in free pages
            with db.transaction(conn):
                ids = _session_ids(conn, owner)
                rows = _owner_rows(conn, owner, ids, delete=True)
                # An earlier run's folders whose sessions are gone count too.
                earlier = listed_paths(marker, paths, set()) if lstat_or_none(marker) else []
                names = {t for i in ids if (t := values.text(i))} | {p.name for p in earlier}
                if earlier:
                    live = conn.execute(
                        "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(sorted(names)),),
                    )
                    names -= {r[0] for r in live}
                folders = [
                    d
                    for sid in sorted(names)
                    if (d := images.session_dir(paths.images_dir, sid)) and lstat_or_none(d)
                ]
                if cascade.images_link(paths.images_dir) is not None:
                    folders = []  # nothing is deleted through a link (the plan said so)
                if folders:
                    write_marker(
                        marker,
                        {
                            "version": MARKER_VERSION,
                            "action": "owner",
                            "owner": owner.label,
                            "started_at": now_iso(),
                            "pid": os.getpid(),
                            "paths": [str(p) for p in folders],
                        },
                    )
                    wrote = True
                hook.checkpoint("commit")
            committed = True
    except BaseException:
        if wrote and not committed:  # rolled back: the folders stay with their sessions
            marker.unlink(missing_ok=True)
        raise
    removed = remove_folders(paths, owner, marker, folders)
    return OwnerResult(owner, rows, removed, _purge_index(store, timeout_ms))


def remove_folders(paths: Paths, owner: Owner, marker: Path, folders: list[Path]) -> list[Path]:
    """After the commit (here or on a server): the owner's image folders, then
    the marker that named them; Ctrl-C says how to finish."""
    try:
        hook.checkpoint("images")
        removed = cascade.remove_image_folders(paths.images_dir, [p.name for p in folders])
        if lstat_or_none(marker) is not None:
            marker.unlink()
            fs.fsync_dir(marker.parent)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted after erasing {owner.label}'s rows, before all their image folders",
            hint=f"run `kaja wipe --owner {owner.label}` again to finish",
        ) from None
    return removed


def _purge_index(store: Store, timeout_ms: int) -> bool:
    """Merge the search index into one segment, so the erased words leave it.

    FTS4 deletes by adding markers: the old segments keep the terms until a
    merge reaches them. 'optimize' merges everything, holding the write lock
    for seconds on a large store, so it runs only while nobody else has the
    file open; otherwise the caller says how to finish. True if purged."""
    from kaja_cli.core.conversations.search import cjk_index
    from kaja_cli.core.store import search_index

    path = store.paths.shared_db.path
    if db.holder(path) is not None:
        return False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            main = search_index.state(conn) == search_index.READY
            cjk = cjk_index.state(conn) in (cjk_index.READY, cjk_index.BEHIND)
            if not main and not cjk:
                return True  # no index of kaja's: nothing holds the words
            conn.execute("PRAGMA secure_delete = ON")
            with db.transaction(conn):
                if main:
                    conn.execute(
                        f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}) VALUES ('optimize')"
                    )
                if cjk:
                    cjk_index.optimize(conn)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except Busy:
        return False
    return True
