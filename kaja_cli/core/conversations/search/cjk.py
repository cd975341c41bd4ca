"""Chinese, Japanese and Korean text for the search index: pure functions.

FTS4's unicode61 tokenizer makes a run of CJK characters one token (CJK is
written without spaces, and Korean attaches particles: 서울에), so a word
inside a sentence is never found. Here a CJK run becomes its overlapping
character bigrams, as CJK analyzers do ("私は東京に" → "私は は東 東京 京に"),
and a query's CJK run the phrase of its bigrams ("東京都" → "東京 京都"): a
word of two or more characters is then found wherever it occurs, as a
phrase of consecutive tokens, and BM25 counts it once per occurrence.

One character alone is a bigram's first half, except at the end of a run;
so the last character of every run is also written once, after the text
(where no phrase can reach it), and a one-character query is the prefix
query "東*": each occurrence is exactly one token that starts with it.
Everything that is not CJK stays as it is, so Latin words match as in the
main index.

The same functions serve any engine (SQLite here; PostgreSQL's search can
apply `index_text` and `match` the same way) and the highlighting of hits,
which is done here on the message's own text (`snippet`).
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from typing import NamedTuple

# The letters (Unicode categories L and N, which unicode61 keeps as token
# characters) of the CJK scripts. Punctuation (。、「」・) is left out: the
# tokenizer treats it as a separator anyway.
RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x303B, 0x303C),  # 〻 〼
    (0x3041, 0x3096),  # Hiragana
    (0x309D, 0x309F),  # ゝ ゞ ゟ
    (0x30A1, 0x30FA),  # Katakana (not ・ U+30FB)
    (0x30FC, 0x30FF),  # ー ヽ ヾ ヿ
    (0x3105, 0x312F),  # Bopomofo
    (0x3131, 0x318E),  # Hangul Compatibility Jamo
    (0x31A0, 0x31BF),  # Bopomofo Extended
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7A3),  # Hangul Syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x20000, 0x3FFFF),  # CJK Extensions B-H, Compatibility Supplement
)

_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in RANGES)
_STARTS = [lo for lo, _ in RANGES]


def maybe_cjk_sql(column: str) -> str:
    """SQL true for a text that may hold CJK: one that is not all ASCII (more
    bytes than characters). A GLOB class of the CJK ranges would be exact,
    but SQLite tests every character against every range: 37 s over the
    benchmark store's 117 MB of messages, against 1 s for this, which is
    what each message the agent writes pays in the trigger. `holds_cjk` keeps
    the ones that do hold CJK."""
    return f"length(CAST({column} AS BLOB)) > length({column})"


_LOOP_UPTO = 256  # a short text is checked character by character, a long one by regex
_OPERATORS = {"OR", "AND", "NOT", "NEAR"}


class _Patterns:
    """The regular expressions, compiled on first use: a class of these ranges
    takes milliseconds to compile, and a Latin search never needs them."""

    @functools.cached_property
    def run(self) -> re.Pattern[str]:
        return re.compile(f"[{_CLASS}]+")

    @functools.cached_property
    def query_run(self) -> re.Pattern[str]:
        return re.compile(f"([{_CLASS}]+)(\\*?)")

    @functools.cached_property
    def word(self) -> re.Pattern[str]:
        """A word as unicode61 sees it, CJK runs apart (for highlighting Latin words)."""
        return re.compile(f"[^\\W_{_CLASS}]+(\\*?)")

    @functools.cached_property
    def syntax(self) -> re.Pattern[str]:
        """FTS4 query syntax: a quoted phrase, a bare word, spaces and parentheses."""
        return re.compile(r'"[^"]*"?|[^\s"()]+|[\s()]+')

    @functools.cached_property
    def bare_prefix(self) -> re.Pattern[str]:
        return re.compile(r"^(-?)([A-Za-z_][A-Za-z0-9_]*:)?(.*)$", re.S)


_P = _Patterns()


def _is_cjk(code: int) -> bool:
    i = bisect.bisect_right(_STARTS, code) - 1
    return i >= 0 and code <= RANGES[i][1]


def has_cjk(text: str) -> bool:
    """Whether `text` holds a character of a CJK script (a short one without
    the regex, which takes milliseconds to compile: cheap for a query)."""
    if text.isascii():
        return False
    if len(text) <= _LOOP_UPTO:
        return any(_is_cjk(ord(ch)) for ch in text)
    return _P.run.search(text) is not None


def holds_cjk(text: str) -> bool:
    """`has_cjk` for many texts (indexing messages): the compiled regex for all."""
    return not text.isascii() and _P.run.search(text) is not None


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


# --- the indexed text -----------------------------------------------------------
def index_text(text: str) -> str:
    """`text` as the CJK index holds it: each CJK run as its bigrams, and the
    last character of every longer run once more at the end."""
    finals: list[str] = []

    def bigrams(m: re.Match[str]) -> str:
        run = m.group()
        if len(run) > 1:
            finals.append(run[-1])
        return " " + " ".join(_bigrams(run)) + " "

    out = _P.run.sub(bigrams, text)
    if finals:
        # After the text: a one-character query finds them, and a phrase of
        # bigrams can't run on into them (a query phrase never puts a lone
        # CJK character after a bigram, except "東京 京" typed in quotes).
        out += " \n " + " ".join(finals)
    return out


# --- the query ------------------------------------------------------------------
def _phrase(text: str) -> str:
    """Words of one phrase with each CJK run as consecutive bigrams; a
    one-character run as the prefix of a token ("東*"). A `*` after a longer
    run is dropped: its bigrams already match inside any longer word."""

    def tokens(m: re.Match[str]) -> str:
        run = m.group(1)
        if len(run) == 1:
            return f" {run}* "
        return " " + " ".join(_bigrams(run)) + " "

    return " ".join(_P.query_run.sub(tokens, text).split())


def match(expression: str) -> str:
    """An FTS4 query (kaja's quoted plain words, or `--fts` syntax) for the
    CJK index: every CJK run inside a phrase becomes its bigrams, and a bare
    word holding CJK becomes a quoted phrase (keeping a leading `-` and a
    `column:` filter). Operators, parentheses and Latin words stay as given."""
    out = []
    for piece in _P.syntax.findall(expression):
        if not has_cjk(piece):
            out.append(piece)
        elif piece.startswith('"'):
            inner = piece[1:-1] if len(piece) > 1 and piece.endswith('"') else piece[1:]
            out.append(f'"{_phrase(inner)}"')
        else:
            m = _P.bare_prefix.match(piece)
            assert m is not None  # the pattern matches any string
            sign, column, word = m.groups()
            out.append(f'{sign}{column or ""}"{_phrase(word)}"')
    return "".join(out)


# --- highlighting ---------------------------------------------------------------
class Term(NamedTuple):
    """A word of the query, as the snippet looks for it."""

    text: str  # a CJK run as typed, or a Latin word folded (`fold`)
    cjk: bool
    prefix: bool  # a Latin word ending in `*`


def fold(word: str) -> str:
    """Case and accents removed, as unicode61 with remove_diacritics=2 compares."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def terms(expression: str) -> list[Term]:
    """The words a hit can show for a query (before `match`): every CJK run
    and every other word, operators and column names left out."""
    out: list[Term] = []
    for piece in _P.syntax.findall(expression):
        quoted = piece.startswith('"')
        if not quoted and not piece.strip("() \t\r\n"):
            continue
        if not quoted:
            if piece in _OPERATORS or piece.startswith("NEAR/"):
                continue
            piece = _P.bare_prefix.sub(r"\3", piece)
        out.extend(Term(run, True, False) for run in _P.run.findall(piece))
        for m in _P.word.finditer(piece):
            word = m.group()
            prefix = word.endswith("*")
            out.append(Term(fold(word.rstrip("*")), False, prefix))
    return out


def _spans(text: str, wanted: list[Term]) -> list[tuple[int, int]]:
    """Where the terms occur in `text`, overlapping ones merged."""
    found: list[tuple[int, int]] = []
    for term in wanted:
        if term.cjk:
            at = text.find(term.text)
            while at >= 0:
                found.append((at, at + len(term.text)))
                at = text.find(term.text, at + 1)
    latin = [t for t in wanted if not t.cjk]
    if latin:
        for m in _P.word.finditer(text):
            word = fold(m.group().rstrip("*"))
            if any(word.startswith(t.text) if t.prefix else word == t.text for t in latin):
                found.append(m.span())
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


SNIPPET_COLUMNS = 80  # about what FTS4's 16-token snippet shows of Latin text
_LEAD = 16  # columns of context before the first match
_CUT = 12  # how far back a cut looks for a space, not to split a Latin word

_ONE_LINE = str.maketrans("\n\r\t\v\f", "     ")


def _columns(ch: str) -> int:
    """Terminal columns of a character: CJK ones take two."""
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def _back(line: str, at: int, columns: int) -> int:
    """The index `columns` terminal columns before `at` (not before 0)."""
    while at > 0 and columns > 0:
        at -= 1
        columns -= _columns(line[at])
    return at


def _forward(line: str, at: int, columns: int) -> int:
    """The index after `columns` terminal columns from `at`."""
    while at < len(line) and columns >= _columns(line[at]):
        columns -= _columns(line[at])
        at += 1
    return at


def snippet(
    text: str, wanted: list[Term], columns: int = SNIPPET_COLUMNS
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """One line of `text` around its first match (about `columns` terminal
    columns wide, a CJK character taking two), and the matches' [start, end)
    in that line: the same shape as the main index's snippets."""
    line = text.translate(_ONE_LINE)
    spans = _spans(line, wanted)
    start = 0
    if spans and _forward(line, 0, columns) < len(line):
        start = _back(line, spans[0][0], _LEAD)
        space = line.rfind(" ", max(0, start - _CUT), start)
        if space >= 0:
            start = space + 1
        start = min(start, _back(line, len(line), columns))
    end = _forward(line, start, columns)
    if end < len(line) and line[end].isalnum() and not has_cjk(line[end]):
        space = line.rfind(" ", max(start, end - _CUT), end)
        if space > start:
            end = space  # don't cut the last Latin word in two
    head = "…" if start > 0 else ""
    tail = "…" if end < len(line) else ""
    shift = len(head) - start
    shown = tuple(
        (max(s, start) + shift, min(e, end) + shift) for s, e in spans if s < end and e > start
    )
    return head + line[start:end] + tail, shown
