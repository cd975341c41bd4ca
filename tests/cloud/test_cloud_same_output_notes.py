"""Notes, `search --notes` and search in Chinese, Japanese and Korean in cloud
mode: the same demo (`kaja demo --seed 1 --now …`) in SQLite and in PostgreSQL,
every command's `--json` compared field by field (issue 28; README "Cloud
mode"), with what only cloud mode has: the account as "you", and the
refusals that remain.

The fields allowed to differ, and why, are `ALLOWED` below (and the README).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from tests.cli.test_search import CREME
from tests.cli.test_search_cjk import SENTENCES
from tests.cloud.test_cloud_same_output import compare, differences, run
from tests.support.cloud_support import use_server
from tests.support.side_support import killed_at

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

ANA = "telegram:482913"
# field (a path in the JSON document) → why it may differ
ALLOWED = {
    "forget": {
        "path": "where the notes are: the file's path, or the server (password as ***) and schema",
    },
}

NOTES = [
    ["notes", "--json"],
    ["notes", "--json", "--all-owners"],
    ["notes", "--json", "--owner", ANA],
    ["notes", "--json", "--all-owners", "--tag", "FINANCE"],
    ["notes", "--json", "--all-owners", "--importance", "low"],
    ["notes", "--json", "--owner", "widget:nobody"],
    ["notes", "show", "diet", "--json"],
    ["notes", "show", "budget-q4", "--json"],
    ["notes", "show", "dieta", "--owner", ANA, "--json"],
    ["notes", "export", "-f", "json"],
    ["notes", "export", "-f", "json", "--all-owners"],
    ["search", "--notes", "--json", "creme", "brulee"],
    ["search", "--notes", "--json", "--all-owners", "--fts", "salud OR finance"],
    ["search", "--notes", "--json", "--all-owners", "-n", "0", "the"],
    ["search", "--notes", "--json", "--all-owners", "--recent", "-n", "0", "a*"],
    ["search", "--notes", "--json", "--owner", ANA, "carne"],
    ["search", "--notes", "--json", "--all-owners", "--since", "2026-11-30", "e*"],
    ["search", "--notes", "--json", "--all-owners", "--until", "2026-11-30", "e*"],
    ["search", "--notes", "--json", "--all-owners", "--limit", "1", "the"],
    ["search", "--notes", "--json", "nothing-matches-this-zzz"],
]


def pg_keys(kaja) -> set[tuple[str, str]]:
    return set(kaja.pg.query("SELECT coalesce(owner, ''), key FROM kaja.notes"))


def local_keys(kaja) -> set[tuple[str, str]]:
    with closing(sqlite3.connect(kaja.state / "kaja.db")) as conn:
        return set(conn.execute("SELECT coalesce(owner, ''), key FROM notes").fetchall())


@pytest.mark.parametrize("argv", NOTES, ids=" ".join)
def test_notes_and_their_search_are_the_same(cloud_demo, local_demo, argv):
    doc = compare(local_demo, cloud_demo, argv)
    assert doc is not None


def test_the_notes_are_there_and_searched(cloud_demo):
    """Not two empty answers: the demo's notes, found and ranked."""
    _, doc, _ = run(cloud_demo, "notes", "--json", "--all-owners")
    assert doc["total"] == 8
    _, doc, _ = run(cloud_demo, "search", "--notes", "--json", "--all-owners", "--fts",
                    "salud OR finance")  # fmt: skip
    assert [h["key"] for h in doc["results"]] == ["budget-q4", "dentista"]
    assert all(h["score"] > 0 for h in doc["results"])
    _, doc, _ = run(cloud_demo, "search", "--notes", "--json", "creme", "brulee")
    [hit] = doc["results"]
    assert hit["key"] == "diet"
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["crème", "brûlée"]


