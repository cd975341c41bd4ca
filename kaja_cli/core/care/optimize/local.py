"""`kaja optimize` of a local store (the SQLite engine part): keep the files quick
and small without changing what they hold.

For each database file that exists (the shared file first, then a split
artifacts file and the side databases), in this order:

1. **The search index** (the shared file): FTS4's segments merged with
   `'merge=…'` steps, each its own short transaction (the agent keeps
   writing between them), until FTS4 has nothing left to merge; then, when
   no other process has the file open, one `'optimize'`, which leaves a
   single segment but holds the write lock for the whole index (seconds on
   a large store: longer than the agent's five-second busy timeout).
2. **`ANALYZE`**, so that SQLite's query planner knows how large each table
   and index is (`sqlite_stat1`), in one short transaction. Sampled
   (`analysis_limit`, as SQLite's own `PRAGMA optimize` does): the write lock
   is held for a bounded time (0.6 s instead of 2.7 s on the benchmark
   store), and estimates within a factor of two are all the planner needs.
3. **`VACUUM`**, only when asked (`vacuum=True`) and only when no other
   process has the file open (exit 4 otherwise, checked before anything is
   done): the file is rewritten without its free pages, and the search index
   is checked against the messages' rowids (rebuilt if VACUUM moved them;
   `usage.local.vacuum_in`).
4. **A WAL checkpoint (TRUNCATE)**: what the -wal holds is copied into the
   database and the -wal emptied, unless a reader still needs it.

A step with nothing to do writes nothing: an index already in one segment
is left alone (a merge step of FTS4's would still rewrite its merge hint),
and ANALYZE is rolled back when the statistics come out as they were (its
sampling is deterministic: the same file, the same numbers). So a second
`kaja optimize` leaves every file byte for byte as it was, and says so.

Why a first run makes the files bigger: ANALYZE adds `sqlite_stat1` (a page
per file; the planner's numbers, what step 2 is for), and the merge writes
the merged segments before it frees the old ones, so the file grows by the
new copy and the old pages join the free list (`free_bytes`): new rows reuse
them, `--vacuum` gives them back to the disk.

Sizes before and after are those of each file with its -wal. Another
program's database (by its tables) is refused before anything is done
(exit 5); a lock the agent holds longer than the busy timeout stops the
command with exit 4, keeping the steps already done (each one is whole).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from kaja_cli.core.care.backup.create import existing_databases
from kaja_cli.core.care.optimize.model import FileResult, IndexResult, OptimizeResult
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, guard, search_index
from kaja_cli.core.store.registry import DatabaseFile
from kaja_cli.errors import Busy, KajaError

FTS = search_index.FTS_TABLE
BUSY_HINT = "the steps before it are done; run `kaja optimize` again when Kaja is idle"
ANALYSIS_LIMIT = 1000  # rows ANALYZE reads of each index (SQLite suggests 100 to 1000)


def optimize(
    store: Store, *, vacuum: bool = False, step: Callable[[str], None] | None = None
) -> OptimizeResult:
    """Run the steps of the module docstring on every database file of `store`.

    `step` hears each step as it starts ("kaja.db: search index"), for a
    person watching a long run.
    """
    files = _databases(store, vacuum)
    results = []
    for f in files:
        results.append(_optimize_file(store, f, vacuum=vacuum, step=step or _quiet))
    return OptimizeResult(results, vacuum)


def plan(store: Store, *, vacuum: bool = False) -> OptimizeResult:
    """What `optimize` would do (`--dry-run`): the same refusals, nothing
    opened for writing. Each file as it is now: its size (the size after is
    known only once it ran: given as before), its search index's segments,
    what its -wal holds, its free pages. Whether ANALYZE would change the
    statistics is known only by running it."""
    return OptimizeResult([_look_at(f) for f in _databases(store, vacuum)], vacuum)


def _databases(store: Store, vacuum: bool) -> list[DatabaseFile]:
    """The store's database files, once every refusal of `optimize` is passed
    (a file that is not kaja's; with `vacuum`, a file another process holds)."""
    store.require_local()
    store.require()
    files = existing_databases(store.paths.databases())
    for f in files:
        _require_kajas(f)
    if vacuum:
        for f in files:
            _require_unheld(f.path, "VACUUM")
    return files


def _look_at(file: DatabaseFile) -> FileResult:
    path = file.path
    size = on_disk(path)
    result = FileResult(file.name.value, path, size, size)
    try:
        with db.open_read(path, timeout_ms=1000, recover=guard.may_recover(file)) as conn:
            if file.search_index and search_index.present(conn):
                n = _segments(conn)
                result.index = IndexResult(n, n, 0, False)
            result.free_bytes = _free_bytes(conn)
            page = conn.execute("PRAGMA page_size").fetchone()[0]
    except sqlite3.Error as e:
        raise db.translate(e, path) from e
    result.wal_bytes = _size(fs.beside(path, "-wal"))
    result.wal_frames = max(result.wal_bytes - 32, 0) // (page + 24)  # header, frame headers
    return result


def _quiet(_what: str) -> None:
    return None


def _require_kajas(file: DatabaseFile) -> None:
    with db.open_read(file.path, timeout_ms=1000, recover=guard.may_recover(file)) as conn:
        guard.require_kajas(conn, file.path, file)


def _require_unheld(path: Path, what: str) -> None:
    pid = db.holder(path)
    if pid is not None:
        who = f"process {pid}" if pid > 0 else "another process"
        raise Busy(
            f"{path} is open in {who} (Kaja is running): {what} needs the file to itself",
            hint="close Kaja and the Telegram bot, or run `kaja optimize` without --vacuum;"
            " nothing was done",
        )


def _optimize_file(
    store: Store, file: DatabaseFile, *, vacuum: bool, step: Callable[[str], None]
) -> FileResult:
    path = file.path
    result = FileResult(file.name.value, path, on_disk(path), 0)
    current = "opening it"
    try:
        with store.writer(file.name) as conn:
            if file.search_index and search_index.present(conn):
                current = "the search index"
                step(f"{path.name}: {current}")
                result.index = _merge_index(conn, path)
            current = "ANALYZE"
            step(f"{path.name}: {current}")
            result.analyzed = _analyze(conn)
            if vacuum:
                current = "VACUUM"
                step(f"{path.name}: {current}")
                _require_unheld(path, "VACUUM")
                from kaja_cli.core.ledger.usage.local import vacuum_in

                done = vacuum_in(conn, path)
                result.vacuumed = True
                result.vacuum_index = None if done.search_index == "absent" else done.search_index
            current = "the checkpoint"
            step(f"{path.name}: {current}")
            result.checkpointed, result.wal_frames = _checkpoint(conn)
            result.free_bytes = _free_bytes(conn)
    except Busy as e:
        raise Busy(
            f"{path} stayed busy (the agent is writing): optimize stopped at {current}",
            hint=BUSY_HINT,
        ) from e
    except KajaError:
        raise
    except sqlite3.Error as e:
        raise db.translate(e, path) from e
    result.bytes_after = on_disk(path)
    result.wal_bytes = _size(fs.beside(path, "-wal"))
    return result


def _segments(conn: sqlite3.Connection) -> int:
    return conn.execute(f"SELECT count(*) FROM {FTS}_segdir").fetchone()[0]


def _merge_index(conn: sqlite3.Connection, path: Path) -> IndexResult:
    before = _segments(conn)
    if before <= 1:  # nothing to merge: a merge step would still write its hint
        return IndexResult(before, before, 0, False)
    steps = search_index.merge(conn)
    optimized = False
    if _segments(conn) > 1 and db.holder(path) is None:
        with db.transaction(conn):
            conn.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')")
        optimized = True
    return IndexResult(before, _segments(conn), steps, optimized)


class _Unchanged(Exception):
    """ANALYZE found the statistics as they were: roll its transaction back."""


def _analyze(conn: sqlite3.Connection) -> bool:
    """ANALYZE in one short transaction; False, and nothing written, when the
    statistics it makes are the ones the file already has."""
    conn.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
    try:
        with db.transaction(conn):
            before = _statistics(conn)
            conn.execute("ANALYZE")
            if _statistics(conn) == before:
                raise _Unchanged
    except _Unchanged:
        return False
    return True


def _statistics(conn: sqlite3.Connection) -> list[tuple]:
    """Every row of the planner's statistics tables, in a stable order."""
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sqlite\\_stat%'"
        " ESCAPE '\\' ORDER BY name")]  # fmt: skip
    rows = [(t, *row) for t in tables for row in conn.execute(f"SELECT * FROM {t}")]
    return sorted(rows, key=lambda row: [(v is not None, str(type(v)), v) for v in row])


def _checkpoint(conn: sqlite3.Connection) -> tuple[bool, int]:
    """PRAGMA wal_checkpoint(TRUNCATE): whether the -wal was emptied (False when
    a reader kept it), and how many pages it held."""
    busy, log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy, max(log, 0)


def _free_bytes(conn: sqlite3.Connection) -> int:
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return free * conn.execute("PRAGMA page_size").fetchone()[0]


def on_disk(path: Path) -> int:
    """A database's bytes on disk: the file and its -wal."""
    return _size(path) + _size(fs.beside(path, "-wal"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
