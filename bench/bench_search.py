"""Search (issue 4): `kaja search` against FTS5 over the same messages, built in this run.

Goals on the benchmark store (1,000,000 messages, Zipf vocabulary):
- a selective word (~100 matches): at most 10 ms of query time (kaja minus its start-up);
- a common word (~100,000 matches), best 20: at most 1.5× FTS5's
  `ORDER BY rank LIMIT 20` (the `sqlite3` shell on a contentless FTS5 table
  of the same messages, same tokenizer), with the same top 20;
- index size, and the cost of writing a message with the index's triggers
  against the same store without an index.

The words are chosen from the index itself (the term whose document count is
nearest 100 and 100,000). If the store's index is not in the shape this kaja
makes (an older trigger set), it is rebuilt once with `kaja search --reindex`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

INSERTS = 500  # messages per insert run


def cases(bench) -> None:
    from kaja_cli.core import search_index

    store = bench.db
    with sqlite3.connect(store.as_uri() + "?mode=ro", uri=True) as conn:
        current = search_index.state(conn) == search_index.READY and not search_index.outdated(conn)
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    if not current:
        start = time.perf_counter()
        subprocess.run(bench.kaja("search", "--reindex"), env=bench.env, check=True)
        took = (time.perf_counter() - start) * 1000
        bench.add(f"search: --reindex {messages:,} messages (once)", took, None, "",
                  goal_text="(info)", note="the store's index predates this kaja")  # fmt: skip

    selective, common = _words(store)
    floor_db = bench.state_dir.parent / "search-floor-fts5.db"
    built_ms = _build_fts5(store, floor_db)

    def fts5(word: str, limit: int = 20) -> list[str]:
        return bench.sqlite(
            f"SELECT rowid FROM f WHERE f MATCH '\"{word}\"' ORDER BY rank LIMIT {limit}", floor_db
        )

    # A selective word: the goal is on kaja's own time, so its start-up is
    # measured interleaved with it (a start-up measured minutes earlier, on a
    # shared machine, would move the difference by more than the goal).
    word = selective[0]
    # The goal is on the query: the core's search() from opening the store to
    # the hits with their snippets, timed in one process (no start-up, no
    # imports). The whole command, over `kaja --version` run alongside, is
    # printed as well: that also counts loading the search modules.
    query_ms = _query_ms(bench, word, repeat=max(bench.repeat, 15))
    _, floor_ms = bench.pair(bench.kaja("search", word), fts5(word))
    bench.add(f"search: selective word ({selective[1]} matches), query", query_ms, floor_ms,
                    "FTS5 ORDER BY rank LIMIT 20", goal_text="≤ 10 ms",
                    note=f"core search(), median of {max(bench.repeat, 15)} in one process; '{word}'",
                    ok=query_ms <= 10)  # fmt: skip
    kaja_ms, version_ms = bench.pair(
        bench.kaja("search", word), bench.kaja("--version"), repeat=max(bench.repeat, 15)
    )
    bench.add("search: selective word, whole command", kaja_ms, floor_ms, "FTS5 ORDER BY rank LIMIT 20",
              goal_text="(info)", note=f"{kaja_ms - version_ms:.1f} ms over `kaja --version` run alongside")  # fmt: skip

    # A common word, best 20 over every owner: the same question FTS5 answers.
    word, count = common
    same, detail = _agreement(bench, store, floor_db, word)
    kaja_ms, floor_ms = bench.pair(bench.kaja("search", word, "--all-owners"), fts5(word))
    bench.add(f"search: common word ({count:,} matches), best 20", kaja_ms, floor_ms,
              "FTS5 ORDER BY rank LIMIT 20", goal=1.5, subtract_startup=True,
              note=f"'{word}', --all-owners; top 20 = FTS5's: {'yes' if same else 'NO'} ({detail}); "
                   f"FTS5 table built in {built_ms / 1000:.1f} s")  # fmt: skip
    if not same:
        bench.rows[-1].ok = False
    kaja_ms, floor_ms = bench.pair(bench.kaja("search", word), fts5(word))
    bench.add("search: common word, the terminal's best 20", kaja_ms, floor_ms,
              "FTS5 ORDER BY rank LIMIT 20", goal_text="(info)", subtract_startup=True,
              note="the default: owner filter checked in rank order")  # fmt: skip
    kaja_ms, floor_ms = bench.pair(bench.kaja("search", word, "--recent"), fts5(word))
    bench.add("search: common word --recent", kaja_ms, floor_ms, "FTS5 ORDER BY rank LIMIT 20",
              goal_text="(info)", subtract_startup=True)  # fmt: skip
    old = _rank_bm25_command(store, word)
    if old:
        old_ms, floor_ms = bench.pair(old, fts5(word))
        bench.add("search: same via sqlite-fts4 rank_bm25/row", old_ms, floor_ms,
                  "FTS5 ORDER BY rank LIMIT 20", goal_text="(info)",
                  note="a Python call per row: what kaja avoids (includes python start-up)")  # fmt: skip

    _index_size(bench, store, floor_db)
    _insert_cost(bench, store)
    floor_db.unlink(missing_ok=True)


def _words(store: Path) -> tuple[tuple[str, int], tuple[str, int]]:
    """The terms whose document counts are nearest 100 and 100,000."""
    with sqlite3.connect(store.as_uri() + "?mode=ro", uri=True) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts4aux(main, conversation_text)")
        rows = conn.execute(
            "SELECT term, documents FROM temp.terms WHERE col = '*' AND term GLOB '[a-z]*'"
        ).fetchall()
    selective = min(rows, key=lambda r: (abs(r[1] - 100), r[0]))
    common = min(rows, key=lambda r: (abs(r[1] - 100_000), r[0]))
    return (selective[0], selective[1]), (common[0], common[1])


def _build_fts5(store: Path, floor_db: Path) -> float:
    """A contentless FTS5 table over the same messages, same tokenizer, rowid = messages.rowid."""
    floor_db.unlink(missing_ok=True)
    start = time.perf_counter()
    conn = sqlite3.connect(floor_db)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"ATTACH '{store.as_uri()}?mode=ro' AS store")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(content, content='',"
        " tokenize='unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO f(rowid, content) SELECT rowid, content FROM store.messages")
    conn.commit()
    conn.close()
    return (time.perf_counter() - start) * 1000


def _agreement(bench, store: Path, floor_db: Path, word: str) -> tuple[bool, str]:
    """Whether kaja's best 20 are FTS5's bm25 best 20, in order, with the same scores."""
    p = subprocess.run(
        bench.kaja("search", word, "--all-owners", "--json"), env=bench.env, capture_output=True,
        check=True, text=True,
    )  # fmt: skip
    got = [(h["message_id"], h["score"]) for h in json.loads(p.stdout)["results"]]
    with sqlite3.connect(floor_db) as conn:
        conn.execute(f"ATTACH '{store.as_uri()}?mode=ro' AS store")
        expected = conn.execute(
            "SELECT m.id, -f.rank FROM (SELECT rowid, rank FROM f WHERE f MATCH ?"
            " ORDER BY rank LIMIT 20) AS f JOIN store.messages AS m ON m.rowid = f.rowid"
            " ORDER BY f.rank, f.rowid",
            (f'"{word}"',),
        ).fetchall()
    same = [g[0] for g in got] == [e[0] for e in expected]
    worst = max((abs(g[1] - e[1]) for g, e in zip(got, expected, strict=False)), default=0.0)
    return same, f"largest score difference {worst:.1e}"


def _rank_bm25_command(store: Path, word: str) -> list[str] | None:
    """The way the issue measured: sqlite-fts4's rank_bm25, one Python call per row."""
    try:
        import sqlite_fts4  # noqa: F401
    except ImportError:
        return None
    code = (
        "import sqlite3, sys, sqlite_fts4\n"
        "c = sqlite3.connect(sys.argv[1], uri=True)\n"
        "sqlite_fts4.register_functions(c)\n"
        'c.execute("SELECT docid FROM conversation_text WHERE conversation_text MATCH ?'
        " ORDER BY rank_bm25(matchinfo(conversation_text, 'pcnalx')) LIMIT 20\", (sys.argv[2],))"
        ".fetchall()\n"
    )
    return [sys.executable, "-c", code, store.as_uri() + "?mode=ro", f'"{word}"']


