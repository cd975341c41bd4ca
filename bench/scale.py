"""`python bench/run.py --scale`: each command on stores of growing size (issue 29).

Every row runs one whole `kaja` process on each store (100k, 1M and 10M
messages by default: `kaja demo --seed 1` with 1,000, 10,000 and 100,000
sessions, about one owner per 100 sessions) and prints its median there, the
growth from the 1M to the 10M store against the row's goal, and its peak RSS
on the 10M store (the kernel's count for the process, `wait4`) against 100 MB.

Goals (issue 29):
- flat, ≤ 1.3×: where the work does not grow with the store: the listing
  (`sessions -n 20`), `resume` of one session, `runs`, `notes`, a selective
  search (the term nearest 100 documents on the 1M store), `wipe --owner` of
  one owner and `sessions delete` of one session (of about the same size on
  every store: on a copy, a different one each run), `config paths`,
  `doctor --quick` (plain `doctor` where this kaja has no --quick) and `usage`;
- ≤ 2×: a common word's best 20 (the term nearest 100,000 documents on the
  1M store), with FTS5's own growth over the same messages printed beside it;
- linear, ≤ 12× (≈ 10× for ten times the rows): `backup` (three runs per
  store, the standard tools' own growth for the same archive beside it) and
  `sessions export --all` (one run per store: they read everything).

A command that fails on a store is a MISSED row saying why; the bench goes
on to the end on every store.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness import BenchError, ScaleRow, format_scale_row, measure_process, scale_header

FLAT, COMMON, LINEAR = 1.3, 2.0, 12.0
RSS_GOAL = 100.0
SIZES = ((1_000, 100_000, "100k"), (10_000, 1_000_000, "1M"), (100_000, 10_000_000, "10M"))
OWNER_MESSAGES = 8_000  # wipe --owner: owners of about this many messages, on every store
SESSION_MESSAGES = 100  # sessions delete: sessions of about this many messages


class Store:
    """One benchmark store: its state dir, name, and the environment to run kaja in it."""

    def __init__(self, name: str, state: Path, base_env: dict[str, str]):
        self.name = name
        self.state = state
        self.env = dict(base_env, KAJA_STATE_DIR=str(state),
                        KAJA_CONFIG=str(state / "settings.toml"))  # fmt: skip

    @property
    def db(self) -> Path:
        return self.state / "kaja.db"

    def query(self, sql: str) -> list[tuple]:
        """Rows of `sql`, run by the `sqlite3` command line: the bench's own
        memory stays small (a child's peak RSS counts its parent's at the fork)."""
        return _sqlite(self.db, sql, "-readonly")


def run_scale(bench, stores: list[Store], out: Path, echo: Callable[[str], None] = print) -> list:
    """Every scale row over `stores` (smallest first); returns the rows."""
    kaja = bench.kaja
    sizes = tuple(s.name for s in stores)
    rows: list[ScaleRow] = []
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    echo(f"peak RSS: the kernel's count for each kaja process (wait4), which starts from the "
         f"bench's own at the fork ({own:.0f} MB)")  # fmt: skip
    echo(scale_header(sizes))

    def row(case: str, argv_of: Callable[[Store, int], list[str]], goal: float | None, *,
            runs: int | None = None, warm: bool = True, on: list[Store] | None = None,
            after: Callable[[Store], None] | None = None, beside: str = "", note: str = "") -> None:  # fmt: skip
        n = runs or bench.repeat
        took: dict[str, list[float]] = {s.name: [] for s in stores}
        peaks: list[float] = []
        failed: dict[str, str] = {}

        def once(store: Store, i: int, timed: bool) -> None:
            if store.name in failed:
                return
            target = (on or stores)[stores.index(store)]
            try:
                t, peak = measure_process(argv_of(target, i), target.env)
                if after:
                    after(target)
            except BenchError as e:
                failed[store.name] = f"{store.name}: {str(e).splitlines()[0][:200]}"
                return
            if timed:
                took[store.name].append(t)
                if store is stores[-1]:
                    peaks.append(peak)

        # Runs interleaved across the stores (the order reversed every round), after
        # one warm-up on each: a machine that slows down weighs on every store alike.
        if warm:
            for store in stores:
                once(store, 0, timed=False)
        for i in range(n):
            for store in stores if i % 2 == 0 else stores[::-1]:
                once(store, i + 1, timed=True)
        ms = [statistics.median(took[s.name]) if took[s.name] and s.name not in failed else None
              for s in stores]  # fmt: skip
        rss = max(peaks) if peaks and stores[-1].name not in failed else None
        error = "; ".join(failed.values())
        r = ScaleRow(case, sizes, tuple(ms), goal, rss, RSS_GOAL, beside, error, note)
        rows.append(r)
        echo(format_scale_row(r))

    latest = {s.name: _latest_session(s) for s in stores}
    selective, common = _words(stores[-2] if len(stores) > 1 else stores[-1])
    doctor = ["doctor", "--quick"] if _has_option(bench, "doctor", "--quick") else ["doctor"]

    row("sessions -n 20", lambda s, i: kaja("sessions", "-n", "20"), FLAT)
    row("resume (latest session)", lambda s, i: kaja("resume", latest[s.name]), FLAT)
    row("runs", lambda s, i: kaja("runs"), FLAT)
    row("notes", lambda s, i: kaja("notes"), FLAT)
    row("search -n 20: a selective word",
        lambda s, i: kaja("search", selective, "-n", "20", "--all-owners"), FLAT,
        note=f"{selective!r}, " + _docs_note(stores, selective))  # fmt: skip
    fts5 = _fts5_growth(stores, common, out, bench.repeat)
    row("search -n 20: a common word",
        lambda s, i: kaja("search", common, "-n", "20", "--all-owners"), COMMON,
        beside=fts5, note=f"{common!r}, " + _docs_note(stores, common))  # fmt: skip
    row("config paths --json", lambda s, i: kaja("config", "paths", "--json"), FLAT)
    row(" ".join(doctor), lambda s, i: kaja(*doctor), FLAT,
        runs=min(bench.repeat, 3), note="" if "--quick" in doctor else "no --quick in this kaja")  # fmt: skip
    row("usage", lambda s, i: kaja("usage"), FLAT)

    copies = _copies(stores, out)
    try:
        n = min(bench.repeat, 5)
        owners: dict[str, list] = {}
        sessions: dict[str, list] = {}

        def owner(s: Store, i: int) -> str:  # chosen on first use: a BenchError is the row's
            if s.name not in owners:
                owners[s.name] = _owners(s, n + 1)
            return owners[s.name][i]

        def session(s: Store, i: int) -> tuple[str, str, str]:
            if s.name not in sessions:
                sessions[s.name] = _sessions(s, n + 1, owners.get(s.name, []))
            return sessions[s.name][i]

        row("wipe --owner (a copy)", lambda s, i: kaja("wipe", "--owner", owner(s, i), "--yes"),
            FLAT, runs=n, on=copies, note=f"owners of ~{OWNER_MESSAGES:,} messages")  # fmt: skip
        row("sessions delete (a copy)",
            lambda s, i: kaja("sessions", "delete", *session(s, i), "--yes"), FLAT, runs=n,
            on=copies, note=f"sessions of ~{SESSION_MESSAGES} messages")  # fmt: skip
    finally:
        for c in copies:
            shutil.rmtree(c.state, ignore_errors=True)

    scratch = out / "scale-scratch"

    def clean(_store: Store) -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        os.sync()  # no run pays for the one before's writeback

    clean(stores[0])
    try:
        # Three runs each, kaja's and the floor's: one run of a minute on a shared
        # machine moved by a quarter from run to run (52 to 71 s on the 10M store).
        runs = min(bench.repeat, 3)
        floor = _backup_floor_growth(stores, scratch, lambda: clean(stores[0]), runs)
        row("backup -o x.tar", lambda s, i: kaja("backup", "-o", str(scratch / "x.tar")), LINEAR,
            runs=runs, warm=False, after=clean, beside=floor,
            note="uncompressed: the copy, not gzip")  # fmt: skip
        row("sessions export --all -f jsonl",
            lambda s, i: kaja("sessions", "export", "--all", "--all-owners", "-f", "jsonl", "-o",
                              str(scratch / "all.jsonl")),
            LINEAR, runs=1, warm=False, after=clean)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def _sqlite(db: Path, sql: str, *options: str) -> list[tuple]:
    p = subprocess.run(["sqlite3", *options, "-json", str(db), sql], capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"sqlite3 {db}: {p.stderr.strip()[:300]}")
    rows, text, at = [], p.stdout, 0
    decoder = json.JSONDecoder()
    while (at := _skip_space(text, at)) < len(text):  # one JSON array per statement with rows
        found, at = decoder.raw_decode(text, at)
        rows += [tuple(r.values()) for r in found]
    return rows


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _size_name(messages: int) -> str:
    """100000 → "100k", 10000000 → "10M" (about)."""
    for unit, name in ((1_000_000, "M"), (1_000, "k")):
        if messages >= unit:
            return f"{messages / unit:.3g}{name}"
    return str(messages)


def _latest_session(store: Store) -> str:
    return store.query("SELECT id FROM sessions ORDER BY updatedAt DESC LIMIT 1")[0][0]


def _words(store: Store) -> tuple[str, str]:
    """The terms nearest 100 and 100,000 documents in `store`'s search index."""
    rows = store.query(
        "CREATE VIRTUAL TABLE temp.terms USING fts4aux(main, conversation_text);"
        " SELECT term, documents FROM temp.terms WHERE col = '*' AND term GLOB '[a-z]*'"
    )
    if not rows:
        raise BenchError(f"{store.db}: the search index is empty")
    selective = min(rows, key=lambda r: (abs(r[1] - 100), r[0]))[0]
    common = min(rows, key=lambda r: (abs(r[1] - 100_000), r[0]))[0]
    return selective, common


