"""The layout rule (see the package docstring) as code: column widths for a
terminal, word wrapping with a hanging indent, and the styled lines a table
or a page of prose becomes.

Nothing here knows about kaja's data: a table is columns (`Col`) and rows of
cells; prose is lines of (text, style) runs. Rich is not used: a table of
10,000 sessions must start showing at once, and this is a few string
operations a cell.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any, Literal, NamedTuple

from kaja_cli.core import values

GAP = 2  # spaces between two columns
CELL_HANG = 1  # a wrapped cell's continuation lines are indented this much
PROSE_HANG = 2  # a wrapped line of prose: its own indent plus this
WORD_CAP = 16  # a text column is never narrower than its longest word, up to this
CHART_MIN = 10  # a bar chart shrinks to this before it is dropped

Kind = Literal["text", "whole", "chart"]
TEXT: Kind = "text"
WHOLE: Kind = "whole"
CHART: Kind = "chart"

Run = tuple[str, str]  # (text, style): a piece of a line with its Rich-like style words


class Col(NamedTuple):
    """One column of a table.

    `kind`: `text` shrinks and wraps at words (titles, snippets, paths,
    messages; the continuation lines indented by one where that splits no
    word); `whole` is never cut or wrapped (ids, numbers, times, marks);
    `chart` is a bar drawn at whatever width is left. Unset, a right-justified
    column is `whole` and any other `text`. `drop`: when even the narrowest
    text columns do not fit, columns go in this order (1 first); 0 never goes.
    `min`: a text column is not made narrower than this before others are dropped.
    """

    header: str
    justify: Literal["left", "right"] = "left"
    style: str | None = None
    kind: Kind | None = None
    drop: int = 0
    min: int = 0

    @property
    def fit(self) -> Kind:
        return self.kind or (WHOLE if self.justify == "right" else TEXT)


class Styled(NamedTuple):
    """A table cell with a style on a terminal (plain text when piped)."""

    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


class Marked(NamedTuple):
    """Text with some spans styled (a search snippet's matched words): the
    spans are words a narrow column must still show whole."""

    text: str
    spans: tuple[tuple[int, int], ...]
    style: str = "bold yellow"

    def __str__(self) -> str:
        return self.text


class Bar(NamedTuple):
    """A bar of a chart: `share` of the column's width (0 to 1)."""

    share: float

    def __str__(self) -> str:
        return ""


# --- widths ------------------------------------------------------------------------------
# The characters a value from the store may hold that are never written raw,
# to a terminal, a pipe, a file or a browser: control characters (C0, DEL and
# C1: a NUL, an escape sequence, U+009B that some terminals take for ESC [)
# and the BiDi controls, which reorder what is shown around them (a
# "gnp.exe" with U+202E before it reads as "exe.png"). They are shown as
# `\x1b`, `\u202e`; `--json` writes them as JSON escapes (`render.json_text`).
BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
ESCAPED = (*range(0x20), *range(0x7F, 0xA0), *BIDI)
_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c in ESCAPED) + "]")
# `_ONE_LINE` also makes tabs and line breaks spaces, `_LINES` keeps them.
_CONTROLS = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in ESCAPED}
_ONE_LINE = str.maketrans({**_CONTROLS, **dict.fromkeys(map(ord, "\t\n\r\v\f"), " ")})
_LINES = str.maketrans({c: e for c, e in _CONTROLS.items() if c not in (0x09, 0x0A)})
# Whether a text holds any character a table changes: one scan in C, so the
# common text (none) is returned as it is, not rebuilt a character at a time.
_ONE_LINE_FOUND = re.compile("[" + "".join(re.escape(chr(c)) for c in _ONE_LINE) + "]").search
_LINES_FOUND = re.compile("[" + "".join(re.escape(chr(c)) for c in _LINES) + "]").search

# The same question asked of UTF-8 bytes (`lines_clean`), cheaper than decoding
# them and asking the text (the regex alone: 3 ns a character, 60 ms of a
# 21 MB export): a control or DEL is one byte, looked for with `in` (memchr,
# a few instructions per 32 bytes); a C1 or BiDi control begins with one of
# three lead bytes, each found with `find` (memchr too) and the bytes after it
# matched by a pattern. A scan that touched every byte in C (`translate`, the
# regex's own search) was 540M of a 76,000-message HTML export's 4,300M
# instructions: 27 MB, where the middle dot of every heading is such a lead.
_ESCAPED_UTF8 = [chr(c).encode() for c in _LINES]
_CONTROL_BYTES = tuple(sorted({e[0] for e in _ESCAPED_UTF8 if len(e) == 1}))
_LEADS = bytes(sorted({e[0] for e in _ESCAPED_UTF8 if len(e) > 1}))


