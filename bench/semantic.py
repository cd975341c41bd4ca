"""`kaja search --semantic` on the benchmark store (issue 41): the rows the
issue asks for, each kaja's whole process, wall and CPU (user + system, the
kernel's count: on this shared machine it moves less with the load) and
peak RSS from `wait4` (harness.run_process). A script of its own, not a
`bench_*.py` module of `bench/run.py`: its build alone takes minutes.

- build: `kaja search --semantic --reindex` from nothing (goal ≤ 10 min);
- query: a search of an up-to-date index, median of `--repeat` (goal ≤ 300 ms);
- 1,000 new messages: the index's high-water mark set back 1,000 messages
  (their vectors removed), then one search, which embeds them first
  (goal ≤ 1 s); the store itself is only read, so it needs no copy;
- peak RSS of a search (goal ≤ 150 MB), and the index's size on disk.

    python bench/semantic.py [--store DIR] [--repeat N] [--state DIR] [--rebuild]

--store DIR holds the store (`kaja.db`, read only); the index is built in
--state DIR (reused when it exists, unless --rebuild), or in a temporary one.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import run_process  # noqa: E402

QUERIES = [
    "my vegetables look unwell in hot weather",
    "copying my files to another disk every night",
    "how much did we spend this quarter",
    "splitting a long function into smaller ones",
    "a train journey with a view of the lake",
]
MORE_QUERIES = [  # for the ranking's agreement only
    "the dog keeps barking at night",
    "which wine goes with fish",
    "my code throws an error when the list is empty",
    "planning a birthday party for my daughter",
    "the heating bill went up this winter",
]
GOALS = {"build": 600_000, "query": 300, "new": 1_000, "rss": 150}


def kaja(state: Path, store: Path, *args: str) -> list[str]:
    exe = Path(sys.executable).with_name("kaja")
    return [str(exe), "--state-dir", str(state), "--db", str(store / "kaja.db"), *args]


def set_back(index: Path, count: int) -> int:
    """Remove the newest `count` vectors and lower the mark below them
    (as if the agent had written them since the last search); returns the new mark."""
    from kaja_cli.core.conversations.semantic import index as semantic_index

    with closing(sqlite3.connect(index, isolation_level=None)) as conn:
        rows = [r[0] for r in conn.execute(
            "SELECT rowid FROM semantic_vectors ORDER BY rowid DESC LIMIT ?", (count,))]  # fmt: skip
        mark = rows[-1] - 1
        conn.execute("BEGIN IMMEDIATE")
        semantic_index._drop_above(conn, mark)
        conn.execute("UPDATE semantic_meta SET value = ? WHERE key = 'high_water'", (mark,))
        conn.execute("UPDATE semantic_meta SET value = '' WHERE key = 'high_key'")
        conn.execute("COMMIT")
    return mark


def agreement(index: Path, queries: list[str], top: int = 20) -> float:
    """How much of the exhaustive ranking's top 20 (every int8 vector scored
    by cosine, numpy) a search's top 20 holds (kaja's passes, in-process),
    over `queries`, all owners."""
    import numpy as np

    from kaja_cli.core.conversations.semantic import local as semantic_local
    from kaja_cli.core.conversations.semantic import model, rank

    with closing(sqlite3.connect(index)) as conn:
        rowids, scores = [], []
        vectors = [model.query_vector(conn, q) for q in queries]
        qs = np.array(vectors, np.float32)
        batch = conn.execute("SELECT rowid, scale, code FROM semantic_vectors")
        while rows := batch.fetchmany(65536):
            codes = np.frombuffer(b"".join(r[2] for r in rows), np.int8).reshape(len(rows), -1)
            scale = np.array([r[1] for r in rows], np.float32)
            scores.append((codes.astype(np.float32) @ qs.T) * scale[:, None])
            rowids.append(np.array([r[0] for r in rows], np.int64))
        everyone, every_score = np.concatenate(rowids), np.concatenate(scores)
        same = 0
        for i, q in enumerate(vectors):
            best = set(everyone[np.argsort(-every_score[:, i])[:top]].tolist())
            ours = {
                r for _, r, _ in rank.Ranker(conn, q).best(semantic_local._FIRST_CANDIDATES)[:top]
            }
            same += len(best & ours)
    return same / (top * len(queries))


def row(case: str, wall: float, cpu: float, rss: float, goal: str, ok: bool) -> None:
    print(f"{case:<34} {wall:>9.0f} ms  CPU {cpu:>8.0f} ms  {rss:>6.0f} MB  {goal:<14}"
          f" {'ok' if ok else 'MISSED'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/bench-base/store-10000-1000000"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--state", type=Path, help="the state dir for the index (default: a temporary one)"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the index even if it exists")
    args = parser.parse_args()
    state = args.state or Path(tempfile.mkdtemp(prefix="kaja-semantic-"))
    index = state / "semantic.db"
    with closing(sqlite3.connect(f"file:{args.store / 'kaja.db'}?mode=ro", uri=True)) as conn:
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    print(f"{messages:,} messages in {args.store}; the index in {index}")
    if args.rebuild or not index.exists():
        wall, rss, cpu = run_process(kaja(state, args.store, "search", "--semantic", "--reindex"))
        row("build (--reindex)", wall, cpu, rss, "≤ 10 min", wall <= GOALS["build"])
    size = sum(p.stat().st_size for p in state.glob("semantic.db*"))
    with closing(sqlite3.connect(index)) as conn:
        vectors = conn.execute("SELECT count(*) FROM semantic_vectors").fetchone()[0]
    print(
        f"index size: {size / 1e6:.0f} MB for {vectors:,} vectors ({size / max(vectors, 1):.0f} B each)"
    )
    runs = [run_process(kaja(state, args.store, "search", "--semantic", q, "-n", "20"))
            for _ in range(args.repeat) for q in QUERIES]  # fmt: skip
    wall, rss, cpu = (statistics.median(x) for x in zip(*runs, strict=True))
    peak = max(r[1] for r in runs)
    row("query (median, whole process)", wall, cpu, rss, "≤ 300 ms", wall <= GOALS["query"])
    row("  peak RSS of a query", wall, cpu, peak, "≤ 150 MB", peak <= GOALS["rss"])
    news = []
    for q in QUERIES[: max(1, args.repeat // 2)]:
        set_back(index, 1000)
        news.append(run_process(kaja(state, args.store, "search", "--semantic", q, "-n", "20")))
    wall, rss, cpu = (statistics.median(x) for x in zip(*news, strict=True))
    row("1,000 new messages, then the query", wall, cpu, rss, "≤ 1 s", wall <= GOALS["new"])
    # Last: it reads every vector into this process, whose size a child forked later would
    # start with (wait4's peak RSS counts it).
    share = agreement(index, QUERIES + MORE_QUERIES)
    print(f"{'top 20 against every vector scored':<34} {share:>9.0%}"
          f"{'':>38} printed (all owners, {len(QUERIES + MORE_QUERIES)} questions)")  # fmt: skip
    if not args.state:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
