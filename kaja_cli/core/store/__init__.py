"""A store: the resolved paths and the connections to the files behind them.

Commands hold a `Store` and pass it to the query functions of the domain
modules (sessions, search, usage, …); those open what they need. In cloud
mode (SPEC §10) the same store hands them a connection to kaja's schema on a
PostgreSQL server (`core.pg`) instead of a SQLite file: the query functions
speak to both (`core.dialect`), and the commands never see SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.store.paths import Overrides, Paths, resolve
from kaja_cli.core.store.registry import Database
from kaja_cli.core.store.settings import Mode
from kaja_cli.errors import Failed, NotFound

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.engine.postgres import Target
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store.schema import Report

Progress = Callable[[int, int | None], None]

# db and schema are imported inside the methods: `kaja config paths` and shell
# completion never open a database, and start-up is felt on every TAB press.
# So a lock wait left unsaid (`timeout_ms=None`) is `db.BUSY_TIMEOUT_MS`.


class Store(NamedTuple):
    paths: Paths

    @classmethod
    def locate(
        cls, overrides: Overrides | None = None, environ: Mapping[str, str] | None = None
    ) -> Store:
        return cls(resolve(overrides, environ))

    def require_local(self) -> None:
        if self.paths.mode is Mode.CLOUD:
            if self.paths.mode_source == "flag --database-url":
                why, hint = "--database-url chose cloud mode", "leave out --database-url"
            else:
                why = f'{self.paths.settings_file.path} sets [memory] mode = "cloud"'
                hint = 'run it where [memory] mode = "local"'
            raise Failed(
                f"{why}: this command reads only a local store, and there is none in cloud mode",
                hint=hint,
            )

    def part(self, package: str) -> ModuleType:
        """A feature's engine part: the module `<package>.local` (SQLite) or
        `<package>.server` (PostgreSQL), as this store's engine is. A feature whose
        SQL differs between the engines by more than spelling holds one skeleton
        and asks for its part here (`store.part(__package__)`), never deciding the
        engine itself."""
        import importlib

        return importlib.import_module(f"{package}.{'server' if self.cloud else 'local'}")

    # -- cloud mode -----------------------------------------------------------------
    @property
    def cloud(self) -> bool:
        """Cloud mode: the conversations are in a PostgreSQL server (SPEC §10)."""
        return self.paths.mode is Mode.CLOUD

    def target(self) -> Target:
        """The server, schema and account of cloud mode; Failed when not set or bad."""
        from kaja_cli.core.engine.postgres import target

        return target(self.paths.server)

    def where(self, name: str = "shared") -> str:
        """How a message names the store: a file's path, or the server (password as ***)."""
        return self.target().where if self.cloud else str(self.path(name))

    def owner(self, value: str | None) -> Owner:
        """The acting owner: `--owner` as typed, else "you": the terminal locally,
        `[memory] account` in cloud mode (the terminal when no account is set)."""
        from kaja_cli.core.owners import Owner

        if value is None and self.cloud and self.paths.server is not None:
            account = self.paths.server.account.value
            if account:
                return Owner.parse(account)
        return Owner.parse(value)

    def file_of(self, name: str) -> Database:
        """The database whose file holds a database's tables: the artifacts are in
        the shared file unless KAJA_ARTIFACTS_DB / artifactsPath split them out."""
        return self.paths.file_of(name).name

    def path(self, name: str = "shared") -> Path:
        return self.paths.file_of(name).path

    def exists(self, name: str = "shared") -> bool:
        return self.path(name).exists()

    def require(self, name: str = "shared") -> Path:
        """The database's path; NotFound (exit 3) saying where kaja looked if missing."""
        self.require_local()
        path = self.path(name)
        if not path.exists():
            raise NotFound(
                f"no Kaja store at {path}",
                hint="run the agent (or `kaja demo`) first, or point --db/--state-dir at one",
            )
        return path

    @contextmanager
    def reader(
        self, name: str = "shared", *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """A read-only connection; NotFound if the file (or, in cloud mode, kaja's
        schema on the server) does not exist.

        `writing`: the look a writing command takes before it asks and writes
        (a plan, a count): what its write would refuse is refused here, with
        the same exit 5 (not a SQLite file, not Kaja's: `guard`; on the server
        a schema that is not Kaja's is refused by `pg.require_schema`)."""
        if self.cloud:
            with self._server(name, writable=False, writing=writing, timeout_ms=timeout_ms) as conn:
                yield conn
            return
        from kaja_cli.core.engine import db
        from kaja_cli.core.store import guard

        wait = db.BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
        path = self.require(name)
        if writing:
            db.require_database(path, writing=True)
        with db.open_read(path, timeout_ms=wait, recover=self.recognise(name)) as conn:
            if writing:
                guard.require_kajas(conn, path, self.paths.file_of(name))
            yield conn

    def recognise(self, name: str = "shared") -> Callable[[Path], bool]:
        """Whether kaja may roll back an interrupted write in the file (a
        write): only in one that is recognisably Kaja's (`guard`)."""
        from kaja_cli.core.store import guard

        return guard.may_recover(self.paths.file_of(name))

    @contextmanager
    def maybe_reader(
        self, name: str = "shared", *, timeout_ms: int | None = None
    ) -> Iterator[sqlite3.Connection | None]:
        """`reader()`, or None when there is no store (listing commands then say
        where they looked): no file, or no kaja schema on the server."""
        if not self.cloud:
            if not self.path(name).exists():
                yield None
                return
            with self.reader(name, timeout_ms=timeout_ms) as conn:
                yield conn
            return
        from kaja_cli.core.engine import postgres as pg
        from kaja_cli.core.store.server import schema

        with pg.connect(self.target(), lock_timeout_ms=timeout_ms) as conn:
            state = schema.status(conn)
            if not state.exists:
                yield None
                return
            state.require_kaja(conn.target)
            yield conn  # type: ignore[misc]

    def location(self, name: str = "shared") -> Path | str:
        """The database's path, or in cloud mode the server (password as ***) and schema."""
        return self.target().where if self.cloud else self.path(name)

    @contextmanager
    def writer(
        self, name: str = "shared", *, create: bool = False, timeout_ms: int | None = None
    ) -> Iterator[sqlite3.Connection]:
        """A read-write connection with the schema brought up to date (in cloud
        mode, kaja's schema on the server; `create` makes it if it is missing)."""
        if self.cloud:
            with self._server(name, writable=True, create=create, timeout_ms=timeout_ms) as conn:
                yield conn
            return
        from kaja_cli.core.engine import db

        self.require_local()
        path = self.path(name) if create else self.require(name)
        wait = db.BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
        with db.open_write(path, self.paths.file_of(name), create=create, timeout_ms=wait) as conn:
            self.ensure_schema(conn, name)
            yield conn

    @contextmanager
    def _server(
        self,
        name: str,
        *,
        writable: bool,
        writing: bool = False,
        create: bool = False,
        timeout_ms: int | None = None,
    ) -> Iterator[sqlite3.Connection]:
        """A connection to kaja's schema on the server (core.pg.connection);
        `writing`: a read-only look that a write follows (`reader`)."""
        from kaja_cli.core.engine import postgres as pg

        if Database(self.file_of(name)) is not Database.SHARED:
            raise Failed(
                f"cloud mode keeps no {name} database: the server holds the conversations only",
            )
        where = self.target()
        with pg.connect(where, writable=writable, lock_timeout_ms=timeout_ms) as conn:
            if not (writable and create):
                pg.require_schema(conn, writing=writable or writing)
            if writable:
                from kaja_cli.core.store.server import schema

                schema.ensure(conn)
            yield conn  # type: ignore[misc]  # speaks sqlite3's interface (core.pg.connection)

    def ensure_schema(
        self, conn: sqlite3.Connection, name: str = "shared", *, progress: Progress | None = None
    ) -> Report:
        """Bring the file up to date; a search index build runs after, in short
        transactions (`progress` sees it), so the agent can write meanwhile."""
        from kaja_cli.core.conversations.search import index as search_index
        from kaja_cli.core.engine import db
        from kaja_cli.core.store import schema

        file = self.paths.file_of(name)
        if schema.is_current(conn, file):
            return schema.Report()
        with db.transaction(conn):
            report = schema.apply(conn, file)
        if file.search_index:
            search_index.finish(conn, progress)
        return report
