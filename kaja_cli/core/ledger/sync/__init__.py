"""Ledger sync: the usage ledger shared between machines through PostgreSQL.

The seed's protocol (andromeda-database.txt, "Postgres (optional)"; SPEC §10),
with SQLite still what every process writes and reads:

- Triggers on the ledger tables (`schema.SYNC_TRIGGERS`) append every change
  to `sync_outbox` once the ledger has an origin: a UUID the first sync stores
  in `sync_state`. History from before that is sent by the first push
  ("seeding", `history_seeded` in sync_state, resumable at `seed_at`).
- One process per database syncs at a time: it holds the lease in
  `sync_state` (pid, host, token, expiry). A holder that died stops blocking
  when its lease expires, or at once when it was on this host and its pid is
  gone. Every batch renews the lease and checks that it still holds it.
- Push: the outbox, oldest first, in batches; each (table, key) goes out as
  the row's current JSON, or as a deletion when the row is gone. Pull: every
  change other writers made since `pull_cursor`, imported under new local ids
  (see `sync.rows`), with `sync_flags` 'importing' set inside the importing
  transaction so the imports do not re-enter the outbox.

Each batch is one transaction on each side. Where `kill -9` can land, and why
each point is safe:

1. Before the server's transaction commits (push or seeding): PostgreSQL
   rolls it back when the connection drops; nothing local changed. The next
   sync sends the same batch.
2. After the server commits, before the local commit that deletes the
   batch's outbox rows (or moves `seed_at`): the next sync sends the batch
   again. Sending is idempotent: an unchanged row is not rewritten (not even
   its `seq`), a deletion of a deleted row changes nothing.
3. During the local commit: SQLite's WAL makes it all or nothing: case 2, or
   done.
4. Pull: the server is only read. The import, the flag and the new cursor are
   one SQLite transaction: killed before its commit, nothing was imported and
   the cursor did not move; after, all of it is there. The flag is set and
   cleared inside that transaction, so a dead import never leaves it set.
5. Holding the lease: it stays in sync_state; the next sync on this host sees
   the pid is gone and takes it over (another host waits for the expiry).

Concurrent writers are safe too: the outbox rows a push deletes are exactly
those it read (`seq <= the batch's last`; AUTOINCREMENT never reuses a
number), so a change made meanwhile waits for the next push, which sends the
row as it is then.

`HOOK`, when set, is called with each step's name (`STEPS`): the tests kill
the process there. Nothing here imports psycopg; `sync.server` does, when
sync is used.

Also here, what the rest of the ledger asks of sync: `kaja usage
--all-machines` (the report of `ledger.report` over the shared ledger), and
what a `kaja usage reset` must keep right (`owned_maxima`, `after_reset`,
`used_on`). `ledger.usage` sits above this package; nothing here imports it.
Beside it: `state` (the `sync_state` table and the lease), `url` (where the
server is), `overview` (`kaja sync status`), `rows` (ledger rows as JSON and
back), `server` (the shared table on PostgreSQL), `health` (doctor's checks).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kaja_cli.core import clock, values
from kaja_cli.core.engine import db
from kaja_cli.core.ledger.sync import rows as sync_rows
from kaja_cli.core.ledger.sync import state
from kaja_cli.core.ledger.sync.overview import Status, outbox, status
from kaja_cli.core.ledger.sync.state import (
    CURSOR,
    EPOCHS,
    IMPORTING,
    LAST_PULL,
    LAST_PUSH,
    LEASE,
    LEDGER_AT,
    ORIGIN,
    SEED_AT,
    SEEDED,
    SERVER,
)
from kaja_cli.core.ledger.sync.url import Url, find_url, require_url
from kaja_cli.core.store import Store
from kaja_cli.errors import Busy, KajaError

if TYPE_CHECKING:
    from kaja_cli.core.ledger.report import UsageReport
    from kaja_cli.core.ledger.sync import server as sync_server

# What the commands and doctor read from here, kept where they are.
__all__ = ["Status", "Url", "find_url", "outbox", "require_url", "status"]

PUSH_BATCH = 5_000  # outbox rows per batch
SEED_BATCH = 20_000  # history rows per batch
PULL_BATCH = 5_000

# The points of a sync where the tests kill it (every one, in tests/cloud/test_sync.py).
STEPS = (
    "lease-taken",
    "seed-read", "seed-sent", "seed-committed", "seed-recorded",
    "push-read", "push-sent", "push-committed", "push-recorded",
    "pull-fetched", "pull-applied", "pull-recorded",
    "releasing",
)  # fmt: skip
HOOK: Callable[[str], None] | None = None

Progress = Callable[[int, int | None], None]  # (done, total)
# How core shows a long job: `render.progress(description, total)`.
ProgressFactory = Callable[[str, int | None], AbstractContextManager[Progress]]


def _step(name: str) -> None:
    if HOOK is not None:
        HOOK(name)


def _statement_timeout(store: Store) -> int:
    """`[memory] statementTimeout`: it bounds sync's statements too."""
    server = store.paths.server
    return server.statement_timeout_s if server is not None else 60


