"""What `kaja doctor` prints for a person or a pipe: the report, one line per
check under its group, and `--list-checks` (the JSON is the report's own
`to_json()`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kaja_cli import render

if TYPE_CHECKING:
    from kaja_cli.core.care.doctor.model import Report

MARKS = {"ok": "✓", "warn": "!", "error": "✗"}
ASCII_MARKS = {"ok": "+", "warn": "!", "error": "x"}
STYLES = {"ok": "green", "warn": "yellow", "error": "red"}


def checks(listed: dict) -> None:
    """`--list-checks` (its JSON shape: the checks, the databases): a table on a
    terminal; piped, aligned lines and the footer."""
    specs, databases = listed["checks"], listed["databases"]
    footer = (f"<db> is one of {', '.join(databases)}; `--check ID` takes a check or one of its"
              " results.")  # fmt: skip
    names = [f"{s['id']}.<db>" if s["per_database"] else s["id"] for s in specs]
    if render.stdout_is_terminal():  # the layout rule: ids whole, what each does wrapped
        render.table(
            [render.Col("check", kind="whole"), render.Col("what it looks at")],
            [[name, s["about"]] for name, s in zip(names, specs, strict=True)],
            caption=footer,
        )
        return
    width = max(len(s["id"]) for s in specs) + 6
    out = [f"{name:<{width}}{s['about']}" for name, s in zip(names, specs, strict=True)]
    out.append(f"\n{footer}")
    sys.stdout.write("\n".join(out) + "\n")


def _marks() -> dict[str, str]:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "".join(MARKS.values()).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII_MARKS
    return MARKS


# The last line on a terminal, where the report names paths under the home
# folder (one line at 80 columns).
REDACT_HINT = "For a ticket, add --redact: it hides your home folder, user name and host name."


def report(report: Report, redacted: bool = False) -> None:
    """One line per check under its group; details and the fix under a problem.

    A line is a list of (text, style) pieces: plain text when piped or with
    NO_COLOR, the mark and the verdict colored on a terminal. On a terminal,
    unless the report is `redacted` already, a last line on --redact.
    """
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
    for group, found in report.grouped():
        lines.append([(group, "bold")])
        for c in found:
            line = [("  ", ""), (marks[c.status], STYLES[c.status]), (f" {c.summary}", "")]
            if c.status != "ok":
                line.append((f"  [{c.id}]", "dim"))
            lines.append(line)
            if c.status != "ok":
                lines.extend([(f"      {d}", "dim")] for d in c.details)
                if c.fix:
                    how = "kaja doctor --fix will" if c.fixable else "to fix"
                    lines.append([(f"      {how}: {c.fix}", "")])
    if report.skipped:  # --quick: one line per check (or part of one) left out
        lines.append([("skipped by --quick", "bold")])
        for s in report.skipped:
            lines.append([("  - ", "dim"), (f"{s.check}: {s.what}", "dim")])
    style = "red" if report.errors else "yellow" if report.warnings else "green"
    lines.append([(report.verdict(), f"bold {style}")])
    if not redacted and render.stdout_is_terminal():  # piped: a script's, or a file to send
        lines.append([(REDACT_HINT, "dim")])
    # On a terminal each line wraps at words under its own text (render's
    # rule), and a report longer than the screen is paged (unless --no-pager).
    render.print_lines(lines)
