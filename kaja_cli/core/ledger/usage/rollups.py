"""`kaja usage` from per-hour rollups of `calls`, `tools` and `runs` (issue 29).

Where they live: in the shared file itself, in tables of kaja's own
(`kaja_usage_calls`, `kaja_usage_tools`, `kaja_usage_runs`, with
`kaja_usage_state` and `kaja_usage_dirty`), because only there can they be
kept honest: SQLite triggers reach only tables of their own file, and a
rollup must be read in the same snapshot as the ledger rows it sums. A side
file would be a second file to keep in step with `--db`, `wipe`, `backup`
and `restore`, and could not know what changed in the first. Extra tables
and triggers leave the file Kaja's (`guard` reads telltales, not the absence
of others), `backup` copies them with the rows they sum (so a restored file
is consistent), `wipe` deletes them with the file, and the agent's writes and
the sync triggers are untouched: ours only append to `kaja_usage_dirty`.

What a rollup row is: the totals of the rows of one table in one *bucket*
(the first 13 characters of the row's time, `2026-11-30T08`, when they are
printable ASCII text; any other time, NULL, a number, a blob, is bucket 0)
and one combination of the columns `kaja usage` groups by. The state row of
a table holds `last_rowid` (W): the rollup of a bucket is the sum of that
bucket's rows with rowid <= W, unless the bucket is marked dirty.

How they stay honest (never guessed): rows past W are read raw (and folded
in on the next write), and triggers mark a bucket dirty whenever a row with
rowid <= W could have changed in it: an UPDATE (old and new bucket, and a row
an UPDATE OR REPLACE displaces), a DELETE, an INSERT at or below W (a reused
or explicit id), and the row an INSERT OR REPLACE displaces (which fires no
DELETE trigger in the agent's connections). A dirty bucket is read raw, and
recomputed on the next write. What triggers cannot see makes the rollup
invalid, and it is rebuilt from nothing: a trigger missing or different
(a table rebuilt by a migration drops them), the table's columns changed
(`shape`), `kaja usage reset` (which drops them all in its transaction), a
VACUUM that renumbered the rowids of `runs` (its key at W is checked).

Three levels: the hours (`kaja_usage_<t>`), each day's hours added up
(`_days`) and all time (`_all`, without the day), so that a report sums tens
or hundreds of rows whatever the ledger's size. Reading, in one query per
table and one snapshot: all time when there is no window and nothing is
dirty; else the whole, clean days, the whole, clean hours of the days a
window cuts or a dirty hour is in, and the raw rows of the dirty hours, of
the hours `--since`/`--until` cut in two (a time inside an hour) and past W.
Raw rows are found by rowid (past W), by an hour's range on an index of the
time column, or, for a table without one (`tools`), by the rowids the hour's
rows span (`kaja_usage_spans`). Sums
are REAL (`values.real_sum`), as the raw report's are: exact while each
figure is an integer below 2**53; a bucket holding anything else (a token
count that is text, a real, or past 2**53) is flagged `odd`, and the table
is then read raw so that every figure is the raw SQL's, bit for bit.

Writing (`catch_up`): before reading, in short transactions (at most CHUNK
rows each, so the agent is never kept waiting long), with a short lock wait:
dirty buckets recomputed, rows past W folded in. A file kaja may not write
(read-only, not Kaja's, the agent busy) is still answered: from the rollups
as they are plus the raw rows, or from the raw rows alone.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from kaja_cli.core import clock, values
from kaja_cli.core.ledger.report import report_queries

VERSION = 3
CHUNK = 250_000  # rows folded in per write transaction
MOST_BUCKETS = 400  # more dirty or cut buckets than this: the table is read (or rebuilt) whole
WAIT_MS = 200  # how long a read waits for the write lock before reading without writing
STATE = "kaja_usage_state"
DIRTY = "kaja_usage_dirty"
SPANS = "kaja_usage_spans"
PREFIX = "kaja_usage_"
SAFE = 9007199254740991  # 2**53 - 1: REAL sums of integers up to here are exact

_FRAME = (
    f'CREATE TABLE IF NOT EXISTS "{STATE}" (tbl TEXT PRIMARY KEY, last_rowid INTEGER NOT NULL,'
    " last_key, shape TEXT NOT NULL)",
    f'CREATE TABLE IF NOT EXISTS "{DIRTY}" (tbl TEXT NOT NULL, bucket, UNIQUE (tbl, bucket))',
    # The rowids an hour's rows (up to W) span: where to find them raw when the
    # table has no index on its time (`tools`), and a window cuts the hour.
    f'CREATE TABLE IF NOT EXISTS "{SPANS}" (tbl TEXT NOT NULL, bucket, lo INTEGER, hi INTEGER,'
    " UNIQUE (tbl, bucket))",
)


@dataclass(frozen=True)
class Source:
    """One ledger table and the rollup of it."""

    table: str  # calls, tools, runs
    time: str  # its time column
    dims: tuple[str, ...]  # the rollup's group columns (besides bucket)
    measures: tuple[str, ...]  # the rollup's sums (then `odd`)
    rowid_is_key: bool  # INTEGER PRIMARY KEY: VACUUM keeps the rowids

    @property
    def rollup(self) -> str:
        """The hours' rollup."""
        return f"{PREFIX}{self.table}"

    @property
    def all(self) -> str:
        """All time: every day added up, for a report with no window (a row per group)."""
        return f"{PREFIX}{self.table}_all"

    @property
    def days(self) -> str:
        """The days' rollup: each day's hours added up (a full read sums a row per day)."""
        return f"{PREFIX}{self.table}_days"


