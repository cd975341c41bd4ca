"""Shared fixtures: run `kaja` against throwaway stores.

`kaja(...)` runs the command with its own state dir, settings file and HOME,
so a test sees exactly what a user sees: exit code, stdout, stderr and the
files on disk. By default the run happens in this process, through
`kaja_cli.app.main()` as a fresh process would run it (tests/support/inprocess.py):
~80 ms of interpreter start-up saved per run, and coverage sees the commands.
A real process runs the installed console script where the behaviour is about
processes: `kaja.proc(...)`, every call in a test marked
`@pytest.mark.process`, every call with `pytest --real-processes`, and
`kaja.popen(...)` (tests/cli/test_cli.py compares the two for every command group).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import hypothesis
import pytest

from kaja_cli.core.wording import plural
from tests.support import inprocess

# A suite started as a background job (`bash .ci/run &` in a script) inherits
# SIGINT ignored, and every kaja it starts would too (an ignored signal stays
# ignored across exec): the tests that press Ctrl-C would see it finish instead.
# A handler is reset at exec, so kaja starts with SIGINT's default, as at a prompt.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pytest keeps each test module's assertion-rewritten bytecode only where
# Python may write bytecode: under PYTHONDONTWRITEBYTECODE=1 every worker of
# every run rewrote every module again (about 2 s of CPU each). What the tests
# start keeps the variable (`Kaja.env`): a kill point counts its writes.
sys.dont_write_bytecode = False

# `kaja resume` and the HTML export show times in the local time zone
# (`render.local_time`): the tests' expected texts are in UTC, whatever the
# machine's zone; a test that means another zone gives TZ to its run.
os.environ["TZ"] = "UTC"
time.tzset()

KAJA = inprocess.KAJA
DEMO_NOW = "2026-11-29T12:00:00Z"
# `kaja doctor` compares with the real clock, so the demo store written at DEMO_NOW has, ever
# since, a background task running past its timeout and an active schedule more than a day
# overdue (its agent stopped on DEMO_NOW): a sound demo store's report warns of exactly these
# (tests/cli/test_doctor.py::test_a_demo_from_the_past_is_overdue). A week after DEMO_NOW its
# sync outbox (changes queued two minutes before DEMO_NOW) is old enough to warn too; within an
# hour of that moment either answer is right.
DEMO_AGE_WARNINGS = ("tasks", "schedules")


def demo_age_warnings() -> tuple[set[str], set[str]]:
    """The warnings the demo store's age gives now: (certain, possible)."""
    from kaja_cli.core.care.doctor.side_data import OUTBOX_WARN_AGE

    age = datetime.now(UTC) - datetime.fromisoformat(DEMO_NOW.replace("Z", "+00:00"))
    certain, possible = set(DEMO_AGE_WARNINGS), set(DEMO_AGE_WARNINGS)
    if age > OUTBOX_WARN_AGE + timedelta(hours=1):
        certain.add("sync-outbox")
    if age > OUTBOX_WARN_AGE - timedelta(hours=1):
        possible.add("sync-outbox")
    return certain, possible


def only_the_demos_age(report: str) -> bool:
    """Whether a `kaja doctor` text report of the demo store found nothing but its age."""
    lines = report.splitlines()
    flagged = {line.rsplit("[", 1)[-1].rstrip("]")
               for line in lines if line.startswith(("  ! ", "  ✗ "))}  # fmt: skip
    certain, possible = demo_age_warnings()
    return (
        certain <= flagged <= possible
        and lines[-1] == f"0 errors, {plural(len(flagged), 'warning')}"
    )


# Hypothesis profiles. `default` (and `ci`, which Hypothesis picks where CI is
# set): derandomized, the same examples on every run, so CI is never flaky by
# chance, and no deadline (a loaded machine is slow, not wrong).
# `pytest --hypothesis-profile=thorough`: ten times the examples, new ones
# each run (a failure prints how to reproduce it, and is kept in
# .hypothesis/ to be tried first next time).
_REPRODUCIBLE = dict(derandomize=True, deadline=None, database=None, print_blob=True)
hypothesis.settings.register_profile("default", max_examples=100, **_REPRODUCIBLE)
hypothesis.settings.register_profile("ci", max_examples=100, **_REPRODUCIBLE)
hypothesis.settings.register_profile(
    "thorough", max_examples=1000, derandomize=False, deadline=None, print_blob=True
)


