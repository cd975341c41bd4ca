"""kaja through a real PgBouncer in transaction pooling (tests/support/pgbouncer.py:
one server connection per database, shared by every client in turn).

What kaja sets on a server connection lasts one transaction: after any kaja
command, the next client of the pool (the agent, played here by psycopg) finds
the server connection as the server made it (no read-only default, no timeout,
no search path, no prepared statement, no temporary table) and writes."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.cloud_support import use_server
from tests.support.sync_support import machine

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures", "tests.support.pgbouncer"]

TOMATO = "01a22652"  # "Tomato leaves curling in the heat", the terminal's
ANA = "telegram:482913"

# What a client sees of its server connection: every setting kaja uses, and what
# a session keeps (prepared statements, temporary tables).
STATE = (
    "SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only'),"
    " current_setting('statement_timeout'), current_setting('lock_timeout'),"
    " current_setting('search_path'), current_setting('idle_in_transaction_session_timeout'),"
    " current_setting('jit'),"
    " (SELECT count(*) FROM pg_catalog.pg_prepared_statements),"
    " (SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = pg_catalog.pg_my_temp_schema())"
)


def server_state(url: str) -> tuple:
    import psycopg

    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        return conn.execute(STATE).fetchone()


def agent_writes(url: str, note: str) -> None:
    """The agent's own write through the pool: a note, as any client would."""
    import psycopg

    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(
            'INSERT INTO kaja.notes (owner, key, content, "createdAt")'
            " VALUES ('', %s, 'from the agent', now()::text)",
            (note,),
        )


@pytest.fixture
def pooled(cloud_demo, pgbouncer):
    """The cloud demo store, reached through the pooler: (kaja, pooled URL, fresh state)."""
    url = pgbouncer.url(cloud_demo.pg.name)
    fresh = server_state(cloud_demo.pg.url)  # straight to the server: as it makes a connection
    use_server(cloud_demo, url)
    assert server_state(url) == fresh
    return cloud_demo, url, fresh


READS = [
    ["sessions"],
    ["sessions", "--all-owners", "--json"],
    ["search", "tomato"],
    ["search", "--json", "--all-owners", "the"],
    ["resume", "--json", TOMATO],
    ["resume", TOMATO],
    ["sessions", "export", TOMATO, "-f", "md"],
    ["notes", "--all-owners"],
    ["runs"],
    ["doctor", "--quick"],
    ["sessions", "stats"],
    # One owner's ledger: the owner's run ids go to the server as one array parameter.
    ["usage", "--owner", "telegram:482913"],
    ["runs", "--owner", "terminal", "--subagents"],
    ["runs", "show", "run_91c0", "--owner", "terminal"],
    ["reviews", "--owner", "terminal"],
]


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_a_read_leaves_the_pooled_connection_as_it_found_it(pooled, argv):
    kaja, url, fresh = pooled
    r = kaja(*argv)
    assert r.code in (0, 1), r  # doctor: 1 when the demo's age warns… of nothing here
    assert "internal error" not in r.err and "read-only" not in r.err, r
    assert server_state(url) == fresh
    agent_writes(url, f"after {' '.join(argv)}")