SOURCES = {
    "calls": Source(
        "calls", "at", ("day", "model", "source", "engine"),
        ("calls", "failed", "prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms"),
        True,
    ),
    "tools": Source("tools", "at", ("tool", "outcome"), ("calls", "duration_ms", "timed"), True),
    "runs": Source("runs", "started_at", ("status",), ("runs",), False),
}  # fmt: skip


# --- the SQL, built from the columns the table has ------------------------------------------
def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def bucket_sql(src: Source, cols: set[str], r: str = "") -> str:
    """The bucket of a row (`r` a prefix: "new.", "old.", "x.")."""
    if src.time not in cols:
        return "0"
    t = f"{r}{_q(src.time)}"
    return (
        f"CASE WHEN typeof({t}) = 'text' AND substr({t}, 1, 13) NOT GLOB '*[^ -~]*'"
        f" THEN substr({t}, 1, 13) ELSE 0 END"
    )


def _dim_sql(src: Source, cols: set[str], dim: str) -> str:
    if dim == "day":
        return clock.day_sql(_q(src.time)) if src.time in cols else "NULL"
    return _q(dim) if dim in cols else "NULL"


def _odd(cols: set[str], names: tuple[str, ...]) -> str:
    """SQL counting the rows whose sums would not be exact as REAL."""
    parts = [
        f"(typeof({_q(c)}) NOT IN ('null', 'integer') OR {_q(c)} NOT BETWEEN -{SAFE} AND {SAFE})"
        for c in names
        if c in cols
    ]
    return f"total({' OR '.join(parts)})" if parts else "0"


def _raw_measures(src: Source, cols: set[str]) -> list[str]:
    """Aggregates of raw rows, in the rollup's measure order, then `odd`."""
    s = values.real_sum
    if src.table == "calls":
        have = lambda c: s(_q(c)) if c in cols else "NULL"  # noqa: E731
        return [
            "COUNT(*)", s('"ok" = 0') if "ok" in cols else "NULL", have("prompt_tokens"),
            have("completion_tokens"), have("cached_tokens"), have("duration_ms"),
            _odd(cols, ("prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms")),
        ]  # fmt: skip
    if src.table == "tools":
        if "duration_ms" in cols:
            return [
                "COUNT(*)",
                s('"duration_ms"'),
                'COUNT("duration_ms")',
                _odd(cols, ("duration_ms",)),
            ]
        return ["COUNT(*)", "NULL", "0", "0"]
    return ["COUNT(*)", "0"]


def _merged_measures(src: Source) -> list[str]:
    """Aggregates of rollup (or partial) rows: counts add up, sums merge as REAL."""
    out = []
    for m in src.measures:
        if m in ("calls", "runs", "timed"):
            out.append(f"total({_q(m)})")
        else:
            out.append(values.real_sum(_q(m)))
    return [*out, 'total("odd")']


def shape(src: Source, cols: set[str]) -> str:
    """What the rollup was built with: a different one means it is rebuilt."""
    dims = ", ".join(_dim_sql(src, cols, d) for d in src.dims)
    return f"v{VERSION}|{bucket_sql(src, cols)}|{dims}|{', '.join(_raw_measures(src, cols))}"


