"""`kaja optimize`: merge the search index, ANALYZE, checkpoint, and optionally VACUUM."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of

if TYPE_CHECKING:
    from kaja_cli.core.care.optimize import OptimizeResult


def optimize(
    ctx: typer.Context,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum", help="Also rewrite each file without its free pages (Kaja must be closed)."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Keep the store quick and small: search index, ANALYZE, WAL checkpoint.

    For each database: the search index's segments are merged in short steps
    (and into one when no other process has the file open), ANALYZE tells
    SQLite's planner how large each table is, and the -wal is folded into the
    database and emptied (TRUNCATE). --vacuum also rewrites each file without
    its free pages, only when no process has it open (exit 4 otherwise,
    before anything is done). Prints each file's size before and after. Works
    beside a running Kaja (without --vacuum); a lock held past the busy
    timeout stops it (exit 4) with the steps before it done. Another
    program's database is refused (exit 5).
    """
    from kaja_cli import render
    from kaja_cli.core.care import optimize as core
    from kaja_cli.core.side import profiler

    # No profile of its own: writing it would undo the checkpoint just made
    # (db-stats.db's -wal grows again), and a refusal changes no file.
    profiler.discard()
    store = store_of(ctx)
    result = core.optimize(store, vacuum=vacuum)
    if as_json:
        render.emit_json(_json(result))
        return
    _table(result)
    _notes(result)


def _table(result: "OptimizeResult") -> None:
    from kaja_cli import render

    rows, plain = [], []
    for f in result.files:
        rows.append([f.name, str(f.path), render.human_size(f.bytes_before),
                     render.human_size(f.bytes_after)])  # fmt: skip
        plain.append([f.name, str(f.path), f.bytes_before, f.bytes_after])
    render.table(
        [render.Col("database", style="bold"), render.Col("path"),
         render.Col("before", justify="right"), render.Col("after", justify="right")],
        rows,
        plain_rows=plain,
    )  # fmt: skip


def _notes(result: "OptimizeResult") -> None:
    from kaja_cli import render

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


def _json(result: "OptimizeResult") -> dict:
    return {
        "action": "optimize",
        "vacuum": result.vacuum,
        "bytes_before": result.bytes_before,
        "bytes_after": result.bytes_after,
        "databases": [
            {
                "name": f.name, "path": str(f.path), "bytes_before": f.bytes_before,
                "bytes_after": f.bytes_after,
                "search_index": None if f.index is None else {
                    "segments_before": f.index.segments_before,
                    "segments_after": f.index.segments_after,
                    "merge_steps": f.index.merge_steps, "optimized": f.index.optimized,
                },
                "analyzed": f.analyzed, "vacuumed": f.vacuumed,
                "search_index_after_vacuum": f.vacuum_index,
                "checkpointed": f.checkpointed, "wal_bytes": f.wal_bytes,
                "wal_pages": f.wal_frames, "free_bytes": f.free_bytes, "changed": f.changed,
            }
            for f in result.files
        ],
        "changed": result.changed,
    }  # fmt: skip
