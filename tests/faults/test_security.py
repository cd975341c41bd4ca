"""Security: secrets are never printed, files are private, and names from the
store never lead kaja outside files/images/."""

from __future__ import annotations

import sqlite3
import stat

import pytest

READ_COMMANDS = [
    ["config", "paths"], ["config", "paths", "--json"],
    ["sessions", "--all-owners", "--limit", "0"], ["sessions", "--all-owners", "--limit", "0", "--json"],
    ["resume"], ["resume", "--json"],
    ["usage"], ["usage", "--json"], ["usage", "--by", "day"], ["usage", "reset", "--dry-run"],
    ["wipe", "--dry-run"], ["wipe", "--dry-run", "--json"],
    ["wipe", "--owner", "telegram:482913", "--dry-run", "--json"],
    ["search", "scrypt", "--all-owners"], ["search", "token", "--all-owners", "--json"],
    ["doctor"], ["doctor", "--json"], ["doctor", "--thorough", "--json"],
    ["notes", "--all-owners"], ["notes", "export", "--all-owners", "-f", "json"],
    ["search", "--notes", "marie", "--all-owners", "--json"], ["cache"], ["cache", "--json"],
    ["accounts"], ["accounts", "--json"], ["accounts", "sessions", "marie"],
    ["accounts", "sessions", "marie", "--json"], ["accounts", "remove", "marie", "--force", "--dry-run", "--json"],
]  # fmt: skip


def secrets(kaja) -> list[str]:
    found = []
    c = sqlite3.connect(kaja.state / "web-auth.db")
    for row in c.execute("SELECT password_hash, salt FROM web_users"):
        found += row
    found += [r[0] for r in c.execute("SELECT token_hash FROM web_sessions")]
    c.close()
    c = sqlite3.connect(kaja.db)
    found += [r[0] for r in c.execute("SELECT secret FROM triggers")]
    c.close()
    assert len(found) >= 5 and all(found)
    return found


def first_terminal_session(kaja) -> str:
    c = sqlite3.connect(kaja.db)
    try:
        return c.execute("SELECT id FROM sessions WHERE owner IS NULL LIMIT 1").fetchone()[0]
    finally:
        c.close()


def test_no_command_prints_a_secret(demo_store):
    hidden = secrets(demo_store)
    sid = first_terminal_session(demo_store)
    for argv in [
        *READ_COMMANDS,
        ["sessions", "export", sid],
        ["sessions", "export", sid, "--format", "json"],
    ]:
        r = demo_store(*argv)
        assert r.code in (0, 1) if argv[0] == "doctor" else r.code == 0, (argv, r)
        for s in hidden:
            assert s not in r.out and s not in r.err, (argv, s)


def test_exported_files_are_private(demo_store):
    sid = first_terminal_session(demo_store)
    out = demo_store.root / "transcript.md"
    assert demo_store("sessions", "export", sid, "-o", str(out)).code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.fixture
def hostile(demo_store):
    """A store another program wrote with names that climb out of files/images/."""
    kaja = demo_store
    outside = kaja.root / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not kaja's")
    sibling = kaja.state / "files" / "not-images"
    sibling.mkdir(parents=True)
    (sibling / "keep.txt").write_text("not kaja's either")
    evil_ids = ["../../outside", "../not-images", "..", "/etc"]
    c = sqlite3.connect(kaja.db)
    with c:
        for i, sid in enumerate(evil_ids):
            c.execute(
                "INSERT INTO sessions (id, createdAt, updatedAt, title, owner) VALUES (?, ?, ?, ?, ?)",
                (
                    sid,
                    "2026-11-29T10:00:00.000Z",
                    "2026-11-29T10:00:00.000Z",
                    f"evil {i}",
                    "telegram:666",
                ),
            )
            c.execute(
                "INSERT INTO messages (id, sessionId, seq, role, content, parts, createdAt) VALUES (?, ?, 1, 'user', 'x', ?, ?)",
                (f"evil-m{i}", sid, '[{"type":"image","sha256":"../../../outside/keep","mime":"image/png"}]',
                 "2026-11-29T10:00:00.000Z"),
            )  # fmt: skip
        good = c.execute(
            "SELECT id FROM sessions WHERE owner = 'telegram:482913' LIMIT 1"
        ).fetchone()[0]
        c.execute(
            "UPDATE messages SET parts = ? WHERE sessionId = ?",
            (
                '[{"type":"image","sha256":"../../../../outside/keep.txt","mime":"text/plain"}]',
                good,
            ),
        )
    c.close()
    kaja.outside = outside
    kaja.sibling = sibling
    return kaja


def _untouched(kaja):
    assert (kaja.outside / "keep.txt").read_text() == "not kaja's"
    assert (kaja.sibling / "keep.txt").read_text() == "not kaja's either"


def test_hostile_names_are_never_followed_when_reading(hostile):
    for argv in (["sessions", "--all-owners"], ["resume", "--owner", "telegram:482913", "-c"],
                 ["resume", "--owner", "telegram:666", "-c", "--json"]):  # fmt: skip
        r = hostile(*argv)
        assert r.code in (0, 3), (argv, r)
        assert "not kaja's" not in r.out
    _untouched(hostile)


def test_hostile_names_are_never_followed_when_deleting(hostile):
    r = hostile("wipe", "--owner", "telegram:666", "--yes")
    assert r.code == 0, r
    _untouched(hostile)
    c = sqlite3.connect(hostile.db)
    assert c.execute("SELECT COUNT(*) FROM sessions WHERE owner = 'telegram:666'").fetchone() == (
        0,
    )
    c.close()
    r = hostile("wipe", "--yes")
    assert r.code == 0, r
    _untouched(hostile)
