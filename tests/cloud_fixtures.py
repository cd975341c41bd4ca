"""The cloud fixtures (`cloud`, `cloud_demo`): see tests/cloud_support.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cloud_support import DEMO, use_server
from tests.conftest import Kaja


@pytest.fixture
def cloud(kaja: Kaja, pg) -> Kaja:
    use_server(kaja, pg.url)
    kaja.pg = pg  # type: ignore[attr-defined]
    return kaja


@pytest.fixture(scope="session")
def _cloud_demo_template(pg_server, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    database = pg_server.create_database("kaja_cloud_demo")
    k = Kaja(tmp_path_factory.mktemp("cloud-demo"))
    use_server(k, database.url)
    r = k(*DEMO)
    assert r.code == 0, r
    yield database.name, k.state
    pg_server.drop_database(database.name)


@pytest.fixture
def cloud_demo(kaja: Kaja, pg_server, _cloud_demo_template) -> Iterator[Kaja]:
    name, state = _cloud_demo_template
    if not pg_server.running:
        pg_server.start()
    database = pg_server.create_database(template=name)
    shutil.copytree(state, kaja.state, symlinks=True)
    use_server(kaja, database.url)
    kaja.pg = database  # type: ignore[attr-defined]
    try:
        yield kaja
    finally:
        if not pg_server.running:
            pg_server.start()
        pg_server.drop_database(database.name)


@pytest.fixture
def local_demo(tmp_path: Path, _demo_template: Path) -> Kaja:
    """A second `kaja`, local, with its own copy of the demo store (beside `cloud_demo`)."""
    k = Kaja(tmp_path / "local")
    shutil.copytree(_demo_template, k.state, symlinks=True)
    return k
