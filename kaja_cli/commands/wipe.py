"""`kaja wipe`: delete Kaja's local data, or everything one owner stored."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import DryRun, Json, Yes
from kaja_cli.completion.hooks import hook


def wipe(
    ctx: typer.Context,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner",
            metavar="ID",
            autocompletion=hook("owner"),
            help="Erase only what this owner stored (telegram:123, widget:ab12, terminal).",
        ),
    ] = None,
    settings: Annotated[
        bool,
        typer.Option("--settings", help="Delete the settings file too (it stays otherwise)."),
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Delete Kaja's local data: everything, or one owner's (--owner).

    Without --owner: the shared file with its -wal, -shm and -journal, the
    image folders under files/ beside it, the side databases (cache.db,
    db-stats.db, web-auth.db) with theirs, and a split artifacts file. Only
    what Kaja created goes: other files stay, a symlink loses the link and
    keeps its target. settings.toml stays unless --settings. Refused (exit 5)
    for a --db that is not a Kaja database; refused (exit 4) while Kaja or
    the Telegram bot has any of those files open. An interrupted wipe is
    finished by the next one.

    With --owner: their sessions with every row hanging off them, their
    notes, dataset answers and versions and search entries, in one
    transaction (it waits for the agent like any writer), then their image
    folders. Other owners are untouched. Exit 3 if they have nothing here.

    It shows what it will delete and asks; --yes skips the question, and
    without a terminal it refuses (exit 5) unless --yes is given.

    In cloud mode it drops kaja's tables and functions on the server, and its
    schema once nothing else is in it: what is not Kaja's stays (kaja sync's
    shared ledger, another program's objects), and something that uses kaja's
    tables refuses it (exit 5). Never the database. Only with --yes; refused
    (exit 4) while another session holds kaja's tables. --owner erases them there.
    """
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.side import profiler
    from kaja_cli.errors import UsageError

    # No profile of its own: a whole wipe deletes db-stats.db, and one owner's
    # erasure (or refusal) leaves every other file as it was.
    profiler.discard()
    if owner is None:
        _wipe_all(ctx, settings=settings, yes=yes, dry_run=dry_run, as_json=as_json)
        return
    if settings:
        raise UsageError("--settings deletes the settings file in a whole wipe, not with --owner")
    _wipe_owner(ctx, Owner.parse(owner), yes=yes, dry_run=dry_run, as_json=as_json)


def _wipe_all(ctx: typer.Context, *, settings: bool, yes: bool, dry_run: bool, as_json: bool):
    from kaja_cli import render
    from kaja_cli.core.care import wipe as core
    from kaja_cli.render import wipe as view

    store = store_of(ctx)
    plan = core.plan(store, settings=settings)
    if plan.refusals:
        render.emit(plan, as_json, dry_run=dry_run)
        plan.check()
    if plan.nothing_to_do:
        render.emit(plan, as_json, dry_run=dry_run)
        view.nothing(plan, store.where())
        return
    render.preview(as_json, view.plan, plan)
    if dry_run:
        render.emit(plan, as_json, view.wiped, dry_run=True)
        return
    if plan.needs_yes and not yes:
        from kaja_cli.errors import Refused

        raise Refused(
            "wiping the server's store drops it for everyone who uses it: only with --yes",
            hint="rerun with --yes once you are sure (--dry-run shows what goes)",
        )
    render.confirm(view.question(plan), assume_yes=yes)
    render.emit(plan, as_json, view.wiped, done=core.execute(store, plan))


def _wipe_owner(ctx: typer.Context, who, *, yes: bool, dry_run: bool, as_json: bool) -> None:
    from functools import partial

    from kaja_cli import render
    from kaja_cli.core import qdrant
    from kaja_cli.core.care import wipe as core
    from kaja_cli.errors import NotFound
    from kaja_cli.render import wipe as view

    store = store_of(ctx)
    try:
        plan = core.plan_owner(store, who)
    except NotFound:
        # Nothing in the store, maybe points a wipe could not delete: those go now.
        if not _forget_leftover_points(store, who, yes=yes, dry_run=dry_run):
            raise
        return
    # Qdrant is asked before anything is erased: if it does not answer, nothing is.
    points = qdrant.plan_forget(store, qdrant.owner_sessions(store, who), owner=who)
    render.preview(as_json, view.owner_plan, plan, points)
    if dry_run:
        found = points.points if points else None
        render.emit(plan, as_json, view.erased, dry_run=True, qdrant_points=found)
        return
    render.confirm(view.owner_question(plan), assume_yes=yes)
    done = core.execute_owner(store, who)
    gone = qdrant.forget(points) if points else None  # after the commit
    render.emit(plan, as_json, partial(view.erased, points=points), done=done, qdrant_points=gone)


def _forget_leftover_points(store, who, *, yes: bool, dry_run: bool) -> bool:
    """An owner with nothing in the store but points in Qdrant (a wipe that could
    not reach it after its commit): delete those. False when there are none."""
    from kaja_cli import render
    from kaja_cli.core import qdrant
    from kaja_cli.render import wipe as view

    if who.is_terminal or qdrant.target(store.paths) is None:
        return False
    points = qdrant.plan_forget(store, [], owner=who)
    if points is None or not points.points:
        return False
    if not dry_run:
        render.confirm(f"Delete {view.leftover_points(who, points)}? This cannot be undone.",
                       assume_yes=yes)  # fmt: skip
    gone = None if dry_run else qdrant.forget(points)
    view.leftover_points_gone(who, points, gone, dry_run=dry_run)
    return True
