"""`kaja stats`: the query profile in db-stats.db (`queries`, `slow`)."""

from enum import StrEnum
from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import Json, Limit, NoPager


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
    logging.database.retention_days (7) are pruned. Changes nothing else:
    like every kaja command, it adds its own statements to the profile it
    reads, and prunes it, when it ends.
    """
    from kaja_cli import render
    from kaja_cli.core.side import query_stats as core
    from kaja_cli.render import stats as view

    store = store_of(ctx)
    since_iso = _since(since)
    database = _database(db)
    result = core.top_statements(
        store, since=since_iso, database=database, by=core.Order(by.value), limit=limit
    )
    view.missing(result)
    render.emit(result, as_json, view.queries, pager=not no_pager, by=by.value)


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
    rows and the statement. Changes nothing but the profile (its own
    statements, the retention's pruning), as every kaja command does.
    """
    from kaja_cli import render
    from kaja_cli.core.side import query_stats as core
    from kaja_cli.render import stats as view

    store = store_of(ctx)
    result = core.slow_queries(store, since=_since(since), database=_database(db), limit=limit)
    view.missing(result)
    render.emit(result, as_json, view.slow, pager=not no_pager)


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
