"""Helpers for test_sessions.py and test_resume.py.

- `build_foreign_store()`: a store written with plain SQL by "another
  program", not through kaja: no kaja-only objects (no search index, no
  ledger), columns missing (an older agent) and extra (a newer one, one of
  them a BLOB), a session whose messages are gone, JSON columns holding
  invalid JSON, a NULL title, an empty-string owner, image files missing.
- `run_in_pty()`: the real `kaja` with a terminal on stdin/stdout/stderr, for
  what only happens on a terminal (tables, questions, the pager).
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import sqlite3
import subprocess
import time
from pathlib import Path

# The demo store (seed 1, --now 2026-11-29T12:00:00Z) has fixed ids.
BACKUP = "01a226e4-d260-72a8-ab71-1343220d672b"  # terminal, pending approval, oversized result
TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # terminal, an image, a timeline
PRS = "01a225d4-e900-7cd7-98f1-6adf91b7584a"  # terminal, a screenshot
BUDGET = "01a215b9-6000-74bb-93e8-9d320bb662a8"  # terminal, two summaries
RECEIPT = "01a220a6-4fa0-783a-b596-41d21b5c56d3"  # telegram:482913, an image
ANA = "telegram:482913"

# The foreign store's ids share a long prefix on purpose: short ids must grow until unique.
S_UNTITLED = "0190aaaa-0000-7000-8000-000000000001"
S_EVENTS = "0190aaaa-0000-7000-8000-000000000002"
S_GONE = "0190bbbb-0000-7000-8000-000000000003"
S_WIDGET = "0190cccc-0000-7000-8000-000000000004"
SHA_MISSING = "ab" * 32


def build_foreign_store(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        f"""
        PRAGMA journal_mode = WAL;
        -- an older agent: no persona, no pendingKind; a newer one: topic, avatar
        CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt TEXT, updatedAt TEXT, model TEXT,
            title TEXT, owner TEXT, systemPrompt TEXT, pendingCallId TEXT, topic TEXT, avatar BLOB);
        -- no promptTokens, persona, latencyMs, finishReason; an extra sentiment
        CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId TEXT, seq INTEGER, role TEXT,
            content TEXT, parts TEXT, reasoning TEXT, toolCallId TEXT, model TEXT,
            completionTokens INTEGER, createdAt TEXT, sentiment TEXT);
        CREATE TABLE tool_calls (id TEXT PRIMARY KEY, messageId TEXT, position INTEGER,
            callId TEXT, name TEXT, arguments TEXT, resultMessageId TEXT, status TEXT,
            durationMs INTEGER, resultSummary TEXT);
        CREATE TABLE session_events (sessionId TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT,
            payload TEXT, PRIMARY KEY (sessionId, seq));

        INSERT INTO sessions VALUES
          ('{S_UNTITLED}', '2026-11-20T09:00:00.000Z', '2026-11-20T10:00:00.000Z', 'gpt-x',
           NULL, NULL, 'Be brief.', 'call_p1', 'travel', NULL),
          ('{S_EVENTS}', '2026-11-21T09:00:00.000Z', '2026-11-21T10:00:00.000Z', 'gpt-y',
           '[draft] budget [/x]', '', NULL, NULL, NULL, NULL),
          ('{S_GONE}', '2026-11-19T09:00:00.000Z', '2026-11-19T10:00:00.000Z', 'gpt-x',
           'Gone', 'telegram:42', NULL, NULL, NULL, NULL),
          ('{S_WIDGET}', '2026-11-18T09:00:00.000Z', '2026-11-18T10:00:00.000Z', NULL,
           'Widget chat', 'widget:zz', NULL, NULL, NULL, X'CAFE');

        INSERT INTO messages VALUES
          ('m1', '{S_UNTITLED}', 1, 'user', 'Plan a trip to Kraków', '{{not json', NULL, NULL,
           NULL, NULL, '2026-11-20T09:01:00.000Z', 'curious'),
          ('m2', '{S_UNTITLED}', 2, 'assistant', NULL, NULL, 'Trains first.', NULL, 'gpt-x',
           40, '2026-11-20T09:02:00.000Z', NULL),
          ('m3', '{S_EVENTS}', 1, 'user', 'Here is my budget',
           '[{{"type":"image","sha256":"{SHA_MISSING}","mime":"image/png"}}]', NULL, NULL, NULL,
           NULL, '2026-11-21T09:01:00.000Z', NULL),
          ('m4', '{S_EVENTS}', 2, 'assistant', NULL, NULL, NULL, NULL, 'gpt-y', 'lots',
           '2026-11-21T09:02:00.000Z', NULL),
          ('m5', '{S_EVENTS}', 3, 'tool', 'a very long spreadsheet dump', NULL, NULL, 'call_r1',
           NULL, NULL, '2026-11-21T09:03:00.000Z', NULL),
          ('m6', '{S_EVENTS}', 4, 'assistant', 'You spend most on rent.', NULL, NULL, NULL,
           'gpt-y', 12, '2026-11-21T09:04:00.000Z', NULL),
          ('m7', '{S_WIDGET}', 1, 'user', 'Hello?', NULL, NULL, NULL, NULL, NULL,
           '2026-11-18T09:01:00.000Z', NULL);

        INSERT INTO tool_calls VALUES
          ('t1', 'm2', 0, 'call_p1', 'search_trains', '{{oops', NULL, NULL, NULL, NULL),
          ('t2', 'm4', 0, 'call_r1', 'read_sheet', '{{"file": "budget.xlsx"}}', 'm5', 'ok', 1500,
           'Rent 1200, food 400.');

        INSERT INTO session_events VALUES
          ('{S_EVENTS}', 1, 'user', '{{"text": "Here is my budget"}}'),
          ('{S_EVENTS}', 2, 'image', '{{"path": "/nonexistent/kaja/{SHA_MISSING}.png"}}'),
          ('{S_EVENTS}', 3, 'tool_start', '{{"name": "read_sheet", "arguments": {{"file": "budget.xlsx"}}}}'),
          ('{S_EVENTS}', 4, 'tool_end', '{{"name": "read_sheet", "status": "ok", "durationMs": 1500}}'),
          ('{S_EVENTS}', 5, 'handoff', '{{"to": "accountant", "text": "Passed to the accountant"}}'),
          ('{S_EVENTS}', 6, 'assistant', 'not json at all'),
          ('{S_EVENTS}', 7, 'notice', NULL);
        """
    )
    conn.commit()
    conn.close()


def query_profile(path: Path) -> bool:
    """db-stats.db and its -wal/-shm: every command adds its own queries to an
    existing one when it ends (core/profiler.py), reading commands too."""
    return path.name.startswith("db-stats.db")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` with the sha256 of its content, but the query profile."""
    out = {}
    for root, _dirs, names in os.walk(folder):
        for name in names:
            p = Path(root) / name
            if query_profile(p):
                continue
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_in_pty(
    argv: list[str],
    env: dict[str, str],
    *,
    answer: str | None = None,
    rows: int = 50,
    cols: int = 160,
    timeout: float = 60,
    raw: bool = False,
) -> tuple[int, str]:
    """Run with a pseudo-terminal as stdin/stdout/stderr; (exit code, what it
    showed, without escape sequences).

    `answer` is typed once the program has printed something (a question).
    """
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
        start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    chunks: list[bytes] = []
    answered = answer is None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append(data)
            if not answered and b"?" in b"".join(chunks):
                os.write(master, answer.encode() + b"\r")
                answered = True
        elif proc.poll() is not None:
            break
    else:
        proc.kill()
    code = proc.wait(timeout=10)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, text if raw else ANSI.sub("", text)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
