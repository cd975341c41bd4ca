"""The usage ledger: what the agent spent, and resetting it (SPEC §4, §5).

`report()` answers `kaja usage` from `calls`, `tools` and `runs` in one read
snapshot; `plan_reset()` counts what `kaja usage reset` would delete, and
`reset()` deletes exactly that in one write transaction; `vacuum()` gives the
freed pages back to the disk afterwards. Every query is built from the columns
the file really has, so a ledger written by an older agent (missing tables or
columns) is reported and reset as far as it goes.

A reset is local: the pending `sync_outbox` rows of the ledger tables are
dropped, and the sync triggers (any trigger on the ledger tables that inserts
into `sync_outbox`, kaja's or an agent's own) are set aside for the
transaction, so the reset queues nothing for sync. `sync.after_reset` then
drops the sync_map rows of deleted imports and keeps reused ids apart on the
server. Everything else in the file is left as it was.

In cloud mode `report()` reads the ledger tables of kaja's schema on the
server, when they are there (the same queries, `dialect` spelling the sums);
a reset is refused there (exit 5): the seed keeps resetting the ledger local.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kaja_cli.core import values
from kaja_cli.core.conversations.search import index as search_index
from kaja_cli.core.engine import db, dialect, fs
from kaja_cli.core.store import Store, schema
from kaja_cli.errors import Busy, Refused, UsageError

GROUPINGS = ("model", "day", "source", "engine")

# What `--before` compares, per ledger table: its own time column(s). A row
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
    "cache_stats": ("minute",),  # "YYYY-MM-DDTHH:MM"
}


# --- kaja usage ------------------------------------------------------------------
@dataclass
class Totals:
    """Calls and what they cost, for one group (a model, a day, …) or for all."""

    key: str | None
    calls: int = 0
    failed: int | None = 0  # calls with ok = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cached_tokens: int | None = 0
    duration_ms: int | None = 0

    @property
    def tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def to_json(self) -> dict:
        return {
            "calls": self.calls, "failed": self.failed, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "cached_tokens": self.cached_tokens,
            "tokens": self.tokens, "duration_ms": self.duration_ms,
        }  # fmt: skip


@dataclass
class ToolStats:
    """One tool: its calls by outcome (ok, error, denied, …) and how long they took."""

    tool: str | None
    calls: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    outcome_ms: dict[str, int | None] = field(default_factory=dict)  # average per outcome
    avg_ms: int | None = None

    @property
    def failures(self) -> int:
        return sum(n for outcome, n in self.outcomes.items() if outcome in ("error", "denied"))

    def to_json(self) -> dict:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "failures": self.failures,
            "avg_ms": self.avg_ms,
            "outcomes": {
                o: {"calls": n, "avg_ms": self.outcome_ms.get(o)} for o, n in self.outcomes.items()
            },
        }


@dataclass
class UsageReport:
    location: str
    exists: bool
    by: str = "model"
    since: str | None = None
    until: str | None = None
    groups: list[Totals] = field(default_factory=list)
    total: Totals = field(default_factory=lambda: Totals(None))
    tools: list[ToolStats] = field(default_factory=list)  # most failures first
    runs: dict[str, int] = field(default_factory=dict)  # status -> runs
    missing: list[str] = field(default_factory=list)  # "table media", "column calls.engine"

    def to_json(self, tools: int = 0, machines: list | None = None) -> dict:
        """`kaja usage --json`: the `tools` that fail most (0: all of them); with
        --all-machines, the calls of each machine (`sync.MachineTotals`)."""
        shown = self.tools if tools == 0 else self.tools[:tools]
        extra = {} if machines is None else {"machines": [m.to_json() for m in machines]}
        return {
            "store": self.location,
            "exists": self.exists,
            "by": self.by,
            "since": self.since,
            "until": self.until,
            "groups": [{self.by: g.key, **g.to_json()} for g in self.groups],
            "total": self.total.to_json(),
            "tools": [t.to_json() for t in shown],
            "tools_left_out": len(self.tools) - len(shown),
            "runs": self.runs,
            "missing": self.missing,
            **extra,
        }


@dataclass(frozen=True)
class Query:
    """One statement and its parameters; `name` says what it is about (a table)."""

    name: str
    sql: str
    params: tuple[str, ...]


def _window(column: str | None, since: str | None, until: str | None) -> tuple[str, list[str]]:
    """A WHERE clause for since <= column < until (an undatable table matches nothing)."""
    if since is None and until is None:
        return "", []
    if column is None:
        return " WHERE 0", []
    parts, params = [], []
    if since is not None:
        parts.append(f'"{column}" >= ?')
        params.append(since)
    if until is not None:
        parts.append(f'"{column}" < ?')
        params.append(until)
    return " WHERE " + " AND ".join(parts), params


def _sum(
    cols: set[str], column: str, expr: str | None = None, d: dialect.Dialect = dialect.SQLITE
) -> str:
    """The column's sum as REAL (never "integer overflow"), NULL without the column."""
    return d.real_sum(expr or f'"{column}"') if column in cols else "NULL"


