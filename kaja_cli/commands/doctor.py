"""`kaja doctor`: check the storage and say what is wrong, for a person or a ticket."""

from typing import Annotated

import typer

from kaja_cli.commands import overrides
from kaja_cli.commands.options import Json, NoPager
from kaja_cli.completion.hooks import hook


def doctor(
    ctx: typer.Context,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Apply the safe repairs (missing tables and columns, the search index, "
            "a checkpoint, permissions), say what was done, then check again.",
        ),
    ] = False,
    thorough: Annotated[
        bool,
        typer.Option(
            "--thorough",
            help="Run integrity_check instead of quick_check, and FTS4's own "
            "integrity-check of the search index (slower).",
        ),
    ] = False,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Leave out what reads in proportion to the store (quick_check, the orphan "
            "and image scans, counting messages): an answer in about a second on any store, "
            "for a support ticket. The report lists what was left out.",
        ),
    ] = False,
    check: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            metavar="ID",
            autocompletion=hook("check"),
            help="Run only this check (repeatable); see --list-checks.",
        ),
    ] = None,
    list_checks: Annotated[
        bool, typer.Option("--list-checks", help="List the checks and exit.")
    ] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace your home folder, user name and host name everywhere, "
            "for pasting into a support ticket.",
        ),
    ] = False,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """Check Kaja's files and settings, and say what is wrong and how to fix it.

    Each check prints one line: ✓ fine, ! a warning, ✗ an error, grouped
    (environment, paths, settings, server, shared file, search index, images,
    agent, side databases, sync, qdrant), then "no problems" or how many
    errors and warnings. Exit status 1 when any check is an error, 0 otherwise.
    On a terminal, a last line says how to get a copy safe to paste into a
    support ticket (--redact).

    Doctor only reads: it never prompts, never waits long on a locked file, and
    reports a file another process holds as in use (Kaja is running). Nothing
    changes without --fix, and --fix never deletes anything. In cloud mode it
    checks the PostgreSQL server instead of the local databases.

    Its memory stays bounded (under 100 MB) whatever the store's size; the
    full checks take time in proportion to it, with a progress bar on a
    terminal. --quick leaves those scans out and says which.
    """
    from functools import partial

    from kaja_cli import render
    from kaja_cli.core.care import doctor as core
    from kaja_cli.core.side import profiler
    from kaja_cli.render import doctor as view

    profiler.discard()  # doctor leaves every file as it found it, db-stats.db too
    if list_checks:
        listed = {"checks": [s.to_json() for s in core.list_checks()],
                  "databases": list(core.DATABASE_NAMES)}  # fmt: skip
        render.emit(listed, as_json, view.checks)
        return
    report = core.run(overrides(ctx), only=check or (), thorough=thorough, quick=quick, fix=fix,
                      progress=render.progress_when_shown(as_json))  # fmt: skip
    if redact:
        report = core.redacted(report)
    show = partial(view.report, redacted=redact)
    render.emit(report, as_json, show, pager=not no_pager)
    if report.errors:
        raise typer.Exit(1)
