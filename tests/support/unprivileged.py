"""Running kaja as another user (`nobody`): root ignores permissions, so only
another user meets a read-only store for real.

`nobody` must be able to read the code it runs, and the checkout (with its
venv) may sit in a folder only its owner can enter (`/root/kaja`). So it runs
a copy: kaja_cli and the packages it needs at run time (its dependencies, as
their installed metadata lists them), copied once per test process into a
world-readable folder of /tmp, removed when the process ends. The checkout's
own permissions are never touched.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NOBODY = 65534


def unprivileged() -> tuple[list[str], str, dict] | None:
    """(argv prefix, python, env) running kaja as `nobody`, or None where that is impossible.

    Needs root, setpriv, and a Python interpreter `nobody` may run (a venv's
    interpreter is often a link to one, found through the link).
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    return _runner()


@functools.lru_cache(maxsize=1)
def _runner() -> tuple[list[str], str, dict] | None:
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = {
        "PYTHONPATH": str(_readable_copy()),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
    }
    for python in _interpreters():
        probe = subprocess.run(
            [*prefix, python, "-c", "import sys, kaja_cli.app; assert sys.version_info >= (3, 11)"],
            env=env, capture_output=True, cwd="/",
        )  # fmt: skip
        if probe.returncode == 0:
            return prefix, python, env
    return None


def _interpreters() -> list[str]:
    """This interpreter, by its own name and by what its links point to, then
    the system's: the first `nobody` can run is the one."""
    found = []
    for python in (sys.executable, getattr(sys, "_base_executable", ""),
                   shutil.which("python3") or "", "/usr/bin/python3"):  # fmt: skip
        for name in (python, os.path.realpath(python) if python else ""):
            if name and name not in found and os.access(name, os.X_OK):
                found.append(name)
    return found


@functools.lru_cache(maxsize=1)
def _readable_copy() -> Path:
    """A folder of /tmp anyone can read, holding kaja_cli and its run-time dependencies."""
    import kaja_cli

    root = Path(tempfile.mkdtemp(prefix="kaja-nobody-", dir="/tmp"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    package = Path(kaja_cli.__file__).parent
    files = [(f, root / "kaja_cli" / f.relative_to(package)) for f in package.rglob("*.py")]
    for dist in _dependencies("kaja-cli"):
        base = Path(dist.locate_file("")).resolve()
        for file in dist.files or ():
            source = Path(dist.locate_file(file)).resolve()
            if source.suffix != ".pyc" and source.is_relative_to(base) and source.is_file():
                files.append((source, root / source.relative_to(base)))  # not bin/ scripts
    for source, target in files:
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, target)
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    return root


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the file is readable by all already (no copying 10 MB),
    else a copy made readable: a link's mode is the original's, never changed here."""
    if source.stat().st_mode & 0o004:
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another file system
    shutil.copyfile(source, target)
    target.chmod(0o644)


def _dependencies(name: str) -> list:
    """The installed distributions `name` needs at run time (no extras), not itself."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: dict[str, metadata.Distribution] = {}
    todo = list(metadata.distribution(name).requires or ())
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = req.name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # an optional one this platform does without
        seen[key] = dist
        todo += dist.requires or ()
    return list(seen.values())