def _after(lead: int) -> re.Pattern[bytes]:
    """The escaped characters whose UTF-8 begins with `lead`, as a pattern that
    begins with it literally (what lets the regex engine skip to it)."""
    tails: dict[bytes, list[int]] = {}
    for e in _ESCAPED_UTF8:
        if e[0] == lead:
            tails.setdefault(e[1:-1], []).append(e[-1])
    alternatives = b"|".join(
        re.escape(middle) + b"[" + b"".join(re.escape(bytes([b])) for b in last) + b"]"
        for middle, last in tails.items()
    )
    return re.compile(re.escape(bytes([lead])) + b"(?:" + alternatives + b")")


_BY_LEAD = {bytes([lead]): _after(lead) for lead in _LEADS}


def lines_clean(data: bytes) -> bool:
    """Whether `data` is UTF-8 whose text `render.text(…, lines=True)` leaves as
    it is: valid, with no character of the escaping rule but tab and line
    break. (False: decode it with U+FFFD and apply the rule to the text.)"""
    for byte in _CONTROL_BYTES:
        if byte in data:
            return False
    for lead, pattern in _BY_LEAD.items():
        if lead in data and _escaped_from(data, lead, pattern):
            return False
    return values.utf8_valid(data)


def _escaped_from(data: bytes, lead: bytes, pattern: re.Pattern[bytes]) -> bool:
    """Whether an escaped character beginning with `lead` is in `data`: each
    `lead` found by memchr and matched where it is, where they are few (the
    headings' middle dots in HTML, one in 500 bytes); where they are many
    (Markdown's two dots a heading, a text of no-break spaces), the regex's
    own scan, which costs the same however many there are."""
    if data.count(lead, 0, _SAMPLE) > _SAMPLE >> 9:
        return pattern.search(data) is not None
    match = pattern.match
    find = data.find
    left = len(data) >> 9
    at = find(lead)
    while at >= 0:
        if match(data, at):
            return True
        left -= 1
        if left < 0:  # many after all: the rest in one scan
            return pattern.search(data, at + 1) is not None
        at = find(lead, at + 1)
    return False


_SAMPLE = 4096  # the bytes whose leads tell few from many


def clean(text: str) -> str:
    """A cell's text on one line: control characters from the database escaped."""
    if text.isprintable():
        return text
    return text.replace("\r\n", " ").translate(_ONE_LINE)


def clean_keeping_offsets(text: str) -> str:
    """`clean` for text with marked spans: each control character becomes one
    space, so the spans' offsets still point at the same characters."""
    return text if text.isprintable() else _CONTROL.sub(" ", text)


def cells(text: str) -> int:
    """Columns `text` takes on a terminal (wide East Asian characters take two,
    combining marks none)."""
    if text.isascii():
        return len(text)
    return sum(_char_cells(ch) for ch in text)


def _char_cells(ch: str) -> int:
    if ch.isascii():
        return 1
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# A number and its unit are one word to wrapping: `294.9 kB` never ends a line at `294.9`.
UNITS = ("B", "kB", "MB", "GB", "TB", "ms")
_UNIT = re.compile(r"(?:%s)(?![\w])" % "|".join(UNITS))
_GLUED = re.compile(r"(?<=\d) (?=(?:%s)(?![\w]))" % "|".join(UNITS))


def _glued(text: str, i: int) -> bool:
    """The space at `i` joins a number to its unit (no line breaks there)."""
    return i > 0 and text[i - 1].isdigit() and _UNIT.match(text, i + 1) is not None


def _longest_word(text: str) -> int:
    """The widest piece of `text` that wrapping keeps whole: words split at
    spaces (not between a number and its unit), and after a hyphen or a slash."""
    best = 0
    if " " in text and _GLUED.search(text):
        text = _GLUED.sub("\u00a0", text)  # measured as one word, as `break_text` keeps it
    for word in text.split(" "):
        if len(word) > best or not word.isascii():
            for piece in _PIECES.findall(word):
                best = max(best, cells(piece))
    return best


_PIECES = re.compile(r"[^-/]*[-/]?")  # "claude-sonnet-4.5" → "claude-", "sonnet-", "4.5"


