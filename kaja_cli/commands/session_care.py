"""`kaja sessions rename`, `archive` and `unarchive`: looking after sessions
one by one (registered on the `sessions` group)."""

from typing import Annotated

import typer

from kaja_cli.commands import session_options as opt
from kaja_cli.commands import store_of
from kaja_cli.commands.sessions import app
from kaja_cli.completion.hooks import hook

Ids = Annotated[
    list[str],
    typer.Argument(
        metavar="ID...", help="Session ids or unique prefixes.", autocompletion=hook("session")
    ),
]
JsonDone = Annotated[bool, typer.Option("--json", help="Print what was done as one JSON document.")]


@app.command("rename")
def rename(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="A session id or unique prefix.", autocompletion=hook("session")
        ),
    ],
    title: Annotated[str, typer.Argument(metavar="TITLE", help="The new title (quote it).")],
    owner: opt.ActingOwner = None,
    as_json: JsonDone = False,
) -> None:
    """Give a session a new title.

    The session must be the acting owner's (the terminal unless --owner).
    Its last-updated time stays, so the listing's order does not move.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import archive
    from kaja_cli.core.owners import Owner

    done = archive.rename(store_of(ctx), session_id, title, Owner.parse(owner))
    if as_json:
        render.emit_json(
            {"id": done.session.id, "old_title": done.old_title, "title": done.new_title}
        )
        return
    old, new = render.text(done.old_title), render.text(done.new_title)  # no control character
    render.note(f"renamed {done.session.id}: {old or '(untitled)'} → {new}")


def _archive(ctx: typer.Context, ids: list[str], owner: str | None, as_json: bool, on: bool):
    from kaja_cli import render
    from kaja_cli.core.conversations import archive
    from kaja_cli.core.owners import Owner

    done = archive.set_archived(store_of(ctx), ids, Owner.parse(owner), archived=on)
    verb = "archived" if on else "unarchived"
    if as_json:
        render.emit_json(
            {
                verb: [{"id": s.id, "title": s.title} for s in done.changed],
                "unchanged": [{"id": s.id, "title": s.title} for s in done.unchanged],
            }
        )
        return
    for s in done.changed:
        render.note(f"{verb} {s.id}  {render.text(s.title) or '(untitled)'}")
    for s in done.unchanged:
        render.note(f"{s.id} was already {verb}")


@app.command("archive")
def archive_(
    ctx: typer.Context, ids: Ids, owner: opt.ActingOwner = None, as_json: JsonDone = False
) -> None:
    """Archive sessions: out of `kaja sessions`, `resume -c` and `search`, not deleted.

    Every id must be the acting owner's (the terminal unless --owner), or
    nothing changes. `kaja sessions --archived` lists them, `resume ID`
    still replays one, `search --archived` searches them too, and
    `sessions unarchive` brings them back. The agent's own tables are not
    touched: kaja keeps the archive in a table of its own.
    """
    _archive(ctx, ids, owner, as_json, True)


@app.command("unarchive")
def unarchive(
    ctx: typer.Context, ids: Ids, owner: opt.ActingOwner = None, as_json: JsonDone = False
) -> None:
    """Bring archived sessions back into `kaja sessions`, `resume -c` and `search`."""
    _archive(ctx, ids, owner, as_json, False)
