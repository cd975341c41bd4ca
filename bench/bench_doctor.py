"""`kaja doctor` on the benchmark store against `PRAGMA quick_check` alone.

Goal (issue 6): doctor's whole process at most 1.5× `sqlite3 -readonly
kaja.db 'PRAGMA quick_check'`, both writing to /dev/null. quick_check reads
every page; doctor runs it in a thread and every other check (orphans, search
index, images…) beside it through indexes, so its time is quick_check's plus
start-up. `--thorough` against `PRAGMA integrity_check` is information: it
adds FTS4's own integrity-check, which re-tokenizes every message.

Issue 29: doctor in bounded memory. Its peak RSS (the process's own, from
wait4) against the `sqlite3` CLI's running the same quick_check: at most
100 MB at any store size (it was the file's size, 1.1 GB on the benchmark
store: the file was mapped into memory). `doctor --quick` leaves out what
reads in proportion to the store: at most 2 s whatever its size, against the
`sqlite3` CLI reading the schema (start-up and an open). With
KAJA_BENCH_BEFORE=PATH (a kaja from before issue 29, e.g. one installed from
main in a venv of its own), one more row: doctor against that kaja on the
same store, goal 1.2× (the bound on memory must not cost more time).
"""

from __future__ import annotations

import os
import statistics
import subprocess

from harness import PROCESS, SIZE, BenchError, Row, interleave

GOAL = 1.5
RSS_LIMIT_MB = 100  # issue 29, at any store size
QUICK_LIMIT_MS = 2000  # issue 29: an answer for a support ticket
BEFORE_GOAL = 1.2  # issue 29: no slower than the mapped-file doctor by more than this


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

    schema = bench.sqlite("SELECT count(*) FROM sqlite_master")
    k, f = interleave(lambda: bench.run(bench.kaja("doctor", "--quick")),
                      lambda: bench.run(schema), bench.repeat)  # fmt: skip
    bench.add(Row("doctor --quick", PROCESS, k, f, "sqlite3 CLI: the schema read", None,
                  holds=k <= QUICK_LIMIT_MS, note=f"goal ≤ {QUICK_LIMIT_MS:,} ms whatever the size"))  # fmt: skip

    floor_rss = peak_rss_mb(quick, bench.env)
    for args in (("doctor",), ("doctor", "--quick")):
        rss = peak_rss_mb(bench.kaja(*args), bench.env)
        bench.add(Row(f"{' '.join(args)}: peak RSS", SIZE, rss, floor_rss,
                      "sqlite3 CLI: PRAGMA quick_check, peak RSS", None, holds=rss <= RSS_LIMIT_MB,
                      note=f"goal ≤ {RSS_LIMIT_MB} MB; the file is "
                      f"{bench.db.stat().st_size / 2**20:,.0f} MB"))  # fmt: skip

    before = os.environ.get("KAJA_BENCH_BEFORE")
    if before:
        bench.process("doctor, against kaja before issue 29", bench.kaja("doctor"),
                      [before, "doctor"], f"{before} doctor (file mapped into memory)",
                      goal=BEFORE_GOAL)  # fmt: skip
        rss = peak_rss_mb([before, "doctor"], bench.env)
        bench.add(Row("doctor before issue 29: peak RSS", SIZE, rss, floor_rss,
                      "sqlite3 CLI: PRAGMA quick_check, peak RSS", None,
                      note="information: the file mapped into memory"))  # fmt: skip


def peak_rss_mb(argv: list[str], env: dict[str, str], runs: int = 3) -> float:
    """The median of `runs` peak RSS (MB) of the process itself, from wait4:
    never the maximum over every child this bench has waited for."""
    found = []
    for _ in range(runs):
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in (0, 1):  # doctor: 1 is "found an error", still a measure
            raise BenchError(f"{' '.join(argv)} failed ({p.returncode})")
        found.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return statistics.median(found)
