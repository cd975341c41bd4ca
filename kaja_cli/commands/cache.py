"""`kaja cache`: what the shared cache (cache.db) holds; `prune` and `clear` it."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of, subcommand_runs
from kaja_cli.commands.options import DryRun, Json, JsonDone, Yes
from kaja_cli.completion.hooks import hook

app = typer.Typer(
    help="Show what the shared cache holds per namespace; prune or clear it.",
    invoke_without_command=True,
)


@app.callback(invoke_without_command=True)
def cache(ctx: typer.Context, as_json: Json = False) -> None:
    """Show what the shared cache holds per namespace; prune or clear it.

    Without a subcommand: for each namespace (web fetches, embeddings…) its
    entries, their size, how many have expired, the oldest and newest access,
    and the hit rate the agent counted (cache_stats in the shared file).
    Reads cache.db read-only. Piped, the rows are tab-separated with bytes,
    ISO times, hits and misses.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli import render
    from kaja_cli.core.side import cache as core
    from kaja_cli.render import cache as view

    result = core.report(store_of(ctx))
    view.remarks(result)
    render.emit(result, as_json, view.report)


@app.command("prune")
def prune(
    ctx: typer.Context, yes: Yes = False, dry_run: DryRun = False, as_json: JsonDone = False
) -> None:
    """Drop the expired entries (what the agent would drop as it goes).

    One transaction; if the agent is writing, waits for it up to 5 seconds,
    then gives up (exit 4). Asks first; with no terminal to ask, refuses
    unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.side import cache as core
    from kaja_cli.render import cache as view

    store = store_of(ctx)
    plan = core.plan_prune(store)
    if not plan.exists:
        render.note(f"nothing to prune: there is no cache.db at {plan.path}")
    if dry_run or not plan.total:
        render.emit(plan, as_json, view.pruned, dry_run=dry_run)
        return
    render.confirm(f"Drop {view.expired(plan.expired)} from {plan.path}?", assume_yes=yes)
    render.emit(plan, as_json, view.pruned, done=core.prune(store, plan))


@app.command("clear")
def clear(
    ctx: typer.Context,
    namespace: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAMESPACE]",
            help="Only this namespace (web_fetch, embeddings…).",
            autocompletion=hook("namespace"),
            show_default=False,
        ),
    ] = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Clear the cache: one namespace, or all of it.

    Without a namespace, cache.db is deleted with its -wal, -shm and
    -journal (the cache can be deleted at any time), unless another process
    has it open or it is a symbolic link: then it is emptied instead, in
    one transaction. A file that is not Kaja's cache is refused (exit 5).
    Asks first; with no terminal to ask, refuses unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.side import cache as core
    from kaja_cli.render import cache as view

    store = store_of(ctx)
    plan = core.plan_clear(store, namespace)
    if plan.how is core.How.NOTHING:
        render.note(f"nothing to clear: there is no cache.db at {plan.path}")
    if dry_run or plan.how is core.How.NOTHING:
        render.emit(plan, as_json, view.cleared, dry_run=dry_run)
        return
    render.confirm(f"{view.clear_question(plan)}?", assume_yes=yes)
    render.emit(plan, as_json, view.cleared, done=core.clear(store, plan))
