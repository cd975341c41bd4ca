"""A store the user can read but not write (another user's files, a read-only
mount): every reading command answers, and nothing on disk changes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import DEMO_NOW, Kaja
from tests.unprivileged import unprivileged


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def readonly_store():
    runner = unprivileged()
    if runner is None:
        pytest.skip("needs root, setpriv and a Python that `nobody` can run")
    prefix, python, env = runner
    root = Path(tempfile.mkdtemp(prefix="kaja-ro-", dir="/tmp"))
    k = Kaja(root)
    assert k("demo", "--seed", "1", "--now", DEMO_NOW).code == 0
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
