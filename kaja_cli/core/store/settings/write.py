"""Changing settings.toml: `config set`, `unset` and `edit`.

The file is a person's: tomlkit changes the one value and keeps every
comment, blank line, key order and quoting style. Each change is made under
a lock, on a fresh read, and lands atomically:

- a sidecar lock (`.settings.toml.lock` beside the file, `flock`) serialises
  writers: two `kaja config set` at once both land, one after the other (a
  writer that waits more than LOCK_WAIT seconds gives up with exit 4);
- the file is read again under the lock, changed, checked (the new text must
  read back as exactly the old settings plus the change), written to a temp
  file in the same folder (0600), fsynced, renamed over the old one, and the
  folder fsynced: a reader sees the old file or the new one, never a torn one;
- a file that does not parse is never written (exit 1, untouched).

What is written follows kaja's one rule for files it writes on request
(`guard.write_target`, exit 5 otherwise): a regular file you own that is
not read-only, a symbolic link followed only to one (the link is kept), and
never one of the store's files (`guard.store_files`: its databases, their
journals, the wipe markers, files/), by real path and by inode.

tomlkit is imported here only, and this module only by the writing commands:
reading settings (every start-up) never loads it.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from kaja_cli.core.engine.fs import ensure_private_dir, fsync_dir
from kaja_cli.core.store import settings as settings_mod
from kaja_cli.core.store.guard import Target, write_target
from kaja_cli.core.store.settings import keys as settings_keys
from kaja_cli.core.store.settings.keys import KEYS
from kaja_cli.errors import Busy, Failed, Refused, UsageError

LOCK_WAIT = 5.0  # seconds; like the store's busy timeout


class Change(NamedTuple):
    """What `set` or `unset` did; values masked where secret."""

    key: str
    before: Any  # None: was not set
    after: Any  # None: removed
    changed: bool
    line: int | None  # where the key now is
    file: Path


# --- which file, and may kaja write it -----------------------------------------------------------
def target(path: Path, protected: Iterable[Path] = ()) -> Target:
    """The file a change to `path` writes; Refused (exit 5) when kaja must not.

    The one rule for every file kaja writes on request (`guard.write_target`):
    `protected` is the store's files (`guard.store_files`)."""
    return write_target(path, protected, what="settings file")


