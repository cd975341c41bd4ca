"""`kaja sessions` (`list`, `ls`): the acting owner's conversations, newest first."""

import typer

from kaja_cli.commands import store_of, subcommand_runs
from kaja_cli.commands.options import Json, Limit, NoPager, SessionFilters, session_filters


@session_filters
def sessions(
    ctx: typer.Context,
    filters: SessionFilters,
    limit: Limit = 20,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """List your conversations, newest first; prune, export, archive, rename them.

    Without a subcommand (or with `list`, `ls`): the acting owner's sessions
    (the terminal unless --owner) with a short id you can pass to `kaja
    resume`, when each was last updated, title, persona, model, messages,
    tokens, and a mark for a tool call waiting on you. Archived sessions are
    left out (--archived lists them). Piped, the rows are tab-separated with
    full ids and ISO times.
    """
    if not subcommand_runs(ctx):
        _list(ctx, filters, limit, no_pager, as_json)


@session_filters
def list_(
    ctx: typer.Context,
    filters: SessionFilters,
    limit: Limit = 20,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """List your conversations, newest first (the same as `kaja sessions`; also `ls`).

    The acting owner's sessions (the terminal unless --owner) with a short id
    you can pass to `kaja resume`, when each was last updated, title,
    persona, model, messages, tokens, and a mark for a tool call waiting on
    you. The filters are those of `sessions prune` and `export --all`:
    `list FILTERS -n 0` shows what they would take. Archived sessions are
    left out (--archived lists them). Piped, the rows are tab-separated with
    full ids and ISO times.
    """
    _list(ctx, filters, limit, no_pager, as_json)


def _list(
    ctx: typer.Context, filters: SessionFilters, limit: int, no_pager: bool, as_json: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.conversations import sessions as core
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    flt = filters.to_filter(store, limit=limit)
    result = core.listing_json(store, flt) if as_json else core.listing(store, flt)
    view.none_listed(result, flt)
    render.emit(result, as_json, view.listing, pager=not no_pager, flt=flt)
