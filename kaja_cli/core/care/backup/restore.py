"""`kaja restore FILE`: put a backup's store in place, whole or not at all.

A plan first (`plan_restore`, read-only): where each part of the archive goes
(the locations resolved now, so `--state-dir`/`--db` restore elsewhere),
what is there already, and what is refused: an existing store without
`force` (exit 5), a store another process has open (exit 4), a database
path that is a link, a folder or another program's file (exit 5), an
unfinished wipe.

Then, in this order:

1. **Extract** (`extract`) into a staging folder beside the state dir
   (`.<state dir>.restore-<pid>/new/`), each member written by kaja itself
   (never `tarfile.extract`), after `archive.check_member` accepted its type
   and name. Then **verify**: the manifest's format, every member's size and
   sha256 (no member missing, none extra), each database's `quick_check`
   and that the shared file is Kaja's, and that the archive's databases fit
   this configuration. Anything wrong: the staging folder goes, exit 1 (5
   for an unsafe member), nothing changed.
2. With `force` and a store in place: **back it up** (`kaja backup`, beside
   the state dir, `kaja-before-restore-<time>.tar.gz`), then fold each of
   its databases' journals into it while no process has it open.
3. **Prepare**: a file whose place is on another disk than the staging
   folder is copied beside its place first, so that every step of the swap
   is a rename within one folder.
4. **Swap**: each database renamed over its old file (an atomic replace:
   the path always holds a whole database), its old -wal/-shm moved aside
   first so that no stale journal is replayed into it; the old `images/`
   moved aside, the new one renamed into place, and what the old one held
   that was not the replaced store's (an orphaned folder, a file kaja never
   made) put back in it, as `kaja wipe` would have kept it; databases the
   archive does not hold moved aside. Ctrl-C is held off meanwhile.
5. **Clean up**: what was moved aside, the staging folder, the marker.

A marker beside the shared file (`kaja.db.restoring`, JSON, written
atomically and made durable before each phase) says how far it got. An
interrupted restore (kill -9, a power cut) is finished by `interrupted.finish`
(`kaja restore --finish`, or the next `kaja restore`): before the swap it
is undone (the old store never changed: the staging folder and any copies
go); once the swap began it is completed from the staging folder, which
holds only verified files. Either way the store is then the old one or the
new one, whole; `interrupted.interrupted()` tells `kaja doctor` which case it
is (`core/backup/interrupted.py` holds `finish` too).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import sqlite3
import stat
import tarfile
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from kaja_cli.core import clock
from kaja_cli.core.care.backup import archive, guarding, hook
from kaja_cli.core.care.backup.archive import Manifest
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, guard
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.errors import Busy, Failed, Interrupted, KajaError, NotFound, Refused

Progress = Callable[[int, int | None], None]
MARKER_SUFFIX = guarding.RESTORE_MARKER_SUFFIX
MARKER_VERSION = 1
IMAGES = "images"
BUSY_HINT = "close Kaja and the Telegram bot first; nothing was changed"


class Phase:
    EXTRACT = "extract"  # staging: the old store untouched
    PREPARE = "prepare"  # copies beside their places: the old store untouched
    SWAP = "swap"  # files being put in place: finish from the staging folder


@dataclass(frozen=True)
class Part:
    """One thing a restore puts in place: a database file or the images folder."""

    name: str  # the registry's name, or "images"
    target: Path


@dataclass(frozen=True)
class Existing:
    path: Path
    what: str
    size: int


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

    @property
    def replaces(self) -> bool:
        return bool(self.existing)

    def to_json(
        self, manifest: Manifest, done: RestoreResult | None = None, *,
        finished: Finished | None = None, dry_run: bool = False,
    ) -> dict:  # fmt: skip
        """`kaja restore --json`: the archive's `manifest`, what `done` placed (None:
        the dry run), and what `finished` did with an interrupted restore first."""
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
                         for e in self.existing],
            "previous_backup": None if done is None or done.previous_backup is None
            else str(done.previous_backup),
            "kept": [] if done is None else [str(p) for p in done.kept],
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


@dataclass
class Placed:
    name: str
    path: Path
    bytes: int
    files: int = 1


@dataclass
class RestoreResult:
    manifest: Manifest
    placed: list[Placed]
    previous_backup: Path | None
    kept: list[Path] = field(default_factory=list)  # in images/, not the replaced store's


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

    @property
    def half_done(self) -> bool:
        return self.phase == Phase.SWAP and self.pending > 0

    @property
    def in_place(self) -> bool:
        """The swap ended: the new store is whole, only the cleaning up is left."""
        return self.phase == Phase.SWAP and self.pending == 0


# --- the plan ------------------------------------------------------------------------------
def marker_path(paths: Paths) -> Path:
    return fs.beside(paths.shared_db.path, MARKER_SUFFIX)


def staging_path(paths: Paths) -> Path:
    state = paths.state_dir.path
    return state.parent / f".{state.name}.restore-{os.getpid()}"


def plan_restore(
    store: Store, archive_path: Path, *, force: bool, dry_run: bool = False
) -> RestorePlan:
    """Where the archive's parts go and what is there now; refusals raised (see
    the docstring). A dry run only verifies the archive: a store in place or a
    running Kaja does not stop it."""
    store.require_local()
    paths = store.paths
    _check_archive_file(archive_path)
    from kaja_cli.core.care import wipe

    if wipe.interrupted(paths) is not None:
        raise Refused(
            "an interrupted `kaja wipe` is unfinished here",
            hint="run `kaja wipe` to finish it first; nothing was restored",
        )
    if marker_path(paths).exists():
        from kaja_cli.core.care.backup.interrupted import _not_running

        _not_running(_read_marker(marker_path(paths)))
        raise Refused(
            "an interrupted `kaja restore` is unfinished here",
            hint="run `kaja restore --finish` first; nothing was restored",
        )
    parts = [Part(f.name.value, f.path) for f in _files(paths)]
    parts.append(Part(IMAGES, paths.images_dir))
    existing = _existing(paths, parts)
    if existing and not (force or dry_run):
        raise Refused(
            f"a Kaja store is already at {paths.shared_db.path}",
            hint="restore elsewhere (--state-dir DIR), or replace it with --force, which backs it"
            " up first",
        )
    if not dry_run:
        _check_not_busy(parts)
    plan = RestorePlan(
        archive_path, parts, existing, staging_path(paths), marker_path(paths), force
    )
    if any(e.path == paths.images_dir for e in existing):
        folder = paths.images_dir
        archived, kept = _strays(folder, _known_sessions(paths))
        plan.only_in_backup = [folder / n for n in archived]
        plan.put_back = [folder / n for n in kept]
    return plan


def _files(paths: Paths) -> list[DatabaseFile]:
    out, seen = [], set()
    for f in paths.databases():
        if f.path not in seen:
            seen.add(f.path)
            out.append(f)
    return out


def _check_archive_file(path: Path) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except OSError as e:
        raise Failed(f"cannot read {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise Refused(f"{path} is {what}: a backup is a file written by `kaja backup`")


def _existing(paths: Paths, parts: list[Part]) -> list[Existing]:
    """What is in place now; refuses (exit 5) a place kaja must not replace."""
    out = []
    for part in parts:
        if part.name == IMAGES:
            out += _existing_images(paths)
            continue
        file = paths.file_of(part.name)
        if not (part.target.exists() or part.target.is_symlink()):
            continue
        if part.target.is_symlink():
            raise Refused(
                f"{part.target} is a symbolic link: kaja restore replaces no file through a link",
                hint=f"point --db at {os.path.realpath(part.target)} to restore there",
            )
        try:
            guarding.require_database_file(part.target)
        except Refused as e:
            raise Refused(
                e.message,
                hint="if it is your own store, damaged, move it aside first; nothing was restored",
            ) from None
        if db.classify(part.target) == "sqlite":
            _require_kajas(part.target, file)
        out.append(Existing(part.target, file.spec.noun, _size(part.target)))
        for c in companions(part.target):
            if c.exists():
                out.append(Existing(c, f"{file.spec.noun} {c.name[len(part.target.name):]}",
                                    _size(c)))  # fmt: skip
    return out


def _existing_images(paths: Paths) -> list[Existing]:
    for folder in (paths.files_dir, paths.images_dir):
        st = _lstat(folder)
        if st is None:
            return []
        if stat.S_ISLNK(st.st_mode):
            raise Refused(
                f"{folder} is a symbolic link: kaja restore replaces no folder through a link",
                hint="move the images back beside the shared file, or restore elsewhere",
            )
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{folder} is not a folder: kaja did not create it")
    if not os.listdir(paths.images_dir):
        return []
    size, _files = fs.tree_size(paths.images_dir)
    return [Existing(paths.images_dir, "images", size)]


def _require_kajas(path: Path, file: DatabaseFile) -> None:
    try:
        with db.open_read(path, timeout_ms=1000, recover=guard.may_recover(file)) as conn:
            verdict = guard.recognise(conn, file)
    except KajaError:
        return  # damaged: still Kaja's place, and the backup of it will say more
    if not verdict.kajas:
        raise guard.not_kajas(path, verdict, file)


def _check_not_busy(parts: list[Part]) -> None:
    for part in parts:
        if part.name != IMAGES and part.target.exists():
            pid = db.holder(part.target)
            if pid is not None:
                who = f"process {pid}" if pid > 0 else "another process"
                raise Busy(f"{part.target} is open in {who}: Kaja is running", hint=BUSY_HINT)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _size(path: Path) -> int:
    st = _lstat(path)
    return st.st_size if st else 0


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
        _write_marker(plan.marker, fresh=True, data={
            "phase": Phase.EXTRACT, "staging": str(staging),
            "archive": {"path": str(plan.archive), "size": st.st_size, "mtime_ns": st.st_mtime_ns},
        })  # fmt: skip
        staging.mkdir(mode=fs.DIR_MODE)
        new = staging / "new"
        new.mkdir(mode=fs.DIR_MODE)
        manifest = _verify(plan, new, _unpack(plan.archive, new, progress))
        hook.checkpoint("extracted")
    except KeyboardInterrupt:
        discard(plan)
        raise Interrupted("restore interrupted: nothing was changed") from None
    except BaseException as e:
        discard(plan)
        if fs.disk_full(e):
            raise _full(e, staging.parent, "unpacking the archive") from e
        raise
    return Staged(plan, manifest, new)


def _full(e: BaseException, where: Path, doing: str) -> Failed:
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
        _rmtree(staging)
        return staging
    n = 2
    while os.path.lexists(other := staging.with_name(f"{staging.name}-{n}")):
        n += 1
    return other


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
            stream = _decompressed(raw, archive.Counting(raw, step))
            # tarfile's own bufsize: a larger one makes every 512-byte header
            # read copy the rest of the buffer (minutes for 20,000 images).
            with tarfile.open(
                fileobj=stream, mode="r|" if isinstance(stream, gzip.GzipFile) else "r|*"
            ) as tar:
                for info in tar:
                    _unpack_member(tar, info, new, sums, folders)
            # gzip checks its trailer (the CRC-32 and the size of all it held)
            # only at the end of its stream, which lies past the tar's own end.
            while stream.read(archive.CHUNK):
                pass
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise Failed(f"cannot read {path}: {_reason(e)}", hint=archive.DAMAGED_HINT) from None
    except OSError as e:
        if e.filename is None and not fs.disk_full(e):  # reading the archive failed
            raise Failed(
                f"cannot read {path}: {e.strerror or e}", hint=archive.DAMAGED_HINT
            ) from None
        raise
    return sums


def _decompressed(raw: IO[bytes], counted: IO[bytes]) -> IO[bytes]:
    """The archive's tar stream: through `gzip` (which checks the CRC-32 and size
    in its trailer, as tarfile's own stream reader does not) when it is gzip."""
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[return-value]
    return counted  # plain tar (or another compression tarfile knows)


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


