"""The shells' side when Typer answers: Click completion classes for bash,
zsh and fish that print what the fast path prints (`fast.render`).

Typer answers what the fast path leaves to it (printing the scripts, a
request the fast path cannot read). Its own classes print values as they
are, and its zsh format escapes a quote but not a backslash: a session
title could run a command on a TAB press. `register()` puts kaja's in
their place.
"""

from __future__ import annotations

import os
import sys

from typer import _completion_classes
from typer._click.shell_completion import add_completion_class

from kaja_cli.completion import fast


def _answer(comp, shell: str) -> str:
    """The candidates Typer found, printed as the fast path prints them."""
    args, incomplete = comp.get_completion_args()
    items = [
        (c.value, _completion_classes._sanitize_help_text(c.help) if c.help else None)
        for c in comp.get_completions(args, incomplete)
    ]
    text, code = fast.render(shell, items, os.environ)
    if shell == "fish" and os.environ.get("_TYPER_COMPLETE_FISH_ACTION") == "is-args":
        sys.exit(code)  # fish reads the exit status alone
    return text.removesuffix("\n")  # Typer's shell_complete adds the line end


class Bash(_completion_classes.BashComplete):
    def complete(self) -> str:
        return _answer(self, "bash")


class Zsh(_completion_classes.ZshComplete):
    def complete(self) -> str:
        return _answer(self, "zsh")


class Fish(_completion_classes.FishComplete):
    def complete(self) -> str:
        return _answer(self, "fish")


def register() -> None:
    """kaja's classes in place of Typer's (which `typer.main.get_command`
    registers again: call this after it)."""
    for cls in (Bash, Zsh, Fish):
        add_completion_class(cls, cls.name)


def answer(app) -> int:
    """Typer's answer to the completion request in `_KAJA_COMPLETE`, through kaja's classes."""
    import typer.main
    from typer.completion import shell_complete

    command = typer.main.get_command(app)
    register()
    return shell_complete(command, {}, "kaja", "_KAJA_COMPLETE", os.environ["_KAJA_COMPLETE"])
