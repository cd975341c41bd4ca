"""A store: the resolved paths and the connections to the data behind them.

Commands hold a `Store` and pass it to the query functions of the domain
modules (sessions, search, usage, …); those open what they need through it.
The engine is chosen once, here: a store resolves to its local part
(`store/local.py`: SQLite files) or, in cloud mode (SPEC §10), its server
part (`store/server`: kaja's schema on a PostgreSQL server), and every method
below that depends on the engine asks that part (`Store.backend`). The query
functions speak to both (`store.dialect`, `engine/dialect.py`); where a
feature differs by more than spelling it asks for its own engine part
(`store.part(__package__)`). The commands never see SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kaja_cli.core.store.paths import Overrides, Paths, resolve
from kaja_cli.core.store.registry import Database
from kaja_cli.core.store.settings import Mode

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.engine.dialect import Dialect
    from kaja_cli.core.engine.postgres import Target
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store.local import LocalBackend
    from kaja_cli.core.store.paths import Server
    from kaja_cli.core.store.registry import DatabaseFile
    from kaja_cli.core.store.schema import Report, Table
    from kaja_cli.core.store.server import ServerBackend

Progress = Callable[[int, int | None], None]

# A lock wait left unsaid (`timeout_ms=None`) is `db.BUSY_TIMEOUT_MS` locally,
# `postgres.LOCK_TIMEOUT_MS` on the server.


def _backend(paths: Paths) -> LocalBackend | ServerBackend:
    """The store's engine part: the one place the engine is chosen."""
    if paths.mode is Mode.CLOUD:
        from kaja_cli.core.store.server import ServerBackend

        return ServerBackend(paths)
    from kaja_cli.core.store.local import LocalBackend

    return LocalBackend(paths)


