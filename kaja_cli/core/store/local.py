"""The store's local part: its databases as SQLite files on this machine (SPEC §2, §3).

`Store` resolves to this part, or to the server's (`store/server`), once
(`Store.backend`); every method of the store that depends on the engine
asks its part. Here is what the engine (`engine/db`) does not know, passed
to it: which file is which database, that kaja writes only to one that is
Kaja's (`DatabaseFile.admit`, `guard.may_recover`), and the schema brought
up to date before a writer writes (`ensure_schema`).

The side databases (`cache.db`, `db-stats.db`, `web-auth.db`) are SQLite
files in either mode: the server's part hands them to the functions here.

db and schema are imported inside the methods: `kaja config paths` and shell
completion never open a database, and start-up is felt on every TAB press.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaja_cli.errors import NotFound

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.engine.dialect import Dialect
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store.paths import Paths, Server
    from kaja_cli.core.store.registry import DatabaseFile
    from kaja_cli.core.store.schema import Report, Table

Progress = Callable[[int, int | None], None]


class LocalBackend:
    """The store in SQLite files (see the module docstring)."""

    part = "local"  # `Store.part(package)` hands out `<package>.local`
    server: Server | None = None  # no server holds this store

    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    @property
    def dialect(self) -> Dialect:
        from kaja_cli.core.engine.dialect import SQLITE

        return SQLITE

    def require_local(self) -> None:
        return None

    def where(self, name: str) -> str:
        return str(self.paths.file_of(name).path)

    def profile_label(self, name: str) -> str:
        return self.paths.file_of(name).path.name

    def location(self, name: str) -> Path | str:
        return self.paths.file_of(name).path

    def owner(self, value: str | None) -> Owner:
        from kaja_cli.core.owners import Owner

        return Owner.parse(value)

    def local_files(self) -> list[DatabaseFile]:
        return self.paths.databases()

    def require(self, name: str) -> Path:
        path = self.paths.file_of(name).path
        if not path.exists():
            raise NotFound(
                f"no Kaja store at {path}",
                hint="run the agent (or `kaja demo`) first, or point --db/--state-dir at one",
            )
        return path

    @contextmanager
    def reader(
        self, name: str, *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[sqlite3.Connection]:
        from kaja_cli.core.engine import db
        from kaja_cli.core.store import guard

        file = self.paths.file_of(name)
        wait = db.BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
        path = self.require(name)
        if writing:
            db.require_database(path, writing=True)
        with db.open_read(path, timeout_ms=wait, recover=guard.may_recover(file)) as conn:
            if writing:
                file.admit(conn, path)
            yield conn

    @contextmanager
    def maybe_reader(
        self, name: str, *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[sqlite3.Connection | None]:
        # `writing` picks the server over its read replica in cloud mode; a
        # file is read where it is, as before.
        if not self.paths.file_of(name).path.exists():
            yield None
            return
        with self.reader(name, timeout_ms=timeout_ms) as conn:
            yield conn

    @contextmanager
    def writer(
        self, name: str, *, create: bool = False, timeout_ms: int | None = None
    ) -> Iterator[sqlite3.Connection]:
        from kaja_cli.core.engine import db

        file = self.paths.file_of(name)
        path = file.path if create else self.require(name)
        wait = db.BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
        with db.open_write(path, file, create=create, timeout_ms=wait) as conn:
            self.ensure_schema(conn, name)
            yield conn

    @contextmanager
    def glance(self, name: str) -> Iterator[sqlite3.Connection | None]:
        """A look that never writes, creates or waits (shell completion:
        `db.open_glance`); None when there is nothing to look at."""
        from kaja_cli.core.engine import db

        with db.open_glance(self.paths.file_of(name).path) as conn:
            yield conn

    def ensure_schema(
        self, conn: sqlite3.Connection, name: str, *, progress: Progress | None = None
    ) -> Report:
        return ensure_schema(self.paths.file_of(name), conn, progress=progress)

    def insert(
        self, conn: sqlite3.Connection, table: Table, names: list[str], values: list[Any], *,
        or_replace: bool,
    ) -> int:  # fmt: skip
        return insert(conn, table, names, values, or_replace=or_replace)

    def hold_numbering(self, conn: sqlite3.Connection, of: str) -> None:
        """Nothing more to hold: BEGIN IMMEDIATE holds the file's one write lock."""


def ensure_schema(
    file: DatabaseFile, conn: sqlite3.Connection, *, progress: Progress | None = None
) -> Report:
    """Bring the file up to date; a search index build runs after, in short
    transactions (`progress` sees it), so the agent can write meanwhile."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import schema, search_index

    if schema.is_current(conn, file):
        return schema.Report()
    with db.transaction(conn):
        report = schema.apply(conn, file)
    if file.search_index:
        search_index.finish(conn, progress)
    return report


def insert(
    conn: sqlite3.Connection, table: Table, names: list[str], values: list[Any], *,
    or_replace: bool,
) -> int:  # fmt: skip
    """One row into `table` (the write API's `Recorder.insert`); its rowid."""
    verb = "INSERT OR REPLACE" if or_replace else "INSERT"
    sql = (
        f'{verb} INTO "{table.name}" ({", ".join(chr(34) + n + chr(34) for n in names)})'
        f" VALUES ({', '.join('?' * len(names))})"
    )
    return conn.execute(sql, values).lastrowid or 0
