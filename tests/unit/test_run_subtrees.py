"""A runs listing's subtree figures (kaja_cli/core/audit/runs.py `_subtree_totals`):
summed once from the leaves up, they are what one tree from each listed run
gives (`_trees_each`, the server's sums), on random runs tables: forests, runs
with threads of their own (one owner's view), ids given twice, loops, parents
that do not exist, figures that are NULL, REAL or text."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import pytest

from kaja_cli.core.audit import runs
from kaja_cli.core.audit.common import columns

_SCHEMA = """
CREATE TABLE runs (id, parent_id, agent, thread_id, started_at, status);
CREATE TABLE calls (id INTEGER PRIMARY KEY, run_id, prompt_tokens, completion_tokens);
CREATE TABLE tools (id INTEGER PRIMARY KEY, run_id, tool);
CREATE INDEX runs_parent ON runs (parent_id);
CREATE INDEX calls_run ON calls (run_id);
CREATE INDEX tools_run ON tools (run_id);
"""


def _store(rng: random.Random, n: int, odd: bool) -> sqlite3.Connection:
    """`n` runs, each below an earlier one or none (a forest); `odd`: another
    program's data too (an id twice, a loop, a parent that is not there)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(_SCHEMA)
    ids = [f"r{i}" for i in range(n)]
    rows = []
    for i, rid in enumerate(ids):
        parent = rng.choice([None, *ids[:i]]) if i else None
        thread = rng.choice([None, "", "t1", None, None])
        rows.append((rid, parent, thread))
    if odd:
        kind = rng.choice(["twice", "loop", "self", "missing"])
        a, b = rng.sample(range(n), 2)
        if kind == "twice":  # the same id with another parent
            rows.append((ids[a], ids[b] if b < a else None, None))
        elif kind == "loop":  # a run below one below it
            lo, hi = min(a, b), max(a, b)
            rows[lo] = (ids[lo], ids[hi], rows[lo][2])
        elif kind == "self":
            rows[a] = (ids[a], ids[a], rows[a][2])
        else:
            rows[a] = (ids[a], "gone", rows[a][2])
    conn.executemany(
        "INSERT INTO runs (id, parent_id, thread_id, started_at, status) VALUES (?, ?, ?, 't', 'ok')",
        rows,
    )
    values = [None, 0, 1, 7, 2.5, "3", 10**12]
    for _ in range(n * 2):
        conn.execute(
            "INSERT INTO calls (run_id, prompt_tokens, completion_tokens) VALUES (?, ?, ?)",
            (rng.choice(ids), rng.choice(values), rng.choice(values)),
        )
    for _ in range(n):
        conn.execute("INSERT INTO tools (run_id, tool) VALUES (?, 'x')", (rng.choice(ids),))
    return conn


def _ints(totals: dict) -> dict:
    """As the listing shows them (`_add_subtrees`)."""
    return {k: tuple(int(v or 0) for v in t) for k, t in totals.items()}


@pytest.mark.parametrize("seed", range(60))
def test_summed_from_the_leaves_up_is_one_tree_each(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 40)
    with closing(_store(rng, n, odd=seed % 3 == 0)) as conn:
        have = columns(conn, "runs", "calls", "tools")
        listed = [f"r{i}" for i in rng.sample(range(n), rng.randint(1, n))]
        listed += rng.sample(listed, min(2, len(listed)))  # a run listed twice
        marks = ", ".join("?" for _ in listed)
        for owned in (False, True):
            got = runs._subtree_totals(conn, have, listed, owned=owned)
            want = runs._trees_each(conn, have, marks, listed, owned)
            # (every run below them summed on the way, given too: the listing asks its own)
            assert _ints({k: got[k] for k in want}) == _ints(want), (seed, owned)
            assert set(listed) <= set(got)


def test_a_chain_listed_whole_reads_each_run_once():
    """A chain of 2,000 runs, every one listed (`runs --all -n 0`), the agent's
    indexes there: each run's figures are read once, not once for every run
    above it (2 million times)."""
    conn = sqlite3.connect(":memory:")
    with closing(conn):
        conn.executescript(_SCHEMA)
        n = 2000
        conn.executemany(
            "INSERT INTO runs (id, parent_id, thread_id) VALUES (?, ?, NULL)",
            [(f"r{i}", f"r{i - 1}" if i else None) for i in range(n)],
        )
        conn.executemany("INSERT INTO calls (run_id, prompt_tokens, completion_tokens)"
                         " VALUES (?, 1, 1)", [(f"r{i}",) for i in range(n)])  # fmt: skip
        have = columns(conn, "runs", "calls", "tools")
        steps: list[int] = []
        conn.set_progress_handler(lambda: steps.append(1), 1000)
        got = runs._subtree_totals(conn, have, [f"r{i}" for i in range(n)])
        assert got["r0"] == (n - 1, n, 2 * n, 0) and got[f"r{n - 1}"] == (0, 1, 2, 0)
        # one tree each reads n * (n + 1) / 2 runs' figures: some 10 million steps of
        # SQLite's; read once, a few hundred thousand
        assert len(steps) * 1000 < 2_000_000, len(steps)
