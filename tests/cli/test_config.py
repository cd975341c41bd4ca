"""`kaja config show|get|set|unset|edit`: settings.toml read, changed and kept
as the person wrote it (core/settings*.py, commands/config.py)."""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.conftest import KAJA, examples
from tests.support.sessions_support import run_in_pty
from tests.support.tools import require

REAL_WORLD = """\
# Kaja settings — synced from my dotfiles, edit with care.
# Last touched: moved the store to the big disk (2026-03).

[memory]
# Where everything lives. Relative paths are relative to the state dir.
dbPath = '~/big-disk/kaja/kaja.db'   # literal string on purpose
mode   = "local"                     # cloud needs the server below
provider = "qdrant"

  [memory.qdrant]
  url = "http://localhost:6333"
  # collection = "andromeda_memory"

[usage]
enabled = true
# postgres_url = "postgresql://me@nas.local/ledger"

[logging]
retention_days = 30 # a month is plenty

[logging.database]
enabled     = true
slow_ms     = 50
retention_days = 7

# Learning is on by default; keep it.
[learning.experience]
enabled = true
"""

PASSWORD = "hunter2-s3cret"
DB_URL = f"postgresql://kaja:{PASSWORD}@db.example.com:5432/kaja?sslmode=require"


def write(kaja, text: str) -> Path:
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(text)
    return kaja.config


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def show_json(kaja, *args: str, env: dict | None = None) -> dict:
    r = kaja(*args, "config", "show", "--json", env=env)
    assert r.code == 0, r
    return json.loads(r.out)


# --- show ---------------------------------------------------------------------------------------
def test_show_without_a_file_lists_every_key_with_its_default(kaja):
    r = kaja("config", "show")
    assert r.code == 0 and r.err == "", r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert rows[0] == ["memory.dbPath", str(kaja.state / "kaja.db"), "default", ""]
    assert ["memory.mode", "local", "default", ""] in rows
    assert ["memory.artifactsPath", "", "not set", ""] in rows
    assert ["memory.qdrant.collection", "andromeda_memory", "default", ""] in rows
    assert ["memory.databaseSchema", "kaja", "default", ""] in rows
    assert ["logging.database.slow_ms", "50", "default", ""] in rows
    assert ["logging.database.retention_days", "7", "default", ""] in rows
    assert ["usage.enabled", "true", "default", ""] in rows
    assert ["logging.retention_days", "", "not set", ""] in rows
    assert ["memory.qdrant.path", "", "not set", ""] in rows
    assert ["memory.statementTimeout", "60", "default", ""] in rows
    assert len(rows) == 20


def test_show_says_where_each_value_came_from(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    env = {"USAGE_POSTGRES_URL": DB_URL, "KAJA_ACCOUNT": "ana@example.com"}
    s = show_json(kaja, "--db", str(tmp_path / "flag.db"), env=env)
    got = {k: (v["value"], v["source"]) for k, v in s["settings"].items()}
    assert got["memory.dbPath"] == (str(tmp_path / "flag.db"), "flag --db")
    assert got["memory.mode"] == ("local", "settings file line 7")
    assert got["memory.qdrant.url"] == ("http://localhost:6333", "settings file line 11")
    assert got["memory.qdrant.collection"] == ("andromeda_memory", "default")
    assert got["logging.database.slow_ms"] == (50, "settings file line 23")
    assert got["logging.retention_days"] == (30, "settings file line 19")
    assert got["memory.account"] == ("ana@example.com", "env KAJA_ACCOUNT")
    assert got["usage.postgres_url"] == (DB_URL.replace(PASSWORD, "***"), "env USAGE_POSTGRES_URL")
    db = s["settings"]["memory.dbPath"]
    assert (db["line"], db["written"], db["env"], db["flag"]) == (
        6, "~/big-disk/kaja/kaja.db", "KAJA_DB_PATH", "--db"
    )  # fmt: skip
    assert s["settings_file"] == {"path": str(kaja.config), "source": "env KAJA_CONFIG",
                                  "exists": True}  # fmt: skip
    # Without the flag, the environment; without it, the file (resolved against HOME).
    s = show_json(kaja, env={"KAJA_DB_PATH": "elsewhere.db"})
    assert s["settings"]["memory.dbPath"]["value"] == str(kaja.state / "elsewhere.db")
    assert s["settings"]["memory.dbPath"]["source"] == "env KAJA_DB_PATH"
    s = show_json(kaja)
    assert s["settings"]["memory.dbPath"]["value"] == str(kaja.home / "big-disk/kaja/kaja.db")


def test_show_json_piped_to_jq(kaja):
    write(kaja, '[memory]\nmode = "cloud"\n\n[memory.qdrant]\ncolection = "x"\n')
    require("jq")
    script = (
        f"{KAJA} config show --json | jq -r "
        '\'.settings["memory.mode"].value, .settings["memory.mode"].source, '
        ".unknown[0].key, .unknown[0].did_you_mean, .unknown[0].line'"
    )
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=kaja.env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "cloud", "settings file line 2", "memory.qdrant.colection", "memory.qdrant.collection", "5",
    ]  # fmt: skip


