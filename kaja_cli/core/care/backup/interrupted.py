"""Restores that did not end: what one left (`interrupted`, read-only, for
`kaja doctor`) and finishing it (`finish`: `kaja restore --finish`, or the
next `kaja restore`): undone before its swap, completed after, from the
marker `restore` writes before each phase (`swap`). A marker is read with
suspicion: a move it names must touch only what a restore would
(`swap.moves_of`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kaja_cli.core.care.backup.swap import (
    Phase,
    clean_up,
    marker_path,
    moves_of,
    ours_staging,
    pending,
    remove_ours,
    require_not_running,
    running,
    swap,
)
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, markers
from kaja_cli.core.store.paths import Paths
from kaja_cli.errors import Busy


@dataclass
class Finished:
    """What `finish` did with an interrupted restore."""

    archive: str
    completed: bool  # True: rolled forward (the new store is in place); False: undone
    summary: str
    same_archive: bool = False  # it was a restore of the archive now asked for

    def to_json(self) -> dict:
        return {"archive": self.archive, "completed": self.completed, "summary": self.summary}


@dataclass
class Leftover:
    """An interrupted restore, as `kaja doctor` describes it."""

    marker: Path
    archive: str
    started_at: str
    phase: str
    staging: Path | None
    details: list[str] = field(default_factory=list)
    pending: int = 0  # files of the backup not yet in place
    pid: int | None = None  # the restore is not interrupted: this process is running it
    foreign: str | None = None  # what is at the marker's path, when kaja did not write it

    @property
    def half_done(self) -> bool:
        return self.phase == Phase.SWAP and self.pending > 0

    @property
    def in_place(self) -> bool:
        """The swap ended: the new store is whole, only the cleaning up is left."""
        return self.phase == Phase.SWAP and self.pending == 0


def interrupted(paths: Paths) -> Leftover | None:
    """What an interrupted restore left, read-only (for `kaja doctor`); a
    restore still running in another process counts too (`Leftover.pid`)."""
    found = markers.of(marker_path(paths), markers.Operation.RESTORE)
    if found is None:
        return None
    marker, data = found.path, found.data
    staging = ours_staging(data.get("staging"))
    arch = (data.get("archive") or {}).get("path", "?")
    phase = str(data.get("phase", Phase.EXTRACT))
    left = Leftover(marker, str(arch), str(data.get("started_at", "?")), phase, staging)
    left.pid = running(data)
    left.foreign = found.foreign
    if phase == Phase.SWAP:
        moves = moves_of(data)
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
    found = pending(store.paths)
    if found is None:
        return None
    marker, data = found.path, found.data
    require_not_running(data)
    arch = data.get("archive") or {}
    name = str(arch.get("path", "an archive"))
    staging = ours_staging(data.get("staging"))
    same = archive_path is not None and _same_file(archive_path, arch)
    if data.get("phase") == Phase.COMMIT:  # cloud mode: the server's transaction says
        from kaja_cli.core.care import backup

        committed = backup.finish_commit(store, data)
        clean_up(marker, staging, [])
        if committed:
            return Finished(name, True, f"finished the interrupted restore of {name} (the"
                            " server had committed it)", same)  # fmt: skip
        return Finished(name, False, f"an interrupted restore of {name} had changed nothing on"
                        " the server; what it left was removed")  # fmt: skip
    if data.get("phase") != Phase.SWAP:
        for t in data.get("temps", []):
            remove_ours(Path(t))
        if data.get("backup"):
            from kaja_cli.core.care.backup.create import _remove_stale

            _remove_stale(Path(data["backup"]))
        clean_up(marker, staging, [])
        return Finished(name, False, f"an interrupted restore of {name} had changed nothing;"
                        " what it left was removed")  # fmt: skip
    moves = moves_of(data)
    for m in moves:
        if m.database and os.path.exists(m.target) and (pid := db.holder(m.target)) is not None:
            raise Busy(
                f"an interrupted restore is half done, and {m.target} is open in process {pid}",
                hint="close Kaja and the Telegram bot, then run `kaja restore --finish`",
            )
    with markers.sigint_held():
        swap(moves)
        clean_up(marker, staging, moves)
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
