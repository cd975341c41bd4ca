"""`kaja sessions stats`: how big the conversation store is, and where.

Sessions, messages, tokens (prompt + completion, from the messages) and
bytes (the text of each message: content, parts and reasoning, as SQLite
stores it) by owner, model, persona and month (of the session's last
update, the time the listing and the filters use); the largest sessions;
image files; the search index's size and the database's. The sessions are
those the filters select (`filter.where`), every owner's unless `--owner`.

One skeleton, two engine parts (`store.part`): the messages grouped by
session once (`per_session`: a temporary table in SQLite; on the server,
whose read-only transactions make no table, a `WITH` every query starts
with, in one snapshot), then a small query per grouping over it. The parts
also say the sizes: SQLite's `dbstat` (when compiled in) and the file with
its `-wal`; on the server, the search index's and kaja's tables' relations.
Read-only. Image folders are local files in either mode.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core import clock
from kaja_cli.core.conversations import images
from kaja_cli.core.conversations.columns import col, columns, quote
from kaja_cli.core.conversations.filter import FILTER_TABLES, SessionFilter, when, where
from kaja_cli.core.engine import dialect, fs

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

LARGEST = 10


class Totals(NamedTuple):
    key: str | None  # the group (owner, model, persona or YYYY-MM); None: all of them
    sessions: int
    messages: int
    prompt_tokens: int
    completion_tokens: int
    bytes: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self, name: str | None = None) -> dict:
        """The figures; `name`: the group's key first, under that name ("owner")."""
        head = {name: self.key} if name else {}
        return head | {"sessions": self.sessions, "messages": self.messages,
                       "prompt_tokens": self.prompt_tokens,
                       "completion_tokens": self.completion_tokens, "tokens": self.tokens,
                       "bytes": self.bytes}  # fmt: skip


class Largest(NamedTuple):
    id: str
    owner: str | None
    title: str | None
    updated: str | None
    messages: int
    tokens: int
    bytes: int
    image_bytes: int


class Stats(NamedTuple):
    total: Totals
    by_owner: list[Totals]
    by_model: list[Totals]
    by_persona: list[Totals]
    by_month: list[Totals]
    largest: list[Largest]
    image_files: int
    image_bytes: int
    index_bytes: int | None  # None: this SQLite has no dbstat, or there is no index
    database_bytes: int  # the shared file with its -wal; on a server, kaja's tables
    location: Path | str  # the store's file, or in cloud mode the server and schema
    store_exists: bool = True

    def to_json(self, flt: SessionFilter) -> dict:
        """`kaja sessions stats --json`, for the sessions `flt` selected."""
        return flt.to_json() | {
            "total": self.total.to_json(),
            "by_owner": [t.to_json("owner") for t in self.by_owner],
            "by_model": [t.to_json("model") for t in self.by_model],
            "by_persona": [t.to_json("persona") for t in self.by_persona],
            "by_month": [t.to_json("month") for t in self.by_month],
            "largest": [x._asdict() for x in self.largest],
            "images": {"files": self.image_files, "bytes": self.image_bytes},
            "index_bytes": self.index_bytes,
            "database_bytes": self.database_bytes,
        }


def stats(store: Store, flt: SessionFilter) -> Stats:
    """The figures for the sessions `flt` selects; a missing store has none."""
    part = store.part(__package__)
    where_ = store.location()
    empty = Totals(None, 0, 0, 0, 0, 0)
    with store.maybe_reader() as conn:
        if conn is None:
            return Stats(empty, [], [], [], [], [], 0, 0, None, 0, where_, store_exists=False)
        have = columns(conn, *FILTER_TABLES)
        s = have.get("sessions")
        if not s or "id" not in s:
            return Stats(empty, [], [], [], [], [], 0, 0, None, part.database_bytes(store, conn),
                         where_)  # fmt: skip
        with part.per_session(conn, *_per_session(conn, have, flt)) as source:
            groups, ids_by_size, picked = _figures(conn, source, _folder_names(store))
        total = groups.pop("total")
        folders = _image_folders(store.paths.images_dir, picked)
        index = part.index_bytes(conn)
        database = part.database_bytes(store, conn)
    sizes = {sid: fs.tree_size(folder) for sid, folder in folders.items()}
    largest = [
        Largest(str(i), _str(o), _str(t), _str(u), int(n), int(tok), int(b),
                sizes.get(str(i), (0, 0))[0])
        for i, o, t, u, n, tok, b in ids_by_size
    ]  # fmt: skip
    return Stats(
        total[0] if total else empty,
        groups["owner"], groups["model"], groups["persona"],
        sorted(groups["month"], key=lambda g: g.key or "", reverse=True),
        largest,
        sum(n for _, n in sizes.values()), sum(b for b, _ in sizes.values()),
        index, database, where_,
    )  # fmt: skip


