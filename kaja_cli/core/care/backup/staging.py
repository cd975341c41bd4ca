"""`kaja restore`, step 1: the archive extracted into a staging folder beside
the state dir, and verified, before anything changes (`extract`); or undone
(`discard`). The plan it works to (`RestorePlan`) and what it gives the swap
(`Staged`) are here too: `restore` makes the one and takes the other.

Each member is written by kaja itself (never `tarfile.extract`), after
`archive.check_member` accepted its type and name, into
`.<state dir>.restore-<pid>/new/`. Then the manifest's format, every
member's size and sha256 (no member missing, none extra), each database's
`quick_check` and that the shared file is Kaja's, and that the archive's
databases fit this configuration. Anything wrong: the staging folder and the
marker go, exit 1 (5 for an unsafe member), nothing changed.
"""

from __future__ import annotations

import io
import os
import sqlite3
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaja_cli.core.care.backup import archive
from kaja_cli.core.care.backup.archive import Manifest
from kaja_cli.core.care.backup.swap import RESTORE, Phase, own_staging, remove_staging, rmtree
from kaja_cli.core.engine import fs
from kaja_cli.core.store import guard, markers
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.errors import Failed, Interrupted, Refused

if TYPE_CHECKING:
    from kaja_cli.core.care.backup.interrupted import Finished

Progress = Callable[[int, int | None], None]
IMAGES = "images"


@dataclass(frozen=True)
class Part:
    """One thing a restore puts in place: a database file or the images folder
    (in cloud mode, the shared database is the server: `target` names it)."""

    name: str  # the registry's name, or "images"
    target: Path


@dataclass(frozen=True)
class Existing:
    path: Path
    what: str
    size: int
    rows: int | None = None  # cloud mode: the account's rows on the server (no file, no size)


@dataclass
class RestorePlan:
    archive: Path
    parts: list[Part]
    existing: list[Existing]
    staging: Path
    marker: Path
    force: bool
    created: list[Path] = field(default_factory=list)  # folders made for it, innermost first
    # In the image folders of the replaced store's sessions, what is no image kaja wrote:
    only_in_backup: list[Path] = field(default_factory=list)  # the backup made first holds it
    put_back: list[Path] = field(default_factory=list)  # that backup cannot: it stays in place
    server: bool = False  # into cloud mode: the account's rows on the server (`server.py`)

    @property
    def replaces(self) -> bool:
        return bool(self.existing)

    def to_json(
        self, manifest: Manifest, done: Any = None, *,
        finished: Finished | None = None, dry_run: bool = False,
    ) -> dict:  # fmt: skip
        """`kaja restore --json`: the archive's `manifest`, what `done` (a
        `restore.RestoreResult`, which imports this module; None: the dry run)
        placed, and what `finished` did with an interrupted restore first."""
        images = next(str(p.target) for p in self.parts if p.name == IMAGES)
        return {
            "action": "restore",
            "archive": str(self.archive),
            "dry_run": dry_run,
            "done": done is not None,
            "backup": manifest.to_json(),
            "images": {"files": len(manifest.image_files),
                       "bytes": sum(f.bytes for f in manifest.image_files), "path": images},
            "placed": [] if done is None else [
                {"name": p.name, "path": str(p.path), "bytes": p.bytes, "files": p.files}
                for p in done.placed
            ],
            "replaced": [{"path": str(e.path), "what": e.what, "bytes": e.size}
                         | ({} if e.rows is None else {"rows": e.rows})
                         for e in self.existing],
            "previous_backup": None if done is None or done.previous_backup is None
            else str(done.previous_backup),
            "kept": [] if done is None else [str(p) for p in done.kept],
            # cloud mode: the rows that went in (your account's), by table
            **({} if done is None or done.rows is None else {"rows_restored": done.rows}),
            "only_in_backup": [str(p) for p in self.only_in_backup],
            "put_back": [str(p) for p in self.put_back],
            "finished": None if finished is None else finished.to_json(),
        }  # fmt: skip


@dataclass
class Staged:
    """An archive extracted and verified in the staging folder."""

    plan: RestorePlan
    manifest: Manifest
    new: Path  # the staging folder's `new/`

    def source(self, part: Part) -> Path | None:
        """The staged file (or folder) for `part`; None when the archive has none."""
        if part.name == IMAGES:
            p = self.new / archive.IMAGES_FOLDER
        else:
            p = self.new / archive.database_member(Database(part.name))
        return p if p.exists() else None


def staging_path(paths: Paths) -> Path:
    state = paths.state_dir.path
    return state.parent / f".{state.name}.restore-{os.getpid()}"


