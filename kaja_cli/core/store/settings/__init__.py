"""settings.toml: reading it, checking it against the known keys, and saying
on which line a key is set.

Reading uses the stdlib `tomllib` (cheap to import: every TAB press starts
kaja). tomlkit is imported only to locate a parse error and, in
`settings_write`, to change the file with its comments intact. The keys kaja
knows, with their types and defaults, are in `settings_keys`.

Only a regular file is read: a FIFO or a device at the settings path is an
error, never a read that blocks.
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from kaja_cli.core.store.settings import keys as settings_keys
from kaja_cli.errors import SettingsError

# Every key kaja knows, by the table that holds it ("memory.qdrant": {"url",
# "collection"}); doctor warns about any other key.
KNOWN_KEYS: dict[str, frozenset[str]] = {}
for _key in settings_keys.KEYS.values():
    KNOWN_KEYS[_key.table] = KNOWN_KEYS.get(_key.table, frozenset()) | {_key.leaf}
del _key


class Mode(StrEnum):
    """`[memory] mode`: where the conversation tables live."""

    LOCAL = "local"  # the SQLite files of SPEC §2
    CLOUD = "cloud"  # a server's PostgreSQL (SPEC §10): no local conversation database


MODES = tuple(Mode)


class Settings(NamedTuple):  # a NamedTuple: cheaper than a dataclass at start-up
    path: Path
    exists: bool
    data: dict[str, Any] = {}  # noqa: RUF012 - never mutated
    text: str = ""

    def get(self, table: str, key: str) -> Any:
        return self.lookup((*table.split("."), key))

    def lookup(self, parts: tuple[str, ...]) -> Any:
        """The value at a key path (`("memory", "qdrant", "url")`), None if absent."""
        node: Any = self.data
        for part in parts:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node

    @property
    def mode(self) -> Mode:
        try:
            return Mode(str(self.get("memory", "mode") or Mode.LOCAL))
        except ValueError:  # a lenient read (doctor, `config show`) of a bad value
            return Mode.LOCAL

    def unknown_keys(self) -> list[str]:
        """Dotted names of keys kaja does not know, in file order; an unknown
        table is named once (`telegram`), not key by key."""
        return [settings_keys.dotted(p) for p in unknown_paths(self.data)]

    def problems(self) -> list[tuple[str, str]]:
        """(key, why) for every known key whose value kaja would reject."""
        out = []
        for key in settings_keys.KEYS.values():
            value = self.lookup(key.parts)
            if value is not None and (why := settings_keys.check(key, value)):
                out.append((key.name, why))
        return out

    def line_of(self, parts: tuple[str, ...]) -> int | None:
        return line_of(key_lines(self.text), parts) if self.exists else None


def unknown_paths(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, value in data.items():
        path = (*prefix, name)
        dotted = ".".join(path)
        if dotted in settings_keys.KEYS:
            continue  # a known key (a wrong type is a problem, not an unknown key)
        if dotted in settings_keys.TABLES and isinstance(value, dict):
            out.extend(unknown_paths(value, path))
        else:
            out.append(path)
    return out


def leaf_paths(value: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The keys that hold values under `path`, each by its full path: what
    `config show` lists of an unknown table, so that each row is a key that
    `set`, `get` and `unset` name the same way, on the line that sets it.
    An empty table is itself."""
    if not isinstance(value, dict) or not value:
        return [path]
    return [leaf for name, v in value.items() for leaf in leaf_paths(v, (*path, name))]


BOM = "\ufeff"  # a UTF-8 byte-order mark: some Windows editors start every file with one


def read_text(path: Path) -> str | None:
    """The text of settings.toml; None if there is none. Opens only a regular
    file (`fs.read_regular`: a FIFO would block, a device has no business here).
    A byte-order mark at the start is dropped: TOML has no place for one
    (tomllib reads it as an "Empty key"), and a change writes the file without it."""
    from kaja_cli.core.engine import fs

    try:
        raw = fs.read_regular(path)
    except fs.NotRegularFile as e:
        raise SettingsError(f"{path}: is {e.what}, not a regular file") from None
    except OSError as e:
        raise SettingsError(f"{path}: cannot read settings: {e.strerror}") from None
    if raw is None:
        return None
    try:
        return raw.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as e:
        raise SettingsError(f"{path}: not UTF-8 text (byte {e.start})") from None


def load(path: Path, *, validate: bool = True) -> Settings:
    """Read settings.toml; a missing file is empty settings, a bad one an error.

    With `validate`, a bad value of a key that locates the data
    (`settings_keys.LOCATING`) is an error too, with its line; other bad
    values are for `Settings.problems()` (doctor, `config show`)."""
    text = read_text(path)
    if text is None:
        return Settings(path=path, exists=False)
    settings = Settings(path=path, exists=True, data=parse(path, text), text=text)
    problems = (
        [p for p in settings.problems() if p[0] in settings_keys.LOCATING] if validate else []
    )
    if problems:
        name, why = problems[0]
        line = settings.line_of(settings_keys.KEYS[name].parts)
        raise SettingsError(
            f"{path}{f':{line}' if line else ''}: {why}", hint="fix it with `kaja config edit`"
        )
    return settings


