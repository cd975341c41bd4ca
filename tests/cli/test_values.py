"""Whatever another program stored (core/values.py, render.text): a value of
any type in any column, ids of any type or NULL, numbers that overflow, text
with control characters. Every command answers, with an exit code of the
table and one line at most; a report adds up; an owner is still erased."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import time

import html5lib
import pytest

from tests.conftest import KAJA
from tests.support.sessions_support import BACKUP, PRS, TOMATO, run_in_pty

ANA = "telegram:482913"
BIG = 2**63 - 1


def sql(kaja, *statements: str, args: tuple = ()) -> None:
    c = sqlite3.connect(kaja.db)
    with c:
        for s in statements:
            c.execute(s, args if "?" in s else ())
    c.close()


def query(kaja, statement: str, args: tuple = ()) -> list[tuple]:
    c = sqlite3.connect(kaja.db)
    try:
        return c.execute(statement, args).fetchall()
    finally:
        c.close()


def clean(r, codes=(0,)) -> None:
    assert r.code in codes, r
    assert "internal error" not in r.err and "Traceback" not in r.err, r


def terminal_session_with_tool_calls(kaja) -> str:
    return query(
        kaja,
        "SELECT m.sessionId FROM tool_calls t JOIN messages m ON m.id = t.messageId"
        " JOIN sessions s ON s.id = m.sessionId WHERE s.owner IS NULL LIMIT 1",
    )[0][0]


# --- numbers ---------------------------------------------------------------------------------
def test_token_counts_that_overflow_still_add_up(demo_store):
    sql(
        demo_store,
        f"UPDATE calls SET prompt_tokens = {BIG}",
        f"UPDATE messages SET promptTokens = {BIG}",
    )
    for argv in (["usage"], ["usage", "--by", "day"], ["usage", "--by", "day", "--since", "90d"],
                 ["sessions", "--all-owners"], ["sessions", "--all-owners", "--json"]):  # fmt: skip
        clean(demo_store(*argv))
    data = json.loads(demo_store("usage", "--json").out)
    calls = query(demo_store, "SELECT count(*) FROM calls")[0][0]
    assert data["total"]["prompt_tokens"] == pytest.approx(calls * BIG, rel=1e-12)
    assert isinstance(data["total"]["prompt_tokens"], int)


def test_a_duration_that_is_not_a_number(demo_store):
    sid = terminal_session_with_tool_calls(demo_store)
    sql(demo_store, "UPDATE tool_calls SET durationMs = 'slow'",
        "UPDATE tools SET duration_ms = 'slow'")  # fmt: skip
    r = demo_store("sessions", "export", sid)
    clean(r)
    assert " · slow" in r.out  # shown as stored, not as a time
    for argv in (["resume", sid, "--no-pager"], ["resume", sid, "--json"],
                 ["sessions", "export", sid, "-f", "json"], ["usage"]):  # fmt: skip
        clean(demo_store(*argv))


# --- ids of any type ---------------------------------------------------------------------------
@pytest.fixture
def integer_ids(kaja):
    """A store whose writer used INTEGER ids."""
    kaja.state.mkdir(parents=True)
    c = sqlite3.connect(kaja.db)
    with c:
        c.execute("CREATE TABLE sessions (id INTEGER PRIMARY KEY, owner TEXT, title TEXT,"
                  " createdAt TEXT, updatedAt TEXT)")  # fmt: skip
        c.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, sessionId INTEGER, seq INTEGER,"
                  " role TEXT, content TEXT, createdAt TEXT)")  # fmt: skip
        c.execute("INSERT INTO sessions VALUES (1, NULL, 'numbered', '2026-11-29T10:00:00Z',"
                  " '2026-11-29T10:00:00Z')")  # fmt: skip
        c.execute(
            "INSERT INTO messages VALUES (7, 1, 0, 'user', 'hello world', '2026-11-29T10:00:00Z')"
        )
    c.close()
    return kaja


def test_integer_ids_are_found_listed_and_deleted(integer_ids):
    kaja = integer_ids
    r = kaja("search", "hello")
    clean(r)
    assert r.out.startswith("1\t") and "hello world" in r.out
    clean(kaja("search", "hello", "--json"))
    assert kaja("sessions").out.startswith("1\t")
    for argv in (
        ["resume", "1", "--no-pager"],
        ["resume", "1", "--json"],
        ["sessions", "export", "1"],
    ):
        clean(kaja(*argv))
    clean(kaja("sessions", "delete", "1", "--yes"))
    assert query(kaja, "SELECT count(*) FROM sessions") == [(0,)]
    assert query(kaja, "SELECT count(*) FROM messages") == [(0,)]


def test_a_session_with_a_null_id_is_erased_with_its_owner(demo_store):
    sql(demo_store, "INSERT INTO sessions (id, owner, title, createdAt, updatedAt) VALUES"
        f" (NULL, '{ANA}', 'no id', '2026-11-29T10:00:00Z', '2026-11-29T10:00:00Z')")  # fmt: skip
    clean(demo_store("sessions", "--all-owners"))
    r = demo_store("wipe", "--owner", ANA, "--dry-run", "--json")
    clean(r)
    assert json.loads(r.out)["rows"]["sessions"] == 4  # three sessions, and the one with no id
    clean(demo_store("wipe", "--owner", ANA, "--yes"))
    assert query(demo_store, "SELECT count(*) FROM sessions WHERE owner = ?", (ANA,)) == [(0,)]


def test_an_id_with_a_slash_can_be_typed_back(demo_store):
    sql(demo_store, "INSERT INTO sessions (id, owner, title, createdAt, updatedAt) VALUES"
        " ('ab/cd', NULL, 'slashed', '2026-11-29T10:00:00Z', '2026-11-29T13:00:00Z')",
        "INSERT INTO messages (id, sessionId, seq, role, content) VALUES"
        " ('m-slash', 'ab/cd', 0, 'user', 'about the slash')")  # fmt: skip
    assert demo_store("sessions").out.startswith("ab/cd\t")
    r = demo_store("resume", "ab/cd", "--no-pager")
    clean(r)
    assert "about the slash" in r.out
    clean(demo_store("sessions", "export", "ab/cd"))
    clean(demo_store("sessions", "delete", "ab/cd", "--yes"))
    assert query(demo_store, "SELECT count(*) FROM sessions WHERE id = 'ab/cd'") == [(0,)]


def test_an_owner_stored_as_the_word_terminal_is_the_terminal(demo_store):
    sql(demo_store, "INSERT INTO sessions (id, owner, title, createdAt, updatedAt) VALUES"
        " ('lit-1', 'terminal', 'the word', '2026-11-29T10:00:00Z', '2026-11-29T13:00:00Z')",
        "INSERT INTO notes (owner, key, content) VALUES ('terminal', 'k', 'v')")  # fmt: skip
    assert "the word" in demo_store("sessions").out  # listed as the terminal's ...
    clean(demo_store("resume", "lit-1", "--no-pager"))  # ... resumed as the terminal ...
    clean(demo_store("wipe", "--owner", "terminal", "--yes"))  # ... and erased with it
    assert query(demo_store, "SELECT count(*) FROM sessions WHERE owner = 'terminal'") == [(0,)]
    assert query(demo_store, "SELECT count(*) FROM notes WHERE owner = 'terminal'") == [(0,)]


# --- text ---------------------------------------------------------------------------------------
def test_control_characters_never_reach_piped_output(demo_store):
    sql(demo_store, "UPDATE sessions SET title = 'a' || char(0) || 'b' || char(27) || '[31m'"
        " WHERE owner IS NULL")  # fmt: skip
    r = demo_store("sessions")
    clean(r)
    assert "\x00" not in r.out and "\x1b" not in r.out
    assert "a\\x00b\\x1b[31m" in r.out


# A BiDi override (the file name reads "exe.png"), isolates, marks, C1's CSI
# (ESC [ to some terminals) and DEL; a joiner inside an emoji is text.
HOSTILE = " evil\u202egnp.exe \u2066iso\u2069 \u200fmark\u061c csi\x9b31m del\x7f 👨\u200d👩"
SHOWN = " evil\\u202egnp.exe \\u2066iso\\u2069 \\u200fmark\\u061c csi\\x9b31m del\\x7f 👨\u200d👩"
RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_tomato(kaja) -> None:
    """HOSTILE at the end of the tomato session's title and of its first message
    (and of that message's line of the timeline)."""
    sql(kaja, "UPDATE sessions SET title = title || ? WHERE id = ?",
        "UPDATE messages SET content = content || ? WHERE sessionId = ? AND seq = 1",
        "UPDATE session_events SET payload = json_set(payload, '$.text',"
        " json_extract(payload, '$.text') || ?) WHERE sessionId = ? AND type = 'user'",
        args=(HOSTILE, TOMATO))  # fmt: skip


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for v in value.values() if isinstance(value, dict) else value:
            yield from strings(v)


@pytest.mark.parametrize(
    "argv",
    [["sessions"], ["resume", TOMATO], ["search", "evil"], ["sessions", "export", TOMATO],
     ["sessions", "--json"], ["resume", TOMATO, "--json"], ["search", "evil", "--json"],
     ["sessions", "export", TOMATO, "-f", "json"], ["sessions", "export", "--all", "-f", "jsonl"]],
    ids=" ".join,
)  # fmt: skip
def test_bidi_and_c1_characters_are_shown_escaped(demo_store, argv):
    """Text shows them as `\\u202e`, `\\x9b` (the rule for control characters);
    JSON escapes them (`\\u009b`) and still holds the text as stored."""
    hostile_tomato(demo_store)
    r = demo_store(*argv)
    clean(r)
    assert not RAW.search(r.out), RAW.search(r.out)
    if "--json" in argv or "json" in argv[-1]:
        assert (
            "\\u202egnp.exe \\u2066iso\\u2069 \\u200fmark\\u061c csi\\u009b31m del\\u007f" in r.out
        )
        docs = [json.loads(line) for line in r.out.splitlines()]
        assert any(HOSTILE in s for s in strings(docs))
    else:
        assert SHOWN in r.out


def test_a_title_quoted_in_an_error_is_escaped_and_the_error_one_line(demo_store):
    sql(demo_store, "UPDATE sessions SET title = title || ? WHERE id = ?",
        args=(HOSTILE + "\nsecond line", TOMATO))  # fmt: skip
    r = demo_store("resume", TOMATO[:5])  # ambiguous: the error lists the sessions it may be
    assert r.code == 2 and r.err.count("\n") == 1 and not RAW.search(r.err), r
    assert f"{TOMATO} (Tomato leaves curling in the heat{SHOWN} second line)" in r.err


def test_bidi_and_c1_characters_are_escaped_in_html(demo_store, tmp_path):
    hostile_tomato(demo_store)
    out = tmp_path / "tomato.html"
    clean(demo_store("sessions", "export", TOMATO, "-o", str(out)))
    page = out.read_text()
    assert not RAW.search(page)
    tree = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)
    assert tree.find(".//title").text.endswith(SHOWN)
    assert SHOWN in "".join(tree.find(".//body").itertext())


