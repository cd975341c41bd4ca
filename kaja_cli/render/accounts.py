"""What `kaja accounts` prints for a person or a pipe (the JSON is the
results' own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core import clock
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.side.accounts import Account, AccountListing, Action, SignIn

SHORT_ID = 8  # an account's id on a terminal (any unique prefix of 4 or more names it)


def none_found(result: AccountListing) -> None:
    """Why there are no accounts to show, on stderr (with --json too)."""
    if not result.exists:
        render.note(f"no accounts: there is no web-auth.db at {result.path}")
    elif not result.has_tables:
        render.note(f"no accounts: {result.path} has no web_users table")
    elif not result.accounts:
        render.note(f"no accounts in {result.path}")


def listing(result: AccountListing) -> None:
    if not result.accounts:
        return
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
    for a in result.accounts:
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


def sign_ins(account: Account, *, sign_ins: list[SignIn]) -> None:
    if not sign_ins:
        render.note(f"{account.username} has no sign-in sessions")
        return
    now = clock.now()
    cols = [Col("created", kind="whole"), Col("expires", kind="whole"), Col("", kind="whole")]
    rows = [[render.relative_time(s.created_at, now) if s.created_at else "-", render.relative_time(s.expires_at, now) if s.expires_at else "never",
             "live" if s.live else render.Styled("expired", "dim")] for s in sign_ins]  # fmt: skip
    plain = [[s.created_at, s.expires_at, "live" if s.live else "expired"] for s in sign_ins]
    render.table(cols, rows, plain_rows=plain)


def question(action: Action) -> str:
    """What the change will do, as its question (and its dry run) says it."""
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


def changed(action: Action, ended: int = 0, *, dry_run: bool = False) -> None:
    a = action.account
    if dry_run:
        what = question(action)
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
