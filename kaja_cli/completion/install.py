"""`kaja --install-completion [SHELL]`: the shell named, else the one kaja runs in.

Typer detects the shell from the process tree only, so run from a script, a
service or an IDE (no shell among the parents) it answered "Shell None is not
supported" even when the user typed the shell's name. Here the name given
wins, then the process tree, then `$SHELL`, the login shell.
"""

from __future__ import annotations

import os
import sys

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


def install(argv: list[str]) -> int:
    """Write the completion set-up into the shell's start-up file; the exit code."""
    from kaja_cli import typer_internals
    from kaja_cli.completion import shells

    shells.register()  # kaja's bash script, not Typer's
    shell = wanted_shell(argv)
    if shell is None:
        print(
            "kaja: cannot tell which shell this is: name it, as in "
            "`kaja --install-completion bash` (bash, zsh, fish, powershell or pwsh)",
            file=sys.stderr,
        )
        return 2
    path = typer_internals.install_completion(shell, "kaja")
    print(f"{shell} completion installed in {path}")
    print("Completion will take effect once you restart the terminal")
    return 0
