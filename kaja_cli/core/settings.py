"""settings.toml: reading it, and the keys kaja knows.

Reading uses the stdlib `tomllib` (cheap to import: every TAB press starts
kaja); tomlkit is imported only to locate a parse error, and later to edit the
file with its comments intact.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from kaja_cli.errors import SettingsError

# Every key kaja reads; doctor warns about any other key.
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "memory": frozenset({"mode", "dbPath", "artifactsPath"}),
    "usage": frozenset({"postgres_url"}),
}
MODES = ("local", "cloud")


class Settings(NamedTuple):  # a NamedTuple: cheaper than a dataclass at start-up
    path: Path
    exists: bool
    data: dict[str, Any] = {}  # noqa: RUF012 - never mutated

    def get(self, table: str, key: str) -> Any:
        section = self.data.get(table)
        return section.get(key) if isinstance(section, dict) else None

    @property
    def mode(self) -> str:
        return str(self.get("memory", "mode") or "local")

    def unknown_keys(self) -> list[str]:
        """Dotted names of keys kaja does not know, in file order."""
        unknown = []
        for table, value in self.data.items():
            known = KNOWN_KEYS.get(table)
            if known is None:
                unknown.append(table)
            elif isinstance(value, dict):
                unknown.extend(f"{table}.{k}" for k in value if k not in known)
            else:
                unknown.append(table)
        return unknown


def load(path: Path) -> Settings:
    """Read settings.toml; a missing file is empty settings, a bad one an error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Settings(path=path, exists=False)
    except IsADirectoryError:
        raise SettingsError(f"{path}: is a folder, not a settings file") from None
    except OSError as e:
        raise SettingsError(f"{path}: cannot read settings: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SettingsError(f"{path}: not UTF-8 text (byte {e.start})") from None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col, reason = _locate(text, str(e))
        raise SettingsError(
            f"{path}:{line}:{col}: invalid TOML: {reason}",
            hint="fix that line or move the file aside",
        ) from None
    settings = Settings(path=path, exists=True, data=data)
    _validate(settings)
    return settings


def _locate(text: str, message: str) -> tuple[int, int, str]:
    """Line, column and reason of a parse error (tomlkit's ParseError carries them)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        tomlkit.parse(text)
    except ParseError as e:
        reason = re.sub(r" at line \d+ col \d+$", "", str(e))
        return e.line, e.col, reason
    except Exception:  # tomlkit can fail differently from tomllib
        pass
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
    return (int(m.group(1)), int(m.group(2)), reason) if m else (1, 1, reason)


def _validate(settings: Settings) -> None:
    for key in ("dbPath", "artifactsPath"):
        value = settings.get("memory", key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise SettingsError(f"{settings.path}: [memory] {key} must be a non-empty string")
    url = settings.get("usage", "postgres_url")
    if url is not None and (not isinstance(url, str) or not url.strip()):
        raise SettingsError(f"{settings.path}: [usage] postgres_url must be a non-empty string")
    mode = settings.get("memory", "mode")
    if mode is not None and mode not in MODES:
        raise SettingsError(
            f"{settings.path}: [memory] mode must be one of {', '.join(MODES)}, not {mode!r}"
        )


def expand(value: str) -> Path:
    return Path(os.path.expanduser(value))