def _reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return (
        "it ends early (truncated)" if isinstance(e, EOFError) or "unexpected end" in text else text
    )


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
    if split_there != split_here:
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
    _remove_staging(plan.staging)
    plan.marker.unlink(missing_ok=True)
    fs.fsync_dir(plan.marker.parent)
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


# --- 2.-5. back up, prepare, swap, clean up ---------------------------------------------------
def execute(
    store: Store, staged: Staged, *, backup_progress: Progress | None = None
) -> RestoreResult:
    """Put the staged store in place (see the module docstring); on a failure
    before the swap the old store is untouched and the staging folder goes."""
    plan = staged.plan
    previous = None
    try:
        _check_not_busy(plan.parts)
        if plan.replaces:
            previous = _back_up_old(store, plan, backup_progress)
            _fold(plan, store.paths)
        moves = _prepare(staged, _not_the_stores(store, plan))
        # Every staged file durable before the marker says "swap": after a
        # power cut, `finish` completes the restore from them.
        fs.flush_trees([plan.staging, *(m.source for m in moves if m.source is not None)])
        hook.checkpoint("prepared")
    except KeyboardInterrupt:
        discard_all(plan)
        raise Interrupted("restore interrupted: nothing was changed") from None
    except BaseException as e:
        discard_all(plan)
        if fs.disk_full(e):
            where = getattr(e, "filename", None)
            raise _full(e, Path(where).parent if where else plan.staging.parent,
                        "preparing the restore") from e  # fmt: skip
        raise
    try:
        _check_not_busy(plan.parts)  # opened while the old store was backed up?
    except Busy:
        discard_all(plan)
        raise
    try:
        with _sigint_held():
            _write_marker(plan.marker, _marker_data(plan, Phase.SWAP, moves))
            _swap(moves)
            hook.checkpoint("cleanup")
            _clean_up(plan.marker, plan.staging, moves)
    except OSError as e:
        raise Failed(
            f"the restore stopped half way: {e.strerror or e} ({e.filename or ''})",
            hint="fix that, then run `kaja restore --finish` to complete it",
        ) from e
    return RestoreResult(staged.manifest, _placed(moves), previous, _kept(moves))


