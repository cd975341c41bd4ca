"""Start-up: every TAB press of shell completion starts kaja, so start-up is felt.

Goal: kaja at most 1.15× a bare Typer app with the same command names and
root options (`bench/bare_typer.py`, same Python, same typer) for
`--version`. Goal (issue 29, start-up that does not grow with the command
list: kaja builds only the group its arguments name): `config paths --json`
(which resolves every path and stats every file) at most 1.05× that app, and
at most 1.15× a bare Typer app with seven commands (`bench/bare_typer_seven.py`).
`python -c pass` and TAB completion are information.
Goal (issue 17): `kaja config get KEY` within 10% of `config paths --json`
(reading settings never imports tomlkit), both reading the same settings file.
Goal (issue 16): a TAB press (`kaja se<TAB>`, answered without Typer from the
generated table) within 25 ms of `python -c pass`: at most 3.5× it (the
interpreter alone takes ~10 ms here). Value completion from the store is in
bench_terminal.py (it needs the benchmark store).
Start-up rows run 3× --repeat times: each run is short and the machine noisy.
"""

from __future__ import annotations

from pathlib import Path

BARE = str(Path(__file__).resolve().parent / "bare_typer.py")
SEVEN = str(Path(__file__).resolve().parent / "bare_typer_seven.py")
GOAL = 1.15
PATHS_GOAL = 1.05  # against the bare app shaped like kaja (issue 29)
SEVEN_GOAL = 1.15  # against a bare app with seven commands (issue 29)
TAB_GOAL = 3.5  # 25 ms over python -c pass, which takes ~10 ms here


def cases(bench) -> None:
    n = 3 * bench.repeat
    bare = bench.python(BARE)
    bench.process("start-up: kaja --version", bench.kaja("--version"), [*bare, "--version"],
                  "bare Typer app: --version", goal=GOAL, repeat=n)  # fmt: skip
    paths = bench.kaja("config", "paths", "--json")
    bench.process("start-up: kaja config paths --json", paths,
                  [*bare, "config", "paths", "--json"], "bare Typer app: config paths --json",
                  goal=PATHS_GOAL, repeat=n)  # fmt: skip
    bench.process("start-up: config paths --json vs seven commands", paths,
                  [*bench.python(SEVEN), "config", "paths", "--json"],
                  "bare Typer app with seven commands", goal=SEVEN_GOAL, repeat=n)  # fmt: skip
    bench.process("start-up: config paths --json vs python", paths, bench.python("-c", "pass"),
                  "python -c pass", repeat=n)  # fmt: skip
    env = dict(bench.env, _KAJA_COMPLETE="complete_bash", COMP_WORDS="kaja se", COMP_CWORD="1")
    bench.process("start-up: TAB completion (kaja se<TAB>)", bench.kaja(), bench.python("-c", "pass"),
                  "python -c pass", goal=TAB_GOAL, repeat=n, env=env)  # fmt: skip
    bench.process("start-up: TAB completion vs a Typer app", bench.kaja(), bare,
                  "bare Typer app: the same completion", repeat=n, env=env)  # fmt: skip
    settings = bench.state_dir.parent / "startup-settings.toml"  # beside the cached store
    settings.write_text(SETTINGS)
    env = dict(bench.env, KAJA_CONFIG=str(settings))
    bench.process("start-up: config get KEY", bench.kaja("config", "get", "logging.database.slow_ms"),
                  paths, "config paths --json, same settings file", goal=1.10,
                  repeat=max(n, 31), env=env)  # fmt: skip


SETTINGS = """\
# A settings file like a person's: comments, tables, a nested one.
[memory]
mode = "local"  # or cloud

[logging.database]
slow_ms = 100
"""
