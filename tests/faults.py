"""Helpers for the fault-injection tests: integrity checks, kill -9, a full disk."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

DATABASES = ("kaja.db", "cache.db", "db-stats.db", "web-auth.db")


def integrity(db: Path, *, fts: bool = True) -> str:
    """PRAGMA integrity_check of a copy (so the check itself cannot repair or
    change the file under test), plus FTS4's own 'integrity-check' if the
    search index is there. Returns "ok" or the first problem."""
    tmp = db.with_name(db.name + ".check")
    for suffix in ("", "-wal"):
        src = Path(str(db) + suffix)
        if src.exists():
            shutil.copyfile(src, Path(str(tmp) + suffix))
    try:
        c = sqlite3.connect(tmp)
        try:
            result = c.execute("PRAGMA integrity_check").fetchone()[0]
            if result != "ok":
                return result
            has_fts = c.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'conversation_text'"
            ).fetchone()
            if has_fts and fts:
                try:
                    c.execute(
                        "INSERT INTO conversation_text(conversation_text) VALUES ('integrity-check')"
                    )
                except sqlite3.DatabaseError as e:
                    return f"search index: {e}"
        finally:
            c.close()
        return "ok"
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)


def assert_store_sound(state: Path, *, fts: bool = True) -> None:
    """Every database passes integrity_check; with `fts`, the search index is
    in step with the messages too (not so while a build is under way)."""
    for name in DATABASES:
        db = state / name
        if db.exists() and db.stat().st_size > 0:
            assert integrity(db, fts=fts) == "ok", f"{name}: {integrity(db, fts=fts)}"


def kill_at_random(
    argv: list[str], env: dict, seed: int, *, earliest: float, latest: float
) -> subprocess.Popen:
    """Start a process and SIGKILL it after a random (seeded) delay, unless it ended first."""
    delay = random.Random(seed).uniform(earliest, latest)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.005)
    if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return p


def can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0
