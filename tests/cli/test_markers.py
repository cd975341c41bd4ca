"""The interrupted-operation markers (core/store/markers.py) through the real
commands: a marker an earlier kaja wrote, byte for byte as it wrote them
(`json.dumps(data, indent=1)`, the same names and fields), is described by
`kaja doctor` and finished by this kaja; and what sits at a marker's path
that kaja did not write is refused, never read (a FIFO would hang a read)
nor removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Kaja

ANA = "telegram:482913"  # three sessions, one with an image
STARTED = "2026-11-29T11:58:00.000Z"
GONE_PID = 4_194_399  # above Linux's largest pid: no process has it


def write_marker(path: Path, data: dict) -> None:
    """A marker as kaja has always written one."""
    path.write_text(json.dumps(data, indent=1))
    path.chmod(0o600)


def doctor_check(kaja: Kaja, cid: str) -> dict:
    r = kaja("doctor", "--json", "--check", cid)
    assert r.code in (0, 1), r
    return next(c for c in json.loads(r.out)["checks"] if c["id"] == cid)


def image_folders(kaja: Kaja) -> list[str]:
    images = kaja.state / "files" / "images"
    return sorted(os.listdir(images)) if images.is_dir() else []


def sql(db: Path, *statements: str, args: tuple = ()) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for s in statements:
            conn.execute(s, args)
    finally:
        conn.close()


def erase(db: Path, where: str, arg: str) -> None:
    """The sessions `where` selects, with their messages: as a commit left them."""
    ids = f"(SELECT id FROM sessions WHERE {where})"
    sql(db, f"DELETE FROM messages WHERE sessionId IN {ids}", args=(arg,))
    sql(db, f"DELETE FROM sessions WHERE {where}", args=(arg,))


def session_with_images(kaja: Kaja, owner: str | None) -> str:
    conn = sqlite3.connect(kaja.db)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM sessions WHERE owner IS ?", (owner,))]
    finally:
        conn.close()
    (sid,) = [i for i in ids if i in image_folders(kaja)][:1]
    return sid


# --- markers an earlier kaja wrote, finished by this one --------------------------------------
def test_a_whole_wipe_an_earlier_kaja_left_is_finished(demo_store: Kaja):
    """Killed right after the shared file went: only the marker still knows
    which image folders were the store's."""
    kaja = demo_store
    r = kaja("wipe", "--dry-run", "--json")
    planned = [p["path"] for p in json.loads(r.out)["paths"]]
    write_marker(kaja.state / "kaja.db.wiping", {
        "version": 1, "action": "wipe", "started_at": STARTED, "pid": GONE_PID,
        "paths": planned,
    })  # fmt: skip
    for name in ("kaja.db", "kaja.db-wal", "kaja.db-shm"):
        (kaja.state / name).unlink(missing_ok=True)
    assert image_folders(kaja)

    check = doctor_check(kaja, "interrupted-wipe")
    assert check["status"] == "warn", check
    assert check["summary"].startswith(f"`kaja wipe` (started {STARTED}) stopped with ")
    assert check["fix"] == "`kaja wipe`"
    r = kaja("wipe", "--yes")
    assert r.code == 0, r
    assert not kaja.state.exists(), sorted(p.name for p in kaja.state.rglob("*"))


def test_an_owner_wipe_an_earlier_kaja_left_is_finished(demo_store: Kaja):
    """Killed after its commit, before their image folders."""
    kaja = demo_store
    sid = session_with_images(kaja, ANA)
    digest = hashlib.sha256(ANA.encode()).hexdigest()[:12]
    marker = kaja.state / f"kaja.db.wiping-owner-{digest}"
    write_marker(marker, {
        "version": 1, "action": "owner", "owner": ANA, "started_at": STARTED, "pid": GONE_PID,
        "paths": [str(kaja.state / "files" / "images" / sid)],
    })  # fmt: skip
    erase(kaja.db, "owner = ?", ANA)  # the commit happened

    check = doctor_check(kaja, "interrupted-wipe")
    assert check["summary"] == (
        f"`kaja wipe --owner {ANA}` (started {STARTED}) stopped after its commit with 1 image"
        f" folder left: finish with `kaja wipe --owner {ANA}`"
    ), check
    r = kaja("wipe", "--owner", ANA, "--yes")
    assert r.code == 0, r
    assert sid not in image_folders(kaja) and len(image_folders(kaja)) == 2
    assert not marker.exists()
    assert doctor_check(kaja, "interrupted-wipe")["summary"] == "no unfinished wipe"


