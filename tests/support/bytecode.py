"""Compile, once per test run, the modules the tests' Pythons import: kaja and
the packages it and the suite run on.

pip compiles what it installs unless PYTHONDONTWRITEBYTECODE is set when it
runs; then it writes no bytecode, and neither does any Python started under
it. The suite starts hundreds of Pythons (kaja as a real process, the kill
launcher, the shells' completion, each xdist worker), and without bytecode
each compiled Rich, Typer, Click, psycopg and kaja again: about a quarter
of a second of CPU per process. The tests keep PYTHONDONTWRITEBYTECODE=1 for
what they start (a kill point counts writes: a process writing its bytecode
on one run and not the next would move them), so the bytecode is written
here, before any test, as pip would have.
"""

from __future__ import annotations

import compileall
import os
import re
from collections.abc import Iterator
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from importlib.util import cache_from_source
from pathlib import Path

import kaja_cli

# What kaja, its shells' completion and the suite import (and what they need).
ROOTS = ("kaja-cli", "psycopg", "psycopg-binary", "textual", "pytest", "pytest-xdist",
         "hypothesis")  # fmt: skip


def _closure(names: tuple[str, ...]) -> Iterator[Distribution]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        yield dist
        for req in dist.requires or []:
            if ";" in req and "extra" in req.split(";", 1)[1]:
                continue  # an extra's requirement: not installed for this
            todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])


def sources() -> Iterator[Path]:
    yield from Path(kaja_cli.__file__).parent.rglob("*.py")
    for dist in _closure(ROOTS):
        for file in dist.files or ():
            if file.suffix == ".py":
                yield Path(str(dist.locate_file(file)))


def compile_missing() -> int:
    """Compile every source above that has no bytecode yet; how many."""
    missing = [
        p for p in sources() if p.is_file() and not os.path.exists(cache_from_source(str(p)))
    ]
    for path in missing:
        compileall.compile_file(str(path), quiet=2)
    return len(missing)