def _back_up_old(store: Store, plan: RestorePlan, progress: Progress | None) -> Path | None:
    from kaja_cli.core.care.backup.create import backup

    state = store.paths.state_dir.path
    stamp = clock.now().strftime("%Y%m%dT%H%M%SZ")
    out = state.parent / f"kaja-before-restore-{stamp}.tar.gz"
    n = 1
    while out.exists():
        n += 1
        out = state.parent / f"kaja-before-restore-{stamp}-{n}.tar.gz"
    data = _read_marker(plan.marker)
    _write_marker(plan.marker, data | {"backup": str(out)})
    try:
        return backup(store, out, progress=progress, require_shared=False).path
    except NotFound:
        return None  # no database with anything in it (image folders without one are kept)
    except KajaError as e:
        room = "free some disk space beside the state dir, " if "disk is full" in e.message else ""
        raise Failed(
            f"could not back up the store in place before replacing it: {e.message}",
            hint=f"nothing was changed; {room}move the store aside yourself, or restore elsewhere",
        ) from e


def _fold(plan: RestorePlan, paths: Paths) -> None:
    """Each old database folded into one file, so no journal of it outlives it."""
    for part in plan.parts:
        if part.name != IMAGES and db.classify(part.target) == "sqlite":
            db.fold_journal(part.target, paths.file_of(part.name))


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


