"""The interrupted-operation marker: one protocol for every command whose work
cannot be one transaction (SPEC §8: interrupted at any point, it leaves a state
the next run completes and `kaja doctor` describes).

A marker is a small JSON file beside the shared file. The command writes it
before its first change and removes it after its last:

- `begin()`: written to a temporary file, fsynced, renamed into place, and the
  folder fsynced, so that even a power cut leaves the whole marker or none
  (a temporary a killed run left is removed first);
- `update()`: the same, keeping what it said (a restore says how far it got);
- `finish()`: removed, with any temporary a killed run left, and the folder
  fsynced (a test may stop the command right before: `checkpoint`);
- `pending()`: every marker beside the shared file, read-only: what the next
  run, other commands and `kaja doctor` learn from them.

A marker is never trusted blindly: only a regular file is read (a FIFO would
block), anything unreadable reads as `{}` (still a marker), something kaja
could not have written there (a FIFO, a folder) is `Pending.foreign` and never
read nor removed, and what a marker lists (`Pending.listed`) is checked by its
command, before anything is touched, to be something that command may touch.

The names and fields are the ones kaja has always written, so that a store an
earlier kaja left half done is finished by this one (`action`, `started_at`,
`pid`, and `version` but in a prune's):

- `kaja.db.wiping` — `kaja wipe`: `paths`, every path of its plan;
- `kaja.db.wiping-owner-<12 hex of sha256(owner)>` — `kaja wipe --owner`:
  `owner`, `paths` (their image folders, written before the commit);
- `kaja.db.pruning` — a batch of `kaja sessions prune`: `paths` (its image
  folders, written before the batch's commit);
- `kaja.db.restoring` — `kaja restore`: `phase`, `staging`, `archive`,
  `backup`, `moves`, `temps` (core/care/backup/swap.py);
- `kaja.db.demo` — `kaja demo`: no more (the store is a demo cut short).

Besides the markers, two pieces of the protocol every such command shares:
`sigint_held()` (Ctrl-C waits until steps that must go together are done),
and `checkpoint(step)`, the hook tests replace to stop a command at a step and
`kill -9` it there (tests/support/paused.py). Steps: a whole wipe, before
it deletes the path whose file name is `step`; `--owner`, "commit" (before
COMMIT) and "images" (after it, before the image folders); `sessions prune`,
"prune-commit" before each batch's COMMIT and "prune-images" after it; `kaja
restore`, "extracted", "prepared", "move:<file name>" before each file or
folder is put in place, "cleanup"; `kaja backup`, "written" (the archive
whole in its temporary file); the side commands, "notes-commit",
"cache-commit", "accounts-commit" before their COMMIT and, for `kaja cache
clear`, "cache.db" (folded, not yet deleted); and `finish()`, the marker's
own file name right before it goes. Nothing in kaja reads the environment
for this.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kaja_cli.core.clock import now_iso
from kaja_cli.core.engine import fs
from kaja_cli.errors import Failed

if TYPE_CHECKING:
    from kaja_cli.core.store.paths import Paths

VERSION = 1


class Operation(StrEnum):
    """What left a marker: its `action`."""

    WIPE = "wipe"
    OWNER = "owner"  # `kaja wipe --owner`
    PRUNE = "prune"
    RESTORE = "restore"
    DEMO = "demo"


# The suffix each marker's name adds to the shared file's (an owner's adds a hash).
SUFFIX = {
    Operation.WIPE: ".wiping",
    Operation.OWNER: ".wiping-owner-",
    Operation.PRUNE: ".pruning",
    Operation.RESTORE: ".restoring",
    Operation.DEMO: ".demo",
}
_UNVERSIONED = {Operation.PRUNE}  # a prune's marker never carried a version
_OWNER_NAME = re.compile(r"-owner-[0-9a-f]+")


def path(paths: Paths, operation: Operation, owner: str | None = None) -> Path:
    """The marker of `operation` beside the shared file. `kaja wipe --owner`
    has one per owner (`owner`: their label), so two owners erased at once
    don't share one."""
    base = fs.beside(paths.shared_db.path, SUFFIX[operation])
    if operation is not Operation.OWNER:
        return base
    import hashlib

    if owner is None:
        raise ValueError("an owner's wipe marker names the owner")
    return base.with_name(base.name + hashlib.sha256(owner.encode()).hexdigest()[:12])


def names(paths: Paths) -> list[Path]:
    """Every marker name kaja may write beside the shared file (an owner's as
    its prefix, `kaja.db.wiping-owner-`): the store's own files (`guard`)."""
    return [fs.beside(paths.shared_db.path, s) for s in SUFFIX.values()]


# --- reading ---------------------------------------------------------------------------
def read(marker: Path) -> dict[str, Any]:
    """A marker's content; {} when it cannot be read (still a marker). Only a
    regular file is read: a FIFO would block (`fs.read_regular`)."""
    try:
        data = json.loads(fs.read_regular(marker) or b"")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lexists(marker: Path) -> bool:
    """Whether anything is at `marker` (a dangling link, a FIFO count too)."""
    try:
        os.lstat(marker)
    except OSError:
        return False
    return True


def foreign(marker: Path) -> str | None:
    """What is at a marker's path when it is not a file kaja could have written
    (a FIFO, a folder, a device, a link): "a FIFO"; None for a regular file or nothing."""
    try:
        st = os.lstat(marker)
    except OSError:
        return None
    return None if stat.S_ISREG(st.st_mode) else fs.what_is(st)


