"""`kaja sessions rename`, `archive` and `unarchive`: looking after sessions one by one."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, JsonDone, OwnerOpt, SessionIds
from kaja_cli.completion.hooks import hook


def rename(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="A session id or unique prefix.", autocompletion=hook("session")
        ),
    ],
    title: Annotated[str, typer.Argument(metavar="TITLE", help="The new title (quote it).")],
    owner: OwnerOpt = None,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Give a session a new title.

    The session must be the acting owner's (you unless --owner: the terminal,
    or in cloud mode the account).
    Its last-updated time stays, so the listing's order does not move.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import archive
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    done = archive.rename(store, session_id, title, store.owner(owner), dry_run=dry_run)
    render.emit(done, as_json, view.renamed, dry_run=dry_run)


def archive(
    ctx: typer.Context,
    ids: SessionIds,
    owner: OwnerOpt = None,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Archive sessions: out of `kaja sessions`, `resume -c` and `search`, not deleted.

    Every id must be the acting owner's (you unless --owner), or
    nothing changes. `kaja sessions --archived` lists them, `resume ID`
    still replays one, `search --archived` searches them too, and
    `sessions unarchive` brings them back. The agent's own tables are not
    touched: kaja keeps the archive in a table of its own.
    """
    _archive(ctx, ids, owner, as_json, True, dry_run)


def unarchive(
    ctx: typer.Context,
    ids: SessionIds,
    owner: OwnerOpt = None,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Bring archived sessions back into `kaja sessions`, `resume -c` and `search`."""
    _archive(ctx, ids, owner, as_json, False, dry_run)


def _archive(
    ctx: typer.Context, ids: list[str], owner: str | None, as_json: bool, on: bool, dry_run: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.conversations import archive
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    done = archive.set_archived(store, ids, store.owner(owner), archived=on, dry_run=dry_run)
    render.emit(done, as_json, view.archived, archived=on, dry_run=dry_run)
