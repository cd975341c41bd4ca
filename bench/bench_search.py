"""Search (issue 4): `kaja search` against FTS5 over the same messages, built in this run.

The floor is FTS5 answering the same question: an FTS5 table of the same
messages (same tokenizer, rowid = messages.rowid) in a file beside the store,
asked for its best 20 (`ORDER BY rank LIMIT 20`), each with `snippet()` and
its message's row from the store (kaja shows each hit's snippet, session,
role and time). Process rows run it
in the `sqlite3` command line, in-process rows through Python's sqlite3
module, a connection opened per call, as kaja's core opens one per search.

Goals on the benchmark store (1,000,000 messages, Zipf vocabulary), both
`--all-owners` (the question FTS5 answers):
- a selective word (~100 matches): the core's search() at most 1.5× FTS5 in
  this process (the whole command is mostly start-up; printed for information);
- a common word (~100,000 matches), best 20: at most 1.5× FTS5, whole
  process, with the same top 20 in the same order;
- for information: the terminal's default (owner filter), --recent, the
  same search through sqlite-fts4's rank_bm25, index size, and the cost of
  writing a message with the index's triggers.

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

from harness import PROCESS, Row, interleave, search_words

GOAL = 1.5
INSERTS = 500  # messages per insert run
FLOOR = "FTS5: best 20 by rank, snippet() and message rows"


def _floor_sql(
    store: Path, word: str, where: str = "", match: str | None = None
) -> tuple[str, str]:
    """The FTS5 floor's statements: attach the store, then the best 20 with their
    rows; `where` restricts the messages ranked (a condition over the store's
    messages `m` and sessions `s`), `match` is the FTS5 query (default: the word).

    Restricted, the matches are joined to their messages and sessions and the
    condition checked before FTS5 ranks them (`rowid IN (…)` would have FTS5
    run the whole query again for each rowid listed; with `ORDER BY rank` alone
    FTS5 ranks every match first); the 20 kept get their snippets after."""
    attach = f"ATTACH '{store.as_uri()}?mode=ro' AS store"
    match = match if match is not None else f'"{word}"'
    quoted = match.replace("'", "''")
    if not where:
        select = (
            "SELECT m.id, m.sessionId, m.role, m.createdAt, h.snippet FROM"
            " (SELECT rowid, rank, snippet(f, 0, char(2), char(3), '…', 16) AS snippet FROM f"
            f" WHERE f MATCH '{quoted}' ORDER BY rank LIMIT 20) AS h"
            " JOIN store.messages AS m ON m.rowid = h.rowid ORDER BY h.rank, h.rowid"
        )
        return attach, select
    select = (
        "SELECT m.id, m.sessionId, m.role, m.createdAt,"
        " (SELECT snippet(f, 0, char(2), char(3), '…', 16) FROM f"
        f"  WHERE f MATCH '{quoted}' AND f.rowid = h.rowid) FROM"
        " (SELECT f.rowid AS rowid, f.rank AS rank FROM f"
        "  JOIN store.messages AS m ON m.rowid = f.rowid"
        "  LEFT JOIN store.sessions AS s ON s.id = m.sessionId"
        f"  WHERE f MATCH '{quoted}' AND {where} ORDER BY f.rank LIMIT 20) AS h"
        " JOIN store.messages AS m ON m.rowid = h.rowid ORDER BY h.rank, h.rowid"
    )
    return attach, select


TERMINAL = "(s.owner IS NULL OR s.owner IN ('', 'terminal'))"


def cases(bench) -> None:
    from kaja_cli.core.conversations import search
    from kaja_cli.core.store import search_index

    store = bench.db
    with closing(sqlite3.connect(store.as_uri() + "?mode=ro", uri=True)) as conn:
        current = search_index.state(conn) == search_index.READY and not search_index.outdated(conn)
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    if not current:
        start = time.perf_counter()
        subprocess.run(bench.kaja("search", "--reindex"), env=bench.env, check=True)
        took = time.perf_counter() - start
        bench.echo(f"(the store's search index predated this kaja: rebuilt {messages:,} messages "
                   f"in {took:.1f} s with `kaja search --reindex`)")  # fmt: skip

    selective, common = search_words(store)
    floor_db = bench.state_dir.parent / "search-floor-fts5.db"
    built_ms = _build_fts5(store, floor_db)

    def fts5_cli(word: str) -> list[str]:
        return bench.sqlite(";\n".join(_floor_sql(store, word)) + ";", floor_db)

    def fts5_module(word: str):
        attach, select = _floor_sql(store, word)

        def run() -> None:
            with closing(sqlite3.connect(floor_db.as_uri() + "?mode=ro", uri=True)) as conn:
                conn.execute(attach)
                assert conn.execute(select).fetchall()

        return run

    kaja_store = bench.store()

    def core(word: str):
        def run() -> None:
            assert search.search(kaja_store, word, all_owners=True).hits

        return run

    word, count = selective
    bench.process(f"search: selective word ({count} matches)",
                  bench.kaja("search", word, "--all-owners"), fts5_cli(word), FLOOR,
                  note=f"'{word}', --all-owners; mostly start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("search: selective word, core search()", core(word), fts5_module(word),
                     FLOOR, goal=GOAL, repeat=max(bench.repeat, 15))  # fmt: skip

    word, count = common
    same, detail = _agreement(bench, store, floor_db, word)
    bench.process(f"search: common word ({count:,} matches), best 20",
                  bench.kaja("search", word, "--all-owners"), fts5_cli(word), FLOOR, goal=GOAL,
                  holds=same,
                  note=f"'{word}', --all-owners; top 20 = FTS5's: {'yes' if same else 'NO'} "
                       f"({detail}); FTS5 table built in {built_ms / 1000:.1f} s")  # fmt: skip
    bench.in_process("search: common word, core search()", core(word), fts5_module(word), FLOOR)
    _owner_rows(bench, store, floor_db, word)
    bench.process("search: common word --recent", bench.kaja("search", word, "--recent"),
                  fts5_cli(word), FLOOR)  # fmt: skip
    _stem_rows(bench, store, floor_db)
    old = _rank_bm25_command(store, word)
    if old:
        bench.process("search: same via sqlite-fts4 rank_bm25/row", old, fts5_cli(word), FLOOR,
                      note="a Python call per row: what kaja avoids")  # fmt: skip

    _index_size(bench, store, floor_db)
    _insert_cost(bench, store)
    floor_db.unlink(missing_ok=True)
    import bench_browse

    bench_browse.keystroke(bench, word)


def _owner_rows(bench, store: Path, floor_db: Path, word: str) -> None:
    """The terminal's search (the default), and the other filters, each against
    FTS5 restricted the same way; and the terminal's against every owner's."""

    def floor(where: str) -> list[str]:
        return bench.sqlite(";\n".join(_floor_sql(store, word, where)) + ";", floor_db)

    with closing(sqlite3.connect(store.as_uri() + "?mode=ro", uri=True)) as conn:
        mine = conn.execute(
            "SELECT count(*) FROM messages AS m JOIN sessions AS s ON s.id = m.sessionId"
            f" WHERE {TERMINAL}"
        ).fetchone()[0]
        sid = conn.execute(
            "SELECT m.sessionId FROM messages AS m JOIN sessions AS s ON s.id = m.sessionId"
            f" WHERE {TERMINAL} GROUP BY m.sessionId ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()[0]
        middle = conn.execute(
            "SELECT createdAt FROM messages ORDER BY createdAt LIMIT 1 OFFSET"
            " (SELECT count(*) / 2 FROM messages)"
        ).fetchone()[0]
    terminal = bench.kaja("search", word)
    bench.process("search: common word, the terminal's best 20", terminal, floor(TERMINAL),
                  "FTS5 restricted to the terminal's sessions", goal=GOAL,
                  note=f"'{word}', the default; the terminal holds {mine:,} messages")  # fmt: skip
    bench.process("search: the terminal's against --all-owners", terminal,
                  bench.kaja("search", word, "--all-owners"),
                  "kaja search --all-owners, same word", goal=1.0,
                  note="the owner filter must not cost more than ranking every owner's")  # fmt: skip
    bench.process("search: common word --owner telegram:100013",
                  bench.kaja("search", word, "--owner", "telegram:100013"),
                  floor("s.owner = 'telegram:100013'"), "FTS5 restricted to that owner's sessions",
                  goal=GOAL)  # fmt: skip
    bench.process("search: common word --session (the largest)",
                  bench.kaja("search", word, "--session", sid),
                  floor(f"m.sessionId = '{sid}'"), "FTS5 restricted to that session",
                  goal=GOAL)  # fmt: skip
    bench.process("search: common word --since (half the messages)",
                  bench.kaja("search", word, "--since", middle),
                  floor(f"{TERMINAL} AND m.createdAt >= '{middle}'"),
                  "FTS5 restricted the same way", goal=GOAL, note=f"the terminal's, {middle}")  # fmt: skip
    bench.process("search: common word --role user",
                  bench.kaja("search", word, "--role", "user"),
                  floor(f"{TERMINAL} AND m.role = 'user'"), "FTS5 restricted the same way",
                  goal=GOAL, note="the terminal's")  # fmt: skip


def _stem_rows(bench, store: Path, floor_db: Path) -> None:
    """A common word with other forms in the index, stemmed (the default) and
    --exact, each against FTS5 asked the same question (the forms kaja asked
    for, OR'd; the word alone). Its matches are half the common word's: start-up
    is half of the whole command, so the goals are on the in-process rows."""
    from kaja_cli.core.conversations import search

    found = _stemmed_word(store)
    if found is None:
        bench.echo("(no word of this store's index has another form: no stemmed rows)")
        return
    word, forms = found
    p = subprocess.run(bench.kaja("search", word, "--all-owners", "--json"), env=bench.env,
                       capture_output=True, check=True, text=True)  # fmt: skip
    match = json.loads(p.stdout)["match"]
    total = sum(n for _, n in forms)
    listed = ", ".join(f"{t} {n:,}" for t, n in forms)
    stemmed = bench.sqlite(";\n".join(_floor_sql(store, word, match=match)) + ";", floor_db)
    exact = bench.sqlite(";\n".join(_floor_sql(store, word)) + ";", floor_db)
    kaja_store = bench.store()

    def module(fts5_match: str):
        attach, select = _floor_sql(store, word, match=fts5_match)

        def run() -> None:
            with closing(sqlite3.connect(floor_db.as_uri() + "?mode=ro", uri=True)) as conn:
                conn.execute(attach)
                assert conn.execute(select).fetchall()

        return run

    def core(**how):
        return lambda: search.search(kaja_store, word, all_owners=True, **how).hits

    bench.process(f"search: stemmed word (≤ {total:,} matches), best 20",
                  bench.kaja("search", word, "--all-owners"), stemmed,
                  "FTS5: the same forms OR'd, best 20",
                  note=f"'{word}' finds {listed}; FTS5 ranks each form as its own word;"
                       " half start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("search: stemmed word, core search()", core(), module(match),
                     "FTS5: the same forms OR'd, best 20", goal=GOAL)  # fmt: skip
    bench.process("search: the same word --exact",
                  bench.kaja("search", word, "--all-owners", "--exact"), exact, FLOOR,
                  note=f"'{word}' alone")  # fmt: skip
    bench.in_process("search: the same word --exact, core search()", core(exact=True),
                     module(f'"{word}"'), FLOOR, goal=GOAL)  # fmt: skip
    bench.process("search: stemming's cost (stemmed against --exact)",
                  bench.kaja("search", word, "--all-owners"),
                  bench.kaja("search", word, "--all-owners", "--exact"),
                  "kaja search --exact, same word",
                  note="the forms looked up among the index's words, and their matches ranked")  # fmt: skip


def _stemmed_word(store: Path) -> tuple[str, list[tuple[str, int]]] | None:
    """The common word with other forms whose forms are in nearest 100,000
    messages, preferring forms each in 1,000 messages or more (a small store
    may have none: then the words with the most frequent rarest form), and its
    forms with their counts; None when no word of the index has another form."""
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWord
    with sqlite3.connect(store.as_uri() + "?mode=ro", uri=True) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts4aux(main, conversation_text)")
        rows = conn.execute(
            "SELECT term, documents FROM temp.terms WHERE col = '*'"
            " AND term GLOB '[a-z][a-z][a-z]*'"
        ).fetchall()
    groups: dict[str, list[tuple[str, int]]] = {}
    for term, n in rows:
        groups.setdefault(stem(term), []).append((term, n))
    many = [g for g in groups.values() if len(g) > 1]
    if not many:
        return None
    best = min(many, key=lambda g: (-min(1000, min(n for _, n in g)),
                                    abs(sum(n for _, n in g) - 100_000), g[0][0]))  # fmt: skip
    best.sort(key=lambda f: -f[1])
    return best[0][0], best


def _build_fts5(store: Path, floor_db: Path) -> float:
    """An FTS5 table of the same messages, same tokenizer, rowid = messages.rowid."""
    floor_db.unlink(missing_ok=True)
    start = time.perf_counter()
    conn = sqlite3.connect(floor_db)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"ATTACH '{store.as_uri()}?mode=ro' AS store")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(content, tokenize='unicode61 remove_diacritics 2')"
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
        """The index's MB (its copy of the text left out) and the whole file's."""
        with sqlite3.connect(db.as_uri() + "?mode=ro", uri=True) as conn:
            try:
                index = conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name LIKE ? AND name <> 'f_content'",
                    (like,),
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
    bench.size("search: index size", fts4, fts5, "FTS5, same messages, its copy of the text left out",
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

    def run(db: Path, script: Path):
        return lambda: bench.run(bench.sqlite(f".read {script}", db, readonly=False))

    for script, label in ((each, "one per transaction"), (batch, f"{INSERTS} per transaction")):
        a, b = interleave(run(with_index, script), run(without, script), bench.repeat, clean)
        bench.add(Row(f"search: write a message, {label}", PROCESS, a / INSERTS, b / INSERTS,
                      "sqlite3 CLI: same INSERTs, same store without the index",
                      note=f"ms per message, {INSERTS} per run"))  # fmt: skip
    shutil.rmtree(scratch, ignore_errors=True)
