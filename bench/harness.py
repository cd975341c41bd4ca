"""The bench's arithmetic and timing: rows that can fail, against floors measured beside them.

A row compares two medians taken the same way, in the same run, runs interleaved:

- "process": kaja's whole process against the floor's whole process (the
  `sqlite3` command line, FTS5, a bare Typer app, `python -c pass`), both
  with stdin and stdout on /dev/null, so neither pays for a reader the other
  does not have;
- "in-process": kaja's core call against the floor's query, both timed in
  this Python process (no start-up, no imports on either side).

The ratio and the goal are wall time's. `Bench.process` rows also print the
CPU ratio (user + system of each process and the children it waited for,
the kernel's count from `wait4`, medians of the same runs): on a shared,
loaded machine it moves less than wall time. A server the command talks to
(cloud mode's PostgreSQL) is no child: its CPU is in neither figure.

A ratio is kaja's median over the floor's. Both must be positive and finite
(a `Row` refuses anything else), so a ratio is never negative or undefined:
nothing is ever subtracted. A goal is a ratio (`≤ 1.5×`); a row without one
is information. A row can also carry a condition that must hold (the same
top 20 as FTS5): when it does not, the row is MISSED whatever its ratio.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

PROCESS, IN_PROCESS, SIZE = "process", "in-process", "size"


class BenchError(Exception):
    """The benchmark could not measure (a command failed): no figure at all."""


@dataclass(frozen=True)
class Row:
    case: str
    timed: str  # PROCESS, IN_PROCESS or SIZE (then the figures are MB)
    kaja: float  # kaja's median (ms, or MB for SIZE)
    floor: float  # the floor's median, same unit
    floor_what: str  # the floor in one line
    goal: float | None = None  # kaja at most goal × floor; None: information only
    holds: bool = True  # a condition beside the ratio (same results as the floor)
    note: str = ""
    kaja_cpu: float | None = None  # process rows: CPU ms medians (information)
    floor_cpu: float | None = None
    error: str = ""  # the row could not be measured (a command failed): why; no figures

    @classmethod
    def failed(cls, case: str, timed: str, floor_what: str, goal: float | None, error: str) -> Row:
        """A row whose command failed: MISSED with why, no figures (`run.py` exits 2)."""
        return cls(case, timed, math.nan, math.nan, floor_what, goal, False, error=error)

    def __post_init__(self) -> None:
        if self.error:
            return
        for name in ("kaja", "floor"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{self.case}: {name} median must be positive, not {value!r}")
        if self.goal is not None and not (math.isfinite(self.goal) and self.goal > 0):
            raise ValueError(f"{self.case}: goal must be a positive ratio, not {self.goal!r}")

    @property
    def ratio(self) -> float:
        return self.kaja / self.floor

    @property
    def cpu_ratio(self) -> float | None:
        """kaja's CPU median over the floor's, where both were measured."""
        if self.kaja_cpu is None or self.floor_cpu is None or self.floor_cpu <= 0:
            return None
        return self.kaja_cpu / self.floor_cpu

    @property
    def goal_text(self) -> str:
        return f"≤ {self.goal:g}×" if self.goal is not None else "(info)"

    @property
    def verdict(self) -> str:
        """`ok` or `MISSED` for a goal row; empty for information."""
        if self.error:
            return "MISSED"
        if self.goal is None:
            return "" if self.holds else "MISSED"
        return "ok" if self.holds and self.ratio <= self.goal else "MISSED"

    @property
    def missed(self) -> bool:
        return self.verdict == "MISSED"

    def as_json(self) -> dict:
        if self.error:  # no figures: null, not NaN (which is not JSON)
            return asdict(self) | {"kaja": None, "floor": None, "ratio": None, "cpu_ratio": None,
                                   "goal_text": self.goal_text, "verdict": self.verdict}  # fmt: skip
        return asdict(self) | {"ratio": self.ratio, "cpu_ratio": self.cpu_ratio,
                               "goal_text": self.goal_text, "verdict": self.verdict}  # fmt: skip


HEADER = (
    f"{'case':<46} {'timed':<10} {'kaja':>9} {'floor':>9} {'ratio':>7}  {'goal':<7} {'':<6} floor"
)


def _figure(value: float, unit: str) -> str:
    """Two decimals below 10, so that 0.37 and 0.35 do not both read 0.4."""
    return f"{value:6.2f}{unit}" if value < 10 else f"{value:6.1f}{unit}"


def format_row(r: Row) -> str:
    if r.error:
        return (f"{r.case:<46} {r.timed:<10} {'-':>9} {'-':>9} {'-':>7}  {r.goal_text:<7}"
                f" {r.verdict:<6} {r.floor_what}  (failed: {' '.join(r.error.split())})")  # fmt: skip
    unit = " MB" if r.timed == SIZE else " ms"
    cpu = f"CPU {_ratio(r.cpu_ratio)}×" if r.cpu_ratio is not None else ""
    note = "; ".join(x for x in (cpu, r.note) if x)
    note = f"  ({note})" if note else ""
    return (
        f"{r.case:<46} {r.timed:<10} {_figure(r.kaja, unit)} {_figure(r.floor, unit)}"
        f" {_ratio(r.ratio):>6}×  {r.goal_text:<7} {r.verdict:<6} {r.floor_what}{note}"
    )


def interleave(
    a: Callable[[], float], b: Callable[[], float], n: int, setup: Callable[[], None] | None = None
) -> tuple[float, float]:
    """Medians of n runs of `a` and of `b` (each returns its own ms), after one
    warm-up each, in the order a b, b a, a b, …: a machine that slows down or
    speeds up during the measurement weighs on both sides alike."""
    if n < 1:
        raise ValueError("at least one run per side")
    xs: list[float] = []
    ys: list[float] = []
    for i in range(n + 1):
        order = ((a, xs), (b, ys)) if i % 2 == 0 else ((b, ys), (a, xs))
        for run, out in order:
            if setup:
                setup()
            took = run()
            if i:  # the first round warms the caches
                out.append(took)
    return statistics.median(xs), statistics.median(ys)


def time_process(argv: list[str], env: Mapping[str, str] | None = None) -> float:
    """Wall ms of one run, stdin and stdout on /dev/null; a failure stops the bench."""
    return measure_process(argv, env)[0]


def measure_process(argv: list[str], env: Mapping[str, str] | None = None) -> tuple[float, float]:
    """(wall ms, peak RSS in MB) of one run (`run_process`)."""
    took, rss, _cpu = run_process(argv, env)
    return took, rss


def run_process(
    argv: list[str], env: Mapping[str, str] | None = None
) -> tuple[float, float, float]:
    """(wall ms, peak RSS in MB, CPU ms) of one run, stdin and stdout on
    /dev/null: the peak and the CPU (user + system) are the kernel's own count
    for that process (`wait4`'s rusage, which covers the children it waited
    for), not a sample. A failure raises BenchError."""
    start = time.perf_counter()
    p = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    err = p.stderr.read() if p.stderr else b""
    _, status, usage = os.wait4(p.pid, 0)
    took = (time.perf_counter() - start) * 1000
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.stderr:
        p.stderr.close()
    if p.returncode != 0:
        raise BenchError(
            f"{' '.join(map(str, argv))} failed ({p.returncode}): {err.decode()[-500:]}"
        )
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    return took, usage.ru_maxrss / 1024, cpu  # Linux counts the peak in KiB


@dataclass(frozen=True)
class ScaleRow:
    """One command on stores of growing size (`run.py --scale`): its median on
    each, the growth from the second-largest to the largest store against a
    goal, and its peak RSS on the largest against a goal in MB. A command
    that failed on a store is MISSED, with why; the bench goes on."""

    case: str
    sizes: tuple[str, ...]  # the stores' names, smallest first ("100k", "1M", "10M")
    ms: tuple[float | None, ...]  # the median on each (None: not measured there)
    goal: float | None  # growth at most this; None: information
    rss_mb: float | None = None  # peak RSS on the largest store
    rss_goal: float | None = 100.0
    beside: str = ""  # a floor's own growth, for comparison ("FTS5 1.4×")
    error: str = ""
    note: str = ""
    timed: str = "scale"

    @property
    def growth(self) -> float | None:
        a, b = (self.ms[-2], self.ms[-1]) if len(self.ms) >= 2 else (None, None)
        return b / a if a and b else None

    @property
    def goal_text(self) -> str:
        return f"≤ {self.goal:g}×" if self.goal is not None else "(info)"

    @property
    def verdict(self) -> str:
        if self.error:
            return "MISSED"
        late = self.growth is not None and self.goal is not None and self.growth > self.goal
        heavy = (
            self.rss_mb is not None and self.rss_goal is not None and self.rss_mb > self.rss_goal
        )
        if late or heavy:
            return "MISSED"
        return "ok" if self.goal is not None or self.rss_goal is not None else ""

    @property
    def missed(self) -> bool:
        return self.verdict == "MISSED"

    def as_json(self) -> dict:
        return asdict(self) | {"growth": self.growth, "goal_text": self.goal_text,
                               "verdict": self.verdict}  # fmt: skip


def scale_header(sizes: tuple[str, ...]) -> str:
    times = " ".join(f"{s:>9}" for s in sizes)
    growth = f"{sizes[-1]}/{sizes[-2]}" if len(sizes) >= 2 else "growth"
    return (
        f"{'command':<34} {times} {growth:>8}  {'goal':<7} {'RSS@' + sizes[-1]:>9}  {'':<6} beside"
    )


def format_scale_row(r: ScaleRow) -> str:
    times = " ".join("        —" if v is None else f"{_figure(v, ' ms'):>9}" for v in r.ms)
    growth = "—" if r.growth is None else f"{r.growth:.2f}×"
    rss = "—" if r.rss_mb is None else f"{r.rss_mb:.0f} MB"
    extra = "; ".join(x for x in (r.beside, r.note, r.error and f"failed: {r.error}") if x)
    return f"{r.case:<34} {times} {growth:>8}  {r.goal_text:<7} {rss:>9}  {r.verdict:<6} {extra}"


def time_call(fn: Callable[[], object]) -> float:
    """Wall ms of one call; garbage from earlier calls is collected first, untimed."""
    gc.collect()
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


@dataclass
class Bench:
    """What each `bench_*.py` module's `cases(bench)` gets: the store, the
    commands, and the two ways to add a row."""

    state_dir: Path
    repeat: int
    kaja_command: str
    sqlite3_command: str = "sqlite3"
    echo: Callable[[str], None] = print
    # False: a smoke run (`run.py --smoke`): every row runs, none is judged (a
    # small store's ratios say nothing of the goals, set for the benchmark store).
    judged: bool = True
    # bench_cloud_accounts' step (`run.py --accounts-step`): "1M" or "10M" messages in all.
    accounts_step: str = "1M"

    def __post_init__(self) -> None:
        self.rows: list[Row] = []

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

    def store(self):
        """kaja's `Store` on the benchmark store, for in-process rows."""
        from kaja_cli.core.store import Store

        return Store.locate(environ=self.env)

    def kaja(self, *args: str) -> list[str]:
        return [self.kaja_command, *args]

    def python(self, *args: str) -> list[str]:
        return [sys.executable, *args]

    def sqlite(self, sql: str, db: Path | None = None, *, readonly: bool = True) -> list[str]:
        return [self.sqlite3_command, *(["-readonly"] if readonly else []), str(db or self.db), sql]

    def run(self, argv: list[str], env: Mapping[str, str] | None = None) -> float:
        return time_process(argv, env or self.env)

    def process(
        self, case: str, kaja: list[str], floor: list[str], floor_what: str, *,
        goal: float | None = None, repeat: int | None = None, env: Mapping[str, str] | None = None,
        setup: Callable[[], None] | None = None, holds: bool = True, note: str = "",
    ) -> Row:  # fmt: skip
        """A whole-process row: `kaja` and `floor` run in turn, same environment;
        the wall times judged, the CPU times' ratio printed beside them."""
        cpu: dict[str, list[float]] = {"kaja": [], "floor": []}

        def timed(side: str, argv: list[str]) -> float:
            took, _rss, used = run_process(argv, env or self.env)
            cpu[side].append(used)
            return took

        try:
            k, f = interleave(lambda: timed("kaja", kaja), lambda: timed("floor", floor),
                              repeat or self.repeat, setup)  # fmt: skip
        except BenchError as e:  # this row says why; the others are still measured
            return self.add(Row.failed(case, PROCESS, floor_what, goal, str(e)))
        # The first run of each side warmed the caches: interleave drops it, so here too.
        kc, fc = (statistics.median(cpu[side][1:]) for side in ("kaja", "floor"))
        return self.add(Row(case, PROCESS, k, f, floor_what, goal, holds, note, kc, fc))

    def in_process(
        self, case: str, kaja: Callable[[], object], floor: Callable[[], object], floor_what: str,
        *, goal: float | None = None, repeat: int | None = None, holds: bool = True, note: str = "",
        setup: Callable[[], None] | None = None,
    ) -> Row:  # fmt: skip
        """An in-process row: kaja's core call and the floor's query, called in turn
        here (`setup`, untimed, before each call of either)."""
        try:
            k, f = interleave(lambda: time_call(kaja), lambda: time_call(floor),
                              repeat or self.repeat, setup)  # fmt: skip
        except BenchError as e:
            return self.add(Row.failed(case, IN_PROCESS, floor_what, goal, str(e)))
        return self.add(Row(case, IN_PROCESS, k, f, floor_what, goal, holds, note))

    def size(self, case: str, kaja_mb: float, floor_mb: float, floor_what: str, note: str = ""):
        """Sizes on disk (MB), information only."""
        return self.add(Row(case, SIZE, kaja_mb, floor_mb, floor_what, note=note))

    def add(self, row: Row) -> Row:
        if not self.judged:
            row = replace(row, goal=None, holds=True)
        self.rows.append(row)
        self.echo(format_row(row))
        return row


