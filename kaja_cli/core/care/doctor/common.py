"""Small helpers the checks share: quoting and listing for a person, owners
and processes, tightening permissions, the SQLite header, and `safe()`,
which turns a damaged or busy file into a finding instead of a crash."""

from __future__ import annotations

import os
import sqlite3
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kaja_cli.core.care.doctor.context import raise_if_interrupted
from kaja_cli.core.care.doctor.model import ERROR, WARN, Check, Group
from kaja_cli.core.engine import db
from kaja_cli.core.store import guard
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.store.registry import DATABASES, Database
from kaja_cli.core.wording import plural

MAX_LISTED = 20  # paths or ids listed in details before "… and N more"


def quote(path: Path | str) -> str:
    import shlex

    return shlex.quote(str(path))


def listed(items: list, fmt: Callable[[object], str] = str) -> list[str]:
    lines = [fmt(i) for i in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        lines.append(f"… and {len(items) - MAX_LISTED} more")
    return lines


def owner_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def in_use(pid: int) -> str:
    name = _process_name(pid) if pid > 0 else None
    who = f"process {pid}" + (f" ({name})" if name else "") if pid > 0 else "another process"
    return f"in use by {who}: Kaja is running"


def _tighten(path: Path, paths: Paths) -> str | None:
    """chmod go-rwx, nothing else (never adds a bit); None if the file has gone
    or is not kaja's to tighten (`guard.why_not_tighten`, asked again now).

    Through a symlink the target's mode is read and changed (a link's own
    mode is always 0777 and means nothing).
    """
    if guard.why_not_tighten(path, paths) is not None:
        return None
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    os.chmod(path, mode & ~0o077)
    return f"{path}: {mode:04o} → {mode & ~0o077:04o}"


def tighten_all(paths: list[Path], store: Paths) -> Callable[[], str]:
    def run() -> str:
        done = [d for d in (_tighten(p, store) for p in paths) if d is not None]
        if not done:
            return "the files to tighten are gone"
        if len(done) == 1:
            return f"tightened permissions of {done[0]}"
        return (
            f"tightened permissions of {plural(len(done), 'file or folder', 'files and folders')}"
        )

    return run


def db_group(name: str) -> str:
    return Group.SIDE_DATABASES if DATABASES[Database(name)].side else Group.SHARED_FILE


def safe(fn: Callable[[], Check | list[Check] | None], id: str, group: str, what: str):
    """Run a query-backed check; a damaged or busy file becomes a finding, not a crash."""
    try:
        return fn()
    except sqlite3.Error as e:
        raise_if_interrupted(e)
        text = str(e)
        low = text.lower()
        if "locked" in low or "busy" in low:
            return Check(id, group, WARN, f"{what}: not checked, the file is busy ({text})")
        if low.startswith(("no such column", "no such table")):
            # An older or newer schema: the schema check names what is missing.
            return Check(id, group, WARN, f"{what}: not checked: {text}",
                         ["written by an older or newer program: see the schema check"])  # fmt: skip
        return Check(id, group, ERROR, f"{what}: could not be read: {text}")


@dataclass(frozen=True)
class Header:
    """The 100-byte SQLite header (https://sqlite.org/fileformat.html)."""

    page_size: int
    wal: bool
    page_count: int | None  # None when the header's count is not valid
    freelist: int
    version: str
    read_version: int = 1  # the file format: above 2, no SQLite of today reads it
    write_version: int = 1  # above 2: readable, not writable
    schema_format: int = 4  # above 4: a newer SQLite's schema format

    @classmethod
    def read(cls, path: Path) -> Header | None:
        try:
            raw = db.read_head(path, 100)  # never open-and-close a database file
        except OSError:
            return None
        if len(raw) < 100 or raw[:16] != db.SQLITE_HEADER:
            return None
        (page_size,) = struct.unpack(">H", raw[16:18])
        page_size = 65536 if page_size == 1 else page_size
        change, pages = struct.unpack(">II", raw[24:32])
        (freelist,) = struct.unpack(">I", raw[36:40])
        valid_for, number = struct.unpack(">II", raw[92:100])
        (schema_format,) = struct.unpack(">I", raw[44:48])
        version = f"{number // 1000000}.{number // 1000 % 1000}.{number % 1000}"
        return cls(
            page_size=page_size,
            wal=raw[18] == 2 and raw[19] == 2,
            page_count=pages if pages and valid_for == change else None,
            freelist=freelist,
            version=version,
            read_version=raw[19],
            write_version=raw[18],
            schema_format=schema_format,
        )


def size_of(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
