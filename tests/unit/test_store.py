"""The store chooses the engine once: `Store.part` hands a feature its engine part."""

from __future__ import annotations

import sys
from contextlib import closing
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


# --- the store's engine part: what the features ask it instead of the mode -----------------
UNREACHABLE = "postgresql://kaja:s3cr3t@127.0.0.1:1/kaja"  # never contacted by these tests


def _local(tmp_path: Path) -> Store:
    return Store.locate(Overrides(state_dir=tmp_path / "state"), environ={})


def _cloud(tmp_path: Path) -> Store:
    return Store.locate(
        Overrides(state_dir=tmp_path / "state", database_url=UNREACHABLE), environ={}
    )


def test_the_store_names_the_spelling_of_its_engine(tmp_path: Path) -> None:
    from kaja_cli.core.engine import dialect

    assert _local(tmp_path).dialect is dialect.SQLITE
    assert _cloud(tmp_path).dialect is dialect.POSTGRES


def test_the_catalog_is_asked_of_the_dialect(tmp_path: Path) -> None:
    """`dialect.table_names`/`columns` answer for a SQLite file as for a
    server's schema (no None meaning "ask SQLite yourself")."""
    import sqlite3

    from kaja_cli.core.engine import dialect

    conn = sqlite3.connect(tmp_path / "t.db")
    try:
        conn.execute('CREATE TABLE sessions (id, "updatedAt", title)')
        conn.execute("CREATE VIEW recent AS SELECT id FROM sessions")
        assert dialect.table_names(conn) == {"sessions", "recent"}
        assert dialect.columns(conn, "sessions", "recent", "messages") == {
            "sessions": ["id", "updatedAt", "title"],
            "recent": ["id"],
        }
    finally:
        conn.close()


def test_a_store_on_a_server_has_no_local_file_to_glance_at(tmp_path: Path) -> None:
    """Shell completion glances through the store: never at the server (a TAB
    press must not wait on a network), always at a side database's file."""
    import sqlite3

    local, cloud = _local(tmp_path), _cloud(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    for name in ("kaja.db", "cache.db"):
        with closing(sqlite3.connect(state / name)) as conn, conn:
            conn.execute("CREATE TABLE t (x)")
        conn.close()
    with local.glance() as conn:
        assert conn is not None and conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    with cloud.glance() as conn:
        assert conn is None  # the shared file there is not the store's: the server is
    with cloud.glance("cache") as conn:
        assert conn is not None and conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert [f.name for f in local.local_files()] == ["shared", "cache", "stats", "auth"]
    assert cloud.local_files() == []
    assert local.server is None and cloud.server is not None
    assert cloud.owner(None).is_terminal and local.owner(None).is_terminal


def test_the_mode_is_chosen_once_and_the_parts_answer(tmp_path: Path) -> None:
    from kaja_cli.errors import Failed

    local, cloud = _local(tmp_path), _cloud(tmp_path)
    assert (local.backend.part, cloud.backend.part) == ("local", "server")
    assert (local.cloud, cloud.cloud) == (False, True)
    assert local.where() == str(tmp_path / "state" / "kaja.db")
    assert cloud.where() == "postgresql://kaja:***@127.0.0.1:1/kaja (schema kaja)"
    local.require_local()
    with pytest.raises(Failed, match="--database-url chose cloud mode"):
        cloud.require_local()
    with pytest.raises(Failed, match="--database-url chose cloud mode"):
        cloud.require()
