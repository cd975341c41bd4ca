"""Faults with real processes: kill -9, a full disk, a store made read-only
under a running command. After each, the store opens, integrity passes, and
the command said what happened."""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import DEMO_NOW, KAJA, Kaja
from tests.support.faults import (
    WRITES,
    KillLauncher,
    Point,
    assert_store_sound,
    can_mount_tmpfs,
    kill_mid_transaction,
    kill_points,
    no_pid,
)

AGENT = str(Path(__file__).parents[1] / "support" / "agents" / "kaja_agent.py")


def test_kill_9_of_the_agent_mid_transaction(demo_store):
    env = dict(demo_store.env, PYTHONPATH=str(Path(__file__).parents[2]))
    agent = subprocess.Popen([sys.executable, AGENT, "--seconds", "30", "--long-every", "3"], env=env,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert agent.stdout.readline().strip() == "ready"
    import time

    time.sleep(0.5)  # long transactions every 3 turns: likely mid-transaction now
    os.kill(agent.pid, signal.SIGKILL)
    agent.wait()
    assert_store_sound(demo_store.state)
    r = demo_store("config", "paths", "--json")
    assert r.code == 0
    from kaja_cli.core.engine.db import holder

    assert holder(demo_store.db) is None  # a dead writer's -wal/-shm is not "in use"


def _full_disk_run(kaja, tmp_path, argv):
    """Run kaja with its state dir on a 600 kB file system; returns (code, stderr, state copy)."""
    state = tmp_path / "small"
    state.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    if can_mount_tmpfs():
        script = (
            f'mount -t tmpfs -o size=600k tmpfs "{state}" && '
            f'"{KAJA}" --state-dir "{state}/s" {" ".join(argv)} 2> "{out}/err"; echo $? > "{out}/rc"; '
            f'cp -a "{state}/s" "{out}/s"'
        )
        subprocess.run(["unshare", "-m", "sh", "-c", script], env=kaja.env, check=True)
    else:  # no private mounts here: a file size limit plays the full disk

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (600_000, 600_000))

        p = subprocess.run([KAJA, "--state-dir", str(out / "s"), *argv], env=kaja.env, capture_output=True,
                           text=True, preexec_fn=limit)  # fmt: skip
        (out / "err").write_text(p.stderr)
        (out / "rc").write_text(str(p.returncode))
    return int((out / "rc").read_text()), (out / "err").read_text(), out / "s"


def test_a_full_disk_is_one_clear_line_and_a_sound_store(kaja, tmp_path):
    code, err, state = _full_disk_run(
        kaja, tmp_path, ["demo", "--sessions", "30", "--messages", "6000"]
    )
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "disk is full" in err or "File too large" in err
    assert "free some disk space" in err or "File too large" in err
    assert_store_sound(state)
    r = kaja("--state-dir", str(state), "config", "paths", "--json")
    assert json.loads(r.out)["paths"]["shared_db"]["exists"] is True
    # Once space is back: a checkpoint the full disk cut short is not "truncated"
    r = kaja("--state-dir", str(state), "doctor", "--json")
    said = {c["id"]: c["summary"] for c in json.loads(r.out)["checks"]}
    assert not [s for s in said.values() if any(w in s for w in NEVER_ABOUT_A_SOUND_STORE)], said
    assert said["interrupted-demo"].endswith("was cut short: the store holds part of the sample")


