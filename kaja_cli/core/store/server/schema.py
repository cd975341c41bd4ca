"""Kaja's schema on the server: what it holds, which version it is, and
bringing it up to date (SPEC §10).

The server holds the tables of `CLOUD_TABLES`, written from the same
description as the SQLite files (`store/schema.py`'s tables, rendered by
`ddl`; the local part renders them for SQLite): the conversation store, the
usage ledger that `kaja usage` reads, and kaja's archive marks
(`kaja_archived`, version 2: a schema of version 1 gains it when a writer
brings it up to date). The agent's other local state
(learning, services, sync bookkeeping, the side databases) stays local. In
kaja's schema (`kaja`, or `[memory] databaseSchema`) there are also:

- `kaja_schema`: one row per version applied (the migrations table). A schema
  with Kaja's tables but without it is not taken for Kaja's; one whose
  version is newer than this kaja's is read, never written;
- the search index: `messages.kaja_search` (a generated `tsvector` of the
  words SQLite's tokenizer makes, `tokenizer`) with a GIN index, and
  `messages.kaja_words` (how many words), so every writer's messages are
  indexed as they are written; `kaja_search_stats` (messages and words in
  all, kept by triggers) gives BM25 its averages without a scan;
  `kaja_search_terms` (every word of the index, kept by triggers) is the
  vocabulary stemming looks a word's other forms up in (`search.stems`);
- `json_or_text(text)`: a JSON column's value, parsed when it is valid JSON.

`apply()` runs in one transaction under an advisory lock: two kaja writers
meeting a new server make the schema once, and a failure leaves nothing.
Read commands never call it (`status()` only looks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.store import schema as core_schema
from kaja_cli.core.store.registry import DATABASES, Database, telltales_match
from kaja_cli.core.store.server import ddl, tokenizer
from kaja_cli.core.wording import plural
from kaja_cli.errors import Failed, Refused

if TYPE_CHECKING:
    from kaja_cli.core.engine.postgres import Connection, Target

# The server's tables: the conversation store, the ledger `kaja usage` reads,
# and kaja's own archive marks (`kaja sessions archive`; added in version 2).
CLOUD_TABLES = (
    core_schema.CONVERSATION_TABLES + core_schema.LEDGER_TABLES + core_schema.ARCHIVE_TABLES
)
VERSION_TABLE = "kaja_schema"
STATS_TABLE = "kaja_search_stats"
TERMS_TABLE = "kaja_search_terms"
SEARCH_COLUMN = "kaja_search"
WORDS_COLUMN = "kaja_words"
SEARCH_INDEX = "messages_kaja_search"
SCHEMA_VERSION = 2  # what this kaja makes; a newer kaja's schema is read, never written
LOCK = 0x6B616A61  # "kaja": pg_advisory_xact_lock while the schema is made
MAKING_TIMEOUT_MS = 120_000  # how long a writer waits for another making the schema
STATS_SHARDS = 16  # writers add to the stats row of their backend: little lock contention
UNACCENT_HINT = "run as a superuser, in that database: CREATE EXTENSION unaccent;"
# Everything kaja makes in its schema (`contents`): its tables, the functions
# of the search index and of `json_or_text`, and unaccent when kaja created it
# there. Anything else in the schema is not Kaja's, and `kaja wipe` keeps it.
KAJA_TABLES = frozenset(t.name for t in CLOUD_TABLES) | {VERSION_TABLE, STATS_TABLE, TERMS_TABLE}
# `kaja sync`'s shared usage ledger (`ledger/sync/server.py`): its tables and
# sequence, never cloud mode's store. An earlier kaja made them in a schema
# named like its role (`kaja`): such a schema is still Kaja's (`Status.kajas`),
# and a wipe keeps them.
LEDGER_OBJECTS = ("andromeda_ledger", "andromeda_ledger_meta", "andromeda_origins",
                  "andromeda_ledger_seq")  # fmt: skip
COUNT_EVENTS = ("insert", "delete", "update", "truncate")  # kaja_search_count_<event>()
TERMS_EVENTS = ("insert", "update")  # kaja_search_terms_<event>()
FUNCTIONS = frozenset({"json_or_text", "search_fold", "search_words", "search_capped",
                       "search_vector", *(f"kaja_search_count_{e}" for e in COUNT_EVENTS),
                       *(f"kaja_search_terms_{e}" for e in TERMS_EVENTS)})  # fmt: skip


class Status(NamedTuple):
    """What `status()` found: whether the schema is there, whose it is, its version."""

    exists: bool
    tables: frozenset[str] = frozenset()
    version: int | None = None  # highest in kaja_schema; None: no such table
    recognised: bool = False  # its tables and columns hold a telltale of Kaja's (`guard`)

    @property
    def kaja(self) -> bool:
        """Made by kaja: it has kaja's version table."""
        return VERSION_TABLE in self.tables

    @property
    def kajas(self) -> bool:
        """kaja may write it (the rule `guard` keeps for files): no table at all
        (but `kaja sync`'s ledger, which an earlier kaja made here for a role
        named like the schema), kaja's version table, or the tables and columns
        of Kaja's store (an agent made it); anything else is another program's."""
        return not self.tables.difference(LEDGER_OBJECTS) or self.kaja or self.recognised

    @property
    def newer(self) -> bool:
        return self.version is not None and self.version > SCHEMA_VERSION

    def require_kaja(self, where: Target, *, writing: bool = False) -> None:
        """A schema that is another program's: a write is refused (exit 5, as
        `guard` refuses a file), a read fails (exit 1): kaja reads only its own."""
        if self.kajas:
            return
        more = f", … ({len(self.tables)} in all)" if len(self.tables) > 5 else ""
        named = ", ".join(sorted(self.tables)[:5]) + more
        if writing:
            raise Refused(
                f"{where.where} is not Kaja's (its tables: {named})",
                hint="kaja changes nothing in it; check --database-url, KAJA_DATABASE_URL,"
                " [memory] databaseUrl, [memory] databaseSchema",
            )
        raise Failed(
            f"{where.where} is not Kaja's (its tables: {named})",
            hint="point [memory] databaseSchema (or the database URL) at Kaja's store",
        )


