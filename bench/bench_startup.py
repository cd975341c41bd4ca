"""Start-up: every TAB press of shell completion starts kaja.

Goal (issue 2): `kaja config paths --json` at most 60 ms above `python -c pass`.
Goal (issue 17): `kaja config get KEY` within 10% of `config paths --json`
(reading settings never imports tomlkit), both reading the same settings file.
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
    settings = bench.state_dir.parent / "startup-settings.toml"  # beside the cached store
    settings.write_text(SETTINGS)
    env = dict(bench.env, KAJA_CONFIG=str(settings))
    get, paths = bench.pair(
        bench.kaja("config", "get", "logging.database.slow_ms"),
        bench.kaja("config", "paths", "--json"),
        repeat=max(n, 31),
        env=env,
    )
    bench.add("startup: config get KEY", get, paths, "config paths --json", goal=1.10,
              note=f"{get - paths:+.1f} ms")  # fmt: skip


SETTINGS = """\
# A settings file like a person's: comments, tables, a nested one.
[memory]
mode = "local"  # or cloud

[logging.database]
slow_ms = 100
"""
