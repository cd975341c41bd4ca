"""The shared cache: `cache.db` (`shared_cache`, SPEC §4): what it holds per
namespace, dropping expired entries, and clearing it.

Every process shares web fetches and embeddings through it, and the seed
says it "can be deleted at any time" (the registry marks it `disposable`):
`clear` without a namespace deletes the file with its -wal, -shm and
-journal, but only while no other process holds it (a file deleted under a
running process keeps being written, and those writes are lost to everyone
else), never through a symbolic link, and never a file that is not Kaja's
cache. When the file is held or is a link, `clear` empties it instead, in
one transaction, as it does for one namespace.

Hit and miss counts are not in cache.db: the agent adds them up per minute
in the shared file's `cache_stats`, keyed by the cache's (namespace's) name.

An expiry is an ISO 8601 UTC time (`2026-11-29T12:00:00.000Z`); a value that
is not one (a number another writer stored) never counts as expired, so
nothing is dropped by a misread date. `kaja doctor` counts the same way.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core import clock
from kaja_cli.core.engine import db
from kaja_cli.core.store.paths import companions
from kaja_cli.errors import Failed, KajaError, NotFound

if TYPE_CHECKING:
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.registry import DatabaseFile

READ_TIMEOUT_MS = 1000  # how long a look at the shared file's cache_stats may wait
# An ISO 8601 time before :now (see the module docstring); served by shared_cache_expiry.
EXPIRED = clock.iso_before("expires_at")


class NamespaceStats(NamedTuple):
    namespace: str
    entries: int
    bytes: int  # keys and values
    expired: int
    oldest_access: str | None
    newest_access: str | None
    hits: int | None  # from cache_stats; None when the shared file has none
    misses: int | None

    @property
    def hit_rate(self) -> float | None:
        if self.hits is None or self.misses is None or not self.hits + self.misses:
            return None
        return self.hits / (self.hits + self.misses)

    def to_json(self) -> dict:
        rate = self.hit_rate
        return {
            "namespace": self.namespace, "entries": self.entries, "bytes": self.bytes,
            "expired": self.expired, "oldest_access": self.oldest_access,
            "newest_access": self.newest_access, "hits": self.hits, "misses": self.misses,
            "hit_rate": None if rate is None else round(rate, 4),
        }  # fmt: skip


class CacheReport(NamedTuple):
    path: Path
    exists: bool
    has_table: bool
    namespaces: list[NamespaceStats]
    file_size: int  # the database with its -wal (what it takes on disk)
    remarks: list[str]  # what to say on stderr

    def to_json(self) -> dict:
        spaces = self.namespaces
        return {
            "path": str(self.path), "exists": self.exists, "file_size": self.file_size,
            "namespaces": [s.to_json() for s in spaces],
            "total": {"entries": sum(s.entries for s in spaces),
                      "bytes": sum(s.bytes for s in spaces),
                      "expired": sum(s.expired for s in spaces)},
        }  # fmt: skip


def _now(now: str | None) -> str:
    return now or clock.now_iso()


def cache_path(store: Store) -> Path:
    return store.path("cache")


def _usable(path: Path, *, writing: bool = False) -> None:
    """Refuse what is no file kaja may open: a folder, a FIFO or a device
    (opening one would block) or a file that is not SQLite."""
    db.require_database(path, writing=writing)


# --- what it holds -------------------------------------------------------------------
def report(store: Store, now: str | None = None) -> CacheReport:
    """Entries, bytes, expired entries and access times per namespace, with
    the hit rate from cache_stats; a missing cache.db holds nothing."""
    now = _now(now)
    path = cache_path(store)
    remarks: list[str] = []
    rows: dict[str, NamespaceStats] = {}
    exists = os.path.lexists(path)
    has_table = False
    if exists:
        _usable(path)
        with db.open_read(path) as conn:
            has_table = "shared_cache" in db.table_names(conn)
            if has_table:
                for r in conn.execute(
                    "SELECT namespace, count(*), sum(coalesce(length(CAST(key AS BLOB)), 0)"
                    " + coalesce(length(CAST(value AS BLOB)), 0)),"
                    f" sum({EXPIRED}), min(last_access), max(last_access)"
                    " FROM shared_cache GROUP BY namespace ORDER BY namespace",
                    {"now": now},
                ):
                    name = _text(r[0])
                    rows[name] = NamespaceStats(name, r[1], r[2] or 0, r[3] or 0,
                                                _opt(r[4]), _opt(r[5]), None, None)  # fmt: skip
    stats = _hit_counts(store, remarks)
    if stats is not None:
        for name, (hits, misses) in stats.items():
            base = rows.get(name) or NamespaceStats(name, 0, 0, 0, None, None, None, None)
            rows[name] = base._replace(hits=hits, misses=misses)
        rows = {
            n: s if s.hits is not None else s._replace(hits=0, misses=0) for n, s in rows.items()
        }
    size = (
        sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.is_file()) if exists else 0
    )
    return CacheReport(path, exists, has_table, [rows[n] for n in sorted(rows)], size, remarks)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _opt(value: object) -> str | None:
    return None if value is None else _text(value)


def _hit_counts(store: Store, remarks: list[str]) -> dict[str, tuple[int, int]] | None:
    """(hits, misses) per cache from the shared file's cache_stats; None when
    there is nothing to read them from."""
    path = store.paths.shared_db.path
    if not path.is_file():
        return None
    try:
        with db.open_read(path, timeout_ms=READ_TIMEOUT_MS) as conn:
            if "cache_stats" not in db.table_names(conn):
                return None
            return {
                _text(name): (int(hits or 0), int(misses or 0))
                for name, hits, misses in conn.execute(
                    "SELECT cache, sum(hits), sum(misses) FROM cache_stats GROUP BY cache"
                )
            }
    except (KajaError, sqlite3.Error, ValueError, TypeError) as e:
        remarks.append(f"no hit rates: the shared file's cache_stats can't be read ({e})")
        return None


def _counts(
    conn: sqlite3.Connection, where: str = "1", params: dict | None = None
) -> dict[str, int]:
    if "shared_cache" not in db.table_names(conn):
        return {}
    return {
        _text(name): n
        for name, n in conn.execute(
            f"SELECT namespace, count(*) FROM shared_cache WHERE {where}"
            " GROUP BY namespace ORDER BY namespace",
            params or {},
        )
    }


def _require_cache(conn: sqlite3.Connection, store: Store) -> None:
    from kaja_cli.core.store import guard

    guard.require_kajas(conn, cache_path(store), store.paths.file_of("cache"))


# --- prune: the expired entries ---------------------------------------------------------
class PrunePlan(NamedTuple):
    path: Path
    exists: bool
    now: str  # entries that expired before this go
    expired: dict[str, int]  # per namespace

    @property
    def total(self) -> int:
        return sum(self.expired.values())

    def to_json(self, done: dict[str, int] | None = None, *, dry_run: bool = False) -> dict:
        """`kaja cache prune --json`: what went per namespace (`done`), or would go."""
        done = self.expired if done is None else done
        return {"action": "prune", "dry_run": dry_run, "path": str(self.path),
                "expired_before": self.now, "namespaces": done,
                "deleted": 0 if dry_run else sum(done.values())}  # fmt: skip


def plan_prune(store: Store, now: str | None = None) -> PrunePlan:
    """Read-only: the expired entries per namespace."""
    now = _now(now)
    path = cache_path(store)
    if not os.path.lexists(path):
        return PrunePlan(path, False, now, {})
    _usable(path, writing=True)
    with db.open_read(path) as conn:
        _require_cache(conn, store)
        return PrunePlan(path, True, now, _counts(conn, EXPIRED, {"now": now}))


def prune(store: Store, plan: PrunePlan) -> dict[str, int]:
    """Delete the entries that expired before the plan's time, in one
    transaction; returns how many went per namespace."""
    if not plan.exists:
        return {}
    from kaja_cli.core.store import markers

    with _writer(store, plan.path) as conn, db.transaction(conn):
        gone = _counts(conn, EXPIRED, {"now": plan.now})
        if gone:
            conn.execute(f"DELETE FROM shared_cache WHERE {EXPIRED}", {"now": plan.now})
        markers.checkpoint("cache-commit")
    return gone


@contextmanager
def _writer(store: Store, path: Path) -> Iterator[sqlite3.Connection]:
    """A write connection to cache.db with its schema up to date (a side
    file: this works in cloud mode too, where the cache stays local)."""
    with db.open_write(path, store.paths.file_of("cache")) as conn:
        store.ensure_schema(conn, "cache")
        yield conn


# --- clear: a namespace, or everything ---------------------------------------------------
class How(StrEnum):
    FILE = "file"  # delete cache.db and its companions
    ROWS = "rows"  # empty it (or one namespace) in one transaction
    NOTHING = "nothing"  # there is no cache.db


class ClearPlan(NamedTuple):
    path: Path
    namespace: str | None
    how: How
    entries: dict[str, int]  # per namespace, as planned
    files: list[tuple[Path, int]]  # How.FILE: each path with its size
    why_rows: str | None  # without a namespace: why the file stays (held, a link)
    damaged: str | None = None  # why it can't be read: deleted all the same

    @property
    def total(self) -> int:
        return sum(self.entries.values())

    def to_json(self, done: ClearResult | None = None, *, dry_run: bool = False) -> dict:
        """`kaja cache clear --json`: what `done` did, or the plan would do."""
        how = self.how if done is None else done.how
        entries = self.entries if done is None else done.entries
        files = [p for p, _ in self.files] if done is None else done.files
        return {"action": "clear", "dry_run": dry_run, "path": str(self.path),
                "namespace": self.namespace, "how": str(how),
                "why": self.why_rows if done is None else done.why_rows,
                "damaged": self.damaged, "namespaces": entries, "entries": sum(entries.values()),
                "files": [str(p) for p in files]}  # fmt: skip


class ClearResult(NamedTuple):
    how: How
    entries: dict[str, int]
    files: list[Path]
    why_rows: str | None


def plan_clear(store: Store, namespace: str | None) -> ClearPlan:
    """Read-only: what `clear` would do, and why not the file when it can't."""
    path = cache_path(store)
    if not os.path.lexists(path):
        if namespace is not None:
            raise NotFound(f"no cache.db at {path}: no namespace {namespace!r} to clear")
        return ClearPlan(path, None, How.NOTHING, {}, [], None)
    _usable(path, writing=True)
    damaged = None
    try:
        with db.open_read(path) as conn:
            _require_cache(conn, store)
            entries = _counts(conn)
    except Failed as e:
        # A damaged cache is what clearing is for: the file goes (it is
        # SQLite at cache.db's place: `_usable`), unless someone holds it.
        if namespace is not None:
            raise
        damaged, entries = str(e), {}
    if namespace is not None:
        if namespace not in entries:
            known = ", ".join(sorted(entries)) or "none"
            raise NotFound(f"cache.db has no namespace {namespace!r}", hint=f"it has: {known}")
        return ClearPlan(path, namespace, How.ROWS, {namespace: entries[namespace]}, [], None)
    why = _why_not_the_file(path)
    if why is not None:
        if damaged is not None:
            raise Failed(f"{damaged}; it can't be emptied, nor deleted: {why}")
        return ClearPlan(path, None, How.ROWS, entries, [], why)
    files = [(p, p.stat().st_size) for p in (path, *companions(path)) if p.is_file()]
    return ClearPlan(path, None, How.FILE, entries, files, None, damaged)


