"""SQLite's unicode61 tokenizer ("remove_diacritics=2"), reproduced on the server.

Local search finds a message when SQLite's tokenizer cuts the same words out
of it as out of the query. For cloud search to find the same set of messages
(SPEC §10), the server must cut every message into exactly those words.
PostgreSQL's own parser does not: it keeps e-mail addresses, URLs, file
paths, hyphenated words and decimal numbers whole (`kaja@example.org` is one
word there, three here), and `unaccent` folds some letters SQLite keeps
(ø → o, æ → ae, ß → ss, ½ → 1/2). So the words are made in SQL, from what
SQLite itself does to each character:

1. `sqlite_unicode61()` asks the local SQLite, once per process, what its
   tokenizer does with every code point: a separator (8,000 of them:
   punctuation, symbols, spaces, most combining marks), dropped (25 combining
   accents), or folded to another character (case, diacritics).
2. `server_probe()` asks the server what `lower()` (with a UTF-8 libc
   collation) and `unaccent()` do to every code point: they do most of that
   folding fast, and the probe lists the characters where their answer is not
   SQLite's (about 1,100 on PostgreSQL 15: ø, æ, ß, ς, ı, ½, …).
3. `functions_sql()` writes the schema's `search_fold(text)`: separators
   become spaces (one regular expression), the listed characters are set
   aside as private code points before `lower`/`unaccent` and put back as
   SQLite's letter after, and everything else goes through `lower` and
   `unaccent`. `search_words(text)` splits that into SQLite's words, and
   `search_vector(words)` makes the `tsvector` the index holds.

The result is checked character by character against SQLite when the schema
is made (`verify`), and a test compares whole corpora. PostgreSQL's own
limits stay: a word longer than 2,047 bytes is not indexed, positions stop at
16,383 and a word counts at most 256 times per message, and a message's
index stops near 1 MB of words (docs/guides/cloud.md).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

# The functions' constants read the same whatever the session's
# standard_conforming_strings: their bodies are parsed again in each session
# that calls them (inlined into the agent's INSERT of a message).
from kaja_cli.core.engine.postgres import literal

if TYPE_CHECKING:
    from kaja_cli.core.engine.postgres import Connection

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
# Stand-ins for the characters lower()/unaccent must not touch: unassigned code
# points of plane 13, which no text holds.
_STAND_IN = 0xD0000
# The first tier of set-aside characters (Latin-1 to Cyrillic: ø, æ, ß, ς, …)
# is checked apart: translate() costs per character set aside, so a Danish
# message pays for ~60 of them, not ~1,100.
_TIER_ONE = range(0x80, 0x530)
SENTINEL = "^"  # a separator, so never a word: the lexeme at position 1 (FTS4's ^first)
MAX_WORD_BYTES = 2047  # PostgreSQL refuses longer lexemes
MAX_VECTOR_BYTES = 1_000_000  # PostgreSQL's tsvector holds at most 1 MB


class Unicode61(NamedTuple):
    """What SQLite's tokenizer does with each code point."""

    separators: tuple[tuple[int, int], ...]  # inclusive ranges of code points that split words
    folds: dict[int, str]  # code point → what the word holds instead ("" = dropped)

    def is_separator(self, cp: int) -> bool:
        i = bisect.bisect_right(self.separators, (cp, MAX_CODE_POINT)) - 1
        return i >= 0 and self.separators[i][0] <= cp <= self.separators[i][1]

    def fold(self, cp: int) -> str:
        return self.folds.get(cp, chr(cp))


def _code_points() -> list[int]:
    return [cp for cp in range(1, MAX_CODE_POINT + 1) if cp not in _SURROGATES]


