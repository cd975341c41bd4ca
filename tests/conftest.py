"""Shared fixtures: run the real `kaja` command against throwaway stores.

`kaja(...)` runs the installed console script in a subprocess with its own
state dir, settings file and HOME, so a test sees exactly what a user sees:
exit code, stdout, stderr and the files on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

KAJA = str(Path(sys.executable).with_name("kaja"))
DEMO_NOW = "2026-11-29T12:00:00Z"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


class Kaja:
    """The `kaja` command with an isolated environment under `root`."""

    def __init__(self, root: Path):
        self.root = root
        self.state = root / "state"
        self.config = root / "config" / "settings.toml"
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAJA_", "XDG_"))}
        env.update(
            KAJA_STATE_DIR=str(self.state),
            KAJA_CONFIG=str(self.config),
            HOME=str(self.home),
            NO_COLOR="1",
            COLUMNS="200",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.pop("KAJA_DEBUG", None)
        self.env = env

    @property
    def db(self) -> Path:
        return self.state / "kaja.db"

    def __call__(
        self, *args: str, input: str | None = None, env: dict | None = None, timeout: float = 120
    ) -> Result:
        full_env = dict(self.env)
        for k, v in (env or {}).items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        p = subprocess.run(
            [KAJA, *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen([KAJA, *args], env=self.env, **kw)


@pytest.fixture
def kaja(tmp_path: Path) -> Kaja:
    return Kaja(tmp_path)


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo-template")
    k = Kaja(root)
    r = k("demo", "--seed", "1", "--now", DEMO_NOW)
    assert r.code == 0, r
    return k.state


@pytest.fixture
def demo_store(kaja: Kaja, _demo_template: Path) -> Kaja:
    """`kaja` with a copy of the demo store (seed 1, base time DEMO_NOW) in its state dir."""
    shutil.copytree(_demo_template, kaja.state, symlinks=True)
    return kaja
