"""A store the user can read but not write (another user's files, a read-only
mount): every reading command answers, and nothing on disk changes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import Kaja
from tests.support.unprivileged import unprivileged


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def readonly_store(_demo_template: Path):
    """One demo store for the module: each test only reads it, and proves it
    changed nothing (a world-readable folder of /tmp: `nobody` reads it)."""
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    root = Path(tempfile.mkdtemp(prefix="kaja-ro-", dir="/tmp"))
    k = Kaja(root)
    shutil.copytree(_demo_template, k.state, symlinks=True)  # `kaja demo --seed 1 --now DEMO_NOW`
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    env = dict(env, KAJA_STATE_DIR=str(k.state), KAJA_CONFIG=str(k.config), HOME=str(root))

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, python, "-m", "kaja_cli", *argv], env=env, capture_output=True,
                              text=True, cwd="/")  # fmt: skip

    yield root, run
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "--all-owners"],
        ["sessions", "--all-owners", "--json"],
        ["resume", "--json"],
        ["resume", "--tail", "3"],
        ["usage", "--json"],
        ["config", "paths"],
        ["wipe", "--dry-run"],
        ["search", "tomato"],
        ["search", "brulee", "--all-owners", "--json"],
        ["doctor"],
        ["notes", "--all-owners"],
        ["search", "--notes", "marie", "--json"],
        ["cache", "--json"],
        ["accounts"],
    ],
)
def test_reading_a_store_you_cannot_write(readonly_store, argv):
    root, run = readonly_store
    before = snapshot(root)
    p = run(*argv)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip()
    assert snapshot(root) == before


def test_another_user_runs_a_copy_that_anyone_can_read():
    """The checkout (and its venv) may sit in a folder only root can enter:
    `nobody` runs a copy of kaja and its dependencies from a folder of /tmp
    anyone can read, so these tests run from any checkout."""
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    repo = Path(__file__).resolve().parents[2]
    for entry in env["PYTHONPATH"].split(os.pathsep):
        path = Path(entry).resolve()
        assert not path.is_relative_to(repo) and not path.is_relative_to(Path(sys.prefix).resolve())
        assert all(p.stat().st_mode & 0o005 == 0o005 for p in [path, *path.parents]), path
    p = subprocess.run([*prefix, python, "-c", "import kaja_cli, typer; print(kaja_cli.__file__)"],
                       env=env, capture_output=True, text=True, cwd="/")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()).is_relative_to(env["PYTHONPATH"].split(os.pathsep)[0])
