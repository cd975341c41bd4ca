"""`kaja search` (commands/search.py, core/search.py, core/search_index.py).

Through the real command against the demo store (seed 1), plus stores made
the way another program would make them, with raw sqlite3 in a second
process where the point is that kaja's code is not involved.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import KAJA, Kaja
from tests.support.tools import require

CREME = "01a222c0-a420-7bb9-bd5c-8dfc5eda92d8"  # "Crème brûlée for eight" (terminal)
TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # "Tomato leaves curling in the heat"
LISTA = "01a22612-4020-766c-be67-026cceea590b"  # telegram:482913's shopping list
ANA = "telegram:482913"


def lines(text: str) -> list[str]:
    return text.splitlines()


def column(text: str, index: int) -> list[str]:
    return [line.split("\t")[index] for line in lines(text)]


def hits(k: Kaja, *args: str) -> list[dict]:
    r = k("search", *args, "--json")
    assert r.code == 0, r
    return json.loads(r.out)["results"]


def run_sql(db: Path, sql: str, params: tuple = ()) -> None:
    """Write with raw sqlite3 in another process: no kaja code involved."""
    code = (
        "import sqlite3, sys, json\n"
        "c = sqlite3.connect(sys.argv[1], timeout=5)\n"
        "c.execute(sys.argv[2], json.loads(sys.argv[3]))\n"
        "c.commit()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db), sql, json.dumps(params)], check=True)


def integrity(db: Path) -> str | None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO conversation_text(conversation_text) VALUES ('integrity-check')")
        conn.commit()
    except sqlite3.DatabaseError as e:
        return str(e)
    finally:
        conn.close()
    return None


def foreign_store(db: Path, messages: list[tuple[str, str, str]]) -> None:
    """A store as another program writes it: the seed's sessions and messages
    columns (some of them), WAL, no search index, none of kaja's other tables."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt TEXT, updatedAt TEXT,"
        " title TEXT, owner TEXT)"
    )
    conn.execute(
        "CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId TEXT, seq INTEGER, role TEXT,"
        " content TEXT, createdAt TEXT)"
    )
    conn.execute(
        "INSERT INTO sessions VALUES ('s-garden', '2026-01-01T00:00:00.000Z',"
        " '2026-01-01T00:10:00.000Z', 'Garden', NULL)"
    )
    for seq, (mid, role, content) in enumerate(messages, 1):
        conn.execute(
            "INSERT INTO messages VALUES (?, 's-garden', ?, ?, ?, ?)",
            (mid, seq, role, content, f"2026-01-01T00:0{seq}:00.000Z"),
        )
    conn.commit()
    conn.close()


GARDEN = [
    ("m1", "user", "How much shade do tomatoes need in a heatwave?"),
    ("m2", "assistant", "Tomatoes like full sun; a little shade cloth helps in a heatwave."),
    ("m3", "user", "And the basil?"),
]


