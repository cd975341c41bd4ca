"""`kaja search`: full-text search across every past conversation (or the notes)."""

from typing import Annotated

import typer

from kaja_cli.commands import store_of
from kaja_cli.commands.options import AllOwners, Json, Limit, NoPager, OwnerOpt, Since, Until
from kaja_cli.completion.hooks import hook


def search(
    ctx: typer.Context,
    query: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="QUERY",
            help="Words to find: every word must match; accents, case and punctuation are ignored.",
            show_default=False,
        ),
    ] = None,
    fts: Annotated[
        bool,
        typer.Option(
            "--fts",
            help='QUERY is SQLite FTS4 query syntax: "a phrase", OR, NOT, NEAR, prefix*, ( ).',
        ),
    ] = False,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact",
            help="Only the words as typed: tomato no longer finds tomatoes (see search.language).",
        ),
    ] = False,
    recent: Annotated[
        bool, typer.Option("--recent", help="Newest first instead of best match first.")
    ] = False,
    owner: OwnerOpt = None,
    all_owners: AllOwners = False,
    session: Annotated[
        str | None,
        typer.Option(
            metavar="ID",
            help="Only this session: a full id or a unique prefix.",
            autocompletion=hook("session"),
        ),
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ROLE",
            autocompletion=hook("role"),
            help="Only messages with this role: user, assistant, tool or system (repeatable).",
            show_default=False,
        ),
    ] = None,
    since: Since = None,
    until: Until = None,
    limit: Limit = 20,
    reindex: Annotated[
        bool,
        typer.Option(
            "--reindex", help="Rebuild the search index from every message first (a progress bar)."
        ),
    ] = False,
    archived: Annotated[
        bool,
        typer.Option("--archived", help="Search archived sessions too (left out otherwise)."),
    ] = False,
    no_pager: NoPager = False,
    notes: Annotated[
        bool,
        typer.Option("--notes", help="Search the notes (the agent's memory) instead of messages."),
    ] = False,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Closest in meaning, not in words (offline; needs `pip install 'kaja-cli[semantic]'`).",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Find messages across every past conversation, best match first.

    Plain words by default: every word must appear, in any order, in any
    of its forms (tomato finds tomatoes, running finds run and runs; the
    form typed ranks first; --exact for the words as typed); accents
    and case don't matter (creme brulee finds "Crème brûlée") and
    punctuation is harmless (c++, don't). Chinese, Japanese and Korean
    words are found inside sentences (東京 in 私は東京に住んでいます).
    --fts takes SQLite's FTS4 syntax instead. Each hit shows its session, time, role and the words in
    context. Without a search index (a store another program made), kaja
    builds it when it may write the store, and otherwise scans the messages
    and says so. --since and --until bound when a message was written (a
    note: when it was last used). --notes searches the notes' keys, tags and
    content instead. --semantic finds messages by what they are about
    (my plants wilt in the heat finds "Tomato leaves curling"), from an
    index kept beside the store and brought up to date first.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import search as core
    from kaja_cli.errors import UsageError
    from kaja_cli.render import search as view

    text = " ".join(query or [])
    if notes:
        for name, given in (
            ("--session", session),
            ("--role", role),
            ("--reindex", reindex),
            ("--semantic", semantic),
        ):
            if given:
                raise UsageError(f"{name} is for messages: it does not go with --notes")
        _notes(ctx, text, fts=fts, exact=exact, recent=recent, owner=owner, all_owners=all_owners,
               since=since, until=until, limit=limit, no_pager=no_pager,
               as_json=as_json)  # fmt: skip
        return
    store = store_of(ctx)
    if semantic:
        _semantic(store, text, fts=fts, exact=exact, recent=recent, reindex=reindex,
                  owner=owner, all_owners=all_owners, session=session, roles=role or (),
                  since=since, until=until, limit=limit, archived=archived, no_pager=no_pager,
                  as_json=as_json)  # fmt: skip
        return
    if reindex:
        count = core.reindex(store, progress=render.progress)
        render.note(f"reindexed {render.plural(count, 'message')} in {store.where()}")
        if not text:
            render.emit({"reindexed": {"path": store.where(), "messages": count}}, as_json)
            return
    elif not text.strip():
        raise UsageError(
            "nothing to search for", hint="give some words, e.g. `kaja search tomato shade`"
        )
    result = core.search(
        store, text, fts=fts, owner=owner, all_owners=all_owners, session=session,
        roles=role or (), since=since, until=until, limit=limit, recent=recent,
        progress=render.progress, archived=archived, exact=exact,
    )  # fmt: skip
    render.emit(result, as_json, view.hits, pager=not no_pager)
    view.remarks(result, text)


def _semantic(store, text: str, *, reindex: bool, no_pager: bool, as_json: bool, **how) -> None:
    """`kaja search --semantic`: the messages closest in meaning to `text`."""
    from kaja_cli import render
    from kaja_cli.core.conversations import semantic as core
    from kaja_cli.errors import UsageError
    from kaja_cli.render import search as view

    for name in ("fts", "exact", "recent"):
        if how.pop(name):
            raise UsageError(f"--{name} is for word search: it does not go with --semantic")
    core.require(store)
    if reindex:
        count = core.reindex(store, progress=render.progress)
        render.note(f"rebuilt the semantic index: {render.plural(count, 'message')} embedded")
        if not text.strip():
            render.emit({"reindexed": {"path": str(store.paths.semantic_db), "messages": count}},
                        as_json)  # fmt: skip
            return
    result = core.search(store, text, progress=render.progress, **how)
    render.emit(result, as_json, view.hits, pager=not no_pager)
    view.remarks(result, text)


def _notes(ctx: typer.Context, text: str, *, no_pager: bool, as_json: bool, **how) -> None:
    """`kaja search --notes`: the notes matching `text`, as `kaja search` shows messages."""
    from kaja_cli import render
    from kaja_cli.core.side import notes as core
    from kaja_cli.render import notes as view

    result = core.search(store_of(ctx), text, **how)
    render.emit(result, as_json, view.search, pager=not no_pager)
    view.search_remarks(result, text)
