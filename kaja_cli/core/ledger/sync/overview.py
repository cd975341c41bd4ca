"""`kaja sync status`, and what doctor's sync checks read: the local sync state and the server's.

Read-only: the file in one snapshot (`local_status`), and the server asked
within a timeout (`server_state`; one that does not answer is a state too).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.engine import db
from kaja_cli.core.ledger.sync.state import (
    IMPORTING,
    LAST_PULL,
    LAST_PUSH,
    LEDGER_AT,
    ORIGIN,
    SEEDED,
    SERVER,
    Lease,
    cursor,
    get,
    read_lease,
)
from kaja_cli.core.ledger.sync.url import Url
from kaja_cli.core.store import Store
from kaja_cli.errors import KajaError


@dataclass
class ServerState:
    answers: bool
    error: str | None = None
    ledger_id: str | None = None  # None: the shared ledger does not exist yet
    same_ledger: bool | None = None  # the one this ledger last synced with
    rows: int = 0
    origins: list = field(default_factory=list)  # sync_server.OriginRows
    to_pull: int | None = None  # changes of other machines a pull would bring
    schema: str | None = None  # the schema holding the shared ledger


@dataclass
class Status:
    store: str
    store_exists: bool
    url: str | None  # redacted
    url_source: str | None
    origin: str | None = None
    seeded: bool = False
    outbox_rows: int = 0
    outbox_oldest: str | None = None
    last_push: str | None = None
    last_pull: str | None = None
    pull_cursor: int = 0
    lease: Lease | None = None
    lease_expired: bool | None = None
    lease_alive: bool | None = None
    importing_flag: bool = False
    server: ServerState | None = None
    ledger_schema: str | None = None  # where the last sync found the shared ledger

    def to_json(self) -> dict[str, Any]:
        """`kaja sync status --json`."""
        lease = self.lease and {
            "pid": self.lease.pid, "host": self.lease.host, "expires": self.lease.expires,
            "expired": self.lease_expired, "alive": self.lease_alive,
        }  # fmt: skip
        s = self.server
        server = s and {
            "answers": s.answers, "error": s.error, "ledger_id": s.ledger_id,
            "same_ledger": s.same_ledger, "rows": s.rows, "to_pull": s.to_pull,
            "schema": s.schema,
            "origins": [
                {"origin": o.origin, "host": o.host, "rows": o.rows, "deleted": o.deleted,
                 "last_sync": o.last_sync, "this_machine": o.origin == self.origin}
                for o in s.origins
            ],
        }  # fmt: skip
        return {
            "store": self.store, "store_exists": self.store_exists, "url": self.url,
            "url_source": self.url_source, "origin": self.origin, "seeded": self.seeded,
            "outbox": {"rows": self.outbox_rows, "oldest": self.outbox_oldest},
            "last_push": self.last_push, "last_pull": self.last_pull,
            "pull_cursor": self.pull_cursor, "lease": lease,
            "importing_flag": self.importing_flag, "server": server,
        }  # fmt: skip


def status(store: Store, url: Url | None, *, timeout_s: float = 3) -> Status:
    """The local sync state (read-only) and, with a URL, what the server holds."""
    path = store.path()
    result = Status(str(path), path.exists(), url.shown if url else None,
                    url.source if url else None)  # fmt: skip
    server_ledger = None
    if result.store_exists:
        with store.reader() as conn:
            conn.execute("BEGIN")
            local_status(conn, result)
            server_ledger = get(conn, SERVER) if "sync_state" in db.table_names(conn) else None
            conn.execute("COMMIT")
    if url is not None:
        result.server = server_state(url, result, server_ledger, timeout_s)
    return result


def local_status(conn: sqlite3.Connection, out: Status) -> None:
    """Fill `out` with the sync state the file holds (in the caller's snapshot;
    doctor's sync checks read it too)."""
    tables = db.table_names(conn)
    if "sync_state" in tables:
        out.origin = get(conn, ORIGIN)
        out.seeded = get(conn, SEEDED) == "1" and out.origin is not None
        out.last_push, out.last_pull = get(conn, LAST_PUSH), get(conn, LAST_PULL)
        out.pull_cursor = cursor(conn)
        out.ledger_schema = get(conn, LEDGER_AT)
        out.lease = read_lease(conn)
        if out.lease is not None:
            out.lease_expired = out.lease.expired(clock.now())
            out.lease_alive = out.lease.alive()
    if "sync_outbox" in tables:
        out.outbox_rows, out.outbox_oldest = outbox(conn)
    if "sync_flags" in tables:
        row = conn.execute("SELECT value FROM sync_flags WHERE name = ?", (IMPORTING,)).fetchone()
        out.importing_flag = row is not None and str(row[0]) == "1"


def outbox(conn: sqlite3.Connection) -> tuple[int, str | None]:
    """The changes waiting in `sync_outbox` to be pushed, and when the oldest was queued."""
    count, oldest = conn.execute("SELECT COUNT(*), MIN(at) FROM sync_outbox").fetchone()
    return count, oldest


def server_state(url: Url, local: Status, ledger: str | None, timeout_s: float) -> ServerState:
    """What the server holds, asked within `timeout_s`; one that does not
    answer is a state too (`answers` False, with the error's line)."""
    from kaja_cli.core.ledger.sync import server as server

    try:
        with server.connect(url.value, timeout_s=timeout_s, statement_timeout_s=timeout_s) as pg:
            with server.errors_of(url.value, "reporting"):
                summary = server.summary(pg)
                state = ServerState(
                    True, None, summary.ledger_id, None, summary.rows, summary.origins
                )
                if summary.ledger_id is not None:
                    state.schema = server.schema_of(pg)
                if summary.ledger_id is not None and ledger is not None:
                    state.same_ledger = summary.ledger_id == ledger
                if state.same_ledger and local.origin:
                    state.to_pull = server.waiting(pg, local.pull_cursor, local.origin)
                return state
    except KajaError as e:
        return ServerState(False, str(e))