@pytest.mark.process  # a terminal: the table, the replay and --json indented
def test_bidi_and_c1_characters_never_reach_a_terminal(demo_store):
    hostile_tomato(demo_store)
    for argv in (["sessions"], ["resume", TOMATO, "--no-pager"], ["search", "evil", "--no-pager"],
                 ["resume", TOMATO, "--json"]):  # fmt: skip
        code, screen = run_in_pty([KAJA, *argv], demo_store.env, cols=250, raw=True)
        assert code == 0, (argv, screen)
        assert not RAW.search(screen), (argv, screen)
        assert "\\u202egnp.exe" in screen, (argv, screen)


# --- JSON nested deeper than any parser goes --------------------------------------------------------
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def sqlite_json_limit() -> int:
    """How deep this SQLite's JSON functions go (1,000 since 3.45, 2,000 before)."""
    c = sqlite3.connect(":memory:")
    valid = lambda n: c.execute("SELECT json_valid(?)", (nested(n),)).fetchone()[0]  # noqa: E731
    return next(n for n in (1000, 2000) if valid(n) and not valid(n + 1))


def test_json_nested_too_deep_is_shown_as_its_text(demo_store, tmp_path):
    """1,500 levels (3 KB) in `messages.parts`, as deep as SQLite's JSON goes in
    `tool_calls.arguments` (the JSON around it went past it), 1,500 in a
    pending call's arguments: each is shown as the text it is, as JSON that is
    not valid is; 200 levels are still JSON. `export --all` goes past them."""
    deepest = sqlite_json_limit()
    sql(demo_store, "UPDATE messages SET parts = ? WHERE sessionId = ? AND seq = 1",
        args=(nested(1500), TOMATO))  # fmt: skip
    sql(demo_store, "UPDATE tool_calls SET arguments = ? WHERE messageId IN"
        " (SELECT id FROM messages WHERE sessionId = ?)", args=(nested(deepest), TOMATO))  # fmt: skip
    sql(demo_store, "UPDATE tool_calls SET arguments = ? WHERE messageId IN"
        " (SELECT id FROM messages WHERE sessionId = ?)", args=(nested(1500), BACKUP))  # fmt: skip
    sql(demo_store, "UPDATE messages SET parts = ? WHERE sessionId = ? AND seq = 1",
        args=(nested(200), PRS))  # fmt: skip

    r = demo_store("resume", TOMATO, "--json")
    clean(r)
    doc = json.loads(r.out)
    assert doc["messages"][0]["parts"] == nested(1500)
    calls = [c for m in doc["messages"] for c in m["tool_calls"]]
    assert calls and all(c["arguments"] == nested(deepest) for c in calls)
    r = demo_store("resume", BACKUP, "--json")
    clean(r)
    assert json.loads(r.out)["pending"]["arguments"] == nested(1500)
    r = demo_store("resume", PRS, "--json")
    assert json.loads(r.out)["messages"][0]["parts"] == json.loads(nested(200))
    for argv in (["resume", BACKUP], ["sessions", "export", BACKUP]):
        clean(demo_store(*argv))
    r = demo_store("sessions", "export", TOMATO)
    clean(r)
    assert f"*parts (not valid JSON):* `{nested(1500)}`" in r.out
    r = demo_store("sessions", "export", TOMATO, "-f", "json")
    clean(r)
    assert json.loads(r.out)["messages"][0]["parts"] == nested(1500)
    clean(demo_store("sessions", "export", TOMATO, "-o", str(tmp_path / "t.html")))
    html5lib.HTMLParser(strict=True).parse((tmp_path / "t.html").read_text())

    r = demo_store("sessions", "export", "--all", "--all-owners", "-f", "jsonl")
    clean(r)
    assert len(r.out.splitlines()) == 13
    r = demo_store("sessions", "export", "--all", "-o", str(tmp_path / "md") + "/")
    clean(r)
    assert len(list((tmp_path / "md").iterdir())) == 7
    r = demo_store("doctor", "--json")
    clean(r, codes=(0, 1))
    assert json.loads(r.out)["checks"]


