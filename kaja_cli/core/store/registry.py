"""The databases kaja knows (SPEC §2, §4), in one registry.

`paths` (where each one is), `schema` (its tables), `doctor` (what it checks),
`wipe` (what it deletes) and `kaja config paths` all read this table instead
of keeping names of their own. Each entry says:

- `name`: what kaja calls it (`integrity.cache`, `--check schema.auth`);
- `label` (how `config paths` and doctor show it) and `noun` (how a sentence
  names the file: "the artifacts file");
- `location`: its key in `config paths --json` and doctor's `paths.<key>`;
- where it lives by default (`file_name`, `placement`) and what moves it
  (`moved_by`: a flag, an environment variable, a settings key);
- `host`: a database whose tables live in another's file unless a setting
  gives it one of its own (the artifacts, in the shared file);
- what it holds: its tables (`schema.TABLES_OF[name]`, `schema.tables_of`),
  owners' data (`wipe --owner` erases it), the search index, a cache kaja
  may delete;
- `telltales`: tables *with their columns* that prove a file is this
  database (`recognise`, below: kaja writes, converts, indexes, chmods and
  deletes nothing that isn't Kaja's, `guard`). A `DatabaseFile` admits a
  connection the opener would write to (`admit`: the engine asks, knowing
  nothing of Kaja);
- `engines`: what may hold it.

The registry is logical. Where the tables are is resolved with the paths
(`Paths.databases()` → `DatabaseFile`): a file, its source, which registry
entries it holds, and its engine. Locally every file is SQLite; in cloud mode
the shared database (`engines` says PostgreSQL may hold it) keeps its
conversation and ledger tables in a schema on the server (`store/server`),
and the other entries stay local.

Imports nothing heavy: every command reads it at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.errors import Refused

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path


class Engine(StrEnum):
    """What holds a database's tables."""

    SQLITE = "sqlite"
    POSTGRES = "postgresql"  # cloud mode (store/server)


class Database(StrEnum):
    """Every database kaja administers, by the name checks and options use."""

    SHARED = "shared"
    ARTIFACTS = "artifacts"
    CACHE = "cache"
    STATS = "stats"
    AUTH = "auth"


class Placement(StrEnum):
    """Where a database's file is by default."""

    SETTING = "setting"  # where a flag, env var or settings key says; else the default
    STATE_DIR = "state dir"  # always `file_name` in the state dir ("follows the state dir")


class MovedBy(NamedTuple):
    """What points a database elsewhere, strongest first."""

    flag: str | None = None  # "--db": relative to the current folder
    env: str | None = None  # "KAJA_DB_PATH": relative to the state dir
    setting: tuple[str, str] | None = None  # ("memory", "dbPath"): relative to the state dir

    def names(self) -> list[str]:
        """As a person types them: ["--db", "KAJA_DB_PATH", "[memory] dbPath"]."""
        setting = f"[{self.setting[0]}] {self.setting[1]}" if self.setting else None
        return [n for n in (self.flag, self.env, setting) if n]


class DatabaseSpec(NamedTuple):
    """One database kaja knows (see the module docstring)."""

    name: Database
    label: str
    noun: str
    location: str
    file_name: str | None  # None: no file of its own by default (it lives in its host)
    placement: Placement
    moved_by: MovedBy = MovedBy()
    host: Database | None = None
    owners_data: bool = False  # rows of owners (sessions, notes…): `wipe --owner` erases them
    search_index: bool = False  # holds the search index and the one-off schema steps' record
    disposable: bool = False  # a cache: deleting it loses nothing
    telltales: tuple[Telltale, ...] = ()  # any one of them proves a file is this database
    engines: tuple[Engine, ...] = (Engine.SQLITE,)

    @property
    def side(self) -> bool:
        """A side database (SPEC §2): a file of its own that follows the state dir."""
        return self.placement is Placement.STATE_DIR


# A telltale: tables that, each with at least the columns named, prove a file
# is one of kaja's databases. A name alone proves nothing (`notes`, `runs` or
# `sessions` are common in other programs' files, `messages(content)` too):
# the columns are what the agent writes and no one else would, camelCase
# included. Few columns per table, so a file an older or newer agent wrote
# (columns missing or added) is still recognised.
Telltale = tuple[tuple[str, frozenset[str]], ...]


def _telltale(*tables: str) -> Telltale:
    """ "table: col col" specs → a telltale (every table, with those columns)."""
    out = []
    for spec in tables:
        name, _, cols = spec.partition(":")
        out.append((name.strip(), frozenset(cols.split())))
    return tuple(out)


_SHARED_TELLTALES = (
    _telltale("sessions: id", "messages: sessionId role"),
    _telltale(
        "runs: agent source started_at status", "calls: model prompt_tokens completion_tokens"
    ),
    _telltale("session_summaries: sessionId summaryFrom"),
    _telltale("session_events: sessionId seq payload"),
    _telltale("tool_calls: messageId callId resultMessageId"),
    _telltale("model_calls: sessionId kind promptTokens"),
    _telltale("dataset_versions: topic owner version completedAt"),
    _telltale("kaja_migrations: source migrated_at"),
    _telltale("conversation_threads: resource_id thread_id"),
    _telltale("experience_recipes: task steps prompt_embedding"),
    _telltale("sync_outbox: seq tbl key op"),
)

