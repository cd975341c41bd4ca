"""The demo's engine part in cloud mode (a PostgreSQL server), asked for with
`store.part` as `local` is: the same functions.

The server keeps the conversation store and the usage ledger
(`core.store.server.schema.CLOUD_TABLES`); the agent's learning, services,
sync bookkeeping and the side databases stay local, and the demo writes none
of them there. What is already there is kaja's schema holding conversations.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kaja_cli.core.store import Store


def keeps(table: str) -> bool:
    """Whether the server keeps `table`."""
    from kaja_cli.core.store.server import schema

    return table in {t.name for t in schema.CLOUD_TABLES}


def existing(store: Store) -> list[Path | str]:
    """Kaja's schema on the server, if it holds conversations; Refused (exit 5)
    when the schema is not Kaja's."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.core.store.server import schema

    with pg.connect(store.target(), primary=True) as conn:  # the demo's first look: it writes
        state = schema.status(conn)
        state.require_kaja(conn.target, writing=True)
        if "sessions" in state.tables and conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone():
            return [conn.target.where]
    return []


@contextmanager
def bulk(rec: Any) -> Iterator[None]:
    """Many rows at once: the server keeps its indexes as they are."""
    yield
