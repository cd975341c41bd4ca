"""`kaja usage`: what the agent spent; `kaja usage reset`: clearing it (SPEC §4, §5).

`report()` answers `kaja usage` from `calls`, `tools` and `runs` in one read
snapshot (on this machine from kaja's per-hour rollups of them, `rollups`); `plan_reset()` counts what `kaja usage reset` would delete, and
`reset()` deletes exactly that in one write transaction; `vacuum()` gives the
freed pages back to the disk afterwards. Every query is built from the columns
the store really has (`report.report_queries`, `plan.selections`), so a ledger
written by an older agent (missing tables or columns) is reported and reset as
far as it goes.

One skeleton, two engine parts, chosen by the store (`store.part`): `local`
(this machine's file) and `server` (cloud mode, where the report reads the
ledger tables of kaja's schema on the server and a reset is refused: the
ledger is reset only where the agent runs locally). The report model lives
below in `ledger.report`, which `kaja usage --all-machines` (`ledger.sync`)
shares; this module sits above `sync`, which a reset keeps right.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from kaja_cli.core.engine import db
from kaja_cli.core.ledger.report import (
    GROUPINGS,
    Query,
    ToolStats,
    Totals,
    UsageReport,
    fill,
    report_queries,
    require_grouping,
)
from kaja_cli.core.ledger.usage.plan import (
    TIME_COLUMNS,
    ResetPlan,
    ResetResult,
    VacuumResult,
    reset_queries,
    selections,
)
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store

__all__ = [
    "GROUPINGS",
    "TIME_COLUMNS",
    "Query",
    "ResetPlan",
    "ResetResult",
    "ToolStats",
    "Totals",
    "UsageReport",
    "VacuumResult",
    "counted",
    "plan_reset",
    "report",
    "report_queries",
    "reset",
    "reset_queries",
    "selections",
    "vacuum",
]


def _part(store: Store) -> ModuleType:
    """`usage.local` or `usage.server`, as the store's engine is."""
    return store.part(__name__)


def report(
    store: Store,
    by: str = "model",
    since: str | None = None,
    until: str | None = None,
    owner: Owner | None = None,
) -> UsageReport:
    """Token and call totals grouped `by`, the tools that fail most, runs by
    status; of `owner`'s runs only (`store.whose`), or everyone's (None)."""
    require_grouping(by)
    result = UsageReport(location=store.where(), exists=True, by=by, since=since, until=until,
                         owner=owner)  # fmt: skip
    found = _part(store).report_rows(store, by, since, until, owner)
    if found is None:
        result.exists = False
        return result
    rows, result.missing = found
    return fill(result, rows)


def counted(store: Store, conn: Any, table: str) -> int | None:
    """How many rows the ledger table `table` (`calls`, `tools`, `runs`) holds, read
    on `conn` (the caller's snapshot) from kaja's rollups where the engine keeps
    them: tens of rows read, not millions; None where it keeps none or they
    cannot be trusted as they stand (the caller then counts the table)."""
    return _part(store).counted(conn, table)


def keep_up(store: Store) -> None:
    """Bring kaja's rollups of the ledger up to date now, where the engine keeps
    them (`kaja demo`, once it has written its store, so its first `kaja usage`
    reads them); nothing where kaja keeps none, or may not write."""
    _part(store).keep_up(store)


def plan_reset(store: Store, before: str | None = None) -> ResetPlan:
    """Count what `reset` would delete (read-only); NotFound if there is no store,
    Refused (exit 5) in cloud mode."""
    return _part(store).plan_reset(store, before)


def reset(store: Store, plan: ResetPlan, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> ResetResult:
    """Delete what `plan` picks, in one transaction that queues nothing for sync;
    Busy (exit 4, nothing deleted) when the write lock does not come in `timeout_ms`."""
    return _part(store).reset(store, plan, timeout_ms=timeout_ms)


def vacuum(store: Store, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> VacuumResult:
    """Rewrite the shared file without its free pages and hand them back to the disk."""
    return _part(store).vacuum(store, timeout_ms=timeout_ms)
