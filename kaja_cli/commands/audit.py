"""The audit views (SPEC §11): `kaja runs` (and `runs show`), `reviews` (and
`reviews done`), `tasks`, `schedules`, `triggers`, `learning` (and `learning
fixes`), `artifacts` (and `artifacts show`). Read-only but `reviews done`."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of, subcommand_runs
from kaja_cli.commands.options import (
    OLD,
    Before,
    DryRun,
    Json,
    JsonDone,
    LedgerUrl,
    Limit,
    NoPager,
    OldUrl,
    RunsAllOwners,
    RunsOwner,
    Since,
    Until,
    either,
    no_owner_on_shared,
    parse_since,
    parse_until,
)
from kaja_cli.completion.hooks import hook


def _emit(result, as_json: bool, show, no_pager: bool) -> None:  # type: ignore[no-untyped-def]
    """A listing: why nothing is shown on stderr (also with --json), then the result."""
    from kaja_cli import render
    from kaja_cli.render import audit as view

    view.nothing_noted(result, as_json)
    render.emit(result, as_json, show, pager=not no_pager)


# --- kaja runs ------------------------------------------------------------------------------
runs_app = typer.Typer(
    help="What the agent did: its runs (turns, subagents, scheduled jobs); `show` one as a tree.",
    invoke_without_command=True,
)
AllMachines = Annotated[bool, typer.Option("--all-machines",
                        help="Read the shared ledger on PostgreSQL: every machine's runs.")]  # fmt: skip


def _url(ctx: typer.Context, all_machines: bool, ledger: str | None, url: str | None):  # type: ignore[no-untyped-def]
    """The shared ledger's URL with --all-machines (None without it)."""
    url = either(ledger_url=ledger, url=url)
    if not all_machines:
        if url is not None:
            from kaja_cli.errors import UsageError

            raise UsageError("--ledger-url goes with --all-machines")
        return None
    from kaja_cli.core.ledger import sync

    return sync.require_url(store_of(ctx), url)


RunId = Annotated[
    str,
    typer.Argument(metavar="ID", help="A run id or a unique prefix.", autocompletion=hook("run")),
]


@runs_app.callback(invoke_without_command=True)
def runs(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(metavar="STATUS",
                      help="Only runs with this status: running, completed, failed, canceled.")] = None,
    source: Annotated[str | None, typer.Option(metavar="SOURCE",
                      help="Only runs from this source: interactive, api, schedule, …")] = None,
    agent: Annotated[str | None, typer.Option(metavar="NAME", help="Only this agent's runs.")] = None,
    since: Since = None,
    until: Until = None,
    before: Before = None,
    thread: Annotated[str | None, typer.Option("--thread", metavar="ID",
                      help="Only runs of this conversation thread.")] = None,
    subagents: Annotated[bool, typer.Option("--subagents",
                         help="Subagents' runs too, not only top-level ones.")] = False,
    all_runs: Annotated[bool, typer.Option("--all", hidden=True, help=OLD % "--subagents")] = False,  # the old --subagents
    limit: Limit = 20,
    owner: RunsOwner = None,
    all_owners: RunsAllOwners = False,
    all_machines: AllMachines = False,
    ledger: LedgerUrl = None,
    url: OldUrl = None,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the agent's runs, newest first: top-level turns unless --subagents.

    Each run: id, when it started, agent, source, status, how long it took,
    and the seed's figures for its own rows (model calls, tokens = prompt +
    completion, tool calls), then how many subagents ran below it and the
    tokens of the whole subtree. Runs started from --since (included) to
    --until (not included). Ids are shown short (their first 8 characters;
    any unique prefix works); --json has them whole. --json: {"runs": [...]} with model_calls,
    tokens, tool_calls and the subtree's subagents, total_model_calls,
    total_tokens, total_tool_calls. Reads the store read-only. --all-machines
    lists the runs every machine pushed to the shared ledger on PostgreSQL
    (see `kaja sync`), each with the machine it ran on (`machine`). --owner
    lists one owner's runs (those of their sessions, and their subagents'); in
    cloud mode with `\\[memory] account` set, only the account's are listed
    unless --all-owners.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli.core.audit import runs as core
    from kaja_cli.core.store.whose import acting
    from kaja_cli.render import audit as view

    flt = core.RunFilter(status=status, source=source, agent=agent,
                         since=parse_since(since), until=parse_until(until=until, before=before),
                         thread=thread, subagents=subagents or all_runs, limit=limit)  # fmt: skip
    if all_machines:
        no_owner_on_shared(owner)
    target = _url(ctx, all_machines, ledger, url)
    if target is not None:
        from kaja_cli.core.ledger import sync

        shared = sync.shared_runs(store_of(ctx), target)
        result = core.listing_on(shared.runs, shared.figures, flt, target.shown)
    else:
        from kaja_cli.core.ledger import usage

        store = store_of(ctx)
        flt.owner = acting(store, owner, all_owners)
        result = core.listing(store, flt, lambda conn, table: usage.counted(store, conn, table))
    _emit(result, as_json, view.runs, no_pager)


