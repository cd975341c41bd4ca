"""`search.words.terms`, the index's words read from FTS4's segments, lists
exactly what FTS4's own fts4aux lists, on indexes of every shape a store's
index takes: one segment or many, an automerge under way, a finished merge,
deleted messages, long doclists spilling over pages, non-ASCII words."""

from __future__ import annotations

import random
import sqlite3

import pytest

from kaja_cli.core.conversations.search import words
from kaja_cli.core.store import search_index

ALPHABET = "abcdeéßz"


def word(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6)))


def index(rng: random.Random, shape: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE messages (content TEXT)")
    conn.execute(search_index.FTS_DDL)
    if shape != "legacy-merge":
        conn.execute(
            f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}) VALUES ('automerge=2')"
        )
    vocabulary = [word(rng) for _ in range(rng.randint(5, 400))]
    common = rng.choice(vocabulary)
    batches = {"one": 1, "many": 60, "legacy-merge": 60, "optimized": 30}[shape]
    rowid = 0
    for _ in range(batches):
        conn.execute("BEGIN")
        for _ in range(rng.randint(1, 80)):
            rowid += 1
            text = " ".join(rng.choices(vocabulary, k=rng.randint(1, 30)))
            if rng.random() < 0.3:
                text += f" {common}" * 40  # a long doclist for one word
            conn.execute("INSERT INTO messages (rowid, content) VALUES (?, ?)", (rowid, text))
            conn.execute(
                f"INSERT INTO {search_index.FTS_TABLE}(docid, content) VALUES (?, ?)", (rowid, text)
            )
        conn.execute("COMMIT")
        if rng.random() < 0.2 and rowid > 2:  # take some out, as the delete trigger does
            gone = rng.randint(1, rowid)
            row = conn.execute("SELECT content FROM messages WHERE rowid = ?", (gone,)).fetchone()
            if row:
                conn.execute(f"DELETE FROM {search_index.FTS_TABLE} WHERE docid = ?", (gone,))
                conn.execute("DELETE FROM messages WHERE rowid = ?", (gone,))
    if shape == "optimized":
        conn.execute(
            f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}) VALUES ('optimize')"
        )
    conn.execute(f"CREATE VIRTUAL TABLE temp.aux USING fts4aux(main, {search_index.FTS_TABLE})")
    return conn


@pytest.mark.parametrize("shape", ["one", "many", "legacy-merge", "optimized"])
@pytest.mark.parametrize("seed", range(6))
def test_the_words_are_fts4auxs(shape: str, seed: int) -> None:
    rng = random.Random(f"{shape}{seed}")
    conn = index(rng, shape)
    segments = conn.execute(f"SELECT count(*) FROM {search_index.FTS_TABLE}_segdir").fetchone()[0]
    assert segments >= 1
    every = [r[0] for r in conn.execute("SELECT term FROM temp.aux WHERE col = '*'")]
    bounds = [("", "\U0010ffff")] + [tuple(sorted((word(rng), word(rng)))) for _ in range(40)]
    bounds += [(t, t[:-1] + chr(ord(t[-1]) + 1)) for t in rng.sample(every, min(20, len(every)))]
    for low, high in bounds:
        for inclusive in (True, False):
            expected = [t for t in every if (t >= low if inclusive else t > low) and t < high]
            got = words.terms(conn, "main", search_index.FTS_TABLE, low, high, inclusive)
            listed = [t for t, _ in got]
            assert listed == sorted(listed) and all(size > 0 for _, size in got)
            # every word FTS4 holds, and besides them only words whose every
            # message was deleted (their markers not merged away yet)
            assert [t for t in listed if t in set(expected)] == expected, (low, high, segments)
            for stale in set(listed) - set(expected):
                assert not _matches(conn, stale), stale


def _matches(conn: sqlite3.Connection, term: str) -> int:
    return conn.execute(
        f"SELECT count(*) FROM {search_index.FTS_TABLE} WHERE {search_index.FTS_TABLE} MATCH ?",
        (f'"{term}"',),
    ).fetchone()[0]


def test_a_shape_it_does_not_know_is_said_so() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts4(content)")
    conn.execute("INSERT INTO f(docid, content) VALUES (1, 'hello world')")
    conn.commit()  # FTS4 writes its segment at the commit
    assert [t for t, _ in words.terms(conn, "main", "f", "a", "z", True)] == ["hello", "world"]
    conn.execute("UPDATE f_segdir SET root = x'05ff'")  # a height with no node below
    with pytest.raises(words.Unreadable):
        words.terms(conn, "main", "f", "a", "z", True)


def test_words_are_cut_and_folded_as_the_index_does() -> None:
    """`stems.tokens` cuts ASCII words itself, without SQLite: the same tokens
    as fts3tokenize with the index's tokenizer, for any printable ASCII."""
    import string

    from kaja_cli.core.conversations.search import stems

    rng = random.Random(7)
    samples = ["".join(rng.choice(string.printable) for _ in range(rng.randint(1, 12)))
               for _ in range(3000)]  # fmt: skip
    samples += ["Café", "a_b", "don't", "c++", "x-y_z9", "ÉTÉ", "東京", "naïve-ly"]
    memory = sqlite3.connect(":memory:")
    memory.execute(
        "CREATE VIRTUAL TABLE temp.tok USING fts3tokenize('unicode61', 'remove_diacritics=2')"
    )
    expected = [[r[0] for r in memory.execute("SELECT token FROM temp.tok WHERE input = ?", (w,))]
                for w in samples]  # fmt: skip
    assert stems.tokens(samples) == expected
