"""What a search is, whichever engine answers it (SPEC §6, §10): the query's
plain words, the results (`Hit`, `SearchResult`), the snippet's marks, the
BM25 constants and idf both engines rank with, and how core shows a long job.

Both engine parts (`search.local`, `search.server`) build their answer from
these, so `kaja search` finds, ranks and shows the same on either. Imports
nothing heavy: shell completion loads `ROLES` from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, contextmanager

from kaja_cli.errors import UsageError

Progress = Callable[[int, int | None], None]
# How core shows a long job: `render.progress(description, total)`.
ProgressFactory = Callable[[str, int | None], AbstractContextManager[Progress]]

ROLES = ("user", "assistant", "tool", "system")
SNIPPET_TOKENS = 16
MAX_WORDS = 100  # plain words in one query (SQLite's expression depth is 1000)
MARK_START, MARK_END = "\x02", "\x03"  # highlight markers inside FTS4's snippet()
# The FTS4 tokenizer of the index, of a scan's table and of the server's
# snippets: accents and case ignored.
TOKENIZE = 'tokenize=unicode61 "remove_diacritics=2"'

K1 = 1.2  # FTS5's bm25 constants (sqlite-fts4's rank_bm25 uses the same)
B = 0.75
IDF_FLOOR = 1e-6  # FTS5: a phrase in more than half the rows still counts a little


def idf(n: int, hits: int) -> float:
    """FTS5's idf of a phrase found in `hits` of `n` messages, floored."""
    value = math.log((n - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else IDF_FLOOR


# The results are plain classes rather than dataclasses: each @dataclass costs
# ~0.6 ms at import, and a selective search has 10 ms over start-up in all.
class Hit:
    """One message that matched, with what a listing shows of it."""

    __slots__ = (
        "created_at", "highlights", "message_id", "owner", "role", "score", "seq",
        "session_id", "session_short", "session_title", "snippet",
    )  # fmt: skip

    def __init__(
        self,
        message_id: str,
        session_id: str | None,
        session_short: str | None,  # the shortest unique prefix (sessions.short_id)
        session_title: str | None,
        owner: str | None,  # sessions.owner as stored (None: the terminal)
        seq: int | None,
        role: str | None,
        created_at: str | None,
        score: float,  # BM25, higher is better (FTS5's bm25() negated)
        snippet: str,  # one line of context around the matches
        highlights: tuple[tuple[int, int], ...],  # [start, end) of each match in `snippet`
    ) -> None:
        self.message_id = message_id
        self.session_id = session_id
        self.session_short = session_short
        self.session_title = session_title
        self.owner = owner
        self.seq = seq
        self.role = role
        self.created_at = created_at
        self.score = score
        self.snippet = snippet
        self.highlights = highlights

    def __repr__(self) -> str:
        return f"Hit({self.message_id!r}, score={self.score:.4f}, {self.snippet!r})"

    def to_json(self) -> dict:
        return {
            "message_id": self.message_id,
            "session_id": self.session_id,
            "session_title": self.session_title,
            "owner": self.owner,
            "seq": self.seq,
            "role": self.role,
            "created_at": self.created_at,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "highlights": [list(span) for span in self.highlights],
        }


class SearchResult:
    """The answer to one search, with what the command says about it."""

    def __init__(
        self,
        query: str,
        match: str,  # the FTS4 query that ran
        fts: bool,
        recent: bool,
        owner: str | None,  # the acting owner's id (None: terminal); unused with all_owners
        all_owners: bool,
        limit: int,
        location: str,
    ) -> None:
        self.query = query
        self.match = match
        self.fts = fts
        self.recent = recent
        self.owner = owner
        self.all_owners = all_owners
        self.limit = limit
        self.location = location
        self.hits: list[Hit] = []
        self.more = False  # more messages match than `limit` showed
        self.source = "index"  # "index", "scan" (no usable index), "none" (nothing to search)
        self.notes: list[str] = []  # what to say on stderr
        self.archived_hidden = False  # archived sessions' messages were left out

    def to_json(self) -> dict:
        """`kaja search --json`."""
        return {
            "query": self.query,
            "match": self.match,
            "fts": self.fts,
            "order": "recent" if self.recent else "best",
            "owner": None if self.all_owners else (self.owner or "terminal"),
            "all_owners": self.all_owners,
            "limit": self.limit,
            "source": self.source,
            "more": self.more,
            "results": [h.to_json() for h in self.hits],
        }


# --- the query --------------------------------------------------------------------------
def plain_match(text: str) -> str:
    """Plain words as an FTS4 query: one quoted phrase per word.

    Quoting makes FTS4's operators and punctuation plain text. A word with no
    letter or digit is dropped: the tokenizer would leave nothing of it, and
    an empty phrase makes the whole query match nothing.
    """
    return " ".join(f'"{word}"' for word in plain_words(text))


def plain_words(text: str) -> list[str]:
    """The words of a plain query, each the text of one phrase (`plain_match`)."""
    words = []
    for word in text.split():
        word = word.replace('"', " ").strip()
        if any(ch.isalnum() for ch in word):
            words.append(word)
    if len(words) > MAX_WORDS:
        raise UsageError(
            f"too many words to search for ({len(words)}): at most {MAX_WORDS}",
            hint="a few distinctive words find a message best",
        )
    if not words:
        raise UsageError(
            f"nothing to search for in {text!r}: it has no letters or digits",
            hint="use --fts for FTS4 query syntax",
        )
    return words


def parse_roles(values: Iterable[str]) -> tuple[str, ...]:
    """--role as typed (repeated, or comma-separated), checked and without repeats."""
    out = []
    for value in values:
        for role in value.split(","):
            role = role.strip().lower()
            if not role:
                continue
            if role not in ROLES:
                raise UsageError(f"--role: unknown role {role!r}", hint=f"use {', '.join(ROLES)}")
            if role not in out:
                out.append(role)
    return tuple(out)


# --- what a hit shows -------------------------------------------------------------------
def _one_line(text: str) -> str:
    """Line breaks and tabs as spaces. (`str.translate` with a table takes ~8 µs
    on a snippet, which is not ASCII with its '…': a search shows twenty.)"""
    for ch in "\n\r\t\v\f":
        if ch in text:
            text = text.replace(ch, " ")
    return text


def parse_snippet(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """FTS4's snippet with our markers → one line of text and the marked spans."""
    pieces = _one_line(raw).split(MARK_START)
    text, spans, size = [pieces[0].replace(MARK_END, "")], [], len(pieces[0])
    for piece in pieces[1:]:
        marked, _, rest = piece.partition(MARK_END)
        rest = rest.replace(MARK_END, "")
        if marked:
            spans.append((size, size + len(marked)))
        text += (marked, rest)
        size += len(marked) + len(rest)
    return "".join(text), tuple(spans)


# --- long jobs --------------------------------------------------------------------------
@contextmanager
def progress(factory: ProgressFactory | None, description: str, total: int | None):
    """A progress callback from `factory` (`render.progress`), or one that shows nothing."""
    if factory is None:
        yield lambda done, total=None: None
        return
    with factory(description, total) as bar:
        yield bar
