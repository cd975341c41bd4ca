"""The store's server part: cloud mode, the same store in a PostgreSQL server (SPEC §10).

`Store` resolves to this part in cloud mode, or to the local one
(`store/local.py`), once; the commands and the query functions never ask
which. A PostgreSQL connection (`engine/postgres.py`) speaks through the same
interface as a sqlite3 one, rewriting `?` placeholders and carrying its
`dialect`. What differs truly lives here:

- this module: where the server is (`target`, from the settings), the
  connections the store hands out (`ServerBackend`), and refusing a schema
  that is not Kaja's;
- `ddl`: the one schema description of `store/schema.py` written as PostgreSQL;
- `schema`: kaja's schema on the server, its version, bringing it up to date;
- `tokenizer`: SQLite's unicode61 tokenizer reproduced in SQL, so the server's
  index holds the words local search holds.

Only the shared database moves to the server; the side databases stay local
files, and this part hands them to the local one. Imports nothing heavy:
psycopg comes in with the first connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaja_cli.core.store.registry import Database
from kaja_cli.errors import Failed, NotFound

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.engine.dialect import Dialect
    from kaja_cli.core.engine.postgres import Connection, Target
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store.paths import Paths, Server
    from kaja_cli.core.store.registry import DatabaseFile
    from kaja_cli.core.store.schema import Table

Progress = Callable[[int, int | None], None]


def target(server: Server | None) -> Target:
    """The server cloud mode uses; Failed (exit 1) when it is not set or not a
    PostgreSQL URL, saying which setting to fix."""
    from kaja_cli.core.engine.postgres import Target
    from kaja_cli.core.store.settings import keys as settings_keys

    if server is None or not server.url.value:
        raise Failed(
            "cloud mode needs the PostgreSQL server's URL",
            hint="set [memory] databaseUrl (kaja config set memory.databaseUrl postgresql://…),"
            " KAJA_DATABASE_URL, or give --database-url",
        )
    url, account, schema = server[:3]
    for key, setting in (("memory.databaseUrl", url), ("memory.account", account),
                         ("memory.databaseSchema", schema)):  # fmt: skip
        if setting.value is not None and (
            why := settings_keys.check(settings_keys.KEYS[key], setting.value)
        ):
            raise Failed(f"{setting.source}: {why}")
    return Target(str(url.value), str(schema.value), account.value, url.source,
                  server.statement_timeout_s)  # fmt: skip


def read_target(server: Server | None) -> Target:
    """Where read-only commands read: `[memory] readUrl` (a read replica) when
    it is set, else the server itself (`target`). Writes never go there."""
    from kaja_cli.core.store.settings import keys as settings_keys

    primary = target(server)
    assert server is not None  # `target` raised otherwise
    read = server.read_url
    if not read.value:
        return primary
    if why := settings_keys.check(settings_keys.KEYS["memory.readUrl"], read.value):
        raise Failed(f"{read.source}: {why}")
    return primary._replace(url=str(read.value), url_source=read.source)


def require_schema(conn: Connection, *, writing: bool = False) -> None:
    """NotFound (exit 3) when the server has no Kaja schema here, and not Kaja's
    (exit 5 for a command that would write it, else 1: `schema.Status`)."""
    from kaja_cli.core.store.server import schema

    state = schema.status(conn)
    if not state.exists:
        raise NotFound(
            f"no Kaja store in {conn.target.where}",
            hint="run the agent in cloud mode (or `kaja demo --database-url …`) first,"
            " or check [memory] databaseSchema",
        )
    state.require_kaja(conn.target, writing=writing)


class ServerBackend:
    """The store on a PostgreSQL server (see the module docstring)."""

    part = "server"  # `Store.part(package)` hands out `<package>.server`

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.server: Server | None = paths.server  # the settings that say where it is

    @property
    def dialect(self) -> Dialect:
        from kaja_cli.core.engine.dialect import POSTGRES

        return POSTGRES

    def target(self) -> Target:
        return target(self.server)

    def read_target(self) -> Target:
        return read_target(self.server)

    def _held(self, name: str) -> bool:
        """Whether the server holds this database's tables (the shared one
        does; the side databases stay local files)."""
        return self.paths.file_of(name).name is Database.SHARED

    def require_local(self) -> None:
        raise self._no_local_store()

    def _no_local_store(self) -> Failed:
        if self.paths.mode_source == "flag --database-url":
            why, hint = "--database-url chose cloud mode", "leave out --database-url"
        else:
            why = f'{self.paths.settings_file.path} sets [memory] mode = "cloud"'
            hint = 'run it where [memory] mode = "local"'
        return Failed(
            f"{why}: this command reads only a local store, and there is none in cloud mode",
            hint=hint,
        )

    def where(self, name: str) -> str:
        return self.target().where

    def location(self, name: str) -> Path | str:
        return self.target().where

    def owner(self, value: str | None) -> Owner:
        """`--owner` as typed, else `[memory] account` (the terminal when none is set)."""
        from kaja_cli.core.owners import Owner

        if value is None and self.server is not None and self.server.account.value:
            return Owner.parse(self.server.account.value)
        return Owner.parse(value)

    def local_files(self) -> list[DatabaseFile]:
        """No database of the store is a file here: the server holds the conversations."""
        return []

    def require(self, name: str) -> Path:
        """A local store's file: there is none in cloud mode (as `require_local`)."""
        raise self._no_local_store()

    def _local(self) -> Any:
        """The local part, for the side databases (files here in cloud mode too)."""
        from kaja_cli.core.store.local import LocalBackend

        return LocalBackend(self.paths)

    def profile_label(self, name: str) -> str:
        """How the query profile names the database (`db`): the server and schema."""
        if self._held(name):
            return f"postgresql:{self.server.schema.value if self.server else ''}"
        return self.paths.file_of(name).path.name

    @contextmanager
    def reader(
        self, name: str, *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[Any]:
        if not self._held(name):
            with self._local().reader(name, timeout_ms=timeout_ms, writing=writing) as conn:
                yield conn
            return
        with self._connect(name, writable=False, writing=writing, timeout_ms=timeout_ms) as conn:
            yield conn

    @contextmanager
    def maybe_reader(
        self, name: str, *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[Any]:
        from kaja_cli.core.engine import postgres as pg
        from kaja_cli.core.store.server import schema

        if not self._held(name):
            with self._local().maybe_reader(name, timeout_ms=timeout_ms) as conn:
                yield conn
            return
        where = self.target() if writing else self.read_target()
        with pg.connect(where, lock_timeout_ms=timeout_ms, primary=writing) as conn:
            state = schema.status(conn)
            if not state.exists:
                yield None
                return
            state.require_kaja(conn.target)
            yield conn

    @contextmanager
    def writer(
        self, name: str, *, create: bool = False, timeout_ms: int | None = None
    ) -> Iterator[Any]:
        if not self._held(name):
            with self._local().writer(name, create=create, timeout_ms=timeout_ms) as conn:
                yield conn
            return
        with self._connect(name, writable=True, create=create, timeout_ms=timeout_ms) as conn:
            yield conn

    @contextmanager
    def _connect(
        self,
        name: str,
        *,
        writable: bool,
        writing: bool = False,
        create: bool = False,
        timeout_ms: int | None = None,
    ) -> Iterator[Connection]:
        """A connection to kaja's schema on the server; `writing`: a read-only
        look that a write follows (`Store.reader`)."""
        from kaja_cli.core.engine import postgres as pg

        if not self._held(name):
            raise Failed(
                f"cloud mode keeps no {name} database: the server holds the conversations only",
            )
        # A read reads the replica when there is one; the look a write takes
        # first (`writing`), and the write, read and write the server itself.
        where = self.target() if writable or writing else self.read_target()
        with pg.connect(
            where, writable=writable, lock_timeout_ms=timeout_ms, primary=writing
        ) as conn:
            if not (writable and create):
                require_schema(conn, writing=writable or writing)
            if writable:
                from kaja_cli.core.store.server import schema

                schema.ensure(conn)
            yield conn

    @contextmanager
    def glance(self, name: str) -> Iterator[sqlite3.Connection | None]:
        """Shell completion never asks the server (a TAB press must not wait on
        a network): nothing to look at there; a side database is a local file."""
        if self._held(name):
            yield None
            return
        from kaja_cli.core.engine import db

        with db.open_glance(self.paths.file_of(name).path) as conn:
            yield conn

    def ensure_schema(self, conn: Any, name: str, *, progress: Progress | None = None) -> Any:
        """Bring the database up to date: kaja's schema on the server, or a
        side database's file (`local.ensure_schema`)."""
        if self._held(name):
            from kaja_cli.core.store.server import schema

            return schema.ensure(conn)
        from kaja_cli.core.store import local

        return local.ensure_schema(self.paths.file_of(name), conn, progress=progress)

    def insert(
        self, conn: Connection, table: Table, names: list[str], values: list[Any], *,
        or_replace: bool,
    ) -> int:  # fmt: skip
        from kaja_cli.core.store.server import ddl

        return ddl.insert(conn, table, names, values, or_replace=or_replace)

    def hold_numbering(self, conn: Connection, of: str) -> None:
        from kaja_cli.core.store.server import ddl

        ddl.hold_numbering(conn, of)
