"""The store chooses the engine once: `Store.part` hands a feature its engine part."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Overrides


@pytest.fixture
def feature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A feature package with a local and a server part, each saying which it is."""
    pkg = tmp_path / "a_feature"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "local.py").write_text("ENGINE = 'sqlite'\n")
    (pkg / "server.py").write_text("ENGINE = 'postgresql'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "a_feature"
    for name in [n for n in sys.modules if n.startswith("a_feature")]:
        del sys.modules[name]


def test_a_local_store_hands_out_the_local_part(tmp_path: Path, feature: str) -> None:
    store = Store.locate(Overrides(state_dir=tmp_path / "state"), environ={})
    assert store.part(feature).ENGINE == "sqlite"


def test_cloud_mode_hands_out_the_server_part(tmp_path: Path, feature: str) -> None:
    store = Store.locate(
        Overrides(state_dir=tmp_path / "state", database_url="postgresql://kaja@127.0.0.1/kaja"),
        environ={},
    )
    assert store.part(feature).ENGINE == "postgresql"
