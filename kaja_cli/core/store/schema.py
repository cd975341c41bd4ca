"""Every table, column, index and trigger kaja's files hold (SPEC §4).

Column names are the seeds' and a public contract: the agent writes these
files too. The schema evolves the way the seed describes: `CREATE TABLE IF NOT
EXISTS`, then `ALTER TABLE … ADD COLUMN` for anything `PRAGMA table_info` does
not show, then indexes and triggers. Applying it is idempotent; one-off steps
(data fixes, backfills) are recorded once in `counters`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from kaja_cli.core.clock import SQLITE_NOW, now_iso
from kaja_cli.core.engine.db import column_names, table_names
from kaja_cli.core.store import search_index
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.core.wording import plural


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "TEXT"
    extra: str = ""  # e.g. "PRIMARY KEY", "NOT NULL DEFAULT ''"

    def ddl(self) -> str:
        return " ".join(p for p in (f'"{self.name}"', self.type, self.extra) if p)

    def add_ddl(self) -> str:
        """The declaration `ALTER TABLE … ADD COLUMN` accepts (no keys, no NOT NULL)."""
        default = ""
        if "DEFAULT" in self.extra:
            default = self.extra[self.extra.index("DEFAULT") :]
        return " ".join(p for p in (f'"{self.name}"', self.type, default) if p)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    constraints: tuple[str, ...] = ()
    indexes: tuple[tuple[str, str], ...] = ()  # (name, "cols" or "UNIQUE cols")
    group: str = ""

    def ddl(self) -> str:
        parts = [c.ddl() for c in self.columns] + list(self.constraints)
        return f'CREATE TABLE IF NOT EXISTS "{self.name}" (\n  ' + ",\n  ".join(parts) + "\n)"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def _cols(spec: str) -> tuple[Column, ...]:
    """Columns from a compact spec: "name TYPE extra…, name, …" (TEXT by default)."""
    out = []
    for item in spec.split(","):
        words = item.split()
        if not words:
            continue
        name = words[0]
        ctype = words[1] if len(words) > 1 else "TEXT"
        out.append(Column(name, ctype, " ".join(words[2:])))
    return tuple(out)


def T(name: str, spec: str, *constraints: str, indexes=(), group: str = "") -> Table:
    return Table(name, _cols(spec), tuple(constraints), tuple(indexes), group)


# --- the shared file ---------------------------------------------------------
CONVERSATIONS = "conversations"
LEDGER = "ledger"

CONVERSATION_TABLES = (
    T(
        "notes",
        "owner TEXT NOT NULL DEFAULT '', key TEXT NOT NULL, content, importance, tags,"
        " sticky INTEGER DEFAULT 0, createdAt, lastUsedAt, useCount INTEGER DEFAULT 0",
        "PRIMARY KEY (owner, key)",
    ),
    T(
        "sessions",
        "id TEXT PRIMARY KEY, createdAt, updatedAt, persona, model, title, owner,"
        " systemPrompt, pendingCallId, pendingKind",
        indexes=(("sessions_owner_updated", "owner, updatedAt"), ("sessions_updated", "updatedAt")),
    ),
    T(
        "messages",
        "id TEXT PRIMARY KEY, sessionId, seq INTEGER, role, content, parts, reasoning,"
        " toolCallId, persona, model, promptTokens INTEGER, completionTokens INTEGER,"
        " latencyMs INTEGER, finishReason, createdAt",
        # messages_session_tokens covers `kaja sessions`' counts and token sums:
        # one pass over a small index instead of the whole table.
        indexes=(
            ("messages_session_seq", "sessionId, seq"),
            ("messages_session_tokens", "sessionId, promptTokens, completionTokens"),
        ),
    ),
    T(
        "tool_calls",
        "id TEXT PRIMARY KEY, messageId, position INTEGER, callId, name, arguments,"
        " resultMessageId, status, durationMs INTEGER, approval, resultSummary",
        indexes=(("tool_calls_message", "messageId"), ("tool_calls_result", "resultMessageId")),
    ),
    T(
        "session_summaries",
        "sessionId TEXT NOT NULL, summaryFrom INTEGER NOT NULL, summary, createdAt",
        "PRIMARY KEY (sessionId, summaryFrom)",
    ),
    T(
        "model_calls",
        "sessionId, kind, model, promptTokens INTEGER, completionTokens INTEGER,"
        " latencyMs INTEGER, createdAt",
        indexes=(("model_calls_session", "sessionId"),),
    ),
    T(
        "session_events",
        "sessionId TEXT NOT NULL, seq INTEGER NOT NULL, type, payload",
        "PRIMARY KEY (sessionId, seq)",
    ),
    T(
        "dataset_answers",
        "topic TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL,"
        " field TEXT NOT NULL, value, answeredAt",
        "PRIMARY KEY (topic, owner, version, field)",
    ),
    T(
        "dataset_versions",
        "topic TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL, completedAt",
        "PRIMARY KEY (topic, owner, version)",
    ),
)

LEDGER_TABLES = (
    T(
        "runs",
        "id TEXT PRIMARY KEY, parent_id, agent, source, thread_id, prompt, started_at,"
        " ended_at, status, error, result, pid INTEGER, host",
        # runs_thread: a session's runs (`wipe --owner`, `runs --thread`) without
        # reading every run of the store; runs_top: the newest top-level runs
        # (`kaja runs`) in index order, not all of them sorted.
        indexes=(
            ("runs_started", "started_at"),
            ("runs_parent", "parent_id"),
            ("runs_thread", "thread_id"),
            ("runs_top", "parent_id, started_at, id"),
        ),
    ),
    T(
        "calls",
        "id INTEGER PRIMARY KEY, run_id, at, engine, model, role, source, kind,"
        " prompt_tokens INTEGER, completion_tokens INTEGER, cached_tokens INTEGER,"
        " cache_source, duration_ms INTEGER, gen_ms INTEGER, prompt_ms INTEGER,"
        " ttft_ms INTEGER, load_ms INTEGER, tool_calls, think, purpose, ok INTEGER, error",
        indexes=(("calls_at", "at"), ("calls_run", "run_id")),
    ),
    T(
        "tools",
        "id INTEGER PRIMARY KEY, run_id, at, tool, outcome, duration_ms INTEGER, arguments,"
        " result_chars INTEGER, preview, error",
        indexes=(("tools_run", "run_id"),),
    ),
    T(
        "events",
        "id INTEGER PRIMARY KEY, run_id, event_id INTEGER, at, type, attributes",
        "UNIQUE (run_id, event_id)",
    ),
    T(
        "logs",
        "id INTEGER PRIMARY KEY, at, level, message, entity_type, entity_name, process,"
        " run_id, data",
        indexes=(("logs_at", "at"), ("logs_run", "run_id")),
    ),
    T(
        "media",
        "id INTEGER PRIMARY KEY, run_id, at, kind, engine, model, source, channel,"
        " duration_ms INTEGER, first_ms INTEGER, audio_ms INTEGER, chars INTEGER, outcome,"
        " error, cold INTEGER, details",
        indexes=(("media_at", "at"), ("media_run", "run_id")),
    ),
    T(
        "feedback",
        "id INTEGER PRIMARY KEY, run_id, span_id, at, agent, source, type, value_num REAL,"
        " value_text, comment, user_id, tags",
        indexes=(("feedback_at", "at"), ("feedback_run", "run_id")),
    ),
    T(
        "reviews",
        "run_id TEXT PRIMARY KEY, status, tags, reason, note, flagged_at, reviewed_at, updated_at",
        indexes=(("reviews_status", "status"),),
    ),
    T(
        "cache_stats",
        "minute TEXT NOT NULL, cache TEXT NOT NULL, hits INTEGER DEFAULT 0,"
        " misses INTEGER DEFAULT 0, saved_ms INTEGER DEFAULT 0, load_ms INTEGER DEFAULT 0",
        "PRIMARY KEY (minute, cache)",
    ),
    T("counters", "name TEXT PRIMARY KEY, value"),
)

LEARNING_TABLES = (
    T(
        "experience_runs",
        "id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, resource_id, thread_id,"
        " prompt, steps, output, model_calls INTEGER, tool_calls INTEGER,"
        " tool_errors INTEGER, duration REAL, used_recipes, learned_recipe INTEGER,"
        " feedback INTEGER, trace_run_id",
    ),
    T(
        "experience_recipes",
        "id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL, updated_at REAL, task,"
        " steps, source, embedding BLOB, prompt, prompt_embedding BLOB, uses INTEGER DEFAULT 0,"
        " wins INTEGER DEFAULT 0, losses INTEGER DEFAULT 0",
    ),
    T(
        "experience_tool_fixes",
        "id INTEGER PRIMARY KEY, scope, tool, error_key, created_at REAL, updated_at REAL,"
        " error, failed, fixed, hits INTEGER DEFAULT 0",
        "UNIQUE (scope, tool, error_key)",
    ),
)

SERVICE_TABLES = (
    T(
        "background_tasks",
        "id TEXT PRIMARY KEY, agent_id, tool_name, arguments, status, result, error,"
        " attempts INTEGER DEFAULT 0, max_retries INTEGER, timeout_seconds INTEGER,"
        " thread_id, resource_id, checkpoint, notify INTEGER, notified INTEGER,"
        " created_at, updated_at, started_at, completed_at",
        indexes=(("background_tasks_status", "status"),),
    ),
    T(
        "schedules",
        "id TEXT PRIMARY KEY, agent_id, cron, prompt, name, timezone, thread_id,"
        " resource_id, metadata, status, next_run_at, last_run_at, created_at, updated_at",
        indexes=(("schedules_due", "status, next_run_at"),),
    ),
    T(
        "triggers",
        "id TEXT PRIMARY KEY, agent_id, name, kind, prompt, config, status, secret, state,"
        " next_check_at, last_fired_at, last_error, recent_fires, created_at, updated_at",
        indexes=(("triggers_due", "status, next_check_at"),),
    ),
)

SEARCH_TABLES = (
    T(
        "conversation_threads",
        "resource_id TEXT NOT NULL, thread_id TEXT NOT NULL, count INTEGER DEFAULT 0, title",
        "PRIMARY KEY (resource_id, thread_id)",
    ),
)

ARTIFACT_TABLES = (
    T(
        "artifacts",
        "id TEXT PRIMARY KEY, kind, source, title, text, fingerprint, path, created_at",
        indexes=(("artifacts_source", "source, fingerprint"),),
    ),
)

# Sessions archived with `kaja sessions archive`: kaja's own table, not a
# column of `sessions`, whose columns are the agent's contract. In cloud mode
# it is a table of kaja's schema on the server (`store/server/schema.py`).
ARCHIVE_TABLES = (T("kaja_archived", "sessionId TEXT PRIMARY KEY, archivedAt"),)

BOOKKEEPING_TABLES = (
    T("kaja_migrations", "source TEXT PRIMARY KEY, migrated_at"),
    # sync_outbox_key: a pull asks whether a row has a change of its own
    # waiting; sync_map_local: the sync triggers ask whether a row was imported.
    T(
        "sync_outbox",
        "seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl, key, op, at",
        indexes=(("sync_outbox_key", "tbl, key"),),
    ),
    T(
        "sync_map",
        "origin TEXT NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL, local_id, seq INTEGER",
        "PRIMARY KEY (origin, tbl, key)",
        indexes=(("sync_map_local", "tbl, local_id"),),
    ),
    T("sync_state", "name TEXT PRIMARY KEY, value, updated_at"),
    T("sync_flags", "name TEXT PRIMARY KEY, value"),
    *ARCHIVE_TABLES,
)

# The usage ledger `kaja usage reset` clears (not `counters`: internal markers).
LEDGER_RESET_TABLES = (
    "runs", "calls", "tools", "events", "logs", "media", "feedback", "reviews", "cache_stats",
)  # fmt: skip

# --- ledger sync: the triggers that fill sync_outbox (seed "Postgres") ------------
# The protocol is core/sync.py; here are only the triggers, as data, so every
# writer that brings a file up to date installs them. They are always present
# and queue nothing until the ledger has a sync origin (the first `kaja sync`
# makes one): without sync the outbox stays empty, and a store never synced
# pays one small lookup per ledger write. Rows a pull imports are kept out by
# `sync_flags` ('importing' = '1', set only inside the import's transaction).
#
# Integer-id rows (SYNC_OWNED) belong to the ledger that made them: a row
# imported from another machine (it has a sync_map row) queues nothing, and
# deleting it drops its sync_map row, so a map row never outlives its row.
# The others are shared by their natural key. The key is the row's
# sync_outbox.key, and on the server the row's key.
SYNC_KEYS: dict[str, str] = {
    "calls": "CAST({r}.id AS TEXT)", "tools": "CAST({r}.id AS TEXT)",
    "logs": "CAST({r}.id AS TEXT)", "feedback": "CAST({r}.id AS TEXT)",
    "media": "CAST({r}.id AS TEXT)", "runs": "CAST({r}.id AS TEXT)",
    "events": "json_array({r}.run_id, {r}.event_id)", "reviews": "CAST({r}.run_id AS TEXT)",
}  # fmt: skip
SYNC_OWNED = ("calls", "tools", "logs", "feedback", "media")
# The column a sync_map row's local_id names (as text).
SYNC_LOCAL_ID = {t: ("run_id" if t == "reviews" else "id") for t in SYNC_KEYS}

_SYNC_ON = (
    "EXISTS (SELECT 1 FROM sync_state WHERE name = 'origin')"
    " AND NOT EXISTS (SELECT 1 FROM sync_flags WHERE name = 'importing' AND value IN ('1', 1))"
)
_NOW = SQLITE_NOW


def _sync_triggers(table: str) -> dict[str, str]:
    key = SYNC_KEYS[table]
    new, old = key.format(r="new"), key.format(r="old")
    local = SYNC_LOCAL_ID[table]

    def mine(r: str) -> str:  # not a row imported from another machine
        if table not in SYNC_OWNED:
            return ""
        return (
            f" AND NOT EXISTS (SELECT 1 FROM sync_map WHERE tbl = '{table}'"
            f" AND local_id = CAST({r}.{local} AS TEXT))"
        )

    def queue(key_sql: str, op: str, where: str) -> str:
        return (
            f"INSERT INTO sync_outbox (tbl, key, op, at) SELECT '{table}', {key_sql}, '{op}',"
            f" {_NOW} WHERE {where};"
        )

    insert = queue(new, "upsert", "1" + mine("new"))
    rekeyed = queue(old, "delete", f"{old} IS NOT {new}" + mine("old"))
    delete = queue(old, "delete", _SYNC_ON + mine("old"))
    unmap = f"DELETE FROM sync_map WHERE tbl = '{table}' AND local_id = CAST(old.{local} AS TEXT);"
    return {
        f"sync_{table}_insert": f"AFTER INSERT ON {table} WHEN {_SYNC_ON} BEGIN {insert} END",
        f"sync_{table}_update": f"AFTER UPDATE ON {table} WHEN {_SYNC_ON} BEGIN {rekeyed} {insert} END",
        f"sync_{table}_delete": f"AFTER DELETE ON {table} BEGIN {delete} {unmap} END",
    }


SYNC_TRIGGERS: dict[str, str] = {
    name: f'CREATE TRIGGER "{name}" {body}'
    for table in SYNC_KEYS
    for name, body in _sync_triggers(table).items()
}


def stale_sync_triggers(conn: sqlite3.Connection) -> list[str]:
    """Names of the sync triggers that are missing or differ from SYNC_TRIGGERS."""
    have = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'sync\\_%'"
            " ESCAPE '\\'"
        ).fetchall()
    )
    return [name for name, sql in SYNC_TRIGGERS.items() if have.get(name) != sql]


def ensure_sync_triggers(conn: sqlite3.Connection, changes: list[str]) -> None:
    stale = stale_sync_triggers(conn)
    for name in stale:
        conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
        conn.execute(SYNC_TRIGGERS[name])
    if stale:
        changes.append(f"created {plural(len(stale), 'sync trigger')}")


# --- the side databases --------------------------------------------------------
CACHE_TABLES = (
    T(
        "shared_cache",
        "namespace TEXT NOT NULL, key TEXT NOT NULL, value, expires_at, last_access",
        "PRIMARY KEY (namespace, key)",
        indexes=(
            ("shared_cache_expiry", "expires_at"),
            ("shared_cache_lru", "namespace, last_access"),
        ),
    ),
)

STATS_TABLES = (
    T(
        "db_query_stats",
        "bucket TEXT NOT NULL, pid INTEGER NOT NULL, db TEXT NOT NULL, sql TEXT NOT NULL,"
        " calls INTEGER DEFAULT 0, total_ms REAL DEFAULT 0, max_ms REAL DEFAULT 0,"
        " rows INTEGER DEFAULT 0, errors INTEGER DEFAULT 0, process",
        "PRIMARY KEY (bucket, pid, db, sql)",
    ),
    T(
        "db_slow_queries",
        "id INTEGER PRIMARY KEY, at, pid INTEGER, process, db, sql, duration_ms REAL, rows INTEGER",
        indexes=(("db_slow_queries_at", "at"),),
    ),
)

AUTH_TABLES = (
    T(
        "web_users",
        "id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE COLLATE NOCASE, display_name,"
        " password_hash, salt, role, active INTEGER DEFAULT 1, created_at",
    ),
    T(
        "web_sessions",
        "token_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at, created_at",
        "FOREIGN KEY (user_id) REFERENCES web_users(id) ON DELETE CASCADE",
        indexes=(("web_sessions_user", "user_id"),),
    ),
    T("web_auth_meta", "key TEXT PRIMARY KEY, value"),
)


SHARED_TABLES = (
    CONVERSATION_TABLES
    + LEDGER_TABLES
    + LEARNING_TABLES
    + SERVICE_TABLES
    + SEARCH_TABLES
    + BOOKKEEPING_TABLES
)

# The tables of each database of the registry. A file holds those of every
# database it hosts (`DatabaseFile.holds`): the shared file has the artifacts'
# too unless they are split into their own file.
TABLES_OF: dict[Database, tuple[Table, ...]] = {
    Database.SHARED: SHARED_TABLES,
    Database.ARTIFACTS: ARTIFACT_TABLES,
    Database.CACHE: CACHE_TABLES,
    Database.STATS: STATS_TABLES,
    Database.AUTH: AUTH_TABLES,
}

TABLES: dict[str, Table] = {t.name: t for tables in TABLES_OF.values() for t in tables}
_DATABASE_OF = {t.name: name for name, tables in TABLES_OF.items() for t in tables}


def database_of(table: str) -> Database | None:
    """The registry database a table belongs to (None: not one of kaja's)."""
    return _DATABASE_OF.get(table)


def tables_of(file: DatabaseFile) -> tuple[Table, ...]:
    """The tables a file holds: those of every registry entry it hosts (the
    shared file has the artifacts' too unless they are split out)."""
    return tuple(t for name in file.holds for t in TABLES_OF[name])


# --- the search index ----------------------------------------------------------
# Declared and kept whole in `search_index` (FTS4 over messages.content, kept
# current by triggers, built in short batches): a schema object of the shared
# file, beside this one; `apply` creates or repairs it.
FTS_TABLE = search_index.FTS_TABLE


# --- applying it -----------------------------------------------------------------
@dataclass
class Report:
    """What `apply` changed; empty when the file was already current."""

    changes: list[str] = field(default_factory=list)


# One-off steps, in order, each recorded once in `counters` as "schema:<name>".
ONE_OFF_STEPS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = []


def apply_tables(conn: sqlite3.Connection, tables: tuple[Table, ...], report: Report) -> None:
    existing = table_names(conn)
    for table in tables:
        if table.name not in existing:
            conn.execute(table.ddl())
            report.changes.append(f"created table {table.name}")
        else:
            have = set(column_names(conn, table.name))
            for col in table.columns:
                if col.name not in have:
                    conn.execute(f'ALTER TABLE "{table.name}" ADD COLUMN {col.add_ddl()}')
                    report.changes.append(f"added column {table.name}.{col.name}")
        for index_name, cols in table.indexes:
            unique = "UNIQUE " if cols.startswith("UNIQUE ") else ""
            cols = cols.removeprefix("UNIQUE ")
            conn.execute(
                f'CREATE {unique}INDEX IF NOT EXISTS "{index_name}" ON "{table.name}" ({cols})'
            )


def missing_indexes(conn: sqlite3.Connection, tables: tuple[Table, ...]) -> list[str]:
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    return [name for t in tables for name, _ in t.indexes if name not in have]


def apply(conn: sqlite3.Connection, file: DatabaseFile) -> Report:
    """Bring one file up to date (inside the caller's transaction)."""
    report = Report()
    tables = tables_of(file)
    before = set(missing_indexes(conn, tables))
    apply_tables(conn, tables, report)
    report.changes.extend(f"created index {name}" for name in sorted(before))
    if file.search_index:
        search_index.ensure(conn, report.changes)
        ensure_sync_triggers(conn, report.changes)
        done = {r[0] for r in conn.execute("SELECT name FROM counters WHERE name LIKE 'schema:%'")}
        for name, step in ONE_OFF_STEPS:
            if f"schema:{name}" not in done:
                step(conn)
                conn.execute(
                    "INSERT OR REPLACE INTO counters(name, value) VALUES (?, ?)",
                    (f"schema:{name}", now_iso()),
                )
                report.changes.append(f"applied {name}")
        if report.changes:
            # What this kaja last brought up to date, for a support ticket.
            from kaja_cli import __version__

            conn.execute(
                "INSERT OR REPLACE INTO counters(name, value) VALUES ('schema:upgraded', ?)",
                (f"kaja {__version__}: {plural(len(report.changes), 'change')}",),
            )
    return report


def present_columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every ordinary table's columns, in one query.

    Virtual tables are left out: asking for the columns of one whose module
    this SQLite lacks (an agent's `vec0` embeddings, say) is an error, and
    would stop every writer of the file."""
    out: dict[str, set[str]] = {}
    rows = conn.execute(
        "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p"
        " WHERE m.type = 'table' AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
    )
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def missing(conn: sqlite3.Connection, file: DatabaseFile) -> list[str]:
    """What `apply` would add: "table x", "column x.y", "index i", "search index"."""
    have = present_columns(conn)
    out = []
    for table in tables_of(file):
        cols = have.get(table.name)
        if cols is None:
            out.append(f"table {table.name}")
            continue
        out.extend(f"column {table.name}.{c}" for c in table.column_names if c not in cols)
    out.extend(f"index {name}" for name in missing_indexes(conn, tables_of(file)))
    if file.search_index:
        item = search_index.missing_item(conn)
        if item:
            out.append(item)
        if all(t in have for t in (*SYNC_KEYS, "sync_outbox", "sync_map")) and (
            stale_sync_triggers(conn)
        ):
            out.append("sync triggers")
        if "counters" in have:
            done = {
                r[0] for r in conn.execute("SELECT name FROM counters WHERE name LIKE 'schema:%'")
            }
            out.extend(f"step {n}" for n, _ in ONE_OFF_STEPS if f"schema:{n}" not in done)
    return out


def steps_unknown(conn: sqlite3.Connection) -> list[str]:
    """One-off steps recorded in the file that this kaja does not have: a newer
    kaja upgraded it (`counters` rows "schema:<step>")."""
    if "counters" not in table_names(conn):
        return []
    known = {f"schema:{n}" for n, _ in ONE_OFF_STEPS} | {"schema:upgraded"}
    rows = conn.execute("SELECT name FROM counters WHERE name LIKE 'schema:%' ORDER BY name")
    return [r[0].removeprefix("schema:") for r in rows if r[0] not in known]


def is_current(conn: sqlite3.Connection, file: DatabaseFile) -> bool:
    return not missing(conn, file)
