"""The images checks: folders of sessions that no longer exist, files
messages refer to that are gone, files whose content no longer matches their
sha256 name."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from pathlib import Path

from kaja_cli.core.care.doctor.common import MAX_LISTED, listed, quote, safe
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
    needs_shared=True,
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
    out.append(_image_content(scan))
    return out


def _orphan_folders(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    cid = "images.orphan-folders"
    orphans = [
        folder
        for sid, folder in scan.folders.items()
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None
    ]
    if not orphans:
        return Check(
            cid,
            Group.IMAGES,
            OK,
            f"no image folders of missing sessions ({plural(len(scan.folders), 'folder')})",
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


def _missing_files(ctx: Context, conn: sqlite3.Connection, scan: ImageScan) -> Check:
    cid = "images.missing-files"
    present = {(sid, p.name.split(".", 1)[0]) for sid, p in scan.files}
    images_dir = ctx.paths.images_dir
    referenced = unsafe = 0
    gone: list[Path] = []
    for sid, parts in conn.execute("SELECT sessionId, parts FROM messages WHERE parts IS NOT NULL"):
        for part in images.image_parts(parts):
            referenced += 1
            path = images.image_path(images_dir, sid, part.sha256, part.mime)
            if path is None:
                unsafe += 1
            elif (sid, part.sha256) not in present:
                gone.append(path)
    details = [f"{plural(unsafe, 'reference')} with unsafe names ignored"] if unsafe else []
    if not gone:
        return Check(cid, Group.IMAGES, OK,
                     f"every image messages refer to is there ({plural(referenced, 'reference')})", details)  # fmt: skip
    return Check(
        cid, Group.IMAGES, WARN,
        f"{len(gone)} of {plural(referenced, 'image file')} messages refer to are gone",
        [*details, "resume flags them as missing; restore them from a backup if you have one", *listed(gone)],
    )  # fmt: skip


def _image_content(scan: ImageScan) -> Check:
    cid = "images.content"
    changed: list[Path] = []
    unnamed: list[Path] = []
    for _sid, path in scan.files:
        m = _SHA_NAME.match(path.name)
        if m is None:
            unnamed.append(path)
            continue
        try:
            with os.fdopen(fs.open_regular(path), "rb") as f:  # never a FIFO swapped in
                digest = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            unnamed.append(path)
            continue
        if digest != m.group(1):
            changed.append(path)
    strays = scan.strays
    if changed:
        return Check(
            cid, Group.IMAGES, ERROR,
            f"{len(changed)} of {plural(len(scan.files), 'image file')} no longer match their sha256 name",
            ["the file was changed or damaged after it was saved", *listed(changed)],
            fix="restore them from a backup",
        )  # fmt: skip
    if unnamed or strays:
        odd = unnamed + strays
        return Check(cid, Group.IMAGES, WARN,
                     f"{plural(len(odd), 'entry', 'entries')} in the images folder not named <session>/<sha256>.<ext>",
                     ["kaja ignores them", *listed(odd)])  # fmt: skip
    return Check(
        cid,
        Group.IMAGES,
        OK,
        f"{plural(len(scan.files), 'image file')}, each matching its sha256 name",
    )
