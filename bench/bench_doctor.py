"""`kaja doctor` on the benchmark store against `PRAGMA quick_check` alone.

Goal (issue 6): doctor's whole run at most 1.5× `sqlite3 kaja.db 'PRAGMA
quick_check'` in the same run. quick_check reads every page; doctor runs it in
a thread and every other check (orphans, search index, images…) beside it
through indexes, so its time is quick_check's plus start-up.
`--thorough` against `PRAGMA integrity_check` is printed for information: it
adds FTS4's own integrity-check, which re-tokenizes every message.
"""

from __future__ import annotations


def cases(bench) -> None:
    doctor, floor = bench.pair(bench.kaja("doctor"), bench.sqlite("PRAGMA quick_check"))
    bench.add("doctor", doctor, floor, "sqlite3 PRAGMA quick_check", goal=1.5)
    as_json, floor = bench.pair(
        bench.kaja("doctor", "--json", "--redact"), bench.sqlite("PRAGMA quick_check")
    )
    bench.add("doctor --json --redact", as_json, floor, "sqlite3 PRAGMA quick_check", goal=1.5)
    thorough, floor = bench.pair(
        bench.kaja("doctor", "--thorough"),
        bench.sqlite("PRAGMA integrity_check"),
        repeat=min(bench.repeat, 3),
    )
    bench.add("doctor --thorough", thorough, floor, "sqlite3 PRAGMA integrity_check",
              goal_text="(info)", note="adds FTS4 'integrity-check' of the search index")  # fmt: skip
