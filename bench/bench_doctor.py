"""`kaja doctor` on the benchmark store against `PRAGMA quick_check` alone.

Goal (issue 6): doctor's whole process at most 1.5× `sqlite3 -readonly
kaja.db 'PRAGMA quick_check'`, both writing to /dev/null. quick_check reads
every page; doctor runs it in a thread and every other check (orphans, search
index, images…) beside it through indexes, so its time is quick_check's plus
start-up. `--thorough` against `PRAGMA integrity_check` is information: it
adds FTS4's own integrity-check, which re-tokenizes every message.
"""

from __future__ import annotations

GOAL = 1.5


def cases(bench) -> None:
    quick = bench.sqlite("PRAGMA quick_check")
    bench.process("doctor", bench.kaja("doctor"), quick, "sqlite3 CLI: PRAGMA quick_check",
                  goal=GOAL)  # fmt: skip
    bench.process("doctor --json --redact", bench.kaja("doctor", "--json", "--redact"), quick,
                  "sqlite3 CLI: PRAGMA quick_check", goal=GOAL)  # fmt: skip
    bench.process("doctor --thorough", bench.kaja("doctor", "--thorough"),
                  bench.sqlite("PRAGMA integrity_check"), "sqlite3 CLI: PRAGMA integrity_check",
                  repeat=min(bench.repeat, 3),
                  note="adds FTS4 'integrity-check' of the search index")  # fmt: skip
