"""`kaja backup` and `kaja restore` in cloud mode (the server engine part).

**Backup.** One connection, one `REPEATABLE READ` read-only transaction (the
reader's `BEGIN`): every table of kaja's schema is read with `SELECT … WHERE
<the account's rows>` (`scope` says which rows), streamed in chunks
(`Connection.rows_of`), so the copy is the account's rows as they were at one
moment, whatever the agent commits meanwhile (a reader never blocks a
writer). A thread reads the rows while SQLite writes those already read
(`_read_ahead`): on a large store the server's scans are most of the time.
The rows go into a SQLite file of the same tables in the staging folder
(each table's indexes built once its rows are in), and from there
into the same archive as a local backup (`databases/shared.db`, the images
of its sessions, `MANIFEST.json`, whose `engine` says `postgresql` and
`account` whose rows they are): a local restore takes it as it takes any
backup, and a cloud one reads it as it reads a local store's.

**Restore.** The archive is extracted and verified as locally (`staging`),
before anything changes. Then one transaction on the server: kaja's tables
locked against writers (`EXCLUSIVE`: readers go on; a lock not granted in
the lock timeout is busy, exit 4), the account's rows deleted, the
archive's account's rows (and its rows of nobody) copied in with `COPY …
FROM STDIN`, the identity counters moved past them, and the commit. The
owner of the archive's rows becomes this store's account, as the write
API records "no owner" as the account. The image files go into their
session folders before the commit (a file is named by its sha256: an extra
one changes nothing), and the folders of the account's sessions that the
restore dropped are removed after it.

The marker (`swap.marker_path`) says `commit` with the server's transaction
id right before the commit: a restore killed there is finished by asking the
server whether that transaction committed (`finish_commit`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from kaja_cli import __version__
from kaja_cli.core import clock
from kaja_cli.core.care.backup import archive, create, guarding, scope
from kaja_cli.core.care.backup.archive import DatabaseEntry, Manifest
from kaja_cli.core.care.backup.create import BackupResult, Copied, Progress
from kaja_cli.core.care.backup.staging import (
    IMAGES,
    Existing,
    Part,
    RestorePlan,
    Staged,
    discard,
    staging_path,
)
from kaja_cli.core.care.backup.swap import RESTORE, Phase, marker_path, pending, rmtree
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import fs
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, markers
from kaja_cli.core.store.registry import Database
from kaja_cli.errors import Busy, Failed, Interrupted, KajaError, NotFound, Refused

COUNTED = create.COUNTED
RESTORE_CHUNK = 5000  # rows read from the staged copy per fetch


# --- backup ----------------------------------------------------------------------------------
def backup(
    store: Store,
    output: Path | None = None,
    *,
    progress: Progress | None = None,
    require_shared: bool = True,
    now: datetime | None = None,
    force: bool = False,
) -> BackupResult:
    """The account's rows and their images in one archive (see the module docstring).
    NotFound (exit 3) when the server holds no Kaja schema."""
    paths = store.paths
    moment = now or clock.now()
    target = guarding.archive_target(paths, output, moment, force=force)
    create._remove_stale(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
    owner = store.owner(None)
    try:
        staging.mkdir(mode=fs.DIR_MODE)
        copy = staging / f"{Database.SHARED.value}.db"
        rows, missing, known = _copy(store, owner, copy)
        file = paths.file_of(Database.SHARED)
        entry = DatabaseEntry(
            name=Database.SHARED.value, member=archive.database_member(Database.SHARED),
            source=store.where(), bytes=copy.stat().st_size, sha256="",
            schema_missing=missing, rows=rows,
        )  # fmt: skip
        pictures, skipped = create._pictures(
            paths.images_dir, known, "another account's, written after its snapshot, or left behind"
        )
        manifest = Manifest(
            created_at=clock.iso(moment), kaja=__version__, sqlite=sqlite3.sqlite_version,
            python=_python(), state_dir=str(paths.state_dir.path), databases=[entry], files=[],
            method=archive.SERVER_METHOD, engine="postgresql", account=owner.label,
        )  # fmt: skip
        total = entry.bytes + sum(p.size for p in pictures)
        create._write_archive(tmp, target.name, [Copied(file, copy, entry)], pictures, manifest,
                              create._bytes(progress, total))  # fmt: skip
        markers.checkpoint("written")
        os.replace(tmp, target)
        fs.fsync_dir(target.parent)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        full = "the disk is full: " if fs.disk_full(e) else ""
        raise Failed(
            f"{full}cannot write the backup in {target.parent}: {e.strerror or e}",
            hint="free some disk space there, or write it elsewhere with -o; nothing was written",
        ) from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BackupResult(
        target, target.stat().st_size, archive.compressed(target.name), manifest, skipped
    )


def _python() -> str:
    import platform

    return platform.python_version()


def _copy(store: Store, owner: Owner, dest: Path) -> tuple[dict[str, int], list[str], set[str]]:
    """The account's rows into a new SQLite file at `dest`, in one snapshot;
    returns the manifest's counts, what the server's schema lacks, and the
    session ids copied."""
    from kaja_cli.core.store.server import schema as server_schema

    fs.create_private_file(dest)
    out = sqlite3.connect(dest, isolation_level=None)
    counts: dict[str, int] = {}
    known: set[str] = set()
    try:
        out.execute("PRAGMA journal_mode = OFF")  # a staging copy: the archive is what is kept
        out.execute("PRAGMA synchronous = OFF")
        out.execute("PRAGMA locking_mode = EXCLUSIVE")  # the file is this process's alone
        out.execute("PRAGMA cache_size = -65536")  # 64 MiB: the indexes are built in memory
        out.execute("BEGIN")
        with store.reader() as conn, ExitStack() as second:
            conn.execute("BEGIN")  # REPEATABLE READ, read only: one snapshot for every read
            have = {t: set(c) for t, c in conn.columns().items()}
            copied = [(t, scope.columns(t, have)) for t in scope.TABLES]
            copied = [(t, cols) for t, cols in copied if cols]
            other = _same_snapshot(conn, second)

            def select(table: Any, cols: list, reader: Any) -> Iterator[tuple]:
                cond, args = scope.where(table.name, owner, have)
                names = ", ".join(f"t.{scope.q(c.name)}::{scope.pg_type(c)}" for c in cols)
                return reader.rows_of(
                    f"SELECT {names} FROM {scope.q(table.name)} AS t WHERE {cond}",
                    args,
                    [scope.pg_type(c) for c in cols],
                )

            for table in scope.TABLES:
                out.execute(table.ddl())
            second_lane = [other is not None and t.name in SECOND_LANE for t, _ in copied]
            reads = [
                partial(select, t, cols, other if on else conn)
                for (t, cols), on in zip(copied, second_lane, strict=True)
            ]
            with _read_ahead(reads, second_lane) as tables:
                for (table, cols), chunks in zip(copied, tables, strict=True):
                    names = ", ".join(scope.q(c.name) for c in cols)
                    marks = ", ".join("?" * len(cols))
                    insert = f"INSERT INTO {scope.q(table.name)} ({names}) VALUES ({marks})"
                    ids = _session_column(table.name, cols)
                    n = 0
                    with _nulls_bound_directly():
                        for chunk in chunks:  # a list each: no Python frame per row
                            n += max(out.executemany(insert, chunk).rowcount, 0)
                            if ids is not None:
                                known.update(r[ids] for r in chunk)
                    if table.name in COUNTED:
                        counts[table.name] = n
                    # Its indexes now, while the server reads the next tables.
                    _index(out, table)
            missing = server_schema.missing(conn)
            markers.checkpoint("copied")  # inside the snapshot: a kill here leaves no archive
            conn.execute("COMMIT")
        for table in scope.TABLES:
            if all(t is not table for t, _ in copied):
                _index(out, table)  # a table the server lacks: empty here
        out.execute("COMMIT")
    except sqlite3.Error as e:
        full = "the disk is full: " if create._full(e) else ""
        raise Failed(
            f"{full}cannot write the copy {dest}: {e}",
            hint="free some disk space there, or write the backup elsewhere with -o",
        ) from None
    finally:
        out.close()
    return counts, missing, {i for i in known if isinstance(i, str) and images.safe_name(i)}


def _session_column(table: str, cols: list) -> int | None:
    """Where a copied row of `table` names its session (the archive's images
    are those sessions'): the sessions' id, the messages' session."""
    name = {"sessions": "id", "messages": "sessionId"}.get(table)
    return next((i for i, c in enumerate(cols) if c.name == name), None)


# The tables a second connection reads, on the same snapshot, while the first
# reads the others (each in the schema's order): the server's two largest
# reads, the messages and the tool calls (whose account's rows are found
# through the messages: as long again), go on at once, and the ledger's
# calls beside its other tables.
SECOND_READER_WAIT_S = 2  # the longest a second reader waits to begin (a pooler's queue)
SECOND_LANE = frozenset({"tool_calls", "tools", "events", "logs", "media", "feedback",
                         "reviews", "cache_stats", "counters", "kaja_archived"})  # fmt: skip


def _same_snapshot(conn: Any, stack: ExitStack) -> Any:
    """A second reader on `conn`'s snapshot (`pg_export_snapshot`, then `SET
    TRANSACTION SNAPSHOT` on the other connection, as `pg_dump --jobs` does),
    or None where the server will not share one (a standby, a pooler): the
    first connection then reads every table. Called before `conn` reads any
    table (its snapshot is the one its first statement, the catalog's read, took)."""
    import re

    try:
        name = conn.execute("SELECT pg_catalog.pg_export_snapshot()").fetchone()[0]
    except KajaError:
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
        return None
    if not isinstance(name, str) or not re.fullmatch(r"[0-9A-Fa-f-]+", name):
        return None
    markers.checkpoint("snapshot-exported")  # a test may stop here (the import is next)
    from kaja_cli.core.engine import postgres as pg

    try:
        # Straight to the server's schema (the first connection checked it),
        # on the server the first reads (a replica, with `[memory] readUrl`:
        # a snapshot's name means nothing on another server, or another
        # snapshot there). A pooler with no server connection to spare (a
        # pool of one, busy with the first reader) would queue this one until
        # its own timeout, two minutes by default: past SECOND_READER_WAIT_S,
        # the first reads alone.
        other = stack.enter_context(pg.connect(conn.target))
        other.raw.deadline.seconds = SECOND_READER_WAIT_S
        other.execute("BEGIN")  # REPEATABLE READ, read only, as `conn`'s
        other.execute(f"SET TRANSACTION SNAPSHOT '{name}'")  # before any read in it
        other.raw.deadline.seconds = pg.answer_within(other.statement_timeout_ms)
    except KajaError:
        return None  # the first connection's snapshot is untouched: it reads alone
    return other


def _index(out: sqlite3.Connection, table: Any) -> None:
    """The table's secondary indexes, built once its rows are in."""
    for name, columns in table.indexes:
        unique = "UNIQUE " if columns.startswith("UNIQUE ") else ""
        out.execute(f'CREATE {unique}INDEX "{name}" ON "{table.name}"'
                    f" ({columns.removeprefix('UNIQUE ')})")  # fmt: skip


READ_AHEAD = 16  # chunks of rows read from the server before SQLite takes them
CHUNK = 2000  # rows in each
_END = object()  # after a table's rows


@contextmanager
def _read_ahead(
    tables: list[Callable[[], Iterator[tuple]]], second: list[bool] | None = None
) -> Iterator[Iterator[Iterator[list[tuple]]]]:
    """The rows of each of `tables` (each called for an iterator of its rows),
    read by threads of their own: the server sends the next rows, the next
    table's too, while SQLite writes these (Python's sqlite3 lets go of the
    GIL in each step) instead of waiting for SQLite. The tables marked in
    `second` are read one after the other by a second thread (they read
    through a second connection), the others by the first. The block gets
    one iterator per table, of lists of at most CHUNK rows, to be read in
    turn. What a reader raises is raised there; a block that stops early (a
    full disk) stops the readers, which close their rows (psycopg cancels
    the query) before the block's exception goes on."""
    import queue
    import threading

    stop = threading.Event()
    lanes = second or [False] * len(tables)
    queues = {lane: queue.Queue(maxsize=READ_AHEAD) for lane in set(lanes)}

    def read(lane: bool) -> None:
        handed = queues[lane]
        try:
            for make in (m for m, on in zip(tables, lanes, strict=True) if on is lane):
                rows = make()
                try:
                    batch: list[tuple] = []
                    for row in rows:
                        batch.append(row)
                        if len(batch) >= CHUNK:
                            if not _hand(handed, batch, stop):
                                return
                            batch = []
                    if not (_hand(handed, batch, stop) and _hand(handed, _END, stop)):
                        return
                finally:
                    rows.close()  # type: ignore[attr-defined]
        except BaseException as e:  # handed on to the consumer
            _hand(handed, e, stop)

    readers = {
        lane: threading.Thread(target=read, args=(lane,), daemon=True,
                               name=f"kaja-backup-rows-{int(lane) + 1}")
        for lane in queues
    }  # fmt: skip

    def table(lane: bool) -> Iterator[list[tuple]]:
        while (got := _next(queues[lane], readers[lane])) is not _END:
            if isinstance(got, BaseException):
                raise got
            yield got

    for reader in readers.values():
        reader.start()
    try:
        yield (table(lane) for lane in lanes)
    finally:
        stop.set()
        for reader in readers.values():
            reader.join()


def _next(handed: Any, reader: Any) -> Any:
    """The reader's next item; Failed if it ended without handing one on (it
    always does, its error included: this is never waited for in vain)."""
    import queue

    while True:
        try:
            return handed.get(timeout=0.5)
        except queue.Empty:
            if not reader.is_alive() and handed.empty():
                raise Failed("the server's rows stopped coming before the copy was whole") from None


def _hand(handed: Any, item: Any, stop: Any) -> bool:
    """Put `item` in the queue unless the consumer stopped; False if it did."""
    import queue

    while not stop.is_set():
        try:
            handed.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


@contextmanager
def _nulls_bound_directly() -> Iterator[None]:
    """While the block runs, Python's sqlite3 binds None through an adapter
    (None itself): without one, each None parameter is first offered to the
    adaptation protocol (`__adapt__`, `__conform__`), which looks the
    attributes up and fails, a microsecond a value. The server's rows are
    mostly NULL columns: a third of the inserts' time."""
    key = (type(None), sqlite3.PrepareProtocol)
    had = sqlite3.adapters.get(key)
    sqlite3.register_adapter(type(None), _none)
    try:
        yield
    finally:
        if had is None:
            sqlite3.adapters.pop(key, None)
        else:
            sqlite3.adapters[key] = had


def _none(value: None) -> None:
    return value


# --- restore: the plan -------------------------------------------------------------------------
def plan_restore(
    store: Store, archive_path: Path, *, force: bool, dry_run: bool = False
) -> RestorePlan:
    """Where the archive goes (the account's rows on the server, the images
    here) and whether the account has rows there already (Refused, exit 5,
    without `force`)."""
    from kaja_cli.core.care import wipe
    from kaja_cli.core.care.backup.restore import check_archive_file
    from kaja_cli.core.care.backup.swap import require_not_running

    paths = store.paths
    check_archive_file(archive_path)
    if wipe.interrupted(paths) is not None:
        raise Refused(
            "an interrupted `kaja wipe` is unfinished here",
            hint="run `kaja wipe` to finish it first; nothing was restored",
        )
    if (found := pending(paths)) is not None:
        require_not_running(found.data)
        raise Refused(
            "an interrupted `kaja restore` is unfinished here",
            hint="run `kaja restore --finish` first; nothing was restored",
        )
    owner = store.owner(None)
    where = store.where()
    parts = [Part(Database.SHARED.value, where), Part(IMAGES, paths.images_dir)]  # type: ignore[arg-type]
    existing = []
    rows = _account_rows(store, owner)
    if rows:
        existing.append(Existing(where, f"{owner.label}'s rows on the server", 0, rows))  # type: ignore[arg-type]
    if existing and not (force or dry_run):
        raise Refused(
            f"{where} already holds {owner.label}'s conversations ({rows} rows)",
            hint="restore into another schema or account, or replace them with --force, which"
            " backs them up first",
        )
    plan = RestorePlan(
        archive_path, parts, existing, staging_path(paths), marker_path(paths), force
    )
    plan.server = True
    return plan


def _account_rows(store: Store, owner: Owner) -> int:
    """How many rows of the account's (sessions, messages, notes, datasets) the server holds."""
    with store.maybe_reader(writing=True) as conn:  # what the restore replaces
        if conn is None:
            return 0
        conn.execute("BEGIN")
        have = {t: set(c) for t, c in conn.columns().items()}
        n = 0
        for table in ("sessions", "messages", *scope.OWNED):
            if table in have:
                cond, args = scope.where(table, owner, have)
                n += conn.execute(
                    f"SELECT count(*) FROM {scope.q(table)} AS t WHERE {cond}", args
                ).fetchone()[0]
        conn.execute("COMMIT")
    return int(n)


# --- restore: the transaction ------------------------------------------------------------------
def execute(store: Store, staged: Staged, *, backup_progress: Progress | None = None) -> Any:
    """The archive's rows in place of the account's, in one transaction (see
    the module docstring); the images around it."""
    from kaja_cli.core.care.backup.restore import Placed, RestoreResult
    from kaja_cli.core.care.backup.swap import read_marker

    plan = staged.plan
    owner = store.owner(None)
    manifest = staged.manifest
    theirs = Owner.parse(manifest.account) if manifest.account else Owner(None)
    copy = staged.new / archive.database_member(Database.SHARED)
    previous = None
    try:
        src = sqlite3.connect(copy.as_uri() + "?mode=ro&immutable=1", uri=True)
        try:
            src_have = _sqlite_columns(src)
            _check_values(src, src_have)
            new_sessions = _sessions_of(src, theirs, src_have)
            if plan.replaces:
                previous = _back_up_old(store, plan, backup_progress)
            stale, copied = _replace(store, plan, staged, src, src_have, owner, theirs,
                                     new_sessions)  # fmt: skip
        finally:
            src.close()
    except sqlite3.Error as e:
        discard(plan)
        raise Failed(f"the archive's shared file cannot be read: {e}") from None
    except KeyboardInterrupt:
        if read_marker(plan.marker).get("phase") == Phase.COMMIT:
            raise  # committed or not: the server knows (`kaja restore --finish`)
        discard(plan)
        raise Interrupted("restore interrupted: nothing was changed") from None
    except BaseException:
        if read_marker(plan.marker).get("phase") != Phase.COMMIT:
            discard(plan)  # before the commit: nothing changed
        raise
    markers.checkpoint("committed")
    folder = store.paths.images_dir
    _remove_folders(folder, stale)
    discard(plan)
    size, files = fs.tree_size(folder) if folder.exists() else (0, 0)
    done = [Placed(Database.SHARED.value, store.where(), copy_size(staged), 1),  # type: ignore[arg-type]
            Placed(IMAGES, folder, size, files)]  # fmt: skip
    return RestoreResult(manifest, done, previous, [], rows=copied)


def copy_size(staged: Staged) -> int:
    entry = staged.manifest.database(Database.SHARED)
    return entry.bytes if entry else 0


def _sqlite_columns(src: sqlite3.Connection) -> dict[str, set[str]]:
    from kaja_cli.core.engine import db

    tables = db.table_names(src)
    return {t.name: set(db.column_names(src, t.name)) for t in scope.TABLES if t.name in tables}


def _check_values(src: sqlite3.Connection, have: dict[str, set[str]]) -> None:
    """Failed (exit 1, nothing changed) when a number column of the archive holds
    what the server's column cannot (text in an INTEGER column, say)."""
    for table in scope.TABLES:
        for c in scope.columns(table, have):
            kinds = {"INTEGER": ("integer",), "REAL": ("integer", "real")}.get(c.type.upper())
            if kinds is None:
                continue
            allowed = ", ".join(f"'{k}'" for k in (*kinds, "null"))
            bad = src.execute(
                f"SELECT count(*) FROM {scope.q(table.name)} WHERE typeof({scope.q(c.name)})"
                f" NOT IN ({allowed})"
            ).fetchone()[0]
            if bad:
                raise Failed(
                    f"the archive's {table.name}.{c.name} holds {bad} values that are not"
                    f" {c.type.lower()}s, which the server's column cannot hold",
                    hint="restore it into a local store instead; nothing was restored",
                )


def _sessions_of(src: sqlite3.Connection, owner: Owner, have: dict[str, set[str]]) -> set[str]:
    if "id" not in have.get("sessions", set()):
        return set()
    cond, args = scope.where("sessions", owner, have)
    return {r[0] for r in src.execute(f"SELECT t.id FROM sessions AS t WHERE {cond}", args)
            if isinstance(r[0], str)}  # fmt: skip


def _back_up_old(store: Store, plan: RestorePlan, progress: Progress | None) -> Path | None:
    state = store.paths.state_dir.path
    stamp = clock.stamp(clock.now())
    out = state.parent / f"kaja-before-restore-{stamp}.tar.gz"
    n = 1
    while out.exists():
        n += 1
        out = state.parent / f"kaja-before-restore-{stamp}-{n}.tar.gz"
    markers.update(plan.marker, RESTORE, backup=str(out))
    try:
        # the rows the restore replaces: the server's own, not a replica's
        return backup(store.primary(), out, progress=progress).path
    except NotFound:
        return None
    except KajaError as e:
        raise Failed(
            f"could not back up the account's rows before replacing them: {e.message}",
            hint="nothing was changed; free some disk space beside the state dir, or restore"
            " elsewhere",
        ) from e


def _replace(
    store: Store, plan: RestorePlan, staged: Staged, src: sqlite3.Connection,
    src_have: dict[str, set[str]], owner: Owner, theirs: Owner, new_sessions: set[str],
) -> tuple[list[str], dict[str, int]]:  # fmt: skip
    """The one transaction; returns the image folders to remove after it, and
    how many rows of each table went in."""
    from kaja_cli.core.engine import postgres as pg

    with store.writer(create=True) as conn:
        conn.execute("BEGIN IMMEDIATE")
        have = {t: set(c) for t, c in conn.columns().items()}
        present = [t.name for t in scope.TABLES if t.name in have]
        conn.execute(f"LOCK TABLE {', '.join(map(scope.q, present))} IN EXCLUSIVE MODE")
        old = set()
        if {"id", "owner"} <= have.get("sessions", set()):
            cond, args = scope.where("sessions", owner, have)
            old = {r[0] for r in conn.execute(f"SELECT t.id FROM sessions AS t WHERE {cond}", args)
                   if isinstance(r[0], str)}  # fmt: skip
        for name in scope.DELETE_ORDER:
            if name in have:
                cond, args = scope.where(name, owner, have)
                conn.execute(f"DELETE FROM {scope.q(name)} AS t WHERE {cond}", args)
        copied: dict[str, int] = {}
        try:
            for table in scope.TABLES:
                copied[table.name] = _copy_in(conn, src, table, have, src_have, owner, theirs)
        except pg.ServerError as e:
            if e.sqlstate == "23505":
                raise Failed(
                    f"the archive's rows collide with rows of another owner on the server:"
                    f" {e.reason}",
                    hint="restore it into another schema; nothing was changed",
                ) from None
            raise
        xid = conn.execute("SELECT txid_current()").fetchone()[0]
        made, _placed = _place_images(staged, store.paths.images_dir)
        stale = sorted(s for s in old - new_sessions if images.safe_name(s))
        with markers.sigint_held():
            markers.update(plan.marker, RESTORE, phase=Phase.COMMIT, xid=int(xid),
                           made=made, stale=stale)  # fmt: skip
            markers.checkpoint("committing")
            conn.execute("COMMIT")
    return stale, copied


def _copy_in(
    conn: Any, src: sqlite3.Connection, table: Any, have: dict[str, set[str]],
    src_have: dict[str, set[str]], owner: Owner, theirs: Owner,
) -> int:  # fmt: skip
    """The archive's account's rows of one table, copied into the server's; how many."""
    cols = [c for c in scope.columns(table, have) if c.name in src_have.get(table.name, set())]
    if not cols:
        return 0
    cond, args = scope.where(table.name, theirs, src_have)
    names = [c.name for c in cols]
    cur = src.execute(
        f"SELECT {', '.join('t.' + scope.q(n) for n in names)} FROM {scope.q(table.name)} AS t"
        f" WHERE {cond}",
        args,
    )
    texts = [i for i, c in enumerate(cols) if scope.pg_type(c) == "text"]
    at = names.index("owner") if "owner" in names and theirs != owner else None
    new_owner = owner.id if table.name == "sessions" else owner.notes_value

    def rows() -> Iterator[list]:
        while batch := cur.fetchmany(RESTORE_CHUNK):
            for row in batch:
                out = list(row)
                for i in texts:
                    v = out[i]
                    if v is not None and not isinstance(v, str):
                        out[i] = v.hex().upper() if isinstance(v, bytes) else str(v)
                if at is not None:
                    out[at] = new_owner
                yield out

    copied = conn.copy_in(
        f"COPY {scope.q(table.name)} ({', '.join(map(scope.q, names))}) FROM STDIN", rows()
    )
    rowid = next((c.name for c in cols if c.type.upper() == "INTEGER" and "PRIMARY KEY" in
                  c.extra.upper()), None)  # fmt: skip
    if rowid is not None:
        conn.execute(
            "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence(?, ?),"
            f" coalesce(max({scope.q(rowid)}), 0) + 1, false) FROM {scope.q(table.name)}",
            (scope.q(table.name), rowid),
        )
    return copied


def _place_images(staged: Staged, folder: Path) -> tuple[list[str], int]:
    """The archive's image files into their session folders (before the commit:
    a file is named by its sha256, so one already there is the same image).
    Returns the folders made for them and how many files were placed."""
    source = staged.new / archive.IMAGES_FOLDER
    made: list[str] = []
    placed = 0
    if not source.is_dir():
        return made, placed
    fs.ensure_private_dir(folder)
    for session in sorted(os.listdir(source)):
        dest = folder / session
        if not os.path.lexists(dest):
            dest.mkdir(mode=fs.DIR_MODE)
            made.append(session)
        elif not dest.is_dir() or dest.is_symlink():
            continue  # not a folder kaja made: left alone
        for name in sorted(os.listdir(source / session)):
            if os.path.lexists(dest / name):
                continue
            try:
                os.replace(source / session / name, dest / name)
            except OSError:
                shutil.copyfile(source / session / name, dest / name)
                os.chmod(dest / name, fs.FILE_MODE)
            placed += 1
        fs.fsync_dir(dest)
    fs.fsync_dir(folder)
    return made, placed


def _remove_folders(folder: Path, sessions: list[str]) -> None:
    """The image folders of the account's sessions the restore dropped."""
    for s in sessions:
        p = folder / s
        if images.safe_name(s) and p.is_dir() and not p.is_symlink():
            rmtree(p)


# --- an interrupted restore ------------------------------------------------------------------
def finish_commit(store: Store, data: dict[str, Any]) -> bool:
    """A restore killed around its commit: whether the server committed its
    transaction (then the image folders it dropped go), or not (then the
    folders it made for the archive's images go). True: it committed."""
    xid = data.get("xid")
    with store.writer() as conn:
        conn.execute("BEGIN IMMEDIATE")
        if "sessions" in conn.table_names():
            # The restore locked kaja's tables (EXCLUSIVE): SHARE waits for its
            # transaction to end (the server ends it once it sees kaja gone),
            # so the answer below is final; a wait past the lock timeout is busy.
            conn.execute("LOCK TABLE sessions IN SHARE MODE")
        state = conn.execute("SELECT txid_status(?)", (int(xid or 0),)).fetchone()[0]
        conn.execute("COMMIT")
    if state == "in progress":
        raise Busy(
            "the interrupted restore's transaction is still open on the server",
            hint="try again in a moment (the server ends it when it notices kaja is gone)",
        )
    folder = store.paths.images_dir
    committed = state == "committed"
    names = data.get("stale" if committed else "made") or []
    _remove_folders(folder, [n for n in names if isinstance(n, str)])
    return committed
