"""A store: the resolved paths and the connections to the files behind them.

Commands hold a `Store` and pass it to the query functions of the domain
modules (sessions, search, usage, …); those open what they need. A cloud
backend would be a second store with the same query functions over
PostgreSQL; the commands never see SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.paths import Overrides, Paths, resolve
from kaja_cli.core.registry import Database
from kaja_cli.core.settings import Mode
from kaja_cli.errors import Failed, NotFound

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.schema import Report

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
            raise Failed(
                f'{self.paths.settings_file.path} sets [memory] mode = "cloud": there is no '
                "local database, and this kaja administers local storage only"
            )

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
        """A read-only connection; NotFound if the file does not exist.

        `writing`: the look a writing command takes before it asks and writes
        (a plan, a count): what its write would refuse is refused here, with
        the same exit 5 (not a SQLite file, not Kaja's: `guard`)."""
        from kaja_cli.core import db, guard

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
        from kaja_cli.core import guard

        return guard.may_recover(self.paths.file_of(name))

    @contextmanager
    def writer(
        self, name: str = "shared", *, create: bool = False, timeout_ms: int | None = None
    ) -> Iterator[sqlite3.Connection]:
        """A read-write connection with the schema brought up to date."""
        from kaja_cli.core import db

        self.require_local()
        path = self.path(name) if create else self.require(name)
        wait = db.BUSY_TIMEOUT_MS if timeout_ms is None else timeout_ms
        with db.open_write(path, self.paths.file_of(name), create=create, timeout_ms=wait) as conn:
            self.ensure_schema(conn, name)
            yield conn

    def ensure_schema(
        self, conn: sqlite3.Connection, name: str = "shared", *, progress: Progress | None = None
    ) -> Report:
        """Bring the file up to date; a search index build runs after, in short
        transactions (`progress` sees it), so the agent can write meanwhile."""
        from kaja_cli.core import db, schema, search_index

        file = self.paths.file_of(name)
        if schema.is_current(conn, file):
            return schema.Report()
        with db.transaction(conn):
            report = schema.apply(conn, file)
        if file.search_index:
            search_index.finish(conn, progress)
        return report
