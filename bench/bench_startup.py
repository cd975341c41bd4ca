"""Start-up: every TAB press of shell completion starts kaja.

Goal (issue 2): `kaja config paths --json` at most 60 ms above `python -c pass`.
"""

from __future__ import annotations

import statistics
import sys


def cases(bench) -> None:
    python = [sys.executable, "-c", "pass"]
    n = max(bench.repeat, 15)
    version, floor = bench.pair(bench.kaja("--version"), python, repeat=n)
    bench.startup_ms = version
    bench.add("startup: kaja --version", version, floor, "python -c pass", goal_text="(start-up)",
              note=f"{version - floor:.0f} ms above python")  # fmt: skip
    paths, floor = bench.pair(bench.kaja("config", "paths", "--json"), python, repeat=n)
    bench.add("startup: config paths --json", paths, floor, "python -c pass", goal_text="≤ +60 ms",
              note=f"{paths - floor:.0f} ms above python", ok=paths - floor <= 60)  # fmt: skip
    env = dict(bench.env, _KAJA_COMPLETE="complete_bash", COMP_WORDS="kaja se", COMP_CWORD="1")
    complete = statistics.median(bench.time_cmd(bench.kaja(), env=env) for _ in range(n))
    bench.add("startup: TAB completion (kaja se<TAB>)", complete, floor, "python -c pass", goal_text="(info)",
              note=f"{complete - floor:.0f} ms above python")  # fmt: skip
