"""The wipe's engine part in cloud mode (SPEC §8, §10): kaja's schema on the
server; the same functions as `local`, asked for by `whole` and `owner`
(`store.part`). The images kept here, the settings and the markers are
`whole`'s, as locally.

- A whole wipe drops what kaja made in its schema, each object by name
  (`schema.contents`: its tables with their indexes and triggers, its
  functions, unaccent when kaja created it there), then the schema itself
  when nothing else is left in it; all RESTRICT, in one transaction. What is
  not Kaja's stays, and the schema with it: the shared usage ledger of `kaja
  sync` (an earlier kaja made it there for a role named like the schema),
  another program's tables, views, functions. Something not Kaja's that uses
  one of kaja's objects (a view on `sessions`, a foreign key) refuses the
  wipe (exit 5): dropping with CASCADE would take it along. Never the
  database, never a schema that is not Kaja's (exit 5). It needs `--yes` even
  at a terminal (`NEEDS_YES`): the server's store may be a team's. Another
  session holding a lock on kaja's tables (an agent in the middle of a
  transaction) stops it (exit 4), before anything is dropped and again at
  the drop itself (`LOCK … NOWAIT`); a sync writing its ledger does not. The
  image folders of the schema's sessions go after the drop; the marker in
  the state dir lists them first, so an interrupted wipe is finished by the
  next one.
- `--owner` erases one owner in one transaction on the server (the search
  index's words go with the rows), then their image folders, then a VACUUM
  of those tables so the server can reuse the space (`purge`).
"""

from __future__ import annotations

from pathlib import Path

from kaja_cli.core.care.wipe.model import Item, Kept, Kind, Refusal, Stored, WipePlan
from kaja_cli.core.engine import db
from kaja_cli.core.store import Store, markers
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import plural
from kaja_cli.errors import Busy, ExitStatus, KajaError, Refused

NEEDS_YES = True  # the server's store may be a team's: a terminal's answer is not enough
LOCK_WAIT_MS = 3000  # the drop waits this long for its locks, then is busy (exit 4)
PLAN_WAIT_MS: int | None = None  # `wipe --owner`'s plan waits as any read does
# What `--owner` erases rows of, vacuumed after.
_VACUUMED = ("sessions", "messages", "tool_calls", "session_summaries", "model_calls",
             "session_events", "notes", "dataset_answers", "dataset_versions")  # fmt: skip


