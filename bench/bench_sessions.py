"""Sessions (issue 3) and the resume context (issue 19) against the same SQL.

The SQL is the SQL kaja runs, taken from the core's own query builders. The
process floor is the `sqlite3` command line running it, parameters written in
as literals (the command line has no binding), output to /dev/null like
kaja's; the in-process floor runs it through Python's sqlite3 module with the
parameters bound, on a connection opened for the call, as kaja does.

Goals: the listing at most 1.5× its floor (in-process for the terminal's 20
sessions, whose whole process is mostly start-up; whole-process for every
session as JSON); `resume --json` of the largest session at most 1.3× the
`sqlite3` command line (issue 19).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from kaja_cli.core.conversations import sessions as core_sessions
from kaja_cli.core.conversations import transcript
from kaja_cli.core.owners import Owner

LISTING_GOAL = 1.5
RESUME_GOAL = 1.3
Query = tuple[str, tuple]


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def inline(sql: str, args: tuple | list) -> str:
    """`sql` with each `?` replaced by its argument as a literal."""
    pieces = sql.split("?")
    if len(pieces) != len(args) + 1:
        raise ValueError("placeholders and arguments differ")
    out = [pieces[0]]
    for value, piece in zip(args, pieces[1:], strict=True):
        out += [_literal(value), piece]
    return "".join(out) + ";"


def script(queries: list[Query]) -> str:
    return "\n".join(inline(sql, args) for sql, args in queries)


def _listing(conn: sqlite3.Connection, flt: core_sessions.SessionFilter, as_json: bool) -> Query:
    have = core_sessions.columns(conn, "sessions", "messages")
    query = core_sessions.listing_query(have, flt, as_json=as_json)
    assert query is not None
    return query[0], tuple(query[1])


def _context(conn: sqlite3.Connection, sid: str, images_dir) -> list[Query]:
    """What `kaja resume ID --json` runs: find, the session row, the latest
    summary, then one row of JSON per message."""
    return [
        ('SELECT id, s."owner", s."title" FROM sessions AS s WHERE id = ?', (sid,)),
        ("SELECT * FROM sessions WHERE id = ?", (sid,)),
        ("SELECT * FROM session_summaries WHERE sessionId = ? ORDER BY summaryFrom DESC LIMIT 1",
         (sid,)),
        transcript.messages_query(conn, sid, images_dir, condense=True),
    ]  # fmt: skip


def _through_module(bench, queries: list[Query]):
    """The in-process floor: a read-only connection, the queries, every row fetched."""
    uri = bench.db.as_uri() + "?mode=ro"

    def run() -> None:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            for sql, args in queries:
                conn.execute(sql, args).fetchall()

    return run


def cases(bench) -> None:
    store = bench.store()
    terminal = core_sessions.SessionFilter(Owner(), limit=20)
    everyone = core_sessions.SessionFilter(None, limit=0)
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        listing = _listing(conn, terminal, as_json=False)
        listing_all = _listing(conn, everyone, as_json=True)
        sid, owner, count = conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()
        context = _context(conn, sid, store.paths.images_dir)

    same_sql, same_rows = "sqlite3 CLI: the same query", "sqlite3 module: the same query"
    bench.process("sessions", bench.kaja("sessions"), bench.sqlite(script([listing])), same_sql,
                  note="mostly start-up: the goal is on the next row")  # fmt: skip
    bench.in_process("sessions: core listing()",
                     lambda: core_sessions.listing(store, terminal),
                     _through_module(bench, [listing]), same_rows, goal=LISTING_GOAL)  # fmt: skip

    argv = bench.kaja("sessions", "--all-owners", "--limit", "0", "--json")
    bench.process("sessions --all-owners --limit 0 --json", argv,
                  bench.sqlite(script([listing_all])), same_sql, goal=LISTING_GOAL)  # fmt: skip
    bench.in_process("sessions --json: core listing_json()",
                     lambda: core_sessions.listing_json(store, everyone),
                     _through_module(bench, [listing_all]), same_rows)  # fmt: skip

    who = Owner.parse(owner)
    argv = bench.kaja("resume", sid, "--json", *(["--owner", owner] if owner else []))
    bench.process(f"resume --json ({count:,} messages)", argv, bench.sqlite(script(context)),
                  "sqlite3 CLI: the same 4 queries", goal=RESUME_GOAL)  # fmt: skip

    def streamed() -> None:
        with transcript.context_stream(store, sid, who) as doc:
            for _ in doc.items:
                pass

    bench.in_process("resume --json: core context_stream()", streamed,
                     _through_module(bench, context), "sqlite3 module: the same 4 queries")  # fmt: skip
