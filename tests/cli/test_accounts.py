"""`kaja accounts` and its subcommands on the demo store's web-auth.db: marie
(admin, the legacy owner, one live and one expired sign-in session), ana (one
live session) and guest (disabled). Secrets are never printed, in any format.

The live sessions expire 30 days after the demo's base time, against the real
clock: the tests that need them live read `present_demo_store` (written as the
session starts), whose times are `at(base, ...)`; the others the DEMO_NOW store."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import closing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import at, examples
from tests.support.side_support import fingerprint, holding, integrity, killed_at, sql, write

MARIE = "01a125af-2e00-7662-8a0f-42834e0751d7"
ANA = "01a1c02d-f600-7473-bead-3bed00fdfeae"
GUEST = "01a1f8d3-ea00-7763-ac5d-f2c7fcad3888"


def auth_db(kaja):
    return kaja.state / "web-auth.db"


def users(kaja) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in sql(auth_db(kaja), "SELECT username, active FROM web_users")}


def sessions_of(kaja, uid: str) -> list[str]:
    return [r[0] for r in sql(auth_db(kaja), "SELECT expires_at FROM web_sessions WHERE user_id = ?"
                                               " ORDER BY expires_at", uid)]  # fmt: skip


def secrets(kaja) -> list[str]:
    found = [
        v for row in sql(auth_db(kaja), "SELECT password_hash, salt FROM web_users") for v in row
    ]
    found += [r[0] for r in sql(auth_db(kaja), "SELECT token_hash FROM web_sessions")]
    assert len(found) == 9 and all(found)
    return found


# --- reading --------------------------------------------------------------------------------
def test_the_accounts_oldest_first(present_demo_store):
    demo_store, base = present_demo_store, present_demo_store.base
    r = demo_store("accounts")
    assert r.code == 0
    assert r.out == (
        f"{MARIE}\tmarie\tMarie\tadmin\t1\t{at(base, days=-50)}\t1\t{at(base, hours=-4)}\tlegacy_owner\n"
        f"{ANA}\tana\tAna García\tuser\t1\t{at(base, days=-20)}\t1\t{at(base, days=-2)}\t\n"
        f"{GUEST}\tguest\tGuest\tuser\t0\t{at(base, days=-9)}\t0\t\t\n"
    )
    doc = json.loads(demo_store("accounts", "--json").out)
    assert doc["legacy_owner_id"] == MARIE
    assert doc["accounts"][0] == {
        "id": MARIE, "username": "marie", "display_name": "Marie", "role": "admin", "active": True,
        "created_at": at(base, days=-50), "live_sessions": 1, "sessions": 2,
        "last_sign_in": at(base, hours=-4), "legacy_owner": True,
    }  # fmt: skip


def test_an_accounts_sign_in_sessions_by_time_only(present_demo_store):
    demo_store, base = present_demo_store, present_demo_store.base
    r = demo_store("accounts", "sessions", "MARIE")
    assert r.out == (
        f"{at(base, hours=-4)}\t{at(base, days=30)}\tlive\n"
        f"{at(base, days=-32)}\t{at(base, days=-2)}\texpired\n"
    )
    doc = json.loads(demo_store("accounts", "sessions", ANA[:8], "--json").out)
    assert doc["account"]["username"] == "ana"
    assert doc["sessions"] == [{"created_at": at(base, days=-2),
                                "expires_at": at(base, days=30), "live": True}]  # fmt: skip
    assert (
        demo_store("accounts", "sessions", "guest").err == "kaja: guest has no sign-in sessions\n"
    )


def test_no_output_ever_holds_a_secret(demo_store):
    hidden = secrets(demo_store)
    outputs = []
    for argv in (["accounts"], ["accounts", "--json"], ["accounts", "sessions", "marie"],
                 ["accounts", "sessions", "marie", "--json"], ["accounts", "revoke", "marie", "--dry-run", "--json"],
                 ["accounts", "remove", "ana", "--dry-run"], ["accounts", "remove", "marie", "--force", "--dry-run", "--json"],
                 ["accounts", "disable", "ana", "--yes", "--json"], ["accounts", "revoke", "marie", "--all", "--yes"],
                 ["accounts", "remove", "ana", "--yes", "--json"], ["accounts", "nope"]):  # fmt: skip
        r = demo_store(*argv)
        outputs.append(r.out + r.err)
    assert not [s for s in hidden for out in outputs if s in out]


def test_a_missing_auth_file(kaja):
    r = kaja("accounts")
    assert (r.code, r.out, r.err) == (
        0,
        "",
        f"kaja: no accounts: there is no web-auth.db at {auth_db(kaja)}\n",
    )
    for argv in (["accounts", "sessions", "marie"], ["accounts", "revoke", "marie", "--yes"],
                 ["accounts", "remove", "marie", "--yes"]):  # fmt: skip
        r = kaja(*argv)
        assert r.code == 3 and "no web-auth.db" in r.err, (argv, r)
    assert not kaja.state.exists()


def test_unknown_and_ambiguous_names(demo_store):
    r = demo_store("accounts", "revoke", "ann", "--yes")
    assert (r.code, r.err) == (3, "kaja: no account 'ann': did you mean ana?\n")
    r = demo_store("accounts", "sessions", "01a1")
    assert r.code == 2 and "names several accounts" in r.err
    assert demo_store("accounts", "sessions", "01a").code == 3  # too short to be a prefix
    assert demo_store("accounts", "sessions", " ").code == 2


# --- changing them ----------------------------------------------------------------------------
def test_revoke_ends_the_live_sessions_and_all_of_them_with_all(present_demo_store):
    demo_store = present_demo_store
    r = demo_store("accounts", "revoke", "marie")
    assert r.code == 5 and "--yes" in r.err
    r = demo_store("accounts", "revoke", "marie", "--dry-run")
    assert r.err == (
        "kaja: dry run: would end 1 live sign-in session of marie; nothing was changed\n"
    )
    assert len(sessions_of(demo_store, MARIE)) == 2
    r = demo_store("accounts", "revoke", "marie", "--yes")
    assert (r.code, r.err) == (0, "kaja: ended 1 sign-in session of marie\n")
    assert sessions_of(demo_store, MARIE) == [at(demo_store.base, days=-2)]  # the expired one
    r = demo_store("accounts", "revoke", "marie", "--all", "--yes", "--json")
    assert json.loads(r.out)["sessions_ended"] == 1
    assert sessions_of(demo_store, MARIE) == []
    assert sessions_of(demo_store, ANA) != []


def test_disable_ends_sessions_and_enable_undoes_it(present_demo_store):
    demo_store = present_demo_store
    r = demo_store("accounts", "disable", "ana", "--yes")
    assert (r.code, r.err) == (0, "kaja: disabled ana and ended 1 sign-in session\n")
    assert users(demo_store)["ana"] == (0,) and sessions_of(demo_store, ANA) == []
    assert (
        demo_store("accounts", "disable", "ana", "--yes").err == "kaja: ana is already disabled\n"
    )
    r = demo_store("accounts", "enable", "ana")  # undoing asks nothing
    assert (r.code, r.err) == (0, "kaja: enabled ana\n")
    assert users(demo_store)["ana"] == (1,)
    assert (
        json.loads(demo_store("accounts", "enable", "guest", "--dry-run", "--json").out)["changed"]
        is False
    )
    assert users(demo_store)["guest"] == (0,)


def test_remove_cascades_to_the_sessions_and_the_legacy_owner_needs_force(demo_store):
    r = demo_store("accounts", "remove", "ana", "--yes")
    assert (r.code, r.err) == (0, "kaja: removed account ana and 1 sign-in session\n")
    assert "ana" not in users(demo_store) and sessions_of(demo_store, ANA) == []
    before = fingerprint(demo_store.state)
    r = demo_store("accounts", "remove", "marie", "--yes")
    assert r.code == 5
    assert r.err == (
        "kaja: marie is the legacy owner (legacy_owner_id in web_auth_meta): the conversations made"
        " before accounts existed belong to it, and removing it leaves them to nobody: rerun with"
        " --force to remove it all the same\n"
    )
    assert fingerprint(demo_store.state) == before
    r = demo_store("accounts", "remove", "marie", "--force", "--yes")
    assert (r.code, r.err) == (0, "kaja: removed account marie and 2 sign-in sessions\n")
    assert sql(auth_db(demo_store), "SELECT count(*) FROM web_sessions") == [(0,)]
    assert sql(auth_db(demo_store), "SELECT value FROM web_auth_meta") == [
        (MARIE,)
    ]  # left as it was
    assert integrity(auth_db(demo_store)) == "ok"
    for path in demo_store.state.glob("web-auth.db*"):  # secure_delete: the hashes are gone
        assert b"marie" not in path.read_bytes(), path


def test_remove_without_the_foreign_key_still_takes_the_sessions(kaja):
    """A web-auth.db an older web app made, without the constraint."""
    kaja.state.mkdir(parents=True)
    write(auth_db(kaja), """
        CREATE TABLE web_users (id TEXT PRIMARY KEY, username TEXT, display_name TEXT,
            password_hash TEXT, salt TEXT, role TEXT, active INTEGER, created_at TEXT);
        CREATE TABLE web_sessions (token_hash TEXT PRIMARY KEY, user_id TEXT, expires_at TEXT,
            created_at TEXT);
        INSERT INTO web_users VALUES ('u1', 'old', NULL, 'h', 's', 'user', 1, '2025-01-01');
        INSERT INTO web_sessions VALUES ('t1', 'u1', '2099-01-01T00:00:00.000Z', '2025-01-02');
    """)  # fmt: skip
    r = kaja("accounts", "remove", "old", "--yes")
    assert (r.code, r.err) == (0, "kaja: removed account old and 1 sign-in session\n")
    assert sql(auth_db(kaja), "SELECT count(*) FROM web_sessions") == [(0,)]


def test_a_writer_holding_the_file_makes_it_wait_then_busy(present_demo_store):
    demo_store = present_demo_store  # a live session to end: revoke has something to write
    with holding(auth_db(demo_store), "write"):
        start = time.monotonic()
        r = demo_store("accounts", "revoke", "marie", "--yes")
        assert r.code == 4 and "busy" in r.err, r
        assert time.monotonic() - start >= 4
        assert demo_store("accounts").code == 0  # reading never waits
    assert len(sessions_of(demo_store, MARIE)) == 2


def test_a_file_that_is_not_kajas_is_refused(demo_store):
    path = auth_db(demo_store)
    for p in demo_store.state.glob("web-auth.db*"):
        p.unlink()
    write(path, "CREATE TABLE users (id TEXT, name TEXT); INSERT INTO users VALUES ('1', 'bob');")
    before = path.read_bytes()
    assert demo_store("accounts").err == f"kaja: no accounts: {path} has no web_users table\n"
    r = demo_store("accounts", "remove", "bob", "--yes")
    assert r.code == 5 and "not Kaja's web-auth.db" in r.err, r
    assert path.read_bytes() == before
    path.unlink()
    path.write_text("not a database")
    r = demo_store("accounts")
    assert r.code == 1 and r.err.count("\n") == 1 and "not a SQLite database" in r.err
    path.unlink()
    os.mkfifo(path)  # opening it would block: it is never opened
    for argv, code in ((["accounts"], 1), (["accounts", "sessions", "x"], 1),
                       (["accounts", "remove", "x", "--yes"], 5)):  # fmt: skip
        r = demo_store(*argv, timeout=20)
        assert r.code == code and "is a FIFO, not a SQLite database" in r.err, (argv, r)


@pytest.mark.process
def test_killed_before_its_commit_nothing_changes(demo_store):
    before = sql(auth_db(demo_store), "SELECT id, active FROM web_users")
    killed_at(demo_store, "accounts-commit", "accounts", "remove", "ana", "--yes")
    killed_at(demo_store, "accounts-commit", "accounts", "disable", "marie", "--yes")
    assert sql(auth_db(demo_store), "SELECT id, active FROM web_users") == before
    assert len(sessions_of(demo_store, ANA)) == 1
    with closing(sqlite3.connect(auth_db(demo_store))) as c:
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
    assert integrity(auth_db(demo_store)) == "ok"


@settings(max_examples=examples(10),
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(value=st.text(max_size=40).filter(lambda v: "\x00" not in v))
def test_any_account_name(demo_store, value):
    for argv in (["accounts", "sessions", value], ["accounts", "remove", value, "--dry-run"],
                 ["accounts", "revoke", value, "--dry-run", "--json"]):  # fmt: skip
        r = demo_store(*argv)
        assert r.code in range(6) and "Traceback" not in r.err, (argv, r)
    assert set(users(demo_store)) == {"marie", "ana", "guest"}


def test_tab_completes_usernames_never_a_secret(demo_store):
    from tests.cli.test_completion import fast_answer, requests, typer_answer

    base = dict(demo_store.env, COLUMNS="100000")
    for words in (
        ["accounts", "remove"],
        ["accounts", "sessions"],
        ["accounts", "revoke", "--all"],
    ):
        for shell, env in requests(base, words, "").items():
            answer = fast_answer(env)
            assert answer == typer_answer(env), (shell, words)
            assert not [s for s in secrets(demo_store) if s in answer[0]]
    assert fast_answer(requests(base, ["accounts", "disable"], "")["bash"]) == (
        "ana\nguest\nmarie\n",
        0,
    )
    fish, _ = fast_answer(requests(base, ["accounts", "disable"], "a")["fish"])
    assert fish == "ana\tAna García · user\n"
