"""The CJK search index: `conversation_text_cjk`, its queue and triggers (SPEC §6).

A second FTS4 table (same tokenizer as `conversation_text`), holding only the
messages that contain Chinese, Japanese or Korean text, each as
`cjk.index_text` writes it (CJK runs as character bigrams), under docid =
messages.rowid. Searches with a CJK word use it; every other search uses
the main index, untouched.

The agent writes `messages` with plain SQLite: no kaja code, no Python
functions, no custom tokenizer in its connection. So the bigrams can't be
made by a trigger. The triggers only use built-in SQL:

- on insert, and on update of the content, a message that is not all ASCII
  (`cjk.maybe_cjk_sql`: more bytes than characters) is recorded in
  `conversation_text_cjk_queue`; an ASCII message costs that one length
  comparison. Kaja indexes the queued ones that hold CJK text and drops the
  others (accents, curly quotes, emoji). An exact GLOB class of the CJK
  ranges would queue less but cost the agent far more: SQLite tests each
  character against each range (37 s over the benchmark store's messages,
  against 1 s for the length comparison);
- on delete, and before an update, the message's entry is taken out of the
  index (FTS4's own DELETE, which works in any connection).

Kaja indexes the queue (and, once, every message there was when the index
was created: a build recorded in `counters` as `search:cjk-fill`) in short
transactions before a CJK search, the way the main index's build is done.
The index is made the first time someone searches for a CJK word, so a
store pays nothing before someone searches in CJK, and one length
comparison per message written after that.

The names start with `conversation_text`, which doctor already knows as
the search index's (not a table written by another program).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable

from kaja_cli.core.conversations.search import cjk
from kaja_cli.core.engine.db import table_names, transaction
from kaja_cli.core.engine.sqlite_format import varints

Progress = Callable[[int, int | None], None]

TABLE = "conversation_text_cjk"
QUEUE = "conversation_text_cjk_queue"
DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts4("
    'content, tokenize=unicode61 "remove_diacritics=2")'
)
QUEUE_DDL = f"CREATE TABLE IF NOT EXISTS {QUEUE} (docid INTEGER PRIMARY KEY)"
_INDEXED = f"EXISTS (SELECT 1 FROM {TABLE}_docsize WHERE docid = old.rowid)"
_HAS_CJK = cjk.maybe_cjk_sql("new.content")
TRIGGERS = {
    "messages_cjk_bd": f"BEFORE DELETE ON messages WHEN {_INDEXED} BEGIN DELETE FROM {TABLE} WHERE docid = old.rowid; END",
    "messages_cjk_bu": f"BEFORE UPDATE OF content ON messages WHEN {_INDEXED} BEGIN DELETE FROM {TABLE} WHERE docid = old.rowid; END",
    "messages_cjk_au": f"AFTER UPDATE OF content ON messages WHEN {_HAS_CJK} BEGIN INSERT OR IGNORE INTO {QUEUE}(docid) VALUES (new.rowid); END",
    "messages_cjk_ai": f"AFTER INSERT ON messages WHEN {_HAS_CJK} BEGIN INSERT OR IGNORE INTO {QUEUE}(docid) VALUES (new.rowid); END",
}
FILL_COUNTER = "search:cjk-fill"  # "upto=<max rowid> done=<rowid>" while a build runs
FILL_BATCH = 20_000  # rowids looked at per transaction (most messages are not CJK)
QUEUE_BATCH = 2_000  # queued messages indexed per transaction
AUTOMERGE = 8

# States of the CJK index in one file.
READY = "ready"  # in step: nothing queued, no build under way
BEHIND = "behind"  # messages written since are queued, not yet indexed
FILLING = "filling"  # being built (or a build was interrupted)
MISSING = "missing"  # not made yet, or a trigger is missing
FOREIGN = "foreign"  # a table of that name kaja did not make


def _normal(sql: str | None) -> str:
    text = re.sub(r"\s+", " ", (sql or "").strip()).lower()
    return text.replace(" if not exists", "").replace("( ", "(").replace(" )", ")")


def _objects(conn: sqlite3.Connection) -> dict[str, str | None]:
    names = (TABLE, QUEUE, *TRIGGERS)
    rows = conn.execute(
        "SELECT name, sql FROM main.sqlite_master WHERE name IN (%s)" % ",".join("?" * len(names)),
        names,
    )
    return dict(rows.fetchall())


def exists(conn: sqlite3.Connection) -> bool:
    return TABLE in table_names(conn)


def fill_state(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(upto, done) while a build is under way, else None."""
    try:
        row = conn.execute("SELECT value FROM counters WHERE name = ?", (FILL_COUNTER,)).fetchone()
    except sqlite3.OperationalError:
        return None
    if row is None:
        return None
    found = dict(re.findall(r"(\w+)=(\d+)", str(row[0])))
    try:
        return int(found["upto"]), int(found["done"])
    except (KeyError, ValueError):
        return 0, 0


def queued(conn: sqlite3.Connection) -> int:
    return conn.execute(f"SELECT count(*) FROM {QUEUE}").fetchone()[0]


