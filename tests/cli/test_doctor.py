"""`kaja doctor` (core/doctor.py, commands/doctor.py), through the real command.

One test per hard case of issue 6. Every run without --fix goes through
`doctor()`, which asserts that no file under the test's root changed, appeared
or disappeared (bytes and modes): doctor only reads.

Tests run as root in CI, and root ignores file permissions: a chmod cannot make
the store unwritable for it. So there are two read-only tests.
`test_read_only_store` checks what does not depend on who runs it: doctor reads
through `mode=ro` connections (nothing changes even for root), reports the
missing owner-write bit from the file mode, and --fix never adds a permission
bit. `test_read_only_store_for_another_user` makes it real: as root it runs
kaja as `nobody` (setpriv) on root's 0644 files in a 0755 folder, where SQLite
cannot create the -shm a WAL read needs; it is skipped where that is impossible.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kaja_cli.core.engine.fs import human_size
from tests.conftest import (
    DEMO_NOW,
    Kaja,
    Result,
    demo_age_warnings,
    demo_at,
    only_the_demos_age,
)
from tests.support.faults import changes, kill_at_point, kill_mid_transaction
from tests.support.unprivileged import unprivileged


# --- helpers --------------------------------------------------------------------
def snapshot(root: Path) -> dict[str, tuple]:
    """Every file and folder below `root`: (kind, mode, sha256 of the bytes)."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = ("dir", p.lstat().st_mode)
        for name in filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
            out[str(p.relative_to(root))] = ("file", st.st_mode, digest)
    return out


def doctor(
    kaja: Kaja, *args: str, root: tuple[str, ...] = (), env: dict | None = None, timeout: float = 60
) -> Result:
    """Run `kaja [root options] doctor ARGS`; without --fix, assert that nothing on disk changed."""
    before = snapshot(kaja.root)
    r = kaja(*root, "doctor", *args, env=env, timeout=timeout)
    if "--fix" not in args:
        after = snapshot(kaja.root)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"doctor changed {changed}"
    assert "Traceback" not in r.err, r
    return r


def checks_of(r: Result) -> dict[str, dict]:
    data = json.loads(r.out)
    return {c["id"]: c for c in data["checks"]}


def statuses(r: Result) -> dict[str, str]:
    return {cid: c["status"] for cid, c in checks_of(r).items()}


def problems(r: Result) -> dict[str, str]:
    """The checks that found something, but the demo store's age (demo_age_warnings: its
    agent stopped on DEMO_NOW; test_a_demo_from_the_past_is_overdue asserts those)."""
    _, age = demo_age_warnings()
    return {
        cid: s for cid, s in statuses(r).items() if s != "ok" and not (cid in age and s == "warn")
    }


def sql(path: Path, *statements: str) -> list:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        rows: list = []
        for s in statements:
            rows = conn.execute(s).fetchall()
        return rows
    finally:
        conn.close()


def image_files(kaja: Kaja) -> list[Path]:
    return sorted((kaja.state / "files" / "images").glob("*/*"))


# --- the demo store --------------------------------------------------------------------
@pytest.fixture(scope="module")
def present_demo(tmp_path_factory: pytest.TempPathFactory) -> Kaja:
    """The demo store as `kaja demo` writes it now (base time: this hour), what a user
    who runs `kaja doctor` right after it sees. Doctor only reads: one for the module."""
    return _demo_at(tmp_path_factory.mktemp("present-demo"), timedelta(0))


def _demo_at(root: Path, ago: timedelta) -> Kaja:
    """The demo written `ago` before this second (to the second, not this hour: the
    store's age when doctor reads it is then the same whenever the test runs)."""
    return demo_at(root, ago)


PAST = timedelta(hours=30)  # past the running task's hour and the due schedule's day, not more


@pytest.fixture(scope="module")
def past_demo(tmp_path_factory: pytest.TempPathFactory) -> Kaja:
    """The demo written 30 hours ago: its agent stopped then."""
    return _demo_at(tmp_path_factory.mktemp("past-demo"), PAST)


def test_demo_store_has_no_problems(present_demo: Kaja) -> None:
    demo_store = present_demo
    r = doctor(demo_store)
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert lines[-1] == "no problems"
    groups = [line for line in lines if line and not line.startswith(" ")][:-1]
    assert groups == [
        "environment", "paths", "settings", "shared file", "search index", "images", "agent",
        "side databases", "sync",
    ]  # fmt: skip
    body = [line for line in lines if line.startswith("  ")]
    assert body and all(line.startswith("  ✓ ") for line in body), r.out
    assert (
        f"  ✓ shared file: {demo_store.db} (env KAJA_STATE_DIR)" not in r.out
    )  # the db follows it
    assert f"  ✓ shared file: {demo_store.db} (default): " in r.out
    assert "  ✓ kaja.db: quick_check passed" in lines
    assert "  ✓ kaja.db: not open in another process" in lines
    assert "  ✓ the search index is in step with messages (96 messages, 96 indexed)" in lines
    assert "  ✓ 3 image files, each matching its sha256 name" in lines
    assert r.err == ""


def test_json_shape(present_demo: Kaja) -> None:
    r = doctor(present_demo, "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert {"kaja", "python", "sqlite", "platform", "fts4", "checks", "summary", "status"} <= set(
        data
    )
    assert data["fts4"] is True and data["status"] == "ok" and data["thorough"] is False
    assert data["sqlite"] == sqlite3.sqlite_version
    assert data["summary"] == {
        "errors": 0, "warnings": 0, "ok": len(data["checks"]), "text": "no problems",
    }  # fmt: skip
    ids = [c["id"] for c in data["checks"]]
    assert len(ids) == len(set(ids))
    for c in data["checks"]:
        assert set(c) == {"id", "group", "status", "summary", "details", "fix", "fixable"}
        assert c["status"] in ("ok", "warn", "error")
        assert isinstance(c["summary"], str) and "\n" not in c["summary"]
        assert isinstance(c["details"], list)
    expected = {
        "versions", "disk-space", "paths.settings", "paths.state_dir", "paths.shared_db",
        "paths.images", "paths.cache_db", "paths.stats_db", "paths.auth_db", "paths.semantic_db",
        "legacy-files",
        "settings", "database.shared", "in-use.shared", "integrity.shared", "schema.shared",
        "space.shared", "orphans.messages", "orphans.tool_calls", "orphans.tool_results",
        "orphans.summaries", "orphans.events", "orphans.model_calls", "search-index",
        "images.orphan-folders", "images.missing-files", "images.content", "database.cache",
        "integrity.auth", "side-data.cache", "side-data.auth", "sync-outbox",
        "tasks", "schedules", "artifacts",
    }  # fmt: skip
    assert expected <= set(ids), expected - set(ids)
    assert "quick_check" in checks_of(r)["integrity.shared"]["summary"]
    agent = {c["id"]: c["summary"] for c in data["checks"] if c["group"] == "agent"}
    assert agent == {
        "tasks": "no background task running past its timeout (1 running)",
        "schedules": "no active schedule overdue (2 active)",
        "artifacts": "every artifact's file is there (1 file)",
    }


