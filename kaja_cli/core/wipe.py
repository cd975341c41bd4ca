"""`kaja wipe`: delete the local store, or everything one owner stored (SPEC §8).

A plan first, then its execution (pipx `reset`): `plan()` and `plan_owner()`
only look (read-only) and return what would go, what stays and why, and what
is refused; the same plan drives `--dry-run`, the confirmation, `--json` and
`execute()` / `execute_owner()`.

What a whole wipe deletes, and nothing else:
- each database (the shared file, a split artifacts file, cache.db,
  db-stats.db, web-auth.db) with its -wal, -shm and -journal;
- under `files/` beside the shared file: `images/<sessionId>/` for the
  sessions the shared file knows, then `images/` and `files/` once empty.
  Anything else there stays (kaja did not create it), and so do the folders
  holding it. A symlinked `files/`, `images/` or session folder loses the
  link; its target is never entered;
- with `settings=True`, the settings file (a symlink: the link);
- the state dir (and the settings folder) when that leaves them empty.

Refused, deleting nothing: a database path that is a folder, a symlink, not a
regular file, not SQLite, or SQLite without a single table of Kaja's (exit 5);
any of those files open in another process (exit 4, `db.holder`). There is
no --force: a file deleted under a running process silently loses what it
writes next.

Interrupted at any point (Ctrl-C, kill -9, power loss), what is left is the
whole store or a state the next `kaja wipe` finishes:
1. Each database is first folded into one self-contained file
   (`db.fold_journal`: WAL checkpointed and removed, rollback mode) while
   nothing has been deleted yet; a process that opened a file meanwhile
   stops the wipe here (exit 4).
2. A marker beside the shared file (`kaja.db.wiping`, JSON) records every
   path of the plan and is made durable before the first deletion; image
   folders can only be told apart while the shared file exists, so the
   marker is what lets a later run finish them.
3. Each database goes before its companions, with Ctrl-C held off until the
   group is done; the folder is synced in between so that not even a power
   cut can leave a database without the journal it needed.
4. The marker goes last (before the now empty state dir).
The next `kaja wipe` deletes what the marker still lists along with
whatever exists now. `interrupted(paths)` describes such leftovers for
`kaja doctor`.

`--owner` is one ordinary transaction (it waits for the agent's lock like
any writer): the owner's sessions with every row hanging off them (through
`cascade`), their notes, dataset answers and versions, and their search
entries (the index triggers, and `conversation_threads`). Deleted content is
overwritten (`secure_delete`). A marker naming their image folders
(`kaja.db.wiping-owner-<hash of the owner>`) is written
before the commit and removed after the folders: a crash between the two
leaves folders whose sessions are gone, which the next `kaja wipe --owner`
(or `kaja wipe`) removes; folders of sessions that still exist (a crash
before the commit) are never touched.

Tests stop a real `kaja wipe` at a chosen step to `kill -9` it: with
KAJA_TEST_WIPE_PAUSE=<name> and KAJA_TEST_WIPE_PAUSED=<file>, the process
writes its pid to <file> and sleeps (KAJA_TEST_WIPE_PAUSE_SECONDS, default
600) right before deleting the path whose file name is <name> (the marker's
name: before removing the marker), or for `--owner` at "commit" (before
COMMIT) and "images" (after it, before the folders). Nothing else reads
these variables.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kaja_cli.core import cascade, db, fs, images
from kaja_cli.core.clock import now_iso
from kaja_cli.core.owners import Owner
from kaja_cli.core.paths import Paths, companions
from kaja_cli.core.registry import DATABASES, Database, DatabaseFile
from kaja_cli.core.store import Store
from kaja_cli.errors import Busy, Failed, Interrupted, KajaError, NotFound, Refused

MARKER_SUFFIX = ".wiping"
MARKER_VERSION = 1
READ_TIMEOUT_MS = 1000


# --- plain data ----------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    """One path the wipe deletes, in the order it does.

    kind: "file", "link" (only the link goes), "tree" (an image folder, with
    its files) or "folder" (removed only if empty by then). group: the
    database it belongs to ("shared", "cache", …), "images", "files",
    "settings" or "parents" (folders removed after the marker).
    """

    path: Path
    what: str
    kind: str
    group: str
    size: int = 0
    files: int = 0


@dataclass(frozen=True)
class Kept:
    """Something in reach that stays, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Refusal:
    path: Path
    reason: str
    busy: bool = False  # exit 4 rather than 5

    def error(self) -> KajaError:
        cls = Busy if self.busy else Refused
        hint = "close it first; nothing was deleted" if self.busy else "nothing was deleted"
        return cls(self.reason, hint=hint)


