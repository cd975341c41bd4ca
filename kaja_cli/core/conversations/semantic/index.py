"""The semantic index: kaja's own side database of message vectors,
`<state dir>/semantic.db` (`Paths.semantic_db`). The agent's files are only read.

Two tables, for the two passes of a search:
- `semantic_chunks`: one row per chunk of up to `CHUNK` messages in rowid
  order, with their rowids (int64) and each vector's signs (`DIMS / 8`
  bytes) as two blobs a search reads whole: the first pass ranks every
  message by the Hamming distance of its signs to the query's;
- `semantic_vectors`: one row per message (its rowid), the vector
  quantised to int8 with its scale, and a key of the message's id
  (`model.key`: a rowid the agent gave to another message no longer
  matches): the best candidates are re-ranked by cosine on them, each
  read by its rowid.
1M messages: 40 MB of chunks, about 270 MB of vectors.

Built incrementally: `update` embeds the messages whose rowid is above the
high-water mark (`meta.high_water`), committing each chunk with the mark,
so an interrupted build resumes where it stopped. A message kaja deletes
takes its vector along (`forget`); one the agent deleted itself is dropped
by the search, which joins every candidate back to the messages.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.conversations.semantic import model
from kaja_cli.errors import Failed, Refused

if TYPE_CHECKING:
    import numpy as np

FILE_NAME = "semantic.db"
CHUNK = 4096  # messages per row of `chunks`
READ_BATCH = 256  # messages embedded at a time (their tokens' rows are the build's memory)
VERSION = "2"
BITS = model.DIMS // 8

SCHEMA = """
CREATE TABLE IF NOT EXISTS semantic_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS semantic_chunks (
    id INTEGER PRIMARY KEY,
    first INTEGER NOT NULL,  -- the lowest messages.rowid in the chunk
    last INTEGER NOT NULL,   -- the highest
    n INTEGER NOT NULL,
    rowids BLOB NOT NULL,    -- n int64
    bits BLOB NOT NULL       -- n × DIMS / 8 bytes: the signs
);
CREATE TABLE IF NOT EXISTS semantic_vectors (
    rowid INTEGER PRIMARY KEY,  -- messages.rowid
    key INTEGER NOT NULL,       -- model.key of messages.id
    scale REAL NOT NULL,
    code BLOB NOT NULL          -- DIMS int8: the vector is code × scale
);
"""


class Status(NamedTuple):
    """What doctor shows of the index."""

    path: Path
    exists: bool
    size: int  # bytes on disk, -wal included
    model: str | None
    vectors: int
    high_water: int  # messages.rowid up to which messages are embedded
    store: str | None  # the store it indexes


def path_of(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


@contextmanager
def open_index(path: Path, *, create: bool) -> Iterator[sqlite3.Connection | None]:
    """The index's connection (None when it does not exist and not `create`).
    A file of that name that is not kaja's index is refused (exit 5); one
    kaja cannot create or write is a one-line failure (exit 1)."""
    if not create and not path.exists():
        yield None
        return
    try:
        conn = _connect(path, create)
    except (OSError, sqlite3.Error) as e:
        raise Failed(
            f"cannot open the semantic index {path}: {getattr(e, 'strerror', None) or e}",
            hint="kaja keeps it in the state dir: make that writable, or use another --state-dir",
        ) from None
    with closing(conn):
        yield conn


def _connect(path: Path, create: bool) -> sqlite3.Connection:
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # the messages' vectors are as private as the messages: 0600
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "semantic_meta" not in tables:
            raise Refused(
                f"{path} is not kaja's semantic index: kaja leaves it alone",
                hint="move it away; the next `kaja search --semantic` builds the index there",
            )
        if create:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM semantic_meta"))


def _set(conn: sqlite3.Connection, **values: object) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO semantic_meta(key, value) VALUES (?, ?)",
        [(k, str(v)) for k, v in values.items()],
    )


def clear(conn: sqlite3.Connection, store: str) -> None:
    """Start again empty, for `store` (its path) and this model."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM semantic_chunks")
    conn.execute("DELETE FROM semantic_vectors")
    conn.execute("DELETE FROM semantic_meta")
    _set(conn, version=VERSION, model=model.NAME, store=store, high_water=0)
    conn.execute("COMMIT")


def usable(conn: sqlite3.Connection, store: str) -> bool:
    """Whether the index was built by this model and version for `store`."""
    m = meta(conn)
    return m.get("version") == VERSION and m.get("model") == model.NAME and m.get("store") == store


# --- building ------------------------------------------------------------------------
def behind(conn: sqlite3.Connection, store: sqlite3.Connection) -> int:
    """How many of the store's messages are above the high-water mark."""
    high = int(meta(conn).get("high_water", 0))
    return store.execute("SELECT count(*) FROM main.messages WHERE rowid > ?", (high,)).fetchone()[
        0
    ]


