"""What `kaja migrate` prints for a person or a pipe (the JSON is the plan's
own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core import clock
from kaja_cli.core.care.legacy import Status
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.care.legacy import Plan


def migrated(plan: Plan, *, dry_run: bool = False) -> None:
    """A row per table and conversation, then what was (or would be) imported."""
    shown, plain = _rows(plan)
    if shown:
        render.table(
            [Col("from", style="bold"), Col("into"), Col("rows", "right"), Col("added", "right"),
             Col("", drop=1)],
            shown,
            plain_rows=plain,
        )  # fmt: skip
    _say(plan, dry_run)


def _rows(plan: Plan) -> tuple[list, list]:
    """Table rows (a person's) and plain rows (a script's): one per table and thread."""
    shown, plain = [], []
    for f in plan.files:
        if f.status is not Status.IMPORT:
            shown.append([f.path.name, "", "", "", _state(f)])
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
            shown.append([f.path.name, ", ".join(f.unknown_tables), "", "",
                          "left out: not a table kaja imports from this file"])  # fmt: skip
    for t in plan.threads:
        name = f"{t.resource_id}/{t.thread_id}"
        if t.status is not Status.IMPORT:
            shown.append([name, "", "", "", _state(t)])
        else:
            shown.append([name, f"session {t.session_id}", f"{len(t.messages):,}", _n(t.copied),
                          t.title or ""])  # fmt: skip
        plain.append(["conversation", t.path, t.resource_id, t.session_id or "",
                      len(t.messages), _blank(t.copied), t.status, t.reason or t.imported_at or ""])  # fmt: skip
    return shown, plain


def _state(item) -> str:  # type: ignore[no-untyped-def]
    """Why a file or a conversation is not imported now."""
    state = (
        "imported " + clock.day_of(item.imported_at or "")
        if item.status is Status.IMPORTED
        else item.reason
    )
    return (state or "").strip()


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _blank(value: int | None) -> object:
    return "" if value is None else value


def _table_note(t) -> str:  # type: ignore[no-untyped-def]
    notes = []
    if t.copied is not None and t.copied < t.rows:
        notes.append(f"{t.rows - t.copied:,} already there")
    if t.left_out:
        notes.append("columns left out: " + ", ".join(t.left_out))
    return "; ".join(notes)


def _say(plan: Plan, dry_run: bool) -> None:
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
        what = _what(files, threads)
        if dry_run:
            render.note(f"dry run: would import {what} into {plan.shared}; nothing was changed")
        else:
            render.note(f"imported {what} into {plan.shared}; the old files are kept as they are"
                        " (a rollback copy)")  # fmt: skip
    for item in plan.skipped:
        render.note(f"skipped {item.path}: {item.reason}")


def _what(files: list, threads: list) -> str:
    parts = []
    if files:
        rows = sum(t.copied if t.copied is not None else t.rows for f in files for t in f.tables)
        parts.append(f"{render.plural(len(files), 'legacy file')} ({render.plural(rows, 'row')})")
    if threads:
        messages = sum(t.copied if t.copied is not None else len(t.messages) for t in threads)
        parts.append(f"{render.plural(len(threads), 'conversation')} "
                     f"({render.plural(messages, 'message')})")  # fmt: skip
    return " and ".join(parts)
