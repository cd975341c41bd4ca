"""The markers an interrupted wipe leaves, and what `kaja doctor` and the next
wipe learn from them.

A whole wipe writes `kaja.db.wiping` beside the shared file (every path of its
plan, made durable before the first deletion) and removes it last; `wipe
--owner` writes `kaja.db.wiping-owner-<hash>` (their image folders) before
its commit and removes it after the folders. `interrupted()` describes what
such markers, and journals that outlived their database, left to finish.

`kaja demo` leaves one too: `kaja.db.demo`, written before its first file and
removed after its last, so a demo cut short (Ctrl-C, kill -9, a full disk) is
told from a store that is whole (`demo_cut_short()`); a wipe removes it last.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from kaja_cli.core.care.wipe.model import Leftovers
from kaja_cli.core.care.wipe.reach import lstat_or_none, read_database, why_unsafe
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import fs
from kaja_cli.core.store import guard
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import plural
from kaja_cli.errors import Failed

MARKER_SUFFIX = guard.MARKER_SUFFIX
MARKER_VERSION = 1
DEMO_SUFFIX = ".demo"


def marker_path(paths: Paths) -> Path:
    """The whole wipe's marker: `kaja.db.wiping` beside the shared file."""
    return fs.beside(paths.shared_db.path, MARKER_SUFFIX)


def stale_temporaries(marker: Path) -> list[Path]:
    """`.kaja.db.wiping.<pid>.tmp` and the like: a marker's temporary copy
    (`fs.write_private_file`) that a run killed before its rename left."""
    pattern = re.compile(rf"^\.{re.escape(marker.name)}(-owner-[0-9a-f]+)?\.\d+\.tmp$")
    try:
        names = os.listdir(marker.parent)
    except OSError:
        return []
    return [marker.parent / n for n in sorted(names) if pattern.match(n)]


def demo_marker(paths: Paths) -> Path:
    """`kaja.db.demo` beside the shared file: a `kaja demo` is (or was) writing."""
    return fs.beside(paths.shared_db.path, DEMO_SUFFIX)


def demo_cut_short(paths: Paths) -> str | None:
    """When the `kaja demo` that was cut short started (None: none was)."""
    marker = demo_marker(paths)
    if lstat_or_none(marker) is None:
        return None
    started = read_marker(marker).get("started_at")
    return started if isinstance(started, str) else "at an unknown time"


def markers_of(paths: Paths) -> list[Path]:
    """Every marker beside the shared file, the whole wipe's first."""
    main = marker_path(paths)
    try:
        names = os.listdir(main.parent)
    except OSError:
        return []
    found = [main.parent / n for n in sorted(names) if n.startswith(main.name + "-owner-")]
    return ([main] if main.name in names else []) + found


def read_marker(path: Path) -> dict:
    """A marker's content; {} when it cannot be read (still a marker). Only a
    regular file is read: a FIFO would block (`fs.read_regular`)."""
    try:
        data = json.loads(fs.read_regular(path) or b"")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def not_a_marker(path: Path) -> str | None:
    """What is at a marker's path when it is not a file kaja could have written
    (a FIFO, a folder, a device); None for a regular file or nothing."""
    st = lstat_or_none(path)
    if st is None or stat.S_ISREG(st.st_mode):
        return None
    return fs.what_is(st)


def write_marker(path: Path, data: dict) -> None:
    for stale in stale_temporaries(path):  # of a run killed while writing it
        stale.unlink(missing_ok=True)
    try:
        fs.write_private_file(path, json.dumps(data, indent=1).encode())
    except OSError as e:
        raise Failed(
            f"cannot write {path}: {e.strerror or e}",
            hint="check the folder's permissions; nothing was deleted",
        ) from e
    fs.fsync_dir(path.parent)


