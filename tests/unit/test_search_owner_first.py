"""Owner-filtered search ranks only the owner's messages when that is cheaper
(`search.local._owner_first`): on random stores, its answer is the unfiltered
search's answer filtered afterwards, same messages, same order, same scores,
whichever way the ranking went. In-process: the choice is the point, and a
real process proves nothing more about it."""

from __future__ import annotations

import json
import random
import sqlite3
from contextlib import closing

import pytest

from kaja_cli.core.conversations import search
from kaja_cli.core.conversations.search import local
from kaja_cli.core.owners import TERMINAL
from kaja_cli.core.store import Store
from tests.conftest import Kaja

OWNERS = [None, "", TERMINAL, "telegram:1", "telegram:2", "telegram:3"]
WORDS = ["tomato", "tomatoes", "garden", "gardening", "run", "runs", "running", "shade",
         "water", "the", "a", "leaf", "leaves"]  # fmt: skip
QUERIES = ["tomato", "the", "garden water", "running", "leaf the", "shade"]


def fill(db, rng: random.Random) -> None:
    """Random sessions of random owners, random messages; some archived."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {local.ARCHIVE_TABLE} (sessionId TEXT PRIMARY KEY, archivedAt)"
        )
        sessions = []
        for s in range(rng.randint(3, 25)):
            sid = f"rand-{s:03d}"
            owner = rng.choice(OWNERS)
            conn.execute(
                "INSERT INTO sessions (id, createdAt, updatedAt, title, owner)"
                " VALUES (?, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', ?, ?)",
                (sid, f"random {s}", owner),
            )
            sessions.append(sid)
            if rng.random() < 0.15:
                conn.execute(
                    f"INSERT INTO {local.ARCHIVE_TABLE} (sessionId, archivedAt)"
                    " VALUES (?, '2026-11-02T00:00:00.000Z')",
                    (sid,),
                )
        for m in range(rng.randint(20, 300)):
            words = rng.choices(WORDS, k=rng.randint(1, 12))
            conn.execute(
                "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (f"rand-m{m:04d}", rng.choice(sessions), m, rng.choice(["user", "assistant"]),
                 " ".join(words), f"2026-11-{rng.randint(1, 28):02d}T10:00:00.000Z"),
            )  # fmt: skip
        conn.commit()


@pytest.mark.parametrize("seed", range(12))
def test_owner_first_gives_the_filtered_answer(demo_store: Kaja, monkeypatch, seed: int) -> None:
    rng = random.Random(seed)
    fill(demo_store.db, rng)
    store = Store.locate(environ=demo_store.env)
    for query in QUERIES:
        for exact in (False, True):
            everyone = search.search(store, query, all_owners=True, limit=0, exact=exact)
            for owner in ("terminal", "telegram:1", "telegram:2", "telegram:771204"):
                kw = {"owner": owner, "exact": exact}
                if rng.random() < 0.3:
                    kw["roles"] = ["user"]
                if rng.random() < 0.3:
                    kw["since"] = "2026-11-15"
                limit = rng.choice([0, 1, 3, 20])
                expected = [
                    (h.message_id, h.score)
                    for h in everyone.hits
                    if _owner(h.owner) == owner
                    and ("roles" not in kw or h.role == "user")
                    and ("since" not in kw or h.created_at >= "2026-11-15")
                ]
                for cost in (0, 10**9):  # never and always the owner's messages first
                    monkeypatch.setattr(local, "_RANK_COST", cost)
                    got = search.search(store, query, limit=limit, **kw)
                    want = expected[:limit] if limit else expected
                    assert [(h.message_id, h.score) for h in got.hits] == want, (query, kw, cost)
                    assert got.more == (limit > 0 and len(expected) > limit)


def _owner(stored: str | None) -> str:
    return "terminal" if stored in (None, "", TERMINAL) else stored


def test_owner_first_is_chosen_only_when_it_saves_work(demo_store: Kaja, monkeypatch) -> None:
    """A common word's matches are mostly other owners': ranked after listing the
    owner's; a rare word's few matches: ranked as they are."""
    with closing(sqlite3.connect(demo_store.db)) as conn:
        conn.execute(
            "INSERT INTO sessions (id, createdAt, updatedAt, title, owner)"
            " VALUES ('crowd', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 'c', 'telegram:9')"
        )
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, 'crowd', ?, 'user', 'common words everywhere', '2026-11-01T00:00:00.000Z')",
            [(f"crowd-{i}", i) for i in range(3000)],
        )
        conn.commit()
    store = Store.locate(environ=demo_store.env)
    chosen = []
    real = local._owner_first
    monkeypatch.setattr(local, "_owner_first", lambda *a: chosen.append(real(*a)) or chosen[-1])
    search.search(store, "common", owner="terminal")
    search.search(store, "tomato", owner="terminal")
    assert chosen == [True, False]


def test_sessions_without_rowid_from_another_program(kaja: Kaja) -> None:
    """Another program's sessions WITHOUT ROWID: the owner's share is counted."""
    kaja.state.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(kaja.db)) as conn:
        conn.execute(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt, updatedAt, title, owner)"
            " WITHOUT ROWID"
        )
        conn.execute(
            "CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, seq, role, content, createdAt)"
        )
        conn.execute("INSERT INTO sessions VALUES ('mine', '2026', '2026', 't', NULL)")
        conn.execute("INSERT INTO sessions VALUES ('theirs', '2026', '2026', 't', 'telegram:1')")
        conn.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, 'user', 'common words here', '2026')",
            [(f"m{i}", "theirs" if i % 50 else "mine", i) for i in range(3000)],
        )
        conn.commit()
    r = kaja("search", "common", "--json", "-n", "0")
    assert r.code == 0, r
    assert {h["session_id"] for h in json.loads(r.out)["results"]} == {"mine"}
    assert len(json.loads(r.out)["results"]) == 60
