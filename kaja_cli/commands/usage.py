"""`kaja usage`: what the agent spent, from the usage ledger; `kaja usage reset` clears it."""

from enum import StrEnum
from typing import Annotated

import typer

from kaja_cli.commands import count, seconds, store_of, subcommand_runs
from kaja_cli.commands.options import (
    Before,
    DryRun,
    Json,
    LedgerUrl,
    NoPager,
    OldUrl,
    RunsAllOwners,
    RunsOwner,
    Since,
    Until,
    Yes,
    either,
    no_owner_on_shared,
    parse_since,
    parse_until,
)


class By(StrEnum):
    model = "model"
    day = "day"
    source = "source"
    engine = "engine"


app = typer.Typer()


@app.callback(invoke_without_command=True)
def usage(
    ctx: typer.Context,
    by: Annotated[
        By, typer.Option(case_sensitive=False, help="Group the calls by this.")
    ] = By.model,
    since: Since = None,
    until: Until = None,
    before: Before = None,
    tools: Annotated[
        int,
        typer.Option(
            "--tools",
            click_type=count(),
            metavar="N",
            help="Show the N tools that fail most (0 = all).",
        ),
    ] = 10,
    owner: RunsOwner = None,
    all_owners: RunsAllOwners = False,
    no_pager: NoPager = False,
    all_machines: Annotated[
        bool,
        typer.Option(
            "--all-machines", help="Report the shared ledger on PostgreSQL: every machine's usage."
        ),
    ] = False,
    ledger: LedgerUrl = None,
    url: OldUrl = None,
    as_json: Json = False,
) -> None:
    """Show token and call totals from the usage ledger, and the tools that fail most.

    Calls, failed calls, prompt, completion and cached tokens and time, by
    model (or --by day, source or engine), then the tools with the most
    errors and denials, and runs by status, for the calls made from --since
    (included) to --until (not included); times without a zone are UTC. Reads kaja's per-hour rollups of the ledger,
    kept in the shared file (the first run builds them; a ledger row is never
    changed). `kaja usage reset` clears the ledger. --all-machines asks the shared ledger on PostgreSQL
    instead (what every machine has pushed, see `kaja sync`), with the calls
    of each machine. --owner counts one owner's runs (those of their sessions
    and their subagents') and the calls and tools made in them; in cloud mode
    with `\\[memory] account` set, only the account's are read unless
    --all-owners.
    """
    if subcommand_runs(ctx):  # `kaja usage --owner X reset`: exit 2, never a reset of all
        return
    from kaja_cli.core.ledger import usage as core
    from kaja_cli.core.store.whose import acting

    start, end = parse_since(since), parse_until(until=until, before=before)
    url = either(ledger_url=ledger, url=url)
    machines = None
    store = store_of(ctx)
    if all_machines:
        from kaja_cli.core.ledger import sync

        no_owner_on_shared(owner)
        target = sync.require_url(store, url)
        result, machines = sync.all_machines_report(store, target, by.value, start, end)
    else:
        if url is not None:
            from kaja_cli.errors import UsageError

            raise UsageError("--ledger-url goes with --all-machines")
        result = core.report(store, by=by.value, since=start, until=end,
                             owner=acting(store, owner, all_owners))  # fmt: skip
    from kaja_cli import render
    from kaja_cli.render import usage as view

    view.nothing_yet(result, machines)
    render.emit(result, as_json, view.report, pager=not no_pager, tools=tools, machines=machines)


@app.command("reset")
def reset(
    ctx: typer.Context,
    yes: Yes = False,
    dry_run: DryRun = False,
    until: Until = None,
    before: Before = None,
    wait: Annotated[
        float,
        typer.Option(
            click_type=seconds(),
            metavar="SECONDS",
            help="How long to wait for the agent to finish writing.",
        ),
    ] = 5.0,
    vacuum: Annotated[
        bool, typer.Option("--vacuum", help="Then give the freed space back to the disk.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Clear the usage ledger: runs, calls, tools, events, logs, media, feedback, reviews, cache stats.

    Keeps the conversations, learning, services, counters and everything
    else. Pending sync rows of the ledger are dropped and nothing is queued
    for sync: a reset is local. One transaction, all or nothing; if the agent
    is writing, it waits up to --wait seconds, then gives up (exit 4) having
    deleted nothing. --until keeps the rows from then on: each table's own
    time is compared (a run's start, a log line's time). Asks first; --yes skips the question, and without a
    terminal to ask on it refuses (exit 5).
    """
    from functools import partial

    from kaja_cli import render
    from kaja_cli.core.ledger import usage as core
    from kaja_cli.errors import KajaError
    from kaja_cli.render import usage as view

    cutoff = parse_until(until=until, before=before)
    store = store_of(ctx)
    plan = core.plan_reset(store, before=cutoff)
    if dry_run:
        render.emit(plan, as_json, view.reset, dry_run=True)
        return
    done, asked = None, False
    if plan.total or plan.outbox:
        asked = not yes and render.stdin_is_terminal()
        if asked:
            view.reset_plan(plan.tables, plan.outbox)
        render.confirm(view.reset_question(plan), assume_yes=yes)
        done = core.reset(store, plan, timeout_ms=int(wait * 1000))
    show = partial(view.reset, table=not asked)  # the counts were shown before the question
    freed = None
    if vacuum:
        try:
            freed = core.vacuum(store, timeout_ms=int(wait * 1000))
        except KajaError:
            render.emit(plan, as_json, show, done=done)  # committed: said before the error line
            raise
    render.emit(plan, as_json, show, done=done, freed=freed)
