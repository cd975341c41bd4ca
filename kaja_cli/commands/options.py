"""The options many commands share, declared once: `--json`, `--yes`,
`--dry-run`, `--no-pager`, `-n/--limit`, `--owner`/`--all-owners`, and the
session filters (`kaja sessions`, `sessions prune`, `export --all`,
`sessions stats`), which reach a command as one `SessionFilters` value.

A command takes them by annotation: `as_json: Json = False`, `yes: Yes =
False`; the session filters by a parameter `filters: SessionFilters` and
the `@session_filters` decorator, which puts the twelve options in its place
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


WHEN = "a date, an ISO time or an age (90d)"
_OPTIONS = {  # name: (annotation, default), in the order --help lists them
    "owner": (str | None, _filter(metavar="ID", help=OWNER_HELP, autocompletion=hook("owner")), None),
    "all_owners": (bool, _filter("--all-owners", help="Everyone's sessions, with an owner column."),
                   False),
    "since": (str | None, _filter(metavar="WHEN",
                                  help="Updated since: 2026-11-01, 2026-11-01T08:00, 3d, 12h."), None),
    "before": (str | None, _filter(metavar="WHEN", help=f"Last updated before: {WHEN}."), None),
    "older_than": (str | None, _filter("--older-than", metavar="AGE",
                   help="Last updated more than this long ago: 90d, 6mo, 1y (--before AGE)."), None),
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
        `everyone_by_default`: without --owner, every owner's sessions (stats)."""
        from kaja_cli.core.conversations.filter import Archived, SessionFilter
        from kaja_cli.core.owners import Owner, one_of
        from kaja_cli.core.timeparse import parse_when
        from kaja_cli.errors import UsageError

        one_of(self.owner, self.all_owners)
        if self.before is not None and self.older_than is not None:
            raise UsageError("--before and --older-than say the same: give one")
        if self.empty and self.max_messages not in (None, 0):
            raise UsageError("--empty is --max-messages 0: give one")
        if self.title is not None and not self.title.strip():
            raise UsageError("--title is empty", hint="use '*' for any title")
        everyone = self.all_owners or (everyone_by_default and self.owner is None)
        acting = None if everyone else store.owner(self.owner) if store else Owner.parse(self.owner)
        since = parse_when(self.since) if self.since is not None else None
        before = None
        if self.before is not None:
            before = parse_when(self.before, option="--before")
        elif self.older_than is not None:
            before = parse_when(self.older_than, option="--older-than")
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