def _index_size(bench, store: Path, floor_db: Path) -> None:
    def sizes(db: Path, like: str) -> tuple[float, float]:
        with sqlite3.connect(db.as_uri() + "?mode=ro", uri=True) as conn:
            try:
                index = conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name LIKE ?", (like,)
                ).fetchone()[0]
                total = conn.execute("SELECT sum(pgsize) FROM dbstat").fetchone()[0]
            except sqlite3.OperationalError:  # no dbstat in this SQLite
                return 0.0, 0.0
        return (index or 0) / 1e6, (total or 0) / 1e6

    fts4, store_mb = sizes(store, "conversation_text%")
    fts5, _ = sizes(floor_db, "f%")
    if not fts4:
        return
    with sqlite3.connect(store.as_uri() + "?mode=ro", uri=True) as conn:
        messages_mb = (
            conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'messages'").fetchone()[0]
            / 1e6
        )
    bench.add("search: index size (MB, not ms)", fts4, fts5, "FTS5 contentless (MB)",
              goal_text="(info)",
              note=f"{100 * fts4 / store_mb:.0f}% of the store ({store_mb:.0f} MB); "
                   f"the text itself stays in messages ({messages_mb:.0f} MB)")  # fmt: skip


def _insert_cost(bench, store: Path) -> None:
    """Per-message cost of writing with the triggers, against the same store without an index."""
    scratch = bench.state_dir.parent / "search-insert-scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    with_index, without = scratch / "with-index.db", scratch / "no-index.db"
    for target in (with_index, without):
        with sqlite3.connect(store.as_uri() + "?mode=ro", uri=True) as src:
            dst = sqlite3.connect(target)
            src.backup(dst)
            dst.close()
    with closing(sqlite3.connect(without)) as conn:
        for name in ("messages_fts_bd", "messages_fts_bu", "messages_fts_au", "messages_fts_ai"):
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute("DROP TABLE IF EXISTS conversation_text")
        conn.commit()
    with sqlite3.connect(with_index) as conn:
        top = conn.execute("SELECT max(rowid) FROM messages").fetchone()[0]
    sources = [1 + (i * 7919) % top for i in range(INSERTS)]  # spread over the store
    insert = (
        "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
        " SELECT 'bench-{i:05d}', sessionId, seq, role, content, createdAt"
        " FROM messages WHERE rowid >= {r} LIMIT 1;"
    )
    each = scratch / "each.sql"
    each.write_text(
        ".timeout 10000\n"
        + "".join(
            f"BEGIN IMMEDIATE; {insert.format(i=i, r=r)} COMMIT;\n" for i, r in enumerate(sources)
        )
    )
    batch = scratch / "batch.sql"
    batch.write_text(
        ".timeout 10000\nBEGIN IMMEDIATE;\n" + "".join(insert.format(i=i, r=r) + "\n" for i, r in enumerate(sources))
        + "COMMIT;\n"
    )  # fmt: skip

    def clean() -> None:
        for db in (with_index, without):
            conn = sqlite3.connect(db, isolation_level=None, timeout=10)
            try:
                conn.execute("DELETE FROM messages WHERE id >= 'bench-' AND id < 'bench.'")
            finally:
                conn.close()

    def run(db: Path, script: Path) -> list[str]:
        return bench.sqlite(f".read {script}", db, readonly=False)

    for script, label in ((each, "one transaction each"), (batch, f"{INSERTS} in one transaction")):
        clean()  # the warm-up runs insert too
        a, b = bench.pair(run(with_index, script), run(without, script), setup=clean)
        bench.add(f"search: write a message ({label})", a / INSERTS, b / INSERTS,
                  "same store, no index", goal_text="(info)",
                  note=f"ms per message; +{(a - b) / INSERTS:.2f} ms for the index")  # fmt: skip
    shutil.rmtree(scratch, ignore_errors=True)


def _query_ms(bench, word: str, repeat: int) -> float:
    """Median ms of the core's search() for `word`, in one warm process."""
    code = (
        "import statistics, sys, time\n"
        "from kaja_cli.core import search\n"
        "from kaja_cli.core.store import Store\n"
        "store = Store.locate()\n"
        "search.search(store, sys.argv[1])\n"
        "times = []\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    t = time.perf_counter()\n"
        "    result = search.search(store, sys.argv[1])\n"
        "    times.append((time.perf_counter() - t) * 1000)\n"
        "    assert result.hits\n"
        "print(statistics.median(times))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, word, str(repeat)], env=bench.env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return float(out.stdout.strip())