@dataclass(frozen=True)
class Leftovers:
    """What an interrupted wipe left (for `kaja doctor` and the next wipe)."""

    summary: str
    details: tuple[str, ...]
    commands: tuple[str, ...]  # what finishes it
    remaining: tuple[Path, ...]


@dataclass
class WipePlan:
    items: list[Item]
    kept: list[Kept]
    refusals: list[Refusal]
    marker: Path
    leftovers: Leftovers | None = None
    markers: list[Path] = field(default_factory=list)  # earlier wipes' markers to remove

    @property
    def size(self) -> int:
        return sum(i.size for i in self.items)

    @property
    def nothing_to_do(self) -> bool:
        return not self.items and not self.markers

    def check(self) -> None:
        """Raise the first refusal (unsafe paths, exit 5, before busy ones, exit 4)."""
        if self.refusals:
            raise sorted(self.refusals, key=lambda r: r.busy)[0].error()


@dataclass
class WipeResult:
    deleted: list[Item]
    kept: list[Kept]


@dataclass(frozen=True)
class Mention:
    """Rows outside the wipe that still refer to the owner (kept)."""

    table: str
    rows: int
    reason: str


@dataclass
class OwnerPlan:
    owner: Owner
    rows: dict[str, int]
    image_folders: list[Item]
    mentions: list[Mention]
    leftovers: Leftovers | None = None

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


@dataclass
class OwnerResult:
    owner: Owner
    rows: dict[str, int]
    image_folders: list[Path]
    index_purged: bool = False  # the search index no longer holds their words on disk


# --- markers ----------------------------------------------------------------------
def marker_path(paths: Paths) -> Path:
    """The whole wipe's marker: `kaja.db.wiping` beside the shared file."""
    shared = paths.shared_db.path
    return shared.with_name(shared.name + MARKER_SUFFIX)


def _markers(paths: Paths) -> list[Path]:
    """Every marker beside the shared file, the whole wipe's first."""
    main = marker_path(paths)
    try:
        names = os.listdir(main.parent)
    except OSError:
        return []
    found = [main.parent / n for n in sorted(names) if n.startswith(main.name + "-owner-")]
    return ([main] if main.name in names else []) + found


