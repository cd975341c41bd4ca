"""How counts read: "1 message", "3 messages", "2 indexes", "1 entry".

One place for English plurals, so every message kaja prints counts the same
way (the core's findings and the commands' notes alike).
"""

from __future__ import annotations


def noun(n: int, word: str, words: str | None = None) -> str:
    """`word` for one, else `words` (default: word + "s", or "es" after s, x, ch, sh)."""
    if n == 1:
        return word
    if words is not None:
        return words
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def plural(n: int, word: str, words: str | None = None) -> str:
    """The count and its noun: plural(1, "file") → "1 file", plural(3, "file") → "3 files"."""
    return f"{n} {noun(n, word, words)}"