# --- matching -------------------------------------------------------------------------
def test_every_word_must_match_best_first(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    r = demo_store("search", "tomato", "leaves")
    assert r.code == 0, r
    assert lines(r.out) == [
        f"{TOMATO}\t2026-11-29T08:04:25.029Z\tuser\tTomato leaves curling in the heat\t"
        "My tomato leaves are curling upwards since the heatwave. The plants are in pots on a…"
    ]
    assert r.err == ""
    # Best first: the three "shade" messages, most relevant first, all from one session.
    r = demo_store("search", "shade")
    assert column(r.out, 2) == ["user", "tool", "assistant"]


def test_accents_and_case_are_ignored(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    expected = (
        f"{CREME}\t2026-11-28T15:23:27.480Z\tuser\tCrème brûlée for eight\t"
        "I'm making crème brûlée for eight people on Saturday. Can you scale the recipe and…"
    )
    for query in (["creme", "brulee"], ["CRÈME", "Brûlée"], ["crème", "BRULEE"]):
        r = demo_store("search", *query)
        assert r.code == 0, r
        assert lines(r.out) == [expected]
    found = hits(demo_store, "zurich", "geneve")
    assert found and all("Zürich" in h["snippet"] or "Genève" in h["snippet"] for h in found)


def test_punctuation_is_harmless(demo_store: Kaja) -> None:
    for content in ("I write C++ templates all day.", "Please don't panic about the tests."):
        run_sql(
            demo_store.db,
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, ?, 99, 'user', ?, '2026-11-29T11:00:00.000Z')",
            (f"extra-{len(content)}", TOMATO, content),
        )
    assert [h["snippet"] for h in hits(demo_store, "c++", "templates")] == [
        "I write C++ templates all day."
    ]
    [dont] = hits(demo_store, "don't", "panic")
    assert dont["snippet"] == "Please don't panic about the tests."
    assert [dont["snippet"][a:b] for a, b in dont["highlights"]] == ["don", "t", "panic"]
    # A stray parenthesis, quote or operator word is just text.
    for query in ("tomato (", 'tomato "leaves', "(tomato) heatwave.", "tomato*", "tomato:"):
        r = demo_store("search", query)
        assert r.code == 0, (query, r)
        assert TOMATO in r.out, query
    assert TOMATO in demo_store("search", "--", "-tomato").out  # after --, not an option
    # Nothing but punctuation: nothing to search for.
    r = demo_store("search", "(", "++")
    assert r.code == 2 and r.out == ""
    assert r.err == (
        "kaja: nothing to search for in '( ++': it has no letters or digits: "
        "use --fts for FTS4 query syntax\n"
    )


def test_fts_syntax_and_its_errors(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    phrase = hits(demo_store, "--fts", '"shade cloth"')
    assert len(phrase) == 3
    assert all("shade cloth" in h["snippet"] for h in phrase)
    prefix_or = hits(demo_store, "--fts", "brul* OR genev*", "--limit", "0")
    assert {h["session_title"] for h in prefix_or} == {
        "Crème brûlée for eight",
        "Train from Zürich to Genève",
    }
    not_ = hits(demo_store, "--fts", "shade NOT cloth")
    assert not_ == []
    near = hits(demo_store, "--fts", "tomato NEAR/2 curling")
    assert [h["seq"] for h in near] == [1]
    for query in ("tomato (", "tomato OR", '"shade', "NOT tomato"):
        r = demo_store("search", "--fts", query)
        assert r.code == 2, r
        assert r.out == ""
        assert r.err == (
            f"kaja: --fts: malformed MATCH expression: [{query}]: "
            'FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)\n'
        )


@pytest.mark.process  # the test keeps a connection to the store open across the runs
def test_ranking_is_fts5_bm25(demo_store: Kaja, tmp_path: Path) -> None:
    """Same order and scores as FTS5's bm25 over the same messages, ties included."""
    # Long messages and many hits: lengths of 128 tokens and more take two
    # varint bytes in %_docsize, hit counts of 4 and more (256 and more: two
    # bytes) take the slow path of the SQL decoding.
    for i, text in enumerate(
        ["zebra " * 300, "zebra " * 5 + "filler " * 200, "zebra quokka " * 70, "zebra " * 4,
         "q " * 17000 + "zebra"]
    ):  # fmt: skip
        run_sql(
            demo_store.db,
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, ?, ?, 'tool', ?, '2026-11-29T11:00:00.000Z')",
            (f"long-{i}", TOMATO, 100 + i, text),
        )
    conn = sqlite3.connect(tmp_path / "fts5.db")
    conn.execute(f"ATTACH '{demo_store.db}' AS store")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(content, content='',"
        " tokenize='unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO f(rowid, content) SELECT rowid, content FROM store.messages")
    for query in ("the", "the train", "tomato shade", "a", "zebra", "zebra quokka"):
        match = " ".join(f'"{w}"' for w in query.split())
        expected = conn.execute(
            "SELECT m.id, -f.rank FROM f JOIN store.messages AS m ON m.rowid = f.rowid"
            " WHERE f MATCH ? ORDER BY f.rank, f.rowid",
            (match,),
        ).fetchall()
        # --exact: FTS5 does not stem (stemmed ranking: tests/cli/test_search_stems.py)
        got = hits(demo_store, *query.split(), "--all-owners", "--limit", "0", "--exact")
        assert [h["message_id"] for h in got] == [mid for mid, _ in expected], query
        assert [h["score"] for h in got] == [round(score, 6) for _, score in expected], query
    conn.close()


# --- filters ----------------------------------------------------------------------------
def test_owner_filters(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    r = demo_store("search", "lista")
    assert r.code == 0 and r.out == ""
    assert r.err == (
        "kaja: no matches for 'lista' in the terminal's messages "
        "(--all-owners searches everyone's)\n"
    )
    r = demo_store("search", "lista", "--owner", ANA)
    assert lines(r.out) == [
        f"{LISTA}\t2026-11-29T06:51:38.274Z\tuser\tLista de la compra para la semana\t"
        "Hola! Necesito una lista de la compra para la semana, somos dos y no comemos carne."
    ]
    r = demo_store("search", "lista", "--all-owners")
    assert column(r.out, 1) == [ANA]
    everyone = hits(demo_store, "the", "--all-owners", "--limit", "0")
    mine = hits(demo_store, "the", "--limit", "0")
    assert {h["owner"] for h in mine} == {None}
    assert len({h["owner"] for h in everyone}) > 1
    assert [h for h in everyone if h["owner"] is None] == mine
    r = demo_store("search", "the", "--owner", ANA, "--all-owners")
    assert r.code == 2
    assert r.err == "kaja: --owner and --all-owners can't be combined\n"


def test_session_filter(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    found = hits(demo_store, "the", "--session", TOMATO[:13], "--limit", "0")
    assert found and {h["session_id"] for h in found} == {TOMATO}
    assert demo_store("search", "the", "--session", "01a2").code == 2  # ambiguous prefix
    r = demo_store("search", "the", "--session", "ffffffff")
    assert r.code == 3
    assert r.err == "kaja: no session 'ffffffff': `kaja sessions` lists them\n"
    r = demo_store("search", "lista", "--session", LISTA)
    assert r.code == 5
    assert ANA in r.err
    assert hits(demo_store, "lista", "--session", LISTA, "--all-owners")[0]["session_id"] == LISTA


def test_role_since_limit_recent(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    users = hits(demo_store, "the", "--role", "user", "--limit", "0")
    assert users and {h["role"] for h in users} == {"user"}
    both = hits(demo_store, "the", "--role", "user", "--role", "tool", "--limit", "0")
    assert {h["role"] for h in both} == {"user", "tool"}
    r = demo_store("search", "the", "--role", "robot")
    assert r.code == 2
    assert r.err == "kaja: --role: unknown role 'robot': use user, assistant, tool, system\n"

    recent = hits(demo_store, "the", "--since", "2026-11-29", "--limit", "0")
    assert recent and all(h["created_at"] >= "2026-11-29" for h in recent)
    assert len(recent) < len(hits(demo_store, "the", "--limit", "0"))
    assert demo_store("search", "the", "--since", "last tuesday").code == 2
    older = hits(demo_store, "the", "--until", "2026-11-29", "--limit", "0")
    assert older and all(h["created_at"] < "2026-11-29" for h in older)
    assert len(older) + len(recent) == len(hits(demo_store, "the", "--limit", "0"))
    window = hits(demo_store, "the", "--since", "2026-11-28", "--until", "2026-11-29", "-n", "0")
    assert window and [h for h in older if h["created_at"] >= "2026-11-28"] == window
    r = demo_store("search", "the", "--until", "soon")
    assert r.code == 2 and r.err.startswith("kaja: --until: not a date or age: 'soon'"), r

    r = demo_store("search", "the", "--limit", "2")
    assert len(lines(r.out)) == 2
    assert r.err == "kaja: showing the best 2; more match (--limit N, or 0 for all)\n"
    everything = hits(demo_store, "the", "--limit", "0")
    assert len(everything) > 20
    assert len(hits(demo_store, "the")) == 20

    newest = hits(demo_store, "the", "--recent", "--limit", "0")
    stamps = [h["created_at"] for h in newest]
    assert stamps == sorted(stamps, reverse=True)
    assert {h["message_id"] for h in newest} == {h["message_id"] for h in everything}
    r = demo_store("search", "the", "--recent", "--limit", "1")
    assert r.err == "kaja: showing the newest 1; more match (--limit N, or 0 for all)\n"


def test_json_shape(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    r = demo_store("search", "creme", "brulee", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    [hit] = doc.pop("results")
    assert doc == {
        "query": "creme brulee",
        "match": '"creme" "brulee"',
        "fts": False,
        "order": "best",
        "owner": "terminal",
        "all_owners": False,
        "limit": 20,
        "source": "index",
        "more": False,
    }
    assert list(hit) == [
        "message_id", "session_id", "session_title", "owner", "seq", "role", "created_at",
        "score", "snippet", "highlights",
    ]  # fmt: skip
    assert hit["session_id"] == CREME
    assert hit["session_title"] == "Crème brûlée for eight"
    assert (hit["owner"], hit["seq"], hit["role"]) == (None, 1, "user")
    assert hit["created_at"] == "2026-11-28T15:23:27.480Z"
    assert isinstance(hit["score"], float) and hit["score"] > 0
    assert hit["snippet"].startswith("I'm making crème brûlée for eight people")
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["crème", "brûlée"]
    assert r.err == ""
    r = demo_store("search", "zzzzqqq", "--json", "--all-owners")
    doc = json.loads(r.out)
    assert (doc["results"], doc["owner"], doc["all_owners"]) == ([], None, True)
    assert r.err == "kaja: no matches for 'zzzzqqq'\n"


def test_usage_errors_and_missing_store(kaja: Kaja) -> None:
    r = kaja("search")
    assert r.code == 2
    assert r.err.startswith("kaja: nothing to search for")
    r = kaja("search", "tomato")
    assert (r.code, r.out) == (0, "")
    assert r.err == f"kaja: no Kaja store at {kaja.db}: nothing to search\n"
    r = kaja("search", "--reindex")
    assert r.code == 3
    assert r.err.startswith(f"kaja: no Kaja store at {kaja.db}")


# --- the index stays whole --------------------------------------------------------------
def test_message_written_by_another_process_is_found(demo_store: Kaja) -> None:
    assert hits(demo_store, "pistachio") == []
    run_sql(
        demo_store.db,
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
        " VALUES ('from-the-bot', ?, 7, 'user', 'Could I flavour it with pistachio?',"
        " '2026-11-28T16:00:00.000Z')",
        (CREME,),
    )
    [hit] = hits(demo_store, "pistachio")
    assert (hit["message_id"], hit["session_id"]) == ("from-the-bot", CREME)
    run_sql(
        demo_store.db,
        "UPDATE messages SET content = 'Or with hazelnut?' WHERE id = 'from-the-bot'",
    )
    assert hits(demo_store, "pistachio") == []
    assert [h["message_id"] for h in hits(demo_store, "hazelnut")] == ["from-the-bot"]
    assert integrity(demo_store.db) is None


def test_deleted_messages_are_not_found(demo_store: Kaja) -> None:
    assert hits(demo_store, "brulee")
    run_sql(demo_store.db, "DELETE FROM messages WHERE sessionId = ?", (CREME,))
    run_sql(demo_store.db, "DELETE FROM sessions WHERE id = ?", (CREME,))
    assert hits(demo_store, "brulee", "--all-owners") == []
    assert integrity(demo_store.db) is None


def test_store_from_another_program_gets_its_index(kaja: Kaja) -> None:
    foreign_store(kaja.db, GARDEN)
    r = kaja("search", "shade", "heatwave")
    assert r.code == 0, r
    assert column(r.out, 4) == [
        "How much shade do tomatoes need in a heatwave?",
        "Tomatoes like full sun; a little shade cloth helps in a heatwave.",
    ]
    assert r.err == (
        f"kaja: built the search index of {kaja.db} (3 messages): the store had none\n"
    )
    assert integrity(kaja.db) is None
    # The index is all search added: the rest of the schema is left to a
    # command that writes (its build records progress in `counters`).
    with closing(sqlite3.connect(kaja.db)) as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {t for t in tables if not t.startswith("conversation_text")} == {
        "sessions",
        "messages",
        "counters",
    }
    # Written after the index existed, by the other program: found too.
    run_sql(
        kaja.db,
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt) VALUES ('m4',"
        " 's-garden', 4, 'assistant', 'Basil loves shade in a heatwave.',"
        " '2026-01-01T00:04:00.000Z')",
    )
    r = kaja("search", "shade", "heatwave")
    assert len(lines(r.out)) == 3 and r.err == ""


def as_read_only(kaja: Kaja) -> dict:
    """Make the store unwritable, even for root (which ignores permissions
    unless it gives up CAP_DAC_OVERRIDE): returns what `kaja(...)` needs."""
    kaja.db.chmod(0o444)
    kaja.state.chmod(0o555)
    if os.geteuid() != 0:
        return {}
    require("setpriv")  # to drop root's CAP_DAC_OVERRIDE
    return {"prefix": ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
                       "--inh-caps", "-dac_override,-dac_read_search", "--"]}  # fmt: skip


def run_as(kaja: Kaja, how: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*how.get("prefix", []), KAJA, *args], env=kaja.env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip


def test_read_only_store_without_index_is_scanned(kaja: Kaja) -> None:
    foreign_store(kaja.db, GARDEN)
    before = kaja.db.read_bytes()
    how = as_read_only(kaja)
    try:
        p = run_as(kaja, how, "search", "shade", "heatwave")
        assert p.returncode == 0, p
        assert column(p.stdout, 4) == [
            "How much shade do tomatoes need in a heatwave?",
            "Tomatoes like full sun; a little shade cloth helps in a heatwave.",
        ]
        assert p.stderr == (
            f"kaja: searched {kaja.db} by scanning its 3 messages: it has no search index"
            f" and can't be written now ({kaja.db} is read-only)\n"
        )
        p = run_as(kaja, how, "search", "shade", "--json", "--recent")
        doc = json.loads(p.stdout)
        assert (doc["source"], [h["message_id"] for h in doc["results"]]) == ("scan", ["m2", "m1"])
    finally:
        kaja.state.chmod(0o755)
        kaja.db.chmod(0o644)
    assert kaja.db.read_bytes() == before
    assert sorted(p.name for p in kaja.state.iterdir()) == ["kaja.db"]


def test_busy_store_without_index_is_scanned(kaja: Kaja) -> None:
    foreign_store(kaja.db, GARDEN)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(30)\n",
         str(kaja.db)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = kaja("search", "shade")
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 0, r
    assert len(lines(r.out)) == 2
    assert r.err == (
        f"kaja: searched {kaja.db} by scanning its 3 messages: it has no search index and"
        " can't be written now (another process is writing to it)\n"
    )


def test_reindex_repairs_a_damaged_index(demo_store: Kaja) -> None:
    db = demo_store.db
    whole = [h["message_id"] for h in hits(demo_store, "blowtorch")]
    assert len(whole) == 2
    conn = sqlite3.connect(db)
    # Damage on purpose: a ghost entry for a message that does not exist, and
    # a real message taken out of the index behind the triggers' back.
    conn.execute("INSERT INTO conversation_text(docid, content) VALUES (999999, 'ghostly words')")
    rowid = conn.execute("SELECT rowid FROM messages WHERE id = ?", (whole[0],)).fetchone()[0]
    conn.execute("DELETE FROM conversation_text WHERE docid = ?", (rowid,))
    conn.commit()
    conn.close()
    assert integrity(db) is not None
    assert [h["message_id"] for h in hits(demo_store, "blowtorch")] == whole[1:]

    r = demo_store("search", "--reindex")
    assert r.code == 0, r
    assert r.out == ""
    assert r.err == "kaja: reindexed 96 messages in " + str(db) + "\n"
    assert integrity(db) is None
    assert [h["message_id"] for h in hits(demo_store, "blowtorch")] == whole
    assert hits(demo_store, "ghostly", "--all-owners") == []
    r = demo_store("search", "--reindex", "--json")
    assert json.loads(r.out) == {"reindexed": {"path": str(db), "messages": 96}}
    # With a query, --reindex then searches.
    r = demo_store("search", "--reindex", "blowtorch")
    assert r.code == 0 and len(lines(r.out)) == 2


def test_missing_trigger_is_repaired_by_the_next_writable_kaja(demo_store: Kaja) -> None:
    run_sql(demo_store.db, "DROP TRIGGER messages_fts_ai")
    run_sql(
        demo_store.db,
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
        " VALUES ('unseen', ?, 50, 'user', 'A marmalade question', '2026-11-29T11:00:00.000Z')",
        (TOMATO,),
    )
    r = demo_store("search", "marmalade")
    assert r.code == 0, r
    assert TOMATO in r.out
    assert r.err.startswith(f"kaja: built the search index of {demo_store.db}")
    assert integrity(demo_store.db) is None


def test_the_agent_can_write_while_the_index_is_built(tmp_path: Path, monkeypatch) -> None:
    """In-process, with tiny batches: deletes, updates and inserts between
    batches leave an index FTS4 finds whole."""
    from kaja_cli.core.engine.db import transaction
    from kaja_cli.core.store import search_index

    monkeypatch.setattr(search_index, "FILL_BATCH", 3)
    db = tmp_path / "kaja.db"
    foreign_store(db, [(f"m{i}", "user", f"word{i} common text") for i in range(1, 8)])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value)")
    conn.execute("BEGIN IMMEDIATE")
    changes: list[str] = []
    search_index.ensure(conn, changes)
    conn.execute("COMMIT")
    assert changes == ["created search index conversation_text"]
    assert search_index.state(conn) == search_index.FILLING
    with transaction(conn):
        assert search_index._fill_batch(conn) == (3, 7)
    # Meanwhile the agent: deletes a message not yet indexed, edits one,
    # and writes a new one (indexed by the trigger straight away).
    conn.execute("DELETE FROM messages WHERE id = 'm7'")
    conn.execute("UPDATE messages SET content = 'edited common' WHERE id = 'm6'")
    conn.execute("UPDATE messages SET content = 'also edited common' WHERE id = 'm2'")
    conn.execute("INSERT INTO messages VALUES ('m8', 's-garden', 8, 'user', 'fresh common', 'x')")
    assert search_index.finish(conn) is True
    assert search_index.state(conn) == search_index.READY
    assert search_index.integrity_check(conn) is None
    found = conn.execute(
        "SELECT m.id FROM conversation_text JOIN messages AS m ON m.rowid = docid"
        " WHERE conversation_text MATCH 'common' ORDER BY m.id"
    ).fetchall()
    assert [f[0] for f in found] == ["m1", "m2", "m3", "m4", "m5", "m6", "m8"]
    n = conn.execute("SELECT count(*) FROM conversation_text_docsize").fetchone()[0]
    assert n == 7
    conn.close()


@pytest.mark.needs("script")
def test_terminal_table_highlights_matches(shared_demo_store: Kaja) -> None:
    demo_store = shared_demo_store  # only reads
    """On a terminal: a table with the matches in bold (and yellow unless NO_COLOR)."""

    def on_terminal(env: dict) -> str:
        p = subprocess.run(
            ["script", "-qc", f"{shlex.join([KAJA, 'search', 'shade'])}", "/dev/null"],
            env={k: v for k, v in {**demo_store.env, "COLUMNS": "110", **env}.items() if v},
            capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
        assert p.returncode == 0, p
        return p.stdout

    plain = on_terminal({"NO_COLOR": "1"})
    assert "\x1b[1mshade\x1b[0m" in plain
    assert "\x1b[3" not in plain  # no foreground colour at all
    text = re.sub(r"\x1b\[[0-9;]*m", "", plain).replace("\r", "")
    assert text.splitlines()[0].split() == ["session", "title", "when", "role", "match"]
    assert text.splitlines()[1].startswith("01a22652  Tomato leaves")  # the title, wrapped
    assert all(w in text.split() for w in "Tomato leaves curling in the heat".split())
    colour = on_terminal({"NO_COLOR": None})
    assert "\x1b[1;33mshade\x1b[0m" in colour


def test_a_foreign_conversation_text_is_left_alone_until_reindex(kaja: Kaja) -> None:
    """Andromeda's own `conversation_text` is FTS5 with other columns: kaja
    scans rather than use or break it, and --reindex replaces it."""
    foreign_store(kaja.db, GARDEN)
    conn = sqlite3.connect(kaja.db)
    conn.execute("CREATE VIRTUAL TABLE conversation_text USING fts5(content, thread_id UNINDEXED)")
    conn.execute("INSERT INTO conversation_text VALUES ('unrelated words', 't1')")
    conn.commit()
    conn.close()
    r = kaja("search", "shade")
    assert r.code == 0, r
    assert len(lines(r.out)) == 2
    assert r.err == (
        f"kaja: searched {kaja.db} by scanning its 3 messages: its conversation_text is not"
        " kaja's search index (`kaja search --reindex` replaces it)\n"
    )
    assert kaja("search", "--reindex").code == 0
    r = kaja("search", "shade")
    assert (len(lines(r.out)), r.err) == (2, "")
    assert integrity(kaja.db) is None


def test_filters_that_reject_most_candidates_ask_again(demo_store: Kaja, monkeypatch) -> None:
    """In-process, with tiny first rounds: a rare owner's best hits come out
    the same as in one round."""
    from kaja_cli.core.conversations import search
    from kaja_cli.core.conversations.search import local
    from kaja_cli.core.store import Store

    bjorn = "telegram:771204"  # 4 of the 44 messages holding "the"
    store = Store.locate(environ=demo_store.env)
    once = search.search(store, "the", owner=bjorn, limit=3)
    monkeypatch.setattr(local, "_FIRST_RANKED", 1)
    monkeypatch.setattr(local, "_FIRST_BATCH", 1)
    again = search.search(store, "the", owner=bjorn, limit=3)
    assert [h.message_id for h in again.hits] == [h.message_id for h in once.hits]
    assert len(once.hits) == 3 and once.more and again.more
    everyone = search.search(store, "the", all_owners=True, limit=0)
    assert len(everyone.hits) == 44
    assert [h.message_id for h in once.hits] == [
        h.message_id for h in everyone.hits if h.owner == bjorn
    ][:3]
