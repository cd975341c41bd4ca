"""How counts read: "1 message", "3 messages", "2 indexes", "1 entry", "1,204 rows".

One place for English plurals, so every message kaja prints counts the same
way (the core's findings, the commands' notes, the renderers' captions):
`plural()` for a count with its noun, `noun()` for the word alone (and for
a verb that agrees with a count: `noun(n, "is", "are")`).
"""

from __future__ import annotations


def noun(n: int, word: str, words: str | None = None) -> str:
    """`word` for one, else `words` (default: word + "s", or "es" after s, x, ch, sh)."""
    if n == 1:
        return word
    if words is not None:
        return words
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def plural(n: int, word: str, words: str | None = None, *, commas: bool = False) -> str:
    """The count and its noun: plural(1, "file") → "1 file", plural(3, "file") →
    "3 files"; with `commas`, thousands apart: "1,204 rows"."""
    return f"{n:,} {noun(n, word, words)}" if commas else f"{n} {noun(n, word, words)}"
