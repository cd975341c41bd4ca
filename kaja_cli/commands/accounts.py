"""`kaja accounts`: the web app's accounts (web-auth.db) and their sign-in sessions."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.side.accounts import Account, Action

app = typer.Typer(
    help="List the web app's accounts; end their sign-in sessions, disable or remove them.",
    invoke_without_command=True,
)

User = Annotated[
    str,
    typer.Argument(metavar="USER", help="A username (case ignored), an id or a unique id prefix.",
                   autocompletion=hook("account")),
]  # fmt: skip
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Don't ask first.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Only show what would change.")]
Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
DoneJson = Annotated[bool, typer.Option("--json", help="Print what was done as one JSON document.")]
SHORT_ID = 8  # an account's id on a terminal (any unique prefix of 4 or more names it)


@app.callback(invoke_without_command=True)
def accounts(ctx: typer.Context, as_json: Json = False) -> None:
    """List the web app's accounts; end their sign-in sessions, disable or remove them.

    Without a subcommand: every account in web-auth.db, oldest first: id,
    username, display name, role, whether it is active, when it was created,
    its live sign-in sessions and its last sign-in. Password hashes, salts
    and token hashes are never read, let alone printed. Piped, the rows are
    tab-separated with full ids and ISO times.
    """
    if ctx.invoked_subcommand is not None:
        if as_json:
            from kaja_cli.errors import UsageError

            raise UsageError(
                f"--json belongs to the listing, not to `{ctx.invoked_subcommand}`",
                hint=f"put it after it: kaja accounts {ctx.invoked_subcommand} --json",
            )
        return
    from kaja_cli import render
    from kaja_cli.core.side import accounts as core

    result = core.listing(store_of(ctx))
    if not result.exists:
        render.note(f"no accounts: there is no web-auth.db at {result.path}")
    elif not result.has_tables:
        render.note(f"no accounts: {result.path} has no web_users table")
    elif not result.accounts:
        render.note(f"no accounts in {result.path}")
    if as_json:
        render.emit_json({"path": str(result.path), "exists": result.exists,
                          "legacy_owner_id": result.legacy_owner_id,
                          "accounts": [a.as_json() for a in result.accounts]})  # fmt: skip
    elif result.accounts:
        _table(result.accounts)


def _table(accounts: "list[Account]") -> None:
    from kaja_cli import render
    from kaja_cli.core import clock

    Col = render.Col
    # Ids, counts and marks never give way; on a narrow terminal the last
    # sign-in, the display name and the creation time go, in that order.
    cols = [
        Col("id", style="cyan", kind="whole"), Col("username", kind="whole"),
        Col("name", kind="text", drop=2), Col("role", kind="whole"), Col("active", kind="whole"),
        Col("created", kind="whole", drop=3), Col("live", justify="right"),
        Col("last sign-in", kind="whole", drop=1), Col("", kind="whole"),
    ]  # fmt: skip
    rows, plain = [], []
    now = clock.now()
    for a in accounts:
        mark = "legacy owner" if a.legacy_owner else ""
        rows.append(
            [a.id[:SHORT_ID], a.username, a.display_name or "", a.role or "",
             "yes" if a.active else render.Styled("no", "bold red"),
             render.relative_time(a.created_at, now), a.live_sessions,
             render.relative_time(a.last_sign_in, now) if a.last_sign_in else "never", mark]
        )  # fmt: skip
        plain.append(
            [a.id, a.username, a.display_name, a.role, int(a.active), a.created_at,
             a.live_sessions, a.last_sign_in, "legacy_owner" if a.legacy_owner else ""]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain)


@app.command("sessions")
def sessions(ctx: typer.Context, user: User, as_json: Json = False) -> None:
    """List an account's sign-in sessions, newest first.

    When each began and when it expires, nothing else: no token hash is
    ever read.
    """
    from kaja_cli import render
    from kaja_cli.core import clock
    from kaja_cli.core.side import accounts as core

    account, sign_ins = core.sign_ins(store_of(ctx), user)
    if as_json:
        render.emit_json({"account": account.as_json(),
                          "sessions": [s._asdict() for s in sign_ins]})  # fmt: skip
        return
    if not sign_ins:
        render.note(f"{account.username} has no sign-in sessions")
        return
    now = clock.now()
    Col = render.Col
    cols = [Col("created", kind="whole"), Col("expires", kind="whole"), Col("", kind="whole")]
    rows = [[render.relative_time(s.created_at, now) if s.created_at else "-", render.relative_time(s.expires_at, now) if s.expires_at else "never",
             "live" if s.live else render.Styled("expired", "dim")] for s in sign_ins]  # fmt: skip
    plain = [[s.created_at, s.expires_at, "live" if s.live else "expired"] for s in sign_ins]
    render.table(cols, rows, plain_rows=plain)


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    user: User,
    every: Annotated[
        bool, typer.Option("--all", help="Delete the expired sessions too, not only the live ones.")
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: DoneJson = False,
) -> None:
    """End an account's sign-in sessions: it is signed out everywhere.

    The live sessions are deleted (their tokens sign nobody in any more);
    expired ones stay as a record of past sign-ins unless --all. Asks first;
    with no terminal to ask, refuses unless --yes.
    """
    _change(ctx, "revoke", user, every=every, yes=yes, dry_run=dry_run, as_json=as_json)


@app.command("disable")
def disable(ctx: typer.Context, user: User, yes: Yes = False, dry_run: DryRun = False,
            as_json: DoneJson = False) -> None:  # fmt: skip
    """Disable an account: it can't sign in, and its live sessions end.

    `kaja accounts enable USER` undoes it (the ended sessions stay ended).
    Asks first; with no terminal to ask, refuses unless --yes.
    """
    _change(ctx, "disable", user, yes=yes, dry_run=dry_run, as_json=as_json)


@app.command("enable")
def enable(
    ctx: typer.Context, user: User, dry_run: DryRun = False, as_json: DoneJson = False
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
    as_json: DoneJson = False,
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

    store = store_of(ctx)
    action = core.plan(store, verb, user, every=every, force=force)
    nothing = verb in ("disable", "enable") and not action.changes_active and not action.sessions
    if dry_run or nothing or (verb == "revoke" and not action.sessions):
        _out(action, 0, dry_run=dry_run, as_json=as_json)
        return
    render.confirm(f"{_describe(action)}?", assume_yes=yes)
    _out(action, core.apply(store, action), dry_run=False, as_json=as_json)


def _describe(action: "Action") -> str:
    from kaja_cli import render

    a, n = action.account, action.sessions
    kind = "sign-in session" if action.every_session else "live sign-in session"
    sessions = render.plural(n, kind)
    legacy = " (the legacy owner)" if a.legacy_owner else ""
    return {
        "revoke": f"End {sessions} of {a.username}",
        "disable": f"Disable {a.username} and end its {sessions}",
        "enable": f"Enable {a.username}",
        "remove": f"Remove account {a.username}{legacy} and its {sessions}",
    }[action.verb]


def _out(action: "Action", ended: int, *, dry_run: bool, as_json: bool) -> None:
    from kaja_cli import render

    a = action.account
    if as_json:
        render.emit_json({"action": action.verb, "dry_run": dry_run,
                          "account": {"id": a.id, "username": a.username},
                          "sessions_ended": ended, "would_end": action.sessions if dry_run else None,
                          "active": {"disable": False, "enable": True}.get(action.verb, a.active),
                          "changed": not dry_run and (ended > 0 or action.changes_active
                                                      or action.verb == "remove")})  # fmt: skip
        return
    if dry_run:
        what = _describe(action)
        render.note(f"dry run: would {what[:1].lower()}{what[1:]}; nothing was changed")
        return
    sessions = render.plural(ended, "sign-in session")
    if action.verb == "revoke":
        render.note(f"ended {sessions} of {a.username}")
    elif action.verb in ("disable", "enable") and not action.changes_active:
        state = "disabled" if action.verb == "disable" else "active"
        ends = f"; ended {sessions}" if ended else ""
        render.note(f"{a.username} is already {state}{ends}")
    elif action.verb == "disable":
        render.note(f"disabled {a.username} and ended {sessions}")
    elif action.verb == "enable":
        render.note(f"enabled {a.username}")
    else:
        render.note(f"removed account {a.username} and {sessions}")
