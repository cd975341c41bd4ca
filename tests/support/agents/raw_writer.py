"""Another program writing the same file with plain SQL: no kaja code at all.

    python tests/support/agents/raw_writer.py DB --owner widget:zz --seconds 5

It uses only the seed's column names (a public contract), its own
connection settings (WAL, busy_timeout 5000) and one transaction per turn.
Prints "ready" after its first commit and one JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
import uuid
from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--owner", default="widget:raw")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--word", default="quokkafjord")
    args = ap.parse_args()
    conn = sqlite3.connect(args.db, isolation_level=None, timeout=5)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    committed = {"sessions": 0, "messages": 0, "turns": 0, "busy_retries": 0}
    session_ids = []
    deadline = time.monotonic() + args.seconds
    turn = 0
    sid = None
    while time.monotonic() < deadline:
        turn += 1
        new = sid is None or turn % 7 == 0
        candidate = str(uuid.uuid4()) if new else sid
        try:
            conn.execute("BEGIN IMMEDIATE")
            if new:
                conn.execute(
                    "INSERT INTO sessions (id, createdAt, updatedAt, title, owner, model) VALUES (?, ?, ?, ?, ?, ?)",
                    (candidate, now(), now(), f"Raw {turn}", args.owner, "raw-model"),
                )
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE sessionId = ?", (candidate,)
            ).fetchone()[0]
            for i, role in enumerate(("user", "assistant")):
                conn.execute(
                    "INSERT INTO messages (id, sessionId, seq, role, content, createdAt) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        str(uuid.uuid4()),
                        candidate,
                        seq + i,
                        role,
                        f"{args.word} raw turn {turn} {role}",
                        now(),
                    ),
                )
            conn.execute("UPDATE sessions SET updatedAt = ? WHERE id = ?", (now(), candidate))
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "locked" in str(e) or "busy" in str(e):
                committed["busy_retries"] += 1
                time.sleep(0.01)
                continue
            raise
        sid = candidate
        if new:
            committed["sessions"] += 1
            session_ids.append(candidate)
        committed["messages"] += 2
        committed["turns"] += 1
        if committed["turns"] == 1:
            print("ready", flush=True)
        time.sleep(0.004)
    print(json.dumps({**committed, "session_ids": session_ids}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