def _rollup_ddl(src: Source) -> list[str]:
    columns = ", ".join(["bucket", *src.dims, *src.measures, "odd"])
    return [
        sql
        for table in (src.rollup, src.days, src.all)
        for sql in (
            f"CREATE TABLE IF NOT EXISTS {_q(table)} ({columns})",
            f"CREATE INDEX IF NOT EXISTS {_q(table + '_bucket')} ON {_q(table)} (bucket)",
        )
    ]


def day_sql(x: str) -> str:
    """SQL: the day bucket of an hour bucket (a bucket that is not an hour is its own day)."""
    return (
        f"CASE WHEN typeof({x}) = 'text' AND length({x}) = 13 THEN substr({x}, 1, 10) ELSE {x} END"
    )


def day_of(bucket: object) -> object:
    return bucket[:10] if isinstance(bucket, str) and len(bucket) == 13 else bucket


def triggers(src: Source, cols: set[str]) -> dict[str, str]:
    """The triggers that mark a bucket dirty (name -> CREATE statement)."""
    t, name = _q(src.table), src.table
    mark = f'INSERT OR IGNORE INTO "{DIRTY}" (tbl, bucket)'
    w = f"(SELECT last_rowid FROM \"{STATE}\" WHERE tbl = '{name}')"
    # The row an INSERT OR REPLACE / UPDATE OR REPLACE displaces: same rowid, or
    # same primary key where it is not the rowid (runs.id).
    same = "x.rowid = new.rowid" + (
        "" if src.rowid_is_key or "id" not in cols else " OR x.id = new.id"
    )
    displaced = f"{mark} SELECT '{name}', {bucket_sql(src, cols, 'x.')} FROM {t} AS x WHERE {same};"
    new, old = bucket_sql(src, cols, "new."), bucket_sql(src, cols, "old.")
    bodies = {
        "before_insert": f"BEFORE INSERT ON {t} BEGIN {displaced} END",
        "insert": f"AFTER INSERT ON {t} WHEN new.rowid <= {w}"
        f" BEGIN {mark} VALUES ('{name}', {new}); END",
        "before_update": f"BEFORE UPDATE ON {t} BEGIN {mark} VALUES ('{name}', {old}),"
        f" ('{name}', {new}); {displaced} END",
        "delete": f"AFTER DELETE ON {t} BEGIN {mark} VALUES ('{name}', {old}); END",
    }
    return {
        f"{PREFIX}{name}_{k}": f"CREATE TRIGGER {_q(f'{PREFIX}{name}_{k}')} {v}"
        for k, v in bodies.items()
    }


# --- is a rollup usable ----------------------------------------------------------------------
@dataclass
class State:
    last_rowid: int
    last_key: object
    shape: str


def _plain(conn: sqlite3.Connection, table: str) -> bool:
    """A rowid table whose columns compare as stored (no COLLATE): what rollups can mirror."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    sql = str(row[0] or "").upper() if row else ""
    return bool(sql) and "WITHOUT ROWID" not in sql and "COLLATE" not in sql


def _state(conn: sqlite3.Connection, src: Source, cols: set[str], have: dict) -> State | None:
    """The rollup's state when it can be trusted as it stands (dirty marks aside)."""
    if STATE not in have or DIRTY not in have or SPANS not in have:
        return None
    if src.rollup not in have or src.days not in have or src.all not in have:
        return None
    row = conn.execute(
        f'SELECT last_rowid, last_key, shape FROM "{STATE}" WHERE tbl = ?', (src.table,)
    ).fetchone()
    if row is None or row[2] != shape(src, cols) or not _plain(conn, src.table):
        return None
    want = triggers(src, cols)
    found = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?"
            " AND name LIKE ? ESCAPE '\\'",
            (src.table, PREFIX.replace("_", "\\_") + "%"),
        ).fetchall()
    )
    if found != want:
        return None
    state = State(int(row[0]), row[1], row[2])
    if not src.rowid_is_key and state.last_rowid and "id" in cols:
        # VACUUM renumbers the rowids of a table without INTEGER PRIMARY KEY.
        key = conn.execute(
            f"SELECT id FROM {_q(src.table)} WHERE rowid = ?", (state.last_rowid,)
        ).fetchone()
        if key is None or key[0] != state.last_key:
            return None
    return state


def _max_rowid(conn: sqlite3.Connection, src: Source) -> int:
    return conn.execute(f"SELECT max(rowid) FROM {_q(src.table)}").fetchone()[0] or 0


