"""A restore's swap and its marker: what `restore` (doing it) and `interrupted`
(finishing one a kill stopped) share.

The marker is `kaja.db.restoring` beside the shared file (the protocol of
core/store/markers.py), rewritten before each phase:

- `phase`: "extract" (staging: the old store untouched), "prepare" (copies
  beside their places: the old store untouched) or "swap" (files being put
  in place: finish from the staging folder);
- `staging` (the staging folder), `archive` (its path, size and mtime_ns),
  `backup` (the backup of the old store, once begun), `temps` (copies made
  beside their places), `moves` (the swap, `Move.as_json`).

Every step of the swap can run again (`swap`): `finish` replays the moves a
kill cut short. What a marker says is read with suspicion (`moves_of`,
`ours_staging`): a move it names must touch only what a restore would.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaja_cli.core.care.backup import archive
from kaja_cli.core.engine import fs
from kaja_cli.core.store import markers
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.errors import Busy, Refused

RESTORE = markers.Operation.RESTORE


class Phase:
    EXTRACT = "extract"  # staging: the old store untouched
    PREPARE = "prepare"  # copies beside their places: the old store untouched
    SWAP = "swap"  # files being put in place: finish from the staging folder
    COMMIT = "commit"  # cloud mode: the server's transaction (`xid`) committing


@dataclass(frozen=True)
class Move:
    """One step of the swap: `source` (None: nothing new) goes to `target`, and
    what is at `target` (with a database's companions) goes to `aside`."""

    name: str
    source: Path | None
    target: Path
    aside: Path
    database: bool
    keep: tuple[str, ...] = ()  # entries of the old folder put back in the new one

    def as_json(self) -> dict:
        return {"name": self.name, "source": _str(self.source), "target": str(self.target),
                "aside": str(self.aside), "database": self.database,
                "keep": list(self.keep)}  # fmt: skip


def _str(p: Path | None) -> str | None:
    return None if p is None else str(p)


# --- the marker ----------------------------------------------------------------------------
def marker_path(paths: Paths) -> Path:
    return markers.path(paths, RESTORE)


def read_marker(marker: Path) -> dict[str, Any]:
    return markers.read(marker)


def pending(paths: Paths) -> markers.Pending | None:
    """The marker of an unfinished restore, if any; Refused (exit 5) when what is
    at its path is not a file kaja wrote (never read, nor removed)."""
    found = markers.of(marker_path(paths), RESTORE)
    if found is not None and (why := markers.refusal(found)) is not None:
        raise Refused(why, hint="nothing was restored")
    return found


def running(data: dict[str, Any]) -> int | None:
    """The pid of another process still running the restore a marker describes."""
    pid = data.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        return pid
    return pid


def require_not_running(data: dict[str, Any]) -> None:
    if (pid := running(data)) is not None:
        raise Busy(
            f"another `kaja restore` (process {pid}) is restoring into this store",
            hint="wait for it to end",
        )


def moves_of(data: dict[str, Any]) -> list[Move]:
    """The moves a marker lists that touch only what a restore would."""
    out = []
    for m in data.get("moves", []):
        try:
            source = Path(m["source"]) if m.get("source") else None
            keep = tuple(str(n) for n in m.get("keep", []) if _kept_name(n))
            out.append(Move(str(m["name"]), source, Path(m["target"]), Path(m["aside"]),
                            bool(m["database"]), keep))  # fmt: skip
        except (KeyError, TypeError):
            continue
    return [m for m in out if _sane(m)]


def _kept_name(name: object) -> bool:
    """An entry of the images folder (`name`) or of a session's (`<sessionId>/<name>`)."""
    if not isinstance(name, str):
        return False
    parts = name.split("/")
    return len(parts) <= 2 and all(p not in ("", ".", "..") for p in parts)


def _sane(m: Move) -> bool:
    """A move read from a marker touches only what a restore would: a hidden
    sibling of its target, and sources in the staging folder or beside the target."""
    if m.aside.parent != m.target.parent or not m.aside.name.startswith(f".{m.target.name}."):
        return False
    if m.source is None:
        return True
    return m.source.parent == m.target.parent or ".restore-" in str(m.source)


def ours_staging(value: object) -> Path | None:
    """The staging folder a marker names, if its name is one a restore gives."""
    if not isinstance(value, str) or ".restore-" not in Path(value).name:
        return None
    return Path(value)


# --- the swap ------------------------------------------------------------------------------
def swap(moves: list[Move]) -> None:
    """Each move, idempotently: `finish` runs the same steps again after a kill."""
    for m in moves:
        markers.checkpoint(f"move:{m.target.name}")
        if m.database:
            _swap_database(m)
        else:
            _swap_folder(m)
        fs.fsync_dir(m.target.parent)


def _swap_database(m: Move) -> None:
    if m.source is not None and not os.path.lexists(m.source):
        return  # already in place
    for c, ac in zip(companions(m.target), companions(m.aside), strict=True):
        if os.path.lexists(c):
            os.replace(c, ac)  # a stale journal must never meet the new database
    if m.source is None:
        if os.path.lexists(m.target):
            os.replace(m.target, m.aside)
        return
    os.replace(m.source, m.target)  # atomic: the path holds the old file or the new one


def _swap_folder(m: Move) -> None:
    if m.source is None or os.path.lexists(m.source):  # not yet in place
        if os.path.lexists(m.target):
            if os.path.lexists(m.aside):
                remove(m.aside)
            os.rename(m.target, m.aside)
        if m.source is not None:
            fs.ensure_private_dir(m.target.parent)
            os.rename(m.source, m.target)
    for name in m.keep:  # what was not the old store's goes back (a backup's own wins)
        old, new = m.aside / name, m.target / name
        if os.path.lexists(old) and not os.path.lexists(new):
            fs.ensure_private_dir(new.parent)  # `<sessionId>/<name>`: its folder, if new
            os.rename(old, new)


def clean_up(marker: Path, staging: Path | None, moves: list[Move]) -> None:
    """What was moved aside, the staging folder, then the marker: the restore is done."""
    for m in moves:
        for p in [m.aside, *companions(m.aside)]:
            if os.path.lexists(p):
                remove(p)
    remove_staging(staging)
    markers.finish(marker)


# --- files and folders, never through a link -------------------------------------------------
def lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def remove(path: Path) -> None:
    """Delete a file, or a folder with what it holds; never through a link."""
    st = lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def remove_ours(path: Path) -> None:
    """`remove`, only for a name a restore gives (`.<name>.restore-…`)."""
    if ".restore-" in path.name:
        remove(path)


STAGED = frozenset({archive.DB_FOLDER, archive.IMAGES_FOLDER, archive.MANIFEST})


def own_staging(path: Path) -> bool:
    """Whether `path` is a staging folder a restore of this user made: a real
    folder (no link) this user owns, holding nothing but `new/`, itself this
    user's and holding nothing but what an archive unpacks to."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
            return False
        names = os.listdir(path)
        if not names:
            return True
        if names != ["new"]:
            return False
        st = os.lstat(path / "new")
        if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
            return False
        return set(os.listdir(path / "new")) <= STAGED
    except OSError:
        return False


def remove_staging(path: Path | None) -> None:
    """Remove a staging folder, only when it is provably one of ours (`own_staging`):
    as root, a folder of that name could be another user's."""
    if path is not None and own_staging(path):
        rmtree(path)


def rmtree(path: Path | None) -> None:
    if path is None:
        return
    st = lstat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