def report_queries(
    have: dict[str, set[str]],
    by: str = "model",
    since: str | None = None,
    until: str | None = None,
    d: dialect.Dialect = dialect.SQLITE,
) -> tuple[list[Query], list[str]]:
    """The SQL `kaja usage` runs on a file with these tables and columns, and what is missing.

    The calls aggregate, the seed's "which tools fail most" query (grouped by
    tool and outcome), and runs by status.
    """
    queries: list[Query] = []
    missing = [f"table {t}" for t in ("calls", "tools", "runs") if t not in have]
    cols = have.get("calls")
    if cols is not None:
        at = "at" if "at" in cols else None
        if by == "day":
            key = 'substr("at", 1, 10)' if at else "NULL"
        else:
            key = f'"{by}"' if by in cols else "NULL"
        missing += [f"column calls.{c}" for c in _wanted(by) if c not in cols]
        where, params = _window(at, since, until)
        failed = "ok = 0" if d is dialect.SQLITE else "CASE WHEN ok = 0 THEN 1 ELSE 0 END"
        sql = (
            f"SELECT {key} AS k, COUNT(*), {_sum(cols, 'ok', failed, d)},"
            f" {_sum(cols, 'prompt_tokens', d=d)}, {_sum(cols, 'completion_tokens', d=d)},"
            f" {_sum(cols, 'cached_tokens', d=d)}, {_sum(cols, 'duration_ms', d=d)}"
            f" FROM calls{where} GROUP BY k"
        )
        queries.append(Query("calls", sql, tuple(params)))
    cols = have.get("tools")
    if cols is not None:
        missing += [f"column tools.{c}" for c in ("at", "tool", "outcome") if c not in cols]
        tool = '"tool"' if "tool" in cols else "NULL"
        outcome = '"outcome"' if "outcome" in cols else "NULL"
        where, params = _window("at" if "at" in cols else None, since, until)
        ms = (
            f"{_sum(cols, 'duration_ms', d=d)}, COUNT(duration_ms)"
            if "duration_ms" in cols
            else "NULL, 0"
        )
        sql = (
            f"SELECT {tool} AS tool, {outcome} AS outcome, COUNT(*) AS calls, {ms}"
            f" FROM tools{where} GROUP BY tool, outcome"
        )
        queries.append(Query("tools", sql, tuple(params)))
    cols = have.get("runs")
    if cols is not None:
        missing += [f"column runs.{c}" for c in ("started_at", "status") if c not in cols]
        status = '"status"' if "status" in cols else "NULL"
        where, params = _window("started_at" if "started_at" in cols else None, since, until)
        queries.append(
            Query(
                "runs", f"SELECT {status} AS s, COUNT(*) FROM runs{where} GROUP BY s", tuple(params)
            )
        )
    return queries, missing


def _wanted(by: str) -> list[str]:
    cols = ["at", "prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms", "ok"]
    return cols + ([by] if by != "day" else [])


def report(
    store: Store, by: str = "model", since: str | None = None, until: str | None = None
) -> UsageReport:
    """Token and call totals grouped `by`, the tools that fail most, runs by status."""
    if by not in GROUPINGS:
        raise UsageError(f"--by: expected one of {', '.join(GROUPINGS)}, not {by!r}")
    result = UsageReport(location=store.where(), exists=True, by=by, since=since, until=until)
    with store.maybe_reader() as conn:
        if conn is None:
            result.exists = False
            return result
        conn.execute("BEGIN")  # one snapshot for every query
        have = _present_columns(conn)
        queries, result.missing = report_queries(have, by, since, until, dialect.of(conn))
        rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
        conn.execute("COMMIT")
    result.groups = group_totals(rows.get("calls", []), by)
    result.total = add_up(result.groups)
    result.tools = tool_stats(rows.get("tools", []))
    result.runs = runs_by_status(rows.get("runs", []))
    return result


def _present_columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every table's columns: the file's, or those of kaja's schema on the server."""
    found = dialect.columns(conn, *(t.name for t in schema.LEDGER_TABLES))
    if found is not None:
        return {t: set(c) for t, c in found.items()}
    return schema.present_columns(conn)


