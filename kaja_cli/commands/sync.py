"""`kaja sync`: share the usage ledger with other machines through PostgreSQL."""

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, Json, LedgerUrl, OldUrl, either

app = typer.Typer()


@app.callback(invoke_without_command=True)
def sync(
    ctx: typer.Context,
    ledger: LedgerUrl = None,
    url: OldUrl = None,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Share the usage ledger: push this machine's changes, then pull the others'.

    The ledger (runs, calls, tools, events, logs, media, feedback, reviews) meets
    the other machines' in one PostgreSQL table, andromeda_ledger. The first
    sync also sends the history from before sync was on. Changes wait in the
    outbox while the server is unreachable (exit 1); one sync runs at a time
    (exit 4 while another holds the ledger). An interrupted sync is resumed by
    the next one. Needs `pip install 'kaja-cli\\[postgres]'`.
    """
    # `kaja sync --ledger-url U --json status` means `kaja sync status --ledger-url U --json`.
    url = either(ledger_url=ledger, url=url)
    ctx.meta["sync_url"], ctx.meta["sync_json"] = url, as_json
    ctx.meta["sync_dry_run"] = dry_run
    if ctx.invoked_subcommand is None:
        _run(ctx, url, push=True, pull=True, as_json=as_json, dry_run=dry_run)


@app.command("push")
def push(
    ctx: typer.Context,
    ledger: LedgerUrl = None,
    url: OldUrl = None,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Send this machine's ledger changes (and, the first time, its history)."""
    url = either(ledger_url=ledger, url=url)
    _run(ctx, url, push=True, pull=False, as_json=as_json, dry_run=dry_run)


@app.command("pull")
def pull(
    ctx: typer.Context,
    ledger: LedgerUrl = None,
    url: OldUrl = None,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Import the changes the other machines sent since the last pull."""
    url = either(ledger_url=ledger, url=url)
    _run(ctx, url, push=False, pull=True, as_json=as_json, dry_run=dry_run)


def _run(
    ctx: typer.Context, url: str | None, *, push: bool, pull: bool, as_json: bool, dry_run: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.ledger import sync as core
    from kaja_cli.render import sync as view

    store = store_of(ctx)
    target = core.require_url(store, url or ctx.meta.get("sync_url"))
    as_json = as_json or ctx.meta.get("sync_json", False)
    if dry_run or ctx.meta.get("sync_dry_run", False):
        render.emit(core.plan(store, target, push=push, pull=pull), as_json, view.would_sync)
        return
    result = core.sync(store, target, push=push, pull=pull, progress=render.progress)
    render.emit(result, as_json, view.synced)


@app.command("status")
def status(
    ctx: typer.Context, ledger: LedgerUrl = None, url: OldUrl = None, as_json: Json = False
) -> None:
    """Show the outbox, the last push and pull, the lease, and what the server holds.

    Reads the store read-only and never creates anything. The server is asked
    with a short timeout: one that does not answer is reported, not waited for.
    """
    from kaja_cli import render
    from kaja_cli.core.ledger import sync as core
    from kaja_cli.render import sync as view

    store = store_of(ctx)
    found = core.find_url(store, either(ledger_url=ledger, url=url) or ctx.meta.get("sync_url"))
    result = core.status(store, found)
    render.emit(result, as_json or ctx.meta.get("sync_json", False), view.status)