def _docs_note(stores: list[Store], word: str) -> str:
    counts = []
    for s in stores[-2:]:
        found = s.query(
            "CREATE VIRTUAL TABLE temp.t USING fts4aux(main, conversation_text);"
            f" SELECT documents FROM temp.t WHERE col = '*' AND term = '{word}'"
        )
        found = found[0] if found else None
        counts.append(f"{found[0] if found else 0:,}")
    return f"matches {' → '.join(counts)}"


def _has_option(bench, command: str, option: str) -> bool:
    p = subprocess.run(bench.kaja(command, "--help"), capture_output=True, text=True,
                       env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})  # fmt: skip
    return option in p.stdout


def _fts5_growth(stores: list[Store], word: str, out: Path, repeat: int) -> str:
    """FTS5's own growth for the same question (best 20 by rank, with
    snippet()), over the same messages of the two largest stores."""
    took = []
    for s in stores[-2:]:
        floor = out / f"scale-fts5-{s.name}.db"
        if not floor.exists():
            tmp = floor.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            _sqlite(tmp, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                    f" ATTACH '{s.db.as_uri()}?mode=ro' AS store;"
                    " CREATE VIRTUAL TABLE f USING fts5(content,"
                    " tokenize='unicode61 remove_diacritics 2');"
                    " INSERT INTO f(rowid, content) SELECT rowid, content FROM store.messages")  # fmt: skip
            tmp.rename(floor)
        sql = (
            f"ATTACH '{s.db.as_uri()}?mode=ro' AS store;"
            " SELECT m.id, m.sessionId, m.role, m.createdAt, h.snippet FROM"
            " (SELECT rowid, rank, snippet(f, 0, char(2), char(3), '…', 16) AS snippet FROM f"
            f" WHERE f MATCH '\"{word}\"' ORDER BY rank LIMIT 20) AS h"
            " JOIN store.messages AS m ON m.rowid = h.rowid ORDER BY h.rank, h.rowid;"
        )
        argv = ["sqlite3", "-readonly", str(floor), sql]
        runs = []
        for i in range(repeat + 1):
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            if i:
                runs.append((time.perf_counter() - start) * 1000)
        took.append(statistics.median(runs))
    if len(took) < 2:
        return ""
    return f"FTS5 {took[0]:.0f} → {took[1]:.0f} ms, {took[1] / took[0]:.2f}×"


