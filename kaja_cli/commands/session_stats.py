"""`kaja sessions stats`: how big the conversations are, by owner, model,
persona and month (registered on the `sessions` group)."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of
from kaja_cli.commands import session_options as opt
from kaja_cli.commands.sessions import app

if TYPE_CHECKING:
    from kaja_cli.core.conversations.stats import Stats, Totals


@app.command("stats")
def stats(
    ctx: typer.Context,
    owner: opt.OwnerOpt = None,
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
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Never page long output on a terminal.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Sessions, messages, tokens and bytes by owner, model, persona and month.

    Every owner's sessions unless --owner (the filters are the listing's),
    archived ones left out unless --archived; then the largest sessions,
    their image files, the search index's size and the database file's.
    Bytes are the text of the messages as stored. Piped, every row is
    tab-separated with its section first (`kaja sessions stats | grep ^owner`).
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import stats as core

    args = opt.FilterArgs(owner, False, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    flt = args.to_filter(everyone_by_default=True)
    result = core.stats(store_of(ctx), flt)
    if not result.store_exists:
        render.note(f"no sessions: there is no Kaja store at {result.location}")
    if as_json:
        render.emit_json(_json(result, flt))
        return
    with render.paged(not no_pager):
        _text(result)


def _json(r: "Stats", flt) -> dict:
    def totals(t: "Totals", name: str | None = None) -> dict:
        head = {name: t.key} if name else {}
        return head | {"sessions": t.sessions, "messages": t.messages,
                       "prompt_tokens": t.prompt_tokens, "completion_tokens": t.completion_tokens,
                       "tokens": t.tokens, "bytes": t.bytes}  # fmt: skip

    return {
        "owner": flt.owner.label if flt.owner else None,
        "all_owners": flt.owner is None,
        "filters": flt.described(),
        "total": totals(r.total),
        "by_owner": [totals(t, "owner") for t in r.by_owner],
        "by_model": [totals(t, "model") for t in r.by_model],
        "by_persona": [totals(t, "persona") for t in r.by_persona],
        "by_month": [totals(t, "month") for t in r.by_month],
        "largest": [x._asdict() for x in r.largest],
        "images": {"files": r.image_files, "bytes": r.image_bytes},
        "index_bytes": r.index_bytes,
        "database_bytes": r.database_bytes,
    }


def _text(r: "Stats") -> None:
    from kaja_cli import render
    from kaja_cli.core.owners import label

    S, Col = render.Styled, render.Col
    size, n = render.human_size, render.human_count
    terminal = render.stdout_is_terminal()

    def section(name: str, groups: "list[Totals]", show=lambda k: k or "(none)") -> None:
        cols = [Col(name, style="bold"), Col("sessions", "right"), Col("messages", "right"),
                Col("tokens", "right"), Col("bytes", "right")]  # fmt: skip
        rows = [[show(t.key), n(t.sessions), n(t.messages), n(t.tokens), size(t.bytes)]
                for t in groups]  # fmt: skip
        plain = [[name, show(t.key), t.sessions, t.messages, t.prompt_tokens, t.completion_tokens,
                  t.bytes] for t in groups]  # fmt: skip
        render.table(cols, rows, plain_rows=plain, title=" " if terminal else None)

    t = r.total
    render.table(
        [Col("", style="bold"), Col("", "right")],
        [["sessions", n(t.sessions)], ["messages", n(t.messages)], ["tokens", n(t.tokens)],
         ["text", size(t.bytes)], ["images", f"{size(r.image_bytes)} ({render.plural(r.image_files, 'file')})"],
         ["search index", size(r.index_bytes) if r.index_bytes is not None else "-"],
         ["database file", size(r.database_bytes)]],
        plain_rows=[["total", t.sessions, t.messages, t.prompt_tokens, t.completion_tokens, t.bytes,
                     r.image_files, r.image_bytes, r.index_bytes, r.database_bytes]],
        title="total" if terminal else None,
    )  # fmt: skip
    section("owner", r.by_owner, label)
    section("model", r.by_model)
    section("persona", r.by_persona)
    section("month", r.by_month)
    render.table(
        [Col("id", style="cyan", kind="whole"), Col("owner", kind="whole", drop=2),
         Col("title", kind="text"), Col("messages", "right", drop=1), Col("tokens", "right"),
         Col("bytes", "right"), Col("images", "right", drop=3)],
        [[S(x.id[:13], "cyan"), label(x.owner), x.title or "(untitled)", n(x.messages), n(x.tokens),
          size(x.bytes), size(x.image_bytes) if x.image_bytes else "-"] for x in r.largest],
        plain_rows=[["largest", x.id, x.owner, x.title, x.messages, x.tokens, x.bytes, x.image_bytes]
                    for x in r.largest],
        title="\nlargest sessions" if terminal else None,
    )  # fmt: skip
