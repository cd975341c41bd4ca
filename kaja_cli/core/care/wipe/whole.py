"""A whole `kaja wipe`: one plan (`plan()`, read-only) and one execution
(`execute()`), in the order the package docstring gives, for both engines.

What is stored differs for real between them, and comes from the store's
engine part (`store.part(__package__)`: `local` or `server`): `stored()`
plans it (the database files, or kaja's objects in its schema on the
server), `prepare()` readies it before the marker is written, `drop()` drops
what is no path. Everything else is the same paths on this machine, planned
and deleted here: `files/` beside the shared file, the settings, the markers
interrupted commands left, and the folders that end up empty.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from kaja_cli.core.care.wipe.leftovers import interrupted, listed_paths, marker_path
from kaja_cli.core.care.wipe.model import (
    SERVER_KINDS,
    Item,
    Kept,
    Kind,
    Part,
    Refusal,
    WipePlan,
    WipeResult,
)
from kaja_cli.core.care.wipe.reach import empty_after, image_item, is_home_or_above, lstat_or_none
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, markers
from kaja_cli.core.store.markers import Operation
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, Failed, Interrupted, KajaError, Refused

_LINK = "(a link: its target stays)"
# The markers a whole wipe finishes along with its own (not a restore's: that
# one is `kaja restore --finish`'s).
_FINISHED = (Operation.WIPE, Operation.OWNER, Operation.PRUNE, Operation.DEMO)


def _files_items(
    paths: Paths, known: set[str] | None, listed: set[str]
) -> tuple[list[Item], list[Kept]]:
    """What goes from `files/` beside the shared file, and what stays.

    An image folder goes when the store knows its session, or when an
    interrupted command listed it (`listed`).
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
    """What `kaja wipe` would delete (or drop), keep and refuse; reads, never writes."""
    part = store.part(__package__)
    paths = store.paths
    stored = part.stored(store)
    items, kept, refusals = list(stored.items), list(stored.kept), list(stored.refusals)

    found = markers.pending(paths, *_FINISHED)
    refusals += [Refusal(m.path, why) for m in found if (why := markers.refusal(m)) is not None]
    live = set(stored.known) if stored.known is not None else None
    # What interrupted wipes and prunes listed (a prune's image folders of gone sessions).
    listed = [p for m in found if m.operation is not Operation.DEMO
              for p in listed_paths(m, paths, live)]  # fmt: skip
    listed_names = {p.name for p in listed if p.parent == paths.images_dir}
    if any(m.operation is Operation.DEMO for m in found):
        # A demo cut short: it wrote the whole store, images before the
        # sessions that name them were committed.
        listed_names |= _image_folder_names(paths)
    leftover_markers = [m.path for m in found] + markers.temporaries(paths, *_FINISHED)
    file_items, file_kept = _files_items(paths, stored.known, listed_names)
    items += _semantic_items(paths) + file_items
    kept += file_kept
    items, more_kept, more_refusals = _settings_items(paths, items, settings, listed)
    kept += more_kept
    refusals += more_refusals
    items += _emptied_folders(paths, items, leftover_markers, settings)
    items.sort(key=lambda i: i.stage)
    return WipePlan(items, kept, refusals, marker_path(paths), interrupted(paths, live),
                    leftover_markers, needs_yes=part.NEEDS_YES)  # fmt: skip


def _semantic_items(paths: Paths) -> list[Item]:
    """kaja's semantic index and its companions: vectors of the messages that go."""
    from kaja_cli.core.store.paths import companions

    out = []
    for p in (paths.semantic_db, *companions(paths.semantic_db)):
        st = lstat_or_none(p)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            what = "semantic index" + ("" if p == paths.semantic_db else f" {p.name[11:]}")
            kind = Kind.LINK if stat.S_ISLNK(st.st_mode) else Kind.FILE
            out.append(Item(p, what, kind, Part.SEMANTIC, st.st_size, 1))
    return out


def _settings_items(
    paths: Paths, items: list[Item], settings: bool, listed: list[Path]
) -> tuple[list[Item], list[Kept], list[Refusal]]:
    """`items` with the settings file (and its lock) when asked for, or when an
    interrupted `wipe --settings` listed it; else it is kept."""
    sp = paths.settings_file.path
    st = lstat_or_none(sp)
    if not (settings or sp in listed):
        return items, [Kept(sp, "settings stay (--settings deletes them too)")] if st else [], []
    if st is None or sp in {i.path for i in items}:
        return items, [], []
    if stat.S_ISLNK(st.st_mode):
        return [*items, Item(sp, f"settings file {_LINK}", Kind.LINK, Part.SETTINGS)], [], []
    if stat.S_ISREG(st.st_mode):
        file = Item(sp, "settings file", Kind.FILE, Part.SETTINGS, st.st_size, 1)
        return [*items, file, *_settings_lock(sp)], [], []
    return items, [], [Refusal(sp, f"{sp} is not a file, not a settings file")]


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


