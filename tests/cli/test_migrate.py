"""`kaja migrate` (core/legacy.py): the legacy per-feature files and the
conversation files, imported into the shared file once, the old files kept.

The legacy files are written with plain SQL from the seed's columns
(tests/support/legacy_support.py), not by kaja."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import only_the_demos_age
from tests.support.faults import changes, kill_at_point
from tests.support.legacy_support import LEGACY, ROWS, build_legacy, build_memory, rows
from tests.support.sessions_support import snapshot


def digests(state: Path) -> dict[str, str]:
    return {n: hashlib.sha256((state / n).read_bytes()).hexdigest() for n in LEGACY}


def count(db: Path, table: str) -> int:
    """Rows of a table (kaja's own `schema:` counters left out)."""
    where = " WHERE name NOT LIKE 'schema:%'" if table == "counters" else ""
    return rows(db, f'SELECT count(*) FROM "{table}"{where}')[0][0]


@pytest.fixture
def legacy(kaja):
    build_legacy(kaja.state)
    build_memory(kaja.state / ".memory")
    return kaja


# --- the per-feature files -----------------------------------------------------------
def test_imports_every_file_keeping_ids_and_the_old_files(legacy):
    before = digests(legacy.state)
    r = legacy("migrate")
    assert r.code == 0, r
    assert r.err.splitlines()[0] == (
        f"kaja: imported 6 legacy files (15 rows) and 3 conversations (5 messages) into"
        f" {legacy.db}; the old files are kept as they are (a rollback copy)"
    )
    for name, tables in ROWS.items():
        for table, n in tables.items():
            assert count(legacy.db, table) == n, (name, table)
    # Ids kept, and the learning tables under their new names.
    assert rows(legacy.db, "SELECT id, parent_id FROM runs ORDER BY id") == [
        ("run_7f3a", None), ("run_91c0", "run_7f3a")
    ]  # fmt: skip
    assert rows(legacy.db, "SELECT id, learned_recipe, trace_run_id FROM experience_runs") == [
        (41, 7, "run_7f3a")
    ]
    assert rows(legacy.db, "SELECT id, task FROM experience_recipes") == [(7, "Screenshot a page")]
    assert rows(legacy.db, "SELECT id, tool_calls, cached_tokens FROM calls ORDER BY id") == [
        (1201, '["spawn_subagent"]', None), (1202, None, None)
    ]  # fmt: skip
    # Each file recorded once; the old files as they were.
    sources = {s for (s,) in rows(legacy.db, "SELECT source FROM kaja_migrations")}
    assert {str(legacy.state / n) for n in LEGACY} <= sources
    assert digests(legacy.state) == before
    again = legacy("migrate")
    assert again.code == 0
    assert again.err.startswith("kaja: nothing to import (9 files imported earlier)")
    assert count(legacy.db, "calls") == 2


def test_the_table_shows_what_goes_where_and_what_is_left_out(legacy):
    r = legacy("migrate", "--dry-run")
    assert r.code == 0, r
    lines = r.out.splitlines()
    usage = legacy.state / "usage.db"
    assert f"file\t{usage}\tcalls\tcalls\t2\t\timport\tlegacy_cost" in lines
    assert f"file\t{legacy.state / 'experience.db'}\truns\texperience_runs\t1\t\timport\t" in lines
    doc = json.loads(legacy("migrate", "--dry-run", "--json").out)
    schedules = next(f for f in doc["files"] if f["path"].endswith("schedules.db"))
    assert schedules["unknown_tables"] == ["schedule_runs"]
    calls = next(t for f in doc["files"] for t in f["tables"] if t["source"] == "calls")
    assert calls == {"source": "calls", "target": "calls", "rows": 2, "copied": None,
                     "columns_left_out": ["legacy_cost"]}  # fmt: skip


def test_dry_run_changes_nothing_and_creates_no_store(legacy):
    before = snapshot(legacy.root)
    r = legacy("migrate", "--dry-run")
    assert r.code == 0, r
    assert r.err.startswith("kaja: dry run: would import 6 legacy files (15 rows) and 3")
    assert snapshot(legacy.root) == before
    assert not legacy.db.exists()


def test_rows_already_there_are_kept_as_they_are(demo_store):
    build_legacy(demo_store.state, ("usage.db",))
    with (
        closing(sqlite3.connect(demo_store.db)) as conn,
        conn,
    ):  # the demo says it imported a usage.db once
        conn.execute("DELETE FROM kaja_migrations")
    with closing(sqlite3.connect(demo_store.state / "usage.db")) as conn, conn:
        # The demo's ledger has calls 1 and 1201 to 1203 (the seed's example ids).
        conn.execute("UPDATE calls SET id = 990001 WHERE id = 1201")
        conn.execute("UPDATE calls SET id = 1, model = 'legacy-model' WHERE id = 1202")
    ours = rows(demo_store.db, "SELECT * FROM calls WHERE id = 1")
    total = count(demo_store.db, "calls")
    r = demo_store("migrate")
    assert r.code == 0, r
    assert rows(demo_store.db, "SELECT * FROM calls WHERE id = 1") == ours
    assert count(demo_store.db, "calls") == total + 1
    assert (
        f"file\t{demo_store.state / 'usage.db'}\tcalls\tcalls\t2\t1\timport\tlegacy_cost" in r.out
    )


def test_artifacts_go_to_a_split_artifacts_file(legacy, tmp_path):
    split = tmp_path / "artifacts-elsewhere.db"
    r = legacy("migrate", env={"KAJA_ARTIFACTS_DB": str(split)})
    assert r.code == 0, r
    assert rows(split, "SELECT id FROM artifacts") == [("a1b2c3",)]
    assert "artifacts" not in {t for (t,) in rows(legacy.db, "SELECT name FROM sqlite_master")}
    assert rows(legacy.db, "SELECT count(*) FROM kaja_migrations WHERE source LIKE '%artifacts.db'")


# --- conversation files ---------------------------------------------------------------
def test_conversation_files_become_sessions_found_by_search(legacy):
    assert legacy("migrate").code == 0
    sessions = rows(
        legacy.db, "SELECT id, owner, title, createdAt, updatedAt FROM sessions ORDER BY id"
    )
    assert sessions[1:] == [
        ("tui-2026-10-15", None, "Open PRs", "2026-10-15T09:00:00.000Z", "2026-10-15T09:00:14.000Z"),
        ("visit", "widget:ab12", None, sessions[2][3], sessions[2][3]),
    ]  # fmt: skip
    assert sessions[0][:3] == ("chat-1", "telegram:482913", None)
    assert rows(legacy.db, "SELECT id, seq, role, content, model FROM messages WHERE sessionId = ?"
                " ORDER BY seq", "tui-2026-10-15") == [
        ("m-1", 1, "user", "Summarize the open PRs and screenshot the PR list", None),
        ("m-2", 2, "assistant", "There are 3 open PRs: the quokka parser, …", "llama3.2:3b"),
    ]  # fmt: skip
    # Unix milliseconds and seconds both read as times.
    assert [t for (t,) in rows(legacy.db, "SELECT createdAt FROM messages WHERE sessionId = 'chat-1'"
                                          " ORDER BY seq")] == [
        "2025-10-15T09:00:00.000Z", "2025-10-15T09:00:05.000Z"]  # fmt: skip
    assert rows(legacy.db, "SELECT resource_id, thread_id, count, title FROM conversation_threads"
                " ORDER BY thread_id") == [
        ("telegram:482913", "chat-1", 2, None), ("terminal", "tui-2026-10-15", 2, "Open PRs"),
        ("widget:ab12", "visit", 1, None)]  # fmt: skip
    hit = json.loads(legacy("search", "quokka", "--json").out)["results"]
    assert [h["session_id"] for h in hit] == ["tui-2026-10-15"]
    assert json.loads(legacy("search", "wombat", "--all-owners", "--json").out)["results"]
    replay = legacy("resume", "tui-2026-10-15")
    assert replay.code == 0 and "quokka parser" in replay.out
    assert legacy("resume", "chat-1").code == 5  # a Telegram user's: another owner's session


def test_a_thread_id_another_owner_has_gets_an_id_of_its_own(legacy):
    build_memory(legacy.state / ".memory", {
        "telegram:771204/threads/tui-2026-10-15.json": [{"role": "user", "content": "dingo"}],
    })  # fmt: skip
    assert legacy("migrate").code == 0
    found = dict(rows(legacy.db, "SELECT owner, id FROM sessions WHERE id = 'tui-2026-10-15'"
                      " OR title = 'Open PRs' OR owner = 'telegram:771204'"))  # fmt: skip
    assert set(found) == {None, "telegram:771204"}
    assert len(set(found.values())) == 2 and "tui-2026-10-15" in found.values()
    other = next(i for i in found.values() if i != "tui-2026-10-15")
    assert len(other) == 36  # made from the resource and thread: the same on every run
    contents = {o: [c for (c,) in rows(legacy.db, "SELECT content FROM messages WHERE sessionId = ?", i)]
                for o, i in found.items()}  # fmt: skip
    assert contents["telegram:771204"] == ["dingo"]
    assert len(contents[None]) == 2


def test_a_broken_conversation_file_is_skipped_until_it_is_fixed(legacy):
    broken = legacy.state / ".memory" / "terminal" / "threads" / "broken.jsonl"
    broken.write_text('{"role": "user", "content": "emu"}\n{not json\n')
    r = legacy("migrate")
    assert r.code == 1, r
    assert (
        f"kaja: skipped {broken}: line 2 is not JSON (Expecting property name enclosed in double quotes)"
        in r.err
    )
    assert not rows(legacy.db, "SELECT 1 FROM sessions WHERE id = 'broken'")
    broken.write_text('{"role": "user", "content": "emu"}\n')
    r = legacy("migrate")
    assert r.code == 0 and r.err.startswith("kaja: imported 1 conversation (1 message)"), r
    assert rows(legacy.db, "SELECT content FROM messages WHERE sessionId = 'broken'") == [("emu",)]


@pytest.mark.process
def test_a_fifo_as_a_threads_meta_file_is_never_opened(legacy):
    thread = legacy.state / ".memory" / "terminal" / "threads" / "piped.json"
    thread.write_text('[{"role": "user", "content": "wombat"}]')
    meta = thread.with_name("piped.meta.json")
    os.mkfifo(meta)  # opened for reading, it would block until a writer came
    r = legacy.proc("migrate", timeout=60)
    assert r.code == 1, r
    assert (
        f"kaja: skipped {thread}: {meta.name} cannot be read: a FIFO, not a regular file\n" in r.err
    )
    assert not rows(legacy.db, "SELECT 1 FROM messages WHERE content = 'wombat'")
    assert count(legacy.db, "messages") == 5  # the other conversations


def test_memory_elsewhere(kaja, tmp_path):
    build_memory(tmp_path / "old-memory")
    r = kaja("migrate", "--memory", str(tmp_path / "old-memory"))
    assert r.code == 0, r
    assert count(kaja.db, "messages") == 5


# --- bad inputs --------------------------------------------------------------------------
def test_nothing_to_import(kaja):
    r = kaja("migrate")
    assert (r.code, r.out) == (0, "")
    assert r.err == (
        f"kaja: nothing to import: no legacy files waiting in {kaja.state} or {kaja.state / '.memory'}\n"
    )
    assert not kaja.state.exists()


@pytest.mark.parametrize("what", ["foreign", "empty", "fifo", "folder"])
def test_a_file_that_is_not_kajas_is_left_alone(legacy, what):
    path = legacy.state / "usage.db"
    path.unlink()
    if what == "foreign":
        path.write_text("root:x:0:0:root:/root:/bin/bash\n")
    elif what == "empty":
        path.write_bytes(b"")
    elif what == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    before = path.read_bytes() if path.is_file() else None
    r = legacy("migrate")
    assert r.code == (1 if what in ("foreign", "empty") else 0), r
    if what in ("foreign", "empty"):
        reason = "not a SQLite file" if what == "foreign" else "empty"
        assert f"kaja: skipped {path}: {reason}: not Kaja's, left as it is\n" in r.err
        assert path.read_bytes() == before
    else:
        assert str(path) not in r.err + r.out  # not a regular file: never opened
    assert count(legacy.db, "calls") == 0
    assert count(legacy.db, "experience_runs") == 1
    assert not rows(legacy.db, "SELECT 1 FROM kaja_migrations WHERE source = ?", str(path))


SKIPPED_LAST = (
    "kaja: 1 file skipped, not imported: fix it or move it aside, then run `kaja migrate` again\n"
)


def _deep_thread(state: Path) -> tuple[Path, callable]:
    path = state / ".memory" / "terminal" / "threads" / "deep.json"
    path.write_text("[" * 1500 + "]" * 1500)  # past Python's recursion limit for json

    def fix() -> None:
        path.write_text('[{"role": "user", "content": "bilby"}]')

    return path, fix


def _text_id(state: Path) -> tuple[Path, callable]:
    path = state / "usage.db"
    with closing(sqlite3.connect(path)) as conn, conn:  # calls.id is kaja's INTEGER PRIMARY KEY
        conn.execute("ALTER TABLE calls RENAME TO calls_old")
        conn.execute("CREATE TABLE calls (id TEXT PRIMARY KEY, at TEXT, model TEXT)")
        conn.execute("INSERT INTO calls SELECT id, at, model FROM calls_old")
        conn.execute("DROP TABLE calls_old")
        conn.execute("INSERT INTO calls VALUES ('call-abc', '2026-10-15T09:00:06Z', 'llama3.2:3b')")
    conn.close()

    def fix() -> None:
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute("DELETE FROM calls WHERE id = 'call-abc'")

    return path, fix


def _wrong_name(state: Path) -> tuple[Path, callable]:
    path = state / "experience.db"  # a copy of usage.db, where experience.db should be
    path.write_bytes((state / "usage.db").read_bytes())

    def fix() -> None:
        path.unlink()
        build_legacy(state, ("experience.db",))

    return path, fix


BAD_FILES = {
    "deep JSON": (_deep_thread, "JSON nested too deeply to read"),
    "a text id in an INTEGER key": (
        _text_id, "calls.id holds 'call-abc', not a whole number: kaja's calls.id is an INTEGER key"
    ),
    "named as the wrong file": (
        _wrong_name,
        "it holds usage.db's tables (calls, counters, events, feedback, runs, tools), not"
        " experience.db's: named as the wrong file?",
    ),
}  # fmt: skip


@pytest.mark.parametrize("bad", BAD_FILES)
def test_one_bad_file_is_skipped_the_rest_imported_and_a_rerun_finishes(legacy, bad):
    make, reason = BAD_FILES[bad]
    path, fix = make(legacy.state)
    dry = legacy("migrate", "--dry-run")
    assert dry.code == 1, dry
    assert f"kaja: skipped {path}: {reason}\n" in dry.err
    assert dry.err.endswith(
        "kaja: 1 file skipped, would not be imported: fix it or move it aside, then run"
        " `kaja migrate` again\n"
    )
    r = legacy("migrate")
    assert r.code == 1, r
    assert f"kaja: skipped {path}: {reason}\n" in r.err and r.err.endswith(SKIPPED_LAST)
    assert r.err.startswith("kaja: imported ")
    sources = {s for (s,) in rows(legacy.db, "SELECT source FROM kaja_migrations")}
    others = 9 - (path.suffix == ".db")  # 6 legacy files and 3 threads, and a 4th thread
    assert str(path) not in sources and len(sources) == others
    assert count(legacy.db, "schedules") == 1 and count(legacy.db, "messages") >= 5
    doc = json.loads(legacy("migrate", "--json").out)
    skipped = [f for f in doc["files"] + doc["conversations"] if f["status"] == "skipped"]
    assert [(f["path"], f["reason"]) for f in skipped] == [(str(path), reason)]
    fix()
    again = legacy("migrate")
    assert again.code == 0, again
    assert again.err.startswith("kaja: imported 1 "), again
    assert legacy("migrate").err.startswith(
        f"kaja: nothing to import ({others + 1} files imported earlier)"
    )


def test_a_thread_named_too_long_for_its_meta_file_is_imported(legacy):
    name = "t" * 250  # 255 bytes with ".json": "<name>.meta.json" can't exist
    thread = legacy.state / ".memory" / "terminal" / "threads" / f"{name}.json"
    thread.write_text('[{"role": "user", "content": "quokka burrow"}]')
    r = legacy("migrate")
    assert r.code == 0, r
    assert rows(legacy.db, "SELECT s.owner FROM messages m JOIN sessions s ON s.id = m.sessionId"
                " WHERE m.content = 'quokka burrow'") == [(None,)]  # fmt: skip
    assert rows(legacy.db, "SELECT 1 FROM kaja_migrations WHERE source = ?", str(thread))


def test_a_file_the_copy_refuses_is_rolled_back_alone(legacy, monkeypatch):
    """Changed between the plan and the copy (an old agent still writing it): the
    copy's own fault rolls back that file alone, which is skipped, not recorded."""
    from kaja_cli.core.care import legacy as core

    usage = legacy.state / "usage.db"
    with closing(sqlite3.connect(usage)) as conn, conn:  # ids as text: '77' fits an INTEGER key
        conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, at TEXT, tool TEXT)")
        conn.execute("INSERT INTO t SELECT CAST(id AS TEXT), at, tool FROM tools")
        conn.execute("DROP TABLE tools")
        conn.execute("ALTER TABLE t RENAME TO tools")
    execute = core.execute

    def changed_meanwhile(store, plan, **kw):
        with closing(sqlite3.connect(usage)) as conn, conn:
            conn.execute("UPDATE tools SET id = 'tool-78' WHERE id = '78'")
        return execute(store, plan, **kw)

    monkeypatch.setattr(core, "execute", changed_meanwhile)
    r = legacy("migrate")
    assert r.code == 1, r
    assert f"kaja: skipped {usage}: its rows don't fit kaja's tables: datatype mismatch\n" in r.err
    assert r.err.endswith(SKIPPED_LAST)
    assert count(legacy.db, "calls") == count(legacy.db, "tools") == count(legacy.db, "runs") == 0
    assert count(legacy.db, "experience_runs") == 1 and count(legacy.db, "messages") == 5
    assert not rows(legacy.db, "SELECT 1 FROM kaja_migrations WHERE source = ?", str(usage))


