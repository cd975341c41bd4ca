"""`kaja sessions rename`, `archive`, `unarchive`, and the listing's filters
(core/session_filter.py, core/archive.py), through the real command.

The demo store is seed 1 at 2026-11-29T12:00:00Z (tests/support/sessions_support.py
names its sessions)."""

from __future__ import annotations

import json
import sqlite3

from tests.support.sessions_support import ANA, BACKUP, BUDGET, PRS, RECEIPT, TOMATO

SESSION_COLUMNS = [
    "id", "createdAt", "updatedAt", "persona", "model", "title", "owner", "systemPrompt",
    "pendingCallId", "pendingKind",
]  # fmt: skip


def ids(result) -> list[str]:
    return [line.split("\t")[0] for line in result.out.splitlines()]


def rows_of(db, sql, *args):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


# --- the filters ----------------------------------------------------------------------
def test_before_and_older_than_pick_sessions_last_updated_before(demo_store):
    r = demo_store("sessions", "--before", "2026-11-28", "-n", "0")
    assert r.code == 0, r
    assert ids(r) == ["01a21c62-1640-7aca-92c9-357d34accd78", BUDGET]
    # --older-than is an age counted back from now: everything of 2026 is older than 1d
    assert len(ids(demo_store("sessions", "--older-than", "1d"))) == 7


def test_title_is_a_glob_ignoring_case(demo_store):
    r = demo_store("sessions", "--title", "*BACKUP*")
    assert ids(r) == [BACKUP]
    assert ids(demo_store("sessions", "--title", "Tomato leaves ?urling*")) == [TOMATO]
    assert demo_store("sessions", "--title", "backup").out == ""  # whole title, not a word


def test_message_and_token_filters(demo_store):
    r = demo_store("sessions", "--max-messages", "6", "--json")
    got = {s["id"]: s["message_count"] for s in json.loads(r.out)["sessions"]}
    assert got and all(n <= 6 for n in got.values()) and len(got) == 3
    r = demo_store("sessions", "--min-tokens", "6000", "--json")
    got = {s["id"]: s["total_tokens"] for s in json.loads(r.out)["sessions"]}
    assert set(got) == {BUDGET, "01a22161-fe80-791d-9d5f-576cdeb8fc4c"}
    assert all(n >= 6000 for n in got.values())


def test_empty_lists_sessions_without_messages(demo_store):
    conn = sqlite3.connect(demo_store.db)
    conn.execute(
        "INSERT INTO sessions (id, createdAt, updatedAt, title) VALUES"
        " ('01a00000-0000-7000-8000-00000000000e', '2026-01-01T00:00:00.000Z',"
        " '2026-01-01T00:00:00.000Z', 'Never said a word')"
    )
    conn.commit()
    conn.close()
    r = demo_store("sessions", "--empty")
    assert ids(r) == ["01a00000-0000-7000-8000-00000000000e"]
    assert ids(demo_store("sessions", "--max-messages", "0")) == ids(r)


def test_filters_that_do_not_go_together_are_exit_2(demo_store):
    for argv in (
        ["--before", "3d", "--older-than", "3d"],
        ["--empty", "--max-messages", "3"],
        ["--owner", ANA, "--all-owners"],
        ["--older-than", "soon"],
        ["--title", " "],
    ):
        r = demo_store("sessions", *argv)
        assert r.code == 2, (argv, r)
        assert r.out == "" and r.err.count("\n") == 1


# --- archive ---------------------------------------------------------------------------
def test_archived_sessions_leave_the_listing_resume_c_and_search(demo_store):
    before = rows_of(demo_store.db, "SELECT * FROM sessions ORDER BY id")
    r = demo_store("sessions", "archive", BACKUP[:8], TOMATO[:8])
    assert r.code == 0, r
    assert r.err == (
        f"kaja: archived {BACKUP}  Nightly backup with rsync\n"
        f"kaja: archived {TOMATO}  Tomato leaves curling in the heat\n"
    )
    listed = ids(demo_store("sessions", "-n", "0"))
    assert BACKUP not in listed and TOMATO not in listed and len(listed) == 5
    assert ids(demo_store("sessions", "--archived")) == [BACKUP, TOMATO]
    # resume -c: the newest session that is not archived
    r = demo_store("resume", "-c")
    assert r.code == 0 and r.out.splitlines()[0] == "Open PRs and a screenshot of the list"
    # resume ID still replays an archived one
    assert demo_store("resume", BACKUP[:8]).out.startswith("Nightly backup with rsync")
    # search leaves them out, unless --archived or the session is named
    r = demo_store("search", "rsync")
    assert (r.code, r.out) == (0, "")
    assert "archived sessions were left out (--archived searches them too)" in r.err
    assert {
        line.split("\t")[0] for line in demo_store("search", "rsync", "--archived").out.splitlines()
    } == {BACKUP}
    assert demo_store("search", "rsync", "--session", BACKUP[:8]).out.count(BACKUP) >= 3
    # the agent's own table is untouched: same columns, same rows
    assert rows_of(demo_store.db, "SELECT * FROM sessions ORDER BY id") == before
    assert [r[1] for r in rows_of(demo_store.db, "PRAGMA table_info(sessions)")] == SESSION_COLUMNS
    assert {r[0] for r in rows_of(demo_store.db, "SELECT sessionId FROM kaja_archived")} == {
        BACKUP,
        TOMATO,
    }


