"""`kaja sessions prune` (core/prune.py, commands/prune.py), through the real
command: the plan, --dry-run, --yes, --json, pending calls, image folders and
symbolic links, kill -9 before and after a batch's commit, and a prune beside
a running agent (tests/support/agents/kaja_agent.py)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import KAJA
from tests.support import paused
from tests.support.faults import assert_store_sound
from tests.support.sessions_support import ANA, BACKUP, BUDGET, PRS, RECEIPT, TOMATO, run_in_pty

AGENTS = Path(__file__).parents[1] / "support" / "agents"
OLD = ["--before", "2026-11-28T12:00:00Z"]  # the terminal's 3 oldest sessions
OLD_IDS = ["01a22161-fe80-791d-9d5f-576cdeb8fc4c", "01a21c62-1640-7aca-92c9-357d34accd78", BUDGET]


def session_ids(kaja) -> set[str]:
    conn = sqlite3.connect(kaja.db)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


def count(kaja, sql: str, *args) -> int:
    conn = sqlite3.connect(kaja.db)
    try:
        return conn.execute(sql, args).fetchone()[0]
    finally:
        conn.close()


def images(kaja) -> list[str]:
    folder = kaja.state / "files" / "images"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def test_without_a_filter_it_refuses(demo_store):
    for argv in ([], ["--all-owners"], ["--owner", ANA]):
        r = demo_store("sessions", "prune", "--yes", *argv)
        assert r.code == 2, r
        assert r.err.startswith("kaja: say which sessions to prune")
    assert len(session_ids(demo_store)) == 13


def test_dry_run_shows_the_plan_and_deletes_nothing(demo_store):
    before = session_ids(demo_store)
    r = demo_store("sessions", "prune", *OLD, "--dry-run")
    assert r.code == 0, r
    # piped: every planned session, oldest first, tab-separated
    assert [line.split("\t")[0] for line in r.out.splitlines()] == OLD_IDS[::-1]
    assert r.out.splitlines()[0] == (
        f"{BUDGET}\t2026-11-26T03:07:21.494Z\tQuarterly budget review\t14"
    )
    assert r.err == (
        "kaja: will delete 3 sessions (43 messages, 10 tool calls, 2 summaries, 4 model calls,"
        " 47 events; 22.9 kB of text)\nkaja: dry run: nothing was deleted\n"
    )
    assert session_ids(demo_store) == before


def test_what_it_deletes_is_what_the_listing_shows(demo_store):
    listed = demo_store("sessions", "list", "--all-owners", "--max-messages", "6", "-n", "0")
    want = {line.split("\t")[0] for line in listed.out.splitlines()}
    assert len(want) == 9
    r = demo_store("sessions", "prune", "--all-owners", "--max-messages", "6", "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert {s["id"] for s in doc["sessions"]} == want
    assert doc["done"] and doc["deleted"] == 9 and doc["skipped"] == 0 and doc["batches"] == 1
    assert doc["deleted_rows"]["sessions"] == 9 == doc["rows"]["sessions"]
    assert session_ids(demo_store).isdisjoint(want) and len(session_ids(demo_store)) == 4
    assert (
        count(
            demo_store,
            "SELECT count(*) FROM messages WHERE sessionId NOT IN (SELECT id FROM sessions)",
        )
        == 0
    )
    # their image folders went, after the commit; the search index forgot them
    assert PRS not in images(demo_store) and RECEIPT not in images(demo_store)
    assert doc["image_folders_removed"] == 2
    assert demo_store("search", "screenshot", "--all-owners").out == ""
    assert_store_sound(demo_store.state)


def test_on_a_terminal_it_shows_a_sample_and_asks(demo_store):
    argv = [KAJA, "sessions", "prune", "--all-owners", "--before", "2026-11-29T06:00:00Z"]
    code, screen = run_in_pty(argv, demo_store.env, answer="n")
    assert code == 1, screen
    flat = " ".join(screen.split())
    # the oldest three and the newest two of the ten, with how many between them
    assert flat.count("2026-11-2") >= 5 and "… and 5 more sessions between them" in flat
    assert "will delete 10 sessions (" in flat
    assert "Delete these 10 sessions? This cannot be undone. [y/n] (n):" in flat
    assert "cancelled: nothing was changed" in flat
    assert len(session_ids(demo_store)) == 13
    code, screen = run_in_pty(argv, demo_store.env, answer="y")
    assert code == 0, screen
    assert "deleted 10 sessions (" in " ".join(screen.split())
    assert len(session_ids(demo_store)) == 3


def test_without_a_terminal_and_yes_it_refuses(demo_store):
    r = demo_store("sessions", "prune", *OLD)
    assert r.code == 5 and "rerun with --yes" in r.err
    assert len(session_ids(demo_store)) == 13


def test_a_call_waiting_on_you_is_kept_unless_include_pending(demo_store):
    r = demo_store("sessions", "prune", "--title", "*backup*", "--yes")
    assert r.code == 0, r
    assert r.err == (
        "kaja: nothing to prune: no session matches the filters\n"
        "kaja: 1 session with a call waiting on you kept (--include-pending deletes them)\n"
    )
    assert BACKUP in session_ids(demo_store)
    r = demo_store("sessions", "prune", "--title", "*backup*", "--include-pending", "--yes")
    assert r.code == 0, r
    assert BACKUP not in session_ids(demo_store)


def test_archived_sessions_are_pruned_only_when_asked(demo_store):
    assert demo_store("sessions", "archive", BUDGET).code == 0
    r = demo_store("sessions", "prune", *OLD, "--yes", "--json")
    assert BUDGET not in {s["id"] for s in json.loads(r.out)["sessions"]}
    assert BUDGET in session_ids(demo_store)
    r = demo_store("sessions", "prune", "--archived", "--yes")
    assert r.code == 0, r
    assert BUDGET not in session_ids(demo_store)
    assert count(demo_store, "SELECT count(*) FROM kaja_archived") == 0


def test_a_linked_session_folder_loses_the_link_only(demo_store, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.png").write_bytes(b"precious")
    folder = demo_store.state / "files" / "images" / BUDGET
    folder.symlink_to(target)
    r = demo_store("sessions", "prune", *OLD, "--yes")
    assert r.code == 0, r
    assert not os.path.lexists(folder)
    assert (target / "keep.png").read_bytes() == b"precious"


def test_under_a_linked_files_folder_nothing_is_deleted_through_it(demo_store, tmp_path):
    files = demo_store.state / "files"
    moved = tmp_path / "other-disk-files"
    files.rename(moved)
    files.symlink_to(moved)
    r = demo_store("sessions", "prune", "--title", "Open PRs*", "--yes")
    assert r.code == 0, r
    assert PRS not in session_ids(demo_store)
    assert (moved / "images" / PRS).is_dir()  # kept, and said so
    assert f"kept {files / 'images' / PRS}: {files} is a symbolic link" in r.err


def test_missing_store_prunes_nothing(kaja):
    r = kaja("sessions", "prune", "--empty", "--yes")
    assert r.code == 0
    assert r.err.startswith("kaja: nothing to prune: there is no Kaja store at")
    assert not kaja.db.exists()


# --- interrupted ------------------------------------------------------------------------
def killed_at(kaja, step: str, *args: str) -> int:
    """`kaja sessions prune --yes ARGS`, killed with SIGKILL at `step`."""
    return paused.killed_at(kaja, step, "sessions", "prune", "--yes", *args).returncode


@pytest.mark.process
def test_killed_before_the_commit_deletes_nothing(demo_store):
    kaja = demo_store
    before, folders = session_ids(kaja), images(kaja)
    assert killed_at(kaja, "prune-commit", "--title", "Open PRs*") == -signal.SIGKILL
    assert session_ids(kaja) == before and images(kaja) == folders
    assert_store_sound(kaja.state)
    # the marker written before the commit lists a folder whose session lives: it stays
    r = kaja("sessions", "prune", "--title", "Tomato*", "--yes")
    assert r.code == 0, r
    assert PRS in images(kaja) and TOMATO not in images(kaja)
    assert not (kaja.state / "kaja.db.pruning").exists()


@pytest.mark.process
def test_killed_after_the_commit_the_next_prune_removes_the_folders(demo_store):
    kaja = demo_store
    assert killed_at(kaja, "prune-images", "--title", "Open PRs*") == -signal.SIGKILL
    assert PRS not in session_ids(kaja)
    assert PRS in images(kaja)  # the commit happened, the folder is left
    assert (kaja.state / "kaja.db.pruning").exists()
    r = kaja("sessions", "prune", "--title", "Open PRs*", "--dry-run")
    assert "and finish an interrupted prune: 1 image folder of deleted sessions" in r.err
    assert PRS in images(kaja)
    r = kaja("sessions", "prune", "--title", "Open PRs*", "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["deleted"] == 0 and doc["image_folders_removed"] == 1
    assert PRS not in images(kaja) and TOMATO in images(kaja)
    assert not (kaja.state / "kaja.db.pruning").exists()
    assert_store_sound(kaja.state)


# --- beside the agent -------------------------------------------------------------------
def test_a_session_changed_after_the_plan_is_left_alone(demo_store):
    """The batch checks the filter again under the write lock."""
    from kaja_cli.core.conversations import prune
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store

    store = Store.locate(environ=demo_store.env)
    plan = prune.plan(store, SessionFilter(limit=0, before="2026-11-28T12:00:00.000Z"))
    assert [c.id for c in plan.sessions] == OLD_IDS[::-1]
    conn = sqlite3.connect(demo_store.db)
    with conn:  # the agent, between the question and the answer
        conn.execute(
            "UPDATE sessions SET updatedAt = '2026-11-30T00:00:00.000Z' WHERE id = ?", (BUDGET,)
        )
        conn.execute("UPDATE sessions SET pendingCallId = 'call_x' WHERE id = ?", (OLD_IDS[0],))
    conn.close()
    result = prune.execute(store, plan)
    assert (result.deleted, result.skipped) == (1, 2)
    assert session_ids(demo_store) >= {BUDGET, OLD_IDS[0]}
    assert OLD_IDS[1] not in session_ids(demo_store)


def _wait_for(condition, timeout: float = 120) -> None:
    """Until `condition()` holds: the agent writes at the machine's pace, not the test's."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the agent wrote nothing in time"
        time.sleep(0.05)


