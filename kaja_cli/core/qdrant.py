"""Qdrant, when the agent's semantic memory lives there (`memory.provider = "qdrant"`).

The seed: messages are embedded into the `memory.qdrant.collection`
collection (default `andromeda_memory`), each point's payload carrying the
ids of the SQLite rows it came from (`resource_id`, `thread_id`,
`message_id`, …). For Kaja a thread is a session and a resource an owner.
kaja reads and deletes there only:

- `look()`: doctor's question: does Qdrant answer (a short timeout), does the
  collection exist, how many points it holds;
- `plan_forget()` before a deletion (`sessions delete`, `wipe --owner`):
  which points belong to the sessions going (payload `thread_id` one of
  theirs, or `message_id` one of their messages; for `wipe --owner` also
  `resource_id` the owner), counted, and Qdrant asked before any row is
  deleted, so an unreachable Qdrant stops the deletion while nothing is lost;
  `forget()` after the SQLite commit deletes those points.

Where Qdrant is: a server (`memory.qdrant.url`, http or https) or a folder
(`memory.qdrant.path`, qdrant-client's local mode; relative to the state
dir). `qdrant-client` is an optional extra (`pip install 'kaja-cli[qdrant]'`),
imported only here and only when the provider is qdrant.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from kaja_cli.core import masking
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.store.settings import expand
from kaja_cli.core.store.settings import keys as settings_keys
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, Failed

TIMEOUT_S = 3  # a server that has not answered by then is down, for doctor and deletions
BATCH = 1000  # ids per filter condition
INSTALL_HINT = "install the optional driver: pip install 'kaja-cli[qdrant]'"


class Target(NamedTuple):
    """Where the points are: a server's URL or a local folder, and the collection."""

    url: str | None
    path: Path | None
    collection: str

    @property
    def where(self) -> str:
        """As a person reads it (a URL's password masked)."""
        return masking.mask(self.url) if self.url else f"the Qdrant folder {self.path}"


def target(paths: Paths) -> Target | None:
    """The Qdrant the settings name; None unless `memory.provider` is qdrant.

    Failed (exit 1) when the provider is qdrant and neither a URL nor a
    folder is set, or a value is not one kaja accepts."""
    settings = paths.settings
    if settings.lookup(("memory", "provider")) != "qdrant":
        return None
    values = {}
    for leaf in ("url", "path", "collection"):
        key = settings_keys.KEYS[f"memory.qdrant.{leaf}"]
        value = settings.lookup(key.parts)
        if value is not None and (problem := settings_keys.check(key, value)):
            raise Failed(f"{settings.path}: {problem}", hint="`kaja config set` fixes it")
        values[leaf] = value if value is not None else key.default
    if values["url"] is None and values["path"] is None:
        raise Failed(
            'memory.provider is "qdrant" but neither memory.qdrant.url nor memory.qdrant.path is set',
            hint="kaja config set memory.qdrant.url http://localhost:6333",
        )
    path = None
    if values["url"] is None:
        path = expand(str(values["path"]))
        path = path if path.is_absolute() else paths.state_dir.path / path
    return Target(values["url"], path, str(values["collection"]))


@contextmanager
def client(where: Target) -> Iterator[Any]:
    """A qdrant-client for `where`; Failed with one line when it cannot be had."""
    try:
        from qdrant_client import QdrantClient
    except ImportError:
        raise Failed(
            'memory.provider is "qdrant" but qdrant-client is not installed', hint=INSTALL_HINT
        ) from None
    if where.path is not None:
        if not where.path.is_dir():
            raise Failed(f"no Qdrant folder at {where.path}", hint="check memory.qdrant.path")
        try:
            c = QdrantClient(path=str(where.path))
        except RuntimeError as e:  # the folder is locked: a running agent has it open
            raise Busy(f"{where.where} is in use by another process ({e})",
                       hint="close Kaja (it keeps a local Qdrant open) and try again") from None  # fmt: skip
    else:
        # No version handshake: it costs a round trip and warns on stderr when it fails.
        c = QdrantClient(url=where.url, timeout=TIMEOUT_S, check_compatibility=False)
    try:
        yield c
    finally:
        c.close()


def _unreachable(where: Target, error: Exception) -> Failed:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    reason = masking.scrub(reason, where.url) if where.url else masking.mask_text(reason)
    return Failed(f"Qdrant at {where.where} does not answer ({reason})",
                  hint="start it, or check memory.qdrant.url")  # fmt: skip


# --- doctor ---------------------------------------------------------------------------
class Look(NamedTuple):
    collection_exists: bool
    points: int | None
    collections: list[str]