def test_show_lists_unknown_keys_with_a_guess(kaja):
    write(kaja, '[memory]\ndbpath = "x.db"\n\n[telegram]\ntoken = "123:ABC"\n')
    r = kaja("config", "show")
    assert r.code == 0, r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert rows[-2:] == [
        [
            "memory.dbpath",
            "x.db",
            "settings file line 2",
            "unknown key: did you mean memory.dbPath?",
        ],
        ["telegram.token", "***", "settings file line 5", "unknown key"],
    ]
    assert "123:ABC" not in r.out + r.err


def test_show_flags_a_bad_value_instead_of_failing(kaja):
    write(kaja, '[memory]\nmode = "moon"\n')
    s = show_json(kaja)
    assert s["settings"]["memory.mode"]["value"] == "moon"
    assert s["settings"]["memory.mode"]["problem"] == (
        "memory.mode must be local or cloud, not 'moon'"
    )
    # Every other command refuses such a file, naming the line.
    r = kaja("config", "paths")
    assert r.code == 1
    assert r.err.startswith(f"kaja: {kaja.config}:2: memory.mode must be local or cloud")


def test_show_on_a_terminal_is_a_table(kaja):
    write(kaja, '[memory]\nmode = "cloud"\n')
    code, screen = run_in_pty([KAJA, "config", "show"], kaja.env)
    assert code == 0, screen
    assert f"{kaja.config} (env KAJA_CONFIG)" in screen
    assert "memory.mode" in screen and "settings file line 2" in screen


# --- get ----------------------------------------------------------------------------------------
def test_get_prints_the_value_alone(kaja):
    write(kaja, REAL_WORLD)
    for key, value in [
        ("memory.mode", "local"),
        ("memory.dbPath", str(kaja.home / "big-disk/kaja/kaja.db")),
        ("memory.qdrant.collection", "andromeda_memory"),
        ("logging.database.slow_ms", "50"),
        ("usage.enabled", "true"),
    ]:
        r = kaja("config", "get", key)
        assert (r.code, r.out, r.err) == (0, value + "\n", ""), key


def test_get_exit_codes(kaja):
    r = kaja("config", "get", "memory.artifactsPath")
    assert (r.code, r.out) == (3, "")
    assert r.err == "kaja: memory.artifactsPath is not set and has no default\n"
    r = kaja("config", "get", "memory.mdoe")
    assert (r.code, r.err) == (2, "kaja: unknown key 'memory.mdoe' (did you mean memory.mode?)\n")
    r = kaja("config", "get", "memory")
    assert r.code == 2 and "memory is a table, not a key; its keys: memory.dbPath" in r.err
    write(kaja, "[logging.database]\nslow_ms = 'fast'\n")
    r = kaja("config", "get", "logging.database.slow_ms")
    assert r.code == 1
    assert r.err == (
        f"kaja: {kaja.config}:2: logging.database.slow_ms must be a whole number "
        "from 0 to 600000, not 'fast'\n"
    )
    write(kaja, "[memory\n")
    r = kaja("config", "get", "memory.mode")
    assert r.code == 1 and r.err.startswith(f"kaja: {kaja.config}:1:") and "invalid TOML" in r.err


def test_a_bad_value_of_the_agents_settings_stops_no_command(demo_store):
    """Only keys that say where the data is fail every command; the rest is
    the agent's business: commands go on, doctor warns, `get` of it fails."""
    write(demo_store, "[memory]\nprovider = 'mem0'\n\n[logging.database]\nslow_ms = 'fast'\n")
    r = demo_store("sessions", "--json")
    assert r.code == 0 and r.err == "" and json.loads(r.out)["sessions"]
    r = demo_store("doctor", "--check", "settings", "--json")
    assert r.code == 0, r
    checks = {c["id"]: c for c in json.loads(r.out)["checks"]}
    values = checks["settings.values"]
    assert values["status"] == "warn"
    assert values["summary"] == "2 settings in settings.toml with a value that is not allowed"
    assert values["details"][:2] == [
        "line 2: memory.provider must be local or qdrant, not 'mem0'",
        "line 5: logging.database.slow_ms must be a whole number from 0 to 600000, not 'fast'",
    ]
    assert demo_store("config", "get", "logging.database.slow_ms").code == 1
    write(demo_store, "[memory]\nmode = 'moon'\n")  # where the data is: every command stops
    r = demo_store("sessions")
    assert r.code == 1 and "memory.mode must be local or cloud, not 'moon'" in r.err


# --- set ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "value", "old", "new"),
    [
        ("memory.mode", "cloud", 'mode   = "local"                     # cloud needs the server below',
         'mode   = "cloud"                     # cloud needs the server below'),
        ("memory.dbPath", "/data/kaja.db", "dbPath = '~/big-disk/kaja/kaja.db'   # literal string on purpose",
         "dbPath = '/data/kaja.db'   # literal string on purpose"),
        ("logging.database.slow_ms", "200", "slow_ms     = 50", "slow_ms     = 200"),
        ("logging.retention_days", "60", "retention_days = 30 # a month is plenty",
         "retention_days = 60 # a month is plenty"),
        ("learning.experience.enabled", "no", "enabled = true", "enabled = false"),
    ],
)  # fmt: skip
def test_set_changes_one_line_of_a_commented_file(kaja, key, value, old, new):
    write(kaja, REAL_WORLD)
    r = kaja("config", "set", key, value)
    assert r.code == 0 and r.out == "", r
    assert changed_lines(REAL_WORLD, kaja.config.read_text()) == [f"-{old}", f"+{new}"]
    assert kaja("config", "get", key).out in (f"{value}\n", "false\n")


