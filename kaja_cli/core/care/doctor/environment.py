"""Checks of the environment: versions (kaja, Python, SQLite, FTS4, platform)
and free disk space where the files live."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import sys
from pathlib import Path

from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.engine.fs import human_size

# Free space: below the first Kaja cannot save (an error); below the second, or
# below what the databases take (a VACUUM needs as much again), a warning.
DISK_ERROR_BYTES = 50 * 1000 * 1000
DISK_WARN_BYTES = 500 * 1000 * 1000


def fts4_available() -> bool:
    """FTS4 with the unicode61 tokenizer kaja's index uses is compiled into SQLite."""
    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(
                'CREATE VIRTUAL TABLE t USING fts4(content, tokenize=unicode61 "remove_diacritics=2")'
            )
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return True


@functools.cache
def versions() -> dict[str, str | bool]:
    from kaja_cli import __version__

    v = sys.version_info
    return {
        "kaja": __version__,
        "python": f"{v.major}.{v.minor}.{v.micro}",
        "sqlite": sqlite3.sqlite_version,
        "fts4": fts4_available(),
        "platform": platform_name(),
    }


def platform_name() -> str:
    """platform.platform()'s answer, without its ~15 ms import and probing on POSIX."""
    if not hasattr(os, "uname") or not hasattr(os, "confstr"):
        import platform

        return platform.platform()
    u = os.uname()  # never the node name: that is the host name
    name = f"{u.sysname}-{u.release}-{u.machine}"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        libc = None
    return f"{name}-with-{libc.replace(' ', '')}" if libc else name


@check(
    "versions", Group.ENVIRONMENT, "kaja, Python, SQLite and platform versions; FTS4 compiled in"
)
def check_versions(ctx: Context) -> Check:
    v = versions()
    summary = f"kaja {v['kaja']}, Python {v['python']}, SQLite {v['sqlite']}"
    details = [f"platform: {v['platform']}"]
    if not v["fts4"]:
        return Check(
            "versions",
            Group.ENVIRONMENT,
            ERROR,
            summary + ": FTS4 is not compiled in",
            [*details, "kaja's search index needs SQLite with FTS4 and the unicode61 tokenizer"],
            fix="use a Python whose sqlite3 module has FTS4 (python.org and distribution builds do)",
        )
    return Check("versions", Group.ENVIRONMENT, OK, summary + " with FTS4", details)


@check("disk-space", Group.ENVIRONMENT, "free space where the files live")
def check_disk_space(ctx: Context) -> list[Check]:
    import shutil

    targets: dict[int, Path] = {}
    for folder in (ctx.paths.shared_db.path.parent, ctx.paths.state_dir.path):
        existing = _existing_ancestor(folder)
        try:
            targets.setdefault(existing.stat().st_dev, existing)
        except OSError:
            continue
    total_db = 0
    for f in ctx.databases():
        with contextlib.suppress(OSError):
            total_db += f.path.stat().st_size if f.path.is_file() else 0
    out = []
    for i, folder in enumerate(targets.values()):
        cid = "disk-space" if i == 0 else f"disk-space.{i + 1}"
        try:
            usage = shutil.disk_usage(folder)
        except OSError as e:
            out.append(
                Check(
                    cid, Group.ENVIRONMENT, WARN, f"free space on {folder}: unknown ({e.strerror})"
                )
            )
            continue
        free = usage.free
        summary = f"{human_size(free)} free on the disk holding {folder}"
        details = [f"{human_size(usage.total)} in all, {free * 100 // max(usage.total, 1)}% free"]
        if free < DISK_ERROR_BYTES:
            out.append(Check(cid, Group.ENVIRONMENT, ERROR, summary + ": Kaja cannot save", details,
                             fix="free some disk space"))  # fmt: skip
        elif free < DISK_WARN_BYTES or free < total_db:
            details.append(
                f"the databases take {human_size(total_db)}; a VACUUM needs as much again"
            )
            out.append(Check(cid, Group.ENVIRONMENT, WARN, summary + ": running low", details,
                             fix="free some disk space"))  # fmt: skip
        else:
            out.append(Check(cid, Group.ENVIRONMENT, OK, summary, details))
    return out


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not p.exists() and p.parent != p:
        p = p.parent
    return p