def _emptied_folders(
    paths: Paths, items: list[Item], leftover_markers: list[Path], settings: bool
) -> list[Item]:
    """Folders that end up empty: files/images and files/, then (after the
    marker) the state dir and, with the settings, their folder."""
    gone = {i.path for i in items} | set(leftover_markers) | {marker_path(paths)}
    folders = [
        (paths.images_dir, "files/images/ (empty by then)", Part.FILES),
        (paths.files_dir, "files/ (empty by then)", Part.FILES),
        (paths.state_dir.path, "state dir (empty by then)", Part.PARENTS),
    ]
    if settings:
        folders.append((paths.settings_file.path.parent, "settings folder (empty by then)",
                        Part.PARENTS))  # fmt: skip
    out = []
    for folder, what, group in folders:
        if folder in gone or is_home_or_above(folder) or not empty_after(folder, gone):
            continue
        out.append(Item(folder, what, Kind.FOLDER, group))
        gone.add(folder)
    return out


def _refused_before_any_drop(error: BaseException) -> bool:
    """Whether the server's drop certainly changed nothing: kaja refused it, or
    the server refused a statement in its transaction (a role that does not
    own the tables, a read-only one, a lock). Not a connection lost or a
    server that stopped answering, perhaps at the commit: the marker stays
    for the next wipe to finish."""
    if isinstance(error, (Refused, Busy)):
        return True
    state = getattr(error, "sqlstate", "") or ""
    return isinstance(error, KajaError) and bool(state) and not state.startswith(("08", "57P"))


def execute(store: Store, plan: WipePlan) -> WipeResult:
    """Delete (and drop) what `plan` lists, in its order (see the package docstring)."""
    part = store.part(__package__)
    # 1. What is stored made ready while nothing is deleted yet (locally: each
    # database folded into one self-contained file).
    part.prepare(store, plan)
    files = [i for i in plan.items if i.kind not in SERVER_KINDS]
    # 2. The marker, durable before the first deletion.
    wrote = bool(files) and plan.marker.parent.is_dir()
    if wrote:
        markers.begin(plan.marker, Operation.WIPE, paths=[str(i.path) for i in files])
    left_over = list(dict.fromkeys(([plan.marker] if wrote else []) + plan.markers))
    deleted: list[Item] = []
    kept = list(plan.kept)
    server = [i for i in plan.items if i.kind in SERVER_KINDS]
    if server:
        try:
            dropped, why = part.drop(store, server)
        except BaseException as e:
            if wrote and _refused_before_any_drop(e):
                markers.finish(plan.marker)  # nothing to finish: nothing was begun
            raise
        deleted += dropped
        kept += why
    left = len(files)
    try:
        for group, items in _by_group(files):
            if group is Part.PARENTS:  # 4. the markers, before the folder holding them
                markers.finish(*left_over)
                left_over = []
            first = items[0]
            if first.database is not None and (pid := db.holder(first.path)) is not None:
                # Folding and the marker took a moment: a process that opened
                # the database meanwhile keeps it (and the wipe stays unfinished).
                raise Busy(
                    f"{first.path} was opened by process {pid} during the wipe: stopped before"
                    " deleting it",
                    hint="close Kaja (and the Telegram bot), then run `kaja wipe` again to finish",
                )
            with markers.sigint_held():  # 3. a database and its journal go together
                for n, item in enumerate(items):
                    markers.checkpoint(item.path.name)
                    if _remove(item):
                        deleted.append(item)
                    elif lstat_or_none(item.path) is not None:
                        kept.append(Kept(item.path, "changed since the plan: not deleting it"))
                    left -= 1
                    if n == 0 and item.database is not None:
                        fs.fsync_dir(item.path.parent)  # the database gone before its journal
            fs.fsync_dir(items[-1].path.parent)
        markers.finish(*left_over)
    except KeyboardInterrupt:
        raise Interrupted(
            f"wipe interrupted: {left} of {plural(len(files), 'path')}"
            f" {noun(left, 'remains', 'remain')}",
            hint=f"run `{_again(plan)}` again to finish",
        ) from None
    except OSError as e:
        raise Failed(
            f"cannot delete {e.filename or 'a file'}: {e.strerror or e}",
            hint=f"fix that, then run `{_again(plan)}` again to finish",
        ) from e
    return WipeResult(deleted, kept)


def _again(plan: WipePlan) -> str:
    return "kaja wipe --yes" if plan.needs_yes else "kaja wipe"


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
