"""`kaja wipe` and `kaja wipe --owner` (core/care/wipe/, commands/wipe.py).

Every safety rule of SPEC §8 through the real command: the exact paths
deleted (the whole tree compared before and after), refusals, real second
processes holding the files, and `kill -9` of a real `kaja wipe` stopped at
chosen steps by the test hook (core/store/markers.py, set by tests/support/paused.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import DEMO_NOW, Kaja
from tests.support import paused

# `kaja` with the wipe's test hook set: it stops at a step to be killed there.

ANA = "telegram:482913"  # three sessions, one with an image, notes, a dataset
BJORN = "telegram:771204"


# --- helpers ---------------------------------------------------------------------------
def listing(root: Path) -> dict[str, str]:
    """Every path under `root`: a hash for files (but -wal/-shm), "dir", or the link."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link -> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif name.endswith(("-wal", "-shm")):
                out[rel] = "file"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def copy_db(db: Path, dest: Path) -> Path:
    """The database with its companions, copied: inspect it without touching it."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in [db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))]:
        if p.exists():
            shutil.copy(p, dest / p.name)
    return dest / db.name


def assert_opens_whole(db: Path, scratch: Path) -> sqlite3.Connection:
    """`db` (with its companions) opens and passes integrity_check."""
    conn = sqlite3.connect(copy_db(db, scratch))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)], db
    return conn


def snapshot(db: Path, scratch: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every table's columns and rows (sorted), the search index's own tables aside."""
    conn = sqlite3.connect(copy_db(db, scratch))
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'conversation_text%' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    out = {}
    for t in tables:
        cur = conn.execute(f'SELECT * FROM "{t}"')
        out[t] = ([d[0] for d in cur.description], sorted(cur.fetchall(), key=repr))
    conn.close()
    return out


def rows_of(snap, table: str) -> list[dict]:
    cols, rows = snap[table]
    return [dict(zip(cols, r, strict=True)) for r in rows]


def paths_json(kaja: Kaja, *extra: str) -> dict:
    r = kaja(*extra, "config", "paths", "--json")
    assert r.code == 0, r
    return json.loads(r.out)["paths"]


def core_paths(kaja: Kaja, *, db: Path | None = None):
    from kaja_cli.core.store.paths import Overrides, resolve

    return resolve(Overrides(db=db), environ=kaja.env)


def interrupted(kaja: Kaja):
    from kaja_cli.core.care import wipe

    return wipe.interrupted(core_paths(kaja))


HOLDER = r"""
import sqlite3, sys, time
path, mode = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(path, isolation_level=None, timeout=10)
conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
if mode == "write":
    conn.execute("BEGIN IMMEDIATE")
elif mode == "crash":
    for i in range(40):
        conn.execute(
            "INSERT INTO notes (owner, key, content) VALUES ('', ?, hex(randomblob(3000)))",
            (f"crashed-writer-{i}",),
        )
elif mode == "commit-later":
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO notes (owner, key, content) VALUES ('', 'late', 'x')")
print("ready", flush=True)
if mode == "commit-later":
    time.sleep(float(sys.argv[3]))
    conn.execute("COMMIT")
time.sleep(300)
"""


