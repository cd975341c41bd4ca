"""Output: Rich tables on a terminal, plain tab-separated text when piped, JSON.

`render.replay` turns a session into what a person reads (the `kaja resume`
replay, the Markdown export); this module holds the building blocks every
command prints with.

Rich is imported only when something is drawn for a person (a table, a
progress bar, a question); `--json` and piped output never load it.
`NO_COLOR` is honoured (by Rich, and by our own plain output having no color).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from kaja_cli.core.fs import human_size  # noqa: F401 - one definition, shared with the core
from kaja_cli.core.wording import noun, plural  # noqa: F401 - the same wording as the core
from kaja_cli.errors import Declined, Refused


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def terminal_width() -> int:
    """Columns of the terminal (COLUMNS wins, as with Rich); 100 when unknown."""
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def console(*, stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def emit_json(data: Any) -> None:
    """One JSON document on stdout: indented for a person at a terminal,
    compact when piped (to jq or a file), like every --json of kaja."""
    import json  # not at the top: piped tables never need it

    if stdout_is_terminal():
        text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    else:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    sys.stdout.write(text + "\n")


def json_document(head: dict[str, Any], key: str, items: Iterable[str]) -> str:
    """Compact JSON text of `head` plus `key`: a list of items that are JSON
    text already (serialized by SQLite: nothing is parsed and encoded again)."""
    import json

    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"), default=str)
    return text[:-1] + ("," if head else "") + json.dumps(key) + ":[" + ",".join(items) + "]}"


def emit_json_document(head: dict[str, Any], key: str, items: Iterable[str]) -> None:
    """`json_document` on stdout; indented for a person at a terminal."""
    if stdout_is_terminal():
        import json

        emit_json(head | {key: [json.loads(i) for i in items]})
        return
    sys.stdout.write(json_document(head, key, items) + "\n")


def note(message: str) -> None:
    """A diagnostic line on stderr (never mixed into what a script parses)."""
    sys.stderr.write(f"kaja: {message}\n")


class Col(NamedTuple):
    header: str
    justify: str = "left"  # "left" | "right"
    style: str | None = None
    no_wrap: bool = False
    max_width: int | None = None
    min_width: int | None = None
    ratio: int | None = None  # takes the width left over (one flexible column per table)
    overflow: str = "fold"  # "ellipsis": cut to one line with …


class Styled(NamedTuple):
    """A table cell with a Rich style on a terminal (plain text when piped)."""

    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


# Control characters a value from the store may hold (a NUL, an escape
# sequence): shown as `\x00`, never written raw to a terminal or a pipe.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_ONE_LINE = str.maketrans({**_CONTROLS, **dict.fromkeys(map(ord, "\t\n\r\v\f"), " ")})
_LINES = str.maketrans({c: e for c, e in _CONTROLS.items() if c not in (0x09, 0x0A)})


def text(value: Any, *, lines: bool = False) -> str:
    """Any value from the store as text: the one place a stored value becomes
    something printed (table cells, tab-separated rows, replays, Markdown
    headings). NULL is empty, a BLOB its hex, a number its digits; control
    characters are escaped (`\x00`), and tabs and line breaks become spaces
    (with `lines`, line breaks and tabs stay)."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex().upper()  # as SQLite's hex() and --json show it
    return str(value).translate(_LINES if lines else _ONE_LINE)


def _plain(value: Any) -> str:
    return text(value)


def _cell(value: Any) -> Any:
    """A table cell for Rich: text is shown as is, never read as markup (a
    title like "[draft]" comes from the database, not from us)."""
    from rich.text import Text

    if value is None:
        return ""
    if isinstance(value, Styled):
        return Text(text(value.text, lines=True), style=value.style)
    if isinstance(value, str | int | float | bytes):
        return Text(text(value, lines=True))
    return value


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
            c.header, justify=c.justify, style=c.style, no_wrap=c.no_wrap, max_width=c.max_width,
            min_width=c.min_width, ratio=c.ratio, overflow=c.overflow,
        )  # type: ignore[arg-type]  # fmt: skip
    for row in rows:
        t.add_row(*(_cell(v) for v in row))
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
def _number(value: Any) -> int | float | None:
    """A stored number as one, or None (NULL, 'slow', NaN, an infinity)."""
    import math

    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if isinstance(value, int) or math.isfinite(value) else None