# --- 1. extract and verify ------------------------------------------------------------------
def extract(plan: RestorePlan, progress: Progress | None = None) -> Staged:
    """The archive, extracted into the staging folder and verified; on any
    failure the staging folder and the marker go and the store is untouched."""
    staging = plan.staging = _free_staging(plan.staging)
    plan.created = _missing_folders(plan.marker.parent)
    plan.created += [p for p in _missing_folders(staging.parent) if p not in plan.created]
    fs.ensure_private_dir(staging.parent)
    fs.ensure_private_dir(plan.marker.parent)
    try:
        st = plan.archive.stat()
        # The marker first: a kill right after it leaves nothing it does not name.
        markers.begin(plan.marker, RESTORE, phase=Phase.EXTRACT, staging=str(staging), archive={
            "path": str(plan.archive), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
        })  # fmt: skip
        staging.mkdir(mode=fs.DIR_MODE)
        new = staging / "new"
        new.mkdir(mode=fs.DIR_MODE)
        manifest = _verify(plan, new, _unpack(plan.archive, new, progress))
        markers.checkpoint("extracted")
    except KeyboardInterrupt:
        discard(plan)
        raise Interrupted("restore interrupted: nothing was changed") from None
    except BaseException as e:
        discard(plan)
        if fs.disk_full(e):
            raise disk_full_error(e, staging.parent, "unpacking the archive") from e
        raise
    return Staged(plan, manifest, new)


def disk_full_error(e: BaseException, where: Path, doing: str) -> Failed:
    """A full disk, said as one: nothing was restored, and where room is needed."""
    return Failed(
        f"the disk is full: {doing} in {where} ({getattr(e, 'strerror', None) or e})",
        hint="free some disk space there (a restore needs room for the store unpacked, beside the"
        " state dir), or restore elsewhere with --state-dir; nothing was changed",
    )


def _free_staging(staging: Path) -> Path:
    """The staging folder to use: `staging`, unless something is there already.

    A leftover that is provably a staging folder of this user's (`own_staging`)
    is removed; anything else (another user's folder, as root) is left alone
    and the next free name (`-2`, `-3`, …) used instead.
    """
    if not os.path.lexists(staging):
        return staging
    if own_staging(staging):
        rmtree(staging)
        return staging
    n = 2
    while os.path.lexists(other := staging.with_name(f"{staging.name}-{n}")):
        n += 1
    return other


def _unpack(path: Path, new: Path, progress: Progress | None) -> dict[str, tuple[int, str]]:
    """Write every member under `new`; returns each one's (size, sha256), the manifest's as bytes.

    Nothing is flushed here: `execute` makes the whole staging folder durable
    at once before the swap (`fs.flush_trees`), and a dry run needs none of it.
    """
    sums: dict[str, tuple[int, str]] = {}
    total = path.stat().st_size
    done = 0
    folders = {new}

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    try:
        with open(path, "rb") as raw:
            stream = archive.decompressed(raw, archive.Counting(raw, step))
            with archive.members(stream) as tar:
                for info in tar:
                    _unpack_member(tar, info, new, sums, folders)
            # gzip checks its trailer (the CRC-32 and the size of all it held)
            # only at the end of its stream, which lies past the tar's own end.
            while stream.read(archive.CHUNK):
                pass
    except archive.DAMAGED as e:
        raise Failed(
            f"cannot read {path}: {archive.reason(e)}", hint=archive.DAMAGED_HINT
        ) from None
    except OSError as e:
        if e.filename is None and not fs.disk_full(e):  # reading the archive failed
            raise Failed(
                f"cannot read {path}: {e.strerror or e}", hint=archive.DAMAGED_HINT
            ) from None
        raise
    return sums


def _unpack_member(
    tar: tarfile.TarFile, info: tarfile.TarInfo, new: Path,
    sums: dict[str, tuple[int, str]], folders: set[Path],
) -> None:  # fmt: skip
    member = archive.check_member(info)
    if info.name in sums:
        raise Failed(f"the archive holds {info.name!r} twice", hint=archive.DAMAGED_HINT)
    src = tar.extractfile(info)
    assert src is not None  # a regular file (check_member)
    if member.kind == "manifest":
        if info.size > archive.MANIFEST_LIMIT:
            raise Failed("the archive's manifest is too large", hint=archive.DAMAGED_HINT)
        data = src.read()
        _write_member(new / archive.MANIFEST, io.BytesIO(data), folders)
        sums[info.name] = (len(data), "")
        return
    sums[info.name] = _write_member(new / info.name, src, folders)


