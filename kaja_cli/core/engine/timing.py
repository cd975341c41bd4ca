"""Timing every statement a SQLite connection runs, for whoever listens.

While a `Listener` is set (`listen()`), every connection the opener makes
(`db`) is a `factory()` connection: its cursors time each statement from
`execute()` until its last row is fetched (`fetchone/fetchmany/fetchall`,
or iteration, which reads in chunks so that rows pass at C speed), and hand
the listener the file's name, the statement, the seconds, the rows and
whether it failed. A statement counts once, when it is done: exhausted,
replaced by the cursor's next statement, or its cursor closed or gone.

The engine knows nothing of what the listener does with it (kaja's query
profile, `side/profiler.py`, keeps the seed's db-stats.db totals): it is
handed one, and forgets it again (`listen(None)`). With none set, the opener
uses sqlite3's own connection class, at no cost at all.

Nothing here imports sqlite3 until a connection is opened: `listen()` is on
the start-up path of every command.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Protocol

FETCH_CHUNK = 256  # rows an iterated cursor reads per timed call


class Listener(Protocol):
    """What hears of the statements (kaja's query profile)."""

    def opened(self, label: str, writable: bool) -> None:
        """A connection to the file named `label` was opened (`writable`: not `mode=ro`)."""

    def record(self, label: str, sql: str, seconds: float, rows: int, error: bool) -> None:
        """A statement on the file named `label` is done."""


_listener: Listener | None = None


def listen(listener: Listener | None) -> None:
    """Time the statements of the connections opened from now on into
    `listener` (None: stop; statements still running are not reported)."""
    global _listener
    _listener = listener


def listening() -> Listener | None:
    return _listener


_classes: type | None = None


def factory() -> type:
    """The connection class to open with: timed while a listener is set, else
    sqlite3's own."""
    import sqlite3

    if _listener is None:
        return sqlite3.Connection
    global _classes
    if _classes is None:
        _classes = _build()
    return _classes


def label(database: object) -> str:
    """Which file a connection is on, as the seed's `db` column names it: the
    file name (`kaja.db`, `db-stats.db`) out of a `file:` URI or a path."""
    text = str(database)
    if text.startswith("file:"):
        from urllib.parse import unquote, urlsplit

        text = unquote(urlsplit(text).path)
    return os.path.basename(text) or text


def _build() -> type:
    import sqlite3
    from itertools import chain

    clock: Callable[[], float] = time.perf_counter

    class TimedCursor(sqlite3.Cursor):
        """Times its statement from execute() until its last row is fetched."""

        _sql: str | None = None
        _seconds = 0.0
        _rows = 0

        def _done(self) -> None:
            sql, self._sql = self._sql, None
            if sql is not None and (listener := _listener) is not None:
                db = getattr(self.connection, "kaja_db", "?")
                listener.record(db, sql, self._seconds, self._rows, False)

        def _failed(self, sql: str, seconds: float) -> None:
            self._sql = None
            if (listener := _listener) is not None:
                listener.record(getattr(self.connection, "kaja_db", "?"), sql, seconds, 0, True)

        def _run(self, method: Callable, sql: str, *args: Any) -> TimedCursor:
            if self._sql is not None:
                self._done()
            start = clock()
            try:
                method(sql, *args)
            except sqlite3.Error:
                self._failed(sql, clock() - start)
                raise
            self._seconds = clock() - start
            # A write has run to its end: what it changed is its count.
            self._rows = self.rowcount if self.rowcount > 0 else 0
            self._sql = sql
            if self.description is None:  # nothing to fetch: done now
                self._done()
            return self

        def execute(self, sql: str, parameters: Any = ()) -> TimedCursor:  # type: ignore[override]
            return self._run(super().execute, sql, parameters)

        def executemany(self, sql: str, seq: Any) -> TimedCursor:  # type: ignore[override]
            return self._run(super().executemany, sql, seq)

        def executescript(self, script: str) -> TimedCursor:  # type: ignore[override]
            return self._run(super().executescript, script)

        def _timed(self, fetch: Callable, *args: Any) -> Any:
            start = clock()
            try:
                got = fetch(*args)
            except sqlite3.Error:
                if self._sql is not None:
                    self._failed(self._sql, self._seconds + clock() - start)
                raise
            self._seconds += clock() - start
            return got

        def fetchone(self) -> Any:
            row = self._timed(super().fetchone)
            if row is None:
                self._done()
            else:
                self._rows += 1
            return row

        def fetchmany(self, size: int | None = None) -> list:
            size = self.arraysize if size is None else size
            rows = self._timed(super().fetchmany, size)
            self._rows += len(rows)
            if len(rows) < size or not rows:
                self._done()
            return rows

        def fetchall(self) -> list:
            rows = self._timed(super().fetchall)
            self._rows += len(rows)
            self._done()
            return rows

        def __iter__(self) -> Any:
            # Rows pass at C speed (chain over lists); only each chunk is timed.
            return chain.from_iterable(iter(lambda: self.fetchmany(FETCH_CHUNK), []))

        def close(self) -> None:
            if self._sql is not None:
                self._done()
            super().close()

        def __del__(self) -> None:
            if self._sql is not None:
                self._done()

    class TimedConnection(sqlite3.Connection):
        """A connection whose statements are timed (see the module docstring)."""

        def __init__(self, database: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(database, *args, **kwargs)
            self.kaja_db = label(database)
            if (listener := _listener) is not None:
                listener.opened(self.kaja_db, "mode=ro" not in str(database))

        def cursor(self, factory: Any = TimedCursor) -> Any:  # type: ignore[override]
            return super().cursor(factory)

        def execute(self, sql: str, parameters: Any = ()) -> Any:  # type: ignore[override]
            return self.cursor().execute(sql, parameters)

        def executemany(self, sql: str, seq: Any) -> Any:  # type: ignore[override]
            return self.cursor().executemany(sql, seq)

        def executescript(self, script: str) -> Any:  # type: ignore[override]
            return self.cursor().executescript(script)

    return TimedConnection