def _dirty(conn: sqlite3.Connection, src: Source) -> list:
    return [r[0] for r in conn.execute(f'SELECT bucket FROM "{DIRTY}" WHERE tbl = ?', (src.table,))]


# --- raw rows of some buckets ------------------------------------------------------------------
def _succ(bucket: str) -> str:
    """The least text above every text that starts with `bucket` (printable ASCII)."""
    return bucket[:-1] + chr(ord(bucket[-1]) + 1)


def _ranges(column: str, buckets: list) -> tuple[str, list]:
    """An index-friendly superset of the values starting with one of `buckets`
    ("1" when one of them has no range: bucket 0, or the empty text)."""
    if not buckets or not all(isinstance(b, str) and b for b in buckets):
        return "1", []
    params: list = []
    for b in buckets:
        params += [b, _succ(b)]
    return "(" + " OR ".join(f"({column} >= ? AND {column} < ?)" for _ in buckets) + ")", params


def _in_buckets(src: Source, cols: set[str], buckets: list) -> tuple[str, list]:
    """A condition picking the rows of `buckets` (an index range on the time column each)."""
    if not buckets:
        return "0", []
    marks = ", ".join("?" * len(buckets))
    ranges, params = _ranges(_q(src.time), buckets) if src.time in cols else ("1", [])
    return f"{bucket_sql(src, cols)} IN ({marks}) AND {ranges}", [*buckets, *params]


def _window(src: Source, cols: set[str], since: str | None, until: str | None) -> tuple[str, list]:
    """The raw report's window on this table (an undatable table matches nothing)."""
    if since is None and until is None:
        return "1", []
    if src.time not in cols:
        return "0", []
    # `+column`: never the index, which would walk the whole window; the rows
    # these parts read are picked by rowid or by an hour's range.
    parts, params = [], []
    if since is not None:
        parts.append(f"+{_q(src.time)} >= ?")
        params.append(since)
    if until is not None:
        parts.append(f"+{_q(src.time)} < ?")
        params.append(until)
    return " AND ".join(parts), params


def _cut(since: str | None, until: str | None) -> list:
    """The buckets `--since`/`--until` may cut in two: their prefixes, and bucket 0."""
    if since is None and until is None:
        return []
    out: set = {0}
    if since is not None:
        out |= {since[:k] for k in range(0, min(13, len(since)) + 1) if since[:k] != since}
    if until is not None:
        out |= {until[:k] for k in range(0, min(13, len(until)) + 1)}
    return sorted(out, key=repr)


def _whole(since: str | None, until: str | None) -> tuple[str, list]:
    """A condition on a rollup's bucket: every time it holds is inside the window."""
    parts, params = [], []
    if since is not None:
        parts.append("typeof(bucket) = 'text' AND bucket >= ?")
        params.append(since)
    if until is not None:
        parts.append(
            "typeof(bucket) = 'text' AND bucket < ? AND substr(?, 1, length(bucket)) <> bucket"
        )
        params += [until, until]
    return (" AND ".join(parts) or "1"), params


# --- reading ---------------------------------------------------------------------------------
def _key(src: Source, cols: set[str], by: str, raw: bool) -> list[str]:
    """The report's group columns, on the raw table or on the rollup."""
    if src.table == "calls":
        name = by
        if not raw:
            return [_q(name)]
        return [_dim_sql(src, cols, name)]
    if not raw:
        return [_q(d) for d in src.dims]
    return [_dim_sql(src, cols, d) for d in src.dims]


def _time_indexed(conn: sqlite3.Connection, src: Source, cols: set[str]) -> bool:
    """Whether an index of the table starts with its time column (`calls_at`, `runs_started`)."""
    if src.time not in cols:
        return False
    sql = (
        "SELECT 1 FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i"
        " WHERE i.seqno = 0 AND i.name = ? AND l.partial = 0 LIMIT 1"
    )
    return conn.execute(sql, (src.table, src.time)).fetchone() is not None


def _existing(conn: sqlite3.Connection, table: str, buckets: list) -> list:
    """Those of `buckets` the rollup `table` has rows of."""
    if not buckets:
        return []
    marks = ", ".join("?" * len(buckets))
    sql = f"SELECT DISTINCT bucket FROM {_q(table)} WHERE bucket IN ({marks})"
    return [r[0] for r in conn.execute(sql, buckets)]


