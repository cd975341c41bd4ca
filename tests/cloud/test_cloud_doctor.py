"""`kaja doctor` in cloud mode (core/doctor/server.py): the server, kaja's schema
on it, the search index, encryption and privileges, what --fix repairs, and
what --redact hides."""

from __future__ import annotations

import json

from kaja_cli.core.store.server import schema as pg_schema
from tests.support.cloud_support import use_server

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


def checks_of(r) -> dict[str, dict]:
    return {c["id"]: c for c in json.loads(r.out)["checks"]}


def test_a_healthy_server_is_no_problem(cloud_demo):
    r = cloud_demo("doctor", "--json")
    assert r.code == 0, r
    checks = checks_of(r)
    for cid in ("server.reachable", "server.version", "server.schema", "server.others",
                "server.extensions", "server.tables", "server.search", "server.encryption",
                "server.privileges"):  # fmt: skip
        assert checks[cid]["status"] == "ok", checks[cid]
        assert checks[cid]["group"] == "server"
    assert checks["server.schema"]["summary"] == (
        f"schema kaja: version {pg_schema.SCHEMA_VERSION}, this kaja's"
    )
    assert checks["server.others"]["summary"] == "schema kaja holds only Kaja's objects"
    assert "messages: 96" in checks["server.tables"]["details"]
    assert checks["server.tables"]["summary"] == "13 sessions, 96 messages"
    assert "a Unix socket" in checks["server.encryption"]["summary"]
    assert not any(c.startswith(("integrity.", "database.")) for c in checks)  # no local file


def test_no_schema_yet_is_a_warning_and_never_created(cloud):
    r = cloud("doctor", "--check", "server", "--json")
    assert r.code == 0, r
    assert checks_of(r)["server.schema"]["status"] == "warn"
    assert cloud.pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'kaja'") == [(0,)]


def test_an_unreachable_server_is_an_error_in_seconds(kaja):
    use_server(kaja, "postgresql://kaja:pw@127.0.0.1:1/kaja?connect_timeout=2")
    r = kaja("doctor")
    assert r.code == 1
    assert "✗ cannot reach the PostgreSQL server at postgresql://kaja:***@127.0.0.1:1/" in r.out
    assert "pw@" not in r.out