def status(conn: Connection, *, version_read: bool = True) -> Status:
    """Look, never write: the schema's tables, whose they are, and its version
    (`version_read=False`: from the catalog alone, the version left None: for
    a role that may not read the version table)."""
    schema = conn.target.schema
    tables = frozenset(conn.table_names())
    exists = bool(tables) or conn.schema_exists()
    version = None
    recognised = False
    if VERSION_TABLE in tables:  # kaja's (`Status.kaja`), whatever the version
        if not version_read:
            return Status(exists, tables)
        version = conn.remembered(  # once a transaction: several checks ask
            "schema version",
            lambda: conn.execute(
                f"SELECT max(version) FROM {_q(schema)}.{VERSION_TABLE}"
            ).fetchone()[0],
        )
        version = int(version) if version is not None else 0
    elif tables:
        recognised = telltales_match(present_columns(conn), [DATABASES[Database.SHARED]])
    return Status(exists, tables, version, recognised)


def present_columns(conn: Connection) -> dict[str, list[str]]:
    """Every table's columns in kaja's schema, in their order."""
    return conn.columns()


def missing(conn: Connection) -> list[str]:
    """What `apply` would add: "table x", "column x.y", "index i", "search index"."""
    have = present_columns(conn)
    out = []
    for table in CLOUD_TABLES:
        cols = have.get(table.name)
        if cols is None:
            out.append(f"table {table.name}")
            continue
        out += [f"column {table.name}.{c}" for c in table.column_names if c not in cols]
    indexes = _indexes(conn)
    out += [f"index {name}" for t in CLOUD_TABLES for name, _ in t.indexes if name not in indexes]
    messages = have.get("messages", [])
    if SEARCH_COLUMN not in messages or WORDS_COLUMN not in messages or SEARCH_INDEX not in indexes:
        out.append("search index")
    if STATS_TABLE not in have:
        out.append(f"table {STATS_TABLE}")
    if TERMS_TABLE not in have:
        out.append(f"table {TERMS_TABLE}")
    if VERSION_TABLE not in have:
        out.append(f"table {VERSION_TABLE}")
    return out


