"""What `kaja optimize` prints for a person or a pipe (the JSON is the
result's own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.care.optimize import OptimizeResult


def optimized(result: OptimizeResult, *, dry_run: bool = False) -> None:
    """Each file's size before and after, then what was done (on stderr);
    `dry_run`: each file's size now, then what would be done."""
    if dry_run:
        _plan(result)
        return
    rows, plain = [], []
    for f in result.files:
        rows.append([f.name, str(f.path), render.human_size(f.bytes_before),
                     render.human_size(f.bytes_after)])  # fmt: skip
        plain.append([f.name, str(f.path), f.bytes_before, f.bytes_after])
    render.table(
        [Col("database", style="bold"), Col("path"), Col("before", justify="right"),
         Col("after", justify="right")],
        rows,
        plain_rows=plain,
    )  # fmt: skip
    _notes(result)


def _notes(result: OptimizeResult) -> None:
    if result.tables is not None:  # cloud mode: the server's tables
        render.note(
            f"VACUUM (ANALYZE) of {render.plural(len(result.tables), 'table')} of kaja's schema:"
            f" {render.human_size(result.bytes_before)} → {render.human_size(result.bytes_after)}"
            " (the space freed inside them goes to new rows)"
        )
        return
    if not result.changed:
        render.note(
            f"nothing to do: {render.plural(len(result.files), 'database')} already optimized"
            " (the search index in one segment, the statistics current, no -wal to fold in);"
            " no file was changed"
        )
        return
    for f in result.files:
        if f.index is not None and (f.index.merge_steps or f.index.optimized):
            i = f.index
            how = (
                "into one (optimize)"
                if i.optimized
                else f"in {render.plural(i.merge_steps, 'step')}"
            )
            render.note(
                f"{f.path.name}: search index merged {how}: "
                f"{render.plural(i.segments_before, 'segment')} → {i.segments_after}"
            )
            if not i.optimized and i.segments_after > 1:
                render.note(
                    f"{f.path.name}: another process has it open, so the index was merged in"
                    " short steps only; with Kaja closed, `kaja optimize` merges it into one"
                )
        if f.vacuum_index == "rebuilt":
            render.note(f"{f.path.name}: VACUUM moved the messages: the search index was rebuilt")
        if not f.checkpointed:
            render.note(
                f"{f.path.name}: another process is reading it: its -wal keeps"
                f" {render.human_size(f.wal_bytes)} until it is done"
            )
    free = sum(f.free_bytes for f in result.files)
    if result.bytes_after > result.bytes_before and free:
        render.note(
            f"the files grew: new statistics, and the merged index written before the old"
            f" segments were freed; {render.human_size(free)} inside them is free for new rows"
            " (`kaja optimize --vacuum` gives it back to the disk)"
        )
    steps = "search index, ANALYZE, " + ("VACUUM, " if result.vacuum else "") + "checkpoint"
    render.note(
        f"optimized {render.plural(len(result.files), 'database')} ({steps}): "
        f"{render.human_size(result.bytes_before)} → {render.human_size(result.bytes_after)}"
    )


def _plan(plan: OptimizeResult) -> None:
    rows = [[f.name, str(f.path), render.human_size(f.bytes_before)] for f in plan.files]
    plain = [[f.name, str(f.path), f.bytes_before] for f in plan.files]
    render.table([Col("database", style="bold"), Col("path"), Col("size", justify="right")],
                 rows, plain_rows=plain)  # fmt: skip
    if plan.tables is not None:
        render.note(
            f"dry run: would VACUUM (ANALYZE) {render.plural(len(plan.tables), 'table')} of"
            f" kaja's schema ({render.human_size(plan.bytes_before)}); nothing was changed"
        )
        return
    for f in plan.files:
        steps = []
        if f.index is not None and f.index.segments_before > 1:
            n = render.plural(f.index.segments_before, "segment")
            steps.append(f"merge the search index ({n})")
        steps.append("run ANALYZE")
        if plan.vacuum:
            steps.append(f"VACUUM ({render.human_size(f.free_bytes)} free inside)")
        if f.wal_frames:
            steps.append(f"fold its -wal in ({render.human_size(f.wal_bytes)})")
        render.note(f"dry run: {f.path.name}: would {', '.join(steps)}")
    render.note(
        f"dry run: would optimize {render.plural(len(plan.files), 'database')}"
        f" ({render.human_size(plan.bytes_before)}); nothing was changed"
    )