def test_unarchive_brings_them_back_and_says_what_was_already_so(demo_store):
    assert demo_store("sessions", "archive", PRS).code == 0
    r = demo_store("sessions", "archive", PRS, "--json")
    assert json.loads(r.out) == {
        "dry_run": False,
        "archived": [],
        "unchanged": [{"id": PRS, "title": "Open PRs and a screenshot of the list"}],
    }
    r = demo_store("sessions", "unarchive", PRS[:8], BUDGET[:8])
    assert r.code == 0, r
    assert (
        r.err
        == f"kaja: unarchived {PRS}  Open PRs and a screenshot of the list\nkaja: {BUDGET} was already unarchived\n"
    )
    assert PRS in ids(demo_store("sessions"))
    assert demo_store("sessions", "--archived").out == ""


def test_archive_is_all_or_nothing_and_follows_the_owner_rule(demo_store):
    r = demo_store("sessions", "archive", BACKUP, RECEIPT)
    assert r.code == 5 and f"belongs to {ANA}" in r.err
    r = demo_store("sessions", "archive", BACKUP, "ffffffff")
    assert r.code == 3
    assert rows_of(demo_store.db, "SELECT count(*) FROM kaja_archived") == [(0,)]
    assert demo_store("sessions", "archive", RECEIPT, "--owner", ANA).code == 0
    assert ids(demo_store("sessions", "--archived", "--all-owners")) == [RECEIPT]


def test_deleting_a_session_drops_its_archive_row(demo_store):
    assert demo_store("sessions", "archive", PRS).code == 0
    assert demo_store("sessions", "delete", PRS, "--yes").code == 0
    assert rows_of(demo_store.db, "SELECT count(*) FROM kaja_archived") == [(0,)]


def test_resume_c_with_only_archived_sessions_says_so(demo_store):
    r = demo_store("sessions", "--owner", ANA, "--json")
    mine = [s["id"] for s in json.loads(r.out)["sessions"]]
    assert demo_store("sessions", "archive", *mine, "--owner", ANA).code == 0
    r = demo_store("resume", "-c", "--owner", ANA)
    assert r.code == 3
    assert r.err == (
        f"kaja: {ANA} has only archived sessions: `kaja sessions --archived` lists them;"
        " resume one by its id\n"
    )


# --- rename ----------------------------------------------------------------------------
def test_rename_changes_the_title_and_keeps_the_time(demo_store):
    (updated,) = rows_of(demo_store.db, "SELECT updatedAt FROM sessions WHERE id = ?", PRS)[0]
    r = demo_store("sessions", "rename", PRS[:8], "  The PR list,\n again ")
    assert r.code == 0, r
    assert (
        r.err
        == f"kaja: renamed {PRS}: Open PRs and a screenshot of the list → The PR list, again\n"
    )
    assert rows_of(demo_store.db, "SELECT title, updatedAt FROM sessions WHERE id = ?", PRS) == [
        ("The PR list, again", updated)
    ]
    r = demo_store("sessions", "rename", PRS, "Back", "--json")
    assert json.loads(r.out) == {
        "dry_run": False, "id": PRS, "old_title": "The PR list, again", "title": "Back"
    }  # fmt: skip


def test_rename_refuses_bad_titles_and_other_owners_sessions(demo_store):
    assert demo_store("sessions", "rename", PRS, "   ").code == 2
    assert demo_store("sessions", "rename", PRS, "x" * 501).code == 2
    assert demo_store("sessions", "rename", PRS, "a\x07b").code == 2
    r = demo_store("sessions", "rename", RECEIPT, "Mine now")
    assert r.code == 5 and ANA in r.err
    assert rows_of(demo_store.db, "SELECT title FROM sessions WHERE id = ?", RECEIPT) == [
        ("Photo of a receipt",)
    ]
