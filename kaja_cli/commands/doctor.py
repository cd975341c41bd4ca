"""`kaja doctor`: check the storage and say what is wrong, for a person or a ticket."""

from typing import Annotated

import typer

from kaja_cli.commands import JSON_HELP, overrides
from kaja_cli.completion.hooks import hook

MARKS = {"ok": "✓", "warn": "!", "error": "✗"}
ASCII_MARKS = {"ok": "+", "warn": "!", "error": "x"}
STYLES = {"ok": "green", "warn": "yellow", "error": "red"}


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
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Never page long output on a terminal.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Check Kaja's files and settings, and say what is wrong and how to fix it.

    Each check prints one line: ✓ fine, ! a warning, ✗ an error, grouped
    (environment, paths, settings, shared file, search index, images, side
    databases, sync), then "no problems" or how many errors and warnings.
    Exit status 1 when any check is an error, 0 otherwise.

    Doctor only reads: it never prompts, never waits long on a locked file, and
    reports a file another process holds as in use (Kaja is running). Nothing
    changes without --fix, and --fix never deletes anything. In cloud mode it
    checks the PostgreSQL server instead of the local databases.
    """
    from kaja_cli import render
    from kaja_cli.core.care import doctor as core
    from kaja_cli.core.side import profiler

    profiler.discard()  # doctor leaves every file as it found it, db-stats.db too
    if list_checks:
        _print_list(core, as_json)
        return
    report = core.run(overrides(ctx), only=check or (), thorough=thorough, fix=fix)
    if redact:
        report = core.redacted(report)
    if as_json:
        render.emit_json(report.to_dict())
    else:
        _print_report(report, pager=not no_pager)
    if report.errors:
        raise typer.Exit(1)


def _print_list(core, as_json: bool) -> None:
    from kaja_cli import render

    specs = core.list_checks()
    names = ", ".join(core.DATABASE_NAMES)
    rows = [
        {
            "id": s.id,
            "group": s.group,
            "about": s.about,
            "per_database": s.per_database,
        }
        for s in specs
    ]
    if as_json:
        render.emit_json({"checks": rows, "databases": list(core.DATABASE_NAMES)})
        return
    footer = f"<db> is one of {names}; `--check ID` takes a check or one of its results."
    if render.stdout_is_terminal():  # the layout rule: ids whole, what each does wrapped
        render.table(
            [render.Col("check", kind="whole"), render.Col("what it looks at")],
            [[f"{s.id}.<db>" if s.per_database else s.id, s.about] for s in specs],
            caption=footer,
        )
        return
    width = max(len(s.id) for s in specs) + 6
    out = []
    for s in specs:
        name = f"{s.id}.<db>" if s.per_database else s.id
        out.append(f"{name:<{width}}{s.about}")
    out.append(f"\n{footer}")
    _write("\n".join(out) + "\n")


def _marks() -> dict[str, str]:
    import sys

    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "".join(MARKS.values()).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII_MARKS
    return MARKS


def _print_report(report, *, pager: bool) -> None:
    """One line per check under its group; details and the fix under a problem.

    A line is a list of (text, style) pieces: plain text when piped or with
    NO_COLOR, the mark and the verdict colored on a terminal.
    """
    from kaja_cli import render

    marks = _marks()
    lines: list[list[tuple[str, str]]] = []
    if report.fixes is not None:
        lines.append([("fixes", "bold")])
        if not report.fixes:
            lines.append([("  nothing to fix", "")])
        for f in report.fixes:
            status = "ok" if f.done else "error"
            lines.append([("  ", ""), (marks[status], STYLES[status]), (f" {f.message}", "")])
        lines.append([])
    for group, checks in report.grouped():
        lines.append([(group, "bold")])
        for c in checks:
            line = [("  ", ""), (marks[c.status], STYLES[c.status]), (f" {c.summary}", "")]
            if c.status != "ok":
                line.append((f"  [{c.id}]", "dim"))
            lines.append(line)
            if c.status != "ok":
                lines.extend([(f"      {d}", "dim")] for d in c.details)
                if c.fix:
                    how = "kaja doctor --fix will" if c.fixable else "to fix"
                    lines.append([(f"      {how}: {c.fix}", "")])
    style = "red" if report.errors else "yellow" if report.warnings else "green"
    lines.append([(report.verdict(), f"bold {style}")])
    # On a terminal each line wraps at words under its own text (render's
    # rule), and a report longer than the screen is paged.
    render.print_lines(lines, pager=pager)


def _write(text: str) -> None:
    import sys

    sys.stdout.write(text)
