"""`kaja search` in cloud mode (core/pg/search.py, fts4.py, tokenizer.py): the same
matches as local search, ranked the same, on the demo store and on generated
messages with accents, case and punctuation (SPEC §6, §10)."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.conversations.search import fts4, search
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Overrides
from kaja_cli.errors import UsageError
from tests.conftest import examples

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


def same_results(local, cloud, *argv: str) -> dict:
    a, b = local("search", "--json", *argv), cloud("search", "--json", *argv)
    assert (a.code, a.err) == (b.code, b.err.replace(str(cloud.state), str(local.state))), argv
    assert json.loads(a.out) == json.loads(b.out), argv
    return json.loads(a.out)


@pytest.mark.parametrize(
    "argv",
    [
        ["tomato"],
        ["shade", "--all-owners"],
        ["creme", "brulee", "--all-owners", "-n", "0"],
        ["CRÈME", "--all-owners"],
        ["the", "--all-owners", "-n", "0"],
        ["the", "--recent", "--all-owners", "-n", "0"],
        ["the", "--role", "user", "--since", "2026-11-28"],
        ["backup", "--session", "01a226e4"],
        ["lista", "--owner", "telegram:482913"],
        ["don't", "c++", "--all-owners"],
        ["brul*", "--all-owners"],
        ["--fts", '"shade cloth" OR mulch', "--all-owners"],
        ["--fts", "tomato NOT heat", "--all-owners"],
        ["--fts", "(tomato OR basil) heat*", "--all-owners", "-n", "0"],
        ["--fts", "tomato NEAR/3 curling", "--all-owners"],
        ["--fts", "^the", "--all-owners", "-n", "0"],
        ["--all-owners", "--fts", "--", "backup -rf"],
        ["--all-owners", "--", "-rf"],
        ["nothing-matches-this-zzz"],
    ],
)
def test_the_demo_store_gives_the_same_answer_as_local(cloud_demo, local_demo, argv):
    doc = same_results(local_demo, cloud_demo, *argv)
    assert doc["source"] == "index"


def test_the_demo_search_finds_what_it_should(cloud_demo):
    doc = json.loads(cloud_demo("search", "creme", "brulee", "--all-owners", "--json").out)
    assert doc["results"] and all("rème" in h["snippet"] or "rûl" in h["snippet"]
                                  for h in doc["results"])  # fmt: skip
    r = cloud_demo("search", "shade", "--all-owners")
    assert r.code == 0 and "shade" in r.out and "01a22652" in r.out


def test_a_malformed_fts_query_is_a_usage_error_with_sqlites_words(cloud_demo):
    r = cloud_demo("search", "--fts", "tomato AND")
    assert r.code == 2
    assert r.err.startswith("kaja: --fts: malformed MATCH expression: [tomato AND]")


def test_search_without_a_store_says_so(cloud):
    r = cloud("search", "tomato")
    assert r.code == 0 and r.out == ""
    assert "no Kaja store in postgresql://" in r.err


def test_reindex_rebuilds_the_index_on_the_server(cloud_demo, local_demo):
    r = cloud_demo("search", "--reindex", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["reindexed"]["messages"] == 96
    same_results(local_demo, cloud_demo, "the", "--all-owners", "-n", "0")


# --- a generated corpus --------------------------------------------------------------------------
ALPHABET = (
    string.ascii_letters + string.digits + " .,;:!?'\"()-_/@#+*&%[]{}\n\t"
    + "éèêëàâäçñöüøæœßÅÉÇÑÜØÆŒıİσςΣάíóúÁ€–’“”…😀" + "\u0301"
)  # fmt: skip
VOCABULARY = ["café", "cafe", "CAFÉ", "naïve", "naive", "ørken", "Ørken", "straße", "STRASSE",
              "œuvre", "Σοφία", "σοφια", "don't", "c++", "e-mail", "kaja@example.org", "3.14",
              "a", "b", "ab", "abc", "Über", "uber", "e\u0301te", "été"]  # fmt: skip
words = st.one_of(st.sampled_from(VOCABULARY), st.text(ALPHABET, min_size=1, max_size=8))
messages = st.lists(st.lists(words, max_size=12).map(" ".join), min_size=1, max_size=25)
plain = st.lists(st.sampled_from(VOCABULARY) | st.text(ALPHABET, min_size=1, max_size=6),
                 min_size=1, max_size=3).map(" ".join)  # fmt: skip
phrase = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(
    lambda ws: '"' + " ".join(ws) + '"'
)
term = st.sampled_from(VOCABULARY).map(lambda w: w.replace('"', "")) | phrase
fts = st.recursive(
    term,
    lambda inner: st.tuples(inner, st.sampled_from([" ", " AND ", " OR ", " NOT ", " NEAR/2 "]),
                            inner).map("".join) | inner.map(lambda q: f"({q})"),
    max_leaves=4,
)  # fmt: skip


@pytest.fixture
def two_stores(tmp_path, pg):
    local = Store.locate(environ={"KAJA_STATE_DIR": str(tmp_path / "local"),
                                  "KAJA_CONFIG": str(tmp_path / "none.toml")})  # fmt: skip
    cloud = Store.locate(Overrides(database_url=pg.url),
                         environ={"KAJA_STATE_DIR": str(tmp_path / "cloud"),
                                  "KAJA_CONFIG": str(tmp_path / "none.toml")})  # fmt: skip
    return local, cloud


def write(stores: tuple[Store, Store], texts: list[str]) -> None:
    for store in stores:
        with Recorder(store) as rec:
            with rec.transaction() as conn:
                conn.execute("DELETE FROM messages")
                conn.execute("DELETE FROM sessions")
            sid = rec.start_session(title="corpus", session_id="s1")
            with rec.transaction():
                for text in texts:
                    rec.add_message(sid, "user", text)


def answers(store: Store, query: str, *, fts_syntax: bool) -> list[tuple[str, float]] | str:
    """The messages found, best first, with their scores; or the usage error.

    NEAR: the same messages, not the same scores (README "Cloud mode": FTS4
    counts only the occurrences near each other), so in order of seq."""
    try:
        found = search(store, query, fts=fts_syntax, all_owners=True, limit=0)
    except UsageError as e:
        return e.message
    if fts_syntax and "NEAR" in query:
        return sorted((h.seq, 0.0) for h in found.hits)
    return [(h.seq, round(h.score, 9)) for h in found.hits]


@settings(max_examples=examples(20),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(texts=messages, plain_queries=st.lists(plain, min_size=6, max_size=6),
       fts_queries=st.lists(fts, min_size=5, max_size=5))  # fmt: skip
def test_generated_messages_match_the_same_way(two_stores, texts, plain_queries, fts_queries):
    write(two_stores, texts)
    local, cloud = two_stores
    for query in plain_queries:
        assert answers(cloud, query, fts_syntax=False) == answers(local, query, fts_syntax=False), (
            texts, query)  # fmt: skip
    for query in fts_queries:
        assert answers(cloud, query, fts_syntax=True) == answers(local, query, fts_syntax=True), (
            texts, query)  # fmt: skip


@pytest.mark.exhaustive  # by default through `doctor --thorough` (test_cloud_doctor.py)
def test_every_code_point_folds_as_sqlites_tokenizer(cloud_demo):
    from kaja_cli.core.store.server import tokenizer

    store = Store.locate(environ=cloud_demo.env)
    with store.reader() as conn:
        bad = tokenizer.verify(conn, "kaja", every=True)
    assert bad == []


def test_fts4_precedence_and_spellings():
    def ts(q: str) -> str | None:
        return fts4.parse(q).tsquery

    assert ts("a OR b c") == "('a' | ('b' & 'c'))"
    assert ts("a b OR c") == "(('a' & 'b') | 'c')"
    assert ts("a NOT b c") == "(('a' & !'b') & 'c')"
    assert ts('"Crème brûlée"') == "('creme' <-> 'brulee')"
    assert ts("content:tomato*") == "'tomato':*"
    assert ts("^first") == "('^' <-> 'first')"
    assert ts("a -b") == "('a' & 'b')"  # "-" is no operator with parentheses enabled
    assert ts('a OR ""') == "'a'"
    assert ts('a ""') is None
    assert [p.tsquery for p in fts4.parse("a NOT b").phrases] == ["'a'"]  # NOT's right: unscored
    # A phrase's hits count where its branch matched (FTS4's matchinfo).
    assert [p.condition for p in fts4.parse("(naive cafe) OR cafe").phrases] == [
        "(('naive' & 'cafe'))",
        "(('naive' & 'cafe'))",
        None,
    ]
    assert ts("a NEAR/1 b") == ("(('a' <1> 'b') | ('a' <2> 'b') | ('b' <1> 'a') | ('b' <2> 'a'))")


# --- stemming (issue 40) -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["tomato", "--all-owners"],
        ["changing", "--all-owners", "-n", "0"],  # changed (2 messages), change, changing
        ["make", "--all-owners"],  # make, makes, making: one message each
        ["deleted", "--all-owners", "-n", "0"],
        ["shade", "--all-owners"],  # no other form in the store
        ["tomato", "--exact", "--all-owners"],
        ["changing", "files", "--all-owners", "-n", "0"],
        ["leaves", "--recent", "--all-owners"],
        ["notes", "--owner", "telegram:482913"],
        ["plan", "--all-owners", "--role", "user"],
    ],
)
def test_stemmed_searches_give_the_same_answer_as_local(cloud_demo, local_demo, argv):
    doc = same_results(local_demo, cloud_demo, *argv)
    stemmed = argv[0] in ("tomato", "changing", "make", "deleted", "leaves", "notes", "plan")
    assert (" OR " in doc["match"]) == (stemmed and "--exact" not in argv), doc["match"]


def test_changing_finds_every_form_the_typed_one_first(cloud_demo):
    doc = json.loads(cloud_demo("search", "--json", "changing", "--all-owners").out)
    assert doc["match"] == '("changing" OR "change" OR "changed")'


def _old_schema(pg) -> None:
    """The server as a kaja from before stemming left it: no word list."""
    with pg.connect() as conn:
        conn.execute("DROP TABLE kaja.kaja_search_terms")
        for event in ("insert", "update"):
            conn.execute(f"DROP TRIGGER kaja_search_terms_{event} ON kaja.messages")
            conn.execute(f"DROP FUNCTION kaja.kaja_search_terms_{event}()")


def test_a_server_made_before_stemming_stems_and_gets_its_word_list(cloud_demo, local_demo):
    from kaja_cli.core.store.server import schema as pg_schema

    _old_schema(cloud_demo.pg)
    store = Store.locate(environ=cloud_demo.env)
    with store.reader() as conn:
        assert "table kaja_search_terms" in pg_schema.missing(conn)
    # Read only: the words come from the messages, and a note says so.
    a = local_demo("search", "--json", "changing", "--all-owners")
    b = cloud_demo("search", "--json", "changing", "--all-owners")
    assert b.code == 0 and json.loads(b.out) == json.loads(a.out)
    assert "has no list of its search words yet" in b.err
    with store.writer():  # what any writing command does first
        pass
    assert cloud_demo.pg.query("SELECT count(*) FROM kaja.kaja_search_terms WHERE term IN"
                               " ('change', 'changed', 'changing')") == [(3,)]  # fmt: skip
    assert cloud_demo.pg.query("SELECT count(*) FROM kaja.kaja_search_terms WHERE term = '^'") == [
        (0,)
    ]
    b = cloud_demo("search", "--json", "changing", "--all-owners")
    assert (b.code, b.err) == (0, "") and json.loads(b.out) == json.loads(a.out)


def test_reindex_gives_an_old_server_its_word_list(cloud_demo, local_demo):
    _old_schema(cloud_demo.pg)
    assert cloud_demo("search", "--reindex").code == 0
    assert cloud_demo.pg.query(
        "SELECT count(*) FROM kaja.kaja_search_terms WHERE term = 'tomatoes'"
    ) == [(1,)]
    same_results(local_demo, cloud_demo, "tomato", "--all-owners", "-n", "0")


def test_a_message_the_agent_writes_is_found_by_another_form_at_once(cloud_demo):
    sid = "01a22652-5660-76c3-b813-0c4237730edf"
    with cloud_demo.pg.connect() as conn:
        conn.execute('INSERT INTO kaja.messages (id, "sessionId", seq, role, content, "createdAt")'
                     " VALUES ('m-zucchini', %s, 900, 'user', 'Two zucchinis rotted',"
                     " '2026-11-30T10:00:00Z')", (sid,))  # fmt: skip
    doc = json.loads(cloud_demo("search", "--json", "zucchini", "--all-owners").out)
    assert doc["match"] == '("zucchini" OR "zucchinis")'
    assert [h["message_id"] for h in doc["results"]] == ["m-zucchini"]
    # An edit that brings a new word lists it too.
    with cloud_demo.pg.connect() as conn:
        conn.execute(
            "UPDATE kaja.messages SET content = 'Three aubergines' WHERE id = 'm-zucchini'"
        )
    doc = json.loads(cloud_demo("search", "--json", "aubergine", "--all-owners").out)
    assert [h["message_id"] for h in doc["results"]] == ["m-zucchini"]
    # The word no message holds any more is listed still, and no form.
    doc = json.loads(cloud_demo("search", "--json", "zucchini", "--all-owners").out)
    assert (doc["match"], doc["results"]) == ('"zucchini"', [])
