"""Web accounts: `web-auth.db` (`web_users`, `web_sessions`, `web_auth_meta`,
SPEC §4), written by the web app (`api serve`): listing them, their sign-in
sessions, ending sessions, disabling, enabling and removing an account.

Secrets never leave this module, because they are never read: no query
here names `password_hash`, `salt` or `token_hash` (a session is told apart
by its owner and times, and deleted by them).

An account is named by its id, its username (case ignored, as the seed's
unique index does) or a unique prefix of its id. A sign-in session is live
until its `expires_at` (an ISO 8601 time; one kaja can't read never counts
as expired, as for the cache). Ending a session deletes its row: the token
it was issued for no longer signs anyone in.

`legacy_owner_id` in `web_auth_meta` names the first account, which owns the
conversations made before accounts existed: removing it is refused unless
forced, and even then the meta row stays as it is (what the web app makes
of a missing legacy owner is the web app's business, not kaja's guess).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kaja_cli.core import clock
from kaja_cli.core.conversations.sessions import col, columns
from kaja_cli.core.engine import db
from kaja_cli.errors import NotFound, Refused, UsageError

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

LEGACY_KEY = "legacy_owner_id"
PREFIX_MIN = 4  # an id prefix shorter than this is not looked up
EXPIRED = clock.iso_before("s.expires_at")


class Account(NamedTuple):
    id: str
    username: str
    display_name: str | None
    role: str | None
    active: bool
    created_at: str | None
    live_sessions: int
    sessions: int  # every sign-in session row, expired ones included
    last_sign_in: str | None  # the newest session's creation
    legacy_owner: bool  # web_auth_meta's legacy_owner_id: owns pre-account conversations

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "username": self.username, "display_name": self.display_name,
            "role": self.role, "active": self.active, "created_at": self.created_at,
            "live_sessions": self.live_sessions, "sessions": self.sessions,
            "last_sign_in": self.last_sign_in, "legacy_owner": self.legacy_owner,
        }  # fmt: skip

    def to_json(self, sign_ins: list[SignIn]) -> dict[str, Any]:
        """`kaja accounts sessions USER --json`: the account, then its sign-in sessions."""
        return {"account": self.as_json(), "sessions": [s._asdict() for s in sign_ins]}


class SignIn(NamedTuple):
    created_at: str | None
    expires_at: str | None
    live: bool


class AccountListing(NamedTuple):
    path: Path
    exists: bool
    has_tables: bool
    accounts: list[Account]
    legacy_owner_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "exists": self.exists,
                "legacy_owner_id": self.legacy_owner_id,
                "accounts": [a.as_json() for a in self.accounts]}  # fmt: skip


def auth_path(store: Store) -> Path:
    return store.path("auth")


# --- reading -------------------------------------------------------------------------------
def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _usable(conn: sqlite3.Connection) -> dict[str, list[str]] | None:
    """The account tables' columns (no secret is read), or None without web_users."""
    have = columns(conn, "web_users", "web_sessions", "web_auth_meta")
    users = have.get("web_users")
    return have if users and "id" in users else None


def _legacy_id(conn: sqlite3.Connection, have: dict[str, list[str]]) -> str | None:
    if not {"key", "value"} <= set(have.get("web_auth_meta", ())):
        return None
    row = conn.execute("SELECT value FROM web_auth_meta WHERE key = ?", (LEGACY_KEY,)).fetchone()
    return _text(row[0]) if row else None


def _query(have: dict[str, list[str]], where: str = "1") -> str:
    """Accounts with their session counts; only the columns a person may see."""
    u, s = have["web_users"], have.get("web_sessions") or []
    if "user_id" in s:
        expires = col(s, "s", "expires_at")
        live_when = "1" if expires == "NULL" else f"NOT {EXPIRED}"
        per = "FROM web_sessions AS s WHERE s.user_id = u.id"
        counts = (f"(SELECT count(*) {per} AND {live_when}), (SELECT count(*) {per}),"
                  f" (SELECT max({col(s, 's', 'created_at')}) {per})")  # fmt: skip
    else:
        counts = "0, 0, NULL"
    fields = ", ".join(col(u, "u", c) for c in ("username", "display_name", "role", "active",
                                                 "created_at"))  # fmt: skip
    return (
        f"SELECT u.id, {fields}, {counts} FROM web_users AS u WHERE {where}"
        f" ORDER BY {col(u, 'u', 'created_at')}, u.id"
    )