def state(conn: sqlite3.Connection) -> str:
    """READY, BEHIND, FILLING, MISSING or FOREIGN (works read-only)."""
    objects = _objects(conn)
    if TABLE not in objects:
        return MISSING
    if _normal(objects[TABLE]) != _normal(DDL):
        return FOREIGN
    if QUEUE not in objects or any(
        _normal(objects.get(name)) != _normal(f"CREATE TRIGGER {name} {body}")
        for name, body in TRIGGERS.items()
    ):
        return MISSING
    if fill_state(conn) is not None:
        return FILLING
    if conn.execute(f"SELECT EXISTS (SELECT 1 FROM {QUEUE})").fetchone()[0]:
        return BEHIND
    return READY


def indexed(conn: sqlite3.Connection) -> int:
    """Messages the index holds, from FTS4's %_stat (its first varint)."""
    row = conn.execute(f"SELECT value FROM {TABLE}_stat WHERE id = 0").fetchone()
    if not row or not isinstance(row[0], bytes):
        return 0
    return (varints(row[0], count=1) or [0])[0]


# --- making it (inside the caller's transaction) --------------------------------------
def _create(conn: sqlite3.Connection) -> None:
    conn.execute(DDL)
    conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('automerge={AUTOMERGE}')")
    conn.execute(QUEUE_DDL)
    for name, body in TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(f"CREATE TRIGGER {name} {body}")


def drop(conn: sqlite3.Connection) -> None:
    for name in TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute(f"DROP TABLE IF EXISTS {QUEUE}")
    if "counters" in table_names(conn):
        conn.execute("DELETE FROM counters WHERE name = ?", (FILL_COUNTER,))


def reset(conn: sqlite3.Connection) -> None:
    """Start the index again, empty, with a build of every message recorded."""
    drop(conn)
    _create(conn)
    upto = conn.execute("SELECT ifnull(max(rowid), 0) FROM messages").fetchone()[0]
    _set_fill(conn, upto, 0)


def ensure(conn: sqlite3.Connection) -> bool:
    """Make the index if it is missing or a trigger is (messages may then have
    been missed: start again); True if it did. A table of that name that is
    not kaja's is left alone (search scans; `kaja search --reindex` replaces it)."""
    if state(conn) == MISSING:
        reset(conn)
        return True
    return False


def _set_fill(conn: sqlite3.Connection, upto: int, done: int) -> None:
    if done >= upto:
        conn.execute("DELETE FROM counters WHERE name = ?", (FILL_COUNTER,))
    else:
        conn.execute(
            "INSERT OR REPLACE INTO counters(name, value) VALUES (?, ?)",
            (FILL_COUNTER, f"upto={upto} done={done}"),
        )


def text_of(value: object) -> str | None:
    """A message's content as text, whatever type another program stored."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def put(conn: sqlite3.Connection, table: str, rows: Iterable[tuple[int, object]]) -> int:
    """(Re)index `rows` of (rowid, content) into `table`: an entry already
    there is replaced, a message without CJK text left out. Returns how
    many it holds now of them."""
    rows = list(rows)
    if not rows:
        return 0
    docids = "[" + ",".join(str(r[0]) for r in rows) + "]"
    old = conn.execute(
        f"SELECT docid FROM {table}_docsize WHERE docid IN (SELECT value FROM json_each(?))",
        (docids,),
    ).fetchall()
    conn.executemany(f"DELETE FROM {table} WHERE docid = ?", old)
    new = []
    for rowid, content in rows:
        text = text_of(content)
        if text is not None and cjk.holds_cjk(text):
            new.append((rowid, cjk.index_text(text)))
    conn.executemany(f"INSERT INTO {table}(docid, content) VALUES (?, ?)", new)
    return len(new)


def _fill_batch(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """Index the next rowids of the build; (done, upto), None when finished."""
    found = fill_state(conn)
    if found is None:
        return None
    upto, done = found
    high = min(done + FILL_BATCH, upto)
    rows = conn.execute(
        "SELECT rowid, content FROM messages WHERE rowid > ? AND rowid <= ?"
        f" AND {cjk.maybe_cjk_sql('content')}",
        (done, high),
    )
    put(conn, TABLE, rows)
    _set_fill(conn, upto, high)
    return (high, upto) if high < upto else None


def _queue_batch(conn: sqlite3.Connection) -> int:
    """Index the next queued messages (a deleted one just leaves the queue)."""
    rows = conn.execute(
        f"SELECT q.docid, m.content FROM {QUEUE} AS q LEFT JOIN messages AS m"
        f" ON m.rowid = q.docid ORDER BY q.docid LIMIT ?",
        (QUEUE_BATCH,),
    ).fetchall()
    put(conn, TABLE, rows)
    conn.executemany(f"DELETE FROM {QUEUE} WHERE docid = ?", [(r[0],) for r in rows])
    return len(rows)


# --- bringing it up to date: each step its own short transaction ----------------------
def catch_up(conn: sqlite3.Connection, progress: Progress | None = None) -> int:
    """Finish a build, then index what the triggers queued; returns how many
    messages it looked at (0: it was in step)."""
    done = 0
    found = fill_state(conn)
    if found is not None:
        while True:
            with transaction(conn):
                step = _fill_batch(conn)
            done = step[0] if step else found[0]
            if progress:
                progress(done, found[0])
            if step is None:
                break
    while True:
        with transaction(conn):
            n = _queue_batch(conn)
        if not n:
            break
        done += n
    return done


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the index into one segment (inside the caller's transaction), so
    erased words leave the file (`wipe --owner`)."""
    conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('optimize')")
