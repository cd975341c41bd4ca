"""`kaja sessions`: list conversations; `delete` and `export` one or more."""

from pathlib import Path
from typing import Annotated

import typer

from kaja_cli.commands import JSON_HELP, OWNER_HELP, store_of

app = typer.Typer(
    help="List your conversations, newest first; delete or export them.",
    invoke_without_command=True,
)


@app.callback(invoke_without_command=True)
def sessions(
    ctx: typer.Context,
    owner: Annotated[str | None, typer.Option(metavar="ID", help=OWNER_HELP)] = None,
    all_owners: Annotated[
        bool, typer.Option("--all-owners", help="Everyone's sessions, with an owner column.")
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="Show at most this many; 0 shows all.")
    ] = 20,
    since: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="Updated since: 2026-11-01, 2026-11-01T08:00, 3d, 12h."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(metavar="NAME", help="Only sessions with this model.")
    ] = None,
    persona: Annotated[
        str | None, typer.Option(metavar="NAME", help="Only sessions with this persona.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """List your conversations, newest first; delete or export them.

    Without a subcommand: the acting owner's sessions (the terminal unless
    --owner) with a short id you can pass to `kaja resume`, when each was last
    updated, title, persona, model, messages, tokens, and a mark for a tool
    call waiting on you. Piped, the rows are tab-separated with full ids and
    ISO times.
    """
    if ctx.invoked_subcommand is not None:
        given = [p.opts[0] for p in ctx.command.params
                 if getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"]  # fmt: skip
        if given:
            from kaja_cli.errors import UsageError

            raise UsageError(
                f"{', '.join(given)} belongs to the listing, not to `{ctx.invoked_subcommand}`",
                hint=f"put the options after it: kaja sessions {ctx.invoked_subcommand} …",
            )
        return
    from kaja_cli import render
    from kaja_cli.core import sessions as core
    from kaja_cli.errors import UsageError

    if all_owners and owner is not None:
        raise UsageError("--owner and --all-owners can't be combined")
    store = store_of(ctx)
    acting = None if all_owners else store.owner(owner)
    since_iso = None
    if since is not None:
        from kaja_cli.core.timeparse import parse_when

        since_iso = parse_when(since)
    flt = core.SessionFilter(acting, since_iso, model, persona, limit)
    result = core.listing_json(store, flt) if as_json else core.listing(store, flt)

    if not result.store_exists:
        render.note(f"no sessions: there is no Kaja store at {result.location}")
    elif not result.has_sessions_table:
        render.note(f"no sessions: {result.location} has no sessions table")
    elif not result.sessions:
        whose = "anyone" if acting is None else acting.label
        render.note(
            f"no sessions for {whose}" + (" matching the filters" if _filtered(flt) else "")
        )
    more = f"{result.left_out} more not shown (--limit 0 shows all)" if result.left_out else None

    if as_json:
        head = {
            "owner": acting.label if acting else None,
            "all_owners": acting is None,
            "total": result.total,
            "left_out": result.left_out,
        }
        render.emit_json_document(head, "sessions", result.sessions)
        return
    if result.sessions:
        _table(result, all_owners=acting is None, caption=more)


def _filtered(flt) -> bool:
    return bool(flt.since or flt.model or flt.persona)


def _table(result, *, all_owners: bool, caption: str | None) -> None:
    from kaja_cli import render
    from kaja_cli.core.owners import label

    S = render.Styled
    # One line per session. The id (you type it), the time and the counts
    # keep their width; on a narrow terminal persona, then model, step aside
    # and the title takes what is left, cut with an ellipsis.
    ids = max((len(s.short_id) for s in result.sessions), default=8)
    pending_w = 10 if any(s.pending for s in result.sessions) else 0
    width = render.terminal_width()
    # widths of everything but the title, with the two spaces between columns
    fixed = ids + 8 + 4 + 6 + pending_w + (16 if all_owners else 0)
    fixed += 2 * (5 + all_owners)
    show_model = width - fixed - 19 >= 30
    show_persona = show_model and width - fixed - 19 - 12 >= 30
    title_w = max(12, width - fixed - 19 * show_model - 12 * show_persona)
    one_line = {"no_wrap": True, "overflow": "ellipsis"}
    cols = [render.Col("id", style="cyan", no_wrap=True, min_width=ids),
            render.Col("updated", no_wrap=True, min_width=8)]  # fmt: skip
    if all_owners:
        cols.append(render.Col("owner", max_width=16, **one_line))
    cols.append(render.Col("title", max_width=title_w, **one_line))
    if show_persona:
        cols.append(render.Col("persona", max_width=10, **one_line))
    if show_model:
        cols.append(render.Col("model", max_width=17, **one_line))
    cols += [
        render.Col("msgs", justify="right", no_wrap=True, min_width=4),
        render.Col("tokens", justify="right", no_wrap=True, min_width=6),
        render.Col("", no_wrap=True, min_width=pending_w),
    ]
    rows, plain = [], []
    for s in result.sessions:
        r = s.row
        pending = (r.get("pendingKind") or "pending") if s.pending else ""
        owner = [label(r.get("owner"))] if all_owners else []
        if r.get("title"):
            title = S(str(r["title"]))
        elif s.first_prompt:
            title = S("“" + " ".join(s.first_prompt.split())[:57] + "”", "dim italic")
        else:
            title = S("(untitled)", "dim")
        rows.append(
            [S(s.short_id, "cyan"), render.relative_time(r.get("updatedAt")), *owner, title,
             *([r.get("persona")] if show_persona else []), *([r.get("model")] if show_model else []),
             s.message_count, render.human_count(s.tokens),
             S("⏸ " + pending, "bold yellow") if pending else ""]
        )  # fmt: skip
        plain.append(
            [s.id, r.get("updatedAt"), *owner, r.get("title"), r.get("persona"), r.get("model"),
             s.message_count, s.tokens, pending]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption)


@app.command("delete")
def delete(
    ctx: typer.Context,
    ids: Annotated[
        list[str], typer.Argument(metavar="ID...", help="Session ids or unique prefixes.")
    ],
    owner: Annotated[str | None, typer.Option(metavar="ID", help=OWNER_HELP)] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Don't ask first.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was deleted as one JSON document.")
    ] = False,
) -> None:
    """Delete sessions with everything that hangs off them.

    Their messages, tool calls, summaries, model calls, timeline events and
    search entries go in one transaction, then their image folders. Every id
    must be the acting owner's (the terminal unless --owner); if one is not,
    nothing is deleted. Asks first; with no terminal to ask, refuses unless
    --yes.
    """
    from kaja_cli import render
    from kaja_cli.core import sessions as core

    store = store_of(ctx)
    acting = store.owner(owner)
    plan = core.plan_deletion(store, ids, acting)
    what = _describe(plan)
    if not yes and len(plan.sessions) > 1:
        for s in plan.sessions:
            render.note(f"will delete {s.id}  {s.title or '(untitled)'}")
    render.confirm(f"Delete {what}?", assume_yes=yes)
    done = core.delete(store, plan, acting)
    if as_json:
        render.emit_json(
            {
                "deleted": [
                    {"id": s.id, "title": s.title, "owner": s.owner} for s in done.sessions
                ],
                "rows": done.rows,
                "image_folders": [str(p) for p in done.image_folders],
            }
        )
        return
    n, f = len(done.sessions), len(done.image_folders)
    folders = f" and {render.plural(f, 'image folder')}" if f else ""
    render.note(f"deleted {render.plural(n, 'session')} ({_rows_text(done.rows)}){folders}")


def _describe(plan) -> str:
    from kaja_cli import render

    n = len(plan.sessions)
    text = render.plural(n, "session")
    if n == 1:
        text += f" “{plan.sessions[0].title or 'untitled'}”"
    text += f" ({_rows_text(plan.rows)}"
    if plan.image_files:
        text += f", {render.plural(plan.image_files, 'image file')}"
        text += f", {render.human_size(plan.image_bytes)}"
    return text + ")"


def _rows_text(rows: dict) -> str:
    from kaja_cli import render

    names = {"messages": "message", "tool_calls": "tool call", "session_summaries": "summary",
             "model_calls": "model call", "session_events": "event"}  # fmt: skip
    parts = []
    for table, word in names.items():
        n = rows.get(table, 0)
        if n:
            parts.append(render.plural(n, word, "summaries" if word == "summary" else None))
    return ", ".join(parts) or "no messages"


@app.command("export")
def export(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID", help="A session id or unique prefix.")],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="md|json",
            help="Markdown transcript or the full JSON; default: from -o's suffix, else md.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of stdout."),
    ] = None,
    owner: Annotated[str | None, typer.Option(metavar="ID", help=OWNER_HELP)] = None,
) -> None:
    """Export one session: a readable Markdown transcript, or the full JSON.

    Markdown has every message, tool call (arguments, status, duration, full
    result) and image (as a link to its file). JSON has the session row, all
    summaries, messages with their tool calls, timeline events and model
    calls. The file (-o) is written whole or not at all, readable only by you.
    """
    from kaja_cli import render
    from kaja_cli.core import transcript
    from kaja_cli.errors import UsageError

    if output is not None and str(output) == "-":
        output = None
    if fmt is None:
        fmt = "json" if output is not None and output.suffix.lower() == ".json" else "md"
    fmt = fmt.lower()
    if fmt not in ("md", "markdown", "json"):
        raise UsageError(f"--format: {fmt!r} is not md or json")
    if output is not None and output.is_dir():
        raise UsageError(f"-o: {output} is a folder", hint="give a file name")
    store = store_of(ctx)
    acting = store.owner(owner)
    if fmt == "json":
        doc = transcript.load_transcript_json(store, session_id, acting)
        if output is None:
            render.emit_json_document(doc.head, doc.key, doc.items)
            return
        text = render.json_document(doc.head, doc.key, doc.items) + "\n"
    else:
        from kaja_cli.render import replay

        text = replay.markdown(transcript.load_transcript(store, session_id, acting))
        if output is None:
            import sys

            sys.stdout.write(text)
            return
    from kaja_cli.core import fs

    try:
        fs.write_private_file(output, text.encode())
    except OSError as e:
        from kaja_cli.errors import Failed

        raise Failed(f"cannot write {output}: {e.strerror or e}") from None
    render.note(f"wrote {output} ({render.human_size(len(text.encode()))})")