# --- the lock ------------------------------------------------------------------------------------
@contextmanager
def locked(t: Target, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold the settings file's sidecar lock (the file itself is replaced by
    each write, so a lock on it would not outlive the first rename)."""
    ensure_private_dir(t.real.parent)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(t.lock_path, flags, 0o600)
    except OSError as e:
        raise Failed(f"cannot lock {t.path}: {e.strerror} ({t.lock_path})") from None
    try:
        _acquire(fd, t, wait)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _locked_unless(t: Target, dry_run: bool) -> Any:
    """The lock, but for a dry run, which writes nothing: taking the lock
    would create its file (and the settings folder)."""
    return contextlib.nullcontext() if dry_run else locked(t)


def _acquire(fd: int, t: Target, wait: float) -> None:
    deadline = time.monotonic() + wait
    while not _try_lock(fd):
        if time.monotonic() > deadline:
            raise Busy(
                f"another program is changing {t.path} (waited {wait:g} s)",
                hint="try again in a moment",
            )
        time.sleep(0.01)


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - no fcntl there
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


# --- reading and writing under the lock ----------------------------------------------------------
def _read(t: Target) -> str:
    """The current text ("" if there is no file), read under the lock."""
    try:
        st = t.real.lstat()
    except FileNotFoundError:
        return ""
    if not stat.S_ISREG(st.st_mode):  # replaced since `target` looked
        raise Refused(f"{t.real} is no longer a regular file: not writing")
    text = settings_mod.read_text(t.real)
    return text or ""


def write_atomic(t: Target, text: str) -> None:
    """Replace the file with `text`: temp file beside it (0600), fsync, rename, fsync the folder."""
    import tempfile

    folder = t.real.parent
    ensure_private_dir(folder)
    _remove_stale_temporaries(t.real)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{t.real.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise Failed(f"cannot write in {folder}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, t.real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(folder)


def _remove_stale_temporaries(real: Path) -> None:
    """The temporary copies (`.settings.toml.*.tmp`) of writers killed before
    their rename: under the lock, no other writer has one."""
    prefix = f".{real.name}."
    try:
        names = os.listdir(real.parent)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                (real.parent / name).unlink()


# --- set and unset -------------------------------------------------------------------------------
def set_value(
    path: Path,
    name: str,
    text: str,
    *,
    force: bool = False,
    protected: Iterable[Path] = (),
    dry_run: bool = False,
) -> Change:
    """Set key `name` to the value typed as `text`; validated unless unknown and forced.
    `dry_run`: the same checks and the same Change, with nothing written (no
    lock file, no folder made)."""
    parts, key = _name(name)
    if ".".join(parts) in settings_keys.TABLES:
        raise UsageError(settings_keys.unknown_key_message(".".join(parts)))
    if key is not None:
        try:
            value = settings_keys.parse(key, text)
        except ValueError as e:
            raise UsageError(str(e)) from None
    elif not force:
        raise UsageError(settings_keys.unknown_key_message(name), hint="--force writes it anyway")
    else:
        value = settings_keys.parse_free(text)
    t = target(path, protected)
    with _locked_unless(t, dry_run):
        old_text = _read(t)
        data = settings_mod.parse(t.path, old_text)
        before = _lookup(data, parts)
        shown = settings_keys.public(key, value, ".".join(parts))
        if _same(before, value):
            line = settings_mod.line_of(settings_mod.key_lines(old_text), parts)
            return Change(_dotted(parts), shown, shown, False, line, t.real)
        new_text = _tidy_end(
            old_text, _edited(old_text, lambda doc: _put(doc, parts, value, old_text))
        )
        _verify(t, old_text, new_text, parts, _with(data, parts, value))
        if not dry_run:
            write_atomic(t, new_text)
    line = settings_mod.line_of(settings_mod.key_lines(new_text), parts)
    before = settings_keys.public(key, before, ".".join(parts))
    return Change(_dotted(parts), before, shown, True, line, t.real)


def unset_value(
    path: Path, name: str, *, protected: Iterable[Path] = (), dry_run: bool = False
) -> Change:
    """Remove key `name` from the file (any key the file has, known or not);
    `dry_run`: say so, writing nothing."""
    parts, key = _name(name)
    t = target(path, protected)
    if not t.exists:
        return _not_there(parts, key, t)
    with _locked_unless(t, dry_run):
        old_text = _read(t)
        data = settings_mod.parse(t.path, old_text)
        before = _lookup(data, parts)
        if before is None:
            return _not_there(parts, key, t)
        if isinstance(before, dict) and key is None and ".".join(parts) in settings_keys.TABLES:
            raise UsageError(settings_keys.unknown_key_message(".".join(parts)))
        new_text = _tidy_end(old_text, _edited(old_text, lambda doc: _remove(doc, parts)))
        _verify(t, old_text, new_text, parts, _without(data, parts))
        if not dry_run:
            write_atomic(t, new_text)
    before = settings_keys.public(key, before, ".".join(parts))
    return Change(_dotted(parts), before, None, True, None, t.real)


def _not_there(parts: tuple[str, ...], key: settings_keys.Key | None, t: Target) -> Change:
    if key is None:
        raise UsageError(settings_keys.unknown_key_message(".".join(parts)))
    return Change(_dotted(parts), None, None, False, None, t.real)


def _name(name: str) -> tuple[tuple[str, ...], settings_keys.Key | None]:
    try:
        parts = settings_keys.split(name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not all(parts):
        raise UsageError(f"not a key: {name!r} (keys look like memory.mode)")
    return parts, KEYS.get(".".join(parts))


def _dotted(parts: tuple[str, ...]) -> str:
    return settings_keys.dotted(parts)


def _same(before: Any, value: Any) -> bool:
    return type(before) is type(value) and before == value


def _lookup(data: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    node: Any = data
    for p in parts:
        if not isinstance(node, dict) or p not in node:
            return None
        node = node[p]
    return node


# --- the tomlkit side: one change, everything else as it was -------------------------------------
def _edited(text: str, change) -> str:
    """The text after `change(doc)`: tomlkit's rendering of the changed
    document, or the text `change` returns when it wrote the line itself."""
    import tomlkit

    doc = tomlkit.parse(text)
    written = change(doc)
    return doc.as_string() if written is None else written


def _is_table(node: Any) -> bool:
    from tomlkit.container import Container, OutOfOrderTableProxy
    from tomlkit.items import InlineTable, Table

    return isinstance(node, Table | InlineTable | OutOfOrderTableProxy | Container)


def _put(doc: Any, parts: tuple[str, ...], value: Any, old_text: str) -> str | None:
    """Set `parts` in `doc`; the new text when the key's line is written into
    `old_text` directly (see `_after_last_key`), else None (render `doc`)."""
    import tomlkit
    from tomlkit.items import AoT, Table

    node, created = doc, False
    for i, part in enumerate(parts[:-1]):
        if part not in node:
            node, created = _new_tables(doc, node, parts[i:-1], old_text), True
            break
        node = node[part]
        if not _is_table(node):
            _conflict(parts[: i + 1], parts)
    leaf = parts[-1]
    if leaf in node:
        if _is_table(node[leaf]) or isinstance(node[leaf], AoT):
            _conflict(parts, parts)
        node[leaf] = _styled(node[leaf], value)
    elif not created and (written := _after_last_key(node, parts, value, old_text)) is not None:
        return written
    else:
        node[leaf] = _styled(None, value)
    if created and isinstance(node, Table):
        node.add(tomlkit.nl())  # a blank line between a new table and what follows it
    return None


def _tidy_end(old_text: str, new_text: str) -> str:
    """No blank line added at the very end of the file by a new last table."""
    if new_text.endswith("\n\n") and not old_text.endswith("\n\n"):
        return new_text.rstrip("\n") + "\n"
    return new_text


def _conflict(where: tuple[str, ...], parts: tuple[str, ...]) -> None:
    name, full = _dotted(where), _dotted(parts)
    if where == parts:
        raise Failed(f"{full} is a table (or an array of tables) in settings.toml, not a value")
    if name in KEYS:
        raise UsageError(f"{name} is a value, not a table: there is no {full}")
    raise Failed(f"{name} is a value in settings.toml, not a table: cannot set {full} inside it")


def _styled(old: Any, value: Any) -> Any:
    """The new value as a tomlkit item, in the quoting style of the one it replaces."""
    import tomlkit
    from tomlkit.items import String

    # A one-line literal string is written '…' (String.type says so from
    # tomlkit 0.14 on; the text says so in every release).
    was = old.as_string() if isinstance(old, String) else ""
    if isinstance(value, str) and was.startswith("'") and not was.startswith("'''"):
        if "'" not in value and not any(ord(c) < 32 or ord(c) == 127 for c in value):
            return tomlkit.string(value, literal=True)
    return tomlkit.item(value)


def _new_tables(doc: Any, node: Any, names: tuple[str, ...], old_text: str) -> Any:
    """Create the missing tables `names` inside `node`; the innermost one."""
    import tomlkit
    from tomlkit.items import InlineTable

    if isinstance(node, InlineTable):
        for name in names:
            node[name] = tomlkit.inline_table()
            node = node[name]
        return node
    inner = tomlkit.table()
    outer = inner
    for _ in names[1:]:
        outer = tomlkit.table(is_super_table=True)
    chain = outer
    for name in names[1:-1]:  # super tables between the outer and the inner one
        chain[name] = tomlkit.table(is_super_table=True)
        chain = chain[name]
    if len(names) > 1:
        chain[names[-1]] = inner
    if node is doc and old_text.strip():
        so_far = doc.as_string()
        for _ in range(2 - len(so_far) + len(so_far.rstrip("\n"))):
            doc.add(tomlkit.nl())  # a blank line before a new table at the end
    node[names[0]] = outer
    node = node[names[0]]
    for name in names[1:]:
        node = node[name]
    return node


def _after_last_key(node: Any, parts: tuple[str, ...], value: Any, old_text: str) -> str | None:
    """`old_text` with the new key's line right after the last key of its
    `[table]` (after that key's comment and multi-line value, before the
    comments that close the table), indented like it; None where tomlkit's own
    placement is right (no plain key yet, an inline or dotted table).

    The line is written into the text, not into tomlkit's document: tomlkit has
    no public way to insert a key at a position (its private one was removed in
    0.15.3, and `config set` crashed on every fresh install)."""
    import tomlkit
    from tomlkit.items import AoT, Table

    if not isinstance(node, Table) or node.is_super_table() or node.is_aot_element():
        return None
    keys = [k.key for k, v in node.value.body if k is not None and not isinstance(v, Table | AoT)]
    last = (*parts[:-1], keys[-1]) if keys else None
    end = settings_mod.line_ends(old_text).get(last)
    if end is None:
        return None
    first = old_text.splitlines()[settings_mod.key_lines(old_text)[last] - 1]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    line = tomlkit.document().add(parts[-1], _styled(None, value)).as_string()
    head = old_text[:end] if old_text[:end].endswith("\n") else old_text[:end] + "\n"
    return head + indent + line + old_text[end:]


def _remove(doc: Any, parts: tuple[str, ...]) -> None:
    """Remove the key, then any table it leaves empty (one with no comments)."""
    nodes = [doc]
    for p in parts[:-1]:
        nodes.append(nodes[-1][p])
    del nodes[-1][parts[-1]]
    for i in range(len(parts) - 1, 0, -1):
        if not _empty(nodes[i]):
            break
        del nodes[i - 1][parts[i - 1]]


def _empty(table: Any) -> bool:
    """No keys and no comments (a removed key leaves a Null in tomlkit's body)."""
    from tomlkit.items import Null, Whitespace

    if len(table):
        return False
    trivia = getattr(table, "trivia", None)
    if trivia is not None and trivia.comment:
        return False
    body = getattr(getattr(table, "value", None), "body", [])
    return all(isinstance(v, Whitespace | Null) for _, v in body)


# --- the safety net: the new text means exactly what was intended --------------------------------
def _with(data: dict[str, Any], parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def _without(data: dict[str, Any], parts: tuple[str, ...]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for p in parts[:-1]:
        node = node[p]
    del node[parts[-1]]
    return out


def _pruned(value: Any) -> Any:
    """Tables with nothing in them mean nothing: ignore them when comparing."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v != {}}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _verify(
    t: Target, old_text: str, new_text: str, parts: tuple[str, ...], expected: dict[str, Any]
) -> None:
    """The new text reads back as `expected`, and every line of the old one is
    still there, in order, except the key's own (tomlkit regroups some layouts,
    such as an array of tables split by another table: refused, not reordered)."""
    import tomllib

    try:
        got = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        got = None
    if got is None or _pruned(got) != _pruned(expected) or _disturbed(old_text, new_text, parts):
        raise Failed(
            f"could not make that change to {t.path} without disturbing the rest of it",
            hint="the file is unchanged; use `kaja config edit`",
        )


def _disturbed(old_text: str, new_text: str, parts: tuple[str, ...]) -> bool:
    """True if a line other than the key's own (or a blank line, or the header
    of a table the change emptied) went missing or moved."""
    import difflib

    old, new = old_text.splitlines(), new_text.splitlines()
    own = _own_lines(settings_mod.key_lines(old_text), parts, len(old))
    kept = set(new)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag not in ("replace", "delete"):
            continue
        for i in range(i1, i2):
            line = old[i].strip()
            removed_header = line.startswith("[") and old[i] not in kept
            if i + 1 not in own and line and not removed_header:
                return True
    return False


def _own_lines(lines: dict[tuple[str, ...], int], parts: tuple[str, ...], total: int) -> set[int]:
    """The lines (1-based) that set `parts`: a key's line (to the next key: a
    multi-line value), and for a table every key inside it (`unset` of a
    misspelt table takes them along, dotted keys anywhere in the file
    included), to the next key or header outside it or the end of the file."""
    inside = sorted(n for p, n in lines.items() if p[: len(parts)] == parts)
    table = any(len(p) > len(parts) for p in lines if p[: len(parts)] == parts)
    if not inside:  # in an inline table: the line of the table that holds it
        start = settings_mod.line_of(lines, parts)
        inside = [] if start is None else [start]
    others = sorted(n for p, n in lines.items() if p[: len(parts)] != parts)
    own: set[int] = set()
    for start in inside:
        last = total + 1 if table else start + 1  # a key's comments below it are not its own
        own.update(range(start, next((n for n in others if n > start), last)))
    return own


# --- edit ----------------------------------------------------------------------------------------
class Draft(NamedTuple):
    """A settings file opened for `kaja config edit`."""

    target: Target
    original: str | None  # the file's text when the edit began; None: no file
    text: str  # what the editor starts from (the template when there is no file)


def begin_edit(path: Path, protected: Iterable[Path] = ()) -> Draft:
    t = target(path, protected)
    original = settings_mod.read_text(t.real) if t.exists else None
    return Draft(t, original, template() if original is None else original)


def problem(path: Path, text: str, *, force: bool = False) -> str | None:
    """The first reason `text` must not be saved as settings.toml, as one line; None if fine."""
    from kaja_cli.errors import SettingsError

    try:
        data = settings_mod.parse(path, text)
    except SettingsError as e:
        where = e.message.removeprefix(f"{path}:")
        return re.sub(r"^(\d+):(\d+): ", r"line \1, column \2: ", where)
    settings = settings_mod.Settings(path, True, data, text)
    lines = settings_mod.key_lines(text)
    issues = [
        f"line {settings_mod.line_of(lines, KEYS[name].parts)}: {why}"
        for name, why in settings.problems()
    ]
    if not force:
        issues += [
            f"line {settings_mod.line_of(lines, parts)}: "
            f"{settings_keys.unknown_key_message(settings_keys.dotted(parts))}"
            for parts in settings_mod.unknown_paths(data)
        ]
    if not issues:
        return None
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    return issues[0] + more


def save_edit(draft: Draft, text: str) -> None:
    """Write the edited text, unless the file changed since the edit began."""
    t = draft.target
    with locked(t):
        current = _read(t) if t.real.exists() or t.real.is_symlink() else None
        if current != draft.original:
            raise Failed(f"{t.path} was changed by another program while you were editing it")
        write_atomic(t, text)


def editor_command(environ: Mapping[str, str] | None = None) -> list[str]:
    """$VISUAL, else $EDITOR (split like a shell would), else a common editor on PATH."""
    import shlex
    import shutil

    env = os.environ if environ is None else environ
    for var in ("VISUAL", "EDITOR"):
        value = env.get(var, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as e:
                raise UsageError(f"${var} is not a command line: {e}") from None
            if argv:
                return argv
    for name in ("editor", "vi", "nano"):
        if shutil.which(name):
            return [name]
    raise Failed("no editor found", hint="set VISUAL or EDITOR (export EDITOR=nano)")


def run_editor(argv: list[str], file: Path) -> None:
    """Run the editor on `file` in this terminal; Failed if it can't start or fails."""
    import subprocess

    try:
        code = subprocess.call([*argv, str(file)])
    except OSError as e:
        raise Failed(f"cannot run the editor {argv[0]!r}: {e.strerror}") from None
    if code != 0:
        raise Failed(f"the editor exited with status {code}: settings unchanged")


