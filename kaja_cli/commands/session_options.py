"""The options that say which sessions a command means, shared by `kaja
sessions` (`list`), `sessions prune`, `sessions export --all` and `sessions
stats`: the same names, the same help, the same parsing into the core's
`SessionFilter`."""

from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from kaja_cli.commands import OWNER_HELP, count
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store

FILTERS = "Which sessions"

OwnerOpt = Annotated[
    str | None,
    typer.Option(
        metavar="ID", help=OWNER_HELP, autocompletion=hook("owner"), rich_help_panel=FILTERS
    ),
]
ActingOwner = Annotated[
    str | None, typer.Option(metavar="ID", help=OWNER_HELP, autocompletion=hook("owner"))
]
AllOwners = Annotated[
    bool,
    typer.Option(
        "--all-owners", help="Everyone's sessions, with an owner column.", rich_help_panel=FILTERS
    ),
]
Since = Annotated[
    str | None,
    typer.Option(
        metavar="WHEN",
        help="Updated since: 2026-11-01, 2026-11-01T08:00, 3d, 12h.",
        rich_help_panel=FILTERS,
    ),
]
Before = Annotated[
    str | None,
    typer.Option(
        metavar="WHEN",
        help="Last updated before: a date, an ISO time or an age (90d).",
        rich_help_panel=FILTERS,
    ),
]
OlderThan = Annotated[
    str | None,
    typer.Option(
        "--older-than",
        metavar="AGE",
        help="Last updated more than this long ago: 90d, 6mo, 1y (--before AGE).",
        rich_help_panel=FILTERS,
    ),
]
Model = Annotated[
    str | None,
    typer.Option(metavar="NAME", help="Only sessions with this model.", rich_help_panel=FILTERS),
]
Persona = Annotated[
    str | None,
    typer.Option(metavar="NAME", help="Only sessions with this persona.", rich_help_panel=FILTERS),
]
Title = Annotated[
    str | None,
    typer.Option(
        metavar="GLOB",
        help="Titles matching this pattern, ignoring case: '*backup*', 'Load test ?'.",
        rich_help_panel=FILTERS,
    ),
]
MaxMessages = Annotated[
    int | None,
    typer.Option(
        "--max-messages",
        metavar="N",
        click_type=count(),
        help="At most N messages.",
        rich_help_panel=FILTERS,
    ),
]
MinTokens = Annotated[
    int | None,
    typer.Option(
        "--min-tokens",
        metavar="N",
        click_type=count(),
        help="At least N tokens (prompt + completion).",
        rich_help_panel=FILTERS,
    ),
]
Empty = Annotated[
    bool,
    typer.Option(
        "--empty", help="Sessions without messages (--max-messages 0).", rich_help_panel=FILTERS
    ),
]
ArchivedOpt = Annotated[
    bool,
    typer.Option(
        "--archived",
        help="Archived sessions only (they are left out otherwise).",
        rich_help_panel=FILTERS,
    ),
]


class FilterArgs(NamedTuple):
    """The filter options as typed."""

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

    def to_filter(
        self, store: "Store | None" = None, *, limit: int = 0, everyone_by_default: bool = False
    ) -> "SessionFilter":
        """The core's filter; usage errors (exit 2) for what does not go together.

        `store` says who "you" is (`Store.owner`: the account in cloud mode).
        `everyone_by_default`: without --owner, every owner's sessions (stats)."""
        from kaja_cli.core.conversations.filter import Archived, SessionFilter
        from kaja_cli.core.owners import Owner
        from kaja_cli.core.timeparse import parse_when
        from kaja_cli.errors import UsageError

        if self.all_owners and self.owner is not None:
            raise UsageError("--owner and --all-owners can't be combined")
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
