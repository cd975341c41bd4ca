"""The registry of databases (core/registry.py) and how paths resolve it, in-process."""

from __future__ import annotations

from pathlib import Path

from kaja_cli.core.store import schema
from kaja_cli.core.store.paths import LABELS, Overrides, resolve
from kaja_cli.core.store.registry import DATABASES, Database, DatabaseFile, Placement


def _paths(tmp_path: Path, **env: str):
    environ = {"KAJA_STATE_DIR": str(tmp_path / "state"), "KAJA_CONFIG": str(tmp_path / "none")}
    return resolve(Overrides(), {**environ, **env})


def test_every_table_belongs_to_exactly_one_database():
    assert list(schema.TABLES_OF) == list(DATABASES) == list(Database)
    seen: dict[str, Database] = {}
    for name, tables in schema.TABLES_OF.items():
        for t in tables:
            assert t.name not in seen, (t.name, seen.get(t.name), name)
            seen[t.name] = name
            assert schema.database_of(t.name) is name
    assert set(seen) == set(schema.TABLES)
    assert schema.database_of("no_such_table") is None


def test_each_database_has_one_name_label_and_location():
    specs = list(DATABASES.values())
    for field in ("label", "noun", "location"):
        values = [getattr(s, field) for s in specs]
        assert len(set(values)) == len(values), field
    for spec in specs:
        assert LABELS[spec.location] == spec.label
        alone = DatabaseFile(spec.name, Path(spec.location), "test", (spec.name,))
        assert schema.tables_of(alone) == schema.TABLES_OF[spec.name]
        assert spec.side == (spec.placement is Placement.STATE_DIR)
        if spec.host is not None:  # a hosted database has no default file of its own
            assert spec.file_name is None and spec.placement is Placement.SETTING
    assert [s.name for s in specs if s.owners_data] == [Database.SHARED]
    assert [s.name for s in specs if s.disposable] == [Database.CACHE]


def test_artifacts_live_in_the_shared_file_unless_a_setting_splits_them(tmp_path: Path):
    state = tmp_path / "state"
    paths = _paths(tmp_path)
    files = {f.name: f for f in paths.databases()}
    assert list(files) == [Database.SHARED, Database.CACHE, Database.STATS, Database.AUTH]
    shared = files[Database.SHARED]
    assert (shared.path, shared.source) == (state / "kaja.db", "default")
    assert shared.holds == (Database.SHARED, Database.ARTIFACTS)
    assert [t.name for t in schema.tables_of(shared)][-1] == "artifacts" and shared.search_index
    assert paths.file_of("artifacts") == shared
    assert files[Database.CACHE].source == "follows the state dir"
    assert not files[Database.CACHE].search_index

    split = _paths(tmp_path, KAJA_ARTIFACTS_DB="art.db")
    files = {f.name: f for f in split.databases()}
    assert list(files)[:2] == [Database.SHARED, Database.ARTIFACTS]
    assert files[Database.SHARED].holds == (Database.SHARED,)
    artifacts = split.file_of(Database.ARTIFACTS)
    assert (artifacts.path, artifacts.source) == (state / "art.db", "env KAJA_ARTIFACTS_DB")
    assert not artifacts.search_index and [t.name for t in schema.tables_of(artifacts)] == [
        "artifacts"
    ]
    # `config paths` lists a split database after the side databases.
    assert [row.name for row in split.locations()] == [
        "settings", "state_dir", "shared_db", "images", "cache_db", "stats_db", "auth_db",
        "artifacts_db", "semantic_db",
    ]  # fmt: skip


def test_the_shared_file_is_placed_by_flag_then_env_then_setting(tmp_path: Path):
    config = tmp_path / "settings.toml"
    config.write_text('[memory]\ndbPath = "from-settings.db"\n')
    env = {"KAJA_STATE_DIR": str(tmp_path / "s"), "KAJA_CONFIG": str(config)}
    state = tmp_path / "s"
    assert resolve(Overrides(), env).shared_db == (
        state / "from-settings.db",
        "settings [memory] dbPath",
    )
    env["KAJA_DB_PATH"] = "from-env.db"
    assert resolve(Overrides(), env).shared_db == (state / "from-env.db", "env KAJA_DB_PATH")
    flag = resolve(Overrides(db=tmp_path / "flag.db"), env).shared_db
    assert flag == (tmp_path / "flag.db", "flag --db")
