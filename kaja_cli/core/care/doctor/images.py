"""The images checks: folders of sessions that no longer exist, files
messages refer to that are gone, files whose content no longer matches their
sha256 name."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import stat
from pathlib import Path

from kaja_cli.core.care.doctor.common import MAX_LISTED, quote, safe
from kaja_cli.core.care.doctor.context import Context, ImageScan
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.engine.fs import human_size
from kaja_cli.core.wording import plural

_SHA_NAME = re.compile(r"^([0-9a-f]{64})\.[A-Za-z0-9]+$")


@check(
    "images", Group.IMAGES,
    "image folders of missing sessions, files messages refer to that are gone, "
    "files whose content no longer matches their sha256 name",
    needs_shared=True, scans="reads every message's parts and every image file",
)  # fmt: skip
def check_images(ctx: Context) -> list[Check]:
    conn = ctx.conn("shared")
    assert conn is not None
    scan = ctx.images()
    tables = db.table_names(conn)
    out: list[Check] = []
    if "sessions" in tables:
        out.append(safe(lambda: _orphan_folders(ctx, conn, scan), "images.orphan-folders", Group.IMAGES,
                         "image folders"))  # fmt: skip
    if "messages" in tables:
        out.append(safe(lambda: _missing_files(ctx, conn, scan), "images.missing-files", Group.IMAGES,
                         "image references"))  # fmt: skip
    out.append(_image_content(ctx, scan))
    return out


class _Found:
    """Problems met while streaming: how many, and the first MAX_LISTED."""

    def __init__(self) -> None:
        self.count = 0
        self.first: list[Path] = []

    def add(self, path: Path) -> None:
        self.count += 1
        if len(self.first) < MAX_LISTED:
            self.first.append(path)

    def listed(self) -> list[str]:
        more = (
            [f"… and {self.count - len(self.first)} more"] if self.count > len(self.first) else []
        )
        return [str(p) for p in self.first] + more


def _orphan_folders(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    cid = "images.orphan-folders"
    # Every one is kept: the command that removes them names them all.
    orphans = [
        folder
        for sid, folder in ctx.image_folders()
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None
    ]
    if not orphans:
        return Check(
            cid,
            Group.IMAGES,
            OK,
            f"no image folders of missing sessions ({plural(scan.folders, 'folder')})",
        )
    from kaja_cli.core.engine.fs import tree_size

    size = sum(tree_size(f)[0] for f in orphans)
    command = "rm -r -- " + " ".join(quote(f) for f in orphans[:MAX_LISTED])
    if len(orphans) > MAX_LISTED:
        command += f"  (and {len(orphans) - MAX_LISTED} more: see the details in --json)"
    return Check(
        cid, Group.IMAGES, WARN,
        f"{plural(len(orphans), 'image folder')} of sessions that no longer exist ({human_size(size)})",
        ["doctor never deletes them: remove them yourself once you are sure"] + [str(f) for f in orphans],
        fix=command,
    )  # fmt: skip


def _present(folder: Path, sha256: str, path: Path) -> bool:
    """A regular file for this image in its session's folder: the name kaja
    gives it, or the same sha256 under another extension."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            return True
    if not folder.is_dir() or folder.is_symlink():
        return False
    try:
        with os.scandir(folder) as it:
            return any(e.name.split(".", 1)[0] == sha256 and e.is_file(follow_symlinks=False)
                       for e in it)  # fmt: skip
    except OSError:
        return False


def _missing_files(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    """Each image a message refers to, looked for on disk as the messages
    are read: nothing of the whole store held in memory."""
    cid = "images.missing-files"
    images_dir = ctx.paths.images_dir
    referenced = unsafe = 0
    gone = _Found()
    for sid, parts in conn.execute("SELECT sessionId, parts FROM messages WHERE parts IS NOT NULL"):
        for part in images.image_parts(parts):
            referenced += 1
            path = images.image_path(images_dir, sid, part.sha256, part.mime)
            if path is None:
                unsafe += 1
            elif not _present(path.parent, part.sha256, path):
                gone.add(path)
    details = [f"{plural(unsafe, 'reference')} with unsafe names ignored"] if unsafe else []
    if not gone.count:
        return Check(cid, Group.IMAGES, OK,
                     f"every image messages refer to is there ({plural(referenced, 'reference')})", details)  # fmt: skip
    return Check(
        cid, Group.IMAGES, WARN,
        f"{gone.count} of {plural(referenced, 'image file')} messages refer to are gone",
        [*details, "resume flags them as missing; restore them from a backup if you have one", *gone.listed()],
    )  # fmt: skip


def _image_content(ctx: Context, scan: ImageScan) -> Check:
    cid = "images.content"
    changed, unnamed = _Found(), _Found()
    for _sid, path in ctx.image_files():
        m = _SHA_NAME.match(path.name)
        if m is None:
            unnamed.add(path)
            continue
        try:
            with os.fdopen(fs.open_regular(path), "rb") as f:  # never a FIFO swapped in
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            unnamed.add(path)
            continue
        if digest != m.group(1):
            changed.add(path)
    strays = scan.strays
    if changed.count:
        return Check(
            cid, Group.IMAGES, ERROR,
            f"{changed.count} of {plural(scan.files, 'image file')} no longer match their sha256 name",
            ["the file was changed or damaged after it was saved", *changed.listed()],
            fix="restore them from a backup",
        )  # fmt: skip
    if unnamed.count or strays:
        odd = unnamed.first + strays[: max(0, MAX_LISTED - len(unnamed.first))]
        count = unnamed.count + len(strays)
        more = [f"… and {count - len(odd)} more"] if count > len(odd) else []
        return Check(cid, Group.IMAGES, WARN,
                     f"{plural(count, 'entry', 'entries')} in the images folder not named <session>/<sha256>.<ext>",
                     ["kaja ignores them", *map(str, odd), *more])  # fmt: skip
    return Check(
        cid,
        Group.IMAGES,
        OK,
        f"{plural(scan.files, 'image file')}, each matching its sha256 name",
    )
