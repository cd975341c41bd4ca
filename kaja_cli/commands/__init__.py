"""The command layer: parse options, call the core, hand the result to render.

No `from __future__ import annotations` in this package: typer would eval
every stringified annotation at start-up (~0.1 ms each, on every TAB press).

One module per command group; `app.py` registers them. Modules import the core
inside their functions so that start-up (every TAB press) stays cheap.
"""

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


def store_of(ctx: typer.Context) -> "Store":
    """The store the root options (--config, --state-dir, --db) point at."""
    from kaja_cli.core.store import Store

    return Store.locate(ctx.find_root().obj)


JSON_HELP = "Print one JSON document on stdout instead of a table."
OWNER_HELP = 'Act as this owner ("telegram:123", "widget:ab12"); default: the terminal.'
