"""Run `kaja` inside the test process, the way a fresh process would run it.

Starting Python and importing typer costs ~80 ms a run, and most tests only
look at what kaja prints and writes, which a call of `kaja_cli.app.main()` in
this process shows just as well (and coverage sees it). `run()` gives main()
what a new process would have, and takes back what a process exit would have
cleared:

- argv; the environment, replaced whole; stdin (/dev/null or the given text)
  and stdout/stderr (temporary files: never terminals, with the encodings a
  child of this interpreter gets); Python's default warning filters, warnings
  written to stderr;
- the exit status as a parent sees it: SystemExit's code, an uncaught
  exception is its traceback on stderr and status 1 (Ctrl-C: killed by SIGINT);
- the click command tree typer builds from `app` at every call (15 ms of
  a 21 ms run here: every parameter of every command, from signatures and
  type hints) is built once and kept: a process builds it once too, and
  click's commands keep nothing of an invocation (its Context does);
- afterwards the working folder, umask, signal handlers and mask and
  `sys.excepthook` (typer sets it) are put back, threads kaja started are
  waited for, and the descriptors of the "in use" probe are taken out of its
  cache (`kaja_cli.core.engine.db._probe_fds`: a process never closes them, since
  closing one drops the process's own SQLite locks) and closed when the test
  ends, when no connection of the test is open any more; what search kept of
  the stores' schemas, told by those files' inodes, goes with them.

What only a process shows, and this cannot: a lock the test itself holds
(POSIX locks never conflict within one process), signals, pipes, terminals,
start-up and imports, variables read by a starting interpreter (PYTHON*).
Tests of those run the real console script: `kaja.proc(...)`,
`@pytest.mark.process`, or `pytest --real-processes` for every run.
"""

from __future__ import annotations

import contextlib
import gc
import io
import locale
import os
import signal
import sys
import tempfile
import threading
import typing
import warnings
from pathlib import Path

# Imported once, before any test runs: app.py freezes what the garbage
# collector tracks at import (start-up speed), and that must not include a
# test's unreferenced connections, which hold locks until collected.
from kaja_cli import app

KAJA = str(Path(sys.executable).with_name("kaja"))

# Set by conftest from `pytest --real-processes`: every run a real process.
every_run_real = False

# Variables kaja's code reads while it runs; anything else given for one run
# (PYTHONPROFILEIMPORTTIME, TZ, FORCE_COLOR, ...) is read by a starting
# interpreter or at import time, so only a real process honours it.
# Variables kaja (or a library it calls: libpq reads PG* at connect time,
# tempfile reads TMPDIR once `tempfile.tempdir` is reset, as below) reads as
# it runs, so an in-process run honours them.
RUN_TIME_PREFIXES = ("KAJA_", "XDG_", "PG")
RUN_TIME_NAMES = frozenset(
    {"HOME", "USER", "LOGNAME", "NO_COLOR", "TERM", "COLUMNS", "LINES", "PAGER", "LESS",
     "EDITOR", "VISUAL", "TMPDIR", "USAGE_POSTGRES_URL"}
)  # fmt: skip

_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGPIPE", "SIGXFSZ", "SIGUSR1",
                 "SIGUSR2", "SIGCHLD", "SIGALRM")
    if hasattr(signal, name)
)  # fmt: skip
_THREAD_WAIT = 60.0
_leftover_fds: list[int] = []


def not_for_in_process(env: dict[str, str | None]) -> list[str]:
    """The variables in `env` that an in-process run could not honour."""
    return sorted(k for k in env if not k.startswith(RUN_TIME_PREFIXES) and k not in RUN_TIME_NAMES)


