"""`kaja sync`, `kaja sync status`, `kaja usage --all-machines` against a real PostgreSQL.

The server is the one `tests/support/pg.py` starts for the session; each test has its
own database. The machines are state dirs; the agent's writes go through the
core's write API or raw SQL, as the agent's do.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sqlite3
import time
from pathlib import Path

import pytest

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.ledger import sync
from kaja_cli.core.ledger.sync import health as sync_health
from kaja_cli.core.ledger.sync import server as sync_server
from tests.conftest import KAJA as KAJA_BIN
from tests.conftest import Kaja
from tests.support.cloud_support import role_named_like_the_schema
from tests.support.faults import assert_store_sound
from tests.support.relay import Relay, run_all
from tests.support.sync_support import (
    Agent,
    killed_sync,
    ledger,
    machine,
    outbox,
    rows,
    server_ledger,
    sql,
    store_of,
)

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


@pytest.fixture
def two(tmp_path, pg):
    """Machines a and b on one shared ledger; a has some history from before sync."""
    a, b = machine(tmp_path / "a", pg.url), machine(tmp_path / "b", pg.url)
    with Recorder(store_of(a)) as rec:
        run = rec.start_run(run_id="run_a1", prompt="hello", host="a")
        rec.add_call(run, model="gpt-5", prompt_tokens=100, completion_tokens=7, ok=1)
        rec.add_call(run, model="gpt-5", prompt_tokens=50, completion_tokens=3, ok=0)
        rec.add_tool(run, "shell", "error", duration_ms=40)
        rec.add_run_event(run, "Started", {"x": 1})
    with Recorder(store_of(b)) as rec:
        rec.start_run(run_id="run_b1", prompt="hi", host="b")
    return a, b


def state(db: Path, name: str):
    found = rows(db, "SELECT value FROM sync_state WHERE name = ?", (name,))
    return found[0][0] if found else None


def test_first_sync_sends_history_and_the_other_machine_imports_it(two, pg):
    a, b = two
    r = a("sync")
    assert r.code == 0, r
    assert r.out == ""
    assert r.err == f"kaja: pushed 5 rows of history and 0 changes; pulled 0 changes ({pg.url})\n"
    r = b("sync", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["push"] == {"history": 1, "changes": 0, "written": 1, "deleted": 0, "ignored": 0}
    assert data["pull"]["inserted"] == 5 and data["pull"]["origins"] == sorted(
        ["*", state(a.db, "origin")]
    )
    assert a("sync").code == 0
    # Row by row, with b's ids for a's calls resolved through sync_map.
    assert ledger(a.db) == ledger(b.db) == server_ledger(pg)
    assert rows(b.db, "SELECT id, prompt_tokens FROM calls ORDER BY id") == [
        (1, 100),
        (2, 50),
    ]  # a's calls, under b's own ids
    assert outbox(a.db) == outbox(b.db) == 0


def test_a_dry_run_says_what_would_go_each_way_and_changes_nothing(two, pg):
    a, b = two

    def files() -> dict:  # the query profile too: a dry run writes none
        return {p.name: p.read_bytes() for p in a.state.iterdir() if p.is_file()}

    def ledger_exists() -> bool:
        found = pg.query("SELECT count(*) FROM pg_tables WHERE tablename = 'andromeda_ledger'")
        return found[0][0] > 0

    before = files()
    r = a("sync", "--dry-run")
    assert (r.code, r.out) == (0, ""), r
    assert r.err == (
        "kaja: dry run: would push the history and 0 changes and pull what the server holds"
        f" ({pg.url}); nothing was changed\n"
    )
    assert files() == before and not ledger_exists()  # not even the shared ledger was made
    for k in (a, b):
        assert k("sync").code == 0
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_a1", model="m")
    before, on_server = files(), server_ledger(pg)
    r = a("sync", "push", "--dry-run")
    assert r.err == f"kaja: dry run: would push 1 change ({pg.url}); nothing was changed\n"
    r = a("sync", "--dry-run", "--json")
    assert r.code == 0, r
    dry = json.loads(r.out)
    assert dry["dry_run"] is True
    assert dry["push"] == {"history": False, "changes": 1} and dry["pull"] == {"changes": 1}
    assert files() == before and server_ledger(pg) == on_server and outbox(a.db) == 1
    r = a("sync", "--json")
    done = json.loads(r.out)
    assert done.pop("dry_run") is False and dry.pop("dry_run") is True and done.keys() == dry.keys()
    assert (done["push"]["changes"], done["pull"]["changes"]) == (1, 1)  # as the dry run said
    r = a("sync", "--dry-run", "--ledger-url", "postgresql://kaja:s3cr3t@127.0.0.1:1/ledger")
    assert r.code == 1 and r.err.startswith(
        "kaja: cannot reach PostgreSQL at postgresql://kaja:***@"
    )


def test_changes_and_deletions_travel_and_a_second_push_changes_nothing(two, pg):
    a, b = two
    for k in (a, b, a):
        assert k("sync").code == 0
    sql(
        a.db,
        "UPDATE calls SET completion_tokens = 99 WHERE id = 1",
        "DELETE FROM calls WHERE id = 2",  # the agent prunes its own row
        "UPDATE runs SET status = 'completed' WHERE id = 'run_b1'",  # b's run
    )
    before = pg.query("SELECT max(seq) FROM andromeda_ledger")[0][0]
    r = a("sync", "push", "--json")
    assert json.loads(r.out)["push"] == {"history": 0, "changes": 3, "written": 2, "deleted": 1,
                                          "ignored": 0}  # fmt: skip
    assert pg.query("SELECT max(seq) FROM andromeda_ledger")[0][0] == before + 3
    r = b("sync", "pull", "--json")
    assert json.loads(r.out)["pull"]["updated"] == 2 and json.loads(r.out)["pull"]["deleted"] == 1
    assert ledger(a.db) == ledger(b.db) == server_ledger(pg)
    # b's map no longer names the deleted call.
    assert rows(b.db, "SELECT COUNT(*) FROM sync_map WHERE tbl = 'calls'") == [(1,)]
    # The same batch again: nothing changes, not even a sequence number.
    shared = pg.query("SELECT origin, tbl, key, row::text FROM andromeda_ledger")
    with pg.connect() as pgc:
        changes = [(o, t, k, j) for o, t, k, j in shared]
        assert sync_server.send(pgc, "someone", changes) == sync_server.Sent(0, 0)
    assert pg.query("SELECT max(seq) FROM andromeda_ledger")[0][0] == before + 3


def test_a_local_change_waiting_wins_over_a_pulled_one(two, pg):
    a, b = two
    for k in (a, b, a):
        assert k("sync").code == 0
    for k, status in ((a, "failed"), (b, "completed")):
        sql(k.db, ("UPDATE runs SET status = ? WHERE id = 'run_a1'", (status,)))
    assert a("sync").code == 0  # a's change is on the server
    r = b("sync", "--json")  # b pushes first (its change wins), then pulls
    assert r.code == 0, r
    assert a("sync").code == 0
    assert ledger(a.db) == ledger(b.db) == server_ledger(pg)
    assert ledger(a.db)[("runs", "*", "run_a1")]["status"] == "completed"
    # b pulling a's change while its own waits: b's is kept, and goes out next.
    for k, status in ((a, "one"), (b, "two")):
        sql(k.db, ("UPDATE runs SET status = ? WHERE id = 'run_a1'", (status,)))
    assert a("sync").code == 0
    r = b("sync", "pull", "--json")
    assert json.loads(r.out)["pull"]["kept_local"] == 1
    assert b("sync").code == 0 and a("sync").code == 0
    assert (
        ledger(a.db)[("runs", "*", "run_a1")]["status"]
        == "two"
        == (ledger(b.db)[("runs", "*", "run_a1")]["status"])
    )


def test_usage_reset_stays_local_and_new_ids_do_not_overwrite_old_rows(two, pg):
    a, b = two
    for k in (a, b):
        assert k("sync").code == 0
    shared_before = server_ledger(pg)
    r = a("usage", "reset", "--yes")
    assert r.code == 0, r
    assert "the reset is local: nothing was queued for sync" in r.err
    assert outbox(a.db) == 0
    assert a("sync").code == 0
    assert server_ledger(pg) == shared_before  # nothing left the machine
    # SQLite hands out id 1 again: the new row gets a key of its own.
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_x", model="new", prompt_tokens=1)
    assert a("sync").code == 0 and b("sync").code == 0
    origin = state(a.db, "origin")
    shared = server_ledger(pg)
    assert shared[("calls", origin, "1")]["prompt_tokens"] == 100  # the old call 1
    assert shared[("calls", origin, "1~1")]["model"] == "new"
    models = sorted(m for (m,) in rows(b.db, "SELECT model FROM calls"))
    assert models == ["gpt-5", "gpt-5", "new"]


def test_usage_reset_queues_nothing_with_the_sync_triggers(two):
    a, _ = two
    assert a("sync").code == 0
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_a1", model="m")  # queued: sync is on
    assert outbox(a.db) == 1
    r = a("usage", "reset", "--yes", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["sync_outbox"] == 1
    assert outbox(a.db) == 0
    triggers = {n for (n,) in rows(a.db, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {f"sync_calls_{op}" for op in ("insert", "update", "delete")} <= triggers


def test_lease_held_by_a_live_process_is_busy_and_a_dead_ones_is_taken_over(two):
    a, _ = two
    assert a("sync").code == 0

    def lease(pid, host, expires):
        value = json.dumps({"pid": pid, "host": host, "token": "t", "expires": expires})
        sql(a.db, ("INSERT OR REPLACE INTO sync_state (name, value) VALUES ('lease', ?)", (value,)))

    lease(os.getpid(), socket.gethostname(), "2999-01-01T00:00:00.000Z")
    r = a("sync")
    assert r.code == 4, r
    assert r.err == (
        f"kaja: another sync holds the ledger (pid {os.getpid()} on {socket.gethostname()},"
        " until 2999-01-01T00:00:00.000Z): wait for it to finish; a holder that died lets go"
        " when its lease ends\n"
    )
    lease(os.getpid(), "elsewhere", "2999-01-01T00:00:00.000Z")  # another host: can't tell
    assert a("sync").code == 4
    lease(os.getpid(), "elsewhere", "2000-01-01T00:00:00.000Z")  # expired
    assert a("sync").code == 0
    lease(2**22 + 7, socket.gethostname(), "2999-01-01T00:00:00.000Z")  # no such pid here
    assert a("sync").code == 0
    assert state(a.db, "lease") is None


def test_an_unreachable_server_is_one_line_without_the_password(two, tmp_path):
    a, _ = two
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_a1", model="m")
    for url in (f"postgresql://kaja:s3cr3t@/ledger?host={tmp_path}/nowhere",
                "postgresql://kaja:s3cr3t@127.0.0.1:1/ledger"):  # fmt: skip
        r = a("sync", "--ledger-url", url)
        assert r.code == 1, r
        assert "s3cr3t" not in r.out + r.err
        assert r.err.startswith("kaja: cannot reach PostgreSQL at postgresql://kaja:***@")
        assert r.err.count("\n") == 1
    assert state(a.db, "origin") is None  # nothing started while it was unreachable


def test_a_server_that_stops_answering_ends_every_sync_command(two, pg):
    """Issue 26: a server that stopped answering after the login (a proxy on
    127.0.0.1 that stops relaying) hung `kaja sync`, `sync status` and `usage
    --all-machines`. Each now ends within `[memory] statementTimeout` + 5 s (1 + 5
    here; sync status: its 3 s + 5) with one line, and the next sync loses nothing."""
    a, _ = two
    with Relay(pg.server, freeze_after_login=True) as relay:
        settings = f"[usage]\npostgres_url = {json.dumps(relay.url(pg.name))}\n"
        a.config.write_text(settings + "[memory]\nstatementTimeout = 1\n")
        done = run_all(a, [("sync",), ("sync", "status", "--json"), ("usage", "--all-machines")])
        assert relay.logins == 3
    for argv, code, out, err, took in done:
        assert took < 40 and "Traceback" not in err, (argv, code, out, err, took)
        if argv == ("sync", "status", "--json"):
            assert code == 0, err
            assert json.loads(out)["server"]["answers"] is False
            assert (
                "the server stopped answering (no reply in 8 s)"
                in json.loads(out)["server"]["error"]
            )
            continue
        assert code == 1 and err.count("\n") == 1, (argv, err)
        assert err.startswith(
            "kaja: lost the connection to PostgreSQL at postgresql://postgres@127.0.0.1:"
        )
        assert "the server stopped answering (no reply in 6 s)" in err, err
    r = a("sync", "--ledger-url", pg.url)
    assert r.code == 0, r
    assert len(server_ledger(pg)) == 5


def test_a_server_that_freezes_while_sync_waits_on_the_ledgers_lock(two, pg):
    a, b = two
    assert b("sync").code == 0  # the shared ledger exists
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_a1", model="m")
    with pg.connect() as other, pg.connect() as watch, Relay(pg.server) as relay:
        other.execute("BEGIN")
        other.execute("LOCK TABLE andromeda_ledger IN EXCLUSIVE MODE")  # another machine pushing
        settings = f"[usage]\npostgres_url = {json.dumps(relay.url(pg.name))}\n"
        a.config.write_text(settings + "[memory]\nstatementTimeout = 3\n")

        def freeze_once_it_waits() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if watch.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name"
                                 " <> 'kaja' AND wait_event_type = 'Lock'").fetchone()[0]:  # fmt: skip
                    relay.freeze()
                    return
                time.sleep(0.05)
            raise AssertionError("sync never waited on the lock")

        done = run_all(a, [("sync",)], before_waiting=freeze_once_it_waits)
        other.execute("ROLLBACK")
    ((_, code, _, err, took),) = done
    assert code == 1 and took < 40, (code, err, took)
    assert "while sending the history: the server stopped answering (no reply in 8 s)" in err, err
    r = a("sync", "--ledger-url", pg.url)
    assert r.code == 0, r
    assert len(server_ledger(pg)) == 7  # nothing lost: b's run, a's 5 rows of history and new call


def test_sync_without_a_url_or_a_store(tmp_path, pg):
    k = Kaja(tmp_path)
    r = k("sync")
    assert (r.code, r.err) == (1, "kaja: ledger sync is not configured: set [usage] postgres_url"
                                  " in settings.toml or USAGE_POSTGRES_URL, or pass --ledger-url\n")  # fmt: skip
    r = k("sync", env={"USAGE_POSTGRES_URL": pg.url})
    assert r.code == 3 and r.err.startswith(f"kaja: no Kaja store at {k.db}")
    assert not k.state.exists()


def test_without_psycopg_sync_says_how_to_install_it(two, tmp_path):
    a, _ = two
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no psycopg here')\n")
    env = {"PYTHONPATH": str(shadow.parent)}
    for args in (("sync",), ("usage", "--all-machines")):
        r = a.proc(*args, env=env)  # a real process: this one has psycopg imported
        assert (r.code, r.err) == (
            1, "kaja: PostgreSQL support is not installed: pip install 'kaja-cli[postgres]'\n"
        ), args  # fmt: skip
    r = a.proc("sync", "status", "--json", env=env)
    assert r.code == 0
    assert json.loads(r.out)["server"]["error"].endswith("pip install 'kaja-cli[postgres]'")


def test_the_url_setting_is_known_and_checked(tmp_path):
    k = Kaja(tmp_path)
    k.config.parent.mkdir(parents=True)
    k.config.write_text('[usage]\npostgres_url = "postgresql://u:pw@h/db"\n')
    assert store_of(k).paths.settings.unknown_keys() == []
    r = k("sync", "status", "--json", "--ledger-url", "postgresql://u@/db?host=/nonexistent")
    assert json.loads(r.out)["url_source"] == "flag --ledger-url"
    k.config.write_text("[usage]\npostgres_url = 5\n")
    r = k("sync", "status")
    assert (r.code, r.err) == (
        1,
        f"kaja: {k.config}:2: usage.postgres_url must be a URL starting with postgresql:// or"
        " postgres://, not 5: fix it with `kaja config edit`\n",
    )
    r = k("sync", "--ledger-url", "mysql://x/y")
    assert (r.code, r.err) == (
        2,
        "kaja: --ledger-url: must be a URL starting with postgresql:// or postgres://, not"
        " 'mysql://x/y'\n",
    )


def test_psycopg_is_not_imported_at_start_up():
    import subprocess
    import sys

    code = "import sys, kaja_cli.app, kaja_cli.core.ledger.sync; print('psycopg' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == (
        "False\n"
    )


def test_status_reads_only_and_says_what_the_server_holds(two, pg):
    a, b = two
    for k in (a, b):
        assert k("sync").code == 0
    with Recorder(store_of(a)) as rec:
        rec.add_call("run_a1", model="m")

    def files() -> dict:  # but the query profile, which every command adds to
        return {p.name: p.read_bytes() for p in a.state.iterdir()
                if p.is_file() and not p.name.startswith("db-stats.db")}  # fmt: skip

    before = files()
    r = a("sync", "status", "--json")
    assert r.code == 0, r
    assert files() == before
    data = json.loads(r.out)
    origin_a, origin_b = state(a.db, "origin"), state(b.db, "origin")
    assert data["url"] == pg.url and data["url_source"] == "settings [usage] postgres_url"
    assert data["origin"] == origin_a and data["seeded"] is True
    assert data["outbox"]["rows"] == 1 and data["lease"] is None
    assert data["server"]["answers"] is True and data["server"]["to_pull"] == 1
    # b's only row is a run: shared, under '*'.
    assert {o["origin"]: o["rows"] for o in data["server"]["origins"]} == {"*": 3, origin_a: 3}
    assert origin_b not in {o["origin"] for o in data["server"]["origins"]}
    r = a("sync", "status")
    assert r.code == 0
    lines = dict(line.split("\t", 1) for line in r.out.splitlines())
    assert lines["outbox"].startswith("1 change, the oldest from ")
    assert lines["server"] == f"{pg.url} (settings [usage] postgres_url)"


def test_one_row_reads_in_the_singular(two, pg):
    """b's history is one run: "1 row", "1 origin" (core/wording.py), not "1 rows"."""
    _, b = two
    r = b("sync")
    assert r.code == 0, r
    assert r.err == f"kaja: pushed 1 row of history and 0 changes; pulled 0 changes ({pg.url})\n"
    r = b("sync", "status")
    assert r.code == 0, r
    lines = dict(line.split("\t", 1) for line in r.out.splitlines())
    assert lines["PostgreSQL"] == "answers; 1 row from 1 origin in schema public; 0 changes to pull"
    assert lines["*"] == "1 row · shared runs, events, reviews"


