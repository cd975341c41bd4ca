"""Cloud mode in tests: helpers to point `kaja` at a database of tests/support/pg.py's
server; the fixtures are in tests/support/cloud_fixtures.py. A test module uses them with

    pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

- `cloud`: the `kaja` fixture in cloud mode on a fresh, empty database
  (settings.toml says `mode = "cloud"` and the database's URL);
- `cloud_demo`: the same, holding `kaja demo --seed 1 --now DEMO_NOW`
  written through the write API (the server's copy of `demo_store`): made
  once per session into a template database, and copied per test
  (`CREATE DATABASE … TEMPLATE`), its images copied into the state dir.

Both give the Kaja object a `.pg` attribute (the `PgDatabase`).
"""

from __future__ import annotations

from tests.conftest import DEMO_NOW, Kaja

DEMO = ("demo", "--seed", "1", "--now", DEMO_NOW)


def use_server(
    kaja: Kaja,
    url: str,
    *,
    account: str | None = None,
    schema: str | None = None,
    statement_timeout: int | None = None,
) -> None:
    """Write settings.toml for cloud mode on `url`."""
    lines = ["[memory]", 'mode = "cloud"', f"databaseUrl = {_toml(url)}"]
    if account is not None:
        lines.append(f"account = {_toml(account)}")
    if schema is not None:
        lines.append(f"databaseSchema = {_toml(schema)}")
    if statement_timeout is not None:
        lines.append(f"statementTimeout = {statement_timeout}")
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text("\n".join(lines) + "\n")


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def role_named_like_the_schema(pg) -> str:
    """The README's setup: a role `kaja` owning the database, so that its
    search_path (`"$user", public`) starts with cloud mode's schema `kaja`.
    Returns the database's URL logging in as that role."""
    with pg.connect() as conn:
        conn.execute(
            "DO $$ BEGIN CREATE ROLE kaja LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        )
        conn.execute(f'ALTER DATABASE "{pg.name}" OWNER TO kaja')
    return pg.url.replace("postgres@", "kaja@", 1)
