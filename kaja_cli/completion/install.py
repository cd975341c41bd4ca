"""`kaja --install-completion [SHELL]`: the shell named, else the one kaja runs in.

Typer detects the shell from the process tree only, so run from a script, a
service or an IDE (no shell among the parents) it answered "Shell None is not
supported" even when the user typed the shell's name. Here the name given
wins, then the process tree, then `$SHELL`, the login shell.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def wanted_shell(argv: list[str]) -> str | None:
    """The shell `--install-completion` is for, or None when none can be told."""
    at = argv.index("--install-completion")
    if at + 1 < len(argv) and argv[at + 1] in SHELLS:
        return argv[at + 1]
    import shellingham

    try:
        return shellingham.detect_shell()[0]
    except shellingham.ShellDetectionFailure:
        login = os.path.basename(os.environ.get("SHELL", ""))
        return login if login in SHELLS else None


# What Typer's zsh install appended to ~/.zshrc, which kaja no longer writes: a
# second compinit for most users, and a menu style for every command.
TYPERS_ZSH_LINES = ("fpath+=~/.zfunc; autoload -Uz compinit; compinit",
                    "zstyle ':completion:*' menu select")  # fmt: skip


COMMENT = "# kaja's shell completion (kaja --install-completion %s)"


class Setup(NamedTuple):
    """Where a shell's completion goes: the script, the start-up file that
    loads it (None: the shell finds the script by itself) and the lines that
    do, and lines an earlier install wrote that mean the same."""

    script: Path
    rc: Path | None = None
    lines: tuple[str, ...] = ()
    same: tuple[str, ...] = ()


def setup(shell: str, home: Path) -> Setup:
    """The files and lines for bash, zsh or fish, under `home`."""
    if shell == "bash":
        script = home / ".bash_completions" / "kaja.sh"
        load = "[[ -r ~/.bash_completions/kaja.sh ]] && source ~/.bash_completions/kaja.sh"
        return Setup(script, home / ".bashrc", (COMMENT % shell, load), (f"source '{script}'",))
    if shell == "zsh":
        # Sourced, not found on fpath: a line appended after the user's compinit
        # would add to fpath too late, and a second compinit is what Typer did.
        load = "[[ -r ~/.zfunc/_kaja ]] && source ~/.zfunc/_kaja"
        return Setup(home / ".zfunc" / "_kaja", home / ".zshrc", (COMMENT % shell, load))
    return Setup(home / ".config" / "fish" / "completions" / "kaja.fish")  # fish autoloads it


def install(argv: list[str]) -> int:
    """Write the completion script, and into the shell's start-up file the
    lines that load it (once) and nothing else; say what was written where.
    The exit code."""
    from kaja_cli import typer_internals
    from kaja_cli.completion import shells

    shells.register()  # kaja's bash and zsh scripts, not Typer's
    shell = wanted_shell(argv)
    if shell is None:
        print(
            "kaja: cannot tell which shell this is: name it, as in "
            "`kaja --install-completion bash` (bash, zsh, fish, powershell or pwsh)",
            file=sys.stderr,
        )
        return 2
    if shell not in ("bash", "zsh", "fish"):
        path = typer_internals.install_completion(shell, "kaja")
        print(f"{shell} completion installed in {path}")
        print("Completion will take effect once you restart the terminal")
        return 0
    where = setup(shell, Path.home())
    try:
        where.script.parent.mkdir(parents=True, exist_ok=True)
        where.script.write_text(shells.script(shell) + "\n")
        added = _add_lines(where) if where.rc is not None else None
    except OSError as e:
        print(f"kaja: cannot install {shell} completion: {e}", file=sys.stderr)
        return 1
    print(f"{shell} completion installed in {where.script}")
    if where.rc is None:
        print(f"{shell} loads it from there by itself: no start-up file was changed.")
    elif added:
        print(f"Added to {where.rc}:")
        print("\n".join(f"    {line}" for line in where.lines))
    else:
        print(f"{where.rc} loads it already: left as it was.")
    if where.rc is not None and shell == "zsh":
        _mention_typers_lines(where.rc)
    print("It takes effect in a new terminal.")
    return 0


def _add_lines(where: Setup) -> bool:
    """Append `where.lines` to the start-up file unless it loads the script
    already; whether anything was written. Nothing else of the file changes."""
    assert where.rc is not None
    text = where.rc.read_text() if where.rc.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    if where.lines[-1] in present or any(line in present for line in where.same):
        return False
    block = "\n".join(where.lines) + "\n"
    if text and not text.endswith("\n"):
        block = "\n" + block
    if text:
        block = "\n" + block  # a blank line before kaja's, as between paragraphs
    with where.rc.open("a") as rc:
        rc.write(block)
    return True


def _mention_typers_lines(zshrc: Path) -> None:
    """Say which lines an earlier kaja appended that it no longer needs. Left in
    place: any program built with Typer appends the same ones, its completion
    may need them, and the user's shell may have come to rely on that compinit."""
    found = [line for line in zshrc.read_text().splitlines() if line.strip() in TYPERS_ZSH_LINES]
    if found:
        print(f"{zshrc} also has these lines, which an earlier kaja (or another program's "
              "completion) added; kaja no longer needs them, and left them as they are:")  # fmt: skip
        print("\n".join(f"    {line}" for line in found))
