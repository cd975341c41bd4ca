"""`kaja accounts`: the web app's accounts (web-auth.db) and their sign-in sessions."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of, subcommand_runs
from kaja_cli.commands.options import OLD, DryRun, Json, JsonDone, Yes
from kaja_cli.completion.hooks import hook

app = typer.Typer(
    help="List the web app's accounts; end their sign-in sessions, disable or remove them.",
    invoke_without_command=True,
)

User = Annotated[
    str,
    typer.Argument(metavar="USER", help="A username (case ignored), an id or a unique id prefix.",
                   autocompletion=hook("account")),
]  # fmt: skip


@app.callback(invoke_without_command=True)
def accounts(ctx: typer.Context, as_json: Json = False) -> None:
    """List the web app's accounts; end their sign-in sessions, disable or remove them.

    Without a subcommand: every account in web-auth.db, oldest first: id,
    username, display name, role, whether it is active, when it was created,
    its live sign-in sessions and its last sign-in. Password hashes, salts
    and token hashes are never read, let alone printed. Piped, the rows are
    tab-separated with full ids and ISO times.
    """
    if subcommand_runs(ctx):
        return
    from kaja_cli import render
    from kaja_cli.core.side import accounts as core
    from kaja_cli.render import accounts as view

    result = core.listing(store_of(ctx))
    view.none_found(result)
    render.emit(result, as_json, view.listing)


@app.command("sessions")
def sessions(ctx: typer.Context, user: User, as_json: Json = False) -> None:
    """List an account's sign-in sessions, newest first.

    When each began and when it expires, nothing else: no token hash is
    ever read.
    """
    from kaja_cli import render
    from kaja_cli.core.side import accounts as core
    from kaja_cli.render import accounts as view

    account, sign_ins = core.sign_ins(store_of(ctx), user)
    render.emit(account, as_json, view.sign_ins, sign_ins=sign_ins)


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    user: User,
    expired: Annotated[
        bool,
        typer.Option("--expired", help="Delete the expired sessions too, not only the live ones."),
    ] = False,
    every: Annotated[
        bool, typer.Option("--all", hidden=True, help=OLD % "--expired")
    ] = False,  # --expired's old name
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """End an account's sign-in sessions: it is signed out everywhere.

    The live sessions are deleted (their tokens sign nobody in any more);
    expired ones stay as a record of past sign-ins unless --expired. Asks first;
    with no terminal to ask, refuses unless --yes.
    """
    _change(ctx, "revoke", user, every=expired or every, yes=yes, dry_run=dry_run, as_json=as_json)


@app.command("disable")
def disable(ctx: typer.Context, user: User, yes: Yes = False, dry_run: DryRun = False,
            as_json: JsonDone = False) -> None:  # fmt: skip
    """Disable an account: it can't sign in, and its live sessions end.

    `kaja accounts enable USER` undoes it (the ended sessions stay ended).
    Asks first; with no terminal to ask, refuses unless --yes.
    """
    _change(ctx, "disable", user, yes=yes, dry_run=dry_run, as_json=as_json)


@app.command("enable")
def enable(
    ctx: typer.Context, user: User, dry_run: DryRun = False, as_json: JsonDone = False
) -> None:
    """Enable a disabled account again (it signs in anew)."""
    _change(ctx, "enable", user, yes=True, dry_run=dry_run, as_json=as_json)


@app.command("remove")
def remove(
    ctx: typer.Context,
    user: User,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Remove the legacy owner (web_auth_meta's legacy_owner_id) too."
        ),
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Remove an account and, through the database's foreign key, its sign-in sessions.

    The legacy owner (web_auth_meta's legacy_owner_id: the first account,
    which owns the conversations made before accounts existed) is refused
    (exit 5) unless --force. Asks first; with no terminal to ask, refuses
    unless --yes.
    """
    _change(ctx, "remove", user, force=force, yes=yes, dry_run=dry_run, as_json=as_json)


def _change(ctx: typer.Context, verb: str, user: str, *, every: bool = False, force: bool = False,
            yes: bool, dry_run: bool, as_json: bool) -> None:  # fmt: skip
    from kaja_cli import render
    from kaja_cli.core.side import accounts as core
    from kaja_cli.render import accounts as view

    store = store_of(ctx)
    action = core.plan(store, verb, user, every=every, force=force)
    nothing = verb in ("disable", "enable") and not action.changes_active and not action.sessions
    if dry_run or nothing or (verb == "revoke" and not action.sessions):
        render.emit(action, as_json, view.changed, dry_run=dry_run)
        return
    render.confirm(f"{view.question(action)}?", assume_yes=yes)
    render.emit(action, as_json, view.changed, ended=core.apply(store, action))