def _read_marker(path: Path) -> dict:
    """A marker's content; {} when it cannot be read (still a marker)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_marker(path: Path, data: dict) -> None:
    try:
        fs.write_private_file(path, json.dumps(data, indent=1).encode())
    except OSError as e:
        raise Failed(
            f"cannot write {path}: {e.strerror or e}",
            hint="check the folder's permissions; nothing was deleted",
        ) from e
    fs.fsync_dir(path.parent)


# --- where things are, and whether they are ours ------------------------------------
def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _size(path: Path) -> tuple[int, int]:
    try:
        return fs.tree_size(path)
    except OSError:
        return 0, 0


def _is_home_or_above(path: Path) -> bool:
    """The home folder, one of its ancestors, or a filesystem root."""
    home = Path(os.path.normpath(Path.home()))
    path = Path(os.path.normpath(path))
    return path == path.parent or path == home or path in home.parents


def _unsafe(path: Path) -> Refusal | None:
    """Why `path` may not be deleted as a database (None: it may, or it is missing)."""
    st = _lstat(path)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Refusal(
            path,
            f"{path} is a symbolic link: kaja wipe deletes no file through a link"
            f" (point --db at {os.path.realpath(path)} to wipe that)",
        )
    if stat.S_ISDIR(st.st_mode):
        what = "your home folder" if _is_home_or_above(path) else "a folder"
        return Refusal(path, f"{path} is {what}, not a Kaja database")
    if not stat.S_ISREG(st.st_mode):
        return Refusal(path, f"{path} is not a regular file, not a Kaja database")
    if db.classify(path) == "other":
        return Refusal(path, f"{path} is not a SQLite database")
    return None


def _looks_like_kajas(tables: set[str], file: DatabaseFile) -> bool:
    """Whether a file's tables are Kaja's: its telltales (a common name such
    as `notes` alone proves nothing), else any of the tables it should hold."""
    telltales = file.spec.telltales
    if telltales:
        return any(t <= tables for t in telltales)
    return bool(tables & {t.name for t in file.tables})


def _read_database(path: Path, file: DatabaseFile) -> tuple[Refusal | None, set[str] | None]:
    """Refuse SQLite that is not Kaja's; the shared file's session ids.

    Ids are None when the file cannot be read (damaged): it still goes, but
    its image folders can't be told from anyone else's.
    """
    if db.classify(path) != "sqlite":
        return None, set()
    try:
        with db.open_read(path, timeout_ms=READ_TIMEOUT_MS) as conn:
            tables = db.table_names(conn)
            if tables and not _looks_like_kajas(tables, file):
                return Refusal(
                    path, f"{path} is a SQLite database, but not Kaja's (none of its tables is)"
                ), None
            ids: set[str] = set()
            if "sessions" in tables:
                ids |= {r[0] for r in conn.execute("SELECT id FROM sessions")}
            if "messages" in tables:
                ids |= {r[0] for r in conn.execute("SELECT DISTINCT sessionId FROM messages")}
            return None, {i for i in ids if isinstance(i, str)}
    except KajaError:
        return None, None


def _busy(path: Path) -> Refusal | None:
    """A refusal naming the process that has `path` (or its -shm) open."""
    pid = db.holder(path)
    if pid is None:
        return None
    who = f"process {pid}" if pid > 0 else "another process"
    return Refusal(
        path,
        f"Kaja (or the Telegram bot) is using the store: {path} is open in {who}",
        busy=True,
    )


def _database_items(path: Path, name: Database) -> tuple[list[Item], list[Refusal]]:
    """The database, then its companions (the order they go in)."""
    label = DATABASES[name].noun
    items, refusals = [], []
    for p in [path, *companions(path)]:
        st = _lstat(p)
        if st is None:
            continue
        what = label if p == path else f"{label} {p.name[len(path.name) :]}"
        if stat.S_ISDIR(st.st_mode):
            if p != path:  # the database itself is refused by _unsafe
                refusals.append(Refusal(p, f"{p} is a folder where SQLite keeps a file"))
            continue
        kind = "link" if stat.S_ISLNK(st.st_mode) else "file"
        items.append(Item(p, what, kind, name, st.st_size, 1))
    return items, refusals


def _files_items(
    paths: Paths, known: set[str] | None, listed: set[str]
) -> tuple[list[Item], list[Kept]]:
    """What goes from `files/` beside the shared file, and what stays.

    An image folder goes when the shared file knows its session, or when an
    interrupted wipe listed it (`listed`).
    """
    files_dir, images_dir = paths.files_dir, paths.images_dir
    st = _lstat(files_dir)
    if st is None:
        return [], []
    if stat.S_ISLNK(st.st_mode):
        return [
            Item(files_dir, "files/ (a link: its target stays)", "link", "files", st.st_size, 1)
        ], []
    if not stat.S_ISDIR(st.st_mode):
        return [], [Kept(files_dir, "not a folder: kaja did not create it")]
    items: list[Item] = []
    kept = [
        Kept(files_dir / name, "not something kaja creates in files/")
        for name in sorted(os.listdir(files_dir))
        if name != "images"
    ]
    ist = _lstat(images_dir)
    if ist is not None and stat.S_ISLNK(ist.st_mode):
        items.append(
            Item(images_dir, "images/ (a link: its target stays)", "link", "images", ist.st_size, 1)
        )
    elif ist is not None and stat.S_ISDIR(ist.st_mode):
        for name in sorted(os.listdir(images_dir)):
            entry = images_dir / name
            if name not in listed:
                if known is None:
                    kept.append(Kept(entry, "the shared file can't be read to tell whose it is"))
                    continue
                if name not in known or not images.safe_name(name):
                    kept.append(Kept(entry, "not a session of this store"))
                    continue
            item = _image_item(entry)
            if item is None:
                kept.append(Kept(entry, "a file where kaja keeps folders"))
            else:
                items.append(item)
    return items, kept


def _image_item(folder: Path) -> Item | None:
    """A session's image folder as an item (a link: only the link), None if not a folder."""
    st = _lstat(folder)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Item(folder, f"images of session {folder.name} (a link)", "link", "images", 0, 1)
    if not stat.S_ISDIR(st.st_mode):
        return None
    size, count = _size(folder)
    return Item(folder, f"images of session {folder.name}", "tree", "images", size, count)


