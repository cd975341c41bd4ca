"""Faults with real processes: kill -9, a full disk, a store made read-only
under a running command. After each, the store opens, integrity passes, and
the command said what happened."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KAJA
from tests.faults import assert_store_sound, can_mount_tmpfs, kill_at_random

AGENT = str(Path(__file__).parent / "agents" / "kaja_agent.py")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_kill_9_of_demo_leaves_a_sound_store(kaja, seed):
    p = kill_at_random([KAJA, "demo", "--sessions", "60", "--messages", "12000"], kaja.env, seed,
                       earliest=0.15, latest=1.2)  # fmt: skip
    assert p.returncode in (-signal.SIGKILL, 0)
    assert_store_sound(kaja.state)
    r = kaja("config", "paths", "--json")
    assert r.code == 0
    if kaja.db.exists():
        r = kaja("demo")  # it says a store is there, and changes nothing
        assert r.code == 5 and "already exists" in r.err


def test_kill_9_of_the_agent_mid_transaction(demo_store):
    env = dict(demo_store.env, PYTHONPATH=str(Path(__file__).parents[1]))
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
    from kaja_cli.core.db import holder

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


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("chattr"), reason="needs root and chattr")
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
    import time

    p = subprocess.Popen([KAJA, "demo", "--sessions", "60", "--messages", "40000"], env=kaja.env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    while not (kaja.db.exists() and kaja.db.stat().st_size > 50_000) and p.poll() is None:
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 130, err
    assert err == (
        f"kaja: interrupted: a partial demo store is left at {kaja.db}: "
        "`kaja wipe --yes` removes it before another `kaja demo`\n"
    )
    assert_store_sound(kaja.state)


@pytest.fixture(scope="session")
def _big_template(tmp_path_factory):
    from tests.conftest import DEMO_NOW, Kaja

    k = Kaja(tmp_path_factory.mktemp("big-template"))
    assert (
        k("demo", "--seed", "3", "--sessions", "80", "--messages", "30000", "--now", DEMO_NOW).code
        == 0
    )
    return k.state


@pytest.fixture
def big_store(kaja, _big_template):
    shutil.copytree(_big_template, kaja.state, symlinks=True)
    return kaja


WRITERS = {
    "usage reset": lambda k: ["usage", "reset", "--yes"],
    "wipe --owner": lambda k: ["wipe", "--owner", "telegram:100001", "--yes"],
    "sessions delete": lambda k: [
        "sessions",
        "delete",
        *_largest_sessions(k),
        "--yes",
        "--owner",
        "telegram:100002",
    ],
    "search --reindex": lambda k: ["search", "--reindex"],
    "wipe": lambda k: ["wipe", "--yes"],
}


def _largest_sessions(kaja) -> list[str]:
    import sqlite3

    c = sqlite3.connect(f"{kaja.db.as_uri()}?mode=ro", uri=True)
    try:
        return [r[0] for r in c.execute(
            "SELECT sessionId FROM messages m JOIN sessions s ON s.id = m.sessionId"
            " WHERE s.owner = 'telegram:100002' GROUP BY sessionId ORDER BY count(*) DESC LIMIT 3"
        )]  # fmt: skip
    finally:
        c.close()


@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("command", list(WRITERS))
def test_kill_9_of_a_writing_command_at_a_random_point(big_store, command, seed):
    """Whatever the moment, the store opens sound afterwards and the next
    command tells the truth about it (doctor names what is unfinished)."""
    argv = WRITERS[command](big_store)
    p = kill_at_random([KAJA, *argv], big_store.env, seed, earliest=0.05, latest=0.9)
    assert p.returncode in (-signal.SIGKILL, 0), p.stderr.read() if p.stderr else ""
    # Sound as it stands; a search index build cut short is recorded, not damage
    assert_store_sound(big_store.state, fts=False)
    r = big_store("doctor", "--json")
    assert r.code in (0, 1) and "Traceback" not in r.err, r
    if big_store.db.exists():
        # the next writable kaja (here, search) finishes an interrupted index build
        r = big_store("search", "recipe", "--all-owners", "--limit", "1")
        assert r.code == 0 and "Traceback" not in r.err, r
    # running it again finishes the job
    again = big_store(*argv)
    assert again.code in (0, 3), again  # 3: nothing (left) to erase
    assert_store_sound(big_store.state)
