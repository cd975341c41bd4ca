"""`kaja resume`: replay a conversation, or print the context the agent resumes with."""

from typing import Annotated

import typer

from kaja_cli.commands import count, store_of
from kaja_cli.commands.options import NoPager, OwnerOpt
from kaja_cli.completion.hooks import hook


def resume(
    ctx: typer.Context,
    session_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A session id or unique prefix; default: the latest.",
            autocompletion=hook("session"),
        ),
    ] = None,
    latest: Annotated[
        bool, typer.Option("--continue", "-c", help="The latest session (the default).")
    ] = False,
    tail: Annotated[
        int | None,
        typer.Option(
            metavar="N", click_type=count(), help="Only the last N entries of the timeline."
        ),
    ] = None,
    owner: OwnerOpt = None,
    no_pager: NoPager = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            # Not the shared --json: what it prints is the agent's context, not the replay.
            help="Print the context the agent resumes with (the manual's Conversations page) as one JSON document.",
        ),
    ] = False,
) -> None:
    """Replay a conversation as the terminal showed it.

    The timeline: what you wrote, the answers, reasoning (dimmed), tool calls
    with their status and duration, notices, errors and images (as file paths,
    flagging missing files), then a banner if a tool call is waiting on you.
    Sessions without a timeline (Telegram, older agents) are rebuilt from
    their messages. Long output goes through a pager on a terminal.
    """
    from kaja_cli import render
    from kaja_cli.core.conversations import transcript
    from kaja_cli.errors import UsageError

    if latest and session_id is not None:
        raise UsageError("give a session id or -c, not both")
    store = store_of(ctx)
    acting = store.owner(owner)
    if as_json:
        if tail is not None:
            raise UsageError("--tail shapes the replay; --json prints the whole resume context")
        with transcript.context_stream(store, session_id, acting) as doc:
            render.emit_json_stream(doc.head, doc.key, doc.items)
        return
    from kaja_cli.render import replay

    rep = transcript.load_replay(store, session_id, acting, tail=tail)
    render.print_lines(replay.replay_lines(rep), pager=not no_pager)
