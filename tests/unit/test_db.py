"""core/db.py: the one open helper and the "in use" probe, with real processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from kaja_cli.core.engine import db
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.errors import Busy, Failed, NotADatabase, NotFound

HOLD = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA journal_mode=WAL")
c.execute("CREATE TABLE IF NOT EXISTS t (x)")
mode = sys.argv[2]
if mode == "write":
    c.execute("BEGIN IMMEDIATE")
    c.execute("INSERT INTO t VALUES (1)")
elif mode == "commit":
    c.execute("INSERT INTO t VALUES (2)")
else:
    c.execute("SELECT * FROM t").fetchall()
print("ready", flush=True)
time.sleep(60)
"""


def hold(path: Path, mode: str) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), mode], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "ready"
    return p


def shared(path: Path) -> DatabaseFile:
    """The registry's shared file at `path`: what `db.open_write` writes."""
    return DatabaseFile(Database.SHARED, path, "test", (Database.SHARED,))


def make_db(path: Path) -> None:
    with db.open_write(path, shared(path), create=True) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        # Kaja's tables: only a database of Kaja's is opened for writing again.
        conn.execute("CREATE TABLE sessions (id)")
        conn.execute("CREATE TABLE messages (sessionId, role)")


@pytest.mark.parametrize(
    "name", ["plain.db", "with space.db", "hash#tag.db", "what?.db", "percent%20.db"]
)
def test_read_only_open_handles_odd_names_and_leaves_nothing_behind(tmp_path, name):
    folder = tmp_path / "odd # folder ?"
    path = folder / name
    make_db(path)
    before = sorted(os.listdir(folder))
    data = path.read_bytes()
    with db.open_read(path) as conn:
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert sorted(os.listdir(folder)) == before == [name]
    assert path.read_bytes() == data


