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
    from concurrent.futures import Future

    from kaja_cli.browse.data import Options
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store


def run(store: Store, opts: Options, query: str = "") -> str | None:
    """Show the picker on the terminal; the chosen session's id, or None when
    the user quit (Esc, Ctrl-C)."""
    import gc

    early = first_page(store, opts, query)
    # Importing Textual and laying out the first screen allocate a great deal
    # and leave next to no garbage, yet the cyclic GC ran ~100 times meanwhile
    # (about 12 ms of CPU, 5% of the first screen). Off until the first frame
    # is drawn (`BrowseApp.on_mount`), as kaja's own start-up does.
    gc.disable()
    try:
        from kaja_cli.browse.app import BrowseApp  # Textual: most of the first screen's time

        return BrowseApp(store, opts, query, early=early).run()
    finally:
        gc.enable()


def first_page(store: Store, opts: Options, query: str = "") -> Future:
    """The first page's read, started in a thread before Textual is imported:
    SQLite lets go of the interpreter while it reads, so the rows are ready
    (or nearly) when the screen is: the list is on screen one read sooner.
    The future holds `(data.Page, when it was ready)`."""
    import threading
    import time
    from concurrent.futures import Future

    from kaja_cli.browse import data

    future: Future = Future()

    def read() -> None:
        try:
            future.set_result((data.load(store, opts, query), time.perf_counter()))
        except BaseException as e:  # handed to the screen, which says it
            future.set_exception(e)

    threading.Thread(target=read, name="kaja-browse-first-page", daemon=True).start()
    return future


def pick(
    store: Store,
    flt: SessionFilter,
    owner: str | None,
    query: str,
    fts: bool,
    limit: int,
    *,
    as_json: bool = False,
) -> bool:
    """`kaja browse` and `kaja sessions -i`: the picker, then the chosen id on
    stdout (True); False, printing nothing, when the user quit (the command
    exits 1). Usage errors (exit 2) without a terminal, or with --json (which
    prints the listing)."""
    import sys

    from kaja_cli.browse.data import Options
    from kaja_cli.errors import UsageError

    if as_json:
        raise UsageError("-i is full screen; --json prints the listing: give one")
    need_terminal()
    chosen = run(store, Options(flt, owner, fts, limit), query)
    if chosen is None:
        return False
    sys.stdout.write(chosen + "\n")
    return True


def need_terminal() -> None:
    """The screen is drawn on stderr and read from stdin (stdout stays free for
    the id: `"$(kaja browse)"`); without a terminal there, one line, exit 2."""
    import sys

    from kaja_cli.errors import UsageError

    def tty(stream: object) -> bool:
        try:
            return bool(stream.isatty())  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            return False

    if not (tty(sys.stdin) and tty(sys.stderr)):
        raise UsageError(
            "browse needs a terminal",
            hint="`kaja search WORDS` and `kaja sessions` print the same without one",
        )