def test_fix_adds_what_the_schema_lacks_and_recounts_the_statistics(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute('ALTER TABLE kaja.sessions DROP COLUMN "pendingKind"')
        conn.execute("DROP INDEX kaja.sessions_updated")
        conn.execute("UPDATE kaja.kaja_search_stats SET messages = messages + 5")
    r = cloud_demo("doctor", "--json")
    assert r.code == 0
    checks = checks_of(r)
    assert checks["server.schema"]["status"] == "warn" and checks["server.schema"]["fixable"]
    assert checks["server.schema"]["details"] == [
        "column sessions.pendingKind",
        "index sessions_updated",
    ]
    assert checks["server.search"]["status"] == "warn"
    r = cloud_demo("doctor", "--fix", "--json")
    doc = json.loads(r.out)
    fixes = [f for f in doc["fixes"] if f["check"].startswith("server.")]
    assert [(f["check"], f["done"]) for f in fixes] == [
        ("server.schema", True), ("server.search", True)], doc["fixes"]  # fmt: skip
    assert checks_of(r)["server.schema"]["status"] == "ok"
    assert checks_of(r)["server.search"]["status"] == "ok"


def test_a_read_only_role_is_a_warning(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("CREATE ROLE ro LOGIN; GRANT USAGE ON SCHEMA kaja TO ro;"
                     " GRANT SELECT ON ALL TABLES IN SCHEMA kaja TO ro")  # fmt: skip
    try:
        url = cloud_demo.pg.url.replace("postgres@", "ro@")
        r = cloud_demo("--database-url", url, "doctor", "--check", "server", "--json")
        privileges = checks_of(r)["server.privileges"]
        assert privileges["status"] == "warn"
        assert privileges["summary"] == "role ro may only read: reading works, writing is refused"
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute("DROP OWNED BY ro; DROP ROLE ro")


def test_a_role_that_may_not_read_some_tables_is_an_error_naming_them_in_order(cloud_demo):
    from kaja_cli.core.store.schema import CONVERSATION_TABLES

    with cloud_demo.pg.connect() as conn:
        conn.execute("CREATE ROLE half LOGIN; GRANT USAGE ON SCHEMA kaja TO half;"
                     " GRANT SELECT ON kaja.sessions, kaja.notes TO half")  # fmt: skip
        present = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'kaja'")}  # fmt: skip
    try:
        url = cloud_demo.pg.url.replace("postgres@", "half@")
        r = cloud_demo("--database-url", url, "doctor", "--check", "server", "--json")
        privileges = checks_of(r)["server.privileges"]
        assert privileges["status"] == "error"
        named = [t.name for t in CONVERSATION_TABLES
                 if t.name in present and t.name not in ("sessions", "notes")]  # fmt: skip
        named += [t for t in ("kaja_schema", "kaja_search_stats", "kaja_search_terms")
                  if t in present]  # fmt: skip
        assert len(named) >= 8, named
        assert privileges["summary"] == f"role half may not read {', '.join(named)}"
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute("DROP OWNED BY half; DROP ROLE half")


def test_redact_hides_the_host_user_database_and_account(cloud_demo):
    use_server(cloud_demo, cloud_demo.pg.url, account="marie@example.org")
    r = cloud_demo("doctor", "--redact", "--json")
    text = r.out
    for secret in (cloud_demo.pg.name, str(cloud_demo.pg.server.root), "marie@example.org"):
        assert secret not in text, secret
    assert "<database url>" in text
    r = cloud_demo("doctor", "--check", "server")
    assert cloud_demo.pg.name in r.out  # without --redact it says where it looked


def test_thorough_checks_every_code_point(cloud_demo):
    r = cloud_demo("doctor", "--thorough", "--check", "server.search", "--json")
    assert r.code == 0, r
    assert (
        "every code point folds as SQLite's tokenizer" in checks_of(r)["server.search"]["details"]
    )


def test_the_shared_ledger_in_kajas_schema_is_a_warning(legacy_ledger):
    cloud, _ = legacy_ledger
    r = cloud("doctor", "--check", "server", "--json")
    assert r.code == 0, r
    check = checks_of(r)["server.others"]
    assert check["status"] == "warn"
    assert check["summary"] == "schema kaja also holds the shared usage ledger of `kaja sync`"
    assert check["details"][:4] == [
        "table kaja.andromeda_ledger", "table kaja.andromeda_ledger_meta",
        "sequence kaja.andromeda_ledger_seq", "table kaja.andromeda_origins",
    ]  # fmt: skip
    assert check["fix"].startswith('move it while no sync runs: BEGIN; ALTER TABLE "kaja"')


def test_quick_reads_nothing_in_proportion_to_the_server(cloud_demo, monkeypatch):
    """--quick on a server of many accounts (issue 42): the rows per table and the
    count of the messages against the search statistics read every account's rows,
    so --quick leaves them out and says so, as locally."""
    import psycopg

    sent: list[str] = []
    execute = psycopg.Connection.execute

    def recorded(self, query, params=None, **kw):
        sent.append(str(query))
        return execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", recorded)
    r = cloud_demo("doctor", "--quick", "--json")
    monkeypatch.undo()
    assert r.code == 0, r
    report = json.loads(r.out)
    checks = {c["id"]: c for c in report["checks"]}
    assert "server.tables" not in checks
    assert checks["server.search"]["status"] == "ok"
    assert checks["server.search"]["summary"] == "the search index is valid"
    (details,) = checks["server.search"]["details"]
    assert details.startswith("96 messages, ") and details.endswith(" words in its statistics")
    skipped = {s["check"]: s["what"] for s in report["skipped"]}
    assert "every account's rows" in skipped["server.tables"]
    assert "every account's messages" in skipped["server.search"]
    scans = [q for q in sent if "count(*)" in q.lower() and ".messages" in q]
    assert scans == []
    r = cloud_demo("doctor", "--quick")
    assert "skipped by --quick" in r.out and "server.tables" in r.out
