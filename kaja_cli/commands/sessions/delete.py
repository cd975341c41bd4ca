"""`kaja sessions delete`: sessions with everything that hangs off them."""

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, JsonDone, OwnerOpt, SessionIds, Yes


def delete(
    ctx: typer.Context,
    ids: SessionIds,
    owner: OwnerOpt = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Delete sessions with everything that hangs off them.

    Their messages, tool calls, summaries, model calls, timeline events and
    search entries go in one transaction, then their image folders (run it
    again if it was interrupted in between: it removes the folders left).
    Every id must be the acting owner's (the terminal unless --owner); if one
    is not, nothing is deleted. Asks first; with no terminal to ask, refuses
    unless --yes.
    """
    from functools import partial

    from kaja_cli import render
    from kaja_cli.core import qdrant
    from kaja_cli.core.conversations import sessions as core
    from kaja_cli.render import sessions as view

    store = store_of(ctx)
    acting = store.owner(owner)
    plan = core.plan_deletion(store, ids, acting)
    # Qdrant is asked before anything is deleted: if it does not answer, nothing is.
    points = qdrant.plan_forget(store, [s.id for s in plan.sessions])
    view.delete_plan(plan, yes=yes and not dry_run)
    if dry_run:
        would = points.points if points else None
        render.emit(plan.would_do(), as_json, partial(view.deleted, points=points),
                    qdrant_points=would, dry_run=True)  # fmt: skip
        if plan.unknown is not None:  # as the real run ends
            raise plan.unknown
        return
    render.confirm(f"Delete {view.deletion(plan, points)}?", assume_yes=yes)
    done = core.delete(store, plan, acting)
    gone = qdrant.forget(points) if points else None  # after the commit
    render.emit(done, as_json, partial(view.deleted, points=points), qdrant_points=gone)
    if plan.unknown is not None:  # an id that named nothing (the leftovers are gone now)
        raise plan.unknown
