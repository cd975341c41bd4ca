"""`kaja`, stopped at a chosen step of a destructive command so a test can kill it there.

As a script (what the tests start):

    python tests/support/paused.py STEP FLAG [SECONDS] -- wipe --yes …

sets `kaja_cli.core.store.markers.checkpoint` so that, at STEP (a path's file
name, "commit"/"images" for `wipe --owner`, or another command's step named in
core/store/markers.py: "written", "extracted", "move:kaja.db", "notes-commit",
"prune-images", …), the process writes its pid to FLAG and sleeps SECONDS
(default 600) or until FLAG.go exists (`go(flag)`: `killed_at` says go once
its signal is sent), then runs kaja with the arguments after `--`, exactly as
the console script does. Production code reads no environment variable for this:
the hook is set here.

From a test: `paused(kaja, STEP, *ARGS)` starts it and returns once it is at
STEP; `killed_at(kaja, STEP, *ARGS)` then sends SIGKILL (or `sig`) and
returns how the process ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = str(Path(__file__))


def paused(
    kaja, step: str, *args: str, seconds: float | None = None, flag: Path | None = None
) -> subprocess.Popen:
    """`kaja ARGS` (a `Kaja`: its env, its root for the flag file) stopped by the
    test hook at `step`; returns once it is there."""
    flag = flag or kaja.root / "paused.flag"
    flag.unlink(missing_ok=True)
    _go(flag).unlink(missing_ok=True)
    pause = [step, str(flag), *([str(seconds)] if seconds is not None else [])]
    p = subprocess.Popen(
        [sys.executable, SCRIPT, *pause, "--", *args], env=kaja.env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not flag.exists():
        if p.poll() is not None:
            raise AssertionError(f"kaja {' '.join(args)} ended before {step!r}: {p.communicate()}")
        assert time.monotonic() < deadline, f"kaja {' '.join(args)} never reached {step!r}"
        time.sleep(0.01)
    return p


def killed_at(
    kaja, step: str, *args: str, sig: int = signal.SIGKILL, seconds: float | None = None
) -> subprocess.CompletedProcess:
    """`kaja ARGS` stopped at `step`, then sent `sig` (SIGKILL: no clean-up at all)."""
    flag = kaja.root / "paused.flag"
    p = paused(kaja, step, *args, seconds=seconds, flag=flag)
    p.send_signal(sig)
    go(flag)  # the signal is sent (held, if Ctrl-C is held there): now it may go on
    out, err = p.communicate(timeout=60)
    if sig == signal.SIGKILL:  # nothing of kaja's runs after it: the signal ended it
        assert p.returncode == -signal.SIGKILL, (p.returncode, err)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def go(flag: Path) -> None:
    """Let the process paused with `flag` go on before its SECONDS are up: a
    test that sends a signal then says go, so the signal is there before the
    step is over, however slowly the test ran (a sleep of a fixed length let
    a loaded machine's test send Ctrl-C after a wipe had finished)."""
    _go(flag).touch()


def _go(flag: Path) -> Path:
    return flag.with_name(flag.name + ".go")


def main() -> None:
    split = sys.argv.index("--")
    step, flag, *rest = sys.argv[1:split]
    seconds = float(rest[0]) if rest else 600.0

    def pause(name: str) -> None:
        if name == step:
            Path(flag).write_text(str(os.getpid()))
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not _go(Path(flag)).exists():
                time.sleep(0.01)

    from kaja_cli.app import main as kaja
    from kaja_cli.core.store import markers

    markers.checkpoint = pause
    sys.argv = ["kaja", *sys.argv[split + 1 :]]
    kaja()


if __name__ == "__main__":
    main()
