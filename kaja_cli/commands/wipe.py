"""`kaja wipe`: delete Kaja's local data, or everything one owner stored."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.care.wipe import Item, Leftovers, OwnerPlan, WipePlan


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
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be deleted; delete nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
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

    store = store_of(ctx)
    plan = core.plan(store, settings=settings)
    if plan.refusals:
        if as_json:
            render.emit_json(_plan_json(plan, plan.items, plan.kept, dry_run=dry_run, done=False))
        plan.check()
    if plan.nothing_to_do:
        if as_json:
            render.emit_json(_plan_json(plan, [], plan.kept, dry_run=dry_run, done=False))
        render.note(f"nothing to delete: no Kaja store at {store.where()}")
        _notes_kept(plan)
        return
    if not as_json:
        _show_items(plan.items)
        _notes_kept(plan)
        if plan.leftovers is not None:
            render.note(f"this wipe also finishes: {'; '.join(plan.leftovers.details)}")
    if dry_run:
        if as_json:
            render.emit_json(_plan_json(plan, plan.items, plan.kept, dry_run=True, done=False))
        else:
            render.note("dry run: nothing was deleted")
        return
    if plan.needs_yes and not yes:
        from kaja_cli.errors import Refused

        raise Refused(
            "wiping the server's store drops it for everyone who uses it: only with --yes",
            hint="rerun with --yes once you are sure (--dry-run shows what goes)",
        )
    render.confirm(
        f"Delete these {_count(plan.items)} ({render.human_size(plan.size)})?"
        " This cannot be undone.",
        assume_yes=yes,
    )
    result = core.execute(store, plan)
    if as_json:
        render.emit_json(_plan_json(plan, result.deleted, result.kept, dry_run=False, done=True))
        return
    size = sum(i.size for i in result.deleted)
    render.note(f"deleted {_count(result.deleted)} ({render.human_size(size)})")


def _count(items: "list[Item]") -> str:
    from kaja_cli import render

    return render.plural(len(items), "path")


def _show_items(items: "list[Item]") -> None:
    """One row per path; on a terminal a session's image folders are one row."""
    from kaja_cli import render
    from kaja_cli.core.care.wipe import Kind, Part

    rows = []
    trees = [i for i in items if i.group is Part.IMAGES and i.kind is Kind.TREE]
    for item in items:
        if trees and item is trees[0]:
            n = len(trees)
            files = sum(t.files for t in trees)
            rows.append(
                [
                    f"images of {render.plural(n, 'session')}",
                    str(item.path.parent),
                    f"{render.human_size(sum(t.size for t in trees))}"
                    f" ({render.plural(files, 'file')})",
                ]
            )
        elif item not in trees:
            size = "-" if item.kind in _SIZELESS else render.human_size(item.size)
            rows.append([item.what, item.where, size])
    render.table(
        [render.Col("what", style="bold"), render.Col("path"),
         render.Col("size", justify="right")],
        rows,
        plain_rows=[[i.where, i.kind, i.size] for i in items],
    )  # fmt: skip


_SIZELESS = ("folder", "function", "extension", "schema")  # Kind values: no size to show


def _notes_kept(plan: "WipePlan") -> None:
    from kaja_cli import render

    for k in plan.kept:
        render.note(f"keeping {k.path}: {k.reason}")


def _leftovers_json(leftovers: "Leftovers | None") -> dict | None:
    if leftovers is None:
        return None
    return {
        "summary": leftovers.summary,
        "details": list(leftovers.details),
        "commands": list(leftovers.commands),
        "remaining": [str(p) for p in leftovers.remaining],
    }


def _plan_json(plan: "WipePlan", items: list, kept: list, *, dry_run: bool, done: bool) -> dict:
    return {
        "action": "wipe",
        "dry_run": dry_run,
        "done": done,
        "paths": [
            {"path": i.where, "what": i.what, "kind": i.kind, "size": i.size, "files": i.files}
            for i in items
        ],
        "size": sum(i.size for i in items),
        "kept": [{"path": str(k.path), "reason": k.reason} for k in kept],
        "refused": [
            {"path": str(r.path), "reason": r.reason, "exit": int(r.status)} for r in plan.refusals
        ],
        "interrupted": _leftovers_json(plan.leftovers),
    }


