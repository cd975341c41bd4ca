"""Which FTS4 table answers a local search: the store's index
(`conversation_text`), its CJK index (`conversation_text_cjk`), or a
temporary table a scan filled when the store has no usable index and can't
be given one; and the terms on which search may add an index.

Shared by `search.local` (the main index) and `search.cjk_search` (the CJK
one), and by `search.rank`, which writes its SQL over whichever table this is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from kaja_cli.core.store import Store

BUILD_WAIT_MS = 1000  # how long search waits for the write lock to build a missing index
NOT_KAJAS = "not Kaja's"  # the reason a build gives when the guard refused the file


class Index:
    """Which FTS4 table answers: the store's index, or a scan's temporary one."""

    __slots__ = ("cjk", "name", "schema")

    def __init__(self, schema: str, name: str, cjk: bool = False) -> None:
        self.schema = schema  # "main" or "temp"
        self.name = name
        self.cjk = cjk  # holds `cjk.index_text` of the messages, not their text

    @property
    def table(self) -> str:
        return f'{self.schema}."{self.name}"'

    @property
    def docsize(self) -> str:
        return f'{self.schema}."{self.name}_docsize"'

    @property
    def stat(self) -> str:
        return f'{self.schema}."{self.name}_stat"'


def add_index(
    store: Store, path: Path, ensure: Callable[[sqlite3.Connection], bool],
    fill: Callable[[sqlite3.Connection], None],
) -> tuple[bool, str | None]:  # fmt: skip
    """Give the store one of its search indexes, and nothing else: (made now,
    why it could not be).

    Search reads; an index is the one thing it may add (SPEC §6), with the
    `counters` table its build records progress in. The rest of the schema is
    left for a command that writes. `ensure` makes the index's tables inside
    one transaction (True when it made them now); `fill` then indexes what is
    waiting, in the short transactions of its own that let the agent write."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import schema
    from kaja_cli.errors import Busy, KajaError, Refused

    try:
        with db.open_write(path, store.paths.file_of("shared"), timeout_ms=BUILD_WAIT_MS) as conn:
            with db.transaction(conn):
                if "counters" not in db.table_names(conn):
                    schema.apply_tables(conn, (schema.TABLES["counters"],), schema.Report())
                made = ensure(conn)
            fill(conn)
    except Busy:
        return False, "another process is writing to it"
    except Refused:
        return False, NOT_KAJAS
    except KajaError as e:
        return False, e.message
    return made, None