def test_read_only_open_never_creates(tmp_path):
    with pytest.raises(NotFound):
        with db.open_read(tmp_path / "nope" / "kaja.db"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_read_only_connection_cannot_write(tmp_path):
    path = tmp_path / "k.db"
    make_db(path)
    with pytest.raises(Exception) as e:
        with db.open_read(path) as conn:
            conn.execute("INSERT INTO t VALUES (2)")
    assert "read-only" in str(e.value)


def test_not_a_database(tmp_path):
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for path in (text, tmp_path):
        with pytest.raises(Failed) as e:  # reading it: a failure (exit 1) pointing at doctor
            with db.open_read(path):
                pass
        assert e.value.status == 1 and "kaja doctor" in str(e.value)
        with pytest.raises(NotADatabase):  # writing into it: refused (exit 5)
            with db.open_write(path, shared(path)):
                pass
    assert text.read_text().startswith("root:")


def test_reading_beside_a_live_writer_keeps_its_files(tmp_path):
    path = tmp_path / "k.db"
    make_db(path)
    p = hold(path, "read")
    try:
        with db.open_read(path) as conn:
            conn.execute("SELECT * FROM t").fetchall()
        assert (tmp_path / "k.db-wal").exists() and (tmp_path / "k.db-shm").exists()
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("mode", ["read", "write"])
def test_holder_names_the_process_holding_the_file(tmp_path, mode):
    path = tmp_path / "k.db"
    make_db(path)
    assert db.holder(path) is None
    p = hold(path, mode)
    try:
        assert db.holder(path) == p.pid
        # our own connections never count as "another process"
        with db.open_read(path) as conn:
            conn.execute("SELECT 1").fetchall()
            assert db.holder(path) == p.pid
    finally:
        p.terminate()
        p.wait()
    assert db.holder(path) is None


def test_a_stale_wal_after_kill_9_is_not_in_use(tmp_path):
    path = tmp_path / "k.db"
    make_db(path)
    p = hold(path, "write")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert (tmp_path / "k.db-wal").exists()
    assert db.holder(path) is None
    with db.open_read(path) as conn:  # the uncommitted row is not there; the file is fine
        assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1


def test_a_write_waits_then_is_busy(tmp_path):
    path = tmp_path / "k.db"
    make_db(path)
    p = hold(path, "write")
    try:
        start = time.monotonic()
        with pytest.raises(Busy) as e:
            with db.open_write(path, shared(path), timeout_ms=300) as conn, db.transaction(conn):
                conn.execute("INSERT INTO t VALUES (2)")
        assert 0.25 < time.monotonic() - start < 5
        assert "busy" in str(e.value)
    finally:
        p.kill()
        p.wait()
    with closing(sqlite3.connect(path)) as c, c:
        assert c.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1


def test_a_transaction_is_all_or_nothing(tmp_path):
    path = tmp_path / "k.db"
    make_db(path)
    with pytest.raises(ZeroDivisionError):
        with db.open_write(path, shared(path)) as conn, db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            1 / 0  # noqa: B018
    with db.open_read(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1


def _other_process_opens_and_closes(path: Path) -> None:
    code = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM t').fetchall(); c.close()"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


def test_probing_a_file_never_drops_this_process_locks(tmp_path):
    """POSIX drops every lock a process holds on a file when any descriptor to
    it closes. kaja probes files while its own connections are open (an agent
    resuming a session, search building its index): the WAL must survive
    another process closing beside it, or the two write to different WALs."""
    path = tmp_path / "k.db"
    make_db(path)
    with db.open_write(path, shared(path)) as writer:
        writer.execute("INSERT INTO t VALUES (2)")  # the connection now holds its SHARED lock
        assert db.classify(path) == "sqlite"
        db.holder(path)
        with db.open_read(path) as reader:
            reader.execute("SELECT count(*) FROM t").fetchall()
        _other_process_opens_and_closes(path)
        # had our lock been dropped, that process would have checkpointed and
        # deleted the WAL under our live connection
        assert (tmp_path / "k.db-wal").exists() and (tmp_path / "k.db-shm").exists()
        writer.execute("INSERT INTO t VALUES (3)")
    with db.open_read(path) as reader:
        assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 3


def test_the_probe_test_catches_a_closing_probe(tmp_path, monkeypatch):
    """The test above fails when a probe opens and closes the file, as classify once did."""
    path = tmp_path / "k.db"
    make_db(path)
    with db.open_write(path, shared(path)) as writer:
        writer.execute("INSERT INTO t VALUES (2)")
        with open(path, "rb") as f:  # what classify() used to do
            f.read(16)
        _other_process_opens_and_closes(path)
        assert not (tmp_path / "k.db-wal").exists()  # the WAL went under a live connection


def test_a_symlinked_database_is_read_and_probed_at_its_target(tmp_path):
    target = tmp_path / "real" / "kaja.db"
    make_db(target)
    link = tmp_path / "link.db"
    link.symlink_to(target)
    before = sorted(os.listdir(target.parent))
    with db.open_read(link) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1
    assert sorted(os.listdir(target.parent)) == before  # no -wal/-shm left beside the target
    assert sorted(os.listdir(tmp_path)) == ["link.db", "real"]
    p = hold(target, "read")
    try:
        assert db.holder(link) == p.pid
    finally:
        p.kill()
        p.wait()


def _crash_a_writer(path: Path) -> None:
    """A writer killed with a committed row in its -wal: a stale -wal and -shm."""
    p = hold(path, "commit")
    p.send_signal(signal.SIGKILL)
    p.wait()


@pytest.mark.parametrize("keep", [("-wal", "-shm"), ("-wal",), ("-shm",)])
def test_reading_as_found_leaves_every_byte_of_a_crash(tmp_path, keep):
    # doctor's reads: a crash's -wal and -shm (or one of them alone) stay as they were.
    path = tmp_path / "k.db"
    make_db(path)
    _crash_a_writer(path)
    for suffix in {"-wal", "-shm"} - set(keep):
        path.with_name(path.name + suffix).unlink()
    files = sorted(tmp_path.iterdir())
    before = {p.name: p.read_bytes() for p in files}
    if keep == ("-wal",):
        # A committed row is in the -wal, and without a -shm only a write
        # could read it: doctor is told, rather than shown the file without it.
        with pytest.raises(db.NeedsRecovery, match=r"k\.db-wal \(its -shm is gone\)"):
            with db.open_read(path, timeout_ms=1000, as_found=True):
                pass
    else:
        with db.open_read(path, timeout_ms=1000, as_found=True) as conn:
            rows = conn.execute("SELECT x FROM t ORDER BY x").fetchall()
        assert rows == ([(1,), (2,)] if "-wal" in keep else [(1,)])
    assert {p.name: p.read_bytes() for p in sorted(tmp_path.iterdir())} == before


# --- a second reader at the first one's snapshot (`db.SecondReader`) -------------------------
def _wal_store(tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    """A WAL file with rows 1..3, and a writer kept open beside it (the agent)."""
    path = tmp_path / "s.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    writer.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    return path, writer


def _count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM t").fetchone()[0]


@pytest.fixture
def two_processors(monkeypatch):
    monkeypatch.setattr(db, "_processors", lambda: 2)


def test_a_second_reader_joins_the_first_ones_snapshot(tmp_path, two_processors):
    path, writer = _wal_store(tmp_path)
    with closing(writer), db.open_read(path) as conn:
        second = db.second_reader(conn)
        assert second is not None
        conn.execute("BEGIN")
        assert _count(conn) == 3  # the first's snapshot begins here
        joined = second.join()
        assert joined is not None
        other, turn = joined
        writer.execute("INSERT INTO t VALUES (4)")  # after both began: neither sees it
        assert (_count(conn), _count(other)) == (3, 3)
        second.leave(turn - 1)  # an earlier turn's reader, finishing late: not this one's
        assert other.in_transaction
        second.leave(turn)
        assert not other.in_transaction
        conn.execute("COMMIT")
        assert _count(conn) == 4


def test_a_commit_before_the_second_joins_keeps_them_apart(tmp_path, two_processors):
    """A commit between the second reader's look and its join, the first's
    snapshot begun in between: which of the two states the first sees cannot
    be known, so the second does not join (None); it joins the next one."""
    path, writer = _wal_store(tmp_path)
    with closing(writer), db.open_read(path) as conn:
        second = db.second_reader(conn)
        assert second is not None
        conn.execute("BEGIN")
        assert _count(conn) == 3
        writer.execute("INSERT INTO t VALUES (4)")
        assert second.join() is None
        assert not second.conn.in_transaction
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        assert _count(conn) == 4
        joined = second.join()
        assert joined is not None and _count(joined[0]) == 4
        second.leave()
        conn.execute("COMMIT")


def test_a_second_reader_closes_with_the_first(tmp_path, two_processors):
    path, writer = _wal_store(tmp_path)
    with closing(writer), db.open_read(path) as conn:
        second = db.second_reader(conn)
        assert second is not None and second.join() is not None
    with pytest.raises(sqlite3.ProgrammingError):  # closed, its transaction with it
        second.conn.execute("SELECT 1")
    second.leave()  # a generator finishing late has nothing left to end: no error


def test_no_second_reader_beside_a_rollback_journal_file(tmp_path, two_processors):
    """A rollback-journal file: a second reader would queue behind a writer that
    waits for the first reader's lock (and fail after a second), so there is
    none; the first reads on, and the writer commits after it."""
    path = tmp_path / "r.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as writer:
        writer.execute("CREATE TABLE t (x)")
        writer.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
        with db.open_read(path) as conn:
            assert db.second_reader(conn) is None
            conn.execute("BEGIN")
            assert _count(conn) == 3
            conn.execute("COMMIT")


def test_a_join_that_cannot_begin_is_no_join(tmp_path, two_processors, monkeypatch):
    path, writer = _wal_store(tmp_path)
    with closing(writer), db.open_read(path) as conn:
        second = db.second_reader(conn)
        assert second is not None
        monkeypatch.setattr(
            db.SecondReader, "_version",
            lambda self: (_ for _ in ()).throw(sqlite3.OperationalError("database is locked")),
        )  # fmt: skip
        assert second.join() is None
        assert not second.conn.in_transaction


def test_no_second_reader_on_one_processor_or_another_engine(tmp_path, monkeypatch):
    path, writer = _wal_store(tmp_path)
    monkeypatch.setattr(db, "_processors", lambda: 1)
    with closing(writer), db.open_read(path) as conn:
        assert db.second_reader(conn) is None
    with closing(sqlite3.connect(path)) as plain:  # not opened by open_read
        monkeypatch.setattr(db, "_processors", lambda: 2)
        assert db.second_reader(plain) is None