def settle(conn: sqlite3.Connection, store: sqlite3.Connection) -> None:
    """Lower the high-water mark below any rowid the agent gave out again.

    SQLite hands out max(rowid) + 1: a rowid at or below the mark is given
    again only after every message above it was deleted. So the message at
    the mark still there with its own id (`high_key`) proves nothing was
    renumbered; otherwise the highest indexed message still there with its
    own id does, the vectors above it go and the mark comes down to it."""
    m = meta(conn)
    high = int(m.get("high_water", 0))
    if not high:
        return
    at = store.execute("SELECT id FROM main.messages WHERE rowid = ?", (high,)).fetchone()
    if at is not None and str(model.key(at[0] if at[0] is not None else high)) == m.get("high_key"):
        return
    keep_to, below = 0, high + 1
    while True:  # the indexed messages from the top, a batch at a time
        batch = conn.execute(
            "SELECT rowid, key FROM semantic_vectors WHERE rowid < ? ORDER BY rowid DESC LIMIT 1000",
            (below,),
        ).fetchall()
        if not batch:
            break
        found = dict(
            store.execute(
                "SELECT rowid, id FROM main.messages WHERE rowid BETWEEN ? AND ?",
                (batch[-1][0], batch[0][0]),
            ).fetchall()
        )
        same = [
            r for r, k in batch
            if r in found and model.key(found[r] if found[r] is not None else r) == k
        ]  # fmt: skip
        if same:
            keep_to = max(same)
            break
        below = batch[-1][0]
    conn.execute("BEGIN IMMEDIATE")
    _drop_above(conn, keep_to)
    _set(conn, high_water=keep_to, high_key=_key_at(store, keep_to))
    conn.execute("COMMIT")


def _key_at(store: sqlite3.Connection, rowid: int) -> str:
    row = store.execute("SELECT id FROM main.messages WHERE rowid = ?", (rowid,)).fetchone()
    return "" if row is None else str(model.key(row[0] if row[0] is not None else rowid))


def _drop_above(conn: sqlite3.Connection, rowid: int) -> None:
    np = _np()
    conn.execute("DELETE FROM semantic_vectors WHERE rowid > ?", (rowid,))
    conn.execute("DELETE FROM semantic_chunks WHERE first > ?", (rowid,))
    row = conn.execute(
        "SELECT id, rowids, bits FROM semantic_chunks WHERE last > ?", (rowid,)
    ).fetchone()
    if row is not None:
        _rewrite(conn, row, np.frombuffer(row[1], np.int64) <= rowid)


def update(
    conn: sqlite3.Connection,
    store: sqlite3.Connection,
    embedder: Callable[[], model.Embedder],
    progress: Callable[[int, int | None], None],
) -> int:
    """Embed the store's messages above the high-water mark, a chunk per
    transaction; returns how many messages were read."""
    np = _np()
    settle(conn, store)
    high = int(meta(conn).get("high_water", 0))
    total = behind(conn, store)
    if not total:
        return 0
    embed = embedder()
    if total > CHUNK:
        embed.for_many()
    done = 0
    progress(0, total)
    while True:
        rows = store.execute(
            "SELECT rowid, id, content FROM main.messages WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (high, CHUNK),
        ).fetchall()
        if not rows:
            break
        kept = [(r, i, c) for r, i, c in rows if isinstance(c, str) and c.strip()]
        vectors = np.zeros((0, model.DIMS), np.float32)
        for start in range(0, len(kept), READ_BATCH):
            part = embed.embed([c for _, _, c in kept[start : start + READ_BATCH]])
            vectors = np.concatenate((vectors, part))
        rowids = np.array([r for r, _, _ in kept], np.int64)
        keys = np.array([model.key(r if i is None else i) for r, i, _ in kept], np.int64)
        conn.execute("BEGIN IMMEDIATE")
        _append(conn, rowids, keys, vectors)
        high = rows[-1][0]
        last_id = rows[-1][1]
        _set(conn, high_water=high, high_key=model.key(last_id if last_id is not None else high))
        conn.execute("COMMIT")
        done += len(rows)
        progress(min(done, total), total)
    return done


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(signs, int8 codes, scales) of unit vectors."""
    np = _np()
    bits = np.packbits(vectors > 0, axis=1)
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return bits, codes, scales


def _append(conn: sqlite3.Connection, rowids, keys, vectors) -> None:
    """Add vectors after the last chunk's, filling it up to CHUNK first."""
    np = _np()
    bits, codes, scales = quantise(vectors)
    conn.executemany(
        "INSERT OR REPLACE INTO semantic_vectors(rowid, key, scale, code) VALUES (?, ?, ?, ?)",
        zip(rowids.tolist(), keys.tolist(), scales.tolist(), map(bytes, codes), strict=True),
    )
    bits = bits.tobytes()
    last = conn.execute(
        "SELECT id, n, rowids, bits FROM semantic_chunks ORDER BY id DESC LIMIT 1"
    ).fetchone()
    start = 0
    if last is not None and last[1] < CHUNK and len(rowids):
        room = CHUNK - last[1]
        merged_rows = last[2] + rowids[:room].tobytes()
        n = len(merged_rows) // 8
        conn.execute(
            "UPDATE semantic_chunks SET last = ?, n = ?, rowids = ?, bits = ? WHERE id = ?",
            (int(np.frombuffer(merged_rows, np.int64)[-1]), n, merged_rows,
             last[3] + bits[: room * BITS], last[0]),
        )  # fmt: skip
        start = room
    for i in range(start, len(rowids), CHUNK):
        j = min(i + CHUNK, len(rowids))
        conn.execute(
            "INSERT INTO semantic_chunks(first, last, n, rowids, bits) VALUES (?, ?, ?, ?, ?)",
            (int(rowids[i]), int(rowids[j - 1]), j - i, rowids[i:j].tobytes(),
             bits[i * BITS : j * BITS]),
        )  # fmt: skip


