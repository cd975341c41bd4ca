"""Reading ahead: the next results of a long read made by a thread of their
own while the caller uses the last ones (`sessions export ID`, issue 40).

SQLite lets go of Python's lock (the GIL) while it runs a statement, so a
thread asking it for the next page of a session while the main thread
escapes and writes the last one keeps two processors busy where one waited
on the other. Both use the one connection, so the one snapshot: whoever uses
the connection holds `lock`, and each result is read whole (a page joined
into one row) before it is let go. A row at a time would not gain: the
thread would need the GIL back after every row (`sqlite3.threadsafety` is 3,
SQLite's serialized mode, so a connection may be used from either thread).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
_HERE = object()  # the reading thread may not read: the caller's thread does
DEPTH = 2  # results made ahead of the caller: the memory of two pages


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def read_ahead(
    produce: Iterator[T], lock: threading.Lock | None = None, depth: int = DEPTH,
    *, usable: Callable[[], bool] | None = None, reading: object = None,
) -> Iterator[T]:  # fmt: skip
    """The items of `produce`, each made by a thread of its own holding `lock`
    (one of its own when the caller shares none: it then leaves the
    connection alone until the last item), at most `depth` ahead of the
    caller. An error raised making one is raised here in its place. Closing
    this, or an error in the caller, stops the thread before its next item
    and waits for it (one item: a page's statement, a few milliseconds); so
    does `stop(reading)` (the connection `produce` reads, before it is
    closed). `usable`, asked in that thread
    first: whether what `produce` reads may be used there (an SQLite
    connection opened for one thread may not, `db.usable_here`); if not, the
    caller's own thread makes every item."""
    lock = lock or threading.Lock()
    made: queue.Queue = queue.Queue(depth)
    stop_now = threading.Event()

    def work() -> None:
        try:
            if usable is not None and not usable():
                made.put(_HERE)
                return
            while not stop_now.is_set():
                with lock:
                    item = next(produce, _DONE)
                made.put(item)
                if item is _DONE:
                    return
        except BaseException as e:  # handed to the caller, raised there
            made.put(_Raised(e))

    def halt() -> None:
        """Stop the thread and wait for it, even through Ctrl-C (raised after)."""
        stop_now.set()
        interrupted: BaseException | None = None
        while thread.is_alive():
            try:  # room for a put the thread may be waiting on
                made.get(timeout=0.05)
            except queue.Empty:
                pass
            except KeyboardInterrupt as e:
                interrupted = e
        # A caller that goes on after `stop` is told, not left waiting.
        with contextlib.suppress(queue.Full):
            made.put_nowait(_Raised(RuntimeError("the read was stopped: its connection closed")))
        if interrupted is not None:
            raise interrupted

    thread = threading.Thread(target=work, name="kaja-read-ahead", daemon=True)
    key = id(reading) if reading is not None else None
    if key is not None:
        with _register:
            _halts.setdefault(key, []).append(halt)
    thread.start()
    try:
        while True:
            item = made.get()
            if item is _DONE:
                return
            if item is _HERE:
                yield from produce
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        try:
            halt()
        finally:
            if key is not None:
                with _register:
                    if halt in _halts.get(key, ()):
                        _halts[key].remove(halt)
                        if not _halts[key]:
                            del _halts[key]
            with lock:
                close = getattr(produce, "close", None)
                if close is not None:
                    close()


# The threads reading ahead, by the connection they read: an error in the
# caller (a reader that went away, Ctrl-C) leaves its generators alive in the
# traceback while the connection's `with` closes it, and a statement running
# on a closed SQLite connection crashes the interpreter (SIGSEGV).
_register = threading.Lock()
_halts: dict[int, list[Callable[[], None]]] = {}


def stop(reading: object) -> None:
    """Stop every thread reading ahead on `reading` and wait for each (before
    the connection is closed: `db.open_read`)."""
    with _register:
        halts = _halts.pop(id(reading), [])
    for halt in halts:
        halt()
