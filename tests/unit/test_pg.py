"""tests/support/pg.py, the PostgreSQL the tests start themselves: a fresh database per
test, the server stopped and started on demand, and CI failing (not skipping)
when the server cannot be had."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.support.pg", "pytester"]


def test_each_test_gets_a_fresh_database(pg, pg_server):
    with pg.connect() as conn:
        conn.execute("CREATE TABLE mine (x int)")
        conn.execute("INSERT INTO mine VALUES (1)")
    other = pg_server.create_database()
    try:
        assert other.query("SELECT to_regclass('mine') IS NULL") == [(True,)]
        assert other.query("SELECT extname FROM pg_extension WHERE extname = 'unaccent'") == [
            ("unaccent",)
        ]
    finally:
        pg_server.drop_database(other.name)
    assert pg.url.startswith(f"postgresql://postgres@/{pg.name}?host={pg_server.root}")


def test_the_server_stops_and_starts_again(pg, pg_server):
    import psycopg

    with pg_server.stopped():
        assert not pg_server.running
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(pg.url, connect_timeout=2)
    assert pg_server.running
    assert pg.query("SELECT 1") == [(1,)]


MISSING = """
import tests.support.pg
tests.support.pg.find_bindir = lambda: None
pytest_plugins = ["tests.support.pg"]

def test_needs_postgres(pg):
    pass
"""


@pytest.mark.parametrize(("ci", "outcome"), [("true", "errors"), ("", "skipped")])
def test_without_postgresql_ci_fails_and_elsewhere_skips(pytester, monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    pytester.makepyfile(MISSING)
    result = pytester.runpytest_subprocess("-rs")
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines(["*needs postgresql (apt-get install postgresql)*"])


@pytest.mark.needs("postgresql")
def test_a_server_that_cannot_start_says_why(tmp_path):
    """The error holds the server's own words (its log's tail), not only pg_ctl's exit status."""
    from tests.support.pg import PgServer, ServerFailed

    server = PgServer.start_new()
    try:
        server.stop()
        with (server.data / "postgresql.conf").open("a") as conf:
            conf.write("shared_buffers = 'plenty'\n")
        with pytest.raises(ServerFailed) as failed:
            server.start()
        assert 'invalid value for parameter "shared_buffers": "plenty"' in str(failed.value)
    finally:
        server.cleanup()


def test_a_rollback_on_a_lost_connection_is_quiet(pg):
    """A prune whose server went away mid-batch rolled back on the closed
    connection and ended in `internal error: OperationalError: the connection is
    closed`: a ROLLBACK there has nothing to undo, and says nothing."""
    from kaja_cli.core.engine import postgres

    with postgres.connect(postgres.Target(pg.url, schema="public"), writable=True) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.raw.close()  # as psycopg does when the server drops it mid-statement
        assert conn.execute("ROLLBACK").fetchall() == []
        assert not conn.in_transaction


@pytest.mark.parametrize(
    ("options", "seen"),
    [("", "off"), ("&options=-c%20jit%3Don", "on"), ("&options=-cjit%3Don", "on"),
     ("&options=--jit%3Don", "on"), ("&options=-c%20jit_above_cost%3D1", "off")],
)  # fmt: skip
def test_kajas_transactions_run_without_jit_unless_the_url_says(pg, options, seen):
    """The server's JIT compilation cost kaja's statements more than it saved
    (a second of a `runs --subagents` whose walk the planner overestimated):
    off in each of kaja's transactions, never on the session (a pooler's next
    client finds the server's own), and the URL's `options` win."""
    from kaja_cli.core.engine import postgres

    with postgres.connect(postgres.Target(pg.url + options, schema="public")) as conn:
        assert conn.execute("SELECT current_setting('jit')").fetchone()[0] == seen
    # That it never outlives the transaction: tests/cloud/test_pooler.py.