def test_markdown_and_plain_output_are_the_same(cloud_demo, local_demo):
    for argv in (["notes", "export"], ["notes", "export", "--all-owners", "--tag", "salud"],
                 ["notes", "--all-owners"], ["notes", "show", "name"],
                 ["search", "--notes", "--all-owners", "the"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.out) == (b.code, b.out), argv
        assert a.code == 0 and a.out, argv


def test_errors_are_the_same(cloud_demo, local_demo):
    for argv in (["notes", "show", "dieta"], ["notes", "show", "diett"], ["notes", "show", ""],
                 ["notes", "forget", "diet", "dieta", "--yes"], ["notes", "forget", "zzz"],
                 ["search", "--notes", "--fts", "a AND"], ["search", "--notes", "  "],
                 ["search", "--notes", "--owner", ANA, "--all-owners", "x"],
                 ["notes", "export", "--owner", "widget:nobody", "-o", "x.md"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert a.code != 0 or "nothing written" in a.err, argv
        assert (a.code, a.err) == (b.code, b.err.replace(str(cloud_demo.state),
                                                         str(local_demo.state))), argv  # fmt: skip


def test_forget_plans_and_forgets_the_same(cloud_demo, local_demo):
    plan = ["notes", "forget", "diet", "code-style", "--dry-run", "--json"]
    doc = compare(local_demo, cloud_demo, plan, ALLOWED["forget"])
    assert doc["notes"] == ["diet", "code-style"] and doc["forgotten"] == 0
    _, cloud_plan, _ = run(cloud_demo, *plan)
    assert cloud_plan["path"] == f"{cloud_demo.pg.url} (schema kaja)"
    assert pg_keys(cloud_demo) == local_keys(local_demo)  # a dry run deletes nothing
    done = ["notes", "forget", "diet", "code-style", "--yes", "--json"]
    doc = compare(local_demo, cloud_demo, done, ALLOWED["forget"])
    assert doc["forgotten"] == 2
    assert pg_keys(cloud_demo) == local_keys(local_demo)
    assert ("", "diet") not in pg_keys(cloud_demo) and ("", "name") in pg_keys(cloud_demo)
    compare(local_demo, cloud_demo, ["notes", "--json", "--all-owners"])
    compare(local_demo, cloud_demo, ["search", "--notes", "--json", "creme"])


def test_forget_of_another_owners_note_deletes_nothing_on_the_server(cloud_demo):
    before = pg_keys(cloud_demo)
    r = cloud_demo("notes", "forget", "diet", "dieta", "--yes")
    assert r.code == 5 and "note 'dieta' belongs to telegram:482913, not terminal" in r.err, r
    assert pg_keys(cloud_demo) == before


@pytest.mark.process
def test_killed_before_its_commit_forget_leaves_every_note_on_the_server(cloud_demo):
    before = pg_keys(cloud_demo)
    killed_at(cloud_demo, "notes-commit", "notes", "forget", "diet", "--yes")
    assert pg_keys(cloud_demo) == before  # the server rolled the transaction back
    r = cloud_demo("notes", "forget", "diet", "--yes")
    assert r.code == 0, r
    assert ("", "diet") not in pg_keys(cloud_demo)


# --- the account is "you" ------------------------------------------------------------------
def test_the_account_is_you_for_notes(cloud_demo, local_demo):
    """With `[memory] account`, the account's notes are "yours": what a local
    store answers with --owner for that owner."""
    use_server(cloud_demo, cloud_demo.pg.url, account=ANA)
    for argv in (["notes", "--json"], ["notes", "show", "dieta", "--json"],
                 ["search", "--notes", "--json", "carne"], ["notes", "export", "-f", "json"],
                 ["notes", "forget", "dentista", "--dry-run", "--json"]):  # fmt: skip
        a, b = run(local_demo, *argv, "--owner", ANA), run(cloud_demo, *argv)
        assert a[0] == b[0] == 0, (argv, a, b)
        assert [d for d in differences(a[1], b[1]) if d != "path"] == [], argv
    _, doc, _ = run(cloud_demo, "notes", "--json")
    assert doc["owner"] == ANA and {n["key"] for n in doc["notes"]} == {"dieta", "dentista"}
    r = cloud_demo("notes", "show", "diet")  # the terminal's, not the account's
    assert r.code == 5 and "belongs to terminal, not telegram:482913" in r.err, r
    r = cloud_demo("notes", "forget", "dentista", "--yes", "--json")
    assert r.code == 0 and json.loads(r.out)["forgotten"] == 1, r
    assert (ANA, "dentista") not in pg_keys(cloud_demo) and (ANA, "dieta") in pg_keys(cloud_demo)


# --- what remains refused ---------------------------------------------------------------------
def test_without_a_kaja_schema_notes_say_there_is_none(cloud):
    where = f"{cloud.pg.url} (schema kaja)"
    r = cloud("notes")
    assert r.code == 0 and r.out == "", r
    assert r.err == f"kaja: no notes: there is no Kaja store at {where}\n", r
    r = cloud("search", "--notes", "x", "--json")
    assert r.code == 0 and json.loads(r.out)["results"] == [], r
    assert f"no Kaja store in {where}: no notes to search" in r.err, r
    for argv in (["notes", "show", "x"], ["notes", "forget", "x", "--yes"]):
        r = cloud(*argv)
        assert r.code == 3 and r.err.count("\n") == 1, (argv, r)
        assert f"no Kaja store in {where}" in r.err, (argv, r)
    assert cloud.pg.query("SELECT to_regnamespace('kaja')") == [(None,)]  # nothing made


def test_another_programs_schema_is_read_never_written(cloud):
    with cloud.pg.connect() as conn:
        conn.execute("CREATE SCHEMA kaja")
        conn.execute("CREATE TABLE kaja.notes (owner text, key text, content text)")
        conn.execute("INSERT INTO kaja.notes VALUES ('', 'diet', 'theirs')")
    for argv, code in ((["notes"], 1), (["notes", "show", "diet"], 1),
                       (["search", "--notes", "theirs"], 1),
                       (["notes", "forget", "diet", "--yes"], 5)):  # fmt: skip
        r = cloud(*argv)
        assert r.code == code and r.err.count("\n") == 1 and "is not Kaja's" in r.err, (argv, r)
    assert cloud.pg.query("SELECT key FROM kaja.notes") == [("diet",)]


# --- Chinese, Japanese and Korean -----------------------------------------------------------------
CJK_WORDS = [  # tests/cli/test_search_cjk.py's words, with the hits they must give
    ("北京", ["zh-1"]),
    ("长城", ["zh-1"]),
    ("广州", ["zh-2"]),
    ("东京", []),
    ("東京", ["mixed", "ja-1"]),
    ("住んで", ["ja-1"]),
    ("京都", ["ja-1"]),
    ("ごはん", ["ja-2"]),
    ("서울", ["ko-1"]),
    ("부산", ["ko-1"]),
    ("회의", ["ko-2"]),
    ("대구", []),
    ("大阪", []),
    ("猫", ["ja-3", "ja-2"]),
    ("魚", ["ja-2"]),
]
CJK_QUERIES = [
    (["北京", "长城"], ["zh-1"]),
    (["北京", "广州"], []),
    (["東京都"], []),
    (["creme", "東京"], ["mixed"]),
    (["tomato", "東京"], []),
    (["--fts", "北京 OR 서울"], ["zh-1", "ko-1"]),
    (["--fts", "東京 NOT 京都"], ["mixed"]),
    (["--fts", '"私は東京"'], ["ja-1"]),
    (["--fts", "東京 NEAR/3 costs"], ["mixed"]),
    (["東京", "--role", "assistant"], []),
    (["東京", "--owner", ANA], []),
    (["東京", "--session", CREME[:8], "--recent"], ["mixed", "ja-1"]),
    (["東京", "--limit", "1"], ["mixed"]),
    (["東京", "--all-owners", "--since", "2026-11-28"], ["mixed", "ja-1"]),
    (["東京", "--all-owners", "--since", "2026-11-29"], []),
    (["東京", "--all-owners", "--until", "2026-11-29"], ["mixed", "ja-1"]),
    (["東京", "--all-owners", "--until", "2026-11-28"], []),
]


@pytest.fixture
def cjk_pair(cloud_demo, local_demo):
    """The test sentences written as the agent writes them, into both stores."""
    rows = [(mid, CREME, 50 + i, text) for i, (mid, text) in enumerate(SENTENCES.items())]
    with closing(sqlite3.connect(local_demo.state / "kaja.db")) as conn, conn:
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, ?, ?, 'user', ?, '2026-11-28T16:00:00.000Z')",
            rows,
        )
    with cloud_demo.pg.connect() as conn:
        conn.cursor().executemany(
            'INSERT INTO kaja.messages (id, "sessionId", seq, role, content, "createdAt")'
            " VALUES (%s, %s, %s, 'user', %s, '2026-11-28T16:00:00.000Z')",
            rows,
        )
    return local_demo, cloud_demo


def _found(doc) -> list[str]:
    return [h["message_id"] for h in doc["results"]]


@pytest.mark.parametrize(("word", "expected"), CJK_WORDS, ids=[w for w, _ in CJK_WORDS])
def test_a_cjk_word_finds_what_it_finds_locally(cjk_pair, word, expected):
    local, cloud = cjk_pair
    doc = compare(local, cloud, ["search", "--json", word])
    assert _found(doc) == expected
    assert doc["source"] == "index"


@pytest.mark.parametrize(
    ("argv", "expected"), CJK_QUERIES, ids=[" ".join(a) for a, _ in CJK_QUERIES]
)
def test_cjk_queries_and_filters_are_the_same(cjk_pair, argv, expected):
    local, cloud = cjk_pair
    doc = compare(local, cloud, ["search", "--json", *argv])
    assert _found(doc) == expected


def test_cjk_snippets_ranks_and_errors_are_the_same(cjk_pair):
    local, cloud = cjk_pair
    doc = compare(local, cloud, ["search", "--json", "--all-owners", "-n", "0", "住んで"])
    [hit] = doc["results"]
    assert hit["snippet"] == SENTENCES["ja-1"] and hit["score"] > 0
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["住んで"]
    assert hit["session_id"] == CREME and hit["owner"] is None
    a, b = local("search", "长城"), cloud("search", "长城")  # the plain listing too
    assert (a.code, a.out) == (b.code, b.out) and SENTENCES["zh-1"] in a.out
    a, b = local("search", "--fts", '東京 AND "'), cloud("search", "--fts", '東京 AND "')
    assert (a.code, a.err) == (b.code, b.err) and a.code == 2 and "--fts" in a.err


def test_a_message_written_later_is_found_and_a_deleted_one_is_not(cjk_pair):
    """No index to keep on the server: what the agent wrote is found at once."""
    _, cloud = cjk_pair
    with cloud.pg.connect() as conn:
        conn.execute(
            'INSERT INTO kaja.messages (id, "sessionId", seq, role, content, "createdAt")'
            " VALUES ('later', %s, 70, 'user', '明天我们在北京见面吧。', '2026-11-29T09:00:00.000Z')",
            (CREME,),
        )
        conn.execute("DELETE FROM kaja.messages WHERE id = 'zh-1'")
    _, doc, _ = run(cloud, "search", "--json", "北京")
    assert _found(doc) == ["later"]


def test_the_servers_pattern_picks_every_message_local_search_indexes(pg):
    """The server picks the messages in CJK by a regular expression of the CJK
    ranges: every range's ends and their neighbours, in a message alone and
    amid Latin text, give the server's answer and `cjk.holds_cjk`'s alike."""
    from kaja_cli.core.conversations.search import cjk, cjk_server

    chars = {c for lo, hi in cjk.RANGES for c in (lo - 1, lo, hi, hi + 1)} - set(
        range(0xD800, 0xE000)
    )
    texts = [t for c in sorted(chars) for t in (chr(c), f"abc {chr(c)} déf")]
    rows = pg.query("SELECT t, t ~ %s FROM unnest(%s::text[]) AS t", (cjk_server.pattern(), texts))
    assert len(rows) == len(texts) > 100
    wrong = [(hex(ord(t.strip("abcdéf ")[0])), t) for t, matched in rows
             if matched != cjk.holds_cjk(t)]  # fmt: skip
    assert wrong == []


def test_an_archived_sessions_cjk_messages_are_left_out_as_locally(cjk_pair):
    local, cloud = cjk_pair
    for k in (local, cloud):
        r = k("sessions", "archive", CREME)
        assert r.code == 0, r
    assert _found(compare(local, cloud, ["search", "--json", "東京"])) == []
    doc = compare(local, cloud, ["search", "--json", "--archived", "東京"])
    assert _found(doc) == ["mixed", "ja-1"]