def test_set_adds_keys_and_tables_where_they_belong(kaja):
    write(kaja, REAL_WORLD)
    assert kaja("config", "set", "memory.qdrant.collection", "notes").code == 0
    assert kaja("config", "set", "memory.account", "ana@example.com").code == 0
    after = kaja.config.read_text()
    assert changed_lines(REAL_WORLD, after) == [
        '+account = "ana@example.com"', '+  collection = "notes"',
    ]  # fmt: skip
    assert '  url = "http://localhost:6333"\n  collection = "notes"\n' in after
    assert 'provider = "qdrant"\naccount = "ana@example.com"\n' in after
    # A nested table the file does not have yet.
    write(kaja, "[logging]\nretention_days = 30\n\n[usage]\nenabled = true\n")
    r = kaja("config", "set", "logging.database.slow_ms", "10")
    assert r.code == 0, r
    assert kaja.config.read_text() == (
        "[logging]\nretention_days = 30\n\n[logging.database]\nslow_ms = 10\n\n"
        "[usage]\nenabled = true\n"
    )


def test_set_creates_a_private_file(kaja):
    r = kaja("config", "set", "memory.mode", "cloud")
    assert r.code == 0, r
    assert r.err == f'kaja: memory.mode = "cloud" in {kaja.config} line 2\n'
    assert kaja.config.read_text() == '[memory]\nmode = "cloud"\n'
    assert kaja.config.stat().st_mode & 0o777 == 0o600
    assert kaja.config.parent.stat().st_mode & 0o777 == 0o700
    assert not kaja.state.exists()  # the store is not touched
    leftovers = sorted(p.name for p in kaja.config.parent.iterdir())
    assert leftovers == [".settings.toml.lock", "settings.toml"]  # no temp file left


def test_set_rejects_bad_values_with_what_is_allowed(kaja):
    write(kaja, REAL_WORLD)
    cases = {
        ("memory.mode", "moon"): "memory.mode must be local or cloud, not 'moon'",
        ("logging.database.slow_ms", "-1"): "logging.database.slow_ms must be a whole number from 0 to 600000, not -1",
        ("logging.database.slow_ms", "fast"): "logging.database.slow_ms must be a whole number from 0 to 600000, not 'fast'",
        ("usage.enabled", "maybe"): "usage.enabled must be true or false, not 'maybe'",
        ("memory.dbPath", " "): "memory.dbPath must be a file path, not ' '",
        ("memory.databaseSchema", "my-schema"): "memory.databaseSchema must be a PostgreSQL schema name (letters, digits, _; at most 63), not 'my-schema'",
        ("memory.qdrant.url", "localhost:6333"): "memory.qdrant.url must be a URL starting with http:// or https://, not 'localhost:6333'",
    }  # fmt: skip
    for (key, value), message in cases.items():
        r = kaja("config", "set", key, value)
        assert (r.code, r.err) == (2, f"kaja: {message}\n"), (key, value)
    assert kaja.config.read_text() == REAL_WORLD


def test_set_refuses_unknown_keys_unless_forced(kaja):
    write(kaja, REAL_WORLD)
    r = kaja("config", "set", "memory.dbpath", "x.db")
    assert r.code == 2
    assert r.err == (
        "kaja: unknown key 'memory.dbpath' (did you mean memory.dbPath?): --force writes it anyway\n"
    )
    assert kaja.config.read_text() == REAL_WORLD
    r = kaja("config", "set", "--force", "telegram.chat_ids", "[1, 2]")
    assert r.code == 0, r
    r = kaja("config", "set", "--force", "telegram.name", "Kaja bot")
    assert r.code == 0, r
    r = kaja("config", "set", "--force", "telegram.chat_ids", "[1, 2, 3]")
    assert r.code == 0, r
    data = tomllib.loads(kaja.config.read_text())
    assert data["telegram"] == {"chat_ids": [1, 2, 3], "name": "Kaja bot"}
    r = kaja("config", "set", "--force", "memory.mode.x", "1")
    assert r.code == 2 and "memory.mode is a value, not a table" in r.err
    for force in ([], ["--force"]):
        r = kaja("config", "set", *force, "memory", "1")
        assert (r.code, r.err) == (2, "kaja: memory is a table, not a key; its keys: memory.dbPath, "
                                      "memory.mode, memory.artifactsPath, memory.provider, "
                                      "memory.databaseUrl, memory.readUrl, memory.account, memory.databaseSchema, "
                                      "memory.statementTimeout, memory.qdrant.url, memory.qdrant.path, "
                                      "memory.qdrant.collection\n")  # fmt: skip


def test_set_of_the_same_value_does_not_write(kaja):
    write(kaja, REAL_WORLD)
    before = kaja.config.stat()
    r = kaja("config", "set", "memory.mode", "local")
    assert r.code == 0
    assert r.err == f'kaja: memory.mode is already "local" in {kaja.config}; nothing to change\n'
    assert kaja.config.stat().st_ino == before.st_ino
    assert kaja.config.stat().st_mtime_ns == before.st_mtime_ns


def test_set_says_when_the_environment_overrides_the_file(kaja):
    r = kaja("config", "set", "memory.dbPath", "a.db", env={"KAJA_DB_PATH": "b.db"})
    assert r.code == 0
    assert r.err.splitlines()[-1] == (
        "kaja: KAJA_DB_PATH is set here, and overrides memory.dbPath wherever it is set"
    )