def human_count(value: Any) -> str:
    """950, 12.3k, 1.2M: a count at a glance (anything else shown as it is)."""
    n = _number(value)
    if n is None:
        return "-" if value is None else text(value)
    for limit, div, unit in ((1_000_000_000, 1_000_000_000, "G"), (1_000_000, 1_000_000, "M"),
                             (1000, 1000, "k")):  # fmt: skip
        if abs(n) >= limit:
            return f"{n / div:.1f}{unit}"
    return str(n)


def relative_time(value: Any, now: datetime | None = None) -> str:
    """ "3h ago", "2d ago", or the date for anything older than a month."""
    from kaja_cli.core.clock import parse_stored

    dt = parse_stored(value) if isinstance(value, str) else None
    if dt is None:
        return text(value) or "-"
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


def human_duration(value: Any) -> str:
    """ "850 ms", "12.4 s", "7m 05s", "3h 12m", "4d 02h" (anything else shown as it is)"""
    ms = _number(value)
    if ms is None:
        return "-" if value is None else text(value)
    if ms < 1000:
        return f"{int(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {s:02d}s"
    hours, m = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {m:02d}m"
    days, h = divmod(hours, 24)
    return f"{days}d {h:02d}h"


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: float, largest: float, width: int = 30) -> str:
    """A horizontal bar of unicode blocks, `width` cells for `largest` (terminal charts)."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / largest * width * 8))
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


# --- long text for a person ----------------------------------------------------------
Line = Sequence[tuple[str, str]]  # (text, Rich style) segments of one line


def print_lines(lines: Sequence[Line], *, pager: bool = True) -> None:
    """Styled lines: plain text when piped; on a terminal with their styles,
    and through a pager when they would not fit on the screen.

    Styles are a few words Rich also understands ("bold cyan", "dim italic"),
    written as escape codes here: Rich takes ~0.1 ms a line, and a long
    conversation is 100,000 lines. `NO_COLOR` drops the colors and keeps
    bold, dim and italic (as Rich does); control characters from the
    database are never written raw, to a terminal or a pipe (`text`).

    The pager is `$KAJA_PAGER`, else `$PAGER`, else `less`; like git, `LESS`
    defaults to `FRX` (quit if one screen, keep colors, leave the screen as it
    is). An empty value or `cat` means no pager.
    """
    if not stdout_is_terminal():
        out = sys.stdout
        for line in lines:
            out.write("".join(part.translate(_LINES) for part, _ in line) + "\n")
        return
    import shutil

    styled = os.environ.get("TERM") != "dumb"
    color = styled and "NO_COLOR" not in os.environ
    codes: dict[str, str] = {}
    width, height = shutil.get_terminal_size()
    rows = 0
    out_lines = []
    for line in lines:
        parts = []
        length = 0
        for part, style in line:
            shown = part.translate(_LINES)
            length += len(shown)
            sgr = codes.get(style)
            if sgr is None:
                words = [_SGR[w] for w in style.split() if w in _SGR]
                if not color:
                    words = [w for w in words if not w.startswith("3") or len(w) == 1]
                sgr = codes[style] = f"\x1b[{';'.join(words)}m" if styled and words else ""
            parts.append(f"{sgr}{shown}\x1b[0m" if sgr and shown else shown)
        rows += max(1, -(-length // max(width, 1)))
        out_lines.append("".join(parts))
    page = "\n".join(out_lines) + "\n"
    if pager and rows > height and _page(page):
        return
    sys.stdout.write(page)
    sys.stdout.flush()


_SGR = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "red": "31", "green": "32",
        "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36", "white": "37"}  # fmt: skip


def _page(text: str) -> bool:
    """Show `text` through the pager; False if there is none to run."""
    import shlex
    import subprocess

    command = os.environ.get("KAJA_PAGER", os.environ.get("PAGER", "less"))
    argv = shlex.split(command) if command.strip() else []
    if not argv or argv == ["cat"]:
        return False
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        with proc.stdin as pipe:
            pipe.write(text.encode(sys.stdout.encoding or "utf-8", "replace"))
    except (BrokenPipeError, OSError):
        pass  # the reader quit the pager early
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the pager handles Ctrl-C; leaving it would break the terminal
    return True
