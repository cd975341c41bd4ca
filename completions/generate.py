"""Write kaja's shell completion scripts (bash, zsh, fish) into this folder.

    python completions/generate.py          # rewrite them
    python completions/generate.py --check  # exit 1 if any is out of date

The scripts come from the installed `kaja` itself (typer's completion
machinery), so they always match the commands; tests/test_completion.py fails
when they are stale.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KAJA = str(Path(sys.executable).with_name("kaja"))
SHELLS = {"bash": "kaja.bash", "zsh": "kaja.zsh", "fish": "kaja.fish"}


def script(shell: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("_KAJA")}
    env["_KAJA_COMPLETE"] = f"source_{shell}"
    out = subprocess.run([KAJA], env=env, capture_output=True, text=True, check=True).stdout
    return out.strip() + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for shell, name in SHELLS.items():
        path = HERE / name
        text = script(shell)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale completion scripts: {', '.join(stale)}; run python completions/generate.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
