"""The search index: `conversation_text`, its triggers, and keeping it whole (SPEC §6).

A schema object of the shared file: the store makes and repairs it with the
rest of the schema (`schema.apply`, `Store.ensure_schema`), and search reads
it (`conversations/search`).

An external-content FTS4 table over `messages.content`: the text is stored
once, in messages; the index holds only the inverted lists and each message's
length in tokens. Triggers keep it current whoever writes a message (the
agent, the bot, `kaja demo`, a script with the sqlite3 shell). FTS4 reads the
old text to take it out of the index, so the delete and update parts run
BEFORE the change and the insert parts AFTER it.

The agent writes while kaja works, and its `busy_timeout` is five seconds, so
nothing here holds the write lock for long:

- Building (a store made by another program, a missing trigger, `kaja search
  --reindex`) creates the empty table and its triggers in one short
  transaction, then fills it in batches of `FILL_BATCH` messages, each its own
  transaction. A `counters` row (`search:fill`) records how far it got: an
  interrupted build is finished by the next writable kaja, and searches know
  the index is not whole yet. Messages written meanwhile are indexed by the
  triggers; the delete and update triggers touch only messages already in
  the index (their WHEN clause), so a message deleted before its batch leaves
  no trace.
- `automerge=8` is set on the table (FTS4 stores it in the file, so the
  agent's own inserts follow it): each write does a little merging, instead
  of the legacy merge of 16 segments at once that can stall one insert.
- After a build, the segments are merged with `'merge=…'` steps, each its own
  short transaction, rather than one long `'optimize'`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from kaja_cli.core.engine.db import table_names, transaction

Progress = Callable[[int, int | None], None]

FTS_TABLE = "conversation_text"
FTS_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts4("
    'content="messages", content, tokenize=unicode61 "remove_diacritics=2")'
)
# Only a message the index holds (it has a docsize row) may be taken out of
# it: FTS4 would otherwise subtract the tokens of a text it never counted.
_INDEXED = f"EXISTS (SELECT 1 FROM {FTS_TABLE}_docsize WHERE docid = old.rowid)"
FTS_TRIGGERS = {
    "messages_fts_bd": f"BEFORE DELETE ON messages WHEN {_INDEXED} BEGIN DELETE FROM {FTS_TABLE} WHERE docid = old.rowid; END",
    "messages_fts_bu": f"BEFORE UPDATE OF content ON messages WHEN {_INDEXED} BEGIN DELETE FROM {FTS_TABLE} WHERE docid = old.rowid; END",
    "messages_fts_au": f"AFTER UPDATE OF content ON messages BEGIN INSERT INTO {FTS_TABLE}(docid, content) VALUES (new.rowid, new.content); END",
    "messages_fts_ai": f"AFTER INSERT ON messages BEGIN INSERT INTO {FTS_TABLE}(docid, content) VALUES (new.rowid, new.content); END",
}
FILL_COUNTER = "search:fill"  # "upto=<max rowid> done=<rowid>" while a build runs
FILL_BATCH = 20_000  # messages per transaction: ~0.25 s of write lock here
AUTOMERGE = 8
MERGE_STEP = "merge=200,2"  # ~200 blocks per transaction, any level with 2+ segments
_STAT_AUTOMERGE_ID = 2  # FTS4 keeps the automerge setting in %_stat, row 2

# States of the index in one file.
READY = "ready"
MISSING = "missing"  # no table, or a trigger is missing: messages may have been missed
FILLING = "filling"  # being built (or a build was interrupted)
FOREIGN = "foreign"  # a `conversation_text` kaja did not make (another shape)


def _normal(sql: str | None) -> str:
    """SQL as SQLite stores it, compared loosely (spaces, case, IF NOT EXISTS)."""
    text = re.sub(r"\s+", " ", (sql or "").strip()).lower()
    return text.replace(" if not exists", "").replace("( ", "(").replace(" )", ")")


def _objects(conn: sqlite3.Connection) -> dict[str, str | None]:
    """SQL of the index table and of its triggers, by name."""
    names = (FTS_TABLE, *FTS_TRIGGERS)
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE name IN (%s)" % ",".join("?" * len(names)),
        names,
    )
    return dict(rows.fetchall())


def _is_ours(sql: str | None) -> bool:
    return _normal(sql) == _normal(FTS_DDL)


def fill_state(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(upto, done) while a build is under way, else None."""
    try:
        row = conn.execute("SELECT value FROM counters WHERE name = ?", (FILL_COUNTER,)).fetchone()
    except sqlite3.OperationalError:  # a file without kaja's `counters`
        return None
    if row is None:
        return None
    found = dict(re.findall(r"(\w+)=(\d+)", str(row[0])))
    try:
        return int(found["upto"]), int(found["done"])
    except (KeyError, ValueError):
        return 0, 0  # unreadable: start again from the beginning


