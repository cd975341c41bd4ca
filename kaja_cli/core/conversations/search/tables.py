"""Which FTS4 table answers a local search: the store's index
(`conversation_text`), its CJK index (`conversation_text_cjk`), or a
temporary table a scan filled when the store has no usable index and can't
be given one; and the terms on which search may add an index.

Shared by `search.local` (the main index) and `search.cjk_search` (the CJK
one), and by `search.rank`, which writes its SQL over whichever table this is.
"""

from __future__ import annotations

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
