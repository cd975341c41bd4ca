"""A real PostgreSQL for the tests: a throwaway cluster each session starts itself.

Nothing mocks the server (SPEC §10). The session starts one cluster with
`initdb` in a private temporary folder, listening only on a Unix socket in that
folder, and every test that asks for `pg` gets a fresh database copied from a
template (`CREATE DATABASE … TEMPLATE`, ~0.1 s). At the end of the session the
server is stopped (`-m immediate`: nothing in it is worth keeping) and the
folder removed.

Use it from a test module with

    pytest_plugins = ["tests.support.pg"]

    def test_something(pg):            # a fresh database, dropped afterwards
        url = pg.url                   # postgresql://postgres@/test_…?host=/tmp/kaja-pg-…
        with pg.connect() as conn:     # psycopg, autocommit
            conn.execute("SELECT 1")

    def test_restart(pg, pg_server):   # the server the whole session shares
        with pg_server.stopped():      # down inside the block, back up after it
            ...

Outside pytest (the benchmarks), `PgServer.start_new()` gives the same server,
`server.cleanup()` ends it.

Where the binaries are: `initdb` on PATH, else the newest
`/usr/lib/postgresql/*/bin` (Debian's layout). Without them a test is skipped
saying so, except in CI (`CI=true`), where it fails (tests/support/tools.py).

A busy machine makes a server slow to start, not broken: `start()` waits as
long as the server is alive and not yet accepting connections (up to
START_WAIT), and a server that does not start fails with the tail of its log.
Run as root, the server runs as the `postgres` user (initdb refuses root), so
the folder is made by `tempfile.mkdtemp` and handed to that user; otherwise it
runs as the current user.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

TEMPLATE = "kaja_template"  # every test database is a copy of this one
PORT = 5432  # only names the socket file (.s.PGSQL.5432) inside the private folder
# How long a starting server may take to accept connections while it is alive.
# Four servers starting at once beside four CPU hogs on two cores took over a
# minute; a server that dies is reported at once, whatever this says.
START_WAIT = 600.0


class ServerFailed(RuntimeError):
    """A server binary failed: the message holds its output and the log's tail."""


def find_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres, or None."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


