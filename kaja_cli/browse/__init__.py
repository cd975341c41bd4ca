"""`kaja browse`: find a conversation by typing, see it, act on it (issue 27).

A full-screen picker on Textual, the only place kaja imports it: `data`
loads the rows (the `kaja sessions` listing, or a `kaja search` grouped by
session), the preview (the `kaja resume` replay) and does the actions
through the core; `app` is the screen. This floor sits beside `render`: it
imports the core and render, never the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaja_cli.browse.data import Options
    from kaja_cli.core.store import Store


def run(store: Store, opts: Options, query: str = "") -> str | None:
    """Show the picker on the terminal; the chosen session's id, or None when
    the user quit (Esc, Ctrl-C)."""
    from kaja_cli.browse.app import BrowseApp

    return BrowseApp(store, opts, query).run()
