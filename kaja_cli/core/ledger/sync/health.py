"""Sync's health for `kaja doctor`: the outbox going nowhere while the server
answers, an expired lease still in place, sync_map rows of missing rows, an
import flag left set, the shared ledger in another schema than `public` (as
the last sync found it: doctor does not ask the server for that). Plain (id,
status, summary, details) tuples; the `sync` check group in core/doctor wires
them in. Reads only.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from kaja_cli.core import clock
from kaja_cli.core.engine import db
from kaja_cli.core.ledger.sync import rows as sync_rows
from kaja_cli.core.ledger.sync.overview import Status, local_status, server_state
from kaja_cli.core.ledger.sync.url import NOT_CONFIGURED_HINT, Url
from kaja_cli.core.store import Store
from kaja_cli.core.wording import noun, plural

# Plain (id, status, summary, details) tuples; core/doctor wires them in.
OUTBOX_STALE = timedelta(minutes=30)


DoctorCheck = tuple[str, str, str, list[str]]  # (id, "ok" | "warn" | "error", summary, details)


def doctor_checks(
    store: Store, url: Url | None, *, now: datetime | None = None, timeout_s: float = 3
) -> list[DoctorCheck]:
    """Sync's health: the outbox going nowhere while the server answers, an expired
    lease still in place, sync_map rows of missing rows, an import flag left set.
    None at all where sync was never used (no origin, no URL)."""
    if not store.exists():
        return []
    with store.reader() as conn:
        return doctor_checks_on(conn, url, now=now, timeout_s=timeout_s)


def doctor_checks_on(
    conn: sqlite3.Connection, url: Url | None, *, now: datetime | None = None,
    timeout_s: float = 3, with_map: bool = True,
) -> list[DoctorCheck]:  # fmt: skip
    """`doctor_checks` on a read connection doctor already holds (it is left as found).

    `with_map` False (`doctor --quick`): no `sync-map`, which reads every row
    of sync_map (as many as the rows ever imported)."""
    now = now or clock.now()
    tables = db.table_names(conn)
    if not {"sync_state", "sync_outbox", "sync_map", "sync_flags"} <= tables:
        return []
    local = Status(_path_of(conn), True, None, None)
    ours = not conn.in_transaction  # one snapshot, unless the caller has one open
    if ours:
        conn.execute("BEGIN")
    try:
        local_status(conn, local)
        dangling = _dangling_map(conn, tables) if with_map else None
    finally:
        if ours:
            conn.execute("COMMIT")
    if local.origin is None and url is None:
        return []  # sync never used here
    return [
        _check_progress(local, url, now, timeout_s),
        _check_lease(local, now),
        *([_check_map(dangling)] if dangling is not None else []),
        _check_flag(local),
        _check_ledger(local),
    ]


def _path_of(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row else ""


def _check_progress(local: Status, url: Url | None, now: datetime, timeout_s: float):
    oldest = clock.parse_stored(local.outbox_oldest)
    if not local.outbox_rows or oldest is None or now - oldest < OUTBOX_STALE:
        return ("sync-progress", "ok", "ledger sync keeps up", [])
    n = local.outbox_rows
    age = (
        f"{plural(n, 'change', commas=True)} {noun(n, 'waits', 'wait')},"
        f" the oldest from {local.outbox_oldest}"
    )
    if url is None:
        return ("sync-progress", "warn", f"{age}, and no PostgreSQL URL is configured",
                [NOT_CONFIGURED_HINT])  # fmt: skip
    answers = server_state(url, local, None, timeout_s)
    if not answers.answers:
        return ("sync-progress", "warn", f"{age}: PostgreSQL does not answer",
                [*([answers.error] if answers.error else []),
                 "they go out once it answers again"])  # fmt: skip
    return ("sync-progress", "warn", f"{age} although PostgreSQL at {url.shown} answers",
            ["nothing is pushing them: run `kaja sync` (or check the agent's sync)",
             f"last push: {local.last_push or 'never'}"])  # fmt: skip


def _check_lease(local: Status, now: datetime):
    lease = local.lease
    if lease is None:
        return ("sync-lease", "ok", "no sync holds the ledger", [])
    who = f"pid {lease.pid} on {lease.host}"
    if not local.lease_expired:
        state = (
            "running"
            if local.lease_alive
            else "gone"
            if local.lease_alive is False
            else "on another host"
        )
        return ("sync-lease", "ok", f"a sync holds the ledger ({who}, {state})",
                [f"until {lease.expires}"])  # fmt: skip
    return ("sync-lease", "warn", f"the sync lease of {who} expired at {lease.expires} but is still held",
            ["that sync died or hangs; the next `kaja sync` takes the lease over"])  # fmt: skip


def _dangling_map(conn: sqlite3.Connection, tables: set[str]) -> dict[str, int]:
    out = {}
    for table, local in sync_rows.LOCAL_ID.items():
        if table not in tables:
            continue
        n = conn.execute(
            f'SELECT COUNT(*) FROM sync_map WHERE tbl = ? AND NOT EXISTS (SELECT 1 FROM "{table}"'
            f' WHERE "{local}" = sync_map.local_id)',
            (table,),
        ).fetchone()[0]
        if n:
            out[table] = n
    return out


def _check_map(dangling: dict[str, int]):
    if not dangling:
        return ("sync-map", "ok", "every imported row is in place", [])
    total = sum(dangling.values())
    gone = noun(total, "names an imported row that is gone", "name imported rows that are gone")
    return ("sync-map", "warn", f"{plural(total, 'sync_map row', commas=True)} {gone}",
            [", ".join(f"{t}: {n:,}" for t, n in dangling.items()),
             "rows deleted with the sync triggers off; a later change from their machine "
             "imports them again as new rows"])  # fmt: skip


def _check_flag(local: Status):
    if not local.importing_flag:
        return ("sync-flags", "ok", "no import in progress", [])
    if local.lease is not None and not local.lease_expired and local.lease_alive is not False:
        return ("sync-flags", "ok", "an import is in progress", [])
    return ("sync-flags", "error", "sync_flags 'importing' is set but no sync is running",
            ["the ledger's changes are not being queued for sync",
             "`kaja sync` clears it and sends the history again"])  # fmt: skip


def _check_ledger(local: Status):
    from kaja_cli.core.ledger.sync.server import LEDGER_SCHEMA, move_sql

    where = local.ledger_schema
    if where is None:
        return ("sync-ledger", "ok", "where the shared ledger sits is not known yet",
                ["the next `kaja sync` looks"])  # fmt: skip
    if where == LEDGER_SCHEMA:
        return ("sync-ledger", "ok", f"the shared ledger is in schema {where}", [])
    return ("sync-ledger", "warn", f"the shared ledger is in schema {where}, not {LEDGER_SCHEMA}",
            ["an earlier kaja made it there: the role's search_path put it in the schema"
             " named like the role, which may be cloud mode's schema (`kaja`)",
             "kaja sync keeps using it there, and a cloud `kaja wipe` keeps it; a DROP SCHEMA"
             f" {where} CASCADE would take every machine's rows with it",
             f"move it while no sync runs, as its owner: {move_sql(where)}"])  # fmt: skip