class PgServer:
    """One PostgreSQL cluster in a private folder, reachable only through its socket."""

    def __init__(self, bindir: Path, root: Path) -> None:
        self.bindir = bindir
        self.root = root  # the socket lives here; data/ and server.log beside it
        self.data = root / "data"
        self.log = root / "server.log"
        self._names = itertools.count(1)

    # -- life cycle -------------------------------------------------------------
    @classmethod
    def start_new(cls, bindir: Path | None = None) -> PgServer:
        """initdb into a new temporary folder and start the server (~1.5 s)."""
        bindir = bindir or find_bindir()
        if bindir is None:
            raise FileNotFoundError(
                "PostgreSQL's initdb was not found (apt-get install postgresql)"
            )
        root = Path(tempfile.mkdtemp(prefix="kaja-pg-"))
        server = cls(bindir, root)
        try:
            if _as_root():
                shutil.chown(root, "postgres", "postgres")
            root.chmod(0o711)  # others may reach the socket, not list the folder
            server._run("initdb", "-D", str(server.data), "-A", "trust", "-U", "postgres",
                        "--no-sync", "-E", "UTF8", "--locale", "C")  # fmt: skip
            server.start()
            server._make_template()
        except BaseException:
            server.cleanup()
            raise
        return server

    def start(self) -> None:
        """Start the server and wait until it accepts connections (see START_WAIT)."""
        options = (
            f"-k {self.root} -c listen_addresses='' -p {PORT} -c fsync=off"
            " -c full_page_writes=off -c max_connections=60"
        )
        # -W: pg_ctl's own wait gives up after a fixed time even while the
        # server is still starting; ready() below waits while it is alive.
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-W",
                  "-o", options, "start")  # fmt: skip
        self.wait_ready()

    def wait_ready(self, deadline: float = START_WAIT) -> None:
        """Return once the server accepts connections; ServerFailed (with the
        log's tail) if it stops, or is still not ready after `deadline` seconds."""
        import time

        began = time.monotonic()
        while True:
            if self._run("pg_isready", "-q", "-h", str(self.root), "-p", str(PORT),
                         "-t", "5", check=False) == 0:  # fmt: skip
                return
            waited = time.monotonic() - began
            if waited > 5 and not self._alive():  # 5 s: postmaster.pid is written first
                raise ServerFailed(f"the server in {self.data} stopped while starting"
                                   f"{self._log_tail()}")  # fmt: skip
            if waited > deadline:
                raise ServerFailed(f"the server in {self.data} did not accept connections"
                                   f" in {deadline:.0f} s{self._log_tail()}")  # fmt: skip
            time.sleep(0.1)

    def _alive(self) -> bool:
        """Whether the postmaster named in postmaster.pid is running."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
            os.kill(pid, 0)
        except (OSError, ValueError):
            return False
        return True

    def _log_tail(self, size: int = 3000) -> str:
        text = self.log.read_text(errors="replace")[-size:] if self.log.exists() else "(no log)"
        return f"\n--- the end of {self.log} ---\n{text}"

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; `immediate` is a crash as far as clients can tell."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", f"{START_WAIT:.0f}",
                  "stop")  # fmt: skip

    def restart(self) -> None:
        self.stop()
        self.start()

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """The server is down inside the block and back up after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    @property
    def socket(self) -> Path:
        """The server's Unix socket (tests/support/relay.py stands in front of it on TCP)."""
        return self.root / f".s.PGSQL.{PORT}"

    @property
    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status", check=False) == 0

    def cleanup(self) -> None:
        """Stop the server if it runs and remove the folder."""
        if (self.data / "postmaster.pid").exists():
            try:
                self.stop()
            except ServerFailed:
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases ---------------------------------------------------------------
    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        """A libpq URL for `dbname` through the socket (no password: trust)."""
        return f"postgresql://{user}@/{dbname}?host={self.root}&port={PORT}"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        import psycopg

        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=10)

    def create_database(self, name: str | None = None, template: str = TEMPLATE) -> PgDatabase:
        name = name or f"test_{os.getpid()}_{next(self._names)}"
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return PgDatabase(self, name, self.url(name))

    def drop_database(self, name: str) -> None:
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _make_template(self) -> None:
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
        # Cloud mode's search folds accents with unaccent (Debian's server
        # package ships it); the ledger needs nothing beyond plain tables.
        with self.connect(TEMPLATE) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS unaccent")

    # -- running the binaries -----------------------------------------------------
    def _run(self, tool: str, *args: str, check: bool = True) -> int:
        argv = [str(self.bindir / tool), *args]
        if _as_root():
            argv = ["runuser", "-u", "postgres", "--", *argv]
        p = subprocess.run(argv, capture_output=True, text=True, cwd=self.root)
        if p.returncode != 0 and check:
            raise ServerFailed(
                f"{tool} {' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}"
                f"{self._log_tail()}"
            )
        return p.returncode


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class PgDatabase:
    """One test's database on the shared server."""

    server: PgServer
    name: str
    url: str

    def connect(self) -> psycopg.Connection:
        return self.server.connect(self.name)

    def query(self, sql: str, params: Any = None) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute(sql, params).fetchall()


# --- pytest fixtures ---------------------------------------------------------------
try:
    import pytest
except ImportError:  # the benchmarks import PgServer without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def pg_server() -> Iterator[PgServer]:
        """The session's PostgreSQL server (started on first use, stopped at the end)."""
        from tests.support.tools import require

        require("postgresql", "psycopg")
        server = PgServer.start_new()
        try:
            yield server
        finally:
            server.cleanup()

    @pytest.fixture
    def pg(pg_server: PgServer) -> Iterator[PgDatabase]:
        """A fresh database for one test, dropped after it (the server is started if it is down)."""
        if not pg_server.running:
            pg_server.start()
        database = pg_server.create_database()
        try:
            yield database
        finally:
            if not pg_server.running:
                pg_server.start()
            pg_server.drop_database(database.name)
