"""One session holding what another program (or a careless one) may store, for
the exports' reference test (tests/cli/test_export.py): control characters
(ESC, C1, DEL, NUL), BiDi controls, tabs and CRLF, backtick runs longer than a
fence, `parts` and `arguments` that are not JSON or nest too deep, an image
part spelled with a JSON escape, images present and missing, a BLOB, a
number and an infinity where text is expected, bytes that are not UTF-8,
a huge tool result, an unknown role and event type, summaries and a pending
call. Every value is fixed: the exports of this session are compared byte
for byte with the files in `export_reference/` (the state dir's path written
as `<STATE>`), written by kaja before the exports' fast path."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SID = "01a00000-0000-7000-8000-00000000a1a1"
OWNER = "telegram:77"
SHA_HERE = "c0" * 32
SHA_GONE = "d1" * 32
SHA_ESCAPED = "e2" * 32
REFERENCE = Path(__file__).resolve().parent / "export_reference"
# The smallest PNG: one transparent pixel.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)

_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt, updatedAt, persona, model, title, owner,
    systemPrompt, pendingCallId, pendingKind);
CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, seq INTEGER, role, content, parts,
    reasoning, toolCallId, persona, model, promptTokens INTEGER, completionTokens INTEGER,
    latencyMs INTEGER, finishReason, createdAt, mood);
CREATE TABLE tool_calls (id TEXT PRIMARY KEY, messageId, position INTEGER, callId, name,
    arguments, resultMessageId, status, durationMs INTEGER, approval, resultSummary);
CREATE TABLE session_summaries (sessionId TEXT NOT NULL, summaryFrom INTEGER NOT NULL, summary,
    createdAt, PRIMARY KEY (sessionId, summaryFrom));
CREATE TABLE model_calls (sessionId, kind, model, promptTokens INTEGER,
    completionTokens INTEGER, latencyMs INTEGER, createdAt);
CREATE TABLE session_events (sessionId TEXT NOT NULL, seq INTEGER NOT NULL, type, payload,
    PRIMARY KEY (sessionId, seq));
"""


def seq_index(state: Path) -> None:
    """The agent's index of a session's messages by seq (the awkward schema has
    none): what the exports' pages read by (`transcript._Reader._seq_indexed`)."""
    conn = sqlite3.connect(state / "kaja.db")
    with conn:
        conn.execute(
            'CREATE INDEX IF NOT EXISTS messages_session_seq ON messages ("sessionId", seq)'
        )
    conn.close()


def _at(minute: int) -> str:
    return f"2026-11-03T10:{minute:02d}:00.000Z"