def template() -> str:
    """A commented settings.toml listing every known key, for `edit` to start from."""
    lines = [
        "# Kaja's settings. Uncomment a line and change its value to set it;",
        "# `kaja config show` prints every setting in effect and where it came from.",
        "# An environment variable named beside a key overrides it.",
    ]
    tables: dict[str, list[settings_keys.Key]] = {}
    for key in KEYS.values():
        tables.setdefault(key.table, []).append(key)
    for table, keys in tables.items():
        lines += ["", f"[{table}]"]
        for key in keys:
            example = key.default if key.default is not None else EXAMPLES.get(key.name, "")
            env = f"; env {key.env}" if key.env else ""
            lines += [
                f"# {key.description}",
                f"# {key.leaf} = {settings_keys.toml_literal(example)}  # {key.allowed()}{env}",
            ]
    return "\n".join(lines) + "\n"


EXAMPLES: dict[str, Any] = {
    "memory.artifactsPath": "artifacts.db",
    "memory.qdrant.url": "http://localhost:6333",
    "memory.qdrant.path": "qdrant",
    "memory.databaseUrl": "postgresql://kaja@db.example.com/kaja",
    "memory.account": "you@example.com",
    "usage.postgres_url": "postgresql://kaja@db.example.com/ledger",
    "logging.retention_days": 30,
}