# --- wrapping -----------------------------------------------------------------------------
def break_text(text: str, width: int, hang: int) -> list[tuple[int, int]]:
    """Where `text` breaks into lines at most `width` columns wide, the
    continuation lines `hang` narrower: (start, end) offsets of each line.

    Lines break at spaces (the spaces at a break are dropped), never between
    a number and its unit (`294.9 kB`); a word longer than a line breaks after
    a hyphen or a slash when it can, else where the line ends. Leading spaces
    (an indented line) stay on the first line.
    """
    width = max(width, 1)
    if cells(text) <= width:
        return [(0, len(text))]
    out: list[tuple[int, int]] = []
    n = len(text)
    start = 0
    avail = width
    while start < n:
        end = _line_end(text, start, avail)
        out.append((start, end))
        start = end
        while start < n and text[start] == " ":
            start += 1
        avail = max(width - hang, 1)
    return out or [(0, 0)]


def _line_end(text: str, start: int, avail: int) -> int:
    """The end of the line starting at `start` that fits `avail` columns."""
    used = 0
    last_space = last_slash = last_hyphen = -1
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        w = 1 if ch.isascii() else _char_cells(ch)
        if used + w > avail:
            break
        used += w
        if ch == " " and not _glued(text, i):
            last_space = i
        elif ch == "/" and i + 1 < n and text[i + 1] != " ":
            last_slash = i + 1
        elif ch == "-" and i + 1 < n and text[i + 1] != " ":
            last_hyphen = i + 1
        i += 1
    else:
        return n
    if i < n and text[i] == " " and not _glued(text, i):
        return i  # the line ends exactly at a space
    if last_space > start and text[start:last_space].strip():
        return last_space
    # A word longer than the line: after a slash (a path's folders), else a hyphen.
    soft = last_slash if last_slash > start else last_hyphen
    if soft > start:
        return soft
    return max(i, start + 1)  # no place to break: cut where the line ends


def wrap_runs(runs: Sequence[Run], width: int, hang: int) -> list[list[Run]]:
    """`break_text` for styled runs: each line a list of runs, continuation
    lines starting with `hang` spaces."""
    text = "".join(t for t, _ in runs)
    spans = break_text(text, width, hang)
    if len(spans) == 1 and spans[0] == (0, len(text)):
        return [list(runs)]
    lines = []
    for number, (start, end) in enumerate(spans):
        line: list[Run] = [(" " * hang, "")] if number and hang else []
        at = 0
        for piece, style in runs:
            lo, hi = max(start, at), min(end, at + len(piece))
            if lo < hi:
                line.append((piece[lo - at : hi - at], style))
            at += len(piece)
        lines.append(line)
    return lines


# --- tables -------------------------------------------------------------------------------
class _Cell(NamedTuple):
    runs: list[Run]
    width: int  # natural: the whole text on one line
    keep: int  # narrowest it can be without splitting a word (capped) or a marked span
    bar: float | None = None


def _text(value: Any) -> str:
    if value is None or isinstance(value, Bar):
        return ""
    if isinstance(value, Marked):
        return clean_keeping_offsets(value.text)
    text = value.text if isinstance(value, Styled) else str(value)
    return text if text.isprintable() else clean(text)


def _cell(value: Any, col: Col) -> _Cell:
    base = col.style or ""
    if isinstance(value, Bar):
        return _Cell([], 0, 0, max(0.0, min(1.0, value.share)))
    text = _text(value)
    if not text:
        return _Cell([], 0, 0)
    keep = 0
    if isinstance(value, Marked):
        runs: list[Run] = []
        at = 0
        for lo, hi in sorted(value.spans):
            lo, hi = max(lo, at), min(hi, len(text))
            if lo >= hi:
                continue
            runs += [(text[at:lo], base), (text[lo:hi], value.style)]
            keep = max(keep, cells(text[lo:hi]))
            at = hi
        runs = [r for r in [*runs, (text[at:], base)] if r[0]]
    elif isinstance(value, Styled):
        runs = [(text, value.style or base)]
    else:
        runs = [(text, base)]
    width = cells(text)
    if col.fit != TEXT:
        return _Cell(runs, width, width)
    return _Cell(runs, width, max(keep, min(_longest_word(text), WORD_CAP)))


class _Stats(NamedTuple):
    """A column's widths over all its rows: on one line, and the narrowest the rule
    allows; `empty`: no row has anything in it (the column is left out)."""

    natural: int
    least: int
    empty: bool = False


