"""The `kaja` command: root options, command registration, and the one place
where errors become exit codes and one line on stderr."""

import os

if "_KAJA_COMPLETE" in os.environ:
    # A TAB press: answered from a generated table before Typer is imported
    # (kaja_cli/completion); what that does not handle falls through to Typer.
    from kaja_cli.completion import fast

    fast.run()

import gc

# Start-up is felt on every TAB press: the cyclic GC finds nothing to free
# while modules load, yet runs many times during typer's import (~3 ms here).
# It is back on at the end of this module, before any command runs.
gc.disable()

import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated  # noqa: E402

import typer  # noqa: E402

from kaja_cli import __version__  # noqa: E402
from kaja_cli.commands import typed_path  # noqa: E402
from kaja_cli.errors import ExitStatus, KajaError  # noqa: E402


def _help_by_the_layout_rule() -> None:
    """Every help screen drawn through kaja_cli/render/help.py (the layout rule at
    any width), imported only when one is drawn."""
    from typer import core

    for cls in (core.TyperCommand, core.TyperGroup):
        if getattr(cls.format_help, "kaja", False):
            continue  # this module run a second time

        def format_help(self, ctx, formatter, _typers=cls.format_help):
            from kaja_cli.render import help
            from kaja_cli.render.examples import epilog

            help.patch()
            self.epilog = self.epilog or epilog(ctx.command_path)
            return _typers(self, ctx, formatter)

        format_help.kaja = True
        cls.format_help = format_help


_help_by_the_layout_rule()

