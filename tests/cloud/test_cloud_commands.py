"""The conversation commands in cloud mode, against a real server: sessions
(list, delete, export), resume, wipe --owner, a whole wipe, usage and usage
reset (SPEC §5, §8, §10). What they print is compared with local mode in
tests/cloud/test_cloud_same_output.py; here, what they do to the server."""

from __future__ import annotations

import json

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.store.server import schema as pg_schema
from tests.support.cloud_support import DEMO
from tests.support.sync_support import store_of

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

TERMINAL_SESSION = "01a226e4"  # "Nightly backup with rsync", the terminal's
ANA = "telegram:482913"


def count(db, sql: str) -> int:
    return db.query(sql)[0][0]


def test_sessions_delete_removes_every_row_and_the_images(cloud_demo):
    sid = "01a225d4-e900-7cd7-98f1-6adf91b7584a"  # has an image folder
    assert (cloud_demo.state / "files" / "images" / sid).is_dir()
    r = cloud_demo("sessions", "delete", sid[:8], "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["deleted"] == [{"id": sid, "title": "Open PRs and a screenshot of the list",
                               "owner": None}]  # fmt: skip
    assert doc["rows"]["messages"] == 6 and doc["rows"]["sessions"] == 1
    for table, column in (("sessions", "id"), ("messages", '"sessionId"'),
                          ("session_events", '"sessionId"')):  # fmt: skip
        assert (
            count(cloud_demo.pg, f"SELECT count(*) FROM kaja.{table} WHERE {column} = '{sid}'") == 0
        )
    assert not (cloud_demo.state / "files" / "images" / sid).exists()
    assert count(cloud_demo.pg, "SELECT sum(messages) FROM kaja.kaja_search_stats") == 90


def test_another_owners_session_is_refused(cloud_demo):
    r = cloud_demo("resume", "01a22612")
    assert r.code == 5 and "belongs to telegram:482913, not terminal" in r.err
    r = cloud_demo("sessions", "delete", "01a22612", "--yes")
    assert r.code == 5
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.sessions") == 13


def test_resume_and_export_read_the_server(cloud_demo):
    r = cloud_demo("resume", TERMINAL_SESSION, "--no-pager")
    assert r.code == 0, r
    assert "You: Set up a nightly backup" in r.out and "⏸" in r.out
    r = cloud_demo("sessions", "export", TERMINAL_SESSION)
    assert r.code == 0 and r.out.startswith("# Nightly backup with rsync")


def test_wipe_owner_erases_them_in_one_transaction_and_their_words(cloud_demo):
    before = json.loads(cloud_demo("search", "lista", "--owner", ANA, "--json").out)["results"]
    assert before
    listed = "SELECT count(*) FROM kaja.kaja_search_terms WHERE term = 'lista'"
    assert count(cloud_demo.pg, listed) == 1
    r = cloud_demo("wipe", "--owner", ANA, "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["rows"]["sessions"] == 3 and doc["rows"]["notes"] == 2
    assert doc["index_purged"] is True
    for sql in (f"SELECT count(*) FROM kaja.sessions WHERE owner = '{ANA}'",
                f"SELECT count(*) FROM kaja.notes WHERE owner = '{ANA}'",
                f"SELECT count(*) FROM kaja.dataset_answers WHERE owner = '{ANA}'"):  # fmt: skip
        assert count(cloud_demo.pg, sql) == 0
    # Gone from the search index: no query finds their words.
    after = cloud_demo("search", "lista", "--all-owners", "--json")
    assert json.loads(after.out)["results"] == []
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.messages"
                                " WHERE kaja_search @@ 'lista'::tsquery") == 0  # fmt: skip
    assert count(cloud_demo.pg, listed) == 0  # nor the words stemming looks forms up in
    # Everyone else's stays.
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.sessions") == 10
    r = cloud_demo("wipe", "--owner", ANA, "--yes")
    assert r.code == 3 and "nothing stored for owner telegram:482913" in r.err


def test_wipe_owner_terminal_erases_what_is_stored_under_the_word_terminal_too(cloud_demo):
    """As locally (`Owner.rows_where`): what every listing shows as the
    terminal's is the terminal's, and goes with it."""
    with cloud_demo.pg.connect() as conn:
        conn.execute("INSERT INTO kaja.notes (owner, key, content) VALUES ('terminal', 'k', 'x')")
    r = cloud_demo("wipe", "--owner", "terminal", "--yes")
    assert r.code == 0, r
    sql = "SELECT count(*) FROM kaja.notes WHERE owner IN ('', 'terminal')"
    assert count(cloud_demo.pg, sql) == 0


