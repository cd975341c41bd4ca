"""`kaja learning` and `kaja learning fixes`: what the agent learned (seed "Learning").

Recipes with their uses, wins and losses and the run each was learned from:
the seed's query joins `experience_runs.learned_recipe` to the recipe; here
every recipe is listed (LEFT: one learned by hand, or whose run was pruned,
shows no run), each once, with the first run that learned it. Tool fixes:
an error a tool gave and the corrected call that worked, most used first.
Learning times are Unix seconds (REAL); they are shown as ISO 8601 UTC.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.audit.common import Listing, col, columns, select, usable
from kaja_cli.core.store import Store

FIX_COLUMNS = ("id", "scope", "tool", "error_key", "error", "failed", "fixed", "hits",
               "created_at", "updated_at")  # fmt: skip


def _when(value: Any) -> str | None:
    """A learning table's time (Unix seconds) as ISO 8601 UTC; text as it is."""
    if isinstance(value, int | float):
        try:
            return clock.iso(clock.from_epoch(value))
        except (OverflowError, OSError, ValueError):
            return None
    return value if isinstance(value, str) else None


@dataclass
class Recipe:
    id: int
    task: str | None
    uses: int | None
    wins: int | None
    losses: int | None
    trace_run_id: str | None  # the run it was learned from
    source: str | None
    created_at: str | None
    updated_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ToolFix:
    id: Any
    scope: str | None
    tool: str | None
    error_key: str | None
    error: str | None
    failed: str | None
    fixed: str | None
    hits: int | None
    created_at: str | None
    updated_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def recipes(store: Store, *, limit: int = 0) -> Listing:
    """Recipes, most used first, each with the run it was learned from."""
    out = Listing("recipes", store.where())
    with store.maybe_reader() as conn:
        if conn is None:
            out.exists = False
            return out
        have = columns(conn, "experience_recipes", "experience_runs")
        if not usable(out, have, "experience_recipes", "id"):
            return out
        rec, runs = have["experience_recipes"], have.get("experience_runs") or []
        learned = (
            "(SELECT e.trace_run_id FROM experience_runs e WHERE e.learned_recipe = rec.id"
            " ORDER BY e.id LIMIT 1)"
            if {"learned_recipe", "trace_run_id", "id"} <= set(runs)
            else "NULL"
        )
        rows = conn.execute(
            f"SELECT rec.id, {col(rec, 'rec', 'task')}, {col(rec, 'rec', 'uses')},"
            f" {col(rec, 'rec', 'wins')}, {col(rec, 'rec', 'losses')}, {learned},"
            f" {col(rec, 'rec', 'source')}, {col(rec, 'rec', 'created_at')},"
            f" {col(rec, 'rec', 'updated_at')} FROM experience_recipes rec"
            f" ORDER BY {col(rec, 'rec', 'uses')} DESC, rec.id"
        ).fetchall()
    if limit and len(rows) > limit:
        out.more, rows = len(rows) - limit, rows[:limit]
    out.rows = [Recipe(*r[:7], _when(r[7]), _when(r[8])) for r in rows]
    return out


def fixes(store: Store, *, tool: str | None = None, limit: int = 0) -> Listing:
    """Tool fixes, most hits first."""
    out = Listing("fixes", store.where())
    with store.maybe_reader() as conn:
        if conn is None:
            out.exists = False
            return out
        have = columns(conn, "experience_tool_fixes")
        if not usable(out, have, "experience_tool_fixes", "id"):
            return out
        cols = have["experience_tool_fixes"]
        where, args = "", []
        if tool is not None:
            where, args = f" WHERE {col(cols, 't', 'tool')} = ?", [tool]
        rows = conn.execute(
            f"SELECT {select(cols, 't', FIX_COLUMNS)} FROM experience_tool_fixes t{where}"
            f" ORDER BY {col(cols, 't', 'hits')} DESC, t.id",
            args,
        ).fetchall()
    if limit and len(rows) > limit:
        out.more, rows = len(rows) - limit, rows[:limit]
    out.rows = [ToolFix(*r[:8], _when(r[8]), _when(r[9])) for r in rows]
    return out