def _indexes(conn: Connection) -> set[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_catalog.pg_class AS c"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = ? AND c.relkind = 'i'",
        (conn.target.schema,),
    )
    return {r[0] for r in rows}


def _q(name: str) -> str:
    return ddl.quote(name)


# --- making it ------------------------------------------------------------------------------
class Report(NamedTuple):
    changes: list[str]


def ensure(conn: Connection) -> Report:
    """Bring kaja's schema up to date if it is not (a writer, before it writes)."""
    state = status(conn)
    state.require_kaja(conn.target, writing=True)
    if state.newer:
        raise _newer(conn.target, state)
    if state.kaja and state.version == SCHEMA_VERSION and not missing(conn):
        return Report([])
    from kaja_cli.core.engine import db
    from kaja_cli.core.engine.postgres import LOCK_TIMEOUT_MS, lock_wait_ms

    tokenizer.sqlite_unicode61()  # the local half of the search index's probe, before the lock
    with db.transaction(conn):
        # Another kaja making the schema holds the lock for a few seconds (the
        # search index's probe): wait for it longer than for a table's lock
        # (and let the statement run longer still: the lock's wait ends first).
        conn.execute(f"SET LOCAL lock_timeout = {MAKING_TIMEOUT_MS}")
        with conn.waiting(MAKING_TIMEOUT_MS + LOCK_TIMEOUT_MS):
            conn.execute("SELECT pg_advisory_xact_lock(?)", (LOCK,))
        tables = lock_wait_ms(LOCK_TIMEOUT_MS, conn.statement_timeout_ms)  # the usual wait
        conn.execute(f"SET LOCAL lock_timeout = {tables}")
        return apply(conn)


def _newer(where: Target, state: Status) -> Failed:
    return Failed(
        f"{where.where} was made by a newer kaja (schema version {state.version};"
        f" this kaja knows up to {SCHEMA_VERSION})",
        hint="upgrade kaja (pip install -U 'kaja-cli[postgres]'); reading still works",
    )


def apply(conn: Connection) -> Report:
    """Create or complete kaja's schema (inside the caller's transaction)."""
    where = conn.target
    schema = where.schema
    state = status(conn)  # again, under the lock: another kaja may have just made it
    state.require_kaja(where, writing=True)
    if state.newer:
        raise _newer(where, state)
    _require_utf8(conn)
    changes: list[str] = []
    if not state.exists:
        conn.execute(f"CREATE SCHEMA {_q(schema)}")
        changes.append(f"created schema {schema}")
    have = present_columns(conn)
    for table in CLOUD_TABLES:
        cols = have.get(table.name)
        if cols is None:
            conn.execute(ddl.table_ddl(table, schema))
            changes.append(f"created table {table.name}")
            continue
        for column in table.columns:
            if column.name not in cols:
                conn.execute(ddl.add_column_ddl(table, column, schema))
                changes.append(f"added column {table.name}.{column.name}")
    indexes = _indexes(conn)
    for table in CLOUD_TABLES:
        for name, columns in table.indexes:
            if name not in indexes:
                conn.execute(ddl.index_ddl(table, name, columns, schema))
                changes.append(f"created index {name}")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {_q(schema)}.{VERSION_TABLE} (version integer PRIMARY KEY,"
        " applied_at text NOT NULL, kaja text NOT NULL, notes text)"
    )
    changes += _functions(conn)
    changes += _search_index(conn, have.get("messages", []), indexes)
    if TERMS_TABLE not in present_columns(conn):  # a schema made before kaja stemmed
        changes += _terms(conn)
    if changes or state.version != SCHEMA_VERSION:
        from kaja_cli import __version__
        from kaja_cli.core.clock import now_iso

        conn.execute(
            f"INSERT INTO {_q(schema)}.{VERSION_TABLE} (version, applied_at, kaja, notes)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (version) DO UPDATE SET applied_at ="
            " EXCLUDED.applied_at, kaja = EXCLUDED.kaja, notes = EXCLUDED.notes",
            (SCHEMA_VERSION, now_iso(), f"kaja {__version__}", "; ".join(changes)[:2000]),
        )
    return Report(changes)