def test_busy_store_imports_nothing(legacy):
    conn = sqlite3.connect(legacy.db)  # a store of Kaja's, empty, the agent holds for writing
    conn.execute("CREATE TABLE kaja_migrations (source TEXT PRIMARY KEY, migrated_at TEXT)")
    conn.commit()
    conn.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(legacy.db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        r = legacy.proc("migrate", env={"KAJA_DEBUG": None})
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 4, r
    assert r.err.startswith(f"kaja: {legacy.db} is busy") and r.err.count("\n") == 1
    r = legacy("migrate")
    assert r.code == 0, r
    assert count(legacy.db, "calls") == 2


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(120)
"""


def test_killed_before_its_commit_the_next_migrate_completes(legacy, tmp_path):
    def before_the_commit_frame(events: list[dict]) -> int:
        # The import is the last transaction on kaja.db: its last -wal write is the commit.
        return max(n for n, e in changes(events)
                   if e["kind"].startswith(("write", "pwrite")) and e["path"] == f"{legacy.db}-wal")  # fmt: skip

    killed = kill_at_point(legacy, tmp_path, ["migrate"], before_the_commit_frame)
    assert killed.hit is not None and killed.hit.path == f"{legacy.db}-wal"
    assert rows(legacy.db, "PRAGMA integrity_check") == [("ok",)]
    assert count(legacy.db, "kaja_migrations") == 0 and count(legacy.db, "calls") == 0
    r = legacy("migrate")
    assert r.code == 0, r
    assert r.err.startswith("kaja: imported 6 legacy files (15 rows) and 3 conversations")
    assert count(legacy.db, "calls") == 2 and count(legacy.db, "messages") == 5


# --- doctor and the demo -------------------------------------------------------------------
def test_doctor_says_what_waits_and_points_at_migrate(legacy):
    def checks() -> dict:
        doc = json.loads(legacy("doctor", "--check", "legacy-files", "--json").out)
        return {c["id"]: c for c in doc["checks"]}

    before = checks()
    assert before["legacy-files.usage"]["status"] == "warn"
    assert before["legacy-files.usage"]["fix"] == "kaja migrate"
    assert before["legacy-files.conversations"]["summary"].endswith(
        "3 of 3 conversation files not imported"
    )
    assert legacy("migrate").code == 0
    after = checks()
    assert {c["status"] for c in after.values()} == {"ok"}
    assert after["legacy-files.usage"]["summary"].startswith("usage.db (")


def test_demo_legacy_writes_files_migrate_imports(kaja):
    r = kaja("demo", "--seed", "1", "--now", "2026-11-29T12:00:00Z", "--legacy")
    assert r.code == 0, r
    assert "legacy files of an older install" in r.err
    doctor = kaja("doctor", "--check", "legacy-files")
    assert doctor.code == 0 and "kaja migrate" in doctor.out
    r = kaja("migrate")
    assert r.code == 0, r
    assert r.err.startswith("kaja: imported 6 legacy files")
    assert only_the_demos_age(kaja("doctor").out)  # a demo from the past: its agent stopped then
    assert kaja("search", "allotment", "--json").code == 0
    again = kaja("demo", "--legacy", env={"KAJA_STATE_DIR": str(kaja.root / "other")})
    assert again.code == 0
    build_legacy(kaja.root / "third", ("usage.db",))
    refused = kaja("demo", "--legacy", env={"KAJA_STATE_DIR": str(kaja.root / "third")})
    assert refused.code == 5 and "usage.db" in refused.err