def _stats(col: Col, values: Sequence[Any]) -> _Stats:
    """One pass of string operations a column (10,000 rows in a few ms)."""
    texts = [_text(v) for v in values]
    joined = "".join(texts)
    if not joined and values and col.fit != CHART:
        return _Stats(0, 0, empty=True)
    ascii_only = joined.isascii()
    wide = max([cells(col.header), *map(len if ascii_only else cells, texts)])
    if col.fit == WHOLE:
        return _Stats(wide, wide)
    if col.fit == CHART:
        return _Stats(max(cells(col.header), 30), max(_longest_word(col.header), CHART_MIN))
    if ascii_only:
        spaced = " ".join(texts)
        if _GLUED.search(spaced):
            spaced = _GLUED.sub("\u00a0", spaced)  # a number and its unit: one word
        pieces = spaced.replace("-", "- ").replace("/", "/ ").split(" ")
        longest = max(map(len, pieces), default=0)
    else:
        longest = max(map(_longest_word, texts), default=0)
    marked = [cells(v.text[a:b]) for v in values if isinstance(v, Marked) for a, b in v.spans]
    keep = max([min(longest, WORD_CAP), _longest_word(col.header), *marked])
    return _Stats(wide, min(wide, max(keep, col.min)))


def plan(cols: Sequence[Col], stats: Sequence[_Stats], total: int) -> list[int | None] | None:
    """Each column's width, None for a dropped one (the rule in the package
    docstring); None when no columns fit side by side."""
    natural = [s.natural for s in stats]
    least = [s.least for s in stats]
    shown = [not s.empty for s in stats]
    for order in sorted({c.drop for c in cols if c.drop} | {0}):
        if order:
            for i, col in enumerate(cols):
                if col.drop == order:
                    shown[i] = False
        widths = _shrink(natural, least, shown, total)
        if widths is not None:
            return widths
    return None  # even the columns that never go do not fit side by side