def test_a_demo_from_the_past_is_overdue(past_demo: Kaja) -> None:
    """Doctor uses the real clock: in the demo written 30 hours ago the agent stopped
    then, so its running task is past its timeout and its active schedule due then is
    more than a day overdue. Exactly those two warnings; never a trigger's secret. (The
    demo store at DEMO_NOW, days ago, warns of the same and, as it ages, more: the other
    schedule, the outbox; `only_the_demos_age` takes that into account.)"""
    demo_store = past_demo
    base = past_demo.base  # type: ignore[attr-defined]
    started = (base - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    due = (base - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    r = doctor(demo_store)
    assert r.code == 0, r  # warnings only
    lines = r.out.splitlines()
    flagged = [line.rsplit("[", 1)[-1] for line in lines if line.startswith(("  ! ", "  ✗ "))]
    assert flagged == ["tasks]", "schedules]"] and lines[-1] == "0 errors, 2 warnings", r.out
    group = lines.index("agent")
    assert lines[group + 1] == "  ! 1 background task still running past its timeout  [tasks]"
    assert lines[group + 3].startswith(
        f"      bg_002 (web_fetch): running since {started}, "
    ) and lines[group + 3].endswith("; its timeout is 3600 seconds")
    assert "      to fix: restart the agent; `kaja tasks --status running` lists them" in lines
    assert (
        "  ! 1 active schedule overdue by more than a day: is the scheduler running?  [schedules]"
        in lines
    )
    assert any(
        line.startswith(f"      sch_running (running plan): due {due}, ")
        and line.endswith(" ago (cron 0 19 * * 0)")
        for line in lines
    ), r.out
    # The dentist's schedule (next run in two days) and the paused digest are not named.
    assert "sch_dentist" not in r.out and "sch_digest" not in r.out
    assert "  ✓ every artifact's file is there (1 file)" in lines

    data = json.loads(doctor(demo_store, "--json").out)
    assert data["status"] == "warn" and data["summary"]["warnings"] == 2
    found = {c["id"]: c for c in data["checks"] if c["group"] == "agent"}
    assert [found[i]["status"] for i in ("tasks", "schedules", "artifacts")] == [
        "warn",
        "warn",
        "ok",
    ]
    assert found["tasks"]["details"][1].startswith("bg_002 (web_fetch): running since ")
    assert found["schedules"]["details"][1].startswith("sch_running (running plan): due ")
    secrets = [v for (v,) in sql(demo_store.db, "SELECT secret FROM triggers")]
    assert secrets and all(s not in r.out + json.dumps(data) for s in secrets)
    assert "xoxb-demo-0000-notify" not in r.out + json.dumps(data)


def test_artifacts_whose_file_is_gone(demo_store: Kaja) -> None:
    saved = demo_store.root / "report.pdf"
    saved.write_bytes(b"%PDF-1.7")
    sql(demo_store.db, "INSERT INTO artifacts (id, kind, source, title, path, created_at) VALUES"
        f" ('f00d01', 'file', 'pdf_export', 'Q3 report', '{saved}', '2026-11-28T10:00:00Z')")  # fmt: skip
    ok = checks_of(doctor(demo_store, "--check", "artifacts", "--json"))["artifacts"]
    assert (ok["status"], ok["summary"]) == ("ok", "every artifact's file is there (2 files)")
    saved.unlink()
    r = doctor(demo_store, "--check", "artifacts")
    assert r.code == 0, r
    assert r.out.splitlines() == [
        "agent",
        "  ! 1 of 2 artifact files is gone  [artifacts]",
        "      the rows stay (the agent saved them); restore the files from a backup if you need them",
        f"      f00d01: {saved}",
        "      to fix: `kaja artifacts --missing` lists them",
        "0 errors, 1 warning",
    ]
    # The saved page (a4d5e6) has no file at all: not a file gone.
    assert "a4d5e6" not in r.out


def test_the_agent_checks_skip_a_store_from_before_those_tables(demo_store: Kaja) -> None:
    sql(
        demo_store.db, "DROP TABLE background_tasks", "DROP TABLE schedules", "DROP TABLE artifacts"
    )
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    assert not {"tasks", "schedules", "artifacts"} & set(checks_of(r))


def test_secrets_are_never_printed(demo_store: Kaja) -> None:
    secrets = [
        v
        for db, query in (
            ("web-auth.db", "SELECT password_hash, salt FROM web_users"),
            ("web-auth.db", "SELECT token_hash, token_hash FROM web_sessions"),
            ("kaja.db", "SELECT secret, secret FROM triggers"),
        )
        for row in sql(demo_store.state / db, query)
        for v in row
    ]
    assert len(secrets) >= 6
    out = doctor(demo_store, "--json").out + doctor(demo_store).out
    assert not [s for s in secrets if s in out]
    # Counted at the demo's own time: its sign-in sessions last 30 days from then.
    base = datetime(2026, 11, 29, 12, tzinfo=UTC)
    auth = {c.id: c for c in _run_in_process(demo_store, now=base).checks}["side-data.auth"]
    assert auth.summary == "web-auth.db: 3 accounts, 3 sign-in sessions, 1 expired"


def test_list_checks_and_check_id(demo_store: Kaja) -> None:
    r = doctor(demo_store, "--list-checks")
    assert r.code == 0
    first = [line.split()[0] for line in r.out.splitlines() if line and not line.startswith("<")]
    assert {"versions", "paths", "integrity.<db>", "orphans", "search-index", "images"} <= set(
        first
    )
    assert {"tasks", "schedules", "artifacts"} <= set(first)  # issue 25
    about = dict(line.split(None, 1) for line in r.out.splitlines() if line and line[0] != " ")
    assert about["schedules"] == (
        "active schedules whose next run is more than a day overdue (is the scheduler running?)"
    )
    listed = json.loads(doctor(demo_store, "--list-checks", "--json").out)
    assert "integrity" in {c["id"] for c in listed["checks"]}

    one = doctor(demo_store, "--check", "integrity.shared", "--json")
    assert list(statuses(one)) == ["integrity.shared"]
    orphans = doctor(demo_store, "--check", "orphans", "--json")
    assert set(statuses(orphans)) == {
        "orphans.messages", "orphans.summaries", "orphans.events", "orphans.model_calls",
        "orphans.tool_calls", "orphans.tool_results",
    }  # fmt: skip
    two = doctor(demo_store, "--check", "orphans.messages", "--check", "search-index", "--json")
    assert list(statuses(two)) == ["orphans.messages", "search-index"]

    bad = doctor(demo_store, "--check", "nonsense")
    assert bad.code == 2 and "--check: no check 'nonsense'" in bad.err and bad.out == ""


# --- hard cases: what the shared file is ------------------------------------------------------
def test_corrupt_file(demo_store: Kaja) -> None:
    data = bytearray(demo_store.db.read_bytes())
    page = 4096
    for n in range(100, 110):  # pages overwritten near the end of the file
        data[n * page : (n + 1) * page] = bytes([0x5A]) * page
    demo_store.db.write_bytes(bytes(data))
    r = doctor(demo_store, "--json")
    assert r.code == 1, r
    found = checks_of(r)
    assert found["database.shared"]["status"] == "ok"  # it opens…
    assert found["integrity.shared"]["status"] == "error"  # …and quick_check finds the damage
    assert found["integrity.shared"]["summary"].startswith("kaja.db is damaged")
    assert ".recover" in found["integrity.shared"]["fix"]
    # Other checks reading the damaged pages fail too; none offers to write to the file.
    assert not [c for c in found.values() if c["fixable"]]
    text = doctor(demo_store)
    assert text.code == 1 and " error" in text.out.splitlines()[-1]


def test_file_too_damaged_to_open(demo_store: Kaja) -> None:
    data = bytearray(demo_store.db.read_bytes())
    page = 4096
    for n in range(1, 40):  # the schema's pages: SQLite cannot even read the table list
        data[n * page : (n + 1) * page] = bytes([0x5A]) * page
    demo_store.db.write_bytes(bytes(data))
    r = doctor(demo_store, "--json")
    assert r.code == 1, r
    found = checks_of(r)
    assert found["database.shared"]["status"] == "error"
    assert found["database.shared"]["summary"].startswith("kaja.db is damaged: it cannot be opened")
    assert "integrity.shared" not in found and "orphans.messages" not in found


def test_empty_file(kaja: Kaja) -> None:
    kaja.state.mkdir(mode=0o700)
    kaja.db.touch(mode=0o600)
    r = doctor(kaja, "--json")
    assert r.code == 0, r
    found = checks_of(r)
    assert found["database.shared"]["status"] == "warn"
    assert found["database.shared"]["summary"] == "kaja.db: an empty file (0 bytes)"
    assert found["database.shared"]["fixable"] is True
    assert "error" not in statuses(r).values()


def test_text_file_as_db(kaja: Kaja) -> None:
    notes = kaja.root / "notes.txt"
    notes.write_text("my secret shopping list\n" * 10)
    r = doctor(kaja, root=("--db", str(notes)))
    assert r.code == 1, r
    assert f"  ✗ {notes} is not a SQLite database (240 B, no SQLite header)" in r.out
    assert "shopping" not in r.out
    found = checks_of(doctor(kaja, "--json", root=("--db", str(notes))))
    assert found["database.shared"]["status"] == "error"
    assert "flag --db" in " ".join(found["database.shared"]["details"])


def test_folder_as_db(kaja: Kaja) -> None:
    folder = kaja.root / "somewhere"
    folder.mkdir()
    r = doctor(kaja, "--json", root=("--db", str(folder)))
    assert r.code == 1, r
    found = checks_of(r)
    assert found["database.shared"]["status"] == "error"
    assert found["database.shared"]["summary"] == f"{folder} is a folder, not a SQLite database"


def test_truncated_file(demo_store: Kaja) -> None:
    data = demo_store.db.read_bytes()
    demo_store.db.write_bytes(data[: len(data) * 6 // 10])
    r = doctor(demo_store, "--json")
    assert r.code == 1, r
    found = checks_of(r)
    assert found["database.shared"]["status"] == "error"
    assert found["database.shared"]["summary"].startswith("kaja.db is truncated")


def test_read_only_store(demo_store: Kaja) -> None:
    # Owner-read only, everywhere. As root the bits do not stop a write, so
    # what is asserted holds for anyone: doctor reads through mode=ro
    # connections (nothing changes, no -wal/-shm is left), reports the files
    # Kaja cannot save to, and --fix never adds a permission bit.
    files = [p for p in demo_store.state.rglob("*") if p.is_file()]
    dirs = [p for p in demo_store.state.rglob("*") if p.is_dir()] + [demo_store.state]
    for p in files:
        p.chmod(0o400)
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        d.chmod(0o500)
    try:
        r = doctor(demo_store, "--json")
        assert r.code == 0, r
        found = checks_of(r)
        assert found["paths.shared_db"]["status"] == "warn"
        assert "not writable by its owner" in found["paths.shared_db"]["summary"]
        assert found["paths.shared_db"]["fixable"] is False
        assert "chmod u+w" in found["paths.shared_db"]["fix"]
        assert found["paths.state_dir"]["status"] == "warn"
        assert found["integrity.shared"]["status"] == "ok"
        fixed = demo_store("doctor", "--fix")
        assert "nothing to fix" in fixed.out, fixed
        assert (demo_store.db.stat().st_mode & 0o777) == 0o400
        assert (demo_store.state.stat().st_mode & 0o777) == 0o500
    finally:
        for d in dirs:
            d.chmod(0o700)


def test_missing_state_dir_is_a_fresh_machine(kaja: Kaja) -> None:
    assert not kaja.state.exists()
    r = doctor(kaja, "--json")
    assert r.code == 0, r
    assert problems(r) == {"paths.state_dir": "warn", "database.shared": "warn"}
    text = doctor(kaja)
    assert text.out.splitlines()[-1] == "0 errors, 2 warnings"
    assert f"  ! no Kaja store at {kaja.db} yet  [database.shared]" in text.out
    assert not kaja.state.exists()


def test_malformed_settings(demo_store: Kaja) -> None:
    demo_store.config.parent.mkdir(parents=True)
    demo_store.config.write_text('[memory]\nmode = "local"\ndbPath = \n')
    r = doctor(demo_store)
    assert r.code == 1, r
    assert f"  ✗ {demo_store.config}:3:9: invalid TOML: " in r.out
    assert "  ✓ kaja.db: quick_check passed" in r.out  # everything else is still checked
    found = checks_of(doctor(demo_store, "--json"))
    assert found["settings"]["status"] == "error"
    assert found["settings"]["fix"]


def test_unknown_settings_keys(demo_store: Kaja) -> None:
    demo_store.config.parent.mkdir(parents=True)
    demo_store.config.write_text('[memory]\ndbpath = "elsewhere.db"\n\n[telegram]\ntoken = "x"\n')
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    keys = checks_of(r)["settings.keys"]
    assert keys["status"] == "warn"
    assert keys["summary"] == "unknown keys in settings.toml: memory.dbpath, telegram"


def test_legacy_files(demo_store: Kaja) -> None:
    # The demo records usage.db as imported; experience.db never was.
    for name in ("usage.db", "experience.db"):
        sql(demo_store.state / name, "CREATE TABLE runs (id TEXT)")
    r = doctor(demo_store, "--json")
    found = checks_of(r)
    assert found["legacy-files.usage"]["status"] == "ok"
    assert "kept as a rollback copy" in found["legacy-files.usage"]["summary"]
    assert found["legacy-files.usage"]["fix"].startswith("rm -- ")
    assert found["legacy-files.experience"]["status"] == "warn"


# --- hard cases: processes ------------------------------------------------------------------------
WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("INSERT INTO notes (owner, key, content) VALUES ('', 'committed', 'kept in the -wal')")
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO notes (owner, key, content) VALUES ('', 'pending', 'never committed')")
print("ready", flush=True)
time.sleep(120)
"""


def _start_writer(db: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def test_store_held_by_a_writer_in_a_transaction(demo_store: Kaja) -> None:
    writer = _start_writer(demo_store.db)
    try:
        start = time.monotonic()
        r = doctor(demo_store, "--json", timeout=30)
        assert time.monotonic() - start < 15
        assert r.code == 0, r
        in_use = checks_of(r)["in-use.shared"]
        assert in_use["status"] == "ok"
        assert in_use["summary"].startswith(f"kaja.db: in use by process {writer.pid}")
        assert in_use["summary"].endswith("Kaja is running")
        assert statuses(r)["integrity.shared"] == "ok"
        assert "error" not in statuses(r).values()
    finally:
        writer.kill()
        writer.wait()


def test_stale_wal_after_kill_9(demo_store: Kaja) -> None:
    writer = _start_writer(demo_store.db)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    wal = demo_store.db.with_name("kaja.db-wal")
    assert wal.stat().st_size > 0 and demo_store.db.with_name("kaja.db-shm").exists()
    r = doctor(demo_store, "--json")  # byte-identical afterwards, -shm included
    assert r.code == 0, r
    stale = checks_of(r)["in-use.shared"]
    assert stale["status"] == "warn" and "a stale -wal" in stale["summary"]
    assert stale["fixable"] is True
    assert statuses(r)["integrity.shared"] == "ok"

    fixed = demo_store("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert "  ✓ kaja.db: checkpointed the -wal (" in fixed.out and ") into the file\n" in fixed.out
    assert only_the_demos_age(fixed.out), fixed
    assert not wal.exists() or wal.stat().st_size == 0
    notes = sql(demo_store.db, "SELECT key FROM notes WHERE key IN ('committed', 'pending')")
    assert notes == [("committed",)]


# --- hard cases: files ---------------------------------------------------------------------------
def test_world_readable_files(demo_store: Kaja) -> None:
    demo_store.db.chmod(0o644)
    demo_store.state.chmod(0o755)
    image = image_files(demo_store)[0]
    image.chmod(0o644)
    image.parent.chmod(0o755)
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    assert problems(r) == {
        "paths.state_dir": "warn", "paths.shared_db": "warn", "paths.images": "warn",
    }  # fmt: skip
    found = checks_of(r)
    assert found["paths.shared_db"]["summary"].endswith("mode 0644: readable by group and others")
    assert found["paths.shared_db"]["fixable"] is True

    fixed = demo_store("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert only_the_demos_age(fixed.out), fixed
    assert demo_store.db.stat().st_mode & 0o777 == 0o600
    assert demo_store.state.stat().st_mode & 0o777 == 0o700
    assert image.stat().st_mode & 0o777 == 0o600
    assert image.parent.stat().st_mode & 0o777 == 0o700


def test_image_with_a_wrong_sha256(demo_store: Kaja) -> None:
    image = image_files(demo_store)[1]
    image.write_bytes(image.read_bytes()[:-1] + b"\x00")
    r = doctor(demo_store, "--json")
    assert r.code == 1, r
    assert problems(r) == {"images.content": "error"}
    found = checks_of(r)["images.content"]
    assert found["summary"] == "1 of 3 image files no longer match their sha256 name"
    assert str(image) in found["details"]


def test_orphans_are_reported_never_deleted(demo_store: Kaja) -> None:
    sid = image_files(demo_store)[0].parent.name
    before = sql(demo_store.db, f"SELECT count(*) FROM messages WHERE sessionId = '{sid}'")[0][0]
    assert before > 0
    sql(demo_store.db, f"DELETE FROM sessions WHERE id = '{sid}'")
    gone = sql(demo_store.db, "SELECT id FROM messages ORDER BY rowid LIMIT 1")[0][0]
    sql(demo_store.db, "DROP TRIGGER messages_fts_bd")  # keep the index out of this test
    sql(demo_store.db, f"DELETE FROM messages WHERE id = '{gone}'")
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    found = checks_of(r)
    assert found["orphans.messages"]["status"] == "warn"
    assert (
        found["orphans.messages"]["summary"]
        == f"messages without a session: {before} (1 missing session)"
    )
    assert found["images.orphan-folders"]["status"] == "warn"
    folder = demo_store.state / "files" / "images" / sid
    assert found["images.orphan-folders"]["fix"] == f"rm -r -- {folder}"
    assert found["images.orphan-folders"]["fixable"] is False

    fixed = demo_store("doctor", "--fix", "--json")
    assert folder.is_dir()
    counted = sql(demo_store.db, f"SELECT count(*) FROM messages WHERE sessionId = '{sid}'")
    assert counted[0][0] == before
    assert json.loads(fixed.out)["summary"]["warnings"] >= 2


def test_damaged_search_index(demo_store: Kaja) -> None:
    # Messages deleted while the index's delete trigger was missing: their
    # entries stay behind. A count differs, and --fix rebuilds the index.
    trigger = sql(demo_store.db, "SELECT sql FROM sqlite_master WHERE name = 'messages_fts_bd'")[0][
        0
    ]
    sql(
        demo_store.db,
        "DROP TRIGGER messages_fts_bd",
        "DELETE FROM messages WHERE rowid IN"
        " (SELECT rowid FROM messages WHERE role = 'user' AND content IS NOT NULL LIMIT 3)",
        trigger,
    )
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    found = checks_of(r)["search-index"]
    assert found["status"] == "warn"
    assert (
        found["summary"] == "the search index is out of step with messages: 93 messages, 96 indexed"
    )
    assert found["fixable"] is True

    fixed = demo_store("doctor", "--fix")
    assert "  ✓ kaja.db: rebuilt the search index (93 messages)" in fixed.out, fixed
    assert only_the_demos_age(fixed.out), fixed


def test_search_index_entries_under_the_wrong_message(demo_store: Kaja) -> None:
    # Same counts, wrong rows (messages rewritten behind the index's back):
    # only the sampled lookups (and --thorough) see it.
    sql(
        demo_store.db,
        "DROP TRIGGER messages_fts_au",
        "DROP TRIGGER messages_fts_bu",
        "UPDATE messages SET content = 'rewritten ' || hex(randomblob(8)) WHERE content IS NOT NULL",
    )
    r = doctor(demo_store, "--json")
    found = checks_of(r)
    # The triggers are gone, which is reported first.
    assert found["search-index"]["status"] == "warn"
    assert "triggers" in found["search-index"]["summary"]

    # Put the triggers back without reindexing: counts agree, contents do not.
    with closing(sqlite3.connect(demo_store.db)) as conn, conn:
        from kaja_cli.core.store import search_index

        for name in ("messages_fts_bu", "messages_fts_au"):
            conn.execute(f"CREATE TRIGGER {name} {search_index.FTS_TRIGGERS[name]}")
    conn.close()
    r = doctor(demo_store, "--json")
    found = checks_of(r)["search-index"]
    assert found["status"] == "warn", found
    assert found["summary"].endswith("sampled messages are not found under their own words")
    thorough = checks_of(doctor(demo_store, "--json", "--thorough", "--check", "search-index"))
    assert thorough["search-index"]["status"] == "error"
    assert "integrity-check" in thorough["search-index"]["summary"]


def test_thorough_runs_integrity_check(demo_store: Kaja) -> None:
    r = doctor(demo_store, "--thorough", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert data["thorough"] is True
    found = {c["id"]: c for c in data["checks"]}
    assert found["integrity.shared"]["summary"] == "kaja.db: integrity_check passed"
    assert "FTS4 integrity-check passed" in found["search-index"]["details"]


# --- --fix -----------------------------------------------------------------------------------------------
def test_fix_repairs_what_it_can(demo_store: Kaja) -> None:
    sessions = sql(demo_store.db, "SELECT count(*) FROM sessions")[0][0]
    sql(
        demo_store.db,
        "DROP TABLE dataset_versions",
        "ALTER TABLE sessions DROP COLUMN pendingKind",
        "DROP INDEX calls_at",
    )
    sql(demo_store.state / "cache.db", "DROP INDEX shared_cache_lru")
    demo_store.db.chmod(0o640)
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    assert problems(r) == {
        "paths.shared_db": "warn", "schema.shared": "warn", "schema.cache": "warn",
    }  # fmt: skip
    schema_check = checks_of(r)["schema.shared"]
    assert schema_check["summary"] == "kaja.db: missing 1 table, 1 column, 1 index"
    assert schema_check["details"][:3] == [
        "table dataset_versions", "column sessions.pendingKind", "index calls_at",
    ]  # fmt: skip

    fixed = demo_store("doctor", "--fix")
    assert fixed.code == 0, fixed
    lines = fixed.out.splitlines()
    assert lines[0] == "fixes"
    assert f"  ✓ tightened permissions of {demo_store.db}: 0640 → 0600" in lines
    assert (
        "  ✓ kaja.db: added column sessions.pendingKind; created table dataset_versions;"
        " created index calls_at" in lines
    )
    assert "  ✓ cache.db: created index shared_cache_lru" in lines
    assert only_the_demos_age(fixed.out), fixed
    assert sql(demo_store.db, "SELECT count(*) FROM sessions")[0][0] == sessions
    again = doctor(demo_store, "--fix", "--json")
    assert json.loads(again.out)["fixes"] == []


def test_fix_with_nothing_to_do(demo_store: Kaja) -> None:
    r = demo_store("doctor", "--fix")
    assert r.code == 0
    assert r.out.startswith("fixes\n  nothing to fix\n\nenvironment\n")


# --- output ------------------------------------------------------------------------------------------------
def test_redact_leaves_no_home_user_or_host(kaja: Kaja) -> None:
    host = socket.gethostname()
    user = kaja.root.owner() if hasattr(kaja.root, "owner") else os.environ.get("USER", "")
    state = kaja.home / ".local" / "share" / f"kaja-{host}-{user}"
    env = {"KAJA_STATE_DIR": str(state), "USER": user}
    r = kaja("demo", "--seed", "1", "--now", DEMO_NOW, env=env)
    assert r.code == 0, r
    (state / "kaja.db").chmod(0o644)  # a warning, so details and fix are printed too
    for args in (("--redact",), ("--redact", "--json")):
        out = doctor(kaja, *args, env=env).out
        assert str(kaja.home) not in out
        assert host not in out
        assert user not in out
        assert "~/.local/share/kaja-<host>-<user>/kaja.db" in out
    plain = doctor(kaja, env=env).out
    assert str(kaja.home) in plain and host in plain


def test_no_terminal_and_no_color(demo_store: Kaja) -> None:
    r = doctor(demo_store, env={"NO_COLOR": None, "TERM": "xterm-256color"})
    assert "\x1b[" not in r.out  # piped: plain text, whatever the terminal type


def test_cloud_mode_skips_the_databases(demo_store: Kaja) -> None:
    demo_store.config.parent.mkdir(parents=True)
    demo_store.config.write_text('[memory]\nmode = "cloud"\n')
    r = doctor(demo_store, "--json")
    found = statuses(r)
    assert "database.shared" not in found and "orphans.messages" not in found
    assert "cloud" in checks_of(r)["settings"]["summary"]
    # Cloud mode without a server to check is the one error (tests/cloud/test_cloud_doctor.py).
    assert r.code == 1 and [c for c, s in found.items() if s == "error"] == ["server.reachable"]
    assert "needs the PostgreSQL server's URL" in checks_of(r)["server.reachable"]["summary"]


def test_on_a_terminal_the_last_line_says_how_to_redact(demo_store: Kaja) -> None:
    """The report names paths under the home folder (the user's name in them):
    on a terminal its last line, one line at 80 columns, says how to get a copy
    safe to paste into a ticket; never piped, with --json or with --redact."""
    from tests.conftest import KAJA
    from tests.support.sessions_support import run_in_pty

    hint = "For a ticket, add --redact: it hides your home folder, user name and host name."
    env = {k: v for k, v in demo_store.env.items() if k not in ("PAGER", "KAJA_PAGER")}
    code, screen = run_in_pty([KAJA, "doctor", "--no-pager"], env, rows=200, cols=80)
    lines = screen.rstrip().splitlines()
    assert lines[-1] == hint and lines[-2].endswith(("no problems", "warnings", "warning")), screen
    code, screen = run_in_pty([KAJA, "doctor", "--no-pager", "--redact"], env, rows=200, cols=80)
    assert code == 0 and "--redact" not in screen, screen
    code, screen = run_in_pty([KAJA, "doctor", "--json"], env, rows=200, cols=80)
    assert "--redact" not in screen and json.loads(screen)["checks"]
    piped = doctor(demo_store)
    assert "--redact" not in piped.out and "--redact" not in piped.err


def test_help_names_every_group_the_report_shows(kaja: Kaja) -> None:
    """`kaja doctor --help` lists the groups; each the core can report is named
    (agent and server were missing): a group added to the core fails here until
    the help names it."""
    from kaja_cli.core.care.doctor.model import GROUPS

    r = kaja("doctor", "--help", env={"COLUMNS": "100"})
    assert r.code == 0
    text = " ".join(r.out.split())
    listed = text.split("grouped (", 1)[1].split(")", 1)[0]
    assert listed.split(", ") == [str(g) for g in GROUPS]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_help_mentions_every_option(kaja: Kaja) -> None:
    r = kaja("doctor", "--help")
    assert r.code == 0
    for option in ("--fix", "--thorough", "--check", "--list-checks", "--redact", "--json"):
        assert option in r.out


def test_empty_file_is_filled_by_fix(kaja: Kaja) -> None:
    kaja.state.mkdir(mode=0o700)
    kaja.db.touch(mode=0o600)
    fixed = kaja("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert fixed.out.splitlines()[1].startswith(
        "  ✓ kaja.db: switched to WAL mode; created 33 tables notes, sessions, messages, …; "
    )
    assert fixed.out.splitlines()[-1] == "no problems"


def test_rollback_journal_file_is_switched_to_wal(demo_store: Kaja) -> None:
    sql(demo_store.db, "PRAGMA journal_mode=DELETE")
    r = doctor(demo_store, "--json")
    assert problems(r) == {"database.shared": "warn"}
    assert checks_of(r)["database.shared"]["summary"].endswith("not in WAL mode")
    fixed = demo_store("doctor", "--fix")
    assert "  ✓ kaja.db: switched to WAL mode" in fixed.out.splitlines()
    assert only_the_demos_age(fixed.out), fixed


# --- thresholds, in-process (the files it would take are too large for a test) -----------
def _run_in_process(kaja: Kaja, **kw):
    from kaja_cli.core.care import doctor as core
    from kaja_cli.core.store.paths import Overrides

    return core.run(Overrides(state_dir=kaja.state, config=kaja.config), environ={}, **kw)


def test_free_pages_suggest_a_vacuum(demo_store: Kaja, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaja_cli.core.care.doctor import databases as core

    sql(demo_store.db, "DELETE FROM logs", "DELETE FROM calls", "PRAGMA wal_checkpoint(TRUNCATE)")
    monkeypatch.setattr(core, "FREE_WARN_BYTES", 4096)
    monkeypatch.setattr(core, "FREE_WARN_SHARE", 0.0)
    found = {c.id: c for c in _run_in_process(demo_store).checks}
    space = found["space.shared"]
    assert space.status == "warn" and "is free pages" in space.summary
    assert space.fix == f"close Kaja and the Telegram bot, then: sqlite3 {demo_store.db} VACUUM"
    assert not space.fixable


def test_a_large_wal_is_checkpointed(demo_store: Kaja, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaja_cli.core.care.doctor import databases as core

    writer = _start_writer(demo_store.db)  # holds the file: the -wal is not stale
    try:
        monkeypatch.setattr(core, "WAL_WARN_BYTES", 1024)
        report = _run_in_process(demo_store)
        space = {c.id: c for c in report.checks}["space.shared"]
        assert space.status == "warn" and "checkpoints are not keeping up" in space.summary
        assert space.fixable
        fixed = _run_in_process(demo_store, fix=True)
        assert fixed.fixes and fixed.fixes[0].done
        assert "kaja.db: checkpointed" in fixed.fixes[0].message
    finally:
        writer.kill()
        writer.wait()


def test_disk_space(demo_store: Kaja, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**10, 10**10 - 10**7, 10**7))
    found = {c.id: c for c in _run_in_process(demo_store).checks}
    assert found["disk-space"].status == "error"
    assert found["disk-space"].summary.endswith("10.0 MB free on the disk holding "
                                                f"{demo_store.state}: Kaja cannot save")  # fmt: skip
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**10, 0, 3 * 10**8))
    found = {c.id: c for c in _run_in_process(demo_store).checks}
    assert found["disk-space"].status == "warn"


def test_sync_outbox_backlog(demo_store: Kaja) -> None:
    from datetime import datetime, timedelta

    base = datetime.fromisoformat(DEMO_NOW.replace("Z", "+00:00"))
    fresh = {c.id: c for c in _run_in_process(demo_store, now=base).checks}["sync-outbox"]
    assert fresh.status == "ok"
    assert fresh.summary == "4 changes waiting to sync, the oldest from 2026-11-29T11:58:00.000Z"
    late = _run_in_process(demo_store, now=base + timedelta(days=8))
    stuck = {c.id: c for c in late.checks}["sync-outbox"]
    assert stuck.status == "warn" and stuck.summary.endswith("sync looks stuck")


def test_registry_takes_new_checks(demo_store: Kaja) -> None:
    # How the lead adds the interrupted-wipe check: one decorated function.
    from kaja_cli.core.care import doctor as core
    from kaja_cli.core.care.doctor import registry

    before = list(registry.CHECKS)
    try:

        @registry.check("wipe-marker", "paths", "an interrupted `kaja wipe`")
        def wipe_marker(ctx: core.Context) -> core.Check:
            return core.Check("wipe-marker", "paths", core.WARN, "a wipe was interrupted")

        report = _run_in_process(demo_store, only=["wipe-marker"])
    finally:
        registry.CHECKS[:] = before
    assert [(c.id, c.status) for c in report.checks] == [("wipe-marker", "warn")]
    assert report.verdict() == "0 errors, 1 warning"


def test_ctrl_c_is_never_reported_as_damage(
    demo_store: Kaja, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FTS4 answers an interrupted query with "database disk image is
    # malformed": after Ctrl-C that must end the run, not become a finding.
    from kaja_cli.core.care.doctor import search as core

    def interrupted(conn: sqlite3.Connection) -> None:
        core._INTERRUPTED.set()
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(core, "_index_in_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run_in_process(demo_store)


def test_damaged_side_database(demo_store: Kaja) -> None:
    cache = demo_store.state / "cache.db"
    cache.write_text("not a database")
    r = doctor(demo_store, "--json")
    assert r.code == 1
    found = checks_of(r)["database.cache"]
    assert found["status"] == "error" and found["group"] == "side databases"
    assert found["fix"].startswith("move it aside and Kaja creates a new one: mv -- ")
    assert "side-data.cache" not in checks_of(r)


def test_read_only_store_for_another_user(tmp_path_factory: pytest.TempPathFactory) -> None:
    # A real read-only store: root's files, read by `nobody`. SQLite cannot
    # create the -shm a WAL read needs in a folder it cannot write; doctor
    # still reads everything, changes nothing, and --fix says it cannot write.
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="kaja-ro-", dir="/tmp"))
    try:
        k = Kaja(root)
        assert k("demo", "--seed", "1", "--now", DEMO_NOW).code == 0
        sql(k.db, "DROP INDEX calls_at")
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        env = dict(env, KAJA_STATE_DIR=str(k.state), KAJA_CONFIG=str(k.config), HOME=str(root))
        before = snapshot(root)
        run = subprocess.run([*prefix, python, "-m", "kaja_cli", "doctor", "--json"],
                             env=env, capture_output=True, text=True, cwd="/")  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert snapshot(root) == before
        found = checks_of(Result(run.returncode, run.stdout, run.stderr))
        assert found["database.shared"]["status"] == "ok"
        assert found["integrity.shared"]["status"] == "ok"
        assert found["schema.shared"]["status"] == "warn"
        assert "not writable by you" in " ".join(
            [found["paths.shared_db"]["summary"], *found["paths.shared_db"]["details"]]
        )
        fixed = subprocess.run([*prefix, python, "-m", "kaja_cli", "doctor", "--fix"],
                               env=env, capture_output=True, text=True, cwd="/")  # fmt: skip
        assert f"  ✗ {k.db} is read-only: " in fixed.stdout, fixed.stdout
        assert snapshot(root) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_fix_does_not_rebuild_the_index_under_a_running_agent(demo_store: Kaja) -> None:
    sql(
        demo_store.db,
        "DELETE FROM conversation_text_docsize WHERE docid = (SELECT max(docid) FROM conversation_text_docsize)",
    )
    writer = _start_writer(demo_store.db)
    try:
        fixed = demo_store("doctor", "--fix", "--check", "search-index")
        assert (
            f"  ✗ kaja.db: not rebuilding the search index while it is in use by process {writer.pid}"
            in fixed.out
        )
        assert "close Kaja and the Telegram bot, then run kaja doctor --fix again" in fixed.out
    finally:
        writer.kill()
        writer.wait()


def test_check_selectors_that_name_nothing_are_usage_errors(demo_store: Kaja) -> None:
    for sel, said in (
        ("integrity.bogus", "no database 'bogus' for integrity"),
        ("paths.zzz", "paths has no result 'paths.zzz'"),
        ("nope", "no check 'nope'"),
    ):
        r = demo_store("doctor", "--check", sel)
        assert r.code == 2 and said in r.err and r.out == "", (sel, r)
    assert demo_store("doctor", "--check", "paths.shared_db").code == 0


def test_an_index_build_cut_short_is_described_and_finished_by_fix(demo_store: Kaja) -> None:
    n = sql(demo_store.db, "SELECT count(*) FROM messages")[0][0]
    sql(
        demo_store.db,
        f"INSERT INTO counters (name, value) VALUES ('search:fill', 'upto={n} done=10')",
    )
    r = doctor(demo_store, "--json")
    found = checks_of(r)["search-index"]
    assert (found["status"], found["summary"]) == (
        "warn",
        f"the search index is being built: 10 of {n} messages so far",
    )
    fixed = demo_store("doctor", "--fix", "--json")
    assert checks_of(fixed)["search-index"]["status"] == "ok", fixed


# --- after a crash, and every reason a file cannot be opened (issue 11) -------------------------
# Doctor never calls a store damaged, truncated or unopenable when SQLite
# opens it and checks it as sound; each reason it cannot open one is named.
NEVER_ABOUT_A_SOUND_STORE = ("damaged", "truncated", "cannot be opened")


def assert_called_sound(r: Result) -> None:
    said = [c["summary"] for c in checks_of(r).values()]
    assert not [s for s in said if any(w in s for w in NEVER_ABOUT_A_SOUND_STORE)], said


def test_a_hot_journal_is_named_and_fix_rolls_it_back(demo_store: Kaja) -> None:
    journal = kill_mid_transaction(demo_store.db)
    r = doctor(demo_store, "--json")  # reads it as found: nothing is rolled back
    assert r.code == 0, r
    assert_called_sound(r)
    found = checks_of(r)
    recovery = found["recovery.shared"]
    assert recovery["status"] == "warn" and recovery["fixable"] is True
    assert recovery["summary"] == (
        f"kaja.db: an interrupted write left kaja.db-journal"
        f" ({human_size(journal.stat().st_size)}) to roll back"
    )
    assert "until then the other checks of this file cannot run" in recovery["details"]
    assert found["database.shared"]["status"] == "ok"  # SQLite: looked at once rolled back
    assert "integrity.shared" not in found and "orphans.messages" not in found
    assert found["recovery.cache"]["summary"] == "cache.db: no interrupted write to roll back"

    fixed = demo_store("doctor", "--fix")
    lines = fixed.out.splitlines()
    assert "  ✓ kaja.db: rolled back the interrupted write (kaja.db-journal)" in lines, fixed.out
    assert "  ✓ kaja.db: switched to WAL mode" in lines, fixed.out
    assert "  ✓ kaja.db: quick_check passed" in lines  # the other checks ran on the recovered file
    assert only_the_demos_age(fixed.out), fixed
    assert not journal.exists()
    assert sql(demo_store.db, "SELECT count(*) FROM messages WHERE content LIKE '% (edited)'") == [
        (0,)
    ]


def test_a_hot_journal_in_another_programs_file_is_never_rolled_back(kaja: Kaja) -> None:
    other = kaja.root / "recipes.db"
    sql(other, "CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT)",
        "INSERT INTO messages (content) VALUES " + ", ".join(["('" + "soup " * 200 + "')"] * 100))  # fmt: skip
    journal = kill_mid_transaction(other)
    r = doctor(kaja, "--json", root=("--db", str(other)))
    assert r.code == 1, r
    recovery = checks_of(r)["recovery.shared"]
    assert recovery["status"] == "error" and recovery["fixable"] is False
    assert recovery["summary"].endswith(", and recipes.db is not recognisably Kaja's")
    fixed = kaja("--db", str(other), "doctor", "--fix")
    assert "rolled back" not in fixed.out and journal.exists()


def test_a_hot_journal_in_a_store_kaja_may_not_write() -> None:
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="kaja-hot-", dir="/tmp"))
    try:
        k = Kaja(root)
        assert k("demo", "--seed", "1", "--now", DEMO_NOW).code == 0
        kill_mid_transaction(k.db)
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        env = dict(env, KAJA_STATE_DIR=str(k.state), KAJA_CONFIG=str(k.config), HOME=str(root))
        before = snapshot(root)
        run = subprocess.run([*prefix, python, "-m", "kaja_cli", "doctor", "--json"],
                             env=env, capture_output=True, text=True, cwd="/")  # fmt: skip
        assert run.returncode == 1, run.stderr
        r = Result(run.returncode, run.stdout, run.stderr)
        assert_called_sound(r)
        recovery = checks_of(r)["recovery.shared"]
        assert recovery["status"] == "error"
        assert recovery["summary"].endswith("; it needs write access to kaja.db and its folder")
        assert recovery["fix"] == "run `kaja doctor --fix` as root, the owner of kaja.db"
        assert snapshot(root) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_wal_holding_only_its_header_is_no_problem(demo_store: Kaja, tmp_path: Path) -> None:
    """What a kill -9 of a writer right after it restarted the -wal leaves:
    a 32-byte -wal and a -shm from before. A read-only open that trusts that
    -shm retries for ten seconds, then says "locking protocol"."""

    def after_the_wal_header(events: list[dict]) -> int:
        for n, e in changes(events):
            if e["path"].endswith("-wal") and e["at"] == 0 and e["size"] == 32:
                return n + 1
        raise AssertionError("no -wal header written")

    kill_at_point(demo_store, tmp_path, ["usage", "reset", "--yes"], after_the_wal_header)
    assert demo_store.db.with_name("kaja.db-wal").stat().st_size == 32
    start = time.monotonic()
    r = doctor(demo_store, "--json")
    assert time.monotonic() - start < 5
    assert r.code == 0 and problems(r) == {}, r
    assert_called_sound(r)
    assert statuses(r)["integrity.shared"] == "ok"
    fixed = demo_store("doctor", "--fix")
    assert fixed.out.startswith("fixes\n  nothing to fix\n"), fixed.out


def test_a_checkpoint_cut_short_is_not_called_truncated(kaja: Kaja, tmp_path: Path) -> None:
    """The database's first page copied from the -wal, the rest not yet: its
    header counts pages the file does not hold, and the -wal has them."""

    def second_page_of_the_last_checkpoint(events: list[dict]) -> int:
        return [n for n, e in changes(events) if e["path"] == str(kaja.db) and e["at"] == 0][-1] + 1

    kaja.state.mkdir(parents=True)
    kill_at_point(kaja, tmp_path, ["demo", "--seed", "1", "--now", DEMO_NOW],
                  second_page_of_the_last_checkpoint)  # fmt: skip
    assert int.from_bytes(kaja.db.read_bytes()[28:32], "big") * 4096 > kaja.db.stat().st_size
    r = doctor(kaja, "--json")
    assert r.code == 0, r
    assert_called_sound(r)
    found = checks_of(r)
    assert found["database.shared"]["status"] == "ok"
    assert found["integrity.shared"]["status"] == "ok"
    assert found["in-use.shared"]["summary"].startswith("kaja.db: a stale -wal (")
    cut = found["interrupted-demo"]
    assert cut["status"] == "warn" and cut["summary"].endswith(
        "was cut short: the store holds part of the sample"
    )
    assert cut["fix"] == "`kaja wipe --yes`, then `kaja demo`"


def test_a_file_format_newer_than_this_sqlite(demo_store: Kaja) -> None:
    data = bytearray(demo_store.db.read_bytes())
    data[19] = 3  # the file format's read version: no SQLite of today reads 3
    demo_store.db.write_bytes(bytes(data))
    r = doctor(demo_store, "--json")
    assert r.code == 1, r
    found = checks_of(r)["database.shared"]
    assert found["status"] == "error"
    assert found["summary"] == (
        f"kaja.db: its file format (read version 3) is newer than SQLite {sqlite3.sqlite_version} reads"
    )
    s = demo_store("sessions")
    assert s.code == 1 and s.err.startswith(
        f"kaja: {demo_store.db}: its file format (read version 3) is newer than SQLite"
    ), s


def test_a_schema_format_newer_than_this_sqlite(demo_store: Kaja) -> None:
    data = bytearray(demo_store.db.read_bytes())
    data[44:48] = (5).to_bytes(4, "big")
    demo_store.db.write_bytes(bytes(data))
    r = doctor(demo_store, "--json")
    found = checks_of(r)["database.shared"]
    assert (r.code, found["status"]) == (1, "error")
    assert found["summary"].startswith("kaja.db: its schema format (5) is newer than SQLite")


def test_a_store_upgraded_by_a_newer_kaja(demo_store: Kaja) -> None:
    sql(
        demo_store.db,
        "INSERT INTO counters (name, value) VALUES ('schema:threads-v2', '2027-01-01')",
    )
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    found = checks_of(r)["schema.shared"]
    assert found["status"] == "warn"
    assert found["summary"] == "kaja.db: upgraded by a newer kaja (step threads-v2)"
    assert found["fix"] == "update kaja: this one may not know what the newer one added"


def test_a_file_another_process_holds_exclusively_is_busy_not_broken(demo_store: Kaja) -> None:
    sql(demo_store.db, "PRAGMA journal_mode = DELETE")
    code = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(demo_store.db)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        r = doctor(demo_store, "--json")
        assert r.code == 0, r
        assert_called_sound(r)
        found = checks_of(r)
        assert found["database.shared"]["status"] == "warn"
        assert found["database.shared"]["summary"] == "kaja.db: not checked, the file is busy"
        assert found["in-use.shared"]["summary"].startswith(
            f"kaja.db: in use by process {holder.pid}"
        )
    finally:
        holder.kill()
        holder.wait()


def test_a_store_kaja_may_not_read() -> None:
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="kaja-private-", dir="/tmp"))
    try:
        k = Kaja(root)
        assert k("demo", "--seed", "1", "--now", DEMO_NOW).code == 0
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o600)  # root's own files
        env = dict(env, KAJA_STATE_DIR=str(k.state), KAJA_CONFIG=str(k.config), HOME=str(root))
        run = subprocess.run([*prefix, python, "-m", "kaja_cli", "doctor", "--json"],
                             env=env, capture_output=True, text=True, cwd="/")  # fmt: skip
        assert run.returncode == 1, run.stderr
        found = checks_of(Result(run.returncode, run.stdout, run.stderr))
        assert found["database.shared"]["summary"] == f"{k.db} cannot be read: permission denied"
        assert found["database.shared"]["fix"] == f"check its owner and mode: ls -l {k.db}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_wal_whose_shm_is_gone_is_recovered_by_fix(demo_store: Kaja) -> None:
    """A killed writer's committed rows in the -wal, its -shm deleted (a backup
    tool that skipped it): a read that changes nothing cannot see those rows,
    so doctor says so instead of checking the file without them."""
    writer = _start_writer(demo_store.db)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    demo_store.db.with_name("kaja.db-shm").unlink()
    r = doctor(demo_store, "--json")
    assert r.code == 0, r
    assert_called_sound(r)
    recovery = checks_of(r)["recovery.shared"]
    assert recovery["status"] == "warn" and recovery["fixable"] is True
    assert recovery["summary"].startswith("kaja.db: an interrupted write left kaja.db-wal (")
    assert recovery["summary"].endswith(
        "with committed changes a read-only check cannot see (its -shm is gone)"
    )
    fixed = demo_store("doctor", "--fix")
    lines = fixed.out.splitlines()
    assert "  ✓ kaja.db: recovered the committed changes in kaja.db-wal" in lines, fixed.out
    assert only_the_demos_age(fixed.out), fixed
    assert sql(demo_store.db, "SELECT key FROM notes WHERE key = 'committed'") == [("committed",)]
