"""`kaja sessions prune`: delete the sessions the filters select, plan first
(registered on the `sessions` group)."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import session_options as opt
from kaja_cli.commands import store_of
from kaja_cli.commands.sessions import app

if TYPE_CHECKING:
    from kaja_cli.core.conversations.prune import PrunePlan, PruneResult


@app.command("prune")
def prune(
    ctx: typer.Context,
    owner: opt.OwnerOpt = None,
    all_owners: opt.AllOwners = False,
    since: opt.Since = None,
    before: opt.Before = None,
    older_than: opt.OlderThan = None,
    model: opt.Model = None,
    persona: opt.Persona = None,
    title: opt.Title = None,
    max_messages: opt.MaxMessages = None,
    min_tokens: opt.MinTokens = None,
    empty: opt.Empty = False,
    archived: opt.ArchivedOpt = False,
    include_pending: Annotated[
        bool,
        typer.Option(
            "--include-pending",
            help="Delete sessions with a tool call waiting on you too (kept otherwise).",
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be deleted; delete nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan and what was done as one JSON document.")
    ] = False,
) -> None:
    """Delete every session the filters select, with all that hangs off them.

    The filters are the listing's (`kaja sessions list FILTERS -n 0` shows
    the same sessions) and at least one is needed: --older-than 90d,
    --empty, --title '*test*', … It shows the plan first (how many sessions,
    rows, bytes and image files, and a sample), then asks; --yes skips the
    question, and without a terminal it refuses (exit 5) unless --yes.
    Sessions with a tool call waiting on you are kept unless
    --include-pending. It runs beside the agent: one short transaction per
    batch, and a session the agent touches meanwhile is left alone. Image
    folders go after each batch is committed.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import prune as core
    from kaja_cli.errors import UsageError

    args = opt.FilterArgs(owner, all_owners, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    flt = args.to_filter()
    if not flt.narrowed:
        raise UsageError(
            "say which sessions to prune",
            hint="give a filter: --older-than 90d, --empty, --title GLOB, --model NAME, …",
        )
    store = store_of(ctx)
    plan = core.plan(store, flt, include_pending=include_pending)
    if not plan.sessions and not plan.leftovers:
        if as_json:
            render.emit_json(_json(plan, None, dry_run=dry_run))
        else:
            _nothing(plan)
        return
    if not as_json:
        _show(plan)
    if dry_run:
        if as_json:
            render.emit_json(_json(plan, None, dry_run=True))
        else:
            render.note("dry run: nothing was deleted")
        return
    what = render.plural(len(plan.sessions), "session")
    render.confirm(f"Delete these {what}? This cannot be undone.", assume_yes=yes)
    with render.progress("pruning sessions", len(plan.sessions)) as bar:
        result = core.execute(store, plan, bar)
    if as_json:
        render.emit_json(_json(plan, result, dry_run=False))
        return
    _done(result)


def _nothing(plan: "PrunePlan") -> None:
    from kaja_cli import render

    if not plan.location.exists():
        render.note(f"nothing to prune: there is no Kaja store at {plan.location}")
        return
    render.note("nothing to prune: no session matches the filters")
    if plan.pending_kept:
        render.note(f"{_pending(plan.pending_kept)} (--include-pending deletes them)")


def _pending(n: int) -> str:
    from kaja_cli import render

    return f"{render.plural(n, 'session')} with a call waiting on you kept"


def _show(plan: "PrunePlan") -> None:
    """The plan: the sessions (a sample on a terminal, all of them piped), then a summary."""
    from kaja_cli import render
    from kaja_cli.core import clock
    from kaja_cli.core.owners import label

    everyone = plan.filter.owner is None
    terminal = render.stdout_is_terminal()
    shown = plan.sample if terminal else plan.sessions
    cols = [render.Col("id", style="cyan", kind="whole"), render.Col("updated", kind="whole")]
    if everyone:
        cols.append(render.Col("owner", kind="whole"))
    cols += [render.Col("title", kind="text"), render.Col("msgs", justify="right")]
    rows = []
    for c in shown:
        owner = [label(c.owner)] if everyone else []
        updated = clock.day_of(c.updated or "-") if terminal else c.updated
        rows.append([c.id if not terminal else c.id[:13], updated, *owner, c.title, c.messages])
    more = len(plan.sessions) - len(shown)
    caption = f"… and {render.plural(more, 'more session')} between them" if more else None
    if rows:
        render.table(cols, rows, caption=caption)
    render.note(f"will delete {_summary(plan)}")
    if plan.pending_kept:
        render.note(f"{_pending(plan.pending_kept)} (--include-pending deletes them too)")
    if plan.leftovers:
        n = render.plural(len(plan.leftovers), "image folder")
        render.note(f"and finish an interrupted prune: {n} of deleted sessions")


def _summary(plan: "PrunePlan") -> str:
    from kaja_cli import render
    from kaja_cli.commands.sessions import _rows_text

    text = render.plural(len(plan.sessions), "session")
    text += f" ({_rows_text(plan.rows)}; {render.human_size(plan.message_bytes)} of text"
    if plan.image_files:
        text += f", {render.plural(plan.image_files, 'image file')}"
        text += f" ({render.human_size(plan.image_bytes)})"
    return text + ")"


def _done(result: "PruneResult") -> None:
    from kaja_cli import render
    from kaja_cli.commands.sessions import _rows_text

    folders = render.plural(result.image_folders, "image folder")
    batches = render.plural(result.batches, "transaction")
    render.note(
        f"deleted {render.plural(result.deleted, 'session')} ({_rows_text(result.rows)})"
        f" and {folders} in {batches}"
    )
    if result.skipped:
        render.note(
            f"{render.plural(result.skipped, 'session')} changed meanwhile (or went) and were"
            " left alone"
        )
    for folder, why in result.kept_folders:
        render.note(f"kept {folder}: {why}")


def _json(plan: "PrunePlan", result: "PruneResult | None", *, dry_run: bool) -> dict:
    flt = plan.filter
    doc = {
        "action": "prune",
        "dry_run": dry_run,
        "done": result is not None,
        "owner": flt.owner.label if flt.owner else None,
        "all_owners": flt.owner is None,
        "filters": flt.described(),
        "sessions": [c._asdict() for c in plan.sessions],
        "rows": plan.rows,
        "message_bytes": plan.message_bytes,
        "image_files": plan.image_files,
        "image_bytes": plan.image_bytes,
        "pending_kept": plan.pending_kept,
        "leftover_image_folders": [str(p) for p in plan.leftovers],
    }
    if result is not None:
        doc |= {
            "deleted": result.deleted,
            "deleted_rows": result.rows,
            "skipped": result.skipped,
            "image_folders_removed": result.image_folders,
            "kept": [{"path": str(p), "reason": why} for p, why in result.kept_folders],
            "batches": result.batches,
        }
    return doc
