"""A streaming replica of the tests' PostgreSQL (tests/support/pg.py): how a
hosted server's reads are often spread.

`pg_basebackup -R` copies the session's server (the primary) into a private
temporary folder and writes `standby.signal` and `primary_conninfo` there; the
copy then starts as a hot standby on its own Unix socket in that folder (no
TCP port), streaming the primary's WAL over the primary's Unix socket. Nothing
leaves this machine. It is a replica of the whole cluster: a database a test
makes on the primary (the `pg` and `cloud_demo` fixtures) appears on it as
soon as it has replayed that far, under the same name.

    def test_something(cloud_demo, pg_replica):
        pg_replica.wait_replayed()                  # the replica holds what the primary committed
        url = pg_replica.url(cloud_demo.pg.name)    # the test's database, on the replica
        ...

The primary already allows it: `initdb` writes `wal_level = replica`,
`max_wal_senders = 10` and `local replication all trust` (pg_hba.conf); the
fixture checks the last and adds it if an older initdb left it out. Run as
root, the replica runs as `postgres`, as the primary does (PostgreSQL refuses
root). One replica for the session: a base backup and a start cost a few
seconds on a busy machine.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.pg import PORT, PgServer, ServerFailed, _as_root

REPLAY_WAIT_S = 120.0  # a busy machine replays slowly; a replica that is not streaming fails sooner


class Replica(PgServer):
    """A hot standby of `primary`, in its own folder, on its own socket."""

    def __init__(self, bindir: Path, root: Path, primary: PgServer) -> None:
        super().__init__(bindir, root)
        self.primary = primary

    @classmethod
    def of(cls, primary: PgServer) -> Replica:
        import shutil

        root = Path(tempfile.mkdtemp(prefix="kaja-pg-replica-"))
        replica = cls(primary.bindir, root, primary)
        try:
            if _as_root():
                shutil.chown(root, "postgres", "postgres")
            root.chmod(0o711)
            _allow_replication(primary)
            replica._run("pg_basebackup", "-D", str(replica.data), "-R", "-X", "stream",
                         "-c", "fast", "--no-sync", "-h", str(primary.root), "-p", str(PORT),
                         "-U", "postgres")  # fmt: skip
            # hot_standby_feedback: the primary's vacuum keeps what a query
            # on the replica still reads, so replay never cancels a test's read.
            with (replica.data / "postgresql.auto.conf").open("a") as f:
                f.write("hot_standby = on\nhot_standby_feedback = on\n")
            replica.start()
            replica.wait_replayed()
        except BaseException:
            replica.cleanup()
            raise
        return replica

    def wait_replayed(self, deadline: float = REPLAY_WAIT_S) -> None:
        """Return once the replica has replayed everything the primary has
        written so far (its replay LSN at least the primary's current LSN)."""
        with self.primary.connect() as conn:
            target = conn.execute("SELECT pg_catalog.pg_current_wal_lsn()::text").fetchone()[0]
        began = time.monotonic()
        with self.connect() as conn:
            while True:
                done = conn.execute(
                    "SELECT pg_catalog.pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()[0]
                if done:
                    return
                if time.monotonic() - began > deadline:
                    raise ServerFailed(f"the replica in {self.data} did not replay up to"
                                       f" {target} in {deadline:.0f} s{self._log_tail()}")  # fmt: skip
                time.sleep(0.05)

    def in_recovery(self) -> bool:
        with self.connect() as conn:
            return bool(conn.execute("SELECT pg_catalog.pg_is_in_recovery()").fetchone()[0])


def _allow_replication(primary: PgServer) -> None:
    """A `local replication` line in the primary's pg_hba.conf (initdb writes one)."""
    hba = primary.data / "pg_hba.conf"
    lines = [line.split() for line in hba.read_text().splitlines()]
    if any(w[:2] == ["local", "replication"] for w in lines if w and not w[0].startswith("#")):
        return
    with hba.open("a") as f:
        f.write("local replication all trust\n")
    with primary.connect() as conn:
        conn.execute("SELECT pg_catalog.pg_reload_conf()")


try:
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def pg_replica(pg_server: PgServer) -> Iterator[Replica]:
        """The session's streaming replica of the session's server."""
        from tests.support.tools import require

        require("postgresql", "psycopg")
        if not pg_server.running:
            pg_server.start()
        replica = Replica.of(pg_server)
        try:
            yield replica
        finally:
            replica.cleanup()