def _ratio(ratio: float) -> str:
    """Two decimals, or as many as it takes to show it is not zero (0.003×)."""
    decimals = 2
    while ratio < 10**-decimals and decimals < 9:
        decimals += 1
    return f"{ratio:.{decimals}f}"


def search_words(store: Path) -> tuple[tuple[str, int], tuple[str, int]]:
    """The terms of the store's search index whose document counts are nearest
    100 and 100,000: the selective and the common word of the search rows."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(store.as_uri() + "?mode=ro", uri=True)) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts4aux(main, conversation_text)")
        rows = conn.execute(
            "SELECT term, documents FROM temp.terms WHERE col = '*' AND term GLOB '[a-z]*'"
        ).fetchall()
    selective = min(rows, key=lambda r: (abs(r[1] - 100), r[0]))
    common = min(rows, key=lambda r: (abs(r[1] - 100_000), r[0]))
    return (selective[0], selective[1]), (common[0], common[1])


@dataclass(frozen=True)
class Postgres:
    """What a cloud bench module starts its throwaway server with
    (tests/support/pg.py): `PgServer.start_new(bindir)`, and psql's path."""

    server: type
    bindir: Path
    psql: str


def postgres(bench, rows: str, *, pgbouncer: bool = False) -> Postgres | None:
    """The tests' PostgreSQL for a cloud bench module's `rows`, or None after
    saying why they are skipped (no psycopg, no initdb or psql, no PgBouncer
    when asked for)."""
    import shutil

    try:
        import psycopg  # noqa: F401

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.support.pg import PgServer, find_bindir
        from tests.support.tools import find
    except ImportError as e:
        bench.echo(f"({rows} rows skipped: {e}; pip install -e '.[test]')")
        return None
    bindir = find_bindir()
    psql = shutil.which("psql") or (str(bindir / "psql") if bindir else None)
    if bindir is None or psql is None or (pgbouncer and not find("pgbouncer")):
        needed = "initdb, psql and PgBouncer" if pgbouncer else "initdb and psql"
        packages = "postgresql pgbouncer" if pgbouncer else "postgresql"
        bench.echo(f"({rows} rows skipped: PostgreSQL's {needed} are needed:"
                   f" apt-get install {packages})")  # fmt: skip
        return None
    return Postgres(PgServer, bindir, psql)


def copy_into(raw, table: str, columns: list[str], rows) -> int:
    """COPY `rows` (tuples of `columns`) into kaja's `table` on a server, on
    psycopg connection `raw`; how many went."""
    names = ", ".join(f'"{c}"' for c in columns)
    count = 0
    with raw.cursor() as cur, cur.copy(f'COPY kaja."{table}" ({names}) FROM STDIN') as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count
