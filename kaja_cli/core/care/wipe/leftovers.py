"""What interrupted wipes left, as `kaja doctor`, the next wipe and the
commands that refuse to start over one learn it.

A whole wipe writes `kaja.db.wiping` (every path of its plan, made durable
before the first deletion) and removes it last; `wipe --owner` writes
`kaja.db.wiping-owner-<hash>` (their image folders) before its commit and
removes it after the folders (the protocol is core/store/markers.py).
`interrupted()` describes what such markers, and journals that outlived
their database, left to finish. A path a marker lists counts only when it is
one a wipe of these paths may delete (`in_reach`), and an owner's image
folder only once its session is gone.
"""

from __future__ import annotations

from pathlib import Path

from kaja_cli.core.care.wipe.model import Leftovers
from kaja_cli.core.care.wipe.reach import lstat_or_none, read_database, why_unsafe
from kaja_cli.core.conversations import images
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import markers
from kaja_cli.core.store.markers import Operation, Pending
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import plural

WIPES = (Operation.WIPE, Operation.OWNER)


def marker_path(paths: Paths) -> Path:
    """The whole wipe's marker: `kaja.db.wiping` beside the shared file."""
    return markers.path(paths, Operation.WIPE)


def owner_marker(paths: Paths, owner: Owner) -> Path:
    """`kaja.db.wiping-owner-<hash>`: one per owner, so two owners erased at
    once don't share one."""
    return markers.path(paths, Operation.OWNER, owner.label)


def in_reach(path: Path, paths: Paths) -> bool:
    """Whether a path read from a marker is one a wipe of `paths` may delete."""
    fixed = {paths.settings_file.path, paths.files_dir, paths.images_dir}
    for f in paths.databases():
        fixed |= {f.path, *companions(f.path)}
    return path in fixed or (path.parent == paths.images_dir and images.safe_name(path.name))


def listed_paths(found: Pending, paths: Paths, live: set[str] | None) -> list[Path]:
    """The paths an interrupted wipe's (or prune's) marker still lists, that
    exist and are in reach.

    An owner wipe's (or a prune's) image folders count only once their
    session is gone (a crash before its commit left the sessions, and their
    images, alone); with `live` None (the store can't be read) none of them
    count.
    """
    whole = found.data.get("action") == Operation.WIPE
    out: list[Path] = []
    for path in found.listed:
        if not in_reach(path, paths) or lstat_or_none(path) is None:
            continue
        if not whole and (path.parent != paths.images_dir or live is None or path.name in live):
            continue
        out.append(path)
    return out


def interrupted(paths: Paths, live: set[str] | None = None) -> Leftovers | None:
    """What interrupted wipes left, or None; for `kaja doctor`. Reads, never writes.

    Covers the markers of `kaja wipe` and `kaja wipe --owner`, and a database
    whose -wal, -shm or -journal outlived it. `live`: the sessions the store
    holds, when the caller has read them (else the shared file is read).
    """
    details: list[str] = []
    commands: list[str] = []
    remaining: list[Path] = []
    found = markers.pending(paths, *WIPES)
    if found and live is None:
        live = live_sessions(paths)
    for m in found:
        detail, command, left = describe(m, paths, live)
        details.append(detail)
        commands.append(command)
        remaining += [*left, m.path]
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


def describe(found: Pending, paths: Paths, live: set[str] | None) -> tuple[str, str, list[Path]]:
    """(one line, the command that finishes it, the paths it left) for one marker."""
    marker = found.path
    if found.foreign is not None:
        aside = f"mv -- {marker} {marker}.aside"
        return (
            f"{found.foreign} at the wipe marker's path {marker}: kaja did not write it",
            aside,
            [],
        )
    data = found.data
    started = data.get("started_at") or "at an unknown time"
    left = listed_paths(found, paths, live)
    owner = data.get("owner")
    if data.get("action") == Operation.OWNER and isinstance(owner, str):
        command = f"kaja wipe --owner {owner}"
        names = {p.name for p in found.listed}
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
