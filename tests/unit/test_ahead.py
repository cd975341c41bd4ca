"""Reading ahead (core/engine/ahead.py): a thread makes the next items of a
long read while the caller uses the last, and never outlives the caller's
interest."""

from __future__ import annotations

import threading
import time

import pytest

from kaja_cli.core.engine.ahead import DEPTH, read_ahead


def _running() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kaja-read-ahead"]


def test_items_come_in_order_each_made_holding_the_lock():
    lock = threading.Lock()
    held: list[bool] = []
    makers: set[int] = set()

    def produce():
        for i in range(50):
            held.append(lock.locked())
            makers.add(threading.get_ident())
            yield i

    assert list(read_ahead(produce(), lock)) == list(range(50))
    assert held == [True] * 50
    assert makers and threading.get_ident() not in makers  # made by the reading thread
    assert not _running()


def test_an_error_is_raised_in_its_place():
    def produce():
        yield 1
        yield 2
        raise ValueError("the third page failed")

    got: list[int] = []
    with pytest.raises(ValueError, match="the third page failed"):
        for item in read_ahead(produce(), threading.Lock()):
            got.append(item)
    assert got == [1, 2]
    assert not _running()


@pytest.mark.parametrize("how", ["closed", "the caller failed"])
def test_the_thread_stops_when_the_caller_stops(how):
    made: list[int] = []
    closed: list[bool] = []

    def produce():
        try:
            for i in range(10_000):
                made.append(i)
                yield i
        finally:
            closed.append(True)

    items = read_ahead(produce(), threading.Lock())
    if how == "closed":
        assert [next(items) for _ in range(3)] == [0, 1, 2]
        items.close()
    else:
        with pytest.raises(RuntimeError):
            for item in items:
                if item == 3:
                    raise RuntimeError("the output went away")
        del items
    deadline = time.monotonic() + 5
    while _running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running()
    assert closed == [True]  # the producer's own clean-up ran
    # never more than DEPTH made past what the caller took (and one in hand)
    assert len(made) <= 4 + DEPTH + 1


def test_the_caller_may_use_the_connection_between_items_under_the_lock():
    """What the reading thread makes and what the caller does under the same
    lock never overlap."""
    lock = threading.Lock()
    inside = threading.Event()
    overlaps: list[bool] = []

    def produce():
        for i in range(20):
            inside.set()
            time.sleep(0.001)
            inside.clear()
            yield i

    for _ in read_ahead(produce(), lock):
        with lock:
            overlaps.append(inside.is_set())
    assert overlaps == [False] * 20


def test_what_the_thread_may_not_read_the_caller_reads():
    """A connection opened for one thread (sqlite3's default) is read by the
    caller's thread itself: the same items, no error."""
    import sqlite3

    from kaja_cli.core.engine.db import usable_here

    conn = sqlite3.connect(":memory:")  # check_same_thread: this thread only
    makers: set[int] = set()

    def produce():
        for i in range(3):
            makers.add(threading.get_ident())
            yield conn.execute("SELECT ?", (i,)).fetchone()[0]

    got = list(read_ahead(produce(), threading.Lock(), usable=lambda: usable_here(conn)))
    assert got == [0, 1, 2] and makers == {threading.get_ident()}
    conn.close()
    shared = sqlite3.connect(":memory:", check_same_thread=False)
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(usable_here(shared)))
    worker.start()
    worker.join()
    assert seen == [True] and usable_here(shared)
    shared.close()


def test_stop_ends_the_reading_before_its_connection_closes():
    """`stop(conn)` (what closing a read connection calls first) stops and
    waits for every thread reading ahead on it, while the caller still holds
    the generator: the connection then closes under no statement (one
    closed under a running statement crashes the interpreter). Run in a
    process of its own: a crash there fails this test, not the suite."""
    import subprocess
    import sys

    script = """
import sqlite3, threading
from kaja_cli.core.engine import ahead
conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
conn.execute("CREATE TABLE t(x)")
conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100000)])
for round in range(20):
    def pages():
        for i in range(10**6):
            yield conn.execute(f"SELECT sum(x) + {i % 50} FROM t").fetchone()
    items = ahead.read_ahead(pages(), threading.Lock(), reading=conn)
    next(items)
    ahead.stop(conn)
    assert not [t for t in threading.enumerate() if t.name == "kaja-read-ahead"]
    items.close()
conn.close()
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, "ok\n", "")


def test_a_caller_going_on_after_stop_is_told_not_left_waiting():
    conn = object()  # what the reads are of
    items = read_ahead(iter(range(100)), threading.Lock(), reading=conn)
    assert next(items) == 0
    from kaja_cli.core.engine.ahead import stop

    stop(conn)
    assert not _running()
    with pytest.raises(RuntimeError, match="stopped"):
        for _ in items:  # what was made before the stop, then the error
            pass
