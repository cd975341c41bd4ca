"""The layering rules (SPEC §9): the storage core knows nothing of what sits above it.

`kaja_cli.core` imports neither typer, rich nor click, nor the layers built on
it (`kaja_cli.commands`, `kaja_cli.render`, `kaja_cli.app`, `kaja_cli.demo`).
Checked twice: every import statement of every core module, at any depth
(inside functions too, relative ones resolved), and what importing the whole
core really loads in a fresh interpreter (whatever comes in transitively).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "kaja_cli" / "core"
FORBIDDEN = ("typer", "rich", "click", "kaja_cli.commands", "kaja_cli.render", "kaja_cli.app",
             "kaja_cli.demo")  # fmt: skip


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, *, package: bool = False) -> set[str]:
    """Every module an import statement anywhere in `source` names (a `from x
    import y` names x and x.y: y may be a submodule), relative ones resolved."""
    here = module if package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def _forbidden(names: set[str]) -> set[str]:
    return {n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)}


def test_no_core_module_imports_what_sits_above_the_core():
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 20  # the walk found the core (packages included)
    for path in modules:
        names = imported_modules(
            path.read_text(), _module_name(path), package=path.name == "__init__.py"
        )
        assert not _forbidden(names), (path, _forbidden(names))

    # The walk sees what a careless edit would add: nested, aliased, relative.
    sneaky = (
        "def f():\n    from kaja_cli import render\n"
        "def g():\n    import rich.table as t\n"
        "from ....commands import wipe\n"
        "from .... import demo\n"
    )
    found = imported_modules(sneaky, "kaja_cli.core.care.doctor.databases")
    assert _forbidden(found) == {
        "kaja_cli.render", "rich.table", "kaja_cli.commands", "kaja_cli.commands.wipe",
        "kaja_cli.demo",
    }  # fmt: skip


def test_importing_the_whole_core_loads_nothing_above_it():
    modules = [_module_name(p) for p in sorted(CORE.rglob("*.py"))]
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert set(modules) <= loaded
    assert not _forbidden(loaded)


def test_no_test_hook_is_read_from_the_environment():
    """Tests inject their hooks (`markers.checkpoint`, core/store/markers.py); production code never looks
    for a test's environment variable."""
    for path in (ROOT / "kaja_cli").rglob("*.py"):
        assert "KAJA_TEST" not in path.read_text(), path


# --- the engine and the store: the bottom of the core (issue 24) --------------------------
ENGINE = CORE / "engine"
STORE = CORE / "store"
# The small shared modules every floor may use, and the errors.
SHARED = {f"kaja_cli.core.{m}" for m in
          ("clock", "values", "wording", "masking", "timeparse", "ids", "owners")} | {
    "kaja_cli.errors"}  # fmt: skip
# Above the store: what neither the engine nor the store may import, even inside a function.
ABOVE_STORE = tuple(f"kaja_cli.core.{p}" for p in
                    ("conversations", "ledger", "side", "care", "choices", "qdrant")) + FORBIDDEN  # fmt: skip


def _kaja_imports(path: Path) -> set[str]:
    """The kaja_cli modules `path` imports anywhere (functions and TYPE_CHECKING
    blocks included). `from package import name` imports the module `name`
    when there is one (the package is only its address), else the package."""
    module = _module_name(path)
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                names.add(sub if _is_module(sub) else base)
    return {n for n in names if n.startswith("kaja_cli") and _is_module(n)}


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def test_the_engine_knows_nothing_of_kaja():
    """engine/ imports only engine/, the small shared modules and the errors:
    what is Kaja's (whose file, the query profile) is passed in from above."""
    modules = sorted(ENGINE.rglob("*.py"))
    assert {p.stem for p in modules} >= {"db", "dialect", "fs", "postgres", "timing"}
    allowed = SHARED | {"kaja_cli", "kaja_cli.core", "kaja_cli.core.engine"}
    for path in modules:
        bad = {n for n in _kaja_imports(path)
               if n not in allowed and not n.startswith("kaja_cli.core.engine.")}  # fmt: skip
        assert not bad, (path, bad)
    # The check sees an import hidden in a function or behind TYPE_CHECKING.
    sneaky = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kaja_cli.core.store.registry import DatabaseFile\n"
        "def f():\n    from kaja_cli.core.side import profiler\n"
    )
    found = imported_modules(sneaky, "kaja_cli.core.engine.db")
    assert {"kaja_cli.core.store.registry", "kaja_cli.core.side.profiler"} <= found


def test_the_store_imports_nothing_above_it():
    for path in sorted(STORE.rglob("*.py")):
        bad = {n for n in _kaja_imports(path)
               if any(n == a or n.startswith(a + ".") for a in ABOVE_STORE)}  # fmt: skip
        assert not bad, (path, bad)


def _graph(roots: list[Path]) -> dict[str, set[str]]:
    """Which of these modules imports which (a package's face, an `__init__`
    that imports its own submodules, counts as the package)."""
    modules = {_module_name(p): p for root in roots for p in root.rglob("*.py")}
    return {
        name: {n for n in _kaja_imports(path) if n in modules and n != name}
        for name, path in modules.items()
    }


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of the graph, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circle_in_the_engine_and_the_store():
    """Not even through an import inside a function: an import placed there
    to dodge a circle is a circle."""
    graph = _graph([ENGINE, STORE])
    # A package's `__init__` is a module of its own here: the store's face
    # (`Store`) may import its parts, and no part may import it back.
    assert _circle(graph) is None, _circle(graph)
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_psycopg_is_imported_by_the_postgres_engine_only():
    """One PostgreSQL client: psycopg is named by no other module of kaja, not
    in a function, not for a type hint."""
    users = []
    for path in sorted((ROOT / "kaja_cli").rglob("*.py")):
        names = imported_modules(path.read_text(), _module_name(path),
                                 package=path.name == "__init__.py")  # fmt: skip
        if any(n == "psycopg" or n.startswith("psycopg.") for n in names):
            users.append(path.relative_to(ROOT).as_posix())
    assert users == ["kaja_cli/core/engine/postgres.py"]


def test_the_audit_views_import_only_the_engine_the_store_and_the_small_modules():
    """core/audit/ is a floor beside ledger/ and side/ (issue 25)."""
    allowed = SHARED | {"kaja_cli", "kaja_cli.core"}
    below = ("kaja_cli.core.engine", "kaja_cli.core.store", "kaja_cli.core.audit")
    modules = sorted((CORE / "audit").rglob("*.py"))
    assert {p.stem for p in modules} >= {"runs", "reviews", "services", "learning", "artifacts"}
    for path in modules:
        bad = {n for n in _kaja_imports(path)
               if n not in allowed and not any(n == b or n.startswith(b + ".") for b in below)}  # fmt: skip
        assert not bad, (path, bad)