def _wipe_owner(ctx: typer.Context, who, *, yes: bool, dry_run: bool, as_json: bool) -> None:
    from kaja_cli import render
    from kaja_cli.core import qdrant
    from kaja_cli.core.care import wipe as core
    from kaja_cli.errors import NotFound

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
    if not as_json:
        _show_owner(plan)
        if points is not None:
            render.note(f"and {render.plural(points.points, 'point')} in Qdrant"
                        f" ({points.where.collection} at {points.where.where})")  # fmt: skip
    if dry_run:
        if as_json:
            folders = [i.path for i in plan.image_folders]
            render.emit_json(_owner_json(plan, plan.rows, folders, dry_run=True)
                             | {"qdrant_points": points.points if points else None})  # fmt: skip
        else:
            render.note("dry run: nothing was erased")
        return
    n_folders = len(plan.image_folders)
    render.confirm(
        f"Erase everything stored for {who.label} ({render.plural(plan.total_rows, 'row')},"
        f" {render.plural(n_folders, 'image folder')})? This cannot be undone.",
        assume_yes=yes,
    )
    result = core.execute_owner(store, who)
    gone = qdrant.forget(points) if points else None  # after the commit
    if as_json:
        render.emit_json(
            _owner_json(
                plan,
                result.rows,
                result.image_folders,
                dry_run=False,
                index_purged=result.index_purged,
            )
            | {"qdrant_points": gone}
        )
        return
    if points is not None:
        render.note(f"deleted {render.plural(gone or 0, 'point')} of {who.label} from Qdrant"
                    f" ({points.where.collection} at {points.where.where})")  # fmt: skip
    n = len(result.image_folders)
    render.note(
        f"erased {render.plural(sum(result.rows.values()), 'row')} and {render.plural(n, 'image folder')}"
        f" of {who.label}"
    )
    if not result.index_purged:
        render.note(
            "the search index finds none of it, but keeps their words on disk until it is"
            " merged: run `kaja search --reindex` once Kaja is closed"
        )


def _forget_leftover_points(store, who, *, yes: bool, dry_run: bool) -> bool:
    """An owner with nothing in the store but points in Qdrant (a wipe that could
    not reach it after its commit): delete those. False when there are none."""
    from kaja_cli import render
    from kaja_cli.core import qdrant

    if who.is_terminal or qdrant.target(store.paths) is None:
        return False
    points = qdrant.plan_forget(store, [], owner=who)
    if points is None or not points.points:
        return False
    what = f"{render.plural(points.points, 'point')} of {who.label} in Qdrant"
    if dry_run:
        render.note(f"nothing in the store, but {what}; dry run: nothing was erased")
        return True
    render.confirm(f"Delete {what}? This cannot be undone.", assume_yes=yes)
    gone = qdrant.forget(points)
    render.note(f"nothing in the store; deleted {render.plural(gone, 'point')} of {who.label}"
                f" from Qdrant ({points.where.collection} at {points.where.where})")  # fmt: skip
    return True


def _show_owner(plan: "OwnerPlan") -> None:
    from kaja_cli import render

    folders = plan.image_folders
    size = sum(i.size for i in folders)
    render.table(
        [render.Col("table", style="bold"), render.Col("rows", justify="right")],
        [[t, n] for t, n in plan.rows.items()]
        + [["image folders", f"{len(folders)} ({render.human_size(size)})"]],
        plain_rows=[[t, n] for t, n in plan.rows.items()] + [["image_folders", len(folders)]],
    )
    render.note("search entries follow the messages (the index's triggers)")
    for m in plan.mentions:
        render.note(
            f"keeping {render.plural(m.rows, f'{m.table} row')} that"
            f" {render.noun(m.rows, 'refers', 'refer')} to {plan.owner.label} ({m.reason})"
        )
    if plan.leftovers is not None:
        render.note(f"this also finishes: {plan.leftovers.summary}")
    if plan.images_link is not None:
        render.note(
            f"keeping their image folders: {plan.images_link} is a symbolic link,"
            " and kaja deletes nothing through one"
        )


def _owner_json(
    plan: "OwnerPlan", rows: dict, folders: list, *, dry_run: bool, index_purged: bool = False
) -> dict:
    return {
        "action": "wipe-owner",
        "owner": plan.owner.label,
        "dry_run": dry_run,
        "done": not dry_run,
        "rows": rows,
        "image_folders": [str(p) for p in folders],
        "images_link": None if plan.images_link is None else str(plan.images_link),
        **({} if dry_run else {"index_purged": index_purged}),
        "kept_rows": [
            {"table": m.table, "rows": m.rows, "reason": m.reason} for m in plan.mentions
        ],
        "interrupted": _leftovers_json(plan.leftovers),
    }
