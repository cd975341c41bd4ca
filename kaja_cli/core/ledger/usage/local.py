"""`kaja usage` and `kaja usage reset` on this machine's file (the local engine part).

`columns()` tells the report which ledger tables and columns the file has.
`plan_reset()` counts what a reset picks (`plan.selections`), and `reset()`
deletes exactly that in one write transaction; `vacuum()` gives the freed
pages back to the disk afterwards, keeping the search indexes in step.

A reset queues nothing for sync: the pending `sync_outbox` rows of the
ledger tables go, the sync triggers (any trigger on the ledger tables that
inserts into `sync_outbox`, kaja's or an agent's own) are set aside for the
transaction, and the outbox's sequence is put back. `sync.after_reset` then
drops the sync_map rows of deleted imports and keeps reused ids apart on the
server. kaja's usage rollups (`rollups`) are dropped with their triggers, and
built again by the next `kaja usage`. Everything else in the file is left as
it was.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kaja_cli.core.engine import db, fs
from kaja_cli.core.ledger.usage.plan import (
    ResetPlan,
    ResetResult,
    VacuumResult,
    reset_queries,
    selections,
)
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store, schema
from kaja_cli.errors import Busy


def columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Every table of the file with its columns."""
    return schema.present_columns(conn)


def report_rows(
    store: Store, by: str, since: str | None, until: str | None, owner: Owner | None = None
) -> tuple[dict[str, list[tuple]], list[str]] | None:
    """The rows of the report's three queries (`report.fill`) and what the ledger lacks;
    None when there is no file.

    Everyone's (`owner` None) from kaja's rollups (`rollups`): brought up to
    date first when they lag (a short write; a file kaja may not write, or an
    agent holding the lock past `rollups.WAIT_MS`, is read as it is), then read
    with the raw rows they do not cover, in one snapshot. One owner's from the
    ledger's rows (the rollups are everyone's), by their runs (`store.whose`).
    """
    from kaja_cli.core.engine import dialect
    from kaja_cli.core.ledger.report import owned_runs, report_queries
    from kaja_cli.core.ledger.usage import rollups

    if owner is not None:
        with store.maybe_reader() as conn:
            if conn is None:
                return None
            conn.execute("BEGIN")  # one snapshot for every query
            have = schema.present_columns(conn)
            ids, owned = owned_runs(conn, owner, have, since, until)
            runs = dialect.SQLITE.in_ids(conn, ids)
            queries, missing = report_queries(have, by, since, until, runs=runs)
            rows = {q.name: conn.execute(q.sql, q.params).fetchall() for q in queries}
            if "runs" in have:
                rows["runs"] = owned
            conn.execute("COMMIT")
            return rows, missing
    for attempt in (1, 2):
        with store.maybe_reader() as conn:
            if conn is None:
                return None
            conn.execute("BEGIN")  # one snapshot for every query
            have = schema.present_columns(conn)
            if attempt == 1 and rollups.needs_writing(conn, have):
                conn.execute("COMMIT")
            else:
                _, missing = report_queries(have, by, since, until)
                rows = rollups.report_rows(conn, have, by, since, until)
                conn.execute("COMMIT")
                return rows, missing
        _catch_up(store)  # then a new connection sees what it wrote
    raise AssertionError("the second attempt reads")  # pragma: no cover


def keep_up(store: Store) -> None:
    _catch_up(store)


def counted(conn: sqlite3.Connection, table: str) -> int | None:
    """How many rows a ledger table holds, from kaja's rollups in the caller's
    snapshot (`rollups.counted`); None when none can be trusted."""
    from kaja_cli.core.ledger.usage import rollups

    return rollups.counted(conn, schema.present_columns(conn), table)


def _catch_up(store: Store) -> bool:
    """Bring the rollups up to date; False when the file may not be written now."""
    from kaja_cli.core.ledger.usage import rollups
    from kaja_cli.errors import KajaError

    file = store.paths.file_of("shared")
    try:
        with db.open_write(file.path, file, timeout_ms=rollups.WAIT_MS) as conn:
            rollups.catch_up(conn)
    except (KajaError, sqlite3.Error, OSError):
        return False  # read-only, not Kaja's, the agent busy: read without writing
    return True


def plan_reset(store: Store, before: str | None = None) -> ResetPlan:
    """Count what `reset` would delete (read-only); NotFound if there is no store."""
    with store.reader(writing=True) as conn:
        conn.execute("BEGIN")
        picked, skipped = selections(schema.present_columns(conn), before)
        plan = ResetPlan(location=str(store.path()), before=before, skipped=skipped)
        from kaja_cli.core.ledger import sync  # not imported by `kaja usage` (~5% of its time)

        plan.synced = sync.used_on(store, conn)
        for q in picked:
            n = conn.execute(f"SELECT COUNT(*) FROM {q.sql}", q.params).fetchone()[0]
            if q.name == "sync_outbox":
                plan.outbox = n
            else:
                plan.tables[q.name] = n
        conn.execute("COMMIT")
    return plan


