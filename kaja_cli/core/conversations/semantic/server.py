"""`kaja search --semantic` in cloud mode: refused in one line (exit 2).

The messages are on the server; embedding them here would mean reading
every one over the network, and the index would be one machine's. Word
search (PostgreSQL full-text) works in cloud mode.
"""

from __future__ import annotations

from typing import NoReturn

from kaja_cli.errors import UsageError


def require() -> NoReturn:
    raise UsageError(
        "semantic search is local only: in cloud mode the messages are on the server",
        hint="search words without --semantic",
    )


def search(*args: object, **kw: object) -> NoReturn:
    require()


def reindex(*args: object, **kw: object) -> NoReturn:
    require()
