"""Sessions: listing them, finding one by id or prefix with the owner rule, and
deleting them (SPEC §4, §5).

Every query here copes with a file another program wrote: the columns are
read from the file first, a known column that is missing reads as NULL, extra
columns are carried along, and a missing `messages` table means no messages.
The listing is one query, whatever the number of sessions.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kaja_cli.core.conversations.columns import col, columns
from kaja_cli.core.conversations.filter import (
    FILTER_TABLES,
    Archived,
    SessionFilter,
    where,
)
from kaja_cli.core.engine import dialect
from kaja_cli.core.ids import SHORT_ID_MIN, short_id  # noqa: F401 - part of this module's interface
from kaja_cli.core.owners import Owner, label
from kaja_cli.errors import NotFound, Refused, UsageError

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

MAX_CANDIDATES = 10

# The seed's columns of `sessions`, in the seed's order (a public contract).
SESSION_COLUMNS = (
    "id", "createdAt", "updatedAt", "persona", "model", "title", "owner", "systemPrompt",
    "pendingCallId", "pendingKind",
)  # fmt: skip


# --- finding one session ------------------------------------------------------------
class SessionRef(NamedTuple):
    id: str
    owner: str | None
    title: str | None


def find(conn: sqlite3.Connection, ref: str, owner: Owner | None) -> SessionRef:
    """The acting owner's session whose id is `ref` or starts with it
    (`owner` None: anyone's, as with `--all-owners`).

    No match: NotFound (exit 3). Several of the owner's sessions match:
    UsageError (exit 2) listing them. Only someone else's: Refused (exit 5)
    naming whose it is.
    """
    ref = ref.strip()
    if not ref:
        raise UsageError("empty session id")
    have = columns(conn, "sessions").get("sessions")
    if not have or "id" not in have:
        raise NotFound(f"no session {ref!r}", hint="`kaja sessions` lists them")
    # Any id another program stored can be typed back (`a/b`, spaces…): it is
    # only ever a bound parameter, never a path (images.session_dir).
    select = f"SELECT id, {col(have, 's', 'owner')}, {col(have, 's', 'title')} FROM sessions AS s"
    if owner is None:
        mine_where, mine_args = "1 = 1", ()
    else:
        mine_where, mine_args = owner.sessions_where(col(have, "s", "owner"))
    exact = conn.execute(f"{select} WHERE id = ?", (ref,)).fetchall()
    if exact:
        matches = [SessionRef(*r) for r in exact]
    else:
        # The owner's own matches first: a prefix that many sessions share
        # must not hide the owner's one behind others' (a LIMIT would).
        span = "id >= ? AND id < ?", (ref, ref + "\U0010ffff")
        matches = [
            SessionRef(*r)
            for r in conn.execute(
                f"{select} WHERE {span[0]} AND {mine_where} ORDER BY id LIMIT ?",
                (*span[1], *mine_args, MAX_CANDIDATES + 1),
            )
        ] or [
            SessionRef(*r)
            for r in conn.execute(
                f"{select} WHERE {span[0]} ORDER BY id LIMIT ?", (*span[1], MAX_CANDIDATES + 1)
            )
        ]
    if not matches and ref != ref.lower():
        return find(conn, ref.lower(), owner)  # UUIDs are lower-case hex; a typed one may not be
    if not matches:
        raise NotFound(f"no session {ref!r}", hint="`kaja sessions` lists them")
    mine = [m for m in matches if owner is None or owner.owns(m.owner)]
    if len(mine) == 1:
        return mine[0]
    if len(mine) > 1:
        shown = ", ".join(f"{m.id} ({m.title or 'untitled'})" for m in mine[:MAX_CANDIDATES])
        more = " …" if len(mine) > MAX_CANDIDATES else ""
        raise UsageError(
            f"session prefix {ref!r} is ambiguous: {shown}{more}", hint="type more of the id"
        )
    assert owner is not None  # with no owner every match is "mine"
    whose = sorted({label(m.owner) for m in matches})
    raise Refused(
        f"session {matches[0].id if len(matches) == 1 else ref!r} belongs to {', '.join(whose)}, "
        f"not {owner.label}",
        hint=f"act as that owner with --owner {whose[0]}" if len(whose) == 1 else None,
    )


def latest(conn: sqlite3.Connection, owner: Owner) -> SessionRef:
    """The acting owner's most recently updated session that is not archived
    (`kaja resume -c`)."""
    have = columns(conn, *FILTER_TABLES)
    s = have.get("sessions")
    if not s or "id" not in s:
        raise NotFound(f"no sessions for {owner.label}", hint="this store has no sessions table")
    cond, args = where(have, SessionFilter(owner))
    when = f"coalesce({col(s, 's', 'updatedAt')}, {col(s, 's', 'createdAt')})"
    row = conn.execute(
        f"SELECT id, {col(s, 's', 'owner')}, {col(s, 's', 'title')} FROM sessions AS s"
        f" WHERE {cond} ORDER BY {when} DESC, id DESC LIMIT 1",
        args,
    ).fetchone()
    if row is None:
        cond, args = where(have, SessionFilter(owner, archived=Archived.ONLY))
        if conn.execute(f"SELECT 1 FROM sessions AS s WHERE {cond} LIMIT 1", args).fetchone():
            raise NotFound(
                f"{owner.label} has only archived sessions",
                hint="`kaja sessions --archived` lists them; resume one by its id",
            )
        raise NotFound(
            f"{owner.label} has no sessions",
            hint="`kaja sessions --all-owners` lists everyone's",
        )
    return SessionRef(*row)


# --- the listing ----------------------------------------------------------------------
class SessionSummary(NamedTuple):
    """One row of the listing: the session's columns and what hangs off it."""

    row: dict[str, Any]  # every column as stored (seed names), extras included
    short_id: str
    message_count: int
    prompt_tokens: int
    completion_tokens: int
    first_prompt: str | None  # for an untitled session: how it began

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def pending(self) -> bool:
        return bool(self.row.get("pendingCallId"))


class Listing(NamedTuple):
    """The listing: `SessionSummary` rows, or (for --json) each session's JSON text."""

    sessions: list[Any]
    total: int = 0  # sessions matching the filter, before the limit
    location: Path | str | None = None  # a file, or the server (its password as ***)
    store_exists: bool = True
    has_sessions_table: bool = True

    @property
    def left_out(self) -> int:
        return max(0, self.total - len(self.sessions))

    def to_json(self, flt: SessionFilter) -> tuple[dict[str, Any], str, list[Any]]:
        """`kaja sessions --json`: its head, then the sessions, each one JSON
        text already (`listing_json`), as (head, key, items)."""
        head = {"owner": flt.owner.label if flt.owner else None, "all_owners": flt.owner is None,
                "archived": flt.archived is Archived.ONLY, "total": self.total,
                "left_out": self.left_out}  # fmt: skip
        return head, "sessions", self.sessions


_COMPUTED = ("kaja_prev_id", "kaja_next_id", "kaja_messages", "kaja_prompt_tokens",
             "kaja_completion_tokens", "kaja_first_prompt")  # fmt: skip


def json_value(expr: str, d: dialect.Dialect = dialect.SQLITE) -> str:
    """`expr` as a JSON value (`Dialect.json_value`: a BLOB as hex, an infinite REAL as text)."""
    return d.json_value(expr)


def json_fields(
    have: Sequence[str] | None,
    alias: str,
    known: Sequence[str],
    overrides: dict[str, str] | None = None,
    d: dialect.Dialect = dialect.SQLITE,
    texts: Collection[str] = (),
) -> list[tuple[str, str]]:
    """(name, value) pairs for a JSON object: the known columns in their order
    (NULL when missing), then any extra columns a newer writer added (not
    kaja's own `kaja_*`). `overrides` gives a present column its own
    expression; `texts` are the columns of TEXT affinity (`Dialect.text_columns`)."""
    names = list(known) + [c for c in have or () if c not in known and not c.startswith("kaja_")]
    out = []
    for n in names:
        expr = col(have, alias, n)
        value = (overrides or {}).get(n) if expr != "NULL" else None
        out.append((n, value or d.json_value(expr, text=n in texts)))
    return out


def json_pairs(
    have: Sequence[str] | None,
    alias: str,
    known: Sequence[str],
    overrides: dict[str, str] | None = None,
) -> str:
    """`'name', value` pairs for SQLite's json_object (see `json_fields`)."""
    fields = json_fields(have, alias, known, overrides)
    return ", ".join(f"'{n.replace(chr(39), chr(39) * 2)}', {v}" for n, v in fields)


def listing_query(
    have: dict[str, list[str]],
    flt: SessionFilter,
    *,
    as_json: bool = False,
    d: dialect.Dialect = dialect.SQLITE,
) -> tuple[str, list[Any]] | None:
    """The one query behind `kaja sessions`, or None with no sessions table.

    The filtered, ordered, limited sessions (with the count before the limit)
    are picked first; then, for those only, the neighbouring ids (for the
    short id), the message count and token sums (one pass over the covering
    index `messages_session_tokens`), and how an untitled session began.
    `as_json`: each row is the session's JSON object, built by SQLite.
    """
    s = have.get("sessions")
    if not s or "id" not in s:
        return None
    m = have.get("messages")
    # Off the owner index: with it, the planner expects a few sessions and
    # scans the per-session counts once for each (4,674 sessions: 1 s); a
    # scan of the table costs ~5 ms per 10,000.
    cond, args = where(have, flt, alias="s", owner_index=False, d=d)
    when = f"coalesce({col(s, 's', 'updatedAt')}, {col(s, 's', 'createdAt')})"
    limit = str(int(flt.limit)) if flt.limit and flt.limit > 0 else d.limit_all
    picked = (
        f"SELECT s.*, {when} AS kaja_when, count(*) OVER () AS kaja_total FROM sessions AS s"
        f" WHERE {cond}"
        f" ORDER BY kaja_when DESC, s.id DESC LIMIT {limit}"
    )
    neighbours = (
        "(SELECT max(x.id) FROM sessions AS x WHERE x.id < p.id) AS kaja_prev_id,"
        " (SELECT min(x.id) FROM sessions AS x WHERE x.id > p.id) AS kaja_next_id"
    )
    counts = ["0", "0", "0"]
    first = "NULL"
    join = ""
    if m and "sessionId" in m:
        counts = ["coalesce(a.n, 0)", f"CAST(coalesce(a.pt, 0) AS {d.integer})",
                  f"CAST(coalesce(a.ct, 0) AS {d.integer})"]  # fmt: skip
        order = "m.seq" if "seq" in m else f"m.{d.rowid}"
        role = "m.role = 'user'" if "role" in m else "1 = 1"
        first = (
            f"CASE WHEN coalesce({col(s, 'p', 'title')}, '') = '' THEN"
            f' (SELECT {col(m, "m", "content")} FROM messages AS m WHERE m."sessionId" = p.id'
            f" AND {role} AND {col(m, 'm', 'content')} <> '' ORDER BY {order} LIMIT 1) END"
        )
        join = (
            ' LEFT JOIN (SELECT m."sessionId" AS sid, count(*) AS n,'
            f" {d.real_sum(col(m, 'm', 'promptTokens'))} AS pt,"
            f" {d.real_sum(col(m, 'm', 'completionTokens'))} AS ct FROM messages AS m"
            ' WHERE m."sessionId" IN (SELECT id FROM picked) GROUP BY m."sessionId") AS a'
            " ON a.sid = p.id"
        )
    if as_json:
        n, pt, ct = counts
        fields = [
            *json_fields(s, "p", SESSION_COLUMNS, d=d),
            ("message_count", n), ("prompt_tokens", pt), ("completion_tokens", ct),
            ("total_tokens", f"{pt} + {ct}"),
        ]  # fmt: skip
        select = f"{d.json_object(fields)}, p.id, {neighbours}, p.kaja_total"
    else:
        select = (
            f"p.*, {neighbours}, {counts[0]} AS kaja_messages, {counts[1]} AS kaja_prompt_tokens,"
            f" {counts[2]} AS kaja_completion_tokens, {first} AS kaja_first_prompt"
        )
    sql = (
        f"WITH picked AS ({picked}) SELECT {select} FROM picked AS p{join}"
        " ORDER BY p.kaja_when DESC, p.id DESC"
    )
    return sql, args


def _int(value: Any) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def list_sessions(conn: sqlite3.Connection, flt: SessionFilter) -> Listing:
    """The sessions `flt` selects, newest first, with their counts: one query."""
    have = columns(conn, *FILTER_TABLES)
    query = listing_query(have, flt, d=dialect.of(conn))
    if query is None:
        return Listing([], has_sessions_table=False)
    cur = conn.execute(*query)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    n_session = len(names) - len(_COMPUTED) - 2  # minus kaja_when, kaja_total
    session_names = names[:n_session]
    extras = [c for c in session_names if c not in SESSION_COLUMNS]
    out = []
    total = 0
    for r in rows:
        values = dict(zip(session_names, r, strict=False))
        row = {c: values.get(c) for c in SESSION_COLUMNS} | {c: values[c] for c in extras}
        total = r[n_session + 1]
        prev, nxt, count, pt, ct, first = r[n_session + 2 :]
        sid = str(row["id"])
        out.append(
            SessionSummary(
                row=row,
                short_id=short_id(sid, prev, nxt),
                message_count=_int(count),
                prompt_tokens=_int(pt),
                completion_tokens=_int(ct),
                first_prompt=first if isinstance(first, str) else None,
            )
        )
    return Listing(out, total)


def list_sessions_json(conn: sqlite3.Connection, flt: SessionFilter) -> Listing:
    """`list_sessions` for `--json`: every session column, `short_id`,
    `message_count` and token totals, serialized by SQLite (10,000 sessions
    would spend most of their time in Python's dict and JSON code)."""
    import json

    query = listing_query(columns(conn, *FILTER_TABLES), flt, as_json=True, d=dialect.of(conn))
    if query is None:
        return Listing([], has_sessions_table=False)
    out = []
    total = 0
    dumps = json.dumps
    for text, sid, prev, nxt, count in conn.execute(*query):
        out.append('{"short_id":' + dumps(short_id(str(sid), prev, nxt)) + "," + text[1:])
        total = count
    return Listing(out, total)


def listing_json(store: Store, flt: SessionFilter) -> Listing:
    with store.maybe_reader() as conn:
        if conn is None:
            return Listing([], location=store.location(), store_exists=False)
        result = list_sessions_json(conn, flt)
    return result._replace(location=store.location())


def listing(store: Store, flt: SessionFilter) -> Listing:
    """`list_sessions` on the store's shared file (or kaja's schema on the
    server); a missing store lists nothing (and says where kaja looked)
    rather than failing."""
    with store.maybe_reader() as conn:
        if conn is None:
            return Listing([], location=store.location(), store_exists=False)
        result = list_sessions(conn, flt)
    return result._replace(location=store.location())


# --- deleting ------------------------------------------------------------------------
class DeletePlan(NamedTuple):
    """What `kaja sessions delete` will remove; the same plan drives the question."""

    sessions: list[SessionRef]
    rows: dict[str, int]  # rows per table that hang off them (and the sessions)
    image_folders: list[Path]  # existing folders files/images/<sessionId>/
    image_files: int = 0
    image_bytes: int = 0
    images_link: Path | None = None  # a symlinked files/ or images/: their folders stay
    left_over: tuple[Path, ...] = ()  # folders an interrupted delete left (sessions gone)
    unknown: NotFound | None = None  # an id that is nothing: raised once the leftovers are gone

    def would_do(self) -> DeleteResult:
        """What deleting by this plan would do, if nothing changes meanwhile
        (`--dry-run`): the same result a real delete reports."""
        folders = [] if self.images_link is not None else [*self.image_folders, *self.left_over]
        return DeleteResult(self.sessions, self.rows, folders)


class DeleteResult(NamedTuple):
    sessions: list[SessionRef]
    rows: dict[str, int]
    image_folders: list[Path]

    def to_json(self, qdrant_points: int | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """`kaja sessions delete --json`; `qdrant_points`: deleted there too (None: no
        Qdrant); `dry_run`: what would be deleted, nothing was."""
        return {
            "dry_run": dry_run,
            "deleted": [{"id": s.id, "title": s.title, "owner": s.owner} for s in self.sessions],
            "rows": self.rows,
            "image_folders": [str(p) for p in self.image_folders],
            "qdrant_points": qdrant_points,
        }


def plan_delete(
    conn: sqlite3.Connection, refs: Iterable[str], owner: Owner, images_dir: Path
) -> DeletePlan:
    """Resolve every id (all must resolve: no session is deleted otherwise) and count.

    An id whose session is gone but whose image folder is still there (a
    delete cut short after its commit) resolves to that folder: running the
    delete again removes it, whatever else the ids name."""
    from kaja_cli.core.conversations import cascade
    from kaja_cli.core.conversations.images import session_dir
    from kaja_cli.core.engine import fs

    found: dict[str, SessionRef] = {}
    left_over: list[Path] = []
    unknown: list[NotFound] = []
    for ref in refs:
        try:
            s = find(conn, ref, owner)
        except NotFound as e:
            folder = _folder_left_over(conn, ref, images_dir)
            if folder is None:
                unknown.append(e)
            else:
                left_over.append(folder)
            continue
        found.setdefault(s.id, s)
    if unknown:
        if not left_over:
            raise unknown[0]
        found = {}  # every id must resolve, or no session goes; the leftovers still do
    sessions = list(found.values())
    rows = _count_rows(conn, [s.id for s in sessions], cascade)
    folders = []
    files = size = 0
    link = cascade.images_link(images_dir)
    for s in sessions if link is None else ():
        folder = session_dir(images_dir, s.id)
        if folder is not None and (folder.is_dir() or folder.is_symlink()):
            folders.append(folder)
            b, n = fs.tree_size(folder)
            size, files = size + b, files + n
    for folder in left_over if link is None else ():  # never through a symlinked images/
        folders.append(folder)
        b, n = fs.tree_size(folder)
        size, files = size + b, files + n
    return DeletePlan(sessions, rows, folders, files, size, link,
                      tuple(dict.fromkeys(left_over)), unknown[0] if unknown else None)  # fmt: skip


def _folder_left_over(conn: sqlite3.Connection, ref: str, images_dir: Path) -> Path | None:
    """The image folder a delete cut short after its commit left for `ref`: the
    one folder whose name is (or starts with) it, whose session is gone. Running
    the delete again removes it (exit 0) instead of "no session"."""
    from kaja_cli.core.conversations.images import safe_name

    ref = ref.strip()
    if len(ref) < 8 or not safe_name(ref):
        return None
    try:
        names = [n for n in os.listdir(images_dir) if n.startswith(ref) and safe_name(n)]
    except OSError:
        return None
    if len(names) != 1:
        return None
    gone = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (names[0],)).fetchone() is None
    folder = images_dir / names[0]
    return folder if gone and (folder.is_dir() or folder.is_symlink()) else None


def _count_rows(conn: sqlite3.Connection, ids: list[str], cascade: Any) -> dict[str, int]:
    # `count_session_rows` fills a TEMP table: a read-only connection may
    # create one (it lives in the connection's own temp database).
    try:
        return cascade.count_session_rows(conn, ids)
    except sqlite3.OperationalError:
        # A table another program left without a column the cascade uses:
        # the counts are for the question only, so leave them out.
        return {"sessions": len(ids)}


def delete_sessions(
    conn: sqlite3.Connection,
    plan: DeletePlan,
    owner: Owner,
    images_dir: Path,
    semantic_db: Path | None = None,
) -> DeleteResult:
    """Delete the planned sessions and what hangs off them in one transaction,
    then their image folders (only once the rows are committed)."""
    from kaja_cli.core.conversations import cascade
    from kaja_cli.core.engine import db

    with db.transaction(conn):
        # Re-check under the write lock: a session may have gone or changed
        # owner since the question was asked.
        ids = [s.id for s in plan.sessions]
        have = columns(conn, "sessions").get("sessions") or []
        marks = ",".join("?" * len(ids))
        now = {
            r[0]: r[1]
            for r in conn.execute(
                f"SELECT id, {col(have, 's', 'owner')} FROM sessions AS s WHERE id IN ({marks})",
                ids,
            )
        }
        for s in plan.sessions:
            if s.id in now and not owner.owns(now[s.id]):
                raise Refused(f"session {s.id} now belongs to {label(now[s.id])}")
        keep = [s for s in plan.sessions if s.id in now]
        if semantic_db is not None:  # their vectors in kaja's semantic index go too
            from kaja_cli.core.conversations.semantic import index

            index.forget_sessions(semantic_db, conn, [s.id for s in keep])
        rows = cascade.delete_session_rows(conn, [s.id for s in keep])
    gone = [s.id for s in plan.sessions] + [p.name for p in plan.left_over]
    removed = cascade.remove_image_folders(images_dir, gone)
    return DeleteResult(keep, rows, removed)


def plan_deletion(store: Store, refs: Iterable[str], owner: Owner) -> DeletePlan:
    """Read-only: the question is asked before anything is opened for writing."""
    with store.reader(writing=True) as conn:
        return plan_delete(conn, refs, owner, store.paths.images_dir)


def delete(store: Store, plan: DeletePlan, owner: Owner) -> DeleteResult:
    with store.writer() as conn:
        return delete_sessions(conn, plan, owner, store.paths.images_dir, store.paths.semantic_db)
