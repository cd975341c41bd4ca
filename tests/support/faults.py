"""Helpers for the fault-injection tests: integrity checks, kill -9 at every point, a full disk."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATABASES = ("kaja.db", "cache.db", "db-stats.db", "web-auth.db")


def integrity(db: Path, *, fts: bool = True) -> str:
    """PRAGMA integrity_check of a copy (so the check itself cannot repair or
    change the file under test: a -wal or a hot -journal is replayed into the
    copy), plus FTS4's own 'integrity-check' if the search index is there.
    Returns "ok" or the first problem."""
    tmp = db.with_name(db.name + ".check")
    for suffix in ("", "-wal", "-journal"):  # SQLite rolls a hot journal back in the copy
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


LAUNCHER = Path(__file__).parent / "agents" / "kill_at.py"
WRITES = ("write", "pwrite", "pwrite64")  # the system calls that write into a file


@dataclass(frozen=True)
class Point:
    """A place where a command changes the files (see tests/support/agents/kill_at.py)."""

    n: int  # its number, counted from 1 as the command runs (a kill point's own numbering)
    kind: str  # the system call or Python operation
    path: str
    by: str = "sqlite"  # who makes the change: "sqlite" (a system call) or "kaja" (Python)

    def __str__(self) -> str:
        return f"#{self.n} {self.kind} {Path(self.path).name}"

    def same(self, other: Point | None) -> bool:
        """The same point of another run (temporary files carry the pid)."""
        return other is not None and (self.n, self.kind, no_pid(self.path)) == (
            other.n, other.kind, no_pid(other.path)
        )  # fmt: skip


def no_pid(path: str) -> str:
    """A temporary file's (or folder's) name without what differs between runs
    (a pid, a random part): `.kaja.db.wiping.4242.tmp` → `.kaja.db.wiping.tmp`,
    `.b.tar.gz.4242.partial/…` → `.b.tar.gz.partial/…`, `.state.restore-4242/…`
    → `.state.restore/…`, `kaja-before-restore-20261201T140548Z…` →
    `kaja-before-restore-STAMP…`."""
    path = re.sub(r"-\d{8}T\d{6}Z(?=[.-])", "-STAMP", path)  # kaja-before-restore-<time>
    path = re.sub(r"\.[^./]+\.(tmp|partial)(?=/|$)", r".\1", path)
    return re.sub(r"\.restore-\d+(?=/|$)", ".restore", path)


def kill_points(events: list[dict]) -> list[Point]:
    """The points a kill test stops a command at, numbered as the launcher
    numbers them: every change, except that of a run of writes to one file
    (by one thread, with no statement of that thread, and nothing else
    changed, in between) only the first two are kept.

    Killed anywhere in such a run, the file holds a prefix of what the run
    writes, and every prefix but the empty one is the same case for SQLite:
    frames of a transaction without its commit frame (the -wal: ignored on
    recovery), a checkpoint cut short (the database: some pages copied, the
    -wal still whole), a journal not yet synced (the database not touched
    yet). The first write stands for the empty prefix, the second for the
    others; the point after the run (the next one) for the whole of it.
    Numbering the kill points apart from the changes makes them the same in
    every run even where a run's length is not (a query profile with a
    slow query more).
    """
    return [Point(e["point"], e["kind"], e["path"], e["by"]) for e in events if e.get("point")]


@dataclass
class Launched:
    status: int  # the exit status; -9 when killed
    out: str
    err: str
    events: list[dict]  # `count`: every point and statement met
    hit: Point | None  # `kill`: the point it died at


class KillLauncher:
    """tests/support/agents/kill_at.py serving runs: kaja imported once, each run a forked
    child of it (a real process, killed for real)."""

    def __init__(self, work: Path):
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAJA_", "XDG_"))}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        self.proc = subprocess.Popen([sys.executable, str(LAUNCHER), "serve"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip

    def run(self, argv: list[str], env: dict, target: int = 0, *, point: int = 0) -> Launched:
        """`kaja ARGV`: to its end, counting (no target), or killed right before
        change `target` or kill point `point` (`kill_points`)."""
        report, out, err = (self.work / n for n in ("report", "out", "err"))
        report.unlink(missing_ok=True)
        job = {"argv": argv, "env": env, "target": target, "point": point, "report": str(report),
               "out": str(out), "err": str(err)}  # fmt: skip
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("tests/support/agents/kill_at.py stopped")
        status = json.loads(line)["status"]
        lines = report.read_text().splitlines() if report.exists() else []
        records = [json.loads(x) for x in lines]
        hit = None
        if (target or point) and records:
            r = records[0]
            hit = Point(r["point"] if point else r["n"], r["kind"], r["path"], r["by"])
        return Launched(
            status, out.read_text(), err.read_text(), records if not (target or point) else [], hit
        )

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def kill_mid_transaction(db: Path) -> Path:
    """A writer in rollback-journal mode, killed with its change half written
    into the file (a small cache spills pages before the commit): a hot -journal."""
    code = (
        "import os, signal, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode = DELETE')\n"
        "c.execute('PRAGMA cache_size = 2')\n"
        "c.execute('BEGIN')\n"
        "c.execute(\"UPDATE messages SET content = content || ' (edited)'\")\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True)
    assert p.returncode == -signal.SIGKILL, p.stderr
    journal = db.with_name(db.name + "-journal")
    assert journal.stat().st_size > 0
    return journal


def kill_at_point(
    kaja, tmp_path: Path, argv: list[str], pick: Callable[[list[dict]], int]
) -> Launched:
    """Run `kaja ARGV` to count its points, then again from the same state,
    killed right before the point `pick` chooses."""
    saved = tmp_path / "saved-state"
    shutil.copytree(kaja.state, saved, symlinks=True)
    launcher = KillLauncher(tmp_path / "launcher")
    try:
        counted = launcher.run(argv, kaja.env)
        assert counted.status == 0, counted
        target = pick(counted.events)
        shutil.rmtree(kaja.state, ignore_errors=True)
        shutil.copytree(saved, kaja.state, symlinks=True)
        killed = launcher.run(argv, kaja.env, target)
        assert killed.status == -signal.SIGKILL, killed
        return killed
    finally:
        launcher.close()
        shutil.rmtree(saved)


def changes(events: list[dict]) -> list[tuple[int, dict]]:
    """The points (numbered from 1) among the events, statements left out."""
    return list(enumerate((e for e in events if e["kind"] != "sql"), start=1))


def can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0
