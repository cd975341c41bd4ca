"""`kaja sessions` (list, delete, export), through the real command.

The demo store is seed 1 at 2026-11-29T12:00:00Z, so its ids and numbers are
fixed; the foreign store (sessions_support.py) is written with plain SQL.
"""

from __future__ import annotations

import json
import sqlite3
import stat

import pytest

from tests.conftest import KAJA
from tests.support.sessions_support import (
    ANA,
    BACKUP,
    BUDGET,
    PRS,
    RECEIPT,
    S_EVENTS,
    S_GONE,
    S_UNTITLED,
    S_WIDGET,
    TOMATO,
    build_foreign_store,
    run_in_pty,
    snapshot,
)

TERMINAL_ROWS = (
    f"{BACKUP}\t2026-11-29T10:59:08.029Z\tNightly backup with rsync\tsysadmin\tclaude-sonnet-4.5\t7\t4649\tapproval\n"
    f"{TOMATO}\t2026-11-29T08:17:00.070Z\tTomato leaves curling in the heat\tgardener\tclaude-sonnet-4.5\t9\t4722\t\n"
    f"{PRS}\t2026-11-29T05:55:12.547Z\tOpen PRs and a screenshot of the list\t\tllama3.2:3b\t6\t3428\t\n"
    "01a222c0-a420-7bb9-bd5c-8dfc5eda92d8\t2026-11-28T15:38:37.755Z\tCrème brûlée for eight\tchef\tgpt-5-mini\t6\t3315\t\n"
    "01a22161-fe80-791d-9d5f-576cdeb8fc4c\t2026-11-28T09:29:29.253Z\tRefactor the invoice parser\tengineer\tclaude-sonnet-4.5\t23\t22495\t\n"
    "01a21c62-1640-7aca-92c9-357d34accd78\t2026-11-27T09:55:15.102Z\tTrain from Zürich to Genève\t\tgpt-5-mini\t6\t3345\t\n"
    f"{BUDGET}\t2026-11-26T03:07:21.494Z\tQuarterly budget review\tanalyst\tgpt-5\t14\t6370\t\n"
)


def rows_of(db, sql, *args):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