def _not_in(expr: str, values_: list) -> tuple[str, list]:
    if not values_:
        return "", []
    return f" AND {expr} NOT IN ({', '.join('?' * len(values_))})", list(values_)


def _read(
    conn: sqlite3.Connection, src: Source, cols: set[str], state: State, by: str,
    since: str | None, until: str | None,
) -> list[tuple] | None:  # fmt: skip
    """The report's rows of one table from rollup + raw rows; None: read it raw.

    Days wholly inside the window, clean, from the days' rollup; the hours of
    the other days (cut by the window, or holding a dirty hour) from the
    hours' rollup when they are whole and clean; the rest from raw rows: the
    dirty hours, the hours the window cuts, and every row past W.
    """
    cut = _cut(since, until)
    dirty = _dirty(conn, src)
    # No window, nothing dirty: all time (but `--by day`, which all time does not keep).
    days = (
        src.all if not cut and not dirty and not (by == "day" and "day" in src.dims) else src.days
    )
    raw_hours = sorted({*dirty, *_existing(conn, src.rollup, cut)}, key=repr)
    low_days = sorted({*(day_of(b) for b in dirty), *_existing(conn, src.days, cut)}, key=repr)
    if len(raw_hours) > MOST_BUCKETS or len(low_days) > MOST_BUCKETS:
        return None
    win, win_p = _window(src, cols, since, until)
    whole, whole_p = _whole(since, until)
    rkey, key = _key(src, cols, by, True), _key(src, cols, by, False)
    n = len(key)
    names = ", ".join(f"k{i}" for i in range(n))
    sums = [f"m{i}" for i in range(len(src.measures) + 1)]
    sel_raw = ", ".join([*rkey, *_raw_measures(src, cols)])
    sel_roll = ", ".join([*key, *_merged_measures(src)])
    group = ", ".join(str(i + 1) for i in range(n))
    not_low, not_low_p = _not_in("bucket", low_days)
    parts = [
        (
            f"SELECT {sel_roll} FROM {_q(days)} WHERE {whole}{not_low} GROUP BY {group}",
            [*whole_p, *not_low_p],
        )
    ]
    if low_days:
        ranges, ranges_p = _ranges("bucket", low_days)
        not_raw, not_raw_p = _not_in("bucket", raw_hours)
        marks = ", ".join("?" * len(low_days))
        parts.append(
            (
                f"SELECT {sel_roll} FROM {_q(src.rollup)} WHERE {ranges}"
                f" AND {day_sql('bucket')} IN ({marks}) AND {whole}{not_raw} GROUP BY {group}",
                [*ranges_p, *low_days, *whole_p, *not_raw_p],
            )
        )
    not_raw, not_raw_p = _not_in(bucket_sql(src, cols), raw_hours)
    parts.append(
        (
            f"SELECT {sel_raw} FROM {_q(src.table)} WHERE rowid > ? AND {win}{not_raw}"
            f" GROUP BY {group}",
            [state.last_rowid, *win_p, *not_raw_p],
        )
    )
    if raw_hours:
        inb, inb_p = _in_buckets(src, cols, raw_hours)
        if not _time_indexed(conn, src, cols) and not set(raw_hours) & set(dirty):
            spans = conn.execute(
                f'SELECT lo, hi FROM "{SPANS}" WHERE tbl = ? AND bucket IN'
                f" ({', '.join('?' * len(raw_hours))})",
                [src.table, *raw_hours],
            ).fetchall()
            if len(spans) == len(raw_hours):  # else a full scan, as the raw SQL does
                inb += " AND (" + " OR ".join("rowid BETWEEN ? AND ?" for _ in spans) + ")"
                inb_p += [x for span in spans for x in span]
        parts.append(
            (
                f"SELECT {sel_raw} FROM {_q(src.table)} WHERE {inb} AND {win} GROUP BY {group}",
                [*inb_p, *win_p],
            )
        )
    merged = [
        f"total({c})" if m in ("calls", "runs", "timed", "odd") else values.real_sum(c)
        for c, m in zip(sums, [*src.measures, "odd"], strict=True)
    ]
    union = " UNION ALL ".join(f"SELECT * FROM ({sql})" for sql, _ in parts)
    sql = (
        f"WITH u({names}, {', '.join(sums)}) AS ({union})"
        f" SELECT {names}, {', '.join(merged)} FROM u GROUP BY {names}"
    )
    rows = conn.execute(sql, [x for _, p in parts for x in p]).fetchall()
    if any(r[-1] for r in rows):
        return None  # a figure that REAL sums may not add up exactly: read raw
    return [_shaped(src, r, n) for r in rows]