def test_status_of_an_unreachable_server_does_not_hang(tmp_path):
    k = Kaja(tmp_path)
    r = k("sync", "status", "--json", "--ledger-url", "postgresql://x:pw@10.255.255.1:5432/db",
          timeout=30)  # fmt: skip
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["store_exists"] is False and not k.state.exists()
    assert data["url"] == "postgresql://x:***@10.255.255.1:5432/db"
    assert data["server"]["answers"] is False and "pw" not in r.out


def test_usage_all_machines_reports_every_machines_calls(two, pg):
    a, b = two
    with Recorder(store_of(b)) as rec:
        rec.add_call("run_b1", model="claude", prompt_tokens=1000, completion_tokens=1, ok=1)
    for k in (a, b):
        assert k("sync", "push").code == 0
    r = b("usage", "--all-machines", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    local = json.loads(b("usage", "--json").out)  # b has not pulled: only its own call
    assert local["total"]["calls"] == 1
    assert data["store"] == pg.url
    assert data["total"] == {"calls": 3, "failed": 1, "prompt_tokens": 1150,
                             "completion_tokens": 11, "cached_tokens": None, "tokens": 1161,
                             "duration_ms": None}  # fmt: skip
    assert [g["model"] for g in data["groups"]] == ["claude", "gpt-5"]
    assert data["tools"][0]["tool"] == "shell" and data["tools"][0]["failures"] == 1
    assert data["runs"] == {"running": 2}
    machines = {m["origin"]: m for m in data["machines"]}
    assert machines[state(b.db, "origin")]["this_machine"] is True
    assert machines[state(a.db, "origin")]["calls"] == 2
    # After a pull, the local report counts the same calls.
    assert b("sync", "pull").code == 0
    assert json.loads(b("usage", "--json").out)["total"] == data["total"]


def test_a_stale_import_flag_is_cleared_and_history_sent_again(two, pg):
    a, _ = two
    assert a("sync").code == 0
    sql(
        a.db,
        "UPDATE sync_flags SET value = '1' WHERE name = 'importing'",
        "INSERT INTO calls (run_id, model) VALUES ('run_a1', 'unqueued')",
    )
    assert outbox(a.db) == 0  # the flag kept it out
    checks = {c[0]: c for c in sync_health.doctor_checks(store_of(a), None)}
    assert checks["sync-flags"][1] == "error"
    r = a("sync")
    assert r.code == 0, r
    assert r.err.startswith("kaja: sending the history again: an import had died")
    assert ("calls", state(a.db, "origin"), "3") in server_ledger(pg)


def test_a_new_server_gets_the_history_again(two, pg, pg_server):
    a, _ = two
    assert a("sync").code == 0
    other = pg_server.create_database()
    try:
        r = a("sync", "--ledger-url", other.url, "--json")
        assert r.code == 0, r
        assert json.loads(r.out)["push"]["history"] == 5
        assert json.loads(r.out)["reseeded"] == (
            "the shared ledger is not the one this ledger synced with"
        )
        assert len(server_ledger(other)) == 5
    finally:
        pg_server.drop_database(other.name)


def test_doctor_checks_of_sync(two, pg):
    a, b = two
    for k in (a, b, a):
        assert k("sync").code == 0
    url = sync.Url(pg.url, "test")
    checks = {c[0]: c for c in sync_health.doctor_checks(store_of(b), url)}
    assert {k: c[1] for k, c in checks.items()} == {
        "sync-progress": "ok", "sync-lease": "ok", "sync-map": "ok", "sync-flags": "ok",
        "sync-ledger": "ok",
    }  # fmt: skip
    assert checks["sync-ledger"][2] == "the shared ledger is in schema public"
    lease = {"pid": 1, "host": "h", "token": "t", "expires": "2020-01-01T00:00:00.000Z"}
    sql(  # imported rows deleted with the triggers off; an old change waiting; a lease left
        b.db,
        "DROP TRIGGER sync_calls_delete",
        "DELETE FROM calls",
        "INSERT INTO sync_outbox (tbl, key, op, at)"
        " VALUES ('runs', 'run_b1', 'upsert', '2020-01-01T00:00:00.000Z')",
        ("INSERT INTO sync_state (name, value) VALUES ('lease', ?)", (json.dumps(lease),)),
    )
    checks = {c[0]: c for c in sync_health.doctor_checks(store_of(b), url)}
    assert checks["sync-map"][1:3] == ("warn", "2 sync_map rows name imported rows that are gone")
    assert checks["sync-lease"][1] == "warn" and "expired" in checks["sync-lease"][2]
    assert checks["sync-progress"][1] == "warn"
    assert checks["sync-progress"][2].endswith(f"although PostgreSQL at {pg.url} answers")


def test_kaja_doctor_reports_sync(two, pg):
    """The same checks through `kaja doctor`: none where sync was never used,
    a lease left by a dead process named, the URL's password never shown."""
    a, b = two
    a.config.write_text("")  # a ledger that never synced, no URL: no sync check at all
    r = a("doctor", "--check", "sync", "--json")
    assert r.code == 0 and json.loads(r.out)["checks"] == [], r
    a.config.write_text(f"[usage]\npostgres_url = {json.dumps(pg.url)}\n")
    for k in (a, b):
        assert k("sync").code == 0
    lease = {"pid": 1, "host": "h", "token": "t", "expires": "2020-01-01T00:00:00.000Z"}
    sql(b.db, ("INSERT INTO sync_state (name, value) VALUES ('lease', ?)", (json.dumps(lease),)))
    r = b("doctor", "--check", "sync", "--json")
    assert r.code == 0, r  # warnings only
    checks = {c["id"]: c for c in json.loads(r.out)["checks"]}
    assert set(checks) == {"sync-progress", "sync-lease", "sync-map", "sync-flags", "sync-ledger"}
    assert checks["sync-lease"]["status"] == "warn" and "expired" in checks["sync-lease"]["summary"]
    r = b("doctor", env={"USAGE_POSTGRES_URL": "postgresql://kaja:s3cret@127.0.0.1:1/x"})
    assert "s3cret" not in r.out + r.err


def test_a_role_named_like_clouds_schema_gets_its_ledger_in_public(tmp_path, pg):
    """Issue 26: the ledger's tables were made without a schema name, so for a
    role named like cloud mode's schema its search_path put them in that
    schema, where a cloud `kaja wipe` dropped them. Now they go to public."""
    import psycopg

    url = role_named_like_the_schema(pg)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA kaja")  # cloud mode's, there first
    a = machine(tmp_path / "a", url)
    with Recorder(store_of(a)) as rec:
        rec.add_call(rec.start_run(run_id="run_a1", prompt="hi"), model="m", ok=1)
    r = a("sync")
    assert r.code == 0, r
    assert pg.query(
        "SELECT n.nspname, c.relname FROM pg_class AS c JOIN pg_namespace AS n"
        " ON n.oid = c.relnamespace WHERE c.relname LIKE 'andromeda%' AND c.relkind IN ('r', 'S')"
        " ORDER BY 2"
    ) == [("public", "andromeda_ledger"), ("public", "andromeda_ledger_meta"),
          ("public", "andromeda_ledger_seq"), ("public", "andromeda_origins")]  # fmt: skip
    assert len(server_ledger(pg)) == 2
    doc = json.loads(a("sync", "status", "--json").out)
    assert doc["server"]["schema"] == "public"


def test_a_ledger_an_earlier_kaja_made_in_clouds_schema_keeps_working_and_doctor_says_so(
    legacy_ledger, pg
):
    """An existing installation: sync goes on using the ledger where it is (the
    other machines' kajas, old ones too, find it there), nothing new is made in
    public, and doctor says where it is and how to move it."""
    _, laptop = legacy_ledger
    with Recorder(store_of(laptop)) as rec:
        rec.add_call("run_l1", model="gpt-5", prompt_tokens=1, completion_tokens=1, ok=1)
    before = pg.query("SELECT count(*) FROM kaja.andromeda_ledger")[0][0]
    r = laptop("sync")
    assert r.code == 0, r
    assert pg.query("SELECT count(*) FROM kaja.andromeda_ledger")[0][0] == before + 1
    assert pg.query("SELECT to_regclass('public.andromeda_ledger')") == [(None,)]
    r = laptop("sync", "status")
    assert (
        "in schema kaja" in dict(line.split("\t", 1) for line in r.out.splitlines())["PostgreSQL"]
    )
    r = laptop("doctor", "--check", "sync", "--json")
    assert r.code == 0, r
    check = {c["id"]: c for c in json.loads(r.out)["checks"]}["sync-ledger"]
    assert check["status"] == "warn"
    assert check["summary"] == "the shared ledger is in schema kaja, not public"
    assert check["details"][-1] == (
        'move it while no sync runs, as its owner: BEGIN; ALTER TABLE "kaja".andromeda_ledger'
        ' SET SCHEMA public; ALTER TABLE "kaja".andromeda_ledger_meta SET SCHEMA public;'
        ' ALTER TABLE "kaja".andromeda_origins SET SCHEMA public;'
        ' ALTER SEQUENCE "kaja".andromeda_ledger_seq SET SCHEMA public; COMMIT;'
    )
    # Moved as doctor says: the next sync finds it in public, and doctor is content.
    import psycopg

    with psycopg.connect(pg.url.replace("postgres@", "kaja@"), autocommit=True) as conn:
        conn.execute(check["details"][-1].split(": ", 1)[1])
    assert laptop("sync").code == 0
    assert pg.query("SELECT count(*) FROM public.andromeda_ledger")[0][0] == before + 1
    r = laptop("doctor", "--check", "sync", "--json")
    check = {c["id"]: c for c in json.loads(r.out)["checks"]}["sync-ledger"]
    assert check["status"] == "ok" and check["summary"] == "the shared ledger is in schema public"


@pytest.mark.parametrize("step", sync.STEPS)
def test_kill_9_at_every_step_then_the_next_sync_finishes(two, pg, step):
    """Each crash point of the protocol, hit on purpose: a has history, changes
    waiting, and changes of b to pull; batches of 2 rows."""
    a, b = two
    url = sync.Url(pg.url, "test")

    def synced(k: Kaja) -> None:  # the core call, in this process: only the kill needs one
        sync.sync(store_of(k), url)

    synced(b)
    if not step.startswith("seed"):
        synced(a)  # history sent: this time the outbox goes
        with Recorder(store_of(a)) as rec:
            for i in range(5):
                rec.add_call("run_a1", model=f"a{i}")
            rec.end_run("run_b1", "completed")
    with Recorder(store_of(b)) as rec:
        for i in range(3):
            rec.add_call("run_b1", model=f"b{i}")
    synced(b)
    n = 2 if step not in ("lease-taken", "releasing") else 1
    p = killed_sync(a, step, "sync", n=n, batch=2)
    assert p.returncode == -9, (p.returncode, p.stderr)
    assert_store_sound(a.state)
    r = a("sync")
    assert r.code == 0, r  # the lease of the dead pid is taken over at once
    synced(b)
    synced(a)
    assert ledger(a.db) == ledger(b.db) == server_ledger(pg)
    assert outbox(a.db) == outbox(b.db) == 0
    assert state(a.db, "lease") is None


def test_server_stopped_mid_sync_and_restarted(two, pg, pg_server):
    a, b = two
    assert b("sync").code == 0
    with Recorder(store_of(a)) as rec:
        for i in range(9):
            rec.add_call("run_a1", model=f"a{i}")
    stop = f"runuser -u postgres -- {pg_server.bindir}/pg_ctl -D {pg_server.data} -m immediate stop"
    if os.geteuid() != 0:
        stop = f"{pg_server.bindir}/pg_ctl -D {pg_server.data} -m immediate stop"
    p = killed_sync(a, "seed-committed", "sync", n=2, batch=3, exec_cmd=stop)
    assert p.returncode == 1, p
    assert p.stderr.startswith("kaja: lost the connection to PostgreSQL at ") or (
        p.stderr.startswith("kaja: cannot reach PostgreSQL")
    ), p.stderr
    assert p.stderr.endswith("the next `kaja sync` picks up where this one stopped\n")
    r = a("sync")
    assert r.code == 1 and r.err.startswith("kaja: cannot reach PostgreSQL at "), r
    pg_server.start()
    assert a("sync").code == 0 and b("sync").code == 0 and a("sync").code == 0
    assert ledger(a.db) == ledger(b.db) == server_ledger(pg)


def test_three_machines_agree_after_random_writes_syncs_kills_and_a_restart(
    tmp_path, pg, pg_server
):
    """The issue's "done when": seeded, so every run is the same run."""
    seed = int(os.environ.get("KAJA_SYNC_SEED", "15"))
    rng = random.Random(seed)
    names = ["a", "b", "c"]
    ks = {n: machine(tmp_path / n, pg.url) for n in names}
    agents = {n: Agent(ks[n], n, random.Random(rng.random())) for n in names}
    for k in ks.values():  # the agent has run on every machine (c has no ledger yet)
        with Recorder(store_of(k)) as rec:
            rec.conn()
    agents["a"].work(60)  # history from before sync
    agents["b"].work(10)
    assert ks["a"]("sync").code == 0
    # Kills mid-push and mid-pull at fixed rounds, on random machines.
    kills = {2: "seed-sent", 6: "push-committed", 9: "pull-applied", 13: "push-read",
             16: "pull-fetched", 19: "seed-recorded"}  # fmt: skip
    restart_round = 11
    for rnd in range(24):
        name = rng.choice(names)
        k = ks[name]
        agents[name].work(rng.randint(1, 6))
        if rnd == restart_round:
            with pg_server.stopped():
                r = k("sync")
                assert r.code == 1 and r.err.startswith("kaja: cannot reach PostgreSQL"), r
                agents[name].work(3)  # the agent writes on; changes wait in the outbox
            continue
        step = kills.get(rnd)
        if step is not None:
            name, k = _victim(step, rnd, rng, ks, agents, names, tmp_path, pg.url)
            p = killed_sync(k, step, "sync", n=1, batch=4)
            assert p.returncode == -9, (rnd, step, p.stderr)
            continue
        args = rng.choice([("sync",), ("sync",), ("sync", "push"), ("sync", "pull")])
        r = k(*args)
        assert r.code == 0, (rnd, args, r)
    mine = {n: ledger_own(ks[n].db) for n in names}
    for _ in range(2):  # everyone pushes, then everyone pulls
        for n in names:
            r = ks[n]("sync")
            assert r.code == 0, (n, r)
    shared = server_ledger(pg)
    for n in names:
        assert outbox(ks[n].db) == 0, n
        assert_store_sound(ks[n].state, fts=False)
        assert ledger(ks[n].db) == shared, n  # row by row, ids resolved, no duplicates
        assert ledger_own(ks[n].db) == mine[n], n  # syncing changed none of its own rows
    runs = {key for (table, _, key) in shared if table == "runs"}
    created = set().union(*(ag.created_runs for ag in agents.values()))
    deleted = set().union(*(ag.deleted_runs for ag in agents.values()))
    assert created - deleted <= runs <= created  # nothing lost, nothing invented
    assert len(shared) > 300


def _victim(step, rnd, rng, ks, agents, names, tmp_path, url) -> tuple[str, Kaja]:
    """The machine a kill at `step` can reach that step on: a machine joining (only a
    first sync sends history), or one that has synced, with changes in its outbox."""
    if step.startswith("seed"):
        name = f"new{rnd}"
        ks[name] = machine(tmp_path / name, url)
        agents[name] = Agent(ks[name], name, random.Random(rng.random()))
        names.append(name)
        agents[name].work(25)
        return name, ks[name]
    name = rng.choice([n for n in names if ks[n].db.exists() and state(ks[n].db, "origin")])
    while outbox(ks[name].db) == 0:
        agents[name].work(2)
    return name, ks[name]


def ledger_own(db: Path) -> dict:
    from tests.support.sync_support import own_rows

    return own_rows(db)


def test_a_pull_never_skips_a_push_that_commits_later(tmp_path, pg, monkeypatch):
    """a's push holds its transaction open (numbers drawn, not committed) while b
    pushes and c pulls. b must wait for a (the table lock), or c's cursor would
    pass a's numbers before they are visible, and c would never see a's rows."""
    import threading

    ks = {n: machine(tmp_path / n, pg.url) for n in "abc"}
    url = sync.Url(pg.url, "test")
    for n, k in ks.items():
        with Recorder(store_of(k)) as rec:
            rec.add_call(None, model=f"first {n}")
        sync.sync(store_of(k), url)
    for n in "ab":
        with Recorder(store_of(ks[n])) as rec:
            rec.add_call(None, model=f"second {n}")
    inside, go = threading.Event(), threading.Event()
    a_thread: list[threading.Thread] = []

    def hook(step: str) -> None:
        if step == "push-sent" and threading.current_thread() in a_thread:
            inside.set()
            assert go.wait(30)

    monkeypatch.setattr(sync, "HOOK", hook)
    a_thread.append(threading.Thread(target=sync.sync, args=(store_of(ks["a"]), url)))
    b = threading.Thread(target=sync.sync, args=(store_of(ks["b"]), url))
    a_thread[0].start()
    assert inside.wait(30)
    b.start()
    b.join(1.5)  # b waits on the lock a holds
    sync.sync(store_of(ks["c"]), url, push=False)
    go.set()
    a_thread[0].join(30)
    b.join(30)
    sync.sync(store_of(ks["c"]), url, push=False)
    models = {m for (m,) in rows(ks["c"].db, "SELECT model FROM calls")}
    assert models == {"first a", "first b", "first c", "second a", "second b"}


def test_a_first_sync_on_a_terminal_shows_a_progress_bar(two):
    """stderr on a terminal (a pty): the history goes out under a progress bar."""
    import pty
    import subprocess

    a, _ = two
    with Recorder(store_of(a)) as rec:
        for i in range(300):
            rec.add_call("run_a1", model=f"m{i}")
    master, slave = pty.openpty()
    env = dict(a.env, TERM="xterm", COLUMNS="100")
    p = subprocess.Popen([KAJA_BIN, "sync"], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave)  # fmt: skip
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        seen += chunk
    assert p.wait(60) == 0
    os.close(master)
    text = seen.decode(errors="replace")
    assert "sending the history" in text
    assert "pushed 305 rows of history" in text


def test_usage_rollups_follow_what_a_pull_imports_changes_and_deletes(two, pg):
    """kaja's usage rollups on b, built before a pull, agree with the raw SQL after it
    imports a's rows, and after a later pull updates and deletes them (issue 29)."""
    from kaja_cli.core.ledger.report import UsageReport, fill, report_queries
    from kaja_cli.core.store import schema

    a, b = two

    def agree() -> dict:
        data = json.loads(b("usage", "--json", "--tools", "0").out)
        conn = sqlite3.connect(b.db.as_uri() + "?mode=ro", uri=True)
        try:
            queries, missing = report_queries(schema.present_columns(conn))
            raw = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
        finally:
            conn.close()
        want = fill(UsageReport(data["store"], True, missing=missing), raw).to_json(tools=0)
        assert data == want
        return data

    assert agree()["total"]["calls"] == 0  # b's rollups built on its own ledger
    assert rows(b.db, "SELECT count(*) FROM kaja_usage_state") == [(3,)]
    assert a("sync").code == 0 and b("sync").code == 0
    assert agree()["total"]["calls"] == 2
    sql(
        a.db, "UPDATE calls SET prompt_tokens = 1000 WHERE id = 1", "DELETE FROM calls WHERE id = 2"
    )
    assert a("sync").code == 0 and b("sync").code == 0
    assert agree()["total"] == {**agree()["total"], "calls": 1, "prompt_tokens": 1000}