DATABASES: dict[Database, DatabaseSpec] = {
    spec.name: spec
    for spec in (
        DatabaseSpec(
            Database.SHARED, "shared file", "shared file", "shared_db", "kaja.db",
            Placement.SETTING, MovedBy("--db", "KAJA_DB_PATH", ("memory", "dbPath")),
            owners_data=True, search_index=True, telltales=_SHARED_TELLTALES,
            engines=(Engine.SQLITE, Engine.POSTGRES),
        ),
        DatabaseSpec(
            Database.ARTIFACTS, "artifacts", "artifacts file", "artifacts_db", None,
            Placement.SETTING, MovedBy(env="KAJA_ARTIFACTS_DB", setting=("memory", "artifactsPath")),
            host=Database.SHARED, telltales=(_telltale("artifacts: id kind source fingerprint"),),
        ),
        DatabaseSpec(Database.CACHE, "cache.db", "cache.db", "cache_db", "cache.db",
                     Placement.STATE_DIR, disposable=True,
                     telltales=(_telltale("shared_cache: namespace key value expires_at"),)),
        DatabaseSpec(Database.STATS, "db-stats.db", "db-stats.db", "stats_db", "db-stats.db",
                     Placement.STATE_DIR,
                     telltales=(_telltale("db_query_stats: bucket pid db sql"),
                                _telltale("db_slow_queries: sql duration_ms"))),
        DatabaseSpec(Database.AUTH, "web-auth.db", "web-auth.db", "auth_db", "web-auth.db",
                     Placement.STATE_DIR,
                     telltales=(_telltale("web_users: username password_hash salt"),
                                _telltale("web_sessions: token_hash user_id expires_at"))),
    )
}  # fmt: skip

# Files the agent once kept per feature, imported into the shared file and
# then left in the state dir as a rollback copy (the seed's legacy files).
LEGACY_FILES = (
    "usage.db", "experience.db", "background_tasks.db", "schedules.db", "triggers.db",
    "artifacts.db",
)  # fmt: skip


class DatabaseFile(NamedTuple):
    """A database as resolved (`Paths.databases()`): where its tables are."""

    name: Database
    path: Path
    source: str  # where the path came from: "default", "env KAJA_DB_PATH", …
    holds: tuple[Database, ...]  # its own tables' database first, then those it hosts
    engine: Engine = Engine.SQLITE

    @property
    def spec(self) -> DatabaseSpec:
        return DATABASES[self.name]

    @property
    def specs(self) -> list[DatabaseSpec]:
        """Every registry entry whose tables this file holds."""
        return [DATABASES[n] for n in self.holds]

    @property
    def search_index(self) -> bool:
        return any(spec.search_index for spec in self.specs)

    def admit(self, conn: sqlite3.Connection, path: Path) -> Verdict:
        """What the opener asks before it writes (`db.open_write`): `recognise`,
        refusing (exit 5) a database that is not this one."""
        return require_kajas(conn, path, self)


# --- is this database Kaja's? ------------------------------------------------------------
# kaja writes, converts, indexes, chmods and deletes only a database that is
# recognisably Kaja's (SPEC §3, `guard`): by a telltale of the registry.
MAX_NAMED = 5  # tables named in a refusal


class Verdict(NamedTuple):
    """What a database's tables say about whose it is."""

    tables: tuple[str, ...]  # its tables, sqlite_* left out
    kajas: bool  # recognisably Kaja's (or no table at all)

    @property
    def empty(self) -> bool:
        return not self.tables

    def named(self) -> str:
        more = f", … ({len(self.tables)} in all)" if len(self.tables) > MAX_NAMED else ""
        return ", ".join(self.tables[:MAX_NAMED]) + more


def recognise(conn: sqlite3.Connection, file: DatabaseFile) -> Verdict:
    """Whether the database on `conn` is the one `file` names, by its tables and
    columns: a telltale of any registry entry it holds (see the registry)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%'"
        " ESCAPE '\\' ORDER BY name"
    ).fetchall()
    tables = tuple(str(name) for name, _ in rows)
    if not tables:
        return Verdict(tables, True)
    # Virtual tables are left out: asking for the columns of one whose module
    # this SQLite lacks is an error, and none of them is a telltale.
    ordinary = [
        name for name, sql in rows if not str(sql or "").upper().startswith("CREATE VIRTUAL")
    ]
    columns: dict[str, set[str]] = {}
    for table in ordinary:
        for row in conn.execute("SELECT name FROM pragma_table_info(?)", (table,)):
            columns.setdefault(str(table), set()).add(str(row[0]))
    return Verdict(tables, telltales_match(columns, file.specs))


def telltales_match(columns: Mapping[str, Iterable[str]], specs: Iterable[DatabaseSpec]) -> bool:
    """Whether tables with these columns hold a telltale of any of `specs`: the
    test of whose a database is, for a file here and a schema on a server alike."""
    have = {name: set(cols) for name, cols in columns.items()}
    return any(
        all(name in have and need <= have[name] for name, need in telltale)
        for spec in specs
        for telltale in spec.telltales
    )


def require_kajas(conn: sqlite3.Connection, path: Path, file: DatabaseFile) -> Verdict:
    """`recognise`, refusing (exit 5) a database that is not Kaja's."""
    verdict = recognise(conn, file)
    if not verdict.kajas:
        raise not_kajas(path, verdict, file)
    return verdict


def not_kajas(path: Path, verdict: Verdict, file: DatabaseFile) -> Refused:
    names = file.spec.moved_by.names()
    hint = (
        f"kaja changes nothing in it; check {', '.join(names)}"
        if names
        else "kaja changes nothing in it; move it aside and Kaja makes its own"
    )
    return Refused(
        f"{path} is a SQLite database, but not Kaja's {file.spec.noun} (its tables: "
        f"{verdict.named()})",
        hint=hint,
    )