# --- one sync: the lease, both connections ----------------------------------------------------
class Session:
    """What push and pull share: the store's write connection, the server's, the lease."""

    def __init__(self, store: Store, url: Url, progress: ProgressFactory | None) -> None:
        self.store, self.url, self.progress = store, url, progress
        self.reseeded: str | None = None  # why history is sent again, if it is

    def __enter__(self) -> Session:
        self.store.require()
        self._stack = ExitStack()
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _open(self) -> None:
        from kaja_cli.core.ledger.sync import server as server

        self.pg = self._stack.enter_context(
            server.connect(self.url.value, statement_timeout_s=_statement_timeout(self.store))
        )
        with server.errors_of(self.url.value, "setting up the shared ledger"):
            ledger = server.ledger_id(self.pg, create=True)
            schema = server.schema_of(self.pg)
        self.conn = self._stack.enter_context(self.store.writer())
        with db.transaction(self.conn):
            self.token = state.take_lease(self.conn)
            self.origin = self._origin(ledger)
            self._stale_flag()
            state.put(self.conn, LEDGER_AT, schema)
        self._stack.callback(self._release)
        _step("lease-taken")
        with server.errors_of(self.url.value, "registering this ledger"):
            server.register_origin(self.pg, self.origin, state.host())
        self.cols = sync_rows.Columns(self.conn)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _origin(self, ledger: str | None) -> str:
        """This ledger's origin (made by the first sync); starts over on another server."""
        origin = state.get(self.conn, ORIGIN)
        if origin is None:
            origin = str(uuid.uuid4())
            state.put(self.conn, ORIGIN, origin)
        if state.get(self.conn, SERVER) != ledger:
            # A first sync, or another server: its numbers mean nothing here.
            if state.get(self.conn, SERVER) is not None:
                self.reseeded = "the shared ledger is not the one this ledger synced with"
            state.put(self.conn, SERVER, ledger)
            state.put(self.conn, CURSOR, 0)
            state.put(self.conn, SEEDED, 0)
            self.conn.execute("DELETE FROM sync_state WHERE name = ?", (SEED_AT,))
        return origin

    def _stale_flag(self) -> None:
        """An 'importing' flag left set (by a writer that keeps it across transactions
        and died): the ledger's changes were not queued meanwhile, so clear it and
        send the history again."""
        row = self.conn.execute(
            "SELECT value FROM sync_flags WHERE name = ?", (IMPORTING,)
        ).fetchone()
        if row is not None and str(row[0]) == "1":
            self.conn.execute("UPDATE sync_flags SET value = '0' WHERE name = ?", (IMPORTING,))
            state.put(self.conn, SEEDED, 0)
            self.conn.execute("DELETE FROM sync_state WHERE name = ?", (SEED_AT,))
            self.reseeded = "an import had died with sync_flags 'importing' set"

    def _release(self) -> None:
        _step("releasing")
        try:
            with db.transaction(self.conn):
                held = state.read_lease(self.conn)
                if held is not None and held.token == self.token:
                    self.conn.execute("DELETE FROM sync_state WHERE name = ?", (LEASE,))
        except KajaError:
            pass  # the lease ends by itself; the next sync here sees this pid gone

    @contextmanager
    def bar(self, description: str, total: int) -> Iterator[Progress]:
        """A progress bar for a phase with work to do (none for an empty one)."""
        if self.progress is None or total <= 0:
            yield lambda done, total=None: None
            return
        with self.progress(description, total) as update:
            yield update

    def send(self, changes: list, phase: str, doing: str) -> sync_server.Sent:
        from kaja_cli.core.ledger.sync import server as server

        if not changes:  # only rows of tables that are not synced
            return server.Sent()
        with server.errors_of(self.url.value, doing):
            return server.send(
                self.pg, self.origin, changes, before_commit=lambda: _step(f"{phase}-sent")
            )


