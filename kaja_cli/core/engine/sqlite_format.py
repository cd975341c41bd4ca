"""What SQLite writes inside its own blobs, read back in Python: the varints of
FTS3/FTS4's shadow tables (`%_stat`: the rows indexed and their tokens in all;
`%_docsize`: one row's length in tokens).

The one decoder of them: search ranks with it, doctor and the CJK index count
with it. (Search's SQL reads a `%_docsize` varint in SQL arithmetic instead,
`search.rank`, so that no Python runs per row.)
"""

from __future__ import annotations


def varints(data: bytes, *, count: int | None = None) -> list[int]:
    """The unsigned varints at the start of `data` (at most `count` of them),
    as FTS3/FTS4 writes them: 7 bits a byte, least significant first, the
    high bit set on every byte of a number but its last. A number the blob
    cuts short is not one: a damaged blob reads as fewer numbers."""
    out: list[int] = []
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            out.append(value)
            if len(out) == count:
                break
            value = shift = 0
    return out
