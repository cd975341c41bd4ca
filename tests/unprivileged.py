"""Running kaja as another user (`nobody`): root ignores permissions, so only
another user meets a read-only store for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def unprivileged() -> tuple[list[str], str, dict] | None:
    """(argv prefix, python, env) running kaja as `nobody`, or None where that is impossible.

    Root ignores permissions, so only another user meets a read-only store for
    real. Needs root, setpriv, and a Python `nobody` may run (the venv's own
    interpreter often lives under /root).
    """
    import shutil
    import sysconfig

    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    repo = Path(__file__).resolve().parents[1]
    env = {
        "PYTHONPATH": os.pathsep.join([str(repo), sysconfig.get_paths()["purelib"]]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
    }
    for python in (sys.executable, shutil.which("python3") or "", "/usr/bin/python3"):
        if not python:
            continue
        probe = subprocess.run(
            [*prefix, python, "-c", "import sys, kaja_cli.app; assert sys.version_info >= (3, 11)"],
            env=env, capture_output=True, cwd="/",
        )  # fmt: skip
        if probe.returncode == 0:
            return prefix, python, env
    return None
