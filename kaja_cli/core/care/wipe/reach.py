"""Where things are, and whether they are Kaja's to delete.

A database path is refused when it is a symlink, a folder (your home folder),
not a regular file, not SQLite, or SQLite that is not Kaja's (`guard.recognise`:
its tables and their columns), and while another process has it open. Reads are
read-only with a short lock wait.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kaja_cli.core.care.wipe.model import Item, Kind, Part, Refusal
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import guard
from kaja_cli.core.store.guard import is_home_or_above  # noqa: F401 - wipe's plan asks it too
from kaja_cli.core.store.registry import DatabaseFile
from kaja_cli.errors import ExitStatus, KajaError

READ_TIMEOUT_MS = 1000


def lstat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def size_of(path: Path) -> tuple[int, int]:
    try:
        return fs.tree_size(path)
    except OSError:
        return 0, 0


def why_unsafe(path: Path) -> Refusal | None:
    """Why `path` may not be deleted as a database (None: it may, or it is missing)."""
    st = lstat_or_none(path)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Refusal(
            path,
            f"{path} is a symbolic link: kaja wipe deletes no file through a link"
            f" (point --db at {os.path.realpath(path)} to wipe that)",
        )
    if stat.S_ISDIR(st.st_mode):
        what = guard.home_or_above(path) if guard.is_home_or_above(path) else "a folder"
        return Refusal(path, f"{path} is {what}, not a Kaja database")
    if not stat.S_ISREG(st.st_mode):
        return Refusal(path, f"{path} is {fs.what_is(st)}, not a Kaja database")
    if db.classify(path) == "other":
        return Refusal(path, f"{path} is not a SQLite database")
    return None


def read_database(path: Path, file: DatabaseFile) -> tuple[Refusal | None, set[str] | None]:
    """Refuse SQLite that is not Kaja's; the shared file's session ids.

    Ids are None when the file cannot be read (damaged): it still goes, but
    its image folders can't be told from anyone else's.
    """
    if db.classify(path) != "sqlite":
        return None, set()
    try:
        # An interrupted write is rolled back first (in a file that is Kaja's):
        # until then its sessions, and so their image folders, can't be known.
        recover = guard.may_recover(file)
        with db.open_read(path, timeout_ms=READ_TIMEOUT_MS, recover=recover) as conn:
            verdict = guard.recognise(conn, file)
            if not verdict.kajas:
                return Refusal(path, str(guard.not_kajas(path, verdict, file).message)), None
            tables = set(verdict.tables)
            ids: set[str] = set()
            if "sessions" in tables:
                ids |= {r[0] for r in conn.execute("SELECT id FROM sessions")}
            if "messages" in tables:
                ids |= {r[0] for r in conn.execute("SELECT DISTINCT sessionId FROM messages")}
            # An INTEGER id another program wrote names its folder as its digits.
            return None, {str(i) for i in ids if isinstance(i, str | int)}
    except KajaError:
        verdict = guard.recognised_as_found(path, file)  # not rolled back: whose is it?
        if verdict is not None and not verdict.kajas:
            return Refusal(path, str(guard.not_kajas(path, verdict, file).message)), None
        return None, None


def why_busy(path: Path) -> Refusal | None:
    """A refusal naming the process that has `path` (or its -shm) open."""
    pid = db.holder(path)
    if pid is None:
        return None
    who = f"process {pid}" if pid > 0 else "another process"
    return Refusal(
        path,
        f"Kaja (or the Telegram bot) is using the store: {path} is open in {who}",
        ExitStatus.BUSY,
    )


def image_item(folder: Path) -> Item | None:
    """A session's image folder as an item (a link: only the link), None if not a folder."""
    st = lstat_or_none(folder)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Item(
            folder, f"images of session {folder.name} (a link)", Kind.LINK, Part.IMAGES, 0, 1
        )
    if not stat.S_ISDIR(st.st_mode):
        return None
    size, count = size_of(folder)
    return Item(folder, f"images of session {folder.name}", Kind.TREE, Part.IMAGES, size, count)


def empty_after(folder: Path, gone: set[Path]) -> bool:
    """Whether `folder` is a real folder holding nothing but paths in `gone`."""
    st = lstat_or_none(folder)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    try:
        return all(folder / n in gone for n in os.listdir(folder))
    except OSError:
        return False