def _not_the_stores(store: Store, plan: RestorePlan) -> tuple[str, ...]:
    """Entries of the images folder in place that are not the store's being
    replaced, to be put back in the new one (as `kaja wipe` leaves them): a
    folder of no session it knows (or all of them, when the shared file is
    damaged or gone and cannot tell), and in its sessions' folders what the
    backup made first cannot hold (`_strays`)."""
    folder = store.paths.images_dir
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    known = _known_sessions(store.paths)
    _archived, kept = _strays(folder, known)
    return tuple(n for n in names if not known or n not in known or not images.safe_name(n)) + (
        tuple(kept)
    )


def _known_sessions(paths: Paths) -> set[str]:
    """The sessions of the shared file in place; empty when it cannot tell."""
    shared = paths.file_of(Database.SHARED)
    if db.classify(shared.path) != "sqlite":
        return set()
    from kaja_cli.core.care.wipe.reach import read_database

    _refusal, known = read_database(shared.path, shared)
    return known or set()


def _strays(folder: Path, known: set[str]) -> tuple[list[str], list[str]]:
    """In the image folders of the sessions in place, what is no image kaja wrote
    (`<sha256>.<ext>`), as `<sessionId>/<name>`: the files the backup made
    first holds (regular, a name kaja could give), which go with the store and
    are kept only in that backup; and what it cannot hold (a link, a folder,
    any other name), which is put back in place, never lost."""
    archived: list[str] = []
    kept: list[str] = []
    try:
        sessions = sorted(n for n in os.listdir(folder) if n in known and images.safe_name(n))
    except OSError:
        return archived, kept
    for session in sessions:
        st = _lstat(folder / session)
        if st is None or not stat.S_ISDIR(st.st_mode):  # a file or a link, not its folder
            kept.append(session)
            continue
        try:
            entries = sorted(os.scandir(folder / session), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            holdable = images.safe_name(entry.name) and entry.is_file(follow_symlinks=False)
            if holdable and images.is_image_file_name(entry.name):
                continue  # an image: the store's
            (archived if holdable else kept).append(f"{session}/{entry.name}")
    return archived, kept


def _prepare(staged: Staged, keep: tuple[str, ...]) -> list[Move]:
    """The moves of the swap, each source beside its target (copied there first
    when it is on another disk than the staging folder)."""
    plan = staged.plan
    moves = []
    for part in plan.parts:
        source = staged.source(part)
        if source is None and _lstat(part.target) is None:
            continue
        aside = part.target.with_name(f".{part.target.name}.restore-old")
        folder = part.name == IMAGES
        moves.append(Move(part.name, source, part.target, aside, not folder,
                          keep if folder else ()))  # fmt: skip
    far = [m for m in moves if m.source is not None and not _same_disk(m.source, m.target)]
    if far:
        nearby = {m.name: m.target.with_name(f".{m.target.name}.restore-new") for m in far}
        _write_marker(
            plan.marker, _marker_data(plan, Phase.PREPARE, moves, temps=list(nearby.values()))
        )
        for m in far:
            _copy_beside(m.source, nearby[m.name])  # type: ignore[arg-type]
        moves = [Move(m.name, nearby.get(m.name, m.source), m.target, m.aside, m.database,
                      m.keep) for m in moves]  # fmt: skip
    return moves


def _same_disk(source: Path, target: Path) -> bool:
    fs.ensure_private_dir(target.parent)
    return os.stat(source).st_dev == os.stat(target.parent).st_dev


def _copy_beside(source: Path, dest: Path) -> None:
    if dest.exists():
        _remove(dest)
    if source.is_dir():
        shutil.copytree(source, dest, copy_function=_copy_file)
        os.chmod(dest, fs.DIR_MODE)
    else:
        _copy_file(source, dest)
    fs.fsync_dir(dest.parent)


def _copy_file(source, dest) -> None:
    """One file copied (flushed with the rest before the swap: `fs.flush_trees`)."""
    shutil.copyfile(source, dest)
    os.chmod(dest, fs.FILE_MODE)


def _swap(moves: list[Move]) -> None:
    """Each move, idempotently: `finish` runs the same steps again after a kill."""
    for m in moves:
        hook.checkpoint(f"move:{m.target.name}")
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
                _remove(m.aside)
            os.rename(m.target, m.aside)
        if m.source is not None:
            fs.ensure_private_dir(m.target.parent)
            os.rename(m.source, m.target)
    for name in m.keep:  # what was not the old store's goes back (a backup's own wins)
        old, new = m.aside / name, m.target / name
        if os.path.lexists(old) and not os.path.lexists(new):
            fs.ensure_private_dir(new.parent)  # `<sessionId>/<name>`: its folder, if new
            os.rename(old, new)


def _clean_up(marker: Path, staging: Path | None, moves: list[Move]) -> None:
    for m in moves:
        for p in [m.aside, *companions(m.aside)]:
            if os.path.lexists(p):
                _remove(p)
    _remove_staging(staging)
    marker.unlink(missing_ok=True)
    _remove_stale_temporaries(marker)
    fs.fsync_dir(marker.parent)


def _kept(moves: list[Move]) -> list[Path]:
    return [m.target / n for m in moves for n in m.keep if os.path.lexists(m.target / n)]


def _placed(moves: list[Move]) -> list[Placed]:
    out = []
    for m in moves:
        if m.source is None:
            continue
        if m.database:
            out.append(Placed(m.name, m.target, _size(m.target)))
        else:
            size, files = fs.tree_size(m.target)
            out.append(Placed(m.name, m.target, size, files))
    return out


def discard_all(plan: RestorePlan) -> None:
    """`discard`, and the copies made beside their places."""
    data = _read_marker(plan.marker)
    for t in data.get("temps", []):
        _remove_ours(Path(t))
    discard(plan)


# --- the marker and small file helpers --------------------------------------------------------
def _marker_data(plan: RestorePlan, phase: str, moves: list[Move], temps=()) -> dict:
    data = _read_marker(plan.marker)
    data.update(phase=phase, moves=[m.as_json() for m in moves],
                temps=[str(t) for t in temps] or data.get("temps", []))  # fmt: skip
    return data


def _write_marker(path: Path, data: dict, *, fresh: bool = False) -> None:
    """Write the marker atomically and durably, keeping what it said unless `fresh`."""
    full = {"version": MARKER_VERSION, "action": "restore", "pid": os.getpid(),
            "started_at": clock.now_iso()} | ({} if fresh else _read_marker(path)) | data  # fmt: skip
    _remove_stale_temporaries(path)
    fs.write_private_file(path, json.dumps(full, indent=1).encode())
    fs.fsync_dir(path.parent)


def _remove_stale_temporaries(marker: Path) -> None:
    """`.kaja.db.restoring.<pid>.tmp`: the marker's temporary copy that a run
    killed before its rename left (only one restore runs at a time)."""
    from kaja_cli.core.care.wipe.markers import stale_temporaries

    for stale in stale_temporaries(marker):
        stale.unlink(missing_ok=True)


def _read_marker(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remove(path: Path) -> None:
    """Delete a file, or a folder with what it holds; never through a link."""
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def _remove_ours(path: Path) -> None:
    if ".restore-" in path.name:
        _remove(path)


def _remove_staging(path: Path | None) -> None:
    """Remove a staging folder, only when it is provably one of ours (`own_staging`):
    as root, a folder of that name could be another user's."""
    if path is not None and own_staging(path):
        _rmtree(path)


def _rmtree(path: Path | None) -> None:
    if path is None:
        return
    st = _lstat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C off until the block is done; it is raised right after."""
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
