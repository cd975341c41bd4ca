"""A real PgBouncer in front of the tests' PostgreSQL (tests/support/pg.py), in
transaction pooling: how hosted servers are usually reached.

The pooler listens on a Unix socket in a private temporary folder (no TCP
port), trusts every client (as the test server does), and keeps ONE server
connection per database and user (`default_pool_size = 1`): every client of a
test's database, kaja and the "agent" the test plays, goes through the same
server connection, one transaction after another, so whatever one leaves on it
the next one meets. A client that waits for that connection longer than
`query_wait_timeout` gets an error instead of hanging the test.

    def test_something(pooled):         # (PgDatabase, the pooled URL)
        db, url = pooled
        ...

PgBouncer refuses to run as root: as root it runs as `postgres`, as the server does.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.pg import PgServer

PORT = 6432  # names the socket file (.s.PGSQL.6432) in the private folder
QUERY_WAIT_S = 20


class Bouncer:
    """`pool_size` server connections per database and user (the tests' one;
    the bench's many clients, bench/bench_cloud_clients.py, a hosted pool's
    ten or so), a client waiting `query_wait_s` at most for one of them."""

    def __init__(
        self, server: PgServer, *, pool_size: int = 1, query_wait_s: int = QUERY_WAIT_S
    ) -> None:
        self.server = server
        self.pool_size = pool_size
        self.query_wait_s = query_wait_s
        self.root = Path(tempfile.mkdtemp(prefix="kaja-pgbouncer-"))
        self.log = self.root / "pgbouncer.log"
        self.process: subprocess.Popen | None = None

    def url(self, dbname: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@/{dbname}?host={self.root}&port={PORT}"

    def start(self) -> None:
        config = self.root / "pgbouncer.ini"
        (self.root / "users.txt").write_text('"postgres" ""\n')
        config.write_text(
            "[databases]\n"
            f"* = host={self.server.root} port={self.server.socket.name.rsplit('.', 1)[1]}\n"
            "[pgbouncer]\n"
            "listen_addr =\n"
            f"listen_port = {PORT}\n"
            f"unix_socket_dir = {self.root}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "stats_users = postgres\n"
            f"default_pool_size = {self.pool_size}\n"
            "max_client_conn = 200\n"
            f"query_wait_timeout = {self.query_wait_s}\n"
            f"logfile = {self.log}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n"
        )
        from tests.support.tools import find

        argv = [find("pgbouncer") or "pgbouncer", str(config)]
        if _as_root():
            shutil.chown(self.root, "postgres", "postgres")
            for f in self.root.iterdir():
                shutil.chown(f, "postgres", "postgres")
            argv = ["runuser", "-u", "postgres", "--", *argv]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        socket = self.root / f".s.PGSQL.{PORT}"
        deadline = time.monotonic() + 60
        while not socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                err = (
                    self.process.stderr.read().decode(errors="replace")
                    if self.process.stderr
                    else ""
                )
                log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
                self.stop()
                raise RuntimeError(f"pgbouncer did not start: {err}\n{log}")
            time.sleep(0.05)

    def stats(self, dbname: str) -> dict[str, int]:
        """PgBouncer's own counts for a database (its console's `SHOW STATS`:
        transactions, `total_wait_time`, the microseconds clients waited for a
        server connection, …)."""
        import psycopg

        with psycopg.connect(self.url("pgbouncer"), autocommit=True,
                             cursor_factory=psycopg.ClientCursor) as conn:  # fmt: skip
            cur = conn.execute("SHOW STATS")  # the console speaks the simple protocol only
            names = [d.name for d in cur.description or []]
            for row in cur.fetchall():
                if row[0] == dbname:
                    return {n: int(v) for n, v in zip(names[1:], row[1:], strict=True)}
        return {}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0


try:
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def pgbouncer(pg_server: PgServer) -> Iterator[Bouncer]:
        """The session's PgBouncer, in front of the session's server."""
        from tests.support.tools import require

        require("pgbouncer")
        bouncer = Bouncer(pg_server)
        bouncer.start()
        try:
            yield bouncer
        finally:
            bouncer.stop()
