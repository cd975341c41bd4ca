"""`kaja stats`: the query profile in db-stats.db (`queries`, `slow`)."""

from enum import StrEnum
from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import OLD, Json, Limit, NoPager, Since, either, parse_since


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

# Named --database: the global --db is a file's path, this a database's name.
DatabaseOpt = Annotated[
    Db | None,
    typer.Option("--database", case_sensitive=False, help="Only queries on this database's file."),
]
OldDbOpt = Annotated[
    Db | None, typer.Option("--db", case_sensitive=False, hidden=True, help=OLD % "--database")
]  # old name


@app.command("queries")
def queries(
    ctx: typer.Context,
    since: Since = None,
    database: DatabaseOpt = None,
    db: OldDbOpt = None,
    sort: Annotated[
        By | None,
        typer.Option(
            "--sort",
            case_sensitive=False,
            help="Heaviest by time spent in all calls (total), slowest call (max), or calls.",
            show_default="total",
        ),
    ] = None,
    by: Annotated[
        By | None, typer.Option("--by", case_sensitive=False, hidden=True, help=OLD % "--sort")
    ] = None,
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
    order = either(sort=sort, by=by) or By.total  # --by: --sort's old name
    result = core.top_statements(
        store,
        since=parse_since(since),
        database=_database(either(database=database, db=db)),
        by=core.Order(order.value),
        limit=limit,
    )
    view.missing(result)
    render.emit(result, as_json, view.queries, pager=not no_pager, by=order.value)


@app.command("slow")
def slow(
    ctx: typer.Context,
    since: Since = None,
    database: DatabaseOpt = None,
    db: OldDbOpt = None,
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
    database = _database(either(database=database, db=db))
    result = core.slow_queries(store, since=parse_since(since), database=database, limit=limit)
    view.missing(result)
    render.emit(result, as_json, view.slow, pager=not no_pager)


def _database(db: Db | None):
    if db is None:
        return None
    from kaja_cli.core.store.registry import Database

    return Database(db.value)