def _empty_after(folder: Path, gone: set[Path]) -> bool:
    """Whether `folder` is a real folder holding nothing but paths in `gone`."""
    st = _lstat(folder)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    try:
        return all(folder / n in gone for n in os.listdir(folder))
    except OSError:
        return False


def _in_reach(path: Path, paths: Paths) -> bool:
    """Whether a path read from a marker is one a wipe of `paths` may delete."""
    fixed = {paths.settings_file.path, paths.files_dir, paths.images_dir}
    for f in paths.databases():
        fixed |= {f.path, *companions(f.path)}
    return path in fixed or (path.parent == paths.images_dir and images.safe_name(path.name))


def _listed(marker: Path, paths: Paths, live: set[str] | None) -> list[Path]:
    """The paths an interrupted wipe's marker still lists, that exist and are in reach.

    An owner wipe's image folders count only once their session is gone (a
    crash before its commit left the sessions, and their images, alone); with
    `live` None (the shared file can't be read) none of them count.
    """
    data = _read_marker(marker)
    raw = data.get("paths")
    whole = data.get("action") == "wipe"
    out: list[Path] = []
    for p in raw if isinstance(raw, list) else []:
        if not isinstance(p, str):
            continue
        path = Path(os.path.normpath(p))
        if path in out or not _in_reach(path, paths) or _lstat(path) is None:
            continue
        if not whole and (path.parent != paths.images_dir or live is None or path.name in live):
            continue
        out.append(path)
    return out


# --- the whole wipe -------------------------------------------------------------------
_STAGES = ("databases", "files", "settings", "parents")


def _stage(item: Item) -> int:
    group = {"images": "files"}.get(item.group, item.group)
    return _STAGES.index(group) if group in _STAGES else 0


