"""Checks of the side data and sync: expired cache entries and web sign-in
sessions (counts only, never a secret), and the sync outbox's backlog."""

from __future__ import annotations

from datetime import timedelta

from kaja_cli.core import clock
from kaja_cli.core.care.doctor.common import safe
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group, Status
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.engine import db
from kaja_cli.core.wording import plural

# A backlog this old, or this long, means sync is not running.
OUTBOX_WARN_AGE = timedelta(days=7)
OUTBOX_WARN_ROWS = 10_000


@check(
    "side-data",
    Group.SIDE_DATABASES,
    "expired cache entries and web sign-in sessions (counts only, never a secret)",
)
def check_side_data(ctx: Context) -> list[Check]:
    now = clock.iso(ctx.now)
    out: list[Check] = []
    cache = ctx.conn("cache") if ctx.local else None
    if cache is not None and "shared_cache" in db.table_names(cache):

        def cache_counts() -> Check:
            total, expired = cache.execute(
                f"SELECT count(*), coalesce(sum({clock.iso_before('expires_at', '?')}), 0) FROM shared_cache",
                (now,),
            ).fetchone()
            return Check("side-data.cache", Group.SIDE_DATABASES, OK,
                         f"cache.db: {plural(total, 'entry', 'entries')}, {expired} expired",
                         ["expired entries are dropped as the cache is used"])  # fmt: skip

        out.append(safe(cache_counts, "side-data.cache", Group.SIDE_DATABASES, "cache.db"))
    auth = ctx.conn("auth") if ctx.local else None
    if auth is not None and {"web_users", "web_sessions"} <= db.table_names(auth):

        def auth_counts() -> Check:
            users = auth.execute("SELECT count(*) FROM web_users").fetchone()[0]
            sessions, expired = auth.execute(
                f"SELECT count(*), coalesce(sum({clock.iso_before('expires_at', '?')}), 0) FROM web_sessions",
                (now,),
            ).fetchone()
            return Check("side-data.auth", Group.SIDE_DATABASES, OK,
                         f"web-auth.db: {plural(users, 'account')}, {plural(sessions, 'sign-in session')}, "
                         f"{expired} expired", ["counts only: no name, hash or token is read"])  # fmt: skip

        out.append(safe(auth_counts, "side-data.auth", Group.SIDE_DATABASES, "web-auth.db"))
    return out


@check("sync-outbox", Group.SYNC, "changes waiting in sync_outbox to be pushed", needs_shared=True)
def check_sync_outbox(ctx: Context) -> Check | None:
    from kaja_cli.core.ledger import sync

    conn = ctx.conn("shared")
    assert conn is not None
    if "sync_outbox" not in db.table_names(conn):
        return None

    def look() -> Check:
        count, oldest = sync.outbox(conn)
        if not count:
            return Check("sync-outbox", Group.SYNC, OK, "the sync outbox is empty")
        summary = f"{plural(count, 'change')} waiting to sync"
        when = clock.parse_stored(oldest)
        if when is not None:
            summary += f", the oldest from {oldest}"
        details = [
            "changes wait here while the sync server cannot be reached, then go out in order"
        ]
        stuck = count > OUTBOX_WARN_ROWS or (when is not None and ctx.now - when > OUTBOX_WARN_AGE)
        if stuck:
            return Check("sync-outbox", Group.SYNC, WARN, summary + ": sync looks stuck", details,
                         fix="check that sync is configured and the server reachable")  # fmt: skip
        return Check("sync-outbox", Group.SYNC, OK, summary, details)

    return safe(look, "sync-outbox", Group.SYNC, "the sync outbox")


@check(
    "sync",
    Group.SYNC,
    "ledger sync: changes going out while PostgreSQL answers, the lease, sync_map, import flags",
    needs_shared=True,
)
def check_sync(ctx: Context) -> Check | list[Check] | None:
    """Nothing where sync was never used; the server is asked only when changes
    have waited long (ledger/sync/health.py decides, with a 3 s connect timeout)."""
    from kaja_cli.core.ledger import sync
    from kaja_cli.core.ledger.sync import health as sync_health
    from kaja_cli.core.store import Store
    from kaja_cli.errors import KajaError

    conn = ctx.conn("shared")
    assert conn is not None
    try:
        url = sync.find_url(Store(ctx.paths))
    except KajaError as e:
        return [Check("sync-progress", Group.SYNC, ERROR, f"the sync URL is not usable: {e}",
                      fix="kaja config set usage.postgres_url postgresql://…")]  # fmt: skip

    def look() -> list[Check]:
        found = sync_health.doctor_checks_on(conn, url, now=ctx.now, with_map=not ctx.quick)
        if ctx.quick and found:  # sync is in use: say what was left out
            ctx.skip(
                "sync-map", "looking for imported rows that are gone (reads every sync_map row)"
            )
        return [Check(cid, Group.SYNC, Status(status), summary, list(details))
                for cid, status, summary, details in found]  # fmt: skip

    return safe(look, "sync", Group.SYNC, "sync")


@check(
    "semantic-index",
    Group.SIDE_DATABASES,
    "kaja's semantic index (`kaja search --semantic`): its size, model, and messages not yet in it",
)
def check_semantic_index(ctx: Context) -> Check | None:
    """Only where one was built: nothing to say otherwise."""
    from kaja_cli.core.conversations.semantic import index
    from kaja_cli.core.engine.fs import human_size

    path = ctx.paths.semantic_db
    if not ctx.local or not path.exists():
        return None

    def look() -> Check:
        st = index.status(path)
        if st.model is None:
            return Check("semantic-index", Group.SIDE_DATABASES, WARN,
                         f"{index.FILE_NAME}: not a semantic index kaja can read",
                         [str(path)], fix="kaja search --semantic --reindex")  # fmt: skip
        shared = ctx.conn("shared")
        behind = None
        if shared is not None and "messages" in db.table_names(shared):
            behind = shared.execute(
                "SELECT count(*) FROM messages WHERE rowid > ?", (st.high_water,)
            ).fetchone()[0]
        details = [
            f"file: {path} ({human_size(st.size)})",
            f"model: {st.model}",
            f"for the store: {st.store}",
            "rebuilt by `kaja search --semantic --reindex`; deleting the file turns it off",
        ]
        late = "" if behind is None else f", {plural(behind, 'message')} behind"
        return Check("semantic-index", Group.SIDE_DATABASES, OK,
                     f"{index.FILE_NAME}: {plural(st.vectors, 'message')} embedded,"
                     f" {human_size(st.size)}{late} (the next semantic search adds them)"
                     if behind else
                     f"{index.FILE_NAME}: {plural(st.vectors, 'message')} embedded,"
                     f" {human_size(st.size)}{late}", details)  # fmt: skip

    return safe(look, "semantic-index", Group.SIDE_DATABASES, index.FILE_NAME)