@contextmanager
def holding(db: Path, mode: str, *args: str) -> Iterator[subprocess.Popen]:
    """A real second process with `db` open: "idle" after one query, "write" inside a
    write transaction, "crash" after committing rows (kill -9 it for a stale -wal)."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), mode, *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield p
    finally:
        p.kill()
        p.wait()


def crash_a_writer(db: Path) -> None:
    """Leave the -wal and -shm of a writer killed with committed rows in its WAL."""
    with holding(db, "crash") as p:
        p.send_signal(signal.SIGKILL)
        p.wait()
    wal = db.with_name(db.name + "-wal")
    assert wal.exists() and wal.stat().st_size > 0
    assert db.with_name(db.name + "-shm").exists()


def killed_at(
    kaja: Kaja, step: str, *args: str, sig: int = signal.SIGKILL, seconds: float | None = None
) -> int:
    """Run `kaja wipe --yes ARGS`, stopped by the test hook at `step`, then send `sig`."""
    r = paused.killed_at(kaja, step, "wipe", "--yes", *args, sig=sig, seconds=seconds)
    kaja.last_err = r.stderr  # type: ignore[attr-defined]
    return r.returncode


def image_folders(kaja: Kaja) -> list[str]:
    images = kaja.state / "files" / "images"
    return sorted(os.listdir(images)) if images.is_dir() else []


def sessions_of(kaja: Kaja, owner: str | None, scratch: Path) -> list[str]:
    conn = sqlite3.connect(copy_db(kaja.db, scratch))
    if owner is None:
        rows = conn.execute("SELECT id FROM sessions WHERE owner IS NULL").fetchall()
    else:
        rows = conn.execute("SELECT id FROM sessions WHERE owner = ?", (owner,)).fetchall()
    conn.close()
    return sorted(r[0] for r in rows)


def assert_all_gone(kaja: Kaja) -> None:
    """Nothing of the store is left, `config paths` agrees, and demo starts over."""
    assert not kaja.state.exists(), listing(kaja.state)
    for name, row in paths_json(kaja).items():
        assert row["exists"] is False, name
    assert interrupted(kaja) is None
    r = kaja("demo", "--seed", "1", "--now", DEMO_NOW)
    assert r.code == 0, r
    assert_opens_whole(kaja.db, kaja.root / "scratch-demo")


DEMO_FILES = {"kaja.db", "cache.db", "db-stats.db", "web-auth.db", "files"}


# --- a whole wipe ------------------------------------------------------------------------
def test_wipe_deletes_exactly_the_store_and_keeps_what_is_not_its(demo_store: Kaja):
    kaja = demo_store
    (kaja.state / "my-notes.txt").write_text("not Kaja's")
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text("[memory]\n")
    before = listing(kaja.root)

    r = kaja("wipe", "--yes")

    assert r.code == 0, r
    after = listing(kaja.root)
    gone = {p for p in before if p not in after}
    assert all(after[p] == before[p] for p in after)  # nothing else changed
    store = {p for p in before if p.startswith("state/") and p != "state/my-notes.txt"}
    assert gone == store
    assert {p.split("/")[1] for p in gone} == DEMO_FILES
    assert "state" in after and "config/settings.toml" in after
    assert r.err == (
        f"kaja: keeping {kaja.config}: settings stay (--settings deletes them too)\n"
        f"kaja: deleted {len(gone) - 3} paths ({r.err.split(' paths (')[1]}"
    )  # an image folder is one path


def test_after_a_wipe_nothing_exists_and_demo_starts_over(demo_store: Kaja):
    kaja = demo_store
    assert kaja("wipe", "--yes").code == 0
    assert_all_gone(kaja)  # and the demo wrote a new store: it goes the same way
    assert kaja("wipe", "--yes").code == 0
    assert not kaja.state.exists()
    r = kaja("wipe", "--yes")  # nothing left: not an error
    assert r.code == 0 and "nothing to delete: no Kaja store at" in r.err, r


def test_piped_output_lists_every_path_with_kind_and_size(demo_store: Kaja):
    kaja = demo_store
    r = kaja("wipe", "--dry-run")
    assert r.code == 0, r
    lines = [line.split("\t") for line in r.out.splitlines()]
    assert [(Path(p).relative_to(kaja.root).as_posix(), k) for p, k, _ in lines[:4]] == [
        ("state/kaja.db", "file"),
        ("state/cache.db", "file"),
        ("state/db-stats.db", "file"),
        ("state/web-auth.db", "file"),
    ]
    assert int(lines[0][2]) == kaja.db.stat().st_size
    assert [k for _, k, _ in lines[4:]] == ["tree"] * 3 + ["folder"] * 3
    assert [Path(p).name for p, _, _ in lines[-3:]] == ["images", "files", "state"]
    assert r.err == "kaja: dry run: nothing was deleted\n"


def test_dry_run_deletes_nothing_and_json_lists_what_would_go(demo_store: Kaja):
    kaja = demo_store
    before = listing(kaja.root)
    r = kaja("wipe", "--dry-run", "--json")
    assert r.code == 0, r
    assert listing(kaja.root) == before
    doc = json.loads(r.out)
    assert set(doc) == {
        "action", "dry_run", "done", "paths", "size", "kept", "refused", "interrupted",
    }  # fmt: skip
    assert doc["action"] == "wipe" and doc["dry_run"] is True and doc["done"] is False
    assert doc["refused"] == [] and doc["kept"] == [] and doc["interrupted"] is None
    first = doc["paths"][0]
    assert first == {
        "path": str(kaja.db),
        "what": "shared file",
        "kind": "file",
        "size": kaja.db.stat().st_size,
        "files": 1,
    }
    assert doc["size"] == sum(p["size"] for p in doc["paths"])
    would = {p["path"] for p in doc["paths"]}

    r = kaja("wipe", "--yes", "--json")
    assert r.code == 0, r
    done = json.loads(r.out)
    assert done["done"] is True and done["dry_run"] is False
    assert {p["path"] for p in done["paths"]} == would


def test_no_terminal_and_no_yes_refuses(demo_store: Kaja):
    kaja = demo_store
    before = listing(kaja.root)
    r = kaja("wipe")
    assert r.code == 5, r
    assert r.err == "kaja: not deleting anything without confirmation: rerun with --yes\n"
    assert listing(kaja.root) == before
    r = kaja("wipe", "--owner", ANA)
    assert r.code == 5 and "rerun with --yes" in r.err, r
    assert listing(kaja.root) == before


def test_settings_stay_unless_asked_and_a_symlinked_one_keeps_its_target(demo_store: Kaja):
    kaja = demo_store
    dotfiles = kaja.root / "dotfiles" / "settings.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("[memory]\n")
    kaja.config.parent.mkdir(parents=True)
    kaja.config.symlink_to(dotfiles)

    r = kaja("wipe", "--yes", "--settings", "--json")

    assert r.code == 0, r
    deleted = {p["path"]: p for p in json.loads(r.out)["paths"]}
    assert deleted[str(kaja.config)]["kind"] == "link"
    assert not kaja.config.is_symlink() and not kaja.config.parent.exists()
    assert dotfiles.read_text() == "[memory]\n"


def test_settings_file_goes_with_settings(kaja: Kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text("[memory]\n")
    (kaja.config.parent / "other.toml").write_text("")
    r = kaja("wipe", "--yes", "--settings")
    assert r.code == 0, r
    assert not kaja.config.exists()
    assert (kaja.config.parent / "other.toml").exists()  # its folder is not empty: it stays


def test_wipe_settings_takes_the_lock_config_set_left_and_the_folder_goes(kaja: Kaja):
    assert kaja("config", "set", "memory.dbPath", str(kaja.root / "k.db")).code == 0
    lock = kaja.config.with_name(".settings.toml.lock")
    assert lock.is_file()  # left by `config set` (a sidecar flock)
    r = kaja("wipe", "--yes", "--settings", "--json")
    assert r.code == 0, r
    kinds = {p["path"]: p["kind"] for p in json.loads(r.out)["paths"]}
    assert kinds[str(lock)] == "file"
    assert not lock.exists() and not kaja.config.parent.exists()


# --- files/ ------------------------------------------------------------------------------
def test_a_symlinked_files_folder_loses_the_link_and_keeps_its_target(demo_store: Kaja):
    kaja = demo_store
    target = kaja.root / "elsewhere" / "files"
    target.parent.mkdir()
    shutil.move(kaja.state / "files", target)
    (kaja.state / "files").symlink_to(target)
    before = listing(target)

    r = kaja("wipe", "--yes")

    assert r.code == 0, r
    assert not (kaja.state / "files").is_symlink()
    assert listing(target) == before and len(before) == 7
    assert not kaja.state.exists()


def test_unknown_things_in_files_stay_and_so_do_their_folders(demo_store: Kaja):
    kaja = demo_store
    images = kaja.state / "files" / "images"
    known = image_folders(kaja)
    (images / "not-a-session").mkdir()
    (images / "not-a-session" / "photo.png").write_bytes(b"\x89PNG mine")
    stranger = "01a20000-0000-7000-8000-000000000000"  # shaped like an id, not one of ours
    (images / stranger).mkdir()
    (images / stranger / ("0" * 64 + ".png")).write_bytes(b"x")
    (kaja.state / "files" / "todo.txt").write_text("mine")
    # A known session's folder that is a link: the link goes, the target stays.
    outside = kaja.root / "outside-images"
    shutil.move(images / known[0], outside)
    (images / known[0]).symlink_to(outside)
    outside_before = listing(outside)

    r = kaja("wipe", "--yes")

    assert r.code == 0, r
    assert sorted(os.listdir(kaja.state)) == ["files"]
    assert sorted(os.listdir(kaja.state / "files")) == ["images", "todo.txt"]
    assert image_folders(kaja) == sorted(["not-a-session", stranger])
    assert (images / "not-a-session" / "photo.png").read_bytes() == b"\x89PNG mine"
    assert listing(outside) == outside_before
    assert f"kaja: keeping {images / 'not-a-session'}: not a session of this store\n" in r.err
    assert f"kaja: keeping {kaja.state / 'files' / 'todo.txt'}: not something kaja" in r.err


def test_a_files_entry_that_is_not_a_folder_stays(kaja: Kaja):
    assert kaja("demo", "--seed", "1", "--now", DEMO_NOW, "--sessions", "1").code == 0
    shutil.rmtree(kaja.state / "files", ignore_errors=True)
    (kaja.state / "files").write_text("a file of mine called files")
    r = kaja("wipe", "--yes")
    assert r.code == 0, r
    assert sorted(os.listdir(kaja.state)) == ["files"]


# --- refusals ----------------------------------------------------------------------------
def _unsafe_db(kaja: Kaja, case: str) -> tuple[Path, str]:
    if case == "folder":
        folder = kaja.root / "some-folder"
        folder.mkdir()
        (folder / "thesis.md").write_text("years of work")
        return folder, "is a folder, not a Kaja database"
    if case == "home":
        (kaja.home / "thesis.md").write_text("years of work")
        return kaja.home, "is your home folder, not a Kaja database"
    if case == "passwd":
        copy = kaja.root / "passwd"
        shutil.copy("/etc/passwd", copy)
        return copy, "is not a SQLite database"
    if case == "symlink":
        link = kaja.root / "link.db"
        link.symlink_to(kaja.db)
        return link, "is a symbolic link: kaja wipe deletes no file through a link"
    if case == "foreign-sqlite":
        other = kaja.root / "places.sqlite"
        conn = sqlite3.connect(other)
        conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
        conn.execute("INSERT INTO moz_places (url) VALUES ('https://example.org')")
        conn.commit()
        conn.close()
        return other, "is a SQLite database, but not Kaja's"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["folder", "home", "passwd", "symlink", "foreign-sqlite"])
def test_an_unsafe_db_path_is_refused_and_nothing_is_deleted(demo_store: Kaja, case: str):
    kaja = demo_store
    path, reason = _unsafe_db(kaja, case)
    before = listing(kaja.root)

    r = kaja("--db", str(path), "wipe", "--yes")

    assert r.code == 5, r
    assert r.err == f"kaja: {path} {reason}" + r.err.split(reason, 1)[1]
    assert r.err.endswith(": nothing was deleted\n") and r.err.count("\n") == 1
    assert listing(kaja.root) == before  # the side databases too


def test_a_refusal_in_json_names_the_path_and_exit(demo_store: Kaja):
    kaja = demo_store
    path, _ = _unsafe_db(kaja, "passwd")
    r = kaja("--db", str(path), "wipe", "--dry-run", "--json")
    assert r.code == 5, r
    doc = json.loads(r.out)
    assert doc["refused"] == [
        {"path": str(path), "reason": f"{path} is not a SQLite database", "exit": 5}
    ]


@pytest.mark.parametrize("mode", ["idle", "write"])
def test_a_second_process_holding_the_store_means_exit_4(demo_store: Kaja, mode: str):
    kaja = demo_store
    with holding(kaja.db, mode) as p:
        before = listing(kaja.root)
        r = kaja("wipe", "--yes")
        assert r.code == 4, r
        assert r.err == (
            f"kaja: Kaja (or the Telegram bot) is using the store: {kaja.db} is open in"
            f" process {p.pid}: close it first; nothing was deleted\n"
        )
        assert listing(kaja.root) == before
        assert kaja("wipe", "--dry-run").code == 4


def test_a_second_process_holding_a_side_database_means_exit_4(demo_store: Kaja):
    kaja = demo_store
    with holding(kaja.state / "cache.db", "idle"):
        before = listing(kaja.root)
        r = kaja("wipe", "--yes")
        assert r.code == 4, r
        assert "cache.db is open in process" in r.err
        assert listing(kaja.root) == before


def test_a_stale_wal_after_a_killed_writer_is_not_in_use(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    crash_a_writer(kaja.db)
    r = kaja("wipe", "--yes", "--json")
    assert r.code == 0, r
    assert_all_gone(kaja)


# --- interrupted -------------------------------------------------------------------------
def _first_image(kaja: Kaja) -> str:
    return image_folders(kaja)[0]


@pytest.mark.parametrize(
    "step", ["kaja.db", "cache.db", "web-auth.db", "first-image", "kaja.db.wiping"]
)
def test_kill_9_at_any_step_leaves_what_the_next_wipe_finishes(demo_store: Kaja, step: str):
    kaja = demo_store
    crash_a_writer(kaja.db)  # a WAL with committed rows the whole store must keep
    step = _first_image(kaja) if step == "first-image" else step

    assert killed_at(kaja, step) == -signal.SIGKILL

    # Every database still there opens whole; a shared file still there has
    # the crashed writer's rows and no journal left beside it.
    for name in ("kaja.db", "cache.db", "db-stats.db", "web-auth.db"):
        if (kaja.state / name).exists():
            conn = assert_opens_whole(kaja.state / name, kaja.root / f"scratch-{name}")
            if name == "kaja.db":
                assert conn.execute(
                    "SELECT COUNT(*) FROM notes WHERE key LIKE 'crashed-writer-%'"
                ).fetchone() == (40,)
    assert not (kaja.state / "kaja.db-wal").exists()
    left = interrupted(kaja)
    assert left is not None and left.commands == ("kaja wipe",)
    assert "`kaja wipe` (started " in left.summary
    r = kaja("wipe", "--dry-run")
    assert r.code == 0 and "kaja: this wipe also finishes: `kaja wipe` (started" in r.err, r

    r = kaja("wipe", "--yes")

    assert r.code == 0, r
    assert_all_gone(kaja)


def test_an_interrupted_wipe_finishes_image_folders_once_the_database_is_gone(
    demo_store: Kaja,
):
    kaja = demo_store
    last = image_folders(kaja)[-1]
    assert killed_at(kaja, last) == -signal.SIGKILL
    assert not kaja.db.exists() and image_folders(kaja) == [last]
    # The shared file is gone: only the marker says whose this folder was.
    assert kaja("wipe", "--yes").code == 0
    assert_all_gone(kaja)


def test_a_damaged_database_goes_but_its_images_cannot_be_told_apart(demo_store: Kaja):
    kaja = demo_store
    data = bytearray(kaja.db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page is garbage
    kaja.db.write_bytes(bytes(data))

    r = kaja("wipe", "--yes")

    assert r.code == 0, r
    assert sorted(os.listdir(kaja.state)) == ["files"]
    assert len(image_folders(kaja)) == 3  # no session ids to know them by: they stay
    assert r.err.count("the shared file can't be read to tell whose it is") == 3


def test_a_database_sqlite_cannot_fold_goes_before_its_journal(
    demo_store: Kaja, monkeypatch: pytest.MonkeyPatch
):
    """In-process: when SQLite can't fold the journal in (a read-only folder, an
    I/O error: nothing a test running as root can make happen for real), the
    database is deleted, and the deletion made durable, before its -wal."""
    from kaja_cli.core.care.wipe import whole as wipe
    from kaja_cli.core.engine import db, fs
    from kaja_cli.core.store import Store

    kaja = demo_store
    crash_a_writer(kaja.db)
    events: list[str] = []
    real_remove, real_fsync = wipe._remove, fs.fsync_dir
    monkeypatch.setattr(db, "fold_journal", lambda path, file, **kw: False)
    monkeypatch.setattr(
        wipe, "_remove", lambda item: events.append(item.path.name) or real_remove(item)
    )
    monkeypatch.setattr(fs, "fsync_dir", lambda p: events.append("fsync") or real_fsync(p))
    store = Store(core_paths(kaja))

    wipe.execute(store, wipe.plan(store))

    assert events[:6] == ["fsync", "kaja.db", "fsync", "kaja.db-wal", "kaja.db-shm", "fsync"]
    assert not kaja.state.exists()


def test_ctrl_c_waits_for_the_database_and_its_journal_then_stops(demo_store: Kaja):
    kaja = demo_store
    code = killed_at(kaja, "kaja.db", sig=signal.SIGINT)
    assert code == 130
    assert kaja.last_err == (  # type: ignore[attr-defined]
        "kaja: wipe interrupted: 9 of 10 paths remain: run `kaja wipe` again to finish\n"
    )
    assert not kaja.db.exists() and (kaja.state / "cache.db").exists()
    assert kaja("wipe", "--yes").code == 0
    assert_all_gone(kaja)


def test_interrupted_is_none_for_a_whole_store_and_names_an_orphan_journal(demo_store: Kaja):
    kaja = demo_store
    assert interrupted(kaja) is None
    (kaja.state / "cache.db").unlink()
    (kaja.state / "cache.db-wal").write_bytes(b"x")
    left = interrupted(kaja)
    assert left is not None
    assert left.details == (f"cache.db-wal outlived the cache.db {kaja.state / 'cache.db'}",)
    assert left.remaining == (kaja.state / "cache.db-wal",)


# --- one owner ---------------------------------------------------------------------------
def expected_after_erasing(before, owner: str):
    ids = {s["id"] for s in rows_of(before, "sessions") if s["owner"] == owner}
    msgs = {m["id"] for m in rows_of(before, "messages") if m["sessionId"] in ids}
    keep = {
        "sessions": lambda r: r["owner"] != owner,
        "messages": lambda r: r["sessionId"] not in ids,
        "tool_calls": lambda r: r["messageId"] not in msgs,
        "session_summaries": lambda r: r["sessionId"] not in ids,
        "model_calls": lambda r: r["sessionId"] not in ids,
        "session_events": lambda r: r["sessionId"] not in ids,
        "notes": lambda r: r["owner"] != owner,
        "dataset_answers": lambda r: r["owner"] != owner,
        "dataset_versions": lambda r: r["owner"] != owner,
        "conversation_threads": lambda r: r["resource_id"] != owner and r["thread_id"] not in ids,
    }
    out = {}
    for table, (cols, rows) in before.items():
        if table in keep:
            rows = [r for r in rows if keep[table](dict(zip(cols, r, strict=True)))]
        out[table] = (cols, rows)
    return out, ids


def search_count(db: Path, word: str, scratch: Path) -> int:
    conn = sqlite3.connect(copy_db(db, scratch))
    n = conn.execute(
        "SELECT COUNT(*) FROM conversation_text WHERE conversation_text MATCH ?", (word,)
    ).fetchone()[0]
    conn.execute("INSERT INTO conversation_text(conversation_text) VALUES ('integrity-check')")
    conn.close()
    return n


def test_owner_erases_exactly_that_owner(demo_store: Kaja):
    kaja = demo_store
    before = snapshot(kaja.db, kaja.root / "s1")
    expected, ids = expected_after_erasing(before, ANA)
    assert len(ids) == 3
    ana_images = [f for f in image_folders(kaja) if f in ids]
    assert len(ana_images) == 1
    files_before = listing(kaja.state / "files")
    assert search_count(kaja.db, "garbanzos", kaja.root / "s2") > 0
    marathon = search_count(kaja.db, "marathon", kaja.root / "s3")
    assert marathon > 0

    r = kaja("wipe", "--owner", ANA, "--yes")

    assert r.code == 0, r
    erased = sum(len(before[t][1]) - len(expected[t][1]) for t in before)
    assert r.err.endswith(f"\nkaja: erased {erased} rows and 1 image folder of {ANA}\n")
    after = snapshot(kaja.db, kaja.root / "s4")
    assert after == expected
    assert not [s for s in rows_of(after, "sessions") if s["owner"] == ANA]
    assert search_count(kaja.db, "garbanzos", kaja.root / "s5") == 0
    assert search_count(kaja.db, "marathon", kaja.root / "s6") == marathon
    files_after = listing(kaja.state / "files")
    assert set(files_before) - set(files_after) == {
        p for p in files_before if p.startswith(f"images/{ana_images[0]}")
    }
    assert all(files_after[p] == files_before[p] for p in files_after)
    assert_opens_whole(kaja.db, kaja.root / "s7")
    assert (kaja.state / "cache.db").exists() and interrupted(kaja) is None


def test_owner_dry_run_erases_nothing_and_json_counts_per_table(demo_store: Kaja):
    kaja = demo_store
    before = listing(kaja.root)
    r = kaja("wipe", "--owner", ANA, "--dry-run", "--json")
    assert r.code == 0, r
    assert listing(kaja.root) == before
    doc = json.loads(r.out)
    assert doc["action"] == "wipe-owner" and doc["owner"] == ANA
    assert doc["dry_run"] is True and doc["done"] is False
    assert doc["rows"] == {
        "sessions": 3, "messages": 11, "tool_calls": 1, "session_summaries": 0,
        "model_calls": 0, "session_events": 0, "notes": 2, "dataset_answers": 3,
        "dataset_versions": 1, "conversation_threads": 3,
    }  # fmt: skip
    assert [Path(p).parent for p in doc["image_folders"]] == [kaja.state / "files" / "images"]
    # the ledger rows of their runs are named too: a forgotten person can see what stays
    assert {k["table"]: k["rows"] for k in doc["kept_rows"]} == {
        "runs": 4, "calls": 4, "tools": 1, "events": 12, "logs": 4, "media": 1, "feedback": 1,
        "schedules": 1,
    }  # fmt: skip
    assert doc["interrupted"] is None

    r = kaja("wipe", "--owner", ANA, "--dry-run")
    assert r.code == 0, r
    assert "sessions\t3\n" in r.out and r.out.endswith("image_folders\t1\n")
    assert f"kaja: keeping 4 runs rows that refer to {ANA} (usage ledger)" in r.err


def test_owner_counts_of_one_read_in_the_singular(demo_store: Kaja):
    r = demo_store("wipe", "--owner", ANA, "--dry-run")
    assert r.code == 0, r
    kept = [line for line in r.err.splitlines() if line.startswith("kaja: keeping ")]
    assert f"kaja: keeping 1 tools row that refers to {ANA} (usage ledger)" in kept
    assert f"kaja: keeping 4 runs rows that refer to {ANA} (usage ledger)" in kept
    assert not [line for line in kept if line.startswith("kaja: keeping 1 ") and " rows " in line]


def test_owner_kept_ledger_rows_are_the_runs_usage_counts_as_theirs(demo_store: Kaja):
    # The ledger's rule (a subagent's run with no thread is its parent's
    # owner's): the kept list names the same runs and calls `runs --owner`
    # and `usage --owner` read, the demo's thread-less subagent run among them.
    kaja = demo_store
    r = kaja("wipe", "--owner", "terminal", "--dry-run", "--json")
    assert r.code == 0, r
    kept = {k["table"]: k["rows"] for k in json.loads(r.out)["kept_rows"]}
    runs = kaja("runs", "--owner", "terminal", "--subagents", "--limit", "0", "--json")
    usage = kaja("usage", "--owner", "terminal", "--json")
    assert runs.code == 0 and usage.code == 0, (runs, usage)
    listed = json.loads(runs.out)["runs"]
    assert any(not run.get("thread_id") for run in listed)  # a subagent's, no thread
    assert kept["runs"] == len(listed)
    assert kept["calls"] == sum(g["calls"] for g in json.loads(usage.out)["groups"])


def test_owner_terminal_erases_the_terminals_rows_only(demo_store: Kaja):
    kaja = demo_store
    before = snapshot(kaja.db, kaja.root / "s1")
    r = kaja("wipe", "--owner", "terminal", "--yes", "--json")
    assert r.code == 0, r
    after = snapshot(kaja.db, kaja.root / "s2")
    assert [s["owner"] for s in rows_of(after, "sessions")] == [
        s["owner"] for s in rows_of(before, "sessions") if s["owner"] is not None
    ]
    assert {n["owner"] for n in rows_of(after, "notes")} == {ANA, BJORN, "widget:ab12"}
    assert rows_of(after, "runs") == rows_of(before, "runs")
    assert len(json.loads(r.out)["image_folders"]) == 2


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--owner", "telegram:999"], 3, "kaja: nothing stored for owner telegram:999: "),
        (["--owner", ""], 2, "kaja: --owner is empty: say --owner terminal"),
        (["--owner", ANA, "--settings"], 2, "kaja: --settings deletes the settings file"),
    ],
)
def test_owner_usage_and_not_found(demo_store: Kaja, args, code, message):
    kaja = demo_store
    before = listing(kaja.root)
    r = kaja("wipe", *args, "--yes")
    assert r.code == code, r
    assert r.err.startswith(message) and r.err.count("\n") == 1, r
    assert listing(kaja.root) == before


def test_owner_without_a_store_is_not_found(kaja: Kaja):
    r = kaja("wipe", "--owner", ANA, "--yes")
    assert r.code == 3, r
    assert r.err.startswith(f"kaja: no Kaja store at {kaja.db}")


def test_owner_waits_for_the_agent_to_commit(demo_store: Kaja):
    kaja = demo_store
    with holding(kaja.db, "commit-later", "0.7"):
        started = time.monotonic()
        r = kaja("wipe", "--owner", ANA, "--yes")
        assert r.code == 0, r
        assert time.monotonic() - started > 0.5  # it waited for the lock
    after = snapshot(kaja.db, kaja.root / "s1")
    assert {n["key"] for n in rows_of(after, "notes")} >= {"late"}


def test_owner_gives_up_with_exit_4_when_the_agent_keeps_writing(demo_store: Kaja):
    kaja = demo_store
    with holding(kaja.db, "write"):
        before = listing(kaja.root)
        r = kaja("wipe", "--owner", ANA, "--yes")
        assert r.code == 4, r
        assert r.err.splitlines()[-1] == (
            f"kaja: {kaja.db} is busy: another process (Kaja or the Telegram bot) is writing;"
            " try again, or close it first"
        )
        assert listing(kaja.root) == before


def test_owner_killed_before_the_commit_erases_nothing(demo_store: Kaja):
    kaja = demo_store
    before = snapshot(kaja.db, kaja.root / "s1")
    folders = image_folders(kaja)
    assert killed_at(kaja, "commit", "--owner", ANA) == -signal.SIGKILL
    assert snapshot(kaja.db, kaja.root / "s2") == before
    assert image_folders(kaja) == folders
    left = interrupted(kaja)
    assert left is not None and "stopped before its commit" in left.summary
    assert left.commands == (f"kaja wipe --owner {ANA}",)
    assert kaja("wipe", "--owner", ANA, "--yes").code == 0
    assert snapshot(kaja.db, kaja.root / "s3") == expected_after_erasing(before, ANA)[0]
    assert len(image_folders(kaja)) == 2 and interrupted(kaja) is None


def test_owner_killed_after_the_commit_leaves_folders_the_next_run_removes(demo_store: Kaja):
    kaja = demo_store
    before = snapshot(kaja.db, kaja.root / "s1")
    expected, ids = expected_after_erasing(before, ANA)
    (ana_folder,) = [f for f in image_folders(kaja) if f in ids]
    assert killed_at(kaja, "images", "--owner", ANA) == -signal.SIGKILL
    assert snapshot(kaja.db, kaja.root / "s2") == expected
    assert ana_folder in image_folders(kaja)
    left = interrupted(kaja)
    assert left is not None and "stopped after its commit with 1 image folder left" in left.summary

    r = kaja("wipe", "--owner", ANA, "--dry-run")
    assert r.code == 0 and "image_folders\t1" in r.out, r  # nothing in the rows, one folder
    assert kaja("wipe", "--owner", ANA, "--yes").code == 0
    assert ana_folder not in image_folders(kaja) and len(image_folders(kaja)) == 2
    assert interrupted(kaja) is None
    r = kaja("wipe", "--owner", ANA, "--yes")
    assert r.code == 3, r


def test_a_whole_wipe_also_finishes_an_owners_leftovers(demo_store: Kaja):
    kaja = demo_store
    assert killed_at(kaja, "images", "--owner", ANA) == -signal.SIGKILL
    assert kaja("wipe", "--yes").code == 0
    assert_all_gone(kaja)


def test_owner_refused_while_a_whole_wipe_is_unfinished(demo_store: Kaja):
    kaja = demo_store
    assert killed_at(kaja, "kaja.db") == -signal.SIGKILL
    r = kaja("wipe", "--owner", ANA, "--yes")
    assert r.code == 5, r
    assert r.err.startswith("kaja: an interrupted `kaja wipe` has not finished: run `kaja wipe`")


def test_demo_refuses_to_start_over_until_an_interrupted_wipe_is_finished(demo_store: Kaja):
    kaja = demo_store
    assert killed_at(kaja, "cache.db") == -signal.SIGKILL
    r = kaja("demo")
    assert r.code == 5 and "an interrupted wipe is not finished" in r.err, r
    assert kaja("wipe", "--yes").code == 0
    assert kaja("demo").code == 0


def test_after_a_wipe_nothing_is_listed_and_demo_starts_over(demo_store: Kaja):
    kaja = demo_store
    assert kaja("wipe", "--yes").code == 0
    paths = json.loads(kaja("config", "paths", "--json").out)["paths"]
    assert not any(p["exists"] for name, p in paths.items() if name != "settings")
    r = kaja("sessions")
    assert r.code == 0 and r.out == "" and "there is no Kaja store" in r.err, r
    r = kaja("sessions", "--json")
    assert r.code == 0 and json.loads(r.out)["sessions"] == []
    assert kaja("demo").code == 0
    assert len(kaja("sessions", "--all-owners", "--limit", "0").out.splitlines()) == 13


def test_doctor_describes_an_interrupted_wipe(demo_store: Kaja):
    kaja = demo_store
    assert killed_at(kaja, "cache.db") == -signal.SIGKILL
    r = kaja("doctor", "--json", "--check", "interrupted-wipe")
    check = next(c for c in json.loads(r.out)["checks"] if c["id"] == "interrupted-wipe")
    assert check["status"] == "warn", check
    assert "kaja wipe" in check["summary"] and check["fix"] == "`kaja wipe`"
    assert kaja("wipe", "--yes").code == 0
    r = kaja("doctor", "--json", "--check", "interrupted-wipe")
    check = next(c for c in json.loads(r.out)["checks"] if c["id"] == "interrupted-wipe")
    assert (check["status"], check["summary"]) == ("ok", "no unfinished wipe")


def test_wipe_owner_leaves_none_of_their_words_in_the_file(demo_store: Kaja):
    """The search index deletes by markers; with Kaja closed, the owner's
    words leave the file itself (the index is merged, freed pages zeroed)."""
    kaja = demo_store
    c = sqlite3.connect(kaja.db)
    with c:
        sid = c.execute("SELECT id FROM sessions WHERE owner = ? LIMIT 1", (ANA,)).fetchone()[0]
        c.execute(
            "INSERT INTO messages (id, sessionId, seq, role, content) VALUES ('m-secret', ?, 99, 'user',"
            " 'my zqxjkfoobar passport number')", (sid,),
        )  # fmt: skip
    c.close()
    assert b"zqxjkfoobar" in kaja.db.read_bytes()
    r = kaja("wipe", "--owner", ANA, "--yes", "--json")
    assert r.code == 0 and json.loads(r.out)["index_purged"] is True, r
    data = kaja.db.read_bytes()
    wal = kaja.state / "kaja.db-wal"
    data += wal.read_bytes() if wal.exists() else b""
    assert b"zqxjkfoobar" not in data
    assert kaja("search", "zqxjkfoobar", "--all-owners").out == ""


def test_another_programs_database_with_a_common_table_name_is_refused(kaja: Kaja):
    """`--db myapp.db` whose only table is called `notes`: not Kaja's, nothing deleted."""
    other = kaja.root / "myapp.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    c.execute("INSERT INTO notes (body) VALUES ('my own notes')")
    c.commit()
    c.close()
    r = kaja("--db", str(other), "wipe", "--yes")
    assert r.code == 5 and "not Kaja's" in r.err, r
    assert other.exists()


def test_wipe_owner_reads_no_growing_table_whole(demo_store: Kaja, monkeypatch):
    """Issue 29: `wipe --owner` of one owner costs what that owner has, not the
    store: each of its questions about the usage ledger found the owner's runs
    by `runs.thread_id`, which had no index (a full scan of every run, six
    times over). Every statement it runs is planned on the store: no SCAN of
    a table that grows with it."""
    from tests.support.plans import full_scans, traced_statements

    r, seen = traced_statements(demo_store, monkeypatch, "wipe", "--owner", "telegram:482913",
                                "--dry-run")  # fmt: skip
    assert r.code == 0, r
    assert any("FROM runs" in s for s in seen)  # the ledger was asked about
    assert full_scans(demo_store.db, seen) == []