def _require_utf8(conn: Connection) -> None:
    encoding = conn.execute("SELECT pg_catalog.current_setting('server_encoding')").fetchone()[0]
    if str(encoding).upper() not in ("UTF8", "UTF-8"):
        raise Failed(
            f"{conn.target.where}: the database's encoding is {encoding}, and Kaja's"
            " conversations need UTF8",
            hint="create the database WITH ENCODING 'UTF8'",
        )


def _functions(conn: Connection) -> list[str]:
    schema = _q(conn.target.schema)
    # PARALLEL UNSAFE: its exception block is a subtransaction, which nothing
    # may start while a parallel plan runs, not even the leader (a large
    # session's resume was planned in parallel).
    conn.execute(
        f"CREATE OR REPLACE FUNCTION {schema}.json_or_text(t text) RETURNS json"
        " LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $kaja$"
        " BEGIN RETURN t::json; EXCEPTION WHEN data_exception THEN RETURN to_json(t); END"
        " $kaja$"
    )
    return []


def unaccent_schema(conn: Connection, *, create: bool) -> str | None:
    """The schema holding the unaccent extension; with `create`, make it in
    kaja's schema if it is missing (a trusted extension: a role that may
    create in the database may). None when it is not there."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_catalog.pg_extension AS e"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace WHERE e.extname = 'unaccent'"
    ).fetchone()
    if row is not None or not create:
        return row[0] if row else None
    try:
        conn.execute("SAVEPOINT kaja_unaccent")
        conn.execute(f"CREATE EXTENSION unaccent SCHEMA {_q(conn.target.schema)}")
        conn.execute("RELEASE SAVEPOINT kaja_unaccent")
    except Failed as e:
        conn.execute("ROLLBACK TO SAVEPOINT kaja_unaccent")
        reason = e.message.removeprefix(f"{conn.target.where}: ")
        raise Failed(
            f"{conn.target.where}: search needs PostgreSQL's unaccent extension, and kaja"
            f" could not create it ({reason})",
            hint=UNACCENT_HINT,
        ) from None
    return conn.target.schema


def utf8_collation(conn: Connection) -> str:
    """A collation whose lower() knows Unicode case: a libc UTF-8 locale, else ICU's root."""
    row = conn.execute(
        "SELECT collname, collprovider FROM pg_catalog.pg_collation"
        " WHERE collencoding IN (-1, pg_catalog.pg_char_to_encoding('UTF8'))"
        " AND (collprovider = 'c' AND lower(collname) IN ('c.utf8', 'c.utf-8', 'en_us.utf8',"
        " 'en_us.utf-8') OR collprovider = 'i' AND collname = 'und-x-icu')"
        " ORDER BY collprovider, lower(collname) LIMIT 1"
    ).fetchone()
    if row is None:
        return '"default"'
    return f"pg_catalog.{_q(row[0])}"


def _search_index(conn: Connection, message_columns: list[str], indexes: set[str]) -> list[str]:
    """The generated word columns, their GIN index and the stats table, made
    once; the folding functions made again each time the schema is applied
    (cheap, and they then follow the server's unaccent and locale)."""
    where = conn.target
    schema = where.schema
    s = _q(schema)
    changes = []
    have_index = SEARCH_COLUMN in message_columns and WORDS_COLUMN in message_columns
    if have_index and SEARCH_INDEX in indexes:
        if search_functions_outdated(conn):
            make_search_functions(conn)
            changes.append("remade the search functions (for any standard_conforming_strings)")
        return changes
    make_search_functions(conn)
    changes.append("created search functions")
    if not have_index:
        conn.execute(
            f"ALTER TABLE {s}.messages ADD COLUMN IF NOT EXISTS {_q(SEARCH_COLUMN)} tsvector"
            f" GENERATED ALWAYS AS ({tokenizer.vector_sql(schema, 'content')}) STORED,"
            f" ADD COLUMN IF NOT EXISTS {_q(WORDS_COLUMN)} integer GENERATED ALWAYS AS"
            f" (cardinality({tokenizer.words_sql(schema, 'content')})) STORED"
        )
        changes.append("created search columns messages.kaja_search, messages.kaja_words")
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {_q(SEARCH_INDEX)} ON {s}.messages"
        f" USING gin ({_q(SEARCH_COLUMN)})"
    )
    changes.append(f"created index {SEARCH_INDEX}")
    changes += _stats(conn)
    changes += _terms(conn)
    return changes