def _why_not_the_file(path: Path) -> str | None:
    """Why cache.db may not be deleted now (it is emptied instead), or None."""
    if path.is_symlink():
        return f"{path} is a symbolic link: kaja deletes no file through a link"
    pid = db.holder(path)
    if pid is not None:
        who = f"process {pid}" if pid > 0 else "another process"
        return f"{path} is open in {who} (Kaja is running)"
    return None


def clear(store: Store, plan: ClearPlan) -> ClearResult:
    """Carry the plan out. Deleting the file: folded into one self-contained
    file first (no -wal left to replay into a new cache.db), looked at once
    more for a holder, then deleted before its companions. A process that
    opened it meanwhile keeps it: it is emptied instead."""
    if plan.how is How.NOTHING:
        return ClearResult(How.NOTHING, {}, [], None)
    if plan.how is How.FILE:
        deleted = _delete_file(plan.path, store.paths.file_of("cache"))
        if deleted is not None:
            return ClearResult(How.FILE, plan.entries, deleted, None)
        why = _why_not_the_file(plan.path) or f"{plan.path} was opened meanwhile"
        return ClearResult(How.ROWS, _empty(store, plan.path, None), [], why)
    return ClearResult(How.ROWS, _empty(store, plan.path, plan.namespace), [], plan.why_rows)


