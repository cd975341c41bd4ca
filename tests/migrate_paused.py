"""`kaja`, stopping a migrate right before its COMMIT so a test can kill it there.

    python tests/migrate_paused.py FLAG -- migrate …

Sets `kaja_cli.core.legacy.checkpoint` so that at "commit" the process writes
its pid to FLAG and sleeps, then runs kaja with the arguments after `--`, as
the console script does. Production code reads no environment variable for
this: the hook is set here, in the test's process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> None:
    split = sys.argv.index("--")
    (flag,) = sys.argv[1:split]

    def pause(step: str) -> None:
        if step == "commit":
            Path(flag).write_text(str(os.getpid()))
            time.sleep(600)

    from kaja_cli.app import main as kaja
    from kaja_cli.core import legacy

    legacy.checkpoint = pause
    sys.argv = ["kaja", *sys.argv[split + 1 :]]
    kaja()


if __name__ == "__main__":
    main()