def state(conn: sqlite3.Connection, known_shape: str | None = None) -> str:
    """READY, MISSING, FILLING or FOREIGN (works on a read-only connection);
    `known_shape`: `shape(conn)`, when the caller has it already."""
    found = shape(conn) if known_shape is None else known_shape
    if found != READY:
        return found
    if fill_state(conn) is not None:
        return FILLING
    return READY


def shape(conn: sqlite3.Connection) -> str:
    """What the schema alone says of the index: READY (kaja's table and its
    triggers are there), MISSING or FOREIGN. The same for as long as the
    file's schema is (its schema cookie: `PRAGMA schema_version`)."""
    objects = _objects(conn)
    if FTS_TABLE not in objects:
        return MISSING
    if not _is_ours(objects[FTS_TABLE]):
        return FOREIGN
    if any(name not in objects for name in FTS_TRIGGERS):
        return MISSING
    return READY


def outdated(conn: sqlite3.Connection) -> list[str]:
    """What differs in a usable index from what kaja makes now (triggers, automerge)."""
    objects = _objects(conn)
    if not _is_ours(objects.get(FTS_TABLE)):
        return []
    out = [
        f"trigger {name}"
        for name, body in FTS_TRIGGERS.items()
        if name in objects and _normal(objects[name]) != _normal(f"CREATE TRIGGER {name} {body}")
    ]
    if not _automerge_on(conn):
        out.append("automerge")
    return out


def _automerge_on(conn: sqlite3.Connection) -> bool:
    try:
        row = conn.execute(
            f"SELECT value FROM {FTS_TABLE}_stat WHERE id = ?", (_STAT_AUTOMERGE_ID,)
        ).fetchone()
    except sqlite3.OperationalError:
        return False
    try:
        return row is not None and int(row[0]) >= 2
    except (TypeError, ValueError):
        return False


def missing_item(conn: sqlite3.Connection) -> str | None:
    """How `schema.missing` names what `ensure` would do, or None."""
    current = state(conn)
    if current == MISSING:
        return f"search index {FTS_TABLE}"
    if current == FILLING:
        return f"search index {FTS_TABLE} (being built)"
    if current == READY and outdated(conn):
        return f"search index {FTS_TABLE} settings"
    return None


def present(conn: sqlite3.Connection) -> bool:
    return state(conn) == READY


# --- building and repairing (inside the caller's transaction) ---------------------
def _create(conn: sqlite3.Connection) -> None:
    conn.execute(FTS_DDL)
    conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('automerge={AUTOMERGE}')")
    for name, body in FTS_TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(f"CREATE TRIGGER {name} {body}")


def _drop(conn: sqlite3.Connection) -> None:
    for name in FTS_TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


def _start_fill(conn: sqlite3.Connection) -> None:
    """Record a build of every message there is now; a small store is filled at once."""
    upto = 0
    if "messages" in table_names(conn):
        upto = conn.execute("SELECT ifnull(max(rowid), 0) FROM messages").fetchone()[0]
    _set_fill(conn, upto, 0)
    if upto <= FILL_BATCH:
        _fill_batch(conn)


