"""The settings kaja knows: one schema that reading, `kaja config`, doctor,
completion, the edit template and the manual's tables all follow.

Each key has a type, its allowed values or range, a default, the environment
variable (and flag) that overrides it, whether it holds a secret, and a
one-line description. Keys are dotted paths into settings.toml:
`logging.database.slow_ms` is `slow_ms` in the `[logging.database]` table.

This module is imported on every start-up (reading settings.toml validates
against it), so it is data and small functions; difflib loads only to
suggest a spelling.
"""

from __future__ import annotations

import re
from typing import Any, Literal

# The kinds of value (plain strings, not an Enum: this module is on the
# start-up path of every command, and an Enum class costs ~0.3 ms to build).
Kind = Literal["bool", "int", "choice", "string", "path", "url"]
BOOL: Kind = "bool"
INT: Kind = "int"
CHOICE: Kind = "choice"
STRING: Kind = "string"
PATH: Kind = "path"
URL: Kind = "url"


class Key:
    """One known key. A plain class, not a NamedTuple: building a NamedTuple
    class costs ~0.3 ms, and this module loads on every start-up."""

    __slots__ = ("choices", "default", "description", "env", "flag", "kind", "maximum",
                 "minimum", "name", "secret")  # fmt: skip

    def __init__(
        self,
        name: str,  # dotted: "memory.qdrant.url"
        kind: Kind,
        description: str,
        default: Any = None,  # None: no default (`config get` exits 3 when unset)
        choices: tuple[str, ...] = (),  # CHOICE: the allowed values; URL: the allowed schemes
        minimum: int | None = None,  # INT range, inclusive
        maximum: int | None = None,
        env: str | None = None,  # the environment variable that overrides the file
        flag: str | None = None,  # the root flag that overrides both
        secret: bool = False,  # printed masked (a URL keeps all but its password)
    ) -> None:
        self.name, self.kind, self.description, self.default = name, kind, description, default
        self.choices, self.minimum, self.maximum = choices, minimum, maximum
        self.env, self.flag, self.secret = env, flag, secret

    def __repr__(self) -> str:
        return f"Key({self.name!r})"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))

    @property
    def table(self) -> str:
        return self.name.rpartition(".")[0]

    @property
    def leaf(self) -> str:
        return self.name.rpartition(".")[2]

    def allowed(self) -> str:
        """What the key accepts, in words: "local or cloud", "a whole number from 0 to 60000"."""
        if self.kind == BOOL:
            return "true or false"
        if self.kind == CHOICE:
            return " or ".join(self.choices) if len(self.choices) == 2 else ", ".join(self.choices)
        if self.kind == INT:
            return f"a whole number from {self.minimum} to {self.maximum}"
        if self.kind == URL:
            return "a URL starting with " + " or ".join(f"{s}://" for s in self.choices)
        if self.kind == PATH:
            return "a file path"
        if self.name == "memory.databaseSchema":
            return "a PostgreSQL schema name (letters, digits, _; at most 63)"
        return "a non-empty string"


PG_SCHEMES = ("postgresql", "postgres")
# Snowball's stemmers (PyStemmer's `Stemmer.algorithms()`, a test keeps them equal).
SNOWBALL = (
    "arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch", "dutch_porter",
    "english", "esperanto", "estonian", "finnish", "french", "german", "greek", "hindi",
    "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali", "norwegian", "persian",
    "polish", "porter", "portuguese", "romanian", "russian", "serbian", "sesotho", "spanish",
    "swedish", "tamil", "turkish", "yiddish",
)  # fmt: skip

KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("memory.dbPath", PATH,
            "The shared file; a relative path is relative to the state dir, ~ expands.",
            default="kaja.db", env="KAJA_DB_PATH", flag="--db"),
        Key("memory.mode", CHOICE,
            "local: conversations in SQLite on this machine; cloud: in a server's PostgreSQL.",
            default="local", choices=("local", "cloud"), flag="--database-url"),
        Key("memory.artifactsPath", PATH,
            "A separate file for the artifacts tables (default: they live in the shared file).",
            env="KAJA_ARTIFACTS_DB"),
        Key("memory.provider", CHOICE,
            "Semantic recall: qdrant embeds messages into Qdrant; local keeps no vectors.",
            default="local", choices=("local", "qdrant")),
        Key("memory.databaseUrl", URL,
            "Cloud mode: the PostgreSQL server holding the conversations.",
            choices=PG_SCHEMES, env="KAJA_DATABASE_URL", flag="--database-url", secret=True),
        Key("memory.readUrl", URL,
            "Cloud mode: a read replica of that server; read-only commands read from it,"
            " every write goes to memory.databaseUrl.",
            choices=PG_SCHEMES, env="KAJA_READ_URL", secret=True),
        Key("memory.account", STRING,
            "Cloud mode: your account on that server; your rows are kept under it.",
            env="KAJA_ACCOUNT"),
        Key("memory.databaseSchema", STRING,
            "Cloud mode: the PostgreSQL schema holding Kaja's tables.",
            default="kaja"),
        Key("memory.statementTimeout", INT,
            "Cloud mode and ledger sync: seconds a statement may run on PostgreSQL before the"
            " server cancels it; kaja stops waiting for an answer 5 seconds after that.",
            default=60, minimum=1, maximum=86400),
        Key("memory.qdrant.url", URL,
            "The Qdrant server used when memory.provider is qdrant.",
            choices=("http", "https")),
        Key("memory.qdrant.path", PATH,
            "A Qdrant kept in a folder (qdrant-client's local mode) instead of a server at url."),
        Key("memory.qdrant.collection", STRING,
            "The Qdrant collection messages are embedded into.",
            default="andromeda_memory"),
        Key("usage.enabled", BOOL,
            "Record the usage ledger (runs, model calls, tool calls, logs).",
            default=True),
        Key("usage.postgres_url", URL,
            "Share the usage ledger between machines through this PostgreSQL (ledger sync).",
            choices=PG_SCHEMES, env="USAGE_POSTGRES_URL", secret=True),
        Key("logging.retention_days", INT,
            "Days the ledger's structured logs are kept (unset: the agent's own default).",
            minimum=1, maximum=3650),
        Key("logging.database.enabled", BOOL,
            "Profile every query into db-stats.db.",
            default=True),
        Key("logging.database.slow_ms", INT,
            "Queries slower than this many milliseconds go to the slow-query log.",
            default=50, minimum=0, maximum=600000),
        Key("logging.database.retention_days", INT,
            "Days the query profile in db-stats.db is kept.",
            default=7, minimum=1, maximum=3650),
        Key("learning.experience.enabled", BOOL,
            "Learn reusable recipes and tool fixes from finished runs.",
            default=True),
        Key("search.language", CHOICE,
            "Plain searches also find a word's other forms (tomato, tomatoes) by this"
            " language's Snowball stemmer; none: only the words as typed.",
            default="english", choices=("none", *SNOWBALL)),
    )
}  # fmt: skip

# The keys that decide where Kaja's data is: a bad value there fails every
# command (acting on the wrong store would be worse). A bad value elsewhere
# (`slow_ms = "fast"`) concerns the agent, not where kaja looks: commands go
# on, doctor warns, `config get` of that key fails.
LOCATING: frozenset[str] = frozenset({
    "memory.dbPath", "memory.mode", "memory.artifactsPath", "memory.databaseUrl",
    "memory.readUrl", "memory.account", "memory.databaseSchema",
})  # fmt: skip

# Every table that holds known keys, and every prefix of one: `memory`,
# `memory.qdrant`, `logging`, `logging.database`, `learning`, …
TABLES: frozenset[str] = frozenset(
    ".".join(k.parts[:i]) for k in KEYS.values() for i in range(1, len(k.parts))
)

_SCHEMA_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,62}"  # patterns compile on first use (start-up)
_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True,
               "false": False, "no": False, "off": False, "0": False}  # fmt: skip


def check(key: Key, value: Any) -> str | None:
    """Why `value` is not acceptable for `key` ("must be local or cloud, not 'moon'"); None if it is."""
    if acceptable(key, value):
        return None
    return f"{key.name} must be {key.allowed()}, not {_quote(key, value)}"


def acceptable(key: Key, value: Any) -> bool:
    """Whether `value` is acceptable for `key` (`check`, without wording why not)."""
    if key.kind == BOOL:
        return isinstance(value, bool)
    if key.kind == INT:
        return (
            type(value) is int
            and (key.minimum is None or value >= key.minimum)
            and (key.maximum is None or value <= key.maximum)
        )
    if not isinstance(value, str) or not value.strip() or _has_control(value):
        return False
    if key.kind == CHOICE:
        return value in key.choices
    if key.kind == URL:
        scheme, sep, rest = value.partition("://")
        return bool(sep and rest) and scheme.lower() in key.choices
    if key.name == "memory.databaseSchema":
        return re.fullmatch(_SCHEMA_NAME, value) is not None
    return True


