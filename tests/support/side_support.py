"""Helpers for test_notes.py, test_cache.py and test_accounts.py.

- `sql(path, query)`: rows from a database, on a connection closed at once.
- `fingerprint(folder)`: every file's content (but the -shm), to prove a
  command changed nothing.
- `holding(path, mode)`: a real second process with a database open ("open":
  a connection in WAL mode, "write": inside BEGIN IMMEDIATE).
- `killed_at(kaja, step, *argv)`: the real kaja, stopped by the test hook
  (core/store/markers.py, set by tests/support/paused.py) at `step`, then kill -9.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from tests.support.paused import killed_at  # noqa: F401  (the side tests import it from here)
from tests.support.sessions_support import query_profile


def sql(path: Path, query: str, *args) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(query, args).fetchall()


def write(path: Path, script: str) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(script)


def fingerprint(folder: Path) -> dict:
    """Every file's content, but the -shm (no data) and the query profile, which
    every command adds its own queries to when it ends (core/profiler.py)."""
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm") and not query_profile(p)
    }


HOLDER = r"""
import sqlite3, sys, time
path, mode = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(path, isolation_level=None, timeout=10)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
if mode == "write":
    conn.execute("BEGIN IMMEDIATE")
print("ready", flush=True)
time.sleep(300)
"""


@contextmanager
def holding(path: Path, mode: str = "open") -> Iterator[subprocess.Popen]:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), mode],
                         stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield p
    finally:
        p.kill()
        p.wait()


def integrity(path: Path) -> str:
    return sql(path, "PRAGMA integrity_check")[0][0]
