"""`kaja optimize`: keep the store quick and small without changing what it holds.

One skeleton, two engine parts (`store.part`): `local` merges the search
index, runs ANALYZE and checkpoints each SQLite file (VACUUM when asked);
`server` runs `VACUUM (ANALYZE)` on kaja's tables in cloud mode. What either
did is `model`'s `OptimizeResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kaja_cli.core.care.optimize.model import FileResult, IndexResult, OptimizeResult

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

__all__ = ["FileResult", "IndexResult", "OptimizeResult", "optimize", "plan"]


def optimize(
    store: Store, *, vacuum: bool = False, step: Callable[[str], None] | None = None
) -> OptimizeResult:
    """Optimize the store (see the engine parts); `step` hears each step as it starts."""
    return store.part(__name__).optimize(store, vacuum=vacuum, step=step)


def plan(store: Store, *, vacuum: bool = False) -> OptimizeResult:
    """What `optimize` would do (`--dry-run`), read only: the same refusals
    (exit 4 and 5) before anything, each file as it is now."""
    return store.part(__name__).plan(store, vacuum=vacuum)
