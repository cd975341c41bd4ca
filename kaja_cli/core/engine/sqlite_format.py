"""What SQLite writes inside its own blobs, read back in Python: the varints of
FTS3/FTS4's shadow tables (`%_stat`: the rows indexed and their tokens in all;
`%_docsize`: one row's length in tokens).

The one decoder of them: search ranks with it, doctor and the CJK index count
with it, stemming reads the index's words with it (`search.words`). (Search's SQL reads a `%_docsize` varint in SQL arithmetic instead,
`search.rank`, so that no Python runs per row.)
"""

from __future__ import annotations


def varints(data: bytes, *, count: int | None = None) -> list[int]:
    """The unsigned varints at the start of `data` (at most `count` of them),
    as FTS3/FTS4 writes them (`varint_at`). A number the blob cuts short is
    not one: a damaged blob reads as fewer numbers."""
    out: list[int] = []
    i = 0
    while i < len(data) and (count is None or len(out) < count):
        found = varint_at(data, i)
        if found is None:
            break
        out.append(found[0])
        i = found[1]
    return out


def varint_at(data: bytes, i: int) -> tuple[int, int] | None:
    """The varint at offset `i` of `data` and the offset after it, as FTS3/FTS4
    writes them: 7 bits a byte, least significant first, the high bit set on
    every byte of a number but its last. None when the blob cuts it short."""
    value = shift = 0
    while i < len(data):
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7
    return None
