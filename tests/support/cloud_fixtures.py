"""The cloud fixtures (`cloud`, `cloud_demo`): see tests/support/cloud_support.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Kaja
from tests.support.cloud_support import DEMO, role_named_like_the_schema, use_server


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


# The shared ledger's tables as kaja made them before issue 26: no schema named.
EARLIER_LEDGER = """
CREATE TABLE IF NOT EXISTS andromeda_ledger (
  origin text NOT NULL, tbl text NOT NULL, key text NOT NULL, row jsonb, seq bigint NOT NULL,
  writer text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (origin, tbl, key)
);
CREATE SEQUENCE IF NOT EXISTS andromeda_ledger_seq;
CREATE INDEX IF NOT EXISTS andromeda_ledger_by_seq ON andromeda_ledger (seq);
CREATE TABLE IF NOT EXISTS andromeda_ledger_meta (name text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS andromeda_origins (
  origin text PRIMARY KEY, host text, first_sync timestamptz NOT NULL DEFAULT now(),
  last_sync timestamptz NOT NULL DEFAULT now()
);
"""


@pytest.fixture
def legacy_ledger(kaja: Kaja, pg, tmp_path: Path) -> tuple[Kaja, Kaja]:
    """Issue 26's installation: the role `kaja`, cloud mode's store in schema
    `kaja`, and the shared ledger of `kaja sync` in that schema too, where an
    earlier kaja made it (its unqualified CREATE TABLE followed the search
    path), holding a machine's rows. Returns (cloud mode's kaja, the machine)."""
    import psycopg

    from kaja_cli.core.conversations.record import Recorder
    from tests.support.sync_support import machine, store_of

    url = role_named_like_the_schema(pg)
    use_server(kaja, url)
    kaja.pg = pg  # type: ignore[attr-defined]
    assert kaja(*DEMO).code == 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(EARLIER_LEDGER)  # no schema named: "$user" (kaja) comes first
        conn.execute("INSERT INTO andromeda_ledger_meta VALUES ('ledger_id', 'old-ledger')")
    laptop = machine(tmp_path / "laptop", url)
    with Recorder(store_of(laptop)) as rec:
        run = rec.start_run(run_id="run_l1", prompt="hello", host="laptop")
        rec.add_call(run, model="gpt-5", prompt_tokens=100, completion_tokens=7, ok=1)
    r = laptop("sync")
    assert r.code == 0, r
    assert pg.query("SELECT to_regclass('public.andromeda_ledger')") == [(None,)]
    assert pg.query("SELECT count(*) FROM kaja.andromeda_ledger")[0][0] > 0
    return kaja, laptop
