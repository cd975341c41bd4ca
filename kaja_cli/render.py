"""Output: Rich tables on a terminal, plain tab-separated text when piped, JSON.

Rich is imported only when something is drawn for a person (a table, a
progress bar, a question); `--json` and piped output never load it.
`NO_COLOR` is honoured (by Rich, and by our own plain output having no color).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from kaja_cli.errors import Declined, Refused


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def console(*, stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def emit_json(data: Any) -> None:
    import json  # only --json needs it (~1.5 ms of start-up)

    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def note(message: str) -> None:
    """A diagnostic line on stderr (never mixed into what a script parses)."""
    sys.stderr.write(f"kaja: {message}\n")


def error_line(message: str) -> None:
    sys.stderr.write(f"kaja: error: {message}\n")


class Col(NamedTuple):
    header: str
    justify: str = "left"  # "left" | "right"
    style: str | None = None
    no_wrap: bool = False
    max_width: int | None = None


def _plain(value: Any) -> str:
    if value is None:
        return ""
    return str(value).replace("\t", " ").replace("\r", " ").replace("\n", " ")


def table(
    cols: Sequence[Col],
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    plain_rows: Sequence[Sequence[Any]] | None = None,
) -> None:
    """A Rich table on a terminal; tab-separated rows (no header) when piped.

    `plain_rows` lets the piped form carry exact values (ISO times, bytes)
    where the table shows friendly ones ("3h ago", "1.2 MB"). `caption`
    (a footer such as "12 more") goes to stderr when piped.
    """
    if not stdout_is_terminal():
        out = sys.stdout
        for row in plain_rows if plain_rows is not None else rows:
            out.write("\t".join(_plain(v) for v in row) + "\n")
        if caption:
            note(caption)
        return
    from rich.table import Table

    t = Table(title=title, caption=caption, box=None, header_style="bold", pad_edge=False)
    for c in cols:
        t.add_column(
            c.header, justify=c.justify, style=c.style, no_wrap=c.no_wrap, max_width=c.max_width
        )  # type: ignore[arg-type]
    for row in rows:
        t.add_row(
            *("" if v is None else v if not isinstance(v, int | float) else str(v) for v in row)
        )
    console().print(t)


def highlighted(text: str, spans: Sequence[tuple[int, int]], style: str = "bold yellow") -> Any:
    """`text` with `spans` ([start, end) offsets) styled, for a table cell on a
    terminal (NO_COLOR keeps the bold); the plain text when stdout is piped."""
    if not stdout_is_terminal():
        return text
    from rich.text import Text

    out = Text(text)
    for start, end in spans:
        out.stylize(style, start, end)
    return out


@contextmanager
def progress(
    description: str, total: int | None = None
) -> Iterator[Callable[[int, int | None], None]]:
    """A progress bar on stderr when it is a terminal; a silent callback otherwise.

    The callback takes (done, total) and is what the core's long jobs accept.
    """
    if not sys.stderr.isatty():
        yield lambda done, total=None: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console(stderr=True), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(description, total=total)

        def update(done: int, total: int | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            bar.update(task, completed=done)

        yield update


def confirm(question: str, *, assume_yes: bool) -> None:
    """Ask before a destructive action; with no terminal, refuse (exit 5)."""
    if assume_yes:
        return
    if not stdin_is_terminal():
        raise Refused("not deleting anything without confirmation", hint="rerun with --yes")
    from rich.prompt import Confirm

    try:
        answer = Confirm.ask(question, default=False, console=console(stderr=True))
    except EOFError:
        answer = False
    if not answer:
        raise Declined("cancelled: nothing was changed")


# --- friendly values ---------------------------------------------------------
def human_size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def relative_time(value: str | None, now: datetime | None = None) -> str:
    """ "3h ago", "2d ago", or the date for anything older than a month."""
    dt = parse_time(value)
    if dt is None:
        return value or "-"
    seconds = ((now or datetime.now(UTC)) - dt).total_seconds()
    if seconds < 0:
        return dt.strftime("%Y-%m-%d %H:%M")
    for limit, div, unit in (
        (60, 1, "s"),
        (3600, 60, "m"),
        (86400, 3600, "h"),
        (86400 * 30, 86400, "d"),
    ):
        if seconds < limit:
            return f"{int(seconds // div)}{unit} ago" if unit != "s" else "just now"
    return dt.strftime("%Y-%m-%d")


def color_enabled() -> bool:
    return "NO_COLOR" not in os.environ and stdout_is_terminal()