def make_search_functions(conn: Connection) -> None:
    """The folding functions (CREATE OR REPLACE), probed against this server
    and SQLite, then checked (inside the caller's transaction). They fold as
    before: the indexed columns stay as they are."""
    where = conn.target
    # The probe compares 1.1 million code points in Python between its
    # statements (a second or two): a server's idle-in-transaction timeout
    # shorter than that ended the connection, for this transaction only.
    conn.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
    accent = unaccent_schema(conn, create=True)
    assert accent is not None
    folding = tokenizer.server_probe(conn, _q(accent), utf8_collation(conn))
    for sql in tokenizer.functions_sql(where.schema, folding):
        conn.execute(sql)
    bad = tokenizer.verify(conn, where.schema, folding.aside)
    if bad:
        raise Failed(
            f"{where.where}: the server folds {plural(len(bad), 'character')} differently from SQLite"
            f" (U+{bad[0]:04X} first); the search index was not made",
            hint="report this with `kaja doctor --redact` output",
        )


def search_functions_outdated(conn: Connection) -> bool:
    """Whether the schema's folding functions were made by a kaja whose
    constants break where standard_conforming_strings is off (`tokenizer.outdated`):
    a session with it off, the agent's too, then cannot write a message."""
    rows = conn.execute(
        "SELECT p.prosrc FROM pg_catalog.pg_proc AS p"
        " JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace"
        " WHERE n.nspname = ? AND p.proname IN ('search_fold', 'search_vector')",
        (conn.target.schema,),
    ).fetchall()
    return tokenizer.outdated(r[0] for r in rows)


def rebuild_search(conn: Connection) -> int:
    """Make the search index again from the messages (inside the caller's
    transaction): the folding probed anew against this server and SQLite, the
    indexed columns recomputed (a rewrite of the messages table), the
    statistics recounted. Returns how many messages it holds."""
    s = _q(conn.target.schema)
    conn.execute(
        f"ALTER TABLE {s}.messages DROP COLUMN IF EXISTS {_q(SEARCH_COLUMN)},"
        f" DROP COLUMN IF EXISTS {_q(WORDS_COLUMN)}"
    )  # the GIN index goes with its column
    columns = present_columns(conn).get("messages", [])
    _search_index(conn, columns, _indexes(conn))
    return int(
        conn.execute(f"SELECT coalesce(sum(messages), 0) FROM {s}.{STATS_TABLE}").fetchone()[0]
    )


def _stats(conn: Connection) -> list[str]:
    """`kaja_search_stats` and the triggers that keep it: how many messages and
    words there are, summed over a few rows so writers seldom wait on each
    other. Filled from the messages already there."""
    s = _q(conn.target.schema)
    stats = f"{s}.{STATS_TABLE}"
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {stats} (shard integer PRIMARY KEY,"
        " messages bigint NOT NULL DEFAULT 0, words bigint NOT NULL DEFAULT 0)"
    )
    shard = f"pg_catalog.pg_backend_pid() % {STATS_SHARDS}"
    add = (
        f"INSERT INTO {stats} AS s (shard, messages, words) SELECT {shard}, {{sign}}count(*),"
        f" {{sign}}coalesce(sum({WORDS_COLUMN}), 0) FROM {{rows}} HAVING count(*) > 0"
        " ON CONFLICT (shard) DO UPDATE SET messages = s.messages + EXCLUDED.messages,"
        " words = s.words + EXCLUDED.words;"
    )
    bodies = {
        "insert": add.format(sign="", rows="new_rows"),
        "delete": add.format(sign="-", rows="old_rows"),
        "update": add.format(sign="-", rows="old_rows") + add.format(sign="", rows="new_rows"),
        "truncate": f"DELETE FROM {stats};",
    }
    tables = {"insert": "NEW TABLE AS new_rows", "delete": "OLD TABLE AS old_rows",
              "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows", "truncate": ""}  # fmt: skip
    for event in COUNT_EVENTS:
        body, name = bodies[event], f"kaja_search_count_{event}"
        conn.execute(
            f"CREATE OR REPLACE FUNCTION {s}.{name}() RETURNS trigger LANGUAGE plpgsql"
            f" AS $kaja$ BEGIN {body} RETURN NULL; END $kaja$"
        )
        conn.execute(f"DROP TRIGGER IF EXISTS {name} ON {s}.messages")
        referencing = f" REFERENCING {tables[event]}" if tables[event] else ""
        conn.execute(
            f"CREATE TRIGGER {name} AFTER {event.upper()} ON {s}.messages{referencing}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {s}.{name}()"
        )
    recount(conn)
    return [f"created table {STATS_TABLE}"]


