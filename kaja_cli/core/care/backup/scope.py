"""Which rows of the server's tables are the account's: what a cloud backup
holds, and what a restore into cloud mode replaces.

Every row that is not another owner's:

- a table with an owner column (`sessions`, `notes`, `dataset_answers`,
  `dataset_versions`) by that column, as every command scopes "you"
  (`Owner.sessions_where` / `rows_where`);
- a row without one follows its session: `messages`, `session_summaries`,
  `model_calls`, `session_events` and the archive marks (`kaja_archived`) by `sessionId`, `tool_calls` by its
  message's session; the usage ledger by its run's session (`runs.thread_id`,
  and the rows of a run by `run_id`);
- a row that follows no session at all (a run with no thread, a message whose
  session row is gone, `cache_stats`, `counters`) is nobody's, and goes with
  the account's: left out, it would be in no backup. A restore replaces
  those too.

The conditions are plain SQL both engines read (the table is aliased `t`; a
name is double-quoted), with `?` placeholders: the server's tables when
backing up, the staged copy's (SQLite) when a restore reads the archive.
"""

from __future__ import annotations

from kaja_cli.core.owners import Owner
from kaja_cli.core.store import schema

# The server's tables in the order a backup copies them (the schema's).
TABLES: tuple[schema.Table, ...] = (
    schema.CONVERSATION_TABLES + schema.LEDGER_TABLES + schema.ARCHIVE_TABLES
)
# The order a restore deletes them in: rows before the rows they follow.
DELETE_ORDER = (
    "kaja_archived", "tool_calls", "messages", "session_summaries", "model_calls", "session_events",
    "calls", "tools", "events", "logs", "media", "feedback", "reviews", "runs",
    "sessions", "notes", "dataset_answers", "dataset_versions", "cache_stats", "counters",
)  # fmt: skip
OWNED = ("notes", "dataset_answers", "dataset_versions")
BY_SESSION = {"messages": "sessionId", "session_summaries": "sessionId", "kaja_archived": "sessionId",
              "model_calls": "sessionId", "session_events": "sessionId", "runs": "thread_id"}  # fmt: skip
BY_RUN = ("calls", "tools", "events", "logs", "media", "feedback", "reviews")


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def where(table: str, owner: Owner, have: dict[str, set[str]]) -> tuple[str, tuple]:
    """The condition selecting the account's rows of `table` (aliased `t`) and
    its parameters. `have`: each table's columns; a condition that needs a
    column the store lacks finds no other owner there (the rows are nobody's)."""
    cols = have.get(table, set())
    sessions = have.get("sessions", set())
    knows_owners = {"id", "owner"} <= sessions
    theirs, args = owner.sessions_where("s.owner")
    other = f"({theirs}) IS NOT TRUE"  # a session of another owner
    if table == "sessions":
        if "owner" not in cols:
            return ("1 = 1" if owner.is_terminal else "1 = 0"), ()
        mine, mine_args = owner.sessions_where("t.owner")
        return mine, mine_args
    if table in OWNED:
        if "owner" not in cols:
            return ("1 = 1" if owner.is_terminal else "1 = 0"), ()
        return owner.rows_where("t.owner")
    if table in BY_SESSION and BY_SESSION[table] in cols and knows_owners:
        ref = f"t.{q(BY_SESSION[table])}"
        return f"NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.id = {ref} AND {other})", args
    if (
        table == "tool_calls"
        and "messageId" in cols
        and knows_owners
        and ({"id", "sessionId"} <= have.get("messages", set()))
    ):
        return (
            'NOT EXISTS (SELECT 1 FROM messages AS m JOIN sessions AS s ON s.id = m."sessionId"'
            f' WHERE m.id = t."messageId" AND {other})',
            args,
        )
    if (
        table in BY_RUN
        and "run_id" in cols
        and knows_owners
        and ({"id", "thread_id"} <= have.get("runs", set()))
    ):
        return (
            "NOT EXISTS (SELECT 1 FROM runs AS r JOIN sessions AS s ON s.id = r.thread_id"
            f" WHERE r.id = t.run_id AND {other})",
            args,
        )
    return "1 = 1", ()


def columns(table: schema.Table, have: dict[str, set[str]]) -> list[schema.Column]:
    """The columns of `table` a backup carries: the schema's that the store has."""
    present = have.get(table.name, set())
    return [c for c in table.columns if c.name in present]


PG_TYPES = {"TEXT": "text", "INTEGER": "int8", "REAL": "float8", "BLOB": "bytea"}


def pg_type(column: schema.Column) -> str:
    """The server's type of a column (`store/server/ddl.py`), as COPY names it."""
    return PG_TYPES.get(column.type.upper(), "text")
