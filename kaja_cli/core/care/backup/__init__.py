"""`kaja backup`, `kaja restore`: the whole store in one archive, and back.

- `archive`: the archive's format (members, names, the manifest, sha256 sums);
- `create`: `backup()`, a consistent copy of every database while the agent
  writes (SQLite's online backup API), the image files, one archive written
  atomically;
- `restore`: `plan_restore()` and `execute()` (back up the old store, prepare,
  swap), the steps around `staging`: `extract()` (into a staging folder,
  verified) and `discard()`;
- `swap`: the swap's steps, each one safe to run again, and the restore's
  marker (core/store/markers.py), shared by `restore` and `interrupted`;
- `interrupted`: `interrupted()` and `finish()` for a restore that was
  stopped half way;
- `guarding`: what these commands may write and replace (the archive is
  never one of the store's files; another program's database is refused).

- `local` and `server`: the engine parts (`store.part`): a local store's
  files (`create`, `restore`), or cloud mode's account on the server
  (`server`, its rows chosen by `scope`), in the same archive.

Tests stop a backup or a restore at a chosen step (`markers.checkpoint`).
`kaja optimize` is `core/care/optimize/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


def backup(store: Store, output: Any = None, *, progress: Any = None, force: bool = False) -> Any:
    """`kaja backup`: the store (or in cloud mode, the account's rows) in one archive."""
    return store.part(__name__).backup(store, output, progress=progress, force=force)


def plan_restore(store: Store, archive_path: Any, *, force: bool, dry_run: bool = False) -> Any:
    """`kaja restore`'s plan: where the archive goes, what is there, what is refused."""
    return store.part(__name__).plan_restore(store, archive_path, force=force, dry_run=dry_run)


def execute(store: Store, staged: Any, *, backup_progress: Any = None) -> Any:
    """Put the verified, staged archive in place."""
    return store.part(__name__).execute(store, staged, backup_progress=backup_progress)


def finish_commit(store: Store, data: dict[str, Any]) -> bool:
    """A cloud restore killed at its commit: whether the server committed it."""
    return store.part(__name__).finish_commit(store, data)
