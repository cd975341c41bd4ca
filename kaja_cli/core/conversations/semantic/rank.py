"""The ranking of a semantic search, in plain Python: a query on an index
that is up to date imports no numpy (140 ms of a 300 ms budget) and no
`tokenizers` (`bpe`, `model.query_vector`).

Four passes over fewer and fewer vectors (`index` describes the tables):

1. which: the clusters whose centres are nearest the query, until they
   hold `PROBE_MIN` vectors (or `PROBE_PER` × `count`), and every vector not
   yet placed in one; on an index too small to be clustered, all of them;
2. Hamming: each candidate's signs against the query's, all at once as
   Python integers (XOR, a byte table of bit counts, each vector's
   byte lanes summed by one multiplication: ~10 ms a megabyte); the
   `HAMMING_KEEP` × `count` nearest go on;
3. weighted: the same sum with each differing sign weighed by the query's
   value there (`WEIGHT_BITS` bits of it, a bit plane at a time), which
   ranks as the query's values summed over the vector's signs; the best
   `count` go on;
4. cosine: those re-ranked by their int8 vectors.

`Ranker.best` answers (score, rowid, key), best first, ties to the older
message. bench/semantic.py prints how much of the exhaustive int8
ranking's top 20 it finds.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from array import array
from collections.abc import Sequence
from itertools import compress
from operator import mul

from kaja_cli.core.conversations.semantic import index

PROBE_MIN = 65_536  # vectors of the nearest clusters read at least
PROBE_PER = 32  # or this many per vector asked for, when more are asked
HAMMING_KEEP = 8  # × count nearest by Hamming distance go on to the weighted distance
WEIGHT_BITS = 4  # of each of the query's values, in the weighted distance
_BITS = index.BITS
_POPCOUNT = bytes(bin(i).count("1") for i in range(256))


def signs(q: Sequence[float]) -> bytes:
    """The signs packed as the index packs them (first value: top bit)."""
    out = bytearray(len(q) // 8)
    for i, v in enumerate(q):
        if v > 0:
            out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)


def _per_byte(differ: int, size: int) -> int:
    """`differ` with each byte replaced by its count of set bits (0 to 8)."""
    return int.from_bytes(differ.to_bytes(size, "little").translate(_POPCOUNT), "little")


def _top_lanes(total: int, size: int, lane: str) -> array:
    """Each vector's sum of its `lane`-wide lanes: the top lane of `total` × a
    one in each lane of a vector (a lane of the product sums the lanes at and
    below it within the vector's width)."""
    width = array(lane).itemsize
    ones = sum(1 << (8 * width * j) for j in range(_BITS // width))
    lanes = array(lane, (total * ones).to_bytes(size + _BITS, "little"))
    if sys.byteorder == "big":
        lanes.byteswap()
    return lanes[_BITS // width - 1 :: _BITS // width][: size // _BITS]


def hamming(bits: bytes, query: bytes) -> Sequence[int]:
    """Each vector's Hamming distance to `query`, in their order: its bytes'
    bit counts summed in byte-wide lanes. A sum reaches 256 only where a
    vector is the query's opposite (and one byte-wide window of 32 bytes
    across two vectors, every bit of it differing, adds 1 to the next): such
    a vector reads as near, the later passes put it last."""
    n = len(bits) // _BITS
    if not n:
        return b""
    differ = int.from_bytes(bits, "little") ^ int.from_bytes(query * n, "little")
    return _top_lanes(_per_byte(differ, len(bits)), len(bits), "B").tobytes()


def weighted(bits: bytes, q: Sequence[float]) -> Sequence[int]:
    """Each vector's differing signs, each weighed by |q| there (in
    `WEIGHT_BITS` bits): the smaller, the larger q summed over its signs."""
    n = len(bits) // _BITS
    if not n:
        return []
    top = max(map(abs, q)) or 1.0
    levels = (1 << WEIGHT_BITS) - 1
    weight = [round(abs(v) / top * levels) for v in q]
    differ = int.from_bytes(bits, "little") ^ int.from_bytes(signs(q) * n, "little")
    per_byte = 0
    for bit in range(WEIGHT_BITS):  # a byte: at most 8 × 15 = 120, no carry
        plane = signs([1.0 if w >> bit & 1 else 0.0 for w in weight])
        per_byte += _per_byte(differ & int.from_bytes(plane * n, "little"), len(bits)) << bit
    even = int.from_bytes(b"\xff\x00" * (len(bits) // 2), "little")
    pairs = (per_byte & even) + ((per_byte >> 8) & even)  # two-byte lanes: ≤ 240, a vector ≤ 3,840
    return _top_lanes(pairs, len(bits), "H")


def nearest(distances: Sequence[int], count: int) -> list[int]:
    """The positions of the `count` smallest distances (ties: the first ones)."""
    n = len(distances)
    if count >= n:
        return list(range(n))
    if not isinstance(distances, bytes):
        return sorted(range(n), key=distances.__getitem__)[:count]
    seen = 0
    for limit in range(256):  # counted by value, a C loop each: no sort
        seen += distances.count(limit)
        if seen >= count:
            break
    below = bytes(int(d < limit) for d in range(256))
    at = bytes(int(d == limit) for d in range(256))
    picked = list(compress(range(n), distances.translate(below)))
    return picked + list(compress(range(n), distances.translate(at)))[: count - len(picked)]


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
            rows = self.ix.execute("SELECT cluster, vector FROM semantic_centroids").fetchall()
            centres = _joined("f", [r[1] for r in rows])
            scored = [(-score, cluster) for (cluster, _), score in
                      zip(rows, _dots(centres, self.q), strict=True) if cluster in sizes]  # fmt: skip
            scored.sort()
            self._order = [(c, sizes[c]) for _, c in scored]
        return self._order

    def candidates(self, count: int) -> tuple[array, bytes]:
        """The rowids and signs of the vectors pass 1 reads."""
        want = max(PROBE_MIN, count * PROBE_PER)
        picked = [index.PENDING]
        held = 0
        for cluster, size in self.clusters():
            if held >= want:
                break
            picked.append(cluster)
            held += size
        rows = self.ix.execute(
            "SELECT rowids, bits FROM semantic_chunks WHERE cluster IN"
            " (SELECT value FROM json_each(?))",
            (json.dumps(picked),),
        ).fetchall()
        return _joined("q", [r[0] for r in rows]), b"".join(r[1] for r in rows)

    def best(self, count: int) -> list[tuple[float, int, int]]:
        """The `count` best, re-ranked by cosine: (score, rowid, key), best first."""
        rowids, bits = self.candidates(count)
        close = nearest(hamming(bits, signs(self.q)), count * HAMMING_KEEP)
        if len(close) > count:
            view = memoryview(bits)
            kept = b"".join([view[i * _BITS : (i + 1) * _BITS] for i in close])
            close = [close[i] for i in nearest(weighted(kept, self.q), count)]
        return self.cosine([rowids[i] for i in close])

    def cosine(self, rowids: list[int]) -> list[tuple[float, int, int]]:
        """These vectors by cosine to the query: (score, rowid, key), best first."""
        out = []
        for start in range(0, len(rowids), 10_000):
            rows = self.ix.execute(
                "SELECT rowid, key, scale, code FROM semantic_vectors"
                " WHERE rowid IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(rowids[start : start + 10_000])),),
            ).fetchall()
            dots = _dots(_joined("b", [r[3] for r in rows]), self.q)
            out += [(dot * scale, rowid, key)
                    for (rowid, key, scale, _), dot in zip(rows, dots, strict=True)]  # fmt: skip
        out.sort(key=lambda r: (-r[0], r[1]))
        return out


def _joined(kind: str, blobs: list[bytes]) -> array:
    """Blobs of numbers as one array (sliced, it is read faster than each blob made one)."""
    out = array(kind, b"".join(blobs))
    if sys.byteorder == "big" and out.itemsize > 1:
        out.byteswap()
    return out


def _dots(vectors: array, q: Sequence[float]) -> list[float]:
    """Each DIMS-wide row of `vectors` times q."""
    width = len(q)
    return [sum(map(mul, vectors[i : i + width], q)) for i in range(0, len(vectors), width)]