@functools.lru_cache(maxsize=1)
def sqlite_unicode61() -> Unicode61:
    """Probe the local SQLite: each code point between two letters, "x?y",
    comes back as one word "x?y" (folded), two words (a separator) or "xy"
    (dropped). About a second, once per process."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE temp.t USING fts3tokenize(unicode61, 'remove_diacritics=2')"
        )
        cps = _code_points()
        separators: list[int] = []
        folds: dict[int, str] = {}
        batch = 20_000
        for start in range(0, len(cps), batch):
            chunk = cps[start : start + batch]
            groups = [f"x{chr(cp)}y" for cp in chunk]
            offsets, at = [], 0
            for g in groups:
                offsets.append(at)
                at += len(g.encode("utf-8")) + 1
            words: list[list[str]] = [[] for _ in chunk]
            for token, begin in conn.execute(
                "SELECT token, start FROM temp.t WHERE input = ?", (" ".join(groups),)
            ):
                words[bisect.bisect_right(offsets, begin) - 1].append(token)
            for cp, got in zip(chunk, words, strict=True):
                if got == ["x", "y"]:
                    separators.append(cp)
                elif got == ["xy"]:
                    folds[cp] = ""
                elif len(got) == 1 and got[0][1:-1] != chr(cp):
                    folds[cp] = got[0][1:-1]
    finally:
        conn.close()
    return Unicode61(_ranges(separators), folds)


def _ranges(points: Iterable[int]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for cp in points:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return tuple((a, b) for a, b in out)


# --- the server's half ---------------------------------------------------------------------
class Folding(NamedTuple):
    """How the server folds what SQLite folds: its functions, and what it must set aside."""

    unaccent: str  # the schema holding the unaccent extension
    collation: str  # a UTF-8 collation for lower(), quoted ("pg_catalog"."C.utf8")
    aside: dict[int, str]  # code point → SQLite's answer, where lower/unaccent differ


def _esc(cp: int) -> str:
    """A code point as a PostgreSQL regular-expression escape."""
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _class(points: Iterable[int] | Iterable[tuple[int, int]]) -> str:
    parts = []
    for item in points:
        a, b = item if isinstance(item, tuple) else (item, item)
        parts.append(_esc(a) if a == b else f"{_esc(a)}-{_esc(b)}")
    return "[" + "".join(parts) + "]"


BACKSLASH = "\\"
# What a search function made before its constants were escape strings holds
# (`outdated`): a plain constant with a backslash, in search_fold's separators
# and search_vector's quoting of a word.
_PLAIN_BACKSLASH = ("regexp_replace(t, '[", "replace(u.w, '\\'")


def outdated(bodies: Iterable[str]) -> bool:
    """Whether any of these function bodies (pg_proc.prosrc) is of the form
    that breaks under standard_conforming_strings = off."""
    return any(mark in body for body in bodies for mark in _PLAIN_BACKSLASH)


def pipeline_sql(expr: str, folding: Folding) -> str:
    """`lower` then `unaccent` of `expr`, as the server folds most characters."""
    return (
        f"{folding.unaccent}.unaccent('{folding.unaccent}.unaccent'::regdictionary,"
        f" lower({expr} COLLATE {folding.collation}))"
    )


def server_probe(conn: Connection, unaccent: str, collation: str) -> Folding:
    """Ask the server what lower()+unaccent() make of every code point (~0.5 s)
    and list where that is not what SQLite's tokenizer makes of it."""
    sqlite = sqlite_unicode61()
    folding = Folding(unaccent, collation, {})
    expr = pipeline_sql("chr(cp)", folding)
    changed = dict(
        conn.execute(
            f"SELECT cp, {expr} FROM generate_series(1, {MAX_CODE_POINT}) AS cp"
            f" WHERE cp NOT BETWEEN {_SURROGATES.start} AND {_SURROGATES.stop - 1}"
            f" AND {expr} <> chr(cp)"
        ).fetchall()
    )
    aside = {}
    for cp in _code_points():
        if sqlite.is_separator(cp):
            continue
        want = sqlite.fold(cp)
        if changed.get(cp, chr(cp)) != want:
            aside[cp] = want
    if len(aside) > 0xFFFF:
        raise ValueError("too many characters to set aside")
    return folding._replace(aside=aside)


def _aside_case(folding: Folding, points: list[int], x: str) -> str:
    """The folding of `x` with `points` set aside: stand-ins before, SQLite's letters after.

    translate() deletes a character with no counterpart in its last argument:
    the characters SQLite drops go last."""
    points = sorted(points, key=lambda cp: (folding.aside[cp] == "", cp))
    source = "".join(chr(cp) for cp in points)
    stand_ins = "".join(chr(_STAND_IN + i) for i in range(len(points)))
    wanted = "".join(folding.aside[cp] for cp in points)
    inner = f"translate({x}, {literal(source)}, {literal(stand_ins)})"
    return f"translate({pipeline_sql(inner, folding)}, {literal(stand_ins)}, {literal(wanted)})"


