"""The house's shape (issue 24): no import circle among kaja's modules, no import
that runs up a floor, the engine chosen in one place, psycopg imported by one
module.

Imports are read from the source, at any depth (inside functions too: an
import moved into a function to dodge a circle is still a circle here).
Imports under `if TYPE_CHECKING:` are left out: they never run. `from pkg
import name` is an import of `pkg.name` when that is a module, else of `pkg`.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kaja_cli"

# The floors, bottom up: a module imports only its own area or areas on lower
# floors (README "Layout"). An area is a package of core/ or of kaja_cli/.
SMALL = {"clock", "values", "wording", "masking", "timeparse", "ids", "owners"}
FLOORS: dict[str, int] = {
    "root": 0, "errors": 0, "small": 0,  # kaja_cli/__init__, errors, core's small modules
    "typer_internals": 0,  # imports no kaja module: typer's unpublished names, gathered
    "engine": 1,
    "store": 2,
    "conversations": 3,
    "side": 4, "ledger": 4, "audit": 4,  # they read conversations, never the reverse
    "care": 5, "choices": 5, "qdrant": 5,
    "render": 6, "demo": 6, "completion": 6, "browse": 6,
    "commands": 7,
    "app": 8, "__main__": 9,
}  # fmt: skip
# Beside each other on one floor, and kept apart: neither imports the other.
APART = [("side", "ledger"), ("side", "audit"), ("ledger", "audit"), ("render", "demo"),
         ("browse", "demo"), ("browse", "completion")]  # fmt: skip

# Where the engine is chosen (the store) and spelled (the engine); a feature
# asks `store.dialect` or `store.part()`.
ENGINE_CHOSEN = ("kaja_cli.core.store", "kaja_cli.core.engine")
# What reports the mode to a person (`kaja config paths`); it branches on nothing else.
REPORTS_MODE = {"kaja_cli.commands.config", "kaja_cli.render.config"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


@functools.cache
def _tree(path: Path) -> ast.AST:
    """A module's syntax tree, parsed once for every check of this file."""
    return ast.parse(path.read_text())


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:`."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip |= {id(n) for n in ast.walk(child)}
    return [n for n in ast.walk(tree) if id(n) not in skip]


def _imports(module: str, path: Path) -> set[str]:
    """The modules (any, not only kaja's) this module imports at run time."""
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(_tree(path)):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in MODULES else base)
    return out


@functools.cache
def graph() -> dict[str, set[str]]:
    """Who imports whom among kaja's modules (parsed when a test first asks:
    every xdist worker collects this file, few run its tests)."""
    return {
        name: {m for m in _imports(name, path) if m in MODULES and m != name}
        for name, path in MODULES.items()
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _area(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    if parts[1] != "core":
        return parts[1]
    if len(parts) == 2 or parts[2] in SMALL:
        return "small"
    return parts[2]


def test_the_graph_is_read():
    """The graph this file checks is kaja's: the app reaches the commands, the
    store reaches the engine (a reader that found nothing would pass anything)."""
    assert len(MODULES) > 150
    assert "kaja_cli.commands.search" in graph()["kaja_cli.app"] or any(
        m.startswith("kaja_cli.commands") for m in graph()["kaja_cli.app"]
    )
    assert "kaja_cli.core.engine.db" in graph()["kaja_cli.core.store.local"]


def test_no_import_circle():
    circles = _circles(graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_circle_finder_finds_one():
    """The finder itself: a made-up graph with a circle of three is reported."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_every_area_has_a_floor():
    missing = sorted({_area(m) for m in MODULES} - FLOORS.keys())
    assert not missing, f"areas with no floor (add them to FLOORS and README Layout): {missing}"


def test_no_import_runs_up_a_floor():
    upward = sorted(
        f"{a} ({_area(a)}, floor {FLOORS[_area(a)]}) imports {b} ({_area(b)}, floor {FLOORS[_area(b)]})"
        for a, targets in graph().items()
        for b in targets
        if _area(a) != _area(b) and FLOORS.get(_area(b), 0) > FLOORS.get(_area(a), 0)
    )
    assert not upward, "imports up a floor:\n" + "\n".join(upward)


@pytest.mark.parametrize(("one", "other"), APART)
def test_areas_kept_apart(one, other):
    crossing = sorted(
        f"{a} imports {b}"
        for a, targets in graph().items()
        for b in targets
        if {_area(a), _area(b)} == {one, other}
    )
    assert not crossing, "\n".join(crossing)


def test_core_packages_hold_the_core():
    """At most ~20 modules directly in core/ (the rest in packages by concern)."""
    direct = [m for m in MODULES if m.count(".") == 2 and m.startswith("kaja_cli.core.")]
    assert len(direct) <= 20, direct


def test_psycopg_is_imported_by_one_module():
    importers = sorted(
        name
        for name, path in MODULES.items()
        if any(m == "psycopg" or m.startswith("psycopg.") for m in _imports(name, path))
    )
    assert importers == ["kaja_cli.core.engine.postgres"]


def _engine_branches(module: str, path: Path) -> list[str]:
    """Where a module decides by the engine itself: reads `.cloud`, or compares
    with a dialect (`== POSTGRES`, `is SQLITE`, `.name == "postgres"`)."""
    found = []
    for node in _runtime_nodes(_tree(path)):
        if isinstance(node, ast.Attribute) and node.attr == "cloud" and module not in REPORTS_MODE:
            found.append(f"{module}:{node.lineno}: .cloud")
        elif isinstance(node, ast.Compare):
            text = ast.unparse(node)
            if re.search(r"\b(POSTGRES|SQLITE)\b|\b(dialect|backend)\.name\b", text):
                found.append(f"{module}:{node.lineno}: {text}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance":
            if any(w in ast.unparse(node) for w in ("Postgres", "Sqlite", "Dialect")):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_engine_is_chosen_in_one_place():
    branches = [
        b
        for name, path in MODULES.items()
        if not name.startswith(ENGINE_CHOSEN)
        for b in _engine_branches(name, path)
    ]
    assert not branches, "engine branches outside the store:\n" + "\n".join(branches)


def test_engine_branch_finder_finds_one(tmp_path):
    """The finder itself, on a made-up module that branches both ways."""
    path = tmp_path / "feature.py"
    path.write_text(
        "def f(store, d):\n"
        "    if store.cloud:\n"
        "        return 1\n"
        "    if d is dialect.POSTGRES:\n"
        "        return 2\n"
    )
    assert [b.split(": ", 1)[1] for b in _engine_branches("kaja_cli.core.x", path)] == [
        ".cloud",
        "d is dialect.POSTGRES",
    ]


# --- a dependency's private names ----------------------------------------------------------------
# Where kaja may reach a dependency's unpublished names (the module says why, and
# tests/unit/test_typer_internals.py checks each one).
PRIVATE_NAMES_ALLOWED = {"kaja_cli.typer_internals"}
# namedtuple's own methods: public, with a leading underscore so as not to clash with fields.
NAMEDTUPLE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _kajas_own_names() -> set[str]:
    """Every name kaja's code defines: functions, classes, variables, arguments,
    `self.x`/`cls.x` attributes, import aliases."""
    names: set[str] = set()
    for path in MODULES.values():
        for n in ast.walk(_tree(path)):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
            elif isinstance(n, ast.alias):
                names.add(n.asname or n.name.split(".")[0])
            elif (
                isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name)
                and n.value.id in ("self", "cls")
            ):
                names.add(n.attr)
    return names


def _private_uses(path: Path, own: set[str]) -> list[str]:
    """A dependency's private names this file reaches: imports of a module or a
    name with a leading underscore from outside kaja_cli, and `x._name` where
    `_name` is nothing kaja defines (`container._insert_after`)."""
    found = []
    for n in _runtime_nodes(_tree(path)):
        if isinstance(n, ast.ImportFrom) and n.module and not n.level:
            if n.module.split(".")[0] == "kaja_cli":
                continue
            hidden = [p for p in n.module.split(".")[1:] if p.startswith("_")]
            hidden += [a.name for a in n.names if a.name.startswith("_")]
            if hidden:
                found.append(f"{n.lineno}: from {n.module} import {hidden}")
        elif isinstance(n, ast.Import):
            for a in n.names:
                if any(p.startswith("_") for p in a.name.split(".")[1:]):
                    found.append(f"{n.lineno}: import {a.name}")
        elif isinstance(n, ast.Attribute) and n.attr.startswith("_"):
            if not n.attr.startswith("__") and n.attr not in NAMEDTUPLE | own:
                found.append(f"{n.lineno}: {ast.unparse(n)}")
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in ("getattr", "setattr", "hasattr"):
            name = n.args[1] if len(n.args) > 1 else None
            if isinstance(name, ast.Constant) and str(name.value).startswith("_"):
                if not str(name.value).startswith("__") and name.value not in own:
                    found.append(f"{n.lineno}: {ast.unparse(n)}")
    return found


def test_no_private_name_of_a_dependency():
    """A release may remove any name with a leading underscore (tomlkit 0.15.3
    removed `Container._insert_after`, and `config set` crashed): kaja uses
    public names, and reaches typer's unpublished ones from one module."""
    own = _kajas_own_names()
    found = [
        f"{name}:{use}"
        for name, path in MODULES.items()
        if name not in PRIVATE_NAMES_ALLOWED
        for use in _private_uses(path, own)
    ]
    assert not found, "private names of a dependency:\n" + "\n".join(found)


def test_private_name_finder_finds_them(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "from typer._click.types import IntRange\n"
        "from typer import _completion_shared\n"
        "import rich._loop\n"
        "def f(container, item):\n"
        "    container._insert_after('a', 'b', item)\n"
        "    getattr(item, '_t')\n"
        "    return item._replace(a=1), self_made._mine\n"
    )
    assert sorted(int(u.split(": ", 1)[0]) for u in _private_uses(path, {"_mine"})) == [
        1, 2, 3, 5, 6
    ]  # fmt: skip