def examples(n: int) -> int:
    """A property test's example count: `n` in the default profile, scaled
    with the profile's max_examples (ten times `n` when thorough)."""
    return max(1, n * hypothesis.settings().max_examples // 100)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-processes",
        action="store_true",
        help="run every `kaja(...)` of the tests as a real process (slower; the in-process"
        " runs must give the same results)",
    )


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers per core. Most tests wait on something that is not
    this CPU (a kaja process, tmux, a PostgreSQL server, a lock held on
    purpose), so one worker per core leaves the cores idle half the time.
    `PYTEST_XDIST_AUTO_NUM_WORKERS` still decides when set."""
    import os

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return 2 * (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )


# The longest tests (each 20 s or more of one worker's time on a quiet 2-core
# machine), started first, spread over the workers (`_spread`). Started last,
# one of them kept a worker busy a minute after the others had finished; all
# first in one list, xdist gave them all to the first worker.
LONGEST_FIRST = (
    "tests/faults/test_faults.py::test_kill_9_at_the_chosen_points",
    "tests/faults/test_drift.py",
    "tests/faults/test_concurrency.py",
    "tests/cloud/test_cloud_doctor.py::test_thorough_checks_every_code_point",
    "tests/cloud/test_sync.py::test_three_machines",
    "tests/cloud/test_cloud_search.py::test_generated_messages_match_the_same_way",
    "tests/cli/test_completion.py::test_the_fast_path_answers_what_typer_answers",
    "tests/cli/test_terminal.py::test_help_fits_at_50_columns",
    "tests/unit/test_bench.py::test_a_",
    "tests/unit/test_bench.py::test_scale_",
    "tests/cloud/test_cloud_bad_input.py::test_a_server_that_",
    "tests/cloud/test_sync.py::test_a_server_that_",
    "tests/cli/test_backup.py::test_backup_beside_live_writers",
    "tests/faults/test_faults.py::test_a_store_made_read_only_under_a_running_writer",
    "tests/faults/test_faults.py::test_ctrl_c_is_exit_130",
    "tests/cli/test_qdrant.py::test_a_local_qdrant_held_by_another_process_is_busy",
    "tests/cli/test_usage.py::test_kill_9_mid_reset",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _skip_what_this_machine_lacks(items)
    long = [i for i in items if i.nodeid.startswith(LONGEST_FIRST)]
    rest = [i for i in items if not i.nodeid.startswith(LONGEST_FIRST)]
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = _spread(long, rest, workers, config.getoption("maxschedchunk", None))


def _spread(long: list, rest: list, workers: int, most: int | None) -> list:
    """`long` then `rest`, ordered so that each xdist worker starts with its
    share of `long`. xdist's load scheduling (every worker collects the same
    list) first sends each worker in turn a run of consecutive tests, a
    quarter of its share (at most --maxschedchunk), then more to whichever
    asks; with the long tests first in one list, the first worker got them
    all and ran them one after another (72 s after the rest had finished)."""
    if workers < 2:
        return long + rest
    chunk = max(min(len(long + rest) // workers // 4, most or len(long + rest)), 2)
    shares = [long[w::workers] for w in range(workers)]
    out, left = [], iter(rest)
    for share in shares:
        head = share[:chunk]
        out += head + list(itertools.islice(left, chunk - len(head)))
    return out + [t for share in shares for t in share[chunk:]] + list(left)


def _skip_what_this_machine_lacks(items: list[pytest.Item]) -> None:
    """`@pytest.mark.needs("zsh", "tmux")` where one is missing: a skip mark, so
    that `-ra` lists the test's own line with the reason (in CI the test runs,
    and `pytest_runtest_setup` fails it)."""
    from tests.support.tools import in_ci, lacking

    if in_ci():
        return
    for item in items:
        needs = [n for mark in item.iter_markers("needs") for n in mark.args]
        if needs and (reason := lacking(*needs)):
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In CI, a test whose `needs` this machine lacks fails (tests/support/tools.py)."""
    from tests.support.tools import require

    for mark in item.iter_markers("needs"):
        require(*mark.args)


def pytest_configure(config: pytest.Config) -> None:
    inprocess.every_run_real = config.getoption("--real-processes")
    if not hasattr(config, "workerinput"):  # the controller, before any worker starts
        from tests.support import bytecode

        bytecode.compile_missing()


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


