"""Stemming (issue 40): a plain word finds its other forms, the form typed
ranks first, `--exact` and `search.language = "none"` turn it off, `--fts`
and CJK queries are as they were, and every new hit is an inflection of the
query (a word sharing its Snowball stem), nothing else."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import Stemmer

from kaja_cli.core.store.settings.keys import SNOWBALL
from tests.conftest import Kaja

TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # "Tomato leaves curling in the heat"


def found(k: Kaja, *args: str) -> dict:
    r = k("search", *args, "--json", "--all-owners", "-n", "0")
    assert r.code == 0, r
    return json.loads(r.out)


def words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"\w+", text)]


def contents(k: Kaja) -> dict[str, str]:
    with closing(sqlite3.connect(k.db)) as conn:
        return dict(conn.execute("SELECT id, content FROM messages"))


def test_tomato_finds_tomatoes_and_the_word_typed_ranks_first(shared_demo_store: Kaja) -> None:
    k = shared_demo_store
    every = contents(k)
    holding = {
        mid for mid, text in every.items() if {"tomato", "tomatoes"} & set(words(text or ""))
    }
    stemmed = found(k, "tomato")
    assert {h["message_id"] for h in stemmed["results"]} == holding
    assert stemmed["match"] == '("tomato" OR "tomatoes")'
    exact = found(k, "tomato", "--exact")
    assert exact["match"] == '"tomato"'
    only = {mid for mid, text in every.items() if "tomato" in words(text or "")}
    assert {h["message_id"] for h in exact["results"]} == only < holding
    # the terminal's default search, through the table a user sees
    r = k("search", "tomato")
    assert r.code == 0 and r.out.count("\n") >= len(holding & only)


def test_new_hits_are_inflections_and_nothing_else(shared_demo_store: Kaja) -> None:
    k = shared_demo_store
    stem = Stemmer.Stemmer("english").stemWord
    every = contents(k)
    for query in ("tomato", "tomatoes", "curl", "plants", "water", "heat", "run", "leaves",
                  "shade", "recipe", "train", "booking"):  # fmt: skip
        stemmed = {h["message_id"] for h in found(k, query)["results"]}
        exact = {h["message_id"] for h in found(k, query, "--exact")["results"]}
        assert exact <= stemmed, query
        for mid in stemmed - exact:
            forms = {w for w in words(every[mid]) if stem(w) == stem(query)}
            assert forms and query not in forms, (query, every[mid])


def test_exact_form_ranks_above_an_inflected_one(demo_store: Kaja) -> None:
    with closing(sqlite3.connect(demo_store.db)) as conn:
        for mid, text in (("inflected", "quokkas zebra"), ("typed", "quokka zebra")):
            conn.execute(
                "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
                " VALUES (?, ?, 90, 'user', ?, '2026-11-29T11:00:00.000Z')",
                (mid, TOMATO, text),
            )
        conn.commit()
    assert [h["message_id"] for h in found(demo_store, "quokka")["results"]] == [
        "typed",
        "inflected",
    ]
    assert [h["message_id"] for h in found(demo_store, "quokkas")["results"]] == [
        "inflected",
        "typed",
    ]
    both = found(demo_store, "quokka", "zebra")["results"]
    assert [h["message_id"] for h in both] == ["typed", "inflected"]
    assert both[0]["score"] > both[1]["score"]
    assert [h["message_id"] for h in found(demo_store, "quokka", "--exact")["results"]] == ["typed"]
    # the form written by another program after kaja built the index is found too
    with closing(sqlite3.connect(demo_store.db)) as conn:
        conn.execute(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES ('later', ?, 91, 'user', 'quokkaing', '2026-11-29T12:00:00.000Z')",
            (TOMATO,),
        )
        conn.commit()
    assert "later" in {h["message_id"] for h in found(demo_store, "quokka")["results"]}
    assert found(demo_store, "quokka")["match"] == '("quokka" OR "quokkaing" OR "quokkas")'
    # deleted, its word may stay among the index's words until a merge: no form then
    with closing(sqlite3.connect(demo_store.db)) as conn:
        conn.execute("DELETE FROM messages WHERE id = 'later'")
        conn.commit()
    assert found(demo_store, "quokka")["match"] == '("quokka" OR "quokkas")'
    with closing(sqlite3.connect(demo_store.db)) as conn:
        conn.execute("DELETE FROM messages WHERE id IN ('typed', 'inflected')")
        conn.commit()
    nothing = found(demo_store, "quokka")
    assert (nothing["match"], nothing["results"]) == ('"quokka"', [])


def test_fts_queries_and_short_words_are_as_typed(shared_demo_store: Kaja) -> None:
    k = shared_demo_store
    assert found(k, "--fts", "tomato")["match"] == "tomato"
    assert {h["message_id"] for h in found(k, "--fts", "tomato")["results"]} == {
        h["message_id"] for h in found(k, "tomato", "--exact")["results"]
    }
    assert found(k, "is")["match"] == '"is"'  # under three letters: as typed


def test_the_language_setting(demo_store: Kaja) -> None:
    k = demo_store
    assert k("config", "set", "search.language", "none").code == 0
    assert found(k, "tomato")["match"] == '"tomato"'
    assert k("config", "set", "search.language", "french").code == 0
    assert found(k, "tomate")["match"] == '("tomate" OR "tomates")'  # Ana's "tomates"
    bad = k("config", "set", "search.language", "klingon")
    assert bad.code == 2 and "search.language" in bad.err and "Traceback" not in bad.err
    # a value written by hand: the search goes on with the words as typed, and says why
    settings = json.loads(k("config", "paths", "--json").out)["paths"]["settings"]["path"]
    Path(settings).write_text('[search]\nlanguage = "klingon"\n')
    r = k("search", "tomato", "--json", "--all-owners")
    assert r.code == 0 and json.loads(r.out)["match"] == '"tomato"'
    assert "search.language 'klingon' is no Snowball language" in r.err


def test_the_languages_offered_are_snowballs() -> None:
    assert tuple(Stemmer.algorithms()) == SNOWBALL
