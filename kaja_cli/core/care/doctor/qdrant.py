"""Qdrant, when `memory.provider` is qdrant: it answers (within a few seconds),
the collection exists, and how many points it holds. Nothing is checked when
the provider is local."""

from __future__ import annotations

from kaja_cli.core import qdrant
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.wording import plural
from kaja_cli.errors import Busy, KajaError

ID = "qdrant"


@check(
    ID,
    Group.QDRANT,
    "memory.provider = qdrant: the server (or folder) answers, the collection and its points",
)
def check_qdrant(ctx: Context) -> Check | None:
    try:
        where = qdrant.target(ctx.paths)
    except KajaError as e:
        return Check(ID, Group.QDRANT, ERROR, str(e.message), fix=e.hint)
    if where is None:
        return None
    try:
        found = qdrant.look(where)
    except Busy as e:
        return Check(ID, Group.QDRANT, OK, f"{where.where}: in use by another process, not checked",
                     [e.message, "a local Qdrant is held by the process using it: Kaja is running"])  # fmt: skip
    except KajaError as e:
        return Check(ID, Group.QDRANT, ERROR, e.message, fix=e.hint)
    if not found.collection_exists:
        others = ", ".join(found.collections) or "none"
        return Check(
            ID, Group.QDRANT, WARN,
            f"{where.where} answers, but has no collection {where.collection!r}",
            [f"its collections: {others}", "the agent creates it when it first embeds a message"],
            fix="check memory.qdrant.collection",
        )  # fmt: skip
    return Check(ID, Group.QDRANT, OK,
                 f"{where.where} answers: collection {where.collection!r} holds"
                 f" {plural(found.points, 'point', commas=True)}")  # fmt: skip
