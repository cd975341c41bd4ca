"""SQLite's memory statistics, turned off for a `kaja sessions export`.

SQLite counts every allocation it makes (`sqlite3_status`) under one mutex
for the whole process, unless it was built or configured without
(`SQLITE_DEFAULT_MEMSTATUS=0`, one of the compile-time options SQLite's own
documentation recommends for speed). Python's `sqlite3` never reads those
counts; but two connections reading at once in two threads (a long export,
`db.SecondReader`) take that mutex for every string they build and spend as
much time waiting for it as the second thread saves: a 76,000-message HTML
export read half by each connection took each thread 0.27 s instead of 0.16.

The setting may only change while SQLite is shut down, and shutting SQLite
down is only allowed with nothing of it open: so this runs once a process,
before the export opens the store (`commands/sessions/export.py`; other
commands keep the 1 to 2 ms importing ctypes costs), and only where SQLite
counts its memory (a few bytes it hands out show in the count: with the
counts off already there is nothing to do, and no count could tell what is
open) and counts none in use but those (no connection is open: every one
holds some). It is left alone anywhere it cannot be done plainly: other
than Linux on x86-64 or ARM64 (whose calling conventions ctypes' call of
the variadic `sqlite3_config` is known to meet), Python's sqlite3 without
the library's functions to hand, or any step refused.
"""

from __future__ import annotations

import os
import sys

_MEMSTATUS = 9  # SQLITE_CONFIG_MEMSTATUS
_MEMORY_USED = 0  # SQLITE_STATUS_MEMORY_USED
_OK = 0
_PROBE = 64  # bytes asked of SQLite to see them counted

_done = False


def turn_off() -> bool:
    """Turn SQLite's memory statistics off, once a process; whether it is."""
    global _done
    if _done or sys.platform != "linux" or os.uname().machine not in ("x86_64", "aarch64"):
        return False
    _done = True
    try:
        import _sqlite3
        import ctypes

        # The module's own handle: its SQLite, linked in or a library it loaded.
        lib = ctypes.CDLL(_sqlite3.__file__)
        config, status = lib.sqlite3_config, lib.sqlite3_status64
        shutdown, initialize = lib.sqlite3_shutdown, lib.sqlite3_initialize
        malloc, free = lib.sqlite3_malloc64, lib.sqlite3_free
    except (ImportError, OSError, AttributeError):
        return False
    malloc.restype, malloc.argtypes = ctypes.c_void_p, [ctypes.c_uint64]
    free.restype, free.argtypes = None, [ctypes.c_void_p]
    config.argtypes = [ctypes.c_int]  # the rest variadic, as C passes them

    def used() -> int | None:
        now, highest = ctypes.c_int64(-1), ctypes.c_int64(0)
        if status(_MEMORY_USED, ctypes.byref(now), ctypes.byref(highest), 0) != _OK:
            return None
        return now.value

    probe = malloc(_PROBE)
    if not probe:
        return False
    try:
        held = used()
    finally:
        free(probe)
    # Counted, and nothing but the probe: no connection, statement or blob open.
    if held is None or held < _PROBE or used() != 0:
        return False
    if shutdown() != _OK:
        return False
    turned = config(_MEMSTATUS, ctypes.c_int(0)) == _OK
    if initialize() != _OK:  # as sqlite3.connect() would do it again anyway
        return False
    return turned
