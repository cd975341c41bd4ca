"""Every screen fits the terminal (the layout rule of kaja_cli/render), checked
on what a real terminal shows: each command runs in tmux at 40, 60, 80, 100
and 120 columns on the demo store, and the captured screen is compared with
the same command at 200 columns, where nothing needs to give way:

- nothing past the right edge: no line the terminal itself had to wrap
  (tmux joins those with `capture-pane -J`);
- no number, id or word cut or split: every word on the narrow screen is a
  word of the wide one, or a piece of one broken after a hyphen or a slash;
- no mark lost: as many ⏸ ✓ ! ✗ as on the wide screen, and every matched
  word of a search.

One tmux server, one window per width, the commands typed into all of them
at once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import KAJA
from sessions_support import BACKUP, TOMATO

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")

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
    "notes --all-owners",
    "search --notes --fts 'salud OR finance OR marie' --all-owners",
    "cache",
    "accounts",
    "accounts sessions marie",
]
MARKS = ("⏸", "✓", "✗", "!")
START, DONE = "@@start@@", "@@done@@"


class Terminal:
    """A tmux server with one window (one bash) per width."""

    def __init__(self, root: Path, env: dict, widths: tuple[int, ...]) -> None:
        self.tmux = ["tmux", "-S", str(root / "tmux.sock")]
        self.windows = {}
        # Short lines to type: `r N` runs the Nth command (a typed line longer
        # than the screen would itself wrap).
        runner = root / "r"
        cases = "\n".join(f"  {n}) kaja {c};;" for n, c in enumerate(COMMANDS))
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


def test_screens_fit(demo_store, tmp_path):
    term = Terminal(tmp_path, demo_store.env, (WIDE, *WIDTHS))
    problems = []
    try:
        for n, command in enumerate(COMMANDS):
            # doctor and wipe would see the other windows' kaja holding the store
            screens = term.run(n, one_by_one=command.split()[0] in ("doctor", "wipe"))
            wide, _ = screens[WIDE]
            assert any(line.strip() for line in wide), command
            allowed = set()
            for word in words_of(wide):
                allowed |= pieces(word)
            for width in WIDTHS:
                lines, joined = screens[width]
                text = "\n".join(lines)
                if len(joined) != len(lines):
                    problems.append((command, width, "a line went past the right edge"))
                fits = allowed | too_long(words_of(wide), width)
                cut = [w for w in words_of(lines) if w not in fits]
                if cut:
                    problems.append((command, width, f"cut or split: {cut[:5]}"))
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