def in_reach(path: Path, paths: Paths) -> bool:
    """Whether a path read from a marker is one a wipe of `paths` may delete."""
    fixed = {paths.settings_file.path, paths.files_dir, paths.images_dir}
    for f in paths.databases():
        fixed |= {f.path, *companions(f.path)}
    return path in fixed or (path.parent == paths.images_dir and images.safe_name(path.name))


def listed_paths(marker: Path, paths: Paths, live: set[str] | None) -> list[Path]:
    """The paths an interrupted wipe's marker still lists, that exist and are in reach.

    An owner wipe's image folders count only once their session is gone (a
    crash before its commit left the sessions, and their images, alone); with
    `live` None (the shared file can't be read) none of them count.
    """
    data = read_marker(marker)
    raw = data.get("paths")
    whole = data.get("action") == "wipe"
    out: list[Path] = []
    for p in raw if isinstance(raw, list) else []:
        if not isinstance(p, str):
            continue
        path = Path(os.path.normpath(p))
        if path in out or not in_reach(path, paths) or lstat_or_none(path) is None:
            continue
        if not whole and (path.parent != paths.images_dir or live is None or path.name in live):
            continue
        out.append(path)
    return out


def interrupted(paths: Paths) -> Leftovers | None:
    """What interrupted wipes left, or None; for `kaja doctor`. Reads, never writes.

    Covers the markers of `kaja wipe` and `kaja wipe --owner`, and a database
    whose -wal, -shm or -journal outlived it.
    """
    details: list[str] = []
    commands: list[str] = []
    remaining: list[Path] = []
    markers = markers_of(paths)
    live = live_sessions(paths) if markers else set()
    for m in markers:
        detail, command, left = describe(m, paths, live)
        details.append(detail)
        commands.append(command)
        remaining += [*left, m]
    for file in paths.databases():
        path = file.path
        if lstat_or_none(path) is not None:
            continue
        stale = [c for c in companions(path) if c not in remaining and lstat_or_none(c) is not None]
        if stale:
            names = ", ".join(c.name for c in stale)
            details.append(f"{names} outlived the {file.spec.noun} {path}")
            commands.append("kaja wipe")
            remaining += stale
    if not details:
        return None
    commands = list(dict.fromkeys(commands))
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return Leftovers(
        f"{details[0]}{more}: finish with `{'` and `'.join(commands)}`",
        tuple(details),
        tuple(commands),
        tuple(dict.fromkeys(remaining)),
    )


def describe(marker: Path, paths: Paths, live: set[str] | None) -> tuple[str, str, list[Path]]:
    """(one line, the command that finishes it, the paths it left) for one marker."""
    what = not_a_marker(marker)
    if what is not None:
        aside = f"mv -- {marker} {marker}.aside"
        return f"{what} at the wipe marker's path {marker}: kaja did not write it", aside, []
    data = read_marker(marker)
    started = data.get("started_at") or "at an unknown time"
    left = listed_paths(marker, paths, live)
    owner = data.get("owner")
    if data.get("action") == "owner" and isinstance(owner, str):
        command = f"kaja wipe --owner {owner}"
        names = {Path(p).name for p in data.get("paths", []) if isinstance(p, str)}
        if not left and live and names & live:
            return f"`{command}` (started {started}) stopped before its commit", command, left
        return (
            f"`{command}` (started {started}) stopped after its commit with"
            f" {plural(len(left), 'image folder')} left",
            command,
            left,
        )
    if not data:
        return f"an unreadable wipe marker {marker}", "kaja wipe", left
    stopped = f"`kaja wipe` (started {started}) stopped with {plural(len(left), 'path')} left"
    return stopped, "kaja wipe", left


def live_sessions(paths: Paths) -> set[str] | None:
    """The shared file's session ids (empty when there is none; None: unreadable)."""
    path = paths.shared_db.path
    if lstat_or_none(path) is None:
        return set()
    if why_unsafe(path) is not None:
        return None
    return read_database(path, paths.file_of(Database.SHARED))[1]
