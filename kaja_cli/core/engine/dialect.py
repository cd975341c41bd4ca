"""The two SQL dialects the query functions speak: SQLite's and PostgreSQL's.

The core writes one query text for both engines wherever they differ only in
spelling; the spelling comes from here. `of(conn)` is the dialect of a
connection: a `sqlite3.Connection` speaks SQLite, the cloud backend's
connection (`core.pg.connection.Connection`) says `POSTGRES`. Placeholders
are not here: queries use `?` (and `:name`), and the PostgreSQL connection
rewrites them.

Where the engines truly differ (full-text search, the schema's own
bookkeeping) there is a module per engine instead: `core.search` and
`core.pg.search`, `core.schema` and `core.pg.schema`.

Imports nothing heavy: the listing commands load it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kaja_cli.core import values


class Dialect:
    """SQLite's spelling; `Postgres` overrides what PostgreSQL spells otherwise."""

    name = "sqlite"
    integer = "INTEGER"  # CAST(… AS integer): 64-bit in SQLite, BIGINT in PostgreSQL
    limit_all = "-1"  # LIMIT that keeps every row
    rowid = "rowid"  # the order rows were stored in
    empty_json_array = "json('[]')"

    def equals_ignoring_case(self, expr: str) -> str:
        """`expr` equal to the next `?`, ASCII letters compared without case."""
        return f"{expr} = ? COLLATE NOCASE"

    def glob_ignoring_case(self, expr: str, pattern: str) -> tuple[str, str]:
        """`expr` matching the GLOB `pattern` (`*`, `?`, `[…]`), ASCII letters
        without case: the condition and its one parameter."""
        return f"lower({expr}) GLOB lower(?)", pattern

    def json_value(self, expr: str) -> str:
        """A column as a JSON value: SQLite's json_object refuses BLOBs (shown as
        hex) and writes an infinite REAL as `Inf`, which is not JSON (shown as text)."""
        if expr == "NULL":
            return expr
        return (
            f"CASE typeof({expr}) WHEN 'blob' THEN hex({expr}) WHEN 'real' THEN"
            f" iif(abs({expr}) > 1.7976931348623157e308, CAST({expr} AS TEXT), {expr})"
            f" ELSE {expr} END"
        )

    def no_index(self, expr: str) -> str:
        """`expr`, kept off the planner's indexes (SQLite: unary `+`)."""
        return "+" + expr

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
        return (
            f"CASE WHEN json_valid({expr}) AND {shallow} THEN json({expr})"
            f" ELSE {self.json_value(expr)} END"
        )

    def json_bool(self, condition: str) -> str:
        return f"json(iif({condition}, 'true', 'false'))"

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


class Postgres(Dialect):
    name = "postgres"
    integer = "BIGINT"
    limit_all = "ALL"
    # A row's place in the table: insertion order until an UPDATE or VACUUM FULL
    # moves it, which is as close as PostgreSQL comes to SQLite's rowid.
    rowid = "ctid"
    empty_json_array = "'[]'::json"

    def equals_ignoring_case(self, expr: str) -> str:
        # Text columns are COLLATE "C": lower() folds ASCII only, as NOCASE does.
        return f"lower({expr}) = lower(?)"

    def json_value(self, expr: str) -> str:
        return expr

    def glob_ignoring_case(self, expr: str, pattern: str) -> tuple[str, str]:
        # PostgreSQL has no GLOB: the same pattern as an anchored regular expression.
        return f"lower({expr}) ~ ?", _glob_regex(pattern.lower())

    def no_index(self, expr: str) -> str:
        return expr  # unary + is for numbers only; PostgreSQL's planner needs no hint here

    def real_sum(self, expr: str) -> str:
        # sum() of bigint is numeric (never overflows); as double precision it
        # reads back as SQLite's REAL sum does (`values.whole` makes it whole).
        if expr == "NULL":  # a column this schema lacks: sum(NULL) has no type to pick
            return "CAST(NULL AS double precision)"
        return f"CAST(sum({expr}) AS double precision)"

    def as_number(self, condition: str) -> str:
        return f"CASE WHEN {condition} THEN 1 ELSE 0 END"

    def json_parsed(self, expr: str) -> str:
        # json_or_text: a function of kaja's schema (core.pg.schema). The
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
    """The tables (and views) the store has: the file's, or those of kaja's schema."""
    if of(conn) is POSTGRES:
        from kaja_cli.core.store.server import schema

        return set(schema.status(conn).tables)
    from kaja_cli.core.engine.db import table_names as sqlite_tables

    return sqlite_tables(conn)


def columns(conn: Any, *tables: str) -> dict[str, list[str]] | None:
    """The columns of those tables that exist, in their order (PostgreSQL only:
    None means "ask SQLite", which `core.sessions.columns` does in one query)."""
    if of(conn) is not POSTGRES:
        return None
    from kaja_cli.core.store.server import schema

    have = schema.present_columns(conn)
    return {t: have[t] for t in tables if t in have}
