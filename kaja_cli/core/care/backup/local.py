"""`kaja backup` and `kaja restore` of a local store (the SQLite engine part):
`create` copies its files, `restore` stages and swaps them (see those)."""

from __future__ import annotations

from typing import Any

from kaja_cli.core.care.backup.create import backup
from kaja_cli.core.care.backup.restore import execute, plan_restore
from kaja_cli.core.store import Store
from kaja_cli.errors import Failed

__all__ = ["backup", "execute", "finish_commit", "plan_restore"]


def finish_commit(store: Store, data: dict[str, Any]) -> bool:
    """A restore into cloud mode killed at its commit, met by a local store:
    only the server can tell whether it committed."""
    raise Failed(
        "an interrupted restore into cloud mode is unfinished here: only its server can tell"
        " whether it committed",
        hint="run `kaja restore --finish` in cloud mode, on that server",
    )