def look(where: Target) -> Look:
    """Whether the collection exists and how many points it holds; Failed (with
    the reason) when Qdrant does not answer within TIMEOUT_S."""
    with client(where) as c:
        try:
            names = sorted(d.name for d in c.get_collections().collections)
            if where.collection not in names:
                return Look(False, None, names)
            return Look(True, c.count(where.collection, exact=True).count, names)
        except Exception as e:  # the client's errors differ by transport (HTTP, gRPC, local)
            raise _unreachable(where, e) from e


# --- deleting a session's points --------------------------------------------------------
class Forget(NamedTuple):
    """The points a deletion takes along (counted before any row is deleted)."""

    where: Target
    session_ids: tuple[str, ...]
    message_ids: tuple[str, ...]
    resource_id: str | None  # `wipe --owner`: the owner's points by their resource id too
    points: int


def plan_forget(
    store: Store, session_ids: list[str], *, owner: Owner | None = None
) -> Forget | None:
    """The points of these sessions (and, for `wipe --owner`, of the owner), counted;
    None unless the provider is qdrant. Failed when Qdrant does not answer: the
    caller then deletes nothing."""
    where = target(store.paths)
    if where is None:
        return None
    message_ids = _message_ids(store, session_ids)
    resource = owner.id if owner is not None and not owner.is_terminal else None
    plan = Forget(where, tuple(session_ids), tuple(message_ids), resource, 0)
    with client(where) as c:
        try:
            if not c.collection_exists(where.collection):
                return plan
            return plan._replace(points=_count(c, plan))
        except Exception as e:
            raise _unreachable(where, e) from e


def _message_ids(store: Store, session_ids: list[str]) -> list[str]:
    if not session_ids or not store.exists():
        return []
    with store.reader() as conn:
        try:
            return [
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM messages WHERE sessionId IN (SELECT value FROM json_each(?))",
                    (json.dumps(session_ids),),
                )
            ]
        except sqlite3.OperationalError:  # no messages table (a store another program made)
            return []


def owner_sessions(store: Store, owner: Owner) -> list[str]:
    """The owner's session ids, as `wipe --owner` will erase them."""
    if not store.exists():
        return []
    from kaja_cli.core.store import schema

    with store.reader() as conn:
        have = schema.present_columns(conn).get("sessions", ())
        if "id" not in have or "owner" not in have:  # a store another program made
            return []
        where, args = owner.sessions_where()
        return [str(r[0]) for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", args)]


def _filters(plan: Forget) -> Iterator[Any]:
    """One filter per batch of ids: any point whose payload names one of them."""
    from qdrant_client import models

    def any_of(key: str, values: tuple[str, ...]) -> Iterator[Any]:
        for i in range(0, len(values), BATCH):
            match = models.MatchAny(any=list(values[i : i + BATCH]))
            yield models.Filter(should=[models.FieldCondition(key=key, match=match)])

    yield from any_of("thread_id", plan.session_ids)
    yield from any_of("message_id", plan.message_ids)
    if plan.resource_id is not None:
        yield from any_of("resource_id", (plan.resource_id,))


def _count(c: Any, plan: Forget) -> int:
    """Points matching the plan, each counted once (a point may match several batches)."""
    filters = list(_filters(plan))
    if not filters:
        return 0
    if len(filters) == 1:
        return c.count(plan.where.collection, count_filter=filters[0], exact=True).count
    seen: set = set()
    for f in filters:
        offset = None
        while True:
            points, offset = c.scroll(plan.where.collection, scroll_filter=f, limit=BATCH,
                                      offset=offset, with_payload=False, with_vectors=False)  # fmt: skip
            seen.update(p.id for p in points)
            if offset is None:
                break
    return len(seen)


def forget(plan: Forget) -> int:
    """Delete the planned points (after the SQLite commit); how many went.

    Failed when Qdrant stops answering meanwhile: the rows are gone, the
    points stay, and the message says how to finish."""
    from qdrant_client import models

    if not plan.points:
        return 0
    with client(plan.where) as c:
        try:
            if not c.collection_exists(plan.where.collection):
                return 0
            going = _count(c, plan)  # again: the agent may have embedded more meanwhile
            for f in _filters(plan):
                c.delete(plan.where.collection, points_selector=models.FilterSelector(filter=f),
                         wait=True)  # fmt: skip
            return going
        except Exception as e:
            error = _unreachable(plan.where, e)
            raise Failed(
                f"the rows are deleted, but {plural(plan.points, 'point')} in Qdrant"
                f" {noun(plan.points, 'is', 'are')} not: {error.message}",
                hint=_retry_hint(plan),
            ) from e


def _retry_hint(plan: Forget) -> str:
    if plan.resource_id is not None:
        return f"once it answers, `kaja wipe --owner {plan.resource_id}` deletes them"
    return (
        "delete the points whose thread_id is "
        + ", ".join(plan.session_ids[:3])
        + (" …" if len(plan.session_ids) > 3 else "")
        + " in Qdrant"
    )
