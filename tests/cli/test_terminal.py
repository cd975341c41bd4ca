"""Every screen fits the terminal (the layout rule of kaja_cli/render), checked
on what a real terminal shows: each command runs in tmux at 40, 60, 80, 100
and 120 columns on the demo store, and the captured screen is compared with
the same command at 200 columns, where nothing needs to give way:

- nothing past the right edge: no line the terminal itself had to wrap
  (tmux joins those with `capture-pane -J`);
- no number, id or word cut or split: every word on the narrow screen is a
  word of the wide one, or a piece of one broken after a hyphen or a slash
  (or, in a path, where the line ends: the rule cuts a folder name longer than
  its column there, so how a path breaks depends on how long the test's
  temporary folder is: `-n` adds `popen-gwN/`, a user name its length);
- no mark lost: as many ⏸ ✓ ! ✗ as on the wide screen, and every matched
  word of a search;
- no number parted from its unit (`294.9` at the end of a line, `kB` on the next).

`--help` of every command gets the same checks at 50 columns, and its option
names and ranges are on the screen whole. `sessions` and `stats queries` at 80
have checks of their own: the title gets the room (a column empty in every row
is left out), and no two statements look the same for want of their db.

One tmux server, one window per width, the commands typed into all of them
at once.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import KAJA
from tests.support.sessions_support import BACKUP, TOMATO

pytestmark = pytest.mark.needs("tmux")

WIDTHS = (40, 60, 80, 100, 120)
WIDE = 200
COMMANDS = [
    "sessions",
    "sessions --all-owners -n 0",
    "search shade",
    "search the --all-owners -n 8",
    "usage",
    "usage --by day",
    "doctor",
    f"resume {BACKUP[:8]}",
    f"resume {TOMATO[:8]}",
    "config paths",
    "config show",
    "usage reset --dry-run",
    "doctor --list-checks",
    "wipe --dry-run",
    # The cache's rows, before `kaja cache` adds its own: the demo's, the same in every window.
    "stats queries --db cache",
    "stats slow --db cache",
    "notes --all-owners",
    "search --notes --fts 'salud OR finance OR marie' --all-owners",
    "cache",
    "accounts",
    "accounts sessions marie",
    "sessions --owner telegram:482913",  # no persona in any row
]
UNITS = ("B", "kB", "MB", "GB", "TB", "ms")
MARKS = ("⏸", "✓", "✗", "!")
START, DONE = "@@start@@", "@@done@@"


class Terminal:
    """A tmux server with one window (one bash) per width."""

    def __init__(
        self, root: Path, env: dict, widths: tuple[int, ...], commands: list[str] = COMMANDS
    ) -> None:
        self.tmux = ["tmux", "-S", str(root / "tmux.sock")]
        self.windows = {}
        # Short lines to type: `r N` runs the Nth command (a typed line longer
        # than the screen would itself wrap).
        runner = root / "r"
        cases = "\n".join(f"  {n}) kaja {c};;" for n, c in enumerate(commands))
        runner.write_text(f'clear\necho {START}$1\ncase "$1" in\n{cases}\nesac\necho {DONE}$1\n')
        env = dict(env, PS1="$ ", KAJA_PAGER="", PATH=f"{Path(KAJA).parent}:{env['PATH']}")
        for n, width in enumerate(widths):
            new = (["new-session", "-d", "-s", "kaja", "-x", str(WIDE), "-y", "150"] if n == 0
                   else ["new-window", "-t", "kaja"])  # fmt: skip
            subprocess.run([*self.tmux, *new, "-n", str(width), "-c", str(root), "bash",
                            "--norc", "--noprofile"], env=env, check=True)  # fmt: skip
            subprocess.run([*self.tmux, "resize-window", "-t", f"kaja:{width}", "-x", str(width),
                            "-y", "150"], check=True)  # fmt: skip
            self.windows[width] = f"kaja:{width}"
        self.runner = runner

    def run(self, n: int, *, one_by_one: bool = False) -> dict[int, tuple[list[str], list[str]]]:
        """Command n in every window: {width: (screen lines, lines joined by tmux)}.

        `one_by_one`: a window at a time (doctor would see the others running)."""
        out = {}
        for group in [[w] for w in self.windows] if one_by_one else [list(self.windows)]:
            for width in group:
                target = self.windows[width]
                subprocess.run([*self.tmux, "clear-history", "-t", target], check=True)
                subprocess.run([*self.tmux, "send-keys", "-t", target, f"sh r {n}", "Enter"],
                               check=True)  # fmt: skip
            for width in group:
                out[width] = self._wait(self.windows[width], n)
        return out

    def _wait(self, target: str, n: int) -> tuple[list[str], list[str]]:
        """The output of run n, once its end marker shows."""
        deadline = time.monotonic() + 60
        while f"{DONE}{n}" not in self._capture(target) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _between(self._capture(target), n), _between(self._capture(target, "-J"), n)

    def _capture(self, target: str, *flags: str) -> list[str]:
        p = subprocess.run([*self.tmux, "capture-pane", "-p", "-S", "-", *flags, "-t", target],
                           capture_output=True, text=True, check=True)  # fmt: skip
        return [line.rstrip() for line in p.stdout.splitlines()]

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def _between(lines: list[str], n: int) -> list[str]:
    """The output of run n: between the markers the runner prints."""
    start = lines.index(f"{START}{n}") if f"{START}{n}" in lines else -1
    end = lines.index(f"{DONE}{n}") if f"{DONE}{n}" in lines else len(lines)
    return lines[start + 1 : end]


def pieces(word: str) -> set[str]:
    """A word and the pieces the rule may break it into (after - or /), joined again in runs."""
    parts = re.findall(r"[^-/]*[-/]?", word)
    parts = [p for p in parts if p]
    return {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}


def words_of(lines: list[str]) -> list[str]:
    """The words on a screen, bars of a chart left out (a chart shrinks).

    A record's `header:` label (a table on a screen too narrow for its
    columns side by side) counts as its header."""
    words = [w.removesuffix(":") for w in " ".join(lines).split()]
    for i in range(len(words) - 2):  # doctor's free disk space changes as it runs
        if words[i + 1] in ("kB", "MB", "GB", "TB") and words[i + 2] == "free":
            words[i] = "<free space>"
    return [w for w in words if w.strip("█▏▎▍▌▋▊▉")]


def too_long(words: list[str], width: int) -> set[str]:
    """Every piece of a word longer than a line can hold (a sha256 file name):
    the rule cuts those where the line ends."""
    out = set()
    for w in words:
        if len(w) > width - 8:
            out |= {w[i:j] for i in range(len(w)) for j in range(i + 1, len(w) + 1)}
    return out


def parted(lines: list[str]) -> list[str]:
    """Numbers whose unit went to the next line (`294.9` / `kB`)."""
    out = []
    for line, after in itertools.pairwise(lines):
        last, first = line.strip(BOX).split()[-1:], after.strip(BOX).split()[:1]
        if last and first and re.fullmatch(r"[\d.,]*\d", last[0]):
            if first[0].rstrip(",.;:)") in UNITS:
                out.append(f"{last[0]} / {first[0]}")
    return out


BOX = " │╭╮╰╯─"  # the frame of a --help panel


def check_screen(command, wide, screens, widths, problems) -> None:
    """The rule's checks of each narrow screen against the wide one."""
    assert any(line.strip() for line in wide), command
    allowed = set()
    for word in words_of(wide):
        allowed |= pieces(word)
        if "/" in word:  # a path: a folder name longer than its column is cut at the line's end
            allowed |= {word[i:j] for i in range(len(word)) for j in range(i + 1, len(word) + 1)}
    for width in widths:
        lines, joined = screens[width]
        if len(joined) != len(lines):
            problems.append((command, width, "a line went past the right edge"))
        fits = allowed | too_long(words_of(wide), width)
        cut = [w for w in words_of(lines) if w not in fits]
        if cut:
            problems.append((command, width, f"cut or split: {cut[:5]}"))
        if parted(lines):
            problems.append((command, width, f"a number parted from its unit: {parted(lines)}"))


