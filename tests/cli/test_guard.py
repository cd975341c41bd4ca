"""kaja's one rule of what it may write, convert, chmod or delete (core/guard.py),
and never blocking on what it opens (core/fs.py `open_regular`, core/db.py).

Through the real `kaja`: another program's database is read and never
changed, the store is never overwritten by a file kaja writes on request,
only regular files and folders kaja made are chmod'ed, nothing is deleted
through a symlink, and a FIFO or a device anywhere kaja looks is reported,
never opened. FIFOs and devices run the installed command as a process with
a timeout: a hang must fail the test, not the test run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
from contextlib import closing
from pathlib import Path

import pytest

ANA = "telegram:482913"  # the demo's Telegram user with an image


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(root: Path) -> dict[str, str]:
    """Every path under `root` with its content's hash ("dir" for folders)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "link -> " + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        elif p.is_file():
            out[rel] = digest(p)
    return out


def one_line(r) -> None:
    assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, r


def terminal_session(kaja) -> str:
    with closing(sqlite3.connect(kaja.db)) as c, c:
        return c.execute(
            "SELECT id FROM sessions WHERE owner IS NULL ORDER BY updatedAt DESC LIMIT 1"
        ).fetchone()[0]


def places(path: Path) -> Path:
    """Another program's database (Firefox's history): no table of Kaja's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as c, c:
        c.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT, title TEXT)")
        c.execute("INSERT INTO moz_places (url, title) VALUES ('https://example.org', 'hello')")
    c.close()
    return path


def chat_app(path: Path) -> Path:
    """Another chat program's database: tables named `sessions` and `messages`,
    `messages(content)` even, but not the columns Kaja's agent writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as c, c:
        c.execute("CREATE TABLE sessions (uid INTEGER PRIMARY KEY, started TEXT)")
        c.execute("CREATE TABLE messages (mid INTEGER PRIMARY KEY, chat INTEGER, content TEXT)")
        c.execute("INSERT INTO messages (chat, content) VALUES (1, 'hello there')")
    c.close()
    return path


# --- another program's database: read, never changed ----------------------------------------
def test_doctor_fix_never_converts_another_programs_database(kaja, tmp_path):
    f = places(tmp_path / "firefox" / "places.sqlite")
    before = digest(f)
    r = kaja("--db", str(f), "doctor", "--fix")
    assert r.code == 1, r
    assert (
        "places.sqlite: a SQLite database, but not Kaja's shared file (its tables: moz_places)"
        in r.out
    )
    assert "switched to WAL" not in r.out + r.err and "created table" not in r.out + r.err
    assert digest(f) == before
    assert sorted(p.name for p in f.parent.iterdir()) == ["places.sqlite"]  # no -wal, no -shm
    with closing(sqlite3.connect(f)) as c, c:
        assert c.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["moz_places"]
    # ... so the wipe that refused it still refuses it: it is never deleted.
    r = kaja("--db", str(f), "wipe", "--yes")
    assert r.code == 5, r
    assert "not Kaja's" in r.err and f.exists() and digest(f) == before


@pytest.mark.parametrize("make", [places, chat_app], ids=["places", "chat-app"])
def test_no_writing_command_changes_another_programs_database(kaja, tmp_path, make):
    f = make(tmp_path / "other" / "data.sqlite")
    before = digest(f)
    for argv in (
        ["search", "--reindex"],
        ["usage", "reset", "--yes"],
        ["sessions", "delete", "1", "--yes"],
        ["wipe", "--owner", "telegram:1", "--yes"],
        ["wipe", "--yes"],
        ["wipe", "--dry-run"],
    ):
        r = kaja("--db", str(f), *argv)
        assert r.code == 5, (argv, r)
        one_line(r)
        assert "not Kaja's" in r.err, (argv, r)
        assert digest(f) == before, argv
    assert sorted(p.name for p in f.parent.iterdir()) == ["data.sqlite"]