def run(
    args: tuple[str, ...], env: dict[str, str], input: str | None, root: Path
) -> tuple[int, str, str]:
    """`kaja ARGS` through `kaja_cli.app.main()`: (exit status, stdout, stderr).

    `root` is the test's folder: no lock may be held on a file below it,
    before (by the test) or after (by kaja).
    """
    _no_lock_held(root, "this test holds", "a real kaja would see it and an in-process one"
                  " cannot: close it first, or run kaja.proc(...)")  # fmt: skip
    stdin = _stdin(input)
    out = _output(sys.__stdout__)
    err = _output(sys.__stderr__, errors="backslashreplace")
    with _as_a_fresh_process([KAJA, *args], env, stdin, out, err), _command_tree_kept():
        code = _main(app.main)
    _no_lock_held(root, "kaja left", "main() returned with a connection still open")
    try:
        return code, _decoded(out), _decoded(err)
    finally:
        for stream in (stdin, out, err):
            with contextlib.suppress(Exception):
                stream.close()


_trees: dict[tuple[int, str | None], object] = {}


@contextlib.contextmanager
def _command_tree_kept():
    """typer's `get_command(app)`, built once per app (and per the one variable
    it reads while building) instead of at every run."""
    import typer.main

    build = typer.main.get_command

    def kept(typer_instance):
        key = (id(typer_instance), os.environ.get("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"))
        if key not in _trees:
            _trees[key] = build(typer_instance)
        return _trees[key]

    typer.main.get_command = kept
    try:
        yield
    finally:
        typer.main.get_command = build


def close_leftovers() -> None:
    """Close the probe descriptors in-process runs left (call when the test is over)."""
    while _leftover_fds:
        with contextlib.suppress(OSError):
            os.close(_leftover_fds.pop())