def _terms(conn: Connection) -> list[str]:
    """`kaja_search_terms`, every word of the search index (its vocabulary, in
    SQLite's byte order: COLLATE "C"), and the triggers that add a written
    message's new words; filled from the messages already there.

    Words are only ever added: a word whose messages were all deleted or
    changed stays, harmless, since search counts each form's messages and
    drops a word none holds (`search.stems`); `kaja search --reindex` makes
    the list again. There is no unique key: a writer would then wait for any
    other still writing the same new word, and two writing new words in
    opposite orders would deadlock, failing an agent's insert. So a writer
    adds the words not already listed, and two writing the same new word at
    once may both list it (search reads the list with DISTINCT)."""
    s = _q(conn.target.schema)
    terms = f"{s}.{TERMS_TABLE}"
    conn.execute(f'CREATE TABLE IF NOT EXISTS {terms} (term text COLLATE "C" NOT NULL)')
    conn.execute(f"CREATE INDEX IF NOT EXISTS {TERMS_TABLE}_term ON {terms} (term)")

    def new_words(rows: str, where: str = "") -> str:
        return (
            f"INSERT INTO {terms} (term) SELECT DISTINCT w.w FROM {rows},"
            f" unnest(tsvector_to_array(n.{_q(SEARCH_COLUMN)})) AS w(w)"
            f" WHERE w.w <> '{tokenizer.SENTINEL}'{where}"
            f" AND NOT EXISTS (SELECT 1 FROM {terms} AS t WHERE t.term = w.w);"
        )

    bodies = {
        "insert": new_words("new_rows AS n"),
        # Only the messages whose words changed (an UPDATE of another column
        # adds nothing).
        "update": new_words(
            "new_rows AS n LEFT JOIN old_rows AS o ON o.id = n.id",
            f" AND o.{_q(SEARCH_COLUMN)} IS DISTINCT FROM n.{_q(SEARCH_COLUMN)}",
        ),
    }
    tables = {"insert": "NEW TABLE AS new_rows", "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows"}  # fmt: skip
    for event in TERMS_EVENTS:
        name = f"kaja_search_terms_{event}"
        conn.execute(
            f"CREATE OR REPLACE FUNCTION {s}.{name}() RETURNS trigger LANGUAGE plpgsql"
            f" AS $kaja$ BEGIN {bodies[event]} RETURN NULL; END $kaja$"
        )
        conn.execute(f"DROP TRIGGER IF EXISTS {name} ON {s}.messages")
        conn.execute(
            f"CREATE TRIGGER {name} AFTER {event.upper()} ON {s}.messages"
            f" REFERENCING {tables[event]} FOR EACH STATEMENT EXECUTE FUNCTION {s}.{name}()"
        )
    conn.execute(f"LOCK TABLE {s}.messages IN SHARE MODE")  # no writer between fill and trigger
    conn.execute(f"DELETE FROM {terms}")
    conn.execute(
        f"INSERT INTO {terms} (term) SELECT DISTINCT w.w FROM {s}.messages AS m,"
        f" unnest(tsvector_to_array(m.{_q(SEARCH_COLUMN)})) AS w(w)"
        f" WHERE w.w <> '{tokenizer.SENTINEL}'"
    )
    return [f"created table {TERMS_TABLE}"]