@runs_app.command("show")
def runs_show(ctx: typer.Context, run_id: RunId, owner: RunsOwner = None,
              all_owners: RunsAllOwners = False, all_machines: AllMachines = False,
              ledger: LedgerUrl = None, url: OldUrl = None, no_pager: NoPager = False,
              as_json: Json = False) -> None:  # fmt: skip
    """Show one run as a tree: its prompt, result or error, model calls,
    tool calls, events, feedback and review, then its subagents' runs.

    Model calls with tokens, time to first token and errors; tool calls with
    outcome, duration, the arguments as the agent stored them (redacted by
    it) and the result's size; events in order. --json holds the same tree
    (`subagents` nested). An unknown id: exit 3; an ambiguous prefix: exit 2.
    --all-machines reads the run from the shared ledger on PostgreSQL, so a
    run made on another machine can be inspected here (`machine` on each run).
    --owner finds it among one owner's runs only; in cloud mode with
    `\\[memory] account` set, among the account's unless --all-owners.
    """
    from kaja_cli import render
    from kaja_cli.core.audit import runs as core
    from kaja_cli.core.store.whose import acting
    from kaja_cli.render import audit as view

    if all_machines:
        no_owner_on_shared(owner)
    target = _url(ctx, all_machines, ledger, url)
    if target is not None:
        from kaja_cli.core.ledger import sync

        chosen: list[str] = []

        def subtree(found: list[dict]) -> list[str]:
            chosen.append(core.find_on([r["id"] for r in found], run_id, target.shown))
            return core.subtree_on(found, chosen[0])

        shared = sync.shared_runs(store_of(ctx), target, tagged_for=subtree)
        ids = set(core.subtree_on(shared.runs, chosen[0]))
        node = core.tree_on(chosen[0], [r for r in shared.runs if r["id"] in ids], shared.tagged)
    else:
        store = store_of(ctx)
        node = core.show(store, run_id, acting(store, owner, all_owners))
    render.emit(node, as_json, view.run_tree, pager=not no_pager)


# --- kaja reviews ---------------------------------------------------------------------------
reviews_app = typer.Typer(
    help="The review queue: runs flagged for a person; `done` marks one complete.",
    invoke_without_command=True,
)


@reviews_app.callback(invoke_without_command=True)
def reviews(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(metavar="STATUS",
                      help="Only reviews with this status: needs-review, complete.")] = None,
    limit: Limit = 0,
    owner: RunsOwner = None,
    all_owners: RunsAllOwners = False,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the review queue: needs-review first, then the newest flagged.

    Each review: the run, its status and reason (manual, feedback), when it
    was flagged, the run's agent and prompt, and the note. --json:
    {"reviews": [...]}. --owner lists the reviews of one owner's runs; in
    cloud mode with `\\[memory] account` set, of the account's unless
    --all-owners.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli.core.audit import reviews as core
    from kaja_cli.core.store.whose import acting
    from kaja_cli.render import audit as view

    store = store_of(ctx)
    result = core.listing(store, status=status, limit=limit,
                          owner=acting(store, owner, all_owners))  # fmt: skip
    _emit(result, as_json, view.reviews, no_pager)


@reviews_app.command("done")
def reviews_done(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", autocompletion=hook("review"),
                      help="The run whose review is done (an id or a unique prefix).")],
    note: Annotated[str | None, typer.Option(metavar="TEXT", help="Keep this note with the review.")] = None,
    owner: RunsOwner = None,
    all_owners: RunsAllOwners = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:  # fmt: skip
    """Mark a run's review complete (status, reviewed_at, updated_at, and the note).

    Written with ordinary SQL in one transaction, so the agent's sync
    triggers share the change like any other. A run not in the queue: exit 3.
    --owner finds the run among one owner's only; in cloud mode with
    `\\[memory] account` set, among the account's unless --all-owners.
    """
    from kaja_cli import render
    from kaja_cli.core.audit import reviews as core
    from kaja_cli.core.store.whose import acting
    from kaja_cli.render import audit as view

    store = store_of(ctx)
    done = core.done(store, run_id, note, dry_run=dry_run, owner=acting(store, owner, all_owners))
    render.emit(done, as_json, view.review_done, dry_run=dry_run)


