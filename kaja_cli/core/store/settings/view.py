"""What `kaja config show` and `config get` report: every known setting's
effective value and where it came from, and the keys in the file kaja does
not know.

Precedence is the one `paths` applies, strongest first: a root flag (`--db`),
an environment variable, settings.toml, the default. Path keys report the path
they resolve to (a relative `dbPath` is relative to the state dir), computed
by `paths.resolve` itself so the two can never disagree.

Secrets never leave this module unmasked: every value here has gone through
`settings_keys.public`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kaja_cli.core.store import settings as settings_mod
from kaja_cli.core.store.paths import Located, Overrides, Paths, resolve
from kaja_cli.core.store.registry import Database
from kaja_cli.core.store.settings import keys as settings_keys
from kaja_cli.core.store.settings.keys import KEYS, Key
from kaja_cli.errors import Failed, NotFound, SettingsError, UsageError

DEFAULT, NOT_SET = "default", "not set"


class Effective(NamedTuple):
    key: Key
    value: Any  # masked if secret; None when not set and without a default
    source: str  # "default", "settings file line 3", "env KAJA_DB_PATH", "flag --db", "not set"
    line: int | None  # where settings.toml sets it (even when something overrides it)
    written: Any  # the value in settings.toml (masked), None if the file does not set it
    problem: str | None  # why kaja would reject the value in effect


class Unknown(NamedTuple):
    name: str
    line: int | None
    value: Any  # masked where it looks secret
    suggestion: str | None


class View(NamedTuple):
    settings_file: Located
    exists: bool
    settings: list[Effective]
    unknown: list[Unknown]

    def to_json(self) -> dict:
        """`kaja config show --json`: every setting in effect, and the unknown keys."""
        return {
            "settings_file": {
                "path": str(self.settings_file.path),
                "source": self.settings_file.source,
                "exists": self.exists,
            },
            "settings": {
                e.key.name: {
                    "value": e.value,
                    "source": e.source,
                    "line": e.line,
                    "written": e.written,
                    "default": e.key.default,
                    "env": e.key.env,
                    "flag": e.key.flag,
                    "type": e.key.kind,
                    "allowed": e.key.allowed(),
                    "secret": e.key.secret,
                    "description": e.key.description,
                    "problem": e.problem,
                }
                for e in self.settings
            },
            "unknown": [
                {"key": u.name, "line": u.line, "value": u.value, "did_you_mean": u.suggestion}
                for u in self.unknown
            ],
        }


def locate(
    overrides: Overrides | None,
    environ: Mapping[str, str] | None = None,
    *,
    tolerant: bool = False,
) -> Paths:
    """The resolved paths with settings.toml read but not judged: a bad value
    is reported next to its key, not as a failure of the whole command.
    `tolerant` goes on with empty settings when the file can't be read at
    all (`config edit` is how a person fixes such a file)."""

    def load(path: Path) -> settings_mod.Settings:
        try:
            return settings_mod.load(path, validate=False)
        except SettingsError:
            if not tolerant:
                raise
            return settings_mod.Settings(path=path, exists=True)

    return resolve(overrides, environ, load_settings=load)


def view(overrides: Overrides | None, environ: Mapping[str, str] | None = None) -> View:
    env = os.environ if environ is None else environ
    paths = locate(overrides, env)
    settings = paths.settings
    lines = settings_mod.key_lines(settings.text) if settings.exists else {}
    effective = [_effective(key, paths, overrides, env, lines) for key in KEYS.values()]
    unknown = [
        Unknown(
            settings_keys.dotted(parts),
            settings_mod.line_of(lines, parts),
            settings_keys.public(None, settings.lookup(parts), ".".join(parts)),
            settings_keys.suggest(".".join(parts)),
        )
        for table in settings_mod.unknown_paths(settings.data)
        for parts in settings_mod.leaf_paths(settings.lookup(table), table)
    ]
    return View(paths.settings_file, settings.exists, effective, unknown)


def get(
    name: str, overrides: Overrides | None, environ: Mapping[str, str] | None = None
) -> Effective:
    """One known key's effective value: UsageError (exit 2) for an unknown
    key, NotFound (exit 3) when unset without a default, Failed (exit 1) when
    the value in effect is one kaja would reject."""
    key = KEYS.get(name)
    if key is None:
        raise UsageError(settings_keys.unknown_key_message(name))
    env = os.environ if environ is None else environ
    paths = locate(overrides, env)
    found = _effective(key, paths, overrides, env, None)  # no line numbers: start-up
    if found.problem:
        found = _effective(key, paths, overrides, env, settings_mod.key_lines(paths.settings.text))
        raise Failed(f"{_where(paths, found)}: {found.problem}")
    if found.value is None:
        raise NotFound(f"{name} is not set and has no default")
    return found


def _where(paths: Paths, found: Effective) -> str:
    if found.source.startswith("settings file"):
        return f"{paths.settings_file.path}:{found.line}"
    return found.source


def _effective(
    key: Key,
    paths: Paths,
    overrides: Overrides | None,
    env: Mapping[str, str],
    lines: dict[tuple[str, ...], int] | None,
) -> Effective:
    """`lines` None: don't look for line numbers (`config get`, on the TAB path)."""
    settings = paths.settings
    written = settings.lookup(key.parts)
    line = None
    if written is not None and lines is not None:
        line = settings_mod.line_of(lines, key.parts)
    flag_value = _flag(key, overrides)
    env_value = _env(key, env)
    if flag_value is not None:
        source, value = f"flag {key.flag}", flag_value
    elif env_value is not None:
        source, value = f"env {key.env}", env_value
    elif written is not None:
        source, value = "settings file" + (f" line {line}" if line else ""), written
    elif key.default is not None:
        source, value = DEFAULT, key.default
    else:
        source, value = NOT_SET, None
    problem = settings_keys.check(key, value) if value is not None and source != DEFAULT else None
    if problem and source.startswith(("env", "flag")):
        problem = f"{source}: {problem}"
    if key.kind == settings_keys.PATH and not problem:
        value = _resolved_path(key, paths, value)
    return Effective(
        key,
        settings_keys.public(key, value),
        source,
        line,
        settings_keys.public(key, written),
        problem,
    )


def _flag(key: Key, overrides: Overrides | None) -> Any:
    if overrides is None:
        return None
    if key.flag == "--db" and overrides.db is not None:
        return str(overrides.db)
    if key.flag == "--database-url" and overrides.database_url is not None:
        # The flag is the server, and cloud mode with it.
        return "cloud" if key.name == "memory.mode" else overrides.database_url
    return None


def _env(key: Key, env: Mapping[str, str]) -> str | None:
    if key.env is None:
        return None
    value = env.get(key.env, "")
    return value if value.strip() else None  # an empty variable is not set (as in `paths`)


def _resolved_path(key: Key, paths: Paths, value: Any) -> Any:
    """The path a path key resolves to, as `paths` resolved it."""
    if key.name == "memory.dbPath":
        return str(paths.shared_db.path)
    if key.name == "memory.artifactsPath":
        split = paths.located(Database.ARTIFACTS)
        return None if split is None else str(split.path)
    return value if value is None else str(Path(value))