def test_a_malformed_file_is_never_written(kaja):
    broken = REAL_WORLD.replace('mode   = "local"', 'mode   = "local')
    write(kaja, broken)
    for argv in (["set", "memory.mode", "cloud"], ["unset", "memory.mode"]):
        r = kaja("config", *argv)
        assert r.code == 1, r
        assert r.err.startswith(f"kaja: {kaja.config}:7:") and "invalid TOML" in r.err
        assert r.err.count("\n") == 1
        assert kaja.config.read_text() == broken
    assert sorted(p.name for p in kaja.config.parent.iterdir()) == [
        ".settings.toml.lock", "settings.toml",
    ]  # fmt: skip


def test_a_read_only_file_is_left_alone(kaja):
    write(kaja, REAL_WORLD)
    kaja.config.chmod(0o444)
    for argv in (["set", "memory.mode", "cloud"], ["unset", "memory.mode"]):
        r = kaja("config", *argv)
        assert r.code == 5, r
        assert r.err == (
            f"kaja: {kaja.config} is read-only (mode 0444): kaja leaves it as it is: "
            "make it writable (chmod u+w) to let kaja change it\n"
        )
    assert kaja.config.read_text() == REAL_WORLD
    assert kaja.config.stat().st_mode & 0o777 == 0o444