_SETTINGS = dict(
    name="kaja",
    help="Administer the local storage of Kaja, your personal AI agent.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(ctx: typer.Context, value: bool) -> None:
    # Not while completing (`kaja --version <TAB>`): the version is no candidate.
    if value and not ctx.resilient_parsing:
        sys.stdout.write(f"kaja {__version__}\n")
        raise typer.Exit()


def root(
    ctx: typer.Context,
    config_path: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="PATH",
            click_type=typed_path(),
            help="settings.toml to use \\[env: KAJA_CONFIG].",
        ),
    ] = None,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            metavar="DIR",
            click_type=typed_path(),
            help="State folder \\[env: KAJA_STATE_DIR].",
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            metavar="PATH",
            click_type=typed_path(),
            help="The shared database file \\[env: KAJA_DB_PATH].",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            metavar="URL",
            help="Use cloud mode on this PostgreSQL server (postgresql://user@host/db).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Administer the local storage of Kaja, your personal AI agent.

    Kaja keeps everything it remembers in SQLite on this machine (in cloud
    mode, its conversations in a PostgreSQL server: --database-url). kaja
    shows where it lives, lists and searches conversations, reports usage,
    diagnoses problems and deletes data safely.
    """
    from kaja_cli.core.store.paths import Overrides

    if database_url is not None:
        from kaja_cli.core.store.settings import keys as settings_keys
        from kaja_cli.errors import UsageError

        problem = settings_keys.check(settings_keys.KEYS["memory.databaseUrl"], database_url)
        if problem:
            raise UsageError(f"--database-url: {problem}")
    ctx.obj = Overrides(config=config_path, state_dir=state_dir, db=db, database_url=database_url)


# Grouped in --help the way people reach for them.
CONVERSATIONS, CARE, SETUP = "Conversations", "Usage, health, backups and deleting", "Setup"
SIDE = "Side databases"
AUDIT = "What the agent did"
# Every command: its name, the module of kaja_cli.commands and the attribute
# that holds it (a Typer app is a group, a function a command), and its panel
# in --help, in the order --help lists them.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "sessions": ("sessions", "app", CONVERSATIONS),
    "resume": ("resume", "resume", CONVERSATIONS),
    "search": ("search", "search", CONVERSATIONS),
    "browse": ("browse", "browse", CONVERSATIONS),
    "notes": ("notes", "app", CONVERSATIONS),
    "runs": ("audit", "runs_app", AUDIT),
    "reviews": ("audit", "reviews_app", AUDIT),
    "tasks": ("audit", "tasks", AUDIT),
    "schedules": ("audit", "schedules", AUDIT),
    "triggers": ("audit", "triggers", AUDIT),
    "learning": ("audit", "learning_app", AUDIT),
    "artifacts": ("audit", "artifacts_app", AUDIT),
    "usage": ("usage", "app", CARE),
    "sync": ("sync", "app", CARE),
    "stats": ("stats", "app", CARE),
    "doctor": ("doctor", "doctor", CARE),
    "wipe": ("wipe", "wipe", CARE),
    "backup": ("backup", "backup", CARE),
    "restore": ("backup", "restore", CARE),
    "optimize": ("optimize", "optimize", CARE),
    "cache": ("cache", "app", SIDE),
    "accounts": ("accounts", "app", SIDE),
    "config": ("config", "app", SETUP),
    "demo": ("demo", "demo", SETUP),
    "migrate": ("migrate", "migrate", SETUP),
}
# The root options that take a value (`--db PATH`): the word after one is no command.
_VALUED = ("--config", "--state-dir", "--db", "--database-url")
_apps: dict[tuple[str | None, str | None], typer.Typer] = {}


_EVERY = "\0every"  # build(): every command of a group (no word after it chose one)


def _register(app: typer.Typer, name: str, then: str | None = _EVERY) -> None:
    import importlib

    module, attribute, panel = COMMANDS[name]
    found = getattr(importlib.import_module(f"kaja_cli.commands.{module}"), attribute)
    if isinstance(found, typer.Typer):
        if then != _EVERY:
            from kaja_cli.typer_internals import narrowed

            found = narrowed(found, then)
        app.add_typer(found, name=name, rich_help_panel=panel)
    else:
        app.command(name, rich_help_panel=panel)(found)


def build(name: str | None = None, then: str | None = _EVERY) -> typer.Typer:
    """The kaja app with every command (`name` None: for --help, an unknown
    command, completion), or with the one command `name` alone: Typer builds
    and introspects only what will run, so start-up does not grow with the
    command list. Of a group, `then` (the word after its name, None when
    there is none) keeps only the command it names (`typer_internals.narrowed`:
    `kaja sessions export` reads one signature, not ten). Each is built once
    (a process runs one; the tests many)."""
    key = (name, then if name is not None else _EVERY)
    if key not in _apps:
        app = typer.Typer(**_SETTINGS)
        app.callback()(root)
        for each in COMMANDS if name is None else (name,):
            _register(app, each, key[1])
        _apps[key] = app
    return _apps[key]


def _deeper(error: Exception) -> str | None:
    """`kaja export`: "No such command", naming the commands one level down
    with that name (`kaja sessions export`, `kaja notes export`) rather than
    click's guess at a misspelling; None when there is none."""
    import re

    typed = re.match(r"No such command '(.+?)'\.", error.format_message())  # type: ignore[attr-defined]
    ctx = getattr(error, "ctx", None)
    if typed is None or ctx is None:
        return None
    found = [f"`{ctx.command_path} {name} {typed[1]}`"
             for name, group in getattr(ctx.command, "commands", {}).items()
             if typed[1] in getattr(group, "commands", {})]  # fmt: skip
    if not found:
        return None
    either = ", ".join(found[:-1]) + " or " + found[-1] if len(found) > 1 else found[0]
    return f"No such command {typed[1]!r}. Did you mean {either}?"


def command_named(args: list[str]) -> str | None:
    """The command `args` run, when that is one of kaja's; None for anything
    else (the root's --help or --version, an unknown command or option, no
    command, `--`), which the whole app answers as it always has."""
    i = _command_at(args)
    return args[i] if i is not None else None


def _word_after(args: list[str]) -> str | None:
    """The word after the command's name in `args` (None when there is none)."""
    i = _command_at(args)
    return args[i + 1] if i is not None and i + 1 < len(args) else None


def _command_at(args: list[str]) -> int | None:
    i = 0
    while i < len(args):
        word = args[i]
        if word in _VALUED:
            i += 2
            continue
        if word.startswith(tuple(v + "=" for v in _VALUED)):
            i += 1
            continue
        return i if word in COMMANDS else None
    return None