# The rows of the three queries become the report; `kaja usage --all-machines`
# (core/sync.py) runs the same queries on the server and shares these.
def runs_by_status(rows: Iterable[tuple]) -> dict[str, int]:
    return {
        values.text(s) or "unknown": n for s, n in sorted(rows, key=lambda r: (-r[1], str(r[0])))
    }


def group_totals(rows: Iterable[tuple], by: str) -> list[Totals]:
    groups = [
        Totals(values.text(k), calls, *(values.whole(v) for v in sums)) for k, calls, *sums in rows
    ]
    if by == "day":
        groups.sort(key=lambda g: (g.key is None, g.key or ""))
    else:
        groups.sort(key=lambda g: (-(g.tokens or 0), -g.calls, g.key is None, g.key or ""))
    return groups


def add_up(groups: list[Totals]) -> Totals:
    total = Totals(None)
    for name in ("failed", "prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms"):
        found = [getattr(g, name) for g in groups]
        known = [v for v in found if v is not None]
        setattr(total, name, sum(known) if known or not found else None)
    total.calls = sum(g.calls for g in groups)
    return total


def tool_stats(rows: Iterable[tuple]) -> list[ToolStats]:
    by_tool: dict[str | None, ToolStats] = {}
    ms_sums: dict[str | None, list[int]] = {}
    for raw_tool, outcome, calls, raw_sum, ms_count in rows:
        tool, ms_sum = values.text(raw_tool), values.whole(raw_sum)
        stats = by_tool.setdefault(tool, ToolStats(tool))
        key = values.text(outcome) or "unknown"
        stats.calls += calls
        stats.outcomes[key] = stats.outcomes.get(key, 0) + calls
        stats.outcome_ms[key] = _average(ms_sum, ms_count)
        acc = ms_sums.setdefault(tool, [0, 0])
        acc[0] += ms_sum or 0
        acc[1] += ms_count
    for tool, (ms_sum, ms_count) in ms_sums.items():
        by_tool[tool].avg_ms = _average(ms_sum, ms_count)
    return sorted(
        by_tool.values(), key=lambda t: (-t.failures, -t.calls, t.tool is None, t.tool or "")
    )


def _average(total: int | None, count: int) -> int | None:
    return None if total is None or not count else round(total / count)


