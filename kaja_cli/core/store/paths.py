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
from typing import Literal, NamedTuple

from kaja_cli.core.store import settings as settings_mod
from kaja_cli.core.store.registry import DATABASES, Database, DatabaseFile, DatabaseSpec, Placement

APP = "kaja"
# The companion files SQLite keeps beside a database.
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")

DEFAULT = "default"
SEMANTIC_FILE = "semantic.db"  # `Paths.semantic_db`
FOLLOWS_STATE_DIR = "follows the state dir"
FOLLOWS_SHARED_FILE = "follows the shared file"

# How each row of `backend()` is named for a person.
BACKEND_LABELS = {
    "mode": "mode",
    "database_url": "database url",
    "account": "account",
    "schema": "database schema",
}

# How each location of `Paths.locations()` is named for a person.
LABELS = {
    "settings": "settings file",
    "state_dir": "state dir",
    "images": "images",
    "semantic_db": "semantic index",
    **{spec.location: spec.label for spec in DATABASES.values()},
}

Kind = Literal["file", "dir"]


# NamedTuples rather than dataclasses here: this module is on the start-up
# path of every command and TAB press, and a dataclass costs ~0.5 ms to create.
class Overrides(NamedTuple):
    """What the root command's flags said (None = not given)."""

    config: Path | None = None
    state_dir: Path | None = None
    db: Path | None = None
    database_url: str | None = None  # --database-url: cloud mode on this server


class Located(NamedTuple):
    """A path and where it came from: "default", "flag --db", "env KAJA_DB_PATH"…"""

    path: Path
    source: str


class Location(NamedTuple):
    """One row of SPEC §2: its key (`config paths --json`), where, file or folder."""

    name: str
    located: Located
    kind: Kind


class Setting(NamedTuple):
    """A value and where it came from ("flag --database-url", "env KAJA_ACCOUNT",
    "settings [memory] account", "default", "not set")."""

    value: str | None
    source: str


class Server(NamedTuple):
    """Cloud mode's PostgreSQL (SPEC §10): the server, whose rows are "yours"
    (`[memory] account`; not set: the terminal's, as locally), and the schema
    holding Kaja's tables. Resolving it never connects."""

    url: Setting
    account: Setting
    schema: Setting
    # `[memory] statementTimeout` (seconds; cloud mode and ledger sync): its
    # default when unset or not allowed (doctor warns about such a value).
    statement_timeout_s: int = 60
    # `[memory] readUrl` (`KAJA_READ_URL`): a read replica the read-only
    # commands use; never set when --database-url chose the server (a replica
    # of the configured server is not one of that server's).
    read_url: Setting = Setting(None, "not set")