def _has_control(value: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in value)


def parse(key: Key, text: str) -> Any:
    """The value typed on a command line for `key`, converted to its TOML type.

    Raises ValueError with the reason (the allowed values or range)."""
    value: Any = text
    if key.kind == BOOL:
        value = _BOOL_WORDS.get(text.strip().lower(), text)
    elif key.kind == INT:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            value = text
    problem = check(key, value)
    if problem:
        raise ValueError(problem)
    return value


def parse_free(text: str) -> Any:
    """A value for a key kaja does not know (`set --force`): a TOML value if it
    reads as one (42, true, [1, 2], "quoted"), otherwise the text as a string."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, KeyError):
        return text


# --- secrets ------------------------------------------------------------------
def public(key: Key | None, value: Any, name: str = "") -> Any:
    """`value` with any secret in it masked (`core.masking`): what kaja may print.

    A known secret key shows its address with the password as ***; a key kaja
    does not know is masked whole when its name sounds secret (token,
    password, api_key…), and otherwise loses any password written in it (a
    URL's, a `password=` value's)."""
    from kaja_cli.core import masking

    if isinstance(value, dict):
        return {k: public(None, v, f"{name}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [public(None, v, name) for v in value]
    if not isinstance(value, str):
        return value
    if key is not None:
        if key.secret:
            return masking.mask(value)
        if key.kind == URL:  # any URL loses a password written into it
            return masking.mask(value) if masking.is_url(value) else masking.mask_text(value)
        return value
    if masking.secret_name(name.rpartition(".")[2]):
        return masking.MASK
    return masking.mask(value) if masking.is_url(value) else masking.mask_text(value)


def _quote(key: Key, value: Any) -> str:
    shown = public(key, value)
    return repr(shown) if isinstance(shown, str) else to_text(shown)


def toml_literal(value: Any) -> str:
    """A value spelt as in settings.toml: "cloud", true, 50."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_quote(value)
    if isinstance(value, int | float):
        return str(value)
    return to_text(value)


def to_text(value: Any) -> str:
    """A value as `config get` prints it: TOML's spelling for booleans, the rest as is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


# --- names --------------------------------------------------------------------
def suggest(name: str) -> str | None:
    """The known key (or table) `name` was probably meant to be, if any."""
    lowered = {k.lower(): k for k in (*KEYS, *TABLES)}
    if name.lower() in lowered:
        return lowered[name.lower()]
    import difflib

    close = difflib.get_close_matches(name, [*KEYS, *TABLES], n=1, cutoff=0.75)
    if not close:  # a misspelt leaf under the right table: "memory.dbpth"
        leaf = name.rpartition(".")[2]
        by_leaf = {k.leaf: k.name for k in KEYS.values()}
        near = difflib.get_close_matches(leaf, by_leaf, n=1, cutoff=0.75)
        close = [by_leaf[near[0]]] if near else []
    return close[0] if close else None


def unknown_key_message(name: str) -> str:
    hint = suggest(name)
    if name in TABLES:
        inside = ", ".join(k for k in KEYS if k.startswith(name + "."))
        return f"{name} is a table, not a key; its keys: {inside}"
    return f"unknown key {name!r}" + (f" (did you mean {hint}?)" if hint else "")


def dotted(parts: tuple[str, ...] | list[str]) -> str:
    """A key path as one dotted name; parts that are not bare keys are quoted."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else _toml_quote(p) for p in parts)


def _toml_quote(s: str) -> str:
    escaped = s.replace("\\", "\\\\").replace('"', '\\"')
    return (
        '"'
        + "".join(c if ord(c) >= 32 and ord(c) != 127 else f"\\u{ord(c):04x}" for c in escaped)
        + '"'
    )


def split(name: str) -> tuple[str, ...]:
    """A dotted name typed by a person into its parts (`memory.qdrant.url`;
    quoted parts, as in TOML, may hold dots: `telegram."bot.token"`)."""
    if '"' not in name and "'" not in name:
        return tuple(p.strip() for p in name.split("."))
    import tomllib

    try:
        data = tomllib.loads(f"{name} = 0")
    except tomllib.TOMLDecodeError:
        raise ValueError(f"not a key: {name!r}") from None
    parts: list[str] = []
    while isinstance(data, dict) and len(data) == 1:
        (k, data), = data.items()  # fmt: skip
        parts.append(k)
    return tuple(parts)
