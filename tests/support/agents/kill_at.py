"""`kaja`, killed with SIGKILL at an exact point: a tests-only launcher.

    python tests/support/agents/kill_at.py count REPORT -- ARGS…     # list the points
    python tests/support/agents/kill_at.py kill N REPORT -- ARGS…    # die right before point N
    python tests/support/agents/kill_at.py serve                     # many runs, one import

A *point* is every place where the files on disk can change, counted in the
order they happen while `kaja ARGS` runs:

- every system call SQLite makes that changes a file (`write`, `pwrite`,
  `pwrite64`, `ftruncate`, `fallocate`, `unlink`, `fchmod`, `mkdir`,
  `rmdir`, and an `open` that creates a file), counted through the
  unix VFS's own system-call table (`xSetSystemCall`), so a kill can land
  inside a statement: between the frames of a commit, in the middle of a
  checkpoint, or while `PRAGMA journal_mode` rewrites the header;
- every file-system change kaja's Python code makes (`os.remove`,
  `os.rename`/`replace`, `os.rmdir`, `os.mkdir`, `os.chmod`, each entry
  `shutil.rmtree` removes, an `open` that creates or truncates a file),
  counted through an audit hook (`sys.addaudithook`).

The -shm (SQLite's shared-memory index, rebuilt from the -wal after a crash)
is not counted: it changes through a memory map between any two points.

Of a run of writes to one file (one thread's, with no statement of that
thread and no other change in between: the frames of one commit, the pages
of one checkpoint) only the first two are *kill points*, numbered apart
(`point`): killed anywhere later in such a run, the file holds a prefix of
what the run writes, the same case for SQLite as after its second write
(`tests.support.faults.kill_points` says why). How long a run is is data: the query
profile a command writes at its end has more pages when a query was slow
(under load) or the command crossed a minute, so the Nth change is not the
same change from run to run, while the Nth kill point is.

`count` runs the command to its end and writes every change and statement
it met to REPORT (one JSON object a line: `kind`, `path`, `size`, `at`, `by`
— `sqlite` or `kaja` —, and `point`, its kill point number or 0). `kill N`
writes change N to REPORT and sends itself SIGKILL right before it happens:
nothing kaja (or SQLite) would do after that is done; `serve` jobs may name
kill point N instead (`"point": N`). Either way kaja runs exactly as the
console script does (`kaja_cli.app.main()`), in this real process; nothing
in kaja's code knows (no environment variable, no hook of its own).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading

_lock = threading.RLock()
# n: changes so far; point: kill points so far; target / target_point: where to die (0: count)
_state = {"n": 0, "point": 0, "target": 0, "target_point": 0, "busy": False}
_streak = {"thread": 0, "path": "", "len": 0}  # the run of writes under way (thread 0: none)
_events: list[dict] = []
_report = ""
_CREATE = os.O_CREAT | os.O_TRUNC
_WRITES = ("write", "pwrite", "pwrite64")


def _counting() -> bool:
    return _state["target"] == 0 and _state["target_point"] == 0


def _point(kind: str, path: str, size: int = 0, at: int = -1, by: str = "sqlite") -> None:
    """One change: counted, and the end of the process when it is the target."""
    with _lock:
        if _state["busy"]:
            return
        _state["n"] += 1
        thread = threading.get_ident()
        if kind in _WRITES and (_streak["thread"], _streak["path"]) == (thread, path):
            _streak["len"] += 1
        elif kind in _WRITES:
            _streak.update(thread=thread, path=path, len=1)
        else:
            _streak.update(thread=0, path="", len=1)
        point = 0
        if _streak["len"] <= 2:
            _state["point"] += 1
            point = _state["point"]
        event = {"kind": kind, "path": path, "size": size, "at": at, "by": by, "point": point}
        if _counting():
            _events.append(event)
            return
        if _state["n"] != _state["target"] and (not point or point != _state["target_point"]):
            return
        _state["busy"] = True
        fd = os.open(_report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (json.dumps(dict(event, n=_state["n"])) + "\n").encode())
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


# --- SQLite's system calls -------------------------------------------------------
class _Vfs(ctypes.Structure):
    """The head of `struct sqlite3_vfs` (https://sqlite.org/c3ref/vfs.html), version 3."""

    _fields_ = [
        ("iVersion", ctypes.c_int),
        ("szOsFile", ctypes.c_int),
        ("mxPathname", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("zName", ctypes.c_char_p),
        ("pAppData", ctypes.c_void_p),
        *((name, ctypes.c_void_p) for name in (
            "xOpen", "xDelete", "xAccess", "xFullPathname", "xDlOpen", "xDlError", "xDlSym",
            "xDlClose", "xRandomness", "xSleep", "xCurrentTime", "xGetLastError",
            "xCurrentTimeInt64", "xSetSystemCall", "xGetSystemCall", "xNextSystemCall",
        )),
    ]  # fmt: skip


_c = ctypes
_SSIZE = _c.c_ssize_t
_OFF = _c.c_int64
# name → (restype, argtypes) of the system calls that change a file
_SYSCALLS = {
    "open": (_c.c_int, (_c.c_char_p, _c.c_int, _c.c_int)),
    "write": (_SSIZE, (_c.c_int, _c.c_void_p, _c.c_size_t)),
    "pwrite": (_SSIZE, (_c.c_int, _c.c_void_p, _c.c_size_t, _OFF)),
    "pwrite64": (_SSIZE, (_c.c_int, _c.c_void_p, _c.c_size_t, _OFF)),
    "ftruncate": (_c.c_int, (_c.c_int, _OFF)),
    "fallocate": (_c.c_int, (_c.c_int, _OFF, _OFF)),
    "unlink": (_c.c_int, (_c.c_char_p,)),
    "fchmod": (_c.c_int, (_c.c_int, _c.c_uint)),
    "mkdir": (_c.c_int, (_c.c_char_p, _c.c_uint)),
    "rmdir": (_c.c_int, (_c.c_char_p,)),
}
_keep: list[object] = []  # the callbacks must outlive every connection


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"fd {fd}"


def _wrap(name: str, original: int) -> object:
    restype, argtypes = _SYSCALLS[name]
    proto = ctypes.CFUNCTYPE(restype, *argtypes, use_errno=True)
    real = proto(original)

    def call(*args):
        first = args[0]
        if name in ("open", "unlink", "mkdir", "rmdir"):
            path = first.decode(errors="replace")
            creates = name != "open" or (args[1] & os.O_CREAT and not os.path.exists(path))
        else:
            path = _fd_path(first)
            creates = True
        # Not the -shm (rebuilt after a crash), nor SQLite's temporary files
        # (sorting, VACUUM: deleted as soon as they are made).
        if creates and not path.endswith("-shm") and "etilqs_" not in path:
            size = args[2] if name in ("write", "pwrite", "pwrite64") else 0
            at = args[3] if name in ("pwrite", "pwrite64") else -1
            _point(name, path, size, at)
        return real(*args)

    wrapper = proto(call)
    _keep.extend((real, wrapper))
    return wrapper


def _count_sqlite_syscalls() -> None:
    import _sqlite3

    lib = ctypes.CDLL(_sqlite3.__file__)  # the very SQLite the sqlite3 module runs
    lib.sqlite3_vfs_find.restype = ctypes.POINTER(_Vfs)
    lib.sqlite3_vfs_find.argtypes = [ctypes.c_char_p]
    vfs = lib.sqlite3_vfs_find(None)
    get = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_Vfs), ctypes.c_char_p)(
        vfs.contents.xGetSystemCall
    )
    set_ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Vfs), ctypes.c_char_p, ctypes.c_void_p)(
        vfs.contents.xSetSystemCall
    )
    for name in _SYSCALLS:
        original = get(vfs, name.encode())
        if original:
            wrapper = _wrap(name, original)
            if set_(vfs, name.encode(), ctypes.cast(wrapper, ctypes.c_void_p)) != 0:
                raise RuntimeError(f"SQLite would not let {name} be counted")


