"""`kaja demo --legacy`: the files an older install left behind, for `kaja migrate`.

The per-feature SQLite files of the seed (`usage.db`, `experience.db`,
`background_tasks.db`, `schedules.db`, `triggers.db`, `artifacts.db`) in the
state dir, written with plain SQL in their older shapes: `calls` without the
columns it gained later, the learning tables under their old names (`runs`,
`recipes`, `tool_fixes`), the `schedule_runs` table nothing reads any more.
And conversation files under `.memory/`: a terminal thread as JSON with its
`.meta.json`, a Telegram thread as JSONL. Their ids are their own, so
`kaja migrate` adds every row; one ledger call shares an id with the demo's
ledger and stays out (`INSERT OR IGNORE`).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path

from kaja_cli.core.care.legacy import LEGACY_FILES, MEMORY_DIR
from kaja_cli.core.clock import iso
from kaja_cli.core.engine import fs

_FILES: dict[str, list[str]] = {
    "usage.db": [
        "CREATE TABLE runs (id TEXT PRIMARY KEY, parent_id TEXT, agent TEXT, source TEXT, thread_id TEXT,"
        " prompt TEXT, started_at TEXT, ended_at TEXT, status TEXT, error TEXT)",
        "CREATE TABLE calls (id INTEGER PRIMARY KEY, at TEXT, engine TEXT, model TEXT, role TEXT,"
        " source TEXT, kind TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cache_source TEXT,"
        " duration_ms INTEGER, gen_ms INTEGER, prompt_ms INTEGER, tool_calls TEXT, purpose TEXT,"
        " ok INTEGER, error TEXT)",
        "CREATE TABLE tools (id INTEGER PRIMARY KEY, run_id TEXT, at TEXT, tool TEXT, outcome TEXT,"
        " duration_ms INTEGER, arguments TEXT, result_chars INTEGER, preview TEXT, error TEXT)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value)",
    ],
    "experience.db": [
        "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, resource_id TEXT,"
        " thread_id TEXT, prompt TEXT, steps TEXT, output TEXT, model_calls INTEGER, tool_calls INTEGER,"
        " tool_errors INTEGER, duration REAL, used_recipes TEXT, learned_recipe INTEGER, feedback INTEGER,"
        " trace_run_id TEXT)",
        "CREATE TABLE recipes (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, updated_at REAL,"
        " task TEXT, steps TEXT, source TEXT, embedding BLOB, prompt TEXT, prompt_embedding BLOB,"
        " uses INTEGER DEFAULT 0, wins INTEGER DEFAULT 0, losses INTEGER DEFAULT 0)",
    ],
    "background_tasks.db": [
        "CREATE TABLE background_tasks (id TEXT PRIMARY KEY, agent_id TEXT, tool_name TEXT, arguments TEXT,"
        " status TEXT, result TEXT, error TEXT, attempts INTEGER DEFAULT 0, max_retries INTEGER,"
        " timeout_seconds INTEGER, thread_id TEXT, resource_id TEXT, created_at TEXT, updated_at TEXT,"
        " started_at TEXT, completed_at TEXT)",
    ],
    "schedules.db": [
        "CREATE TABLE schedules (id TEXT PRIMARY KEY, agent_id TEXT, cron TEXT, prompt TEXT, name TEXT,"
        " timezone TEXT, thread_id TEXT, resource_id TEXT, metadata TEXT, status TEXT, next_run_at TEXT,"
        " last_run_at TEXT, created_at TEXT, updated_at TEXT)",
        "CREATE TABLE schedule_runs (id INTEGER PRIMARY KEY, schedule_id TEXT, at TEXT, status TEXT)",
    ],
    "triggers.db": [
        "CREATE TABLE triggers (id TEXT PRIMARY KEY, agent_id TEXT, name TEXT, kind TEXT, prompt TEXT,"
        " config TEXT, status TEXT, secret TEXT, state TEXT, next_check_at TEXT, last_fired_at TEXT,"
        " last_error TEXT, recent_fires TEXT, created_at TEXT, updated_at TEXT)",
    ],
    "artifacts.db": [
        "CREATE TABLE artifacts (id TEXT PRIMARY KEY, kind TEXT, source TEXT, title TEXT, text TEXT,"
        " fingerprint TEXT, path TEXT, created_at TEXT)",
    ],
}  # fmt: skip


def existing(state: Path) -> list[Path]:
    """Legacy files already in the state dir (the demo writes over none)."""
    found = [state / n for n in LEGACY_FILES if (state / n).exists()]
    return found + ([state / MEMORY_DIR] if (state / MEMORY_DIR).exists() else [])


def write(state: Path, base: datetime) -> int:
    """Write the legacy files into `state`; returns how many files."""
    fs.ensure_private_dir(state)
    then = base - timedelta(days=400)  # the old install ran a year before the demo's store
    for name, ddl in _FILES.items():
        path = state / name
        fs.create_private_file(path)
        with closing(sqlite3.connect(path)) as conn, conn:
            for statement in ddl:
                conn.execute(statement)
            _ROWS[name](conn, then)
    return len(_FILES) + _conversations(state / MEMORY_DIR, then)


def _usage(conn: sqlite3.Connection, then: datetime) -> None:
    conn.execute(
        "INSERT INTO runs VALUES ('run_legacy_0001', NULL, 'andromeda', 'interactive', 'tui-legacy-1',"
        " 'Plan the allotment for spring', ?, ?, 'completed', NULL)",
        (iso(then), iso(then + timedelta(seconds=14))),
    )
    for i in range(6):
        # id 1 is also the demo ledger's first call: that one stays out.
        conn.execute(
            "INSERT INTO calls (id, at, engine, model, role, source, kind, prompt_tokens, completion_tokens,"
            " duration_ms, ok) VALUES (?, ?, 'ollama', 'llama3.2:3b', 'main', 'interactive', 'chat', ?, ?, ?, 1)",
            (1 if i == 0 else 900_000 + i, iso(then + timedelta(seconds=2 * i)), 1800 + 40 * i, 90 + i, 700 + 15 * i),
        )  # fmt: skip
    conn.execute(
        "INSERT INTO tools VALUES (900001, 'run_legacy_0001', ?, 'web_search', 'ok', 410,"
        " '{\"query\": \"companion planting\"}', 5120, 'Companion planting …', NULL)",
        (iso(then + timedelta(seconds=5)),),
    )
    conn.execute("INSERT INTO counters VALUES ('backfill:legacy-cache-hits', 'done')")


def _experience(conn: sqlite3.Connection, then: datetime) -> None:
    ts = then.timestamp()
    conn.execute(
        "INSERT INTO recipes (id, created_at, updated_at, task, steps, source, prompt, uses, wins, losses)"
        " VALUES (9001, ?, ?, 'Summarise a web page', '[\"fetch\", \"summarize\"]', 'learned',"
        " 'summarise this page', 4, 3, 1)",
        (ts, ts + 3600),
    )
    conn.execute(
        "INSERT INTO runs (id, created_at, resource_id, thread_id, prompt, steps, output, model_calls,"
        " tool_calls, tool_errors, duration, used_recipes, learned_recipe, feedback, trace_run_id)"
        " VALUES (9001, ?, 'terminal', 'tui-legacy-1', 'Plan the allotment for spring', '[]', 'A plan …',"
        " 3, 1, 0, 14.2, '[9001]', NULL, 1, 'run_legacy_0001')",
        (ts,),
    )


def _services(conn: sqlite3.Connection, then: datetime, table: str) -> None:
    if table == "background_tasks":
        conn.execute(
            "INSERT INTO background_tasks (id, agent_id, tool_name, arguments, status, result, attempts,"
            " max_retries, created_at, updated_at, completed_at) VALUES ('task_legacy_01', 'andromeda',"
            " 'web_fetch', '{\"url\": \"https://example.org\"}', 'completed', 'ok', 1, 3, ?, ?, ?)",
            (iso(then), iso(then), iso(then + timedelta(minutes=1))),
        )
    elif table == "schedules":
        conn.execute(
            "INSERT INTO schedules (id, agent_id, cron, prompt, name, timezone, status, next_run_at,"
            " created_at, updated_at) VALUES ('sched_legacy_01', 'andromeda', '0 7 * * 1', 'Weekly garden"
            " tasks', 'garden-weekly', 'Europe/Zurich', 'paused', NULL, ?, ?)",
            (iso(then), iso(then)),
        )
        conn.execute(
            "INSERT INTO schedule_runs VALUES (1, 'sched_legacy_01', ?, 'ok')", (iso(then),)
        )
    else:
        conn.execute(
            "INSERT INTO triggers (id, agent_id, name, kind, prompt, config, status, secret, created_at,"
            " updated_at) VALUES ('trig_legacy_01', 'andromeda', 'rss-garden', 'webhook', 'New post',"
            " '{}', 'paused', 'whsec_legacy_not_a_real_secret', ?, ?)",
            (iso(then), iso(then)),
        )


def _artifacts(conn: sqlite3.Connection, then: datetime) -> None:
    conn.execute(
        "INSERT INTO artifacts VALUES ('a9f0e1', 'page', 'web_fetch', 'Companion planting',"
        " 'Marigolds keep aphids away …', 'sha256:legacy', NULL, ?)",
        (iso(then),),
    )


_ROWS = {
    "usage.db": _usage,
    "experience.db": _experience,
    "background_tasks.db": lambda c, t: _services(c, t, "background_tasks"),
    "schedules.db": lambda c, t: _services(c, t, "schedules"),
    "triggers.db": lambda c, t: _services(c, t, "triggers"),
    "artifacts.db": _artifacts,
}


def _conversations(memory: Path, then: datetime) -> int:
    """Two threads: the terminal's as JSON (parts, ids, meta), a Telegram user's as JSONL."""
    terminal = memory / "terminal" / "threads"
    telegram = memory / "telegram:482913" / "threads"
    for folder in (terminal, telegram):
        fs.ensure_private_dir(folder)
    t = lambda s: iso(then + timedelta(seconds=s))  # noqa: E731
    messages = [
        {"id": "legacy-msg-1", "role": "user", "createdAt": t(0),
         "content": [{"type": "text", "text": "Plan the allotment for spring: potatoes, beans, marigolds."}]},
        {"id": "legacy-msg-2", "role": "assistant", "createdAt": t(9), "model": "llama3.2:3b",
         "content": "Start the potatoes in March, beans after the last frost, marigolds along the edges."},
    ]  # fmt: skip
    fs.write_private_file(terminal / "tui-legacy-1.json", json.dumps(messages, indent=1).encode())
    meta = {"title": "Allotment plan for spring", "createdAt": t(0), "updatedAt": t(9)}
    fs.write_private_file(terminal / "tui-legacy-1.meta.json", json.dumps(meta).encode())
    lines = [
        {"role": "user", "content": "¿Qué siembro en abril?", "created_at": t(86400)},
        {"role": "assistant", "content": "Judías, calabacines y albahaca.", "created_at": t(86405)},
    ]
    text = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines)
    fs.write_private_file(telegram / "wa-legacy-7.jsonl", text.encode())
    return 2
