"""The wipe's engine part for a local store (SQLite files): what `whole` and
`owner` ask the store's part for (`store.part`), the same functions as `server`.

A local store is files: a whole wipe deletes its databases, each with its
-wal, -shm and -journal, as paths (`stored`), after folding each one into a
self-contained file (`prepare`); nothing else is dropped. `--owner` erases
with `secure_delete` on, then merges the search index so the erased words
leave it (`purge`).
"""

from __future__ import annotations

import stat
from pathlib import Path

from kaja_cli.core.care.wipe.model import Item, Kept, Kind, Refusal, Stored, WipePlan
from kaja_cli.core.care.wipe.reach import (
    READ_TIMEOUT_MS,
    lstat_or_none,
    read_database,
    why_busy,
    why_unsafe,
)
from kaja_cli.core.engine import db
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import companions
from kaja_cli.core.store.registry import DATABASES, Database
from kaja_cli.errors import Busy

NEEDS_YES = False  # a terminal's answer is enough: the store is this user's
PLAN_WAIT_MS: int | None = READ_TIMEOUT_MS  # how long `wipe --owner`'s plan waits for a lock


# --- the whole store ---------------------------------------------------------------------
def stored(store: Store) -> Stored:
    """Each database file with its companions; refused: an unsafe path, one in
    use, another program's; known: the shared file's sessions."""
    items: list[Item] = []
    refusals: list[Refusal] = []
    known: set[str] | None = set()
    seen: set[Path] = set()
    for file in store.paths.databases():
        path = file.path
        if path in seen:  # the same file configured twice
            continue
        seen.add(path)
        unsafe = why_unsafe(path)
        busy = None if unsafe else why_busy(path)
        refusal, ids = (unsafe or busy), set()
        if refusal is None:
            refusal, ids = read_database(path, file)
        if refusal is not None:
            refusals.append(refusal)
        if file.name is Database.SHARED:
            known = ids
        db_items, db_refusals = _database_items(path, file.name)
        items += db_items
        refusals += db_refusals
    return Stored(items, [], refusals, known)


def _database_items(path: Path, name: Database) -> tuple[list[Item], list[Refusal]]:
    """The database, then its companions (the order they go in)."""
    label = DATABASES[name].noun
    items, refusals = [], []
    for p in [path, *companions(path)]:
        st = lstat_or_none(p)
        if st is None:
            continue
        what = label if p == path else f"{label} {p.name[len(path.name) :]}"
        if stat.S_ISDIR(st.st_mode):
            if p != path:  # the database itself is refused by why_unsafe
                refusals.append(Refusal(p, f"{p} is a folder where SQLite keeps a file"))
            continue
        kind = Kind.LINK if stat.S_ISLNK(st.st_mode) else Kind.FILE
        items.append(Item(p, what, kind, name, st.st_size, 1))
    return items, refusals


def prepare(store: Store, plan: WipePlan) -> None:
    """Before the marker: nobody has opened a database since the plan (it may
    have been minutes: the question), and each one is folded into a
    self-contained file (a damaged or read-only one can't be: the order of
    the deletion still keeps it safe)."""
    paths = store.paths
    files = {f.path: f for f in reversed(paths.databases())}  # the first file of a path wins
    dbs = list(dict.fromkeys(f.path for f in paths.databases()))
    for path in dbs:
        if (busy := why_busy(path)) is not None:
            raise busy.error()
    for path in dbs:
        if db.classify(path) == "sqlite" and not path.is_symlink():
            db.fold_journal(path, files[path])


def drop(store: Store, items: list[Item]) -> tuple[list[Item], list[Kept]]:
    """Nothing to drop: a local store is files, and `whole` deletes them."""
    return [], []


# --- one owner ---------------------------------------------------------------------------
def before_erasing(conn) -> None:
    conn.execute("PRAGMA secure_delete = ON")  # erased text does not linger in free pages


def purge(store: Store, timeout_ms: int) -> bool:
    """Merge the search index into one segment, so the erased words leave it.

    FTS4 deletes by adding markers: the old segments keep the terms until a
    merge reaches them. 'optimize' merges everything, holding the write lock
    for seconds on a large store, so it runs only while nobody else has the
    file open; otherwise the caller says how to finish. True if purged."""
    from kaja_cli.core.conversations.search import cjk_index
    from kaja_cli.core.store import search_index

    path = store.paths.shared_db.path
    if db.holder(path) is not None:
        return False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            main = search_index.state(conn) == search_index.READY
            cjk = cjk_index.state(conn) in (cjk_index.READY, cjk_index.BEHIND)
            if not main and not cjk:
                return True  # no index of kaja's: nothing holds the words
            conn.execute("PRAGMA secure_delete = ON")
            with db.transaction(conn):
                if main:
                    conn.execute(
                        f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}) VALUES ('optimize')"
                    )
                if cjk:
                    cjk_index.optimize(conn)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except Busy:
        return False
    return True
