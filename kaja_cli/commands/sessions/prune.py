"""`kaja sessions prune`: delete the sessions the filters select, plan first."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, JsonDone, SessionFilters, Yes, session_filters


@session_filters
def prune(
    ctx: typer.Context,
    filters: SessionFilters,
    include_pending: Annotated[
        bool,
        typer.Option(
            "--include-pending",
            help="Delete sessions with a tool call waiting on you too (kept otherwise).",
        ),
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Delete every session the filters select, with all that hangs off them.

    The filters are the listing's (`kaja sessions list FILTERS -n 0` shows
    the same sessions) and at least one is needed: --until 90d,
    --empty, --title '*test*', … It shows the plan first (how many sessions,
    rows, bytes and image files, and a sample), then asks; --yes skips the
    question, and without a terminal it refuses (exit 5) unless --yes; with
    --yes it deletes in one pass and reports what it deleted.
    Sessions with a tool call waiting on you are kept unless
    --include-pending. It runs beside the agent: one short transaction per
    batch, and a session the agent touches meanwhile is left alone. Image
    folders go after each batch is committed.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import prune as core
    from kaja_cli.errors import UsageError
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    flt = filters.to_filter(store)
    if not flt.narrowed:
        raise UsageError(
            "say which sessions to prune",
            hint="give a filter: --until 90d, --empty, --title GLOB, --model NAME, …",
        )
    if yes and not dry_run:  # no question to ask: one pass, counting what it deletes
        light = core.selected(store, flt, include_pending=include_pending)
        if not light.sessions and not light.leftovers:
            render.emit(light, as_json, view.nothing_to_prune, dry_run=False)
            return
        render.preview(as_json, view.prune_plan, light, counted=False)
        with render.progress("pruning sessions", len(light.sessions)) as bar:
            done = core.execute(store, light, bar, measure=True)
        render.emit(done.reported(light), as_json, view.pruned, done=done)
        return
    plan = core.plan(store, flt, include_pending=include_pending)
    if not plan.sessions and not plan.leftovers:
        render.emit(plan, as_json, view.nothing_to_prune, dry_run=dry_run)
        return
    render.preview(as_json, view.prune_plan, plan)
    if dry_run:
        render.emit(plan, as_json, view.pruned, dry_run=True)
        return
    render.confirm(view.prune_question(plan), assume_yes=yes)
    with render.progress("pruning sessions", len(plan.sessions)) as bar:
        done = core.execute(store, plan, bar)
    render.emit(plan, as_json, view.pruned, done=done)