def _main(main) -> int:
    try:
        main()
    except SystemExit as e:
        return _exit_status(e.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        return -signal.SIGINT  # Python re-raises SIGINT on itself: killed by the signal
    except Exception:
        sys.excepthook(*sys.exc_info())  # what the interpreter does with an uncaught error
        return 1
    return 0


def _exit_status(code: object) -> int:
    """The status a parent sees for `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _stdin(input: str | None) -> io.TextIOWrapper:
    """/dev/null, as subprocess.DEVNULL gives a child, or the text as
    `subprocess.run(input=…)` sends it; closed by run()."""
    like = sys.__stdin__
    raw: typing.BinaryIO = (
        open(os.devnull, "rb")  # noqa: SIM115
        if input is None
        else io.BytesIO(input.encode(_text_encoding()))
    )
    return io.TextIOWrapper(
        raw,
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=getattr(like, "errors", None) or "strict",
        newline="\n",
    )


def _output(like, errors: str | None = None) -> io.TextIOWrapper:
    """A text stream over a temporary file, encoded as a child's stdout/stderr
    would be (same interpreter, same locale), not a terminal, with a real
    descriptor (kaja may ask for `fileno()`)."""
    return io.TextIOWrapper(
        tempfile.TemporaryFile(),
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=errors or getattr(like, "errors", None) or "strict",
        newline="\n",
    )


def _decoded(stream: io.TextIOWrapper) -> str:
    """What `subprocess.run(text=True)` returns for the bytes written."""
    with contextlib.suppress(Exception):
        stream.flush()
    raw = stream.buffer
    raw.seek(0)
    data = raw.read().decode(_text_encoding())
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _text_encoding() -> str:
    """The encoding subprocess uses in text mode."""
    return "utf-8" if sys.flags.utf8_mode else locale.getencoding()


@contextlib.contextmanager
def _as_a_fresh_process(argv, env, stdin, out, err):
    saved_environ = dict(os.environ)
    saved_argv = sys.argv
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_hook = sys.excepthook
    saved_cwd = os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    main_thread = threading.current_thread() is threading.main_thread()
    saved_handlers = {s: signal.getsignal(s) for s in _SIGNALS} if main_thread else {}
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    threads_before = set(threading.enumerate())
    probes_before = set(_probe_cache() or ())
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # computed again from this environment's TMPDIR
    sys.argv = list(argv)
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        with warnings.catch_warnings():
            _python_default_warnings()
            try:
                yield
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()  # what the interpreter does on its way out
                _wait_for_threads(threads_before)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        sys.excepthook = saved_hook
        tempfile.tempdir = None
        os.environ.clear()
        os.environ.update(saved_environ)
        with contextlib.suppress(OSError):
            if os.getcwd() != saved_cwd:
                os.chdir(saved_cwd)
        os.umask(saved_umask)
        for sig, handler in saved_handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
        _take_probe_descriptors(probes_before)
        _forget_schemas()


def _python_default_warnings() -> None:
    """Python's default filters (not pytest's), shown on stderr as a process shows them."""
    warnings.resetwarnings()
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__", append=True)
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category, append=True)

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show


def _wait_for_threads(before: set[threading.Thread]) -> None:
    """A process ends when main() returns; a thread it left behind would keep
    working on the store while the test looks at it."""
    for thread in set(threading.enumerate()) - before:
        thread.join(_THREAD_WAIT)
        if thread.is_alive():
            raise AssertionError(f"kaja left thread {thread.name} running after main() returned")


def _no_lock_held(root: Path, who: str, why: str) -> None:
    """POSIX locks never conflict within one process: while this process holds
    one (an open SQLite connection holds several), kaja run here would not see
    what a separate kaja sees ("in use", busy).

    A connection nobody refers to any more may still be open: sqlite3's
    connections sit in reference cycles, closed by the cyclic collector."""
    held = _locks_held_below(root)
    if held:
        gc.collect()
        held = _locks_held_below(root)
    if held:
        raise AssertionError(f"{who} a lock on {', '.join(held)}: {why}")


def _locks_held_below(root: Path) -> list[str]:
    """The files below `root` this process holds POSIX locks on (from
    /proc/locks, where there is one)."""
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    pid = str(os.getpid())
    inodes = set()
    for line in lines:
        parts = line.split()  # "1: POSIX ADVISORY READ <pid> <maj:min:inode> <start> <end>"
        if len(parts) >= 6 and parts[1] == "POSIX" and parts[4] == pid:
            inodes.add(int(parts[5].rsplit(":", 1)[1]))
    if not inodes:
        return []
    below = os.path.realpath(root) + os.sep  # /proc names files by their real path
    return sorted(name for name in _open_files(inodes) if name.startswith(below))


def _open_files(inodes: set[int]) -> set[str]:
    """The paths this process has open with one of these inode numbers."""
    names = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/self/fd/{fd}").st_ino in inodes:
                    names.add(os.readlink(f"/proc/self/fd/{fd}"))
    return names


def _probe_cache() -> dict | None:
    db = sys.modules.get("kaja_cli.core.engine.db")
    if db is None:
        return None
    cache = getattr(db, "_probe_fds", None)
    if not isinstance(cache, dict):
        raise AssertionError(
            "kaja_cli.core.engine.db._probe_fds is gone: teach tests/support/inprocess.py where the"
            " 'in use' probe keeps its descriptors"
        )
    return cache


def _forget_schemas() -> None:
    """A new process has read no store's schema yet: forget what search kept
    of them (`search.local._SCHEMAS`, told by device and inode, which only the
    probe descriptors taken here kept from being reused by another file)."""
    local = sys.modules.get("kaja_cli.core.conversations.search.local")
    if local is None:
        return
    schemas = getattr(local, "_SCHEMAS", None)
    if not isinstance(schemas, dict):
        raise AssertionError(
            "kaja_cli.core.conversations.search.local._SCHEMAS is gone: teach"
            " tests/support/inprocess.py what search keeps of a store per process"
        )
    schemas.clear()


def _take_probe_descriptors(before: set) -> None:
    """A new process starts with no probe descriptor: forget the ones this run
    opened (a cache keyed by device and inode), keeping them open until the test
    ends, so no lock of a connection the test still holds is dropped meanwhile."""
    cache = _probe_cache()
    if cache is None:
        return
    for key in [k for k in cache if k not in before]:
        _leftover_fds.append(cache.pop(key))