class Store:
    """The resolved paths, and the engine part they resolve to (`backend`)."""

    __slots__ = ("backend", "paths")

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.backend = _backend(paths)

    def __repr__(self) -> str:
        return f"Store({self.paths!r})"

    @classmethod
    def locate(
        cls, overrides: Overrides | None = None, environ: Mapping[str, str] | None = None
    ) -> Store:
        return cls(resolve(overrides, environ))

    # -- the engine ------------------------------------------------------------------
    def part(self, package: str) -> ModuleType:
        """A feature's engine part: the module `<package>.local` (SQLite) or
        `<package>.server` (PostgreSQL), as this store's engine is. A feature whose
        SQL differs between the engines by more than spelling holds one skeleton
        and asks for its part here (`store.part(__package__)`), never deciding the
        engine itself."""
        import importlib

        return importlib.import_module(f"{package}.{self.backend.part}")

    @property
    def dialect(self) -> Dialect:
        """The SQL spelling of this store's engine (`engine/dialect.py`)."""
        return self.backend.dialect

    @property
    def cloud(self) -> bool:
        """Cloud mode: the conversations are on a PostgreSQL server (SPEC §10). A
        fact for what reports the mode (`config paths`, doctor's header); what
        differs by engine asks `backend`, `dialect` or `part` instead."""
        return self.backend.part == "server"

    @property
    def server(self) -> Server | None:
        """The settings of the server that holds this store; None for a local store."""
        return self.backend.server

    def profile_label(self, name: str = "shared") -> str:
        """How the query profile (`db` column) names a database: its file's
        name, or in cloud mode the server's `postgresql:<schema>`."""
        return self.backend.profile_label(name)

    def require_local(self) -> None:
        """Failed (exit 1) in cloud mode: for the commands that read only a local store."""
        self.backend.require_local()

    def target(self) -> Target:
        """The server, schema and account of cloud mode; Failed when not set or bad."""
        from kaja_cli.core.store.server import target

        return target(self.paths.server)

    def read_target(self) -> Target:
        """Where read-only commands read in cloud mode: `[memory] readUrl` (a
        read replica) when set, else `target()`. Writes never go there."""
        from kaja_cli.core.store.server import read_target

        return read_target(self.paths.server)

    def primary(self) -> Store:
        """This store read from the server itself, never its read replica: for
        the reads a write depends on (restore's count and its backup first)."""
        server = self.paths.server
        if server is None or not server.read_url.value:
            return self
        from kaja_cli.core.store.paths import Setting

        unset = Setting(None, "not used: reading for a write")
        return Store(self.paths._replace(server=server._replace(read_url=unset)))

    # -- naming it --------------------------------------------------------------------
    def where(self, name: str = "shared") -> str:
        """How a message names the store: a file's path, or the server (password as ***)."""
        return self.backend.where(name)

    def location(self, name: str = "shared") -> Path | str:
        """The database's path, or in cloud mode the server (password as ***) and schema."""
        return self.backend.location(name)

    def owner(self, value: str | None) -> Owner:
        """The acting owner: `--owner` as typed, else "you": the terminal locally,
        `[memory] account` in cloud mode (the terminal when no account is set)."""
        return self.backend.owner(value)

    @property
    def account(self) -> Owner | None:
        """The account whose rows are "yours" by default even where a local
        store shows everyone's (the usage ledger, `sessions stats`): cloud mode
        with `[memory] account` set, where the server holds other accounts;
        None otherwise."""
        server = self.server
        if self.cloud and server is not None and server.account.value:
            return self.owner(None)
        return None

    # -- its files --------------------------------------------------------------------
    def file_of(self, name: str) -> Database:
        """The database whose file holds a database's tables: the artifacts are in
        the shared file unless KAJA_ARTIFACTS_DB / artifactsPath split them out."""
        return self.paths.file_of(name).name

    def path(self, name: str = "shared") -> Path:
        return self.paths.file_of(name).path

    def exists(self, name: str = "shared") -> bool:
        return self.path(name).exists()

    def local_files(self) -> list[DatabaseFile]:
        """The store's databases that are files on this machine (none in cloud mode)."""
        return self.backend.local_files()

    def require(self, name: str = "shared") -> Path:
        """The database's path; NotFound (exit 3) saying where kaja looked if missing."""
        return self.backend.require(name)

    def recognise(self, name: str = "shared") -> Callable[[Path], bool]:
        """Whether kaja may roll back an interrupted write in the file (a
        write): only in one that is recognisably Kaja's (`guard`)."""
        from kaja_cli.core.store import guard

        return guard.may_recover(self.paths.file_of(name))

    # -- connections --------------------------------------------------------------------
    @contextmanager
    def reader(
        self, name: str = "shared", *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """A read-only connection; NotFound if the file (or, in cloud mode, kaja's
        schema on the server) does not exist.

        `writing`: the look a writing command takes before it asks and writes
        (a plan, a count): what its write would refuse is refused here, with
        the same exit 5 (not a SQLite file, not Kaja's: `guard`; on the server
        a schema that is not Kaja's)."""
        with self.backend.reader(name, timeout_ms=timeout_ms, writing=writing) as conn:
            yield conn

    @contextmanager
    def maybe_reader(
        self, name: str = "shared", *, timeout_ms: int | None = None, writing: bool = False
    ) -> Iterator[sqlite3.Connection | None]:
        """`reader()`, or None when there is no store (listing commands then say
        where they looked): no file, or no kaja schema on the server.

        In cloud mode a read reads `[memory] readUrl` (a read replica) when it
        is set; `writing` (here and in `reader`: the look a writing command
        takes first) reads the server itself, and is refused on a replica."""
        with self.backend.maybe_reader(name, timeout_ms=timeout_ms, writing=writing) as conn:
            yield conn

    @contextmanager
    def writer(
        self, name: str = "shared", *, create: bool = False, timeout_ms: int | None = None
    ) -> Iterator[sqlite3.Connection]:
        """A read-write connection with the schema brought up to date (in cloud
        mode, kaja's schema on the server; `create` makes it if it is missing)."""
        with self.backend.writer(name, create=create, timeout_ms=timeout_ms) as conn:
            yield conn

    @contextmanager
    def glance(self, name: str = "shared") -> Iterator[sqlite3.Connection | None]:
        """A look for shell completion: never writes, creates or waits; None
        when there is nothing to look at here (no file; a server's database)."""
        with self.backend.glance(name) as conn:
            yield conn

    def ensure_schema(
        self, conn: sqlite3.Connection, name: str = "shared", *, progress: Progress | None = None
    ) -> Report:
        """Bring the database up to date; a search index build runs after, in
        short transactions (`progress` sees it), so the agent can write meanwhile."""
        return self.backend.ensure_schema(conn, name, progress=progress)

    def insert(
        self, conn: Any, table: Table, names: list[str], values: list[Any], *, or_replace: bool
    ) -> int:
        """One row into one of the schema's tables, as this engine writes it
        (`INSERT OR REPLACE` is an upsert on the server); its rowid (0: none)."""
        return self.backend.insert(conn, table, names, values, or_replace=or_replace)

    def hold_numbering(self, conn: Any, of: str) -> None:
        """Inside a write transaction: until it ends, no other writer numbers
        the rows of `of` (a session's messages and events, a run's events), so
        the next number this one reads (`MAX(seq) + 1`) stays its own. Locally
        BEGIN IMMEDIATE already holds the file's one write lock; a server runs
        writers beside each other, and holds a lock on `of` alone."""
        self.backend.hold_numbering(conn, of)
