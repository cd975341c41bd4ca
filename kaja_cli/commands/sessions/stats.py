"""`kaja sessions stats`: how big the conversations are, by owner, model,
persona and month."""

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import Json, NoPager, SessionFilters, session_filters


@session_filters
def stats(
    ctx: typer.Context, filters: SessionFilters, no_pager: NoPager = False, as_json: Json = False
) -> None:
    """Sessions, messages, tokens and bytes by owner, model, persona and month.

    Every owner's sessions unless --owner (the filters are the listing's);
    in cloud mode with `\\[memory] account` set, the account's unless
    --all-owners. Archived ones left out unless --archived; then the largest sessions,
    their image files, the search index's size and the database file's.
    Bytes are the text of the messages as stored. Piped, every row is
    tab-separated with its section first (`kaja sessions stats | grep ^owner`).
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import stats as core
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    flt = filters.to_filter(store, everyone_by_default=True)
    result = core.stats(store, flt)
    view.no_store(result)
    render.emit(result, as_json, view.stats, pager=not no_pager, flt=flt)
