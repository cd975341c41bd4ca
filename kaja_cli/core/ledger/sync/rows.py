"""Ledger sync, the SQLite side: ledger rows as JSON out, pulled rows back in.

Plain SQL on an open connection; `ledger.sync` decides when, in which
transaction, under which lease. What a row is:

- Integer-id rows (`schema.SYNC_OWNED`: calls, tools, logs, feedback, media)
  belong to the ledger that made them. On the server their key is the local
  id, as text, under this ledger's origin; elsewhere they are imported under a
  new local id and `sync_map (origin, tbl, key) → local_id` remembers which.
  A row with a sync_map row is someone else's: it is never pushed.
- Natural-key rows (runs by `id`, events by `(run_id, event_id)`, reviews by
  `run_id`) are shared under origin `'*'`; every machine may change them and
  the last change pushed wins. A pulled change to a row that has a change of
  its own waiting in `sync_outbox` is skipped: the local change goes out next
  and replaces it everywhere. Imports are recorded in sync_map too (origin
  `'*'`), so a history re-send leaves them out.

The JSON of a row holds every column but the local integer `id` (meaningless
elsewhere). SQLite's `json_object` builds it (fast, in C); a row holding a BLOB
(which JSON cannot) is encoded here instead, as `{"$blob": base64}`.

**Epochs.** `kaja usage reset` empties ledger tables here and not on the
server (a reset is local). SQLite then hands out the deleted ids again, and a
new row would overwrite the server's copy of the old row with the same id,
on every machine. So a reset that lowers a table's highest id opens an epoch:
`sync_state 'epochs'` = `{"calls": [floor, …]}`, and a row with an id above the
latest floor below it gets the key `"<id>~<epoch>"`. Rows that survived keep
their keys (their ids are at most the floor); the old rows keep theirs.
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kaja_cli.core import values
from kaja_cli.core.engine.db import column_names, table_names
from kaja_cli.core.store import schema

SHARED = "*"  # the origin of natural-key rows
OWNED = schema.SYNC_OWNED
KEYS = schema.SYNC_KEYS
LOCAL_ID = schema.SYNC_LOCAL_ID
TABLES = tuple(KEYS)


# --- reading rows as JSON --------------------------------------------------------------------
class Columns:
    """The columns of each synced table in this file, and the SQL that reads a row as JSON."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        present = table_names(conn)
        self._json: dict[str, str] = {}
        self.of: dict[str, list[str]] = {}
        for table in TABLES:
            if table in present:
                cols = column_names(conn, table)
                if table in OWNED or table == "events":
                    cols = [c for c in cols if c != "id"]  # a local number, meaningless elsewhere
                self.of[table] = cols

    def json_sql(self, table: str) -> str:
        sql = self._json.get(table)
        if sql is None:
            cols = self.of[table]
            if len(cols) > 60:  # json_object takes at most 127 arguments
                sql = "NULL"
            else:
                sql = "json_object(" + ", ".join(f"'{_lit(c)}', {_ident(c)}" for c in cols) + ")"
            self._json[table] = sql
        return sql

    def raw_sql(self, table: str) -> str:
        return ", ".join(_ident(c) for c in self.of[table]) or "NULL"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return text.replace("'", "''")


def _encode(cols: list[str], values: Iterable[Any]) -> str:
    """A row as JSON when SQLite's json_object cannot (a BLOB, inf)."""
    out: dict[str, Any] = {}
    for col, value in zip(cols, values, strict=True):
        if isinstance(value, bytes):
            value = {"$blob": base64.b64encode(value).decode()}
        elif isinstance(value, float) and not math.isfinite(value):
            value = {"$real": repr(value)}
        out[col] = value
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$blob"}:
            return base64.b64decode(value["$blob"])
        if set(value) == {"$real"}:
            return float(value["$real"])
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, bool):
        return int(value)
    return value


decode = _decode  # a server row's value as the local column holds it (`kaja runs --all-machines`)


def _natural(table: str, key: str) -> tuple[str, list[Any]] | None:
    """WHERE clause finding a shared row by its key; None for a key that names none."""
    if table == "events":
        try:
            run_id, event_id = values.loads(key)
        except (ValueError, TypeError):
            return None
        return "run_id IS ? AND event_id IS ?", [run_id, event_id]
    return f"{LOCAL_ID[table]} = ?", [key]