def test_a_symlinked_settings_file_is_edited_at_its_target(kaja, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "kaja.toml"
    real.write_text(REAL_WORLD)
    kaja.config.parent.mkdir(parents=True)
    kaja.config.symlink_to(real)
    r = kaja("config", "set", "memory.mode", "cloud")
    assert r.code == 0, r
    assert r.err == f'kaja: memory.mode = "cloud" in {real} line 7 (was "local")\n'
    assert kaja.config.is_symlink() and os.readlink(kaja.config) == str(real)
    assert len(changed_lines(REAL_WORLD, real.read_text())) == 2
    assert (dotfiles / ".kaja.toml.lock").exists()  # the lock is beside the real file
    assert kaja("config", "unset", "memory.mode").code == 0
    assert kaja.config.is_symlink() and "mode" not in tomllib.loads(real.read_text())["memory"]


def test_a_symlink_kaja_did_not_expect_is_refused(kaja, tmp_path):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.symlink_to(tmp_path / "missing.toml")  # dangling
    r = kaja("config", "set", "memory.mode", "cloud")
    assert r.code == 5 and "which does not exist" in r.err, r
    assert not (tmp_path / "missing.toml").exists()
    kaja.config.unlink()
    os.mkfifo(tmp_path / "fifo")
    kaja.config.symlink_to(tmp_path / "fifo")
    r = kaja("config", "set", "memory.mode", "cloud", timeout=20)
    assert r.code == 5 and "not a regular file" in r.err, r


def test_a_fifo_settings_file_never_hangs(kaja):
    kaja.config.parent.mkdir(parents=True)
    os.mkfifo(kaja.config)
    for argv, code in [
        (["config", "set", "memory.mode", "cloud"], 5),
        (["config", "unset", "memory.mode"], 5),
        (["config", "edit"], 5),
        (["config", "get", "memory.mode"], 1),
        (["config", "show"], 1),
        (["config", "paths"], 1),
        (["sessions"], 1),
    ]:
        start = time.monotonic()
        r = kaja(*argv, timeout=20, env={"EDITOR": "true"})
        assert r.code == code, (argv, r)
        assert "not a regular file" in r.err and r.err.count("\n") == 1, r
        assert time.monotonic() - start < 10


def test_the_store_is_never_taken_for_a_settings_file(demo_store):
    db = demo_store.db
    before = db.read_bytes()
    for name in ("kaja.db", "kaja.db-wal", "files/x.toml"):
        r = demo_store(
            "--config", str(demo_store.state / name), "config", "set", "memory.mode", "cloud"
        )
        assert r.code == 5, r
        assert "part of Kaja's store" in r.err
    assert db.read_bytes() == before


def test_concurrent_sets_from_two_processes_keep_both(kaja):
    write(kaja, REAL_WORLD)
    rounds = 12
    loops = [
        subprocess.Popen(
            ["sh", "-c", f'for i in $(seq 1 {rounds}); do {KAJA} config set {key} "$i" || exit 1; done'],
            env=kaja.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for key in ("logging.database.slow_ms", "logging.database.retention_days")
    ]  # fmt: skip
    torn = 0
    while any(p.poll() is None for p in loops):
        try:  # a reader between the writes always sees a whole file
            tomllib.loads(kaja.config.read_text())
        except tomllib.TOMLDecodeError:
            torn += 1
        time.sleep(0.005)
    errors = [p.stderr.read() for p in loops]
    assert [p.returncode for p in loops] == [0, 0], errors
    assert torn == 0
    data = tomllib.loads(kaja.config.read_text())
    assert data["logging"]["database"] == {"enabled": True, "slow_ms": rounds,
                                           "retention_days": rounds}  # fmt: skip
    after = kaja.config.read_text()
    assert changed_lines(REAL_WORLD, after) == [
        "-slow_ms     = 50", "-retention_days = 7",
        f"+slow_ms     = {rounds}", f"+retention_days = {rounds}",
    ]  # fmt: skip


def test_a_writer_that_cannot_get_the_lock_fails_clearly(kaja):
    write(kaja, REAL_WORLD)
    lock = kaja.config.with_name(".settings.toml.lock")
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        start = time.monotonic()
        r = kaja("config", "set", "memory.mode", "cloud")
        waited = time.monotonic() - start
    assert r.code == 4, r
    assert r.err == (
        f"kaja: another program is changing {kaja.config} (waited 5 s): try again in a moment\n"
    )
    assert waited >= 5
    assert kaja.config.read_text() == REAL_WORLD


def test_secrets_are_never_printed(kaja):
    r = kaja("config", "set", "memory.databaseUrl", DB_URL)
    assert r.code == 0, r
    assert PASSWORD in kaja.config.read_text()  # written, of course
    masked = DB_URL.replace(PASSWORD, "***")
    outputs = [r.out + r.err]
    for argv in (["show"], ["show", "--json"], ["get", "memory.databaseUrl"],
                 ["set", "memory.databaseUrl", DB_URL],
                 ["set", "usage.postgres_url", f"mysql://kaja:{PASSWORD}@x/y"],
                 ["unset", "memory.databaseUrl"]):  # fmt: skip
        r = kaja("config", *argv)
        outputs.append(r.out + r.err)
    r = kaja("config", "get", "usage.postgres_url",
             env={"USAGE_POSTGRES_URL": f"postgres://u@h/db?password={PASSWORD}"})  # fmt: skip
    outputs.append(r.out + r.err)
    assert r.out == "postgres://u@h/db?password=***\n"
    assert all(PASSWORD not in o for o in outputs), outputs
    assert masked in outputs[1] and masked in outputs[3]
    assert outputs[5] == (
        "kaja: usage.postgres_url must be a URL starting with postgresql:// or postgres://, "
        "not 'mysql://kaja:***@x/y'\n"
    )


# --- unset --------------------------------------------------------------------------------------
def test_unset_removes_the_line_and_an_emptied_table(kaja):
    write(kaja, REAL_WORLD)
    r = kaja("config", "unset", "logging.retention_days")
    assert r.code == 0, r
    assert r.err == f"kaja: removed logging.retention_days from {kaja.config}\n"
    assert changed_lines(REAL_WORLD, kaja.config.read_text()) == [
        "-retention_days = 30 # a month is plenty",
    ]  # fmt: skip
    r = kaja("config", "unset", "learning.experience.enabled")
    assert r.err.endswith("; the default applies: true\n")
    assert changed_lines(REAL_WORLD, kaja.config.read_text())[-2:] == [
        "-[learning.experience]", "-enabled = true",
    ]  # fmt: skip
    # A table with a comment in it stays.
    r = kaja("config", "unset", "memory.qdrant.url")
    assert "  [memory.qdrant]\n  # collection" in kaja.config.read_text()


def test_unset_of_what_is_not_there(kaja):
    write(kaja, REAL_WORLD)
    r = kaja("config", "unset", "memory.artifactsPath")
    assert (r.code, r.err) == (
        0, f"kaja: memory.artifactsPath is not set in {kaja.config}; nothing to change\n"
    )  # fmt: skip
    r = kaja("config", "unset", "memory.colour")
    assert r.code == 2 and "unknown key 'memory.colour'" in r.err
    assert kaja.config.read_text() == REAL_WORLD


def test_unset_removes_a_misspelt_key(kaja):
    write(kaja, '[memory]\nmode = "local"\ndbpath = "x.db"\n')
    r = kaja("config", "unset", "memory.dbpath")
    assert r.code == 0, r
    assert kaja.config.read_text() == '[memory]\nmode = "local"\n'


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("[logging]\nretention_days = 3\n\n[logging.databse]\n# mine\nslow_ms = 5\nenabled = false\n",
         "[logging]\nretention_days = 3\n"),
        ("[logging.databse]\nslow_ms = 5\n", ""),
        ("logging.databse.slow_ms = 5\nlogging.retention_days = 3\nlogging.databse.enabled = false\n",
         "logging.retention_days = 3\n"),
    ],
)  # fmt: skip
def test_unset_removes_a_misspelt_table(kaja, text, left):
    """What `show` lists as unknown, `unset` removes: the table with its keys."""
    write(kaja, text)
    shown = [u["key"] for u in show_json(kaja)["unknown"]]
    assert set(shown) == {"logging.databse.slow_ms", "logging.databse.enabled"} & set(
        shown) and "logging.databse.slow_ms" in shown  # fmt: skip
    r = kaja("config", "unset", "logging.databse")
    assert (r.code, r.err) == (0, f"kaja: removed logging.databse from {kaja.config}\n")
    assert kaja.config.read_text() == left
    assert show_json(kaja)["unknown"] == []


def test_set_and_show_give_a_key_in_an_unknown_table_the_same_line(kaja):
    r = kaja("config", "set", "--force", "logging.databse.slow_ms", "5")
    assert r.err == f"kaja: logging.databse.slow_ms = 5 in {kaja.config} line 2\n"
    assert kaja.config.read_text() == "[logging.databse]\nslow_ms = 5\n"
    assert show_json(kaja)["unknown"] == [
        {"key": "logging.databse.slow_ms", "line": 2, "value": 5,
         "did_you_mean": "logging.database.slow_ms"},
    ]  # fmt: skip
    row = kaja("config", "show").out.splitlines()[-1].split("\t")
    assert row[:3] == ["logging.databse.slow_ms", "5", "settings file line 2"]
    assert kaja("config", "unset", "logging.databse.slow_ms").code == 0
    assert kaja.config.read_text() == ""


