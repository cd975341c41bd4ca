"""kaja's benchmarks: each figure a ratio to a floor measured beside it, in the same run.

    python bench/run.py                      # the benchmark store: 10,000 sessions, 1,000,000 messages
    python bench/run.py --sessions 1000 --messages 100000 --repeat 5   # a quicker look
    python bench/run.py --only startup,sessions --check
    python bench/run.py --smoke              # every row once on a small store, nothing judged (CI)
    python bench/run.py --scale              # each command on 100k, 1M and 10M messages (bench/scale.py)
    python bench/run.py --scale --scale-stores A,B,C   # on stores built already (smallest first)
    python bench/run.py --only cloud_accounts [--accounts-step 10M]   # yours among 99 accounts

Each row is timed one of two ways, never a difference of the two:
  process     kaja's whole process against the floor's whole process, runs
              interleaved, both writing to /dev/null;
  in-process  kaja's core call against the floor's query (the same SQL
              through Python's sqlite3 module, or FTS5), both timed in this
              process.
The ratio is kaja's median over the floor's; the goal is a ratio, judged ok or
MISSED. Where kaja's start-up is most of a command's time, the goal is on the
in-process row and the whole-process row is printed for information.

Floors: the `sqlite3` command line (or module) running the same SQL, taken
from kaja's own query builders; for search, FTS5 over the same messages
answering the same question (best 20 by rank, with snippet() and the message
rows); for start-up, a bare Typer app with kaja's command names
(bench/bare_typer.py) and `python -c pass`. The goals are set for the
benchmark store (the defaults of --sessions and --messages); on a smaller one
start-up weighs more in the whole-process rows. Each `bench/bench_*.py`
module adds its rows; every row is also written to DIR/last.json.

Exit status: 0 when the benchmark ran (whatever it found); with --check, 1 when
a goal is MISSED; 2 when it could not run (bad options, a store it could not
build) or a row could not be measured (a command failed: that row prints why,
MISSED with no figures, and every other row is still measured; a --scale row
that failed is MISSED too, judged by --check as any other miss).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import HEADER, Bench, BenchError

HERE = Path(__file__).resolve().parent
# The order rows are printed in: start-up first, then the commands as a user meets them.
ORDER = ("startup", "sessions", "search", "cjk", "usage", "runs", "doctor", "terminal")
MODULES = sorted(
    (p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py")),
    key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name),
)
NEEDS_NO_STORE = {"startup"}
OWN_STORES = {
    "cloud_accounts"
}  # builds the stores of its --accounts-step (a smoke run: the small one)
BENCHMARK_STORE = (10_000, 1_000_000)  # the store the goals are set for


def build_store(kaja: str, sessions: int, messages: int, out: Path) -> Path:
    """The benchmark store, written once by `kaja demo --seed 1` and cached in `out`."""
    state = out / f"store-{sessions}-{messages}"
    if (state / "kaja.db").exists() and (state / ".complete").exists():
        return state
    shutil.rmtree(state, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
    env.update(KAJA_STATE_DIR=str(state), KAJA_CONFIG=str(state / "settings.toml"))
    print(f"building the benchmark store ({sessions:,} sessions, {messages:,} messages) "
          f"in {state} …", flush=True)  # fmt: skip
    start = time.perf_counter()
    argv = [kaja, "demo", "--seed", "1", "--sessions", str(sessions), "--messages", str(messages)]
    if subprocess.run(argv, env=env).returncode != 0 or not (state / "kaja.db").exists():
        raise BenchError(f"{' '.join(argv)} did not write {state / 'kaja.db'}")
    print(f"built in {time.perf_counter() - start:.0f} s", flush=True)
    (state / ".complete").write_text(json.dumps({"sessions": sessions, "messages": messages}))
    return state


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python bench/run.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--sessions", type=int, default=10_000, metavar="N",
                    help="sessions in the benchmark store (default: %(default)s)")  # fmt: skip
    ap.add_argument("--messages", type=int, default=1_000_000, metavar="N",
                    help="messages in the benchmark store (default: %(default)s)")  # fmt: skip
    ap.add_argument("--repeat", type=_positive, default=9, metavar="N",
                    help="timed runs per side of each row, the median is kept; start-up rows "
                         "run 3×N (default: %(default)s)")  # fmt: skip
    ap.add_argument("--only", default="", metavar="NAMES",
                    help=f"comma-separated modules to run, of: {', '.join(MODULES)} "
                         "(default: all)")  # fmt: skip
    ap.add_argument("--smoke", action="store_true",
                    help="every row once on a small store (300 sessions, 20,000 messages unless "
                         "given), no goal judged: proves the bench runs (.ci/run)")  # fmt: skip
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when any goal is MISSED (without it the exit status is 0)")  # fmt: skip
    ap.add_argument("--kaja", default=str(Path(sys.executable).with_name("kaja")), metavar="PATH",
                    help="the kaja command the process rows run (default: the one beside this "
                         "Python, %(default)s); in-process rows call the kaja_cli this Python "
                         "imports")  # fmt: skip
    ap.add_argument("--out", type=Path, default=HERE / "out", metavar="DIR",
                    help="where the stores are cached and last.json is written "
                         "(default: bench/out)")  # fmt: skip
    ap.add_argument("--scale", action="store_true",
                    help="instead of the rows above, each command on stores of 100k, 1M and 10M "
                         "messages: growth 10M/1M against its goal, peak RSS on the largest "
                         "(bench/scale.py; the stores are built under --out unless given)")  # fmt: skip
    ap.add_argument("--scale-stores", default="", metavar="DIRS",
                    help="with --scale: comma-separated state dirs of stores already built, "
                         "smallest first (read only: the rows that write use copies)")  # fmt: skip
    ap.add_argument("--accounts-step", choices=("1M", "10M"), default="1M",
                    help="cloud_accounts: your account's 100k messages on a server of 1M "
                         "(default), or the benchmark store's 1M on a server of 10M")  # fmt: skip
    args = ap.parse_args(argv)
    if args.smoke:
        given = set(argv if argv is not None else sys.argv[1:])
        if "--sessions" not in given:
            args.sessions = 300
        if "--messages" not in given:
            args.messages = 20_000
        if "--repeat" not in given:
            args.repeat = 1
        if args.scale or args.check:
            ap.error("--smoke judges nothing: not with --scale or --check")
    if args.scale_stores and not args.scale:
        ap.error("--scale-stores needs --scale")
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    args.only = [name for name in MODULES if name in only] if only else MODULES
    only -= set(MODULES)
    if only:
        ap.error(f"--only: no module {', '.join(sorted(only))} (there are: {', '.join(MODULES)})")
    return args


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _load(name: str):
    path = HERE / f"bench_{name}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    # Registered under its name, as an import would: a dataclass (with postponed
    # annotations) looks its module up there, and a module that imports
    # another (bench_cloud imports bench_prune) gets the one loaded here.
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _compile_as_pip_does() -> None:
    """Measure kaja as installed: pip compiles the bytecode of what it installs.
    An editable checkout, or packages installed under PYTHONDONTWRITEBYTECODE
    (pip then writes none), would compile Rich, Typer, Textual… again in every
    process and add it to every whole-process row: kaja's browse first screen
    took 660 ms of CPU so, 380 ms with the bytecode. Compiles kaja and the
    installed packages once (later runs find them compiled), and says so."""
    import compileall
    import sysconfig

    import kaja_cli

    roots = [Path(kaja_cli.__file__).parent, Path(sysconfig.get_paths()["purelib"])]
    missing = 0
    for root in roots:
        for source in root.rglob("*.py"):
            if not Path(importlib.util.cache_from_source(str(source))).exists():
                missing += 1
    if missing:
        print(f"compiling {missing:,} modules that had no bytecode (as pip does at install;"
              " otherwise every process would compile them again)…", flush=True)  # fmt: skip
        for root in roots:
            compileall.compile_dir(root, quiet=2, workers=0)


def run(args: argparse.Namespace) -> Bench:
    sqlite3_command = shutil.which("sqlite3")
    if not sqlite3_command:
        raise BenchError("the sqlite3 command line is needed for the floors (apt-get install sqlite3)")  # fmt: skip
    if not shutil.which(args.kaja):
        raise BenchError(f"--kaja: no command {args.kaja}")
    args.out.mkdir(parents=True, exist_ok=True)
    _compile_as_pip_does()
    state = args.out / "no-store"
    if set(args.only) - NEEDS_NO_STORE - (set() if args.smoke else OWN_STORES):
        state = build_store(args.kaja, args.sessions, args.messages, args.out)
        if (args.sessions, args.messages) != BENCHMARK_STORE:
            print("The goals are set for the benchmark store (10,000 sessions, 1,000,000 messages): "
                  "on this one kaja's start-up weighs more in the whole-process rows.")  # fmt: skip
    bench = Bench(
        state,
        args.repeat,
        args.kaja,
        sqlite3_command,
        judged=not args.smoke,
        accounts_step=args.accounts_step,
    )
    print(f"{os.cpu_count()} CPUs, load average {_load_average()}; medians of {args.repeat} "
          f"interleaved runs; store: {state.name}")  # fmt: skip
    print(HEADER, flush=True)
    for name in args.only:
        _load(name).cases(bench)
    print(f"load average after: {_load_average()}")
    return bench


def run_scale(args: argparse.Namespace) -> list:
    """`--scale`: bench/scale.py's rows over the stores of growing size."""
    import scale

    if not shutil.which(args.kaja):
        raise BenchError(f"--kaja: no command {args.kaja}")
    args.out.mkdir(parents=True, exist_ok=True)
    import compileall

    import kaja_cli

    compileall.compile_dir(Path(kaja_cli.__file__).parent, quiet=1)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    stores = scale.stores_for(args, build_store, base_env)
    bench = Bench(stores[-1].state, args.repeat, args.kaja, shutil.which("sqlite3") or "sqlite3")
    print(f"{os.cpu_count()} CPUs, load average {_load_average()}; medians of {args.repeat} runs "
          f"per store; stores: {', '.join(f'{s.name} {s.state}' for s in stores)}")  # fmt: skip
    rows = scale.run_scale(bench, stores, args.out)
    print(f"load average after: {_load_average()}")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.scale:
        try:
            rows = run_scale(args)
        except BenchError as e:
            print(f"bench: {e}", file=sys.stderr)
            return 2
        (args.out / "last-scale.json").write_text(
            json.dumps([r.as_json() for r in rows], indent=2, ensure_ascii=False) + "\n"
        )
        missed = [r.case for r in rows if r.missed]
        print(
            f"\n{len(rows)} scale rows; "
            + (f"MISSED: {'; '.join(missed)}" if missed else "every goal met")
        )
        return 1 if missed and args.check else 0
    try:
        bench = run(args)
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python bench/run.py | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    (args.out / "last.json").write_text(
        json.dumps([r.as_json() for r in bench.rows], indent=2, ensure_ascii=False) + "\n"
    )
    missed = [r.case for r in bench.rows if r.missed]
    goals = sum(r.goal is not None for r in bench.rows)
    failed = [r.case for r in bench.rows if r.error]
    if failed:  # every other row was measured and printed; these could not be
        print(f"\nbench: {len(failed)} of {len(bench.rows)} rows could not be measured:"
              f" {'; '.join(failed)}", file=sys.stderr)  # fmt: skip
        return 2
    if args.smoke:
        print(f"\n{len(bench.rows)} rows, each run once; a smoke run judges no goal")
        return 0
    print(f"\n{len(bench.rows)} rows, {goals} with a goal; "
          + (f"MISSED: {'; '.join(missed)}" if missed else "every goal met"))  # fmt: skip
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