def read_rows(
    conn: sqlite3.Connection, cols: Columns, table: str, where: str, params: list[Any]
) -> list[tuple[Any, str, str | None]]:
    """(local id, key, JSON) of the rows of `table` matching `where`, the key as
    the sync triggers write it."""
    local = _ident(LOCAL_ID[table])
    name = _ident(table)
    key = KEYS[table].format(r=name)
    sql = f"SELECT {local}, {key}, {cols.json_sql(table)} FROM {name} WHERE {where}"
    try:
        rows = conn.execute(sql, params).fetchall()
        if all(j is not None for *_, j in rows):
            return rows
    except sqlite3.OperationalError as e:
        if "blob" not in str(e).lower():
            raise
    raw = conn.execute(
        f"SELECT {local}, {key}, {cols.raw_sql(table)} FROM {name} WHERE {where}", params
    ).fetchall()
    return [(r[0], r[1], _encode(cols.of[table], r[2:])) for r in raw]


def current_rows(
    conn: sqlite3.Connection, cols: Columns, table: str, keys: list[str]
) -> dict[str, str | None]:
    """What the server should hold for each sync_outbox key of `table`: the row's
    JSON, or None when the row is gone. An integer-id row whose id now holds an
    imported row is gone too: this ledger's row of that id was deleted."""
    out: dict[str, str | None] = dict.fromkeys(keys)
    if table not in cols.of:
        return out
    if table == "events":
        for key in keys:
            found = _natural(table, key)
            if found is not None:
                rows = read_rows(conn, cols, table, found[0] + " LIMIT 1", found[1])
                out[key] = rows[0][2] if rows else None
        return out
    local = _ident(LOCAL_ID[table])
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        params: list[Any] = [int(k) for k in chunk] if table in OWNED else list(chunk)
        for lid, _, row in read_rows(conn, cols, table, f"{local} IN ({marks})", params):
            out[str(lid)] = row
        if table in OWNED:
            theirs = conn.execute(
                f"SELECT local_id FROM sync_map WHERE tbl = ? AND local_id IN ({marks})",
                [table, *chunk],
            )
            for (lid,) in theirs:
                out[str(lid)] = None
    return out


def history(
    conn: sqlite3.Connection, cols: Columns, table: str, after: Any, limit: int
) -> list[tuple[Any, str, str | None]]:
    """The next `limit` rows of `table` made here (not imported), after local id `after`:
    (local id, key, JSON)."""
    local = _ident(LOCAL_ID[table])
    where = (
        f"{local} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sync_map AS m WHERE m.tbl = ?"
        f" AND m.local_id = CAST({_ident(table)}.{local} AS TEXT))"
    )
    params: list[Any] = [table]
    if after is not None:
        where += f" AND {local} > ?"
        params.append(after)
    return read_rows(conn, cols, table, f"{where} ORDER BY {local} LIMIT {int(limit)}", params)


# --- epochs ---------------------------------------------------------------------------------------
def server_key(table: str, key: str, epochs: dict[str, list[int]]) -> str:
    """The key on the server of the row this ledger's `table` holds under local `key`."""
    floors = epochs.get(table)
    if table not in OWNED or not floors or "~" in key:
        return key
    n = int(key)
    for i in range(len(floors) - 1, -1, -1):
        if n > floors[i]:
            return f"{key}~{i + 1}"
    return key


def gone_key(table: str, key: str, epochs: dict[str, list[int]]) -> str:
    """An outbox key naming a deleted row by its key on the server, for good: it
    always holds a `~` (`~0` for a key without an epoch)."""
    named = server_key(table, key, epochs)
    return named if "~" in named else named + "~0"


def named_key(key: str) -> str:
    """The server key a `gone_key` names."""
    return key.removesuffix("~0")


# --- applying pulled rows ---------------------------------------------------------------------
@dataclass
class Applied:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    kept_local: int = 0  # a shared row with a local change waiting: the local one goes out
    skipped: int = 0  # a table this ledger does not sync (a newer writer's)
    origins: set[str] = field(default_factory=set)

    @property
    def changes(self) -> int:
        return self.inserted + self.updated + self.deleted