def _account(row: tuple, legacy: str | None) -> Account:
    uid, username, display, role, active, created, live, total, last = row
    return Account(
        id=_text(uid) or "", username=_text(username) or "", display_name=_text(display),
        role=_text(role), active=active is None or _truthy(active), created_at=_text(created),
        live_sessions=int(live or 0), sessions=int(total or 0), last_sign_in=_text(last),
        legacy_owner=legacy is not None and _text(uid) == legacy,
    )  # fmt: skip


def _truthy(value: object) -> bool:
    if isinstance(value, int | float):
        return value != 0
    return str(value).strip().lower() not in ("0", "false", "no", "")


def listing(store: Store, now: str | None = None) -> AccountListing:
    """Every account, oldest first; a missing web-auth.db lists nothing."""
    path = auth_path(store)
    if not path.exists():
        return AccountListing(path, False, False, [], None)
    with db.open_read(path) as conn:
        have = _usable(conn)
        if have is None:
            return AccountListing(path, True, False, [], None)
        legacy = _legacy_id(conn, have)
        rows = conn.execute(_query(have), {"now": now or clock.now_iso()}).fetchall()
    return AccountListing(path, True, True, [_account(r, legacy) for r in rows], legacy)


def find(conn: sqlite3.Connection, ref: str, now: str) -> Account:
    """The account `ref` names: its id, its username (case ignored) or a
    unique prefix of its id. NotFound (exit 3) with the closest usernames;
    an ambiguous prefix is a usage error (exit 2)."""
    ref = ref.strip()
    if not ref:
        raise UsageError("empty account name", hint="give a username or an id")
    have = _usable(conn)
    if have is None:
        raise NotFound(f"no account {ref!r}", hint="this web-auth.db has no web_users table")
    legacy = _legacy_id(conn, have)
    args = {"now": now, "ref": ref, "end": ref + "\U0010ffff"}
    user = col(have["web_users"], "u", "username")
    for where in ("u.id = :ref", f"{user} = :ref COLLATE NOCASE", "u.id >= :ref AND u.id < :end"):
        if where.startswith("u.id >=") and len(ref) < PREFIX_MIN:
            break
        rows = conn.execute(_query(have, where), args).fetchmany(11)
        if len(rows) == 1:
            return _account(rows[0], legacy)
        if len(rows) > 1:
            shown = ", ".join(f"{r[0]} ({r[1]})" for r in rows[:10])
            raise UsageError(f"{ref!r} names several accounts: {shown}", hint="give the username")
    raise NotFound(f"no account {ref!r}", hint=_suggest(conn, have, ref))


def _suggest(conn: sqlite3.Connection, have: dict[str, list[str]], ref: str) -> str:
    import difflib

    names = [str(r[0]) for r in conn.execute(
        f"SELECT {col(have['web_users'], 'u', 'username')} FROM web_users AS u") if r[0]]  # fmt: skip
    close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(close) + "?"
    return "`kaja accounts` lists them"


def sign_ins(store: Store, ref: str, now: str | None = None) -> tuple[Account, list[SignIn]]:
    """An account and its sign-in sessions, newest first: when each was
    made and when it expires, nothing else (no token hash is read)."""
    now = now or clock.now_iso()
    with _reader(store) as conn:
        account = find(conn, ref, now)
        have = columns(conn, "web_sessions").get("web_sessions") or []
        if "user_id" not in have:
            return account, []
        created, expires = col(have, "s", "created_at"), col(have, "s", "expires_at")
        live = "1" if expires == "NULL" else f"NOT {EXPIRED}"
        rows = conn.execute(
            f"SELECT {created}, {expires}, {live} FROM web_sessions AS s WHERE s.user_id = :id"
            f" ORDER BY {created} DESC",
            {"id": account.id, "now": now},
        ).fetchall()
    return account, [SignIn(_text(c), _text(e), bool(ok)) for c, e, ok in rows]


@contextmanager
def _reader(store: Store) -> Iterator[sqlite3.Connection]:
    path = auth_path(store)
    if not path.exists():
        raise NotFound(f"no accounts: there is no web-auth.db at {path}",
                       hint="the web app (`api serve`) creates it")  # fmt: skip
    with db.open_read(path) as conn:
        yield conn


