"""`kaja optimize` (core/optimize.py, commands/optimize.py).

Through the real command: the search index merged (into one segment when
nothing else has the file open, in short steps beside a running Kaja),
ANALYZE, the -wal emptied, VACUUM only on request and only with the file to
itself (exit 4 otherwise, nothing done), sizes before and after, another
program's database refused, a lock held too long (exit 4), and a loop of
optimizes beside a live writer that loses nothing.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cli.test_wipe import holding, listing
from tests.conftest import Kaja
from tests.support.faults import assert_store_sound

AGENTS = Path(__file__).parents[1] / "support" / "agents"
DATABASES = ("kaja.db", "cache.db", "db-stats.db", "web-auth.db")


def add_messages(db: Path, n: int, word: str = "quinoabrisket") -> None:
    """`n` messages, each its own transaction: the index grows a segment each time."""
    conn = sqlite3.connect(db, isolation_level=None)
    sid = conn.execute("SELECT id FROM sessions WHERE owner IS NULL LIMIT 1").fetchone()[0]
    for i in range(n):
        conn.execute(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, ?, ?, 'user', ?, '2026-11-29T12:00:00.000Z')",
            (str(uuid.uuid4()), sid, 1000 + i, f"{word} number {i}"),
        )
    conn.close()


def segments(db: Path) -> int:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM conversation_text_segdir").fetchone()[0]
    finally:
        conn.close()


def has_stats(db: Path) -> bool:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return bool(
            conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()
        )
    finally:
        conn.close()


def optimize(kaja: Kaja, *args: str) -> dict:
    r = kaja("optimize", "--json", *args)
    assert r.code == 0, r
    return json.loads(r.out)


def test_optimize_merges_the_index_analyzes_and_empties_the_wal(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 40)
    assert segments(kaja.db) > 1
    doc = optimize(kaja)
    assert doc["action"] == "optimize" and doc["vacuum"] is False
    by_name = {d["name"]: d for d in doc["databases"]}
    assert list(by_name) == ["shared", "cache", "stats", "auth"]
    shared = by_name["shared"]
    index = shared["search_index"]
    # merged into one: by FTS4's merge steps, or one 'optimize' if levels were left
    assert index["segments_before"] > 1 and index["segments_after"] == 1
    assert segments(kaja.db) == 1
    for d in doc["databases"]:
        assert d["analyzed"] and d["checkpointed"] and d["wal_bytes"] == 0 and not d["vacuumed"]
        assert d["bytes_after"] == Path(d["path"]).stat().st_size
    for name in DATABASES:
        assert has_stats(kaja.state / name), name
        wal = kaja.state / f"{name}-wal"
        assert not wal.exists() or wal.stat().st_size == 0
    assert doc["bytes_before"] == sum(d["bytes_before"] for d in doc["databases"])
    assert_store_sound(kaja.state)
    r = kaja("search", "quinoabrisket", "--limit", "0", "--json")
    assert len(json.loads(r.out)["results"]) == 40
    # One new segment on level 0 beside the merged one: FTS4's merge steps leave
    # segments of different levels alone; 'optimize' makes them one.
    add_messages(kaja.db, 1, word="okraveldt")
    assert segments(kaja.db) == 2
    index = optimize(kaja)["databases"][0]["search_index"]
    assert index == {"segments_before": 2, "segments_after": 1, "merge_steps": 1, "optimized": True}
    r = kaja("search", "okraveldt", "--json")
    assert len(json.loads(r.out)["results"]) == 1


def test_piped_output_is_one_row_per_database_and_notes_on_stderr(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 20)
    r = kaja("optimize")
    assert r.code == 0, r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert [row[0] for row in rows] == ["shared", "cache", "stats", "auth"]
    assert rows[0][1] == str(kaja.db) and all(v.isdigit() for v in rows[0][2:])
    assert int(rows[0][3]) == kaja.db.stat().st_size
    assert "kaja: kaja.db: search index merged in " in r.err and " segments → 1\n" in r.err
    assert r.err.splitlines()[-1].startswith(
        "kaja: optimized 4 databases (search index, ANALYZE, checkpoint): "
    )


def test_a_second_run_has_nothing_to_do_and_changes_no_byte(demo_store: Kaja):
    kaja = demo_store
    first = kaja("optimize")
    assert first.code == 0, first
    # Why the first run grows the files: said, with the free space it leaves inside them.
    assert "kaja: the files grew: new statistics, and the merged index written before" in first.err
    files = {name: (kaja.state / name).read_bytes() for name in DATABASES}
    stamps = {name: (kaja.state / name).stat().st_mtime_ns for name in DATABASES}
    r = kaja("optimize")
    assert r.code == 0, r
    assert r.err == (
        "kaja: nothing to do: 4 databases already optimized (the search index in one segment,"
        " the statistics current, no -wal to fold in); no file was changed\n"
    )
    assert {name: (kaja.state / name).read_bytes() for name in DATABASES} == files
    assert {name: (kaja.state / name).stat().st_mtime_ns for name in DATABASES} == stamps
    doc = optimize(kaja)
    assert doc["changed"] is False and doc["bytes_before"] == doc["bytes_after"]
    assert [(d["analyzed"], d["search_index"]) for d in doc["databases"]] == [
        (False, {"segments_before": 1, "segments_after": 1, "merge_steps": 0, "optimized": False}),
        (False, None), (False, None), (False, None),
    ]  # fmt: skip
    assert {name: (kaja.state / name).read_bytes() for name in DATABASES} == files
    # A new message is something to do again: indexed into a segment of its own, merged.
    add_messages(kaja.db, 1, word="wallabyjam")
    doc = optimize(kaja)
    assert doc["changed"] is True and doc["databases"][0]["search_index"]["optimized"] is True


def test_vacuum_gives_free_pages_back_and_search_still_finds(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 300, word="x" * 20 + " lentilharbor")
    conn = sqlite3.connect(kaja.db, isolation_level=None)
    conn.execute("DELETE FROM messages WHERE content LIKE '% number 1%'")  # 111 of them
    conn.close()
    doc = optimize(kaja, "--vacuum")
    shared = doc["databases"][0]
    assert shared["vacuumed"] and shared["search_index_after_vacuum"] in ("checked", "rebuilt")
    assert shared["bytes_after"] < shared["bytes_before"]
    conn = sqlite3.connect(f"{kaja.db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    conn.close()
    assert_store_sound(kaja.state)
    r = kaja("search", "lentilharbor", "--limit", "0", "--json")
    assert len(json.loads(r.out)["results"]) == 300 - 111
    r = kaja("optimize", "--vacuum")
    assert r.code == 0 and "VACUUM" in r.err, r


@pytest.mark.process  # the test process holds the store open
def test_vacuum_while_kaja_runs_is_exit_4_and_nothing_is_done(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 20)
    with holding(kaja.db, "idle"):
        before = listing(kaja.state)
        r = kaja("optimize", "--vacuum")
        assert listing(kaja.state) == before
    assert r.code == 4 and "needs the file to itself" in r.err and r.err.count("\n") == 1, r
    assert not has_stats(kaja.db) and segments(kaja.db) > 1


@pytest.mark.process  # the test process holds the store open
def test_beside_a_running_kaja_the_index_is_merged_in_short_steps(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 40)
    with holding(kaja.db, "idle"):
        r = kaja("optimize", "--json")
    assert r.code == 0, r
    index = json.loads(r.out)["databases"][0]["search_index"]
    assert index["optimized"] is False and index["merge_steps"] >= 1
    assert index["segments_after"] < index["segments_before"]
    assert has_stats(kaja.db)
    assert_store_sound(kaja.state)


@pytest.mark.process  # the test process holds the store open
def test_a_write_lock_held_past_the_busy_timeout_is_exit_4(demo_store: Kaja):
    kaja = demo_store
    add_messages(kaja.db, 20)
    with holding(kaja.db, "write"):
        r = kaja("optimize")
    assert r.code == 4 and "stayed busy" in r.err and r.err.count("\n") == 1, r
    assert_store_sound(kaja.state)


def test_another_programs_database_is_refused_before_anything_is_done(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    (kaja.state / "cache.db").unlink()
    conn = sqlite3.connect(kaja.state / "cache.db")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    before = listing(kaja.state)
    r = kaja("optimize")
    assert r.code == 5 and "not Kaja's cache.db" in r.err, r
    assert listing(kaja.state) == before
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE runs (id TEXT)")
    conn.close()
    r = kaja("--db", str(foreign), "optimize")
    assert r.code == 5 and "not Kaja's shared file" in r.err, r


def test_no_store_is_exit_3(kaja: Kaja):
    r = kaja("optimize")
    assert r.code == 3 and "no Kaja store" in r.err, r
    assert not kaja.state.exists()


@pytest.mark.process  # kaja as one more process beside the writer
def test_optimize_beside_a_live_writer_loses_nothing(demo_store: Kaja):
    kaja = demo_store
    env = dict(kaja.env, PYTHONPATH=str(Path(__file__).parents[2]))
    agent = subprocess.Popen(
        [sys.executable, str(AGENTS / "kaja_agent.py"), "--owner", "telegram:999", "--seconds", "300",
         "--long-every", "15"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert agent.stdout is not None and agent.stdout.readline().strip() == "ready"
    runs, until = 0, time.monotonic() + 5
    try:  # at least 3 runs and 5 s of writes, however slow the machine
        while runs < 3 or time.monotonic() < until:
            r = kaja("optimize")
            assert r.code == 0, r  # short steps: the agent's 300 ms transactions never stop it
            runs += 1
            assert agent.poll() is None, "the agent stopped first"
    finally:
        agent.terminate()  # it finishes its turn and says what it committed
        out, _ = agent.communicate(timeout=60)
    committed = json.loads(out.strip().splitlines()[-1])
    assert runs >= 3
    conn = sqlite3.connect(kaja.db)
    owned = "SELECT id FROM sessions WHERE owner = 'telegram:999'"
    assert (
        conn.execute(f"SELECT count(*) FROM messages WHERE sessionId IN ({owned})").fetchone()[0]
        == committed["messages"]
    )
    conn.close()
    assert_store_sound(kaja.state)
    r = kaja("search", "zanzibarite", "--owner", "telegram:999", "--limit", "0", "--json")
    assert len(json.loads(r.out)["results"]) == committed["messages"]