def _shrink(
    natural: list[int], least: list[int], shown: list[bool], total: int
) -> list[int | None] | None:
    """Natural widths, the flexible columns narrowed in proportion to the room
    each can give (its width over its narrowest) until the row fits in
    `total`; None when even the narrowest do not fit."""
    idx = [i for i, s in enumerate(shown) if s]
    gaps = GAP * max(len(idx) - 1, 0)
    widths = {i: natural[i] for i in idx}
    over = sum(widths.values()) + gaps - total
    if over <= 0:
        return [widths.get(i) for i in range(len(natural))]
    if sum(least[i] for i in idx) + gaps > total:
        return None
    slack = {i: natural[i] - least[i] for i in idx if natural[i] > least[i]}
    room = sum(slack.values())
    cuts = {i: over * s // room for i, s in slack.items()}
    # What the rounding down left: a column each, the one with most room first.
    for i in sorted(slack, key=lambda i: (-(over * slack[i] % room), -slack[i])):
        if sum(cuts.values()) >= over:
            break
        cuts[i] += 1
    for i, cut in cuts.items():
        widths[i] -= cut
    return [widths.get(i) for i in range(len(natural))]


SETTLE_ROWS = 100  # rows looked at to give a column's unused room away


def _settle(
    cols: Sequence[Col],
    stats: Sequence[_Stats],
    sample: Sequence[Sequence[_Cell]],
    widths: list[int | None],
) -> list[int | None]:
    """Give the room a wrapped column leaves unused (its lines break short of
    its width, in the first rows) to the text columns that wanted more,
    widest want first; never below a column's narrowest."""
    narrowed = [i for i, w in enumerate(widths)
                if w is not None and cols[i].fit == TEXT and w < stats[i].natural]  # fmt: skip
    if len(narrowed) < 2:
        return widths
    spare = 0
    out = list(widths)
    for i in narrowed:
        width = out[i] or 0
        used = max([stats[i].least, _header_width(cols[i], width)]
                   + [_wrapped_width(row[i], width) for row in sample])  # fmt: skip
        spare += width - used
        out[i] = used
    for i in sorted(narrowed, key=lambda i: (out[i] or 0) - stats[i].natural):
        give = min(spare, max(stats[i].natural - (out[i] or 0), 0))
        out[i] = (out[i] or 0) + give
        spare -= give
    return out


def _wrapped_width(cell: _Cell, width: int) -> int:
    if not cell.runs or cell.width <= width:
        return min(cell.width, width)
    hang = CELL_HANG if width - CELL_HANG >= cell.keep else 0
    text = "".join(t for t, _ in cell.runs)
    return max(
        cells(text[a:b]) + (hang if n else 0)
        for n, (a, b) in enumerate(break_text(text, width, hang))
    )


def _header_width(col: Col, width: int) -> int:
    return max(cells(col.header[a:b]) for a, b in break_text(col.header, width, 0))


def table_lines(
    cols: Sequence[Col], rows: Sequence[Sequence[Any]], total: int
) -> Iterator[list[Run]]:
    """A table as styled lines for a terminal `total` columns wide: the header
    first, then each row on as many lines as its tallest cell. Widths come
    from every row (cheap string operations); a row is wrapped and styled
    only when its lines are asked for, so a long table starts at once."""
    stats = [_stats(col, [row[i] for row in rows]) for i, col in enumerate(cols)]
    planned = plan(cols, stats, total)
    if planned is None:
        yield from record_lines(cols, rows, total)
        return
    sample = [[_cell(v, c) for v, c in zip(row, cols, strict=True)] for row in rows[:SETTLE_ROWS]]
    widths = _settle(cols, stats, sample, planned)
    shown = [i for i, w in enumerate(widths) if w is not None]
    # A header wraps (flush) in a text or chart column; a whole column is as wide as its header.
    header = [_Cell([(c.header, "bold")], cells(c.header), cells(c.header)) for c in cols]
    yield from _row_lines(cols, widths, shown, header, header=True)
    visible = set(shown)
    for n, row in enumerate(rows):
        made = sample[n] if n < len(sample) else [_cell(row[i], cols[i]) if i in visible else None
                                                  for i in range(len(cols))]  # fmt: skip
        yield from _row_lines(cols, widths, shown, made)


def _row_lines(
    cols: Sequence[Col],
    widths: list[int | None],
    shown: list[int],
    row: Sequence[_Cell | None],
    *,
    header: bool = False,
) -> Iterator[list[Run]]:
    blocks = []
    for i in shown:
        width = widths[i] or 0
        cell = row[i]
        assert cell is not None  # every shown column has its cell
        if cell.bar is not None:
            blocks.append([[(bar_text(cell.bar, width), cols[i].style or "")]])
        elif cols[i].fit == TEXT or (header and cols[i].fit == CHART):
            # The continuation's indent, unless it would split the cell's longest word.
            hang = CELL_HANG if width - CELL_HANG >= cell.keep else 0
            blocks.append(wrap_runs(cell.runs, width, hang) if cell.runs else [[]])
        else:
            blocks.append([cell.runs])
    for n in range(max(len(b) for b in blocks)):
        line: list[Run] = []
        pending = ""
        for k, i in enumerate(shown):
            block = blocks[k]
            runs = [r for r in block[n] if r[0]] if n < len(block) else []
            used = sum(cells(t) for t, _ in runs)
            pad = " " * max((widths[i] or 0) - used, 0)
            if k:
                pending += " " * GAP
            if cols[i].justify == "right":
                pending += pad
            if runs:
                line.append((pending, ""))
                line.extend(runs)
                pending = ""
            if cols[i].justify != "right":
                pending += pad
        yield line  # trailing padding is left off


def record_lines(
    cols: Sequence[Col], rows: Sequence[Sequence[Any]], total: int
) -> Iterator[list[Run]]:
    """A table on a terminal too narrow for its columns side by side: each row
    a record, its first column on a line, then `header: value` lines (every
    column, wrapped as prose; a chart is left out)."""
    for row in rows:
        for i, (col, value) in enumerate(zip(cols, row, strict=True)):
            cell = _cell(value, col)
            if not cell.runs:
                continue
            label = [] if i == 0 or not col.header else [(col.header + ": ", "dim")]
            yield from prose_lines([("" if i == 0 else "  ", ""), *label, *cell.runs], total)


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar_text(share: float, width: int) -> str:
    """A horizontal bar of unicode blocks: `share` of `width` cells."""
    if share <= 0 or width <= 0:
        return ""
    eighths = max(1, round(share * width * 8))
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


# --- prose --------------------------------------------------------------------------------
def prose_lines(line: Sequence[Run], total: int) -> list[list[Run]]:
    """One line of prose wrapped at words to `total` columns, its continuation
    indented by its own indent plus PROSE_HANG."""
    text = "".join(t for t, _ in line)
    indent = len(text) - len(text.lstrip(" "))
    if indent >= total // 2:
        indent = 0  # a deep indent on a narrow screen: wrap flush instead
    return wrap_runs(line, total, indent + PROSE_HANG)