def test_searching_another_programs_messages_adds_nothing_to_it(kaja, tmp_path):
    f = chat_app(tmp_path / "chat" / "chat.sqlite")
    before = digest(f)
    r = kaja("--db", str(f), "search", "hello", "--all-owners")
    assert r.code == 0, r
    assert (
        "by scanning its 1 message: it is not Kaja's store, so kaja adds no search index" in r.err
    )
    assert "hello there" in r.out
    assert digest(f) == before
    with closing(sqlite3.connect(f)) as c, c:
        assert c.execute("SELECT count(*) FROM sqlite_master").fetchone() == (2,)


def test_doctor_fix_leaves_a_foreign_side_database_alone(demo_store):
    cache = demo_store.state / "cache.db"
    for p in cache.parent.glob("cache.db*"):
        p.unlink()
    with closing(sqlite3.connect(cache)) as c, c:
        c.execute("CREATE TABLE shared_cache (k, v)")  # Kaja's name, not Kaja's columns
    c.close()
    before = digest(cache)
    r = demo_store("doctor", "--fix")
    assert r.code == 1, r
    assert (
        "cache.db: a SQLite database, but not Kaja's cache.db (its tables: shared_cache)" in r.out
    )
    assert digest(cache) == before
    with closing(sqlite3.connect(cache)) as c, c:
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["shared_cache"]


def test_an_older_store_is_still_kajas(kaja):
    """Recognised by columns, not every column: an older agent's file is upgraded."""
    kaja.state.mkdir(parents=True)
    with closing(sqlite3.connect(kaja.db)) as c, c:
        c.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, title)")
        c.execute("CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, role, content)")
    c.close()
    r = kaja("search", "--reindex")
    assert r.code == 0, r
    with closing(sqlite3.connect(kaja.db)) as c, c:
        assert c.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# --- files kaja writes on request: never the store --------------------------------------------
def test_export_never_writes_over_the_store(demo_store, tmp_path):
    kaja = demo_store
    sid = terminal_session(kaja)
    # The agent's last turn, not yet checkpointed: it lives in the -wal alone.
    agent = sqlite3.connect(kaja.db)
    agent.execute("PRAGMA journal_mode = WAL")
    agent.execute("PRAGMA wal_autocheckpoint = 0")
    agent.execute("UPDATE sessions SET title = 'written by the agent' WHERE id = ?", (sid,))
    agent.commit()
    wal = kaja.db.with_name("kaja.db-wal")
    assert wal.stat().st_size > 0
    os.link(kaja.db, tmp_path / "hard-link.md")
    (tmp_path / "link.md").symlink_to(kaja.db)
    before = tree(kaja.state)
    for target in (
        kaja.db,
        wal,
        kaja.db.with_name("kaja.db-journal"),
        kaja.state / "cache.db",
        kaja.state / "kaja.db.wiping",
        kaja.state / "kaja.db.restoring",
        kaja.state / "files" / "images" / "x.md",
        kaja.state / ".." / "state" / "kaja.db",
        tmp_path / "hard-link.md",
        tmp_path / "link.md",
    ):
        r = kaja("sessions", "export", sid, "-o", str(target))
        assert r.code == 5, (target, r)
        one_line(r)
        assert "is part of Kaja's store" in r.err and "never writes a transcript over it" in r.err
    assert tree(kaja.state) == before
    assert agent.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0
    agent.close()
    r = kaja("sessions", "--json")
    assert "written by the agent" in r.out


def test_export_to_a_fifo_or_a_device_is_refused_without_blocking(demo_store, tmp_path):
    sid = terminal_session(demo_store)
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    for target in (fifo, Path(os.devnull)):
        start = time.monotonic()
        r = demo_store.proc("sessions", "export", sid, "-o", str(target), timeout=30)
        assert r.code == 5, r
        assert "not a regular file" in r.err, r
        assert time.monotonic() - start < 20
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


# --- chmod: regular files, and folders kaja made ------------------------------------------------
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


