"""The shape of `core/conversations/` (issue 24): no import circle among its
modules, no engine decided inside it, search as one skeleton whose two engine
parts expose the same functions and take no private names from each other,
and one decoder of SQLite's varints."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from tests.unit.test_layering import ROOT, _module_name, imported_modules

CONVERSATIONS = ROOT / "kaja_cli" / "core" / "conversations"
PACKAGE = "kaja_cli.core.conversations"


def _sources(folder: Path) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(folder.rglob("*.py"))}


def _imports(path: Path) -> set[str]:
    return imported_modules(
        path.read_text(), _module_name(path), package=path.name == "__init__.py"
    )


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle of `graph`, each once, as the modules along it."""
    found, done = [], set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                circle = path[path.index(nxt) :]
                key = frozenset(circle)
                if key not in done:
                    done.add(key)
                    found.append(circle)
            elif len(path) < len(graph):
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_the_circle_finder_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_two_conversation_modules_import_each_other():
    """Functions' imports included: an import inside a function to dodge a
    circle is a circle (the filter once took `columns` from sessions)."""
    modules = _sources(CONVERSATIONS)
    assert f"{PACKAGE}.search.rank" in modules and f"{PACKAGE}.filter" in modules
    graph = {
        name: {m for m in _imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    assert f"{PACKAGE}.filter" in graph[f"{PACKAGE}.sessions"]  # the walk sees the imports
    assert _circles(graph) == []


def test_no_module_takes_a_private_name_from_conversations():
    """Search's modules once took `_Index`, `_parse_snippet`, `_progress`,
    `_varints` from one another; what is shared is public, in its one home."""
    taken = []
    for path in sorted((ROOT / "kaja_cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                taken += [(path.name, a.name) for a in node.names if a.name.startswith("_")]
    assert taken == []


# The engine is chosen once, in the store: a feature asks its dialect or its
# engine part, and never checks which engine it is on.
_ENGINE_BRANCH = re.compile(
    r"\.cloud\b|\b(is|is not|==|!=)\s+(dialect\.)?(SQLITE|POSTGRES)\b|dialect\.columns\("
)
# record.py's cloud check is the store's to take over (issue 24, the engine and store part).
_NOT_YET = {"record.py"}


def test_no_engine_branch_in_conversations():
    assert _ENGINE_BRANCH.search("if store.cloud:")
    assert _ENGINE_BRANCH.search("local = self.dialect is dialect.SQLITE")
    assert _ENGINE_BRANCH.search("if dialect.of(conn) is dialect.POSTGRES:")
    assert not _ENGINE_BRANCH.search("d: dialect.Dialect = dialect.SQLITE,")
    branches = [
        (path.relative_to(CONVERSATIONS).as_posix(), n, line.strip())
        for path in sorted(CONVERSATIONS.rglob("*.py"))
        if path.name not in _NOT_YET
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _ENGINE_BRANCH.search(line)
    ]
    assert branches == []


def test_the_engine_parts_of_search_expose_the_same_functions():
    from kaja_cli.core.conversations.search import local, server

    for name in ("search", "reindex"):
        assert str(inspect.signature(getattr(local, name))) == str(
            inspect.signature(getattr(server, name))
        ), name


def test_search_asks_the_store_for_its_engine_part(tmp_path: Path):
    """`search.search` and `search.reindex` decide nothing: the store's part answers."""
    from kaja_cli.core.conversations import search
    from kaja_cli.core.conversations.search import local
    from kaja_cli.core.store import Store

    store = Store.locate(
        environ={"KAJA_STATE_DIR": str(tmp_path), "KAJA_CONFIG": str(tmp_path / "s.toml")}
    )
    assert store.part(search.__name__) is local
    result = search.search(store, "tomato")
    assert (result.source, result.notes) == (
        "none",
        [f"no Kaja store at {tmp_path / 'kaja.db'}: nothing to search"],
    )


def test_one_decoder_of_sqlite_varints():
    """Three decoders once (search's ranking, the CJK index's count, doctor's
    search check); now `engine/sqlite_format.varints` alone masks 7 bits."""
    decoders = []
    for path in sorted((ROOT / "kaja_cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.BitAnd)
                and isinstance(node.right, ast.Constant)
                and node.right.value == 0x7F
            ):
                decoders.append(path.relative_to(ROOT).as_posix())
    assert decoders == ["kaja_cli/core/engine/sqlite_format.py"]


def test_varints_read_as_fts4_writes_them():
    from kaja_cli.core.engine.sqlite_format import varints

    assert varints(b"") == []
    assert varints(b"\x05\x00\x7f") == [5, 0, 127]
    assert varints(b"\x80\x01") == [128]
    assert varints(b"\xac\x02\x96\x01") == [300, 150]
    assert varints(bytes([0xFF] * 8 + [0x7F])) == [(1 << 63) - 1]
    assert varints(b"\xac\x02\x96\x01\x03", count=2) == [300, 150]
    assert varints(b"\x03\xac", count=5) == [3]  # a number the blob cuts short is not one