class Paths(NamedTuple):
    settings_file: Located
    state_dir: Located
    # The databases a flag, env var or setting places (the registry's
    # Placement.SETTING): the shared file always, the artifacts when split.
    placed: dict[Database, Located]
    mode: settings_mod.Mode
    settings: settings_mod.Settings
    # `files/` (images, artifacts' files): beside the shared file, or in the
    # state dir when a server holds the shared database. Resolved with the mode.
    files: Located
    mode_source: str = DEFAULT  # "flag --database-url", "settings [memory] mode", "default"
    server: Server | None = None  # cloud mode's server; None until resolved

    @property
    def cloud(self) -> bool:
        """Cloud mode, as `config paths` reports it (`locations`, `inspect`,
        `backend`); what differs by engine asks the store's part (`Store`)."""
        return self.mode is settings_mod.Mode.CLOUD

    @property
    def shared_db(self) -> Located:
        return self.placed[Database.SHARED]

    @property
    def files_dir(self) -> Path:
        """`files/` beside the shared file; in cloud mode (no shared file) in the state dir."""
        return self.files.path

    @property
    def images_dir(self) -> Path:
        return self.files_dir / "images"

    @property
    def semantic_db(self) -> Path:
        """kaja's own semantic index (`kaja search --semantic`): not the
        agent's, so not in the registry; it follows the state dir."""
        return self.state_dir.path / SEMANTIC_FILE

    def located(self, name: Database) -> Located | None:
        """Where a database's own file is; None when its tables live in its host's."""
        spec = DATABASES[name]
        if spec.placement is Placement.STATE_DIR:
            return Located(self.state_dir.path / str(spec.file_name), FOLLOWS_STATE_DIR)
        return self.placed.get(name)

    def databases(self) -> list[DatabaseFile]:
        """Every database file kaja administers, in the registry's order (shared file first)."""
        files = []
        for spec in DATABASES.values():
            where = self.located(spec.name)
            if where is None:
                continue
            hosted = (s.name for s in DATABASES.values()
                      if s.host == spec.name and self.located(s.name) is None)  # fmt: skip
            files.append(DatabaseFile(spec.name, where.path, where.source, (spec.name, *hosted)))
        return files

    def file_of(self, name: Database | str) -> DatabaseFile:
        """The file holding a database's tables (the artifacts': the shared file unless
        KAJA_ARTIFACTS_DB / artifactsPath split them out)."""
        name = Database(name)
        return next(f for f in self.databases() if name in f.holds)

    def locations(self) -> list[Location]:
        """Every row of SPEC §2: the settings, the state dir, the shared file and the
        images that follow it, the side databases, then databases split from their host,
        then kaja's own semantic index.
        In cloud mode the databases are the server's: the settings, the state dir and
        the images it keeps."""
        rows = [
            Location("settings", self.settings_file, "file"),
            Location("state_dir", self.state_dir, "dir"),
        ]
        images = Location("images", Located(self.images_dir, self.files.source), "dir")
        if self.cloud:
            return [*rows, images]
        for f in sorted(self.databases(), key=lambda f: f.spec.host is not None):
            rows.append(Location(f.spec.location, Located(f.path, f.source), "file"))
            if f.name is Database.SHARED:
                rows.append(images)
        rows.append(Location("semantic_db", Located(self.semantic_db, FOLLOWS_STATE_DIR), "file"))
        return rows


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
    relative value is ignored (tests/cli/test_paths.py checks we agree)."""
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

    placed: dict[Database, Located] = {}
    for spec in DATABASES.values():
        if spec.placement is Placement.SETTING:
            where = _place(spec, o, env, settings, state.path)
            if where is not None:
                placed[spec.name] = where
    mode, mode_source = settings.mode, DEFAULT
    if settings.get("memory", "mode") is not None:
        mode_source = "settings [memory] mode"
    if o.database_url is not None:
        mode, mode_source = settings_mod.Mode.CLOUD, "flag --database-url"
    if mode is settings_mod.Mode.CLOUD:  # no shared file here: the server holds it
        files = Located(state.path / "files", FOLLOWS_STATE_DIR)
    else:
        files = Located(placed[Database.SHARED].path.parent / "files", FOLLOWS_SHARED_FILE)
    return Paths(
        settings_file=config, state_dir=state, placed=placed, mode=mode, settings=settings,
        files=files, mode_source=mode_source, server=_server(o, env, settings),
    )  # fmt: skip


def _server(flags: Overrides, env: Mapping[str, str], settings: settings_mod.Settings) -> Server:
    """The cloud settings, strongest first: flag, environment, settings.toml, default."""

    def pick(flag: str | None, var: str | None, key: str, default: str | None = None) -> Setting:
        if flag is not None:
            return Setting(flag, "flag --database-url")
        if var is not None and (value := _env(env, var)) is not None:
            return Setting(value.strip(), f"env {var}")
        if (value := settings.get("memory", key)) is not None:
            return Setting(str(value), f"settings [memory] {key}")
        return Setting(default, DEFAULT) if default is not None else Setting(None, "not set")

    from kaja_cli.core.store.settings import keys as settings_keys

    key = settings_keys.KEYS["memory.statementTimeout"]
    timeout = settings.get("memory", key.leaf)
    return Server(
        url=pick(flags.database_url, "KAJA_DATABASE_URL", "databaseUrl"),
        account=pick(None, "KAJA_ACCOUNT", "account"),
        schema=pick(None, None, "databaseSchema", "kaja"),
        # Not check(): unset, it would word (and import masking for) a message no one reads.
        statement_timeout_s=timeout if settings_keys.acceptable(key, timeout) else key.default,
        read_url=(
            pick(None, "KAJA_READ_URL", "readUrl")
            if flags.database_url is None
            else Setting(None, "not used with --database-url")
        ),
    )


def _place(
    spec: DatabaseSpec,
    flags: Overrides,
    env: Mapping[str, str],
    settings: settings_mod.Settings,
    state_dir: Path,
) -> Located | None:
    """A database placed by a flag, env var or setting (strongest first), else its
    default in the state dir; None for one that lives in its host's file."""
    moved = spec.moved_by
    if moved.flag is not None:
        value = getattr(flags, moved.flag.removeprefix("--").replace("-", "_"))
        if value is not None:
            return Located(_absolute(value), f"flag {moved.flag}")
    if moved.env is not None and (value := _env(env, moved.env)) is not None:
        return Located(_absolute(value, state_dir), f"env {moved.env}")
    if moved.setting is not None and (value := settings.get(*moved.setting)) is not None:
        table, key = moved.setting
        return Located(_absolute(value, state_dir), f"settings [{table}] {key}")
    if spec.file_name is None:
        return None
    return Located(state_dir / spec.file_name, DEFAULT)


