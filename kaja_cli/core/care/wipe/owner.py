"""`kaja wipe --owner`: erase everything one owner stored, in one transaction,
then their image folders (`plan_owner()`, `execute_owner()`): one plan and
one execution for both engines.

The SQL is the same text on SQLite and PostgreSQL, its lists spelled by the
connection's dialect (`in_list`); a table another program left without a
column this needs is skipped (nothing of theirs can be found in it). What the
engines do beyond the rows comes from the store's engine part
(`store.part(__package__)`): how long the plan waits for a lock, what is set
before erasing (SQLite's `secure_delete`), and how the erased words leave the
disk after (`purge`: SQLite's search index merged, the server's tables
vacuumed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kaja_cli.core import values
from kaja_cli.core.care.wipe.leftovers import (
    describe,
    listed_paths,
    marker_path,
    owner_marker,
)
from kaja_cli.core.care.wipe.model import Leftovers, Mention, OwnerPlan, OwnerResult
from kaja_cli.core.care.wipe.reach import image_item, lstat_or_none
from kaja_cli.core.conversations import cascade, images
from kaja_cli.core.conversations.sessions import columns
from kaja_cli.core.engine import db, dialect
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, markers, whose
from kaja_cli.core.store.markers import Operation
from kaja_cli.core.store.paths import Paths
from kaja_cli.errors import Interrupted, NotFound, Refused

# Erased besides the sessions' rows, by their owner column (terminal: '').
_OWNER_TABLES = ("notes", "dataset_answers", "dataset_versions")
# The order rows are shown in.
ROW_ORDER = (
    "sessions", "messages", "tool_calls", "session_summaries", "model_calls", "session_events",
    "notes", "dataset_answers", "dataset_versions", "conversation_threads",
)  # fmt: skip
_LEDGER_RUNS = ("calls", "tools", "events", "logs", "media")


def _resource_ids(owner: Owner) -> list[str]:
    """How other tables name the owner (`resource_id`, `user_id`)."""
    return ["terminal", ""] if owner.is_terminal else [str(owner.id)]


def _texts(ids: list[Any]) -> list[str]:
    """The ids as text, as a list compares them (a BLOB id as its hex)."""
    return [values.text(i) for i in ids]


def _session_ids(conn, owner: Owner) -> list[Any]:
    """The owner's session ids as stored (of any type); a NULL id is left out:
    nothing hangs off it, and `_owner_rows` erases its row by the owner."""
    have = columns(conn, "sessions").get("sessions", [])
    if "id" not in have or "owner" not in have:
        return []
    where, args = owner.sessions_where()
    return [
        r[0]
        for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", args)
        if r[0] is not None
    ]


def _owner_rows(conn, owner: Owner, ids: list[Any], *, delete: bool) -> dict[str, int]:
    """Count (or delete, in the caller's transaction) everything of the owner's.

    Tables are taken as they are: one another program left without a column
    this needs is skipped (nothing of theirs can be found in it), never a
    reason to stop; a session row whose id is NULL goes by its owner."""
    have = columns(conn, *_OWNER_TABLES, "sessions", "conversation_threads")
    rows = (cascade.delete_session_rows if delete else cascade.count_session_rows)(conn, ids)
    verb = "DELETE" if delete else "SELECT COUNT(*)"
    in_list = dialect.of(conn).in_list
    wheres = [(t, {"owner"}, *owner.rows_where()) for t in _OWNER_TABLES]
    where, args = owner.sessions_where()
    wheres.append(("sessions", {"id", "owner"}, f"id IS NULL AND {where}", args))
    # Search threads of theirs beyond their sessions' (whose session is gone).
    (theirs, res), (sessions, texts) = (
        in_list("resource_id", _resource_ids(owner)),
        in_list("thread_id", _texts(ids)),
    )
    wheres.append(("conversation_threads", {"resource_id", "thread_id"},
                   f"{theirs} AND NOT ({sessions})", (res, texts)))  # fmt: skip
    for table, needs, cond, params in wheres:
        if needs <= set(have.get(table, ())):
            cur = conn.execute(f"{verb} FROM {table} WHERE {cond}", params)
            rows[table] = rows.get(table, 0) + (cur.rowcount if delete else cur.fetchone()[0])
    return {t: rows[t] for t in ROW_ORDER if t in rows}


def _mentions(conn, owner: Owner, ids: list[Any]) -> list[Mention]:
    """Rows that still refer to the owner after `--owner` and stay: the usage
    ledger, learning and services are not the conversation store (SPEC §8).
    A table without a column the question needs mentions nobody."""
    d = dialect.of(conn)

    def in_list(column: str, items: list[Any]) -> tuple[str, tuple]:
        cond, arg = d.in_list(column, items)
        return cond, (arg,)

    threads = in_list("thread_id", _texts(ids))
    theirs = in_list("resource_id", _resource_ids(owner))
    # The owner's runs as the ledger counts them (`whose`): their sessions'
    # and the subagents' below those that have no thread of their own.
    tied = columns(conn, "runs", "sessions")
    mine = (whose.tagged("id", owner, tied, d), whose.tagged("run_id", owner, tied, d))
    runs = {"runs": {"id", "thread_id"}}
    # (table, the columns it needs, of which tables, the conditions, why it stays)
    questions = [
        ("runs", runs, [mine[0]], "usage ledger"),
        *((t, {t: {"run_id"}} | runs, [mine[1]], "usage ledger") for t in _LEDGER_RUNS),
        ("feedback", {"feedback": {"user_id"}}, [in_list("user_id", _resource_ids(owner))],
         "usage ledger"),
        ("experience_runs", {"experience_runs": {"resource_id", "thread_id"}}, [theirs, threads],
         "learning"),
        ("schedules", {"schedules": {"resource_id"}}, [theirs], "services"),
        ("background_tasks", {"background_tasks": {"resource_id"}}, [theirs], "services"),
    ]  # fmt: skip
    have = {t: set(c) for t, c in columns(conn, *(q[0] for q in questions)).items()}
    out = []
    for table, needs, conds, reason in questions:
        if not all(cols <= have.get(t, set()) for t, cols in needs.items()):
            continue
        sql = f"SELECT COUNT(*) FROM {table} WHERE {' OR '.join(c for c, _ in conds)}"
        if n := conn.execute(sql, tuple(a for _, args in conds for a in args)).fetchone()[0]:
            out.append(Mention(table, n, reason))
    return out


def _live(conn, names: list[str]) -> set[str]:
    """Which of these session ids the store still holds."""
    if not names:
        return set()
    cond, arg = dialect.of(conn).in_list("id", names)
    return {
        values.text(r[0]) for r in conn.execute(f"SELECT id FROM sessions WHERE {cond}", (arg,))
    }


def _no_whole_wipe_pending(paths: Paths) -> None:
    marker = marker_path(paths)
    if markers.lexists(marker):
        raise Refused(
            "an interrupted `kaja wipe` has not finished",
            hint=f"run `kaja wipe` to finish it, or delete {marker} to keep what is left",
        )


def plan_owner(store: Store, owner: Owner) -> OwnerPlan:
    """What `kaja wipe --owner` would erase; reads, never writes.

    NotFound (exit 3) when the owner has nothing here and no interrupted
    wipe of theirs is left to finish: a mistyped id must not look done.
    """
    part = store.part(__package__)
    paths = store.paths
    _no_whole_wipe_pending(paths)
    found = markers.of(owner_marker(paths, owner), Operation.OWNER)
    with store.reader(timeout_ms=part.PLAN_WAIT_MS, writing=True) as conn:
        ids = _session_ids(conn, owner)
        rows = _owner_rows(conn, owner, ids, delete=False)
        mentions = _mentions(conn, owner, ids)
        live = _live(conn, [p.name for p in found.listed]) if found is not None else set()
    link = cascade.images_link(paths.images_dir)
    folders = [
        i
        for sid in (_texts(ids) if link is None else ())
        if (d := images.session_dir(paths.images_dir, sid)) and (i := image_item(d))
    ]
    leftovers = None
    if found is not None:
        detail, command, left = describe(found, paths, live)
        leftovers = Leftovers(detail, (detail,), (command,), (*left, found.path))
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
    part = store.part(__package__)
    paths = store.paths
    _no_whole_wipe_pending(paths)
    marker = owner_marker(paths, owner)
    wrote = committed = False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            part.before_erasing(conn)
            with db.transaction(conn):
                ids = _session_ids(conn, owner)
                from kaja_cli.core.conversations.semantic import index

                index.forget_sessions(paths.semantic_db, conn, ids)  # their vectors, too
                rows = _owner_rows(conn, owner, ids, delete=True)
                # An earlier run's folders whose sessions are gone count too.
                found = markers.of(marker, Operation.OWNER)
                earlier = listed_paths(found, paths, set()) if found is not None else []
                names = {t for t in _texts(ids) if t} | {p.name for p in earlier}
                if earlier:
                    names -= _live(conn, sorted(names))
                folders = [
                    d
                    for sid in sorted(names)
                    if (d := images.session_dir(paths.images_dir, sid)) and lstat_or_none(d)
                ]
                if cascade.images_link(paths.images_dir) is not None:
                    folders = []  # nothing is deleted through a link (the plan said so)
                if folders:
                    markers.begin(marker, Operation.OWNER, owner=owner.label,
                                  paths=[str(p) for p in folders])  # fmt: skip
                    wrote = True
                markers.checkpoint("commit")
            committed = True
    except BaseException:
        if wrote and not committed:  # rolled back: the folders stay with their sessions
            markers.finish(marker)
        raise
    removed = remove_folders(paths, owner, marker, folders)
    return OwnerResult(owner, rows, removed, part.purge(store, timeout_ms))


def remove_folders(paths: Paths, owner: Owner, marker: Path, folders: list[Path]) -> list[Path]:
    """After the commit: the owner's image folders, then the marker that named
    them; Ctrl-C says how to finish."""
    try:
        markers.checkpoint("images")
        removed = cascade.remove_image_folders(paths.images_dir, [p.name for p in folders])
        if markers.lexists(marker):
            markers.finish(marker)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted after erasing {owner.label}'s rows, before all their image folders",
            hint=f"run `kaja wipe --owner {owner.label}` again to finish",
        ) from None
    return removed
