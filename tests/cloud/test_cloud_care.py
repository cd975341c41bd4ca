"""The care commands in cloud mode (issue 28): `optimize` (VACUUM (ANALYZE) of
kaja's tables, or one line saying what the role needs), `stats` (kaja's
statements to the server in the local query profile, placeholders only),
`migrate` and `usage reset` (refused in one line saying why)."""

from __future__ import annotations

import json
import re

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


def test_optimize_vacuums_and_analyzes_kajas_tables(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("SET search_path = kaja")
        conn.execute("DELETE FROM messages WHERE role = 'tool'")
    r = cloud_demo("optimize", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert {"sessions", "messages", "tool_calls", "notes", "calls", "kaja_schema"} <= set(
        doc["tables"]
    )
    [server] = doc["databases"]
    assert server["analyzed"] and server["vacuumed"] and "(schema kaja)" in server["path"]
    stats = cloud_demo.pg.query(
        "SELECT last_vacuum IS NOT NULL, last_analyze IS NOT NULL FROM pg_stat_user_tables"
        " WHERE schemaname = 'kaja' AND relname = 'messages'"
    )
    assert stats == [(True, True)]
    r = cloud_demo("optimize")
    assert r.code == 0 and "VACUUM (ANALYZE) of" in r.err, r


def test_optimize_dry_run_vacuums_nothing(cloud_demo):
    def vacuumed() -> list:
        return cloud_demo.pg.query(
            "SELECT relname FROM pg_stat_user_tables WHERE schemaname = 'kaja'"
            " AND (last_vacuum IS NOT NULL OR last_analyze IS NOT NULL)"
        )

    assert vacuumed() == []
    r = cloud_demo("optimize", "--dry-run")
    assert r.code == 0, r
    assert re.search(r"^kaja: dry run: would VACUUM \(ANALYZE\) \d+ tables of kaja's schema"
                     r" \(.+\); nothing was changed$", r.err, re.M), r.err  # fmt: skip
    r = cloud_demo("optimize", "--dry-run", "--json")
    doc = json.loads(r.out)
    assert doc["dry_run"] is True and "messages" in doc["tables"]
    assert vacuumed() == [] and not (cloud_demo.state / "db-stats.db").exists()


def test_optimize_says_what_a_role_that_may_not_vacuum_needs(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("CREATE ROLE helper LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA kaja TO helper")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA kaja TO helper")
    try:
        url = cloud_demo.pg.url.replace("postgres@", "helper@")
        r = cloud_demo("--database-url", url, "optimize")
        assert r.code == 1, r
        first = r.err.splitlines()[0]
        assert first.startswith("kaja: your role (helper) may not VACUUM kaja's tables"), r.err
        assert "the tables' owner, a superuser, or the MAINTAIN privilege" in first
        assert "Traceback" not in r.err
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute("DROP OWNED BY helper")
            conn.execute("DROP ROLE helper")


def test_stats_reads_the_profile_of_cloud_commands(cloud_demo):
    # A read-only command makes no db-stats.db (as locally): a write makes it.
    assert not (cloud_demo.state / "db-stats.db").exists()
    assert cloud_demo("sessions", "delete", "01a22161", "--yes").code == 0
    assert (cloud_demo.state / "db-stats.db").exists()
    assert cloud_demo("search", "tomato").code == 0
    assert cloud_demo("sessions", "--owner", "telegram:482913").code == 0
    r = cloud_demo("stats", "queries", "--db", "shared", "-n", "0", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["db"] == "postgresql:kaja" and doc["statements"], doc
    assert {s["db"] for s in doc["statements"]} == {"postgresql:kaja"}
    assert any(s["processes"] == ["kaja search"] for s in doc["statements"])
    text = " ".join(s["sql"] for s in doc["statements"])
    assert "telegram:482913" not in text and "tomato" not in text  # placeholders only
    assert re.search(r'"owner" = \?', text), text
    r = cloud_demo("stats", "queries", "-n", "0", "--json")
    assert r.code == 0 and json.loads(r.out)["total"] >= len(doc["statements"])


def test_migrate_says_the_way_in_cloud_mode(cloud_demo):
    r = cloud_demo("migrate", "--dry-run")
    assert r.code == 1
    assert r.err.startswith("kaja: kaja migrate imports an earlier Kaja's files into a local store")
    assert "`kaja backup` there and `kaja restore` that archive in cloud mode" in r.err


def test_usage_reset_says_the_ledger_is_not_reset_from_cloud_mode(cloud_demo):
    r = cloud_demo("usage", "reset", "--dry-run")
    assert r.code == 5 and r.err.startswith("kaja: usage reset is local"), r


def test_a_wipe_the_server_refuses_leaves_no_unfinished_wipe_behind(cloud_demo):
    """A role that may write rows but does not own the tables cannot drop
    them: the wipe stops in one line with nothing dropped, and its marker goes
    too, or every later `wipe --owner` and `demo` would be refused as "an
    interrupted wipe" that this role can never finish."""
    role = f"rw_{cloud_demo.pg.name}"
    with cloud_demo.pg.connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA kaja TO "{role}"')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA kaja TO "{role}"'
        )
    try:
        url = cloud_demo.pg.url.replace("postgres@", f"{role}@")
        sessions = cloud_demo.pg.query("SELECT count(*) FROM kaja.sessions")
        r = cloud_demo("--database-url", url, "wipe", "--yes")
        assert r.code == 1 and "Traceback" not in r.err, r
        assert "must be owner" in r.err, r.err
        assert cloud_demo.pg.query("SELECT count(*) FROM kaja.sessions") == sessions
        assert not list(cloud_demo.state.glob("*.wiping*")), list(cloud_demo.state.iterdir())
        r = cloud_demo("--database-url", url, "wipe", "--owner", "telegram:482913", "--yes")
        assert r.code == 0, r
        checks = {c["id"]: c for c in json.loads(cloud_demo("doctor", "--json").out)["checks"]}
        assert checks["interrupted-wipe"]["summary"] == "no unfinished wipe", checks
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')
