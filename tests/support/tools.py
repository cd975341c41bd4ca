"""What a test needs from the machine beyond Python: a program (zsh, fish,
tmux, the `sqlite3` command line, jq, script, setpriv, chattr, mkfs.ext4,
unshare, pgbouncer),
PostgreSQL's server binaries, root.

A test says so with `@pytest.mark.needs("zsh", "tmux")` (tests/conftest.py
reads the mark before the test runs) or, inside a fixture or a test,
`require("postgresql")`. Where one is missing:

- on a developer's machine the test is skipped, and its reason names what is
  missing (`-ra` lists every skip at the end of the run);
- in CI (`CI=true`) it fails: `.ci/run` installs every one of them, so a
  missing tool there is a broken CI, not a reason to test less.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

# Needs that are not a program on PATH: how each is told.
SPECIAL = {
    "postgresql": lambda: _postgres_bindir() is not None,  # initdb, pg_ctl, postgres
    "root": lambda: hasattr(os, "geteuid") and os.geteuid() == 0,
    "psycopg": lambda: importlib.util.find_spec("psycopg") is not None,
    "qdrant-client": lambda: importlib.util.find_spec("qdrant_client") is not None,
}
# How to get each, said where one is missing.
HOW = {
    "psycopg": "pip install -e '.[test]'",
    "qdrant-client": "pip install -e '.[test]'",
    "root": "run the suite as root",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def find(program: str) -> str | None:
    """A program's path: on PATH, or in /usr/sbin, where Debian puts pgbouncer
    (and which a user's PATH may leave out)."""
    found = shutil.which(program)
    if found is None and os.access(f"/usr/sbin/{program}", os.X_OK):
        found = f"/usr/sbin/{program}"
    return found


def missing(*needs: str) -> list[str]:
    """The needs this machine does not meet, in the order given."""
    return [n for n in needs if not (SPECIAL[n]() if n in SPECIAL else find(n))]


def lacking(*needs: str) -> str | None:
    """What a test needing `needs` lacks here, as its skip reason; None: nothing."""
    gone = missing(*needs)
    if not gone:
        return None
    hows = sorted({HOW.get(n, "apt-get install " + _package(n)) for n in gone})
    return f"needs {' and '.join(gone)} ({'; '.join(hows)})"


def require(*needs: str) -> None:
    """Skip the running test (fail it in CI) unless this machine has every one of `needs`."""
    import pytest

    text = lacking(*needs)
    if text is None:
        return
    if in_ci():
        pytest.fail(f"{text}: .ci/run installs it, so CI must not run less", pytrace=False)
    pytest.skip(text)


def _package(need: str) -> str:
    return {"sqlite3": "sqlite3", "script": "bsdutils", "setpriv": "util-linux",
            "chattr": "e2fsprogs", "mkfs.ext4": "e2fsprogs",
            "unshare": "util-linux"}.get(need, need)  # fmt: skip


def _postgres_bindir():
    from tests.support.pg import find_bindir

    return find_bindir()
