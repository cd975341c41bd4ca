"""`kaja`, stopping a wipe (or another destructive command) at a chosen step so a test can kill it there.

    python tests/support/wipe_paused.py STEP FLAG [SECONDS] -- wipe --yes …

Sets `kaja_cli.core.store.markers.checkpoint` so that, at STEP (a path's file
name, "commit"/"images" for `--owner`, or another command's step named in
core/store/markers.py, e.g. "notes-commit" or "prune-images"), the process writes its pid to FLAG
and sleeps SECONDS (default 600), then runs kaja with the arguments after
`--`, exactly as the console script does. Production code reads no
environment variable for this: the hook is set here, in the test's process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> None:
    split = sys.argv.index("--")
    step, flag, *rest = sys.argv[1:split]
    seconds = float(rest[0]) if rest else 600.0

    def pause(name: str) -> None:
        if name == step:
            Path(flag).write_text(str(os.getpid()))
            time.sleep(seconds)

    from kaja_cli.app import main as kaja
    from kaja_cli.core.store import markers

    markers.checkpoint = pause
    sys.argv = ["kaja", *sys.argv[split + 1 :]]
    kaja()


if __name__ == "__main__":
    main()
