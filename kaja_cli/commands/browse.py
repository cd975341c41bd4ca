"""`kaja browse`: find a conversation by typing, see it, act on it (full screen)."""

from typing import Annotated

import typer

from kaja_cli.commands import count, store_of
from kaja_cli.commands.options import SessionFilters, session_filters

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


@session_filters
def browse(
    ctx: typer.Context,
    filters: SessionFilters,
    query: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[QUERY]", help="Start with these words in the search box.", show_default=False
        ),
    ] = None,
    fts: Fts = False,
    limit: Limit = 200,
) -> None:
    """Find a conversation by typing, see it, act on it: a full-screen picker.

    An empty search box lists your sessions as `kaja sessions` does (its
    filters and order); words search every message as `kaja search` does,
    as you type, one row per session with its best match. The selected
    session's replay is shown beside the list. Enter prints its id and exits
    0, so `kaja resume "$(kaja browse)"` works; Esc or Ctrl-C print nothing,
    exit 1. Keys: o replay in the pager, e export (Markdown), a archive, r
    rename, d delete (asks first), Ctrl-O everyone's sessions, Ctrl-S search
    by meaning (`kaja search --semantic`) and back, ? or F1 help.
    Needs a terminal (exit 2 otherwise: use `kaja search` or `kaja sessions`).
    """
    _browse(ctx, filters, " ".join(query or []), fts, limit)


def _browse(ctx: typer.Context, filters: SessionFilters, query: str, fts: bool, limit: int) -> None:
    from kaja_cli import browse as ui

    store = store_of(ctx)
    if not ui.pick(store, filters.to_filter(store), filters.owner, query, fts, limit):
        raise typer.Exit(1)
