"""What `kaja stats queries` and `kaja stats slow` print for a person or a
pipe (the JSON is the profile's own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.side.query_stats import Profile

SHOWN_SQL = 200  # characters of a statement a table shows on a terminal (all of it piped)


def missing(result: Profile) -> None:
    """There is no profile to read, on stderr (with --json too)."""
    if not result.exists:
        render.note(f"no query profile yet: no db-stats.db at {result.location}")


def _nothing(result: Profile, what: str) -> bool:
    """Say on stderr when there is nothing recorded; True when there is nothing to show."""
    if not result.exists:
        return True
    if not result.items:
        where = f" on {result.db}" if result.db else ""
        since = f" since {result.since}" if result.since else ""
        render.note(f"no {what} recorded{where}{since} in {result.location}")
        return True
    return False


def _shown(sql: str) -> str:
    return sql if len(sql) <= SHOWN_SQL else sql[: SHOWN_SQL - 1] + "…"


def _ms(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def _left_out(result: Profile, one: str, many: str) -> str | None:
    left = result.total - len(result.items)
    return f"{left} more {render.noun(left, one, many)} (--limit 0 shows all)" if left else None


def queries(result: Profile, *, by: str) -> None:
    if _nothing(result, "queries"):
        return
    items = result.items
    render.table(
        # The db never goes: the same statement on two files is two rows, which
        # would look the same without it. Errors (mostly 0), then the average
        # (total / calls), then rows go first.
        [Col("calls", "right"), Col("total ms", "right"), Col("avg ms", "right", drop=2),
         Col("max ms", "right"), Col("rows", "right", drop=3), Col("errors", "right", drop=1),
         Col("db", kind="whole"), Col("statement", min=24)],
        [[f"{s.calls:,}", _ms(s.total_ms), _ms(s.avg_ms), _ms(s.max_ms), f"{s.rows:,}",
          f"{s.errors:,}", s.db, _shown(s.sql)] for s in items],
        plain_rows=[[s.calls, round(s.total_ms, 3), round(s.avg_ms, 3), round(s.max_ms, 3),
                     s.rows, s.errors, s.db, ",".join(s.processes), s.sql] for s in items],
        caption=_left_out(result, "statement", "statements"),
    )  # fmt: skip


def slow(result: Profile) -> None:
    if _nothing(result, "slow queries"):
        return
    items = result.items
    render.table(
        [Col("when", kind="whole", drop=3), Col("ms", "right"), Col("db", kind="whole", drop=1),
         Col("process", drop=2), Col("rows", "right", drop=4), Col("statement", min=24)],
        [[render.relative_time(q.at), _ms(q.duration_ms), q.db, q.process or "",
          "" if q.rows is None else f"{q.rows:,}", _shown(q.sql)] for q in items],
        plain_rows=[[q.at, round(q.duration_ms, 3), q.db, q.pid, q.process, q.rows, q.sql]
                    for q in items],
        caption=_left_out(result, "slow query", "slow queries"),
    )  # fmt: skip
