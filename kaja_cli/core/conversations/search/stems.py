"""Stemming for plain searches: a word finds the index's words that share its
Snowball stem (tomato, tomatoes; run, runs, running), on either engine.

The agent writes messages without kaja, through SQLite's own triggers, and
SQLite has no stemmer its triggers could call: the index keeps every word as
written (folded: case and accents ignored). So stemming happens at query
time. Each plain word of at least `MIN_LENGTH` letters is looked up in the
index's own vocabulary: the words starting with its stem's first letters
(`span`), kept when their Snowball stem is the word's. The query then asks
for any of them, `("tomato" OR "tomatoes")`, and ranks the group as one word
(Lucene's synonym query): its hits in a message are the exact form's plus
`INFLECTED` times the other forms', and its idf is the idf of its most
frequent form. So a word without inflections in the index ranks exactly as
an exact search does, and the exact form ranks above an inflected one in
otherwise equal messages.

Words are folded and cut by SQLite's own tokenizer (fts3tokenize, the
index's unicode61 with remove_diacritics=2), so a query word is the word the
index holds. The stemmers are Snowball's (PyStemmer, the Snowball project's
C stemmers); `search.language` in settings.toml names the language (`none`
turns stemming off, as `--exact` does for one search), English by default.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from kaja_cli.core.conversations.search.model import TOKENIZE

INFLECTED = 0.5  # an inflected form's hits weigh half the exact form's
MIN_LENGTH = 3  # shorter words are searched as typed
MAX_FORMS = 32  # forms of one word asked for at most
DEFAULT_LANGUAGE = "english"
OFF = "none"
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")

# (phrase index in the query, weight: None for the exact form's 1) per word.
Group = list[tuple[int, float | None]]
# The index's words from low (included when the bool says so) to high (not
# included), with how many messages hold each (None: unknown).
Vocabulary = Callable[[str, str, bool], Iterable[tuple[str, int | None]]]
# How many messages hold each of some index words, for a vocabulary that
# gives None (the server's word list): a word no message holds any more is no form.
Counts = Callable[[list[str]], dict[str, int]]


class Plan:
    """A plain query after stemming: the FTS4 query to run and how its
    phrases group into the words typed.

    Each word is a list of phrases: the word as typed (`"word"`) alone, or its
    forms, the folded word first (`"tomato"`, `"tomatoes"`)."""

    __slots__ = ("groups", "match", "stemmed", "words")

    def __init__(self, words: list[list[str]]) -> None:
        self.words = words
        parts: list[str] = []
        self.groups: list[Group] = []
        index = 0
        for phrases in words:
            quoted = [f'"{p}"' for p in phrases]
            parts.append(quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")")
            self.groups.append(
                [(index, None), *((index + i, INFLECTED) for i in range(1, len(phrases)))]
            )
            index += len(phrases)
        self.match = " ".join(parts)
        self.stemmed = len(parts) < index  # some word found another form

    def any_match(self) -> str:
        """Every phrase OR'd: an FTS4 query whose matchinfo 'x' counts each
        phrase's messages whatever the rest of the query matches."""
        return " OR ".join(f'"{p}"' for phrases in self.words for p in phrases)

    def kept(self, counts: list[int]) -> tuple[Plan, list[int]]:
        """The plan without the other forms no message holds (`counts`: the
        messages holding each phrase, in order), and the counts of what stays.
        A vocabulary read from the index's segments may list a word whose
        every message was deleted; the server's counts drop those first."""
        out_words: list[list[str]] = []
        out_counts: list[int] = []
        i = 0
        for phrases in self.words:
            keep = [
                j for j in range(len(phrases)) if j == 0 or (i + j < len(counts) and counts[i + j])
            ]
            out_words.append([phrases[j] for j in keep])
            out_counts += [counts[i + j] for j in keep if i + j < len(counts)]
            i += len(phrases)
        if out_words == self.words:
            return self, counts
        return Plan(out_words), out_counts


def languages(setting: object) -> tuple[tuple[str, ...], str | None]:
    """`search.language` as the stemmers to use (none: stemming off), and
    what to say when the setting names no Snowball language."""
    from kaja_cli.core.store.settings.keys import SNOWBALL

    name = str(setting if setting is not None else DEFAULT_LANGUAGE).strip().lower()
    if name == OFF:
        return (), None
    if name not in SNOWBALL:
        return (), (
            f"search.language {str(setting)!r} is no Snowball language: searched the words as"
            " typed (`kaja config set search.language english` fixes it)"
        )
    return (name,), None


def stemmers(names: Sequence[str]) -> list:
    """Snowball's stemmers for `names` (PyStemmer)."""
    import Stemmer

    return [Stemmer.Stemmer(name) for name in names]


