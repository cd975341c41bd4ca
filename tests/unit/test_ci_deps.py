""".ci/deps.py: the oldest versions .ci/run's second run installs are pyproject's
lower bounds, every run-time dependency has one, and the test tools are left free."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _deps():
    spec = importlib.util.spec_from_file_location("deps", ROOT / ".ci/deps.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lowest_pins_every_run_time_dependency_at_its_bound():
    lines = subprocess.run([sys.executable, str(ROOT / ".ci/deps.py"), "lowest"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    names = {line.split("==")[0] for line in lines}
    assert {"typer", "rich", "platformdirs", "tomlkit", "textual", "pystemmer", "psycopg",
            "qdrant-client", "wordllama", "numpy"} == names  # fmt: skip
    assert "tomlkit==0.13.3" in lines and not names & {"pytest", "ruff", "hypothesis"}


def test_a_dependency_without_a_lower_bound_is_refused(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["typer>=0.28,<0.29", "rich"]\n'
    )
    with pytest.raises(SystemExit, match="rich: no lower bound"):
        _deps().bounds(tmp_path / "pyproject.toml")


def test_tested_names_the_versions_installed():
    line = _deps().tested("today's releases")
    assert line.startswith(f"tested with today's releases: Python {sys.version.split()[0]}, ")
    assert f"typer {importlib.metadata.version('typer')}" in line