# --- push -----------------------------------------------------------------------------------
@dataclass
class PushResult:
    history: int = 0  # rows of history sent (the first sync)
    changes: int = 0  # outbox rows handled
    written: int = 0  # rows the server stored or changed
    deleted: int = 0  # rows the server marked deleted
    ignored: int = 0  # outbox rows of tables that are not synced


def _push(s: Session) -> PushResult:
    result = PushResult()
    if state.get(s.conn, SEEDED) != "1":
        _seed(s, result)
    total = s.conn.execute("SELECT COUNT(*) FROM sync_outbox").fetchone()[0]
    with s.bar("pushing changes", total) as bar:
        while _push_batch(s, result):
            bar(result.changes + result.ignored, max(total, result.changes + result.ignored))
    return result


def _push_batch(s: Session, result: PushResult) -> bool:
    """Send the oldest outbox rows; False when the outbox is empty."""
    last, changes, ignored = _outbox_batch(s)
    if last is None:
        return False
    _step("push-read")
    sent = s.send(changes, "push", "pushing")
    _step("push-committed")
    with db.transaction(s.conn):
        state.hold(s.conn, s.token)
        n = s.conn.execute("DELETE FROM sync_outbox WHERE seq <= ?", (last,)).rowcount
        state.put(s.conn, LAST_PUSH, clock.now_iso())
    _step("push-recorded")
    result.changes += n - ignored
    result.ignored += ignored
    result.written += sent.written
    result.deleted += sent.deleted
    return True


def _outbox_batch(s: Session) -> tuple[int | None, list, int]:
    """The oldest outbox rows, one change per (table, key), read in one snapshot:
    (last seq, changes, rows of tables that are not synced)."""
    conn = s.conn
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            "SELECT seq, tbl, key FROM sync_outbox ORDER BY seq LIMIT ?", (PUSH_BATCH,)
        ).fetchall()
        if not rows:
            return None, [], 0
        epochs = state.epochs(conn)
        wanted: dict[tuple[str, str], None] = {}
        ignored = 0
        for _, table, key in rows:
            if table in sync_rows.KEYS and key is not None:
                wanted[(table, str(key))] = None
            else:
                ignored += 1
        changes: dict[tuple, tuple] = {}
        for table in sync_rows.TABLES:
            keys = [k for t, k in wanted if t == table]
            for change in _changes(s, table, keys, epochs):
                changes[change[:3]] = change
        return rows[-1][0], list(changes.values()), ignored
    finally:
        conn.execute("COMMIT")


def _changes(s: Session, table: str, keys: list[str], epochs: dict) -> list[tuple]:
    """What the server should hold for the outbox's keys of one table."""
    if table not in sync_rows.OWNED:
        rows = sync_rows.current_rows(s.conn, s.cols, table, keys)
        return [(sync_rows.SHARED, table, k, rows[k]) for k in keys]
    # A key with a `~` names a row a reset removed, by its key on the server.
    out = [(s.origin, table, sync_rows.named_key(k), None) for k in keys if "~" in k]
    ids = [k for k in keys if "~" not in k and k.lstrip("-").isdigit()]
    rows = sync_rows.current_rows(s.conn, s.cols, table, ids)
    out += [(s.origin, table, sync_rows.server_key(table, k, epochs), rows[k]) for k in ids]
    return out


def _seed(s: Session, result: PushResult) -> None:
    """Send the history from before sync was on, table by table, resumably."""
    at = _seed_position(s.conn)
    tables = list(sync_rows.TABLES)
    start = tables.index(at[0]) if at and at[0] in tables else 0
    with s.bar("sending the history", _history_size(s, tables[start:])) as bar:
        for table in tables[start:]:
            after = at[1] if at and at[0] == table else None
            while table in s.cols.of:
                after = _seed_batch(s, table, after, result)
                if after is None:
                    break
                bar(result.history, None)
    with db.transaction(s.conn):
        state.hold(s.conn, s.token)
        state.put(s.conn, SEEDED, 1)
        s.conn.execute("DELETE FROM sync_state WHERE name = ?", (SEED_AT,))


