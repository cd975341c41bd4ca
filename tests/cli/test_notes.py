"""`kaja notes` (list, show, forget, export) and `kaja search --notes`, on the
demo store (seed 1, --now 2026-11-29T12:00:00Z) and on stores other
programs wrote."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.support.side_support import fingerprint, holding, integrity, killed_at, sql, write

ANA = "telegram:482913"
TERMINAL_ROWS = (
    "name\thigh\tprofile\t1\t2026-11-29T09:00:00.000Z\t31\t"
    "The user's name is Marie; she lives in Lyon and grows tomatoes on her balcony.\n"
    "budget-q4\thigh\tfinance\t1\t2026-11-29T03:00:00.000Z\t4\t"
    "Q4 plan: eating out 700, irregular expenses 500/month, savings 3,000.\n"
    "code-style\tmedium\twork\t0\t2026-11-29T10:00:00.000Z\t12\t"
    "Prefers small functions, Decimal for money, and reading diffs before pushing.\n"
    "diet\tmedium\tfood\t0\t2026-11-28T16:00:00.000Z\t6\t"
    "Cooks for guests often; likes French desserts (crème brûlée, tarte tatin).\n"
)


def keys(kaja, *args: str) -> list[str]:
    r = kaja("notes", *args)
    assert r.code == 0, r
    return [line.split("\t")[0] for line in r.out.splitlines()]


def stored_keys(kaja) -> set[tuple[str, str]]:
    return set(sql(kaja.db, "SELECT owner, key FROM notes"))


# --- listing ------------------------------------------------------------------------------
def test_the_terminals_notes_sticky_first_then_importance_then_last_used(demo_store):
    r = demo_store("notes")
    assert (r.code, r.out, r.err) == (0, TERMINAL_ROWS, "")
    assert demo_store("notes", "list").out == TERMINAL_ROWS


def test_every_owner_and_the_filters(demo_store):
    r = demo_store("notes", "--all-owners")
    assert r.code == 0
    rows = [line.split("\t")[:2] for line in r.out.splitlines()]
    assert rows == [
        ["terminal", "name"], [ANA, "dieta"], ["terminal", "budget-q4"],
        ["terminal", "code-style"], ["telegram:771204", "running"], ["terminal", "diet"],
        [ANA, "dentista"], ["widget:ab12", "interest"],
    ]  # fmt: skip
    assert keys(demo_store, "--owner", ANA) == ["dieta", "dentista"]
    assert keys(demo_store, "--importance", "HIGH") == ["name", "budget-q4"]
    assert keys(demo_store, "--tag", "Finance") == ["budget-q4"]
    assert keys(demo_store, "--tag", "finance", "--tag", "work") == []
    r = demo_store("notes", "--tag", "nothing")
    assert (r.code, r.out, r.err) == (0, "", "kaja: no notes for terminal matching the filters\n")


def test_json_has_the_seed_columns(demo_store):
    r = demo_store("notes", "--owner", ANA, "--json")
    assert r.code == 0
    doc = json.loads(r.out)
    assert (doc["owner"], doc["all_owners"], doc["total"]) == (ANA, False, 2)
    assert doc["notes"][0] == {
        "owner": ANA, "key": "dieta", "content": "Ana y su pareja no comen carne; compran para dos.",
        "importance": "high", "tags": ["perfil"], "sticky": True,
        "createdAt": "2026-09-30T12:00:00.000Z", "lastUsedAt": "2026-11-29T07:00:00.000Z",
        "useCount": 9,
    }  # fmt: skip


def test_bad_options(demo_store):
    assert demo_store("notes", "--importance", "urgent").code == 2
    assert demo_store("notes", "--owner", ANA, "--all-owners").code == 2
    r = demo_store("notes", "--owner", ANA, "forget", "dieta")
    assert r.code == 2 and "belongs to the listing" in r.err


def test_a_missing_store_lists_nothing_and_creates_nothing(kaja):
    r = kaja("notes")
    assert (r.code, r.out) == (0, "")
    assert r.err == f"kaja: no notes: there is no Kaja store at {kaja.db}\n"
    assert kaja("notes", "show", "name").code == 3
    assert kaja("notes", "forget", "name", "--yes").code == 3
    assert kaja("search", "--notes", "marie").code == 0
    assert not kaja.state.exists()


def test_a_store_another_program_wrote(kaja):
    """No notes table at all; then one with tags as plain text, no sticky or
    useCount, and a column of its own."""
    kaja.state.mkdir(parents=True)
    write(kaja.db, "CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT);")
    r = kaja("notes")
    assert (r.code, r.err) == (0, f"kaja: no notes: {kaja.db} has no notes table\n")
    write(kaja.db, """
        CREATE TABLE notes (owner TEXT, key TEXT, content TEXT, importance TEXT, tags TEXT,
                            lastUsedAt TEXT, mood TEXT);
        INSERT INTO notes VALUES (NULL, 'plain', 'tags as text', 'HIGH', 'a, b', NULL, 'calm');
        INSERT INTO notes VALUES ('', 'json', 'tags as JSON text', 'low', '"solo"', '2026-01-01', NULL);
    """)  # fmt: skip
    r = kaja("notes", "--json")
    assert r.code == 0, r
    notes = {n["key"]: n for n in json.loads(r.out)["notes"]}
    assert notes["plain"]["tags"] == ["a", "b"] and notes["plain"]["mood"] == "calm"
    assert notes["plain"]["sticky"] is False and notes["plain"]["useCount"] == 0
    assert notes["json"]["tags"] == ["solo"]
    assert keys(kaja, "--tag", "B", "--importance", "high") == ["plain"]


# --- show -----------------------------------------------------------------------------------
def test_show_a_note_whole(demo_store):
    r = demo_store("notes", "show", "name")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[:5] == ["name", "owner      terminal", "importance high", "tags       profile",
                         "sticky     yes"]  # fmt: skip
    assert lines[6].startswith("last used  2026-11-29T09:00:00.000Z (")
    assert lines[-2:] == [
        "",
        "The user's name is Marie; she lives in Lyon and grows tomatoes on her balcony.",
    ]
    doc = json.loads(demo_store("notes", "show", "dieta", "--owner", ANA, "--json").out)
    assert (doc["key"], doc["useCount"]) == ("dieta", 9)


def test_the_owner_rule_and_unknown_keys(demo_store):
    r = demo_store("notes", "show", "dieta")
    assert r.code == 5
    assert r.err == (
        f"kaja: note 'dieta' belongs to {ANA}, not terminal: act as that owner with --owner {ANA}\n"
    )
    r = demo_store("notes", "show", "dietx")
    assert (r.code, r.err) == (3, "kaja: terminal has no note 'dietx': did you mean 'diet'?\n")
    r = demo_store("notes", "show", "zzz", "--owner", ANA)
    assert r.code == 3 and f"`kaja notes --owner {ANA}` lists them" in r.err
    assert demo_store("notes", "show", " ").code == 2


# --- forget -----------------------------------------------------------------------------------
def test_forget_asks_first_and_without_a_terminal_refuses(demo_store):
    before = stored_keys(demo_store)
    r = demo_store("notes", "forget", "diet")
    assert r.code == 5 and "--yes" in r.err
    r = demo_store("notes", "forget", "diet", "code-style", "--dry-run", "--json")
    assert r.code == 0
    assert json.loads(r.out) == {
        "action": "forget", "dry_run": True, "owner": "terminal", "path": str(demo_store.db),
        "notes": ["diet", "code-style"], "forgotten": 0,
    }  # fmt: skip
    assert stored_keys(demo_store) == before


def test_forget_deletes_only_the_owners_notes_and_leaves_no_trace(demo_store):
    r = demo_store("notes", "forget", "diet", "diet", "--yes")
    assert (r.code, r.err) == (0, "kaja: forgot 1 note of terminal (diet)\n")
    assert ("", "diet") not in stored_keys(demo_store)
    # secure_delete: the text is gone from the file, not only from the table
    for path in demo_store.state.glob("kaja.db*"):
        assert b"French desserts" not in path.read_bytes(), path
    r = demo_store("notes", "forget", "dieta", "--owner", ANA, "--yes", "--json")
    assert json.loads(r.out)["forgotten"] == 1
    assert (ANA, "dentista") in stored_keys(demo_store)
    assert integrity(demo_store.db) == "ok"


def test_one_key_that_is_not_the_owners_deletes_nothing(demo_store):
    before = stored_keys(demo_store)
    r = demo_store("notes", "forget", "name", "dieta", "--yes")
    assert r.code == 5 and "belongs to telegram:482913" in r.err
    r = demo_store("notes", "forget", "name", "nope", "--yes")
    assert r.code == 3
    assert stored_keys(demo_store) == before


def test_forget_waits_for_the_agents_lock_then_says_busy(demo_store):
    with holding(demo_store.db, "write"):
        start = time.monotonic()
        r = demo_store("notes", "forget", "diet", "--yes")
        assert r.code == 4, r
        assert r.err.startswith(f"kaja: {demo_store.db} is busy: another process")
        assert time.monotonic() - start >= 4
        assert demo_store("notes").out == TERMINAL_ROWS  # reading never waits
    assert ("", "diet") in stored_keys(demo_store)


def test_a_file_that_is_not_kajas_is_never_written(kaja, tmp_path):
    """Another program's SQLite with a `notes` table is read, never changed;
    a file that is not SQLite is one line, exit 1."""
    other = tmp_path / "other.db"
    write(other, "CREATE TABLE notes (owner TEXT, key TEXT, content TEXT);"
                 "INSERT INTO notes VALUES ('', 'theirs', 'not Kaja''s');")  # fmt: skip
    before = other.read_bytes()
    assert kaja("--db", str(other), "notes").out.startswith("theirs\t")
    r = kaja("--db", str(other), "notes", "forget", "theirs", "--yes")
    assert r.code == 5 and "not Kaja's shared file" in r.err
    assert other.read_bytes() == before
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    # Reading it is a failure (exit 1); writing into it is refused (exit 5).
    for argv, code in ((["notes"], 1), (["notes", "forget", "x", "--yes"], 5),
                       (["search", "--notes", "x"], 1)):  # fmt: skip
        r = kaja("--db", str(text), *argv)
        assert r.code == code and r.err.count("\n") == 1 and "not a SQLite database" in r.err, argv
    assert text.read_text() == "my notes\n"
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)  # opening it would block: it is never opened
    for argv, code in ((["notes"], 1), (["notes", "show", "x"], 1),
                       (["notes", "forget", "x", "--yes"], 5), (["search", "--notes", "x"], 1)):  # fmt: skip
        r = kaja("--db", str(fifo), *argv, timeout=20)
        assert r.code == code and "is a FIFO, not a SQLite database" in r.err, (argv, r)


@pytest.mark.process
def test_killed_before_its_commit_forget_leaves_every_note(demo_store):
    before = stored_keys(demo_store)
    killed_at(demo_store, "notes-commit", "notes", "forget", "diet", "--yes")
    assert stored_keys(demo_store) == before
    assert integrity(demo_store.db) == "ok"
    assert demo_store("notes", "forget", "diet", "--yes").code == 0


# --- export -------------------------------------------------------------------------------------
def test_export_markdown_and_json(demo_store, tmp_path):
    r = demo_store("notes", "export", "--importance", "high")
    assert r.code == 0
    assert r.out == (
        "# Kaja's notes: terminal\n\n"
        "## name\n\n*high · sticky · tags: profile · used 31 times · last 2026-11-29 · written 2026-10-15*\n\n"
        "The user's name is Marie; she lives in Lyon and grows tomatoes on her balcony.\n\n"
        "## budget-q4\n\n*high · sticky · tags: finance · used 4 times · last 2026-11-29 · written 2026-10-31*\n\n"
        "Q4 plan: eating out 700, irregular expenses 500/month, savings 3,000.\n"
    )
    r = demo_store("notes", "export", "--all-owners")
    headings = [line for line in r.out.splitlines() if line.startswith("## ")]
    assert headings == ["## terminal", f"## {ANA}", "## telegram:771204", "## widget:ab12"]
    out = tmp_path / "notes.json"
    r = demo_store("notes", "export", "--owner", ANA, "-o", str(out))
    assert (r.code, r.err) == (0, f"kaja: wrote 2 notes to {out}\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = json.loads(out.read_text())
    assert [n["key"] for n in doc["notes"]] == ["dieta", "dentista"]
    assert demo_store("notes", "export", "-f", "pdf").code == 2
    assert demo_store("notes", "export", "-o", str(tmp_path)).code == 2


def test_an_export_of_no_notes_writes_no_file(demo_store, tmp_path):
    """As `sessions export --all`: no file saying "No notes.", none emptied."""
    out = tmp_path / "notes.md"
    r = demo_store("notes", "export", "--owner", "telegram:1", "-o", str(out))
    assert (r.code, r.err) == (0, f"kaja: no notes for telegram:1: nothing written to {out}\n")
    assert not out.exists()
    out.write_text("kept\n")
    r = demo_store("notes", "export", "--tag", "no-such-tag", "-o", str(out))
    assert r.err == (
        f"kaja: no notes for terminal matching the filters: nothing written to {out}"
        " (it is left as it was)\n"
    )
    assert out.read_text() == "kept\n"
    r = demo_store("notes", "export", "--owner", "telegram:1", "-f", "json")  # stdout: the document
    assert (r.code, json.loads(r.out)["notes"]) == (0, [])


# --- kaja search --notes ----------------------------------------------------------------------
def search(kaja, *args: str) -> dict:
    r = kaja("search", "--notes", *args, "--json")
    assert r.code == 0, r
    return json.loads(r.out)


def test_search_notes_with_the_messages_rules(demo_store):
    before = fingerprint(demo_store.state)
    found = search(demo_store, "creme", "BRULEE")
    assert [h["key"] for h in found["results"]] == ["diet"]
    hit = found["results"][0]
    assert hit["snippet"][slice(*hit["highlights"][0])] == "crème"
    assert (found["searched"], found["match"]) == ("notes", '"creme" "BRULEE"')
    # a word and its other forms ("grows tomatoes"), not a prefix: --exact, only the word
    assert [h["key"] for h in search(demo_store, "tomato")["results"]] == ["name"]
    assert search(demo_store, "tomato", "--exact")["results"] == []
    assert search(demo_store, "tomat")["results"] == []
    assert [h["key"] for h in search(demo_store, "tomato*")["results"]] == ["name"]
    assert [h["key"] for h in search(demo_store, "finance")["results"]] == ["budget-q4"]  # a tag
    assert [h["key"] for h in search(demo_store, "q4")["results"]] == ["budget-q4"]  # the key
    # the owner rule: Ana's notes only as Ana, or with --all-owners
    assert search(demo_store, "dentista")["results"] == []
    assert [h["owner"] for h in search(demo_store, "dentista", "--owner", ANA)["results"]] == [ANA]
    both = search(demo_store, "--fts", "salud OR finance", "--all-owners")
    assert {h["key"] for h in both["results"]} == {"dentista", "budget-q4"}
    recent = search(demo_store, "--fts", "salud OR finance", "--all-owners", "--recent", "-n", "1")
    assert ([h["key"] for h in recent["results"]], recent["more"]) == (["budget-q4"], True)
    assert search(demo_store, "marie", "--since", "2026-11-29T10:00")["results"] == []
    assert [h["key"] for h in search(demo_store, "marie", "--until", "2026-11-29T10:00")[
        "results"]] == [h["key"] for h in search(demo_store, "marie")["results"]] != []  # fmt: skip
    every = search(demo_store, "--fts", "salud OR finance", "--all-owners", "-n", "0")["results"]
    cut = sorted(h["lastUsedAt"] or h["createdAt"] for h in every)[-1]
    older = search(demo_store, "--fts", "salud OR finance", "--all-owners", "--until", cut)
    assert 0 < len(older["results"]) < len(every)
    assert all((h["lastUsedAt"] or h["createdAt"]) < cut for h in older["results"])
    assert fingerprint(demo_store.state) == before  # nothing written, no index made


def test_search_notes_on_a_terminal_and_piped(demo_store):
    r = demo_store("search", "--notes", "salud", "--all-owners")
    assert (r.code, r.out) == (0, f"{ANA}\tdentista\t2026-11-28T14:00:00.000Z\tlow\tsalud\n")
    r = demo_store("search", "--notes", "nothing-like-it")
    assert (
        r.err
        == "kaja: no notes match 'nothing-like-it' in terminal's notes (--all-owners searches everyone's)\n"
    )


def test_search_notes_bad_usage(demo_store):
    for argv, word in ((["--fts", '"unfinished'], "--fts"), (["x", "--session", "01a2"], "--session"),
                       (["x", "--role", "user"], "--role"), (["x", "--reindex"], "--reindex"),
                       (["x", "--since", "soon"], "--since"), (["!!"], "nothing to search")):  # fmt: skip
        r = demo_store("search", "--notes", *argv)
        assert r.code == 2 and word in r.err and r.err.count("\n") == 1, (argv, r)


# --- whatever is typed ----------------------------------------------------------------------------
odd = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
            max_size=30),
    st.sampled_from(["", " ", "-", "--", '"', "'", "*", "NULL", "%", "_", "name%", "x" * 600]),
)  # fmt: skip


@settings(max_examples=examples(10),
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(value=odd)
def test_any_key_or_query(demo_store, value):
    before = stored_keys(demo_store)
    for argv in (["notes", "show", value], ["notes", "forget", value, "--dry-run"],
                 ["search", "--notes", value], ["search", "--notes", "--fts", value],
                 ["notes", "--tag", value]):  # fmt: skip
        r = demo_store(*argv)
        assert r.code in range(6) and "Traceback" not in r.err, (argv, r)
        if r.code:
            assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, (argv, r)
    assert stored_keys(demo_store) == before


# --- TAB --------------------------------------------------------------------------------------------
def test_tab_completes_keys_and_tags_of_the_acting_owner(demo_store):
    from tests.cli.test_completion import fast_answer, requests, typer_answer

    base = dict(demo_store.env, COLUMNS="100000")
    cases = {
        (("notes", "show"), ""): "budget-q4\ncode-style\ndiet\nname\n",
        (("notes", "forget", "diet"), ""): "budget-q4\ncode-style\nname\n",
        (("notes", "show", "--owner", ANA), "d"): "dentista\ndieta\n",
        (("notes", "--tag"), ""): "finance\nfood\nprofile\nwork\n",
        (("notes", "--importance"), ""): "high\nmedium\nlow\n",
    }
    for (words, incomplete), expected in cases.items():
        for shell, env in requests(base, list(words), incomplete).items():
            assert fast_answer(env) == typer_answer(env), (shell, words)
        assert fast_answer(requests(base, list(words), incomplete)["bash"]) == (expected, 0), words
    zsh, _ = fast_answer(requests(base, ["notes", "show"], "b")["zsh"])
    # zsh evaluates it: each item one $'…' word, its colon escaped for _describe
    assert zsh == (
        r"_arguments $'*: :(($\x27budget-q4:Q4 plan\x5cx5c: eating out 700, irregular expenses 500…\x27))'"
        "\n"
    )
