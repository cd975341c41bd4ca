"""The demo's engine part for a local store (SQLite files), asked for with
`store.part` as `server` is: the same functions.

A local store keeps every table of SPEC §4 and the side databases; what is
already there is its files.
"""

from __future__ import annotations

from pathlib import Path

from kaja_cli.core.store import Store


def keeps(table: str) -> bool:
    """Whether the store keeps `table` (a local store keeps them all)."""
    return True


def existing(store: Store) -> list[Path | str]:
    """The store's database files already there."""
    return [f.path for f in store.paths.databases() if f.path.exists() or f.path.is_symlink()]