def plan(store: Store, *, settings: bool = False) -> WipePlan:
    """What `kaja wipe` would delete, keep and refuse; reads, never writes."""
    store.require_local()
    paths = store.paths
    items: list[Item] = []
    refusals: list[Refusal] = []
    known: set[str] | None = set()
    seen: set[Path] = set()
    for file in paths.databases():
        path = file.path
        if path in seen:  # the same file configured twice
            continue
        seen.add(path)
        unsafe = _unsafe(path)
        busy = None if unsafe else _busy(path)
        refusal, ids = (unsafe or busy), set()
        if refusal is None:
            refusal, ids = _read_database(path, file)
        if refusal is not None:
            refusals.append(refusal)
        if file.name is Database.SHARED:
            known = ids
        db_items, db_refusals = _database_items(path, file.name)
        items += db_items
        refusals += db_refusals

    markers = _markers(paths)
    live = set(known) if known is not None else None
    listed = [p for m in markers for p in _listed(m, paths, live)]
    file_items, kept = _files_items(
        paths, known, {p.name for p in listed if p.parent == paths.images_dir}
    )
    items += file_items
    have = {i.path for i in items}
    sp = paths.settings_file.path
    if settings or sp in listed:  # an interrupted wipe --settings: finish that too
        st = _lstat(sp)
        if st is not None and sp not in have:
            if stat.S_ISLNK(st.st_mode):
                items.append(
                    Item(sp, "settings file (a link: its target stays)", "link", "settings")
                )
            elif stat.S_ISREG(st.st_mode):
                items.append(Item(sp, "settings file", "file", "settings", st.st_size, 1))
            else:
                refusals.append(Refusal(sp, f"{sp} is not a file, not a settings file"))
    elif _lstat(sp) is not None:
        kept.append(Kept(sp, "settings stay (--settings deletes them too)"))

    # Folders that end up empty: files/images and files/, then (after the
    # marker) the state dir and, with the settings, their folder.
    marker = marker_path(paths)
    gone = {i.path for i in items} | set(markers) | {marker}
    folders = [
        (paths.images_dir, "files/images/ (empty by then)", "files"),
        (paths.files_dir, "files/ (empty by then)", "files"),
        (paths.state_dir.path, "state dir (empty by then)", "parents"),
    ]
    if settings:
        folders.append((sp.parent, "settings folder (empty by then)", "parents"))
    for folder, what, group in folders:
        if folder in gone or _is_home_or_above(folder) or not _empty_after(folder, gone):
            continue
        items.append(Item(folder, what, "folder", group))
        gone.add(folder)

    items.sort(key=_stage)
    return WipePlan(items, kept, refusals, marker, interrupted(paths), markers)


def execute(store: Store, plan: WipePlan) -> WipeResult:
    """Delete what `plan` lists, in its order (see the module docstring)."""
    paths = store.paths
    dbs = list(dict.fromkeys(f.path for f in paths.databases()))
    # It may have been minutes since the plan (the question): look again.
    for path in dbs:
        if (busy := _busy(path)) is not None:
            raise busy.error()
    # 1. Every database self-contained while nothing is deleted yet (a
    # damaged or read-only one can't be: step 3's order still keeps it safe).
    for path in dbs:
        if db.classify(path) == "sqlite" and not path.is_symlink():
            db.fold_journal(path)
    # 2. The marker, durable before the first deletion.
    wrote = bool(plan.items) and plan.marker.parent.is_dir()
    if wrote:
        _write_marker(
            plan.marker,
            {
                "version": MARKER_VERSION,
                "action": "wipe",
                "started_at": now_iso(),
                "pid": os.getpid(),
                "paths": [str(i.path) for i in plan.items],
            },
        )
    markers = list(dict.fromkeys(([plan.marker] if wrote else []) + plan.markers))
    deleted: list[Item] = []
    kept = list(plan.kept)
    left = len(plan.items)
    try:
        for stage, items in _by_group(plan.items):
            if stage == "parents":  # 4. the marker, before the folder holding it
                _remove_markers(markers)
                markers = []
            first = items[0]
            if first.group in DATABASES and (pid := db.holder(first.path)) is not None:
                # Folding and the marker took a moment: a process that opened
                # the database meanwhile keeps it (and the wipe stays unfinished).
                raise Busy(
                    f"{first.path} was opened by process {pid} during the wipe: stopped before"
                    " deleting it",
                    hint="close Kaja (and the Telegram bot), then run `kaja wipe` again to finish",
                )
            with _sigint_held():  # 3. a database and its journal go together
                for n, item in enumerate(items):
                    _pause(item.path.name)
                    if _remove(item):
                        deleted.append(item)
                    elif _lstat(item.path) is not None:
                        kept.append(Kept(item.path, "changed since the plan: not deleting it"))
                    left -= 1
                    if n == 0 and item.group in DATABASES:
                        fs.fsync_dir(item.path.parent)  # the database gone before its journal
            fs.fsync_dir(items[-1].path.parent)
        _remove_markers(markers)
    except KeyboardInterrupt:
        raise Interrupted(
            f"wipe interrupted: {left} of {len(plan.items)} paths remain",
            hint="run `kaja wipe` again to finish",
        ) from None
    except OSError as e:
        raise Failed(
            f"cannot delete {e.filename or 'a file'}: {e.strerror or e}",
            hint="fix that, then run `kaja wipe` again to finish",
        ) from e
    return WipeResult(deleted, kept)