# --- changing them ---------------------------------------------------------------------------
class Action(NamedTuple):
    """What a change will do; the same plan drives --dry-run, the question and the change."""

    verb: str  # "revoke", "disable", "enable", "remove"
    account: Account
    sessions: int  # sign-in sessions it ends
    every_session: bool  # expired ones too (revoke --expired, remove)
    changes_active: bool  # disable or enable changes the account's state
    now: str

    def to_json(self, ended: int = 0, *, dry_run: bool = False) -> dict[str, Any]:
        """What the change did (`ended` sign-in sessions), or would do (`dry_run`)."""
        a = self.account
        active = {"disable": False, "enable": True}.get(self.verb, a.active)
        changed = not dry_run and (ended > 0 or self.changes_active or self.verb == "remove")
        return {"action": self.verb, "dry_run": dry_run,
                "account": {"id": a.id, "username": a.username}, "sessions_ended": ended,
                "would_end": self.sessions if dry_run else None, "active": active,
                "changed": changed}  # fmt: skip


def plan(store: Store, verb: str, ref: str, *, every: bool = False, force: bool = False) -> Action:
    """Read-only: resolve the account and count what `verb` would change.

    `remove` of the legacy owner is refused (exit 5) unless `force`."""
    from kaja_cli.core.store import guard

    now = clock.now_iso()
    if os.path.lexists(auth_path(store)):  # a writing command: what is no SQLite file is exit 5
        db.require_database(auth_path(store), writing=True)
    with _reader(store) as conn:
        guard.require_kajas(conn, auth_path(store), store.paths.file_of("auth"))
        account = find(conn, ref, now)
    if verb == "remove" and account.legacy_owner and not force:
        raise Refused(
            f"{account.username} is the legacy owner ({LEGACY_KEY} in web_auth_meta): the"
            " conversations made before accounts existed belong to it, and removing it leaves"
            " them to nobody",
            hint="rerun with --force to remove it all the same",
        )
    every = every or verb == "remove"
    ends = account.sessions if every else account.live_sessions
    if verb == "enable":
        ends = 0
    changes = (verb == "disable" and account.active) or (verb == "enable" and not account.active)
    return Action(verb, account, ends, every, changes, now)


@contextmanager
def _writer(store: Store) -> Iterator[sqlite3.Connection]:
    """A write connection to web-auth.db, its schema up to date, with the
    foreign key enforced (removing an account cascades to its sessions) and
    deleted rows overwritten on disk (password hashes and token hashes)."""
    with db.open_write(auth_path(store), store.paths.file_of("auth")) as conn:
        store.ensure_schema(conn, "auth")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")
        yield conn


def apply(store: Store, action: Action) -> int:
    """Carry the action out in one transaction; returns the sign-in sessions
    it ended. An account removed meanwhile is NotFound (exit 3)."""
    from kaja_cli.core.store import markers

    uid, verb = action.account.id, action.verb
    with _writer(store) as conn, db.transaction(conn):
        if conn.execute("SELECT 1 FROM web_users WHERE id = ?", (uid,)).fetchone() is None:
            raise NotFound(f"account {action.account.username} is gone (removed meanwhile)")
        ended = 0
        if verb in ("revoke", "disable"):
            live = "" if action.every_session else f" AND NOT {clock.iso_before('expires_at')}"
            ended = conn.execute(
                f"DELETE FROM web_sessions WHERE user_id = :id{live}",
                {"id": uid, "now": action.now},
            ).rowcount
        if verb in ("disable", "enable"):
            conn.execute(
                "UPDATE web_users SET active = ? WHERE id = ?", (int(verb == "enable"), uid)
            )
        if verb == "remove":
            before = conn.execute("SELECT count(*) FROM web_sessions WHERE user_id = ?", (uid,))
            ended = before.fetchone()[0]
            conn.execute("DELETE FROM web_users WHERE id = ?", (uid,))  # the FK cascades
            # A file made without the constraint (an older web app): the same by hand.
            conn.execute("DELETE FROM web_sessions WHERE user_id = ?", (uid,))
        markers.checkpoint("accounts-commit")
    return ended
