"""Files and folders as kaja touches them: private (0700 folders, 0600 files),
written atomically, and opened only when they are regular files.

The one file helper of SPEC §3: `open_regular` is how kaja opens any file it
did not just create. A plain `open()` of a FIFO waits forever for a writer,
and opening a device can have effects of its own, so the path is looked at
first (`stat`), opened non-blocking, and looked at again through the
descriptor (`fstat`: it may have been swapped in between).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


_WHAT = {
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def what_is(st: os.stat_result) -> str:
    """How a person names what a stat result describes: "a FIFO", "a folder"…"""
    return _WHAT.get(stat.S_IFMT(st.st_mode), "a regular file")


class NotRegularFile(OSError):
    """A path kaja would open is not a regular file (a FIFO, a device, a folder)."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(f"{path} is {what}, not a regular file")
        self.filename = str(path)
        self.strerror = f"{what}, not a regular file"
        self.what = what


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """A descriptor to `path`, only if it is a regular file (never blocks).

    FileNotFoundError when there is nothing there; NotRegularFile for a FIFO,
    a device, a socket or a folder, which are never opened at all.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, what_is(st))
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # swapped since the stat
        os.close(fd)
        raise NotRegularFile(path, what_is(st))
    return fd


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file; None if there is none (see `open_regular`)."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def regular_or_missing(path: Path) -> str | None:
    """None when `path` is a regular file (a link to one counts) or absent; else what it is."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None if not os.path.islink(path) else "a dangling symbolic link"
    except OSError:
        return None  # can't be looked at: opening it fails the ordinary way
    return None if stat.S_ISREG(st.st_mode) else what_is(st)


def beside(path: Path, suffix: str) -> Path:
    """`kaja.db` → `kaja.db-wal`: a sibling named by a suffix. Works for any
    path a person can type, `/` included (whose name is empty)."""
    return Path(os.fspath(path) + suffix)


# A name kaja gives a folder or file from a value someone else wrote (a
# session's image folder is its id): one path component, nothing hidden.
_SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"


def safe_name(name: object) -> bool:
    """A single path component with no separators, no `..`, nothing hidden."""
    import re  # compiled once, on first use (re's own cache): not at start-up

    return isinstance(name, str) and re.match(_SAFE_NAME, name) is not None and ".." not in name


def is_home_or_above(path: Path) -> bool:
    """The home folder, one of its ancestors, or a filesystem root."""
    home = Path(os.path.normpath(Path.home()))
    path = Path(os.path.normpath(path))
    return path == path.parent or path == home or path in home.parents


def home_or_above(path: Path) -> str:
    """How to name such a folder: "the root folder", "your home folder", …"""
    path = Path(os.path.normpath(path))
    if path == path.parent:
        return "the root folder"
    if path == Path(os.path.normpath(Path.home())):
        return "your home folder"
    return "a folder holding your home folder"


def ensure_private_dir(path: Path) -> None:
    """Create `path` and any missing parents as 0700 (never loosening existing ones)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)  # the umask may have taken bits away; never adds them


def create_private_file(path: Path) -> bool:
    """Create an empty 0600 file if there is none; True if this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def write_private_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` (0600) atomically: a reader sees all of it or nothing."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_dir(path: Path) -> None:
    """Make the creations, renames and deletions inside `path` durable (best effort)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def flush_trees(roots: list[Path]) -> None:
    """Make everything written below `roots` durable, files and folders' entries.

    On Linux, one `syncfs` per file system: a single barrier, where an fsync
    per file costs a journal commit each (a restore of 20,000 images spent
    minutes on them). Elsewhere, every file and folder below is fsynced.
    OSError when the file system reports a write it lost (EIO, ENOSPC).
    """
    syncfs = _syncfs()
    if syncfs is None:
        for root in roots:
            _fsync_tree(root)
        return
    devices: dict[int, Path] = {}
    for root in roots:
        devices.setdefault(os.lstat(root).st_dev, root)
    for root in devices.values():
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # a folder or a file
        try:
            if syncfs(fd) != 0:
                import ctypes

                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(root))
        finally:
            os.close(fd)


def _syncfs():  # type: ignore[no-untyped-def]
    """libc's syncfs(2), or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


FALLOC_FL_INSERT_RANGE = 0x20  # linux/falloc.h


def insert_at_start(fd: int, length: int) -> bool:
    """Make `length` bytes of room at the start of the open file `fd`, shifting
    its contents up without copying them (Linux's fallocate(2) with
    FALLOC_FL_INSERT_RANGE: ext4 and XFS; `length` a multiple of the file
    system's block size). False, the file untouched, where the file system or
    the platform cannot (tmpfs, btrfs, NFS, not Linux): the caller copies instead.
    """
    fallocate = _fallocate()
    if fallocate is None:
        return False
    return fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, length) == 0


def _fallocate():  # type: ignore[no-untyped-def]
    """libc's fallocate(2), or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        f = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return None
    f.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    f.restype = ctypes.c_int
    return f


def _fsync_tree(root: Path) -> None:
    files = [str(root)] if not root.is_dir() else []
    for folder, _dirs, names in os.walk(root):
        files += [os.path.join(folder, name) for name in names]
        fsync_dir(Path(folder))
    for path in files:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(root.parent)


def disk_full(error: BaseException) -> bool:
    """Whether `error` is the file system saying it has no room (or no quota) left."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def tree_size(path: Path) -> tuple[int, int]:
    """(bytes, files) below `path`, not following symlinks; (0, 0) if missing."""
    total = files = 0
    if path.is_symlink() or path.is_file():
        st = path.lstat()
        return st.st_size, 1
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
                files += 1
            except OSError:
                continue
    return total, files


def human_size(n: int | None) -> str:
    """1.2 MB, 840 B: a size at a glance (decimal units, like `ls -h --si`)."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"