def _by_group(items: list[Item]) -> Iterator[tuple[str, list[Item]]]:
    """Consecutive items of one group (a database with its companions, …)."""
    run: list[Item] = []
    for item in items:
        if run and item.group != run[0].group:
            yield run[0].group, run
            run = []
        run.append(item)
    if run:
        yield run[0].group, run


def _remove_markers(markers: list[Path]) -> None:
    for m in markers:
        _pause(m.name)
        m.unlink(missing_ok=True)
    if markers:
        fs.fsync_dir(markers[0].parent)


def _remove(item: Item) -> bool:
    """Delete one planned path as it is now; never follows a symlink."""
    st = _lstat(item.path)
    if st is None:
        return False
    if stat.S_ISDIR(st.st_mode):
        if item.kind == "tree":
            shutil.rmtree(item.path)
            return True
        if item.kind == "folder":
            try:
                item.path.rmdir()
            except OSError:
                return False
            return True
        return False  # a folder where a file was planned: not ours
    if item.kind == "folder":
        return False
    item.path.unlink()
    return True


@contextmanager
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


def _pause(name: str) -> None:
    """The test hook (module docstring): stop here to be killed."""
    if os.environ.get("KAJA_TEST_WIPE_PAUSE") != name:
        return
    flag = os.environ.get("KAJA_TEST_WIPE_PAUSED")
    if flag:
        Path(flag).write_text(str(os.getpid()))
    time.sleep(float(os.environ.get("KAJA_TEST_WIPE_PAUSE_SECONDS") or 600))


# --- what an interrupted wipe left ----------------------------------------------------
def interrupted(paths: Paths) -> Leftovers | None:
    """What interrupted wipes left, or None; for `kaja doctor`. Reads, never writes.

    Covers the markers of `kaja wipe` and `kaja wipe --owner`, and a database
    whose -wal, -shm or -journal outlived it.
    """
    details: list[str] = []
    commands: list[str] = []
    remaining: list[Path] = []
    markers = _markers(paths)
    live = _live_sessions(paths) if markers else set()
    for m in markers:
        detail, command, left = _describe(m, paths, live)
        details.append(detail)
        commands.append(command)
        remaining += [*left, m]
    for file in paths.databases():
        path = file.path
        if _lstat(path) is not None:
            continue
        stale = [c for c in companions(path) if c not in remaining and _lstat(c) is not None]
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


def _describe(marker: Path, paths: Paths, live: set[str] | None) -> tuple[str, str, list[Path]]:
    """(one line, the command that finishes it, the paths it left) for one marker."""
    data = _read_marker(marker)
    started = data.get("started_at") or "at an unknown time"
    left = _listed(marker, paths, live)
    owner = data.get("owner")
    if data.get("action") == "owner" and isinstance(owner, str):
        command = f"kaja wipe --owner {owner}"
        names = {Path(p).name for p in data.get("paths", []) if isinstance(p, str)}
        if not left and live and names & live:
            return f"`{command}` (started {started}) stopped before its commit", command, left
        return (
            f"`{command}` (started {started}) stopped after its commit with"
            f" {len(left)} image folder(s) left",
            command,
            left,
        )
    if not data:
        return f"an unreadable wipe marker {marker}", "kaja wipe", left
    return f"`kaja wipe` (started {started}) stopped with {len(left)} paths left", "kaja wipe", left


def _live_sessions(paths: Paths) -> set[str] | None:
    """The shared file's session ids (empty when there is none; None: unreadable)."""
    path = paths.shared_db.path
    if _lstat(path) is None:
        return set()
    if _unsafe(path) is not None:
        return None
    return _read_database(path, paths.file_of(Database.SHARED))[1]