def _backup_floor_growth(
    stores: list[Store], scratch: Path, clean: Callable[[], None], runs: int
) -> str:
    """The standard tools' own growth for the same archive (bench_backup's floor:
    `sqlite3 .backup` of each database, then `tar` of the copies and the images,
    flushed to disk): the median of `runs` on each of the two largest stores,
    as kaja's row."""
    from bench_backup import _floor_backup

    took = []
    for s in stores[-2:]:
        argv = _floor_backup(s.state, scratch, scratch / "floor.tar", compress=False)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            times.append(time.perf_counter() - start)
            clean()
            if p.returncode != 0:
                return f"floor failed on {s.name}: {p.stderr.strip()[:200]}"
        took.append(statistics.median(times))
    if len(took) < 2:
        return ""
    return f"sqlite3 .backup + tar {took[0]:.1f} → {took[1]:.1f} s, {took[1] / took[0]:.2f}×"


def _copies(stores: list[Store], out: Path) -> list[Store]:
    """A copy of each store for the rows that write (cp keeps the files sparse)."""
    copies = []
    for s in stores:
        dest = out / f"scale-copy-{s.name}"
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["cp", "-r", "--reflink=auto", str(s.state), str(dest)], check=True)
        copies.append(
            Store(s.name, dest, {k: v for k, v in s.env.items() if not k.startswith("KAJA_")})
        )
    return copies