def __getattr__(name: str) -> typer.Typer:
    """`kaja_cli.app.app`: the whole app (completions/generate.py, the tests)."""
    if name == "app":
        return build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run kaja; every failure ends as one line on stderr and a documented exit code."""
    from kaja_cli.core.side import profiler

    if "_KAJA_COMPLETE" not in os.environ:  # a TAB press that reached Typer records nothing
        profiler.begin()  # kaja's own queries, written to db-stats.db when it ends
    try:
        _run()
    finally:
        profiler.finish()


def _run() -> None:
    from kaja_cli.typer_internals import click as _click

    try:
        if "--install-completion" in sys.argv[1:]:
            from kaja_cli.completion import install

            sys.exit(install.install(sys.argv[1:]))
        if os.environ.get("_KAJA_COMPLETE"):  # what the fast path left to Typer
            from kaja_cli.completion import shells

            sys.exit(shells.answer(build()))
        if "--show-completion" in sys.argv[1:]:
            from kaja_cli.completion import shells

            shells.register()  # kaja's bash script, not Typer's
        # Not standalone: click's usage errors come here (one line, not a box),
        # and so does every exit code.
        app = build(command_named(sys.argv[1:]), _word_after(sys.argv[1:]))
        code = app(prog_name="kaja", standalone_mode=False)
        sys.stdout.flush()
    except _click.exceptions.NoArgsIsHelpError as e:
        from typer import rich_utils

        rich_utils.rich_format_error(e)  # `kaja` alone: the help, as typer shows it
        sys.exit(ExitStatus.USAGE)
    except _click.exceptions.UsageError as e:
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
        _fail(f"{_deeper(e) or e.format_message()}{where}", ExitStatus.USAGE)
    except _click.exceptions.ClickException as e:
        _fail(
            e.format_message(),
            ExitStatus(e.exit_code) if e.exit_code in ExitStatus else ExitStatus.FAILED,
        )
    except typer.Abort:
        _fail("interrupted", ExitStatus.INTERRUPTED)
    except SystemExit as e:
        if e.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _reader_went_away()  # typer's answer to a broken pipe is exit 1
        raise
    except KajaError as e:
        _fail(str(e), e.status)
    except KeyboardInterrupt:
        _fail("interrupted", ExitStatus.INTERRUPTED)
    except BrokenPipeError:
        _reader_went_away()
    except OSError as e:
        # The file system said no (permissions, a file where a folder should
        # be, a full disk): say which path and why.
        where = f" ({e.filename})" if e.filename else ""
        _fail(f"{e.strerror or e}{where}", ExitStatus.FAILED)
    except Exception as e:
        if os.environ.get("KAJA_DEBUG"):
            raise
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is not None and isinstance(e, sqlite3.Error):
            from kaja_cli.core.engine.db import (
                translate,  # busy stays exit 4, wherever it came from
            )

            error = translate(e, Path("the store"))
            _fail(str(error), error.status)
        from kaja_cli.core.masking import mask_text  # a driver's words may quote a URL

        _fail(
            f"internal error: {type(e).__name__}: {mask_text(str(e))}"
            " (rerun with KAJA_DEBUG=1 for details)",
            ExitStatus.FAILED,
        )
    if code == ExitStatus.INTERRUPTED:  # typer turns Ctrl-C into a silent exit 130
        _fail("interrupted", ExitStatus.INTERRUPTED)
    sys.exit(code if isinstance(code, int) else ExitStatus.OK)


def _reader_went_away() -> None:
    """`kaja … | head`: the reader stopped reading. Not a failure: exit 0, quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(ExitStatus.OK)


def _fail(message: str, status: ExitStatus) -> None:
    try:
        from kaja_cli import render

        render.note(message)  # one line; on a terminal, wrapped at words
    except Exception:
        try:
            sys.stderr.write(f"kaja: {message}\n")
        except Exception:
            pass
    try:
        sys.stderr.flush()
    except Exception:
        pass
    sys.exit(int(status))


gc.freeze()  # what start-up loaded stays: later collections skip it
gc.enable()