def tokens(words: Sequence[str]) -> list[list[str]]:
    """Each word as the index's tokenizer cuts and folds it: in ASCII, runs of
    letters and digits in lower case (what unicode61 makes of them, without
    a connection); otherwise asked of SQLite's tokenizer itself."""
    out: list[list[str] | None] = [
        _ASCII_TOKEN.findall(w.lower()) if w.isascii() else None for w in words
    ]
    if all(t is not None for t in out):
        return out  # type: ignore[return-value]
    memory = sqlite3.connect(":memory:")
    try:
        memory.execute(
            "CREATE VIRTUAL TABLE temp.tok USING fts3tokenize("
            + ", ".join(f"'{p}'" for p in _tokenizer_args())
            + ")"
        )
        select = "SELECT token FROM temp.tok WHERE input = ?"
        return [
            t if t is not None else [r[0] for r in memory.execute(select, (w,))]
            for w, t in zip(words, out, strict=True)
        ]
    finally:
        memory.close()


def _tokenizer_args() -> list[str]:
    """TOKENIZE (`tokenize=unicode61 "remove_diacritics=2"`) as fts3tokenize's arguments."""
    spec = TOKENIZE.split("=", 1)[1]
    name, _, rest = spec.partition(" ")
    return [name, *(a.strip('"') for a in rest.split())]


def span(stem: str, word: str) -> tuple[str, str, bool] | None:
    """The range of index words that may share `stem`, [low, high) (the bool:
    whether low itself may): those starting with the letters a form always
    keeps. Snowball may end a stem with a letter the word had not (happy →
    happi, hoping → hope), so the last letter is left out when the stem is not
    a beginning of the word or ends in i or e; the shorter beginning itself is
    then no form (no suffix was taken off it)."""
    whole = word.startswith(stem) and stem[-1:] not in ("i", "e")
    keep = stem if whole else stem[:-1]
    if not word.startswith(keep):
        keep = _common(stem, word)
    if len(keep) < 2:
        return None
    return keep, keep[:-1] + chr(ord(keep[-1]) + 1), keep == stem


def _common(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def plan(
    words: Sequence[str],
    vocabulary: Vocabulary,
    names: Sequence[str],
    counts: Counts | None = None,
) -> Plan:
    """The FTS4 query for plain `words` (`model.plain_words`), each word of one
    token expanded to the index's forms sharing its stem in one of the
    languages `names`; without any, the exact query (`model.plain_match`).
    `counts` gives the forms' counts the vocabulary left unknown."""
    found = stemmers(names) if names else []
    cut = tokens(words) if found else [[] for _ in words]
    out: list[list[str]] = []
    for word, word_tokens in zip(words, cut, strict=True):
        forms = _forms(word_tokens[0], vocabulary, found, counts) if len(word_tokens) == 1 else []
        out.append([word_tokens[0], *forms] if forms else [word])
    return Plan(out)


def _forms(word: str, vocabulary: Vocabulary, found: list, counts: Counts | None) -> list[str]:
    """The index's other words sharing `word`'s stem, in word order (the same
    on either engine, whatever each knows of their frequency); with `counts`,
    only those some message holds (else `Plan.kept` drops the others)."""
    if len(word) < MIN_LENGTH or not any(ch.isalpha() for ch in word):
        return []
    out: dict[str, int | None] = {}
    for stemmer in found:
        stem = stemmer.stemWord(word)
        bounds = span(stem, word)
        if bounds is None:
            continue
        candidates = [(t, n) for t, n in vocabulary(*bounds) if t != word]
        if not candidates:
            continue
        for (term, n), s in zip(
            candidates, stemmer.stemWords([t for t, _ in candidates]), strict=True
        ):
            if s == stem and term not in out:
                out[term] = n
    unknown = [t for t, n in out.items() if n is None]
    if unknown and counts is not None:
        known = counts(unknown)
        out = {t: n if n is not None else known.get(t, 0) for t, n in out.items()}
        out = {t: n for t, n in out.items() if n}
    return sorted(out)[: MAX_FORMS - 1]


def weight_sql(group: Group, parameter: str) -> str:
    """A group's hits in SQL: `f0 + <parameter> * f1 + …` (`parameter` the
    placeholder holding INFLECTED), summed left to right as `hits` does."""
    return " + ".join(f"f{i}" if w is None else f"{parameter} * f{i}" for i, w in group)


def hits(group: Group, found: Sequence[int]) -> float:
    """A group's hits in one message from its phrases' hits, as `weight_sql`."""
    total: float | None = None
    for i, w in group:
        part = found[i] if w is None else w * found[i]
        total = part if total is None else total + part
    return total or 0
