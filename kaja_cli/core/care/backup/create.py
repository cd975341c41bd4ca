"""`kaja backup`: a consistent copy of the whole store, in one archive.

1. Each database that exists (the shared file, a split artifacts file,
   cache.db, db-stats.db, web-auth.db) is copied with SQLite's online backup
   API in one step: one read transaction, so each copy is that database as
   it was at one moment, whatever the agent commits meanwhile (WAL readers
   never block it). A byte-for-byte page copy rather than `VACUUM INTO`:
   rowids stay what they are (the search index is keyed by
   `messages.rowid`, which a VACUUM may renumber), and no index is rebuilt.
   A stepwise backup would start over each time the agent wrote. The copies
   go to a private staging folder beside the archive.
2. Then the image files of the sessions in the shared file's copy. The
   agent writes an image before the message that refers to it, so every
   image the copy refers to was on disk before the copy began; images of
   sessions the copy does not know (written after it, or orphans) stay out.
3. Everything is written into a temporary file beside the archive (0600),
   hashed as it goes, then the manifest, then flushed to disk and renamed
   over the archive's name: a reader sees the whole archive or none. An
   uncompressed archive (`.tar`) starts with the first database's copy
   itself: hashed, room made in front of it for its header (Linux's
   fallocate insert range, on ext4 and XFS), renamed to the temporary file,
   the rest appended. The store is then written once, not twice, and needs
   its own size in free space, not twice it; elsewhere the copy is copied.

Interrupted (Ctrl-C, a full disk), the temporary file and the staging folder
are removed; after a kill -9, the next backup to the same folder removes
what a dead backup left there.
"""

from __future__ import annotations

import io
import math
import os
import platform
import shutil
import sqlite3
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

from kaja_cli import __version__
from kaja_cli.core import clock
from kaja_cli.core.care.backup import archive, guarding
from kaja_cli.core.care.backup.archive import DatabaseEntry, FileEntry, Manifest
from kaja_cli.core.care.backup.gz import ThreadedGzip
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, guard, markers, schema
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.core.wording import plural
from kaja_cli.errors import Busy, Failed, NotFound

Progress = Callable[[int, int | None], None]
COUNTED = ("sessions", "messages", "tool_calls", "notes", "runs", "calls")  # in the manifest


@dataclass
class Copied:
    """A database copied into the staging folder."""

    file: DatabaseFile
    copy: Path
    entry: DatabaseEntry
    hashed: tuple[int, str] | None = None  # its size and sha256, when read already


@dataclass
class Picture:
    session_id: str
    name: str
    path: Path
    size: int


@dataclass
class BackupResult:
    path: Path
    bytes: int
    compressed: bool
    manifest: Manifest
    skipped: list[str] = field(default_factory=list)  # left out, and why

    def to_json(self) -> dict:
        """`kaja backup --json`."""
        pictures = self.manifest.image_files
        return {
            "action": "backup",
            "path": str(self.path),
            "bytes": self.bytes,
            "compressed": self.compressed,
            **self.manifest.to_json(),
            "images": {"files": len(pictures), "bytes": sum(f.bytes for f in pictures)},
            "skipped": self.skipped,
        }


