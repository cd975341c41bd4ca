"""The usage report: its model, the SQL of its three queries, and their rows made into it.

`kaja usage` runs `report_queries()` on the store (`usage.report`), and `kaja
usage --all-machines` runs the same three queries over the shared ledger on
PostgreSQL (`sync.server.usage_rows`); both hand their rows to
`group_totals`, `add_up`, `tool_stats` and `runs_by_status`, so the two reports
are one model. The bottom of the ledger: it imports nothing of `usage` or
`sync`, and both read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kaja_cli.core import clock, values
from kaja_cli.core.engine import dialect
from kaja_cli.core.owners import Owner, label
from kaja_cli.core.store import whose

GROUPINGS = ("model", "day", "source", "engine")


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
    owner: Owner | None = None  # one owner's runs (`store.whose`); None: everyone's

    @property
    def whose(self) -> str | None:
        """Whose runs the report counts, as an owner is shown; None: everyone's."""
        return None if self.owner is None else label(self.owner.id)

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
            "owner": self.whose,
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
    params: tuple


def require_grouping(by: str) -> None:
    """UsageError (exit 2) for a grouping `kaja usage` does not know."""
    if by not in GROUPINGS:
        from kaja_cli.errors import UsageError

        raise UsageError(f"--by: expected one of {', '.join(GROUPINGS)}, not {by!r}")


# --- the SQL of `kaja usage` ------------------------------------------------------------
def _window(
    column: str | None, since: str | None, until: str | None, mine: tuple[str, tuple] | None = None
) -> tuple[str, list]:
    """A WHERE clause for since <= column < until (an undatable table matches
    nothing) and, given, the condition `mine` (one owner's rows)."""
    parts: list[str] = [] if mine is None else [mine[0]]
    params: list = [] if mine is None else list(mine[1])
    if since is not None or until is not None:
        if column is None:
            return " WHERE 0 = 1", []
        if since is not None:
            parts.append(f'"{column}" >= ?')
            params.append(since)
        if until is not None:
            parts.append(f'"{column}" < ?')
            params.append(until)
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


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
    runs: tuple[str, tuple] | None = None,
    joined: str | None = None,
) -> tuple[list[Query], list[str]]:
    """The SQL `kaja usage` runs on a store with these tables and columns, and what is missing.

    The calls aggregate, the seed's "which tools fail most" query (grouped by
    tool and outcome), and runs by status; `d` spells what the engines spell
    differently. `runs`: only the rows of these runs (one owner's, `store.whose`):
    a membership test written after a run id (`IN (…)`, `= ANY(…)`) and its
    parameters, and no query of the runs by status (`owned_runs` counted them
    as it found them); None: every row. `joined` instead: the rows joined to
    the runs of the statement's own table of that name (its `id`), for a
    caller that counts the runs itself.
    """

    def mine(table: str, column: str) -> tuple[str, tuple] | None:
        if runs is None and joined is None:
            return None
        if column not in have.get(table, ()):
            return "0 = 1", ()  # not tied to a run: nobody's
        if joined is not None:
            return None  # `joining` ties them
        return f'"{column}" {runs[0]}', runs[1]

    def joining(table: str) -> str:
        if joined is None or "run_id" not in have.get(table, ()):
            return ""
        # Its ids under a name no ledger column has: the ledger's own stay unqualified.
        return (
            f" JOIN (SELECT id AS kaja_run FROM {joined}) AS kaja_mine"
            f' ON kaja_mine.kaja_run = {table}."run_id"'
        )

    queries: list[Query] = []
    missing = [f"table {t}" for t in ("calls", "tools", "runs") if t not in have]
    cols = have.get("calls")
    if cols is not None:
        at = "at" if "at" in cols else None
        if by == "day":
            key = clock.day_sql('"at"') if at else "NULL"
        else:
            key = f'"{by}"' if by in cols else "NULL"
        missing += [f"column calls.{c}" for c in _wanted(by) if c not in cols]
        where, params = _window(at, since, until, mine("calls", "run_id"))
        failed = d.as_number("ok = 0")
        sql = (
            f"SELECT {key} AS k, COUNT(*), {_sum(cols, 'ok', failed, d)},"
            f" {_sum(cols, 'prompt_tokens', d=d)}, {_sum(cols, 'completion_tokens', d=d)},"
            f" {_sum(cols, 'cached_tokens', d=d)}, {_sum(cols, 'duration_ms', d=d)}"
            f" FROM calls{joining('calls')}{where} GROUP BY k"
        )
        queries.append(Query("calls", sql, tuple(params)))
    cols = have.get("tools")
    if cols is not None:
        missing += [f"column tools.{c}" for c in ("at", "tool", "outcome") if c not in cols]
        tool = '"tool"' if "tool" in cols else "NULL"
        outcome = '"outcome"' if "outcome" in cols else "NULL"
        where, params = _window("at" if "at" in cols else None, since, until,
                                mine("tools", "run_id"))  # fmt: skip
        ms = (
            f"{_sum(cols, 'duration_ms', d=d)}, COUNT(duration_ms)"
            if "duration_ms" in cols
            else "NULL, 0"
        )
        sql = (
            f"SELECT {tool} AS tool, {outcome} AS outcome, COUNT(*) AS calls, {ms}"
            f" FROM tools{joining('tools')}{where} GROUP BY tool, outcome"
        )
        queries.append(Query("tools", sql, tuple(params)))
    cols = have.get("runs")
    if cols is not None:
        missing += [f"column runs.{c}" for c in ("started_at", "status") if c not in cols]
        status = '"status"' if "status" in cols else "NULL"
        where, params = _window("started_at" if "started_at" in cols else None, since, until)
        if runs is None and joined is None:
            queries.append(
                Query(
                    "runs",
                    f"SELECT {status} AS s, COUNT(*) FROM runs{where} GROUP BY s",
                    tuple(params),
                )
            )
    return queries, missing