def _shaped(src: Source, row: tuple, n: int) -> tuple:
    """A merged row as the raw report query gives it (`report.fill` reads it)."""
    key, sums = row[:n], list(row[n:-1])
    if src.table == "calls":
        return (*key, int(sums[0]), *sums[1:])
    if src.table == "tools":
        return (*key, int(sums[0]), sums[1], int(sums[2]))
    return (*key, int(sums[0]))


def _raw(conn: sqlite3.Connection, have: dict, name: str, by: str, since, until) -> list[tuple]:
    queries, _ = report_queries(have, by, since, until)
    q = next(q for q in queries if q.name == name)
    return conn.execute(q.sql, q.params).fetchall()


def report_rows(
    conn: sqlite3.Connection, have: dict[str, set[str]], by: str,
    since: str | None, until: str | None,
) -> dict[str, list[tuple]]:  # fmt: skip
    """The rows of the report's three queries (`report.fill`), from rollups where they
    are trustworthy and raw rows elsewhere, in the caller's snapshot."""
    rows: dict[str, list[tuple]] = {}
    for name, src in SOURCES.items():
        cols = have.get(name)
        if cols is None:
            continue
        state = _state(conn, src, cols, have)
        got = None if state is None else _read(conn, src, cols, state, by, since, until)
        rows[name] = got if got is not None else _raw(conn, have, name, by, since, until)
    return rows


def counted(conn: sqlite3.Connection, have: dict[str, set[str]], table: str) -> int | None:
    """How many rows `table` (`calls`, `tools`, `runs`) holds, from its rollup plus
    the raw rows it does not cover, in the caller's snapshot; None when there is
    no rollup to trust (then a count of the table itself is the answer)."""
    src, cols = SOURCES.get(table), have.get(table)
    if src is None or cols is None:
        return None
    state = _state(conn, src, cols, have)
    rows = None if state is None else _read(conn, src, cols, state, "model", None, None)
    if rows is None:
        return None
    n = len(_key(src, cols, "model", False))  # each row: its key, then its count
    return sum(int(r[n]) for r in rows)


# --- writing ----------------------------------------------------------------------------------
def needs_writing(conn: sqlite3.Connection, have: dict[str, set[str]]) -> bool:
    """Whether a write would bring some rollup up to date (read-only check)."""
    for name, src in SOURCES.items():
        cols = have.get(name)
        if cols is None:
            continue
        state = _state(conn, src, cols, have)
        if state is None:
            if _plain(conn, name):
                return True
            continue
        if _dirty(conn, src) or _max_rowid(conn, src) > state.last_rowid:
            return True
    return False


def drop(conn: sqlite3.Connection, tables: list[str] | None = None) -> None:
    """Remove kaja's rollups (of `tables`, or all) and their triggers, in the caller's
    transaction: `kaja usage reset` does, and the next `kaja usage` builds them again."""
    names = list(SOURCES) if tables is None else tables
    for (trigger,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
        (PREFIX.replace("_", "\\_") + "%",),
    ).fetchall():
        table = next((t for t in names if trigger.startswith(f"{PREFIX}{t}_")), None)
        if table is not None:
            conn.execute(f"DROP TRIGGER IF EXISTS {_q(trigger)}")
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for t in names:
        for table in (SOURCES[t].rollup, SOURCES[t].days, SOURCES[t].all):
            if table in present:
                conn.execute(f"DROP TABLE {_q(table)}")
    for meta in (STATE, DIRTY, SPANS):
        if meta in present:
            marks = ", ".join("?" * len(names))
            conn.execute(f'DELETE FROM "{meta}" WHERE tbl IN ({marks})', names)
    if tables is None:
        for meta in (STATE, DIRTY, SPANS):
            if meta in present:
                conn.execute(f'DROP TABLE "{meta}"')


def _build_sql(src: Source, cols: set[str]) -> tuple[str, str]:
    """(SELECT list, GROUP BY list) aggregating raw rows into rollup rows."""
    dims = [_dim_sql(src, cols, d) for d in src.dims]
    select = ", ".join([f"{bucket_sql(src, cols)} AS b", *dims, *_raw_measures(src, cols)])
    group = ", ".join(["b", *(f"{i + 2}" for i in range(len(dims)))])
    return select, group