def companions(db: Path) -> list[Path]:
    """The -wal, -shm and -journal files SQLite may keep beside `db`."""
    from kaja_cli.core.engine.fs import beside

    return [beside(db, suffix) for suffix in COMPANION_SUFFIXES]


class BackendInfo(NamedTuple):
    """One row of `kaja config paths` about where the conversations are kept."""

    name: str  # "mode", "database_url", "account", "schema", "read_url"
    value: str | None  # a URL with its password as ***
    source: str

    def to_json(self) -> dict:
        return {"value": self.value, "source": self.source}


def backend(paths: Paths) -> list[BackendInfo]:
    """Local or cloud, and where that came from; in cloud mode the server (its
    password masked), the account and the schema. Never connects."""
    from kaja_cli.core.masking import mask

    rows = [BackendInfo("mode", str(paths.mode), paths.mode_source)]
    if paths.cloud and paths.server is not None:
        url, account, schema = paths.server[:3]
        shown = mask(url.value) if url.value else None
        rows += [
            BackendInfo("database_url", shown, url.source),
            BackendInfo("account", account.value, account.source),
            BackendInfo("schema", schema.value, schema.source),
        ]
        read = paths.server.read_url
        if read.value:  # a read replica: shown only when one is set
            rows.append(BackendInfo("read_url", mask(read.value), read.source))
    return rows


class LocationInfo(NamedTuple):
    """One row of `kaja config paths`."""

    name: str
    path: Path
    source: str
    kind: Kind
    exists: bool
    size: int | None  # bytes; a folder's is everything below it
    files: int | None  # a folder's file count

    def to_json(self) -> dict:
        return {"path": str(self.path), "source": self.source, "kind": self.kind,
                "exists": self.exists, "size": self.size,
                **({"files": self.files} if self.kind == "dir" else {})}  # fmt: skip


def _size(path: Path, kind: Kind) -> tuple[int | None, int | None]:
    """(bytes, files below) of a location, looked at without walking what is
    not the store's: a folder where a file should be (`--db /`), and the
    home folder or one above it (`--state-dir ~`), are not walked at all."""
    from kaja_cli.core.engine.fs import is_home_or_above, tree_size

    if path.is_dir() and (kind == "file" or is_home_or_above(path)):
        return None, None
    size, count = tree_size(path)
    return size, (count if kind == "dir" else None)


def inspect(paths: Paths) -> list[LocationInfo]:
    """Every location with whether it exists and its size; reads, never creates."""
    rows = []
    for name, loc, kind in paths.locations():
        exists = loc.path.exists() or loc.path.is_symlink()
        size = files = None
        if exists:
            size, files = _size(loc.path, kind)
        rows.append(LocationInfo(name, loc.path, loc.source, kind, exists, size, files))
    for spec in DATABASES.values():  # SPEC §2's last row: the artifacts, in the shared file
        if paths.cloud:
            break  # the server holds the tables
        if spec.host is not None and paths.located(spec.name) is None:
            host = paths.file_of(spec.name)
            where = f"tables in the {host.spec.label}"
            rows.append(LocationInfo(spec.location, host.path, where, "file", host.path.exists(),
                                     None, None))  # fmt: skip
    return rows