class Pending(NamedTuple):
    """A marker found beside the shared file: an operation that did not finish
    (or is still running: `pid`)."""

    operation: Operation
    path: Path
    data: dict[str, Any]  # {} when unreadable or foreign
    foreign: str | None  # "a FIFO": not kaja's to read or remove

    @property
    def started_at(self) -> str | None:
        started = self.data.get("started_at")
        return started if isinstance(started, str) else None

    @property
    def pid(self) -> int | None:
        pid = self.data.get("pid")
        return pid if isinstance(pid, int) and not isinstance(pid, bool) else None

    @property
    def listed(self) -> list[Path]:
        """The paths it lists (`paths`), normalised, each once, in its order;
        the command checks each one before it touches it."""
        raw = self.data.get("paths")
        out: list[Path] = []
        for p in raw if isinstance(raw, list) else []:
            if isinstance(p, str) and (q := Path(os.path.normpath(p))) not in out:
                out.append(q)
        return out


def refusal(found: Pending) -> str | None:
    """Why a command stops at a foreign marker (None: it is kaja's): whatever
    is there was not written by kaja, and kaja neither reads nor removes it."""
    if found.foreign is None:
        return None
    kind = "wipe" if found.operation is Operation.OWNER else found.operation.value
    return f"{found.path} is {found.foreign}, not a {kind} marker kaja wrote: move it aside"


def of(marker: Path, operation: Operation) -> Pending | None:
    """The marker at `marker`, read (None: there is none)."""
    if not lexists(marker):
        return None
    what = foreign(marker)
    return Pending(operation, marker, {} if what else read(marker), what)


def pending(paths: Paths, *operations: Operation) -> list[Pending]:
    """The markers beside the shared file (of `operations`; all by default), in
    the order of `Operation` (owners' by name): reads, never writes."""
    wanted = operations or tuple(Operation)
    shared = paths.shared_db.path
    try:
        present = set(os.listdir(shared.parent))
    except OSError:
        return []
    found: list[Pending] = []
    for op in Operation:
        if op not in wanted:
            continue
        base = shared.name + SUFFIX[op]
        if op is Operation.OWNER:
            chosen = sorted(n for n in present if n.startswith(base))
        else:
            chosen = [base] if base in present else []
        found += [p for n in chosen if (p := of(shared.parent / n, op)) is not None]
    return found


def temporaries(paths: Paths, *operations: Operation) -> list[Path]:
    """`.kaja.db.wiping.<pid>.tmp` and the like: a marker's temporary copy that
    a run killed before its rename left (of `operations`; all by default)."""
    wanted = operations or tuple(Operation)
    shared = paths.shared_db.path
    bases = "|".join(re.escape(shared.name + SUFFIX[op]) + ("[0-9a-f]+" if op is Operation.OWNER else "")
                     for op in Operation if op in wanted)  # fmt: skip
    pattern = re.compile(rf"^\.(?:{bases})\.\d+\.tmp$")
    try:
        found = os.listdir(shared.parent)
    except OSError:
        return []
    return [shared.parent / n for n in sorted(found) if pattern.match(n)]


def _temporaries_of(marker: Path) -> list[Path]:
    pattern = re.compile(rf"^\.{re.escape(marker.name)}\.\d+\.tmp$")
    try:
        found = os.listdir(marker.parent)
    except OSError:
        return []
    return [marker.parent / n for n in sorted(found) if pattern.match(n)]


# --- writing ---------------------------------------------------------------------------
def _header(operation: Operation) -> dict[str, Any]:
    data: dict[str, Any] = {} if operation in _UNVERSIONED else {"version": VERSION}
    return data | {"action": operation.value, "started_at": now_iso(), "pid": os.getpid()}


def begin(marker: Path, operation: Operation, **fields: Any) -> dict[str, Any]:
    """Write a new marker, durable before the caller's first change; Failed
    (exit 1) when it cannot be written (nothing was changed yet)."""
    data = _header(operation) | fields
    try:
        write(marker, data)
    except OSError as e:
        fix = "free some disk space there" if fs.disk_full(e) else "check the folder's permissions"
        raise Failed(
            f"cannot write {marker}: {e.strerror or e}", hint=f"{fix}; nothing was changed"
        ) from e
    return data


def update(marker: Path, operation: Operation, **fields: Any) -> dict[str, Any]:
    """Rewrite a marker with `fields` added to (or replacing) what it says;
    OSError as the file system raised it (the caller is mid-way)."""
    data = _header(operation) | read(marker) | fields
    write(marker, data)
    return data


def write(marker: Path, data: dict[str, Any]) -> None:
    """`data` at `marker`, atomically and durably (see the module docstring)."""
    for stale in _temporaries_of(marker):  # of a run killed while writing it
        stale.unlink(missing_ok=True)
    fs.write_private_file(marker, json.dumps(data, indent=1).encode())
    fs.fsync_dir(marker.parent)


def finish(*markers: Path) -> None:
    """Remove the markers (their work is done, or undone) and any temporary a
    killed run left of them, the folder synced after: last of all the
    operation's steps. A test may stop right before each (`checkpoint`)."""
    folders: list[Path] = []
    for marker in markers:
        checkpoint(marker.name)
        mine = [marker] if foreign(marker) is None else []  # never what kaja did not write
        for p in (*mine, *_temporaries_of(marker)):
            p.unlink(missing_ok=True)
        if marker.parent not in folders:
            folders.append(marker.parent)
    for folder in folders:
        fs.fsync_dir(folder)


# --- the steps between begin and finish ----------------------------------------------------
def _nothing(step: str) -> None:
    return None


checkpoint: Callable[[str], None] = _nothing
"""Called at each step a test may stop a command at (see the module
docstring); does nothing unless a test replaced it. Call it as
`markers.checkpoint(step)`: the test replaces the module's attribute."""


@contextmanager
def sigint_held() -> Iterator[None]:
    """Hold Ctrl-C off until the block is done; it is raised right after (steps
    that must go together: a database and its journal, a restore's swap)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
