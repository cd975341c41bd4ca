"""`kaja config paths` and core/paths.py: where everything lives and why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kaja_cli.core.store import paths as core_paths


def paths_json(kaja, *args, env=None):
    r = kaja(*args, "config", "paths", "--json", env=env)
    assert r.code == 0, r
    return json.loads(r.out)["paths"]


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_defaults_follow_xdg_under_home(kaja):
    env = {"KAJA_STATE_DIR": None, "KAJA_CONFIG": None}
    p = paths_json(kaja, env=env)
    home = kaja.home
    assert p["settings"] == {
        "path": str(home / ".config/kaja/settings.toml"), "source": "default",
        "kind": "file", "exists": False, "size": None,
    }  # fmt: skip
    assert p["state_dir"]["path"] == str(home / ".local/share/kaja")
    assert p["shared_db"] == {
        "path": str(home / ".local/share/kaja/kaja.db"), "source": "default",
        "kind": "file", "exists": False, "size": None,
    }  # fmt: skip
    assert p["images"]["path"] == str(home / ".local/share/kaja/files/images")
    assert p["images"]["source"] == "follows the shared file"
    assert p["cache_db"]["path"] == str(home / ".local/share/kaja/cache.db")
    assert p["stats_db"]["path"] == str(home / ".local/share/kaja/db-stats.db")
    assert p["auth_db"]["path"] == str(home / ".local/share/kaja/web-auth.db")
    assert p["artifacts_db"] == {
        "path": str(home / ".local/share/kaja/kaja.db"), "source": "tables in the shared file",
        "kind": "file", "exists": False, "size": None,
    }  # fmt: skip


def test_xdg_variables_absolute_used_empty_and_relative_ignored(kaja, tmp_path):
    env = {"KAJA_STATE_DIR": None, "KAJA_CONFIG": None}
    p = paths_json(
        kaja,
        env={
            **env,
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        },
    )
    assert p["state_dir"]["path"] == str(tmp_path / "data/kaja")
    assert p["settings"]["path"] == str(tmp_path / "cfg/kaja/settings.toml")
    for bad in ("", "   ", "relative/dir"):
        p = paths_json(kaja, env={**env, "XDG_DATA_HOME": bad, "XDG_CONFIG_HOME": bad})
        assert p["state_dir"]["path"] == str(kaja.home / ".local/share/kaja")
        assert p["settings"]["path"] == str(kaja.home / ".config/kaja/settings.toml")


@pytest.mark.parametrize("value", [None, "", "  ", "relative/x", "/abs/data"])
def test_linux_defaults_agree_with_platformdirs(monkeypatch, value):
    """kaja computes platformdirs' Linux answer without importing it (start-up)."""
    import platformdirs

    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    assert core_paths.default_state_dir() == Path(
        platformdirs.user_data_dir("kaja", appauthor=False)
    )
    assert core_paths.default_config_file().parent == Path(
        platformdirs.user_config_dir("kaja", appauthor=False)
    )


def test_precedence_flag_env_settings_default(kaja, tmp_path):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text('[memory]\ndbPath = "from-settings.db"\n')
    state = kaja.state
    assert paths_json(kaja)["shared_db"] == {
        "path": str(state / "from-settings.db"), "source": "settings [memory] dbPath",
        "kind": "file", "exists": False, "size": None,
    }  # fmt: skip
    p = paths_json(kaja, env={"KAJA_DB_PATH": str(tmp_path / "env.db")})
    assert (p["shared_db"]["path"], p["shared_db"]["source"]) == (
        str(tmp_path / "env.db"),
        "env KAJA_DB_PATH",
    )
    p = paths_json(
        kaja, "--db", str(tmp_path / "flag.db"), env={"KAJA_DB_PATH": str(tmp_path / "env.db")}
    )
    assert (p["shared_db"]["path"], p["shared_db"]["source"]) == (
        str(tmp_path / "flag.db"),
        "flag --db",
    )
    p = paths_json(kaja, "--state-dir", str(tmp_path / "s2"))
    assert (p["state_dir"]["path"], p["state_dir"]["source"]) == (
        str(tmp_path / "s2"),
        "flag --state-dir",
    )
    assert p["shared_db"]["path"] == str(
        tmp_path / "s2/from-settings.db"
    )  # relative dbPath follows
    other = tmp_path / "other.toml"
    other.write_text("")
    p = paths_json(kaja, "--config", str(other))
    assert (p["settings"]["source"], p["settings"]["exists"]) == ("flag --config", True)
    assert p["shared_db"]["source"] == "default"