# --- kaja's own file-system changes ---------------------------------------------------
_AUDITED = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.truncate",
            "os.symlink", "os.link", "os.chown"}  # fmt: skip


def _statement(sql: str) -> None:
    """A statement starts: not a point (nothing changes yet), but it ends the
    run of writes of its thread, so that the writes of two transactions are
    told apart; `count` notes it. Another thread's statement (doctor reads
    beside its writes) ends nothing: when it comes is a matter of timing."""
    with _lock:
        if _state["busy"]:
            return
        if _streak["thread"] == threading.get_ident():
            _streak.update(thread=0, path="", len=0)
        if _counting():
            _events.append({"kind": "sql", "path": " ".join(sql.split())[:80], "size": 0})


def _trace_statements() -> None:
    import sqlite3

    connect = sqlite3.connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(_statement)
        return conn

    sqlite3.connect = traced


def _audit(event: str, args: tuple) -> None:
    if event in _AUDITED:
        _point(event, str(args[0]), by="kaja")
    elif event == "open" and len(args) >= 3 and isinstance(args[0], (str, bytes, os.PathLike)):
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            flags = os.O_CREAT | (os.O_TRUNC if "w" in mode else 0)
        if not isinstance(flags, int) or not flags & _CREATE:
            return
        if flags & os.O_TRUNC or not os.path.exists(path):
            _point("open", os.fsdecode(path), by="kaja")


