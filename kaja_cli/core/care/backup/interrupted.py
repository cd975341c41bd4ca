"""Restores that did not end: what one left (`interrupted`, read-only, for
`kaja doctor`) and finishing it (`finish`: `kaja restore --finish`, or the
next `kaja restore`): undone before its swap, completed after, from the
marker `core.backup.restore` writes before each phase. A marker is read
with suspicion: a move it names must touch only what a restore would.
"""

from __future__ import annotations

import os
from pathlib import Path

from kaja_cli.core.care.backup.restore import (
    Finished,
    Leftover,
    Move,
    Phase,
    _clean_up,
    _read_marker,
    _remove_ours,
    _sigint_held,
    _swap,
    marker_path,
)
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Paths
from kaja_cli.errors import Busy


def running(data: dict) -> int | None:
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


def _not_running(data: dict) -> None:
    if (pid := running(data)) is not None:
        raise Busy(
            f"another `kaja restore` (process {pid}) is restoring into this store",
            hint="wait for it to end",
        )


def interrupted(paths: Paths) -> Leftover | None:
    """What an interrupted restore left, read-only (for `kaja doctor`); a
    restore still running in another process counts too (`Leftover.pid`)."""
    marker = marker_path(paths)
    if not marker.exists():
        return None
    data = _read_marker(marker)
    staging = _ours_staging(data.get("staging"))
    arch = (data.get("archive") or {}).get("path", "?")
    phase = str(data.get("phase", Phase.EXTRACT))
    left = Leftover(marker, str(arch), str(data.get("started_at", "?")), phase, staging)
    left.pid = running(data)
    if phase == Phase.SWAP:
        moves = _moves_of(data)
        pending = [m for m in moves if m.source is not None and os.path.lexists(m.source)]
        left.pending = len(pending)
        left.details = [f"not yet in place: {m.target}" for m in pending]
        left.details += [f"in place: {m.target}" for m in moves if m not in pending and m.source]
    if staging is not None and staging.exists():
        size, _files = fs.tree_size(staging)
        left.details.append(f"staging folder: {staging} ({fs.human_size(size)})")
    return left


def finish(store: Store, archive_path: Path | None = None) -> Finished | None:
    """Finish an interrupted restore: undo it before its swap, complete it after.
    None when there is none. Busy (exit 4) while Kaja has a database open."""
    paths = store.paths
    marker = marker_path(paths)
    if not marker.exists():
        return None
    data = _read_marker(marker)
    _not_running(data)
    arch = data.get("archive") or {}
    name = str(arch.get("path", "an archive"))
    staging = _ours_staging(data.get("staging"))
    same = archive_path is not None and _same_file(archive_path, arch)
    if data.get("phase") != Phase.SWAP:
        for t in data.get("temps", []):
            _remove_ours(Path(t))
        if data.get("backup"):
            from kaja_cli.core.care.backup.create import _remove_stale

            _remove_stale(Path(data["backup"]))
        _clean_up(marker, staging, [])
        return Finished(name, False, f"an interrupted restore of {name} had changed nothing;"
                        " what it left was removed")  # fmt: skip
    moves = _moves_of(data)
    for m in moves:
        if m.database and os.path.exists(m.target) and (pid := db.holder(m.target)) is not None:
            raise Busy(
                f"an interrupted restore is half done, and {m.target} is open in process {pid}",
                hint="close Kaja and the Telegram bot, then run `kaja restore --finish`",
            )
    with _sigint_held():
        _swap(moves)
        _clean_up(marker, staging, moves)
    return Finished(name, True, f"finished the interrupted restore of {name}", same)


def _same_file(path: Path, recorded: dict) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return (
        os.path.realpath(path) == os.path.realpath(str(recorded.get("path", "")))
        and st.st_size == recorded.get("size")
        and st.st_mtime_ns == recorded.get("mtime_ns")
    )


def _moves_of(data: dict) -> list[Move]:
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


def _ours_staging(value: object) -> Path | None:
    if not isinstance(value, str) or ".restore-" not in Path(value).name:
        return None
    return Path(value)