def _columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))}


def _merge_sql(src: Source, first: int) -> list[str]:
    """Merging aggregates of rollup rows whose sums start at column c{first}."""
    return [
        f"total(c{first + i})"
        if m in ("calls", "runs", "timed", "odd")
        else values.real_sum(f"c{first + i}")
        for i, m in enumerate([*src.measures, "odd"])
    ]


def _fold(
    conn: sqlite3.Connection, src: Source, select: str, group: str, where: str, params: list,
    *, new_rows: bool,
) -> list:  # fmt: skip
    """Add the aggregate of the rows `where` picks to the hours' rollup, merging the
    hours it has (and, `new_rows`, to the all-time rollup); the hours it touched."""
    roll = _q(src.rollup)
    ncols = 1 + len(src.dims) + len(src.measures) + 1
    names = ", ".join(f"c{i}" for i in range(ncols))
    fold = f"temp.{_q(PREFIX + 'fold_' + src.table)}"
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {fold[5:]} ({names})")
    conn.execute(f"DELETE FROM {fold}")
    conn.execute(
        f"INSERT INTO {fold} SELECT {select} FROM {_q(src.table)} WHERE {where} GROUP BY {group}",
        params,
    )
    touched = [r[0] for r in conn.execute(f"SELECT DISTINCT c0 FROM {fold}")]
    bucket = bucket_sql(src, _columns_of(conn, src.table))
    conn.execute(
        f'INSERT INTO "{SPANS}" (tbl, bucket, lo, hi) SELECT ?, {bucket} AS b, min(rowid),'
        f" max(rowid) FROM {_q(src.table)} WHERE {where} GROUP BY b"
        " ON CONFLICT (tbl, bucket) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi)",
        [src.table, *params],
    )
    dims = [f"c{i + 1}" for i in range(len(src.dims))]
    if new_rows and touched:
        _replace_all(conn, src, f"SELECT {names} FROM {fold} UNION ALL SELECT * FROM {_q(src.all)}")
    conn.execute(f"INSERT INTO {fold} SELECT * FROM {roll} WHERE bucket IN (SELECT c0 FROM {fold})")
    conn.execute(f"DELETE FROM {roll} WHERE bucket IN (SELECT c0 FROM {fold})")
    conn.execute(
        f"INSERT INTO {roll} SELECT c0, {', '.join([*dims, *_merge_sql(src, 1 + len(dims))])}"
        f" FROM {fold} GROUP BY {', '.join(['c0', *dims])}"
    )
    conn.execute(f"DELETE FROM {fold}")
    return touched


def _replace_all(conn: sqlite3.Connection, src: Source, rows_sql: str) -> None:
    """The all-time rollup made of `rows_sql`'s rollup rows, added up per group."""
    ncols = 1 + len(src.dims) + len(src.measures) + 1
    names = ", ".join(f"c{i}" for i in range(ncols))
    dims = [f"c{i + 1}" for i in range(len(src.dims))]
    merged = _merge_sql(src, 1 + len(dims))
    # The day is left out (NULL): all time is one row per model, source and engine;
    # `--by day` reads the days.
    kept = [("NULL" if d == "day" else c) for d, c in zip(src.dims, dims, strict=True)]
    group = [c for d, c in zip(src.dims, dims, strict=True) if d != "day"] or ["1"]
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_q(PREFIX + 'all_' + src.table)} ({names})")
    tmp = f"temp.{_q(PREFIX + 'all_' + src.table)}"
    conn.execute(f"DELETE FROM {tmp}")
    conn.execute(
        f"INSERT INTO {tmp} WITH r({names}) AS ({rows_sql})"
        f" SELECT NULL, {', '.join([*kept, *merged])} FROM r GROUP BY {', '.join(group)}"
    )
    conn.execute(f"DELETE FROM {_q(src.all)}")
    conn.execute(f"INSERT INTO {_q(src.all)} SELECT * FROM {tmp}")
    conn.execute(f"DELETE FROM {tmp}")