@pytest.mark.needs("root", "chattr")
def test_a_store_made_read_only_under_a_running_writer(kaja):
    """chattr +i (root ignores permission bits) while demo writes: a clear line, a sound store."""
    p = subprocess.Popen([KAJA, "demo", "--sessions", "80", "--messages", "40000"], env=kaja.env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    import time

    while not (kaja.db.exists() and kaja.db.stat().st_size > 100_000) and p.poll() is None:
        time.sleep(0.01)
    # not the -shm: SQLite maps it into memory, and an immutable mapping is a
    # SIGBUS, not an I/O error (nothing a program can report)
    locked = [f for f in kaja.state.iterdir() if f.is_file() and not f.name.endswith("-shm")] + [
        kaja.state
    ]
    subprocess.run(["chattr", "+i", *map(str, locked)], check=True)
    try:
        err = p.communicate(timeout=60)[1]
    finally:
        subprocess.run(["chattr", "-i", *map(str, locked)], check=True)
    assert p.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("kaja: ")
    assert_store_sound(kaja.state)


def test_ctrl_c_is_exit_130_with_one_line_and_a_sound_store(kaja):
    """Ctrl-C after the demo's first batch of rows (stopped there by the test
    hook, so a fast machine cannot finish the demo before the signal lands)."""
    from tests.support import paused

    r = paused.killed_at(kaja, "demo-batch", "demo", "--sessions", "60", "--messages", "40000",
                         sig=signal.SIGINT)  # fmt: skip
    err = r.stderr
    assert r.returncode == 130, err
    assert err == (
        f"kaja: interrupted: a partial demo store is left at {kaja.db}: "
        "`kaja wipe --yes` removes it before another `kaja demo`\n"
    )
    assert_store_sound(kaja.state)
    r = kaja("doctor", "--json")
    found = {c["id"]: c for c in json.loads(r.out)["checks"]}["interrupted-demo"]
    assert found["status"] == "warn", found


# --- kill -9 at every point of every writing command ------------------------------------
# A point is every place a command changes a file (tests/support/agents/kill_at.py:
# each write SQLite makes, each file kaja creates, renames or deletes; of a
# run of writes to one file, the first two: `tests.support.faults.kill_points`). For
# each writing command, the store it starts from is copied, the command is
# killed right before one point, and then: the store passes integrity_check
# (and FTS4's own check); doctor calls nothing damaged, truncated or
# unopenable; each read command answers as before the command or as after
# it (a demo: exit 0 or 3, one-line errors); and what finishes the job (the
# command again; `kaja wipe` after a demo) leaves the files and the answers
# of a whole run.
#
# Which points, and in which test: the points of a command are known once
# it has run (a counting run, made once per worker and command), so a test
# is a (command, shard), and the points are dealt to the shards in their
# order (the kill point numbering is the same in every run and every
# worker: tests.support.faults.kill_points). The chosen points run by default: every
# change kaja's own code makes (it creates, renames, deletes, chmods a file
# or a folder: the steps of its crash protocols), the first write SQLite
# makes to each file, and a seeded sample (one in SAMPLE) of the rest. The
# rest are `-m exhaustive` (CI runs them too): together, every point.
ANA = "telegram:482913"  # the demo's Telegram user with a photo
ANA_SESSIONS = ("01a220a6-4fa0-783a-b596-41d21b5c56d3", "01a22612-4020-766c-be67-026cceea590b")
READS = {
    "sessions": ("sessions", "--all-owners", "-n", "0", "--json"),
    "resume": ("resume", ANA_SESSIONS[0], "--owner", ANA, "--json"),
    "usage": ("usage", "--json"),
    "search": ("search", "compra", "--all-owners", "--json"),  # last: it may build the index
    "setting": ("config", "get", "logging.database.slow_ms"),
}
STORE_READS = ("sessions", "resume", "usage", "search")
NEVER_ABOUT_A_SOUND_STORE = ("damaged", "truncated", "cannot be opened")


@dataclass(frozen=True)
class Writer:
    argv: tuple[str, ...]
    store: str = "demo"  # what it starts from: "demo", "none", "fixable", "no index", "legacy"
    finish: tuple[tuple[str, ...], ...] = ()  # what finishes the job; default: argv again
    finished: tuple[int, ...] = (0,)  # the exit statuses finishing may have
    reads: tuple[str, ...] = STORE_READS  # what must answer as before or after
    # Tests its chosen points are dealt to, and its other points (-m exhaustive):
    # about 20 points a test, so that no test runs much over half a minute.
    # 0 other tests: every point of the command is a chosen one.
    shards: tuple[int, int] = (1, 1)


WRITERS = {
    "demo": Writer(("demo", "--seed", "1", "--now", DEMO_NOW), store="none", finish=(("wipe", "--yes"),),
                   shards=(2, 2)),
    "usage reset": Writer(("usage", "reset", "--yes")),
    "usage reset --vacuum": Writer(("usage", "reset", "--yes", "--vacuum")),
    "sessions delete": Writer(("sessions", "delete", *ANA_SESSIONS, "--owner", ANA, "--yes"),
                              finished=(0, 3)),
    "search --reindex": Writer(("search", "--reindex")),
    "search (first index)": Writer(("search", "tomato", "--json"), store="no index"),
    "wipe": Writer(("wipe", "--yes"), shards=(2, 1)),
    "wipe --owner": Writer(("wipe", "--owner", ANA, "--yes"), finished=(0, 3)),
    "doctor --fix": Writer(("doctor", "--fix"), store="fixable", shards=(1, 2)),
    "config set": Writer(("config", "set", "logging.database.slow_ms", "200"), reads=("setting",),
                         shards=(1, 0)),
    "backup": Writer(("backup", "-o", "{out}"), shards=(1, 1)),
    # Uncompressed: the shared file's copy becomes the archive in place (fallocate, rename).
    "backup (.tar)": Writer(("backup", "-o", "{tar}"), shards=(1, 1)),
    "restore --force": Writer(("restore", "{archive}", "--force", "--yes"), shards=(4, 2)),
    # Finished by the next restore, which then finds the store in place: exit 5 without --force.
    "restore (no store)": Writer(("restore", "{archive}"), store="none", finished=(0, 5),
                                 shards=(2, 0)),
    "optimize": Writer(("optimize",), shards=(1, 2)),
    "optimize --vacuum": Writer(("optimize", "--vacuum"), shards=(1, 2)),
    # The demo's legacy files and conversation files beside the demo store (`demo --legacy`).
    "migrate": Writer(("migrate",), store="legacy"),
}  # fmt: skip
SAMPLE = 10  # one in SAMPLE of the points not chosen by kind joins the default set
SAMPLE_SEED = 24  # which ones: the same in every run and worker (change it to see others)


def chosen(name: str, points: list[Point]) -> tuple[list[Point], list[Point]]:
    """The points of `name` that run by default, and the rest (see above)."""
    firsts: set[str] = set()
    default: list[Point] = []
    others: list[Point] = []
    for p in points:
        if p.by == "kaja":
            default.append(p)
        elif p.kind in WRITES and no_pid(p.path) not in firsts:
            firsts.add(no_pid(p.path))
            default.append(p)
        else:
            others.append(p)
    rng = random.Random(f"{SAMPLE_SEED}:{name}")
    picked = set(rng.sample(range(len(others)), k=-(-len(others) // SAMPLE)))
    default += [p for i, p in enumerate(others) if i in picked]
    rest = [p for i, p in enumerate(others) if i not in picked]
    return sorted(default, key=lambda p: p.n), rest


def _shard_params(marks=()) -> list:
    """(command, shard, of how many) for every command, `marks` on each."""
    which = 1 if marks else 0
    return [
        pytest.param(name, i, n, id=name if n == 1 else f"{name} ({i + 1} of {n})", marks=marks)
        for name, w in WRITERS.items()
        for n in (w.shards[which],)
        for i in range(n)
    ]


def _with_files(argv: tuple[str, ...], tmp_path: Path) -> tuple[str, ...]:
    """`argv` with `{out}` (a file outside the store; `{tar}`, its uncompressed
    name) and `{archive}` (a backup
    of the demo store of seed 2, made once) filled in."""
    archive = tmp_path / "seed2.tar.gz"
    if "{archive}" in argv and not archive.exists():
        source = Kaja(tmp_path / "seed2")
        assert source("demo", "--seed", "2", "--now", DEMO_NOW).code == 0
        r = source("backup", "-o", str(archive))
        assert r.code == 0, r
    out = tmp_path / "k" / "out" / "b.tar.gz"  # see _start_from
    tar = out.with_name("b.tar")
    return tuple(a.format(out=out, tar=tar, archive=archive) for a in argv)


def _template(store: str, demo: Path, where: Path) -> Path | None:
    """The state a writer starts from, made once (None: nothing at all)."""
    if store == "none":
        return None
    shutil.copytree(demo, where, symlinks=True)
    db = where / "kaja.db"
    if store == "legacy":  # an older install's files, waiting for `kaja migrate`
        from datetime import datetime

        from kaja_cli.demo import legacy

        legacy.write(where, datetime.fromisoformat(DEMO_NOW))
    if store in ("no index", "fixable"):  # as another program makes it: no search index
        _sql(db, "DROP TABLE conversation_text",
             *(f"DROP TRIGGER messages_fts_{t}" for t in ("bd", "bu", "au", "ai")))  # fmt: skip
    if store == "fixable":  # something for every repair, a rollback first
        _sql(db, "DROP TABLE dataset_versions", "DROP INDEX calls_at",
             "ALTER TABLE sessions DROP COLUMN pendingKind", "PRAGMA journal_mode = DELETE")  # fmt: skip
        (where / "cache.db").chmod(0o644)
        kill_mid_transaction(db)
    return where


def _sql(path: Path, *statements: str) -> None:
    import sqlite3

    c = sqlite3.connect(path, isolation_level=None)
    try:
        for s in statements:
            c.execute(s).fetchall()
    finally:
        c.close()


def _start_from(kaja: Kaja, template: Path | None) -> None:
    """The state a run starts from; what a run left beside the state dir (a
    backup's output, a restore's staging folder) goes too."""
    for entry in kaja.root.iterdir():
        if entry.name != "home":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    (kaja.root / "out").mkdir()
    if template is not None:
        shutil.copytree(template, kaja.state, symlinks=True)


def _answers(kaja: Kaja, names: tuple[str, ...]) -> dict[str, tuple[int, str]]:
    """What each read command says: (exit status, stdout), search by its results only."""
    out = {}
    for name in names:
        r = kaja(*READS[name])
        text = r.out
        if name == "search" and r.code == 0:
            text = json.dumps(json.loads(r.out)["results"])
        out[name] = (r.code, text)
    return out


def _listing(kaja: Kaja) -> set[str]:
    """Every path below the state dir, the settings folder and `out/` (where a
    backup goes), and hidden files beside them, but -wal and -shm files:
    SQLite's own (the next writer checkpoints a -wal)."""
    out = {n for n in os.listdir(kaja.root) if n.startswith(".")}  # a staging folder, say
    for top in (kaja.state, kaja.config.parent, kaja.root / "out"):
        for dirpath, dirnames, filenames in os.walk(top):
            for n in dirnames + [f for f in filenames if not f.endswith(("-wal", "-shm"))]:
                out.add(os.path.relpath(os.path.join(dirpath, n), kaja.root))
    return out


def _doctor_problems(kaja: Kaja) -> list[str]:
    """What doctor says that it must not about a store SQLite checks as sound."""
    r = kaja("doctor", "--json")
    if r.code not in (0, 1) or "Traceback" in r.err:
        return [f"doctor exit {r.code}: {r.err.strip()[-300:]}"]
    return [
        f"doctor: {c['id']}: {c['summary']}"
        for c in json.loads(r.out)["checks"]
        if any(w in c["summary"] for w in NEVER_ABOUT_A_SOUND_STORE)
    ]


def _one_line_errors(err: str) -> bool:
    return "Traceback" not in err and all(line.startswith("kaja: ") for line in err.splitlines())


@dataclass
class Prepared:
    """A command made ready for killing: its state, and what a whole run gives."""

    writer: Writer
    kaja: Kaja
    template: Path | None
    ends: tuple  # what the reads answer before a run (None: no store) and after it
    finished: tuple  # the reads' answers and the files after finishing a whole run
    points: tuple[list[Point], list[Point]]  # chosen, the rest


class KillBench:
    """One worker's kill tests: one launcher (kaja imported once), each command
    prepared once (its counting run, its whole run), in a folder of its own
    that every shard of it on this worker uses in turn."""

    def __init__(self, root: Path, demo: Path):
        self.root, self.demo = root, demo
        self.launcher = KillLauncher(root / "launcher")
        self.prepared: dict[str, Prepared] = {}

    def prepare(self, name: str) -> Prepared:
        if name not in self.prepared:
            self.prepared[name] = self._prepare(name)
        return self.prepared[name]

    def _prepare(self, name: str) -> Prepared:
        where = self.root / f"w{len(self.prepared)}"
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir()
        w = WRITERS[name]
        w = Writer(_with_files(w.argv, where), w.store, w.finish, w.finished, w.reads, w.shards)
        kaja = Kaja(where / "k")
        template = _template(w.store, self.demo, where / "template")
        _start_from(kaja, template)
        before = _answers(kaja, w.reads) if template is not None else None
        _start_from(kaja, template)
        full = self.run(w, kaja)
        assert full.status == 0, full
        after = _answers(kaja, w.reads)
        for argv in w.finish or (w.argv,):  # on a whole run, finishing changes nothing more
            assert kaja(*argv).code in w.finished
        finished = (_answers(kaja, w.reads), _listing(kaja))
        points = kill_points(full.events)
        assert points, full
        return Prepared(w, kaja, template, (before, after), finished, chosen(name, points))

    def run(self, w: Writer, kaja: Kaja, point: int = 0):
        if self.launcher.proc.poll() is not None:  # a failed test may have ended it
            self.launcher = KillLauncher(self.root / "launcher")
        return self.launcher.run(list(w.argv), kaja.env, point=point)

    def close(self) -> None:
        self.launcher.close()


@pytest.fixture(scope="session")
def kill_bench(tmp_path_factory: pytest.TempPathFactory, _demo_template: Path):
    bench = KillBench(tmp_path_factory.mktemp("kill"), _demo_template)
    yield bench
    bench.close()


def _kill_at(bench: KillBench, name: str, points: list[Point]) -> None:
    p = bench.prepare(name)
    failures: list[str] = []
    for point in points:
        _start_from(p.kaja, p.template)
        killed = bench.run(p.writer, p.kaja, point.n)
        problems = _check_killed(p.kaja, p.writer, point, killed, p.ends, p.finished)
        failures += [f"{point}: {problem}" for problem in problems]
    assert not failures, f"{len(failures)} problems at {len(points)} points:\n" + "\n".join(
        failures
    )


@pytest.mark.parametrize(("name", "shard", "shards"), _shard_params())
def test_kill_9_at_the_chosen_points(name: str, shard: int, shards: int, kill_bench) -> None:
    points, rest = kill_bench.prepare(name).points
    assert points, name  # every command has points kaja creates or SQLite writes first
    assert WRITERS[name].shards[1] or not rest, f"{name}: other points, and no test for them"
    _kill_at(kill_bench, name, points[shard::shards])


@pytest.mark.parametrize(("name", "shard", "shards"), _shard_params(pytest.mark.exhaustive))
def test_kill_9_at_every_other_point(name: str, shard: int, shards: int, kill_bench) -> None:
    _kill_at(kill_bench, name, kill_bench.prepare(name).points[1][shard::shards])


def _check_killed(kaja: Kaja, w: Writer, point: Point, killed, ends, finished) -> list[str]:
    """What is wrong with the store a command killed at `point` left."""
    if killed.status != -signal.SIGKILL or not point.same(killed.hit):
        return [f"not killed there: status {killed.status}, at {killed.hit}"]
    problems = []
    try:
        assert_store_sound(kaja.state)
    except AssertionError as e:
        problems.append(f"unsound: {e}")
    problems += _doctor_problems(kaja)  # first: it reads the state as the kill left it
    for name, answer in _answers(kaja, w.reads).items():
        ok = answer[0] in (0, 3) if ends[0] is None else answer in (ends[0][name], ends[1][name])
        if not ok:
            problems.append(f"{name}: exit {answer[0]}: {answer[1][:200]}")
    for argv in w.finish or (w.argv,):
        r = kaja(*argv)
        if r.code not in w.finished or not _one_line_errors(r.err):
            problems.append(
                f"finishing with {' '.join(argv)}: exit {r.code}: {r.err.strip()[-300:]}"
            )
    if _answers(kaja, w.reads) != finished[0]:
        problems.append("not finished: the read commands do not answer as after a whole run")
    files = _listing(kaja)
    if files != finished[1]:
        problems.append(
            f"not finished: files differ from a whole run's: {sorted(files ^ finished[1])}"
        )
    return problems