def functions_sql(schema: str, folding: Folding) -> list[str]:
    """The schema's search functions (CREATE OR REPLACE), names qualified: a
    generated column runs them under any writer's search_path."""
    s = '"' + schema.replace('"', '""') + '"'
    sqlite = sqlite_unicode61()
    separators = _class(sqlite.separators) + "+"
    tier_one = [cp for cp in folding.aside if cp in _TIER_ONE]
    tier_two = [cp for cp in folding.aside if cp not in _TIER_ONE]
    cases = []
    if tier_two:
        cases.append(
            f"WHEN x ~ {literal(_class(tier_two))}"
            f" THEN {_aside_case(folding, list(folding.aside), 'x')}"
        )
    if tier_one:
        cases.append(
            f"WHEN x ~ {literal(_class(tier_one))} THEN {_aside_case(folding, tier_one, 'x')}"
        )
    body = (
        f"CASE {' '.join(cases)} ELSE {pipeline_sql('x', folding)} END"
        if cases
        else pipeline_sql("x", folding)
    )
    words = f"{s}.search_words"
    return [
        f"CREATE OR REPLACE FUNCTION {s}.search_fold(t text) RETURNS text"
        " LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $kaja$"
        f" SELECT {body} FROM (SELECT regexp_replace(t, {literal(separators)}, ' ', 'g') AS x) AS s"
        " $kaja$",
        f"CREATE OR REPLACE FUNCTION {words}(t text) RETURNS text[]"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $kaja$"
        f" SELECT coalesce(array_remove(string_to_array({s}.search_fold(t), ' '), ''), '{{}}')"
        " $kaja$",
        f"CREATE OR REPLACE FUNCTION {s}.search_capped(w text[]) RETURNS text[]"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $kaja$"
        " SELECT coalesce(array_agg(x.w ORDER BY x.n), '{}') FROM (SELECT u.w, u.n,"
        " sum(octet_length(u.w) + 9) OVER (ORDER BY u.n) AS upto"
        " FROM unnest(w) WITH ORDINALITY AS u(w, n)) AS x"
        f" WHERE x.upto <= {MAX_VECTOR_BYTES}"
        " $kaja$",
        # The sentinel holds position 1, so `^word` (FTS4: the first word) is
        # "^" <-> word; words are kept while the vector stays under 1 MB.
        f"CREATE OR REPLACE FUNCTION {s}.search_vector(w text[]) RETURNS tsvector"
        " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $kaja$"
        f" SELECT ('''{SENTINEL}'':1 ' || coalesce(string_agg("
        f"''''|| replace(replace(u.w, {literal(BACKSLASH)}, {literal(BACKSLASH * 2)}), '''',"
        " '''''') || ''':' || (u.n + 1), ' '), ''))"
        "::tsvector FROM unnest(CASE"
        f" WHEN octet_length(array_to_string(w, ' ')) + 9 * cardinality(w) <= {MAX_VECTOR_BYTES}"
        f" THEN w ELSE {s}.search_capped(w) END) WITH ORDINALITY AS u(w, n)"
        f" WHERE octet_length(u.w) <= {MAX_WORD_BYTES}"
        " $kaja$",
    ]


def words_sql(schema: str, expr: str) -> str:
    """SQL for the words of `expr` (a message's content), as SQLite cuts them."""
    s = '"' + schema.replace('"', '""') + '"'
    return f"{s}.search_words({expr})"


def vector_sql(schema: str, expr: str) -> str:
    s = '"' + schema.replace('"', '""') + '"'
    return f"{s}.search_vector({s}.search_words({expr}))"


def verify(
    conn: Connection, schema: str, aside: Iterable[int] = (), *, every: bool = False
) -> list[int]:
    """Code points the server's search_fold does not fold as SQLite does ([] = all agree).

    By default: every code point that SQLite folds or drops, those set aside
    (`aside`), each separator range's ends, and one in 64 of the rest (the
    rest goes through the lower/unaccent the probe has just listed), in a
    fraction of a second; `every`: all 1.1 million (seconds)."""
    sqlite = sqlite_unicode61()
    s = '"' + schema.replace('"', '""') + '"'
    if every:
        points = set(_code_points())
    else:
        points = set(sqlite.folds) | set(aside)
        points |= {cp for a, b in sqlite.separators for cp in (a, b)}
        points |= set(range(1, MAX_CODE_POINT + 1, 64))
        points -= set(_SURROGATES)
    ordered = sorted(points)
    got = dict(
        conn.execute(
            f"SELECT cp, {s}.search_fold('x' || chr(cp) || 'y') FROM unnest(CAST(? AS integer[])) AS cp",
            (ordered,),
        ).fetchall()
    )
    bad = []
    for cp in ordered:
        want = "x y" if sqlite.is_separator(cp) else f"x{sqlite.fold(cp)}y"
        if got.get(cp) != want:
            bad.append(cp)
    return bad