def test_relative_and_tilde_paths(kaja, tmp_path):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text(
        '[memory]\ndbPath = "~/kaja/my.db"\nartifactsPath = "art/artifacts.db"\n'
    )
    p = paths_json(kaja)
    assert p["shared_db"]["path"] == str(kaja.home / "kaja/my.db")
    assert p["images"]["path"] == str(kaja.home / "kaja/files/images")
    assert p["artifacts_db"]["path"] == str(kaja.state / "art/artifacts.db")
    # a relative KAJA_DB_PATH resolves against the state dir, like dbPath
    p = paths_json(kaja, env={"KAJA_DB_PATH": "sub/env.db"})
    assert p["shared_db"]["path"] == str(kaja.state / "sub/env.db")
    # a relative flag resolves against the current folder, like any shell path
    r = kaja("--db", "rel.db", "config", "paths", "--json")
    assert json.loads(r.out)["paths"]["shared_db"]["path"] == str(Path(os.getcwd()) / "rel.db")


def test_reading_creates_nothing(kaja, tmp_path):
    before = listing(tmp_path)
    assert kaja("config", "paths").code == 0
    assert kaja("config", "paths", "--json").code == 0
    assert listing(tmp_path) == before
    assert not kaja.state.exists()


def test_existing_store_sizes_and_plain_output(demo_store):
    p = paths_json(demo_store)
    assert p["shared_db"]["exists"] is True
    assert p["shared_db"]["size"] == demo_store.db.stat().st_size
    assert p["images"]["exists"] is True and p["images"]["files"] == 3
    assert p["state_dir"]["size"] >= p["shared_db"]["size"]
    r = demo_store("config", "paths")
    lines = [line.split("\t") for line in r.out.splitlines()]
    assert [row[0] for row in lines] == [
        "mode", "settings", "state_dir", "shared_db", "images", "cache_db", "stats_db", "auth_db",
        "semantic_db", "artifacts_db",
    ]  # fmt: skip
    assert lines[0] == ["mode", "local", "default", "", ""]
    shared = lines[3]
    assert shared == [
        "shared_db",
        str(demo_store.db),
        "default",
        "yes",
        str(demo_store.db.stat().st_size),
    ]
    assert lines[1][3:] == ["no", ""]  # no settings file
    assert r.err == ""


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('[memory]\ndbPath = "x.db\n', ":2:"),
        ("[memory\n", ":1:"),
        ('[memory]\nmode = "local"\nmode = "cloud"\n', ":3:"),
    ],
)
def test_malformed_settings_is_one_line_with_line_and_column(kaja, content, where):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text(content)
    r = kaja("config", "paths")
    assert r.code == 1
    assert r.out == ""
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert r.err.startswith(f"kaja: {kaja.config}{where}")
    assert "invalid TOML" in r.err


def test_bad_settings_values(kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text('[memory]\nmode = "moon"\n')
    r = kaja("config", "paths")
    assert (r.code, r.err.strip()) == (
        1, f"kaja: {kaja.config}:2: memory.mode must be local or cloud, not 'moon': "
           "fix it with `kaja config edit`"
    )  # fmt: skip
    kaja.config.write_bytes(b"\xff\xfe[memory]")
    r = kaja("config", "paths")
    assert r.code == 1 and "not UTF-8" in r.err
    kaja.config.unlink()
    kaja.config.mkdir()
    r = kaja("config", "paths")
    assert r.code == 1 and "is a folder" in r.err


def test_cloud_mode_without_a_server_is_reported_and_demo_refuses(kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text('[memory]\nmode = "cloud"\n')
    r = kaja("config", "paths", "--json")
    assert json.loads(r.out)["mode"] == "cloud"
    assert json.loads(r.out)["backend"]["database_url"] == {"value": None, "source": "not set"}
    r = kaja("demo")
    assert r.code == 1 and "cloud mode needs the PostgreSQL server's URL" in r.err
    assert "KAJA_DATABASE_URL" in r.err
    assert not kaja.state.exists()
