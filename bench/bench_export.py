"""`sessions export --all -f jsonl` of every session of the benchmark store
(issue 19), against the `sqlite3` command line running, for every session,
the queries `core/export.py` runs (the session row, summaries, timeline,
model calls, the message count, and one row of JSON per message), taken from
kaja's own query builders, from a script file, output to /dev/null.

Goal: at most 1.3× its floor (issue 19).

`sessions export ID` of the largest session (issue 29), Markdown, HTML and
JSON, each against two floors, output to /dev/null: the `sqlite3` command
line printing that session's rows (the session, its summaries, timeline
events and model calls, its messages and their tool calls, every column,
`SELECT *`): what the data costs to read and print, whatever kaja makes of
it; and the `sqlite3` command line printing the session's messages with
their tool calls as JSON (a `json_object` of every column per message, its
calls a `json_group_array` of theirs, in kaja's order), what the heart of
the JSON export costs in SQLite alone (issue 40). Goals, on both floors:
Markdown and HTML at most 3×, JSON at most 2×.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from bench_sessions import inline

from kaja_cli.core.conversations import transcript

EXPORT_GOAL = 1.3
ONE_GOALS = {"md": 3.0, "html": 3.0, "json": 2.0}  # issue 29


def _rows_script(sid: str) -> str:
    """The sqlite3 CLI printing one session's rows, every column (the floor of
    `sessions export ID`)."""
    return "\n".join([
        inline("SELECT * FROM sessions WHERE id = ?", (sid,)),
        inline('SELECT * FROM session_summaries WHERE "sessionId" = ? ORDER BY "summaryFrom"', (sid,)),
        inline('SELECT * FROM session_events WHERE "sessionId" = ? ORDER BY seq', (sid,)),
        inline('SELECT * FROM model_calls WHERE "sessionId" = ? ORDER BY "createdAt"', (sid,)),
        inline('SELECT * FROM messages WHERE "sessionId" = ? ORDER BY seq, "createdAt", id', (sid,)),
        inline('SELECT t.* FROM messages AS m JOIN tool_calls AS t ON t."messageId" = m.id'
               ' WHERE m."sessionId" = ? ORDER BY m.seq, m."createdAt", m.id, t.position', (sid,)),
    ])  # fmt: skip


def _object(alias: str, names: list[str]) -> str:
    """`json_object()` of every column `names` of the row `alias`."""
    return "json_object(" + ", ".join(f"'{n}', {alias}.\"{n}\"" for n in names) + ")"


def _json_script(conn: sqlite3.Connection, sid: str) -> str:
    """The sqlite3 CLI printing one session's messages with their tool calls as
    JSON, every column, in kaja's order (the second floor of `sessions export
    ID`, issue 40)."""
    m = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
    t = [r[1] for r in conn.execute("PRAGMA table_info(tool_calls)")]
    calls = (f"(SELECT json_group_array({_object('t', t)}) FROM (SELECT * FROM tool_calls"
             ' WHERE "messageId" = m.id ORDER BY position) AS t)')  # fmt: skip
    obj = _object("m", m)[:-1] + f", 'tool_calls', json({calls}))"
    return inline(f'SELECT {obj} FROM messages AS m WHERE m."sessionId" = ?'
                  ' ORDER BY m.seq, m."createdAt", m.id', (sid,))  # fmt: skip


def one_session(bench) -> None:
    """`sessions export ID` of the largest session, each format, against its
    rows and against its messages as JSON."""
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        sid, owner, count = conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()
        as_json = bench.sqlite(_json_script(conn, sid))
    floors = [(bench.sqlite(_rows_script(sid)), "sqlite3 CLI: the session's rows"),
              (as_json, "sqlite3 CLI: its messages and tool calls as JSON")]  # fmt: skip
    who = ["--owner", owner] if owner else []
    names = {"md": "Markdown", "html": "HTML", "json": "JSON"}
    for fmt, goal in ONE_GOALS.items():
        argv = bench.kaja("sessions", "export", sid, *who, "-f", fmt)
        for n, (floor, what) in enumerate(floors):
            case = (
                f"sessions export ID -f {fmt} ({count:,} messages)"
                if n == 0
                else f"same -f {fmt}, against its JSON"
            )
            bench.process(case, argv, floor, what, goal=goal,
                          note=f"{names[fmt]} of the largest session")  # fmt: skip


def _export_script(conn: sqlite3.Connection, ids: list[str], images_dir) -> str:
    """The statements `sessions export --all -f jsonl` runs, for every session."""
    out = []
    for sid in ids:
        r = transcript.SessionReader(conn, sid, images_dir)
        out += [
            inline("SELECT 1 FROM sessions WHERE id = ?", (sid,)),
            inline("SELECT * FROM sessions WHERE id = ?", (sid,)),
            inline("SELECT * FROM session_summaries AS s WHERE sessionId = ? ORDER BY s.\"summaryFrom\"",
                   (sid,)),
            inline('SELECT e."seq", e."type", e."payload" FROM session_events AS e WHERE sessionId = ?'
                   ' ORDER BY e."seq"', (sid,)),
            inline('SELECT * FROM model_calls AS c WHERE sessionId = ? ORDER BY c."createdAt"', (sid,)),
            inline("SELECT count(*) FROM messages WHERE sessionId = ?", (sid,)),
            inline(*r.messages_sql(None, condense=False)),
        ]  # fmt: skip
    return "\n".join(out)


def cases(bench) -> None:
    one_session(bench)
    store = bench.store()
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        everyone = [r[0] for r in conn.execute(
            "SELECT id FROM sessions ORDER BY coalesce(updatedAt, createdAt) DESC, id DESC")]  # fmt: skip
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        export_sql = _export_script(conn, everyone, store.paths.images_dir)
    script = bench.state_dir.parent / "export-floor.sql"
    script.write_text(export_sql)
    try:
        argv = bench.kaja("sessions", "export", "--all", "--all-owners", "-f", "jsonl")
        bench.process(f"sessions export --all -f jsonl ({len(everyone):,} sessions)", argv,
                      bench.sqlite(f".read {script}"), "sqlite3 CLI: the same queries per session",
                      goal=EXPORT_GOAL, note=f"{messages:,} messages")  # fmt: skip
    finally:
        script.unlink(missing_ok=True)