def _write_member(dest: Path, src, folders: set[Path]) -> tuple[int, str]:
    """`src` written to `dest` (a new private file), hashed as it goes. A write
    that fails raises OSError with `dest` as its file name (a read, without)."""
    if dest.parent not in folders:  # one stat per folder, not per image
        fs.ensure_private_dir(dest.parent)
        folders.add(dest.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(dest, flags, fs.FILE_MODE)
    reader = archive.Hashing(src)
    try:
        while chunk := reader.read(archive.CHUNK):
            view = memoryview(chunk)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except OSError as e:
                    raise OSError(e.errno, e.strerror, str(dest)) from None
    finally:
        os.close(fd)
    return reader.count, reader.hexdigest()


def _verify(plan: RestorePlan, new: Path, sums: dict[str, tuple[int, str]]) -> Manifest:
    if archive.MANIFEST not in sums:
        raise Failed(f"{plan.archive} has no manifest (truncated?)", hint=archive.DAMAGED_HINT)
    manifest = archive.parse_manifest((new / archive.MANIFEST).read_bytes())
    listed = {f.member: f for f in manifest.files}
    got = {name: s for name, s in sums.items() if name != archive.MANIFEST}
    for name in sorted(set(listed) - set(got)):
        raise Failed(
            f"the archive lacks {name}, which its manifest lists", hint=archive.DAMAGED_HINT
        )
    for name in sorted(set(got) - set(listed)):
        raise Failed(f"the archive holds {name}, which its manifest does not list",
                     hint=archive.DAMAGED_HINT)  # fmt: skip
    for name, (size, digest) in sorted(got.items()):
        if not archive.sums_match(listed[name], size, digest):
            raise Failed(f"{name} in the archive does not match its sha256 in the manifest",
                         hint=archive.DAMAGED_HINT)  # fmt: skip
    _verify_databases(plan, new, manifest)
    return manifest


def _verify_databases(plan: RestorePlan, new: Path, manifest: Manifest) -> None:
    names = {p.name for p in plan.parts}
    if manifest.database(Database.SHARED) is None:
        raise Failed("the archive holds no shared file", hint=archive.DAMAGED_HINT)
    split_there = manifest.database(Database.ARTIFACTS) is not None
    split_here = Database.ARTIFACTS.value in names
    if split_there != split_here and not plan.server:  # the server keeps no artifacts
        there = "a file of their own" if split_there else "its shared file"
        here = "a file of their own" if split_here else "the shared file"
        raise Failed(
            f"the archive keeps the artifacts in {there}, and here they live in {here}",
            hint="set (or unset) KAJA_ARTIFACTS_DB / [memory] artifactsPath to match; nothing"
            " was restored",
        )
    for entry in manifest.databases:
        name = Database(entry.name)
        copy = new / archive.database_member(name)
        if entry.member != archive.database_member(name) or not copy.exists():
            raise Failed(f"the manifest's {entry.name} database is not in the archive",
                         hint=archive.DAMAGED_HINT)  # fmt: skip
        _check_copy(copy, entry.name, plan)


def _check_copy(copy: Path, name: str, plan: RestorePlan) -> None:
    """The staged database passes `quick_check` and is Kaja's."""
    try:
        conn = sqlite3.connect(copy.as_uri() + "?mode=ro&immutable=1", uri=True)
        try:
            found = conn.execute("PRAGMA quick_check").fetchone()[0]
            shared = found == "ok" and name == Database.SHARED.value
            verdict = guard.recognise(conn, _as_shared(copy)) if shared else None
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise Failed(f"the archive's {name} database cannot be read: {e}",
                     hint=archive.DAMAGED_HINT) from None  # fmt: skip
    if found != "ok":
        raise Failed(f"the archive's {name} database fails quick_check: {found}",
                     hint=archive.DAMAGED_HINT)  # fmt: skip
    if verdict is not None and not verdict.kajas:
        raise Refused(
            f"the archive's shared file is not a Kaja database (its tables: {verdict.named()})",
            hint="nothing was restored",
        )


def _as_shared(copy: Path) -> DatabaseFile:
    """A staged copy of the shared file, as `guard.recognise` asks for one."""
    return DatabaseFile(Database.SHARED, copy, "the archive", (Database.SHARED,))


def discard(plan: RestorePlan) -> None:
    """Undo an extraction: the staging folder, the marker and the folders made
    for them go (if still empty); the store never changed."""
    remove_staging(plan.staging)
    markers.finish(plan.marker)
    for folder in plan.created:
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty (something else is there now), or gone


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist, innermost first."""
    out = []
    while not folder.exists() and folder.parent != folder:
        out.append(folder)
        folder = folder.parent
    return out