# --- search ----------------------------------------------------------------------------------------
def test_a_query_too_large_for_sqlite_is_a_usage_error(demo_store):
    words = " ".join(["backup"] * 999)
    r = demo_store("search", words)
    assert r.code == 2 and r.err == (
        "kaja: too many words to search for (999): at most 100: a few distinctive words find a"
        " message best\n"
    ), r
    r = demo_store("search", "--fts", " OR ".join(["backup"] * 999))
    assert r.code == 2 and "--fts: Expression tree is too large" in r.err, r


# --- a store another process holds -----------------------------------------------------------------
HOLD_EXCLUSIVE = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
c.execute("UPDATE sessions SET title = title")
print("held", flush=True)
time.sleep(30)
"""


def test_a_store_not_in_wal_mode_locked_by_a_writer_says_why(demo_store):
    sql(demo_store, "PRAGMA journal_mode = DELETE")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_EXCLUSIVE, str(demo_store.db)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        for argv in (["sessions"], ["resume", "-c", "--json"], ["usage"]):
            start = time.monotonic()
            r = demo_store(*argv)
            assert r.code == 4, (argv, r)
            assert (
                f"is locked by another process ({holder.pid}), and it is not in WAL mode" in r.err
            )
            assert "`kaja doctor --fix` (with Kaja closed) switches it to WAL" in r.err
            assert time.monotonic() - start < 4  # a reader waits a second, not five
    finally:
        holder.kill()
        holder.wait()


# --- doctor and the writing commands on files that are not what they should be ----------------------
def test_doctor_checks_an_older_tool_calls_table(demo_store):
    sql(demo_store, "DROP TABLE tool_calls", "CREATE TABLE tool_calls (id TEXT)")
    r = demo_store("doctor")
    clean(r, (0, 1))
    assert "tool calls: not checked: no such column" in r.out
    assert "missing 10 columns" in r.out


@pytest.mark.parametrize("what", ["folder", "passwd"])
def test_writing_commands_refuse_what_is_no_database(kaja, tmp_path, what):
    target = tmp_path / "folder"
    target.mkdir()
    if what == "passwd":
        target = tmp_path / "passwd"
        target.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for argv in (["usage", "reset", "--yes"], ["sessions", "delete", "x", "--yes"],
                 ["wipe", "--owner", "telegram:1", "--yes"], ["search", "--reindex"]):  # fmt: skip
        r = kaja("--db", str(target), *argv)
        assert r.code == 5, (argv, r)
        assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, r


@pytest.mark.skipif(sys.platform != "linux", reason="a character device at a known path")
@pytest.mark.process  # a device: only the real command
def test_writing_commands_refuse_a_device(kaja):
    for argv in (["usage", "reset", "--yes"], ["sessions", "delete", "x", "--yes"],
                 ["wipe", "--owner", "telegram:1", "--yes"], ["search", "--reindex"]):  # fmt: skip
        r = kaja("--db", "/dev/null", *argv, timeout=30)
        assert r.code == 5, (argv, r)
        assert "/dev/null is a character device, not a SQLite database" in r.err


def test_json_output_stays_json_whatever_the_store_holds(demo_store):
    """SQLite writes an infinite REAL as `Inf` and Python as `Infinity`: neither is JSON."""
    sid = terminal_session_with_tool_calls(demo_store)
    sql(demo_store, "UPDATE sessions SET title = -9e999, persona = x'00ff' WHERE id = ?",
        "UPDATE messages SET seq = 9e999 WHERE sessionId = ? AND seq = 0",
        "UPDATE messages SET promptTokens = 9e999",
        "UPDATE session_events SET payload = '{\"text\": NaN}'", args=(sid,))  # fmt: skip

    def refuse(constant):
        raise ValueError(constant)

    for argv in (["sessions", "--json"], ["resume", sid, "--json"], ["sessions", "export", sid,
                 "-f", "json"], ["search", "backup", "--json"]):  # fmt: skip
        r = demo_store(*argv)
        clean(r)
        json.loads(r.out, parse_constant=refuse)
    session = json.loads(demo_store("resume", sid, "--json").out)["session"]
    assert session["title"] == "-Inf" and session["persona"] == "00FF"


def test_a_blob_where_a_time_should_be_is_shown_not_an_internal_error(kaja):
    # Found by test_drift under load: the listing's fast path for times took any value as text.
    kaja.db.parent.mkdir(parents=True, exist_ok=True)
    sql(kaja, "CREATE TABLE sessions (id TEXT, createdAt TEXT, updatedAt TEXT)",
        "INSERT INTO sessions VALUES ('a', NULL, X'41425A')")  # fmt: skip
    r = kaja("sessions")
    assert (r.code, r.out.split()[:2]) == (0, ["a", "41425A"]), r
    assert json.loads(kaja("sessions", "--json").out)["sessions"][0]["updatedAt"] == "41425A"