def _rewrite(conn: sqlite3.Connection, row: tuple, keep) -> None:
    """Keep only the `keep` (a mask) of chunk `row` (id, rowids, bits)."""
    np = _np()
    if keep.all():
        return
    if not keep.any():
        conn.execute("DELETE FROM semantic_chunks WHERE id = ?", (row[0],))
        return
    rowids = np.frombuffer(row[1], np.int64)[keep]
    bits = np.frombuffer(row[2], np.uint8).reshape(-1, BITS)[keep]
    conn.execute(
        "UPDATE semantic_chunks SET first = ?, last = ?, n = ?, rowids = ?, bits = ? WHERE id = ?",
        (int(rowids[0]), int(rowids[-1]), len(rowids), rowids.tobytes(), bits.tobytes(), row[0]),
    )


# --- forgetting ----------------------------------------------------------------------
def forget(path: Path, rowids: list[int]) -> int:
    """Delete the vectors of these messages.rowids (messages kaja deleted);
    returns how many went. Nothing to do without an index."""
    if not rowids or not path.exists():
        return 0
    np = _np() if _has_numpy() else None
    if np is None:  # the extra is gone but its index stayed: it goes whole
        if path.is_file():
            remove(path)
        return len(rowids)
    gone = np.unique(np.array(rowids, np.int64))
    try:
        return _forget(path, gone)
    except (Failed, Refused):  # no index of kaja's there (`doctor` says so): nothing of theirs
        return 0


def _forget(path: Path, gone) -> int:
    np = _np()
    removed = 0
    with open_index(path, create=False) as conn:
        if conn is None:
            return 0
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "DELETE FROM semantic_vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            ("[" + ",".join(map(str, gone.tolist())) + "]",),
        )
        for row in conn.execute(
            "SELECT id, rowids, bits FROM semantic_chunks WHERE last >= ? AND first <= ?",
            (int(gone[0]), int(gone[-1])),
        ).fetchall():
            keep = ~np.isin(np.frombuffer(row[1], np.int64), gone)
            removed += int((~keep).sum())
            _rewrite(conn, row, keep)
        conn.execute("COMMIT")
    return removed


def remove(path: Path) -> list[Path]:
    """Delete the index and its companions (`kaja wipe`); returns what went."""
    out = []
    for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        try:
            p.unlink()
            out.append(p)
        except FileNotFoundError:
            pass
    return out


# --- reading -------------------------------------------------------------------------
def status(path: Path) -> Status:
    size = sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
    try:
        with open_index(path, create=False) as conn:
            if conn is None:
                return Status(path, False, 0, None, 0, 0, None)
            m = meta(conn)
            vectors = conn.execute("SELECT ifnull(sum(n), 0) FROM semantic_chunks").fetchone()[0]
    except sqlite3.Error:
        return Status(path, True, size, None, 0, 0, None)
    return Status(path, True, size, m.get("model"), vectors, int(m.get("high_water", 0)),
                  m.get("store"))  # fmt: skip


def _has_numpy() -> bool:
    from importlib.util import find_spec

    return find_spec("numpy") is not None


def _np():
    import numpy

    return numpy


def forget_sessions(path: Path, conn: object, session_ids: list) -> int:
    """In the transaction deleting these sessions from the store `conn`, before
    it commits: delete their messages' vectors (none without an index, nor
    on a server: semantic search is local only). A failed commit leaves
    messages without vectors (`--reindex` embeds them again), never a
    deleted message's vector behind."""
    if not session_ids or not path.exists() or not isinstance(conn, sqlite3.Connection):
        return 0
    import json

    try:
        rowids = [
            r[0]
            for r in conn.execute(
                'SELECT rowid FROM main.messages WHERE "sessionId" IN'
                " (SELECT value FROM json_each(?))",
                (json.dumps([i if isinstance(i, int | float) else str(i) for i in session_ids]),),
            )
        ]
    except sqlite3.OperationalError:  # no messages table, or no sessionId: no vectors of theirs
        return 0
    return forget(path, rowids)
