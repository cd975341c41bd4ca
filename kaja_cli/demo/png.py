"""Tiny real PNG images (stdlib only), for the demo store and the tests."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, pixel) -> bytes:
    """An RGB PNG; `pixel(x, y)` returns (r, g, b)."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows.extend(bytes(pixel(x, y)))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + _chunk(b"IEND", b"")
    )


def gradient(width: int, height: int, a: tuple[int, int, int], b: tuple[int, int, int]) -> bytes:
    def pixel(x: int, y: int) -> tuple[int, int, int]:
        t = (x + y) / max(1, width + height - 2)
        return tuple(int(a[i] + (b[i] - a[i]) * t) for i in range(3))  # type: ignore[return-value]

    return png(width, height, pixel)