def _owners(store: Store, n: int) -> list[str]:
    """`n` owners (not the terminal) whose messages are nearest OWNER_MESSAGES."""
    rows = store.query(
        "SELECT s.owner, count(*) FROM messages AS m JOIN sessions AS s ON s.id = m.sessionId"
        " WHERE s.owner LIKE 'telegram:%' GROUP BY s.owner"
    )
    rows.sort(key=lambda r: (abs(r[1] - OWNER_MESSAGES), r[0]))
    return _enough([r[0] for r in rows], n, store)


def _sessions(store: Store, n: int, not_of: list[str]) -> list[tuple[str, str, str]]:
    """`n` sessions of Telegram users whose messages are nearest
    SESSION_MESSAGES (none of the owners the wipe row deletes), as
    `sessions delete` arguments: (id, "--owner", owner)."""
    gone = set(not_of)
    rows = [
        (sid, count, owner)
        for sid, count, owner in store.query(
            'SELECT m."sessionId", count(*) AS n, s.owner FROM messages AS m'
            ' JOIN sessions AS s ON s.id = m."sessionId"'
            " WHERE s.owner LIKE 'telegram:%' GROUP BY m.\"sessionId\""
            f' ORDER BY abs(n - {SESSION_MESSAGES}), m."sessionId" LIMIT 2000'
        )
        if owner not in gone
    ]
    rows.sort(key=lambda r: (abs(r[1] - SESSION_MESSAGES), r[0]))
    return _enough([(r[0], "--owner", r[2]) for r in rows], n, store)


def _enough(found: list, n: int, store: Store) -> list:
    if not found:
        raise BenchError(f"{store.state}: nothing to delete")
    return (found * n)[:n] if len(found) < n else found[:n]  # repeats only on a tiny store


def stores_for(
    args, build: Callable[[str, int, int, Path], Path], base_env: dict[str, str]
) -> list[Store]:
    """The stores of a --scale run: given with --scale-stores, else built (and
    cached) under --out by `kaja demo --seed 1`."""
    if args.scale_stores:
        stores = []
        for d in (Path(d) for d in args.scale_stores.split(",") if d):
            if not (d / "kaja.db").exists():
                raise BenchError(f"--scale-stores: no store in {d}")
            store = Store(d.name, d, base_env)
            store.name = _size_name(store.query("SELECT count(*) FROM messages")[0][0])
            if any(s.name == store.name for s in stores):  # the names key the rows' figures
                store.name += f"#{len(stores) + 1}"
            stores.append(store)
        if len(stores) < 2:
            raise BenchError("--scale-stores: at least two stores, smallest first")
        return stores
    return [Store(name, build(args.kaja, sessions, messages, args.out), base_env)
            for sessions, messages, name in SIZES]  # fmt: skip