# --- kaja tasks, schedules, triggers --------------------------------------------------------
def tasks(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(metavar="STATUS",
                      help="Only tasks with this status: queued, running, paused, completed, failed, cancelled.")] = None,
    limit: Limit = 0,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the background tasks: running, queued and paused first.

    Each task: id, status, tool, attempts of the most allowed, when it
    started (or was queued), its timeout, agent and error. --json:
    {"tasks": [...]}.
    """
    from kaja_cli.core.audit import services as core
    from kaja_cli.render import audit as view

    _emit(core.tasks(store_of(ctx), status=status, limit=limit), as_json, view.tasks, no_pager)


def schedules(
    ctx: typer.Context,
    due: Annotated[bool, typer.Option("--due",
                   help="Only what the scheduler runs now: active, next run now or earlier.")] = False,
    status: Annotated[str | None, typer.Option(metavar="STATUS",
                      help="Only schedules with this status: active, paused.")] = None,
    limit: Limit = 0,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the schedules, soonest next run first.

    Each schedule: id, name, cron, timezone, status, next and last run,
    agent and prompt. --due answers the seed's scheduler query (active, with
    next_run_at now or earlier): a schedule listed long after its time says
    the scheduler is not running. --json: {"schedules": [...]}.
    """
    from kaja_cli.core.audit import services as core
    from kaja_cli.render import audit as view

    result = core.schedules(store_of(ctx), due=due, status=status, limit=limit)
    _emit(result, as_json, view.schedules, no_pager)


def triggers(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(metavar="STATUS", help="Only triggers with this status.")] = None,
    kind: Annotated[str | None, typer.Option(metavar="KIND",
                    help="Only triggers of this kind: gmail, calendar, file, webhook, …")] = None,
    limit: Limit = 0,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the triggers (event watchers), soonest next check first.

    Each trigger: id, name, kind, status, next check, last fired, last
    error and its config. A trigger's secret is never shown, and values in
    its config under secret-looking keys (token, secret, password, key,
    auth…) are shown as ***. --json: {"triggers": [...]}.
    """
    from kaja_cli.core.audit import services as core
    from kaja_cli.render import audit as view

    result = core.triggers(store_of(ctx), status=status, kind=kind, limit=limit)
    _emit(result, as_json, view.triggers, no_pager)


# --- kaja learning --------------------------------------------------------------------------
learning_app = typer.Typer(
    help="What the agent learned: recipes and the run each came from; `fixes` for tool fixes.",
    invoke_without_command=True,
)


@learning_app.callback(invoke_without_command=True)
def learning(ctx: typer.Context, limit: Limit = 0, no_pager: NoPager = False,
             as_json: Json = False) -> None:  # fmt: skip
    """List the learned recipes, most used first.

    Each recipe: id, task, uses, wins, losses and the run it was learned
    from (trace_run_id, the seed's query), and when it last changed.
    --json: {"recipes": [...]}.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli.core.audit import learning as core
    from kaja_cli.render import audit as view

    _emit(core.recipes(store_of(ctx), limit=limit), as_json, view.recipes, no_pager)


@learning_app.command("fixes")
def learning_fixes(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option(metavar="NAME", help="Only this tool's fixes.")] = None,
    limit: Limit = 0,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the tool fixes: an error a tool gave and the call that worked, most hits first.

    --json: {"fixes": [...]}.
    """
    from kaja_cli.core.audit import learning as core
    from kaja_cli.render import audit as view

    _emit(core.fixes(store_of(ctx), tool=tool, limit=limit), as_json, view.fixes, no_pager)


# --- kaja artifacts -------------------------------------------------------------------------
artifacts_app = typer.Typer(
    help="Saved pages and the files tools made, and whether each file is still there.",
    invoke_without_command=True,
)


@artifacts_app.callback(invoke_without_command=True)
def artifacts(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option(metavar="KIND",
                    help="Only this kind: page, screenshot, image, audio, …")] = None,
    source: Annotated[str | None, typer.Option(metavar="SOURCE",
                      help="Only artifacts from this source (a tool or a URL).")] = None,
    missing: Annotated[bool, typer.Option("--missing", help="Only those whose file is gone.")] = False,
    limit: Limit = 0,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:  # fmt: skip
    """List the artifacts, newest first.

    Each artifact: id, kind, source, title, when it was made, its path and
    whether the file exists (✓, or ✗ gone; "exists": true|false in --json:
    false also when it has no file). --json: {"artifacts": [...]}.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli.core.audit import artifacts as core
    from kaja_cli.render import audit as view

    result = core.listing(store_of(ctx), kind=kind, source=source, missing=missing, limit=limit)
    _emit(result, as_json, view.artifacts, no_pager)


@artifacts_app.command("show")
def artifacts_show(
    ctx: typer.Context,
    artifact_id: Annotated[str, typer.Argument(metavar="ID", autocompletion=hook("artifact"),
                           help="An artifact id or a unique prefix.")],
    as_json: Json = False,
) -> None:  # fmt: skip
    """Print an artifact's text (a saved page), or the path of its file.

    A file that is gone is said on stderr (the path still printed). --json:
    the artifact with its text and "exists". Unknown id: exit 3.
    """
    from kaja_cli import render
    from kaja_cli.core.audit import artifacts as core
    from kaja_cli.render import audit as view

    art = core.show(store_of(ctx), artifact_id)
    render.emit(art, as_json, view.artifact)
