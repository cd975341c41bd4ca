"""Kaja runs while you use kaja: every command in a loop beside two live writers.

One writer is agent-like (kaja's write API: sessions, messages every few
milliseconds, tool calls, ledger rows, now and then a write transaction held
for 300 ms); the other is another program writing the same file with raw SQL.
Expected: reading commands always answer (never "database is locked");
writing commands either do their job or wait and exit 4 with one clear line;
nothing the writers committed is lost; integrity and the FTS4 index check
pass afterwards.

KAJA_SOAK=SECONDS runs the long variant (default: a few seconds).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.faults import assert_store_sound

AGENTS = Path(__file__).parents[1] / "support" / "agents"
SECONDS = float(os.environ.get("KAJA_SOAK", "6"))
READING = "reading"
WRITING = "writing"


def start_writers(kaja):
    env = dict(kaja.env, PYTHONPATH=str(Path(__file__).parents[2]))
    agent = subprocess.Popen(
        [sys.executable, str(AGENTS / "kaja_agent.py"), "--owner", "telegram:999", "--seconds", str(SECONDS),
         "--long-every", "20", "--word", "zanzibarite"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    raw = subprocess.Popen(
        [sys.executable, str(AGENTS / "raw_writer.py"), str(kaja.db), "--owner", "widget:raw",
         "--seconds", str(SECONDS), "--word", "quokkafjord"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    for p in (agent, raw):
        assert p.stdout.readline().strip() == "ready"
    return agent, raw


def finish(p) -> dict:
    out, _ = p.communicate(timeout=SECONDS + 60)
    assert p.returncode == 0
    return json.loads(out.strip().splitlines()[-1])


def commands(demo_sessions: list[str]):
    """(kind, argv, allowed exit codes) for one round; deletions take a new victim each round."""
    victim = demo_sessions.pop() if demo_sessions else None
    rounds = [
        (READING, ["sessions", "--all-owners", "--limit", "0", "--json"], {0}),
        (READING, ["sessions", "--owner", "telegram:999"], {0}),
        (READING, ["resume", "-c", "--owner", "telegram:999", "--json"], {0}),
        (
            READING,
            ["resume", "-c", "--tail", "5"],
            {0, 3},
        ),  # 3 once every terminal session is deleted
        (READING, ["search", "zanzibarite", "--owner", "telegram:999", "--recent", "--json"], {0}),
        (READING, ["search", "quokkafjord", "--all-owners", "--limit", "5"], {0}),
        (READING, ["doctor", "--json"], {0}),
        (READING, ["usage", "--json"], {0}),
        (READING, ["usage", "--by", "day"], {0}),
        (READING, ["config", "paths", "--json"], {0}),
        (READING, ["sessions", "export", "--all", "--all-owners", "-f", "jsonl"], {0}),
        (READING, ["sessions", "stats", "--json"], {0}),
        (WRITING, ["usage", "reset", "--yes"], {0, 4}),
        # the demo's other owners: the writers' own rows are counted afterwards
        (
            WRITING,
            ["sessions", "prune", "--owner", "telegram:771204", "--before", "now", "--yes"],
            {0, 4},
        ),
        (WRITING, ["sessions", "archive", "01a2248a", "--owner", "widget:ab12"], {0, 4}),
        (WRITING, ["sessions", "unarchive", "01a2248a", "--owner", "widget:ab12"], {0, 4}),
        (WRITING, ["wipe", "--owner", "telegram:482913", "--yes"], {0, 3, 4}),
    ]
    if victim:
        rounds.append((WRITING, ["sessions", "delete", victim, "--yes"], {0, 3, 4}))
    return rounds


def newest_agent_message(db: Path) -> str:
    c = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return c.execute(
            "SELECT COALESCE(MAX(createdAt), '') FROM messages WHERE content LIKE 'turn %zanzibarite%'"
        ).fetchone()[0]
    finally:
        c.close()


@pytest.mark.process  # kaja as one more process beside the writers, as users run it
def test_every_command_beside_two_live_writers(demo_store):
    kaja = demo_store
    demo_sessions = [
        r[0]
        for r in sqlite3.connect(kaja.db).execute("SELECT id FROM sessions WHERE owner IS NULL")
    ]
    agent, raw = start_writers(kaja)
    ran: dict[str, int] = {}
    try:
        while agent.poll() is None or raw.poll() is None:
            for kind, argv, allowed in commands(demo_sessions):
                newest = newest_agent_message(kaja.db)
                r = kaja(*argv)
                key = " ".join(argv[:2])
                ran[key] = ran.get(key, 0) + 1
                assert "database is locked" not in r.out + r.err, (argv, r)
                assert "Traceback" not in r.err, (argv, r)
                assert r.code in allowed, (argv, r)
                if kind == READING:
                    assert r.code != 4, (argv, r)  # readers never wait out a writer
                if r.code != 0:
                    assert r.err.count("\n") == 1 and r.err.startswith("kaja: "), (argv, r)
                if r.code == 4:
                    assert "busy" in r.err or "using the store" in r.err, r
                if argv[:2] == ["search", "zanzibarite"]:
                    # what the agent wrote just before is found, newest first
                    hits = json.loads(r.out)["results"]
                    assert hits and hits[0]["created_at"] >= newest, (newest, hits[:1])
    finally:
        written = finish(agent), finish(raw)
    assert min(ran.values()) >= 1, ran

    agent_out, raw_out = written
    with closing(sqlite3.connect(kaja.db)) as c, c:

        def count(owner, table):
            if table == "sessions":
                return c.execute(
                    "SELECT COUNT(*) FROM sessions WHERE owner = ?", (owner,)
                ).fetchone()[0]
            return c.execute(
                "SELECT COUNT(*) FROM messages WHERE sessionId IN (SELECT id FROM sessions WHERE owner = ?)",
                (owner,),
            ).fetchone()[0]

        # nothing the writers committed is lost
        assert count("telegram:999", "sessions") == agent_out["sessions"] > 0
        assert count("telegram:999", "messages") == agent_out["messages"] > 0
        assert count("widget:raw", "sessions") == raw_out["sessions"] > 0
        assert count("widget:raw", "messages") == raw_out["messages"] > 0
        # and what was erased on purpose is gone
        assert (
            c.execute("SELECT COUNT(*) FROM sessions WHERE owner = 'telegram:482913'").fetchone()[0]
            == 0
        )
    assert_store_sound(kaja.state)