def build(state: Path) -> None:
    """The store (`kaja.db`) and its image file under the state dir `state`."""
    state.mkdir(parents=True, exist_ok=True)
    folder = state / "files" / "images" / SID
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{SHA_HERE}.png").write_bytes(PNG)
    conn = sqlite3.connect(state / "kaja.db")
    conn.executescript("PRAGMA journal_mode = WAL;" + _SCHEMA)
    deep = "[" * 260 + "]" * 260
    huge = "line\tcell\x1b[2m dim\x1b[0m ``` ✓\n" * 40_000 + "end"
    image = f'{{"type":"image","sha256":"{SHA_HERE}","mime":"image/png"}}'
    gone = f'{{"type":"image","sha256":"{SHA_GONE}","mime":"image/jpeg"}}'
    escaped = f'{{"type":"\\u0069mage","sha256":"{SHA_ESCAPED}","mime":"image/webp"}}'
    with conn:
        conn.execute(
            "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?)",
            (SID, _at(0), _at(59), "coach\u202e", "gpt-\x1bx", "Plans \x1b[31mred\x1b[0m \u202eevil",
             OWNER, "Be brief.\n````\nno fences\x07\n", "call_wait", "approval"),
        )  # fmt: skip
        rows = [
            # id, seq, role, content, parts, reasoning, toolCallId, model, createdAt, mood
            ("m01", 1, "user", "Hi\r\nthere\x00 \x9b1m \u2066iso\u2069 \x7f tab\there", None,
             None, None, None, _at(1), "calm"),
            ("m02", 2, "assistant", "Sure: `one` and ``two`` and\n````\ncode\n````", None,
             "Think \x1b]0;title\x07 first", None, "gpt-\x1bx", _at(2), None),
            ("m03", 3, "tool", huge, None, None, "call_a", None, _at(3), None),
            ("m04", 4, "user", "Parts broken", "[{broken", None, None, None, _at(4), None),
            ("m05", 5, "user", "Pictures", f"[{image},{gone},{escaped}]", None, None, None,
             _at(5), None),
            ("m06", 6, None, b"\x00\xffblob", None, None, None, None, _at(6), None),
            ("m07", 7, "system", 42, deep, None, None, None, _at(7), None),
            ("m08", 8, "critic", 1e999, "{}", None, None, None, _at(8), None),
            ("m09", 9, "user", None, None, None, None, None, None, None),
            ("m10", 10, "tool", "result by call id", None, None, "call_b", None, _at(10), None),
            ("m11", 11, "assistant", "", "[]", None, None, "gpt-y", _at(11), None),
            ("m12", 12, "tool", "orphan result", None, None, "call_none", None, _at(12), None),
            # Plain messages, some of which SQLite writes itself (core/conversations/pieces.py):
            ("m14", 14, "assistant", "plain \u202e answer", None, None, None, "gpt\t-tab", _at(14),
             None),
            ("m15", 15, "assistant", "ok\r\n", None, "", None, "gpt-\x1b\x9bz", "2026\x0bvt",
             None),
            ("m16", 16, "user", "a & b < c > d \"q\" 'x' \\ `t`", None, None, None, "m<b>", _at(16),
             None),
            ("m17", 17, "assistant", "", None, "", None, "", "", None),
            ("m18", 18, "user", 0, None, None, None, None, _at(18), None),
            ("m19", 19, "user", "nul\x00after\x1b", None, None, None, None, "2026\x00x", None),
            ("m20", 20, "assistant", "fine", None, None, None, "gpt-z\x7f", _at(20), None),
        ]  # fmt: skip
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, parts, reasoning,"
            " toolCallId, model, createdAt, mood) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(r[0], SID, *r[1:]) for r in rows],
        )
        conn.execute(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES ('m13', ?, 13, 'user', CAST(x'6361e4206f6b' AS TEXT), ?)",
            (SID, _at(13)),
        )
        calls = [
            ("t1", "m02", 0, "call_a", "read\x1b_file", '{"path": "/tmp/a\\u001b.txt", "n": [1, 2.5, null]}',
             "m03", "ok", 1234, "auto", "Long file \u202e summarized"),
            ("t2", "m02", 1, "call_b", "shell", "{not json", None, "error", 65_000, None, None),
            ("t3", "m11", 0, "call_wait", "deploy", '{"where": "prod"}', None, None, None, None,
             None),
            ("t4", "m11", 1, "call_deep", "nest", deep, None, "declined", None, "asked", None),
        ]  # fmt: skip
        conn.executemany("INSERT INTO tool_calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", calls)
        conn.executemany(
            "INSERT INTO session_summaries VALUES (?, ?, ?, ?)",
            [(SID, 4, "Earlier: \x1b[1mbold\x1b[0m plans\nsecond line", _at(20)),
             (SID, 99, "After the end", _at(21))],
        )  # fmt: skip
        conn.execute("INSERT INTO model_calls VALUES (?, 'title', 'gpt-y', 10, 2, 300, ?)",
                     (SID, _at(22)))  # fmt: skip
        events = [
            (1, "user", '{"text": "Hi"}'),
            (2, "notice", '{"text": "Waiting \\u001b[5m for approval"}'),
            (3, "assistant", '{"text": "Sure"}'),
            (4, "tool_start", '{"name": "read_file"}'),
            (5, "error", '{"text": "boom\\u202e"}'),
            (6, "handoff", '{"to": "accountant"}'),
            (7, "mystery", "not json"),
            (8, "tool_start", '{"name": "shell"}'),
            (9, "notice", None),
            (10, "user", '{"text": "more"}'),
            (11, "user", '{"text": "and more"}'),
            (12, "user", '{"text": "beyond the messages"}'),
            (13, "error", '{"text": "at the very end"}'),
        ]  # fmt: skip
        conn.executemany(
            "INSERT INTO session_events VALUES (?, ?, ?, ?)", [(SID, *e) for e in events]
        )
    conn.close()
