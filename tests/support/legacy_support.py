"""Legacy files as an older install left them, written with plain SQL from the
seed's columns (andromeda-database.txt), independent of kaja's own code.

`build_legacy(state)` writes the six per-feature files into a state dir, each
in an older shape than kaja's schema (columns added since are missing, an
extra column kaja does not know, a table nothing reads any more), and
`build_memory(memory)` the conversation files.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

LEGACY = {
    "usage.db": [
        # runs before it gained result, pid and host; calls before run_id,
        # cached_tokens, ttft_ms, think and load_ms (the seed's examples).
        "CREATE TABLE runs (id TEXT PRIMARY KEY, parent_id TEXT, agent TEXT, source TEXT,"
        " thread_id TEXT, prompt TEXT, started_at TEXT, ended_at TEXT, status TEXT, error TEXT)",
        "INSERT INTO runs VALUES ('run_7f3a', NULL, 'andromeda', 'interactive', 'tui-2026-10-15',"
        " 'Summarize the open PRs', '2026-10-15T09:00:00Z', '2026-10-15T09:00:14Z', 'completed', NULL)",
        "INSERT INTO runs VALUES ('run_91c0', 'run_7f3a', 'researcher', 'interactive', NULL, NULL,"
        " '2026-10-15T09:00:02Z', '2026-10-15T09:00:09Z', 'completed', NULL)",
        "CREATE TABLE calls (id INTEGER PRIMARY KEY, at TEXT, engine TEXT, model TEXT, role TEXT,"
        " source TEXT, kind TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, cache_source TEXT,"
        " duration_ms INTEGER, gen_ms INTEGER, prompt_ms INTEGER, tool_calls TEXT, purpose TEXT,"
        " ok INTEGER, error TEXT, legacy_cost REAL)",
        "INSERT INTO calls (id, at, engine, model, prompt_tokens, completion_tokens, tool_calls, ok,"
        " legacy_cost) VALUES (1201, '2026-10-15T09:00:01Z', 'ollama', 'llama3.2:3b', 2140, 96,"
        " '[\"spawn_subagent\"]', 1, 0.0)",
        "INSERT INTO calls (id, at, engine, model, prompt_tokens, completion_tokens, ok)"
        " VALUES (1202, '2026-10-15T09:00:05Z', 'ollama', 'llama3.2:3b', 2300, 140, 1)",
        "CREATE TABLE tools (id INTEGER PRIMARY KEY, run_id TEXT, at TEXT, tool TEXT, outcome TEXT,"
        " duration_ms INTEGER, arguments TEXT, result_chars INTEGER, preview TEXT, error TEXT)",
        "INSERT INTO tools VALUES (77, 'run_91c0', '2026-10-15T09:00:03Z', 'git_log', 'ok', 84, '{}',"
        " 3120, 'commit …', NULL)",
        "INSERT INTO tools VALUES (78, 'run_7f3a', '2026-10-15T09:00:10Z', 'browser_screenshot', 'ok',"
        " 920, '{}', 0, NULL, NULL)",
        "CREATE TABLE events (id INTEGER PRIMARY KEY, run_id TEXT, event_id INTEGER, at TEXT, type TEXT,"
        " attributes TEXT, UNIQUE (run_id, event_id))",
        "INSERT INTO events VALUES (5, 'run_7f3a', 2, '2026-10-15T09:00:01Z', 'ActivityTaskScheduled', '{}')",
        "CREATE TABLE feedback (id INTEGER PRIMARY KEY, run_id TEXT, span_id TEXT, at TEXT, agent TEXT,"
        " source TEXT, type TEXT, value_num REAL, value_text TEXT, comment TEXT, user_id TEXT, tags TEXT)",
        "INSERT INTO feedback (id, run_id, at, type, value_num) VALUES (3, 'run_7f3a',"
        " '2026-10-15T09:01:00Z', 'thumbs', 1)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value)",
        "INSERT INTO counters VALUES ('backfill:cache-estimates', 'done')",
    ],
    "experience.db": [
        "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, resource_id TEXT,"
        " thread_id TEXT, prompt TEXT, steps TEXT, output TEXT, model_calls INTEGER,"
        " tool_calls INTEGER, tool_errors INTEGER, duration REAL, used_recipes TEXT,"
        " learned_recipe INTEGER, feedback INTEGER, trace_run_id TEXT)",
        "INSERT INTO runs (id, created_at, resource_id, thread_id, prompt, learned_recipe, feedback,"
        " trace_run_id) VALUES (41, 1760518814.0, 'terminal', 'tui-2026-10-15', 'Summarize the open PRs',"
        " 7, 1, 'run_7f3a')",
        "CREATE TABLE recipes (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, updated_at REAL,"
        " task TEXT, steps TEXT, source TEXT, embedding BLOB, prompt TEXT, prompt_embedding BLOB,"
        " uses INTEGER, wins INTEGER, losses INTEGER)",
        "INSERT INTO recipes (id, created_at, task, steps, uses, wins, losses)"
        " VALUES (7, 1760518814.0, 'Screenshot a page', '[]', 3, 2, 1)",
    ],
    "background_tasks.db": [
        "CREATE TABLE background_tasks (id TEXT PRIMARY KEY, agent_id TEXT, tool_name TEXT,"
        " arguments TEXT, status TEXT, result TEXT, error TEXT, attempts INTEGER, max_retries INTEGER,"
        " timeout_seconds INTEGER, thread_id TEXT, resource_id TEXT, checkpoint TEXT, notify INTEGER,"
        " notified INTEGER, created_at TEXT, updated_at TEXT, started_at TEXT, completed_at TEXT)",
        "INSERT INTO background_tasks (id, agent_id, tool_name, status, created_at)"
        " VALUES ('bt_1', 'andromeda', 'web_fetch', 'queued', '2026-10-15T09:00:00Z')",
    ],
    "schedules.db": [
        "CREATE TABLE schedules (id TEXT PRIMARY KEY, agent_id TEXT, cron TEXT, prompt TEXT, name TEXT,"
        " timezone TEXT, thread_id TEXT, resource_id TEXT, metadata TEXT, status TEXT,"
        " next_run_at TEXT, last_run_at TEXT, created_at TEXT, updated_at TEXT)",
        "INSERT INTO schedules (id, agent_id, cron, prompt, name, status, next_run_at)"
        " VALUES ('sch_1', 'andromeda', '0 7 * * *', 'Morning brief', 'brief', 'active',"
        " '2026-10-16T07:00:00Z')",
        # Older databases may also contain it; nothing reads it (the seed).
        "CREATE TABLE schedule_runs (id INTEGER PRIMARY KEY, schedule_id TEXT, at TEXT)",
        "INSERT INTO schedule_runs VALUES (1, 'sch_1', '2026-10-15T07:00:00Z')",
    ],
    "triggers.db": [
        "CREATE TABLE triggers (id TEXT PRIMARY KEY, agent_id TEXT, name TEXT, kind TEXT, prompt TEXT,"
        " config TEXT, status TEXT, secret TEXT, state TEXT, next_check_at TEXT, last_fired_at TEXT,"
        " last_error TEXT, recent_fires TEXT, created_at TEXT, updated_at TEXT)",
        "INSERT INTO triggers (id, agent_id, name, kind, status, secret) VALUES ('trg_1', 'andromeda',"
        " 'inbox', 'gmail', 'active', 'legacy-trigger-secret-4f2a')",
    ],
    "artifacts.db": [
        "CREATE TABLE artifacts (id TEXT PRIMARY KEY, kind TEXT, source TEXT, title TEXT, text TEXT,"
        " fingerprint TEXT, path TEXT, created_at TEXT)",
        "INSERT INTO artifacts VALUES ('a1b2c3', 'screenshot', 'browser_screenshot', 'PR list', NULL,"
        " 'fp1', '/tmp/pr-list.png', '2026-10-15T09:00:10Z')",
    ],
}

# Rows each file holds per kaja table (after renaming), for the assertions.
ROWS = {
    "usage.db": {"runs": 2, "calls": 2, "tools": 2, "events": 1, "feedback": 1, "counters": 1},
    "experience.db": {"experience_runs": 1, "experience_recipes": 1},
    "background_tasks.db": {"background_tasks": 1},
    "schedules.db": {"schedules": 1},
    "triggers.db": {"triggers": 1},
    "artifacts.db": {"artifacts": 1},
}


def build_legacy(state: Path, names: tuple[str, ...] = tuple(LEGACY)) -> None:
    state.mkdir(parents=True, exist_ok=True)
    for name in names:
        with closing(sqlite3.connect(state / name)) as conn, conn:
            for sql in LEGACY[name]:
                conn.execute(sql)


THREADS = {
    # resource/threads/file: content
    "terminal/threads/tui-2026-10-15.json": [
        {"id": "m-1", "role": "user", "createdAt": "2026-10-15T09:00:00Z",
         "content": [{"type": "text", "text": "Summarize the open PRs and screenshot the PR list"}]},
        {"id": "m-2", "role": "assistant", "createdAt": "2026-10-15T09:00:14Z", "model": "llama3.2:3b",
         "content": "There are 3 open PRs: the quokka parser, …"},
    ],
    "terminal/threads/tui-2026-10-15.meta.json": {
        "title": "Open PRs", "createdAt": "2026-10-15T09:00:00Z", "updatedAt": "2026-10-15T09:00:14Z",
    },
    "terminal/threads/tui-2026-10-15.goals.json": {"goals": ["ship the parser"]},
    "telegram:482913/threads/chat-1.jsonl": [
        {"role": "user", "content": "¿Dónde compro wombat-compost?", "created_at": 1760518800000},
        {"role": "assistant", "content": "En el vivero de la esquina.", "created_at": 1760518805},
    ],
    "widget:ab12/threads/visit.json": {
        "messages": [{"role": "user", "content": "Hello from the widget, numbat"}],
    },
}  # fmt: skip


def build_memory(memory: Path, threads: dict = THREADS) -> None:
    for rel, content in threads.items():
        path = memory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".jsonl"):
            path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in content))
        else:
            path.write_text(json.dumps(content, ensure_ascii=False))


def rows(db: Path, sql: str, *args) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, args).fetchall()