# --- the whole store ---------------------------------------------------------------------
def stored(store: Store) -> Stored:
    """kaja's objects in its schema (the schema last, when nothing else is in
    it); kept: what is not Kaja's; refused: a schema that is not Kaja's,
    what uses kaja's objects, another session holding them."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    where = store.target()
    items: list[Item] = []
    kept: list[Kept] = []
    refusals: list[Refusal] = []
    known: set[str] = set()
    with pg.connect(where, primary=True) as conn:  # a wipe's plan: never a replica's
        state = schema.status(conn)
        if state.exists and not state.kajas:
            refusals.append(Refusal(Path(where.schema),
                                    f"{where.where} is not Kaja's: kaja drops only its own schema"))  # fmt: skip
        elif state.exists:
            found = schema.contents(conn)
            if "sessions" in state.tables:
                known = {
                    r[0] for r in conn.execute(f"SELECT id FROM {pg.quote(where.schema)}.sessions")
                }
            items += _server_items(where, found)
            kept += _server_kept(where, found)
            refusals += [Refusal(Path(thing.name), _uses(thing, on))
                         for thing, on in found.dependents]  # fmt: skip
            busy = _holders(conn, [t.name for t in found.tables])
            if busy:
                refusals.append(Refusal(
                    Path(where.schema),
                    f"{where.where} is in use: {', '.join(busy)} holds its tables",
                    ExitStatus.BUSY,
                ))  # fmt: skip
    return Stored(items, kept, refusals, known)


def _holders(conn, tables: list[str]) -> list[str]:
    """Other sessions holding a lock on one of kaja's tables: "process 4242 (kaja agent)".
    The server's own autovacuum workers do not count: they give way to the
    wipe's lock (the server cancels them once it has waited a second), and a
    user could not stop them anyway."""
    rows = conn.execute(
        "SELECT DISTINCT l.pid, coalesce(a.application_name, '') FROM pg_catalog.pg_locks AS l"
        " LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid"
        " WHERE l.relation = ANY(CAST(? AS regclass[])) AND l.pid <> pg_backend_pid()"
        " AND coalesce(a.backend_type, '') <> 'autovacuum worker'"
        " ORDER BY l.pid",
        (tables,),
    ).fetchall()
    return [f"process {pid}" + (f" ({name})" if name else "") for pid, name in rows]


def _server_items(where, found) -> list[Item]:
    """kaja's objects in its schema, in the order they are dropped; the schema
    last, when nothing else is in it."""
    kind = {"table": Kind.TABLE, "function": Kind.FUNCTION, "extension": Kind.EXTENSION}
    items = [
        Item(Path(t.name), t.kind, kind[t.kind], Database.SHARED, t.size, shown=t.name)
        for t in (*found.tables, *found.functions, *found.extensions)
    ]
    if not found.others:
        items.append(Item(Path(where.schema), f"schema {where.schema} on the server",
                          Kind.SCHEMA, Database.SHARED, shown=where.where))  # fmt: skip
    return items


def _server_kept(where, found) -> list[Kept]:
    from kaja_cli.core.ledger.sync.server import LEDGER_OBJECTS

    kept = []
    for thing in found.others:
        ledger = thing.name.rpartition(".")[2].strip('"') in LEDGER_OBJECTS
        why = ("the shared usage ledger of `kaja sync`, not the conversation store" if ledger
               else f"a {thing.kind} that is not Kaja's")  # fmt: skip
        kept.append(Kept(Path(thing.name), why))
    if found.others:
        kept.append(Kept(Path(where.schema), "the schema stays, holding the"
                         f" {plural(len(found.others), 'thing')} above"))  # fmt: skip
    return kept


def _uses(thing, on: str) -> str:
    return (f"{thing.kind} {thing.name} uses {on}, which the wipe would drop:"
            " drop or change it first (kaja drops nothing that is not its own)")  # fmt: skip


def prepare(store: Store, plan: WipePlan) -> None:
    """Nothing to ready: the drop looks again under its locks (`drop`)."""


def drop(store: Store, items: list[Item]) -> tuple[list[Item], list[Kept]]:
    """Drop the planned objects by name, RESTRICT, in one transaction: nothing
    that is not Kaja's can go with them. The schema goes last, and only if
    nothing has come into it since the plan (else it stays, said so)."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    where = store.target()
    with pg.connect(where, writable=True, lock_timeout_ms=1) as conn:
        schema.refuse_foreign(where, schema.status(conn))
        with db.transaction(conn):
            found = schema.contents(conn)
            present = {t.name for t in (*found.tables, *found.functions, *found.extensions)}
            items = [i for i in items if i.kind is Kind.SCHEMA or i.where in present]
            tables = [i.where for i in items if i.kind is Kind.TABLE]
            try:
                if tables:
                    # A wait of a few seconds, not NOWAIT: an autovacuum worker on one of
                    # the tables is cancelled by the server after deadlock_timeout (1 s)
                    # of waiting; an agent's transaction still makes it busy (exit 4).
                    conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT_MS}ms'")
                    conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
            except Busy:
                raise Busy(
                    f"{where.where} is in use: another session holds its tables",
                    hint="stop the agents using it, then run `kaja wipe --yes` again;"
                    " nothing was dropped",
                ) from None
            # Under the locks nothing new can come to use kaja's tables.
            for thing, on in schema.contents(conn).dependents:
                raise Refused(_uses(thing, on), hint="nothing was dropped")
            markers.checkpoint("schema")
            for kind, verb in ((Kind.TABLE, "TABLE"), (Kind.FUNCTION, "FUNCTION"),
                               (Kind.EXTENSION, "EXTENSION")):  # fmt: skip
                names = [i.where for i in items if i.kind is kind]
                if names:
                    conn.execute(f"DROP {verb} IF EXISTS {', '.join(names)} RESTRICT")
            kept = []
            if any(i.kind is Kind.SCHEMA for i in items):
                conn.execute("SAVEPOINT kaja_schema")
                try:
                    conn.execute(f"DROP SCHEMA IF EXISTS {pg.quote(where.schema)} RESTRICT")
                    conn.execute("RELEASE SAVEPOINT kaja_schema")
                except KajaError:
                    conn.execute("ROLLBACK TO SAVEPOINT kaja_schema")
                    items = [i for i in items if i.kind is not Kind.SCHEMA]
                    kept.append(Kept(Path(where.schema), f"schema {where.schema} stays:"
                                     " something kaja did not make came into it since the plan"))  # fmt: skip
    return items, kept


# --- one owner ---------------------------------------------------------------------------
def before_erasing(conn) -> None:
    """Nothing: the server reuses the space only after a VACUUM (`purge`)."""


def purge(store: Store, timeout_ms: int) -> bool:
    """Drop the erased words from the search's word list, then VACUUM the
    conversation tables, so the server may reuse the erased rows' space (and
    the index's entries for them); False when the role may not (VACUUM would
    only warn and skip) or the server does not answer."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema as pg_schema

    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            may = conn.execute(
                "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') FROM pg_catalog.pg_class AS c"
                " WHERE c.oid = to_regclass('messages')"
            ).fetchone()
            if not may or not may[0]:
                return False
            with db.transaction(conn):
                pg_schema.prune_terms(conn)
            schema = pg.quote(conn.target.schema)  # VACUUM runs outside kaja's search path
            conn.execute(f"VACUUM {', '.join(f'{schema}.{t}' for t in _VACUUMED)}")
    except KajaError:
        return False
    return True
