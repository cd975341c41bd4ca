"""The semantic index: kaja's own side database of message vectors,
`<state dir>/semantic.db` (`Paths.semantic_db`). The agent's files are only read.

The tables, for the passes of a search (`rank` reads them):
- `semantic_centroids`: once the index holds `TRAIN_AT` vectors, it is cut
  into clusters of similar vectors (spherical k-means, about √n of them);
  each cluster's centre, float32. A search looks only at the clusters whose
  centres are nearest the query (an inverted-file index);
- `semantic_chunks`: the vectors of a cluster, up to `CHUNK` a row, with
  their rowids (int64) and signs (`DIMS / 8` bytes) as two blobs read whole:
  the candidates are ranked by the Hamming distance of their signs to the
  query's. Cluster `PENDING` holds the vectors not yet placed (all of them
  before the first clustering); every search reads it whole;
- `semantic_vectors`: one row per message (its rowid), the vector
  quantised to int8 with its scale, and a key of the message's id
  (`model.key`: a rowid the agent gave to another message no longer
  matches): the best candidates are re-ranked by cosine on them, each
  read by its rowid;
- `semantic_vocab`, `semantic_merges`: the tokenizer's, for a query (`bpe`).
1M messages: 40 MB of chunks, about 270 MB of vectors.

Built incrementally: `update` embeds the messages whose rowid is above the
high-water mark (`meta.high_water`) into `PENDING`, committing each chunk
with the mark, so an interrupted build resumes where it stopped; then
`organise` clusters the index (first at `TRAIN_AT` vectors, again each time
it has grown `GROW` times) or places the pending vectors in their clusters
once there are `PENDING_MAX` of them, each in one transaction. A message kaja
deletes takes its vector along (`forget`); one the agent deleted itself is
dropped by the search, which joins every candidate back to the messages.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.conversations.semantic import bpe, model
from kaja_cli.errors import Failed, Refused

if TYPE_CHECKING:
    import numpy as np

FILE_NAME = "semantic.db"
CHUNK = 4096  # vectors per row of `chunks`
READ_BATCH = 256  # messages embedded at a time (their tokens' rows are the build's memory)
VERSION = "4"
BITS = model.DIMS // 8
PENDING = -1  # the cluster of vectors not yet placed in one
TRAIN_AT = 32_768  # vectors: below, a search reads every sign (1 MB); above, the nearest clusters
GROW = 4  # clustered again when the index is this many times the size it was clustered at
PENDING_MAX = 16_384  # vectors waiting to be placed in their clusters
TRAIN_SAMPLE = 40  # vectors per cluster the centres are learnt from
TRAIN_ROUNDS = 10
ASSIGN_BATCH = 2048  # vectors compared with every centre at a time (their scores are the memory)

SCHEMA = """
CREATE TABLE IF NOT EXISTS semantic_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS semantic_chunks (
    id INTEGER PRIMARY KEY,
    cluster INTEGER NOT NULL,  -- semantic_centroids.cluster, or PENDING (-1)
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
CREATE INDEX IF NOT EXISTS semantic_chunks_cluster ON semantic_chunks(cluster, n);  -- sizes, read alone
CREATE TABLE IF NOT EXISTS semantic_centroids (
    cluster INTEGER PRIMARY KEY,
    vector BLOB NOT NULL        -- DIMS float32, unit length
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
            if tables and meta(conn).get("version") != VERSION:  # another layout: built again
                conn.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in sorted(tables)))
            conn.executescript(SCHEMA + bpe.SCHEMA)
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
    conn.execute("DELETE FROM semantic_centroids")
    conn.execute("DELETE FROM semantic_meta")
    bpe.store_tables(conn, model.files()[1])
    _set(conn, version=VERSION, model=model.NAME, store=store, high_water=0, trained_at=0)
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
    for row in conn.execute(
        "SELECT id, rowids, bits FROM semantic_chunks WHERE last > ?", (rowid,)
    ).fetchall():
        _rewrite(conn, row, np.frombuffer(row[1], np.int64) <= rowid)


def update(
    conn: sqlite3.Connection,
    store: sqlite3.Connection,
    embedder: Callable[[], model.Embedder],
    progress: Callable[[int, int | None], None],
) -> int:
    """Embed the store's messages above the high-water mark, a chunk per
    transaction; returns how many messages were read (`organise` comes after)."""
    settle(conn, store)
    high = int(meta(conn).get("high_water", 0))
    total = behind(conn, store)
    if not total:
        return 0
    np = _np()
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
    """Add vectors to the index, not yet placed in a cluster (`PENDING`)."""
    bits, codes, scales = quantise(vectors)
    conn.executemany(
        "INSERT OR REPLACE INTO semantic_vectors(rowid, key, scale, code) VALUES (?, ?, ?, ?)",
        zip(rowids.tolist(), keys.tolist(), scales.tolist(), map(bytes, codes), strict=True),
    )
    _add(conn, PENDING, rowids, bits)


