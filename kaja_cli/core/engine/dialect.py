"""The two SQL dialects the query functions speak: SQLite's and PostgreSQL's.

The core writes one query text for both engines wherever they differ only in
spelling; the spelling comes from here. `of(conn)` is the dialect of a
connection: a `sqlite3.Connection` speaks SQLite, the server's connection
(`postgres.Connection`) says `POSTGRES`; a store says which its engine
speaks (`Store.dialect`). Placeholders are not here: queries use `?` (and
`:name`), and the PostgreSQL connection rewrites them. The dialect also
answers what a connection's database holds (`table_names`, `columns`): the
catalog is spelled differently too.

Where the engines truly differ (full-text search, the schema's own
bookkeeping) a feature holds one skeleton and two engine parts instead
(`conversations.search.local` and `.server`, asked of `store.part`), or
one module per engine (`store.schema` and `store.server.schema`).

Imports nothing heavy: the listing commands load it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kaja_cli.core import values


class Dialect:
    """SQLite's spelling; `Postgres` overrides what PostgreSQL spells otherwise."""

    name = "sqlite"
    integer = "INTEGER"  # CAST(… AS integer): 64-bit in SQLite, BIGINT in PostgreSQL
    limit_all = "-1"  # LIMIT that keeps every row
    rowid = "rowid"  # the order rows were stored in
    empty_json_array = "json('[]')"
    # The connection hands text back as its UTF-8 bytes when asked (sqlite3's
    # `text_factory`), so a long result goes out without a decode and encode.
    text_as_bytes = True
    # SQLite writes the plainest messages' Markdown and HTML itself
    # (`conversations.pieces`: typeof, GLOB, instr, char).
    writes_pieces = True
    # A session's messages in their order: by `seq` alone when it is set and
    # never repeated (one count of the index), so SQLite reads them in the
    # index's order instead of carrying every row through a sort by
    # (seq, createdAt, id), which its index does not hold whole.
    checks_seq_order = True
    # A join of two tables read in the order written: SQLite's planner keeps
    # the left table outer with CROSS JOIN, where its statistics (one average
    # per index: the runs with no thread, 185,000 NULLs, counted as 63) would
    # pick the wrong side. PostgreSQL's planner counts NULLs and picks itself.
    join_in_order = "CROSS JOIN"

    def equals_ignoring_case(self, expr: str) -> str:
        """`expr` equal to the next `?`, ASCII letters compared without case."""
        return f"{expr} = ? COLLATE NOCASE"

    def glob_ignoring_case(self, expr: str, pattern: str) -> tuple[str, str]:
        """`expr` matching the GLOB `pattern` (`*`, `?`, `[…]`), ASCII letters
        without case: the condition and its one parameter."""
        return f"lower({expr}) GLOB lower(?)", pattern

    def json_value(self, expr: str, *, text: bool = False) -> str:
        """A column as a JSON value: SQLite's json_object refuses BLOBs (shown as
        hex) and writes an infinite REAL as `Inf`, which is not JSON (shown as
        text). `text`: a column of TEXT affinity (`text_columns`), which holds
        no number, only text, BLOBs and NULL."""
        if expr == "NULL":
            return expr
        # Told apart by comparisons, not typeof() (a function call per value:
        # a sixth of a long JSON export's SQLite time, issue 29). SQLite orders
        # NULL < numbers < text < BLOB; unary + leaves the value as it is but
        # drops the column's affinity, so the literals are compared as written.
        # A finite number, the usual value of a number's column, is told by
        # one BETWEEN (text and BLOBs sort after every number); what is left
        # below '' is an infinity.
        x, big = f"+({expr})", "1.7976931348623157e308"
        blob = f"WHEN {x} >= X'' THEN hex({expr}) ELSE {expr} END"
        if text:
            return f"CASE {blob}"
        return (
            f"CASE WHEN {x} BETWEEN -{big} AND {big} THEN {expr}"
            f" WHEN {x} < '' THEN CAST({expr} AS TEXT) {blob}"
        )

    def text_columns(self, conn: Any, table: str) -> frozenset[str]:
        """The columns of `table` (a table, not a view) of TEXT affinity, by
        SQLite's rule for the declared type: a number stored there becomes text."""
        rows = conn.execute(
            "SELECT p.name, upper(p.type) FROM sqlite_master AS m, pragma_table_info(m.name) AS p"
            " WHERE m.type = 'table' AND m.name = ?",
            (table,),
        )
        return frozenset(
            n for n, t in rows
            if "INT" not in t and any(k in t for k in ("CHAR", "CLOB", "TEXT"))
        )  # fmt: skip

    def no_index(self, expr: str) -> str:
        """`expr`, kept off the planner's indexes (SQLite: unary `+`)."""
        return "+" + expr

    def byte_length(self, expr: str) -> str:
        """The bytes of a text column's value as stored (UTF-8); 0 for NULL."""
        return f"coalesce(length(CAST({expr} AS BLOB)), 0)"

    # A SELECT's rows locked until the transaction ends (appended to it). SQLite
    # has one writer: `BEGIN IMMEDIATE` already holds every row.
    lock_rows = ""

    def real_sum(self, expr: str) -> str:
        """`expr` summed as REAL, never "integer overflow" (`values.real_sum`)."""
        return values.real_sum(expr)

    def as_number(self, condition: str) -> str:
        """A condition as the number 1 or 0, to be summed (SQLite's already is)."""
        return condition

    def json_parsed(self, expr: str) -> str:
        """A JSON text column as a JSON value: parsed when it is JSON nested at
        most `values.JSON_DEPTH` deep, else the text (as `values.loads` reads).

        The depth is asked of SQLite itself, cheapest test first: a short
        text, or one with few brackets, cannot nest deeper; else the text
        inside as many more brackets as SQLite's own limit leaves over the
        depth allowed must still be valid. (Deeper than SQLite's limit,
        json_valid() is false; the JSON built around a value nesting just
        under it would be refused whole: "malformed JSON".)"""
        if expr == "NULL":
            return expr
        cap = values.JSON_DEPTH
        pad = sqlite_json_depth() - cap
        shallow = (
            f"(length({expr}) <= {2 * cap}"
            f" OR length({expr}) - length(replace(replace({expr}, '[', ''), '{{', '')) <= {cap}"
            f" OR json_valid(printf('%.*c', {pad}, '[') || {expr} || printf('%.*c', {pad}, ']')))"
        )
        # SQLite's JSON functions stop at a NUL: `{"a":1}` NUL `tail` is valid
        # to json_valid() and json() returns it without its tail. Such a value
        # is text (as Python's parser reads it), written whole.
        # NULL first, as most messages' parts are: no json_valid() call for it
        # (28M of a 76,000-message JSON export's 1,977M instructions).
        return (
            f"CASE WHEN {expr} IS NULL THEN NULL"
            f" WHEN json_valid({expr}) AND instr({expr}, char(0)) = 0 AND {shallow}"
            f" THEN json({expr}) ELSE {self.json_value(expr)} END"
        )

    def json_bool(self, condition: str) -> str:
        return f"json(iif({condition}, 'true', 'false'))"

    def in_list(self, expr: str, texts: Sequence[str]) -> tuple[str, object]:
        """`expr` is one of `texts`: the condition, with one `?`, and its one
        parameter (the list bound whole: no limit on how many it holds)."""
        import json

        return f"{expr} IN (SELECT value FROM json_each(?))", json.dumps(list(texts))

    def json_object(self, pairs: Sequence[tuple[str, str]]) -> str:
        """A JSON object's text, keys in this order: (key, SQL value) pairs."""
        inner = ", ".join(f"'{_quote_text(k)}', {v}" for k, v in pairs)
        return f"json_object({inner})"

    def json_array(self, item: str, source: str, order: str) -> str:
        """A scalar subquery: the JSON array of `item` (a json_object) over
        `source` (FROM … WHERE …) in `order`; [] when there is none."""
        return (
            f"(SELECT json_group_array(json(x.j)) FROM (SELECT {item} AS j {source}"
            f" ORDER BY {order}) AS x)"
        )

    def json_array_if_any(self, item: str, source: str, order: str) -> str:
        """`json_array`, built only where `source` has rows (most messages have
        no tool calls). Of one row, `json_array(item)` itself: no sort of one
        row and no parse of its object again (`json(x.j)`), 35M of a
        76,000-message session's 2,065M instructions."""
        return (
            f"CASE (SELECT count(*) {source}) WHEN 0 THEN {self.empty_json_array}"
            f" WHEN 1 THEN (SELECT json_array({item}) {source})"
            f" ELSE {self.json_array(item, source, order)} END"
        )

    # -- the catalog ----------------------------------------------------------------------
    def table_names(self, conn: Any) -> set[str]:
        """The tables and views the connection's database holds."""
        from kaja_cli.core.engine.db import table_names

        return table_names(conn)

    def columns(self, conn: Any, *tables: str, views: bool = True) -> dict[str, list[str]]:
        """The columns of those tables (and views) that exist, in their order;
        one query. `views` False: ordinary tables only (no views, no virtual
        tables), what a DELETE may touch."""
        marks = ",".join("?" * len(tables))
        kinds = (
            "m.type IN ('table', 'view')"
            if views
            else "m.type = 'table' AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%'"
        )
        out: dict[str, list[str]] = {}
        rows = conn.execute(
            "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p"
            f" WHERE {kinds} AND m.name IN ({marks}) ORDER BY m.name, p.cid",
            tables,
        )
        for table, column in rows:
            out.setdefault(table, []).append(column)
        return out

    def id_set(self, conn: Any, ids: Iterable[object]) -> tuple[str, tuple]:
        """`ids` as a subquery a condition tests with `IN`, and its parameters.
        SQLite: a TEMP table of the connection, with no declared type, so an id
        is compared as it is stored (TEXT, or an INTEGER another program wrote);
        a read-only connection may create one (it lives in its temp database)."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS _kaja_ids (id PRIMARY KEY)")
        conn.execute("DELETE FROM temp._kaja_ids")
        conn.executemany(
            "INSERT OR IGNORE INTO temp._kaja_ids (id) VALUES (?)", ((i,) for i in ids)
        )
        return "(SELECT id FROM temp._kaja_ids)", ()

    def in_ids(self, conn: Any, ids: Iterable[object]) -> tuple[str, tuple]:
        """Membership in `ids`, written after an expression (`"sessionId" IN
        (…)`), and its parameters: `id_set`'s subquery here."""
        subquery, args = self.id_set(conn, ids)
        return f"IN {subquery}", args

    def in_subquery(self, expr: str, subquery: str) -> str:
        """`expr` is one of the values `subquery` (a SELECT of one column) finds."""
        return f"{expr} IN ({subquery})"

    def delete_rows(
        self, conn: Any, deletes: Sequence[tuple[str, str]], args: tuple,
        summed: tuple[str, str] | None = None,
    ) -> tuple[list[int], int]:  # fmt: skip
        """`DELETE FROM table WHERE condition` for each (table, condition) in
        this order, each condition taking `args`: rows deleted by each, and
        the sum of `summed`'s expression (table, an expression of its columns)
        over the rows deleted from that table (0 when not asked). SQLite: one
        statement each (a round trip costs nothing in process), the sum read
        just before its table's DELETE, in the same transaction."""
        counts, total = [], 0
        for t, c in deletes:
            if summed is not None and summed[0] == t:
                total = conn.execute(f"SELECT coalesce(sum({summed[1]}), 0) FROM {t} WHERE {c}",
                                     args).fetchone()[0]  # fmt: skip
            counts.append(conn.execute(f"DELETE FROM {t} WHERE {c}", args).rowcount)
        return counts, int(total or 0)


