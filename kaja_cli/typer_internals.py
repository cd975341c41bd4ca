"""Every name kaja uses that a dependency does not publish: all of them typer's.

typer 0.28 vendors click as `typer._click` and publishes no other way to
click's classes: its exceptions (kaja maps each to an exit code), its range
types (kaja's `-n` and wait options describe their own ranges) and its
completion registry. `typer.models.TyperPath`, the path type kaja's path
options refine, has no underscore but no documentation either (typer 0.29
removed it). Its help screens and shell scripts are drawn by
`typer.rich_utils` and `typer._completion_*` functions with a leading
underscore, which kaja wraps (render/help.py, completion/shells.py).

A private name can go in any release (tomlkit 0.15.3 removed one kaja used,
and `kaja config set` crashed on every fresh install). So they are reached
from here only (tests/unit/test_house.py), and tests/unit/test_typer_internals.py
checks each one is still there with the shape kaja relies on: run against a
new typer before raising its bound in pyproject.toml, it fails on the release
that breaks kaja, not after it.

What is imported at module level costs nothing: `import typer` has loaded it
already. The rest (rich among it) loads only when a help screen or a
completion script needs it: every TAB press starts kaja.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from typer import _click as click  # noqa: F401  (click.exceptions: app.py)
from typer._click.types import FloatRange, IntRange  # noqa: F401  (commands/__init__.py)
from typer.models import TyperPath  # noqa: F401  (commands/__init__.py)


# --- one command of a group (app.py) ---------------------------------------------------------
def narrowed(group: Any, word: str | None) -> Any:
    """The Typer group `group` holding only what `kaja … GROUP WORD` runs, so
    that Typer reads one command's signature at start-up and not its every
    sibling's: `word` one of its commands, that one alone; `word` None (the
    group run with nothing after it), none, when its callback runs without a
    command and a bare call is not its help. Anything else (an option, a
    typo, `--help`) gets `group` itself, whose help and errors name every
    command. Typer's `registered_commands`, `registered_groups`,
    `registered_callback` and `info` are undocumented attributes."""
    commands = group.registered_commands
    names = [c.name for c in commands]
    if group.registered_groups or None in names:
        return group  # a name Typer would derive itself: not guessed here
    if word is None:
        bare = _setting(group, "invoke_without_command") and not _setting(group, "no_args_is_help")
        if not bare:
            return group
        keep = []
    elif word in names:
        keep = [c for c in commands if c.name == word]
    else:
        return group
    one = copy.copy(group)
    one.registered_commands = keep
    return one


def _setting(group: Any, name: str) -> Any:
    """A group's setting as Typer settles it: its callback's, else its own, else off."""
    from typer.models import DefaultPlaceholder

    for info in (group.registered_callback, group.info):
        value = getattr(info, name, None)
        if value is not None and not isinstance(value, DefaultPlaceholder):
            return value
    return False


# --- ranges in help (commands/__init__.py) ---------------------------------------------------
def quiet_range(cls: type) -> type:
    """`cls` (an IntRange or FloatRange) whose help shows its range only when
    its `shown` says so: click draws `[0<=x<=1000000000]` beside every count
    from `_describe_range`, its only hook for it, and a bound nobody meets
    tells a user nothing."""

    class Quiet(cls):  # type: ignore[misc, valid-type]
        shown = True

        def _describe_range(self) -> str:
            return super()._describe_range() if self.shown else ""

    return Quiet


# --- shell completion (completion/shells.py, completion/install.py) --------------------------
def completion_classes() -> tuple[type, type, type]:
    """Typer's completion classes for bash, zsh and fish, which kaja's subclass."""
    from typer import _completion_classes as c

    return c.BashComplete, c.ZshComplete, c.FishComplete


def sanitize_help_text(text: str) -> str:
    """A candidate's help as Typer shows it (markup taken out)."""
    from typer import _completion_classes

    return _completion_classes._sanitize_help_text(text)


def register_completion_class(cls: type) -> None:
    """Answer completion requests for `cls.name` with `cls`."""
    from typer._click.shell_completion import add_completion_class

    add_completion_class(cls, cls.name)


def set_completion_script(shell: str, script: str) -> None:
    """The script `--show-completion` prints and `--install-completion` writes for `shell`."""
    from typer import _completion_shared

    _completion_shared._completion_scripts[shell] = script


def install_completion(shell: str, prog_name: str) -> Path:
    """Typer's `--install-completion` for `shell`: the start-up file it wrote."""
    from typer import _completion_shared

    return Path(_completion_shared.install(shell=shell, prog_name=prog_name)[1])


# --- help screens (render/help.py) ------------------------------------------------------------
def help_drawers() -> tuple[Any, Any]:
    """Typer's (options panel, paragraph joiner): the two steps of a help screen kaja redraws."""
    from typer import rich_utils

    return rich_utils._print_options_panel, rich_utils._fix_linebreaks


def replace_help_drawers(options_panel: Any, fix_linebreaks: Any) -> None:
    from typer import rich_utils

    rich_utils._print_options_panel = options_panel
    rich_utils._fix_linebreaks = fix_linebreaks


def help_width() -> int:
    """The width Typer draws help at (its console's)."""
    from typer import rich_utils

    return rich_utils._get_rich_console().width