def _set_fill(conn: sqlite3.Connection, upto: int, done: int) -> None:
    if done >= upto:
        conn.execute("DELETE FROM counters WHERE name = ?", (FILL_COUNTER,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO counters(name, value) VALUES (?, ?)",
            (FILL_COUNTER, f"upto={upto} done={done}"),
        )


def _fill_batch(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """Index the next batch of the build; returns (done, upto), None when finished."""
    found = fill_state(conn)
    if found is None:
        return None
    upto, done = found
    high = min(done + FILL_BATCH, upto)
    if high > done:
        # Skip what the triggers indexed meanwhile (a message updated or
        # written with a reused rowid since the build began).
        conn.execute(
            f"INSERT INTO {FTS_TABLE}(docid, content) SELECT rowid, content FROM messages"
            " WHERE rowid > ?1 AND rowid <= ?2 AND rowid NOT IN"
            f" (SELECT docid FROM {FTS_TABLE}_docsize WHERE docid > ?1 AND docid <= ?2)",
            (done, high),
        )
    _set_fill(conn, upto, high)
    return (high, upto) if high < upto else None


def ensure(conn: sqlite3.Connection, changes: list[str]) -> None:
    """Create or repair the index (inside the caller's transaction, part of `schema.apply`).

    A large build is only started here; `finish` fills it in short transactions.
    A `conversation_text` of another shape is left alone (`kaja search
    --reindex` replaces it).
    """
    objects = _objects(conn)
    if FTS_TABLE in objects and not _is_ours(objects[FTS_TABLE]):
        return
    if FTS_TABLE not in objects:
        _create(conn)
        _start_fill(conn)
        changes.append(f"created search index {FTS_TABLE}")
        return
    if any(name not in objects for name in FTS_TRIGGERS):
        # Messages changed while a trigger was missing: the index may lack
        # some and still hold deleted ones. Start again from the messages.
        _drop(conn)
        _create(conn)
        _start_fill(conn)
        changes.append(f"rebuilt search index {FTS_TABLE} (a trigger was missing)")
        return
    for item in outdated(conn):
        if item == "automerge":
            conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('automerge={AUTOMERGE}')")
        else:
            name = item.removeprefix("trigger ")
            conn.execute(f"DROP TRIGGER {name}")
            conn.execute(f"CREATE TRIGGER {name} {FTS_TRIGGERS[name]}")
        changes.append(f"updated search index {item}")


def drop(conn: sqlite3.Connection) -> None:
    """Remove the index and its triggers (inside the caller's transaction): a
    bulk writer (`kaja demo --sessions`) writes the messages, then `build`s it.
    A store left so is one without an index, which the next writer starts again."""
    _drop(conn)


def build(conn: sqlite3.Connection) -> None:
    """Create the index whole from every message in one statement (inside the
    caller's transaction): for a store nobody else writes yet."""
    _drop(conn)
    _create(conn)
    rebuild(conn)


def reset(conn: sqlite3.Connection) -> int:
    """Start the index again, empty, with a build of every message recorded
    (inside the caller's transaction); returns how many messages it will hold."""
    _drop(conn)
    _create(conn)
    _start_fill(conn)
    return message_count(conn)


def message_count(conn: sqlite3.Connection) -> int:
    if "messages" not in table_names(conn):
        return 0
    return conn.execute("SELECT count(*) FROM messages").fetchone()[0]


# --- long jobs: each step its own short transaction ---------------------------
def finish(conn: sqlite3.Connection, progress: Progress | None = None) -> bool:
    """Complete a build in batches, then merge; False if there was nothing to do."""
    found = fill_state(conn)
    if found is None:
        return False
    if progress:
        progress(found[1], found[0])
    while True:
        with transaction(conn):
            step = _fill_batch(conn)
        if step is None:
            break
        if progress:
            progress(*step)
    if progress:
        progress(found[0], found[0])
    merge(conn)
    return True


def merge(conn: sqlite3.Connection, max_steps: int = 10_000) -> int:
    """Merge segments a little at a time until FTS4 has nothing left to merge."""
    steps = 0
    while steps < max_steps:
        with transaction(conn):
            before = conn.total_changes
            conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES (?)", (MERGE_STEP,))
            changed = conn.total_changes - before
        steps += 1
        if changed < 2:  # FTS4's own idiom: fewer than 2 changes = nothing merged
            break
    return steps


def rebuild(conn: sqlite3.Connection) -> None:
    """Fill the index from every message in one statement (inside the caller's
    transaction). Holds the write lock for the whole store: prefer `reset`
    then `finish` for anything large."""
    conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
    if "counters" in table_names(conn):
        conn.execute("DELETE FROM counters WHERE name = ?", (FILL_COUNTER,))


def integrity_check(conn: sqlite3.Connection) -> str | None:
    """None when FTS4 finds the index in step with the messages, else SQLite's reason."""
    try:
        conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as e:
        return str(e)
    return None