# --- kaja usage reset --------------------------------------------------------------
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
        return ' WHERE "minute" < ?', [before[:16]]
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

    The pending sync rows come first (with --before they are found through
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


def refuse_in_cloud(store: Store) -> None:
    """Refused (exit 5): a reset is local (the seed), never the server's ledger."""
    if store.cloud:
        raise Refused(
            "usage reset is local: in cloud mode the ledger is on the server, and kaja does"
            " not reset it",
            hint="the ledger of this machine's agent is reset where it runs locally",
        )


def plan_reset(store: Store, before: str | None = None) -> ResetPlan:
    """Count what `reset` would delete (read-only); NotFound if there is no store."""
    refuse_in_cloud(store)
    with store.reader(writing=True) as conn:
        conn.execute("BEGIN")
        picked, skipped = selections(schema.present_columns(conn), before)
        plan = ResetPlan(location=str(store.path()), before=before, skipped=skipped)
        plan.synced = _synced(store, conn)
        for q in picked:
            n = conn.execute(f"SELECT COUNT(*) FROM {q.sql}", q.params).fetchone()[0]
            if q.name == "sync_outbox":
                plan.outbox = n
            else:
                plan.tables[q.name] = n
        conn.execute("COMMIT")
    return plan


def _synced(store: Store, conn: sqlite3.Connection) -> bool:
    from kaja_cli.core.ledger import sync

    if sync.find_url(store) is not None:
        return True
    return (
        "sync_state" in db.table_names(conn)
        and conn.execute("SELECT 1 FROM sync_state WHERE name = ?", (sync.ORIGIN,)).fetchone()
        is not None
    )


def reset(store: Store, plan: ResetPlan, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> ResetResult:
    """Delete what `plan` picks, in one transaction that queues nothing for sync.

    Waits up to `timeout_ms` for the write lock, then raises Busy having
    deleted nothing. The counts are those of the rows really deleted (the
    agent may have written more since the plan was made).
    """
    refuse_in_cloud(store)
    try:
        with store.writer(timeout_ms=timeout_ms) as conn, db.transaction(conn):
            return _delete(conn, plan)
    except Busy as e:
        raise Busy(
            f"the agent is busy writing to {plan.location} (waited {timeout_ms / 1000:g} s):"
            " nothing was deleted",
            hint="try again when it is idle, or wait longer with --wait SECONDS",
        ) from e


def _delete(conn: sqlite3.Connection, plan: ResetPlan) -> ResetResult:
    have = schema.present_columns(conn)
    # The plan's tables only: one an older file lacked was just created empty.
    have_now = {
        t: c for t, c in have.items() if t not in schema.LEDGER_RESET_TABLES or t in plan.tables
    }
    result = ResetResult(plan.location, plan.before, {}, 0)
    # The agent's sync triggers would queue a delete per row (and cost the
    # fast whole-table delete): they are set aside until the end of the
    # transaction.
    set_aside = _sync_triggers(conn, list(plan.tables))
    for name, _ in set_aside:
        conn.execute('DROP TRIGGER "{}"'.format(name.replace('"', '""')))  # a name from the store
    outbox = have.get("sync_outbox", set())
    last_seq = sequence = None
    if "seq" in outbox:
        last_seq = conn.execute("SELECT MAX(seq) FROM sync_outbox").fetchone()[0]
        if "sqlite_sequence" in have:
            row = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'"
            ).fetchone()
            sequence = row[0] if row else None
    from kaja_cli.core.ledger import sync

    maxima = sync.owned_maxima(conn)
    for q in reset_queries(have_now, plan.before):
        n = conn.execute(q.sql, q.params).rowcount
        if q.name == "sync_outbox":
            result.outbox = n
        else:
            result.deleted[q.name] = n
    if "seq" in outbox:
        # Whatever another trigger queued during this transaction goes too,
        # and the outbox's sequence is put back: a reset is local.
        conn.execute("DELETE FROM sync_outbox WHERE seq > ?", (last_seq or 0,))
        if "sqlite_sequence" in have:
            _put_back_sequence(conn, sequence)
    # Imports of rows that went, and ids SQLite will hand out again (sync.after_reset).
    sync.after_reset(conn, maxima)
    for _, sql in set_aside:
        conn.execute(sql)
    return result


def _put_back_sequence(conn: sqlite3.Connection, sequence: int | None) -> None:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'").fetchone()
    now = row[0] if row else None
    if now == sequence:
        return
    if sequence is None:
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'sync_outbox'")
    else:
        conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'sync_outbox'", (sequence,))


def _sync_triggers(conn: sqlite3.Connection, tables: list[str]) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the triggers on `tables` that write to sync_outbox."""
    if not tables:
        return []
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (%s)"
        % ",".join("?" * len(tables)),
        tables,
    )
    return [(name, sql) for name, sql in rows if sql and "sync_outbox" in sql.lower()]


def vacuum(store: Store, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> VacuumResult:
    """Rewrite the shared file without its free pages and hand them back to the disk."""
    refuse_in_cloud(store)
    path = store.require()
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            return vacuum_in(conn, path)
    except Busy as e:
        raise Busy(
            f"the agent is busy writing to {path} (waited {timeout_ms / 1000:g} s): VACUUM did not run",
            hint="run `kaja usage reset --vacuum` again when it is idle",
        ) from e


def vacuum_in(conn: sqlite3.Connection, path: Path) -> VacuumResult:
    """VACUUM the open file at `path`, keeping the search index in step.

    VACUUM may renumber the rowids of tables without an INTEGER PRIMARY KEY
    (SQLite does when such a table has no index), and the search index is
    keyed by `messages.rowid`: if the messages' rowids moved, the index is
    rebuilt so that search keeps finding the right messages.
    """
    from kaja_cli.core.conversations.search import cjk_index

    before = _on_disk(path)
    has_index = search_index.present(conn)
    has_cjk = cjk_index.exists(conn)  # keyed by messages.rowid too
    fingerprint = _rowid_fingerprint(conn) if has_index or has_cjk else None
    conn.execute("VACUUM")
    state = "absent"
    moved = (has_index or has_cjk) and (
        fingerprint is None or _rowid_fingerprint(conn) != fingerprint
    )
    if has_index:
        state = "checked"
        if moved:
            with db.transaction(conn):
                search_index.rebuild(conn)
            state = "rebuilt"
    if has_cjk and moved:
        with db.transaction(conn):
            cjk_index.reset(conn)  # built again, in short batches, by the next CJK search
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return VacuumResult(before, _on_disk(path), state, readers_waited=bool(busy))


def _on_disk(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += fs.beside(path, suffix).stat().st_size
        except FileNotFoundError:
            pass
    return total


def _rowid_fingerprint(conn: sqlite3.Connection) -> str | None:
    """A digest of every message's (rowid, id); None when messages have no id column."""
    import hashlib  # only --vacuum needs it (~3 ms to import)

    if "id" not in db.column_names(conn, "messages"):
        return None
    digest = hashlib.blake2b(digest_size=16)
    cur = conn.execute("SELECT rowid, id FROM messages ORDER BY rowid")
    while rows := cur.fetchmany(20000):
        digest.update(repr(rows).encode())
    return digest.hexdigest()
