"""`kaja`, killed with SIGKILL at a step a command names: a tests-only launcher.

    python tests/support/agents/kill_at_step.py STEP[#N] -- ARGS…

Sets `kaja_cli.core.store.markers.checkpoint` (the hook kaja's destructive
commands call right before each step: "prune-commit" inside a batch's
transaction, "prune-images" after its commit, …) so that the Nth time STEP
comes (the first by default) the process sends itself SIGKILL: nothing kaja
would do after that is done. Then it runs kaja with the arguments after
`--`, exactly as the console script does. Where the files on disk are not
what changes (cloud mode: the rows are on a PostgreSQL server), a step is
the exact point; `kill_at.py` counts file changes instead.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    split = sys.argv.index("--")
    step, _, nth = sys.argv[1].partition("#")
    wanted = int(nth or 1)
    seen = [0]

    def kill_at(name: str) -> None:
        if name == step:
            seen[0] += 1
            if seen[0] == wanted:
                os.kill(os.getpid(), signal.SIGKILL)

    from kaja_cli.app import main as kaja
    from kaja_cli.core.store import markers

    markers.checkpoint = kill_at
    sys.argv = ["kaja", *sys.argv[split + 1 :]]
    kaja()


if __name__ == "__main__":
    main()
