"""`kaja resume`: the replay and the agent's resume context, through the real command."""

from __future__ import annotations

import json
import os

from tests.conftest import KAJA
from tests.support.sessions_support import (
    ANA,
    BACKUP,
    BUDGET,
    RECEIPT,
    S_EVENTS,
    S_GONE,
    S_UNTITLED,
    SHA_MISSING,
    TOMATO,
    build_foreign_store,
    run_in_pty,
    snapshot,
)

BACKUP_REPLAY = f"""\
Nightly backup with rsync
{BACKUP} · terminal · claude-sonnet-4.5 · sysadmin · 7 messages · updated 2026-11-29 10:59

You: Set up a nightly backup of ~/Documents to my NAS at /mnt/nas/backup with rsync, keeping deleted files for 30 days.
Kaja: I'll use rsync with --backup-dir so deleted and changed files are moved to a dated folder, then prune folders older than 30 days. First let me look at the last runs of the existing script.
  → read_file {{"path": "/var/log/backup.log"}}
  ✓ read_file ok · 60 ms
Kaja: The old script ran every night without errors, but it never kept deleted files. Here is the cron line I'd install:

  0 3 * * * rsync -a --delete --backup --backup-dir=/mnt/nas/backup/deleted/$(date +\\%F) ~/Documents/ /mnt/nas/backup/current/
  error: The NAS was not mounted when I checked /mnt/nas: the job will fail until it is.

You: It's mounted now. Go ahead and install it.
  → shell {{"command": "crontab -l | {{ cat; echo '0 3 * * * /usr/local/bin/nightly-backup'; }} | crontab -"}}
  • Waiting for your approval to run shell.

⏸ Waiting on you: shell (approval) · call call_7327e5920673
  {{"command": "crontab -l | {{ cat; echo '0 3 * * * /usr/local/bin/nightly-backup'; }} | crontab -"}}
  Open this session in Kaja to answer it.
"""

LISTA = "01a22612-4020-766c-be67-026cceea590b"
LISTA_REPLAY = f"""\
Lista de la compra para la semana
{LISTA} · {ANA} · gpt-5-mini · 4 messages · updated 2026-11-29 06:55

You: Hola! Necesito una lista de la compra para la semana, somos dos y no comemos carne.
Kaja: ¡Claro! Para dos personas y siete días sin carne: garbanzos y lentejas, arroz, pasta integral, tofu, huevos, yogur, queso fresco, espinacas, tomates, pimientos, calabacín, cebollas, ajo, limones, plátanos y manzanas. ¿Quieres que lo ordene por pasillos del supermercado?

You: Sí, y añade café y pan.
Kaja: Verduras y fruta: espinacas, tomates, pimientos, calabacín, cebollas, ajo, limones, plátanos, manzanas.
  Despensa: garbanzos, lentejas, arroz, pasta integral, café.
  Frescos: tofu, huevos, yogur, queso fresco.
  Panadería: pan.
"""