@pytest.mark.parametrize(
    "shard",
    [pytest.param(i, id=f"{i + 1} of 2", marks=[pytest.mark.exhaustive] if i else [])
     for i in range(2)],
)  # fmt: skip
def test_screens_fit(demo_store, tmp_path, shard):
    """Every screen at every width: the default set every other command (the listing,
    search, usage, doctor, resume among them), `-m exhaustive` the others."""
    term = Terminal(tmp_path, demo_store.env, (WIDE, *WIDTHS))
    problems = []
    try:
        for n, command in enumerate(COMMANDS):
            if n % 2 != shard:
                continue
            # doctor and wipe would see the other windows' kaja holding the store
            screens = term.run(n, one_by_one=command.split()[0] in ("doctor", "wipe"))
            wide, _ = screens[WIDE]
            check_screen(command, wide, screens, WIDTHS, problems)
            for width in WIDTHS:
                lines, _ = screens[width]
                text = "\n".join(lines)
                for mark in MARKS:
                    if words_of(lines).count(mark) != words_of(wide).count(mark):
                        problems.append((command, width, f"{mark} lost"))
                if command.startswith("search shade") and text.count("shade") != "\n".join(
                    wide
                ).count("shade"):
                    problems.append((command, width, "a matched word left out"))
    finally:
        term.close()
    assert not problems, "\n".join(map(str, problems))


