"""Shell completion: the committed scripts are current, and real shells use them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "completions"


def test_committed_scripts_are_current():
    p = subprocess.run(
        [sys.executable, str(SCRIPTS / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr


def bash_complete(kaja, line: str) -> list[str]:
    words = line.split(" ")
    script = (
        f"source {SCRIPTS / 'kaja.bash'}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_kaja_completion kaja\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = dict(kaja.env, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    p = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr
    return sorted(w for w in p.stdout.split("\n") if w)


def test_bash_completes_commands_and_options(kaja):
    assert bash_complete(kaja, "kaja se") == ["search", "sessions"]
    assert bash_complete(kaja, "kaja co") == ["config"]
    assert bash_complete(kaja, "kaja config p") == ["paths"]
    assert "--json" in bash_complete(kaja, "kaja config paths --")


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
def test_fish_completes_commands(kaja):
    env = dict(kaja.env, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    p = subprocess.run(
        ["fish", "--no-config", "-c", f"source {SCRIPTS / 'kaja.fish'}; complete -C 'kaja se'"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert [line.split("\t")[0] for line in p.stdout.splitlines()] == ["search", "sessions"]


@pytest.mark.skipif(not (shutil.which("zsh") and shutil.which("tmux")), reason="needs zsh and tmux")
def test_zsh_completes_in_a_real_terminal(kaja, tmp_path):
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text(
        f"autoload -Uz compinit && compinit -u\nsource {SCRIPTS / 'kaja.zsh'}\nPROMPT='> '\n"
    )
    env = dict(
        kaja.env,
        ZDOTDIR=str(zdot),
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        TERM="xterm",
    )
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", sock]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "120", "-y", "20", "zsh"], env=env, check=True
    )

    def pane_when(shows, seconds: float) -> str:
        """The pane's text once `shows` is true of it, or when `seconds` are up."""
        deadline = time.monotonic() + seconds
        while True:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p"], capture_output=True, text=True
            ).stdout
            if shows(screen) or time.monotonic() > deadline:
                return screen
            time.sleep(0.05)

    try:
        # The prompt ("> ", its space trimmed by capture-pane) is set last in
        # .zshrc: once it shows, completion is loaded and keys can be typed.
        pane_when(lambda s: s.startswith(">"), 10)
        subprocess.run([*tmux, "send-keys", "kaja con", "Tab"], check=True)
        screen = pane_when(lambda s: "kaja config" in s, 5)
        assert "kaja config" in screen, screen
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_install_completion_writes_into_home(kaja):
    r = kaja("--install-completion", "bash", env={"SHELL": "/bin/bash"})
    assert r.code == 0, r
    bashrc = (kaja.home / ".bashrc").read_text()
    assert "kaja" in bashrc
