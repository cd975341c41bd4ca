"""What `kaja demo` says it wrote (its JSON is the result's own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render

if TYPE_CHECKING:
    from kaja_cli.demo.sample import DemoResult


def written(result: DemoResult, *, legacy: bool) -> None:
    plural = render.plural
    counts = [plural(result.sessions, "session"), plural(result.messages, "message"),
              plural(result.tool_calls, "tool call")]  # fmt: skip
    render.note(
        f"wrote {', '.join(counts)} and {plural(result.images, 'image')} for"
        f" {plural(len(result.owners), 'owner')} into {result.location}"
    )
    mine = result.owners.get("terminal", 0)
    others = result.sessions - mine
    if others:  # `kaja sessions` shows the terminal's: say where the rest are
        render.note(
            f"`kaja sessions` lists the terminal's {mine}; the other {others} belong to"
            f" {plural(len(result.owners) - (1 if mine else 0), 'other owner')}:"
            " `kaja sessions --all-owners` shows them all"
        )
    if legacy:
        render.note(
            f"and {plural(result.legacy_files, 'legacy file')} of an older install beside it:"
            " `kaja migrate` imports them"
        )
