"""The README's two commands are what CI runs: CI proves the README."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_the_two_commands():
    blocks = sh_blocks()
    assert "kaja demo && kaja sessions" in blocks[0]
    assert "mktemp -d" in blocks[0]  # a throwaway state dir
    assert "pytest" in blocks[1]


def test_ci_runs_exactly_the_readme_commands():
    ci = (ROOT / ".ci/run").read_text()
    assert sh_blocks()[1] in ci.splitlines()  # the test command, verbatim, on its own line
    assert sh_blocks()[0] in ci  # and the first one, in a subshell of its own
