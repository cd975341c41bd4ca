"""`kaja tasks`, `kaja schedules`, `kaja triggers`: the durable services (seed "Services").

Background tasks with their attempts and timeout; schedules (`due`: the
seed's scheduler query, active with `next_run_at` now or earlier, soonest
first, as the `schedules_due` index serves it); triggers. A trigger's
`secret` is never selected (nor its `state`, where a watcher keeps its
cursors and, for some kinds, tokens); its `config` is shown with the values
under secret-looking keys masked and every token-shaped string hidden
(`masking.mask_stored`), and its last error the same way.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.audit.common import Listing, col, columns, select, usable
from kaja_cli.core.masking import mask_stored, mask_stored_text, stored_text
from kaja_cli.core.store import Store

TASK_COLUMNS = ("id", "agent_id", "tool_name", "status", "attempts", "max_retries",
                "timeout_seconds", "error", "thread_id", "resource_id", "created_at",
                "updated_at", "started_at", "completed_at")  # fmt: skip
SCHEDULE_COLUMNS = ("id", "name", "agent_id", "cron", "timezone", "status", "next_run_at",
                    "last_run_at", "prompt", "thread_id", "resource_id", "created_at",
                    "updated_at")  # fmt: skip
# Never `secret`, never `state`: what is selected is all that can be printed.
TRIGGER_COLUMNS = ("id", "name", "agent_id", "kind", "status", "next_check_at", "last_fired_at",
                   "last_error", "prompt", "config", "created_at", "updated_at")  # fmt: skip


@dataclass
class Task:
    id: str
    agent_id: str | None
    tool_name: str | None
    status: str | None
    attempts: int | None
    max_retries: int | None
    timeout_seconds: int | None
    error: str | None
    thread_id: str | None
    resource_id: str | None
    created_at: str | None
    updated_at: str | None
    started_at: str | None
    completed_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Schedule:
    id: str
    name: str | None
    agent_id: str | None
    cron: str | None
    timezone: str | None
    status: str | None
    next_run_at: str | None
    last_run_at: str | None
    prompt: str | None
    thread_id: str | None
    resource_id: str | None
    created_at: str | None
    updated_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Trigger:
    id: str
    name: str | None
    agent_id: str | None
    kind: str | None
    status: str | None
    next_check_at: str | None
    last_fired_at: str | None
    last_error: str | None
    prompt: str | None
    config: Any  # parsed, masked
    created_at: str | None
    updated_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Cols:
    """`{c[name]}` in a query template: the column, or NULL when it is missing."""

    def __init__(self, have: list[str]) -> None:
        self.have = have

    def __getitem__(self, name: str) -> str:
        return col(self.have, "t", name)


def _query(store: Store, what: str, table: str, names: tuple[str, ...], build, limit: int):  # type: ignore[no-untyped-def]
    """Rows of `table`: `build(c)` gives (where, args, order) with `c[name]` a column."""
    out = Listing(what, store.where())
    with store.maybe_reader() as conn:
        if conn is None:
            out.exists = False
            return out, []
        have = columns(conn, table)
        if not usable(out, have, table, "id"):
            return out, []
        where, args, order = build(_Cols(have[table]))
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        rows = conn.execute(
            f"SELECT {select(have[table], 't', names)} FROM {table} t{clause} ORDER BY {order}",
            args,
        ).fetchall()
    if limit and len(rows) > limit:
        out.more, rows = len(rows) - limit, rows[:limit]
    return out, rows


TASK_ORDER = ("running", "queued", "paused", "failed", "completed", "cancelled")


def tasks(store: Store, *, status: str | None = None, limit: int = 0) -> Listing:
    """Background tasks: running, queued and paused first, then the newest."""

    def build(c: _Cols):  # type: ignore[no-untyped-def]
        where, args = ([f"{c['status']} = ?"], [status]) if status else ([], [])
        rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(TASK_ORDER))
        order = (f"CASE {c['status']} {rank} ELSE {len(TASK_ORDER)} END,"
                 f" COALESCE({c['updated_at']}, {c['created_at']}) DESC, t.id")  # fmt: skip
        return where, args, order

    out, rows = _query(store, "tasks", "background_tasks", TASK_COLUMNS, build, limit)
    out.rows = [Task(*r) for r in rows]
    return out


def schedules(store: Store, *, due: bool = False, status: str | None = None,
              limit: int = 0) -> Listing:  # fmt: skip
    """Schedules, soonest next run first (never-scheduled ones last). `due`:
    the seed's scheduler query, active ones whose next run is now or earlier."""

    def build(c: _Cols):  # type: ignore[no-untyped-def]
        where, args = [], []
        if status:
            where.append(f"{c['status']} = ?")
            args.append(status)
        if due:
            where += [f"{c['status']} = 'active'", f"{c['next_run_at']} <= ?"]
            args.append(clock.now_iso())
        order = f"CASE WHEN {c['next_run_at']} IS NULL THEN 1 ELSE 0 END, {c['next_run_at']}, t.id"
        return where, args, order

    out, rows = _query(store, "schedules", "schedules", SCHEDULE_COLUMNS, build, limit)
    out.rows = [Schedule(*r) for r in rows]
    return out


def triggers(store: Store, *, status: str | None = None, kind: str | None = None,
             limit: int = 0) -> Listing:  # fmt: skip
    """Triggers, soonest next check first; never their secret."""

    def build(c: _Cols):  # type: ignore[no-untyped-def]
        where, args = [], []
        for name, value in (("status", status), ("kind", kind)):
            if value:
                where.append(f"{c[name]} = ?")
                args.append(value)
        order = (
            f"CASE WHEN {c['next_check_at']} IS NULL THEN 1 ELSE 0 END, {c['next_check_at']}, t.id"
        )
        return where, args, order

    out, rows = _query(store, "triggers", "triggers", TRIGGER_COLUMNS, build, limit)
    out.rows = [_trigger(r) for r in rows]
    return out


def _trigger(row: tuple) -> Trigger:
    values = dict(zip(TRIGGER_COLUMNS, row, strict=True))
    values["config"] = mask_stored(values["config"])
    error = values["last_error"]
    if error is not None:
        values["last_error"] = mask_stored_text(stored_text(error) or str(error))
    return Trigger(**values)


def config_text(config: Any) -> str:
    """A masked config as one line of JSON (for a table cell)."""
    if config is None:
        return ""
    return config if isinstance(config, str) else json.dumps(config, ensure_ascii=False)
