"""`kaja optimize`: merge the search index, ANALYZE, checkpoint, and optionally VACUUM."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, Json


def optimize(
    ctx: typer.Context,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum", help="Also rewrite each file without its free pages (Kaja must be closed)."
        ),
    ] = False,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Keep the store quick and small: search index, ANALYZE, WAL checkpoint.

    For each database: the search index's segments are merged in short steps
    (and into one when no other process has the file open), ANALYZE tells
    SQLite's planner how large each table is, and the -wal is folded into the
    database and emptied (TRUNCATE). --vacuum also rewrites each file without
    its free pages, only when no process has it open (exit 4 otherwise,
    before anything is done). Prints each file's size before and after. Works
    beside a running Kaja (without --vacuum); a lock held past the busy
    timeout stops it (exit 4) with the steps before it done. Another
    program's database is refused (exit 5).
    """
    from kaja_cli import render
    from kaja_cli.core.care import optimize as core
    from kaja_cli.core.side import profiler
    from kaja_cli.render import optimize as view

    # No profile of its own: writing it would undo the checkpoint just made
    # (db-stats.db's -wal grows again), and a refusal changes no file.
    profiler.discard()
    store = store_of(ctx)
    if dry_run:
        render.emit(core.plan(store, vacuum=vacuum), as_json, view.optimized, dry_run=True)
        return
    render.emit(core.optimize(store, vacuum=vacuum), as_json, view.optimized)
