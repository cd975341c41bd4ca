"""Output: tables and prose for a person on a terminal, plain tab-separated
text when piped, JSON; the pager.

`render.replay` turns a session into what a person reads (the `kaja resume`
replay, the Markdown export); `render.layout` computes widths and wraps;
this module holds the building blocks every command prints with.

The layout rule, for every table and every page of prose on a terminal:

- Numbers and ids are never cut or wrapped (`whole` columns: ids, counts,
  tokens, times, sizes), and neither are the marks: `⏸ approval`, ✓ ! ✗.
  Wrapped text never parts a number from its unit (`294.9 kB`, `12 ms`).
- A column with nothing in any row is left out (its header alone says nothing).
- Text columns (title, snippet, path, message, model) give way first: each
  narrows in proportion to the room it has over its narrowest, and wraps at
  word boundaries (a space, or after a hyphen or a slash), its continuation
  lines indented by one. A text column never gets narrower than its longest
  word (up to 16 columns) or a search's matched word; a longer word breaks
  after a slash or a hyphen, else where the line ends.
- Only when even that does not fit are columns dropped, least useful first,
  in the order each table declares (`Col.drop`; docs/reference/terminal.md lists them). A
  chart shrinks to 10 columns, then goes first.
- A search snippet is shown whole, wrapped: the matched words are always in it.
- Prose (a replay, doctor's details) wraps at words, the continuation indented
  by the line's own indent plus two.
- On a terminal too narrow for even the columns that never go, side by side,
  each row becomes a record: its first column, then `header: value` lines.
- Nothing is written past the right edge. Piped output is unchanged: one
  record a line, tab-separated, no wrapping, no header, no color.

Long output (longer than the screen, on a terminal) goes through a pager:
`$KAJA_PAGER`, else `$PAGER`, else `less` with `LESS=FRX` unless set; an empty
value or `cat` means none, and `--no-pager` turns it off. Lines stream into
the pager as they are made, so a 10,000-row table starts showing at once,
and rendering stops when the pager is quit.

Rich is imported only for progress bars and questions; tables, prose,
`--json` and piped output never load it. `NO_COLOR` drops colors and keeps
bold, dim and italic; `TERM=dumb` drops every style.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from kaja_cli.core.clock import SHOWN_MINUTE, ago, parse_stored
from kaja_cli.core.engine.fs import human_size  # noqa: F401 - one definition, shared with the core
from kaja_cli.core.wording import noun, plural  # noqa: F401 - the same wording as the core
from kaja_cli.errors import Declined, Refused
from kaja_cli.render.layout import (  # noqa: F401 - tables' vocabulary; the one escaping of controls
    _LINES,
    _LINES_FOUND,
    _ONE_LINE,
    _ONE_LINE_FOUND,
    ESCAPED,
    Bar,
    Col,
    Marked,
    Run,
    Styled,
)


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


# --- JSON ----------------------------------------------------------------------------------
# The escaping rule (`layout.ESCAPED`) in JSON text: the characters JSON may
# hold raw but a terminal or a viewer must not get raw (DEL, C1, the BiDi
# controls) are written as `\u009b` escapes, in whatever JSON kaja writes
# (Python's, with ensure_ascii off, or SQLite's). Python and SQLite escape
# C0 themselves. Such a character can only be inside a JSON string, so it is
# replaced wherever it is, in text or in UTF-8 bytes.
_JSON_RAW = [c for c in ESCAPED if c >= 0x7F]
_JSON_ESCAPE = re.compile("[" + "".join(re.escape(chr(c)) for c in _JSON_RAW) + "]")


def _utf8_pattern(chars: Sequence[int]) -> re.Pattern[bytes]:
    """`chars` as one pattern over UTF-8: a byte class per lead bytes."""
    by_lead: dict[bytes, list[int]] = {}
    for c in chars:
        data = chr(c).encode()
        by_lead.setdefault(data[:-1], []).append(data[-1])
    return re.compile(b"|".join(
        re.escape(lead) + b"[" + b"".join(re.escape(bytes([b])) for b in last) + b"]"
        for lead, last in by_lead.items()
    ))  # fmt: skip


_JSON_ESCAPE_UTF8 = _utf8_pattern(_JSON_RAW)


def json_text(text: str) -> str:
    """JSON text with the characters of the escaping rule as `\\u` escapes."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_JSON_LEADS = sorted({chr(c).encode()[:1] for c in _JSON_RAW})  # each one's first byte