def _add(conn: sqlite3.Connection, cluster: int, rowids, bits) -> None:
    """Add signs to a cluster's chunks, filling its last one up to CHUNK first."""
    np = _np()
    bits = bits.tobytes()
    last = conn.execute(
        "SELECT id, n, rowids, bits FROM semantic_chunks WHERE cluster = ? ORDER BY id DESC LIMIT 1",
        (cluster,),
    ).fetchone()
    start = 0
    if last is not None and last[1] < CHUNK and len(rowids):
        room = CHUNK - last[1]
        merged = np.concatenate((np.frombuffer(last[2], np.int64), rowids[:room]))
        conn.execute(
            "UPDATE semantic_chunks SET first = ?, last = ?, n = ?, rowids = ?, bits = ? WHERE id = ?",
            (int(merged.min()), int(merged.max()), len(merged), merged.tobytes(),
             last[3] + bits[: room * BITS], last[0]),
        )  # fmt: skip
        start = room
    for i in range(start, len(rowids), CHUNK):
        part = rowids[i : i + CHUNK]
        conn.execute(
            "INSERT INTO semantic_chunks(cluster, first, last, n, rowids, bits)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (cluster, int(part.min()), int(part.max()), len(part), part.tobytes(),
             bits[i * BITS : (i + len(part)) * BITS]),
        )  # fmt: skip


# --- clustering ----------------------------------------------------------------------
def organise(conn: sqlite3.Connection) -> None:
    """Cluster the index when it reached `TRAIN_AT` vectors or grew `GROW`
    times since it was clustered; otherwise place the pending vectors in
    their clusters once there are `PENDING_MAX` of them. Without either,
    nothing (and numpy is not imported: a search of an index up to date
    needs none)."""
    counts = dict(conn.execute(
        "SELECT cluster = ?, ifnull(sum(n), 0) FROM semantic_chunks GROUP BY cluster = ?",
        (PENDING, PENDING),
    ).fetchall())  # fmt: skip
    pending, placed = counts.get(1, 0), counts.get(0, 0)
    trained = int(meta(conn).get("trained_at", 0) or 0)
    total = pending + placed
    if (not trained and total >= TRAIN_AT) or (trained and total >= GROW * trained):
        train(conn)
    elif trained and pending >= PENDING_MAX:
        _place(conn)


def train(conn: sqlite3.Connection, seed: int = 0) -> None:
    """Learn √n cluster centres from a sample and put every vector in the
    cluster of its nearest centre, in one transaction."""
    np = _np()
    before = _version(conn)
    rowids, bits = _all_signs(conn)
    if not len(rowids):
        return
    k = int(min(4096, max(1, round(len(rowids) ** 0.5))))
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(rowids, size=min(len(rowids), k * TRAIN_SAMPLE), replace=False))
    codes = np.empty((len(sample), model.DIMS), np.int8)  # int8 kept: a quarter of float32
    for start in range(0, len(sample), ASSIGN_BATCH):
        codes[start : start + ASSIGN_BATCH] = _codes_of(conn, sample[start : start + ASSIGN_BATCH])
    centres = _unit(codes[rng.choice(len(codes), size=k, replace=False)])
    for _ in range(TRAIN_ROUNDS):
        sums = np.zeros_like(centres)
        for start in range(0, len(codes), ASSIGN_BATCH):
            points = _unit(codes[start : start + ASSIGN_BATCH])
            np.add.at(sums, _nearest_centre(points, centres), points)
        empty = ~sums.any(axis=1)  # a centre nobody chose starts again at a random point
        sums[empty] = _unit(codes[rng.choice(len(codes), size=int(empty.sum()))])
        centres = _unit(sums)
    clusters = np.empty(len(rowids), np.int32)
    for start in range(0, len(rowids), ASSIGN_BATCH):
        part = rowids[start : start + ASSIGN_BATCH]
        clusters[start : start + len(part)] = _nearest_centre(_vectors_of(conn, part), centres)
    conn.execute("BEGIN IMMEDIATE")
    if _changed(conn, before):
        return
    conn.execute("DELETE FROM semantic_chunks")
    conn.execute("DELETE FROM semantic_centroids")
    conn.executemany(
        "INSERT INTO semantic_centroids(cluster, vector) VALUES (?, ?)",
        ((i, c.astype(np.float32).tobytes()) for i, c in enumerate(centres)),
    )
    _add_each(conn, clusters, rowids, bits)
    _set(conn, trained_at=len(rowids))
    conn.execute("COMMIT")


