"""BM25 as FTS5 computes it, for FTS4 on SQLite (the local engine): each
phrase's idf from matchinfo, and every match's score in SQL arithmetic over
the matchinfo and docsize blobs, so SQLite's top-n sorter ranks and Python
sees only the rows kept.

The constants and the idf are the model's (`search.model`): the server part
computes the same figures on PostgreSQL with them, in the same order of
operations.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kaja_cli.core.conversations.search.model import K1, B, idf
from kaja_cli.core.conversations.search.stems import INFLECTED, Group, hits, weight_sql
from kaja_cli.core.engine.sqlite_format import varints

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.conversations.search.tables import Index


def stats(conn: sqlite3.Connection, ix: Index) -> tuple[int, float]:
    """Rows in the index and their average length in tokens, from FTS4's %_stat."""
    row = conn.execute(f"SELECT value FROM {ix.stat} WHERE id = 0").fetchone()
    if not row or not isinstance(row[0], bytes):
        return 0, 0.0
    numbers = varints(row[0], count=2)
    n = numbers[0] if numbers else 0
    tokens = numbers[1] if len(numbers) > 1 else 0
    return n, (tokens / n if n else 0.0)


def counts(conn: sqlite3.Connection, ix: Index, match: str) -> list[int]:
    """How many rows hold each phrase (matchinfo 'x'); nothing when nothing matches."""
    row = conn.execute(
        f"SELECT matchinfo({ix.name}, 'pcx') FROM {ix.table} WHERE {ix.name} MATCH ? LIMIT 1",
        (match,),
    ).fetchone()
    if row is None:
        return []
    info = array("I")
    info.frombytes(row[0])
    phrases, columns = info[0], info[1]
    return [
        sum(info[2 + 3 * (i * columns + c) + 2] for c in range(columns)) for i in range(phrases)
    ]


class Bm25:
    """FTS5's bm25 for one query: the idf of each word and the average length.

    A word is a group of the query's phrases (`stems.Group`): one phrase for
    an exact word, a word's forms when stemming found some; its hits in a
    message are its forms' hits, weighed (`stems.hits`), its idf that of its
    most frequent form. Without stemming each phrase is its own word, and
    this is FTS5's bm25 itself."""

    __slots__ = ("avgdl", "groups", "idf", "n", "phrases", "rows")

    def __init__(
        self, counts: list[int], n: int, avgdl: float, groups: list[Group] | None = None
    ) -> None:
        self.groups = groups or [[(i, None)] for i in range(len(counts))]
        self.phrases = len(counts)
        self.idf = [idf(n, max(counts[i] for i, _ in g)) for g in self.groups]
        self.avgdl = avgdl
        self.n = n  # rows in the index
        self.rows = max(counts, default=0)  # the most rows any phrase is in

    def score(self, found: Sequence[int], length: int) -> float:
        """The same arithmetic as FTS5 (and `sql` below), in the same order."""
        score = 0.0
        for weight, group in zip(self.idf, self.groups, strict=False):
            f = hits(group, found)
            score += weight * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / self.avgdl)))
        return score

    def params(self) -> dict[str, object]:
        out: dict[str, object] = {
            "lut": bytes(range(256)), "k1p1": K1 + 1.0, "k1": K1, "omb": 1 - B, "b": B,
            "avgdl": self.avgdl, "inflected": INFLECTED,
        }  # fmt: skip
        out.update({f"idf{i}": v for i, v in enumerate(self.idf)})
        return out

    def sql(self, ix: Index, push: str = "") -> str:
        """Every match as (docid, score), best first, ties to the lower docid,
        at most :n of them: BM25 in SQL arithmetic over the matchinfo and
        docsize blobs, so SQLite's top-n sorter does the ranking and Python
        sees only the rows it keeps."""
        p = self.phrases
        decoded = [f"{_uint32('mi', 4 * i, p)} AS f{i}" for i in range(p)]
        decoded.append(f"{_varint_sql('sz')} AS dl")
        terms = []
        for g, group in enumerate(self.groups):
            f = weight_sql(group, ":inflected")
            f = f if len(group) == 1 else f"({f})"
            terms.append(f":idf{g} * (({f} * :k1p1) / ({f} + :k1 * (:omb + :b * dl / :avgdl)))")
        # The two inner LIMIT -1 keep SQLite from flattening the layers, which
        # would evaluate matchinfo() and each decoding several times per row.
        return (
            f"SELECT docid, {' + '.join(terms)} AS score FROM ("
            f" SELECT docid, {', '.join(decoded)} FROM ("
            f"  SELECT {ix.name}.docid AS docid, matchinfo({ix.name}, 'y') AS mi, d.size AS sz"
            f"  FROM {ix.table} LEFT JOIN {ix.docsize} AS d ON d.docid = {ix.name}.docid"
            f"  WHERE {ix.name} MATCH :match{push} LIMIT -1) LIMIT -1)"
            " ORDER BY score DESC, docid LIMIT :n"
        )


def _byte(blob: str, i: int) -> str:
    """Byte `i` (from 1) of a blob as an integer: its position in :lut, a
    blob holding the bytes 0-255 in order."""
    return f"(instr(:lut, substr({blob}, {i}, 1)) - 1)"


def _uint32(blob: str, offset: int, count: int) -> str:
    """The native-order unsigned 32-bit integer at `offset` of a matchinfo
    blob of `count` of them; hit counts below 4 are found by comparison alone."""
    piece = blob if count == 1 else f"substr({blob}, {offset + 1}, 4)"
    order = sys.byteorder
    places = range(offset + 1, offset + 5) if order == "little" else range(offset + 4, offset, -1)
    full = " + ".join(f"{1 << (8 * k)} * {_byte(blob, i)}" for k, i in enumerate(places))
    quick = " ".join(f"WHEN x'{v.to_bytes(4, order).hex()}' THEN {v}" for v in range(4))
    return f"(CASE {piece} {quick} ELSE {full} END)"


def _varint_sql(blob: str, width: int = 5) -> str:
    """The varint at the start of a %_docsize blob (a message's length in tokens).

    One byte below 128 is the usual case: unicode() reads it without a copy
    (a first byte of 128 or more makes it 128 or more)."""
    value = ""
    for i in range(width, 0, -1):
        part = f"(({_byte(blob, i)} & 127) << {7 * (i - 1)})"
        value = (
            part
            if not value
            else f"{part} + CASE WHEN {_byte(blob, i)} < 128 THEN 0 ELSE {value} END"
        )
    return f"(CASE WHEN unicode({blob}) < 128 THEN unicode({blob}) ELSE {value} END)"
