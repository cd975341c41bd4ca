"""Sessions (issue 3): `kaja sessions` and `kaja resume --json` against the
`sqlite3` command line running the same SQL in the same run.

The SQL is the SQL kaja runs: taken from the core's own query builders, with
the parameters written in as literals (the command line has no binding).
Goal: kaja's data time (total minus its start-up) at most 1.5× the floor.
"""

from __future__ import annotations

import sqlite3

from kaja_cli.core import sessions as core_sessions
from kaja_cli.core import transcript
from kaja_cli.core.owners import Owner

GOAL = 1.5


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


def _listing_sql(conn: sqlite3.Connection, flt: core_sessions.SessionFilter, as_json: bool) -> str:
    have = core_sessions.columns(conn, "sessions", "messages")
    query = core_sessions.listing_query(have, flt, as_json=as_json)
    assert query is not None
    return inline(*query)


def _context_sql(conn: sqlite3.Connection, sid: str, images_dir) -> str:
    """What `kaja resume ID --json` runs: find, the session row, the latest
    summary, then one row of JSON per message."""
    sql = [
        inline('SELECT id, s."owner", s."title" FROM sessions AS s WHERE id = ?', (sid,)),
        inline("SELECT * FROM sessions WHERE id = ?", (sid,)),
        inline(
            "SELECT * FROM session_summaries WHERE sessionId = ? ORDER BY summaryFrom DESC LIMIT 1",
            (sid,),
        ),
        inline(*transcript.messages_query(conn, sid, images_dir, condense=True)),
    ]
    return "\n".join(sql)


def cases(bench) -> None:
    conn = sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)
    try:
        terminal = core_sessions.SessionFilter(Owner(), limit=20)
        everyone = core_sessions.SessionFilter(None, limit=0)
        listing = _listing_sql(conn, terminal, as_json=False)
        listing_all = _listing_sql(conn, everyone, as_json=True)
        sid, owner, count = conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()
        images_dir = bench.db.parent / "files" / "images"
        context = _context_sql(conn, sid, images_dir)
    finally:
        conn.close()

    kaja_ms, floor_ms = bench.pair(bench.kaja("sessions"), bench.sqlite(listing))
    bench.add("sessions", kaja_ms, floor_ms, "sqlite3: the same query", goal=GOAL,
              subtract_startup=True)  # fmt: skip

    argv = ["sessions", "--all-owners", "--limit", "0", "--json"]
    kaja_ms, floor_ms = bench.pair(bench.kaja(*argv), bench.sqlite(listing_all))
    bench.add("sessions --all-owners --limit 0 --json", kaja_ms, floor_ms,
              "sqlite3: the same query", goal=GOAL, subtract_startup=True)  # fmt: skip

    argv = ["resume", sid, "--json", *(["--owner", owner] if owner else [])]
    kaja_ms, floor_ms = bench.pair(bench.kaja(*argv), bench.sqlite(context))
    bench.add(f"resume --json ({count} messages)", kaja_ms, floor_ms,
              "sqlite3: the same queries", goal=GOAL, subtract_startup=True)  # fmt: skip