def _place(conn: sqlite3.Connection) -> None:
    """Move the pending vectors into the clusters of their nearest centres."""
    np = _np()
    before = _version(conn)
    centres = _centres(conn)
    if centres is None:
        return
    rows = conn.execute(
        "SELECT rowids, bits FROM semantic_chunks WHERE cluster = ?", (PENDING,)
    ).fetchall()
    rowids = np.concatenate([np.frombuffer(r[0], np.int64) for r in rows])
    bits = np.concatenate([np.frombuffer(r[1], np.uint8).reshape(-1, BITS) for r in rows])
    clusters = np.concatenate([
        _nearest_centre(_vectors_of(conn, rowids[i : i + ASSIGN_BATCH]), centres)
        for i in range(0, len(rowids), ASSIGN_BATCH)
    ])  # fmt: skip
    conn.execute("BEGIN IMMEDIATE")
    if _changed(conn, before):
        return
    conn.execute("DELETE FROM semantic_chunks WHERE cluster = ?", (PENDING,))
    _add_each(conn, clusters, rowids, bits)
    conn.execute("COMMIT")


def _add_each(conn: sqlite3.Connection, clusters, rowids, bits) -> None:
    """Add each vector to its cluster's chunks (`clusters[i]` is vector i's),
    a cluster at a time, in the order they were read."""
    np = _np()
    order = np.argsort(clusters, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(clusters[order])) + 1):
        if len(group):
            _add(conn, int(clusters[group[0]]), rowids[group], bits[group])


def _version(conn: sqlite3.Connection) -> int:
    """SQLite's count of other connections' commits to the index, as this one sees it."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


def _changed(conn: sqlite3.Connection, before: int) -> bool:
    """In the write transaction: whether another kaja committed to the index
    since `before` (it added or forgot vectors this one read): then this one
    rolls back, and the next search does the work on what is there."""
    if _version(conn) != before:
        conn.execute("ROLLBACK")
        return True
    return False


def _centres(conn: sqlite3.Connection):
    np = _np()
    rows = conn.execute("SELECT vector FROM semantic_centroids ORDER BY cluster").fetchall()
    if not rows:
        return None
    return np.frombuffer(b"".join(r[0] for r in rows), np.float32).reshape(len(rows), -1)


def _nearest_centre(points, centres):
    np = _np()
    out = np.empty(len(points), np.int32)
    for start in range(0, len(points), ASSIGN_BATCH):
        out[start : start + ASSIGN_BATCH] = np.argmax(
            points[start : start + ASSIGN_BATCH] @ centres.T, axis=1
        )
    return out


def _all_signs(conn: sqlite3.Connection):
    """Every vector's rowid and signs, in the chunks' order (rowid order
    before the first clustering; no copy sorted otherwise: 40 MB at 1M)."""
    np = _np()
    total = conn.execute("SELECT ifnull(sum(n), 0) FROM semantic_chunks").fetchone()[0]
    rowids = np.empty(total, np.int64)
    bits = np.empty((total, BITS), np.uint8)
    at = 0
    for n, r, b in conn.execute("SELECT n, rowids, bits FROM semantic_chunks"):
        rowids[at : at + n] = np.frombuffer(r, np.int64)
        bits[at : at + n] = np.frombuffer(b, np.uint8).reshape(n, BITS)
        at += n
    return rowids[:at], bits[:at]


def _vectors_of(conn: sqlite3.Connection, rowids):
    """The unit vectors (float32, from their int8 codes) of these rowids, in their order."""
    return _unit(_codes_of(conn, rowids))


def _codes_of(conn: sqlite3.Connection, rowids):
    """The int8 codes of these rowids, in their order (zeros for one forgotten
    since its signs were read: `_changed` then rolls the work back)."""
    np = _np()
    found = dict(conn.execute(
        "SELECT rowid, code FROM semantic_vectors WHERE rowid IN (SELECT value FROM json_each(?))",
        ("[" + ",".join(map(str, rowids.tolist())) + "]",),
    ).fetchall())  # fmt: skip
    none = bytes(model.DIMS)
    codes = np.frombuffer(b"".join(found.get(r, none) for r in rowids.tolist()), np.int8)
    return codes.reshape(len(rowids), model.DIMS)


def _unit(rows):
    """Rows as float32 of length 1 (a zero row stays zero)."""
    np = _np()
    out = rows.astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]  # no temporary of out's size
    np.divide(out, norms, out=out, where=norms > 0)
    return out


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
        (int(rowids.min()), int(rowids.max()), len(rowids), rowids.tobytes(), bits.tobytes(),
         row[0]),
    )  # fmt: skip


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
