"""What `kaja usage reset` deletes: the rows it picks, as SQL, and the shapes of its answers.

A reset clears the ledger tables (`schema.LEDGER_RESET_TABLES`), all of them
or (`--until`) their rows older than a time, and the pending `sync_outbox`
rows of what it deletes. `selections()` writes that down as `FROM …` clauses
built from the columns the file really has; the plan counts them and the
reset deletes them (`usage.local`). Plain SQL text, no connection: the
benchmark runs `reset_queries()` in sqlite3 too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kaja_cli.core import clock
from kaja_cli.core.ledger.report import Query
from kaja_cli.core.store import schema

# What `--until` compares, per ledger table: its own time column(s). A row
# whose time is unknown (NULL, or no such column in an older file) is kept.
TIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("started_at",),
    "calls": ("at",),
    "tools": ("at",),
    "events": ("at",),
    "logs": ("at",),
    "media": ("at",),
    "feedback": ("at",),
    "reviews": ("updated_at", "reviewed_at", "flagged_at"),  # the last thing that happened
    "cache_stats": ("minute",),  # "YYYY-MM-DDTHH:MM" (clock.minute)
}


@dataclass
class ResetPlan:
    """What a reset deletes: rows per ledger table, and the pending sync rows."""

    location: str
    before: str | None = None
    tables: dict[str, int] = field(default_factory=dict)  # table -> rows, present tables only
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why nothing goes
    outbox: int = 0  # pending sync_outbox rows of the ledger tables
    synced: bool = False  # ledger sync is in use: the reset stays on this machine

    @property
    def total(self) -> int:
        return sum(self.tables.values())

    def to_json(
        self, done: ResetResult | None = None, *, freed: VacuumResult | None = None,
        dry_run: bool = False,
    ) -> dict:  # fmt: skip
        """`kaja usage reset --json`: what `done` deleted, or the plan would."""
        tables = self.tables if done is None else done.deleted
        return {
            "store": self.location, "dry_run": dry_run, "before": self.before,
            "tables": tables, "total": sum(tables.values()),
            "sync_outbox": self.outbox if done is None else done.outbox, "skipped": self.skipped,
            "vacuum": None if freed is None else freed.to_json(),
        }  # fmt: skip


@dataclass
class ResetResult:
    location: str
    before: str | None
    deleted: dict[str, int]
    outbox: int


@dataclass
class VacuumResult:
    bytes_before: int
    bytes_after: int
    search_index: str  # "absent", "checked" (in step), "rebuilt"
    readers_waited: bool = False  # a reader kept the WAL: the rest goes back after it is done

    @property
    def freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)

    def to_json(self) -> dict:
        return {"bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
                "freed_bytes": self.freed, "search_index": self.search_index,
                "readers_waited": self.readers_waited}  # fmt: skip


def _condition(table: str, cols: set[str], before: str | None) -> tuple[str, list[str]] | None:
    """The WHERE clause picking the rows to delete; None when no row can be picked."""
    if before is None:
        return "", []
    present = [c for c in TIME_COLUMNS[table] if c in cols]
    if not present:
        return None
    if table == "cache_stats":  # minutes, "YYYY-MM-DDTHH:MM"
        return ' WHERE "minute" < ?', [clock.minute_of(before)]
    expr = present[0] if len(present) == 1 else "COALESCE(" + ", ".join(present) + ")"
    return f" WHERE {expr} < ?", [before]


def _outbox_condition(
    have: dict[str, set[str]], tables: Iterable[str], before: str | None
) -> tuple[str, list[str]] | None:
    """WHERE clause for the pending sync rows of the rows a reset deletes."""
    outbox = have.get("sync_outbox")
    if outbox is None or "tbl" not in outbox:
        return None
    if before is None:  # every pending row of a ledger table, present or not
        ledger = list(schema.LEDGER_RESET_TABLES)
        return f" WHERE tbl IN ({', '.join('?' * len(ledger))})", ledger
    if "key" not in outbox:
        return None
    parts, params = [], []
    for table in tables:
        key = schema.SYNC_KEYS.get(table)
        cond = _condition(table, have[table], before)
        needs = ("run_id", "event_id") if table == "events" else (schema.SYNC_LOCAL_ID.get(table),)
        if key is None or not set(needs) <= have[table] or not cond:
            continue
        where, p = cond
        key_sql = key.format(r=f'"{table}"')
        parts.append(f'(tbl = ? AND key IN (SELECT {key_sql} FROM "{table}"{where}))')
        params += [table, *p]
    if not parts:
        return None
    return " WHERE " + " OR ".join(parts), params


def selections(
    have: dict[str, set[str]], before: str | None = None
) -> tuple[list[Query], dict[str, str]]:
    """What a reset picks, as `FROM …` clauses; and the ledger tables it must leave alone.

    The pending sync rows come first (with --until they are found through
    the rows about to go), then each ledger table present. The plan counts
    `SELECT COUNT(*) FROM` these and the reset runs `DELETE FROM` them.
    """
    picked: list[Query] = []
    skipped: dict[str, str] = {}
    for table in schema.LEDGER_RESET_TABLES:
        if table not in have:
            skipped[table] = "no such table"
            continue
        cond = _condition(table, have[table], before)
        if cond is None:
            skipped[table] = "its rows carry no time"
            continue
        picked.append(Query(table, f'"{table}"{cond[0]}', tuple(cond[1])))
    cond = _outbox_condition(have, [q.name for q in picked], before)
    if cond is not None:
        picked.insert(0, Query("sync_outbox", f"sync_outbox{cond[0]}", tuple(cond[1])))
    return picked, skipped


def reset_queries(have: dict[str, set[str]], before: str | None = None) -> list[Query]:
    """The DELETE statements of a reset, in order (the benchmark runs them in sqlite3)."""
    return [Query(q.name, f"DELETE FROM {q.sql}", q.params) for q in selections(have, before)[0]]