def runs_started(
    have: dict[str, set[str]], since: str | None, until: str | None
) -> tuple[str, list]:
    """The WHERE clause of the runs started from `since` to `until`, by a
    `started_at` (without one, none can be told: none counts)."""
    return _window("started_at" if "started_at" in have.get("runs", ()) else None, since, until)


def owned_runs(
    conn: Any,
    owner: Owner,
    have: dict[str, set[str]],
    since: str | None = None,
    until: str | None = None,
) -> tuple[list, list[tuple]]:
    """One owner's runs (`store.whose`) read once, in the caller's snapshot: their
    ids (for `report_queries(runs=…)`), and the rows of the runs-by-status
    query over them (status, runs started from `since` to `until`), counted
    as they were found rather than by reading each run again."""
    d = dialect.of(conn)
    started = "started_at" if "started_at" in have.get("runs", ()) else None
    window, params = _window(started, since, until)
    within = "1" if not window else f"CASE WHEN {window.removeprefix(' WHERE ')} THEN 1 ELSE 0 END"
    sql, args = whose.runs_of(owner, have, d, carry=("status", "started_at"),
                              select=f'id, "status", {within}')  # fmt: skip
    ids, by_status = [], {}
    for run_id, status, counted in conn.execute(sql, (*args, *params)).fetchall():
        ids.append(run_id)
        if counted:
            by_status[status] = by_status.get(status, 0) + 1
    return ids, list(by_status.items())


def _wanted(by: str) -> list[str]:
    cols = ["at", "prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms", "ok"]
    return cols + ([by] if by != "day" else [])


# --- the rows of the three queries become the report --------------------------------------
def fill(result: UsageReport, rows: dict[str, list[tuple]]) -> UsageReport:
    """`result` with the rows of the calls, tools and runs queries (by name) in it."""
    result.groups = group_totals(rows.get("calls", []), result.by)
    result.total = add_up(result.groups)
    result.tools = tool_stats(rows.get("tools", []))
    result.runs = runs_by_status(rows.get("runs", []))
    return result


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