class Kaja:
    """The `kaja` command with an isolated environment under `root`.

    `process=True` makes every call a real process (see the module docstring).
    """

    def __init__(self, root: Path, *, process: bool = False):
        self.root = root
        self.process = process
        self.state = root / "state"
        self.config = root / "config" / "settings.toml"
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAJA_", "XDG_"))}
        env.update(
            KAJA_STATE_DIR=str(self.state),
            KAJA_CONFIG=str(self.config),
            HOME=str(self.home),
            NO_COLOR="1",
            COLUMNS="200",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.pop("KAJA_DEBUG", None)
        self.env = env

    @property
    def db(self) -> Path:
        return self.state / "kaja.db"

    def __call__(
        self, *args: str, input: str | None = None, env: dict | None = None, timeout: float = 120
    ) -> Result:
        """`kaja ARGS`: in this process, unless a real one is asked for.

        In-process, `timeout` is not enforced (pytest-timeout ends a hung test).
        """
        if self.process or inprocess.every_run_real:
            return self.proc(*args, input=input, env=env, timeout=timeout)
        odd = inprocess.not_for_in_process(env or {})
        if odd:
            raise ValueError(
                f"{', '.join(odd)}: not read by kaja's code as it runs, so an in-process run"
                " cannot honour it: use kaja.proc(...) or @pytest.mark.process"
            )
        return Result(*inprocess.run(args, self._env(env), input, self.root))

    def proc(
        self, *args: str, input: str | None = None, env: dict | None = None, timeout: float = 120
    ) -> Result:
        """`kaja ARGS` as a real process: the installed console script."""
        p = subprocess.run(
            [KAJA, *args],
            input=input,
            capture_output=True,
            text=True,
            env=self._env(env),
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        return Result(p.returncode, p.stdout, p.stderr)

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen([KAJA, *args], env=self.env, **kw)

    def _env(self, env: dict | None) -> dict:
        full_env = dict(self.env)
        for k, v in (env or {}).items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        return full_env


@pytest.fixture
def kaja(tmp_path: Path, request: pytest.FixtureRequest) -> Kaja:
    return Kaja(tmp_path, process=request.node.get_closest_marker("process") is not None)


@pytest.fixture(autouse=True)
def _in_process_runs_leave_nothing_open():
    """The probe descriptors in-process runs kept open close with the test."""
    yield
    inprocess.close_leftovers()


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo-template")
    k = Kaja(root)
    r = k("demo", "--seed", "1", "--now", DEMO_NOW)
    assert r.code == 0, r
    return k.state


@pytest.fixture
def demo_store(kaja: Kaja, _demo_template: Path) -> Kaja:
    """`kaja` with a copy of the demo store (seed 1, base time DEMO_NOW) in its state dir."""
    shutil.copytree(_demo_template, kaja.state, symlinks=True)
    return kaja


def demo_at(root: Path, ago: timedelta = timedelta(0)) -> Kaja:
    """`kaja` under `root` with the demo (seed 1) written `ago` before this second, its
    base time (to the second) in `.base`."""
    base = (datetime.now(UTC) - ago).replace(microsecond=0)
    k = Kaja(root)
    r = k("demo", "--seed", "1", "--now", base.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert r.code == 0, r
    k.base = base  # type: ignore[attr-defined]
    return k


def at(base: datetime, **delta: float) -> str:
    """`base` moved by `delta` (timedelta's keywords), as the store writes a time."""
    from kaja_cli.core.clock import iso

    return iso(base + timedelta(**delta))


@pytest.fixture(scope="session")
def _present_demo_template(tmp_path_factory: pytest.TempPathFactory) -> Kaja:
    return demo_at(tmp_path_factory.mktemp("present-demo-template"))


@pytest.fixture
def present_demo_store(kaja: Kaja, _present_demo_template: Kaja) -> Kaja:
    """`kaja` with a copy of the demo store written at the start of this test session,
    its base time in `.base`: for what the store's age changes (sign-in sessions that
    expire, "2d ago" turning into a date in a listing). The DEMO_NOW store ages with the
    calendar; this one is days old at most on any date the tests run."""
    shutil.copytree(_present_demo_template.state, kaja.state, symlinks=True)
    kaja.base = _present_demo_template.base  # type: ignore[attr-defined]
    return kaja


@pytest.fixture(scope="module")
def shared_demo_store(tmp_path_factory: pytest.TempPathFactory, _demo_template: Path):
    """One copy of the demo store for the tests of a module that only read it
    (searches, listings), with the query profile off in its settings: a read
    then writes nothing at all. After the module every file must be as it
    was, or a test changed what the next one reads (give that one
    `demo_store`)."""
    k = Kaja(tmp_path_factory.mktemp("shared-demo"))
    shutil.copytree(_demo_template, k.state, symlinks=True)
    k.config.parent.mkdir(parents=True)
    k.config.write_text("[logging.database]\nenabled = false\n")
    before = _fingerprint(k.root)
    yield k
    assert _fingerprint(k.root) == before, "a test changed the shared demo store"


def _fingerprint(root: Path) -> dict[str, str]:
    """Every file below `root` and its sha256, but SQLite's -shm (shared memory
    every reader marks what it reads in; it holds no data)."""
    import hashlib

    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
        if not p.name.endswith("-shm")
    }
