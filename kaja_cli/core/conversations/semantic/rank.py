"""The ranking of a semantic search, in plain Python: a query on an index
that is up to date imports no numpy (140 ms of a 300 ms budget) and no
`tokenizers` (`bpe`, `model.query_vector`).

Three passes over fewer and fewer vectors (`index` describes the tables):

1. which: the clusters whose centres are nearest the query, until they
   hold `PROBE_MIN` vectors (or `count` × `PROBE_PER`), and every vector not
   yet placed in one; on an index too small to be clustered, all of them;
2. Hamming: each candidate's signs against the query's, all at once as
   Python integers (XOR, a byte table of bit counts, the two-byte lanes of
   each vector summed by one multiplication: ~10 ms a megabyte); the
   `HAMMING_KEEP` × `count` nearest are scored by the query's own values
   summed over their signs (a table of 256 sums per byte of signs), and the
   best `count` kept;
3. cosine: those `count` re-ranked by their int8 vectors.

`Ranker.best` answers (score, rowid, key), best first, ties to the older
message. bench/semantic.py prints how often its top 20 is the exhaustive
int8 ranking's.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from array import array
from collections.abc import Sequence
from operator import getitem, mul

from kaja_cli.core.conversations.semantic import index

PROBE_MIN = 16_384  # vectors of the nearest clusters read at least
PROBE_PER = 16  # or this many per vector asked for, when more are asked
HAMMING_KEEP = 4  # × count nearest by Hamming distance, scored with the query's values
_BITS = index.BITS
_POPCOUNT = bytes(bin(i).count("1") for i in range(256))
_LANES = sum(1 << (16 * j) for j in range(_BITS // 2))  # sums a vector's 16 two-byte lanes


def signs(q: Sequence[float]) -> bytes:
    """The query's signs packed as the index packs them (first value: top bit)."""
    out = bytearray(len(q) // 8)
    for i, v in enumerate(q):
        if v > 0:
            out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)


def hamming(bits: bytes, query: bytes) -> Sequence[int]:
    """Each vector's Hamming distance to `query`, in their order."""
    n = len(bits) // _BITS
    if not n:
        return b""
    differ = int.from_bytes(bits, "little") ^ int.from_bytes(query * n, "little")
    per_byte = int.from_bytes(differ.to_bytes(len(bits), "little").translate(_POPCOUNT), "little")
    even = int.from_bytes(b"\xff\x00" * (len(bits) // 2), "little")
    lanes = (per_byte & even) + ((per_byte >> 8) & even)  # 16 two-byte lanes a vector, ≤ 16 each
    sums = (lanes * _LANES).to_bytes(len(bits) + _BITS, "little")  # a vector's sum: its top lane
    low, high = sums[_BITS - 2 :: _BITS][:n], sums[_BITS - 1 :: _BITS][:n]
    if high.count(0) == n:
        return low
    return [lo + 256 * hi for lo, hi in zip(low, high, strict=True)]  # 256: every sign differs


def nearest(distances: Sequence[int], count: int) -> list[int]:
    """The positions of the `count` smallest distances (ties: the first ones)."""
    if count >= len(distances):
        return list(range(len(distances)))
    if not isinstance(distances, bytes):
        return sorted(range(len(distances)), key=distances.__getitem__)[:count]
    seen = 0
    for limit in range(256):  # counted by value, a C loop each: no sort
        seen += distances.count(limit)
        if seen >= count:
            break
    picked = [i for i, d in enumerate(distances) if d < limit]
    return picked + [i for i, d in enumerate(distances) if d == limit][: count - len(picked)]


def byte_sums(q: Sequence[float]) -> list[list[float]]:
    """Per byte of signs, what each of its 256 values adds to the query's
    values summed with those signs (+v for a set bit, -v otherwise)."""
    tables = []
    for start in range(0, len(q), 8):
        sums = [0.0]
        for v in reversed(q[start : start + 8]):  # the last value ends as the lowest bit
            sums = [s - v for s in sums] + [s + v for s in sums]
        tables.append(sums)
    return tables


class Ranker:
    """One query against one index connection."""

    def __init__(self, ix: sqlite3.Connection, q: Sequence[float]) -> None:
        self.ix, self.q = ix, list(q)
        self.total = ix.execute("SELECT ifnull(sum(n), 0) FROM semantic_chunks").fetchone()[0]
        self._order: list[tuple[int, int]] | None = None

    def clusters(self) -> list[tuple[int, int]]:
        """(cluster, vectors) of every placed cluster, the nearest centre first."""
        if self._order is None:
            sizes = dict(self.ix.execute(
                "SELECT cluster, sum(n) FROM semantic_chunks WHERE cluster != ? GROUP BY cluster",
                (index.PENDING,),
            ).fetchall())  # fmt: skip
            q = self.q
            scored = []
            for cluster, blob in self.ix.execute("SELECT cluster, vector FROM semantic_centroids"):
                if cluster in sizes:
                    scored.append((-sum(map(mul, array("f", blob), q)), cluster))
            scored.sort()
            self._order = [(c, sizes[c]) for _, c in scored]
        return self._order

    def candidates(self, count: int) -> tuple[list[int], bytes]:
        """The rowids and signs of the vectors pass 1 reads."""
        want = max(PROBE_MIN, count * PROBE_PER)
        picked = [index.PENDING]
        held = 0
        for cluster, size in self.clusters():
            if held >= want:
                break
            picked.append(cluster)
            held += size
        rowids: list[int] = []
        bits: list[bytes] = []
        for r, b in self.ix.execute(
            "SELECT rowids, bits FROM semantic_chunks WHERE cluster IN"
            " (SELECT value FROM json_each(?))",
            (json.dumps(picked),),
        ):
            rowids += array("q", r)
            bits.append(b)
        return rowids, b"".join(bits)

    def best(self, count: int) -> list[tuple[float, int, int]]:
        """The `count` best, re-ranked by cosine: (score, rowid, key), best first."""
        rowids, bits = self.candidates(count)
        close = nearest(hamming(bits, signs(self.q)), count * HAMMING_KEEP)
        if len(close) > count:
            tables = byte_sums(self.q)
            view = memoryview(bits)
            scored = [(sum(map(getitem, tables, view[i * _BITS : (i + 1) * _BITS])), i)
                      for i in close]  # fmt: skip
            close = [i for _, i in heapq.nlargest(count, scored)]
        return self.cosine([rowids[i] for i in close])

    def cosine(self, rowids: list[int]) -> list[tuple[float, int, int]]:
        """These vectors by cosine to the query: (score, rowid, key), best first."""
        q = self.q
        out = []
        for start in range(0, len(rowids), 10_000):
            for rowid, key, scale, code in self.ix.execute(
                "SELECT rowid, key, scale, code FROM semantic_vectors"
                " WHERE rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(rowids[start : start + 10_000]),),
            ):
                out.append((sum(map(mul, memoryview(code).cast("b"), q)) * scale, rowid, key))
        out.sort(key=lambda r: (-r[0], r[1]))
        return out
