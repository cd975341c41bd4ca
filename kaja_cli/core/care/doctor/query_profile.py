"""The query profile in db-stats.db: statements that are usually slow, and
statements that got slower (their p95 grew), over the last day recorded
(`core/query_stats.changes`)."""

from __future__ import annotations

from kaja_cli.core.care.doctor.common import listed, safe
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.side import profiler, query_stats
from kaja_cli.core.wording import plural

ID = "query-profile"
SQL_SHOWN = 120  # characters of a statement in a detail line


@check(
    ID,
    Group.SIDE_DATABASES,
    "the query profile in db-stats.db: statements usually slow, or slower than before",
)
def check_query_profile(ctx: Context) -> Check | list[Check]:
    settings = ctx.paths.settings
    if settings.lookup(("logging", "database", "enabled")) is False:
        return Check(ID, Group.SIDE_DATABASES, OK,
                     "query profiling is off (logging.database.enabled = false)")  # fmt: skip
    conn = ctx.conn("stats") if ctx.local else None
    if conn is None:
        return Check(ID, Group.SIDE_DATABASES, OK, "db-stats.db: no query profile yet")
    slow_ms = _slow_ms(ctx)

    def look() -> list[Check]:
        return _findings(query_stats.changes(conn, slow_ms), slow_ms)

    return safe(look, ID, Group.SIDE_DATABASES, "db-stats.db")


def _slow_ms(ctx: Context) -> float:
    value = ctx.paths.settings.lookup(("logging", "database", "slow_ms"))
    ok = (
        type(value) is int and 0 <= value <= 600_000
    )  # a bad value: doctor's settings check says so
    return float(value) if ok else float(profiler.DEFAULT_SLOW_MS)


def _findings(found: query_stats.Changes, slow_ms: float) -> list[Check]:
    if found.latest is None:
        return [Check(ID, Group.SIDE_DATABASES, OK, "db-stats.db: no query profile yet")]
    out = []
    look = "`kaja stats queries --since 1d --sort max` and `kaja stats slow` show them"
    if found.slow:
        out.append(Check(
            f"{ID}.slow", Group.SIDE_DATABASES, WARN,
            f"{plural(len(found.slow), 'statement')} usually slower than {slow_ms:g} ms"
            f" (p95 up to {found.slow[0].p95_ms:,.0f} ms), in the last day recorded",
            listed(found.slow, _line),
            fix=f"{look}; `kaja doctor --fix` adds missing indexes and checkpoints a large -wal",
        ))  # fmt: skip
    if found.grown:
        worst = found.grown[0]
        out.append(Check(
            f"{ID}.grown", Group.SIDE_DATABASES, WARN,
            f"{plural(len(found.grown), 'statement')} got slower: p95 {worst.p95_ms:,.1f} ms,"
            f" was {worst.before_ms or 0:,.1f} ms before the last day recorded",
            listed(found.grown, _line),
            fix=f"{look}; a store that grew may need `kaja doctor --fix` (indexes, a checkpoint)",
        ))  # fmt: skip
    if not out:
        slow_calls = (
            f"; {plural(found.slow_calls, 'slow call')} (`kaja stats slow`)"
            if found.slow_calls
            else ""
        )
        out.append(Check(
            ID, Group.SIDE_DATABASES, OK,
            f"db-stats.db: {plural(found.statements, 'statement')} in the last day recorded"
            f" (to {found.latest}), none usually slow or slower than before{slow_calls}",
        ))  # fmt: skip
    return out


def _line(change: object) -> str:
    c = change  # a query_stats.Change
    assert isinstance(c, query_stats.Change)
    sql = c.sql if len(c.sql) <= SQL_SHOWN else c.sql[: SQL_SHOWN - 1] + "…"
    before = f", was {c.before_ms:,.1f} ms" if c.before_ms is not None else ""
    return f"{c.db}: p95 {c.p95_ms:,.1f} ms{before}, {plural(c.calls, 'call')}: {sql}"