def parse(path: Path, text: str) -> dict[str, Any]:
    """The TOML document in `text`; an error names the line and column."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col, reason = _locate(text, str(e))
        raise SettingsError(
            f"{path}:{line}:{col}: invalid TOML: {reason}",
            hint="fix that line or move the file aside",
        ) from None
    except RecursionError:  # tomllib recurses once per level of nesting
        data = None
    if data is None or _depth(data) > MAX_DEPTH:
        raise SettingsError(
            f"{path}: values nested more than {MAX_DEPTH} levels deep",
            hint="no setting of kaja's is; fix the file or move it aside",
        )
    return data


# No setting nests deeper than a few tables; the code that walks values
# (checks, masking, edits) must never meet a depth that exhausts the stack.
MAX_DEPTH = 32


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in `value` (a walk without recursion)."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        if isinstance(node, dict):
            todo.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            todo.extend((v, level + 1) for v in node)
    return deepest


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


def expand(value: str) -> Path:
    return Path(os.path.expanduser(value))


# --- where each key is set ---------------------------------------------------------------------
# `kaja config show` says "settings file line N". tomllib keeps no positions
# and tomlkit is slow to import, so this small scanner reads a file that
# tomllib has already accepted: table headers, keys, and values skipped over
# (strings, multi-line strings and arrays may span lines).
_BARE = r"[A-Za-z0-9_-]+"  # patterns compile on first use, not at start-up
_DATE = r"\d{4}-\d{2}-\d{2}"
_TIME = r" \d{2}:"


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line (1-based) of every table header and key in a valid TOML text."""
    found: dict[tuple[str, ...], int] = {}
    scan = _Scanner(text)
    try:
        scan.document(found)
    except (IndexError, ValueError):
        pass  # never fail a read over a line number: keep what was found
    return found


def line_ends(text: str) -> dict[tuple[str, ...], int]:
    """Where the line that ends each key's value ends, in a valid TOML text: the
    offset just past its newline (or the text's end). A new key written there
    follows that key, its comment and any multi-line value (`config set`)."""
    ends: dict[tuple[str, ...], int] = {}
    scan = _Scanner(text)
    try:
        scan.document({}, ends)
    except (IndexError, ValueError):
        pass
    return ends


def line_of(lines: dict[tuple[str, ...], int], parts: tuple[str, ...]) -> int | None:
    """The line that sets `parts`, or that of its nearest enclosing table or
    inline table (`memory = { mode = "cloud" }` sets memory.mode on its line)."""
    for n in range(len(parts), 0, -1):
        if parts[:n] in lines:
            return lines[parts[:n]]
    return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.line = 1

    def document(
        self, found: dict[tuple[str, ...], int], ends: dict[tuple[str, ...], int] | None = None
    ) -> None:
        table: tuple[str, ...] = ()
        while self.blank_and_comments():
            if self.s[self.i] == "[":
                double = self.s.startswith("[[", self.i)
                self.i += 2 if double else 1
                table = self.key()
                self.i += 2 if double else 1
                found.setdefault(table, self.line)
            else:
                line, parts = self.line, self.key()
                found.setdefault((*table, *parts), line)
                self.spaces()
                self.i += 1  # "="
                self.value()
                if ends is not None:
                    end = self.s.find("\n", self.i)
                    ends.setdefault((*table, *parts), len(self.s) if end < 0 else end + 1)

    def blank_and_comments(self) -> bool:
        """Skip whitespace, newlines and comments; False at the end of the text."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\n":
                self.line += 1
            elif c == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
                continue
            elif c not in " \t\r":
                return True
            self.i += 1
        return False

    def spaces(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def key(self) -> tuple[str, ...]:
        parts = []
        while True:
            self.spaces()
            c = self.s[self.i]
            if c in "\"'":
                start = self.i
                self.string()
                parts.append(_unquote(self.s[start : self.i]))
            else:
                m = re.compile(_BARE).match(self.s, self.i)
                if not m:
                    raise ValueError(self.i)
                parts.append(m.group())
                self.i = m.end()
            self.spaces()
            if self.s[self.i] != ".":
                return tuple(parts)
            self.i += 1

    def string(self) -> None:
        q = self.s[self.i]
        if self.s.startswith(q * 3, self.i):
            end = self.s.index(q * 3, self.i + 3)
            while q == '"' and _escaped(self.s, end):
                end = self.s.index(q * 3, end + 1)
            end += 3
            while end < len(self.s) and self.s[end] == q:  # """a""""": quotes end the string
                end += 1
        else:
            end = self.s.index(q, self.i + 1)
            while q == '"' and _escaped(self.s, end):
                end = self.s.index(q, end + 1)
            end += 1
        self.line += self.s.count("\n", self.i, end)
        self.i = end

    def value(self) -> None:
        self.spaces()
        c = self.s[self.i]
        if c in "\"'":
            self.string()
        elif c in "[{":
            self.bracketed()
        else:
            start = self.i
            while self.i < len(self.s) and self.s[self.i] not in " \t\r\n#,]}":
                self.i += 1
            date = re.compile(_DATE).fullmatch(self.s, start, self.i)
            if date and re.compile(_TIME).match(self.s, self.i):
                self.i += 1  # "1979-05-27 07:32:00": a space may separate date and time
                self.value()

    def bracketed(self) -> None:
        depth = 0
        while True:
            c = self.s[self.i]
            if c in "\"'":
                self.string()
                continue
            if c == "#":
                self.i = self.s.index("\n", self.i)
                continue
            if c == "\n":
                self.line += 1
            elif c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1


def _escaped(s: str, quote_at: int) -> bool:
    """True when the quote at `quote_at` follows an odd number of backslashes."""
    n = 0
    while s[quote_at - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def _unquote(token: str) -> str:
    if token.startswith("'"):
        return token[1:-1]
    import tomllib

    return next(iter(tomllib.loads(f"{token} = 0")))
