"""Search in Chinese, Japanese and Korean (core/cjk.py, core/cjk_index.py, core/search.py).

Real sentences, written the way the agent writes them (raw sqlite3 in a
second process, no kaja code), searched through the real `kaja`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from kaja_cli.core.conversations.search import cjk
from tests.cli.test_search import CREME, GARDEN, as_read_only, foreign_store, hits, run_as, run_sql
from tests.conftest import Kaja

SENTENCES = {
    "zh-1": "我下个月要去北京出差，顺便看看长城。",
    "zh-2": "上海的天气比广州凉快一点。",
    "ja-1": "私は東京に住んでいますが、週末は京都へ行きます。",
    "ja-2": "うちの猫は魚が大好きで、毎朝ごはんを待っています。",
    "ja-3": "これは私の猫",
    "ko-1": "저는 서울에 살아요. 주말에는 부산에 가요.",
    "ko-2": "오늘 회의는 세 시에 시작합니다.",
    "mixed": "Crème brûlée in 東京 costs ¥800",
}


def agent_writes(k: Kaja, mid: str, content: str, seq: int = 50) -> None:
    run_sql(
        k.db,
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
        " VALUES (?, ?, ?, 'user', ?, '2026-11-28T16:00:00.000Z')",
        (mid, CREME, seq, content),
    )


@pytest.fixture
def cjk_store(demo_store: Kaja) -> Kaja:
    for i, (mid, text) in enumerate(SENTENCES.items()):
        agent_writes(demo_store, mid, text, 50 + i)
    return demo_store


def found(k: Kaja, *args: str) -> list[str]:
    return [h["message_id"] for h in hits(k, *args)]


def cjk_rows(k: Kaja, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(k.db)) as conn:
        return conn.execute(sql).fetchall()


def cjk_integrity(k: Kaja) -> None:
    with closing(sqlite3.connect(k.db)) as conn:
        conn.execute(
            "INSERT INTO conversation_text_cjk(conversation_text_cjk) VALUES ('integrity-check')"
        )
        conn.commit()


# --- the words of real sentences -----------------------------------------------------
@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("北京", ["zh-1"]),  # Chinese: a 2-character word inside a sentence
        ("长城", ["zh-1"]),
        ("广州", ["zh-2"]),
        ("东京", []),  # simplified 东: not the Japanese 東京
        ("東京", ["mixed", "ja-1"]),  # the shorter message first
        ("住んで", ["ja-1"]),  # kanji and kana together
        ("京都", ["ja-1"]),
        ("ごはん", ["ja-2"]),  # kana only
        ("서울", ["ko-1"]),  # Korean: the particle 에 is attached (서울에)
        ("부산", ["ko-1"]),
        ("회의", ["ko-2"]),
        ("대구", []),
        ("大阪", []),
        ("猫", ["ja-3", "ja-2"]),  # one character: inside a sentence and at its end
        ("魚", ["ja-2"]),
    ],
)
def test_a_word_inside_a_sentence_is_found(cjk_store: Kaja, word: str, expected: list) -> None:
    assert found(cjk_store, word) == expected


def test_every_word_must_match_and_snippets_highlight_the_characters(cjk_store: Kaja) -> None:
    assert found(cjk_store, "北京", "长城") == ["zh-1"]
    assert found(cjk_store, "北京", "广州") == []
    assert found(cjk_store, "東京都") == []  # "東京 京都" as a phrase: not in any message
    [hit] = hits(cjk_store, "住んで")
    assert hit["snippet"] == SENTENCES["ja-1"]
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["住んで"]
    [hit] = hits(cjk_store, "서울")
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["서울"]
    # Plain text output: the same snippet as the JSON.
    r = cjk_store("search", "长城")
    assert r.code == 0 and r.out.rstrip("\n").split("\t")[-1] == SENTENCES["zh-1"]


def test_a_latin_word_and_a_cjk_word_together(cjk_store: Kaja) -> None:
    [hit] = hits(cjk_store, "creme", "東京")  # accents and case ignored, as everywhere
    assert hit["message_id"] == "mixed"
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["Crème", "東京"]
    assert found(cjk_store, "tomato", "東京") == []


def test_a_message_with_the_word_twice_ranks_above_once(demo_store: Kaja) -> None:
    agent_writes(demo_store, "once", "東京の話です。大阪は大きな街です。", 60)
    agent_writes(demo_store, "twice", "東京の話です。東京は大きな街です。", 61)
    results = hits(demo_store, "東京")
    assert [h["message_id"] for h in results] == ["twice", "once"]
    assert results[0]["score"] > results[1]["score"] > 0.01


def test_fts_syntax_with_cjk(cjk_store: Kaja) -> None:
    assert sorted(found(cjk_store, "--fts", "北京 OR 서울")) == ["ko-1", "zh-1"]
    assert found(cjk_store, "--fts", "東京 NOT 京都") == ["mixed"]
    assert found(cjk_store, "--fts", '"私は東京"') == ["ja-1"]
    assert found(cjk_store, "--fts", "東京 NEAR/3 costs") == ["mixed"]
    r = cjk_store("search", "--fts", '東京 AND "')
    assert r.code == 2 and "--fts" in r.err


def test_filters_apply_as_to_any_search(cjk_store: Kaja) -> None:
    assert found(cjk_store, "東京", "--role", "assistant") == []
    assert found(cjk_store, "東京", "--owner", "telegram:482913") == []
    assert found(cjk_store, "東京", "--session", CREME[:8], "--recent") == ["mixed", "ja-1"]
    assert found(cjk_store, "東京", "--limit", "1") == ["mixed"]


# --- the index kept current ------------------------------------------------------------
def test_what_the_agent_writes_later_is_found_and_deleted_messages_are_not(
    demo_store: Kaja,
) -> None:
    assert found(demo_store, "北京") == []  # makes the index
    r = demo_store("search", "北京")
    assert r.err.startswith("kaja: no matches")  # made once: no note the second time
    agent_writes(demo_store, "later", "明天我们在北京见面吧。")
    assert cjk_rows(demo_store, "SELECT count(*) FROM conversation_text_cjk_queue") == [(1,)]
    assert found(demo_store, "北京") == ["later"]
    assert cjk_rows(demo_store, "SELECT count(*) FROM conversation_text_cjk_queue") == [(0,)]
    run_sql(demo_store.db, "UPDATE messages SET content = '后天在上海见。' WHERE id = 'later'")
    assert found(demo_store, "北京") == []
    assert found(demo_store, "上海") == ["later"]
    run_sql(demo_store.db, "DELETE FROM messages WHERE id = 'later'")
    assert found(demo_store, "上海") == []
    # Written and deleted before kaja looked: it leaves the queue and no trace.
    agent_writes(demo_store, "gone", "我在广州。")
    run_sql(demo_store.db, "DELETE FROM messages WHERE id = 'gone'")
    assert found(demo_store, "广州") == []
    assert cjk_rows(demo_store, "SELECT count(*) FROM conversation_text_cjk") == [(0,)]
    cjk_integrity(demo_store)


def test_a_latin_message_costs_the_index_nothing(cjk_store: Kaja) -> None:
    found(cjk_store, "東京")
    agent_writes(cjk_store, "latin", "Just tomatoes and basil today.")
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk_queue") == [(0,)]
    # Not all ASCII: queued by the trigger, dropped by kaja (no CJK in it).
    agent_writes(cjk_store, "accents", "Crème brûlée, “again” — tomorrow 🍮", 51)
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk_queue") == [(1,)]
    assert found(cjk_store, "東京") == ["mixed", "ja-1"]
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk_queue") == [(0,)]
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk") == [(8,)]
    r = cjk_store("search", "basil", "--json")
    assert json.loads(r.out)["match"] == '"basil"'  # the main index, as before


def test_the_first_cjk_search_builds_the_index_and_says_so(kaja: Kaja) -> None:
    foreign_store(kaja.db, [*GARDEN, ("m4", "user", "東京でトマトを育てています。")])
    r = kaja("search", "トマト")
    assert r.code == 0, r
    assert r.out.rstrip("\n").split("\t")[-1] == "東京でトマトを育てています。"
    assert r.err == (
        f"kaja: built the CJK search index of {kaja.db} (1 message in Chinese, Japanese or Korean)\n"
    )


def test_an_interrupted_build_is_finished_by_the_next_search(cjk_store: Kaja) -> None:
    found(cjk_store, "東京")
    run_sql(cjk_store.db, "DELETE FROM conversation_text_cjk")
    top = cjk_rows(cjk_store, "SELECT max(rowid) FROM messages")[0][0]
    run_sql(
        cjk_store.db,
        "INSERT INTO counters(name, value) VALUES ('search:cjk-fill', ?)",
        (f"upto={top} done=0",),
    )
    assert found(cjk_store, "北京") == ["zh-1"]
    assert cjk_rows(cjk_store, "SELECT value FROM counters WHERE name = 'search:cjk-fill'") == []
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk") == [(8,)]


def test_reindex_rebuilds_it_too(cjk_store: Kaja) -> None:
    found(cjk_store, "東京")
    run_sql(cjk_store.db, "DELETE FROM conversation_text_cjk WHERE docid % 2 = 0")
    r = cjk_store("search", "--reindex")
    assert r.code == 0, r
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk") == [(8,)]
    assert found(cjk_store, "猫") == ["ja-3", "ja-2"]
    cjk_integrity(cjk_store)


def test_sessions_delete_and_wipe_owner_leave_it_consistent(cjk_store: Kaja) -> None:
    found(cjk_store, "東京")
    ana = "telegram:482913"
    sid = cjk_rows(cjk_store, f"SELECT id FROM sessions WHERE owner = '{ana}' LIMIT 1")[0][0]
    run_sql(
        cjk_store.db,
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
        " VALUES ('ana-zh', ?, 90, 'user', '我想去北京。', '2026-11-28T16:00:00.000Z')",
        (sid,),
    )
    assert found(cjk_store, "北京", "--all-owners") == ["ana-zh", "zh-1"]
    r = cjk_store("sessions", "delete", CREME[:8], "--yes")
    assert r.code == 0, r
    assert found(cjk_store, "北京", "--all-owners") == ["ana-zh"]
    r = cjk_store("wipe", "--owner", ana, "--yes")
    assert r.code == 0, r
    assert found(cjk_store, "北京", "--all-owners") == []
    assert cjk_rows(cjk_store, "SELECT count(*) FROM conversation_text_cjk") == [(0,)]
    cjk_integrity(cjk_store)


# --- stores kaja can't write ----------------------------------------------------------
def test_a_read_only_store_is_scanned_and_says_so(kaja: Kaja) -> None:
    foreign_store(kaja.db, [*GARDEN, ("m4", "user", "서울에 비가 와요."), ("m5", "user", "서울")])
    before = kaja.db.read_bytes()
    how = as_read_only(kaja)
    try:
        p = run_as(kaja, how, "search", "서울", "--json")
        assert p.returncode == 0, p
        doc = json.loads(p.stdout)
        assert doc["source"] == "scan"
        assert [h["message_id"] for h in doc["results"]] == ["m5", "m4"]
        assert p.stderr == (
            f"kaja: searched {kaja.db} by scanning its 2 messages in Chinese, Japanese or"
            f" Korean: it has no CJK search index and can't be written now"
            f" ({kaja.db} is read-only)\n"
        )
    finally:
        kaja.state.chmod(0o755)
        kaja.db.chmod(0o644)
    assert kaja.db.read_bytes() == before


def test_an_index_that_is_behind_on_a_read_only_store_is_scanned(cjk_store: Kaja) -> None:
    found(cjk_store, "東京")
    agent_writes(cjk_store, "later", "東京駅で会いましょう。")
    how = as_read_only(cjk_store)
    try:
        p = run_as(cjk_store, how, "search", "東京", "--json")
        assert p.returncode == 0, p
        assert [h["message_id"] for h in json.loads(p.stdout)["results"]] == [
            "mixed", "later", "ja-1",
        ]  # fmt: skip
        assert "its CJK search index is behind and it can't be written now" in p.stderr
    finally:
        cjk_store.state.chmod(0o755)
        cjk_store.db.chmod(0o644)
    # Once writable again, the queue is indexed and the answer is the same.
    assert found(cjk_store, "東京") == ["mixed", "later", "ja-1"]


def test_a_busy_store_is_scanned(cjk_store: Kaja) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(30)\n",
         str(cjk_store.db)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = cjk_store("search", "ごはん", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 0, r
    assert [h["message_id"] for h in json.loads(r.out)["results"]] == ["ja-2"]
    assert "(another process is writing to it)" in r.err


# --- doctor ----------------------------------------------------------------------------
def doctor_cjk(k: Kaja, *args: str) -> dict:
    r = k("doctor", "--check", "search-index-cjk", "--json", *args)
    [check] = json.loads(r.out)["checks"]
    return check


def test_doctor_reports_it_and_fix_rebuilds_it(cjk_store: Kaja) -> None:
    assert doctor_cjk(cjk_store)["summary"].startswith("no CJK search index yet")
    found(cjk_store, "東京")
    check = doctor_cjk(cjk_store, "--thorough")
    assert (check["status"], check["summary"]) == (
        "ok", "the CJK search index is in step (8 messages)",
    )  # fmt: skip
    run_sql(cjk_store.db, "DROP TRIGGER messages_cjk_ai")
    check = doctor_cjk(cjk_store)
    assert (check["status"], check["fixable"]) == ("warn", True)
    assert "trigger" in check["summary"]
    r = cjk_store("doctor", "--check", "search-index-cjk", "--fix")
    assert "rebuilt the CJK search index (8 messages)" in r.out + r.err
    assert doctor_cjk(cjk_store)["status"] == "ok"
    agent_writes(cjk_store, "later", "東京駅で会いましょう。")
    assert found(cjk_store, "東京駅") == ["later"]


# --- the pure functions -----------------------------------------------------------------
def test_index_text_and_match() -> None:
    assert cjk.index_text("私は東京に") == " 私は は東 東京 京に  \n に"
    assert cjk.index_text("plain text") == "plain text"
    assert cjk.match('"東京都"') == '"東京 京都"'
    assert cjk.match('"猫"') == '"猫*"'
    assert cjk.match("東京* OR -大阪 content:서울") == '"東京" OR -"大阪" content:"서울"'
    assert cjk.match('"tomato" "東京"') == '"tomato" "東京"'


def test_every_cjk_character_is_one_token_to_unicode61() -> None:
    """The bigrams only work if unicode61 keeps each of these characters as a
    token character, and the triggers' filter must let every one through."""
    import unicodedata

    chars = [
        chr(c)
        for lo, hi in cjk.RANGES
        for c in range(lo, hi + 1)
        if unicodedata.category(chr(c))[0] in "LN"
    ]
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(
            "CREATE VIRTUAL TABLE temp.t USING fts3tokenize(unicode61, 'remove_diacritics=2')"
        )
        for ch in chars:
            tokens = conn.execute("SELECT token FROM temp.t WHERE input = ?", (ch + ch,)).fetchall()
            assert tokens == [(ch + ch,)], hex(ord(ch))
            sql = f"SELECT {cjk.maybe_cjk_sql(':t')}"
            assert conn.execute(sql, {"t": f"a{ch}b"}).fetchone() == (1,)
            assert cjk.has_cjk(f"a{ch}b") and cjk.has_cjk("x" * 300 + ch) and cjk.holds_cjk(ch)
        for ch in "a。、「」・éZ1 ":
            assert not cjk.has_cjk(ch) and not cjk.has_cjk("x" * 300 + ch)
            assert not cjk.holds_cjk(ch)


