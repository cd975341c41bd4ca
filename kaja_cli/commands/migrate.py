"""`kaja migrate`: import the legacy per-feature files and conversation files, once."""

from pathlib import Path
from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, Json


def migrate(
    ctx: typer.Context,
    dry_run: DryRun = False,
    memory: Annotated[
        Path | None,
        typer.Option(
            "--memory",
            metavar="DIR",
            help="The conversation files' folder (.memory/<resource>/threads/); "
            "default: .memory in the state dir.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Import the legacy files into the shared file, once; the old files stay as they are.

    The per-feature files of older versions in the state dir (usage.db,
    experience.db, background_tasks.db, schedules.db, triggers.db,
    artifacts.db): their tables are copied keeping their ids, only the
    columns both sides have, rows already there left as they are. And the
    conversation files (.memory/<resource>/threads/<thread>.json or .jsonl,
    with .meta.json): each thread becomes a session of that owner, its
    messages indexed for search. Each file is recorded in kaja_migrations and
    never imported twice; nothing is deleted, so the old files stay as a
    rollback copy. One transaction: interrupted, it leaves nothing half done.
    """
    from kaja_cli import render
    from kaja_cli.core.care import legacy
    from kaja_cli.render import migrate as view

    store = store_of(ctx)
    where = None if memory is None else Path(memory).expanduser().absolute()
    plan = legacy.plan(store, where)
    if not dry_run and plan.to_import:
        legacy.execute(store, plan)
    render.emit(plan, as_json, view.migrated, dry_run=dry_run)
    if plan.skipped:
        _fail_for(plan.skipped, dry_run)


def _fail_for(skipped: list, dry_run: bool) -> None:
    """Exit 1 when a file was (or would be) skipped: the import is not complete
    until it is fixed or moved aside, and a script should know."""
    from kaja_cli import render
    from kaja_cli.errors import Failed

    files = render.plural(len(skipped), "file")
    it = render.noun(len(skipped), "it", "them")
    done = "would not be imported" if dry_run else "not imported"
    raise Failed(f"{files} skipped, {done}",
                 hint=f"fix {it} or move {it} aside, then run `kaja migrate` again")  # fmt: skip
