"""A hook called at each step of a wipe, for tests that stop it there.

`checkpoint(step)` runs right before a whole wipe deletes the path whose file
name is `step` (the marker's name: before removing the marker), and for
`--owner` at "commit" (before COMMIT) and "images" (after it, before the
image folders). The other destructive commands call it too: before their
COMMIT ("notes-commit", "cache-commit", "accounts-commit", "prune-commit" for
each batch of `kaja sessions prune`), `sessions prune` after each batch's
COMMIT and before its image folders ("prune-images"), and, for `kaja cache
clear`, at "cache.db" (folded, not yet deleted). It does nothing unless a test
replaced it: the kill tests run
kaja through `tests/support/wipe_paused.py`, which sets it before `kaja_cli.app.main()`
to write the process id to a file and sleep until killed.
"""

from __future__ import annotations

from collections.abc import Callable


def _nothing(step: str) -> None:
    return None


checkpoint: Callable[[str], None] = _nothing
