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
from kaja_cli.core.ledger.report import report_queries, runs_started
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, schema, whose
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
        if owner is not None:
            rows, missing = _owned(conn, owner, have, by, since, until)
        else:
            queries, missing = report_queries(have, by, since, until, dialect.of(conn))
            rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
        conn.execute("COMMIT")
    return rows, missing


# The columns of `_owned`'s one statement: which query a row is of, two texts
# and six numbers (each query's own, in its order; NULL past its last).
_SHAPE = {"calls": (1, 6), "tools": (2, 3)}


def _owned(
    conn: Any, owner: Owner, have: dict[str, set[str]], by: str, since: str | None,
    until: str | None,
) -> tuple[dict[str, list[tuple]], list[str]]:  # fmt: skip
    """One owner's report in one statement: their runs (`whose.with_mine`)
    found once, the calls and tools of those runs joined to them by hash, and
    the runs counted by status. Sending the runs' ids back (443,000 of them
    for an account of a million messages) cost the planner and the index a
    probe each: on a server of ten million messages `kaja usage` outran the
    statement timeout."""
    d = dialect.of(conn)
    with_, args = whose.with_mine(owner, have, d, carry=("status", "started_at"), many=True)
    queries, missing = report_queries(have, by, since, until, d, joined="mine")
    parts, params = [], list(args)
    for q in queries:
        texts, numbers = _SHAPE[q.name]
        names = [f"c{i}" for i in range(texts + numbers)]
        shown = [f"CAST(x.{n} AS text)" for n in names[:texts]] + ["NULL"] * (2 - texts)
        shown += [f"CAST(x.{n} AS double precision)" for n in names[texts:]]
        shown += ["NULL"] * (6 - numbers)
        parts.append(
            f"SELECT '{q.name}', {', '.join(shown)} FROM ({q.sql}) AS x({', '.join(names)})"
        )
        params += q.params
    if "runs" in have:
        window, more = runs_started(have, since, until)
        parts.append(
            "SELECT 'runs', CAST(\"status\" AS text), NULL, CAST(count(*) AS double precision),"
            f' NULL, NULL, NULL, NULL, NULL FROM mine{window} GROUP BY "status"'
        )
        params += more
    if not parts:
        return {}, missing
    rows: dict[str, list[tuple]] = {"calls": [], "tools": [], "runs": []}
    for name, t1, t2, *n in conn.execute(f"{with_} {' UNION ALL '.join(parts)}", tuple(params)):
        if name == "calls":
            rows[name].append((t1, int(n[0]), *n[1:6]))
        elif name == "tools":
            rows[name].append((t1, t2, int(n[0]), n[1], int(n[2])))
        else:
            rows[name].append((t1, int(n[0])))
    return {k: v for k, v in rows.items() if k in have}, missing


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
