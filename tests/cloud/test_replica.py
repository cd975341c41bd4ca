"""Cloud mode with a streaming read replica (tests/support/pg_replica.py: a hot
standby of the tests' server, on its own socket).

`[memory] readUrl` names the replica: read-only commands read there, every
writing command writes (and plans) on `[memory] databaseUrl`, the primary. A
writing command pointed at the replica alone is refused in one line (exit 1),
before it plans (its dry run too), and changes nothing. `kaja doctor` shows how far the replica is behind.

To tell which server answered, a test pauses the replica's replay
(`pg_wal_replay_pause()`): a write on the primary then stays off the replica
until replay resumes, so the replica answers with the store as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.cloud_support import _toml, use_server

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures", "tests.support.pg_replica"]

TOMATO = "01a22652"  # "Tomato leaves curling in the heat", the terminal's
ANA = "telegram:482913"
REFUSED = "is a read-only replica (in recovery): point memory.databaseUrl at the primary"

READS = [
    ["sessions"],
    ["sessions", "--all-owners", "--json"],
    ["search", "tomato"],
    ["search", "--json", "--all-owners", "the"],
    ["resume", TOMATO],
    ["resume", "--json", TOMATO],
    ["sessions", "export", TOMATO, "-f", "md"],
    ["sessions", "export", TOMATO, "-f", "json"],
    ["notes", "--all-owners"],
    ["runs"],
    ["usage"],
]

# Every writing command, each as a user would run it (no question asked).
WRITES = [
    ["sessions", "rename", TOMATO, "Tomatoes in the heat"],
    ["sessions", "delete", TOMATO, "--yes"],
    ["sessions", "prune", "--older-than", "1d", "--yes"],
    ["sessions", "archive", TOMATO],
    ["notes", "forget", "diet", "--yes"],
    ["wipe", "--owner", ANA, "--yes"],
    ["wipe", "--yes"],
    ["search", "--reindex"],
    ["optimize"],
]

COUNTS = (
    "SELECT (SELECT count(*) FROM kaja.sessions), (SELECT count(*) FROM kaja.messages),"
    " (SELECT count(*) FROM kaja.notes), (SELECT string_agg(title, '|' ORDER BY id)"
    " FROM kaja.sessions)"
)


def read_from(kaja, primary: str, replica: str | None) -> None:
    """Cloud mode on `primary`, reading from `replica` ([memory] readUrl)."""
    use_server(kaja, primary)
    if replica is not None:
        with kaja.config.open("a") as f:
            f.write(f"readUrl = {_toml(replica)}\n")


@contextmanager
def replay_paused(replica) -> Iterator[None]:
    """The replica stops replaying inside the block (it keeps receiving)."""
    with replica.connect() as conn:
        conn.execute("SELECT pg_catalog.pg_wal_replay_pause()")
    try:
        yield
    finally:
        with replica.connect() as conn:
            conn.execute("SELECT pg_catalog.pg_wal_replay_resume()")
        replica.wait_replayed()


def counts_on(server, name: str) -> tuple:
    with server.connect(name) as conn:
        return conn.execute(COUNTS).fetchone()


@pytest.fixture
def replicated(cloud_demo, pg_replica):
    """The cloud demo store on the primary, replayed on the replica:
    (kaja, the primary's URL, the replica's URL, the replica)."""
    pg_replica.wait_replayed()
    name = cloud_demo.pg.name
    return cloud_demo, cloud_demo.pg.url, pg_replica.url(name), pg_replica


def test_the_fixture_is_a_replica_that_has_replayed(replicated):
    kaja, _primary, _replica_url, replica = replicated
    assert replica.in_recovery()
    assert counts_on(replica, kaja.pg.name) == counts_on(kaja.pg.server, kaja.pg.name)
    assert counts_on(replica, kaja.pg.name)[0] > 0


def test_reads_through_the_replica_match_the_primary(replicated):
    kaja, primary, replica_url, _ = replicated
    expected = {}
    for argv in READS:
        r = kaja(*argv)
        assert r.code == 0, (argv, r)
        expected[tuple(argv)] = r.out
    read_from(kaja, primary, replica_url)
    for argv in READS:
        r = kaja(*argv)
        assert r.code == 0, (argv, r)
        assert r.out == expected[tuple(argv)], argv
    r = kaja("doctor", "--quick")
    assert r.code in (0, 1), r
    assert "Traceback" not in r.err and "internal error" not in r.err, r


def test_reads_go_to_the_replica_and_writes_to_the_primary(replicated):
    kaja, primary, replica_url, replica = replicated
    read_from(kaja, primary, replica_url)
    with replay_paused(replica):
        r = kaja("sessions", "rename", TOMATO, "Tomatoes in the heat")
        assert r.code == 0, r
        r = kaja("notes", "forget", "diet", "--yes")
        assert r.code == 0, r
        # the write is on the primary; the replica, paused, still has the old store
        assert kaja.pg.query(f"SELECT title FROM kaja.sessions WHERE id LIKE '{TOMATO}%'") == [
            ("Tomatoes in the heat",)
        ]
        assert kaja.pg.query("SELECT count(*) FROM kaja.notes WHERE key = 'diet'") == [(0,)]
        doc = json.loads(kaja("resume", "--json", TOMATO).out)
        assert doc["session"]["title"] == "Tomato leaves curling in the heat"
        assert "diet" in kaja("notes").out
        # the look a write takes first reads the primary: the note is gone there
        r = kaja("notes", "forget", "diet", "--dry-run")
        assert r.code == 3, r
    # replayed: the replica answers with what was written
    doc = json.loads(kaja("resume", "--json", TOMATO).out)
    assert doc["session"]["title"] == "Tomatoes in the heat"
    assert "diet" not in kaja("notes").out


@pytest.mark.parametrize("argv", WRITES, ids=" ".join)
def test_a_write_pointed_at_the_replica_is_refused_and_changes_nothing(replicated, argv):
    kaja, _primary, replica_url, replica = replicated
    name = kaja.pg.name
    files = sorted(p.relative_to(kaja.state) for p in kaja.state.rglob("*"))
    before = counts_on(kaja.pg.server, name), counts_on(replica, name)
    use_server(kaja, replica_url)  # memory.databaseUrl is the replica
    r = kaja(*argv)
    assert r.code == 1, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kaja: ") and REFUSED in lines[0], r
    assert "Traceback" not in r.err
    replica.wait_replayed()
    assert (counts_on(kaja.pg.server, name), counts_on(replica, name)) == before
    assert sorted(p.relative_to(kaja.state) for p in kaja.state.rglob("*")) == files


def test_a_write_pointed_at_the_replica_by_the_environment_names_that(replicated):
    kaja, _primary, replica_url, _replica = replicated
    r = kaja("sessions", "rename", TOMATO, "x", env={"KAJA_DATABASE_URL": replica_url})
    assert r.code == 1, r
    assert "is a read-only replica (in recovery): point KAJA_DATABASE_URL at the primary" in r.err
    r = kaja("--database-url", replica_url, "sessions", "rename", TOMATO, "x")
    assert r.code == 1, r
    assert "is a read-only replica (in recovery): point --database-url at the primary" in r.err


def test_reads_pointed_at_the_replica_alone_work(replicated):
    kaja, _primary, replica_url, _ = replicated
    expected = {tuple(a): kaja(*a).out for a in READS}
    use_server(kaja, replica_url)
    for argv in READS:
        r = kaja(*argv)
        assert r.code == 0, (argv, r)
        assert r.out == expected[tuple(argv)], argv
    # a writing command's dry run is refused too: it plans on the primary
    r = kaja("sessions", "delete", TOMATO, "--dry-run")
    assert r.code == 1 and REFUSED in r.err, r


def check(doc: dict, id_: str) -> dict:
    found = [c for c in doc["checks"] if c["id"] == id_]
    assert len(found) == 1, [c["id"] for c in doc["checks"]]
    return found[0]


def test_doctor_shows_the_read_replicas_lag(replicated):
    kaja, primary, replica_url, replica = replicated
    r = kaja("doctor", "--json")
    assert all(c["id"] != "server.replica" for c in json.loads(r.out)["checks"]), r.out
    read_from(kaja, primary, replica_url)
    # The primary writes WAL of its own now and then (a checkpoint, the
    # running transactions every 15 s) and a busy machine replays it a little
    # later: doctor then says, rightly, "72 bytes (0 s) behind". Once the
    # replica has replayed everything, it says so (tried again if the primary
    # wrote in between).
    for _ in range(5):
        replica.wait_replayed()
        doc = json.loads(kaja("doctor", "--json").out)
        c = check(doc, "server.replica")
        assert c["status"] == "ok", c
        if c["summary"] == "the read replica has replayed everything the server wrote":
            break
        assert c["summary"].startswith("the read replica is "), c
    assert c["summary"] == "the read replica has replayed everything the server wrote", c
    assert c["details"][:2] == [f"replica {replica_url}", "0 bytes of WAL written on the server"
                                " not replayed yet"]  # fmt: skip
    with replay_paused(replica):
        assert kaja("sessions", "rename", TOMATO, "Tomatoes in the heat").code == 0
        doc = json.loads(kaja("doctor", "--json").out)
        c = check(doc, "server.replica")
        assert c["summary"].startswith("the read replica is "), c
        assert c["summary"].endswith(" behind the server"), c
        behind = int(c["details"][1].split(" ")[0].replace(",", ""))
        assert behind > 0, c
        assert "reads may not show the latest writes yet" in c["details"], c
        # however little, a replica that replays no more falls further behind
        assert c["status"] == "warn", c
        assert any("its replay is paused" in d for d in c["details"]), c
        r = kaja("doctor")
        assert "the read replica is " in r.out and " behind the server" in r.out, r.out
    r = kaja("doctor", "--redact", "--json")
    assert str(replica.root) not in r.out and "<read url>" in r.out, r.out


def test_doctor_on_a_replica_says_it_refuses_writes(replicated):
    kaja, _primary, replica_url, _ = replicated
    use_server(kaja, replica_url)
    r = kaja("doctor", "--json")
    c = check(json.loads(r.out), "server.replica")
    assert c["status"] == "warn", c
    assert c["summary"] == (
        f"{replica_url} is a read-only replica (in recovery): reads work, writes are refused"
    )
    assert c["details"][0] == "0 bytes of WAL received from its primary not replayed yet", c
    assert c["fix"].startswith("point memory.databaseUrl at the primary"), c


def test_a_read_url_that_does_not_answer_fails_reads_in_one_line(replicated, tmp_path):
    kaja, primary, _replica_url, _ = replicated
    read_from(kaja, primary, f"postgresql://postgres@/{kaja.pg.name}?host={tmp_path}")
    r = kaja("sessions")
    assert r.code == 1, r
    assert r.err.startswith("kaja: cannot reach the PostgreSQL server at"), r
    assert "Traceback" not in r.err
    assert kaja("sessions", "rename", TOMATO, "Still writes").code == 0  # writes: the primary
    c = check(json.loads(kaja("doctor", "--json").out), "server.replica")
    assert c["status"] == "error" and c["summary"].startswith("memory.readUrl: cannot reach"), c


def test_config_paths_shows_the_read_url_masked(replicated):
    kaja, primary, _replica_url, _ = replicated
    read_from(kaja, primary, "postgresql://reader:s3cret@replica.example.org/kaja")
    r = kaja("config", "paths", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["backend"]["read_url"] == {
        "value": "postgresql://reader:***@replica.example.org/kaja",
        "source": "settings [memory] readUrl",
    }
    assert "s3cret" not in r.out


def test_a_backup_reads_the_replica_and_restores_on_the_primary(replicated, tmp_path):
    kaja, primary, replica_url, replica = replicated
    read_from(kaja, primary, replica_url)
    before = counts_on(kaja.pg.server, kaja.pg.name)
    r = kaja("backup", "-o", str(tmp_path / "a.tar.gz"), "--json")
    assert r.code == 0, r
    mine = json.loads(r.out)["databases"][0]["rows"]["sessions"]
    with replay_paused(replica):
        r = kaja("sessions", "delete", TOMATO, "--yes")
        assert r.code == 0, r
        r = kaja("backup", "-o", str(tmp_path / "b.tar.gz"), "--json")
        assert r.code == 0, r
        # the replica's store: the session deleted since is in it
        assert json.loads(r.out)["databases"][0]["rows"]["sessions"] == mine
        assert kaja.pg.query("SELECT count(*) FROM kaja.sessions") == [(before[0] - 1,)]
        # a restore backs up what it replaces from the primary, not the paused replica
        r = kaja("restore", str(tmp_path / "b.tar.gz"), "--yes", "--force", "--json")
        assert r.code == 0, r
        saved = json.loads(r.out)["previous_backup"]
    assert counts_on(kaja.pg.server, kaja.pg.name) == before
    use_server(kaja, primary)
    r = kaja("restore", saved, "--yes", "--force")
    assert r.code == 0, r
    assert kaja.pg.query("SELECT count(*) FROM kaja.sessions") == [(before[0] - 1,)]


def test_a_demo_pointed_at_the_replica_writes_nothing_anywhere(kaja, pg, pg_replica):
    pg_replica.wait_replayed()  # the new, empty database is on the replica
    use_server(kaja, pg_replica.url(pg.name))
    r = kaja("demo")
    assert r.code == 1, r
    assert r.err.startswith("kaja: ") and REFUSED in r.err and len(r.err.splitlines()) == 1, r
    assert pg.query("SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = 'kaja'") == [(0,)]
    assert not kaja.state.exists() or not any(kaja.state.rglob("*")), list(kaja.state.rglob("*"))


def test_a_backup_from_the_replica_reads_both_its_connections_there(
    replicated, pg_server, tmp_path
):
    """The second reader joins the first's snapshot on the server the first
    reads: the replica's snapshot name sent to the primary was an error in its
    log each time, and a name the primary happened to hold would have mixed
    the two servers' rows in one archive."""
    kaja, primary, replica_url, replica = replicated
    read_from(kaja, primary, replica_url)
    with replay_paused(replica):
        with kaja.pg.connect() as agent:  # on the primary only: the paused replica has none of it
            agent.execute("SET search_path = kaja")
            agent.execute("INSERT INTO sessions (id, title) VALUES ('late-s', 'late')")
            agent.execute(
                'INSERT INTO messages (id, "sessionId", seq, role, content)'
                " VALUES ('late-m', 'late-s', 1, 'user', 'written late')"
            )
            agent.execute(
                'INSERT INTO tool_calls (id, "messageId", position, name)'
                " VALUES ('late-t', 'late-m', 0, 'late_tool')"
            )
        logged = pg_server.log.stat().st_size
        r = kaja("backup", "-o", str(tmp_path / "b.tar"), "--json")
        assert r.code == 0, r
        said = pg_server.log.read_text(errors="replace")[logged:]
        assert "SNAPSHOT" not in said.upper(), said
        rows = json.loads(r.out)["databases"][0]["rows"]
        with replica.connect(kaja.pg.name) as conn:
            on_replica = conn.execute(
                "SELECT (SELECT count(*) FROM kaja.sessions WHERE owner IS NULL OR owner = ''),"
                ' (SELECT count(*) FROM kaja.messages m JOIN kaja.sessions s ON s.id = m."sessionId"'
                " WHERE s.owner IS NULL OR s.owner = '')"
            ).fetchone()
        assert (rows["sessions"], rows["messages"]) == on_replica


def test_doctor_names_a_read_url_that_holds_another_store(replicated, pg_server):
    """Another database on the replica, or on the primary itself: reads show
    what it holds, and doctor said it had replayed everything, or was simply
    not a replica."""
    kaja, primary, _replica_url, replica = replicated
    other = pg_server.create_database()
    try:
        replica.wait_replayed()
        read_from(kaja, primary, replica.url(other.name))  # a replica of another store
        c = check(json.loads(kaja("doctor", "--json").out), "server.replica")
        assert c["status"] == "error", c
        assert "is a replica of another store: reads show what it holds" in c["summary"], c
        read_from(kaja, primary, other.url)  # not a replica: a logical one may be meant
        c = check(json.loads(kaja("doctor", "--json").out), "server.replica")
        assert c["status"] == "warn", c
        assert "is another server or database, not a replica of" in c["summary"], c
        read_from(kaja, primary, primary + "&application_name=another-spelling")
        c = check(json.loads(kaja("doctor", "--json").out), "server.replica")
        assert c["status"] == "ok" and "is not a replica" in c["summary"], c  # the same store
    finally:
        pg_server.drop_database(other.name)
