"""This ledger's side of sync in the file: the `sync_state` table and the lease it holds.

`sync_state` keeps, by name, the ledger's origin, the server it synced with,
the pull cursor, whether history was sent (and where a resumed send stands),
the epochs a reset opened, when the last push and pull ran, and the lease:
which process syncs now (pid, host, token, expiry). Read and written inside
the caller's transaction; the protocol (`ledger.sync`) decides when.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from kaja_cli.core import clock, values
from kaja_cli.errors import Busy

LEASE_TTL = timedelta(seconds=60)

# sync_state names (the demo store and the seed use the first two).
CURSOR, SEEDED = "pull_cursor", "history_seeded"
ORIGIN, SERVER, SEED_AT, LEASE = "origin", "server", "seed_at", "lease"
LAST_PUSH, LAST_PULL, EPOCHS = "last_push", "last_pull", "epochs"
LEDGER_AT = "server_schema"  # the server's schema holding the shared ledger (for doctor)
IMPORTING = "importing"  # the sync_flags row


def host() -> str:
    """This machine, as a lease names its holder."""
    return socket.gethostname()


def get(conn: sqlite3.Connection, name: str) -> str | None:
    """The value stored under `name`, as text; None when there is none."""
    row = conn.execute("SELECT value FROM sync_state WHERE name = ?", (name,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def put(conn: sqlite3.Connection, name: str, value: object) -> None:
    """Store `value` (as text, None as NULL) under `name`, stamped with the time."""
    conn.execute(
        "INSERT OR REPLACE INTO sync_state (name, value, updated_at) VALUES (?, ?, ?)",
        (name, None if value is None else str(value), clock.now_iso()),
    )


def cursor(conn: sqlite3.Connection) -> int:
    """Where the next pull starts on the server's change sequence (0: from the start)."""
    value = get(conn, CURSOR)
    return int(value) if value and value.isdigit() else 0


def epochs(conn: sqlite3.Connection) -> dict[str, list[int]]:
    """The epochs resets opened, per table (`sync.rows`); {} when none or unreadable."""
    try:
        value = values.loads(get(conn, EPOCHS) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# --- the lease ---------------------------------------------------------------------------------
@dataclass
class Lease:
    pid: int | None
    host: str | None
    token: str | None
    expires: str | None

    def expired(self, now: datetime) -> bool:
        when = clock.parse_stored(self.expires)
        return when is None or when <= now

    def alive(self) -> bool | None:
        """Whether the holder runs; None when it is on another host (cannot tell)."""
        if self.host != host() or not self.pid:
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def read_lease(conn: sqlite3.Connection) -> Lease | None:
    raw = get(conn, LEASE)
    if raw is None:
        return None
    try:
        data = values.loads(raw)
        return Lease(data.get("pid"), data.get("host"), data.get("token"), data.get("expires"))
    except (ValueError, AttributeError):
        return Lease(None, None, None, None)  # unreadable: treated as expired


def write_lease(conn: sqlite3.Connection, token: str) -> None:
    lease = {"pid": os.getpid(), "host": host(), "token": token,
             "expires": clock.iso(clock.now() + LEASE_TTL)}  # fmt: skip
    put(conn, LEASE, json.dumps(lease))


def take_lease(conn: sqlite3.Connection) -> str:
    """Take the lease (inside a write transaction), or Busy naming its live holder."""
    held = read_lease(conn)
    if held is not None and not held.expired(clock.now()) and held.alive() is not False:
        raise Busy(
            f"another sync holds the ledger (pid {held.pid} on {held.host}, until {held.expires})",
            hint="wait for it to finish; a holder that died lets go when its lease ends",
        )
    token = uuid.uuid4().hex
    write_lease(conn, token)
    return token


def hold(conn: sqlite3.Connection, token: str) -> None:
    """Check this process still holds the lease and renew it (inside a write transaction)."""
    held = read_lease(conn)
    if held is None or held.token != token:
        raise Busy("another sync took the ledger over while this one waited", hint="try again")
    write_lease(conn, token)
