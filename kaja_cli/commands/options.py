"""The options many commands share, declared once: `--json`, `--yes`,
`--dry-run`, `--no-pager`, `-n/--limit`, `--owner`/`--all-owners`, the time
bounds `--since`/`--until` (with the hidden old names of `--until`), and the
session filters (`kaja sessions`, `sessions prune`, `export --all`,
`sessions stats`), which reach a command as one `SessionFilters` value.

A command takes them by annotation: `as_json: Json = False`, `yes: Yes =
False`; the session filters by a parameter `filters: SessionFilters` and
the `@session_filters` decorator, which puts the filter options in its place
(Typer has no option groups: the signature Typer reads is rewritten once,
at import).
"""

import functools
import inspect
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from kaja_cli.commands import count
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store

JSON_HELP = "Print one JSON document on stdout instead of a table."
OWNER_HELP = 'Act as this owner ("telegram:123", "widget:ab12"); default: the terminal.'

Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
JsonDone = Annotated[bool, typer.Option("--json", help="Print what was done as one JSON document.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")]


def _dry_run(value: bool) -> bool:
    """A dry run changes nothing on disk: not even kaja's own query profile
    (db-stats.db), which every other command adds its queries to."""
    if value:
        from kaja_cli.core.side import profiler

        profiler.discard()
    return value


DryRun = Annotated[
    bool,
    typer.Option("--dry-run", help="Show what would be done; change nothing.", callback=_dry_run),
]
NoPager = Annotated[bool, typer.Option("--no-pager", help="Never page long output on a terminal.")]
Limit = Annotated[
    int,
    typer.Option("--limit", "-n", click_type=count(), help="Show at most this many; 0 shows all."),
]
OwnerOpt = Annotated[
    str | None, typer.Option(metavar="ID", help=OWNER_HELP, autocompletion=hook("owner"))
]
AllOwners = Annotated[
    bool, typer.Option("--all-owners", help="Everyone's, with an owner column.")
]  # fmt: skip
# The usage ledger's: whose runs (`core/ledger/whose.py`); everyone's unless an account is set.
RunsOwner = Annotated[
    str | None,
    typer.Option("--owner", metavar="ID", autocompletion=hook("owner"),
                 help='Act as this owner ("telegram:123"): only the runs of their sessions,'
                 " and their subagents'."),
]  # fmt: skip


def no_owner_on_shared(owner: str | None) -> None:
    """--all-machines reads the shared ledger, which holds no sessions to tell
    owners apart: --owner there is a usage error (exit 2)."""
    if owner is not None:
        from kaja_cli.errors import UsageError

        raise UsageError("--owner goes without --all-machines: the shared ledger holds no"
                         " sessions to tell owners apart")  # fmt: skip


RunsAllOwners = Annotated[
    bool,
    typer.Option("--all-owners", help="Everyone's runs: the default, but in cloud mode with an"
                 " account, where only the account's are read."),
]  # fmt: skip

# An option's old name stays, hidden from --help, so that scripts written for it do not
# break; its help says which name replaced it (the manual's command reference lists them).
OLD = "The old name of %s, still accepted."

# --- the time bounds: one pair of names, one text, one set of forms (core/timeparse.py) -----------
SINCE_HELP = (
    "From then on: a date (2026-11-01), an ISO time (2026-11-01T08:00) or an age (3d, 12h)."
)
UNTIL_HELP = "Before then (not included); the same forms as --since."
Since = Annotated[str | None, typer.Option("--since", metavar="WHEN", help=SINCE_HELP)]
Until = Annotated[str | None, typer.Option("--until", metavar="WHEN", help=UNTIL_HELP)]
# `--before` was the name of --until in `sessions`, `sessions prune` and `usage reset`: hidden,
# it still works, so that scripts written for it do not break.
Before = Annotated[
    str | None, typer.Option("--before", metavar="WHEN", hidden=True, help=OLD % "--until")
]


def either(**given):  # type: ignore[no-untyped-def]
    """The value given under one of an option's names (`until=`, `before=`, …:
    the current name and its hidden old ones); two of them is a usage error
    (exit 2), even when they agree."""
    named = [(name, value) for name, value in given.items() if value is not None]
    if len(named) > 1:
        from kaja_cli.errors import UsageError

        raise UsageError(" and ".join(_flag(name) for name, _ in named) + " say the same: give one")
    return named[0][1] if named else None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_until(**given: str | None) -> str | None:
    """The upper time bound under any of its names, as ISO UTC (`parse_when`),
    its errors naming the option the user typed."""
    from kaja_cli.core.timeparse import parse_when

    value = either(**given)
    typed = next((name for name, v in given.items() if v is not None), None)
    return None if typed is None else parse_when(value, option=_flag(typed))


def parse_since(value: str | None) -> str | None:
    from kaja_cli.core.timeparse import parse_when

    return parse_when(value, option="--since") if value is not None else None


# --- the shared ledger's server (`kaja sync`, `runs`/`usage --all-machines`) ---------------------
# Named for what it points at, as the global --database-url is: both are PostgreSQL URLs.
LEDGER_URL_HELP = (
    "The shared ledger's PostgreSQL URL (default: USAGE_POSTGRES_URL, then \\[usage] postgres_url)."
)
LedgerUrl = Annotated[
    str | None, typer.Option("--ledger-url", metavar="URL", help=LEDGER_URL_HELP)
]  # fmt: skip
OldUrl = Annotated[
    str | None, typer.Option("--url", metavar="URL", hidden=True, help=OLD % "--ledger-url")
]  # its old name


