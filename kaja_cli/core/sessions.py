"""Sessions: finding one by id or prefix, with the owner rule (SPEC §4, §5)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from kaja_cli.core.owners import Owner, label
from kaja_cli.errors import NotFound, Refused, UsageError

_ID_CHARS = re.compile(r"^[A-Za-z0-9._:-]+$")
MAX_CANDIDATES = 10


@dataclass(frozen=True)
class SessionRef:
    id: str
    owner: str | None
    title: str | None


def find(conn: sqlite3.Connection, ref: str, owner: Owner) -> SessionRef:
    """The acting owner's session whose id is `ref` or starts with it.

    No match: NotFound (exit 3). Several of the owner's sessions match:
    UsageError (exit 2) listing them. Only someone else's: Refused (exit 5)
    naming whose it is.
    """
    ref = ref.strip()
    if not ref:
        raise UsageError("empty session id")
    if not _ID_CHARS.match(ref):
        raise NotFound(f"no session {ref!r}")
    rows = (
        conn.execute("SELECT id, owner, title FROM sessions WHERE id = ?", (ref,)).fetchall()
        or conn.execute(
            "SELECT id, owner, title FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (ref, ref + "\U0010ffff", MAX_CANDIDATES + 1),
        ).fetchall()
    )
    matches = [SessionRef(*r) for r in rows]
    if not matches:
        raise NotFound(f"no session {ref!r}", hint="`kaja sessions` lists them")
    mine = [m for m in matches if owner.owns(m.owner)]
    if len(mine) == 1:
        return mine[0]
    if len(mine) > 1:
        shown = ", ".join(f"{m.id} ({m.title or 'untitled'})" for m in mine[:MAX_CANDIDATES])
        more = " …" if len(mine) > MAX_CANDIDATES else ""
        raise UsageError(
            f"session prefix {ref!r} is ambiguous: {shown}{more}", hint="type more of the id"
        )
    whose = sorted({label(m.owner) for m in matches})
    raise Refused(
        f"session {matches[0].id if len(matches) == 1 else ref!r} belongs to {', '.join(whose)}, "
        f"not {owner.label}",
        hint=f"act as that owner with --owner {whose[0]}" if len(whose) == 1 else None,
    )