def _run(argv: list[str], target: int, report: str, target_point: int = 0) -> int:
    """`kaja ARGV` in this process, counting (targets 0) or dying at change
    `target` or kill point `target_point`."""
    global _report
    from kaja_cli.app import main as kaja

    _report = report
    _state.update(n=0, point=0, target=target, target_point=target_point, busy=False)
    _streak.update(thread=0, path="", len=0)
    _events.clear()
    sys.argv = ["kaja", *argv]
    try:
        kaja()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        if _counting():
            _state["busy"] = True
            with open(report, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(e) + "\n" for e in _events)
    return code


def _import_kaja() -> None:
    """Every module of kaja_cli, and what its commands import as they run
    (rich, tomlkit): a run forked from here spends its time on its work, not
    on imports. Safe as the in-process test runs are: kaja reads nothing from
    the environment at import time."""
    import importlib
    import pkgutil

    import kaja_cli.app

    for module in pkgutil.walk_packages(kaja_cli.__path__, "kaja_cli."):
        if not module.name.endswith("__main__"):  # that one runs kaja
            importlib.import_module(module.name)
    for name in ("rich.console", "rich.table", "rich.text", "tomlkit"):
        importlib.import_module(name)


def _serve() -> None:
    """One job a line on stdin, each run in a child forked from this process
    (kaja imported once): {"argv", "env", "target", "point", "report", "out", "err"};
    one line back per job: {"status"}, the child's exit status (-9: killed)."""
    _import_kaja()  # once, here: each child starts from it

    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.environ.clear()
                os.environ.update(job["env"])
                for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                        (1, job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                        (2, job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):  # fmt: skip
                    new = os.open(path, flags, 0o600)
                    os.dup2(new, fd)
                    os.close(new)
                code = _run(job["argv"], job["target"], job["report"], job.get("point", 0))
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)


def main() -> None:
    _count_sqlite_syscalls()
    _trace_statements()
    sys.addaudithook(_audit)
    if sys.argv[1:2] == ["serve"]:
        _serve()
        return
    split = sys.argv.index("--")
    mode, *rest = sys.argv[1:split]
    if mode == "count":
        (report,), target = rest, 0
    elif mode == "kill":
        target, report = int(rest[0]), rest[1]
    else:
        raise SystemExit(f"kill_at.py: unknown mode {mode!r}")
    raise SystemExit(_run(sys.argv[split + 1 :], target, report))


if __name__ == "__main__":
    main()
