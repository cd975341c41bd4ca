"""`kaja stats`: the query profile in db-stats.db (`queries`, `slow`)."""

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, count, store_of

if TYPE_CHECKING:
    from kaja_cli.core.side.query_stats import Profile


class By(StrEnum):
    total = "total"
    max = "max"
    calls = "calls"


class Db(StrEnum):
    """The registry's databases, by the names doctor's checks use."""

    shared = "shared"
    artifacts = "artifacts"
    cache = "cache"
    stats = "stats"
    auth = "auth"


app = typer.Typer(
    help="Show the query profile: the statements every Kaja process ran, and the slow ones.",
    no_args_is_help=True,
)

Since = Annotated[
    str | None,
    typer.Option(metavar="WHEN", help="Only from then on: 2026-11-01, 2026-11-01T08:00, 1h, 3d."),
]
DbOpt = Annotated[
    Db | None,
    typer.Option("--db", case_sensitive=False, help="Only queries on this database's file."),
]
Limit = Annotated[
    int,
    typer.Option("--limit", "-n", click_type=count(), help="Show at most this many; 0 shows all."),
]
NoPager = Annotated[bool, typer.Option("--no-pager", help="Never page long output on a terminal.")]
Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]


@app.command("queries")
def queries(
    ctx: typer.Context,
    since: Since = None,
    db: DbOpt = None,
    by: Annotated[
        By,
        typer.Option(
            case_sensitive=False,
            help="Heaviest by time spent in all calls (total), slowest call (max), or calls.",
        ),
    ] = By.total,
    limit: Limit = 20,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """Show the statements every Kaja process ran, heaviest first.

    Each statement (with its placeholders, never a value) on each database
    file, added up across processes and minutes: calls, time in all of them,
    the average and the slowest call, rows, errors, and which processes ran
    it. Kaja (and kaja itself) profiles every query into db-stats.db unless
    logging.database.enabled is false; rows older than
    logging.database.retention_days (7) are pruned. Reads only.
    """
    from kaja_cli.core.side import query_stats as core

    store = store_of(ctx)
    since_iso = _since(since)
    database = _database(db)
    result = core.top_statements(
        store, since=since_iso, database=database, by=core.Order(by.value), limit=limit
    )
    if as_json:
        _queries_json(result, by.value)
        return
    from kaja_cli import render

    with render.paged(not no_pager):
        _queries_text(result)


@app.command("slow")
def slow(
    ctx: typer.Context,
    since: Since = None,
    db: DbOpt = None,
    limit: Limit = 20,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """Show the slow-query log, newest first.

    Every query slower than logging.database.slow_ms (50 ms unless set), from
    every Kaja process: when, how long, the database file, the process, the
    rows and the statement. Reads only.
    """
    from kaja_cli.core.side import query_stats as core

    store = store_of(ctx)
    result = core.slow_queries(store, since=_since(since), database=_database(db), limit=limit)
    if as_json:
        _slow_json(result)
        return
    from kaja_cli import render

    with render.paged(not no_pager):
        _slow_text(result)


def _since(since: str | None) -> str | None:
    if since is None:
        return None
    from kaja_cli.core.timeparse import parse_when

    return parse_when(since)


def _database(db: Db | None):
    if db is None:
        return None
    from kaja_cli.core.store.registry import Database

    return Database(db.value)


def _nothing(result: "Profile", what: str) -> bool:
    """Say on stderr when there is nothing to show; True if so."""
    from kaja_cli import render

    if not result.exists:
        render.note(f"no query profile yet: no db-stats.db at {result.location}")
        return True
    if not result.items:
        where = f" on {result.db}" if result.db else ""
        since = f" since {result.since}" if result.since else ""
        render.note(f"no {what} recorded{where}{since} in {result.location}")
        return True
    return False


SHOWN_SQL = 200  # characters of a statement a table shows on a terminal (all of it piped)


def _shown(sql: str) -> str:
    return sql if len(sql) <= SHOWN_SQL else sql[: SHOWN_SQL - 1] + "…"


def _ms(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def _left_out(result: "Profile", one: str, many: str) -> str | None:
    from kaja_cli import render

    left = result.total - len(result.items)
    return f"{left} more {render.noun(left, one, many)} (--limit 0 shows all)" if left else None


def _queries_text(result: "Profile") -> None:
    from kaja_cli import render

    if _nothing(result, "queries"):
        return
    Col = render.Col
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


def _queries_json(result: "Profile", by: str) -> None:
    from kaja_cli import render

    if not result.exists:
        render.note(f"no query profile yet: no db-stats.db at {result.location}")
    render.emit_json(
        {
            "store": result.location, "exists": result.exists, "since": result.since,
            "db": result.db, "by": by, "total": result.total,
            "left_out": result.total - len(result.items),
            "statements": [
                {"db": s.db, "sql": s.sql, "calls": s.calls, "total_ms": round(s.total_ms, 3),
                 "avg_ms": round(s.avg_ms, 3), "max_ms": round(s.max_ms, 3), "rows": s.rows,
                 "errors": s.errors, "processes": list(s.processes), "first": s.first,
                 "last": s.last}
                for s in result.items
            ],
        }
    )  # fmt: skip


def _slow_text(result: "Profile") -> None:
    from kaja_cli import render

    if _nothing(result, "slow queries"):
        return
    Col = render.Col
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


def _slow_json(result: "Profile") -> None:
    from kaja_cli import render

    if not result.exists:
        render.note(f"no query profile yet: no db-stats.db at {result.location}")
    render.emit_json(
        {
            "store": result.location, "exists": result.exists, "since": result.since,
            "db": result.db, "total": result.total, "left_out": result.total - len(result.items),
            "slow_queries": [
                {"at": q.at, "duration_ms": round(q.duration_ms, 3), "db": q.db, "sql": q.sql,
                 "pid": q.pid, "process": q.process, "rows": q.rows}
                for q in result.items
            ],
        }
    )  # fmt: skip