def test_wipe_owner_waits_for_an_interrupted_whole_wipe_as_locally(cloud_demo):
    """One plan for both engines: the whole wipe's marker (beside the state
    dir's shared file) is finished first, then an owner is erased."""
    marker = cloud_demo.state / "kaja.db.wiping"
    marker.write_text(json.dumps({"version": 1, "action": "wipe", "paths": []}, indent=1))
    r = cloud_demo("wipe", "--owner", ANA, "--yes")
    assert r.code == 5, r
    assert r.err.startswith("kaja: an interrupted `kaja wipe` has not finished: run `kaja wipe`")
    assert count(cloud_demo.pg, f"SELECT count(*) FROM kaja.sessions WHERE owner = '{ANA}'") == 3


def test_a_demo_cut_short_is_named_and_the_wipe_removes_its_marker_as_locally(cloud):
    """The demo's marker protocol (core/store/markers.py) is the same on a
    server: a demo cut short is refused a second start, and `kaja wipe` ends it."""
    cloud.state.mkdir(parents=True)
    marker = cloud.state / "kaja.db.demo"
    marker.write_text(json.dumps({"version": 1, "action": "demo", "pid": 4_194_399}, indent=1))
    r = cloud(*DEMO)
    assert r.code == 5 and "an earlier `kaja demo` was cut short" in r.err, r
    r = cloud("wipe", "--yes")
    assert r.code == 0, r
    assert not marker.exists()
    r = cloud(*DEMO)
    assert r.code == 0, r
    assert not marker.exists()  # a whole demo leaves none


