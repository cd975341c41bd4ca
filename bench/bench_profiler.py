"""The query profiler (issue 18): what timing every query costs a command.

Each row runs the same kaja command twice over, interleaved: profiled (the
default: every statement timed, the totals written into db-stats.db when it
ends) against the floor, the same command with `logging.database.enabled =
false` (a settings file beside the store; the profiled side reads one saying
`true`, so both parse the same), which opens plain sqlite3 connections and
writes nothing. Goal: the profiled process at most
1.03× the unprofiled one.

The commands: `sessions` (mostly start-up: what a fixed cost, such as writing
the profile, weighs most on), then the bench's heaviest readers of rows and
statements: every session as JSON (one statement, 10,000 rows), a search for
a common word (about 20 statements), `usage` (3 aggregate queries over a
million calls) and the largest session's resume context as JSON (76,058
rows).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from harness import PROCESS, Row, interleave, search_words

GOAL = 1.03


def cases(bench) -> None:
    # Both sides read a settings file of the same size: only the value differs.
    on, off = (bench.state_dir.parent / f"profiler-{v}.toml" for v in ("on", "off"))
    on.write_text("[logging.database]\nenabled = true\n")
    off.write_text("[logging.database]\nenabled = false\n")
    profiled, unprofiled = (
        dict(bench.env, KAJA_CONFIG=str(on)),
        dict(bench.env, KAJA_CONFIG=str(off)),
    )
    with closing(sqlite3.connect(bench.db.as_uri() + "?mode=ro", uri=True)) as conn:
        sid, owner, count = conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId ORDER BY n DESC LIMIT 1"
        ).fetchone()
    common, hits = search_words(bench.db)[1]
    floor = "same command, profiling off"
    commands = [
        ("sessions", ["sessions"]),
        ("sessions --all-owners -n 0 --json", ["sessions", "--all-owners", "-n", "0", "--json"]),
        (f"search: common word ({hits:,} matches)", ["search", common, "--all-owners"]),
        ("usage", ["usage"]),
        (f"resume --json ({count:,} messages)",
         ["resume", sid, "--json", *(["--owner", owner] if owner else [])]),
    ]  # fmt: skip
    for case, args in commands:
        argv = bench.kaja(*args)
        # The two sides differ only in their settings file (bench.process gives both one env).
        k, f = interleave(
            lambda argv=argv: bench.run(argv, profiled),
            lambda argv=argv: bench.run(argv, unprofiled),
            bench.repeat,
        )
        bench.add(Row(f"profiled: {case}", PROCESS, k, f, floor, GOAL))