@needs_root
@pytest.mark.process  # a device: only the real command
def test_doctor_fix_never_chmods_a_device(kaja, tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(dev, 0o666)
    r = kaja("--db", str(dev), "doctor", "--fix", timeout=60)
    assert r.code == 1, r
    assert f"{dev} is a character device, not a SQLite database" in r.out
    assert "tightened" not in r.out + r.err
    assert stat.S_IMODE(dev.stat().st_mode) == 0o666


def state_dir_check(kaja, env=None) -> dict:
    r = kaja("doctor", "--json", "--check", "paths.state_dir", env=env)
    (check,) = json.loads(r.out)["checks"]
    return check


def test_doctor_fix_never_chmods_a_shared_or_home_folder(demo_store):
    state = demo_store.state
    state.chmod(0o1777)
    r = demo_store("doctor", "--fix")
    assert "tightened" not in r.out + r.err, r
    assert stat.S_IMODE(state.stat().st_mode) == 0o1777
    check = state_dir_check(demo_store)
    assert check["status"] == "ok" and not check["fixable"], check
    assert (
        "kaja leaves its mode as it is (a shared folder (sticky bit, like /tmp))"
        in check["details"][-1]
    )
    # The home folder as the state dir: its mode is the user's business.
    home = demo_store.home
    for p in state.iterdir():
        p.rename(home / p.name)
    home.chmod(0o755)
    env = {"KAJA_STATE_DIR": str(home)}
    r = demo_store("doctor", "--fix", env=env)
    assert "tightened" not in r.out + r.err, r
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    assert "(your home folder)" in state_dir_check(demo_store, env)["details"][-1]


def test_doctor_fix_leaves_a_folder_holding_what_kaja_did_not_make(demo_store):
    state = demo_store.state
    (state / "notes-of-mine.txt").write_text("mine")
    state.chmod(0o755)
    demo_store("doctor", "--fix")
    assert stat.S_IMODE(state.stat().st_mode) == 0o755
    check = state_dir_check(demo_store)
    assert "(it holds notes-of-mine.txt, which kaja did not create)" in check["details"][-1]
    # Without it, the folder holds only what kaja makes, and --fix tightens it.
    (state / "notes-of-mine.txt").unlink()
    assert state_dir_check(demo_store)["fixable"]
    r = demo_store("doctor", "--fix")
    assert stat.S_IMODE(state.stat().st_mode) == 0o700, r


# --- never delete through a symlink ------------------------------------------------------------
@pytest.mark.parametrize("linked", ["files", "files/images"])
def test_no_image_folder_is_deleted_through_a_symlink(demo_store, tmp_path, linked):
    kaja = demo_store
    real = tmp_path / "elsewhere"
    shutil_move(kaja.state / linked, real)
    (kaja.state / linked).symlink_to(real)
    before = tree(real)
    assert before  # the demo's image folders are there, behind the link
    sid = terminal_session(kaja)
    r = kaja("sessions", "delete", sid, "--yes")
    assert r.code == 0, r
    assert "keeping their image folders" in r.err and "is a symbolic link" in r.err
    r = kaja("wipe", "--owner", ANA, "--yes", "--json")
    assert r.code == 0, r
    assert '"image_folders":[]' in r.out and '"images_link":' in r.out
    assert tree(real) == before
    with closing(sqlite3.connect(kaja.db)) as c, c:
        assert c.execute("SELECT count(*) FROM sessions WHERE owner = ?", (ANA,)).fetchone() == (0,)


def shutil_move(src: Path, dest: Path) -> None:
    import shutil

    shutil.move(str(src), str(dest))


# --- never block: a FIFO or a device where a file should be ---------------------------------------
def run_bounded(kaja, *argv, env=None):
    start = time.monotonic()
    r = kaja.proc(*argv, timeout=30, env=env)
    assert time.monotonic() - start < 20, (argv, r)
    return r


def test_a_fifo_as_the_database_is_reported_never_opened(kaja, tmp_path):
    fifo = tmp_path / "kaja.db"
    os.mkfifo(fifo)
    for argv, code in [
        (["sessions"], 1),
        (["resume", "-c"], 1),
        (["search", "hello"], 1),
        (["usage"], 1),
        (["usage", "reset", "--yes"], 5),
        (["sessions", "delete", "x", "--yes"], 5),
        (["wipe", "--owner", "telegram:1", "--yes"], 5),
        (["search", "--reindex"], 5),
        (["wipe", "--yes"], 5),
        (["demo"], 5),
    ]:
        r = run_bounded(kaja, "--db", str(fifo), *argv)
        assert r.code == code, (argv, r)
        one_line(r)
        assert "is a FIFO" in r.err, (argv, r)
    r = run_bounded(kaja, "--db", str(fifo), "doctor")
    assert r.code == 1, r
    assert f"{fifo} is a FIFO, not a SQLite database" in r.out
    assert "a FIFO, where a file should be" in r.out
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("name", ["kaja.db-journal", "kaja.db-wal", "kaja.db-shm"])
def test_a_fifo_beside_the_database_is_reported_never_opened(demo_store, name):
    kaja = demo_store
    fifo = kaja.state / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    for argv, code in [(["sessions"], 1), (["search", "shade"], 1), (["wipe", "--yes"], 5),
                       (["usage", "reset", "--yes"], 5)]:  # fmt: skip
        r = run_bounded(kaja, *argv)
        assert r.code == code, (argv, r)
        assert f"{fifo} is a FIFO, where SQLite keeps one of the database's own files" in r.err
    r = run_bounded(kaja, "doctor")
    assert r.code == 1, r
    assert f"{fifo} is a FIFO, where SQLite keeps a file of kaja.db's" in r.out
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and kaja.db.exists()


@pytest.mark.parametrize("name", ["cache.db", "web-auth.db", "db-stats.db"])
def test_a_fifo_as_a_side_database_is_reported_never_opened(demo_store, name):
    fifo = demo_store.state / name
    for p in demo_store.state.glob(name + "*"):
        p.unlink()
    os.mkfifo(fifo)
    r = run_bounded(demo_store, "doctor")
    assert r.code == 1, r
    assert f"{fifo} is a FIFO, not a SQLite database" in r.out
    r = run_bounded(demo_store, "wipe", "--yes")
    assert r.code == 5 and "is a FIFO" in r.err, r
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and demo_store.db.exists()


def test_a_fifo_as_the_wipe_marker_is_reported_never_opened(demo_store):
    marker = demo_store.state / "kaja.db.wiping"
    os.mkfifo(marker)
    r = run_bounded(demo_store, "wipe", "--yes")
    assert r.code == 5, r
    assert f"{marker} is a FIFO, not a wipe marker kaja wrote" in r.err
    r = run_bounded(demo_store, "doctor")
    assert f"a FIFO at the wipe marker's path {marker}: kaja did not write it" in r.out, r
    r = run_bounded(demo_store, "wipe", "--owner", ANA, "--yes")
    assert r.code == 5, r
    r = run_bounded(demo_store, "demo")
    assert r.code == 5, r
    assert stat.S_ISFIFO(marker.lstat().st_mode) and demo_store.db.exists()


def test_a_fifo_as_settings_never_blocks_config_paths(kaja):
    kaja.config.parent.mkdir(parents=True)
    os.mkfifo(kaja.config)
    r = run_bounded(kaja, "config", "paths")
    assert r.code == 1 and "is a FIFO, not a regular file" in r.err, r


def test_demo_says_what_is_in_the_way(kaja, tmp_path):
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "text").write_text("hello")
    for name, what in [("folder", "is a folder"), ("fifo", "is a FIFO"),
                       ("text", "is a file that is not a SQLite database")]:  # fmt: skip
        r = run_bounded(kaja, "--db", str(tmp_path / name), "demo")
        assert r.code == 5, r
        assert f"{tmp_path / name} {what}" in r.err and "already exists" not in r.err, r