class Source(NamedTuple):
    """The selected sessions' rows as the queries name them (an engine part's
    `per_session`): `name` in the FROM clause, `with_` before the SELECT
    (a `WITH … ` clause, or nothing) and `args` its parameters, first in
    each query's."""

    name: str
    with_: str = ""
    args: tuple = ()


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _per_session(
    conn: sqlite3.Connection, have: dict[str, list[str]], flt: SessionFilter
) -> tuple[str, list]:
    """One row per selected session with its counts and bytes: the SELECT and
    its parameters (the engine part's `per_session` keeps it for the queries)."""
    d = dialect.of(conn)
    s = have["sessions"]
    m = have.get("messages") or []
    cond, args = where(have, flt, d=d)
    sizes = [d.byte_length(f"m.{quote(c)}") for c in ("content", "parts", "reasoning")
             if c in m] or ["0"]  # fmt: skip
    tokens = [f"coalesce(sum(m.{quote(c)}), 0)" if c in m else "0"
              for c in ("promptTokens", "completionTokens")]  # fmt: skip
    select = (
        f"SELECT s.id AS id, {col(s, 's', 'owner')} AS owner, {col(s, 's', 'model')} AS model,"
        f" {col(s, 's', 'persona')} AS persona, {col(s, 's', 'title')} AS title, {when(s)} AS at,"
    )
    if "sessionId" not in m:
        return (
            f"{select} 0 AS n, 0 AS pt, 0 AS ct, 0 AS bytes FROM sessions AS s WHERE {cond}",
            args,
        )
    # One owner's figures read that owner's messages only (an account's on a
    # server, not every account's); everyone's read every message once.
    mine, also = "", []
    if flt.owner is not None:
        mine, also = f' WHERE m."sessionId" IN (SELECT s.id FROM sessions AS s WHERE {cond})', args
    per = (
        f'(SELECT m."sessionId" AS sid, count(*) AS n, {tokens[0]} AS pt, {tokens[1]} AS ct,'
        f' sum({" + ".join(sizes)}) AS bytes FROM messages AS m{mine} GROUP BY m."sessionId")'
    )
    return (
        f"{select} coalesce(a.n, 0) AS n, coalesce(a.pt, 0) AS pt, coalesce(a.ct, 0) AS ct,"
        f" coalesce(a.bytes, 0) AS bytes FROM sessions AS s LEFT JOIN {per} AS a"
        f" ON a.sid = s.id WHERE {cond}"
    ), [*also, *args]


# The groupings: (name, the key's expression over the per-session rows).
_GROUPINGS = (("owner", "owner"), ("model", "model"), ("persona", "persona"),
              ("month", clock.month_sql("at")), ("total", "NULL"))  # fmt: skip


def _figures(
    conn: sqlite3.Connection, source: Source, names: list[str]
) -> tuple[dict[str, list[Totals]], list[tuple], set[str]]:
    """Every grouping (each in its order), the largest sessions, and which of
    `names` (image folders) are selected sessions': one statement, so the
    per-session rows are made once: on a server they are a `WITH` each
    statement makes anew, reading every selected message (seven statements
    read them seven times). A subquery's NULL would be PostgreSQL's text, so
    the largest sessions' unused counts are 0."""
    # `k IS NOT NULL`: a NULL key sorts first in either engine (PostgreSQL's last).
    parts = [
        f"SELECT '{name}' AS dim, row_number() OVER (ORDER BY b DESC, c DESC, k IS NOT NULL, k)"
        " AS r, k, c, n, pt, ct, b, NULL AS o, NULL AS t, NULL AS u FROM (SELECT"
        f" {expr} AS k, count(*) AS c, sum(n) AS n, sum(pt) AS pt, sum(ct) AS ct,"
        f" sum(bytes) AS b FROM {source.name} GROUP BY k) AS g{i}"
        for i, (name, expr) in enumerate(_GROUPINGS)
    ]
    parts.append(
        "SELECT * FROM (SELECT 'largest' AS dim, row_number() OVER (ORDER BY bytes DESC, n DESC,"
        " id) AS r, id AS k, 0 AS c, n, pt + ct AS pt, 0 AS ct, bytes AS b, owner AS o,"
        f" title AS t, at AS u FROM {source.name} ORDER BY bytes DESC, n DESC, id LIMIT ?) AS x"
    )
    cond, arg = dialect.of(conn).in_list("id", names)
    parts.append(
        "SELECT 'folder' AS dim, 0 AS r, id AS k, NULL AS c, NULL AS n, NULL AS pt, NULL AS ct,"
        f" NULL AS b, NULL AS o, NULL AS t, NULL AS u FROM {source.name} WHERE {cond}"
    )
    rows = conn.execute(
        f"{source.with_}{' UNION ALL '.join(parts)} ORDER BY dim, r", (*source.args, LARGEST, arg)
    ).fetchall()
    groups: dict[str, list[Totals]] = {name: [] for name, _ in _GROUPINGS}
    largest, picked = [], set()
    for dim, _r, k, c, n, pt, ct, b, o, t, u in rows:
        if dim == "largest":
            largest.append((k, o, t, u, n, pt, b))
        elif dim == "folder":
            picked.add(k)
        elif c:
            groups[dim].append(Totals(k if isinstance(k, str) else None, int(c), int(n or 0),
                                      int(pt or 0), int(ct or 0), int(b or 0)))  # fmt: skip
    return groups, largest, picked


def _folder_names(store: Store) -> list[str]:
    """The names in the images folder (each maybe a session's folder)."""
    try:
        return os.listdir(store.paths.images_dir)
    except OSError:
        return []


def _image_folders(images_dir: Path, picked: set[str]) -> dict[str, Path]:
    """The image folders of the selected sessions (real folders, no links)."""
    out = {}
    for name in picked:
        folder = images.session_dir(images_dir, name)
        if folder is not None and folder.is_dir() and not folder.is_symlink():
            out[name] = folder
    return out
