"""`kaja browse`: find a conversation by typing, see it, act on it (full screen)."""

from typing import Annotated

import typer

from kaja_cli.commands import count, store_of
from kaja_cli.commands import session_options as opt

Limit = Annotated[
    int,
    typer.Option(
        "--limit",
        "-n",
        click_type=count(),
        help="Rows in the list (the newest, or the best matches); 0: all.",
    ),
]
Fts = Annotated[
    bool,
    typer.Option(
        "--fts", help='The search box takes SQLite FTS4 syntax: "a phrase", OR, NOT, prefix*.'
    ),
]


def browse(
    ctx: typer.Context,
    query: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[QUERY]", help="Start with these words in the search box.", show_default=False
        ),
    ] = None,
    fts: Fts = False,
    owner: opt.OwnerOpt = None,
    all_owners: opt.AllOwners = False,
    limit: Limit = 200,
    since: opt.Since = None,
    before: opt.Before = None,
    older_than: opt.OlderThan = None,
    model: opt.Model = None,
    persona: opt.Persona = None,
    title: opt.Title = None,
    max_messages: opt.MaxMessages = None,
    min_tokens: opt.MinTokens = None,
    empty: opt.Empty = False,
    archived: opt.ArchivedOpt = False,
) -> None:
    """Find a conversation by typing, see it, act on it: a full-screen picker.

    An empty search box lists your sessions as `kaja sessions` does (its
    filters and order); words search every message as `kaja search` does,
    as you type, one row per session with its best match. The selected
    session's replay is shown beside the list. Enter prints its id and exits
    0, so `kaja resume "$(kaja browse)"` works; Esc or Ctrl-C print nothing,
    exit 1. Keys: o replay in the pager, e export (Markdown), a archive, r
    rename, d delete (asks first), Ctrl-O everyone's sessions, ? help. Needs a
    terminal (exit 2 otherwise: use `kaja search` or `kaja sessions`).
    """
    args = opt.FilterArgs(owner, all_owners, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    _browse(ctx, args, " ".join(query or []), fts, limit)


def from_sessions(ctx: typer.Context, args: opt.FilterArgs, limit: int, as_json: bool) -> None:
    """`kaja sessions -i`: the listing's filters handed over to `kaja browse`
    (its -n when given, else browse's 200 rows)."""
    from kaja_cli.errors import UsageError

    if as_json:
        raise UsageError("-i is full screen; --json prints the listing: give one")
    given = getattr(ctx.get_parameter_source("limit"), "name", "") == "COMMANDLINE"
    _browse(ctx, args, "", False, limit if given else 200)


def _browse(ctx: typer.Context, args: opt.FilterArgs, query: str, fts: bool, limit: int) -> None:
    from kaja_cli.browse.data import Options

    store = store_of(ctx)
    flt = args.to_filter(store)
    _need_terminal()
    from kaja_cli import browse as ui

    chosen = ui.run(store, Options(flt, args.owner, fts, limit), query)
    if chosen is None:
        raise typer.Exit(1)
    import sys

    sys.stdout.write(chosen + "\n")


def _need_terminal() -> None:
    """The screen is drawn on stderr and read from stdin (stdout stays free for
    the id: `"$(kaja browse)"`); without a terminal there, one line, exit 2."""
    import sys

    from kaja_cli.errors import UsageError

    def tty(stream) -> bool:
        try:
            return stream.isatty()
        except (AttributeError, ValueError):
            return False

    if not (tty(sys.stdin) and tty(sys.stderr)):
        raise UsageError(
            "browse needs a terminal",
            hint="`kaja search WORDS` and `kaja sessions` print the same without one",
        )