def json_bytes(data: bytes) -> bytes:
    """`json_text` for UTF-8 JSON text as bytes (SQLite's), never decoded."""
    if data.isascii() and b"\x7f" not in data:
        return data
    if not any(lead in data for lead in _JSON_LEADS):  # a memchr each: most text has none
        return data
    return _JSON_ESCAPE_UTF8.sub(lambda m: f"\\u{ord(m.group().decode()):04x}".encode(), data)


def emit_json(data: Any) -> None:
    """One JSON document on stdout: indented for a person at a terminal,
    compact when piped (to jq or a file), like every --json of kaja."""
    import json  # not at the top: piped tables never need it

    if stdout_is_terminal():
        text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    else:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    sys.stdout.write(json_text(text) + "\n")


def json_document(head: dict[str, Any], key: str, items: Iterable[str]) -> str:
    """Compact JSON text of `head` plus `key`: a list of items that are JSON
    text already (serialized by SQLite: nothing is parsed and encoded again)."""
    import json

    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"), default=str)
    text = text[:-1] + ("," if head else "") + json.dumps(key) + ":[" + ",".join(items) + "]}"
    return json_text(text)


def emit_json_document(head: dict[str, Any], key: str, items: Iterable[str]) -> None:
    """`json_document` on stdout; indented for a person at a terminal."""
    if stdout_is_terminal():
        import json

        emit_json(head | {key: [json.loads(i) for i in items]})
        return
    sys.stdout.write(json_document(head, key, items) + "\n")


_RUN_BYTES = 1 << 16  # emit_json_stream: an item this long is not joined to others first


def emit_json_stream(head: dict[str, Any], key: str, items: Iterable[bytes]) -> None:
    """`emit_json_document` for items that are UTF-8 JSON already (each a
    message, or a run of them joined by commas), written as they come, a few
    hundred at a time, without decoding them (piped); on a terminal,
    indented for a person."""
    import json

    if stdout_is_terminal():  # an item may be a run of them, joined by commas
        emit_json(head | {key: [m for i in items for m in json.loads(b"[" + i + b"]")]})
        return
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"), default=str)
    out = sys.stdout
    out.flush()
    raw = out.buffer
    raw.write(json_text(text[:-1] + ("," if head else "") + json.dumps(key) + ":[").encode())
    batch: list[bytes] = []
    sep = b""
    for item in items:
        if len(item) >= _RUN_BYTES:  # a run of messages, or a long one: written as it is
            if batch:
                raw.write(sep + json_bytes(b",".join(batch)))
                sep, batch = b",", []
            raw.write(sep + json_bytes(item))
            sep = b","
            continue
        batch.append(item)
        if len(batch) >= 256:
            raw.write(sep + json_bytes(b",".join(batch)))
            sep, batch = b",", []
    if batch:
        raw.write(sep + json_bytes(b",".join(batch)))
    raw.write(b"]}\n")
    raw.flush()


# --- a command's result ----------------------------------------------------------------------
def emit(
    result: Any,
    as_json: bool = False,
    show: Callable[..., None] | None = None,
    *,
    pager: bool | None = None,
    **context: Any,
) -> None:
    """Print what a command found or did: the one way every command ends.

    With --json, `result.to_json(**context)` (the shape each result type
    declares; a dict given as `result` is printed as it is) as one JSON
    document; a `(head, key, items)` triple is a document whose items are
    JSON text already. Otherwise `show(result, **context)`, the result's view
    (`render/<command>.py`) for a person on a terminal or a script reading a
    pipe, inside one pager unless `pager` is False (None: no pager at all).
    """
    if as_json:
        doc = result.to_json(**context) if hasattr(result, "to_json") else result
        if isinstance(doc, tuple):
            emit_json_document(*doc)
        else:
            emit_json(doc)
        return
    if show is None:
        return
    if pager is None:
        show(result, **context)
        return
    with paged(pager):
        show(result, **context)