def test_a_prune_an_earlier_kaja_left_is_finished(demo_store: Kaja):
    """Killed after a batch's commit, before its image folders; a prune's marker
    never carried a version."""
    kaja = demo_store
    sid = session_with_images(kaja, None)
    marker = kaja.state / "kaja.db.pruning"
    write_marker(marker, {"action": "prune", "started_at": STARTED, "pid": GONE_PID,
                          "paths": [str(kaja.state / "files" / "images" / sid)]})  # fmt: skip
    erase(kaja.db, "id = ?", sid)

    r = kaja("sessions", "prune", "--title", "no such title*", "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["deleted"] == 0 and doc["image_folders_removed"] == 1, doc
    assert sid not in image_folders(kaja) and not marker.exists()


def test_a_restore_an_earlier_kaja_left_before_its_swap_is_undone(demo_store: Kaja):
    kaja = demo_store
    staging = kaja.root / f".{kaja.state.name}.restore-{GONE_PID}"
    (staging / "new" / "databases").mkdir(parents=True)
    (staging / "new" / "MANIFEST.json").write_text("{}")
    archive = str(kaja.root / "a.tar.gz")
    write_marker(kaja.state / "kaja.db.restoring", {
        "version": 1, "action": "restore", "pid": GONE_PID, "started_at": STARTED,
        "phase": "extract", "staging": str(staging),
        "archive": {"path": archive, "size": 1, "mtime_ns": 1},
    })  # fmt: skip
    before = kaja("sessions", "--all-owners", "-n", "0", "--json").out

    check = doctor_check(kaja, "interrupted-restore")
    assert (check["status"], check["summary"]) == (
        "warn",
        f"a restore of {archive} stopped before it changed anything; the store is as it was",
    ), check
    r = kaja("restore", "--finish")
    assert r.code == 0, r
    assert f"an interrupted restore of {archive} had changed nothing" in r.err
    assert not staging.exists() and not (kaja.state / "kaja.db.restoring").exists()
    assert kaja("sessions", "--all-owners", "-n", "0", "--json").out == before


def test_a_restore_an_earlier_kaja_left_in_its_swap_is_completed(demo_store: Kaja):
    kaja = demo_store
    staging = kaja.root / f".{kaja.state.name}.restore-{GONE_PID}"
    staged = staging / "new" / "databases" / "shared.db"
    staged.parent.mkdir(parents=True)
    shutil.copy(kaja.db, staged)  # the archive's shared file: the store less one session
    sid = session_with_images(kaja, ANA)
    sql(staged, "PRAGMA journal_mode = DELETE")
    sql(staged, "DELETE FROM sessions WHERE id = ?", args=(sid,))
    write_marker(kaja.state / "kaja.db.restoring", {
        "version": 1, "action": "restore", "pid": GONE_PID, "started_at": STARTED,
        "phase": "swap", "staging": str(staging),
        "archive": {"path": str(kaja.root / "a.tar.gz"), "size": 1, "mtime_ns": 1},
        "moves": [{"name": "shared", "source": str(staged), "target": str(kaja.db),
                   "aside": str(kaja.state / ".kaja.db.restore-old"), "database": True,
                   "keep": []}],
        "temps": [],
    })  # fmt: skip

    check = doctor_check(kaja, "interrupted-restore")
    assert check["status"] == "error" and "stopped half way" in check["summary"], check
    r = kaja("restore", "--finish")
    assert r.code == 0, r
    assert "finished the interrupted restore of" in r.err
    ids = [s["id"] for s in json.loads(kaja("sessions", "--all-owners", "-n", "0", "--json").out)
           ["sessions"]]  # fmt: skip
    assert sid not in ids and len(ids) == 12
    assert not staging.exists() and not (kaja.state / "kaja.db.restoring").exists()
    assert not (kaja.state / ".kaja.db.restore-old").exists()


def test_a_demo_an_earlier_kaja_cut_short_is_named_and_wiped(demo_store: Kaja):
    kaja = demo_store
    write_marker(kaja.state / "kaja.db.demo",
                 {"version": 1, "action": "demo", "started_at": STARTED, "pid": GONE_PID})  # fmt: skip
    check = doctor_check(kaja, "interrupted-demo")
    assert check["status"] == "warn", check
    assert check["summary"] == (
        f"`kaja demo` (started {STARTED}) was cut short: the store holds part of the sample"
    )
    r = kaja("demo")
    assert r.code == 5 and "an earlier `kaja demo` was cut short" in r.err, r
    assert kaja("wipe", "--yes").code == 0
    assert not kaja.state.exists()


def test_a_markers_temporary_a_killed_prune_left_goes_with_the_wipe(demo_store: Kaja):
    """A prune killed while writing its marker left `.kaja.db.pruning.<pid>.tmp`:
    a file of the store's, which the wipe removes with the rest."""
    kaja = demo_store
    (kaja.state / f".kaja.db.pruning.{GONE_PID}.tmp").write_text('{"action": "pr')
    r = kaja("wipe", "--yes")
    assert r.code == 0, r
    assert not kaja.state.exists(), sorted(p.name for p in kaja.state.rglob("*"))


# --- what kaja did not write at a marker's path -------------------------------------------------
@pytest.mark.process
@pytest.mark.parametrize(
    ("marker", "argv", "what"),
    [
        ("kaja.db.restoring", ("restore", "--finish"), "restore"),
        ("kaja.db.pruning", ("sessions", "prune", "--title", "Open PRs*", "--yes"), "prune"),
        ("kaja.db.demo", ("wipe", "--yes"), "demo"),
    ],
)
def test_a_fifo_at_a_markers_path_is_refused_not_read(demo_store: Kaja, marker, argv, what):
    kaja = demo_store
    fifo = kaja.state / marker
    os.mkfifo(fifo)
    before = sorted(p.name for p in kaja.state.iterdir())
    r = kaja(*argv, timeout=60)
    assert r.code == 5, r
    assert r.err == (
        f"kaja: {fifo} is a FIFO, not a {what} marker kaja wrote: move it aside:"
        f" nothing was {'deleted' if what != 'restore' else 'restored'}\n"
    ), r
    assert sorted(p.name for p in kaja.state.iterdir()) == before
    r = kaja("doctor", "--json", timeout=60)  # describes it, never waits on it
    assert r.code in (0, 1) and "Traceback" not in r.err, r
