"""Cloud mode on a server set up as kaja did not choose: settings of the
database, the role or libpq's environment that change how the server talks.
What kaja shows is what it shows on a plain role, or one line and its exit
status (SPEC §14: a hosted server is someone else's)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.cloud.test_replica import read_from

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures", "tests.support.pg_replica"]


@contextmanager
def database_set(kaja, setting: str, value: str) -> Iterator[None]:
    """`ALTER DATABASE … SET setting = value` for the test's database (new
    connections take it), reset after the block."""
    name = kaja.pg.name
    with kaja.pg.connect() as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET {setting} = {value}')
    try:
        yield
    finally:
        with kaja.pg.connect() as conn:
            conn.execute(f'ALTER DATABASE "{name}" RESET {setting}')


READS = [
    ("usage", "--all-owners", "--json"),
    ("search", "budget", "--all-owners", "--json"),
    ("search", "Zürich", "--all-owners", "--json"),
    ("sessions", "--all-owners", "--json"),
    ("resume", "01a22652", "--json"),
]


@pytest.fixture
def plain(cloud_demo) -> dict[tuple, str]:
    """Each read's output on the demo's plain role."""
    out = {}
    for argv in READS:
        r = cloud_demo(*argv)
        assert r.code == 0, (argv, r)
        out[argv] = r.out
    return out


def test_the_reads_show_figures_with_decimals(plain):
    """What the tests below compare holds what fewer float digits would round."""
    scores = [h["score"] for h in json.loads(plain[READS[1]])["results"]]
    assert len(scores) >= 2 and all(len(repr(s).replace(".", "")) > 5 for s in scores), scores


@pytest.mark.parametrize("where", ["the database", "PGOPTIONS"])
def test_fewer_float_digits_round_no_figure(cloud_demo, plain, where):
    """extra_float_digits below zero makes the server print float8 rounded
    (-15: one digit): usage's sums and search's scores came back so."""
    if where == "PGOPTIONS":
        env = {"PGOPTIONS": "-c extra_float_digits=-15"}
        got = {argv: cloud_demo(*argv, env=env) for argv in READS}
    else:
        with database_set(cloud_demo, "extra_float_digits", "-15"):
            got = {argv: cloud_demo(*argv) for argv in READS}
    for argv, r in got.items():
        assert r.code == 0 and r.out == plain[argv], (argv, r)


@pytest.mark.parametrize("encoding", ["SQL_ASCII", "LATIN1"])
@pytest.mark.parametrize("where", ["the database", "PGCLIENTENCODING"])
def test_a_client_encoding_that_cannot_carry_unicode_changes_nothing(
    cloud_demo, plain, encoding, where
):
    """SQL_ASCII handed text back as bytes (an internal error in every
    command); LATIN1 could not carry a store's arrows, CJK or emoji."""
    if where == "PGCLIENTENCODING":
        got = {argv: cloud_demo(*argv, env={"PGCLIENTENCODING": encoding}) for argv in READS}
    else:
        with database_set(cloud_demo, "client_encoding", f"'{encoding}'"):
            got = {argv: cloud_demo(*argv) for argv in READS}
    for argv, r in got.items():
        assert r.code == 0 and r.out == plain[argv], (argv, r)
    r = cloud_demo("sessions", "rename", "01a22652", "Zürich → Genève, 東京", env={
        "PGCLIENTENCODING": encoding})  # fmt: skip
    assert r.code == 0, r
    assert cloud_demo.pg.query("SELECT title FROM kaja.sessions WHERE id LIKE '01a22652%'") == [
        ("Zürich → Genève, 東京",)
    ]


def _no_url(out: str) -> dict:
    """A read's JSON without the store's address (the replica's is another)."""
    doc = json.loads(out)
    return {k: v for k, v in doc.items() if not (isinstance(v, str) and "postgresql://" in v)}


