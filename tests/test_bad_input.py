"""Bad input, property-based: whatever a user types or another program stored,
every run ends with an exit code 0-5 and at most one clear line, never a
traceback, and a reading command never modifies the store."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    max_examples=10,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is never flaky by chance
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
