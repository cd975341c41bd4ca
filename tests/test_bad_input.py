"""Bad input, property-based: whatever a user types or another program stored,
every run ends with an exit code 0-5 and at most one clear line, never a
traceback, and a reading command never modifies the store."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples

# Arguments a shell can pass (no NUL bytes); often odd on purpose.
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)
odd = st.one_of(
    text,
    st.sampled_from(["", " ", "-", "--", "(", "'", '"', "../../etc/passwd", "%s", "NULL", "0" * 40,
                     "2026-13-45", "9999999999d", "-3d", "∞", "telegram:", ":", "\\", "\n", "2026-11-29T25:00"]),
)  # fmt: skip
CHECK = settings(
    max_examples=examples(10),  # derandomized (tests/conftest.py): the same examples on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def fingerprint(kaja) -> dict:
    """Every file's content, but the -shm (SQLite's shared memory, where any
    reader marks what it reads: it holds no data) and the query profile, which
    every command adds its own queries to."""
    return {
        p.relative_to(kaja.state): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(kaja.state.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm") and not p.name.startswith("db-stats.db")
    }


def assert_clean(r, allowed=range(6)):
    assert r.code in allowed, r
    assert "Traceback" not in r.err, r
    if r.code != 0:
        assert r.err.startswith("kaja: ") or "Usage:" in r.err or "Error" in r.err, r
        if r.err.startswith("kaja: "):
            assert r.err.count("\n") == 1, r


@pytest.fixture
def store(demo_store):
    # The first search for a Chinese, Japanese or Korean word makes the CJK
    # index (README "Searching"): made here, so that no query may change the
    # store after that.
    assert demo_store("search", "東京").code == 0
    demo_store.before = fingerprint(demo_store)
    return demo_store


@CHECK
@given(value=odd)
def test_any_session_id(store, value):
    for argv in (["resume", value], ["resume", value, "--json"], ["sessions", "export", value]):
        r = store(*argv)
        assert_clean(r)
        assert r.code != 0 or value.strip()
    assert fingerprint(store) == store.before


@CHECK
@given(value=odd)
def test_any_owner(store, value):
    for argv in (["sessions", "--owner", value], ["resume", "-c", "--owner", value, "--json"]):
        assert_clean(store(*argv))
    assert fingerprint(store) == store.before


@CHECK
@given(value=odd)
def test_any_date(store, value):
    for argv in (["sessions", "--since", value], ["usage", "--since", value, "--json"],
                 ["usage", "--until", value], ["demo", "--now", value]):  # fmt: skip
        assert_clean(store(*argv))
    assert fingerprint(store) == store.before


@CHECK
@given(content=st.one_of(text, st.binary(max_size=60).map(lambda b: b.decode("latin-1"))))
def test_any_settings_file(kaja, content):
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(content, encoding="utf-8", errors="surrogateescape")
    for argv in (["config", "paths"], ["config", "show", "--json"], ["config", "get", "memory.mode"],
                 ["sessions"], ["usage", "--json"]):  # fmt: skip
        r = kaja(*argv)
        assert_clean(r, allowed={0, 1})
        if r.code == 1:
            assert str(kaja.config) in r.err
    assert not kaja.state.exists()  # reading never creates the store


json_junk = st.one_of(
    text,
    st.sampled_from(["{", "[]", "null", "42", '"x"', '[{"type": "image"}]', '[{"type":"image","sha256":"../../x"}]',
                     '{"text": null}', '[{"type":"image","sha256":5,"mime":[]}]', "\ud800" * 0 + "[1,2"]),
)  # fmt: skip


@CHECK
@given(parts=json_junk, payload=json_junk, arguments=json_junk)
def test_any_json_in_the_store(store, parts, payload, arguments):
    """JSON columns hold whatever another program wrote there."""
    c = sqlite3.connect(store.db)
    with c:
        sid = c.execute("SELECT id FROM sessions WHERE title LIKE 'Tomato%'").fetchone()[0]
        c.execute("UPDATE messages SET parts = ? WHERE sessionId = ?", (parts, sid))
        c.execute("UPDATE session_events SET payload = ? WHERE sessionId = ?", (payload, sid))
        c.execute("UPDATE tool_calls SET arguments = ? WHERE messageId IN (SELECT id FROM messages WHERE sessionId = ?)",
                  (arguments, sid))  # fmt: skip
    c.close()
    before = fingerprint(store)
    for argv in (["resume", sid], ["resume", sid, "--json"], ["sessions", "export", sid],
                 ["sessions", "export", sid, "--format", "json"], ["sessions", "--json"]):  # fmt: skip
        r = store(*argv)
        assert_clean(r, allowed={0})
    assert fingerprint(store) == before


@CHECK
@given(query=odd, fts=st.booleans())
def test_any_search_query(store, query, fts):
    argv = ["search", *(["--fts"] if fts else []), "--", query]
    r = store(*argv)
    assert_clean(r, allowed={0, 2})
    if not fts and any(ch.isalnum() for ch in query):
        assert r.code == 0, r  # plain words never break: punctuation is harmless
    assert fingerprint(store) == store.before


# --- validated at the edge: numbers, paths, settings (each a finding once) ---------------------
def usage_error(r, option: str) -> None:
    assert r.code == 2, r
    assert r.err.startswith(f"kaja: Invalid value for '{option}") and r.err.count("\n") == 1, r


@pytest.mark.parametrize("wait", ["nan", "NaN", "inf", "-inf", "1e308", "-1", "3601"])
def test_a_wait_that_is_no_number_of_seconds_is_a_usage_error(store, wait):
    r = store("usage", "reset", "--wait", wait, "--yes")
    usage_error(r, "--wait")
    assert fingerprint(store) == store.before  # nothing was deleted


def test_huge_counts_are_usage_errors(store):
    huge = "99999999999999999999"
    for argv, option in [
        (["sessions", "-n", huge], "--limit"),
        (["sessions", "--limit", "1000000001"], "--limit"),
        (["search", "shade", "--limit", huge], "--limit"),
        (["resume", "-c", "--tail", huge], "--tail"),
        (["usage", "--tools", huge], "--tools"),
        (["demo", "--sessions", huge], "--sessions"),
        (["demo", "--messages", huge], "--messages"),
    ]:
        usage_error(store(*argv), option)
    assert store("sessions", "-n", "1000000000").code == 0  # the largest is fine


@pytest.mark.parametrize("option", ["--db", "--state-dir", "--config"])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(store, option):
    for value in ("", "  "):
        usage_error(store(option, value, "sessions"), option)
    r = store("sessions", "export", "x", "-o", "")
    usage_error(r, "--output")


@pytest.mark.parametrize("root", ["/", "/.", "//", "/tmp/.."])
def test_the_root_folder_as_the_database_is_one_line(kaja, root):
    for argv, code in [(["wipe", "--yes"], 5), (["wipe", "--dry-run"], 5), (["demo"], 5),
                       (["sessions"], 1), (["usage", "reset", "--yes"], 5),
                       (["wipe", "--owner", "telegram:1", "--yes"], 5),
                       (["backup", "-o", str(kaja.root / "b.tar.gz")], 5), (["optimize"], 5)]:  # fmt: skip
        r = kaja("--db", root, *argv)
        assert r.code == code, (argv, r)
        assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, (argv, r)
        assert "internal error" not in r.err
    r = kaja("--db", root, "wipe", "--yes")
    assert "is the root folder, not a Kaja database" in r.err
    r = kaja("--db", root, "doctor")
    assert r.code == 1 and "is a folder, not a SQLite database" in r.out, r
    # `config paths` looks at / without walking the whole disk.
    r = kaja.proc("--db", root, "config", "paths", "--json", timeout=30)
    assert r.code == 0 and '"size":null' in r.out, r


@pytest.mark.parametrize("depth", [40, 500, 5000])
def test_settings_nested_too_deep_are_one_line(kaja, depth):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text("x = " + "[" * depth + "]" * depth + "\n")
    for argv in (["sessions"], ["config", "paths"], ["config", "show"], ["config", "set",
                 "memory.mode", "local"], ["doctor", "--check", "settings"]):  # fmt: skip
        r = kaja(*argv)
        assert r.code == 1, (argv, r)
        assert "values nested more than 32 levels deep" in r.out + r.err, (argv, r)
        assert "internal error" not in r.err and "Recursion" not in r.err


def test_a_nul_in_db_path_is_one_line(kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text('[memory]\ndbPath = "a\\u0000b"\n')
    for argv in (["sessions"], ["wipe", "--yes"], ["demo"], ["config", "paths"]):
        r = kaja(*argv)
        assert r.code == 1, (argv, r)
        assert r.err == (
            f"kaja: {kaja.config}:2: memory.dbPath must be a file path, not 'a\\x00b': fix it with"
            " `kaja config edit`\n"
        ), (argv, r)
