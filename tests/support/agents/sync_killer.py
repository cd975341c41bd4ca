"""`kaja` that SIGKILLs itself the Nth time a sync reaches a given step (tests only).

    python tests/support/agents/sync_killer.py [--batch B] [--exec CMD] STEP N -- sync push --url …

`kaja_cli.core.ledger.sync` calls its `HOOK` at every step of `STEPS`; this launcher
sets a hook that kills the process, with no chance to clean up, exactly
there, so each crash point of the protocol is hit on purpose rather than by
timing. `--batch` shrinks the batch sizes so a small ledger takes several
batches. The exit status of a run that reached the step is -9; one that never
got there ends normally, and the test can tell. With `--exec CMD` the step
runs CMD (stopping the server, say) instead, and the sync carries on.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from kaja_cli.core.ledger import sync


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=sync.STEPS)
    ap.add_argument("n", type=int)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--exec", dest="exec_cmd", default=None)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.batch:
        sync.PUSH_BATCH = sync.SEED_BATCH = sync.PULL_BATCH = args.batch
    seen = 0

    def hook(name: str) -> None:
        nonlocal seen
        if name == args.step:
            seen += 1
            if seen == args.n and args.exec_cmd:
                subprocess.run(args.exec_cmd, shell=True, check=True, capture_output=True)
            elif seen == args.n:
                os.kill(os.getpid(), signal.SIGKILL)

    sync.HOOK = hook
    from kaja_cli.app import main as kaja

    sys.argv = ["kaja", *(a for a in args.argv if a != "--")]
    kaja()


if __name__ == "__main__":
    main()