def test_a_file_that_starts_with_a_byte_order_mark(kaja):
    """Notepad's UTF-8 starts with one; TOML has no place for it ("Empty key")."""
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_bytes(
        b'\xef\xbb\xbf[memory]\nmode = "local"\n\n[logging.database]\nslow_ms = 7\n'
    )
    assert kaja("config", "get", "logging.database.slow_ms").out == "7\n"
    s = show_json(kaja)
    assert s["settings"]["logging.database.slow_ms"]["source"] == "settings file line 5"
    assert kaja("sessions").code == 0
    r = kaja("config", "set", "logging.database.slow_ms", "9")
    assert (r.code, r.err) == (
        0, f"kaja: logging.database.slow_ms = 9 in {kaja.config} line 5 (was 7)\n"
    )  # fmt: skip
    # Written back without the mark, every other byte as it was.
    assert (
        kaja.config.read_bytes() == b'[memory]\nmode = "local"\n\n[logging.database]\nslow_ms = 9\n'
    )


# --- nested and unusual layouts -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "key", "value", "expected"),
    [
        ('memory = { mode = "local" }\n', "memory.mode", "cloud", 'memory = { mode = "cloud" }\n'),
        ('memory.mode = "local"\n', "memory.mode", "cloud", 'memory.mode = "cloud"\n'),
        ('[memory]\nqdrant.url = "http://a"\n', "memory.qdrant.url", "http://b",
         '[memory]\nqdrant.url = "http://b"\n'),
        ('[memory.qdrant]\nurl = "http://a"\n', "memory.mode", "cloud",
         '[memory]\nmode = "cloud"\n\n[memory.qdrant]\nurl = "http://a"\n'),
        ("# just a comment\n", "learning.experience.enabled", "off",
         "# just a comment\n\n[learning.experience]\nenabled = false\n"),
    ],
)  # fmt: skip
def test_set_in_nested_and_dotted_tables(kaja, text, key, value, expected):
    write(kaja, text)
    r = kaja("config", "set", key, value)
    assert r.code == 0, r
    assert kaja.config.read_text() == expected


def test_a_value_where_a_table_should_be(kaja):
    write(kaja, "memory = 5\n")
    r = kaja("config", "set", "memory.mode", "cloud")
    assert r.code == 1
    assert r.err == (
        "kaja: memory is a value in settings.toml, not a table: cannot set memory.mode inside it\n"
    )
    assert kaja.config.read_text() == "memory = 5\n"


def test_unknown_nested_keys_are_reported_by_doctor(kaja):
    write(kaja, '[memory.qdrant]\ncolection = "x"\n\n[logging.database]\nslow_ms = 10\n')
    r = kaja("doctor", "--json", "--check", "settings")
    checks = {c["id"]: c for c in json.loads(r.out)["checks"]}
    assert checks["settings.keys"]["summary"] == (
        "unknown keys in settings.toml: memory.qdrant.colection"
    )


# --- edit ---------------------------------------------------------------------------------------
def editor(tmp_path: Path, body: str) -> str:
    """A scripted $EDITOR: a Python script editing the file it is given."""
    script = tmp_path / "editor.py"
    script.write_text("import pathlib, sys\np = pathlib.Path(sys.argv[1])\n" + body)
    return f"{sys.executable} {script}"


def test_edit_starts_a_missing_file_from_the_template(kaja, tmp_path):
    ed = editor(
        tmp_path, "t = p.read_text()\np.write_text(t.replace('# slow_ms = 50', 'slow_ms = 5'))\n"
    )
    r = kaja("config", "edit", env={"EDITOR": ed, "VISUAL": None})
    assert r.code == 0, r
    assert r.err == f"kaja: saved {kaja.config}\n"
    text = kaja.config.read_text()
    assert text.startswith("# Kaja's settings.")
    assert '# mode = "local"  # local or cloud\n' in text
    assert "\nslow_ms = 5  # a whole number from 0 to 600000\n" in text
    assert kaja("config", "get", "logging.database.slow_ms").out == "5\n"
    assert kaja.config.stat().st_mode & 0o777 == 0o600


