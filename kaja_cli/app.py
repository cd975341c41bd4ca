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
from kaja_cli.commands import (  # noqa: E402
    accounts,
    audit,
    backup,
    browse,
    cache,
    config,
    demo,
    doctor,
    migrate,
    notes,
    optimize,
    resume,
    search,
    sessions,
    stats,
    sync,
    typed_path,
    usage,
    wipe,
)
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

            help.patch()
            return _typers(self, ctx, formatter)

        format_help.kaja = True
        cls.format_help = format_help


_help_by_the_layout_rule()

app = typer.Typer(
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


@app.callback()
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
app.add_typer(sessions.app, name="sessions", rich_help_panel=CONVERSATIONS)
app.command("resume", rich_help_panel=CONVERSATIONS)(resume.resume)
app.command("search", rich_help_panel=CONVERSATIONS)(search.search)
app.command("browse", rich_help_panel=CONVERSATIONS)(browse.browse)
app.add_typer(notes.app, name="notes", rich_help_panel=CONVERSATIONS)
app.add_typer(audit.runs_app, name="runs", rich_help_panel=AUDIT)
app.add_typer(audit.reviews_app, name="reviews", rich_help_panel=AUDIT)
app.command("tasks", rich_help_panel=AUDIT)(audit.tasks)
app.command("schedules", rich_help_panel=AUDIT)(audit.schedules)
app.command("triggers", rich_help_panel=AUDIT)(audit.triggers)
app.add_typer(audit.learning_app, name="learning", rich_help_panel=AUDIT)
app.add_typer(audit.artifacts_app, name="artifacts", rich_help_panel=AUDIT)
app.add_typer(usage.app, name="usage", rich_help_panel=CARE)
app.add_typer(sync.app, name="sync", rich_help_panel=CARE)
app.add_typer(stats.app, name="stats", rich_help_panel=CARE)
app.command("doctor", rich_help_panel=CARE)(doctor.doctor)
app.command("wipe", rich_help_panel=CARE)(wipe.wipe)
app.command("backup", rich_help_panel=CARE)(backup.backup)
app.command("restore", rich_help_panel=CARE)(backup.restore)
app.command("optimize", rich_help_panel=CARE)(optimize.optimize)
app.add_typer(cache.app, name="cache", rich_help_panel=SIDE)
app.add_typer(accounts.app, name="accounts", rich_help_panel=SIDE)
app.add_typer(config.app, name="config", rich_help_panel=SETUP)
app.command("demo", rich_help_panel=SETUP)(demo.demo)
app.command("migrate", rich_help_panel=SETUP)(migrate.migrate)


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
    from typer import _click

    try:
        if "--install-completion" in sys.argv[1:]:
            from kaja_cli.completion import install

            sys.exit(install.install(sys.argv[1:]))
        if os.environ.get("_KAJA_COMPLETE"):  # what the fast path left to Typer
            from kaja_cli.completion import shells

            sys.exit(shells.answer(app))
        if "--show-completion" in sys.argv[1:]:
            from kaja_cli.completion import shells

            shells.register()  # kaja's bash script, not Typer's
        # Not standalone: click's usage errors come here (one line, not a box),
        # and so does every exit code.
        code = app(prog_name="kaja", standalone_mode=False)
        sys.stdout.flush()
    except _click.exceptions.NoArgsIsHelpError as e:
        from typer import rich_utils

        rich_utils.rich_format_error(e)  # `kaja` alone: the help, as typer shows it
        sys.exit(ExitStatus.USAGE)
    except _click.exceptions.UsageError as e:
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
        _fail(f"{e.format_message()}{where}", ExitStatus.USAGE)
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