def _seed_batch(s: Session, table: str, after: Any, result: PushResult) -> Any:
    """Send the next history rows of `table` after local id `after`; their last
    local id, or None when there were none."""
    rows = sync_rows.history(s.conn, s.cols, table, after, SEED_BATCH)
    if not rows:
        return None
    _step("seed-read")
    origin = s.origin if table in sync_rows.OWNED else sync_rows.SHARED
    epochs = state.epochs(s.conn)
    changes = [(origin, table, sync_rows.server_key(table, key, epochs), j) for _, key, j in rows]
    sent = s.send(changes, "seed", "sending the history")
    _step("seed-committed")
    after = rows[-1][0]
    with db.transaction(s.conn):
        state.hold(s.conn, s.token)
        state.put(s.conn, SEED_AT, json.dumps([table, after]))
        state.put(s.conn, LAST_PUSH, clock.now_iso())
    _step("seed-recorded")
    result.history += len(rows)
    result.written += sent.written
    return after


def _seed_position(conn: sqlite3.Connection) -> tuple[str, Any] | None:
    try:
        table, after = values.loads(state.get(conn, SEED_AT) or "null")
    except (ValueError, TypeError):
        return None
    return table, after


def _history_size(s: Session, tables: list[str]) -> int:
    total = 0
    for table in tables:
        if table in s.cols.of:
            total += s.conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
            total -= s.conn.execute(
                "SELECT COUNT(*) FROM sync_map WHERE tbl = ?", (table,)
            ).fetchone()[0]
    return max(total, 0)


# --- pull -----------------------------------------------------------------------------------
def _pull(s: Session) -> sync_rows.Applied:
    from kaja_cli.core.ledger.sync import server as server

    done = sync_rows.Applied()
    with server.errors_of(s.url.value, "counting the changes to pull"):
        total = server.waiting(s.pg, state.cursor(s.conn), s.origin)
    with s.bar("pulling changes", total) as bar:
        while _pull_batch(s, done):
            bar(done.changes + done.kept_local + done.skipped, None)
    return done


def _pull_batch(s: Session, done: sync_rows.Applied) -> bool:
    """Import the next changes of the other machines; False once none are left."""
    from kaja_cli.core.ledger.sync import server as server

    cursor = state.cursor(s.conn)
    with server.errors_of(s.url.value, "pulling"):
        fetched = server.fetch(s.pg, cursor, s.origin, PULL_BATCH)
    _step("pull-fetched")
    with db.transaction(s.conn):
        state.hold(s.conn, s.token)
        if state.cursor(s.conn) != cursor:
            raise Busy("another sync pulled into this ledger meanwhile", hint="try again")
        _flag(s.conn, "1")
        sync_rows.apply(s.conn, s.cols, fetched.rows, done)
        _flag(s.conn, "0")
        state.put(s.conn, CURSOR, fetched.cursor)
        state.put(s.conn, LAST_PULL, clock.now_iso())
        _step("pull-applied")
    _step("pull-recorded")
    return len(fetched.rows) == PULL_BATCH


def _flag(conn: sqlite3.Connection, value: str) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO sync_flags (name, value) VALUES (?, ?)", (IMPORTING, value)
    )


# --- what the commands call -----------------------------------------------------------------
@dataclass
class SyncResult:
    store: str
    url: str  # the password replaced by ***
    origin: str
    push: PushResult | None = None
    pull: sync_rows.Applied | None = None
    reseeded: str | None = None  # why history was sent again

    def to_json(self) -> dict[str, Any]:
        """`kaja sync --json` (`push`, `pull`): what went each way."""
        p, q = self.push, self.pull
        push = None if p is None else {"history": p.history, "changes": p.changes,
                                       "written": p.written, "deleted": p.deleted,
                                       "ignored": p.ignored}  # fmt: skip
        pull = None if q is None else {
            "changes": q.changes, "inserted": q.inserted, "updated": q.updated,
            "deleted": q.deleted, "kept_local": q.kept_local, "skipped": q.skipped,
            "origins": sorted(q.origins),
        }  # fmt: skip
        return {"store": self.store, "url": self.url, "origin": self.origin, "dry_run": False,
                "reseeded": self.reseeded, "push": push, "pull": pull}  # fmt: skip