class Postgres(Dialect):
    name = "postgres"
    integer = "BIGINT"
    limit_all = "ALL"
    # A row's place in the table: insertion order until an UPDATE or VACUUM FULL
    # moves it, which is as close as PostgreSQL comes to SQLite's rowid.
    rowid = "ctid"
    empty_json_array = "'[]'::json"
    text_as_bytes = False  # the server's rows arrive as text
    writes_pieces = False  # every message goes through render
    checks_seq_order = False  # the server sorts: one statement, not two
    join_in_order = "JOIN"

    def equals_ignoring_case(self, expr: str) -> str:
        # Text columns are COLLATE "C": lower() folds ASCII only, as NOCASE does.
        return f"lower({expr}) = lower(?)"

    def json_value(self, expr: str, *, text: bool = False) -> str:
        return expr

    def text_columns(self, conn: Any, table: str) -> frozenset[str]:
        return frozenset()  # json_value needs no hint here

    def glob_ignoring_case(self, expr: str, pattern: str) -> tuple[str, str]:
        # PostgreSQL has no GLOB: the same pattern as an anchored regular expression.
        return f"lower({expr}) ~ ?", _glob_regex(pattern.lower())

    def no_index(self, expr: str) -> str:
        return expr  # unary + is for numbers only; PostgreSQL's planner needs no hint here

    def byte_length(self, expr: str) -> str:
        return f"coalesce(octet_length({expr}), 0)"

    # Writers run beside each other: the rows a batch checks stay as checked.
    lock_rows = " FOR UPDATE"

    def real_sum(self, expr: str) -> str:
        # sum() of bigint is numeric (never overflows); as double precision it
        # reads back as SQLite's REAL sum does (`values.whole` makes it whole).
        if expr == "NULL":  # a column this schema lacks: sum(NULL) has no type to pick
            return "CAST(NULL AS double precision)"
        return f"CAST(sum({expr}) AS double precision)"

    def as_number(self, condition: str) -> str:
        return f"CASE WHEN {condition} THEN 1 ELSE 0 END"

    def json_parsed(self, expr: str) -> str:
        # json_or_text: a function of kaja's schema (store/server/schema.py). The
        # server's parser has no depth limit but its stack ("stack depth limit
        # exceeded" fails the query), so the depth is counted without parsing:
        # the brackets outside strings, a running sum over them.
        if expr == "NULL":
            return expr
        cap = values.JSON_DEPTH
        brackets = (
            f"regexp_replace(regexp_replace({expr}, '{_PG_STRING}', '', 'g'), '[^][{{}}]', '', 'g')"
        )
        depth = (
            "(SELECT max(kaja_d.d) FROM (SELECT sum(CASE WHEN kaja_b.c IN ('[', '{') THEN 1"
            f" ELSE -1 END) OVER (ORDER BY kaja_b.n) AS d FROM unnest(string_to_array({brackets},"
            " NULL)) WITH ORDINALITY AS kaja_b(c, n)) AS kaja_d)"
        )
        return (
            f"CASE WHEN length({expr}) <= {2 * cap} OR length({expr})"
            f" - length(replace(replace({expr}, '[', ''), '{{', '')) <= {cap}"
            f" THEN json_or_text({expr}) WHEN {depth} <= {cap} THEN json_or_text({expr})"
            f" ELSE to_json({expr}) END"
        )

    def json_bool(self, condition: str) -> str:
        return f"({condition})"

    def in_list(self, expr: str, texts: Sequence[str]) -> tuple[str, object]:
        return f"{expr} = ANY(CAST(? AS text[]))", list(texts)

    def json_object(self, pairs: Sequence[tuple[str, str]]) -> str:
        # row_to_json writes compact JSON, as SQLite does (json_build_object
        # puts spaces around every colon), keys in the select list's order.
        inner = ", ".join(f'{v} AS "{_quote_ident(k)}"' for k, v in pairs)
        return f"(SELECT row_to_json(j) FROM (SELECT {inner}) AS j)::text"

    def json_array(self, item: str, source: str, order: str) -> str:
        return (
            f"(SELECT coalesce('[' || string_agg(x.j, ',' ORDER BY x.o) || ']', '[]')::json"
            f" FROM (SELECT {item} AS j, {order} AS o {source}) AS x)"
        )

    def json_array_if_any(self, item: str, source: str, order: str) -> str:
        return (
            f"CASE WHEN EXISTS (SELECT 1 {source}) THEN {self.json_array(item, source, order)}"
            f" ELSE {self.empty_json_array} END"
        )

    # The connection's schema, asked of its catalog (`postgres.Connection`).
    def table_names(self, conn: Any) -> set[str]:
        return conn.table_names()

    def columns(self, conn: Any, *tables: str, views: bool = True) -> dict[str, list[str]]:
        have = conn.columns()  # kaja's schema has no views
        return {t: have[t] for t in tables if t in have}

    def id_set(self, conn: Any, ids: Iterable[object]) -> tuple[str, tuple]:
        # An array parameter: the server's read-only transactions may not
        # create even a temporary table.
        return "(SELECT unnest(CAST(? AS text[])))", (sorted({str(i) for i in ids}),)

    def in_ids(self, conn: Any, ids: Iterable[object]) -> tuple[str, tuple]:
        # `= ANY(array)`: the planner probes an index with the array, where
        # `IN (SELECT unnest(…))` may hash-join a scan of the whole table.
        _, array = self.id_set(conn, ids)  # the same array parameter
        return "= ANY(CAST(? AS text[]))", array

    def in_subquery(self, expr: str, subquery: str) -> str:
        # The values as one array (an InitPlan): the index on `expr` is probed
        # with it, where `IN (subquery)` may hash-join a scan of the whole table
        # (each batch of a prune would read all of tool_calls).
        return f"{expr} = ANY(ARRAY({subquery}))"

    def delete_rows(
        self, conn: Any, deletes: Sequence[tuple[str, str]], args: tuple,
        summed: tuple[str, str] | None = None,
    ) -> tuple[list[int], int]:  # fmt: skip
        # One statement, one round trip: a data-modifying CTE per table. Every
        # part sees the rows as they were when the statement began, so a
        # condition on another table (tool_calls by their messages) finds
        # the rows another part deletes; the counts are each part's, and the
        # sum comes from what its part returned (no read of its own).
        if not deletes:
            return [], 0
        parts, selects = [], [f"(SELECT count(*) FROM kaja_d{n})" for n in range(len(deletes))]
        for n, (t, c) in enumerate(deletes):
            returning = "1"
            if summed is not None and summed[0] == t:  # its sum after every count
                returning = f"{summed[1]} AS kaja_sum"
                selects.append(f"(SELECT coalesce(sum(kaja_sum), 0) FROM kaja_d{n})")
            parts.append(f"kaja_d{n} AS (DELETE FROM {t} WHERE {c} RETURNING {returning})")
        row = conn.execute(
            f"WITH {', '.join(parts)} SELECT {', '.join(selects)}", args * len(deletes)
        ).fetchone()
        values = [int(v) for v in row]
        return values[: len(deletes)], (values[len(deletes)] if len(values) > len(deletes) else 0)