def test_writes_through_the_pooler(pooled):
    kaja, url, fresh = pooled
    r = kaja("sessions", "rename", TOMATO, "Tomatoes in the heat")
    assert r.code == 0, r
    assert server_state(url) == fresh
    doc = json.loads(kaja("resume", "--json", TOMATO).out)
    assert doc["session"]["title"] == "Tomatoes in the heat"
    r = kaja("wipe", "--owner", ANA, "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["rows"]["sessions"] == 3
    assert server_state(url) == fresh
    r = kaja("sessions", "delete", TOMATO, "--yes")
    assert r.code == 0, r
    assert server_state(url) == fresh
    agent_writes(url, "after the writes")
    assert kaja.pg.query("SELECT count(*) FROM kaja.notes WHERE key = 'after the writes'") == [(1,)]


def test_sync_pushes_batch_after_batch_through_the_pooler(tmp_path, pg, pgbouncer):
    """Each batch stages its rows in a temporary table of its own transaction:
    the next batch (and the next client) may be on another server connection."""
    from kaja_cli.core.conversations.record import Recorder
    from tests.support.sync_support import outbox, store_of

    url = pgbouncer.url(pg.name)
    fresh = server_state(pg.url)
    a = machine(tmp_path / "a", url)
    with Recorder(store_of(a)) as rec:
        run = rec.start_run(run_id="run_a1", prompt="hello", host="a")
        for i in range(12_000):  # three push batches
            rec.add_call(run, model="gpt-5", prompt_tokens=i, completion_tokens=1, ok=1)
    r = a("sync")
    assert r.code == 0, r
    assert server_state(url) == fresh
    assert outbox(a.db) == 0
    assert pg.query("SELECT count(*) FROM public.andromeda_ledger WHERE tbl = 'calls'") == [
        (12_000,)
    ]
    r = a("sync", "status", "--json")
    assert r.code == 0, r
    assert server_state(url) == fresh


def test_a_backup_through_a_pool_of_one_reads_one_snapshot_without_waiting(pooled, tmp_path):
    """A pool of one server connection has none to give a second reader on the
    backup's snapshot: the backup reads every table on its one connection at
    once (no wait for the pool's timeout), and the archive is whole."""
    import tarfile
    import time

    kaja, url, fresh = pooled
    out = tmp_path / "b.tar"
    start = time.monotonic()
    r = kaja("backup", "-o", str(out))
    took = time.monotonic() - start
    assert r.code == 0, r
    assert took < 15, f"{took:.1f} s: waited for the pool"  # the pool's wait is 20 s
    assert server_state(url) == fresh
    with tarfile.open(out) as tar:
        assert any(m.name.endswith(".db") for m in tar.getmembers())
    agent_writes(url, "after the backup")


def test_doctor_names_the_pooler(pooled):
    kaja, url, fresh = pooled
    r = kaja("doctor", "--json")
    checks = {c["id"]: c for c in json.loads(r.out)["checks"]}
    assert checks["server.pooler"]["status"] == "ok", checks.get("server.pooler")
    assert "connection pooler" in checks["server.pooler"]["summary"]
    assert server_state(url) == fresh
    human = kaja("doctor")
    assert "reached through a connection pooler" in human.out
    # straight to the server: no pooler named
    use_server(kaja, kaja.pg.url)
    direct = {c["id"] for c in json.loads(kaja("doctor", "--json").out)["checks"]}
    assert "server.pooler" not in direct and "server.reachable" in direct


def test_a_replica_promoted_behind_a_pooler_takes_writes(cloud_demo, pg_server):
    """A failover: the replica behind the pooler becomes the primary. The
    pooler still answers each login with its pool's first (`in_hot_standby`
    on): kaja asks the server, and writes."""
    from tests.support.pg_replica import Replica
    from tests.support.pgbouncer import Bouncer

    replica = Replica.of(pg_server)  # its own: promoting it ends it as a replica
    bouncer = Bouncer(replica)
    bouncer.start()
    try:
        replica.wait_replayed()
        use_server(cloud_demo, bouncer.url(cloud_demo.pg.name))
        assert cloud_demo("sessions").code == 0  # the pool logs in to the standby
        r = cloud_demo("sessions", "rename", "01a22652", "before the failover")
        assert r.code == 1 and "is a read-only replica" in r.err, r
        replica._run("pg_ctl", "-D", str(replica.data), "promote", "-w")
        assert not replica.in_recovery()
        r = cloud_demo("sessions", "rename", "01a22652", "after the failover")
        assert r.code == 0, r
        with replica.connect(cloud_demo.pg.name) as conn:
            title = conn.execute(
                "SELECT title FROM kaja.sessions WHERE id LIKE '01a22652%'"
            ).fetchone()[0]
        assert title == "after the failover"
    finally:
        bouncer.stop()
        replica.cleanup()


def test_doctor_waits_its_own_few_seconds_for_a_pool_with_no_connection_free(pooled):
    """The pool's one server connection held by another client: doctor's first
    statement waited the commands' minute (and its grace) before it said so."""
    import psycopg

    kaja, url, _fresh = pooled
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("BEGIN")
        other.execute("SELECT 1")  # holds the pool's only server connection
        start = time.monotonic()
        r = kaja("doctor", "--quick", "--json")
        took = time.monotonic() - start
        other.execute("ROLLBACK")
    assert took < 19, took  # doctor's 10 s and the grace, not 65 s (nor the pooler's 20 s)
    assert r.code == 1, r
    c = next(c for c in json.loads(r.out)["checks"] if c["id"] == "server.reachable")
    assert c["status"] == "error" and "stopped answering" in c["summary"], c
    assert "pool" in (c.get("fix") or ""), c