def prune_terms(conn: Connection) -> int:
    """Drop the listed words no message holds any more (inside the caller's
    transaction; one scan of the messages, writers held off meanwhile so none
    adds a word being dropped): after `kaja wipe --owner`, their words leave
    the list too. Returns how many went."""
    s = _q(conn.target.schema)
    if TERMS_TABLE not in present_columns(conn):
        return 0
    conn.execute(f"LOCK TABLE {s}.messages IN SHARE MODE")
    cur = conn.execute(
        f"DELETE FROM {s}.{TERMS_TABLE} AS t WHERE NOT EXISTS (SELECT 1 FROM (SELECT DISTINCT"
        f" w.w FROM {s}.messages AS m, unnest(tsvector_to_array(m.{_q(SEARCH_COLUMN)})) AS w(w))"
        " AS h WHERE h.w = t.term)"
    )
    return cur.rowcount


def recount(conn: Connection) -> tuple[int, int]:
    """Count the messages and their words again into the stats table (inside
    the caller's transaction); returns (messages, words)."""
    s = _q(conn.target.schema)
    conn.execute(f"LOCK TABLE {s}.messages IN SHARE MODE")  # no writer between count and store
    messages, words = conn.execute(
        f"SELECT count(*), coalesce(sum({WORDS_COLUMN}), 0) FROM {s}.messages"
    ).fetchone()
    conn.execute(f"DELETE FROM {s}.{STATS_TABLE}")
    conn.execute(
        f"INSERT INTO {s}.{STATS_TABLE} (shard, messages, words) VALUES (0, ?, ?)",
        (int(messages), int(words)),
    )
    return int(messages), int(words)


def refuse_foreign(where: Target, state: Status) -> None:
    """Refused (exit 5) to touch a schema that is not Kaja's (a whole wipe)."""
    if state.exists and not state.kajas:
        raise Refused(
            f"{where.where} is not Kaja's (no {VERSION_TABLE} table): kaja drops only its own schema",
            hint="check [memory] databaseSchema",
        )


# --- what the schema holds: kaja's, and what is not ------------------------------------------
class Thing(NamedTuple):
    """An object on the server: its kind ("table", "function", "view", …) and its
    schema-qualified name as PostgreSQL spells it (`kaja.search_fold(text)`)."""

    kind: str
    name: str
    size: int = 0  # a table's bytes, its indexes and TOAST included


class Contents(NamedTuple):
    """What kaja's schema holds, sorted out for a wipe (and doctor)."""

    tables: list[Thing]  # kaja's tables
    functions: list[Thing]  # kaja's functions
    extensions: list[Thing]  # unaccent, when kaja made it in its schema
    others: list[Thing]  # in the schema, and not Kaja's
    dependents: list[tuple[Thing, str]]  # not Kaja's, and uses one of kaja's: (it, which)


# kaja's objects in the schema, as (catalog, oid) pairs.
_MINE = """
WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = :schema),
mine(cls, oid) AS (
  SELECT 'pg_catalog.pg_class'::regclass::oid, c.oid FROM pg_catalog.pg_class AS c, ns
   WHERE c.relnamespace = ns.oid AND c.relkind IN ('r', 'p') AND c.relname = ANY(:tables)
  UNION ALL
  SELECT 'pg_catalog.pg_proc'::regclass::oid, p.oid FROM pg_catalog.pg_proc AS p, ns
   WHERE p.pronamespace = ns.oid AND p.proname = ANY(:functions)
  UNION ALL
  SELECT 'pg_catalog.pg_extension'::regclass::oid, e.oid FROM pg_catalog.pg_extension AS e, ns
   WHERE e.extnamespace = ns.oid AND e.extname = 'unaccent'
)"""
_ID = "pg_catalog.pg_identify_object({0}, {1}, 0)"
# Every object of the schema records a dependency on it: what is neither kaja's
# nor part of something in the schema (an index, an owned sequence, a member
# of kaja's unaccent) is another program's.
_OTHERS = f"""{_MINE}
SELECT ({_ID.format("d.classid", "d.objid")}).type, ({_ID.format("d.classid", "d.objid")}).identity
FROM pg_catalog.pg_depend AS d, ns
WHERE d.refclassid = 'pg_catalog.pg_namespace'::regclass AND d.refobjid = ns.oid
  AND d.deptype = 'n' AND (d.classid, d.objid) NOT IN (SELECT cls, oid FROM mine)
  AND NOT EXISTS (
    SELECT 1 FROM pg_catalog.pg_depend AS o WHERE o.classid = d.classid AND o.objid = d.objid
     AND (o.deptype = 'e' AND (o.refclassid, o.refobjid) IN (SELECT cls, oid FROM mine)
      OR o.deptype IN ('a', 'i') AND o.refclassid = 'pg_catalog.pg_class'::regclass
         AND o.refobjid IN (SELECT c.oid FROM pg_catalog.pg_class AS c, ns
                            WHERE c.relnamespace = ns.oid)))
ORDER BY 2"""
# What depends on kaja's objects (a view, a foreign key, a column default, a
# trigger), by the relation or function it belongs to: dropping kaja's tables
# with CASCADE would take it along; kaja drops RESTRICT, and refuses first.
_PART_OF = ("pg_rewrite", "ev_class"), ("pg_attrdef", "adrelid"), ("pg_trigger", "tgrelid"), \
    ("pg_constraint", "conrelid"), ("pg_policy", "polrelid")  # fmt: skip
