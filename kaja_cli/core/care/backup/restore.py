"""`kaja restore FILE`: put a backup's store in place, whole or not at all.

A plan first (`plan_restore`, read-only): where each part of the archive goes
(the locations resolved now, so `--state-dir`/`--db` restore elsewhere),
what is there already, and what is refused: an existing store without
`force` (exit 5), a store another process has open (exit 4), a database
path that is a link, a folder or another program's file (exit 5), an
unfinished wipe.

Then, in this order:

1. **Extract** (`extract`, in `staging`) into a staging folder beside the
   state dir, and **verify** it. Anything wrong: the staging folder goes,
   exit 1 (5 for an unsafe member), nothing changed.
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

A marker beside the shared file (`kaja.db.restoring`, core/store/markers.py,
rewritten before each phase: `swap`) says how far it got. An
interrupted restore (kill -9, a power cut) is finished by `interrupted.finish`
(`kaja restore --finish`, or the next `kaja restore`): before the swap it
is undone (the old store never changed: the staging folder and any copies
go); once the swap began it is completed from the staging folder, which
holds only verified files. Either way the store is then the old one or the
new one, whole; `interrupted.interrupted()` tells `kaja doctor` which case it
is. The swap's steps and the marker are `swap`'s, shared with `interrupted`.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kaja_cli.core import clock
from kaja_cli.core.care.backup import archive, guarding
from kaja_cli.core.care.backup.archive import Manifest
from kaja_cli.core.care.backup.staging import (
    IMAGES,
    Existing,
    Part,
    Progress,
    RestorePlan,
    Staged,
    discard,
    disk_full_error,
    extract,
    staging_path,
)
from kaja_cli.core.care.backup.swap import (
    RESTORE,
    Move,
    Phase,
    clean_up,
    lstat,
    marker_path,
    pending,
    read_marker,
    remove,
    remove_ours,
    require_not_running,
    swap,
)
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, guard, markers
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import Database, DatabaseFile
from kaja_cli.errors import Busy, Failed, Interrupted, KajaError, NotFound, Refused

# What the commands call and name: the extraction is `staging`'s.
__all__ = [
    "RestorePlan",
    "RestoreResult",
    "Staged",
    "discard",
    "execute",
    "extract",
    "plan_restore",
]
BUSY_HINT = "close Kaja and the Telegram bot first; nothing was changed"


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
    # Cloud mode: the rows that went in, by table (the archive's other owners'
    # rows stay out); None where the whole archive went in (a local store).
    rows: dict[str, int] | None = None


# --- the plan ------------------------------------------------------------------------------
def plan_restore(
    store: Store, archive_path: Path, *, force: bool, dry_run: bool = False
) -> RestorePlan:
    """Where the archive's parts go and what is there now; refusals raised (see
    the docstring). A dry run only verifies the archive: a store in place or a
    running Kaja does not stop it."""
    store.require_local()
    paths = store.paths
    check_archive_file(archive_path)
    from kaja_cli.core.care import wipe

    if wipe.interrupted(paths) is not None:
        raise Refused(
            "an interrupted `kaja wipe` is unfinished here",
            hint="run `kaja wipe` to finish it first; nothing was restored",
        )
    if (found := pending(paths)) is not None:
        require_not_running(found.data)
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


def check_archive_file(path: Path) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except OSError as e:
        raise Failed(f"cannot read {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise Refused(f"{path} is {what}: a backup is a file written by `kaja backup`")
    archive.check_first_member(path)


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
        st = lstat(folder)
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


def _size(path: Path) -> int:
    st = lstat(path)
    return st.st_size if st else 0


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
        if staged.manifest.engine != "sqlite":
            _complete(staged)
        moves = _prepare(staged, _not_the_stores(store, plan))
        # Every staged file durable before the marker says "swap": after a
        # power cut, `finish` completes the restore from them.
        fs.flush_trees([plan.staging, *(m.source for m in moves if m.source is not None)])
        markers.checkpoint("prepared")
    except KeyboardInterrupt:
        discard_all(plan)
        raise Interrupted("restore interrupted: nothing was changed") from None
    except BaseException as e:
        discard_all(plan)
        if fs.disk_full(e):
            where = getattr(e, "filename", None)
            raise disk_full_error(e, Path(where).parent if where else plan.staging.parent,
                        "preparing the restore") from e  # fmt: skip
        raise
    try:
        _check_not_busy(plan.parts)  # opened while the old store was backed up?
    except Busy:
        discard_all(plan)
        raise
    try:
        with markers.sigint_held():
            # kaja's semantic index is of the messages being replaced: the
            # next `kaja search --semantic` builds it from the restored ones.
            from kaja_cli.core.conversations.semantic import index

            index.remove(store.paths.semantic_db)
            _mark(plan, Phase.SWAP, moves)
            swap(moves)
            markers.checkpoint("cleanup")
            clean_up(plan.marker, plan.staging, moves)
    except OSError as e:
        raise Failed(
            f"the restore stopped half way: {e.strerror or e} ({e.filename or ''})",
            hint="fix that, then run `kaja restore --finish` to complete it",
        ) from e
    return RestoreResult(staged.manifest, _placed(moves), previous, _kept(moves))


def _complete(staged: Staged) -> None:
    """A backup of cloud mode's rows holds the server's tables only: the staged
    copy gets the rest of a local store's schema and its search index, before
    anything in place changes."""
    from kaja_cli.core.care.backup.staging import _as_shared
    from kaja_cli.core.store import local

    copy = staged.new / archive.database_member(Database.SHARED)
    file = _as_shared(copy)
    with db.open_write(copy, file) as conn:
        local.ensure_schema(file, conn)


def _back_up_old(store: Store, plan: RestorePlan, progress: Progress | None) -> Path | None:
    from kaja_cli.core.care.backup.create import backup

    state = store.paths.state_dir.path
    stamp = clock.stamp(clock.now())
    out = state.parent / f"kaja-before-restore-{stamp}.tar.gz"
    n = 1
    while out.exists():
        n += 1
        out = state.parent / f"kaja-before-restore-{stamp}-{n}.tar.gz"
    markers.update(plan.marker, RESTORE, backup=str(out))
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
        st = lstat(folder / session)
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
        if source is None and lstat(part.target) is None:
            continue
        aside = part.target.with_name(f".{part.target.name}.restore-old")
        folder = part.name == IMAGES
        moves.append(Move(part.name, source, part.target, aside, not folder,
                          keep if folder else ()))  # fmt: skip
    far = [m for m in moves if m.source is not None and not _same_disk(m.source, m.target)]
    if far:
        nearby = {m.name: m.target.with_name(f".{m.target.name}.restore-new") for m in far}
        _mark(plan, Phase.PREPARE, moves, temps=list(nearby.values()))
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
        remove(dest)
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
    for t in read_marker(plan.marker).get("temps", []):
        remove_ours(Path(t))
    discard(plan)


def _mark(plan: RestorePlan, phase: str, moves: list[Move], temps=()) -> None:
    """The marker says the restore is at `phase`, with these moves (and copies)."""
    data = read_marker(plan.marker)
    markers.update(plan.marker, RESTORE, phase=phase, moves=[m.as_json() for m in moves],
                   temps=[str(t) for t in temps] or data.get("temps", []))  # fmt: skip
