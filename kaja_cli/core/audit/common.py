"""What every audit view shares: the columns a file has, a column that reads
as NULL when it is missing, finding one row by id or prefix, and the
listing every command returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kaja_cli.core.engine import dialect
from kaja_cli.errors import NotFound, UsageError

MAX_CANDIDATES = 5  # an ambiguous prefix names this many


def columns(conn: Any, *tables: str) -> dict[str, list[str]]:
    """The columns of those tables that exist, in one query (either engine)."""
    return dialect.of(conn).columns(conn, *tables)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def col(have: Sequence[str] | None, alias: str, name: str) -> str:
    """`alias."name"` when the column exists, else NULL (an older writer)."""
    return f"{alias}.{quote(name)}" if have and name in have else "NULL"


def select(have: Sequence[str] | None, alias: str, names: Sequence[str]) -> str:
    """`alias."a" AS a, NULL AS b, …`: the columns asked for, present or not."""
    return ", ".join(f"{col(have, alias, n)} AS {quote(n)}" for n in names)


@dataclass
class Listing:
    """Rows of one audit view: `recorded` is false when the file has no such
    table (an older agent, or none yet), `lacks` names a key column a table of
    that name is missing (not the agent's table), `more` how many rows `-n`
    left out."""

    what: str  # "runs", "reviews", … as a message names them
    location: str
    exists: bool = True
    recorded: bool = True
    lacks: str | None = None
    rows: list[Any] = field(default_factory=list)
    more: int = 0

    def nothing(self) -> str | None:
        """Why there is nothing to show, when there is nothing (None otherwise)."""
        if not self.exists:
            return f"no {self.what} recorded: there is no Kaja store at {self.location}"
        if self.lacks:
            return f"no {self.what} recorded: {self.lacks} in {self.location} is not the agent's"
        if not self.recorded:
            return f"no {self.what} recorded in {self.location}"
        return None

    def to_json(self) -> dict[str, Any]:
        return {self.what: [r.to_json() for r in self.rows], "left_out": self.more}


def usable(listing: Listing, have: dict[str, list[str]], table: str, *keys: str) -> bool:
    """Whether `table` is there with its key columns; sets what `listing` says otherwise."""
    cols = have.get(table)
    if cols is None:
        listing.recorded = False
        return False
    missing = [k for k in keys if k not in cols]
    if missing:
        listing.recorded = False
        listing.lacks = f"the table {table} (no column {', '.join(missing)})"
        return False
    return True


def find_id(
    conn: Any,
    table: str,
    key: str,
    ref: str,
    what: str,
    hint: str,
    among: tuple[str, tuple] = ("1 = 1", ()),
) -> Any:
    """The `key` of the `table` row whose key is `ref` or starts with it, as
    stored (the agent may have written a number: `42` finds the INTEGER 42,
    which the listing shows as 42), for the caller's own `WHERE key = ?`.

    `among`: a condition (and its parameters) the row must meet too, such as
    one owner's runs: a row outside it is not found, and no candidate named.
    None: NotFound (exit 3); several: UsageError (exit 2) naming them."""
    ref = ref.strip()
    if not ref:
        raise UsageError(f"empty {what} id")
    k = quote(key)
    cond, args = among
    exact_sql = f"SELECT {k} FROM {table} WHERE {k} = ? AND {cond}"
    exact = conn.execute(exact_sql, (ref, *args)).fetchall()
    if not exact and _number(ref) is not None:
        exact = conn.execute(exact_sql, (_number(ref), *args)).fetchall()
    if exact:
        return exact[0][0]
    rows = conn.execute(
        f"SELECT {k} FROM {table} WHERE {k} >= ? AND {k} < ? AND {cond} ORDER BY {k} LIMIT ?",
        (ref, ref + "\U0010ffff", *args, MAX_CANDIDATES + 1),
    ).fetchall()
    if not rows:
        raise NotFound(f"no {what} {ref!r}", hint=hint)
    if len(rows) > 1:
        shown = ", ".join(str(r[0]) for r in rows[:MAX_CANDIDATES])
        more = " …" if len(rows) > MAX_CANDIDATES else ""
        raise UsageError(f"{what} prefix {ref!r} is ambiguous: {shown}{more}",
                         hint="type more of the id")  # fmt: skip
    return rows[0][0]


def _number(text: str) -> int | float | None:
    """`text` as the number another program may have stored for an id, or None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None
