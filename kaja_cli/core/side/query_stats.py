"""Reading the query profile in db-stats.db: `kaja stats` and doctor's check.

Every Kaja process (the agent, the bot, kaja itself: `core/profiler.py`)
adds per-minute totals to `db_query_stats` (bucket, pid, db, sql → calls,
total_ms, max_ms, rows, errors, process) and each slow query to
`db_slow_queries`. Here they are added up across processes:

- `top_statements()`: each statement (per database file) with its calls,
  time, slowest call, rows and errors, heaviest first (`--by`);
- `slow_queries()`: the slow log, newest first;
- `changes()`: what doctor reports: statements usually slower than
  `logging.database.slow_ms`, and statements whose p95 grew.

A statement's p95 is estimated from the per-minute rows: each row stands for
its calls at their mean time (total_ms / calls). Doctor compares the last day
recorded with the days before it, so a profile read a week later still says
what it said then.

Only reads (`Store.reader`); a missing file or table is "nothing recorded".
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from enum import StrEnum
from typing import NamedTuple

from kaja_cli.core import clock
from kaja_cli.core.engine import db
from kaja_cli.core.store import Store
from kaja_cli.core.store.registry import Database


class Order(StrEnum):
    """`kaja stats queries --sort`: what makes a statement heavy."""

    TOTAL = "total"  # time spent in it, all calls together
    MAX = "max"  # its slowest call
    CALLS = "calls"  # how often it runs


_ORDER_SQL = {
    Order.TOTAL: "total_ms DESC, calls DESC",
    Order.MAX: "max_ms DESC, total_ms DESC",
    Order.CALLS: "calls DESC, total_ms DESC",
}


class Statement(NamedTuple):
    db: str
    sql: str
    calls: int
    total_ms: float
    max_ms: float
    rows: int
    errors: int
    processes: tuple[str, ...]  # the processes that ran it (`kaja sessions`, `terminal`, …)
    first: str  # the first and last minute it ran in, as stored ("2026-11-29T12:00")
    last: str

    @property
    def avg_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0

    def to_json(self) -> dict:
        return {"db": self.db, "sql": self.sql, "calls": self.calls,
                "total_ms": round(self.total_ms, 3), "avg_ms": round(self.avg_ms, 3),
                "max_ms": round(self.max_ms, 3), "rows": self.rows, "errors": self.errors,
                "processes": list(self.processes), "first": self.first,
                "last": self.last}  # fmt: skip


class SlowQuery(NamedTuple):
    at: str
    duration_ms: float
    db: str
    sql: str
    pid: int | None
    process: str | None
    rows: int | None

    def to_json(self) -> dict:
        return {"at": self.at, "duration_ms": round(self.duration_ms, 3), "db": self.db,
                "sql": self.sql, "pid": self.pid, "process": self.process,
                "rows": self.rows}  # fmt: skip


class Profile(NamedTuple):
    """What a `kaja stats` command read: where, what it matched, what it found."""

    location: str
    exists: bool
    since: str | None
    db: str | None  # the file name `--db` matched, as in the `db` column
    total: int  # statements (or slow queries) matched, before the limit
    items: list  # Statement or SlowQuery

    def to_json(self, by: str | None = None) -> dict:
        """`kaja stats queries --json` (`by`: their order), or `stats slow --json` (None)."""
        doc = {"store": self.location, "exists": self.exists, "since": self.since, "db": self.db}
        if by is not None:
            doc["by"] = by
        doc |= {"total": self.total, "left_out": self.total - len(self.items)}
        doc["slow_queries" if by is None else "statements"] = [i.to_json() for i in self.items]
        return doc


def db_name(store: Store, database: Database | None) -> str | None:
    """The `db` column's value for a registry database: its file's name."""
    return None if database is None else store.profile_label(database)


def _where(since: str | None, db_value: str | None, time_column: str) -> tuple[str, list]:
    conds, args = [], []
    if since is not None:
        conds.append(f"{time_column} >= ?")
        # Buckets are minutes ("2026-11-29T12:00"): the minute `since` falls in counts.
        args.append(clock.minute_of(since) if time_column == "bucket" else since)
    if db_value is not None:
        conds.append("db = ?")
        args.append(db_value)
    return (" WHERE " + " AND ".join(conds)) if conds else "", args


def top_statements(
    store: Store,
    *,
    since: str | None = None,
    database: Database | None = None,
    by: Order = Order.TOTAL,
    limit: int = 20,
) -> Profile:
    """Each statement across every process, heaviest first; `limit` 0 = all."""
    path, value = _located(store, database)
    if not path.exists():
        return Profile(str(path), False, since, value, 0, [])
    where, args = _where(since, value, "bucket")
    sql = (
        "SELECT db, sql, sum(calls) AS calls, sum(total_ms) AS total_ms, max(max_ms) AS max_ms,"
        " sum(rows), sum(errors), group_concat(DISTINCT process), min(bucket), max(bucket)"
        f" FROM db_query_stats{where} GROUP BY db, sql ORDER BY {_ORDER_SQL[Order(by)]}, sql"
    )
    with store.reader(Database.STATS) as conn:
        if "db_query_stats" not in db.table_names(conn):
            return Profile(str(path), True, since, value, 0, [])
        rows = conn.execute(sql, args).fetchall()
    items = [
        Statement(str(d), str(s), int(c or 0), float(t or 0), float(m or 0), int(r or 0),
                  int(e or 0), _processes(p), str(first or ""), str(last or ""))
        for d, s, c, t, m, r, e, p, first, last in rows
    ]  # fmt: skip
    return Profile(str(path), True, since, value, len(items), items[:limit] if limit else items)


def slow_queries(
    store: Store, *, since: str | None = None, database: Database | None = None, limit: int = 20
) -> Profile:
    """The slow log, newest first; `limit` 0 = all."""
    path, value = _located(store, database)
    if not path.exists():
        return Profile(str(path), False, since, value, 0, [])
    where, args = _where(since, value, "at")
    with store.reader(Database.STATS) as conn:
        if "db_slow_queries" not in db.table_names(conn):
            return Profile(str(path), True, since, value, 0, [])
        total = conn.execute(f"SELECT count(*) FROM db_slow_queries{where}", args).fetchone()[0]
        page = f" LIMIT {int(limit)}" if limit else ""
        rows = conn.execute(
            "SELECT at, duration_ms, db, sql, pid, process, rows FROM db_slow_queries"
            f"{where} ORDER BY at DESC, id DESC{page}",
            args,
        ).fetchall()
    items = [
        SlowQuery(str(at or ""), float(ms or 0), str(d or ""), str(s or ""), p, proc, r)
        for at, ms, d, s, p, proc, r in rows
    ]
    return Profile(str(path), True, since, value, int(total), items)


def _located(store: Store, database: Database | None):
    return store.path(Database.STATS), db_name(store, database)


def _processes(value: object) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(sorted({p for p in str(value).split(",") if p}))


# --- doctor: statements that are slow, or slower than they were ---------------------
RECENT = timedelta(days=1)  # "now" is the last day recorded; before it, the baseline
MIN_CALLS = 20  # fewer calls than this on either side say nothing about a p95
GROWTH = 2.0  # a p95 at least this many times the baseline's has grown
MIN_GROWN_MS = 5.0  # … and at least this slow: 0.1 ms → 0.3 ms is noise


class Change(NamedTuple):
    """A statement doctor reports."""

    db: str
    sql: str
    p95_ms: float  # in the last day recorded
    before_ms: float | None  # the baseline's p95 (None: no baseline to compare with)
    calls: int


class Changes(NamedTuple):
    latest: str | None  # the last minute recorded
    slow: list[Change]  # usually slower than slow_ms (p95 over it)
    grown: list[Change]  # p95 at least GROWTH × the baseline's
    slow_calls: int  # slow-log rows in the last day
    statements: int  # statements run in the last day


def changes(conn: sqlite3.Connection, slow_ms: float) -> Changes:
    """Doctor's findings, from a read connection to db-stats.db."""
    present = db.table_names(conn)
    if "db_query_stats" not in present:
        return Changes(None, [], [], 0, 0)
    latest = conn.execute("SELECT max(bucket) FROM db_query_stats").fetchone()[0]
    end = clock.parse_stored(latest)
    if end is None:
        return Changes(None, [], [], 0, 0)
    start = clock.minute(end - RECENT)
    samples: dict[tuple[str, str], tuple[list, list]] = {}
    for d, sql, bucket, calls, total in conn.execute(
        "SELECT db, sql, bucket, calls, total_ms FROM db_query_stats WHERE calls > 0"
    ):
        recent, before = samples.setdefault((str(d), str(sql)), ([], []))
        (recent if str(bucket) > start else before).append((float(total or 0) / calls, int(calls)))
    slow, grown = [], []
    for (d, sql), (recent, before) in samples.items():
        calls = sum(n for _, n in recent)
        if calls < MIN_CALLS:
            continue
        now_p95 = p95(recent)
        base = p95(before) if sum(n for _, n in before) >= MIN_CALLS else None
        if now_p95 > slow_ms:
            slow.append(Change(d, sql, now_p95, base, calls))
        elif base is not None and now_p95 >= max(GROWTH * base, MIN_GROWN_MS):
            grown.append(Change(d, sql, now_p95, base, calls))
    slow_calls = 0
    if "db_slow_queries" in present:
        slow_calls = conn.execute(
            "SELECT count(*) FROM db_slow_queries WHERE at > ?", (clock.iso(end - RECENT),)
        ).fetchone()[0]
    recent_statements = sum(1 for recent, _ in samples.values() if recent)
    by_p95 = lambda c: -c.p95_ms  # noqa: E731
    return Changes(
        str(latest), sorted(slow, key=by_p95), sorted(grown, key=by_p95), slow_calls,
        recent_statements,
    )  # fmt: skip


def p95(samples: list[tuple[float, int]]) -> float:
    """The 95th percentile of calls given as (mean ms, calls) per minute."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    target = 0.95 * sum(n for _, n in ordered)
    seen = 0
    for ms, n in ordered:
        seen += n
        if seen >= target:
            return ms
    return ordered[-1][0]