def help_commands() -> list[tuple[str, list[str]]]:
    """`--help` of kaja and of every command, with the option names and the
    ranges its help shows."""
    import typer

    from kaja_cli.app import app

    out = []

    def walk(command, path):
        names, ranges = [], []
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names += [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
            describe = getattr(param.type, "_describe_range", None)
            if describe is not None and param.param_type_name == "option" and describe():
                ranges.append(f"[{describe()}]")
        out.append((" ".join([*path, "--help"]), names + ranges))
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


HELP_WIDTH = 50


HELP_SHARDS = 3


@pytest.mark.parametrize(
    "shard",
    [pytest.param(i, id=f"{i + 1} of {HELP_SHARDS}", marks=[pytest.mark.exhaustive] if i else [])
     for i in range(HELP_SHARDS)],
)  # fmt: skip
def test_help_fits_at_50_columns(kaja, tmp_path, shard):
    """Option names and ranges whole, no help text cut, nothing past the edge. The
    default set: every third `--help` (kaja's own among them); `-m exhaustive` the rest."""
    helps = help_commands()
    assert len(helps) > 40 and any("[0<=x<=3600.0]" in whole for _, whole in helps)
    assert not any(
        "[0<=x<=1000000000]" in whole for _, whole in helps
    )  # no range that says nothing
    helps = helps[shard::HELP_SHARDS]
    term = Terminal(tmp_path, kaja.env, (WIDE, HELP_WIDTH), [c for c, _ in helps])
    problems: list = []
    try:
        for n, (command, whole) in enumerate(helps):
            screens = term.run(n)

            # A narrow screen lists an option's names as `--limit, -n`: commas
            # ending a word are not compared.
            def bare(lines):
                return [re.sub(r",(?= |$)", "", line.strip(BOX)) for line in lines]

            wide = bare(screens[WIDE][0])
            narrow = {HELP_WIDTH: (bare(screens[HELP_WIDTH][0]), screens[HELP_WIDTH][1])}
            check_screen(command, wide, narrow, (HELP_WIDTH,), problems)
            words = " ".join(narrow[HELP_WIDTH][0]).split()
            missing = [w for w in whole if not any(w in word for word in words)]
            if missing:
                problems.append((command, HELP_WIDTH, f"not whole: {missing}"))
    finally:
        term.close()
    assert not problems, "\n".join(map(str, problems))


def test_sessions_at_80_give_the_title_the_room(present_demo_store, tmp_path):
    """At 80 columns the title keeps 20 or more (not twelve, on four lines):
    persona goes first. A column empty in every row (the Telegram user's
    personas) is left out at any width; one with something in it stays. The
    sessions are days old ("2d ago"; a month after DEMO_NOW the updated column
    is a date, three columns wider, and the model goes too)."""
    demo_store = present_demo_store
    commands = ["sessions", "sessions --owner telegram:482913", "sessions --all-owners"]
    term = Terminal(tmp_path, demo_store.env, (80, 120), commands)
    try:
        screens = [term.run(n) for n in range(len(commands))]
    finally:
        term.close()
    for screen in (s[80][0] for s in screens):
        starts = [n for n, line in enumerate(screen) if re.match(r"[0-9a-f]{8}\b", line)]
        assert len(starts) >= 3, screen
        heights = [b - a for a, b in zip(starts, [*starts[1:], len(screen)], strict=True)]
        assert max(heights) <= 3, "\n".join(screen)
        header = screen[0]
        after = re.search(r"title +(\S)", header)
        room = (after.start(1) if after else len(header)) - header.index("title") - 2
        assert room >= 20, "\n".join(screen)
    mine, telegram, _ = screens
    assert "model" in mine[80][0][0].split() and "persona" in mine[120][0][0].split()
    for width in (80, 120):
        assert "persona" not in telegram[width][0][0].split(), telegram[width][0]
        assert "model" in telegram[width][0][0].split()


def test_stats_queries_at_80_keeps_the_db(demo_store, tmp_path):
    """The same statement on two databases is two rows: the db column stays,
    so no two rows look the same."""
    term = Terminal(tmp_path, demo_store.env, (80,), ["stats queries -n 0"])
    try:
        screen, _ = term.run(0)[80]
    finally:
        term.close()
    assert "db" in screen[0].split() and "statement" in screen[0].split(), screen
    rows = [line for line in screen[1:] if re.match(r"\s*[\d,]+\s+[\d.,]+\s", line)]
    assert len(rows) >= 3
    assert len(set(rows)) == len(rows), "\n".join(screen)


def test_doctor_at_80_keeps_a_size_with_its_unit(demo_store, tmp_path):
    """`294.9 kB` stays on one line: the store moves to a folder whose name puts
    the end of the shared file's size exactly at column 80, the one place a
    line could end between the number and its unit."""
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="k", dir="/tmp"))  # tmp_path is too long a path
    try:

        def doctor_in(folder: Path, width: int) -> list[str]:
            shutil.copytree(demo_store.state, folder, symlinks=True)
            (tmp_path / folder.name).mkdir()
            env = dict(demo_store.env, KAJA_STATE_DIR=str(folder))
            term = Terminal(tmp_path / folder.name, env, (width,), ["doctor"])
            try:
                return term.run(0)[width][0]
            finally:
                term.close()

        wide = doctor_in(short / "s", WIDE)
        (line,) = [line for line in wide if "shared file:" in line]
        size = re.search(r"(\d[\d.,]*) (kB|MB)\b", line)
        assert size is not None, line
        pad = 80 - size.end(1)
        assert pad >= 0, line
        screen = doctor_in(short / ("s" + "x" * pad), 80)
    finally:
        shutil.rmtree(short)
    assert not parted(screen), "\n".join(screen)
    assert any(f"{size[1]} {size[2]}" in line for line in screen), "\n".join(screen)
