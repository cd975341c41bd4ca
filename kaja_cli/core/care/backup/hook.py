"""A hook called at each step of a backup or a restore, for tests that stop it there.

`checkpoint(step)` runs in `kaja backup` at "written" (the archive is whole
in its temporary file, not yet renamed), and right before each step of
`kaja restore`: "extracted"
(the archive is verified in the staging folder; nothing changed yet),
"prepared" (the old store is backed up and every file is ready beside its
place), "move:<file name>" before each file or folder is put in place (its
target's name: `kaja.db`, `cache.db`, `images`), and "cleanup" (everything
is in place; the staging folder and the marker go next). It does nothing
unless a test replaced it: `tests/support/backup_paused.py` sets it before
`kaja_cli.app.main()` to write the process id to a file and sleep until
killed. Nothing in kaja reads the environment for this.
"""

from __future__ import annotations

from collections.abc import Callable


def _nothing(step: str) -> None:
    return None


checkpoint: Callable[[str], None] = _nothing