SessionIds = Annotated[
    list[str],
    typer.Argument(
        metavar="ID...", help="Session ids or unique prefixes.", autocompletion=hook("session")
    ),
]


# --- the session filters ------------------------------------------------------------------------
FILTERS = "Which sessions"  # their panel in --help


def _filter(*decls: str, **kwargs) -> typer.models.OptionInfo:  # type: ignore[no-untyped-def]
    return typer.Option(*decls, rich_help_panel=FILTERS, **kwargs)


_OPTIONS = {  # name: (annotation, default), in the order --help lists them
    "owner": (str | None, _filter(metavar="ID", help=OWNER_HELP, autocompletion=hook("owner")), None),
    "all_owners": (bool, _filter("--all-owners", help="Everyone's sessions, with an owner column."),
                   False),
    "since": (str | None, _filter("--since", metavar="WHEN", help=SINCE_HELP), None),
    "until": (str | None, _filter("--until", metavar="WHEN", help=UNTIL_HELP), None),
    # the old names of --until, hidden (they still work)
    "before": (str | None, _filter("--before", metavar="WHEN", hidden=True, help=OLD % "--until"), None),
    "older_than": (str | None, _filter("--older-than", metavar="AGE", hidden=True, help=OLD % "--until"), None),
    "model": (str | None, _filter(metavar="NAME", help="Only sessions with this model."), None),
    "persona": (str | None, _filter(metavar="NAME", help="Only sessions with this persona."), None),
    "title": (str | None, _filter(metavar="GLOB",
              help="Titles matching this pattern, ignoring case: '*backup*', 'Load test ?'."), None),
    "max_messages": (int | None, _filter("--max-messages", metavar="N", click_type=count(),
                                         help="At most N messages."), None),
    "min_tokens": (int | None, _filter("--min-tokens", metavar="N", click_type=count(),
                                       help="At least N tokens (prompt + completion)."), None),
    "empty": (bool, _filter("--empty", help="Sessions without messages (--max-messages 0)."), False),
    "archived": (bool, _filter("--archived",
                 help="Archived sessions only (they are left out otherwise)."), False),
}  # fmt: skip


class SessionFilters(NamedTuple):
    """The session filter options as typed."""

    owner: str | None = None
    all_owners: bool = False
    since: str | None = None
    until: str | None = None
    before: str | None = None
    older_than: str | None = None
    model: str | None = None
    persona: str | None = None
    title: str | None = None
    max_messages: int | None = None
    min_tokens: int | None = None
    empty: bool = False
    archived: bool = False

    @property
    def given(self) -> bool:
        """Any filter beyond --owner (which is also who acts on one session)."""
        return self._replace(owner=None) != SessionFilters()

    def to_filter(
        self, store: "Store | None" = None, *, limit: int = 0, everyone_by_default: bool = False
    ) -> "SessionFilter":
        """The core's filter; usage errors (exit 2) for what does not go together.

        `store` says who "you" is (`Store.owner`: the account in cloud mode).
        `everyone_by_default`: without --owner, every owner's sessions (stats),
        but for the account in cloud mode when one is set (`Store.account`)."""
        from kaja_cli.core.conversations.filter import Archived, SessionFilter
        from kaja_cli.core.owners import Owner, one_of
        from kaja_cli.errors import UsageError

        one_of(self.owner, self.all_owners)
        before = parse_until(until=self.until, before=self.before, older_than=self.older_than)
        if self.empty and self.max_messages not in (None, 0):
            raise UsageError("--empty is --max-messages 0: give one")
        if self.title is not None and not self.title.strip():
            raise UsageError("--title is empty", hint="use '*' for any title")
        everyone = self.all_owners or (
            everyone_by_default and self.owner is None and (store is None or store.account is None)
        )
        acting = None if everyone else store.owner(self.owner) if store else Owner.parse(self.owner)
        since = parse_since(self.since)
        return SessionFilter(
            owner=acting,
            since=since,
            model=self.model,
            persona=self.persona,
            limit=limit,
            before=before,
            title=self.title,
            max_messages=0 if self.empty else self.max_messages,
            min_tokens=self.min_tokens,
            archived=Archived.ONLY if self.archived else Archived.HIDE,
        )


def session_filters(command=None, *, without: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """Give `command` the session filter options in place of its parameter
    `filters: SessionFilters` (less those named in `without`); it is called
    with them gathered into that one value."""
    if command is None:
        return functools.partial(session_filters, without=without)
    names = [n for n in _OPTIONS if n not in without]
    spliced = []
    for p in inspect.signature(command).parameters.values():
        if p.name != "filters":
            spliced.append(p)
            continue
        for name in names:
            kind, option, default = _OPTIONS[name]
            spliced.append(
                p.replace(name=name, annotation=Annotated[kind, option], default=default)
            )

    @functools.wraps(command)
    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        filters = SessionFilters(**{n: kwargs.pop(n) for n in names})
        return command(*args, filters=filters, **kwargs)

    run.__signature__ = inspect.Signature(spliced)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in spliced}
    return run
