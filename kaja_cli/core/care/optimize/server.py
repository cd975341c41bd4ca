"""`kaja optimize` in cloud mode (the server engine part): `VACUUM (ANALYZE)`
of kaja's tables in its schema on the server.

PostgreSQL's own autovacuum usually does this; a run by hand after a large
delete (`sessions prune`, `wipe --owner`) gives the space back to new rows
and the planner fresh statistics at once. VACUUM runs outside a transaction,
one table at a time (no long lock: readers and writers go on). A table only
its owner (or a superuser, or from PostgreSQL 17 a role with MAINTAIN on it)
may vacuum: PostgreSQL would skip the others with a warning, so kaja checks
first and, when the role may not, says in one line what it needs (exit 1)
and vacuums nothing. `--vacuum` asks nothing more here: VACUUM is the step.
The local side databases (cache.db, db-stats.db, web-auth.db) are not
touched in cloud mode.
"""

from __future__ import annotations

from collections.abc import Callable

from kaja_cli.core.care.optimize.model import FileResult, OptimizeResult
from kaja_cli.core.store import Store
from kaja_cli.errors import Failed

MAINTAIN_FROM = 170000  # server_version_num: the MAINTAIN privilege exists


def optimize(
    store: Store, *, vacuum: bool = False, step: Callable[[str], None] | None = None
) -> OptimizeResult:
    with store.writer() as conn:  # VACUUM writes; never inside a transaction (autocommit)
        tables = _tables(conn)
        before = _size(conn, tables)
        for t in tables:
            if step is not None:
                step(f"{t}: VACUUM (ANALYZE)")
            conn.execute(f"VACUUM (ANALYZE) {_q(conn.target.schema)}.{_q(t)}")
        after = _size(conn, tables)
    where = store.where()
    result = FileResult("shared", where, before, after, analyzed=True, vacuumed=True,  # type: ignore[arg-type]
                        checkpointed=True)  # fmt: skip
    return OptimizeResult([result], vacuum, tables=tables)


def plan(store: Store, *, vacuum: bool = False) -> OptimizeResult:
    """What `optimize` would do (`--dry-run`): the same refusals, read only;
    the sizes after are not known before VACUUM runs (given as before)."""
    with store.reader(writing=True) as conn:
        tables = _tables(conn)
        before = _size(conn, tables)
    result = FileResult("shared", store.where(), before, before)  # type: ignore[arg-type]
    return OptimizeResult([result], vacuum, tables=tables)


def _tables(conn) -> list[str]:
    """Kaja's tables on the server; Failed when this role may not VACUUM one."""
    from kaja_cli.core.store.server import schema as server_schema

    tables = sorted(server_schema.KAJA_TABLES & conn.table_names())
    refused = _not_maintainable(conn, tables)
    if refused:
        role = conn.execute("SELECT current_user").fetchone()[0]
        raise Failed(
            f"your role ({role}) may not VACUUM kaja's tables on {conn.target.where}"
            f" ({', '.join(refused[:3])}{', …' if len(refused) > 3 else ''}): VACUUM needs"
            " the tables' owner, a superuser, or the MAINTAIN privilege (PostgreSQL 17)",
            hint="run `kaja optimize` as the role that made kaja's schema, or ask the"
            " database's owner to GRANT MAINTAIN ON those tables; nothing was done",
        )
    return tables


def _q(name: str | None) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _not_maintainable(conn, tables: list[str]) -> list[str]:
    """The tables this role may not vacuum."""
    version = int(conn.execute("SELECT current_setting('server_version_num')").fetchone()[0])
    maintain = " OR has_table_privilege(c.oid, 'MAINTAIN')" if version >= MAINTAIN_FROM else ""
    rows = conn.execute(
        "SELECT c.relname FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = ? AND c.relkind = 'r'"
        f" AND NOT (pg_has_role(c.relowner, 'USAGE'){maintain}"
        " OR (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user))"
        " ORDER BY c.relname",
        (conn.target.schema,),
    ).fetchall()
    mine = set(tables)
    return [r[0] for r in rows if r[0] in mine]


def _size(conn, tables: list[str]) -> int:
    """The tables' bytes on the server, with their indexes and TOAST."""
    if not tables:
        return 0
    total = 0
    for t in tables:
        total += conn.execute(
            "SELECT pg_catalog.pg_total_relation_size(?::regclass)",
            (f"{_q(conn.target.schema)}.{_q(t)}",),
        ).fetchone()[0]
    return int(total)
