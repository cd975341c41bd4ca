"""`kaja migrate`: import the legacy per-feature files and conversation files, once."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of

if TYPE_CHECKING:
    from kaja_cli.core.care.legacy import Plan


def migrate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be imported.")
    ] = False,
    memory: Annotated[
        Path | None,
        typer.Option(
            "--memory",
            metavar="DIR",
            help="The conversation files' folder (.memory/<resource>/threads/); "
            "default: .memory in the state dir.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Import the legacy files into the shared file, once; the old files stay as they are.

    The per-feature files of older versions in the state dir (usage.db,
    experience.db, background_tasks.db, schedules.db, triggers.db,
    artifacts.db): their tables are copied keeping their ids, only the
    columns both sides have, rows already there left as they are. And the
    conversation files (.memory/<resource>/threads/<thread>.json or .jsonl,
    with .meta.json): each thread becomes a session of that owner, its
    messages indexed for search. Each file is recorded in kaja_migrations and
    never imported twice; nothing is deleted, so the old files stay as a
    rollback copy. One transaction: interrupted, it leaves nothing half done.
    """
    from kaja_cli import render
    from kaja_cli.core.care import legacy

    store = store_of(ctx)
    where = None if memory is None else Path(memory).expanduser().absolute()
    plan = legacy.plan(store, where)
    if not dry_run and plan.to_import:
        legacy.execute(store, plan)
    if as_json:
        render.emit_json(_as_json(plan, dry_run))
    else:
        _show(plan)
        _say(plan, dry_run)
    if plan.skipped:
        _fail_for(plan.skipped, dry_run)


def _fail_for(skipped: list, dry_run: bool) -> None:
    """Exit 1 when a file was (or would be) skipped: the import is not complete
    until it is fixed or moved aside, and a script should know."""
    from kaja_cli import render
    from kaja_cli.errors import Failed

    files = render.plural(len(skipped), "file")
    it = render.noun(len(skipped), "it", "them")
    done = "would not be imported" if dry_run else "not imported"
    raise Failed(f"{files} skipped, {done}",
                 hint=f"fix {it} or move {it} aside, then run `kaja migrate` again")  # fmt: skip


def _rows(plan: "Plan") -> tuple[list, list]:
    """Table rows (a person's) and plain rows (a script's): one per table and thread."""
    from kaja_cli.core import clock
    from kaja_cli.core.care.legacy import Status

    shown, plain = [], []
    for f in plan.files:
        if f.status is not Status.IMPORT:
            state = (
                "imported " + clock.day_of(f.imported_at or "")
                if f.status is Status.IMPORTED
                else f.reason
            )
            shown.append([f.path.name, "", "", "", (state or "").strip()])
            plain.append(
                ["file", f.path, "", "", "", "", f.status, f.reason or f.imported_at or ""]
            )
            continue
        for t in f.tables:
            into = t.target if t.target == t.source else f"{t.source} → {t.target}"
            shown.append([f.path.name, into, f"{t.rows:,}", _n(t.copied), _table_note(t)])
            plain.append(["file", f.path, t.source, t.target, t.rows, _blank(t.copied), f.status,
                          ",".join(t.left_out)])  # fmt: skip
        if f.unknown_tables:
            shown.append(
                [
                    f.path.name,
                    ", ".join(f.unknown_tables),
                    "",
                    "",
                    "left out: not a table kaja imports from this file",
                ]
            )
    for t in plan.threads:
        name = f"{t.resource_id}/{t.thread_id}"
        if t.status is not Status.IMPORT:
            state = (
                "imported " + clock.day_of(t.imported_at or "")
                if t.status is Status.IMPORTED
                else t.reason
            )
            shown.append([name, "", "", "", (state or "").strip()])
        else:
            shown.append([name, f"session {t.session_id}", f"{len(t.messages):,}", _n(t.copied),
                          t.title or ""])  # fmt: skip
        plain.append(["conversation", t.path, t.resource_id, t.session_id or "",
                      len(t.messages), _blank(t.copied), t.status, t.reason or t.imported_at or ""])  # fmt: skip
    return shown, plain


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _blank(value: int | None) -> object:
    return "" if value is None else value


def _table_note(t) -> str:
    notes = []
    if t.copied is not None and t.copied < t.rows:
        notes.append(f"{t.rows - t.copied:,} already there")
    if t.left_out:
        notes.append("columns left out: " + ", ".join(t.left_out))
    return "; ".join(notes)


def _show(plan: "Plan") -> None:
    from kaja_cli import render

    shown, plain = _rows(plan)
    if not shown:
        return
    Col = render.Col
    render.table(
        [Col("from", style="bold"), Col("into"), Col("rows", "right"), Col("added", "right"),
         Col("", drop=1)],
        shown,
        plain_rows=plain,
    )  # fmt: skip


def _say(plan: "Plan", dry_run: bool) -> None:
    from kaja_cli import render
    from kaja_cli.core.care.legacy import Status

    files = [f for f in plan.files if f.status is Status.IMPORT]
    threads = [t for t in plan.threads if t.status is Status.IMPORT]
    if not files and not threads:
        done = sum(f.status is Status.IMPORTED for f in plan.files) + sum(
            t.status is Status.IMPORTED for t in plan.threads
        )
        again = f" ({render.plural(done, 'file')} imported earlier)" if done else ""
        render.note(f"nothing to import{again}: no legacy files waiting in "
                    f"{plan.shared.parent} or {plan.memory}")  # fmt: skip
    else:
        what = _what(plan, files, threads)
        if dry_run:
            render.note(f"dry run: would import {what} into {plan.shared}; nothing was changed")
        else:
            render.note(f"imported {what} into {plan.shared}; the old files are kept as they are"
                        " (a rollback copy)")  # fmt: skip
    skipped = [f for f in plan.files if f.status is Status.SKIPPED]
    skipped += [t for t in plan.threads if t.status is Status.SKIPPED]
    for item in skipped:
        render.note(f"skipped {item.path}: {item.reason}")


def _what(plan: "Plan", files: list, threads: list) -> str:
    from kaja_cli import render

    parts = []
    if files:
        rows = sum(t.copied if t.copied is not None else t.rows for f in files for t in f.tables)
        parts.append(f"{render.plural(len(files), 'legacy file')} ({render.plural(rows, 'row')})")
    if threads:
        messages = sum(t.copied if t.copied is not None else len(t.messages) for t in threads)
        parts.append(f"{render.plural(len(threads), 'conversation')} "
                     f"({render.plural(messages, 'message')})")  # fmt: skip
    return " and ".join(parts)


def _as_json(plan: "Plan", dry_run: bool) -> dict:
    return {
        "store": str(plan.shared), "memory": str(plan.memory), "dry_run": dry_run,
        "files": [
            {"path": str(f.path), "into": str(f.into), "status": str(f.status), "reason": f.reason,
             "imported_at": f.imported_at, "unknown_tables": f.unknown_tables,
             "tables": [{"source": t.source, "target": t.target, "rows": t.rows,
                         "copied": t.copied, "columns_left_out": t.left_out} for t in f.tables]}
            for f in plan.files
        ],
        "conversations": [
            {"path": str(t.path), "resource_id": t.resource_id, "thread_id": t.thread_id,
             "session_id": t.session_id, "owner": t.owner, "title": t.title,
             "messages": len(t.messages), "copied": t.copied, "status": str(t.status),
             "reason": t.reason, "imported_at": t.imported_at}
            for t in plan.threads
        ],
    }  # fmt: skip