def test_vacuum_that_moves_rowids_starts_the_index_again(tmp_path) -> None:
    """SQLite renumbers the rowids of a table without any index; the CJK
    index is keyed by them, so it is built again (by the next CJK search)."""
    from kaja_cli.core.conversations.search import cjk_index
    from kaja_cli.core.ledger.usage import local as usage

    db = tmp_path / "kaja.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE messages (id TEXT, sessionId, content)")  # no key, no index
    conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value)")
    words = ["北京", "東京", "서울", "上海", "大阪", "부산"]
    conn.executemany(
        "INSERT INTO messages VALUES (?, 's', ?)",
        [(f"m{i}", f"{w}で{i}") for i, w in enumerate(words * 50)],
    )
    cjk_index.reset(conn)
    cjk_index.catch_up(conn)
    conn.execute("DELETE FROM messages WHERE rowid % 4 = 1")  # gaps that VACUUM closes
    usage.vacuum_in(conn, db)
    assert cjk_index.state(conn) == cjk_index.FILLING
    cjk_index.catch_up(conn)
    for w in words:
        got = conn.execute(
            "SELECT m.content FROM conversation_text_cjk AS f JOIN messages AS m"
            " ON m.rowid = f.docid WHERE conversation_text_cjk MATCH ?",
            (f'"{w}"',),
        ).fetchall()
        expected = conn.execute(
            "SELECT content FROM messages WHERE content LIKE ?", (w + "%",)
        ).fetchall()
        assert sorted(got) == sorted(expected) and got
    conn.close()
