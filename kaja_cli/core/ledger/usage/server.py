"""`kaja usage` and `kaja usage reset` in cloud mode (the server engine part).

The ledger stays local in cloud mode (SPEC §10, "usage reset stays local"):
the report reads the ledger tables of kaja's schema on the server when they
are there (an agent that keeps its ledger there), and every step of a reset
is refused (exit 5). This module is where that is said, once: the skeleton
(`usage`) asks the store for its part and never looks at the engine itself.
"""

from __future__ import annotations

from typing import Any, NoReturn

from kaja_cli.core.engine import dialect
from kaja_cli.core.ledger.report import owned_runs, report_queries
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, schema
from kaja_cli.errors import Refused


def columns(conn: Any, *also: str) -> dict[str, set[str]]:
    """The ledger tables of kaja's schema on the server (and the tables `also`
    names), with their columns: one read of the catalog."""
    from kaja_cli.core.store.server import schema as server_schema

    have = server_schema.present_columns(conn)
    wanted = [t.name for t in schema.LEDGER_TABLES] + list(also)
    return {name: set(have[name]) for name in wanted if name in have}


def report_rows(
    store: Store, by: str, since: str | None, until: str | None, owner: Owner | None = None
) -> tuple[dict[str, list[tuple]], list[str]] | None:
    """The rows of the report's three queries, read raw on the server (no rollups there:
    the server's ledger is the agent's, and kaja keeps no tables of its own beside it),
    of `owner`'s runs or everyone's; None when there is nothing to read."""
    with store.maybe_reader() as conn:
        if conn is None:
            return None
        conn.execute("BEGIN")  # one snapshot for every query
        have = columns(conn, "sessions")  # whose runs: by their sessions
        d, runs, owned = dialect.of(conn), None, None
        if owner is not None:  # read once
            ids, owned = owned_runs(conn, owner, have, since, until)
            runs = d.in_ids(conn, ids)
        queries, missing = report_queries(have, by, since, until, d, runs)
        rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
        if owned is not None and "runs" in have:
            rows["runs"] = owned
        conn.execute("COMMIT")
    return rows, missing


def keep_up(store: Store) -> None:
    """The server's ledger is read raw: kaja keeps no tables of its own there."""


def counted(conn: Any, table: str) -> None:
    """No rollups on the server: the caller counts the table itself."""


def _refused() -> NoReturn:
    raise Refused(
        "usage reset is local: in cloud mode the ledger is on the server, and kaja does"
        " not reset it",
        hint="the ledger of this machine's agent is reset where it runs locally",
    )


def plan_reset(store: Store, before: str | None = None) -> NoReturn:
    _refused()


def reset(store: Store, plan: Any, *, timeout_ms: int = 0) -> NoReturn:
    _refused()


def vacuum(store: Store, *, timeout_ms: int = 0) -> NoReturn:
    _refused()
