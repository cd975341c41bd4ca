"""A whole `kaja wipe`: the plan (`plan()`, read-only) and its execution
(`execute()`), in the order the package docstring gives."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kaja_cli.core.care.wipe import hook
from kaja_cli.core.care.wipe.markers import (
    MARKER_VERSION,
    demo_marker,
    interrupted,
    listed_paths,
    marker_path,
    markers_of,
    not_a_marker,
    stale_temporaries,
    write_marker,
)
from kaja_cli.core.care.wipe.model import Item, Kept, Kind, Part, Refusal, WipePlan, WipeResult
from kaja_cli.core.care.wipe.reach import (
    empty_after,
    image_item,
    is_home_or_above,
    lstat_or_none,
    read_database,
    why_busy,
    why_unsafe,
)
from kaja_cli.core.clock import now_iso
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, guard
from kaja_cli.core.store.paths import Paths, companions
from kaja_cli.core.store.registry import DATABASES, Database
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, Failed, Interrupted

_LINK = "(a link: its target stays)"


def _database_items(path: Path, name: Database) -> tuple[list[Item], list[Refusal]]:
    """The database, then its companions (the order they go in)."""
    label = DATABASES[name].noun
    items, refusals = [], []
    for p in [path, *companions(path)]:
        st = lstat_or_none(p)
        if st is None:
            continue
        what = label if p == path else f"{label} {p.name[len(path.name) :]}"
        if stat.S_ISDIR(st.st_mode):
            if p != path:  # the database itself is refused by why_unsafe
                refusals.append(Refusal(p, f"{p} is a folder where SQLite keeps a file"))
            continue
        kind = Kind.LINK if stat.S_ISLNK(st.st_mode) else Kind.FILE
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
    st = lstat_or_none(files_dir)
    if st is None:
        return [], []
    if stat.S_ISLNK(st.st_mode):
        return [Item(files_dir, f"files/ {_LINK}", Kind.LINK, Part.FILES, st.st_size, 1)], []
    if not stat.S_ISDIR(st.st_mode):
        return [], [Kept(files_dir, "not a folder: kaja did not create it")]
    items: list[Item] = []
    kept = [
        Kept(files_dir / name, "not something kaja creates in files/")
        for name in sorted(os.listdir(files_dir))
        if name != "images"
    ]
    ist = lstat_or_none(images_dir)
    if ist is not None and stat.S_ISLNK(ist.st_mode):
        items.append(Item(images_dir, f"images/ {_LINK}", Kind.LINK, Part.IMAGES, ist.st_size, 1))
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
            item = image_item(entry)
            if item is None:
                kept.append(Kept(entry, "a file where kaja keeps folders"))
            else:
                items.append(item)
    return items, kept


def _image_folder_names(paths: Paths) -> set[str]:
    try:
        return {n for n in os.listdir(paths.images_dir) if images.safe_name(n)}
    except OSError:
        return set()


def plan(store: Store, *, settings: bool = False) -> WipePlan:
    """What `kaja wipe` would delete, keep and refuse; reads, never writes."""
    if store.cloud:
        from kaja_cli.core.care.wipe import cloud

        return cloud.plan(store, settings=settings)
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
        unsafe = why_unsafe(path)
        busy = None if unsafe else why_busy(path)
        refusal, ids = (unsafe or busy), set()
        if refusal is None:
            refusal, ids = read_database(path, file)
        if refusal is not None:
            refusals.append(refusal)
        if file.name is Database.SHARED:
            known = ids
        db_items, db_refusals = _database_items(path, file.name)
        items += db_items
        refusals += db_refusals

    markers = markers_of(paths)
    # A prune cut short after a commit: its marker lists image folders of gone sessions.
    pruning = fs.beside(paths.shared_db.path, guard.PRUNE_SUFFIX)
    pruned = [pruning] if lstat_or_none(pruning) is not None else []
    for m in markers + pruned:
        if (what := not_a_marker(m)) is not None:
            kind = "prune" if m in pruned else "wipe"
            refusals.append(
                Refusal(m, f"{m} is {what}, not a {kind} marker kaja wrote: move it aside")
            )
    live = set(known) if known is not None else None
    demo = demo_marker(paths)
    leftover_markers = markers + ([demo] if lstat_or_none(demo) is not None else [])
    leftover_markers += pruned
    leftover_markers += [*stale_temporaries(marker_path(paths)), *stale_temporaries(demo)]
    listed = [p for m in markers + pruned for p in listed_paths(m, paths, live)]
    listed_names = {p.name for p in listed if p.parent == paths.images_dir}
    if lstat_or_none(demo) is not None:
        # A demo cut short: it wrote the whole store, images before the
        # sessions that name them were committed.
        listed_names |= _image_folder_names(paths)
    file_items, kept = _files_items(paths, known, listed_names)
    items += file_items
    have = {i.path for i in items}
    sp = paths.settings_file.path
    if settings or sp in listed:  # an interrupted wipe --settings: finish that too
        st = lstat_or_none(sp)
        if st is not None and sp not in have:
            if stat.S_ISLNK(st.st_mode):
                items.append(Item(sp, f"settings file {_LINK}", Kind.LINK, Part.SETTINGS))
            elif stat.S_ISREG(st.st_mode):
                items.append(Item(sp, "settings file", Kind.FILE, Part.SETTINGS, st.st_size, 1))
                items += _settings_lock(sp)
            else:
                refusals.append(Refusal(sp, f"{sp} is not a file, not a settings file"))
    elif lstat_or_none(sp) is not None:
        kept.append(Kept(sp, "settings stay (--settings deletes them too)"))

    # Folders that end up empty: files/images and files/, then (after the
    # marker) the state dir and, with the settings, their folder.
    marker = marker_path(paths)
    gone = {i.path for i in items} | set(leftover_markers) | {marker}
    folders = [
        (paths.images_dir, "files/images/ (empty by then)", Part.FILES),
        (paths.files_dir, "files/ (empty by then)", Part.FILES),
        (paths.state_dir.path, "state dir (empty by then)", Part.PARENTS),
    ]
    if settings:
        folders.append((sp.parent, "settings folder (empty by then)", Part.PARENTS))
    for folder, what, group in folders:
        if folder in gone or is_home_or_above(folder) or not empty_after(folder, gone):
            continue
        items.append(Item(folder, what, Kind.FOLDER, group))
        gone.add(folder)

    items.sort(key=lambda i: i.stage)
    return WipePlan(items, kept, refusals, marker, interrupted(paths), leftover_markers)


def _settings_lock(settings_file: Path) -> list[Item]:
    """`.settings.toml.lock`, the sidecar `kaja config set` locks: it goes with
    the file it guards (only a regular file; a link's target's lock stays)."""
    lock = settings_file.with_name(f".{settings_file.name}.lock")
    st = lstat_or_none(lock)
    if st is None or not stat.S_ISREG(st.st_mode):
        return []
    return [
        Item(lock, "settings lock (of `kaja config set`)", Kind.FILE, Part.SETTINGS, st.st_size, 1)
    ]


def execute(store: Store, plan: WipePlan) -> WipeResult:
    """Delete what `plan` lists, in its order (see the package docstring)."""
    if store.cloud:
        from kaja_cli.core.care.wipe import cloud

        return cloud.execute(store, plan)
    paths = store.paths
    files = {f.path: f for f in reversed(paths.databases())}  # the first file of a path wins
    dbs = list(dict.fromkeys(f.path for f in paths.databases()))
    # It may have been minutes since the plan (the question): look again.
    for path in dbs:
        if (busy := why_busy(path)) is not None:
            raise busy.error()
    # 1. Every database self-contained while nothing is deleted yet (a
    # damaged or read-only one can't be: step 3's order still keeps it safe).
    for path in dbs:
        if db.classify(path) == "sqlite" and not path.is_symlink():
            db.fold_journal(path, files[path])
    # 2. The marker, durable before the first deletion.
    wrote = bool(plan.items) and plan.marker.parent.is_dir()
    if wrote:
        write_marker(
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
        for group, items in _by_group(plan.items):
            if group is Part.PARENTS:  # 4. the marker, before the folder holding it
                _remove_markers(markers)
                markers = []
            first = items[0]
            if first.database is not None and (pid := db.holder(first.path)) is not None:
                # Folding and the marker took a moment: a process that opened
                # the database meanwhile keeps it (and the wipe stays unfinished).
                raise Busy(
                    f"{first.path} was opened by process {pid} during the wipe: stopped before"
                    " deleting it",
                    hint="close Kaja (and the Telegram bot), then run `kaja wipe` again to finish",
                )
            with _sigint_held():  # 3. a database and its journal go together
                for n, item in enumerate(items):
                    hook.checkpoint(item.path.name)
                    if _remove(item):
                        deleted.append(item)
                    elif lstat_or_none(item.path) is not None:
                        kept.append(Kept(item.path, "changed since the plan: not deleting it"))
                    left -= 1
                    if n == 0 and item.database is not None:
                        fs.fsync_dir(item.path.parent)  # the database gone before its journal
            fs.fsync_dir(items[-1].path.parent)
        _remove_markers(markers)
    except KeyboardInterrupt:
        raise Interrupted(
            f"wipe interrupted: {left} of {plural(len(plan.items), 'path')}"
            f" {noun(left, 'remains', 'remain')}",
            hint="run `kaja wipe` again to finish",
        ) from None
    except OSError as e:
        raise Failed(
            f"cannot delete {e.filename or 'a file'}: {e.strerror or e}",
            hint="fix that, then run `kaja wipe` again to finish",
        ) from e
    return WipeResult(deleted, kept)


def _by_group(items: list[Item]) -> Iterator[tuple[Database | Part, list[Item]]]:
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
        hook.checkpoint(m.name)
        m.unlink(missing_ok=True)
    if markers:
        fs.fsync_dir(markers[0].parent)


def _remove(item: Item) -> bool:
    """Delete one planned path as it is now; never follows a symlink."""
    st = lstat_or_none(item.path)
    if st is None:
        return False
    if stat.S_ISDIR(st.st_mode):
        if item.kind is Kind.TREE:
            shutil.rmtree(item.path)
            return True
        if item.kind is Kind.FOLDER:
            try:
                item.path.rmdir()
            except OSError:
                return False
            return True
        return False  # a folder where a file was planned: not ours
    if item.kind is Kind.FOLDER:
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