@pytest.mark.process
def test_prune_beside_a_running_agent(demo_store):
    kaja = demo_store
    env = dict(kaja.env, PYTHONPATH=str(Path(__file__).parents[2]))
    agent = subprocess.Popen(
        [sys.executable, str(AGENTS / "kaja_agent.py"), "--owner", "telegram:999", "--seconds", "300",
         "--long-every", "15"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    mine = "SELECT count(*) FROM sessions WHERE owner = 'telegram:999'"
    try:
        assert agent.stdout.readline().strip() == "ready"
        _wait_for(lambda: count(kaja, mine) >= 3)  # a few of its sessions to prune while it writes
        r = kaja(
            "sessions", "prune", "--owner", "telegram:999", "--before", "now", "--yes", "--json"
        )
        assert r.code == 0, r
        doc = json.loads(r.out)
        # one pass: the sessions listed are those deleted; one the agent touched
        # meanwhile is left alone, counted in skipped
        assert doc["sessions"] and doc["deleted"] == len(doc["sessions"]) and doc["skipped"] >= 0
        r = kaja("sessions", "prune", "--all-owners", *OLD, "--yes", "--json")
        assert r.code == 0, r
        assert json.loads(r.out)["deleted"] == 6  # the demo's old sessions, every owner's
        _wait_for(lambda: count(kaja, mine) > 0)  # the agent keeps writing after the prune
    finally:
        agent.terminate()  # it finishes its turn and says what it committed
        out, _ = agent.communicate(timeout=60)
    assert agent.returncode == 0
    committed = json.loads(out.strip().splitlines()[-1])
    left = count(kaja, mine)
    assert 0 < left <= committed["sessions"]
    assert_store_sound(kaja.state)


@pytest.mark.process
def test_a_whole_wipe_after_an_interrupted_prune_leaves_nothing(demo_store):
    """The marker is one of the store's files: the wipe removes it with the rest."""
    kaja = demo_store
    assert killed_at(kaja, "prune-images", "--title", "Open PRs*") == -signal.SIGKILL
    assert (kaja.state / "kaja.db.pruning").exists()
    r = kaja("sessions", "export", "--all", "-o", str(kaja.state / "kaja.db.pruning"))
    assert r.code == 5 and "part of Kaja's store" in r.err, r
    r = kaja("wipe", "--yes")
    assert r.code == 0, r
    assert not kaja.state.exists(), (r, sorted(p.name for p in kaja.state.rglob("*")))


COUNTS = ("sessions", "rows", "message_bytes", "image_files", "image_bytes", "pending_kept")


def test_yes_acts_in_one_pass_and_reports_what_a_dry_run_plans(demo_store):
    """With --yes there is no question: prune selects and deletes in one pass,
    counting what its statements deleted. Those counts are the dry run's."""
    argv = ["sessions", "prune", "--all-owners", "--until", "2026-11-29", "--json"]
    dry = json.loads(demo_store(*argv, "--dry-run").out)
    assert dry["image_files"] > 0 and dry["rows"]["messages"] > 0, dry
    r = demo_store(*argv, "--yes")
    assert r.code == 0, r
    done = json.loads(r.out)
    assert {k: done[k] for k in COUNTS} == {k: dry[k] for k in COUNTS}
    assert done["deleted_rows"] == done["rows"] and done["deleted"] == len(dry["sessions"])
    assert done["image_folders_removed"] > 0
    # on a terminal's stderr: the sessions, then one line of what went, sizes included
    r = demo_store("sessions", "prune", "--all-owners", "--empty", "--yes")
    assert r.code == 0 and "will delete" not in r.err, r
    again = demo_store(*argv, "--yes")
    assert again.code == 0 and json.loads(again.out)["sessions"] == [], again


def test_yes_reports_its_sizes_in_one_line(demo_store):
    r = demo_store("sessions", "prune", "--all-owners", "--max-messages", "6", "--yes")
    assert r.code == 0, r
    assert r.err.splitlines()[-1].startswith("kaja: deleted 9 sessions (")
    assert "of text" in r.err and "will delete" not in r.err
