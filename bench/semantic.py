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
GOALS = {"build": 600_000, "query": 300, "new": 1_000, "rss": 150}


def kaja(state: Path, store: Path, *args: str) -> list[str]:
    exe = Path(sys.executable).with_name("kaja")
    return [str(exe), "--state-dir", str(state), "--db", str(store / "kaja.db"), *args]


def set_back(index: Path, count: int) -> int:
    """Remove the newest `count` vectors and lower the mark below them
    (as if the agent had written them since the last search); returns the new mark."""
    import numpy as np

    with closing(sqlite3.connect(index)) as conn, conn:
        rows = [r[0] for r in conn.execute(
            "SELECT rowid FROM semantic_vectors ORDER BY rowid DESC LIMIT ?", (count,))]  # fmt: skip
        mark = rows[-1] - 1
        conn.execute("DELETE FROM semantic_vectors WHERE rowid > ?", (mark,))
        conn.execute("DELETE FROM semantic_chunks WHERE first > ?", (mark,))
        row = conn.execute(
            "SELECT id, rowids, bits FROM semantic_chunks WHERE last > ?", (mark,)
        ).fetchone()
        if row is not None:
            ids = np.frombuffer(row[1], np.int64)
            keep = ids <= mark
            bits = np.frombuffer(row[2], np.uint8).reshape(len(ids), -1)[keep]
            conn.execute(
                "UPDATE semantic_chunks SET last = ?, n = ?, rowids = ?, bits = ? WHERE id = ?",
                (int(ids[keep][-1]), int(keep.sum()), ids[keep].tobytes(), bits.tobytes(), row[0]),
            )
        conn.execute("UPDATE semantic_meta SET value = ? WHERE key = 'high_water'", (mark,))
        conn.execute("UPDATE semantic_meta SET value = '' WHERE key = 'high_key'")
    return mark


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
    if not args.state:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