def _empty(store: Store, path: Path, namespace: str | None) -> dict[str, int]:
    from kaja_cli.core.store import markers

    where, params = ("namespace = :ns", {"ns": namespace}) if namespace is not None else ("1", {})
    with _writer(store, path) as conn, db.transaction(conn):
        gone = _counts(conn, where, params)
        conn.execute(f"DELETE FROM shared_cache WHERE {where}", params)
        markers.checkpoint("cache-commit")
    return gone


def _delete_file(path: Path, file: DatabaseFile) -> list[Path] | None:
    """Delete cache.db and its companions; None (nothing deleted) when another
    process has it open."""
    from kaja_cli.core.engine import fs
    from kaja_cli.core.store import markers
    from kaja_cli.errors import Busy

    try:
        # False (a damaged file): deleted all the same, database first.
        db.fold_journal(path, file)
    except Busy:
        return None
    markers.checkpoint(path.name)
    if db.holder(path) is not None or path.is_symlink():
        return None
    deleted = []
    for p in (path, *companions(path)):
        st = _lstat(p)
        if st is None or stat.S_ISDIR(st.st_mode):
            continue
        p.unlink()
        deleted.append(p)
        if p == path:
            fs.fsync_dir(path.parent)  # the database gone before any journal it needed
    fs.fsync_dir(path.parent)
    return deleted


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
