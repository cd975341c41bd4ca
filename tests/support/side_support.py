"""Helpers for test_notes.py, test_cache.py and test_accounts.py.

- `sql(path, query)`: rows from a database, on a connection closed at once.
- `fingerprint(folder)`: every file's content (but the -shm), to prove a
  command changed nothing.
- `holding(path, mode)`: a real second process with a database open ("open":
  a connection in WAL mode, "write": inside BEGIN IMMEDIATE).
- `killed_at(kaja, step, *argv)`: the real kaja, stopped by the test hook
  (core/store/markers.py, set by tests/support/wipe_paused.py) at `step`, then kill -9.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from tests.support.sessions_support import query_profile

PAUSED_KAJA = str(Path(__file__).with_name("wipe_paused.py"))


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


def killed_at(kaja, step: str, *argv: str) -> subprocess.CompletedProcess:
    """`kaja ARGV` as a real process, killed with SIGKILL once it reaches `step`."""
    flag = kaja.root / "paused.flag"
    flag.unlink(missing_ok=True)
    p = subprocess.Popen(
        [sys.executable, PAUSED_KAJA, step, str(flag), "--", *argv], env=kaja.env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not flag.exists():
        if p.poll() is not None:
            raise AssertionError(f"kaja {argv} ended before {step!r}: {p.communicate()}")
        assert time.monotonic() < deadline, f"kaja {argv} never reached {step!r}"
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    flag.unlink()
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def integrity(path: Path) -> str:
    return sql(path, "PRAGMA integrity_check")[0][0]