# --- one owner ----------------------------------------------------------------------------
# Rows that still refer to the owner after `--owner` and stay: the usage
# ledger, learning and services are not the conversation store (SPEC §8).
_OWNER_RUNS = (
    "run_id IN (SELECT id FROM runs WHERE thread_id IN (SELECT value FROM json_each(:ids)))"
)
_MENTIONS = (
    ("runs", "thread_id IN (SELECT value FROM json_each(:ids))", "usage ledger"),
    *((t, _OWNER_RUNS, "usage ledger") for t in ("calls", "tools", "events", "logs", "media")),
    ("feedback", "user_id IN (SELECT value FROM json_each(:res))", "usage ledger"),
    (
        "experience_runs",
        "resource_id IN (SELECT value FROM json_each(:res))"
        " OR thread_id IN (SELECT value FROM json_each(:ids))",
        "learning",
    ),
    ("schedules", "resource_id IN (SELECT value FROM json_each(:res))", "services"),
    ("background_tasks", "resource_id IN (SELECT value FROM json_each(:res))", "services"),
)
# Erased besides the sessions' rows, by their owner column (terminal: '').
_OWNER_TABLES = ("notes", "dataset_answers", "dataset_versions")
# The order rows are shown in.
ROW_ORDER = (
    "sessions", "messages", "tool_calls", "session_summaries", "model_calls", "session_events",
    "notes", "dataset_answers", "dataset_versions", "conversation_threads",
)  # fmt: skip


def _resource_ids(owner: Owner) -> str:
    """How other tables name the owner (`resource_id`, `user_id`), as a JSON list."""
    return json.dumps(["terminal", ""] if owner.is_terminal else [owner.id])


