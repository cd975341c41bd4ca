"""Cloud mode's foundations (core/pg/connection, ddl, schema; SPEC §10): choosing
the server, `config paths` without connecting, the schema rendered from the
same description as the SQLite files, written by `kaja demo` through the write
API, and read commands that never create anything."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import time

import pytest

from kaja_cli.core.store import schema as core_schema
from kaja_cli.core.store.server import ddl
from kaja_cli.core.store.server import schema as pg_schema
from tests.support.cloud_support import DEMO, use_server

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

PASSWORD = "s3cr3t-p4ss"
UNREACHABLE = f"postgresql://kaja:{PASSWORD}@192.0.2.1:5432/kaja"  # TEST-NET-1: nobody answers


def tables_of(db) -> dict[str, list[str]]:
    rows = db.query(
        "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'kaja'"
        " AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum"
    )
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


# --- choosing it --------------------------------------------------------------------------
def test_config_paths_shows_the_server_its_sources_and_never_connects(kaja):
    start = time.monotonic()
    r = kaja("--database-url", UNREACHABLE, "config", "paths", "--json",
             env={"KAJA_ACCOUNT": "marie"})  # fmt: skip
    assert time.monotonic() - start < 3  # no connection attempt (it would wait 5 s)
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["mode"] == "cloud"
    assert doc["backend"] == {
        "mode": {"value": "cloud", "source": "flag --database-url"},
        "database_url": {
            "value": "postgresql://kaja:***@192.0.2.1:5432/kaja",
            "source": "flag --database-url",
        },
        "account": {"value": "marie", "source": "env KAJA_ACCOUNT"},
        "schema": {"value": "kaja", "source": "default"},
    }
    assert list(doc["paths"]) == ["settings", "state_dir", "images"]
    assert doc["paths"]["images"]["path"] == str(kaja.state / "files" / "images")
    assert PASSWORD not in r.out + r.err

    r = kaja("--database-url", UNREACHABLE, "config", "paths")
    assert r.code == 0 and PASSWORD not in r.out + r.err
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert rows[:4] == [
        ["mode", "cloud", "flag --database-url", "", ""],
        [
            "database_url",
            "postgresql://kaja:***@192.0.2.1:5432/kaja",
            "flag --database-url",
            "",
            "",
        ],
        ["account", "", "not set", "", ""],
        ["schema", "kaja", "default", "", ""],
    ]
    assert "cloud mode" in r.err


def test_settings_and_the_environment_choose_cloud_mode(kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text(
        '[memory]\nmode = "cloud"\naccount = "ana"\ndatabaseSchema = "team_kaja"\n'
    )
    r = kaja("config", "paths", "--json", env={"KAJA_DATABASE_URL": UNREACHABLE})
    backend = json.loads(r.out)["backend"]
    assert backend["mode"] == {"value": "cloud", "source": "settings [memory] mode"}
    assert backend["database_url"]["source"] == "env KAJA_DATABASE_URL"
    assert backend["account"] == {"value": "ana", "source": "settings [memory] account"}
    assert backend["schema"] == {"value": "team_kaja", "source": "settings [memory] databaseSchema"}
    # KAJA_DATABASE_URL names the server; it does not switch a local store to cloud mode.
    kaja.config.write_text("")
    r = kaja("config", "paths", "--json", env={"KAJA_DATABASE_URL": UNREACHABLE})
    assert json.loads(r.out)["backend"] == {"mode": {"value": "local", "source": "default"}}


def test_a_bad_database_url_is_a_usage_error_without_the_password(kaja):
    r = kaja("--database-url", f"mysql://kaja:{PASSWORD}@db/kaja", "sessions")
    assert r.code == 2
    assert r.err == (
        "kaja: --database-url: memory.databaseUrl must be a URL starting with postgresql://"
        " or postgres://, not 'mysql://kaja:***@db/kaja'\n"
    )


@pytest.mark.process
def test_without_psycopg_cloud_mode_says_how_to_install_it(kaja, tmp_path):
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no module named psycopg')\n")
    env = {"PYTHONPATH": str(shadow.parent)}
    r = kaja("--database-url", UNREACHABLE, "sessions", env=env)
    assert (r.code, r.out) == (1, "")
    assert r.err == (
        "kaja: cloud mode needs psycopg, the PostgreSQL driver: install it with:"
        " pip install 'kaja-cli[postgres]'\n"
    )
    assert kaja("--database-url", UNREACHABLE, "config", "paths", env=env).code == 0


def test_local_mode_never_imports_psycopg(demo_store):
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'psycopg loaded: {\"psycopg\" in sys.modules}'))\n"
        "from kaja_cli.app import main\n"
        "sys.argv = ['kaja', *sys.argv[1:]]\n"
        "main()\n"
    )
    for argv in (["sessions"], ["search", "tomato"], ["config", "paths"], ["doctor"]):
        p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                           env=demo_store.env)  # fmt: skip
        assert p.stderr.endswith("psycopg loaded: False"), (argv, p.stderr[-300:])


# --- the schema -------------------------------------------------------------------------------
def test_the_schema_is_rendered_from_the_same_description():
    sessions = core_schema.TABLES["sessions"]
    assert ddl.table_ddl(sessions, "kaja") == (
        'CREATE TABLE IF NOT EXISTS "kaja"."sessions" (\n'
        '  "id" text COLLATE "C" PRIMARY KEY,\n  "createdAt" text COLLATE "C",\n'
        '  "updatedAt" text COLLATE "C",\n  "persona" text COLLATE "C",\n'
        '  "model" text COLLATE "C",\n  "title" text COLLATE "C",\n  "owner" text COLLATE "C",\n'
        '  "systemPrompt" text COLLATE "C",\n  "pendingCallId" text COLLATE "C",\n'
        '  "pendingKind" text COLLATE "C"\n)'
    )
    notes = ddl.table_ddl(core_schema.TABLES["notes"], "kaja")
    assert '"owner" text COLLATE "C" DEFAULT \'\' NOT NULL' in notes
    assert '"sticky" bigint DEFAULT 0' in notes and 'PRIMARY KEY ("owner", "key")' in notes
    calls = ddl.table_ddl(core_schema.TABLES["calls"], "kaja")
    assert '"id" bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY' in calls
    feedback = ddl.table_ddl(core_schema.TABLES["feedback"], "kaja")
    assert '"value_num" double precision' in feedback
    events = ddl.table_ddl(core_schema.TABLES["events"], "kaja")
    assert 'UNIQUE ("run_id", "event_id")' in events
    index = ddl.index_ddl(core_schema.TABLES["sessions"], "sessions_owner_updated",
                          "owner, updatedAt", "kaja")  # fmt: skip
    assert index == (
        'CREATE INDEX IF NOT EXISTS "sessions_owner_updated" ON "kaja"."sessions"'
        ' ("owner", "updatedAt")'
    )


def test_demo_writes_the_schema_and_the_rows_through_the_write_api(cloud, _demo_template):
    r = cloud(*DEMO)
    assert r.code == 0, r
    assert "into postgresql://postgres@/" in r.err and "(schema kaja)" in r.err
    tables = tables_of(cloud.pg)
    for table in pg_schema.CLOUD_TABLES:  # every column under the seeds' name, in order
        extra = ["kaja_search", "kaja_words"] if table.name == "messages" else []
        assert tables[table.name] == table.column_names + extra, table.name
    assert set(tables) == {t.name for t in pg_schema.CLOUD_TABLES} | {
        "kaja_schema", "kaja_search_stats", "kaja_search_terms"}  # fmt: skip
    (version,) = cloud.pg.query("SELECT version FROM kaja.kaja_schema")
    assert version == (pg_schema.SCHEMA_VERSION,)
    # The same rows as the local demo, table by table.
    local = sqlite3.connect(_demo_template / "kaja.db")
    for table in pg_schema.CLOUD_TABLES:
        if table.name == "counters":  # each engine's own bookkeeping
            continue
        want = local.execute(f'SELECT count(*) FROM "{table.name}"').fetchone()[0]
        assert cloud.pg.query(f'SELECT count(*) FROM kaja."{table.name}"') == [(want,)], table
    want = local.execute("SELECT id, owner, title FROM sessions ORDER BY id").fetchall()
    assert cloud.pg.query("SELECT id, owner, title FROM kaja.sessions ORDER BY id") == want
    # The images stay files, under the state dir, keyed the same way.
    images = sorted(p.relative_to(cloud.state) for p in cloud.state.rglob("*.png"))
    assert images == sorted(p.relative_to(_demo_template) for p in _demo_template.rglob("*.png"))
    assert all(str(p).startswith("files/images/") for p in images)
    # Once there, demo refuses to write over it.
    r = cloud(*DEMO)
    assert r.code == 5 and "a Kaja store already exists (postgresql://" in r.err


def test_an_account_is_you(cloud):
    use_server(cloud, cloud.pg.url, account="marie@example.org")
    assert cloud(*DEMO).code == 0
    owners = dict(cloud.pg.query("SELECT coalesce(owner, 'NULL'), count(*) FROM kaja.sessions"
                                 " GROUP BY 1"))  # fmt: skip
    assert "NULL" not in owners and owners["marie@example.org"] == 7
    notes = dict(cloud.pg.query("SELECT owner, count(*) FROM kaja.notes GROUP BY 1"))
    assert "" not in notes and notes["marie@example.org"] > 0


@pytest.mark.parametrize(
    "argv",
    [["sessions"], ["sessions", "--json"], ["resume"], ["sessions", "export", "01a2"]],
)  # fmt: skip
def test_read_commands_never_create_anything(cloud, argv):
    r = cloud(*argv)
    assert r.code in (0, 3), r
    assert re.search(r"no Kaja store (in|at) postgresql://\S+ \(schema kaja\)", r.err), r
    assert cloud.pg.query("SELECT count(*) FROM pg_namespace WHERE nspname = 'kaja'") == [(0,)]


def test_a_schema_that_is_not_kajas_is_not_touched(cloud):
    with cloud.pg.connect() as conn:
        conn.execute("CREATE SCHEMA kaja; CREATE TABLE kaja.sessions (id int)")
    # A read fails (exit 1); a write is refused as guard refuses a file (exit 5).
    for argv, code in ((["sessions"], 1), (list(DEMO), 5)):
        r = cloud(*argv)
        assert r.code == code, r
        assert "(schema kaja) is not Kaja's (its tables: sessions)" in r.err
    assert tables_of(cloud.pg) == {"sessions": ["id"]}


def test_unaccent_kaja_may_not_create_is_one_line_saying_what_to_run(cloud):
    """A role that owns kaja's schema but may not create in the database (a
    managed server's usual grant) cannot create the trusted extension either."""
    role = f"maker_{cloud.pg.name}"
    with cloud.pg.connect() as conn:
        conn.execute("DROP EXTENSION unaccent")  # tests/support/pg.py's template has it
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"CREATE SCHEMA kaja AUTHORIZATION {role}")
    url = cloud.pg.url.replace("postgres@", f"{role}@")
    try:
        r = cloud("--database-url", url, *DEMO)
        assert r.code == 1, r
        assert r.err.count("\n") == 1 and "Traceback" not in r.err, r
        assert "search needs PostgreSQL's unaccent extension, and kaja could not create it" in r.err
        assert "run as a superuser, in that database: CREATE EXTENSION unaccent;" in r.err
        assert tables_of(cloud.pg) == {}  # nothing half-made
        with cloud.pg.connect() as conn:
            conn.execute("CREATE EXTENSION unaccent")  # what the line said to run
        r = cloud("--database-url", url, *DEMO)
        assert r.code == 0, r
        r = cloud("--database-url", url, "search", "tomato", "--all-owners", "--json")
        assert r.code == 0 and json.loads(r.out)["results"], r
    finally:
        with cloud.pg.connect() as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_schema_from_a_newer_kaja_is_read_and_never_written(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("INSERT INTO kaja.kaja_schema VALUES (99, 'x', 'kaja 9.0', NULL)")
    r = cloud_demo("sessions", "--json")
    assert r.code == 0 and json.loads(r.out)["total"] == 7
    r = cloud_demo("sessions", "delete", "01a226e4", "--yes")
    assert r.code == 1
    assert (
        "was made by a newer kaja (schema version 99;"
        f" this kaja knows up to {pg_schema.SCHEMA_VERSION})" in r.err
    )
    assert cloud_demo.pg.query("SELECT count(*) FROM kaja.sessions") == [(13,)]


def test_the_schema_is_made_once_by_two_writers_at_once(cloud):
    import threading

    from kaja_cli.core.store import Store

    store = Store.locate(environ=cloud.env)
    errors = []

    def writer() -> None:
        try:
            with store.writer(create=True):
                pass
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cloud.pg.query("SELECT count(*) FROM kaja.kaja_schema") == [(1,)]
    assert cloud.pg.query("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'kaja_search%'") == [
        (6,)
    ]
