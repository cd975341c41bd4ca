"""Recall of `kaja search --semantic` against word search and their fusion on
the demo store (tests/support/semantic_eval.py: questions as a user
remembers a conversation, sharing no word with it). Prints recall@5 of the
right session for each mode.

    python bench/eval_semantic.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.semantic_eval import QUESTIONS, TOP, recall  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        subprocess.run(
            [sys.executable, "-m", "kaja_cli", "--state-dir", str(state), "demo", "--seed", "1"],
            check=True, capture_output=True,
        )  # fmt: skip
        found = recall(state)
    print(f"recall@{TOP} of the right session, {len(QUESTIONS)} questions (demo store):")
    for mode, n in found.items():
        print(f"  {mode:<9} {n:>2}/{len(QUESTIONS)}  {n / len(QUESTIONS):.0%}")


if __name__ == "__main__":
    main()
