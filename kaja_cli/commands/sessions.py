"""`kaja sessions`: list conversations; `delete` and `export` one or more."""

from typing import Annotated

import typer

from kaja_cli.commands import JSON_HELP, count, store_of
from kaja_cli.commands import session_options as opt
from kaja_cli.completion.hooks import hook

app = typer.Typer(
    help="List your conversations, newest first; prune, export, archive or rename them.",
    invoke_without_command=True,
)

# The listing's options: `kaja sessions` alone, `kaja sessions list` and `ls`
# take them; the filters are shared with prune, export --all and stats.
Limit = Annotated[
    int,
    typer.Option("--limit", "-n", click_type=count(), help="Show at most this many; 0 shows all."),
]
NoPager = Annotated[bool, typer.Option("--no-pager", help="Never page long output on a terminal.")]
Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]


@app.callback(invoke_without_command=True)
def sessions(
    ctx: typer.Context,
    owner: opt.OwnerOpt = None,
    all_owners: opt.AllOwners = False,
    limit: Limit = 20,
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
    no_pager: NoPager = False,
    as_json: Json = False,
    interactive: Annotated[
        bool,
        typer.Option("--interactive", "-i", help="Full screen, to search and pick: `kaja browse`."),
    ] = False,
) -> None:
    """List your conversations, newest first; prune, export, archive, rename them.

    Without a subcommand (or with `list`, `ls`): the acting owner's sessions
    (the terminal unless --owner) with a short id you can pass to `kaja
    resume`, when each was last updated, title, persona, model, messages,
    tokens, and a mark for a tool call waiting on you. Archived sessions are
    left out (--archived lists them). Piped, the rows are tab-separated with
    full ids and ISO times.
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
    args = opt.FilterArgs(owner, all_owners, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    if interactive:
        from kaja_cli.commands import browse

        return browse.from_sessions(ctx, args, limit, as_json)
    _list(ctx, args, limit, no_pager, as_json)


@app.command("list")
def list_(
    ctx: typer.Context,
    owner: opt.OwnerOpt = None,
    all_owners: opt.AllOwners = False,
    limit: Limit = 20,
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
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """List your conversations, newest first (the same as `kaja sessions`; also `ls`).

    The acting owner's sessions (the terminal unless --owner) with a short id
    you can pass to `kaja resume`, when each was last updated, title,
    persona, model, messages, tokens, and a mark for a tool call waiting on
    you. The filters are those of `sessions prune` and `export --all`:
    `list FILTERS -n 0` shows what they would take. Archived sessions are
    left out (--archived lists them). Piped, the rows are tab-separated with
    full ids and ISO times.
    """
    args = opt.FilterArgs(owner, all_owners, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    _list(ctx, args, limit, no_pager, as_json)


app.command("ls", hidden=True)(list_)


def _list(
    ctx: typer.Context, args: opt.FilterArgs, limit: int, no_pager: bool, as_json: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.conversations import sessions as core

    store = store_of(ctx)
    flt = args.to_filter(store, limit=limit)
    acting = flt.owner
    result = core.listing_json(store, flt) if as_json else core.listing(store, flt)

    if not result.store_exists:
        render.note(f"no sessions: there is no Kaja store at {result.location}")
    elif not result.has_sessions_table:
        render.note(f"no sessions: {result.location} has no sessions table")
    elif not result.sessions:
        whose = "anyone" if acting is None else acting.label
        archived = " archived" if args.archived else ""
        render.note(
            f"no{archived} sessions for {whose}"
            + (
                " matching the filters"
                if flt.narrowed and flt.described() != ["--archived"]
                else ""
            )
        )
    more = f"{result.left_out} more not shown (--limit 0 shows all)" if result.left_out else None

    if as_json:
        head = {
            "owner": acting.label if acting else None,
            "all_owners": acting is None,
            "archived": args.archived,
            "total": result.total,
            "left_out": result.left_out,
        }
        render.emit_json_document(head, "sessions", result.sessions)
        return
    if result.sessions:
        with render.paged(not no_pager):
            _table(result, all_owners=acting is None, caption=more)


TITLE_ROOM = 20  # a listing's title wraps to two lines, not four, before columns go


def _table(result, *, all_owners: bool, caption: str | None) -> None:
    from kaja_cli import render
    from kaja_cli.core import clock
    from kaja_cli.core.owners import label

    S, Col = render.Styled, render.Col
    # The id (you type it), the counts and the mark never give way; the title,
    # persona and model wrap; on a narrow terminal persona, model, the message
    # count and the time go, in that order (README, "Conversations"), before
    # the title, what a row is, gets narrower than TITLE_ROOM.
    text = "text"
    cols = [Col("id", style="cyan", kind="whole"), Col("updated", kind="whole", drop=4)]
    if all_owners:
        cols.append(Col("owner", kind="whole"))
    cols += [
        Col("title", kind=text, min=TITLE_ROOM),
        Col("persona", kind=text, drop=1),
        Col("model", kind=text, drop=2),
        Col("msgs", justify="right", drop=3),
        Col("tokens", justify="right"),
    ]
    pending = any(s.pending for s in result.sessions)
    if pending:
        cols.append(Col("", kind="whole"))
    rows, plain = [], []
    now = clock.now()
    for s in result.sessions:
        r = s.row
        kind = (render.text(r.get("pendingKind")) or "pending") if s.pending else ""
        owner = [label(r.get("owner"))] if all_owners else []
        if r.get("title"):
            title = S(render.text(r["title"]))
        elif s.first_prompt:
            title = S("“" + " ".join(s.first_prompt.split())[:57] + "”", "dim italic")
        else:
            title = S("(untitled)", "dim")
        mark = [S("⏸ " + kind, "bold yellow") if kind else ""] if pending else []
        rows.append(
            [S(s.short_id, "cyan"), render.relative_time(r.get("updatedAt"), now), *owner, title,
             r.get("persona"), r.get("model"), s.message_count, render.human_count(s.tokens),
             *mark]
        )  # fmt: skip
        plain.append(
            [s.id, r.get("updatedAt"), *owner, r.get("title"), r.get("persona"), r.get("model"),
             s.message_count, s.tokens, kind]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption)


@app.command("delete")
def delete(
    ctx: typer.Context,
    ids: Annotated[
        list[str],
        typer.Argument(
            metavar="ID...", help="Session ids or unique prefixes.", autocompletion=hook("session")
        ),
    ],
    owner: opt.ActingOwner = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Don't ask first.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was deleted as one JSON document.")
    ] = False,
) -> None:
    """Delete sessions with everything that hangs off them.

    Their messages, tool calls, summaries, model calls, timeline events and
    search entries go in one transaction, then their image folders (run it
    again if it was interrupted in between: it removes the folders left).
    Every id must be the acting owner's (the terminal unless --owner); if one
    is not, nothing is deleted. Asks first; with no terminal to ask, refuses
    unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core import qdrant
    from kaja_cli.core.conversations import sessions as core

    store = store_of(ctx)
    acting = store.owner(owner)
    plan = core.plan_deletion(store, ids, acting)
    # Qdrant is asked before anything is deleted: if it does not answer, nothing is.
    points = qdrant.plan_forget(store, [s.id for s in plan.sessions])
    what = _describe(plan) + (f" and {render.plural(points.points, 'point')} in Qdrant"
                              if points and points.points else "")  # fmt: skip
    if not yes and len(plan.sessions) > 1:
        for s in plan.sessions:
            render.note(f"will delete {s.id}  {s.title or '(untitled)'}")
    if plan.images_link is not None:
        render.note(
            f"keeping their image folders: {plan.images_link} is a symbolic link,"
            " and kaja deletes nothing through one"
        )
    render.confirm(f"Delete {what}?", assume_yes=yes)
    done = core.delete(store, plan, acting)
    gone = qdrant.forget(points) if points else None  # after the commit
    if as_json:
        render.emit_json(
            {
                "deleted": [
                    {"id": s.id, "title": s.title, "owner": s.owner} for s in done.sessions
                ],
                "rows": done.rows,
                "image_folders": [str(p) for p in done.image_folders],
                "qdrant_points": gone,
            }
        )
    elif not done.sessions:
        n = len(done.image_folders)
        render.note(f"removed {render.plural(n, 'image folder')} an interrupted delete left")
    else:
        n, f = len(done.sessions), len(done.image_folders)
        folders = f" and {render.plural(f, 'image folder')}" if f else ""
        render.note(f"deleted {render.plural(n, 'session')} ({_rows_text(done.rows)}){folders}")
        if points is not None:
            render.note(f"deleted {render.plural(gone or 0, 'point')} of them from Qdrant"
                        f" ({points.where.collection} at {points.where.where})")  # fmt: skip
    if plan.unknown is not None:  # an id that named nothing (the leftovers are gone now)
        raise plan.unknown


def _describe(plan) -> str:
    from kaja_cli import render

    n = len(plan.sessions)
    if not n:
        text = f"{render.plural(len(plan.left_over), 'image folder')} an interrupted delete left"
        return text + f" ({render.plural(plan.image_files, 'image file')})"
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


# Export, and the care commands (prune, rename, archive, stats), live in their own modules
# and register themselves on this group.
from kaja_cli.commands import export, prune, session_care, session_stats  # noqa: E402, F401
