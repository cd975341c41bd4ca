"""kaja's benchmarks: medians and ratios against a floor measured in the same run.

    python bench/run.py                      # the benchmark store: 10,000 sessions, 1,000,000 messages
    python bench/run.py --sessions 1000 --messages 100000 --repeat 5   # a quicker look
    python bench/run.py --only startup,sessions

The machines are shared and noisy, so every row interleaves kaja's runs with
its floor's (the `sqlite3` command line running the same SQL, FTS5, or
`python -c pass` for start-up) and reports medians and their ratio. Each
`bench/bench_*.py` module adds its rows with `cases(bench)`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KAJA = str(Path(sys.executable).with_name("kaja"))
SQLITE3 = shutil.which("sqlite3") or "sqlite3"


@dataclass
class Row:
    case: str
    kaja_ms: float
    floor_ms: float | None
    floor: str
    ratio: float | None
    goal: str
    ok: bool | None
    note: str = ""


@dataclass
class Bench:
    state_dir: Path
    repeat: int
    rows: list[Row] = field(default_factory=list)
    startup_ms: float | None = None  # kaja's own start-up (`kaja --version`), median

    @property
    def db(self) -> Path:
        return self.state_dir / "kaja.db"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed kaja has its bytecode
        env.update(
            KAJA_STATE_DIR=str(self.state_dir), KAJA_CONFIG=str(self.state_dir / "settings.toml")
        )
        return env

    def time_cmd(
        self, argv: list[str], *, stdin: bytes | None = None, env: dict | None = None
    ) -> float:
        """Wall time of one run in ms; a failing command fails the benchmark."""
        start = time.perf_counter()
        p = subprocess.run(argv, input=stdin, capture_output=True, env=env or self.env)
        elapsed = (time.perf_counter() - start) * 1000
        if p.returncode != 0:
            raise SystemExit(
                f"bench: {' '.join(argv)} failed ({p.returncode}): {p.stderr.decode()[-500:]}"
            )
        return elapsed

    def pair(
        self,
        a: list[str],
        b: list[str],
        *,
        repeat: int | None = None,
        setup=None,
        env: dict | None = None,
    ) -> tuple[float, float]:
        """Medians of `a` and `b`, runs interleaved (a, b, a, b, …) after one warm-up each."""
        n = repeat or self.repeat
        self.time_cmd(a, env=env)
        self.time_cmd(b, env=env)
        xs, ys = [], []
        for _ in range(n):
            if setup:
                setup()
            xs.append(self.time_cmd(a, env=env))
            if setup:
                setup()
            ys.append(self.time_cmd(b, env=env))
        return statistics.median(xs), statistics.median(ys)

    def kaja(self, *args: str) -> list[str]:
        return [KAJA, *args]

    def sqlite(self, sql: str, db: Path | None = None, *, readonly: bool = True) -> list[str]:
        return [SQLITE3, *(["-readonly"] if readonly else []), str(db or self.db), sql]

    def add(self, case: str, kaja_ms: float, floor_ms: float | None, floor: str, *, goal: float | None = None,
            goal_text: str = "", subtract_startup: bool = False, note: str = "",
            ok: bool | None = None) -> Row:  # fmt: skip
        """Record a row; with `subtract_startup`, the ratio is kaja's data time
        (total minus start-up) over the floor. `ok` judges a goal that is not
        a ratio (an absolute time, say)."""
        measured = kaja_ms - (self.startup_ms or 0) if subtract_startup else kaja_ms
        ratio = measured / floor_ms if floor_ms else None
        if ok is None and goal is not None and ratio is not None:
            ok = ratio <= goal
        row = Row(
            case,
            kaja_ms,
            floor_ms,
            floor,
            ratio,
            goal_text or (f"≤ {goal}×" if goal else ""),
            ok,
            note,
        )
        self.rows.append(row)
        print(_fmt(row), flush=True)
        return row


def _fmt(r: Row) -> str:
    floor = f"{r.floor_ms:9.1f}" if r.floor_ms is not None else " " * 9
    ratio = f"{r.ratio:6.2f}×" if r.ratio is not None else " " * 7
    verdict = {True: "ok", False: "MISSED", None: ""}[r.ok]
    return f"{r.case:<44} {r.kaja_ms:9.1f} {floor} {ratio}  {r.goal:<10} {verdict:<6} {r.floor}{'  ' + r.note if r.note else ''}"


def build_store(sessions: int, messages: int, out: Path) -> Path:
    state = out / f"store-{sessions}-{messages}"
    if (state / "kaja.db").exists() and (state / ".complete").exists():
        return state
    shutil.rmtree(state, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
    env["KAJA_STATE_DIR"] = str(state)
    env["KAJA_CONFIG"] = str(state / "settings.toml")
    print(
        f"building the benchmark store ({sessions} sessions, {messages} messages) in {state} …",
        flush=True,
    )
    start = time.perf_counter()
    subprocess.run(
        [KAJA, "demo", "--seed", "1", "--sessions", str(sessions), "--messages", str(messages)],
        env=env,
        check=True,
    )
    print(f"built in {time.perf_counter() - start:.0f} s", flush=True)
    (state / ".complete").write_text(json.dumps({"sessions": sessions, "messages": messages}))
    return state


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--messages", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=9, help="runs per measurement (median)")
    ap.add_argument(
        "--only", default="", help="comma-separated module names (startup, sessions, search, …)"
    )
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args()
    if not shutil.which(SQLITE3):
        raise SystemExit(
            "bench: the sqlite3 command line is needed for the floors (apt-get install sqlite3)"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    # Measure kaja as installed: pip compiles the bytecode (an editable
    # checkout under PYTHONDONTWRITEBYTECODE would recompile every run).
    import compileall

    import kaja_cli

    compileall.compile_dir(Path(kaja_cli.__file__).parent, quiet=1)
    state = build_store(args.sessions, args.messages, args.out)
    bench = Bench(state_dir=state, repeat=args.repeat)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    print(f"{'case':<44} {'kaja ms':>9} {'floor ms':>9} {'ratio':>7}  {'goal':<10} {'':<6} floor")
    modules = sorted(HERE.glob("bench_*.py"))
    modules.sort(key=lambda p: p.stem != "bench_startup")  # start-up first: others subtract it
    for path in modules:
        name = path.stem.removeprefix("bench_")
        if only and name not in only and name != "startup":
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        module.cases(bench)
    missed = [r.case for r in bench.rows if r.ok is False]
    (args.out / "last.json").write_text(json.dumps([r.__dict__ for r in bench.rows], indent=2))
    print(
        f"\n{len(bench.rows)} rows; {'goals missed: ' + ', '.join(missed) if missed else 'every goal met'}"
    )


if __name__ == "__main__":
    main()