@dataclass
class SyncPlan:
    """What `kaja sync --dry-run` (`push`, `pull`) would send and bring, from
    `sync status`'s read-only look: the outbox, and what the server holds
    that this ledger has not pulled (None: all of it, a first pull)."""

    status: Status
    push: bool
    pull: bool

    @property
    def history(self) -> bool:
        """The first push sends the history from before sync was on."""
        return not self.status.seeded

    @property
    def to_pull(self) -> int | None:
        server = self.status.server
        return None if server is None else server.to_pull

    def to_json(self, *, dry_run: bool = True) -> dict[str, Any]:
        """`kaja sync --json --dry-run`: the document of a sync, with what
        would go each way (`history`: whether it would be sent first)."""
        s = self.status
        push = {"history": self.history, "changes": s.outbox_rows} if self.push else None
        pull = {"changes": self.to_pull} if self.pull else None
        return {"store": s.store, "url": s.url, "origin": s.origin, "dry_run": dry_run,
                "reseeded": None, "push": push, "pull": pull}  # fmt: skip


def plan(store: Store, url: Url, *, push: bool = True, pull: bool = True) -> SyncPlan:
    """What a sync would do, read only (nothing on the server is created
    either); the refusals a sync starts with: no store (exit 3), a server
    that does not answer (exit 1)."""
    from kaja_cli.errors import Failed

    store.require()
    found = status(store, url, timeout_s=_statement_timeout(store))
    if found.server is not None and not found.server.answers:
        raise Failed(found.server.error or f"cannot reach PostgreSQL at {url.shown}",
                     hint="nothing was changed")  # fmt: skip
    return SyncPlan(found, push, pull)


def sync(
    store: Store, url: Url, *, push: bool = True, pull: bool = True,
    progress: ProgressFactory | None = None,
) -> SyncResult:  # fmt: skip
    """Push (the history first, the first time), then pull, under one lease."""
    with Session(store, url, progress) as s:
        result = SyncResult(str(store.path()), url.shown, s.origin, reseeded=s.reseeded)
        if push:
            result.push = _push(s)
        if pull:
            result.pull = _pull(s)
        return result


# --- kaja usage --all-machines ------------------------------------------------------------------
@dataclass
class MachineTotals:
    origin: str
    host: str | None
    calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    this_machine: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"origin": self.origin, "host": self.host, "calls": self.calls,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "this_machine": self.this_machine}  # fmt: skip


def all_machines_report(
    store: Store, url: Url, by: str = "model", since: str | None = None, until: str | None = None
) -> tuple[UsageReport, list[MachineTotals]]:
    """`kaja usage` over the shared ledger on the server: every machine's rows as
    pushed (no pull needed, nothing written), and the calls of each machine."""
    from kaja_cli.core.ledger import report
    from kaja_cli.core.ledger.sync import server as server

    report.require_grouping(by)
    origin = None
    if store.exists():
        with store.reader() as conn:
            if "sync_state" in db.table_names(conn):
                origin = state.get(conn, ORIGIN)
    result = report.UsageReport(location=url.shown, exists=False, by=by, since=since, until=until)
    with server.connect(url.value, statement_timeout_s=_statement_timeout(store)) as pg, \
            server.errors_of(url.value, "reporting usage"):  # fmt: skip
        result.exists = server.ledger_id(pg, create=False) is not None
        if not result.exists:
            return result, []
        rows = server.usage_rows(pg, by, since, until)
    report.fill(result, rows)
    machines = [MachineTotals(o, h, n, p, c, o == origin) for o, h, n, p, c in rows["machines"]]
    return result, machines


# --- kaja runs --all-machines ----------------------------------------------------------------
@dataclass
class SharedRuns:
    """The runs of the shared ledger as plain rows (`audit.runs.listing_on` and
    `tree_on` make them the views): each run's columns and `machine`, each
    run's own figures, and the rows tagged with the runs `tagged_for` chose."""

    exists: bool
    runs: list[dict[str, Any]]
    figures: dict[str, tuple[int, int, int]]
    tagged: dict[str, list[dict[str, Any]]]


