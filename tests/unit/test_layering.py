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