def test_a_role_that_defaults_to_serializable_reads_from_a_replica(cloud_demo, pg_replica):
    """A replica refuses SERIALIZABLE: kaja's transactions name their level
    (they inherited the role's default, and every read failed there)."""
    role = f"ser_{cloud_demo.pg.name}"
    with cloud_demo.pg.connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA kaja TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA kaja TO "{role}"')
        conn.execute(f"ALTER ROLE \"{role}\" SET default_transaction_isolation = 'serializable'")
    try:
        pg_replica.wait_replayed()
        primary = cloud_demo.pg.url.replace("postgres@", f"{role}@")
        replica = pg_replica.url(cloud_demo.pg.name).replace("postgres@", f"{role}@")
        expected = {argv: _no_url(cloud_demo(*argv).out) for argv in READS}
        read_from(cloud_demo, primary, replica)
        for argv in READS:
            r = cloud_demo(*argv)
            assert r.code == 0 and _no_url(r.out) == expected[argv], (argv, r)
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def _agent_writes(kaja, content: str) -> None:
    """The agent's INSERT of a message, on a connection of its own (it takes
    the database's settings), computing the search index as it goes in."""
    with kaja.pg.connect() as agent:
        agent.execute("SET search_path = kaja")
        sid = agent.execute("SELECT id FROM sessions ORDER BY id LIMIT 1").fetchone()[0]
        agent.execute(
            'INSERT INTO messages (id, "sessionId", seq, role, content)'
            " VALUES ('scs-m', %s, 9999, 'user', %s)",
            (sid, content),
        )


def test_standard_conforming_strings_off_breaks_no_write(cloud_demo, plain):
    """With it off, a plain constant holding a backslash reads otherwise: the
    search functions (inlined into every INSERT of a message, the agent's
    too) no longer parsed, and kaja's reindex failed."""
    with database_set(cloud_demo, "standard_conforming_strings", "off"):
        for argv in READS:
            r = cloud_demo(*argv)
            assert r.code == 0 and r.out == plain[argv], (argv, r)
        _agent_writes(cloud_demo, r"a back\slash, 'quotes' and a zanzibarian word")
        r = cloud_demo("search", "zanzibarian", "--all-owners", "--json")
        assert [h["message_id"] for h in json.loads(r.out)["results"]] == ["scs-m"], r
        r = cloud_demo("search", "--reindex")
        assert r.code == 0, r
        r = cloud_demo("search", "slash", "--all-owners", "--json")
        assert "scs-m" in [h["message_id"] for h in json.loads(r.out)["results"]], r


def test_doctor_remakes_search_functions_an_earlier_kaja_made(cloud_demo, monkeypatch):
    """A server made before the functions' constants were escape strings:
    doctor says what breaks, and --fix remakes them (nothing reindexed)."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema, tokenizer

    with monkeypatch.context() as m:  # the earlier form: plain constants
        m.setattr(tokenizer, "literal", lambda text: "'" + text.replace("'", "''") + "'")
        where = pg.Target(cloud_demo.pg.url, "kaja")
        with pg.connect(where, writable=True) as conn, db.transaction(conn):
            schema.make_search_functions(conn)
    with database_set(cloud_demo, "standard_conforming_strings", "off"):
        with pytest.raises(Exception, match=r"search_vector|syntax"):
            _agent_writes(cloud_demo, "written with the earlier functions")
        checks = {c["id"]: c for c in json.loads(cloud_demo("doctor", "--json").out)["checks"]}
        c = checks["server.search"]
        assert c["status"] == "warn" and c["fixable"], c
        assert "standard_conforming_strings" in c["summary"], c
        r = cloud_demo("doctor", "--fix", "--json")
        fixed = [f for f in json.loads(r.out)["fixes"] if f["check"] == "server.search"]
        assert fixed and fixed[0]["done"], r.out
        _agent_writes(cloud_demo, "a zanzibarian word after the fix")
    checks = {c["id"]: c for c in json.loads(cloud_demo("doctor", "--json").out)["checks"]}
    assert checks["server.search"]["status"] == "ok", checks["server.search"]
    r = cloud_demo("search", "zanzibarian", "--all-owners", "--json")
    assert [h["message_id"] for h in json.loads(r.out)["results"]] == ["scs-m"], r


def test_a_short_idle_in_transaction_timeout_does_not_end_a_reindex(cloud_demo):
    """Making the search functions compares every code point in Python between
    two statements: a server ending idle transactions after half a second
    ended the reindex ("lost the connection … try again", every time)."""
    with database_set(cloud_demo, "idle_in_transaction_session_timeout", "'500ms'"):
        r = cloud_demo("search", "--reindex")
        assert r.code == 0, r
        assert cloud_demo("search", "tomato").code == 0
