"""core/schema.py: a blank store has exactly the seeds' tables and columns, and
the schema evolves the seed's way (create if missing, add missing columns)."""

from __future__ import annotations

import sqlite3
import subprocess
from contextlib import closing

import pytest

# Copied by hand from the seeds (../shared/seeds), not from schema.py: the
# column names are a public contract that the agent writes too.
SEED_COLUMNS = {
    # kaja-local-storage.txt, the ER diagram
    "notes": "owner key content importance tags sticky createdAt lastUsedAt useCount",
    "sessions": "id createdAt updatedAt persona model title owner systemPrompt pendingCallId pendingKind",
    "messages": "id sessionId seq role content parts reasoning toolCallId persona model promptTokens "
    "completionTokens latencyMs finishReason createdAt",
    "tool_calls": "id messageId position callId name arguments resultMessageId status durationMs approval "
    "resultSummary",
    "session_summaries": "sessionId summaryFrom summary createdAt",
    "model_calls": "sessionId kind model promptTokens completionTokens latencyMs createdAt",
    "session_events": "sessionId seq type payload",
    "dataset_answers": "topic owner version field value answeredAt",
    "dataset_versions": "topic owner version completedAt",
    # andromeda-database.txt: the usage ledger
    "runs": "id parent_id agent source thread_id prompt started_at ended_at status error result pid host",
    "calls": "id run_id at engine model role source kind prompt_tokens completion_tokens cached_tokens "
    "cache_source duration_ms gen_ms prompt_ms ttft_ms load_ms tool_calls think purpose ok error",
    "tools": "id run_id at tool outcome duration_ms arguments result_chars preview error",
    "events": "id run_id event_id at type attributes",
    "logs": "id at level message entity_type entity_name process run_id data",
    "media": "id run_id at kind engine model source channel duration_ms first_ms audio_ms chars outcome "
    "error cold details",
    "feedback": "id run_id span_id at agent source type value_num value_text comment user_id tags",
    "reviews": "run_id status tags reason note flagged_at reviewed_at updated_at",
    "cache_stats": "minute cache hits misses saved_ms load_ms",
    "counters": "name value",
    # learning
    "experience_runs": "id created_at resource_id thread_id prompt steps output model_calls tool_calls "
    "tool_errors duration used_recipes learned_recipe feedback trace_run_id",
    "experience_recipes": "id created_at updated_at task steps source embedding prompt prompt_embedding "
    "uses wins losses",
    "experience_tool_fixes": "id scope tool error_key created_at updated_at error failed fixed hits",
    # services
    "background_tasks": "id agent_id tool_name arguments status result error attempts max_retries "
    "timeout_seconds thread_id resource_id checkpoint notify notified created_at updated_at started_at "
    "completed_at",
    "schedules": "id agent_id cron prompt name timezone thread_id resource_id metadata status next_run_at "
    "last_run_at created_at updated_at",
    "triggers": "id agent_id name kind prompt config status secret state next_check_at last_fired_at "
    "last_error recent_fires created_at updated_at",
    # search, artifacts, bookkeeping
    "conversation_threads": "resource_id thread_id count title",
    "artifacts": "id kind source title text fingerprint path created_at",
    "kaja_migrations": "source migrated_at",
    "sync_outbox": "seq tbl key op at",
    "sync_map": "origin tbl key local_id seq",
    "sync_state": "name value updated_at",
    "sync_flags": "name value",
    # kaja's own (issue 19): archive state, kept out of the agent's `sessions`
    "kaja_archived": "sessionId archivedAt",
}
SIDE_COLUMNS = {
    "cache.db": {"shared_cache": "namespace key value expires_at last_access"},
    "db-stats.db": {
        "db_query_stats": "bucket pid db sql calls total_ms max_ms rows errors process",
        "db_slow_queries": "id at pid process db sql duration_ms rows",
    },
    "web-auth.db": {
        "web_users": "id username display_name password_hash salt role active created_at",
        "web_sessions": "token_hash user_id expires_at created_at",
        "web_auth_meta": "key value",
    },
}
SEED_INDEXES = (
    "calls_at logs_at media_at feedback_at runs_started calls_run tools_run logs_run media_run "
    "feedback_run runs_parent reviews_status schedules_due triggers_due background_tasks_status "
    "artifacts_source"
).split()


def _columns(db, table):
    with closing(sqlite3.connect(db)) as c, c:
        return [r[1] for r in c.execute(f'PRAGMA table_info("{table}")')]


def _tables(db):
    with closing(sqlite3.connect(db)) as c, c:
        return {
            r[0]
            for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith(("sqlite_", "conversation_text_"))
        }


@pytest.fixture
def blank(kaja):
    """A store created by kaja's write API with nothing in it."""
    code = (
        "from kaja_cli.core.store import Store\n"
        "from kaja_cli.core.conversations.record import Recorder\n"
        "with Recorder(Store.locate()) as rec:\n"
        "    for name in ('shared', 'cache', 'stats', 'auth'):\n"
        "        rec.conn(name)\n"
    )
    subprocess.run([_python(), "-c", code], env=kaja.env, check=True)
    return kaja


def _python():
    import sys

    return sys.executable


def test_blank_store_has_the_seeds_tables_and_columns(blank):
    tables = _tables(blank.db)
    assert tables == set(SEED_COLUMNS) | {"conversation_text"}
    for table, columns in SEED_COLUMNS.items():
        assert _columns(blank.db, table) == columns.split(), table


def test_blank_side_databases_have_the_seeds_columns(blank):
    for name, tables in SIDE_COLUMNS.items():
        db = blank.state / name
        assert _tables(db) == set(tables)
        for table, columns in tables.items():
            assert _columns(db, table) == columns.split(), table