def backup(
    store: Store,
    output: Path | None = None,
    *,
    progress: Progress | None = None,
    require_shared: bool = True,
    now: datetime | None = None,
    force: bool = False,
) -> BackupResult:
    """Write the archive (see the module docstring); returns what it holds.

    NotFound (exit 3) without a shared file, unless `require_shared` is
    False (restore --force backing up whatever is left of a store).
    """
    store.require_local()
    paths = store.paths
    if require_shared:
        store.require()
    moment = now or clock.now()
    files = existing_databases(paths.databases())  # first: `--db /` is no database, not "the store"
    if not files:
        raise NotFound(f"no Kaja store at {paths.shared_db.path}: nothing to back up")
    target = guarding.archive_target(paths, output, moment, force=force)
    _remove_stale(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    staging = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        staging.mkdir(mode=fs.DIR_MODE)
        copies = [_copy(f, staging) for f in files]
        pictures, skipped = _pictures(paths.images_dir, _session_ids(copies))
        if paths.semantic_db.exists():  # kaja's, not the agent's: made again from the messages
            skipped.append(
                f"{paths.semantic_db}: the semantic index, rebuilt by the next"
                " `kaja search --semantic`"
            )
        manifest = _manifest(paths, copies, moment)
        total = sum(c.entry.bytes for c in copies) + sum(p.size for p in pictures)
        _write_archive(tmp, target.name, copies, pictures, manifest, _bytes(progress, total))
        markers.checkpoint("written")
        os.replace(tmp, target)
        fs.fsync_dir(target.parent)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        full = "the disk is full: " if fs.disk_full(e) else ""
        raise Failed(
            f"{full}cannot write the backup in {target.parent}: {e.strerror or e}",
            hint="free some disk space there, or write it elsewhere with -o; nothing was written",
        ) from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BackupResult(
        target, target.stat().st_size, archive.compressed(target.name), manifest, skipped
    )


def existing_databases(files: list[DatabaseFile]) -> list[DatabaseFile]:
    """The database files that exist and hold something, each checked to be a
    SQLite file (Refused, exit 5, otherwise); the same file configured twice once."""
    out, seen = [], set()
    for f in files:
        real = os.path.realpath(f.path)
        if real in seen or not (f.path.exists() or f.path.is_symlink()):
            continue
        seen.add(real)
        guarding.require_database_file(f.path)
        if f.path.stat().st_size == 0:
            continue  # an empty file is an empty database: nothing to keep
        out.append(f)
    return out


def _bytes(progress: Progress | None, total: int) -> Callable[[int], None] | None:
    if progress is None:
        return None
    done = 0
    progress(0, total)

    def step(n: int) -> None:
        nonlocal done
        done += n
        progress(done, total)

    return step


# --- 1. the databases --------------------------------------------------------------------
def _copy(file: DatabaseFile, staging: Path) -> Copied:
    """One consistent copy of `file` (the online backup API, in one step)."""
    dest = staging / f"{file.name.value}.db"
    fs.create_private_file(dest)
    with db.open_read(file.path, recover=guard.may_recover(file)) as src:
        guard.require_kajas(src, file.path, file)
        dst = sqlite3.connect(dest, isolation_level=None)
        try:
            # A staging copy: the archive is what is flushed to disk, not this.
            dst.execute("PRAGMA synchronous = OFF")
            src.backup(dst)  # pages=-1: every page in one step, one read transaction
        except sqlite3.Error as e:
            error = db.translate(e, file.path)
            if isinstance(error, Busy):
                raise error from e
            full = "the disk is full: " if _full(e) else ""
            raise Failed(
                f"{full}cannot copy {file.path} into {dest}: {e}",
                hint="free some disk space there, or write the backup elsewhere with -o",
            ) from e
        finally:
            dst.close()
    return Copied(file, dest, _describe(file, dest))


def _full(e: sqlite3.Error) -> bool:
    return getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(e)


def _describe(file: DatabaseFile, copy: Path) -> DatabaseEntry:
    """What the manifest says of a database, read from its copy."""
    conn = sqlite3.connect(copy.as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        tables = db.table_names(conn)
        upgraded = None
        if "counters" in tables:
            row = conn.execute(
                "SELECT value FROM counters WHERE name = 'schema:upgraded'"
            ).fetchone()
            upgraded = str(row[0]) if row else None
        rows = {
            t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
            for t in COUNTED
            if t in tables and schema.database_of(t) in file.holds
        }
        missing = schema.missing(conn, file)
    except sqlite3.Error as e:
        raise Failed(
            f"the copy of {file.path} cannot be read: {e}", hint="run `kaja doctor`"
        ) from e
    finally:
        conn.close()
    return DatabaseEntry(
        name=file.name.value, member=archive.database_member(file.name), source=str(file.path),
        bytes=copy.stat().st_size, sha256="", schema_upgraded=upgraded, schema_missing=missing,
        rows=rows,
    )  # fmt: skip


def _session_ids(copies: list[Copied]) -> set[str]:
    """The sessions the shared file's copy knows (by their rows or their messages)."""
    shared = next((c for c in copies if Database.SHARED in c.file.holds), None)
    if shared is None:
        return set()
    conn = sqlite3.connect(shared.copy.as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        tables = db.table_names(conn)
        ids: set[str] = set()
        if "sessions" in tables:
            ids |= {r[0] for r in conn.execute("SELECT id FROM sessions")}
        if "messages" in tables and "sessionId" in db.column_names(conn, "messages"):
            ids |= {r[0] for r in conn.execute("SELECT DISTINCT sessionId FROM messages")}
    finally:
        conn.close()
    return {i for i in ids if images.safe_name(i)}


# --- 2. the images -------------------------------------------------------------------------
# Why a folder of images was left out, where its session is not in the backup.
NOT_HELD = "written after its copy of the shared file, or left behind"


def _pictures(
    images_dir: Path, known: set[str], why: str = NOT_HELD
) -> tuple[list[Picture], list[str]]:
    """The image files of the known sessions; and what was left out, and why.

    Links to `files/` or `images/` are read through (the user put them on
    another disk); inside, links and anything but regular files stay out.
    """
    out: list[Picture] = []
    skipped: list[str] = []
    try:
        folders = sorted(os.scandir(images_dir), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return out, skipped
    unknown = 0
    for folder in folders:
        if folder.name not in known:
            unknown += 1
            continue
        if not folder.is_dir(follow_symlinks=False):
            skipped.append(f"{folder.path}: not a folder")
            continue
        for entry in sorted(os.scandir(folder.path), key=lambda e: e.name):
            if not images.safe_name(entry.name):
                skipped.append(f"{entry.path}: not a name kaja gives an image")
                continue
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                skipped.append(f"{entry.path}: not a regular file")
                continue
            out.append(Picture(folder.name, entry.name, Path(entry.path), st.st_size))
    if unknown:
        folders_of = plural(unknown, "image folder")
        skipped.append(f"{folders_of} of sessions the backup does not hold ({why})")
    return out, skipped


# --- 3. the archive ------------------------------------------------------------------------
def _manifest(paths, copies: list[Copied], moment: datetime) -> Manifest:
    return Manifest(
        created_at=clock.iso(moment), kaja=__version__, sqlite=sqlite3.sqlite_version,
        python=platform.python_version(), state_dir=str(paths.state_dir.path),
        databases=[c.entry for c in copies], files=[],
    )  # fmt: skip


def _write_archive(
    tmp: Path,
    name: str,
    copies: list[Copied],
    pictures: list[Picture],
    manifest: Manifest,
    step: Callable[[int], None] | None,
) -> None:
    rest = copies
    if copies and not archive.compressed(name) and _in_place(copies[0], tmp, manifest, step):
        rest = copies[1:]
        fd = os.open(tmp, os.O_WRONLY)
        os.lseek(fd, 0, os.SEEK_END)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, fs.FILE_MODE)
    with os.fdopen(fd, "wb") as raw:
        gz = ThreadedGzip(raw, name.removesuffix(".gz"), archive.COMPRESSLEVEL) if (
            archive.compressed(name)
        ) else None  # fmt: skip
        try:
            with tarfile.open(
                fileobj=gz or raw, mode="w", format=tarfile.PAX_FORMAT, copybufsize=archive.CHUNK
            ) as tar:
                _add_members(tar, rest, pictures, manifest, step)
            if gz is not None:
                gz.close()
        except BaseException:
            if gz is not None:
                gz.abort()
            raise
        raw.flush()
        os.fsync(raw.fileno())


def _add_members(
    tar: tarfile.TarFile,
    copies: list[Copied],
    pictures: list[Picture],
    manifest: Manifest,
    step: Callable[[int], None] | None,
) -> None:
    for c in copies:
        with open(c.copy, "rb") as f:
            if c.hashed is None:
                size, digest = _add(tar, c.entry.member, f, c.copy.stat().st_mtime, step)
            else:  # hashed already, and its bytes told (an _in_place that could not)
                size, digest = c.hashed
                tar.addfile(archive.tar_info(c.entry.member, size, c.copy.stat().st_mtime), f)
        _listed(c, size, digest, manifest)
    for p in pictures:
        added = _add_image(tar, p, step)
        if added is not None:
            manifest.files.append(added)
    data = manifest.to_bytes()
    tar.addfile(archive.tar_info(archive.MANIFEST, len(data), manifest_mtime(manifest)),
                io.BytesIO(data))  # fmt: skip


def _in_place(c: Copied, tmp: Path, manifest: Manifest, step) -> bool:
    """The first database's copy made into the uncompressed archive's start
    without copying it: hashed as it is read once, then room made in front of
    it for its header (`fs.insert_at_start`), and renamed to `tmp`; the other
    members are appended. An 11 GB store then needs 11 GB of free space for
    its backup, not 22, and is written once. False, the copy untouched and
    its bytes told to `step` once only, where the file system cannot."""
    mtime = c.copy.stat().st_mtime
    fd = os.open(c.copy, os.O_RDWR)
    try:
        with open(fd, "rb", closefd=False) as f:
            reader = archive.Hashing(f, step)
            while reader.read(archive.CHUNK):
                pass
        size, digest = reader.count, reader.hexdigest()
        room = header_room(os.fstat(fd).st_blksize, os.fstatvfs(fd).f_bsize)
        if not fs.insert_at_start(fd, room):
            c.hashed = (size, digest)
            return False
        header = archive.padded_header(archive.tar_info(c.entry.member, size, mtime), room)
        os.pwrite(fd, header, 0)
        os.pwrite(fd, bytes(-size % tarfile.BLOCKSIZE), room + size)  # the member's last block
    finally:
        os.close(fd)
    os.rename(c.copy, tmp)
    _listed(c, size, digest, manifest)
    return True


HEADER_BLOCKS = 3  # tar blocks the first header may take (pax header, pax record, ustar header)


def header_room(*block_sizes: int) -> int:
    """The room made in front of the first database for its header: whole tar
    blocks (512 bytes), whole file-system blocks (fallocate's insert range
    takes nothing else: 1 KiB blocks, mkfs.ext4's default under 512 MB, need
    2 KiB, not 1.5), and at least HEADER_BLOCKS tar blocks."""
    unit = tarfile.BLOCKSIZE
    for size in block_sizes:
        if size > 0:
            unit = math.lcm(unit, size)
    least = HEADER_BLOCKS * tarfile.BLOCKSIZE
    return -(-least // unit) * unit


def _listed(c: Copied, size: int, digest: str, manifest: Manifest) -> None:
    """A database's member as written: its size and sum in its entry and the manifest's files."""
    c.entry.bytes, c.entry.sha256 = size, digest
    manifest.files.append(FileEntry(c.entry.member, size, digest))


def manifest_mtime(manifest: Manifest) -> float:
    found = clock.parse_stored(manifest.created_at)
    return found.timestamp() if found else 0.0


def _add(tar: tarfile.TarFile, member: str, f: IO[bytes], mtime: float, step) -> tuple[int, str]:
    size = os.fstat(f.fileno()).st_size
    reader = archive.Hashing(f, step)
    tar.addfile(archive.tar_info(member, size, mtime), reader)
    return size, reader.hexdigest()


def _add_image(tar: tarfile.TarFile, p: Picture, step) -> FileEntry | None:
    """One image file; None when it went meanwhile (its session was deleted)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(p.path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise Failed(f"cannot read {p.path}: {e.strerror or e}") from e
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        member = archive.image_member(p.session_id, p.name)
        try:
            size, digest = _add(tar, member, f, st.st_mtime, step)
        except OSError as e:  # it shrank while being read: not an image kaja wrote
            raise Failed(f"{p.path} changed while it was being backed up: {e}") from e
    return FileEntry(member, size, digest)


# --- what a dead backup left --------------------------------------------------------------
def _remove_stale(target: Path) -> None:
    """Remove the temporary file and staging folder of a backup to the same
    name that was killed (its process is gone)."""
    prefix = f".{target.name}."
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for n in names:
        if not n.startswith(prefix) or not n.endswith((".tmp", ".partial")):
            continue
        pid = n[len(prefix) :].rsplit(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        p = target.parent / n
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
