"""kaja's run-time dependencies, for .ci/run: the oldest versions pyproject.toml
allows, and the versions a run tested.

    python3 .ci/deps.py lowest         # a pip constraints file: each at its `>=` bound
    python3 .ci/deps.py tested LABEL   # one line: what this Python has installed of them

Run-time: `[project] dependencies` and every extra but `test` (the extras'
packages are what a user installs: psycopg, qdrant-client). The test tools stay
at today's releases: the bounds are kaja's promise to users, not theirs. A
dependency with no lower bound is an error: "any version" is a promise nobody
tested.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")


def bounds(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """{distribution name: its lower bound} for every run-time dependency."""
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = list(project["dependencies"])
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra != "test":
            wanted += requirements
    found: dict[str, str] = {}
    for requirement in wanted:
        name, _extras, spec = REQUIREMENT.match(requirement).groups()
        bound = re.search(r">=\s*([^,;\s]+)", spec)
        if bound is None:
            raise SystemExit(f"{requirement}: no lower bound (>=) to test")
        found[name.lower()] = bound.group(1)
    return dict(sorted(found.items()))


def lowest() -> str:
    return "\n".join(f"{name}=={version}" for name, version in bounds().items())


def tested(label: str) -> str:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    versions = ", ".join(f"{name} {version(name)}" for name in bounds())
    return f"tested with {label}: Python {sys.version.split()[0]}, {versions}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["lowest"]:
        print(lowest())
    elif sys.argv[1:2] == ["tested"] and len(sys.argv) == 3:
        print(tested(sys.argv[2]))
    else:
        raise SystemExit(__doc__)