# --- listing ------------------------------------------------------------------------
def test_lists_the_terminals_sessions_newest_first_as_plain_rows(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions")
    assert (r.code, r.out, r.err) == (0, TERMINAL_ROWS, "")


def test_all_owners_adds_an_owner_column(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--all-owners", "--limit", "0")
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert len(lines) == 13
    assert lines[0].split("\t")[:3] == [BACKUP, "2026-11-29T10:59:08.029Z", "terminal"]
    assert lines[2] == (
        f"01a22612-4020-766c-be67-026cceea590b\t2026-11-29T06:55:04.349Z\t{ANA}"
        "\tLista de la compra para la semana\t\tgpt-5-mini\t4\t2049\t"
    )
    assert {line.split("\t")[2] for line in lines} == {
        "terminal", ANA, "telegram:771204", "widget:ab12",
    }  # fmt: skip


def test_owner_acts_as_another_owner(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--owner", ANA)
    assert r.code == 0, r
    assert [line.split("\t")[2] for line in r.out.splitlines()] == [
        "Lista de la compra para la semana", "Photo of a receipt",
        "Recordatorio: cita con el dentista",
    ]  # fmt: skip
    assert demo_store("sessions", "--owner", "terminal").out == TERMINAL_ROWS


def test_limit_says_how_many_were_left_out(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--limit", "2")
    assert r.out == "".join(TERMINAL_ROWS.splitlines(keepends=True)[:2])
    assert r.err == "kaja: 5 more not shown (--limit 0 shows all)\n"
    r = demo_store("sessions", "-n", "0")
    assert (r.out, r.err) == (TERMINAL_ROWS, "")


def test_default_limit_is_twenty(kaja):
    from datetime import UTC, datetime, timedelta

    kaja.db.parent.mkdir(parents=True)
    conn = sqlite3.connect(kaja.db)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, updatedAt TEXT, title TEXT)")
    base = datetime(2026, 1, 1, tzinfo=UTC)
    conn.executemany(
        "INSERT INTO sessions VALUES (?, ?, ?)",
        [(f"s{i:03d}", (base + timedelta(hours=i)).isoformat(), f"t{i}") for i in range(25)],
    )
    conn.commit()
    conn.close()
    r = kaja("sessions")
    assert r.code == 0, r
    assert [line.split("\t")[0] for line in r.out.splitlines()] == [
        f"s{i:03d}" for i in range(24, 4, -1)
    ]
    assert r.err == "kaja: 5 more not shown (--limit 0 shows all)\n"


def test_filters_since_model_persona(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--since", "2026-11-29")
    assert r.out == "".join(TERMINAL_ROWS.splitlines(keepends=True)[:3])
    r = demo_store("sessions", "--since", "2026-11-28T10:00:00+01:00")  # 09:00 UTC
    assert [line.split("\t")[2] for line in r.out.splitlines()][-1] == "Refactor the invoice parser"
    r = demo_store("sessions", "--model", "GPT-5-MINI")
    assert [line.split("\t")[2] for line in r.out.splitlines()] == [
        "Crème brûlée for eight", "Train from Zürich to Genève",
    ]  # fmt: skip
    r = demo_store("sessions", "--persona", "chef", "--all-owners")
    assert [line.split("\t")[3] for line in r.out.splitlines()] == ["Crème brûlée for eight"]
    r = demo_store("sessions", "--persona", "nobody")
    assert (r.code, r.out, r.err) == (
        0,
        "",
        "kaja: no sessions for terminal matching the filters\n",
    )


def test_bad_usage_is_exit_2(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--since", "last tuesday")
    assert r.code == 2 and "--since: not a date or age" in r.err
    r = demo_store("sessions", "--owner", ANA, "--all-owners")
    assert (r.code, r.err) == (2, "kaja: --owner and --all-owners can't be combined\n")
    assert demo_store("sessions", "--limit", "-1").code == 2


def test_listing_options_before_a_subcommand_are_refused(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--owner", ANA, "delete", RECEIPT, "--yes")
    assert r.code == 2
    assert r.err == (
        "kaja: --owner belongs to the listing, not to `delete`:"
        " put the options after it: kaja sessions delete …\n"
    )
    assert counts(demo_store.db, RECEIPT)["sessions"] == 1


def test_json_has_every_column_counts_and_tokens(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "--json", "--limit", "1")
    assert r.code == 0, r
    assert json.loads(r.out) == {
        "owner": "terminal",
        "all_owners": False,
        "archived": False,
        "total": 7,
        "left_out": 6,
        "sessions": [
            {
                "short_id": "01a226e4",
                "id": BACKUP,
                "createdAt": "2026-11-29T10:41:00.000Z",
                "updatedAt": "2026-11-29T10:59:08.029Z",
                "persona": "sysadmin",
                "model": "claude-sonnet-4.5",
                "title": "Nightly backup with rsync",
                "owner": None,
                "systemPrompt": "You are Kaja, a helpful personal assistant, acting as a sysadmin.",
                "pendingCallId": "call_7327e5920673",
                "pendingKind": "approval",
                "message_count": 7,
                "prompt_tokens": 4441,
                "completion_tokens": 208,
                "total_tokens": 4649,
            }
        ],
    }
    assert r.err == ""


def test_json_counts_match_the_database(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    doc = json.loads(demo_store("sessions", "--json", "--all-owners", "--limit", "0").out)
    assert doc["owner"] is None and doc["all_owners"] is True
    assert doc["total"] == 13 and doc["left_out"] == 0
    truth = {
        sid: (n, pt, ct)
        for sid, n, pt, ct in rows_of(
            demo_store.db,
            "SELECT sessionId, count(*), coalesce(sum(promptTokens), 0),"
            " coalesce(sum(completionTokens), 0) FROM messages GROUP BY sessionId",
        )
    }
    for s in doc["sessions"]:
        assert (s["message_count"], s["prompt_tokens"], s["completion_tokens"]) == truth[s["id"]]
        assert s["total_tokens"] == s["prompt_tokens"] + s["completion_tokens"]
    # Short ids are unique prefixes, and resolve.
    shorts = [s["short_id"] for s in doc["sessions"]]
    assert all(len(x) == 8 for x in shorts)
    for s in doc["sessions"]:
        assert [t["id"] for t in doc["sessions"] if t["id"].startswith(s["short_id"])] == [s["id"]]


def test_short_ids_grow_until_unique(kaja):
    build_foreign_store(kaja.db)
    doc = json.loads(kaja("sessions", "--json", "--all-owners").out)
    assert {s["id"]: s["short_id"] for s in doc["sessions"]} == {
        S_EVENTS: S_EVENTS,  # shares 35 characters with S_UNTITLED
        S_UNTITLED: S_UNTITLED,
        S_GONE: "0190bbbb",
        S_WIDGET: "0190cccc",
    }
    r = kaja("resume", "0190aaaa-0000-7000-8000-00000000000")
    assert r.code == 2 and "is ambiguous" in r.err
    assert S_EVENTS in r.err and S_UNTITLED in r.err


def test_no_store_lists_nothing_and_says_where_it_looked(kaja):
    r = kaja("sessions")
    assert (r.code, r.out) == (0, "")
    assert r.err == f"kaja: no sessions: there is no Kaja store at {kaja.db}\n"
    r = kaja("sessions", "--json")
    assert json.loads(r.out) == {
        "owner": "terminal", "all_owners": False, "archived": False, "total": 0, "left_out": 0,
            "sessions": [],
    }  # fmt: skip
    assert not kaja.state.exists()  # nothing created


def test_a_store_without_a_sessions_table(kaja):
    kaja.db.parent.mkdir(parents=True)
    conn = sqlite3.connect(kaja.db)
    conn.execute("CREATE TABLE notes (owner TEXT, key TEXT, content TEXT)")
    conn.commit()
    conn.close()
    before = snapshot(kaja.state)
    r = kaja("sessions")
    assert (r.code, r.out, r.err) == (
        0,
        "",
        f"kaja: no sessions: {kaja.db} has no sessions table\n",
    )
    r = kaja("resume")
    assert r.code == 3 and "no sessions" in r.err
    assert snapshot(kaja.state) == before


def test_a_store_written_by_another_program(kaja):
    build_foreign_store(kaja.db)
    before = snapshot(kaja.state)
    r = kaja("sessions")
    assert (r.code, r.err) == (0, "")
    assert r.out == (
        f"{S_EVENTS}\t2026-11-21T10:00:00.000Z\t[draft] budget [/x]\t\tgpt-y\t4\t12\t\n"
        f"{S_UNTITLED}\t2026-11-20T10:00:00.000Z\t\t\tgpt-x\t2\t40\tpending\n"
    )
    doc = json.loads(kaja("sessions", "--all-owners", "--json").out)
    by_id = {s["id"]: s for s in doc["sessions"]}
    assert list(by_id[S_UNTITLED]) == [
        "short_id", "id", "createdAt", "updatedAt", "persona", "model", "title", "owner",
        "systemPrompt", "pendingCallId", "pendingKind", "topic", "avatar", "message_count",
        "prompt_tokens", "completion_tokens", "total_tokens",
    ]  # fmt: skip
    assert by_id[S_UNTITLED]["persona"] is None  # the column is missing
    assert by_id[S_UNTITLED]["topic"] == "travel"  # an extra column is kept
    assert by_id[S_WIDGET]["avatar"] == "CAFE"  # a BLOB, as hex
    assert by_id[S_GONE]["message_count"] == 0  # its messages are gone
    assert by_id[S_EVENTS]["completion_tokens"] == 12  # 'lots' is not a number
    for args in (
        ["sessions", "--all-owners", "--limit", "0"],
        ["sessions", "--owner", "telegram:42", "--json"],
        ["sessions", "export", S_UNTITLED],
        ["sessions", "export", S_EVENTS, "--format", "json"],
    ):
        r = kaja(*args)
        assert r.code == 0, (args, r)
    assert snapshot(kaja.state) == before  # byte for byte, and nothing beside it


def test_table_on_a_terminal(demo_store):
    code, screen = run_in_pty([KAJA, "sessions", "--all-owners", "--limit", "4"], demo_store.env)
    assert code == 0, screen
    lines = screen.splitlines()
    assert lines[0].split() == [
        "id", "updated", "owner", "title", "persona", "model", "msgs", "tokens",
    ]  # fmt: skip
    assert lines[1].split()[0] == "01a226e4"  # the short id
    assert "Nightly backup with rsync" in lines[1] and "4.6k" in lines[1]
    assert "⏸ approval" in lines[1]
    assert "⏸" not in "".join(lines[2:])
    assert "9 more not shown (--limit 0 shows all)" in screen


def test_table_shows_database_text_as_is(kaja):
    build_foreign_store(kaja.db)
    code, screen = run_in_pty([KAJA, "sessions"], kaja.env)
    assert code == 0, screen
    assert "[draft] budget [/x]" in screen  # not read as Rich markup
    assert "“Plan a trip to Kraków”" in screen  # an untitled session: how it began


# --- delete ---------------------------------------------------------------------------
TABLES = ("messages", "session_summaries", "model_calls", "session_events")


def counts(db, sid):
    out = {t: rows_of(db, f"SELECT count(*) FROM {t} WHERE sessionId = ?", sid)[0][0]
           for t in TABLES}  # fmt: skip
    out["tool_calls"] = rows_of(
        db,
        "SELECT count(*) FROM tool_calls WHERE messageId IN"
        " (SELECT id FROM messages WHERE sessionId = ?)",
        sid,
    )[0][0]
    out["sessions"] = rows_of(db, "SELECT count(*) FROM sessions WHERE id = ?", sid)[0][0]
    out["threads"] = rows_of(
        db, "SELECT count(*) FROM conversation_threads WHERE thread_id = ?", sid
    )[0][0]
    return out


def search(db, word):
    return rows_of(
        db,
        "SELECT count(*) FROM conversation_text WHERE conversation_text MATCH ?",
        word,
    )[0][0]


def test_delete_refuses_without_a_terminal_or_yes(demo_store):
    before = snapshot(demo_store.state)
    r = demo_store("sessions", "delete", TOMATO)
    assert r.code == 5
    assert r.err == "kaja: not deleting anything without confirmation: rerun with --yes\n"
    assert snapshot(demo_store.state) == before


def test_delete_removes_every_row_search_entry_and_image_folder(demo_store):
    db = demo_store.db
    assert counts(db, BUDGET) == {
        "messages": 14, "session_summaries": 2, "model_calls": 2, "session_events": 16,
        "tool_calls": 1, "sessions": 1, "threads": 1,
    }  # fmt: skip
    folder = demo_store.state / "files" / "images" / TOMATO
    assert folder.is_dir()
    assert search(db, "shade") > 0  # only the tomato conversation mentions shade cloth
    others = rows_of(
        db, "SELECT count(*) FROM messages WHERE sessionId NOT IN (?, ?)", BUDGET, TOMATO
    )
    r = demo_store("sessions", "delete", "01a215b9", "01a22652", "--yes")
    assert (r.code, r.out) == (0, "")
    assert r.err == (
        "kaja: deleted 2 sessions (23 messages, 2 tool calls, 2 summaries, 3 model calls,"
        " 26 events) and 1 image folder\n"
    )
    assert set(counts(db, BUDGET).values()) == {0}
    assert set(counts(db, TOMATO).values()) == {0}
    assert search(db, "shade") == 0
    assert not folder.exists()
    assert (demo_store.state / "files" / "images" / PRS).is_dir()  # others untouched
    assert rows_of(db, "SELECT count(*) FROM messages") == others
    assert demo_store("resume", BUDGET).code == 3


def test_delete_json_reports_what_went(demo_store):
    r = demo_store("sessions", "delete", PRS, "-y", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["deleted"] == [
        {"id": PRS, "title": "Open PRs and a screenshot of the list", "owner": None}
    ]
    assert doc["rows"] == {
        "tool_calls": 2, "messages": 6, "session_summaries": 0, "model_calls": 0,
        "session_events": 7, "conversation_threads": 1, "sessions": 1,
    }  # fmt: skip
    assert doc["image_folders"] == [str(demo_store.state / "files" / "images" / PRS)]


def test_delete_follows_the_owner_rule_all_or_nothing(demo_store):
    before = snapshot(demo_store.state)
    r = demo_store("sessions", "delete", TOMATO, RECEIPT, "--yes")
    assert r.code == 5
    assert r.err == (
        f"kaja: session {RECEIPT!r} belongs to {ANA}, not terminal:"
        f" act as that owner with --owner {ANA}\n"
    )
    r = demo_store("sessions", "delete", TOMATO, "nope", "--yes")
    assert (r.code, r.err) == (3, "kaja: no session 'nope': `kaja sessions` lists them\n")
    r = demo_store("sessions", "delete", "01a2", "--yes")
    assert r.code == 2 and "ambiguous" in r.err
    assert snapshot(demo_store.state) == before
    r = demo_store("sessions", "delete", RECEIPT, "--owner", ANA, "--yes")
    assert r.code == 0, r
    assert counts(demo_store.db, RECEIPT)["sessions"] == 0
    assert not (demo_store.state / "files" / "images" / RECEIPT).exists()


def test_delete_needs_a_store(kaja):
    r = kaja("sessions", "delete", "abc", "--yes")
    assert r.code == 3 and "no Kaja store at" in r.err
    assert not kaja.state.exists()


def test_delete_asks_on_a_terminal(demo_store):
    before = snapshot(demo_store.state)
    code, screen = run_in_pty([KAJA, "sessions", "delete", PRS], demo_store.env, answer="n")
    assert code == 1, screen
    assert (
        "Delete 1 session “Open PRs and a screenshot of the list” (6 messages, 2 tool calls,"
        " 7 events, 1 image file, 292 B)? [y/n] (n):" in " ".join(screen.split())
    )
    assert "cancelled: nothing was changed" in screen
    assert snapshot(demo_store.state) == before
    code, screen = run_in_pty([KAJA, "sessions", "delete", PRS], demo_store.env, answer="y")
    assert code == 0, screen
    assert "deleted 1 session" in screen
    assert counts(demo_store.db, PRS)["sessions"] == 0


def test_delete_a_session_of_a_foreign_store(kaja):
    build_foreign_store(kaja.db)
    r = kaja("sessions", "delete", S_EVENTS, "--yes")
    assert r.code == 0, r
    assert rows_of(kaja.db, "SELECT count(*) FROM messages WHERE sessionId = ?", S_EVENTS) == [(0,)]
    assert rows_of(kaja.db, "SELECT count(*) FROM session_events") == [(0,)]
    assert rows_of(kaja.db, "SELECT id FROM tool_calls") == [("t1",)]
    assert rows_of(kaja.db, "SELECT count(*) FROM messages") == [(3,)]


# --- export ------------------------------------------------------------------------------
def test_export_markdown(demo_store):
    r = demo_store("sessions", "export", "01a226e4")
    assert r.code == 0, r
    md = r.out
    assert md.startswith(
        "# Nightly backup with rsync\n\n"
        f"- **id:** `{BACKUP}`\n- **owner:** terminal\n- **model:** claude-sonnet-4.5\n"
        "- **persona:** sysadmin\n- **created:** 2026-11-29T10:41:00.000Z\n"
        "- **updated:** 2026-11-29T10:59:08.029Z\n- **messages:** 7\n\n"
        "> **Waiting on you:** `shell` (approval), call `call_7327e5920673`\n"
    )
    assert "**Tool call** `read_file` — ok · 60 ms" in md
    assert '```json\n{\n  "path": "/var/log/backup.log"\n}\n```' in md
    assert "### Tool result · `read_file`" in md
    assert "rsync: sent 1037 bytes" in md  # the full result, not the summary
    assert "*Too long for the model; it was sent this instead:*" in md
    # The call waiting on you is shown as waiting (it has no result yet), and
    # the timeline's error and notice, which no message holds, where resume
    # shows them: the error before your next message, the notice at the end.
    assert "**Tool call** `shell` — waiting on you (approval)" in md
    error = "\n> **Error:** The NAS was not mounted when I checked /mnt/nas: the job will fail"
    assert md.index("0 3 * * * rsync -a") < md.index(error) < md.index("### You · 2026-11-29T10:56")
    assert md.endswith("```\n\n> **Notice:** Waiting for your approval to run shell.\n")


def test_export_markdown_images_and_summaries(demo_store):
    md = demo_store("sessions", "export", TOMATO).out
    image = f"![image](<{demo_store.state}/files/images/{TOMATO}/"
    assert image in md and "(file missing)" not in md
    for png in (demo_store.state / "files" / "images" / TOMATO).iterdir():
        png.unlink()
    md = demo_store("sessions", "export", TOMATO).out
    assert md.count("*(file missing)*") == 1
    md = demo_store("sessions", "export", BUDGET).out
    assert md.count("> **Compacted** (messages before #") == 2
    assert md.index("> **Compacted** (messages before #7)") < md.index(
        "> **Compacted** (messages before #13)"
    )


def test_export_json_to_a_file(demo_store, tmp_path):
    out = tmp_path / "budget.json"
    r = demo_store("sessions", "export", BUDGET, "-o", str(out))
    assert r.code == 0, r
    assert r.out == ""
    assert r.err.startswith(f"kaja: wrote {out} (")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = json.loads(out.read_text())
    assert list(doc) == ["session", "summaries", "events", "model_calls", "pending", "messages"]
    assert [s["summaryFrom"] for s in doc["summaries"]] == [7, 13]
    assert [m["seq"] for m in doc["messages"]] == list(range(1, 15))
    assert "condensed" not in doc["messages"][0]
    assert len(doc["events"]) == 16 and doc["events"][0]["type"] == "user"
    assert {c["kind"] for c in doc["model_calls"]} == {"compact"}
    # stdout, --format given
    r = demo_store("sessions", "export", BUDGET, "--format", "json")
    assert json.loads(r.out) == doc


def test_export_markdown_to_a_file_and_bad_usage(demo_store, tmp_path):
    out = tmp_path / "t.md"
    assert demo_store("sessions", "export", TOMATO, "-o", str(out)).code == 0
    assert out.read_text().startswith("# Tomato leaves curling in the heat\n")
    r = demo_store("sessions", "export", TOMATO, "--format", "pdf")
    assert (r.code, r.err) == (2, "kaja: --format: 'pdf' is not md, json, jsonl or html\n")
    r = demo_store("sessions", "export", TOMATO, "-o", str(tmp_path))
    assert r.code == 2 and "is a folder" in r.err
    r = demo_store("sessions", "export", RECEIPT)
    assert r.code == 5 and ANA in r.err
    assert demo_store("sessions", "export", "zzz").code == 3


def test_export_foreign_store_shows_what_there_is(kaja):
    build_foreign_store(kaja.db)
    md = kaja("sessions", "export", S_UNTITLED).out
    assert md.startswith("# Untitled session\n")
    assert "*parts (not valid JSON):* `{not json`" in md
    assert "**Tool call** `search_trains` — waiting on you\n\n```\n{oops\n```" in md
    doc = json.loads(kaja("sessions", "export", S_EVENTS, "-f", "json").out)
    assert doc["events"][5] == {"seq": 6, "type": "assistant", "payload": "not json at all"}
    assert doc["messages"][2]["content"] == "a very long spreadsheet dump"  # not condensed
    assert doc["summaries"] == [] and doc["model_calls"] == []


@pytest.mark.parametrize("args", [["sessions", "--help"], ["sessions", "delete", "--help"],
                                  ["sessions", "export", "--help"]])  # fmt: skip
def test_help(kaja, args):
    r = kaja(*args)
    assert r.code == 0 and "Usage: kaja sessions" in r.out


@pytest.mark.process  # what the real command imports at start-up
@pytest.mark.parametrize(
    "args", [["sessions"], ["sessions", "--json"], ["resume", "--json"], ["resume"]]
)
def test_piped_output_never_loads_rich(demo_store, args):
    r = demo_store(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.code == 0
    imported = {line.split("|")[-1].strip() for line in r.err.splitlines() if "|" in line}
    assert "kaja_cli.core.conversations.sessions" in imported
    assert not {m for m in imported if m.split(".")[0] == "rich"}


# --- another process using the store ------------------------------------------------------
HOLD_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE sessions SET title = title")
print("locked", flush=True)
sys.stdin.read()
"""


def test_reads_while_the_agent_writes_and_delete_waits_then_says_busy(demo_store):
    import subprocess
    import sys
    import time

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE_LOCK, str(demo_store.db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        r = demo_store("sessions")  # WAL: a reader never waits for a writer
        assert (r.code, r.out) == (0, TERMINAL_ROWS)
        assert demo_store("resume", "--json").code == 0
        start = time.monotonic()
        r = demo_store("sessions", "delete", TOMATO, "--yes")
        assert r.code == 4, r
        assert r.err.startswith(f"kaja: {demo_store.db} is busy: another process")
        assert time.monotonic() - start >= 4  # it waited for the lock first
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert counts(demo_store.db, TOMATO)["sessions"] == 1
    assert demo_store("sessions", "delete", TOMATO, "--yes").code == 0


def test_the_terminal_table_at_80_columns_gives_the_title_room_and_wraps_titles(
    present_demo_store,
):
    # Days old, "2d ago": a month after DEMO_NOW the updated column is a date, three columns
    # wider, and at 80 the model goes too to keep the title 20.
    demo_store = present_demo_store
    import re
    import shlex
    import subprocess

    from tests.conftest import KAJA

    for argv in (["sessions"], ["sessions", "--all-owners", "-n", "0"]):
        p = subprocess.run(
            ["script", "-qc", shlex.join([KAJA, *argv, "--no-pager"]), "/dev/null"],
            env={**demo_store.env, "COLUMNS": "80"}, capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
        assert p.returncode == 0, p
        screen = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout).replace("\r", "")
        lines = [ln for ln in screen.splitlines() if ln.strip()]
        assert all(len(ln) <= 80 for ln in lines), lines
        rows = json.loads(demo_store(*argv, "--json").out)["sessions"]
        ids = [ln.split()[0] for ln in lines[1:] if not ln.startswith(" ")]
        assert ids == [s["short_id"] for s in rows]  # one record each, the id on its first line
        words = screen.split()
        for s in rows:  # every word of every title, whole (titles wrap at spaces)
            assert all(w in words for w in s["title"].split()), s["title"]
        assert screen.count("⏸ approval") == 1  # the pending mark survives a narrow terminal
        if argv == ["sessions"]:  # at 80 the persona goes, so the title keeps 20 columns
            assert lines[0].split() == ["id", "updated", "title", "model", "msgs", "tokens"]