def test_a_whole_wipe_drops_kajas_schema_only_and_only_with_yes(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("CREATE TABLE public.someone_elses (x int)")
    r = cloud_demo("wipe")  # no --yes: refused even with nothing to ask
    assert r.code == 5 and "only with --yes" in r.err
    r = cloud_demo("wipe", "--dry-run", "--json")
    doc = json.loads(r.out)
    assert doc["paths"][0] == {"path": "kaja.cache_stats", "what": "table", "kind": "table",
                               "size": doc["paths"][0]["size"], "files": 0}  # fmt: skip
    schema = [p for p in doc["paths"] if p["kind"] == "schema"]
    assert len(schema) == 1 and "(schema kaja)" in schema[0]["path"]
    assert count(cloud_demo.pg, "SELECT count(*) FROM pg_namespace WHERE nspname = 'kaja'") == 1
    r = cloud_demo("wipe", "--yes")
    assert r.code == 0, r
    assert count(cloud_demo.pg, "SELECT count(*) FROM pg_namespace WHERE nspname = 'kaja'") == 0
    assert count(cloud_demo.pg, "SELECT count(*) FROM public.someone_elses") == 0  # still there
    assert not (cloud_demo.state / "files").exists()
    r = cloud_demo("wipe", "--yes")
    assert r.code == 0 and "nothing to delete" in r.err


def test_a_whole_wipe_refuses_while_another_session_holds_the_tables(cloud_demo):
    with cloud_demo.pg.connect() as other:
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM kaja.sessions")  # holds a lock until it ends
        r = cloud_demo("wipe", "--yes")
        assert r.code == 4, r
        assert "is in use: process" in r.err
        other.execute("ROLLBACK")
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.sessions") == 13
    assert (cloud_demo.state / "files" / "images").is_dir()


def test_a_whole_wipe_keeps_the_shared_ledger_an_earlier_sync_made_in_its_schema(
    legacy_ledger,
):
    """Issue 26: with a role named like the schema, an earlier `kaja sync` made
    andromeda_ledger* in schema kaja, and `wipe --yes` dropped it CASCADE with
    every machine's rows while `--dry-run` said only "schema kaja". Now the
    wipe drops kaja's own objects by name, --dry-run names each of them, and
    the ledger stays (with the schema holding it), still in use by sync."""
    cloud, laptop = legacy_ledger
    db = cloud.pg
    ledger_rows = count(db, "SELECT count(*) FROM kaja.andromeda_ledger")
    assert ledger_rows > 0
    r = cloud("wipe", "--dry-run", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    server = {p["path"]: p["kind"] for p in doc["paths"] if not p["path"].startswith("/")}
    tables = [t.name for t in pg_schema.CLOUD_TABLES] + ["kaja_schema", "kaja_search_stats",
                                                         "kaja_search_terms"]  # fmt: skip
    assert {p for p, kind in server.items() if kind == "table"} == {f"kaja.{t}" for t in tables}
    assert {p.partition("(")[0] for p, kind in server.items() if kind == "function"} == {
        f"kaja.{f}" for f in ("json_or_text", "search_fold", "search_words", "search_capped",
                              "search_vector", "kaja_search_count_insert",
                              "kaja_search_count_delete", "kaja_search_count_update",
                              "kaja_search_count_truncate", "kaja_search_terms_insert",
                              "kaja_search_terms_update")
    }  # fmt: skip
    assert set(server.values()) == {"table", "function"}  # no schema: it holds the ledger
    kept = {k["path"]: k["reason"] for k in doc["kept"] if not k["path"].startswith("/")}
    assert kept == {
        **{f"kaja.{name}": "the shared usage ledger of `kaja sync`, not the conversation store"
           for name in ("andromeda_ledger", "andromeda_ledger_meta", "andromeda_ledger_seq",
                        "andromeda_origins")},
        "kaja": "the schema stays, holding the 4 things above",
    }  # fmt: skip
    r = cloud("wipe", "--dry-run")
    assert "kaja.sessions\ttable\t" in r.out and "andromeda" not in r.out
    assert "keeping kaja.andromeda_ledger: the shared usage ledger of `kaja sync`" in r.err
    r = cloud("wipe", "--yes")
    assert r.code == 0, r
    assert count(db, "SELECT count(*) FROM kaja.andromeda_ledger") == ledger_rows
    assert count(db, "SELECT count(*) FROM pg_class WHERE relnamespace = 'kaja'::regnamespace"
                     " AND relkind = 'r' AND relname NOT LIKE 'andromeda%'") == 0  # fmt: skip
    assert count(db, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'kaja'::regnamespace") == 0
    # The machines go on syncing with it.
    with Recorder(store_of(laptop)) as rec:
        rec.add_call("run_l1", model="gpt-5", prompt_tokens=1, completion_tokens=1, ok=1)
    r = laptop("sync")
    assert r.code == 0, r
    assert count(db, "SELECT count(*) FROM kaja.andromeda_ledger") == ledger_rows + 1
    # And cloud mode starts again beside it.
    r = cloud(*DEMO)
    assert r.code == 0, r
    assert count(db, "SELECT count(*) FROM kaja.sessions") == 13


def test_a_whole_wipe_refuses_what_uses_kajas_tables_and_keeps_what_is_not_kajas(cloud_demo):
    db = cloud_demo.pg
    with db.connect() as conn:
        conn.execute("CREATE VIEW public.report AS SELECT id FROM kaja.sessions;"
                     " CREATE FUNCTION kaja.theirs() RETURNS int LANGUAGE sql AS 'SELECT 1'")  # fmt: skip
    r = cloud_demo("wipe", "--dry-run", "--json")
    assert r.code == 5
    assert json.loads(r.out)["refused"] == [{
        "path": "public.report", "exit": 5,
        "reason": "view public.report uses kaja.sessions, which the wipe would drop:"
                  " drop or change it first (kaja drops nothing that is not its own)",
    }]  # fmt: skip
    r = cloud_demo("wipe", "--yes")
    assert r.code == 5 and "kaja: view public.report uses kaja.sessions" in r.err, r
    assert count(db, "SELECT count(*) FROM kaja.sessions") == 13
    assert (cloud_demo.state / "files" / "images").is_dir()
    with db.connect() as conn:
        conn.execute("DROP VIEW public.report")
    r = cloud_demo("wipe", "--yes")
    assert r.code == 0, r
    assert "keeping kaja.theirs(): a function that is not Kaja's" in r.err
    assert db.query("SELECT kaja.theirs()") == [(1,)]
    assert count(db, "SELECT count(*) FROM pg_class WHERE relnamespace = 'kaja'::regnamespace") == 0


def test_a_whole_wipe_refuses_a_schema_that_is_not_kajas(cloud):
    with cloud.pg.connect() as conn:
        conn.execute("CREATE SCHEMA kaja; CREATE TABLE kaja.accounts (id int)")
    r = cloud("wipe", "--yes")
    assert r.code == 5 and "is not Kaja's" in r.err
    assert cloud.pg.query("SELECT count(*) FROM kaja.accounts") == [(0,)]


def test_usage_reads_the_servers_ledger_and_reset_is_refused(cloud_demo):
    r = cloud_demo("usage", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["total"]["calls"] == count(cloud_demo.pg, "SELECT count(*) FROM kaja.calls") > 0
    for argv in (["usage", "reset", "--yes"], ["usage", "reset", "--dry-run"]):
        r = cloud_demo(*argv)
        assert r.code == 5 and "usage reset is local" in r.err
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.calls") == doc["total"]["calls"]


def test_a_read_only_role_reads_and_is_refused_writes_in_one_line(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA kaja TO reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA kaja TO reader")
    try:
        url = cloud_demo.pg.url.replace("postgres@", "reader@")
        r = cloud_demo("--database-url", url, "sessions", "--json")
        assert r.code == 0 and json.loads(r.out)["total"] == 7
        assert cloud_demo("--database-url", url, "search", "tomato").code == 0
        r = cloud_demo("--database-url", url, "sessions", "delete", TERMINAL_SESSION, "--yes")
        assert r.code == 1
        assert r.err.count("\n") == 1 and "your role may not do this" in r.err
        assert "permission denied" in r.err
    finally:
        with cloud_demo.pg.connect() as conn:
            conn.execute("DROP OWNED BY reader")
            conn.execute("DROP ROLE reader")


def test_usage_reports_a_schema_without_the_ledger_as_far_as_it_goes(cloud_demo):
    with cloud_demo.pg.connect() as conn:
        conn.execute("DROP TABLE kaja.calls, kaja.tools")
    r = cloud_demo("usage", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["total"]["calls"] == 0 and doc["runs"]
    assert doc["missing"] == ["table calls", "table tools"]


def test_resume_works_in_a_parallel_plan(cloud_demo):
    """A large session's resume can be planned in parallel workers: nothing kaja
    calls there may start a subtransaction (json_or_text is PARALLEL UNSAFE)."""
    version = cloud_demo.pg.query("SELECT current_setting('server_version_num')::int")[0][0]
    setting = "debug_parallel_query" if version >= 160000 else "force_parallel_mode"
    url = cloud_demo.pg.url + f"&options=-c%20{setting}%3Don"
    for argv in (["resume", TERMINAL_SESSION, "--json"], ["search", "--all-owners", "the"],
                 ["sessions", "--all-owners", "--json"]):  # fmt: skip
        r = cloud_demo("--database-url", url, *argv)
        assert r.code == 0, (argv, r)


def test_no_image_folder_is_deleted_through_a_symlink(cloud_demo, tmp_path):
    """Main's rule (core/guard.py) in cloud mode too: the rows go, the folders
    behind a symlinked images/ stay, and the plan says so."""
    import shutil

    images = cloud_demo.state / "files" / "images"
    real = tmp_path / "elsewhere"
    shutil.move(images, real)
    images.symlink_to(real)
    before = sorted(p.relative_to(real) for p in real.rglob("*"))
    assert before
    r = cloud_demo("wipe", "--owner", "terminal", "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["image_folders"] == [] and doc["images_link"] == str(images), doc
    assert sorted(p.relative_to(real) for p in real.rglob("*")) == before
    assert count(cloud_demo.pg, "SELECT count(*) FROM kaja.sessions WHERE owner IS NULL") == 0


def test_a_scaled_up_demo_is_written_in_bulk_on_a_server_too(cloud):
    """`demo --sessions N --messages M` writes its generated rows with
    executemany through the server's connection (the server keeps its indexes)."""
    r = cloud(*DEMO, "--sessions", "20", "--messages", "2000", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["messages"] == 2000
    assert count(cloud.pg, "SELECT count(*) FROM kaja.messages") == 2000
    assert count(cloud.pg, "SELECT count(*) FROM kaja.calls") > 1000
    r = cloud("sessions", "-n", "1", "--all-owners", "--json")
    assert (
        r.code == 0 and json.loads(r.out)["sessions"][0]["updatedAt"] <= "2026-11-29T12:00:00.000Z"
    )