def _session_ids(conn: sqlite3.Connection, owner: Owner) -> list[str]:
    where, args = owner.sessions_where()
    return [r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", args)]


def _owner_rows(
    conn: sqlite3.Connection, owner: Owner, ids: list[str], *, delete: bool
) -> dict[str, int]:
    """Count (or delete, in the caller's transaction) everything of the owner's."""
    present = db.table_names(conn)
    rows = (cascade.delete_session_rows if delete else cascade.count_session_rows)(conn, ids)
    verb = "DELETE" if delete else "SELECT COUNT(*)"
    wheres = [(t, "owner = ?", (owner.notes_value,)) for t in _OWNER_TABLES]
    # Search threads of theirs beyond their sessions' (whose session is gone).
    wheres.append(
        (
            "conversation_threads",
            "resource_id IN (SELECT value FROM json_each(?))"
            " AND thread_id NOT IN (SELECT value FROM json_each(?))",
            (_resource_ids(owner), json.dumps(ids)),
        )
    )
    for table, where, args in wheres:
        if table in present:
            cur = conn.execute(f"{verb} FROM {table} WHERE {where}", args)
            rows[table] = rows.get(table, 0) + (cur.rowcount if delete else cur.fetchone()[0])
    return {t: rows[t] for t in ROW_ORDER if t in rows}


def _owner_marker(paths: Paths, owner: Owner) -> Path:
    """One marker per owner, so two owners erased at once don't share one."""
    digest = hashlib.sha256(owner.label.encode()).hexdigest()[:12]
    main = marker_path(paths)
    return main.with_name(f"{main.name}-owner-{digest}")


def _no_whole_wipe_pending(paths: Paths) -> None:
    marker = marker_path(paths)
    if _lstat(marker) is not None:
        raise Refused(
            "an interrupted `kaja wipe` has not finished",
            hint=f"run `kaja wipe` to finish it, or delete {marker} to keep what is left",
        )


def plan_owner(store: Store, owner: Owner) -> OwnerPlan:
    """What `kaja wipe --owner` would erase; reads, never writes.

    NotFound (exit 3) when the owner has nothing here and no interrupted
    wipe of theirs is left to finish: a mistyped id must not look done.
    """
    store.require_local()
    paths = store.paths
    _no_whole_wipe_pending(paths)
    with store.reader(timeout_ms=READ_TIMEOUT_MS) as conn:
        ids = _session_ids(conn, owner)
        rows = _owner_rows(conn, owner, ids, delete=False)
        present = db.table_names(conn)
        args = {"ids": json.dumps(ids), "res": _resource_ids(owner)}
        mentions = [
            Mention(table, n, reason)
            for table, cond, reason in _MENTIONS
            if table in present
            and (
                n := conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {cond}", args).fetchone()[0]
            )
        ]
    folders = [
        i
        for sid in ids
        if (d := images.session_dir(paths.images_dir, sid)) and (i := _image_item(d))
    ]
    leftovers = None
    marker = _owner_marker(paths, owner)
    if _lstat(marker) is not None:
        detail, command, left = _describe(marker, paths, _live_sessions(paths))
        leftovers = Leftovers(detail, (detail,), (command,), (*left, marker))
        have = {i.path for i in folders}
        folders += [i for p in left if p not in have and (i := _image_item(p))]
    if not sum(rows.values()) and not folders and leftovers is None:
        raise NotFound(
            f"nothing stored for owner {owner.label}",
            hint="`kaja sessions --all-owners` lists the owners",
        )
    return OwnerPlan(owner, rows, folders, mentions, leftovers)


def execute_owner(
    store: Store, owner: Owner, *, timeout_ms: int = db.BUSY_TIMEOUT_MS
) -> OwnerResult:
    """Erase one owner in one transaction, then their image folders (module docstring)."""
    paths = store.paths
    _no_whole_wipe_pending(paths)
    marker = _owner_marker(paths, owner)
    wrote = committed = False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            conn.execute("PRAGMA secure_delete = ON")  # erased text does not linger in free pages
            with db.transaction(conn):
                ids = _session_ids(conn, owner)
                rows = _owner_rows(conn, owner, ids, delete=True)
                # An earlier run's folders whose sessions are gone count too.
                earlier = _listed(marker, paths, set()) if _lstat(marker) else []
                names = set(ids) | {p.name for p in earlier}
                if earlier:
                    live = conn.execute(
                        "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(sorted(names)),),
                    )
                    names -= {r[0] for r in live}
                folders = [
                    d
                    for sid in sorted(names)
                    if (d := images.session_dir(paths.images_dir, sid)) and _lstat(d)
                ]
                if folders:
                    _write_marker(
                        marker,
                        {
                            "version": MARKER_VERSION,
                            "action": "owner",
                            "owner": owner.label,
                            "started_at": now_iso(),
                            "pid": os.getpid(),
                            "paths": [str(p) for p in folders],
                        },
                    )
                    wrote = True
                _pause("commit")
            committed = True
    except BaseException:
        if wrote and not committed:  # rolled back: the folders stay with their sessions
            marker.unlink(missing_ok=True)
        raise
    try:
        _pause("images")
        removed = cascade.remove_image_folders(paths.images_dir, [p.name for p in folders])
        if _lstat(marker) is not None:
            marker.unlink()
            fs.fsync_dir(marker.parent)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted after erasing {owner.label}'s rows, before all their image folders",
            hint=f"run `kaja wipe --owner {owner.label}` again to finish",
        ) from None
    return OwnerResult(owner, rows, removed, _purge_index(store, timeout_ms))


def _purge_index(store: Store, timeout_ms: int) -> bool:
    """Merge the search index into one segment, so the erased words leave it.

    FTS4 deletes by adding markers: the old segments keep the terms until a
    merge reaches them. 'optimize' merges everything, holding the write lock
    for seconds on a large store, so it runs only while nobody else has the
    file open; otherwise the caller says how to finish. True if purged."""
    from kaja_cli.core import search_index

    path = store.paths.shared_db.path
    if db.holder(path) is not None:
        return False
    try:
        with store.writer(timeout_ms=timeout_ms) as conn:
            if search_index.state(conn) != search_index.READY:
                return True  # no index of kaja's: nothing holds the words
            conn.execute("PRAGMA secure_delete = ON")
            with db.transaction(conn):
                conn.execute(
                    f"INSERT INTO {search_index.FTS_TABLE}({search_index.FTS_TABLE}) VALUES ('optimize')"
                )
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except Busy:
        return False
    return True