def reset(store: Store, plan: ResetPlan, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> ResetResult:
    """Delete what `plan` picks, in one transaction that queues nothing for sync.

    Waits up to `timeout_ms` for the write lock, then raises Busy having
    deleted nothing. The counts are those of the rows really deleted (the
    agent may have written more since the plan was made).
    """
    try:
        with store.writer(timeout_ms=timeout_ms) as conn, db.transaction(conn):
            return _delete(conn, plan)
    except Busy as e:
        raise Busy(
            f"the agent is busy writing to {plan.location} (waited {timeout_ms / 1000:g} s):"
            " nothing was deleted",
            hint="try again when it is idle, or wait longer with --wait SECONDS",
        ) from e


def _delete(conn: sqlite3.Connection, plan: ResetPlan) -> ResetResult:
    have = schema.present_columns(conn)
    # The plan's tables only: one an older file lacked was just created empty.
    have_now = {
        t: c for t, c in have.items() if t not in schema.LEDGER_RESET_TABLES or t in plan.tables
    }
    result = ResetResult(plan.location, plan.before, {}, 0)
    # The agent's sync triggers would queue a delete per row (and cost the
    # fast whole-table delete): they are set aside until the end of the
    # transaction.
    # kaja's usage rollups go too (their triggers would run per deleted row); the
    # next `kaja usage` builds them again from what is left.
    from kaja_cli.core.ledger.usage import rollups

    rollups.drop(conn)
    set_aside = _sync_triggers(conn, list(plan.tables))
    for name, _ in set_aside:
        conn.execute('DROP TRIGGER "{}"'.format(name.replace('"', '""')))  # a name from the store
    outbox = have.get("sync_outbox", set())
    last_seq = sequence = None
    if "seq" in outbox:
        last_seq = conn.execute("SELECT MAX(seq) FROM sync_outbox").fetchone()[0]
        if "sqlite_sequence" in have:
            row = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'"
            ).fetchone()
            sequence = row[0] if row else None
    from kaja_cli.core.ledger import sync

    maxima = sync.owned_maxima(conn)
    for q in reset_queries(have_now, plan.before):
        n = conn.execute(q.sql, q.params).rowcount
        if q.name == "sync_outbox":
            result.outbox = n
        else:
            result.deleted[q.name] = n
    if "seq" in outbox:
        # Whatever another trigger queued during this transaction goes too,
        # and the outbox's sequence is put back: a reset is local.
        conn.execute("DELETE FROM sync_outbox WHERE seq > ?", (last_seq or 0,))
        if "sqlite_sequence" in have:
            _put_back_sequence(conn, sequence)
    # Imports of rows that went, and ids SQLite will hand out again (sync.after_reset).
    sync.after_reset(conn, maxima)
    for _, sql in set_aside:
        conn.execute(sql)
    return result


def _put_back_sequence(conn: sqlite3.Connection, sequence: int | None) -> None:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'").fetchone()
    now = row[0] if row else None
    if now == sequence:
        return
    if sequence is None:
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'sync_outbox'")
    else:
        conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'sync_outbox'", (sequence,))


def _sync_triggers(conn: sqlite3.Connection, tables: list[str]) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the triggers on `tables` that write to sync_outbox."""
    if not tables:
        return []
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (%s)"
        % ",".join("?" * len(tables)),
        tables,
    )
    return [(name, sql) for name, sql in rows if sql and "sync_outbox" in sql.lower()]


# --- --vacuum ---------------------------------------------------------------------------
def vacuum(store: Store, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> VacuumResult:
    """Rewrite the shared file without its free pages and hand them back to the disk."""
    path = store.require()
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            return vacuum_in(conn, path)
    except Busy as e:
        raise Busy(
            f"the agent is busy writing to {path} (waited {timeout_ms / 1000:g} s): VACUUM did not run",
            hint="run `kaja usage reset --vacuum` again when it is idle",
        ) from e


def vacuum_in(conn: sqlite3.Connection, path: Path) -> VacuumResult:
    """VACUUM the open file at `path`, keeping the search index in step.

    VACUUM may renumber the rowids of tables without an INTEGER PRIMARY KEY
    (SQLite does when such a table has no index), and the search index is
    keyed by `messages.rowid`: if the messages' rowids moved, the index is
    rebuilt so that search keeps finding the right messages.
    """
    from kaja_cli.core.conversations.search import cjk_index
    from kaja_cli.core.store import search_index

    before = _on_disk(path)
    has_index = search_index.present(conn)
    has_cjk = cjk_index.exists(conn)  # keyed by messages.rowid too
    fingerprint = _rowid_fingerprint(conn) if has_index or has_cjk else None
    conn.execute("VACUUM")
    state = "absent"
    moved = (has_index or has_cjk) and (
        fingerprint is None or _rowid_fingerprint(conn) != fingerprint
    )
    if has_index:
        state = "checked"
        if moved:
            with db.transaction(conn):
                search_index.rebuild(conn)
            state = "rebuilt"
    if has_cjk and moved:
        with db.transaction(conn):
            cjk_index.reset(conn)  # built again, in short batches, by the next CJK search
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return VacuumResult(before, _on_disk(path), state, readers_waited=bool(busy))


def _on_disk(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += fs.beside(path, suffix).stat().st_size
        except FileNotFoundError:
            pass
    return total


def _rowid_fingerprint(conn: sqlite3.Connection) -> str | None:
    """A digest of every message's (rowid, id); None when messages have no id column."""
    import hashlib  # only --vacuum needs it (~3 ms to import)

    if "id" not in db.column_names(conn, "messages"):
        return None
    digest = hashlib.blake2b(digest_size=16)
    cur = conn.execute("SELECT rowid, id FROM messages ORDER BY rowid")
    while rows := cur.fetchmany(20000):
        digest.update(repr(rows).encode())
    return digest.hexdigest()
