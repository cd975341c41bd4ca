"""After a crash, every command reads the store (core/db.py `open_read`,
`recover_interrupted`), and `kaja wipe` finishes its job (issue 11).

Each state is made by a real process killed with SIGKILL: a writer in
rollback-journal mode killed mid-transaction (a hot -journal), and kaja's
own writers killed at a chosen point (tests/support/agents/kill_at.py): a -wal that
holds only its header, a checkpoint cut short, `kaja wipe` killed while it
folds a journal. Then every command runs on it and says the right thing.
Doctor's view of the same states is in tests/cli/test_doctor.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import DEMO_NOW, Kaja
from tests.support.faults import assert_store_sound, changes, kill_at_point, kill_mid_transaction
from tests.support.unprivileged import unprivileged

ANA = "telegram:482913"
PHOTO = "01a220a6-4fa0-783a-b596-41d21b5c56d3"  # Ana's session with an image
READS = {
    "sessions": ("sessions", "--all-owners", "-n", "0", "--json"),
    "resume": ("resume", PHOTO, "--owner", ANA, "--json"),
    "search": ("search", "compra", "--all-owners", "--json"),
    "usage": ("usage", "--json"),
}


def answer(kaja: Kaja, name: str) -> tuple[int, str]:
    r = kaja(*READS[name])
    assert "Traceback" not in r.err, r
    return r.code, r.out


# --- a hot journal --------------------------------------------------------------------
@pytest.mark.parametrize("name", list(READS))
def test_every_read_command_rolls_back_a_hot_journal_and_answers(demo_store: Kaja, name):
    before = answer(demo_store, name)
    journal = kill_mid_transaction(demo_store.db)
    assert answer(demo_store, name) == before  # the half-done edit is gone
    assert not journal.exists()
    assert_store_sound(demo_store.state)
    edited = sqlite3.connect(demo_store.db).execute(
        "SELECT count(*) FROM messages WHERE content LIKE '% (edited)'"
    )
    assert edited.fetchone()[0] == 0


def test_wipe_rolls_back_first_so_the_image_folders_go_too(demo_store: Kaja):
    kill_mid_transaction(demo_store.db)
    dry = demo_store("wipe", "--dry-run", "--json")
    paths = {p["path"] for p in json.loads(dry.out)["paths"]}
    assert str(demo_store.state / "files" / "images" / PHOTO) in paths
    assert json.loads(dry.out)["kept"] == []
    r = demo_store("wipe", "--yes")
    assert r.code == 0 and r.err.startswith("kaja: deleted "), r
    assert not demo_store.state.exists()


def test_usage_reset_and_delete_roll_back_first_and_then_write(demo_store: Kaja):
    kill_mid_transaction(demo_store.db)
    r = demo_store("sessions", "delete", PHOTO, "--owner", ANA, "--yes")
    assert r.code == 0, r
    assert not (demo_store.state / "files" / "images" / PHOTO).exists()
    r = demo_store("usage", "reset", "--yes")
    assert r.code == 0, r
    assert_store_sound(demo_store.state)


def test_a_hot_journal_in_another_programs_database_is_left_alone(kaja: Kaja, tmp_path: Path):
    other = tmp_path / "recipes.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    c.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT)")
    c.executemany(
        "INSERT INTO messages (content) VALUES (?)", [(f"soup {i}" * 20,) for i in range(300)]
    )
    c.commit()
    c.close()
    journal = kill_mid_transaction(other)
    before = journal.read_bytes()
    r = kaja("--db", str(other), "sessions")
    assert r.code == 1, r
    assert r.err == (
        f"kaja: an interrupted write left {journal}, and {other} is not recognisably Kaja's:"
        " kaja leaves it alone: open it with the program that wrote it (any SQLite program"
        " rolls it back)\n"
    )
    w = kaja("--db", str(other), "wipe", "--yes")
    assert w.code == 5 and "not Kaja's" in w.err, w
    assert journal.read_bytes() == before and other.exists()


def test_a_hot_journal_waits_while_another_process_holds_the_file(demo_store: Kaja):
    kill_mid_transaction(demo_store.db)
    # Another process with the file open (a shared lock, as a reader holds):
    # kaja never writes under it, the rollback included.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'rb')\n"
         "fcntl.lockf(f, fcntl.LOCK_SH, 1, 0x40000000 + 2, 0)\n"
         "print('ready', flush=True); time.sleep(60)", str(demo_store.db)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = demo_store("sessions")
        assert r.code == 4, r
        assert r.err.count("\n") == 1 and f"process ({holder.pid})" in r.err, r
    finally:
        holder.kill()
        holder.wait()
    assert demo_store.db.with_name("kaja.db-journal").exists()


def test_a_hot_journal_kaja_may_not_write_is_one_line_saying_so():
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    root = Path(tempfile.mkdtemp(prefix="kaja-hot-", dir="/tmp"))
    try:
        k = Kaja(root)
        assert k("demo", "--seed", "1", "--now", DEMO_NOW).code == 0
        journal = kill_mid_transaction(k.db)
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        env = dict(env, KAJA_STATE_DIR=str(k.state), KAJA_CONFIG=str(k.config), HOME=str(root))
        before = journal.read_bytes()
        for argv in (["sessions"], ["search", "tomato"], ["usage"], ["resume", "-c"]):
            run = subprocess.run([*prefix, python, "-m", "kaja_cli", *argv], env=env,
                                 capture_output=True, text=True, cwd="/")  # fmt: skip
            assert run.returncode == 1, (argv, run.stderr)
            assert run.stderr == (
                f"kaja: an interrupted write left {journal}; it needs write access to roll back:"
                " run any kaja command (or `kaja doctor --fix`) as the owner of kaja.db\n"
            ), argv
        assert journal.read_bytes() == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- kaja's own writers, killed at a chosen point -------------------------------------------
def test_a_wal_holding_only_its_header_reads_as_the_store(demo_store: Kaja, tmp_path: Path):
    def after_the_wal_header(events: list[dict]) -> int:
        for n, e in changes(events):
            if e["path"].endswith("-wal") and e["at"] == 0 and e["size"] == 32:
                return n + 1  # killed before the first frame
        raise AssertionError("no -wal header written")

    before = {name: answer(demo_store, name) for name in READS}
    kill_at_point(demo_store, tmp_path, ["usage", "reset", "--yes"], after_the_wal_header)
    wal = demo_store.db.with_name("kaja.db-wal")
    assert wal.stat().st_size == 32 and demo_store.db.with_name("kaja.db-shm").exists()
    assert {name: answer(demo_store, name) for name in READS} == before
    assert_store_sound(demo_store.state)
    r = demo_store("wipe", "--yes")
    assert r.code == 0 and not demo_store.state.exists(), r


def test_a_checkpoint_cut_short_reads_whole(kaja: Kaja, tmp_path: Path):
    """The database's first page copied from the -wal, the others not yet:
    the header counts pages the file does not hold, the -wal still has them."""

    def second_page_of_the_last_checkpoint(events: list[dict]) -> int:
        pages = [n for n, e in changes(events) if e["path"] == str(kaja.db) and e["at"] == 0]
        return pages[-1] + 1

    kaja.state.mkdir(parents=True)
    argv = ["demo", "--seed", "1", "--now", DEMO_NOW]
    kill_at_point(kaja, tmp_path, argv, second_page_of_the_last_checkpoint)
    header = kaja.db.read_bytes()[:100]
    assert int.from_bytes(header[28:32], "big") * 4096 > kaja.db.stat().st_size
    assert_store_sound(kaja.state)
    r = kaja("sessions", "--all-owners", "--json")
    assert r.code == 0 and json.loads(r.out)["total"] == 13, r
    r = kaja("wipe", "--yes")  # a demo cut short goes whole
    assert r.code == 0 and not kaja.state.exists(), r


def test_a_demo_cut_short_is_named_and_wipe_lets_demo_start_over(kaja: Kaja, tmp_path: Path):
    def first_image(events: list[dict]) -> int:
        return next(
            n for n, e in changes(events) if e["kind"] == "os.rename" and ".png" in e["path"]
        )

    kaja.state.mkdir(parents=True)
    demo = ["demo", "--seed", "1", "--now", DEMO_NOW]
    kill_at_point(kaja, tmp_path, demo, first_image)
    assert (kaja.state / "kaja.db.demo").exists()
    for name in READS:
        code, _ = answer(kaja, name)
        assert code in (0, 3), name
    doctor = json.loads(kaja("doctor", "--json").out)
    found = {c["id"]: c for c in doctor["checks"]}["interrupted-demo"]
    assert found["status"] == "warn" and "was cut short" in found["summary"]
    r = kaja(*demo)
    assert r.code == 5 and r.err == (
        f"kaja: an earlier `kaja demo` was cut short: a partial store is left at {kaja.db}:"
        " `kaja wipe --yes` removes it, then run `kaja demo` again\n"
    ), r
    assert kaja("wipe", "--yes").code == 0 and not kaja.state.exists()
    assert kaja(*demo).code == 0


def test_wipe_killed_while_folding_a_journal_is_finished_by_the_next(
    demo_store: Kaja, tmp_path: Path
):
    """The state behind the old flaky kill test: wipe switches each database
    to rollback mode before deleting it, and a kill in the switch leaves a
    hot -journal. Every command reads through it; the next wipe finishes,
    image folders included."""

    def before_the_journal_goes(events: list[dict]) -> int:
        journal = str(demo_store.db) + "-journal"
        return next(n for n, e in changes(events) if e["kind"] == "unlink" and e["path"] == journal)

    before = {name: answer(demo_store, name) for name in READS}
    kill_at_point(demo_store, tmp_path, ["wipe", "--yes"], before_the_journal_goes)
    assert demo_store.db.with_name("kaja.db-journal").exists()
    saved = tmp_path / "killed"
    shutil.copytree(demo_store.state, saved)
    assert {name: answer(demo_store, name) for name in READS} == before
    shutil.rmtree(demo_store.state)
    shutil.copytree(saved, demo_store.state)
    r = demo_store("wipe", "--yes")
    assert r.code == 0, r
    assert not demo_store.state.exists(), sorted(os.listdir(demo_store.state))