def shared_runs(
    store: Store, url: Url, tagged_for: Callable[[list[dict[str, Any]]], list[str]] | None = None
) -> SharedRuns:
    """Every machine's runs as pushed (no pull needed, nothing written), in one
    snapshot; with `tagged_for`, the calls, tools, events, feedback and reviews
    of the run ids it picks from them (it may raise: nothing is kept open)."""
    from kaja_cli.core.ledger.sync import server as server

    out = SharedRuns(False, [], {}, {})
    with server.connect(url.value, statement_timeout_s=_statement_timeout(store)) as pg, \
            server.errors_of(url.value, "reading runs"):  # fmt: skip
        out.exists = server.ledger_id(pg, create=False) is not None
        if not out.exists:
            if tagged_for is not None:
                tagged_for([])
            return out
        with pg.transaction():
            pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            out.runs = server.run_rows(pg)
            if tagged_for is None:
                out.figures = server.run_figures(pg)
            else:
                out.tagged = server.tagged_rows(pg, tagged_for(out.runs))
    return out


# --- kaja usage reset ------------------------------------------------------------------------
def owned_maxima(conn: sqlite3.Connection) -> dict[str, int | None]:
    """The highest id of each integer-id ledger table (before a reset deletes)."""
    present = db.table_names(conn)
    return {
        t: conn.execute(f'SELECT MAX(id) FROM "{t}"').fetchone()[0]
        for t in sync_rows.OWNED
        if t in present
    }


def after_reset(conn: sqlite3.Connection, maxima: dict[str, int | None]) -> list[str]:
    """Keep sync right after `usage reset` deleted rows (inside its transaction).

    A reset is local: nothing is queued, the server and the other machines
    keep their copies. Two things follow here: sync_map rows of deleted
    imports go (the reset set the triggers that drop them aside), and a
    table whose highest id went down opens an epoch, so that ids SQLite hands
    out again do not overwrite the old rows' copies (see sync_rows). Returns
    the tables that opened one."""
    present = db.table_names(conn)
    if not {"sync_state", "sync_map"} <= present:
        return []
    for table, local in sync_rows.LOCAL_ID.items():
        if table in present:
            conn.execute(
                f'DELETE FROM sync_map WHERE tbl = ? AND NOT EXISTS (SELECT 1 FROM "{table}"'
                f' WHERE "{local}" = sync_map.local_id)',
                (table,),
            )
    if state.get(conn, ORIGIN) is None:
        return []
    epochs = state.epochs(conn)
    opened = []
    for table, before in maxima.items():
        after = conn.execute(f'SELECT MAX(id) FROM "{table}"').fetchone()[0]
        if before is None or (after is not None and after >= before):
            continue
        floor = after or 0
        _name_gone_rows(conn, table, floor, epochs)
        epochs.setdefault(table, []).append(floor)
        opened.append(table)
    if opened:
        state.put(conn, EPOCHS, json.dumps(epochs))
    return opened


def _name_gone_rows(conn: sqlite3.Connection, table: str, floor: int, epochs: dict) -> None:
    """Pending outbox rows of ids above the new floor are about rows already gone:
    name them by their key on the server before the epoch changes what an id means."""
    rows = conn.execute(
        "SELECT seq, key FROM sync_outbox WHERE tbl = ? AND key NOT LIKE '%~%'", (table,)
    ).fetchall()
    for seq, key in rows:
        if str(key).lstrip("-").isdigit() and int(key) > floor:
            named = sync_rows.gone_key(table, str(key), epochs)
            conn.execute("UPDATE sync_outbox SET key = ? WHERE seq = ?", (named, seq))


def used_on(store: Store, conn: sqlite3.Connection) -> bool:
    """Sync is in use for the store `conn` reads: a URL is configured, or the
    ledger has synced before (it has an origin)."""
    if find_url(store) is not None:
        return True
    return (
        "sync_state" in db.table_names(conn)
        and conn.execute("SELECT 1 FROM sync_state WHERE name = ?", (ORIGIN,)).fetchone()
        is not None
    )
