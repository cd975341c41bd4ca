"""`kaja sessions rename`, `archive` and `unarchive`: small changes to sessions
the user names, each one transaction.

Archive state is kept in `kaja_archived (sessionId, archivedAt)`, a table of
kaja's own: the agent's `sessions` table is a shared contract and gets no
column the agent does not know. An archived session is left out of `kaja
sessions`, `resume -c` and `search` unless asked for (`--archived`); its rows
are untouched, and deleting the session (delete, prune, wipe --owner) drops
its archive row with it. In cloud mode the table is in kaja's schema on the
server (SPEC §10), beside the agent's tables there: the same statements.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.clock import now_iso
from kaja_cli.core.conversations.columns import col, columns
from kaja_cli.core.conversations.filter import ARCHIVE_TABLE
from kaja_cli.core.conversations.sessions import SessionRef, find
from kaja_cli.core.engine import db
from kaja_cli.core.owners import Owner, label
from kaja_cli.errors import Refused, UsageError

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

MAX_TITLE = 500  # characters: a title is a line in a listing, not a document


class ArchiveResult(NamedTuple):
    changed: list[SessionRef]  # archived (or unarchived) now; a dry run's: would be
    unchanged: list[SessionRef]  # already so

    def to_json(self, archived: bool, *, dry_run: bool = False) -> dict:
        """`kaja sessions archive --json` (`unarchive`: `archived` False)."""
        return {"dry_run": dry_run,
                "archived" if archived else "unarchived": [{"id": s.id, "title": s.title}
                                                           for s in self.changed],
                "unchanged": [{"id": s.id, "title": s.title} for s in self.unchanged]}  # fmt: skip


class RenameResult(NamedTuple):
    session: SessionRef
    old_title: str | None
    new_title: str

    def to_json(self, *, dry_run: bool = False) -> dict:
        return {"dry_run": dry_run, "id": self.session.id, "old_title": self.old_title,
                "title": self.new_title}  # fmt: skip


def clean_title(title: str) -> str:
    """The title as stored: one line, no control characters, not empty, not huge."""
    text = " ".join(title.split())
    if not text:
        raise UsageError("the new title is empty", hint="give the title in quotes")
    if any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in text):
        raise UsageError("the new title holds control characters")
    if len(text) > MAX_TITLE:
        raise UsageError(f"the new title is {len(text):,} characters long (at most {MAX_TITLE})")
    return text


def _resolve(conn: sqlite3.Connection, refs: Iterable[str], owner: Owner) -> list[SessionRef]:
    """Every id resolved (all must: nothing changes otherwise), each once."""
    found: dict[str, SessionRef] = {}
    for ref in refs:
        s = find(conn, ref, owner)
        found.setdefault(s.id, s)
    return list(found.values())


def _still_owned(conn: sqlite3.Connection, sessions: list[SessionRef], owner: Owner) -> None:
    """Under the write lock: each session is still there and still the owner's."""
    who = col(columns(conn, "sessions").get("sessions"), "s", "owner")
    for s in sessions:
        row = conn.execute(f"SELECT {who} FROM sessions AS s WHERE id = ?", (s.id,)).fetchone()
        if row is None:
            raise Refused(f"session {s.id} was deleted meanwhile", hint="nothing was changed")
        if not owner.owns(row[0]):
            raise Refused(f"session {s.id} now belongs to {label(row[0])}")


def set_archived(
    store: Store, refs: Iterable[str], owner: Owner, *, archived: bool, dry_run: bool = False
) -> ArchiveResult:
    """Archive (or unarchive) the acting owner's sessions, in one transaction.
    The marks are a table of kaja's own beside the agent's (in cloud mode, in
    kaja's schema on the server). `dry_run`: what would change, read only
    (a store without kaja's archive table has nothing archived yet)."""
    if dry_run:
        with store.reader(writing=True) as conn:
            sessions = _resolve(conn, refs, owner)
            already = _archived(store, conn, [s.id for s in sessions])
        return _split(sessions, already, archived)
    with store.writer() as conn:
        sessions = _resolve(conn, refs, owner)
        with db.transaction(conn):
            _still_owned(conn, sessions, owner)
            ids = [s.id for s in sessions]
            already = _archived(store, conn, ids)
            if archived:
                conn.executemany(
                    f'INSERT INTO {ARCHIVE_TABLE} ("sessionId", "archivedAt") VALUES (?, ?)'
                    ' ON CONFLICT ("sessionId") DO NOTHING',
                    [(i, now_iso()) for i in ids],
                )
            else:
                listed, arg = store.dialect.in_list('"sessionId"', ids)
                conn.execute(f"DELETE FROM {ARCHIVE_TABLE} WHERE {listed}", (arg,))
    return _split(sessions, already, archived)


def _archived(store: Store, conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    """Which of `ids` are archived now."""
    if not columns(conn, ARCHIVE_TABLE).get(ARCHIVE_TABLE):
        return set()  # the table is made by the first write (a dry run reads only)
    listed, arg = store.dialect.in_list('"sessionId"', ids)
    rows = conn.execute(f'SELECT "sessionId" FROM {ARCHIVE_TABLE} WHERE {listed}', (arg,))
    return {r[0] for r in rows}


def _split(sessions: list[SessionRef], already: set[str], archived: bool) -> ArchiveResult:
    """(changed, unchanged): archiving leaves the archived ones, unarchiving the others."""
    unchanged = [s for s in sessions if (s.id in already) == archived]
    return ArchiveResult([s for s in sessions if s not in unchanged], unchanged)


def rename(
    store: Store, ref: str, title: str, owner: Owner, *, dry_run: bool = False
) -> RenameResult:
    """Give one of the acting owner's sessions a new title (`updatedAt` stays:
    a rename is not activity in the conversation, and the listing's order
    should not move). `dry_run`: the same checks and result, read only."""
    text = clean_title(title)
    opened = store.reader(writing=True) if dry_run else store.writer()
    with opened as conn:
        if "title" not in (columns(conn, "sessions").get("sessions") or ()):
            raise Refused("this store's sessions table has no title column")
        s = find(conn, ref, owner)
        with contextlib.nullcontext() if dry_run else db.transaction(conn):
            _still_owned(conn, [s], owner)
            old = conn.execute("SELECT title FROM sessions WHERE id = ?", (s.id,)).fetchone()[0]
            if not dry_run:
                conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (text, s.id))
    return RenameResult(s, old if isinstance(old, str) else None, text)