_OWNER_CLASS = (
    "CASE WHEN d.classid IN ("
    + ", ".join(f"'pg_catalog.{c}'::regclass" for c, _ in _PART_OF)
    + ") THEN 'pg_catalog.pg_class'::regclass::oid ELSE d.classid END"
)
_OWNER_OID = (
    "CASE d.classid "
    + " ".join(
        f"WHEN 'pg_catalog.{c}'::regclass THEN (SELECT x.{col} FROM pg_catalog.{c} AS x"
        " WHERE x.oid = d.objid)"
        for c, col in _PART_OF
    )
    + " ELSE d.objid END"
)
_DEPENDENTS = f"""{_MINE}
SELECT DISTINCT ({_ID.format("w.cls", "w.oid")}).type, ({_ID.format("w.cls", "w.oid")}).identity,
  ({_ID.format("w.refclassid", "w.refobjid")}).identity
FROM (SELECT d.refclassid, d.refobjid, {_OWNER_CLASS} AS cls, {_OWNER_OID} AS oid
      FROM pg_catalog.pg_depend AS d
      WHERE d.deptype = 'n' AND (d.refclassid, d.refobjid) IN (SELECT cls, oid FROM mine)) AS w
WHERE (w.cls, w.oid) NOT IN (SELECT cls, oid FROM mine)
ORDER BY 2, 3"""


def contents(conn: Connection) -> Contents:
    """kaja's tables (with their sizes), functions and extension in its schema;
    what else the schema holds; and what outside kaja's uses kaja's. Reads only."""
    args = {"schema": conn.target.schema, "tables": sorted(KAJA_TABLES),
            "functions": sorted(FUNCTIONS)}  # fmt: skip
    ns = "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = :schema)"
    tables = [
        Thing("table", name, int(size))
        for name, size in conn.execute(
            f"SELECT ({_ID.format('c.tableoid', 'c.oid')}).identity,"
            " pg_catalog.pg_total_relation_size(c.oid) FROM pg_catalog.pg_class AS c"
            f" WHERE c.relnamespace = {ns} AND c.relkind IN ('r', 'p')"
            " AND c.relname = ANY(:tables) ORDER BY c.relname",
            args,
        )
    ]
    functions = [
        Thing("function", name)
        for (name,) in conn.execute(
            f"SELECT ({_ID.format('p.tableoid', 'p.oid')}).identity FROM pg_catalog.pg_proc AS p"
            f" WHERE p.pronamespace = {ns} AND p.proname = ANY(:functions) ORDER BY 1",
            args,
        )
    ]
    extensions = [
        Thing("extension", name)
        for (name,) in conn.execute(
            "SELECT e.extname FROM pg_catalog.pg_extension AS e"
            f" WHERE e.extnamespace = {ns} AND e.extname = 'unaccent'",
            args,
        )
    ]
    others = [Thing(kind, name) for kind, name in conn.execute(_OTHERS, args)]
    dependents = [(Thing(kind, name), on) for kind, name, on in conn.execute(_DEPENDENTS, args)]
    return Contents(tables, functions, extensions, others, dependents)
