"""kaja_cli/typer_internals.py: typer's unpublished names that kaja uses are still
there, with the shape kaja relies on. Run against a new typer before raising its
bound in pyproject.toml: this fails on the release that would break kaja.

The behaviour behind each (help screens at any width, completion in real shells,
exit codes) has its own tests; these say which name moved when one does."""

from __future__ import annotations

import inspect

from kaja_cli import typer_internals


def _takes(function, *names: str) -> bool:
    return set(names) <= set(inspect.signature(function).parameters)


def test_clicks_exceptions_and_ranges():
    """app.py maps these to exit codes; commands/__init__.py subclasses the ranges."""
    exceptions = typer_internals.click.exceptions
    assert issubclass(exceptions.NoArgsIsHelpError, exceptions.UsageError)
    assert issubclass(exceptions.UsageError, exceptions.ClickException)
    count = typer_internals.IntRange(min=0, max=10)
    assert count.convert("7", None, None) == 7
    assert typer_internals.FloatRange(min=0, max=1.5).convert("1.5", None, None) == 1.5
    assert typer_internals.TyperPath(path_type=None).convert("a b", None, None) == "a b"
    quiet = typer_internals.quiet_range(typer_internals.IntRange)(min=0, max=5)
    assert quiet._describe_range() == "0<=x<=5"  # the hook typer's help reads
    quiet.shown = False
    assert quiet._describe_range() == ""


def test_completion_classes_and_scripts():
    bash, zsh, fish = typer_internals.completion_classes()
    assert (bash.name, zsh.name, fish.name) == ("bash", "zsh", "fish")
    for cls in (bash, zsh, fish):
        assert callable(cls.complete) and callable(cls.get_completion_args)
        assert isinstance(cls.source_template, str)
    assert typer_internals.sanitize_help_text("[bold]Resume[/bold] it") == "Resume it"
    from typer import _completion_shared

    assert {"bash", "zsh", "fish"} <= set(_completion_shared._completion_scripts)
    assert _takes(_completion_shared.install, "shell", "prog_name")


def test_registering_a_completion_class_answers_with_it():
    from typer._click.shell_completion import get_completion_class

    bash, _, _ = typer_internals.completion_classes()

    class Mine(bash):
        name = "kaja-test-shell"

    typer_internals.register_completion_class(Mine)
    assert get_completion_class("kaja-test-shell") is Mine


def test_the_help_drawers_kaja_wraps():
    """render/help.py calls typer's options panel with these keywords, and its
    paragraph joiner with (paragraphs, markup_mode)."""
    options_panel, fix_linebreaks = typer_internals.help_drawers()
    assert _takes(options_panel, "name", "params", "ctx", "markup_mode", "console")
    assert list(inspect.signature(fix_linebreaks).parameters)[:2] == ["paragraphs", "markup_mode"]
    assert isinstance(typer_internals.help_width(), int)
    try:
        typer_internals.replace_help_drawers(len, str)
        assert typer_internals.help_drawers() == (len, str)
    finally:
        typer_internals.replace_help_drawers(options_panel, fix_linebreaks)


def test_a_group_narrowed_to_one_command_builds_that_command_alone():
    """app.py's start-up: `kaja sessions export` builds export, not its nine
    siblings; a bare `kaja sessions` none (its callback runs without one);
    anything else the whole group, whose help and errors name every command."""
    import typer
    import typer.main

    from kaja_cli.commands.sessions import app as sessions

    def built(group) -> list[str]:
        root = typer.Typer()
        root.callback()(lambda: None)
        root.add_typer(group, name="g")
        return sorted(typer.main.get_command(root).commands["g"].commands)

    every = built(sessions)
    assert {"export", "list", "ls", "prune", "stats"} <= set(every)
    assert built(typer_internals.narrowed(sessions, "export")) == ["export"]
    assert built(typer_internals.narrowed(sessions, "ls")) == ["ls"]
    assert built(typer_internals.narrowed(sessions, None)) == []
    for word in ("exprt", "--help", "-n"):
        assert typer_internals.narrowed(sessions, word) is sessions
    assert built(sessions) == every  # the group itself is left as it was

    asks = typer.Typer(no_args_is_help=True)  # a bare call is its help: every command
    asks.command("one")(lambda: None)
    asks.command("two")(lambda: None)
    assert typer_internals.narrowed(asks, None) is asks
    assert built(typer_internals.narrowed(asks, "two")) == ["two"]
    unnamed = typer.Typer()
    unnamed.command()(lambda: None)  # a name typer derives: not guessed
    assert typer_internals.narrowed(unnamed, "lambda") is unnamed
