"""`kaja sessions stats`: how big the conversation store is, and where.

Sessions, messages, tokens (prompt + completion, from the messages) and
bytes (the text of each message: content, parts and reasoning, as SQLite
stores it) by owner, model, persona and month (of the session's last
update, the time the listing and the filters use); the largest sessions;
image files; the search index's size (SQLite's `dbstat`, when compiled in)
and the database file's. The sessions are those the filters select
(`filter.where`), every owner's unless `--owner`.

One pass over the messages, grouped by session into a temporary table, and
then a small query per grouping over that table. Read-only.
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
from kaja_cli.core.engine import fs
from kaja_cli.core.store.search_index import FTS_TABLE

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

LARGEST = 10
_INDEX_TABLES = tuple(f"{FTS_TABLE}_{s}" for s in ("segments", "segdir", "docsize", "stat"))


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
    database_bytes: int  # the shared file with its -wal
    location: Path
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
    store.require_local()
    path = store.path()
    empty = Totals(None, 0, 0, 0, 0, 0)
    if not path.exists():
        return Stats(empty, [], [], [], [], [], 0, 0, None, 0, path, store_exists=False)
    with store.reader() as conn:
        have = columns(conn, *FILTER_TABLES)
        s = have.get("sessions")
        if not s or "id" not in s:
            return Stats(empty, [], [], [], [], [], 0, 0, None, _file_bytes(path), path)
        _per_session(conn, have, flt)
        groups = {
            dim: _grouped(conn, expr)
            for dim, expr in (("owner", "owner"), ("model", "model"), ("persona", "persona"),
                              ("month", clock.month_sql("at")))
        }  # fmt: skip
        total = _grouped(conn, "NULL")
        ids_by_size = conn.execute(
            "SELECT id, owner, title, at, n, pt + ct, bytes FROM temp.kaja_stats"
            " ORDER BY bytes DESC, n DESC, id LIMIT ?",
            (LARGEST,),
        ).fetchall()
        folders = _image_folders(conn, store.paths.images_dir)
        index = _index_bytes(conn)
    sizes = {sid: fs.tree_size(folder) for sid, folder in folders.items()}
    largest = [
        Largest(str(i), _str(o), _str(t), _str(u), n, tok, b, sizes.get(str(i), (0, 0))[0])
        for i, o, t, u, n, tok, b in ids_by_size
    ]
    return Stats(
        total[0] if total else empty,
        groups["owner"], groups["model"], groups["persona"],
        sorted(groups["month"], key=lambda g: g.key or "", reverse=True),
        largest,
        sum(n for _, n in sizes.values()), sum(b for b, _ in sizes.values()),
        index, _file_bytes(path), path,
    )  # fmt: skip


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _per_session(conn: sqlite3.Connection, have: dict[str, list[str]], flt: SessionFilter) -> None:
    """temp.kaja_stats: one row per selected session with its counts and bytes."""
    s = have["sessions"]
    m = have.get("messages") or []
    cond, args = where(have, flt)
    sizes = [f"coalesce(length(CAST(m.{quote(c)} AS BLOB)), 0)" for c in ("content", "parts", "reasoning")
             if c in m] or ["0"]  # fmt: skip
    tokens = [f"coalesce(sum(m.{quote(c)}), 0)" if c in m else "0"
              for c in ("promptTokens", "completionTokens")]  # fmt: skip
    per = "NULL"
    if "sessionId" in m:
        per = (
            f"(SELECT m.sessionId AS sid, count(*) AS n, {tokens[0]} AS pt, {tokens[1]} AS ct,"
            f" sum({' + '.join(sizes)}) AS bytes FROM messages AS m GROUP BY m.sessionId)"
        )
    conn.execute("DROP TABLE IF EXISTS temp.kaja_stats")
    select = (
        f"SELECT s.id AS id, {col(s, 's', 'owner')} AS owner, {col(s, 's', 'model')} AS model,"
        f" {col(s, 's', 'persona')} AS persona, {col(s, 's', 'title')} AS title, {when(s)} AS at,"
    )
    if per == "NULL":
        sql = f"{select} 0 AS n, 0 AS pt, 0 AS ct, 0 AS bytes FROM sessions AS s WHERE {cond}"
    else:
        sql = (
            f"{select} coalesce(a.n, 0) AS n, coalesce(a.pt, 0) AS pt, coalesce(a.ct, 0) AS ct,"
            f" coalesce(a.bytes, 0) AS bytes FROM sessions AS s LEFT JOIN {per} AS a"
            f" ON a.sid = s.id WHERE {cond}"
        )
    conn.execute(f"CREATE TEMP TABLE kaja_stats AS {sql}", args)


def _grouped(conn: sqlite3.Connection, expr: str) -> list[Totals]:
    rows = conn.execute(
        f"SELECT {expr} AS k, count(*), sum(n), sum(pt), sum(ct), sum(bytes) FROM temp.kaja_stats"
        " GROUP BY k ORDER BY sum(bytes) DESC, count(*) DESC, k"
    ).fetchall()
    return [
        Totals(k if isinstance(k, str) else None, c, int(n or 0), int(pt or 0), int(ct or 0),
               int(b or 0))
        for k, c, n, pt, ct, b in rows
        if c
    ]  # fmt: skip


def _image_folders(conn: sqlite3.Connection, images_dir: Path) -> dict[str, Path]:
    """The image folders of the selected sessions (real folders, no links)."""
    try:
        names = os.listdir(images_dir)
    except OSError:
        return {}
    picked = {
        r[0]
        for r in conn.execute("SELECT id FROM temp.kaja_stats WHERE id IN (SELECT value FROM json_each(?))",
                              (_json(names),))
    }  # fmt: skip
    out = {}
    for name in picked:
        folder = images.session_dir(images_dir, name)
        if folder is not None and folder.is_dir() and not folder.is_symlink():
            out[name] = folder
    return out


def _json(items: list[str]) -> str:
    import json

    return json.dumps(items)


def _index_bytes(conn: sqlite3.Connection) -> int | None:
    """Pages the search index's tables take (dbstat), or None when it can't say."""
    total = 0
    try:
        for name in _INDEX_TABLES:
            row = conn.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name = ? AND aggregate = TRUE", (name,)
            ).fetchone()
            total += int(row[0] or 0)
    except sqlite3.OperationalError:  # no dbstat in this SQLite
        return None
    return total or None


def _file_bytes(path: Path) -> int:
    size = 0
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            size += p.stat().st_size
        except OSError:
            pass
    return size