def test_no_argument_replays_the_latest_session(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("resume")
    assert (r.code, r.out, r.err) == (0, BACKUP_REPLAY, "")
    assert demo_store("resume", "-c").out == BACKUP_REPLAY
    assert demo_store("resume", "--continue").out == BACKUP_REPLAY
    assert demo_store("resume", "01a226e4").out == BACKUP_REPLAY
    assert demo_store("resume", BACKUP).out == BACKUP_REPLAY


def test_another_owners_session_is_refused_naming_whose(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("resume", "01a22612")
    assert (r.code, r.out) == (5, "")
    assert r.err == (
        f"kaja: session '{LISTA}' belongs to {ANA}, not terminal: act as that owner with --owner {ANA}\n"
    )
    assert demo_store("resume", LISTA, "--json").code == 5


def test_a_session_without_events_is_rebuilt_from_its_messages(demo_store):
    r = demo_store("resume", "01a22612", "--owner", ANA)
    assert (r.code, r.out, r.err) == (0, LISTA_REPLAY, "")
    r = demo_store("resume", "--owner", ANA)  # the latest of that owner
    assert r.out == LISTA_REPLAY


def test_images_show_as_paths_and_missing_files_are_flagged(demo_store):
    folder = demo_store.state / "files" / "images"
    r = demo_store("resume", RECEIPT, "--owner", ANA)
    [line] = [x for x in r.out.splitlines() if "image:" in x]
    [png] = list((folder / RECEIPT).iterdir())
    assert line == f"  image: {png}"
    png.unlink()
    [line] = [
        x for x in demo_store("resume", RECEIPT, "--owner", ANA).out.splitlines() if "image:" in x
    ]
    assert line == f"  image: {png} — file missing"
    # from the timeline (session_events) too
    lines = [x for x in demo_store("resume", TOMATO).out.splitlines() if "image:" in x]
    assert lines == [f"  image: {p} (tomato leaf)" for p in (folder / TOMATO).iterdir()]
    for p in (folder / TOMATO).iterdir():
        p.unlink()
    lines = [x for x in demo_store("resume", TOMATO).out.splitlines() if "image:" in x]
    assert len(lines) == 1 and lines[0].endswith(" (tomato leaf) — file missing")


def test_tail(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("resume", TOMATO, "--tail", "2")
    assert r.code == 0, r
    assert r.out.splitlines()[2:] == [
        "… 8 earlier entries not shown (--tail)",
        "",
        "You: Where do I get shade cloth? And is 40 % too much for tomatoes?",
        "Kaja: Any garden centre sells it by the metre. 30–40 % is right for tomatoes in a"
        " heatwave; they still get plenty of light. Take it down once the temperatures drop"
        " below 30 °C.",
    ]
    r = demo_store("resume", TOMATO, "--tail", "0")
    assert r.out.splitlines()[2:] == ["… 10 earlier entries not shown (--tail)"]
    r = demo_store("resume", TOMATO, "--tail", "100")
    assert "earlier entries" not in r.out
    assert demo_store("resume", "--tail", "-1").code == 2


def test_not_found_ambiguous_and_bad_usage(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("resume", "ffff")
    assert (r.code, r.err) == (3, "kaja: no session 'ffff': `kaja sessions` lists them\n")
    r = demo_store("resume", "01a22")
    assert r.code == 2
    assert r.err.startswith("kaja: session prefix '01a22' is ambiguous: 01a2")
    assert f"{TOMATO} (Tomato leaves curling in the heat)" in r.err
    assert LISTA not in r.err  # only the acting owner's are candidates
    assert r.err.endswith(": type more of the id\n")
    r = demo_store("resume", "01a22612", "-c")
    assert (r.code, r.err) == (2, "kaja: give a session id or -c, not both\n")
    r = demo_store("resume", "--json", "--tail", "3")
    assert r.code == 2
    r = demo_store("resume", "--owner", "telegram:999")
    assert r.code == 3
    assert r.err == (
        "kaja: telegram:999 has no sessions: `kaja sessions --all-owners` lists everyone's\n"
    )


def test_resume_needs_a_store(kaja):
    for args in (["resume"], ["resume", "abc"], ["resume", "--json"]):
        r = kaja(*args)
        assert r.code == 3
        assert r.err.startswith(f"kaja: no Kaja store at {kaja.db}: ")
    assert not kaja.state.exists()


# --- --json: the agent's context -----------------------------------------------------------
MESSAGE_KEYS = [
    "id", "sessionId", "seq", "role", "content", "parts", "reasoning", "toolCallId", "persona",
    "model", "promptTokens", "completionTokens", "latencyMs", "finishReason", "createdAt",
    "tool_calls", "images", "condensed",
]  # fmt: skip
TOOL_CALL_KEYS = [
    "id", "messageId", "position", "callId", "name", "arguments", "resultMessageId", "status",
    "durationMs", "approval", "resultSummary",
]  # fmt: skip


def test_json_context_replaces_an_oversized_result_by_its_summary(demo_store):
    r = demo_store("resume", "--json")
    assert (r.code, r.err) == (0, "")
    doc = json.loads(r.out)
    assert list(doc) == ["session", "summary", "pending", "messages"]
    assert doc["session"]["id"] == BACKUP
    assert doc["session"]["pendingKind"] == "approval"
    assert doc["summary"] is None
    assert doc["pending"] == {
        "call_id": "call_7327e5920673",
        "kind": "approval",
        "name": "shell",
        "arguments": {
            "command": "crontab -l | { cat; echo '0 3 * * * /usr/local/bin/nightly-backup'; } | crontab -"
        },
    }
    msgs = doc["messages"]
    assert [m["seq"] for m in msgs] == [1, 2, 3, 4, 5, 6, 7]
    assert all(list(m) == MESSAGE_KEYS for m in msgs)
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant", "tool", "assistant",
                                         "user", "assistant"]  # fmt: skip
    assert [len(m["tool_calls"]) for m in msgs] == [0, 0, 1, 0, 0, 0, 1]
    [call] = msgs[2]["tool_calls"]
    assert list(call) == TOOL_CALL_KEYS
    assert call["name"] == "read_file" and call["arguments"] == {"path": "/var/log/backup.log"}
    assert call["resultMessageId"] == msgs[3]["id"]
    assert msgs[3]["toolCallId"] == call["callId"]
    assert msgs[3]["condensed"] is True
    assert msgs[3]["content"] == call["resultSummary"]
    assert msgs[3]["content"].startswith("The backup log covers 1–28 November")
    assert [m["condensed"] for m in msgs].count(True) == 1
    assert msgs[6]["tool_calls"][0]["callId"] == "call_7327e5920673"  # the pending one
    assert msgs[6]["tool_calls"][0]["status"] is None
    full = json.loads(demo_store("sessions", "export", BACKUP, "-f", "json").out)
    assert len(full["messages"][3]["content"]) > 15000  # the export keeps the whole result


def test_json_context_starts_at_the_latest_summary(demo_store):
    doc = json.loads(demo_store("resume", "01a215b9", "--json").out)
    assert doc["summary"] == {
        "sessionId": BUDGET,
        "summaryFrom": 13,
        "summary": "Q3 balanced once the car repair (1,150) and the holiday (2,050) were added."
        " Q4 plan saved as note budget-q4: eating out 700, irregular expenses 500 a month,"
        " savings 3,000.",
        "createdAt": "2026-11-26T03:00:59.001Z",
    }
    assert [m["seq"] for m in doc["messages"]] == [13, 14]
    assert doc["pending"] is None


def test_json_context_images(demo_store):
    doc = json.loads(demo_store("resume", TOMATO, "--json").out)
    [msg] = [m for m in doc["messages"] if m["images"]]
    [img] = msg["images"]
    assert msg["parts"] == [{"type": "image", "sha256": img["sha256"], "mime": "image/png"}]
    assert img["path"] == str(
        demo_store.state / "files" / "images" / TOMATO / f"{img['sha256']}.png"
    )
    assert img["exists"] is True
    os.unlink(img["path"])
    doc = json.loads(demo_store("resume", TOMATO, "--json").out)
    assert [i["exists"] for m in doc["messages"] for i in m["images"]] == [False]


# --- a store written by another program -------------------------------------------------------
def test_foreign_store_replays_and_never_changes(kaja):
    build_foreign_store(kaja.db)
    before = snapshot(kaja.state)
    r = kaja("resume", S_EVENTS)
    assert (r.code, r.err) == (0, "")
    assert r.out == (
        "[draft] budget [/x]\n"
        f"{S_EVENTS} · terminal · gpt-y · 4 messages · updated 2026-11-21 10:00\n"
        "\n"
        "You: Here is my budget\n"
        f"  image: /nonexistent/kaja/{SHA_MISSING}.png — file missing\n"
        '  → read_sheet {"file": "budget.xlsx"}\n'
        "  ✓ read_sheet ok · 1.5 s\n"
        "  [handoff] Passed to the accountant\n"
        "Kaja: not json at all\n"
        "  • \n"
    )
    r = kaja("resume")  # the latest: an empty-string owner is the terminal too
    assert r.out.startswith("[draft] budget [/x]\n")
    r = kaja("resume", S_UNTITLED)
    assert r.out == (
        "(untitled)\n"
        f"{S_UNTITLED} · terminal · gpt-x · 2 messages · updated 2026-11-20 10:00\n"
        "\n"
        "You: Plan a trip to Kraków\n"
        "  parts (not valid JSON): {not json\n"
        "  thinking: Trains first.\n"
        "  → search_trains {oops\n"
        "\n"
        "⏸ Waiting on you: search_trains · call call_p1\n"
        "  {oops\n"
        "  Open this session in Kaja to answer it.\n"
    )
    r = kaja("resume", "0190bbbb", "--owner", "telegram:42")
    assert r.out.endswith("\n(nothing to replay: this session has no events and no messages)\n")
    doc = json.loads(kaja("resume", S_UNTITLED, "--json").out)
    assert doc["session"]["topic"] == "travel" and doc["session"]["pendingKind"] is None
    assert doc["pending"] == {"call_id": "call_p1", "kind": None, "name": "search_trains",
                              "arguments": "{oops"}  # fmt: skip
    assert doc["messages"][0]["parts"] == "{not json"  # kept as the text it is
    assert doc["messages"][0]["sentiment"] == "curious"  # an extra column
    assert doc["messages"][0]["promptTokens"] is None  # a missing one
    assert doc["messages"][1]["tool_calls"][0]["arguments"] == "{oops"
    assert doc["messages"][1]["tool_calls"][0]["approval"] is None
    doc = json.loads(kaja("resume", S_EVENTS, "--json").out)
    tool = doc["messages"][2]
    assert (tool["content"], tool["condensed"]) == ("Rent 1200, food 400.", True)
    assert doc["messages"][0]["images"][0]["exists"] is False
    assert doc["messages"][1]["completionTokens"] == "lots"
    doc = json.loads(kaja("resume", S_GONE, "--owner", "telegram:42", "--json").out)
    assert doc["messages"] == [] and doc["session"]["title"] == "Gone"
    assert snapshot(kaja.state) == before


# --- on a terminal ------------------------------------------------------------------------------
def test_reasoning_is_dimmed_on_a_terminal(demo_store):
    code, screen = run_in_pty([KAJA, "resume", TOMATO, "--no-pager"], demo_store.env, raw=True)
    assert code == 0, screen
    assert "\x1b[2;3m  thinking: \x1b[0m\x1b[2;3mHeat stress vs. viral curl" in screen


def test_long_output_goes_through_the_pager(demo_store, tmp_path):
    paged = tmp_path / "paged.txt"
    env = dict(demo_store.env, PAGER=f"sh -c 'cat > {paged}'")
    env.pop("LESS", None)
    code, screen = run_in_pty([KAJA, "resume", TOMATO], env, rows=10)
    assert code == 0, screen
    text = paged.read_text()
    assert "Tomato leaves curling in the heat" in text
    assert "Tomato leaves" not in screen  # the pager had it, not the screen
    paged.unlink()
    code, screen = run_in_pty([KAJA, "resume", TOMATO, "--no-pager"], env, rows=10)
    assert not paged.exists() and "Tomato leaves curling in the heat" in screen
    code, screen = run_in_pty([KAJA, "resume", TOMATO], env, rows=200)  # it fits
    assert not paged.exists() and "Tomato leaves curling in the heat" in screen
    code, screen = run_in_pty([KAJA, "resume", TOMATO], dict(env, PAGER="cat"), rows=10)
    assert code == 0 and "Tomato leaves curling in the heat" in screen
    r = demo_store("resume", TOMATO, env={"PAGER": f"sh -c 'cat > {paged}'"})  # piped: never
    assert not paged.exists() and r.out.startswith("Tomato leaves")


def test_json_on_a_terminal_is_indented(demo_store):
    code, screen = run_in_pty([KAJA, "resume", "--json"], demo_store.env)
    assert code == 0, screen
    assert screen.startswith('{\n  "session": {\n    "id": "01a226e4')
    assert json.loads(screen)["session"]["id"] == BACKUP


def test_help(kaja):
    r = kaja("resume", "--help")
    assert r.code == 0 and "Replay a conversation" in r.out


def test_control_characters_from_the_database_never_reach_the_terminal(kaja):
    import sqlite3

    build_foreign_store(kaja.db)
    conn = sqlite3.connect(kaja.db)
    conn.execute(
        "UPDATE session_events SET payload = ? WHERE seq = 1",
        ('{"text": "hi \\u001b]0;pwned\\u0007 there"}',),
    )
    conn.commit()
    conn.close()
    code, screen = run_in_pty([KAJA, "resume", S_EVENTS, "--no-pager"], kaja.env, raw=True)
    assert code == 0, screen
    assert "hi \\x1b]0;pwned\\x07 there" in screen  # shown escaped (render.text), never raw
    assert "\x1b]0;" not in screen and "\x07" not in screen