def test_blank_store_has_the_seeds_indexes_and_the_fts4_index(blank):
    with closing(sqlite3.connect(blank.db)) as c, c:
        indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        sql = c.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'conversation_text'"
        ).fetchone()[0]
        triggers = {
            r[0]: r[1]
            for r in c.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        }
    assert set(SEED_INDEXES) <= indexes
    assert "fts4" in sql and 'content="messages"' in sql and "remove_diacritics=2" in sql
    # FTS4 reads the old text to unindex it: delete and update must run BEFORE.
    assert "BEFORE DELETE" in triggers["messages_fts_bd"]
    assert "BEFORE UPDATE" in triggers["messages_fts_bu"]


def test_web_sessions_cascade_is_the_only_enforced_foreign_key(blank):
    with closing(sqlite3.connect(blank.state / "web-auth.db")) as c, c:
        fks = c.execute("PRAGMA foreign_key_list(web_sessions)").fetchall()
    assert [(f[2], f[3], f[4], f[6]) for f in fks] == [("web_users", "user_id", "id", "CASCADE")]
    with closing(sqlite3.connect(blank.db)) as c, c:
        for table in SEED_COLUMNS:
            assert c.execute(f"PRAGMA foreign_key_list({table})").fetchall() == [], table


def test_an_older_file_gains_missing_columns_and_keeps_its_rows(kaja):
    kaja.state.mkdir(parents=True)
    with closing(sqlite3.connect(kaja.db)) as c, c:
        # An older agent: no reasoning/finishReason columns, an extra column of its own.
        c.execute(
            "CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, seq INTEGER, role, content, legacy)"
        )
        c.execute("INSERT INTO messages VALUES ('m1', 's1', 1, 'user', 'hello from before', 'x')")
        c.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, title)")
        c.execute("INSERT INTO sessions VALUES ('s1', 'Old one')")
    r = kaja("demo")  # refuses an existing store: nothing is touched
    assert r.code == 5
    assert _columns(kaja.db, "messages") == ["id", "sessionId", "seq", "role", "content", "legacy"]

    code = "from kaja_cli.core.store import Store\nwith Store.locate().writer(): pass\n"
    subprocess.run([_python(), "-c", code], env=kaja.env, check=True)
    cols = _columns(kaja.db, "messages")
    assert cols[:6] == ["id", "sessionId", "seq", "role", "content", "legacy"]
    assert set(SEED_COLUMNS["messages"].split()) <= set(cols)
    with closing(sqlite3.connect(kaja.db)) as c, c:
        assert c.execute("SELECT content, legacy FROM messages").fetchall() == [
            ("hello from before", "x")
        ]
        # the index was built for the message written before it existed
        hits = c.execute(
            "SELECT rowid FROM conversation_text WHERE conversation_text MATCH 'before'"
        )
        assert len(hits.fetchall()) == 1


def test_applying_twice_changes_nothing(blank):
    before = blank.db.read_bytes()
    code = "from kaja_cli.core.store import Store\nwith Store.locate().writer(): pass\n"
    subprocess.run([_python(), "-c", code], env=blank.env, check=True)
    assert blank.db.read_bytes() == before


def test_a_virtual_table_of_an_unknown_module_stops_nothing(demo_store):
    """A newer agent's table SQLite here cannot load (sqlite-vec's vec0): kaja
    still reads, writes and checks the file."""
    c = sqlite3.connect(demo_store.db)
    c.execute("PRAGMA writable_schema = ON")
    c.execute(
        "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES"
        " ('table', 'vec_notes', 'vec_notes', 0, 'CREATE VIRTUAL TABLE vec_notes USING vec0(embedding float[4])')"
    )
    c.commit()
    c.close()
    for argv in (
        ["usage", "--json"],
        ["sessions", "--all-owners"],
        ["search", "tomato"],
        ["doctor", "--json"],
    ):
        r = demo_store(*argv)
        assert r.code in (0, 1) if argv[0] == "doctor" else r.code == 0, (argv, r)
        assert "no such module" not in r.err, (argv, r)
    sid = (
        sqlite3.connect(demo_store.db)
        .execute("SELECT id FROM sessions WHERE owner IS NULL LIMIT 1")
        .fetchone()[0]
    )
    r = demo_store(
        "sessions", "delete", sid, "--yes"
    )  # a writer: brings the schema up to date first
    assert r.code == 0, r
    assert demo_store("usage", "reset", "--yes").code == 0


def test_replace_through_kaja_keeps_the_search_index_in_step(demo_store):
    """REPLACE deletes the row it replaces; kaja's connections let triggers
    recurse so the index forgets the old text too."""
    from tests.support.faults import integrity

    code = (
        "from kaja_cli.core.store import Store\n"
        "from kaja_cli.core.engine import db\n"
        "with Store.locate().writer() as c, db.transaction(c):\n"
        "    row = c.execute(\"SELECT id, sessionId, seq FROM messages WHERE content LIKE '%crème brûlée%' LIMIT 1\").fetchone()\n"
        "    c.execute(\"INSERT OR REPLACE INTO messages (id, sessionId, seq, role, content) VALUES (?, ?, ?, 'user', 'rewritten')\", row)\n"
    )
    subprocess.run([_python(), "-c", code], env=demo_store.env, check=True)
    assert integrity(demo_store.db) == "ok"


def test_the_file_records_which_kaja_brought_it_up_to_date(blank):
    from kaja_cli import __version__

    c = sqlite3.connect(blank.db)
    value = c.execute("SELECT value FROM counters WHERE name = 'schema:upgraded'").fetchone()[0]
    c.close()
    assert value.startswith(f"kaja {__version__}: ") and value.endswith(" changes")