def preview(as_json: bool, show: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """What a person sees before the command goes on (a plan before its
    question, what finishing an interrupted restore did): `show(*args,
    **kwargs)`, unless --json, whose one document at the end says it all."""
    if not as_json:
        show(*args, **kwargs)


def note(message: str) -> None:
    """A diagnostic line on stderr (never mixed into what a script parses);
    on a terminal, wrapped at words like any prose. One line, whatever it
    quotes from the store (a title in "ambiguous" is escaped as `text` is)."""
    text = f"kaja: {message}".translate(_ONE_LINE)
    width = _stderr_width()
    if width is not None and len(text) > width:
        from kaja_cli.render import layout

        text = "\n".join("".join(t for t, _ in line)
                         for line in layout.prose_lines([(text, "")], width))  # fmt: skip
    sys.stderr.write(text + "\n")


def nothing_written(path: object) -> str:
    """What an export that matched nothing says instead of writing an empty file:
    no file is created, and one already there is not emptied."""
    there = os.path.lexists(os.fspath(path))  # type: ignore[call-overload]
    return f"nothing written to {path}" + (" (it is left as it was)" if there else "")


def _stderr_width() -> int | None:
    """Columns of the terminal stderr is on (COLUMNS wins); None when it is not one."""
    try:
        if not sys.stderr.isatty():
            return None
        columns = os.environ.get("COLUMNS", "")
        return (
            int(columns) if columns.isdigit() else os.get_terminal_size(sys.stderr.fileno()).columns
        )
    except (AttributeError, ValueError, OSError):
        return None


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
    text = value if type(value) is str else str(value)
    if lines:
        return text.translate(_LINES) if _LINES_FOUND(text) else text
    return text.translate(_ONE_LINE) if _ONE_LINE_FOUND(text) else text


def _plain(value: Any) -> str:
    return text(value)


def table(
    cols: Sequence[Col],
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
    plain_rows: Sequence[Sequence[Any]] | None = None,
) -> None:
    """A table laid out by the rule above on a terminal; tab-separated rows
    (no header) when piped.

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
    from kaja_cli.render import layout

    with paged(False) as screen:  # joins the command's pager if it opened one
        width = screen.width
        if title:
            for line in layout.prose_lines([(title, "bold")], width):
                screen.line(line)
        for line in layout.table_lines(cols, rows, width):
            if not screen.line(line):
                return  # the pager was quit: stop rendering
        if caption:
            for line in layout.prose_lines([(caption, "dim")], width):
                screen.line(line)


def highlighted(text: str, spans: Sequence[tuple[int, int]], style: str = "bold yellow") -> Any:
    """`text` with `spans` ([start, end) offsets) styled, for a table cell on a
    terminal (NO_COLOR keeps the bold); the plain text when stdout is piped."""
    if not stdout_is_terminal():
        return text
    return Marked(text, tuple(spans), style)


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


def progress_when_shown(as_json: bool) -> Callable | None:
    """`progress` where a bar may be drawn: stdout and stderr both terminals,
    never into --json or a pipe; else None (the core's long jobs then report
    to nobody)."""
    return None if as_json or not stdout_is_terminal() else progress


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


def ask(question: str) -> bool:
    """A yes/no question on the terminal, yes by default; no once input ends."""
    from rich.prompt import Confirm

    try:
        return Confirm.ask(question, default=True, console=console(stderr=True))
    except EOFError:
        return False


# --- friendly values ---------------------------------------------------------
def number(value: Any) -> int | float | None:
    """A stored number as one, or None (NULL, 'slow', NaN, an infinity)."""
    import math

    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if isinstance(value, int) or math.isfinite(value) else None


def human_count(value: Any) -> str:
    """950, 12.3k, 1.2M: a count at a glance (anything else shown as it is)."""
    n = number(value)
    if n is None:
        return "-" if value is None else text(value)
    for limit, div, unit in ((1_000_000_000, 1_000_000_000, "G"), (1_000_000, 1_000_000, "M"),
                             (1000, 1000, "k")):  # fmt: skip
        if abs(n) >= limit:
            return f"{n / div:.1f}{unit}"
    return str(n)


def relative_time(value: Any, now: datetime | None = None) -> str:
    """ "3h ago", "2d ago", or the date for anything older than a month (`clock.ago`)."""
    if isinstance(value, str):
        shown = ago(value, now)
        if shown is not None:
            return shown
    return text(value) or "-"


def local_time(value: Any) -> str | None:
    """A stored time (ISO 8601 UTC) in the local time zone (`TZ` as the C
    library reads it), to the minute: "2026-11-29 06:55"; None when `value`
    is not a time. `kaja resume` and the HTML export word times with it."""
    dt = parse_stored(value)
    if dt is None:
        return None
    try:
        return dt.astimezone().strftime(SHOWN_MINUTE)
    except (OverflowError, OSError, ValueError):  # beyond what the platform's clock knows
        return None


def color_enabled() -> bool:
    return "NO_COLOR" not in os.environ and stdout_is_terminal()


def human_duration(value: Any) -> str:
    """ "850 ms", "12.4 s", "7m 05s", "3h 12m", "4d 02h" (anything else shown as it is)"""
    ms = number(value)
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


# --- long text for a person ----------------------------------------------------------
Line = Sequence[Run]  # (text, style) segments of one line


def print_lines(lines: Iterable[Line], *, pager: bool = True) -> None:
    """Styled lines: plain text when piped; on a terminal with their styles,
    wrapped at words (the rule above), through a pager when they would not
    fit on the screen.

    Styles are a few words Rich also understands ("bold cyan", "dim italic"),
    written as escape codes here: Rich takes ~0.1 ms a line, and a long
    conversation is 100,000 lines. Control characters from the database are
    never written raw, to a terminal or a pipe: they are escaped (`text`).
    """
    if not stdout_is_terminal():
        out = sys.stdout
        for line in lines:
            out.write("".join(part.translate(_LINES) for part, _ in line) + "\n")
        return
    from kaja_cli.render import layout

    with paged(pager) as screen:
        width = screen.width
        for line in lines:
            for part in layout.prose_lines([(t.translate(_LINES), s) for t, s in line], width):
                if not screen.line(part):
                    return


_SGR = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "red": "31", "green": "32",
        "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36", "white": "37"}  # fmt: skip


class Screen:
    """Lines for a person on the terminal: written as they come, or, once they
    outgrow the screen (and paging is on), streamed into the pager.

    `line()` returns False once the pager has been quit: the caller stops
    making lines. The lines must already fit the width (render.layout).
    """

    def __init__(self, pager: bool) -> None:
        import shutil

        self.width, self.height = shutil.get_terminal_size()
        self.pager = pager
        self.held: list[str] = []
        self.proc: Any = None
        self.quit = False
        styled = os.environ.get("TERM") != "dumb"
        self._styled, self._color = styled, styled and "NO_COLOR" not in os.environ
        self._codes: dict[str, str] = {}

    def line(self, runs: Line) -> bool:
        if self.quit:
            return False
        text = self._escape(runs)
        if self.proc is not None:
            return self._send(text + "\n")
        if not self.pager:
            sys.stdout.write(text + "\n")
            return True
        self.held.append(text)
        # Longer than the screen (a line kept for the prompt): page from here on.
        if len(self.held) >= self.height and self._start_pager():
            held, self.held = self.held, []
            return self._send("".join(t + "\n" for t in held))
        return True

    def close(self) -> None:
        if self.held:
            sys.stdout.write("".join(t + "\n" for t in self.held))
            self.held = []
        sys.stdout.flush()
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # the pager was quit early
        while True:
            try:
                self.proc.wait()
                break
            except KeyboardInterrupt:
                continue  # the pager handles Ctrl-C; leaving it would break the terminal

    def _escape(self, runs: Line) -> str:
        parts = []
        for text, style in runs:
            sgr = self._codes.get(style)
            if sgr is None:
                words = [_SGR[w] for w in style.split() if w in _SGR]
                if not self._color:
                    words = [w for w in words if not w.startswith("3") or len(w) == 1]
                sgr = self._codes[style] = (
                    f"\x1b[{';'.join(words)}m" if self._styled and words else ""
                )
            parts.append(f"{sgr}{text}\x1b[0m" if sgr and text else text)
        return "".join(parts).rstrip(" ")

    def _start_pager(self) -> bool:
        """Start `$KAJA_PAGER`, `$PAGER` or less; False if there is none to run."""
        import shlex
        import subprocess

        command = os.environ.get("KAJA_PAGER", os.environ.get("PAGER", "less"))
        try:
            argv = shlex.split(command) if command.strip() else []
        except ValueError:
            argv = []
        if not argv or argv == ["cat"]:
            return self._no_pager()
        env = dict(os.environ)
        env.setdefault("LESS", "FRX")
        sys.stdout.flush()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
        except OSError:
            return self._no_pager()
        self._encoding = sys.stdout.encoding or "utf-8"
        return True

    def _no_pager(self) -> bool:
        """No pager to run: what was held goes out, and the rest as it comes."""
        self.pager = False
        sys.stdout.write("".join(t + "\n" for t in self.held))
        self.held = []
        return False

    def _send(self, text: str) -> bool:
        try:
            self.proc.stdin.write(text.encode(self._encoding, "replace"))
        except OSError:  # BrokenPipeError: the reader quit the pager
            self.quit = True
            return False
        return True


_screen: Screen | None = None


@contextmanager
def paged(pager: bool = True) -> Iterator[Screen]:
    """Everything a command prints for a person, through one pager when it is
    longer than the screen. Nested: the outermost one decides and pages."""
    global _screen
    if _screen is not None:
        yield _screen
        return
    _screen = screen = Screen(pager and stdout_is_terminal())
    try:
        yield screen
    finally:
        _screen = None
        screen.close()