def apply(conn: sqlite3.Connection, cols: Columns, rows: Iterable[tuple], done: Applied) -> None:
    """Apply pulled (origin, tbl, key, row or None, seq) rows, inside the caller's transaction."""
    for origin, table, key, row, seq in rows:
        if table not in cols.of:
            done.skipped += 1
            continue
        values = None
        if row is not None:
            values = {c: _decode(v) for c, v in row.items() if c in cols.of[table]}
        if table in OWNED:
            _apply_owned(conn, origin, table, key, values, seq, done)
        else:
            _apply_shared(conn, table, key, values, seq, done)
        done.origins.add(origin)


def _apply_owned(
    conn: sqlite3.Connection, origin: str, table: str, key: str, values: dict | None, seq: int,
    done: Applied,
) -> None:  # fmt: skip
    found = conn.execute(
        "SELECT local_id FROM sync_map WHERE origin = ? AND tbl = ? AND key = ?",
        (origin, table, key),
    ).fetchone()
    local = int(found[0]) if found and str(found[0]).lstrip("-").isdigit() else None
    if values is None:
        if local is not None:
            done.deleted += conn.execute(
                f"DELETE FROM {_ident(table)} WHERE id = ?", (local,)
            ).rowcount
        conn.execute(
            "DELETE FROM sync_map WHERE origin = ? AND tbl = ? AND key = ?", (origin, table, key)
        )
        return
    if local is not None and _update(conn, table, values, "id = ?", [local]):
        done.updated += 1
    else:
        local = _insert(conn, table, values)
        done.inserted += 1
    conn.execute(
        "INSERT OR REPLACE INTO sync_map (origin, tbl, key, local_id, seq) VALUES (?, ?, ?, ?, ?)",
        (origin, table, key, str(local), seq),
    )


def _apply_shared(
    conn: sqlite3.Connection, table: str, key: str, values: dict | None, seq: int, done: Applied
) -> None:
    if conn.execute(
        "SELECT 1 FROM sync_outbox WHERE tbl = ? AND key = ? LIMIT 1", (table, key)
    ).fetchone():
        done.kept_local += 1
        return
    found = _natural(table, key)
    if found is None:
        done.skipped += 1
        return
    where, params = found
    if values is None:
        done.deleted += conn.execute(f"DELETE FROM {_ident(table)} WHERE {where}", params).rowcount
        conn.execute(
            "DELETE FROM sync_map WHERE origin = ? AND tbl = ? AND key = ?", (SHARED, table, key)
        )
        return
    if _update(conn, table, values, where, params):
        done.updated += 1
    else:
        _insert(conn, table, values)
        done.inserted += 1
    local_col = _ident(LOCAL_ID[table])
    local = conn.execute(
        f"SELECT {local_col} FROM {_ident(table)} WHERE {where} LIMIT 1", params
    ).fetchone()
    if local is not None:
        conn.execute(
            "INSERT OR REPLACE INTO sync_map (origin, tbl, key, local_id, seq)"
            " VALUES (?, ?, ?, ?, ?)",
            (SHARED, table, key, str(local[0]), seq),
        )


def _update(
    conn: sqlite3.Connection, table: str, values: dict, where: str, params: list[Any]
) -> bool:
    if not values:
        return (
            conn.execute(f"SELECT 1 FROM {_ident(table)} WHERE {where}", params).fetchone()
            is not None
        )
    sets = ", ".join(f"{_ident(c)} = ?" for c in values)
    cur = conn.execute(
        f"UPDATE {_ident(table)} SET {sets} WHERE {where}", [*values.values(), *params]
    )
    return cur.rowcount > 0


def _insert(conn: sqlite3.Connection, table: str, values: dict) -> int:
    if not values:
        return conn.execute(f"INSERT INTO {_ident(table)} DEFAULT VALUES").lastrowid or 0
    names = ", ".join(_ident(c) for c in values)
    marks = ", ".join("?" * len(values))
    cur = conn.execute(
        f"INSERT INTO {_ident(table)} ({names}) VALUES ({marks})", list(values.values())
    )
    return cur.lastrowid or 0