def test_edit_keeps_nothing_invalid(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    ed = editor(tmp_path, "p.write_text(p.read_text().replace('\"local\"', '\"moon\"'))\n")
    r = kaja("config", "edit", env={"VISUAL": ed})
    assert r.code == 1
    assert r.err == (
        f"kaja: {kaja.config}: line 7: memory.mode must be local or cloud, not 'moon': "
        "nothing was saved\n"
    )
    assert kaja.config.read_text() == REAL_WORLD
    ed = editor(tmp_path, "p.write_text(p.read_text() + '[memory\\n')\n")
    r = kaja("config", "edit", env={"VISUAL": ed})
    assert r.code == 1 and "line 29, column" in r.err and "invalid TOML" in r.err, r
    ed = editor(tmp_path, "p.write_text(p.read_text() + '[telegram]\\ntoken = \"x\"\\n')\n")
    r = kaja("config", "edit", env={"VISUAL": ed})
    assert r.code == 1 and "line 29: unknown key 'telegram'" in r.err, r
    assert kaja.config.read_text() == REAL_WORLD
    r = kaja("config", "edit", "--force", env={"VISUAL": ed})
    assert r.code == 0, r
    assert kaja.config.read_text() == REAL_WORLD + '[telegram]\ntoken = "x"\n'


def test_edit_is_how_a_broken_file_gets_fixed(kaja, tmp_path):
    broken = REAL_WORLD.replace('mode   = "local"', 'mode   = "local')
    write(kaja, broken)
    assert kaja("config", "get", "memory.mode").code == 1
    ed = editor(tmp_path, "p.write_text(p.read_text().replace('\"local ', '\"local\" '))\n")
    r = kaja("config", "edit", env={"EDITOR": ed})
    assert r.code == 0, r
    assert kaja.config.read_text() == REAL_WORLD
    assert kaja("config", "get", "memory.mode").out == "local\n"


def test_edit_offers_to_reopen_on_a_terminal(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    count = tmp_path / "count"
    ed = editor(tmp_path, (
        f"c = pathlib.Path({str(count)!r})\n"
        "n = int(c.read_text()) + 1 if c.exists() else 1\nc.write_text(str(n))\n"
        "bad, good = '\"moon\"', '\"cloud\"'\n"
        "p.write_text(p.read_text().replace('\"local\"', bad).replace(bad, bad if n == 1 else good))\n"
    ))  # fmt: skip
    code, screen = run_in_pty([KAJA, "config", "edit"], dict(kaja.env, EDITOR=ed), answer="y")
    assert code == 0, screen
    assert "line 7: memory.mode must be local or cloud, not 'moon'" in screen
    assert "Open the editor again to fix it?" in screen
    assert count.read_text() == "2"
    assert changed_lines(REAL_WORLD, kaja.config.read_text())[1].startswith('+mode   = "cloud"')


def test_edit_without_changes_or_with_a_failing_editor_writes_nothing(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    before = kaja.config.stat()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = kaja("config", "edit", env={"EDITOR": "true", "TMPDIR": str(tmp)})
    assert (r.code, r.err) == (0, f"kaja: no changes: {kaja.config} left as it was\n")
    r = kaja("config", "edit", env={"EDITOR": "false", "TMPDIR": str(tmp)})
    assert (r.code, r.err) == (1, "kaja: the editor exited with status 1: settings unchanged\n")
    r = kaja("config", "edit", env={"EDITOR": "no-such-editor --wait", "TMPDIR": str(tmp)})
    assert r.code == 1 and "cannot run the editor 'no-such-editor'" in r.err
    assert kaja.config.stat().st_mtime_ns == before.st_mtime_ns
    assert list(tmp.iterdir()) == []  # the copies are gone


@pytest.mark.process  # a hang is what is tested: a real process, with a timeout
def test_edit_when_the_editor_leaves_a_fifo_fails_instead_of_waiting(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ed = editor(tmp_path, "import os\np.unlink()\nos.mkfifo(p)\n")
    r = kaja.proc("config", "edit", env={"EDITOR": ed, "TMPDIR": str(tmp)}, timeout=60)
    assert (r.code, r.err) == (
        1, f"kaja: the editor left a FIFO where its copy of {kaja.config.name} was: nothing was saved\n"
    )  # fmt: skip
    assert kaja.config.read_text() == REAL_WORLD
    assert list(tmp.iterdir()) == []  # the copy's folder, FIFO and all, is gone


def test_edit_never_overwrites_a_change_made_meanwhile(kaja, tmp_path):
    write(kaja, REAL_WORLD)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ed = editor(tmp_path, (
        f"real = pathlib.Path({str(kaja.config)!r})\n"
        "real.write_text(real.read_text().replace('slow_ms     = 50', 'slow_ms     = 70'))\n"
        "p.write_text(p.read_text().replace('\"local\"', '\"cloud\"'))\n"
    ))  # fmt: skip
    r = kaja("config", "edit", env={"EDITOR": ed, "TMPDIR": str(tmp)})
    assert r.code == 1, r
    (kept,) = tmp.glob("kaja-settings-*/settings.toml")
    assert r.err == (
        f"kaja: your edited copy is kept in {kept}\n"
        f"kaja: {kaja.config} was changed by another program while you were editing it\n"
    )
    assert 'mode   = "cloud"' in kept.read_text()
    assert "slow_ms     = 70" in kaja.config.read_text()  # the other change stands
    assert 'mode   = "local"' in kaja.config.read_text()


def test_another_users_file_is_refused(kaja, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    other = tmp_path / "theirs.toml"
    other.write_text(REAL_WORLD)
    os.chown(other, 65534, 65534)
    kaja.config.parent.mkdir(parents=True)
    kaja.config.symlink_to(other)
    r = kaja("config", "set", "memory.mode", "cloud")
    assert (r.code, r.err) == (5, f"kaja: {kaja.config} (a link to {other}) belongs to another "
                                  "user: kaja changes only your own files\n")  # fmt: skip
    kaja.config.unlink()
    shutil.copy(other, kaja.config)
    os.chown(kaja.config, 65534, 65534)
    r = kaja("config", "unset", "memory.mode")
    assert r.code == 5 and "belongs to another user" in r.err
    assert other.read_text() == kaja.config.read_text() == REAL_WORLD


# --- completion ---------------------------------------------------------------------------------
def test_keys_and_values_complete(kaja):
    from tests.cli.test_completion import bash_complete

    assert bash_complete(kaja, "kaja config get memory.m") == ["memory.mode"]
    assert bash_complete(kaja, "kaja config set logging.database.") == [
        "logging.database.enabled", "logging.database.retention_days", "logging.database.slow_ms",
    ]  # fmt: skip
    assert bash_complete(kaja, "kaja config set memory.mode ") == ["cloud", "local"]
    assert bash_complete(kaja, "kaja config set usage.enabled f") == ["false"]
    assert bash_complete(kaja, "kaja config unset memory.q") == [
        "memory.qdrant.collection", "memory.qdrant.path", "memory.qdrant.url",
    ]  # fmt: skip


# --- the line finder, in-process -----------------------------------------------------------------
def test_key_lines_follow_strings_arrays_and_tables():
    from kaja_cli.core.store.settings import key_lines

    text = (
        '# c\n[memory]   # x\ndbPath = "a#b"  # y\n"mode" = \'local\'\n'
        'qdrant.url = """\nmulti [\n"""\narr = [\n  1, # ]\n  "x]",\n]\n'
        'when = 1979-05-27 07:32:00Z\nafter = 1\n[ logging . "database" ]\nslow_ms = 5\n'
        '[[runs]]\nx = {a = 1, b = [2]}\n[[runs]]\ny = \'lit\\\'\nz = "esc\\"q"\n'
    )
    tomllib.loads(text)
    assert key_lines(text) == {
        ("memory",): 2, ("memory", "dbPath"): 3, ("memory", "mode"): 4,
        ("memory", "qdrant", "url"): 5, ("memory", "arr"): 8, ("memory", "when"): 12,
        ("memory", "after"): 13, ("logging", "database"): 14,
        ("logging", "database", "slow_ms"): 15, ("runs",): 16, ("runs", "x"): 17,
        ("runs", "y"): 19, ("runs", "z"): 20,
    }  # fmt: skip


# --- any layout, in-process (hypothesis) ---------------------------------------------------------
FRAGMENTS = [
    "# a comment\n", "\n", '[memory]\nmode = "local"  # c\n', "[memory]\ndbPath = 'x.db'\n",
    '[memory.qdrant]\nurl = "http://a"\n', '[memory]\nqdrant.collection = "c"\n',
    "[logging]\nretention_days = 3\n", "[logging.database]\n  slow_ms = 5\n  # trailing\n",
    "[usage]\nenabled = true\n", '[telegram]\ntoken = "x"\n', "[[runs]]\nx = 1\n",
    "[learning]\nexperience.enabled = false\n", "[learning.experience]\n",
    "[memory.qdrant]\n# nothing yet\n",
]  # fmt: skip
FIRST = ["", 'memory.provider = "qdrant"\n', "logging = { retention_days = 3 }\n",
         "usage.enabled = false\n", 'memory = { mode = "cloud" }\n']  # fmt: skip


def _value_for(key) -> str:
    if key.kind == "int":
        return str(key.minimum + 1)
    if key.kind in ("choice", "url"):
        return key.choices[-1] + ("://host/db" if key.kind == "url" else "")
    return {"bool": "false", "path": "~/b.db"}.get(key.kind, "s1")


def test_set_and_unset_in_any_layout(tmp_path):
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st

    from kaja_cli.core.store.settings import keys as settings_keys
    from kaja_cli.core.store.settings import write as settings_write
    from kaja_cli.errors import KajaError

    path = tmp_path / "settings.toml"

    @settings(max_examples=examples(150),
              suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(
        first=st.sampled_from(FIRST),
        rest=st.lists(st.sampled_from(FRAGMENTS), max_size=5),
        key=st.sampled_from(sorted(settings_keys.KEYS)),
        unset=st.booleans(),
    )
    def check(first, rest, key, unset):
        text = first + "".join(rest)
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            assume(False)
        path.write_text(text)
        k = settings_keys.KEYS[key]
        try:
            if unset:
                settings_write.unset_value(path, key)
            else:
                settings_write.set_value(path, key, _value_for(k))
        except KajaError as e:  # only the refusal to reorder a layout, never a torn file
            assert "without disturbing the rest" in str(e)
            assert path.read_text() == text
            return
        after = tomllib.loads(path.read_text())
        node = after
        for part in k.parts[:-1]:
            node = node.get(part, {})
        if unset:
            assert k.leaf not in node
        else:
            assert node[k.leaf] == settings_keys.parse(k, _value_for(k))
        kept = [line for line in changed_lines(text, path.read_text()) if line.startswith("-")]
        assert len([line for line in kept if line.strip("- ") and "[" not in line]) <= 1

    check()


def test_the_settings_guide_documents_every_key():
    from kaja_cli.core.store.settings.keys import KEYS, to_text

    readme = (Path(__file__).resolve().parents[2] / "docs/guides/settings.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): [c.strip() for c in line.split("|")[2:-1]]
        for line in readme.split("## Settings", 1)[1].split("\n## ", 1)[0].splitlines()
        if line.startswith("| `")
    }
    assert list(rows) == list(KEYS)
    for name, key in KEYS.items():
        _what, _allowed, default, overrides = rows[name]
        if key.default is not None:
            assert default.startswith(f"`{to_text(key.default)}`"), name
        else:
            assert default.startswith("not set"), name
        for var in filter(None, (key.env, key.flag)):
            assert f"`{var}`" in overrides, name