def _redo_days(conn: sqlite3.Connection, src: Source, hours: list) -> None:
    """Add up again the days of these hours, from the hours' rollup."""
    days = sorted({day_of(h) for h in hours}, key=repr)
    for i in range(0, len(days), 200):
        some = days[i : i + 200]
        marks = ", ".join("?" * len(some))
        conn.execute(f"DELETE FROM {_q(src.days)} WHERE bucket IN ({marks})", some)
        ranges, ranges_p = _ranges("bucket", some)
        dims = list(src.dims)
        merged = [
            f"total({_q(m)})" if m in ("calls", "runs", "timed", "odd") else values.real_sum(_q(m))
            for m in [*src.measures, "odd"]
        ]
        conn.execute(
            f"INSERT INTO {_q(src.days)} SELECT {day_sql('bucket')} AS d,"
            f" {', '.join([*(_q(d) for d in dims), *merged])} FROM {_q(src.rollup)}"
            f" WHERE {ranges} AND {day_sql('bucket')} IN ({marks})"
            f" GROUP BY d, {', '.join(_q(d) for d in dims)}",
            [*ranges_p, *some],
        )


def _set_state(conn: sqlite3.Connection, src: Source, cols: set[str], last: int) -> None:
    key = None
    if not src.rowid_is_key and last and "id" in cols:
        row = conn.execute(f"SELECT id FROM {_q(src.table)} WHERE rowid = ?", (last,)).fetchone()
        key = row[0] if row else None
    conn.execute(
        f'INSERT OR REPLACE INTO "{STATE}" (tbl, last_rowid, last_key, shape) VALUES (?, ?, ?, ?)',
        (src.table, last, key, shape(src, cols)),
    )


def _start(conn: sqlite3.Connection, src: Source, cols: set[str]) -> State:
    """A new, empty rollup of `src` with its triggers (an old one goes first)."""
    drop(conn, [src.table])
    for sql in (*_FRAME, *_rollup_ddl(src)):
        conn.execute(sql)
    for sql in triggers(src, cols).values():
        conn.execute(sql)
    lowest = conn.execute(f"SELECT min(rowid) FROM {_q(src.table)}").fetchone()[0]
    start = min(0, (lowest or 1) - 1)  # rowids may be 0 or negative (an explicit id)
    _set_state(conn, src, cols, start)
    return State(start, None, "")


def catch_up(conn: sqlite3.Connection) -> None:
    """Bring every rollup up to date, in short write transactions (BEGIN IMMEDIATE
    each; the caller's connection waits for the lock as it was opened to)."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import schema

    for name, src in SOURCES.items():
        with db.transaction(conn):
            have = schema.present_columns(conn)
            cols = have.get(name)
            if cols is None or not _plain(conn, name):
                if cols is not None and src.rollup in have:
                    drop(conn, [name])
                continue
            state = _state(conn, src, cols, have)
            if state is None:
                state = _start(conn, src, cols)
            select, group = _build_sql(src, cols)
            dirty = _dirty(conn, src)
            if len(dirty) > MOST_BUCKETS:
                state = _start(conn, src, cols)
            elif dirty:
                marks = ", ".join("?" * len(dirty))
                conn.execute(f"DELETE FROM {_q(src.rollup)} WHERE bucket IN ({marks})", dirty)
                conn.execute(
                    f'DELETE FROM "{SPANS}" WHERE tbl = ? AND bucket IN ({marks})', [name, *dirty]
                )
                inb, inb_p = _in_buckets(src, cols, dirty)
                where = f"rowid <= ? AND {inb}"
                _fold(conn, src, select, group, where, [state.last_rowid, *inb_p], new_rows=False)
                _redo_days(conn, src, dirty)
                names = ", ".join(["bucket", *src.dims, *src.measures, "odd"])
                _replace_all(conn, src, f"SELECT {names} FROM {_q(src.days)}")
                conn.execute(
                    f'DELETE FROM "{DIRTY}" WHERE tbl = ? AND bucket IN ({marks})', [name, *dirty]
                )
        while True:
            with db.transaction(conn):
                have = schema.present_columns(conn)
                if have.get(name) != cols or (state := _state(conn, src, cols, have)) is None:
                    break  # changed meanwhile: the next read starts it again
                last = state.last_rowid
                top = conn.execute(
                    f"SELECT rowid FROM {_q(src.table)} WHERE rowid > ? ORDER BY rowid"
                    " LIMIT 1 OFFSET ?",
                    (last, CHUNK - 1),
                ).fetchone()
                upto = top[0] if top else _max_rowid(conn, src)
                if upto <= last:
                    break
                where, params = "rowid > ? AND rowid <= ?", [last, upto]
                touched = _fold(conn, src, select, group, where, params, new_rows=True)
                _redo_days(conn, src, touched)
                _set_state(conn, src, cols, upto)
