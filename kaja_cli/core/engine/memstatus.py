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
reports no memory in use at all (no connection is open: every one holds
some). It is
left alone anywhere it cannot be done plainly: not on Linux (another
system passes a C function's variable arguments in other ways), Python's
sqlite3 without the library's functions to hand, or any step refused.
"""

from __future__ import annotations

import sys

_MEMSTATUS = 9  # SQLITE_CONFIG_MEMSTATUS
_MEMORY_USED = 0  # SQLITE_STATUS_MEMORY_USED
_OK = 0

_done = False


def turn_off() -> bool:
    """Turn SQLite's memory statistics off, once a process; whether it is."""
    global _done
    if _done or sys.platform != "linux":
        return False
    _done = True
    try:
        import _sqlite3
        import ctypes

        # The module's own handle: its SQLite, linked in or a library it loaded.
        lib = ctypes.CDLL(_sqlite3.__file__)
        config, status = lib.sqlite3_config, lib.sqlite3_status64
        shutdown, initialize = lib.sqlite3_shutdown, lib.sqlite3_initialize
    except (ImportError, OSError, AttributeError):
        return False
    used, highest = ctypes.c_int64(-1), ctypes.c_int64(0)
    if status(_MEMORY_USED, ctypes.byref(used), ctypes.byref(highest), 0) != _OK:
        return False
    if used.value != 0:  # something of SQLite's is open (or counts are off already)
        return False
    if shutdown() != _OK:
        return False
    turned = config(_MEMSTATUS, ctypes.c_int(0)) == _OK
    if initialize() != _OK:  # as sqlite3.connect() would do it again anyway
        return False
    return turned
