"""`kaja wipe` in cloud mode: kaja's schema on the server, and the images it
keeps here (SPEC §8, §10). The same plans as locally (`model`), so the
command shows, asks and reports them the same way.

- A whole wipe drops what kaja made in its schema, each object by name
  (`pg.schema.contents`: its tables with their indexes and triggers, its
  functions, unaccent when kaja created it there), then the schema itself
  when nothing else is left in it; all RESTRICT, in one transaction. What is
  not Kaja's stays, and the schema with it: the shared usage ledger of `kaja
  sync` (an earlier kaja made it there for a role named like the schema),
  another program's tables, views, functions. Something not Kaja's that uses
  one of kaja's objects (a view on `sessions`, a foreign key) refuses the
  wipe (exit 5): dropping with CASCADE would take it along. Never the
  database, never a schema that is not Kaja's (exit 5). It needs `--yes` even
  at a terminal (`WipePlan.needs_yes`): the server's store may be a team's.
  Another session holding a lock on kaja's tables (an agent in the middle of
  a transaction) stops it (exit 4), before anything is dropped and again at
  the drop itself (`LOCK … NOWAIT`); a sync writing its ledger does not. The
  image folders of the schema's sessions go after the drop; a marker in the
  state dir lists them first, so an interrupted wipe is finished by the next
  one.
- `--owner` erases one owner in one transaction on the server (their sessions
  with every row hanging off them, notes, dataset answers and versions: the
  search index's words go with the rows), then their image folders, then a
  VACUUM of those tables so the server can reuse the space.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kaja_cli.core.care.wipe import hook
from kaja_cli.core.care.wipe.markers import (
    MARKER_VERSION,
    listed_paths,
    marker_path,
    markers_of,
    write_marker,
)
from kaja_cli.core.care.wipe.model import (
    SERVER_KINDS,
    Item,
    Kept,
    Kind,
    Mention,
    OwnerPlan,
    OwnerResult,
    Part,
    Refusal,
    WipePlan,
    WipeResult,
)
from kaja_cli.core.care.wipe.owner import remove_folders
from kaja_cli.core.care.wipe.reach import image_item, lstat_or_none
from kaja_cli.core.clock import now_iso
from kaja_cli.core.conversations import cascade, images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import plural
from kaja_cli.errors import Busy, ExitStatus, Interrupted, KajaError, NotFound, Refused

# Erased besides the sessions' rows, by their owner column (terminal: '').
_OWNER_TABLES = ("notes", "dataset_answers", "dataset_versions")
_ORDER = ("sessions", "messages", "tool_calls", "session_summaries", "model_calls",
          "session_events", "notes", "dataset_answers", "dataset_versions")  # fmt: skip
# Ledger rows that mention the owner and stay (the usage ledger is not the
# conversation store): runs of their sessions and what hangs off those runs.
_RUNS = "run_id IN (SELECT id FROM runs WHERE thread_id = ANY(CAST(:ids AS text[])))"
_MENTIONS = (
    ("runs", "thread_id = ANY(CAST(:ids AS text[]))"),
    *((t, _RUNS) for t in ("calls", "tools", "events", "logs", "media")),
    ("feedback", "user_id = ANY(CAST(:res AS text[]))"),
)


def _session_ids(conn, owner: Owner) -> list[str]:
    where, args = owner.sessions_where()
    return [r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", args)]


def _owner_rows(conn, owner: Owner, ids: list[str], *, delete: bool) -> dict[str, int]:
    from kaja_cli.core.engine import dialect

    present = dialect.table_names(conn)
    rows = (cascade.delete_session_rows if delete else cascade.count_session_rows)(conn, ids)
    rows.pop("conversation_threads", None)
    verb = "DELETE" if delete else "SELECT COUNT(*)"
    for table in _OWNER_TABLES:
        if table in present:
            cur = conn.execute(f"{verb} FROM {table} WHERE owner = ?", (owner.notes_value,))
            rows[table] = cur.rowcount if delete else cur.fetchone()[0]
    return {t: rows[t] for t in _ORDER if t in rows}


def _marker(store: Store, owner: Owner) -> Path:
    import hashlib

    digest = hashlib.sha256(owner.label.encode()).hexdigest()[:12]
    main = marker_path(store.paths)
    return main.with_name(f"{main.name}-owner-{digest}")


def plan_owner(store: Store, owner: Owner) -> OwnerPlan:
    """What `kaja wipe --owner` would erase on the server; reads, never writes."""
    from kaja_cli.core.engine import dialect

    paths = store.paths
    with store.reader(writing=True) as conn:
        ids = _session_ids(conn, owner)
        rows = _owner_rows(conn, owner, ids, delete=False)
        present = dialect.table_names(conn)
        args = {"ids": ids, "res": ["terminal", ""] if owner.is_terminal else [owner.id]}
        mentions = [
            Mention(table, n, "usage ledger")
            for table, cond in _MENTIONS
            if table in present
            and (
                n := conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {cond}", args).fetchone()[0]
            )
        ]
        marker = _marker(store, owner)
        earlier = _earlier_folders(conn, store, marker)
    # Nothing is deleted through a symlinked files/ or images/ (as locally).
    link = cascade.images_link(paths.images_dir)
    folders = [
        i
        for sid in (ids if link is None else ())
        if (d := images.session_dir(paths.images_dir, sid)) and (i := image_item(d))
    ]
    have = {i.path for i in folders}
    folders += [i for p in earlier if p not in have and link is None and (i := image_item(p))]
    if not sum(rows.values()) and not folders:
        raise NotFound(
            f"nothing stored for owner {owner.label}",
            hint="`kaja sessions --all-owners` lists the owners",
        )
    return OwnerPlan(owner, rows, folders, mentions, images_link=link)


def _earlier_folders(conn, store: Store, marker: Path) -> list[Path]:
    """Image folders an interrupted `wipe --owner` listed whose sessions are gone."""
    if lstat_or_none(marker) is None:
        return []
    listed = listed_paths(marker, store.paths, set())
    live = {
        r[0]
        for r in conn.execute(
            "SELECT id FROM sessions WHERE id = ANY(CAST(? AS text[]))", ([p.name for p in listed],)
        )
    }
    return [p for p in listed if p.name not in live]


def execute_owner(
    store: Store, owner: Owner, *, timeout_ms: int = db.BUSY_TIMEOUT_MS
) -> OwnerResult:
    """Erase one owner in one transaction on the server, then their image folders."""
    paths = store.paths
    marker = _marker(store, owner)
    wrote = committed = False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            with db.transaction(conn):
                ids = _session_ids(conn, owner)
                rows = _owner_rows(conn, owner, ids, delete=True)
                names = set(ids) | {p.name for p in _earlier_folders(conn, store, marker)}
                folders = [
                    d
                    for sid in sorted(names)
                    if (d := images.session_dir(paths.images_dir, sid)) and lstat_or_none(d)
                ]
                if cascade.images_link(paths.images_dir) is not None:
                    folders = []  # nothing is deleted through a link (the plan said so)
                if folders:
                    write_marker(marker, {
                        "version": MARKER_VERSION, "action": "owner", "owner": owner.label,
                        "started_at": now_iso(), "pid": os.getpid(),
                        "paths": [str(p) for p in folders],
                    })  # fmt: skip
                    wrote = True
                hook.checkpoint("commit")
            committed = True
            purged = _vacuum(conn)
    except BaseException:
        if wrote and not committed:  # rolled back: the folders stay with their sessions
            marker.unlink(missing_ok=True)
        raise
    removed = remove_folders(paths, owner, marker, folders)
    return OwnerResult(owner, rows, removed, purged)


def _vacuum(conn) -> bool:
    """VACUUM the conversation tables, so the server may reuse the erased rows'
    space (and the index's entries for them); False when the role may not
    (VACUUM would only warn and skip)."""
    from kaja_cli.errors import KajaError

    may = conn.execute(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class AS c"
        " WHERE c.oid = to_regclass('messages')"
    ).fetchone()
    if not may or not may[0]:
        return False
    try:
        conn.execute(
            "VACUUM sessions, messages, tool_calls, session_summaries, model_calls,"
            " session_events, notes, dataset_answers, dataset_versions"
        )
    except KajaError:
        return False
    return True


# --- the whole store ----------------------------------------------------------------------------
def _holders(conn, tables: list[str]) -> list[str]:
    """Other sessions holding a lock on one of kaja's tables: "process 4242 (kaja agent)"."""
    rows = conn.execute(
        "SELECT DISTINCT l.pid, coalesce(a.application_name, '') FROM pg_catalog.pg_locks AS l"
        " LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid"
        " WHERE l.relation = ANY(CAST(? AS regclass[])) AND l.pid <> pg_backend_pid()"
        " ORDER BY l.pid",
        (tables,),
    ).fetchall()
    return [f"process {pid}" + (f" ({name})" if name else "") for pid, name in rows]


def _server_items(where, found) -> list[Item]:
    """kaja's objects in its schema, in the order they are dropped; the schema
    last, when nothing else is in it."""
    kind = {"table": Kind.TABLE, "function": Kind.FUNCTION, "extension": Kind.EXTENSION}
    items = [
        Item(Path(t.name), t.kind, kind[t.kind], Database.SHARED, t.size, shown=t.name)
        for t in (*found.tables, *found.functions, *found.extensions)
    ]
    if not found.others:
        items.append(Item(Path(where.schema), f"schema {where.schema} on the server",
                          Kind.SCHEMA, Database.SHARED, shown=where.where))  # fmt: skip
    return items


def _server_kept(where, found) -> list[Kept]:
    from kaja_cli.core.ledger.sync.server import LEDGER_OBJECTS

    kept = []
    for thing in found.others:
        ledger = thing.name.rpartition(".")[2].strip('"') in LEDGER_OBJECTS
        why = ("the shared usage ledger of `kaja sync`, not the conversation store" if ledger
               else f"a {thing.kind} that is not Kaja's")  # fmt: skip
        kept.append(Kept(Path(thing.name), why))
    if found.others:
        kept.append(Kept(Path(where.schema), "the schema stays, holding the"
                         f" {plural(len(found.others), 'thing')} above"))  # fmt: skip
    return kept


def _uses(thing, on: str) -> str:
    return (f"{thing.kind} {thing.name} uses {on}, which the wipe would drop:"
            " drop or change it first (kaja drops nothing that is not its own)")  # fmt: skip


def plan(store: Store, *, settings: bool = False) -> WipePlan:
    """What `kaja wipe` would drop and delete in cloud mode; reads, never writes."""
    from kaja_cli.core.care.wipe.whole import _files_items
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    paths = store.paths
    where = store.target()
    items: list[Item] = []
    server_kept: list[Kept] = []
    refusals: list[Refusal] = []
    known: set[str] = set()
    with pg.connect(where) as conn:
        state = schema.status(conn)
        if state.exists and not state.kajas:
            refusals.append(Refusal(Path(where.schema),
                                    f"{where.where} is not Kaja's: kaja drops only its own schema"))  # fmt: skip
        elif state.exists:
            found = schema.contents(conn)
            if "sessions" in state.tables:
                known = {
                    r[0] for r in conn.execute(f"SELECT id FROM {pg.quote(where.schema)}.sessions")
                }
            items += _server_items(where, found)
            server_kept += _server_kept(where, found)
            refusals += [Refusal(Path(thing.name), _uses(thing, on))
                         for thing, on in found.dependents]  # fmt: skip
            busy = _holders(conn, [t.name for t in found.tables])
            if busy:
                refusals.append(Refusal(
                    Path(where.schema),
                    f"{where.where} is in use: {', '.join(busy)} holds its tables",
                    ExitStatus.BUSY,
                ))  # fmt: skip
    markers = markers_of(paths)
    listed = [p for m in markers for p in listed_paths(m, paths, known)]
    file_items, kept = _files_items(paths, known, {p.name for p in listed})
    items += file_items
    kept = server_kept + kept
    sp = paths.settings_file.path
    st = lstat_or_none(sp)
    if settings and st is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        kind = Kind.LINK if stat.S_ISLNK(st.st_mode) else Kind.FILE
        items.append(Item(sp, "settings file", kind, Part.SETTINGS, st.st_size, 1))
    elif st is not None:
        kept.append(Kept(sp, "settings stay (--settings deletes them too)"))
    from kaja_cli.core.care.wipe.reach import empty_after, is_home_or_above

    gone = {i.path for i in items} | set(markers) | {marker_path(paths)}
    for folder, what, part in (
        (paths.images_dir, "files/images/ (empty by then)", Part.FILES),
        (paths.files_dir, "files/ (empty by then)", Part.FILES),
        (paths.state_dir.path, "state dir (empty by then)", Part.PARENTS),
    ):
        if lstat_or_none(folder) is None or is_home_or_above(folder):
            continue
        if empty_after(folder, gone):
            items.append(Item(folder, what, Kind.FOLDER, part))
            gone.add(folder)
    items.sort(key=lambda i: i.stage)
    return WipePlan(items, kept, refusals, marker_path(paths), None, markers, needs_yes=True)


def execute(store: Store, plan: WipePlan) -> WipeResult:
    """Drop kaja's objects on the server (and its schema, once empty) in one
    transaction, then delete the planned files."""
    from kaja_cli.core.care.wipe.whole import _remove

    paths = store.paths
    files = [i for i in plan.items if i.kind not in SERVER_KINDS]
    if files and plan.marker.parent.is_dir():
        write_marker(plan.marker, {
            "version": MARKER_VERSION, "action": "wipe", "started_at": now_iso(),
            "pid": os.getpid(), "paths": [str(i.path) for i in files],
        })  # fmt: skip
    deleted: list[Item] = []
    kept = list(plan.kept)
    server = [i for i in plan.items if i.kind in SERVER_KINDS]
    if server:
        dropped, why = _drop(store, server)
        deleted += dropped
        kept += why
    parents = [i for i in files if i.group is Part.PARENTS]
    try:
        for item in [i for i in files if i.group is not Part.PARENTS]:
            hook.checkpoint(item.path.name)
            if _remove(item):
                deleted.append(item)
            elif lstat_or_none(item.path) is not None:
                kept.append(Kept(item.path, "changed since the plan: not deleting it"))
        for m in [plan.marker, *plan.markers]:  # the markers before the folder holding them
            m.unlink(missing_ok=True)
        if files and lstat_or_none(paths.state_dir.path) is not None:
            fs.fsync_dir(paths.state_dir.path)
        for item in parents:
            if _remove(item):
                deleted.append(item)
    except KeyboardInterrupt:
        raise Interrupted(
            "wipe interrupted after dropping the schema, before all the image folders",
            hint="run `kaja wipe --yes` again to finish",
        ) from None
    return WipeResult(deleted, kept)


def _drop(store: Store, items: list[Item]) -> tuple[list[Item], list[Kept]]:
    """Drop the planned objects by name, RESTRICT, in one transaction: nothing
    that is not Kaja's can go with them. The schema goes last, and only if
    nothing has come into it since the plan (else it stays, said so)."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    where = store.target()
    with pg.connect(where, writable=True, lock_timeout_ms=1) as conn:
        schema.refuse_foreign(where, schema.status(conn))
        with db.transaction(conn):
            found = schema.contents(conn)
            present = {t.name for t in (*found.tables, *found.functions, *found.extensions)}
            items = [i for i in items if i.kind is Kind.SCHEMA or i.where in present]
            tables = [i.where for i in items if i.kind is Kind.TABLE]
            try:
                if tables:
                    conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE NOWAIT")
            except Busy:
                raise Busy(
                    f"{where.where} is in use: another session holds its tables",
                    hint="stop the agents using it, then run `kaja wipe --yes` again;"
                    " nothing was dropped",
                ) from None
            # Under the locks nothing new can come to use kaja's tables.
            for thing, on in schema.contents(conn).dependents:
                raise Refused(_uses(thing, on), hint="nothing was dropped")
            hook.checkpoint("schema")
            for kind, verb in ((Kind.TABLE, "TABLE"), (Kind.FUNCTION, "FUNCTION"),
                               (Kind.EXTENSION, "EXTENSION")):  # fmt: skip
                names = [i.where for i in items if i.kind is kind]
                if names:
                    conn.execute(f"DROP {verb} IF EXISTS {', '.join(names)} RESTRICT")
            kept = []
            if any(i.kind is Kind.SCHEMA for i in items):
                conn.execute("SAVEPOINT kaja_schema")
                try:
                    conn.execute(f"DROP SCHEMA IF EXISTS {pg.quote(where.schema)} RESTRICT")
                    conn.execute("RELEASE SAVEPOINT kaja_schema")
                except KajaError:
                    conn.execute("ROLLBACK TO SAVEPOINT kaja_schema")
                    items = [i for i in items if i.kind is not Kind.SCHEMA]
                    kept.append(Kept(Path(where.schema), f"schema {where.schema} stays:"
                                     " something kaja did not make came into it since the plan"))  # fmt: skip
    return items, kept
