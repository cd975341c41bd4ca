"""What `kaja wipe` prints for a person or a pipe: the plan, the question and
what was deleted, for a whole wipe and for one owner's (the JSON is the
plans' own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core.care.wipe import Kind, Part
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.care.wipe import Item, OwnerPlan, OwnerResult, WipePlan, WipeResult
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.qdrant import Forget

_SIZELESS = ("folder", "function", "extension", "schema")  # Kind values: no size to show


def _count(items: list[Item]) -> str:
    return render.plural(len(items), "path")


def kept(plan: WipePlan) -> None:
    for k in plan.kept:
        render.note(f"keeping {k.path}: {k.reason}")


def nothing(plan: WipePlan, where: str) -> None:
    render.note(f"nothing to delete: no Kaja store at {where}")
    kept(plan)


def plan(plan: WipePlan) -> None:
    """One row per path (on a terminal a session's image folders are one row), what stays."""
    rows = []
    items = plan.items
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
        [Col("what", style="bold"), Col("path"), Col("size", justify="right")],
        rows,
        plain_rows=[[i.where, i.kind, i.size] for i in items],
    )
    kept(plan)
    if plan.leftovers is not None:
        render.note(f"this wipe also finishes: {'; '.join(plan.leftovers.details)}")


def question(plan: WipePlan) -> str:
    return (
        f"Delete these {_count(plan.items)} ({render.human_size(plan.size)})?"
        " This cannot be undone."
    )


def wiped(plan: WipePlan, done: WipeResult | None = None, *, dry_run: bool = False) -> None:
    if done is None:
        render.note("dry run: nothing was deleted")
        return
    size = sum(i.size for i in done.deleted)
    render.note(f"deleted {_count(done.deleted)} ({render.human_size(size)})")


# --- one owner ------------------------------------------------------------------------------------
def owner_plan(plan: OwnerPlan, points: Forget | None) -> None:
    """Rows per table, the image folders, what stays; the points in Qdrant."""
    folders = plan.image_folders
    size = sum(i.size for i in folders)
    render.table(
        [Col("table", style="bold"), Col("rows", justify="right")],
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
    if points is not None:
        render.note(f"and {render.plural(points.points, 'point')} in Qdrant"
                    f" ({points.where.collection} at {points.where.where})")  # fmt: skip


def owner_question(plan: OwnerPlan) -> str:
    n_folders = len(plan.image_folders)
    return (
        f"Erase everything stored for {plan.owner.label}"
        f" ({render.plural(plan.total_rows, 'row')}, {render.plural(n_folders, 'image folder')})?"
        " This cannot be undone."
    )


def erased(
    plan: OwnerPlan, done: OwnerResult | None = None, *, dry_run: bool = False,
    qdrant_points: int | None = None, points: Forget | None = None,
) -> None:  # fmt: skip
    if done is None:
        render.note("dry run: nothing was erased")
        return
    who = plan.owner
    if points is not None:
        render.note(f"deleted {render.plural(qdrant_points or 0, 'point')} of {who.label} from"
                    f" Qdrant ({points.where.collection} at {points.where.where})")  # fmt: skip
    n = len(done.image_folders)
    render.note(
        f"erased {render.plural(sum(done.rows.values()), 'row')} and {render.plural(n, 'image folder')}"
        f" of {who.label}"
    )
    if not done.index_purged:
        render.note(
            "the search index finds none of it, but keeps their words on disk until it is"
            " merged: run `kaja search --reindex` once Kaja is closed"
        )


def leftover_points(who: Owner, points: Forget) -> str:
    return f"{render.plural(points.points, 'point')} of {who.label} in Qdrant"


def leftover_points_gone(who: Owner, points: Forget, gone: int | None, *, dry_run: bool) -> None:
    if dry_run:
        render.note(f"nothing in the store, but {leftover_points(who, points)};"
                    " dry run: nothing was erased")  # fmt: skip
        return
    render.note(f"nothing in the store; deleted {render.plural(gone or 0, 'point')} of {who.label}"
                f" from Qdrant ({points.where.collection} at {points.where.where})")  # fmt: skip
