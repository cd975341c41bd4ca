"""A gzip stream compressed by a thread of its own.

`tar -z` hands compression to a gzip process, so reading the files and
compressing them run on two cores. zlib's `compress` and `crc32` release
Python's GIL, so a writer thread does the same here: the caller (tarfile)
frames and hashes the members while the thread compresses what came before.
The output is an ordinary gzip file (RFC 1952: a header with the archive's
name, one deflate stream, the CRC-32 and size), read back by `gzip`, `tar`
and Python's `tarfile` alike.
"""

from __future__ import annotations

import queue
import struct
import threading
import time
import zlib
from typing import IO

CHUNK = 1 << 20  # bytes handed to the thread at a time
AHEAD = 8  # chunks waiting at most: memory stays bounded whatever the store's size
_FNAME = 0x08


class ThreadedGzip:
    """A write-only file object: what is written comes out gzip-compressed in `raw`."""

    def __init__(self, raw: IO[bytes], name: str, level: int = 6) -> None:
        self.raw = raw
        self.level = level
        self._buffer = bytearray()
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=AHEAD)
        self._written = 0
        self._error: BaseException | None = None
        header = b"\x1f\x8b\x08" + bytes([_FNAME]) + struct.pack("<I", int(time.time()))
        raw.write(header + b"\x00\xff" + name.encode("latin-1", "replace") + b"\x00")
        self._thread = threading.Thread(target=self._compress, name="kaja-gzip", daemon=True)
        self._thread.start()

    # -- the caller's side --------------------------------------------------------------
    def write(self, data: bytes) -> int:
        self._buffer += data
        self._written += len(data)
        if len(self._buffer) >= CHUNK:
            self._hand_over()
        return len(data)

    def tell(self) -> int:
        """Bytes written so far, uncompressed: the position tarfile keeps."""
        return self._written

    def close(self) -> None:
        """Compress what is left, end the stream; raises what the thread met."""
        if self._buffer:
            self._hand_over()
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        """Stop the thread without finishing the stream (the archive is being thrown away)."""
        self._error = self._error or RuntimeError("aborted")
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        self._queue.put(None)
        self._thread.join()

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(bytes(self._buffer))
        self._buffer.clear()

    # -- the thread ---------------------------------------------------------------------
    def _compress(self) -> None:
        deflate = zlib.compressobj(self.level, zlib.DEFLATED, -zlib.MAX_WBITS)
        crc = size = 0
        try:
            while (chunk := self._queue.get()) is not None:
                if self._error is not None:
                    continue  # aborted or failed: drain until the end is signalled
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
                self.raw.write(deflate.compress(chunk))
            if self._error is None:
                self.raw.write(deflate.flush())
                self.raw.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))
        except BaseException as e:  # a full disk: the caller raises it at its next write
            self._error = e
            while self._queue.get() is not None:
                pass