_PG_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # a JSON string, as a PostgreSQL regular expression


def _glob_regex(pattern: str) -> str:
    """SQLite's GLOB as a POSIX regular expression: `*`, `?`, `[…]` (`[^…]`
    negated), everything else literal."""
    out, i = ["^"], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end
        else:
            out.append(c if c.isalnum() else "\\" + c)
        i += 1
    return "".join(out) + "$"


def _quote_text(value: str) -> str:
    return value.replace("'", "''")


def _quote_ident(value: str) -> str:
    return value.replace('"', '""')


SQLITE = Dialect()
POSTGRES = Postgres()

_sqlite_json_depth: list[int] = []


def sqlite_json_depth() -> int:
    """How deep this SQLite's JSON functions nest (its JSON_MAX_DEPTH: 2,000
    before 3.45, 1,000 since), asked of json_valid() once: the two known
    limits first, else a search."""
    if not _sqlite_json_depth:
        import sqlite3

        conn = sqlite3.connect(":memory:")

        def valid(depth: int) -> bool:
            text = "[" * depth + "]" * depth
            return bool(conn.execute("SELECT json_valid(?)", (text,)).fetchone()[0])

        try:
            found = next((n for n in (1000, 2000) if valid(n) and not valid(n + 1)), None)
            if found is None:
                low, high = 1, 1 << 17  # valid at `low`, not at `high`
                while high - low > 1:
                    mid = (low + high) // 2
                    low, high = (mid, high) if valid(mid) else (low, mid)
                found = low
        finally:
            conn.close()
        _sqlite_json_depth.append(found)
    return _sqlite_json_depth[0]


def of(conn: Any) -> Dialect:
    """The dialect a connection speaks (a sqlite3 connection has no `dialect`)."""
    return getattr(conn, "dialect", SQLITE)


def table_names(conn: Any) -> set[str]:
    """The tables (and views) the connection's database has: the file's, or
    those of the connection's schema on the server."""
    return of(conn).table_names(conn)


def columns(conn: Any, *tables: str) -> dict[str, list[str]]:
    """The columns of those tables (or views) that exist, in their order."""
    return of(conn).columns(conn, *tables)
