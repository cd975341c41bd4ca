"""Where everything lives (SPEC §2), and where each location came from.

Precedence, strongest first: a command-line flag, an environment variable, a
settings.toml key, the platform default (platformdirs). A relative `dbPath`
(from settings or `KAJA_DB_PATH`) resolves against the state dir; a relative
flag resolves against the current folder, like any path typed at a shell.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from kaja_cli.core import settings as settings_mod

APP = "kaja"
SHARED_DB_NAME = "kaja.db"
SIDE_DATABASES = {"cache": "cache.db", "stats": "db-stats.db", "auth": "web-auth.db"}
# The companion files SQLite keeps beside a database.
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")

DEFAULT = "default"

# How each location of `Paths.locations()` is named for a person.
LABELS = {
    "settings": "settings file",
    "state_dir": "state dir",
    "shared_db": "shared file",
    "images": "images",
    "cache_db": "cache.db",
    "stats_db": "db-stats.db",
    "auth_db": "web-auth.db",
    "artifacts_db": "artifacts",
}


# NamedTuples rather than dataclasses here: this module is on the start-up
# path of every command and TAB press, and a dataclass costs ~0.5 ms to create.
class Overrides(NamedTuple):
    """What the root command's flags said (None = not given)."""

    config: Path | None = None
    state_dir: Path | None = None
    db: Path | None = None


class Located(NamedTuple):
    """A path and where it came from: "default", "flag --db", "env KAJA_DB_PATH"…"""

    path: Path
    source: str


class Paths(NamedTuple):
    settings_file: Located
    state_dir: Located
    shared_db: Located
    artifacts_db: Located | None  # None: the artifacts tables live in the shared file
    mode: str
    settings: settings_mod.Settings

    @property
    def files_dir(self) -> Path:
        return self.shared_db.path.parent / "files"

    @property
    def images_dir(self) -> Path:
        return self.files_dir / "images"

    def side_db(self, name: str) -> Path:
        return self.state_dir.path / SIDE_DATABASES[name]

    def locations(self) -> list[tuple[str, Located, str]]:
        """Every row of SPEC §2: (name, location, kind), kind "file" or "dir"."""
        follows_db = "follows the shared file"
        follows_state = "follows the state dir"
        rows = [
            ("settings", self.settings_file, "file"),
            ("state_dir", self.state_dir, "dir"),
            ("shared_db", self.shared_db, "file"),
            ("images", Located(self.images_dir, follows_db), "dir"),
            ("cache_db", Located(self.side_db("cache"), follows_state), "file"),
            ("stats_db", Located(self.side_db("stats"), follows_state), "file"),
            ("auth_db", Located(self.side_db("auth"), follows_state), "file"),
        ]
        if self.artifacts_db is not None:
            rows.append(("artifacts_db", self.artifacts_db, "file"))
        return rows

    def databases(self) -> list[tuple[str, Path]]:
        """Every SQLite file kaja administers, shared file first."""
        dbs = [("shared", self.shared_db.path)]
        if self.artifacts_db is not None:
            dbs.append(("artifacts", self.artifacts_db.path))
        dbs += [(name, self.side_db(name)) for name in SIDE_DATABASES]
        return dbs


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "")
    return value if value.strip() else None


def _absolute(path: Path | str, base: Path | None = None) -> Path:
    p = settings_mod.expand(str(path))
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    return Path(os.path.normpath(p))


def _xdg(environ: Mapping[str, str], name: str, fallback: str) -> Path:
    """An XDG base folder as platformdirs computes it on Linux: an empty or
    relative value is ignored (tests/test_paths.py checks we agree)."""
    value = environ.get(name, "").strip()
    if not value or not os.path.isabs(value):
        value = os.path.expanduser(fallback)
    return Path(value)


def default_config_file(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux"):
        # platformdirs' answer without importing it (~5 ms of every start-up).
        return _xdg(env, "XDG_CONFIG_HOME", "~/.config") / APP / "settings.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "settings.toml"


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux"):
        return _xdg(env, "XDG_DATA_HOME", "~/.local/share") / APP
    import platformdirs

    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def resolve(
    overrides: Overrides | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    load_settings: Callable[[Path], settings_mod.Settings] | None = None,
) -> Paths:
    """Resolve every location; reads settings.toml (and raises on a malformed one).

    `load_settings` replaces `settings.load`: doctor passes one that records a
    malformed file and goes on with the defaults, so it can still look at
    everything else.
    """
    o = overrides or Overrides()
    env = os.environ if environ is None else environ

    if o.config is not None:
        config = Located(_absolute(o.config), "flag --config")
    elif (value := _env(env, "KAJA_CONFIG")) is not None:
        config = Located(_absolute(value), "env KAJA_CONFIG")
    else:
        config = Located(default_config_file(env), DEFAULT)
    settings = (load_settings or settings_mod.load)(config.path)

    if o.state_dir is not None:
        state = Located(_absolute(o.state_dir), "flag --state-dir")
    elif (value := _env(env, "KAJA_STATE_DIR")) is not None:
        state = Located(_absolute(value), "env KAJA_STATE_DIR")
    else:
        state = Located(default_state_dir(env), DEFAULT)

    if o.db is not None:
        db = Located(_absolute(o.db), "flag --db")
    elif (value := _env(env, "KAJA_DB_PATH")) is not None:
        db = Located(_absolute(value, state.path), "env KAJA_DB_PATH")
    elif (value := settings.get("memory", "dbPath")) is not None:
        db = Located(_absolute(value, state.path), "settings [memory] dbPath")
    else:
        db = Located(state.path / SHARED_DB_NAME, DEFAULT)

    artifacts: Located | None = None
    if (value := _env(env, "KAJA_ARTIFACTS_DB")) is not None:
        artifacts = Located(_absolute(value, state.path), "env KAJA_ARTIFACTS_DB")
    elif (value := settings.get("memory", "artifactsPath")) is not None:
        artifacts = Located(_absolute(value, state.path), "settings [memory] artifactsPath")

    return Paths(
        settings_file=config,
        state_dir=state,
        shared_db=db,
        artifacts_db=artifacts,
        mode=settings.mode,
        settings=settings,
    )


def companions(db: Path) -> list[Path]:
    """The -wal, -shm and -journal files SQLite may keep beside `db`."""
    return [db.with_name(db.name + suffix) for suffix in COMPANION_SUFFIXES]


class LocationInfo(NamedTuple):
    """One row of `kaja config paths`."""

    name: str
    path: Path
    source: str
    kind: str  # "file" | "dir"
    exists: bool
    size: int | None  # bytes; a folder's is everything below it
    files: int | None  # a folder's file count


def inspect(paths: Paths) -> list[LocationInfo]:
    """Every location with whether it exists and its size; reads, never creates."""
    from kaja_cli.core.fs import tree_size

    rows = []
    for name, loc, kind in paths.locations():
        exists = loc.path.exists() or loc.path.is_symlink()
        size = files = None
        if exists:
            size, count = tree_size(loc.path)
            files = count if kind == "dir" else None
        rows.append(LocationInfo(name, loc.path, loc.source, kind, exists, size, files))
    if paths.artifacts_db is None:  # SPEC §2's last row: by default, tables in the shared file
        shared = paths.shared_db.path
        rows.append(LocationInfo("artifacts_db", shared, "tables in the shared file", "file",
                                 shared.exists(), None, None))  # fmt: skip
    return rows
