"""The benchmark's own arithmetic (bench/harness.py, bench/run.py): a ratio is
two positive medians divided, never a difference; a goal can be missed, and
`--check` turns a miss into exit 1.

The runner is fed a fake kaja (a shell script whose `--version` is slow)
through `--kaja`, so these tests time nothing of kaja's and judge only the
bench: they assert what it prints and its exit status, not how fast anything is.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from harness import IN_PROCESS, PROCESS, Bench, Row, interleave  # noqa: E402


# --- a row --------------------------------------------------------------------------------
def test_ratio_is_kaja_over_floor_and_a_goal_can_be_missed():
    fast = Row("case", PROCESS, kaja=12.0, floor=10.0, floor_what="floor", goal=1.5)
    slow = Row("case", PROCESS, kaja=16.0, floor=10.0, floor_what="floor", goal=1.5)
    assert fast.ratio == pytest.approx(1.2)
    assert (fast.verdict, slow.verdict) == ("ok", "MISSED")
    assert slow.missed and not fast.missed
    assert Row("case", PROCESS, 15.0, 10.0, "floor", goal=1.5).verdict == "ok"  # at the goal


def test_information_rows_are_never_judged_unless_a_condition_fails():
    info = Row("case", IN_PROCESS, kaja=50.0, floor=1.0, floor_what="floor")
    assert (info.goal_text, info.verdict, info.missed) == ("(info)", "", False)
    wrong = Row("case", PROCESS, kaja=1.0, floor=2.0, floor_what="floor", holds=False)
    assert wrong.verdict == "MISSED"


def test_a_goal_row_whose_condition_fails_is_missed_whatever_its_ratio():
    row = Row("case", PROCESS, kaja=1.0, floor=10.0, floor_what="floor", goal=1.5, holds=False)
    assert row.ratio < 1.5
    assert row.verdict == "MISSED"


@pytest.mark.parametrize("bad", [0, 0.0, -3.5, math.nan, math.inf, None, "12"])
def test_a_row_refuses_a_median_that_would_make_the_ratio_negative_or_undefined(bad):
    with pytest.raises(ValueError, match="must be positive"):
        Row("case", PROCESS, kaja=bad, floor=10.0, floor_what="floor")
    with pytest.raises(ValueError, match="must be positive"):
        Row("case", PROCESS, kaja=10.0, floor=bad, floor_what="floor")


@pytest.mark.parametrize("bad", [0, -1.5, math.nan])
def test_a_goal_is_a_positive_ratio(bad):
    with pytest.raises(ValueError, match="goal"):
        Row("case", PROCESS, kaja=1.0, floor=1.0, floor_what="floor", goal=bad)


# --- timing -------------------------------------------------------------------------------
def test_interleave_alternates_the_order_discards_the_warm_up_and_keeps_medians():
    calls: list[str] = []
    a_times = iter([1000.0, 3.0, 1.0, 2.0])  # the first is the warm-up
    b_times = iter([1000.0, 30.0, 10.0, 20.0])

    def a() -> float:
        calls.append("a")
        return next(a_times)

    def b() -> float:
        calls.append("b")
        return next(b_times)

    assert interleave(a, b, 3) == (2.0, 20.0)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]


def test_interleave_runs_setup_before_every_run():
    log: list[str] = []
    interleave(lambda: log.append("a") or 1.0, lambda: log.append("b") or 1.0, 1,
               setup=lambda: log.append("setup"))  # fmt: skip
    assert log == ["setup", "a", "setup", "b", "setup", "b", "setup", "a"]


def test_an_in_process_row_misses_when_the_core_call_is_slower(tmp_path):
    # A hundredfold apart: on a loaded machine a 1 ms sleep takes 15 ms (the
    # scheduler's delay), and 2 ms against 20 ms came out as a ratio of 1.4.
    printed: list[str] = []
    bench = Bench(tmp_path, repeat=3, kaja_command="kaja", echo=printed.append)
    slow = bench.in_process("slow core", lambda: time.sleep(0.1), lambda: time.sleep(0.001),
                            "sleep 1 ms", goal=1.5)  # fmt: skip
    fast = bench.in_process("fast core", lambda: time.sleep(0.001), lambda: time.sleep(0.1),
                            "sleep 100 ms", goal=1.5)  # fmt: skip
    assert slow.ratio > 1.5 and slow.verdict == "MISSED"
    assert 0 < fast.ratio < 1.5 and fast.verdict == "ok"
    assert bench.rows == [slow, fast]
    assert "MISSED" in printed[0] and " ok " in printed[1]


def test_a_process_row_prints_the_cpu_ratio_beside_the_wall_one(tmp_path):
    """kaja spends 0.2 s of CPU, the floor sleeps 0.2 s: the CPU ratio (the
    kernel's count for each child, medians of the same runs) shows it however
    loaded the machine is, printed with the row and kept in its JSON."""
    printed: list[str] = []
    bench = Bench(tmp_path, repeat=3, kaja_command="kaja", echo=printed.append)
    busy = [sys.executable, "-c", "import time\nwhile time.process_time() < 0.2: pass"]
    idle = [sys.executable, "-c", "import time; time.sleep(0.2)"]
    row = bench.process("busy against idle", busy, idle, "python asleep")
    assert row.kaja_cpu >= 200 and row.floor_cpu < 150
    assert row.cpu_ratio == row.kaja_cpu / row.floor_cpu > 1.5
    assert printed[0].endswith(f"(CPU {row.cpu_ratio:.2f}×)"), printed[0]
    assert row.as_json()["cpu_ratio"] == row.cpu_ratio
    assert Row("in", IN_PROCESS, 1.0, 1.0, "floor").cpu_ratio is None  # processes only


# --- the runner, with a fake kaja -------------------------------------------------------------
def _fake_kaja(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kaja"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _run(tmp_path: Path, kaja: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--kaja", str(kaja), "--out", str(tmp_path / "out"),
         "--only", "startup", "--repeat", "1", *options],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


RATIO = re.compile(r"\s(-?[\d.]+)×\s")


def _rows(stdout: str) -> dict[str, str]:
    return {line.split("  ")[0]: line for line in stdout.splitlines() if " process " in line}


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_a_slow_kaja_is_reported_missed_and_check_makes_it_exit_1(tmp_path):
    # Slow at any load: its --version is the floor's own, three times over.
    floor = f'"{sys.executable}" "{BENCH / "bare_typer.py"}" --version >/dev/null'
    slow = _fake_kaja(tmp_path, f'case "$1" in --version) {floor}; {floor}; {floor};; esac')
    p = _run(tmp_path, slow)
    assert p.returncode == 0, p.stderr  # without --check a miss is reported, not an error
    rows = _rows(p.stdout)
    version = rows["start-up: kaja --version"]
    assert "≤ 1.15×" in version and "MISSED" in version and "bare Typer app" in version
    assert float(RATIO.search(version).group(1)) > 1.15
    # The fake answers everything else at once: those goals are met, the ratio still positive.
    assert " ok " in rows["start-up: kaja config paths --json"]
    ratios = [float(m.group(1)) for m in map(RATIO.search, rows.values())]
    assert len(ratios) == 7 and all(r > 0 for r in ratios)  # the seven-command floor too
    assert "MISSED: start-up: kaja --version" in p.stdout
    saved = json.loads((tmp_path / "out" / "last.json").read_text())
    assert [r["verdict"] for r in saved if r["case"] == "start-up: kaja --version"] == ["MISSED"]
    assert all(r["ratio"] > 0 for r in saved)

    p = _run(tmp_path, slow, "--check")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "MISSED" in _rows(p.stdout)["start-up: kaja --version"]


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_a_fast_kaja_meets_every_goal_and_check_exits_0(tmp_path):
    # `config get` is judged against `config paths`, both kaja: the fake makes
    # `paths` the slower one, so that ratio is not a coin toss around 1.
    fast = _fake_kaja(tmp_path, 'case "$1 $2" in "config paths") sleep 0.02;; esac')
    p = _run(tmp_path, fast, "--check")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "every goal met" in p.stdout
    assert "MISSED" not in p.stdout


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_a_smoke_run_runs_every_row_and_judges_none(tmp_path):
    """`--smoke` (.ci/run): the slow kaja's rows are there, with no verdict, exit 0."""
    floor = f'"{sys.executable}" "{BENCH / "bare_typer.py"}" --version >/dev/null'
    slow = _fake_kaja(tmp_path, f'case "$1" in --version) {floor}; {floor}; {floor};; esac')
    p = _run(tmp_path, slow, "--smoke")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = _rows(p.stdout)
    assert len(rows) == 7 and "(info)" in rows["start-up: kaja --version"]
    assert "MISSED" not in p.stdout and "a smoke run judges no goal" in p.stdout
    assert _run(tmp_path, slow, "--smoke", "--check").returncode == 2


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_a_failing_command_is_a_row_saying_why_and_the_bench_goes_on_then_exits_2(tmp_path):
    """One command fails (a statement timeout on a big store, say): its row is
    MISSED with why and no figures, every other row is still measured, the
    JSON holds nulls where the figures would be, and the run exits 2."""
    p = _run(
        tmp_path, _fake_kaja(tmp_path, 'case "$1" in --version) echo broken >&2; exit 3;; esac')
    )
    assert p.returncode == 2, p.stdout + p.stderr
    rows = _rows(p.stdout)
    version = rows["start-up: kaja --version"]
    assert "MISSED" in version and "failed (3)" in version and "broken" in version
    assert re.search(r" process +- +- +- ", version)  # no figure for a command that did not run
    measured = [r for case, r in rows.items() if case != "start-up: kaja --version"]
    assert len(measured) == 6 and all(float(RATIO.search(r).group(1)) > 0 for r in measured)
    assert "1 of 7 rows could not be measured: start-up: kaja --version" in p.stderr
    assert "Traceback" not in p.stderr
    saved = {r["case"]: r for r in json.loads((tmp_path / "out" / "last.json").read_text())}
    assert saved["start-up: kaja --version"]["ratio"] is None
    assert saved["start-up: kaja --version"]["verdict"] == "MISSED"
    assert "broken" in saved["start-up: kaja --version"]["error"]


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_a_kaja_that_always_fails_gives_no_figure_and_exit_2_in_a_smoke_run_too(tmp_path):
    p = _run(tmp_path, _fake_kaja(tmp_path, "echo broken >&2; exit 3"), "--smoke")
    assert p.returncode == 2  # .ci/run's smoke run: a failure is never a pass
    rows = _rows(p.stdout)
    assert rows and all("failed (3)" in r and "MISSED" in r for r in rows.values())
    assert all(re.search(r" process +- +- +- ", r) for r in rows.values())
    assert "could not be measured" in p.stderr and "Traceback" not in p.stderr


def test_help_documents_every_option_and_the_exit_status():
    p = subprocess.run([sys.executable, str(BENCH / "run.py"), "--help"], capture_output=True,
                       text=True, check=True)  # fmt: skip
    for option in ("--sessions", "--messages", "--repeat", "--only", "--check", "--kaja", "--out",
                   "--smoke"):  # fmt: skip
        assert option in p.stdout
    assert "Exit status" in p.stdout and "MISSED" in p.stdout


def test_an_unknown_module_is_a_usage_error(tmp_path):
    p = _run(tmp_path, _fake_kaja(tmp_path, "exit 0"), "--only", "startup,nope")
    assert p.returncode == 2
    assert "--only: no module nope" in p.stderr


# --- --scale: each command on stores of growing size ------------------------------------------
@pytest.fixture(scope="module")
def two_stores(tmp_path_factory) -> tuple[Path, Path]:
    """Two small demo stores, smallest first (the rows query them for words, owners, sessions)."""
    root = tmp_path_factory.mktemp("scale")
    kaja = Path(sys.executable).with_name("kaja")
    made = []
    for name, sessions, messages in (("small", 20, 1500), ("big", 30, 3000)):
        state = root / name
        subprocess.run([str(kaja), "--state-dir", str(state), "demo", "--seed", "1", "--sessions",
                        str(sessions), "--messages", str(messages)], check=True, capture_output=True)  # fmt: skip
        (state / name).touch()  # how a fake kaja knows the store, and its copy, apart
        made.append(state)
    return made[0], made[1]


# A fake kaja as fast on the big store as a goal allows by a wide margin: 0.3 s
# on the small store, 0.05 s on the big one. Equal times would judge growth on
# the noise of two sleeps, which a loaded machine pushes past 1.3x.
SCALE_FAKE = 'if [ -e "$KAJA_STATE_DIR/big" ]; then sleep 0.05; else sleep 0.3; fi\n'


def _run_scale(tmp_path: Path, kaja: Path, stores: tuple[Path, Path], *options: str):
    return subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--scale", "--scale-stores", ",".join(map(str, stores)),
         "--kaja", str(kaja), "--out", str(tmp_path / "out"), "--repeat", "1", *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _scale_rows(stdout: str) -> dict[str, str]:
    return {line[:34].strip(): line for line in stdout.splitlines() if " ms " in line}


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_scale_prints_growth_and_peak_rss_and_runs_to_the_end_past_a_failure(tmp_path, two_stores):
    # Every command meets its goal by far (SCALE_FAKE) but `runs`, which takes 1.5 s
    # more on the big store, and `notes`, which fails there: both rows MISSED,
    # every other row still measured.
    fake = _fake_kaja(tmp_path, SCALE_FAKE + 'case "$KAJA_STATE_DIR $1" in\n'
                      '  *big\\ runs) sleep 1.5;;\n  *big\\ notes) echo broken >&2; exit 3;;\nesac')  # fmt: skip
    p = _run_scale(tmp_path, fake, two_stores)
    assert p.returncode == 0, p.stdout + p.stderr  # without --check a miss is reported
    rows = _scale_rows(p.stdout)
    assert "MISSED" in rows["runs"] and "≤ 1.3×" in rows["runs"]
    growth = float(re.search(r"([\d.]+)×\s+≤", rows["runs"]).group(1))
    assert growth > 2
    assert "MISSED" in rows["notes"] and "failed" in rows["notes"] and "broken" in rows["notes"]
    listing = rows["sessions -n 20"]
    assert " ok " in listing and re.search(r"\d MB", listing)  # peak RSS on the largest store
    for case in ("config paths --json", "usage", "wipe --owner (a copy)", "sessions delete (a copy)",
                 "search -n 20: a common word", "backup -o x.tar"):  # fmt: skip
        assert " ok " in rows[case], rows[case]
    assert " ok " in rows["sessions export --all -f jsonl"]  # the last row: ran to the end
    assert "FTS5" in rows["search -n 20: a common word"]  # FTS5's own growth beside it
    # and the standard tools' for the same archive (real sqlite3 and tar on the real stores)
    assert re.search(r"sqlite3 \.backup \+ tar [\d.]+ → [\d.]+ s, [\d.]+×", rows["backup -o x.tar"])
    assert "MISSED: runs; notes" in p.stdout
    saved = json.loads((tmp_path / "out" / "last-scale.json").read_text())
    assert {r["case"]: r["verdict"] for r in saved}["runs"] == "MISSED"
    assert all(r["rss_mb"] > 0 for r in saved if not r["error"])
    assert not list((tmp_path / "out").glob("scale-copy-*"))  # the copies are gone

    # --check makes a miss exit 1 (a fake that only misses `runs`, the rest instant:
    # whatever the rest are judged, the run must end 1).
    fake = _fake_kaja(tmp_path, 'case "$KAJA_STATE_DIR $1" in *big\\ runs) sleep 0.5;; esac')
    p = _run_scale(tmp_path, fake, two_stores, "--check")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "MISSED" in _scale_rows(p.stdout)["runs"]


@pytest.mark.needs("sqlite3")  # the floors are the sqlite3 command line
def test_scale_check_exits_0_when_every_goal_is_met(tmp_path, two_stores):
    p = _run_scale(tmp_path, _fake_kaja(tmp_path, SCALE_FAKE), two_stores, "--check")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "every goal met" in p.stdout and "MISSED" not in p.stdout
    assert "doctor" in p.stdout and "no --quick in this kaja" in p.stdout


def test_scale_stores_must_be_stores(tmp_path):
    p = _run_scale(tmp_path, _fake_kaja(tmp_path, "exit 0"), (tmp_path / "a", tmp_path / "b"))
    assert p.returncode == 2 and "--scale-stores: no store in" in p.stderr


# --- `sessions export ID`'s second floor (issue 40) -----------------------------------------
def test_export_one_session_is_timed_against_both_floors(tmp_path):
    """Each format of `sessions export ID` gets two rows: against the session's
    rows, and against the sqlite3 CLI printing its messages with their tool
    calls as JSON, every column, in kaja's order (what that floor prints is
    checked by running it)."""
    import sqlite3
    from contextlib import closing

    import bench_export

    db = tmp_path / "kaja.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executescript(
            'CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT, "createdAt" TEXT);'
            'CREATE TABLE messages (id TEXT PRIMARY KEY, "sessionId" TEXT, seq INTEGER,'
            ' role TEXT, content TEXT, "createdAt" TEXT);'
            'CREATE TABLE tool_calls (id TEXT PRIMARY KEY, "messageId" TEXT, position INTEGER,'
            " name TEXT, arguments TEXT);"
            "INSERT INTO sessions VALUES ('s1', 'alice', 'x'), ('s2', NULL, 'y');"
            "INSERT INTO messages VALUES ('m2', 's1', 2, 'assistant', NULL, 't2'),"
            " ('m1', 's1', 1, 'user', 'hi', 't1'), ('m3', 's1', 3, 'tool', 'out', 't3'),"
            " ('o1', 's2', 1, 'user', 'other', 't');"
            "INSERT INTO tool_calls VALUES ('c2', 'm2', 1, 'second', '{}'),"
            " ('c1', 'm2', 0, 'first', '{\"q\": 1}');"
        )

    class Recorder:
        def __init__(self):
            self.db, self.rows = db, []

        def sqlite(self, sql, db=None, *, readonly=True):
            return ["sqlite3", "-readonly", str(self.db), sql]

        def kaja(self, *args):
            return ["kaja", *args]

        def process(self, case, kaja, floor, floor_what, **kw):
            self.rows.append((case, kaja, floor, floor_what, kw["goal"]))

    bench = Recorder()
    bench_export.one_session(bench)
    assert [(r[0], r[3], r[4]) for r in bench.rows] == [
        ("sessions export ID -f md (3 messages)", "sqlite3 CLI: the session's rows", 3.0),
        ("same -f md, against its JSON", "sqlite3 CLI: its messages and tool calls as JSON", 3.0),
        ("sessions export ID -f html (3 messages)", "sqlite3 CLI: the session's rows", 3.0),
        ("same -f html, against its JSON", "sqlite3 CLI: its messages and tool calls as JSON", 3.0),
        ("sessions export ID -f json (3 messages)", "sqlite3 CLI: the session's rows", 2.0),
        ("same -f json, against its JSON", "sqlite3 CLI: its messages and tool calls as JSON", 2.0),
    ]
    assert bench.rows[0][1] == ["kaja", "sessions", "export", "s1", "--owner", "alice", "-f", "md"]
    printed = subprocess.run(bench.rows[1][2], capture_output=True, text=True, check=True).stdout
    messages = [json.loads(line) for line in printed.splitlines()]
    assert [m["id"] for m in messages] == ["m1", "m2", "m3"]
    assert messages[0] == {"id": "m1", "sessionId": "s1", "seq": 1, "role": "user",
                           "content": "hi", "createdAt": "t1", "tool_calls": []}  # fmt: skip
    assert messages[1]["tool_calls"] == [
        {"id": "c1", "messageId": "m2", "position": 0, "name": "first", "arguments": '{"q": 1}'},
        {"id": "c2", "messageId": "m2", "position": 1, "name": "second", "arguments": "{}"},
    ]
