"""The ledger's shape (issue 24): imports run one way, and no feature module picks an engine.

Inside `kaja_cli.core.ledger`: `usage` → `sync` → `report`, never back (the
`sync ↔ usage` circle is gone), every import statement counted, those inside
functions too. And no module of the ledger asks which engine the store is
(`store.cloud`, `paths.cloud`, `dialect.of(conn) is POSTGRES`, …) but the
engine parts the store hands out (`usage/local.py`, `usage/server.py`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.unit.test_layering import ROOT, _module_name, imported_modules

LEDGER = ROOT / "kaja_cli" / "core" / "ledger"
ENGINE_PARTS = {"local.py", "server.py"}

# Which part of the ledger each module is, bottom up: a module may import its
# own part and the parts below it, never one above.
FLOORS = ("report", "sync", "usage")


def _floor(module: str) -> int | None:
    rest = module.removeprefix("kaja_cli.core.ledger")
    name = rest.lstrip(".").split(".")[0]
    return FLOORS.index(name) if name in FLOORS else None


def _imports(path: Path) -> set[str]:
    return imported_modules(
        path.read_text(), _module_name(path), package=path.name == "__init__.py"
    )


def test_the_ledger_imports_run_one_way_usage_sync_report():
    modules = sorted(LEDGER.rglob("*.py"))
    assert len(modules) >= 10  # the walk found the package
    upward = []
    for path in modules:
        here = _floor(_module_name(path))
        if here is None:
            continue
        for name in _imports(path):
            there = _floor(name) if name.startswith("kaja_cli.core.ledger.") else None
            if there is not None and there > here:
                upward.append((_module_name(path), name))
    assert upward == []


def test_sync_and_the_report_never_import_usage():
    """The circle the issue measured: sync took the report from usage, usage took
    sync's facts. The report model is below both now."""
    for path in [*sorted((LEDGER / "sync").rglob("*.py")), LEDGER / "report.py"]:
        names = _imports(path)
        assert not {n for n in names if n.startswith("kaja_cli.core.ledger.usage")}, path


# Asking for the engine: a store's or its paths' `cloud`, or a dialect compared by identity.
ENGINE_CHECK = re.compile(r"\.cloud\b|\bis (not )?(dialect\.)?(SQLITE|POSTGRES)\b|Mode\.CLOUD")


def test_no_ledger_module_but_an_engine_part_checks_the_engine():
    found = []
    for path in sorted(LEDGER.rglob("*.py")):
        if path.name in ENGINE_PARTS and path.parent.name == "usage":
            continue
        code = _without_docstrings(path.read_text())
        found += [(path.name, line) for line in code.splitlines() if ENGINE_CHECK.search(line)]
    assert found == []


def _without_docstrings(source: str) -> str:
    """The source with its docstrings blanked (they may name what they avoid)."""
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for i in range(body[0].lineno - 1, body[0].end_lineno or body[0].lineno):
                    lines[i] = ""
    return "\n".join(lines)
