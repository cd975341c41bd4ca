"""Which sessions a command means: the one filter model of `kaja sessions`,
`sessions prune`, `sessions export --all` and `sessions stats`.

`SessionFilter` is plain data (what the user asked for, parsed); `where()`
turns it into one SQL condition over `sessions AS s`, for a file another
program wrote (a missing column reads as NULL, a missing table as none).
The same condition picks the sessions a listing shows, the sessions a prune
plans and, inside each batch's transaction, the sessions it still deletes,
so `kaja sessions list FILTERS -n 0` shows exactly what `prune FILTERS`
would delete (less the sessions with a call waiting on the human, which
prune keeps unless told).

Archive state lives in `kaja_archived`, a table of kaja's own: the agent's
`sessions` table is a shared contract and gets no column from kaja.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from kaja_cli.core.conversations.columns import col, columns, quote
from kaja_cli.core.engine import dialect
from kaja_cli.core.engine.dialect import Dialect
from kaja_cli.core.owners import Owner

if TYPE_CHECKING:
    import sqlite3

DEFAULT_LIMIT = 20
ARCHIVE_TABLE = "kaja_archived"


class Archived(StrEnum):
    """How archived sessions count: hidden (the default), the only ones, or as any other."""

    HIDE = "hide"
    ONLY = "only"
    INCLUDE = "include"


class SessionFilter(NamedTuple):
    """What the user asked for; `owner` None = every owner."""

    owner: Owner | None = Owner()
    since: str | None = None  # ISO 8601 UTC: updated at or after
    model: str | None = None  # exact, ignoring case
    persona: str | None = None  # exact, ignoring case
    limit: int = DEFAULT_LIMIT  # 0 = all
    before: str | None = None  # ISO 8601 UTC: last updated before
    title: str | None = None  # a GLOB (`*`, `?`, `[…]`), ignoring case (ASCII letters)
    max_messages: int | None = None  # at most this many messages
    min_tokens: int | None = None  # at least this many tokens (prompt + completion)
    archived: Archived = Archived.HIDE
    pending: bool | None = None  # None: either; False: no call waiting on the human; True: one

    @property
    def narrowed(self) -> bool:
        """Whether anything beyond the owner and archive state narrows the sessions."""
        return any(
            v is not None
            for v in (self.since, self.model, self.persona, self.before, self.title,
                      self.max_messages, self.min_tokens)
        ) or self.archived is Archived.ONLY  # fmt: skip

    def described(self) -> list[str]:
        """The filters as a person typed them, for messages ("no sessions matching …")."""
        out = []
        for name, value in (("since", self.since), ("before", self.before), ("model", self.model),
                            ("persona", self.persona), ("title", self.title),
                            ("max-messages", self.max_messages), ("min-tokens", self.min_tokens)):  # fmt: skip
            if value is not None:
                out.append(f"--{name} {value}")
        if self.archived is Archived.ONLY:
            out.append("--archived")
        return out

    def to_json(self) -> dict[str, Any]:
        """Whose sessions and which, as `--json` documents begin (stats, prune)."""
        return {"owner": self.owner.label if self.owner else None,
                "all_owners": self.owner is None, "filters": self.described()}  # fmt: skip


def when(have: Sequence[str] | None, alias: str = "s") -> str:
    """A session's time: when it was last updated, else created."""
    return f"coalesce({col(have, alias, 'updatedAt')}, {col(have, alias, 'createdAt')})"


def where(
    have: dict[str, list[str]],
    flt: SessionFilter,
    *,
    alias: str = "s",
    owner_index: bool = True,
    d: Dialect = dialect.SQLITE,
) -> tuple[str, list[Any]]:
    """One SQL condition over `sessions AS {alias}` selecting what `flt` asks
    for, and its parameters. `have`: the columns of `sessions`, `messages`
    and `kaja_archived` (`columns(conn, *FILTER_TABLES)`).

    `owner_index` False keeps SQLite off the owner index (`+owner`): for a
    listing that counts every picked session's messages, the planner would
    otherwise expect a few sessions and count them again for each. `d`: the
    engine's spelling (cloud mode lists the server's sessions with it)."""
    s = have.get("sessions") or []
    m = have.get("messages") or []
    parts: list[str] = []
    args: list[Any] = []
    if flt.owner is not None:
        column = col(s, alias, "owner")
        cond, cargs = flt.owner.sessions_where(column if owner_index else d.no_index(column))
        parts.append(cond)
        args.extend(cargs)
    at = when(s, alias)
    if flt.since:
        parts.append(f"{at} >= ?")
        args.append(flt.since)
    if flt.before:
        parts.append(f"{at} < ?")
        args.append(flt.before)
    for name, value in (("model", flt.model), ("persona", flt.persona)):
        if value is not None:
            parts.append(d.equals_ignoring_case(col(s, alias, name)))
            args.append(value)
    if flt.title is not None:
        cond, pattern = d.glob_ignoring_case(col(s, alias, "title"), flt.title)
        parts.append(cond)
        args.append(pattern)
    sid = f"{alias}.{quote('id')}"
    has_messages = "sessionId" in m
    if flt.max_messages is not None:
        if has_messages:
            # LIMIT: counting stops once the session has shown it has too many.
            parts.append(
                f'(SELECT count(*) FROM (SELECT 1 FROM messages AS fm WHERE fm."sessionId" = {sid}'
                f" LIMIT {int(flt.max_messages) + 1}) AS few) <= {int(flt.max_messages)}"
            )
    if flt.min_tokens is not None:
        if has_messages:
            tokens = " + ".join(
                f"coalesce(sum(fm.{quote(c)}), 0)" for c in ("promptTokens", "completionTokens")
                if c in m
            ) or "0"  # fmt: skip
            parts.append(f'(SELECT {tokens} FROM messages AS fm WHERE fm."sessionId" = {sid}) >= ?')
            args.append(int(flt.min_tokens))
        else:
            parts.append("0 >= ?")
            args.append(int(flt.min_tokens))
    archived = _archived(have, sid)
    if flt.archived is Archived.HIDE and archived:
        parts.append(f"NOT {archived}")
    elif flt.archived is Archived.ONLY:
        parts.append(archived or "1 = 0")
    if flt.pending is not None:
        pending = f"coalesce({col(s, alias, 'pendingCallId')}, '') <> ''"
        parts.append(pending if flt.pending else f"NOT ({pending})")
    return " AND ".join(parts) or "1 = 1", args  # (PostgreSQL wants a boolean)


def _archived(have: dict[str, list[str]], sid: str) -> str | None:
    """`EXISTS (…)`: the session is archived; None when no session can be."""
    a = have.get(ARCHIVE_TABLE)
    if not a or "sessionId" not in a:
        return None
    return f'EXISTS (SELECT 1 FROM {ARCHIVE_TABLE} AS ka WHERE ka."sessionId" = {sid})'


FILTER_TABLES = ("sessions", "messages", ARCHIVE_TABLE)


def matching_ids(conn: sqlite3.Connection, flt: SessionFilter) -> list[str]:
    """The ids `flt` selects, in the listing's order (newest first) and limit."""
    have = columns(conn, *FILTER_TABLES)
    s = have.get("sessions")
    if not s or "id" not in s:
        return []
    d = dialect.of(conn)
    cond, args = where(have, flt, d=d)
    limit = str(int(flt.limit)) if flt.limit and flt.limit > 0 else d.limit_all
    return [
        r[0]
        for r in conn.execute(
            f"SELECT s.id FROM sessions AS s WHERE {cond} ORDER BY {when(s)} DESC, s.id DESC LIMIT {limit}",
            args,
        )
    ]
