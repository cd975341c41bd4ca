"""`kaja browse` in a real terminal: a detached tmux session of 100 × 30 on
its own socket, its output and exit status written to files (the tests'
end-to-end browse runs, tests/cli/test_browse*.py).

    with BrowseInTmux(kaja, tmp_path) as term:
        term.wait_for(lambda s: "Tomato" in s, "the listing")
        term.type("tomato")
        term.keys("Enter")
        assert term.result() == ("0", TOMATO + "\n")
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import KAJA

WAIT_S = 30


class BrowseInTmux:
    def __init__(self, kaja, tmp_path: Path) -> None:
        self.tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]
        self.out, self.rc = tmp_path / "out", tmp_path / "rc"
        env = dict(
            kaja.env, TERM="xterm-256color", PATH=f"{Path(KAJA).parent}:{os.environ['PATH']}"
        )
        env.pop("NO_COLOR")
        env.pop("COLUMNS")  # the screen is the pane's size, not the tests' wide 200 columns
        script = f"{KAJA} browse > {self.out}; echo $? > {self.rc}"
        subprocess.run([*self.tmux, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30",
                        "sh", "-c", script], env=env, check=True)  # fmt: skip

    def __enter__(self) -> BrowseInTmux:
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p"], capture_output=True, text=True
        ).stdout

    def wait_for(self, cond: Callable[[str], bool], what: str) -> str:
        """The screen once `cond` holds of it (AssertionError after WAIT_S)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            text = self.screen()
            if cond(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{what} never showed:\n{self.screen()}")

    def type(self, text: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-l", text], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def result(self) -> tuple[str, str]:
        """(exit status, stdout) of `kaja browse`, once it has ended."""
        deadline = time.monotonic() + WAIT_S
        while not self.rc.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.rc.read_text().strip(), self.out.read_text()
