"""`kaja migrate`: the legacy files, imported into the shared file once.

Two kinds, both from the seed (andromeda-database.txt):

- **Per-feature files** in the state dir (`usage.db`, `experience.db`,
  `background_tasks.db`, `schedules.db`, `triggers.db`, `artifacts.db`),
  imported as the seed's `migrateLegacyDatabases` does: each file is
  attached read-only and its tables copied keeping their ids (`INSERT OR
  IGNORE`, only the columns both sides have); the learning tables of
  experience.db are renamed (`runs` → `experience_runs`, `recipes` →
  `experience_recipes`, `tool_fixes` → `experience_tool_fixes`) because the
  ledger has a `runs` of its own. Tables kaja does not know are left out and
  named. The artifacts go to the artifacts file (the shared file unless
  split).
- **Conversation files**: `.memory/<resource_id>/threads/<thread_id>.json`
  (a list of messages, or an object with `messages`) or `.jsonl` (one
  message a line), with `<thread_id>.meta.json` (title and times). Each
  thread becomes a session (its id the thread id, its owner the resource id;
  `terminal` is the terminal) with its messages in order, and a
  `conversation_threads` row; the search index's triggers index the messages.

Each file imported is recorded in `kaja_migrations` (source = its path) so it
is imported once; the old files stay where they are as a rollback copy.
Everything goes in one transaction on the shared file (split artifacts: one
on their file, then their record), so an interrupted migrate leaves nothing
half done, and copying keeps ids, so running it again adds nothing twice.

One bad file never stops the rest: a file that can't be read (JSON nested
past Python's recursion limit, a name too long for its `.meta.json`), one
named as another legacy file (`usage.db`'s tables in `experience.db`), or
one whose rows don't fit kaja's tables (a text id in an INTEGER key) is
skipped with the reason, left as it is and not recorded, so the next
`kaja migrate` after it is fixed or moved aside imports it. The plan finds
what it can (so `--dry-run` says the same); what only the copy finds rolls
back to a savepoint of that file alone.

`plan()` reads only; `execute()` writes. `waiting()` is what doctor asks.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import db, fs
from kaja_cli.core.store import Store, registry, schema
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.store.registry import Database
from kaja_cli.errors import KajaError

# The seed's legacy files (registry.LEGACY_FILES), and the database each one's tables go to.
LEGACY_FILES: dict[str, Database] = {
    name: Database.ARTIFACTS if name == "artifacts.db" else Database.SHARED
    for name in registry.LEGACY_FILES
}
# Tables named otherwise in a legacy file: the ledger has its own `runs`.
RENAMED: dict[str, dict[str, str]] = {
    "experience.db": {
        "runs": "experience_runs",
        "recipes": "experience_recipes",
        "tool_fixes": "experience_tool_fixes",
    },
}
# The tables each legacy file held (the seed's per-feature files): a file that
# holds more of another one's tables than of its own is named as the wrong file.
FILE_TABLES: dict[str, frozenset[str]] = {
    "usage.db": frozenset(t.name for t in schema.LEDGER_TABLES),
    "experience.db": frozenset(RENAMED["experience.db"]),
    "background_tasks.db": frozenset({"background_tasks"}),
    "schedules.db": frozenset({"schedules"}),
    "triggers.db": frozenset({"triggers"}),
    "artifacts.db": frozenset({"artifacts"}),
}
MEMORY_DIR = ".memory"  # in the state dir: the conversation files' folder
TERMINAL_RESOURCES = ("terminal", "")  # resource ids that mean the terminal's own memory
_THREAD_IDS = uuid.UUID("0f1d9f6e-5a0e-4c55-9a0b-6b61a3c0d0a1")  # for ids made from names


class Status(StrEnum):
    IMPORT = "import"  # waiting: `kaja migrate` imports it
    IMPORTED = "imported"  # recorded in kaja_migrations: kept as a rollback copy
    SKIPPED = "skipped"  # not Kaja's, unreadable, or nothing kaja knows in it


@dataclass
class Table:
    """One table of a legacy file and where its rows go."""

    source: str
    target: str
    rows: int
    copied: int | None = None  # rows added (the rest had an id already there); None: not run
    left_out: list[str] = field(default_factory=list)  # its columns the target does not have


@dataclass
class LegacyFile:
    path: Path
    into: Database
    status: Status
    reason: str | None = None
    imported_at: str | None = None
    tables: list[Table] = field(default_factory=list)
    unknown_tables: list[str] = field(default_factory=list)  # tables kaja has no place for


@dataclass
class Thread:
    """One conversation file, as it will become a session."""

    path: Path
    resource_id: str
    thread_id: str
    status: Status
    reason: str | None = None
    imported_at: str | None = None
    session_id: str | None = None
    owner: str | None = None  # the sessions.owner value (None: the terminal)
    title: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)  # the messages as inserted, made by the plan
    copied: int | None = None


@dataclass
class Plan:
    shared: Path
    memory: Path
    files: list[LegacyFile] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)

    @property
    def to_import(self) -> bool:
        return any(f.status is Status.IMPORT for f in self.files) or any(
            t.status is Status.IMPORT for t in self.threads
        )

    @property
    def rows(self) -> int:
        return sum(t.rows for f in self.files if f.status is Status.IMPORT for t in f.tables)

    @property
    def messages(self) -> int:
        return sum(len(t.messages) for t in self.threads if t.status is Status.IMPORT)

    @property
    def skipped(self) -> list[LegacyFile | Thread]:
        """The files left out for a reason (`reason` says which)."""
        return [f for f in (*self.files, *self.threads) if f.status is Status.SKIPPED]

    def to_json(self, *, dry_run: bool = False) -> dict[str, Any]:
        """`kaja migrate --json`: every legacy file and conversation, and what became of it."""
        return {
            "store": str(self.shared), "memory": str(self.memory), "dry_run": dry_run,
            "files": [
                {"path": str(f.path), "into": str(f.into), "status": str(f.status),
                 "reason": f.reason, "imported_at": f.imported_at,
                 "unknown_tables": f.unknown_tables,
                 "tables": [{"source": t.source, "target": t.target, "rows": t.rows,
                             "copied": t.copied, "columns_left_out": t.left_out}
                            for t in f.tables]}
                for f in self.files
            ],
            "conversations": [
                {"path": str(t.path), "resource_id": t.resource_id, "thread_id": t.thread_id,
                 "session_id": t.session_id, "owner": t.owner, "title": t.title,
                 "messages": len(t.messages), "copied": t.copied, "status": str(t.status),
                 "reason": t.reason, "imported_at": t.imported_at}
                for t in self.threads
            ],
        }  # fmt: skip


# --- what is there -------------------------------------------------------------------
def legacy_paths(paths: Paths) -> list[Path]:
    """The legacy per-feature files in the state dir (regular files only), not one
    of the store's own databases (an artifacts file named artifacts.db, say)."""
    state = paths.state_dir.path
    own = {f.path for f in paths.databases()}
    return [
        state / name
        for name in LEGACY_FILES
        if (state / name).is_file() and state / name not in own
    ]


def thread_paths(memory: Path) -> Iterator[tuple[str, str, Path]]:
    """(resource_id, thread_id, file) of every conversation file under `memory`."""
    try:
        resources = sorted(p for p in memory.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return
    for resource in resources:
        threads = resource / "threads"
        if threads.is_symlink() or not threads.is_dir():
            continue
        for f in sorted(threads.iterdir()):
            name = f.name
            if name.endswith((".meta.json", ".goals.json")) or not f.is_file() or f.is_symlink():
                continue
            for suffix in (".jsonl", ".json"):
                if name.endswith(suffix) and len(name) > len(suffix):
                    yield resource.name, name[: -len(suffix)], f
                    break


def recorded(conn: sqlite3.Connection | None) -> dict[str, str]:
    """kaja_migrations: source → when (empty without the table)."""
    if conn is None or "kaja_migrations" not in db.table_names(conn):
        return {}
    return {
        str(s): str(at or "")
        for s, at in conn.execute("SELECT source, migrated_at FROM kaja_migrations")
    }


def was_imported(path: Path, done: dict[str, str]) -> str | None:
    """When `path` was imported, if it was: by its path, else by its file name
    (a store moved with its state dir, or an agent that recorded only the name)."""
    if str(path) in done:
        return done[str(path)]
    return next((at for source, at in done.items() if Path(source).name == path.name), None)


def waiting(paths: Paths, done: dict[str, str]) -> tuple[list[Path], list[Path]]:
    """Legacy files and conversation files not imported yet (doctor's question)."""
    files = [p for p in legacy_paths(paths) if was_imported(p, done) is None]
    memory = paths.state_dir.path / MEMORY_DIR
    threads = [f for _, _, f in thread_paths(memory) if str(f) not in done]
    return files, threads


# --- the plan ----------------------------------------------------------------------
def _local_only(store: Store) -> None:
    """An earlier Kaja's files are imported into a local store, SQLite to
    SQLite (ATTACH); in cloud mode the way is a local store first, then its
    backup restored into cloud mode."""
    from kaja_cli.errors import Failed

    try:
        store.require_local()
    except Failed:
        raise Failed(
            "kaja migrate imports an earlier Kaja's files into a local store, and cloud mode"
            " has none",
            hint='run it where [memory] mode = "local", then `kaja backup` there and `kaja'
            " restore` that archive in cloud mode",
        ) from None


def plan(store: Store, memory: Path | None = None) -> Plan:
    """What `kaja migrate` would import; reads only. Failed (exit 1) in cloud mode
    (`_local_only`)."""
    _local_only(store)
    paths = store.paths
    result = Plan(paths.shared_db.path, memory or paths.state_dir.path / MEMORY_DIR)
    done, taken = _store_state(store)
    for path in legacy_paths(paths):
        result.files.append(_plan_file(path, done))
    for resource, thread, path in thread_paths(result.memory):
        result.threads.append(_plan_thread(resource, thread, path, done, taken))
    return result


def _store_state(store: Store) -> tuple[dict[str, str], dict[str, str | None]]:
    """What the shared file has recorded, and its sessions' owners (id → owner)."""
    if not store.exists():
        return {}, {}
    with store.reader() as conn:
        done = recorded(conn)
        taken: dict[str, str | None] = {}
        if "sessions" in db.table_names(conn):
            taken = {str(i): o for i, o in conn.execute("SELECT id, owner FROM sessions")}
    return done, taken


def _plan_file(path: Path, done: dict[str, str]) -> LegacyFile:
    into = LEGACY_FILES[path.name]
    when = was_imported(path, done)
    if when is not None:
        return LegacyFile(path, into, Status.IMPORTED, imported_at=when or None)
    kind = db.classify(path)
    if kind != "sqlite":
        why = "empty" if kind == "empty" else "not a SQLite file"
        return LegacyFile(path, into, Status.SKIPPED, reason=f"{why}: not Kaja's, left as it is")
    try:
        with db.open_read(path, timeout_ms=1000) as conn:
            tables, unknown = _tables_of(conn, path.name, into)
            wrong = _named_as(path.name, tables, unknown)
            unfit = None if wrong else _unfit(conn, tables)
    except (KajaError, sqlite3.Error) as e:
        return LegacyFile(path, into, Status.SKIPPED, reason=f"cannot be read: {e}")
    if wrong is not None:
        theirs = ", ".join(sorted(FILE_TABLES[wrong] & {*unknown, *(t.source for t in tables)}))
        return LegacyFile(path, into, Status.SKIPPED, unknown_tables=unknown,
                          reason=f"it holds {wrong}'s tables ({theirs}), not {path.name}'s:"
                          " named as the wrong file?")  # fmt: skip
    if unfit is not None:
        return LegacyFile(path, into, Status.SKIPPED, reason=unfit, tables=tables,
                          unknown_tables=unknown)  # fmt: skip
    if not tables:
        return LegacyFile(path, into, Status.SKIPPED, reason="no table kaja knows",
                          unknown_tables=unknown)  # fmt: skip
    return LegacyFile(path, into, Status.IMPORT, tables=tables, unknown_tables=unknown)


def _tables_of(
    conn: sqlite3.Connection, name: str, into: Database
) -> tuple[list[Table], list[str]]:
    known = {t.name: t for t in schema.TABLES_OF[into]}
    renamed = RENAMED.get(name, {})
    own = FILE_TABLES[name]
    tables, unknown = [], []
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
    ).fetchall()
    present = {r[0] for r in rows}
    for (source,) in rows:
        target = renamed.get(source, source)
        if source not in own or target not in known or (source != target and target in present):
            unknown.append(source)
            continue
        cols = set(db.column_names(conn, source))
        if not cols & set(known[target].column_names):
            unknown.append(source)  # nothing in common: not that table at all
            continue
        count = conn.execute(f'SELECT count(*) FROM "{source}"').fetchone()[0]
        tables.append(Table(source, target, count,
                            left_out=sorted(cols - set(known[target].column_names))))  # fmt: skip
    return tables, unknown


def _named_as(name: str, tables: list[Table], unknown: list[str]) -> str | None:
    """The legacy file this one's tables say it is, when that is not its name:
    more of another file's tables than of its own."""
    present = {*unknown, *(t.source for t in tables)}
    mine = len(present & FILE_TABLES[name])
    counts = {other: len(present & ts - FILE_TABLES[name]) for other, ts in FILE_TABLES.items()
              if other != name}  # fmt: skip
    best = max(counts, key=lambda other: counts[other])
    return best if counts[best] > mine else None


def _unfit(conn: sqlite3.Connection, tables: list[Table]) -> str | None:
    """Why some row can't go into kaja's table, if one can't: a value in a
    column that is kaja's INTEGER PRIMARY KEY which SQLite would refuse
    ("datatype mismatch": a text id, a fraction). A temporary column of
    INTEGER affinity takes each such value as the key would; only the rows
    whose id is not already an integer are looked at (usually none)."""
    for t in tables:
        key = next((c.name for c in schema.TABLES[t.target].columns
                    if c.type == "INTEGER" and c.extra.startswith("PRIMARY KEY")), None)  # fmt: skip
        if key is None or key not in db.column_names(conn, t.source):
            continue
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS kaja_key_probe (k INTEGER)")
        conn.execute("DELETE FROM temp.kaja_key_probe")
        conn.execute(
            f'INSERT INTO temp.kaja_key_probe SELECT "{key}" FROM "{t.source}"'
            f""" WHERE typeof("{key}") NOT IN ('integer', 'null')"""
        )
        bad = conn.execute(
            "SELECT k FROM temp.kaja_key_probe WHERE typeof(k) != 'integer' LIMIT 1"
        ).fetchone()
        if bad is not None:
            shown = bad[0] if isinstance(bad[0], str | float) else bad[0].hex()
            return (f"{t.source}.{key} holds {_short(shown)!r}, not a whole number: kaja's"
                    f" {t.target}.{key} is an INTEGER key")  # fmt: skip
    return None


def _short(value: object, most: int = 40) -> object:
    if isinstance(value, str) and len(value) > most:
        return value[: most - 1] + "…"
    return value


def _plan_thread(
    resource: str, thread: str, path: Path, done: dict[str, str], taken: dict[str, str | None]
) -> Thread:
    owner = None if resource in TERMINAL_RESOURCES else resource
    t = Thread(path, resource, thread, Status.IMPORT, owner=owner)
    when = done.get(str(path))
    if when is not None:
        t.status, t.imported_at = Status.IMPORTED, when or None
        return t
    try:
        t.messages = _read_messages(path)
        meta = _read_meta(path.with_name(f"{thread}.meta.json"))
        t.title = _text(meta.get("title"))
        fallback = _stamp(meta.get("createdAt", meta.get("created_at"))) or _mtime(path)
        _number(t.messages, resource, thread, fallback)
        t.rows = [_message_row(m) for m in t.messages]
    except RecursionError:  # a value nested deeper than Python's stack (json.dumps of it)
        t.status, t.reason = Status.SKIPPED, "a value nested too deeply to import"
        t.messages = []
        return t
    except ValueError as e:
        t.status, t.reason = Status.SKIPPED, str(e)
        t.messages = []
        return t
    except OSError as e:  # gone or unreadable since it was listed
        t.status, t.reason = Status.SKIPPED, f"cannot be read: {e.strerror or e}"
        t.messages = []
        return t
    t.session_id = _session_id(resource, thread, owner, taken)
    taken.setdefault(t.session_id, owner)
    t.created_at = fallback if not t.messages else min(m["createdAt"] for m in t.messages)
    t.updated_at = _stamp(meta.get("updatedAt", meta.get("updated_at"))) or (
        max(m["createdAt"] for m in t.messages) if t.messages else t.created_at
    )
    return t


def _message_row(m: dict[str, Any]) -> tuple:
    """A message as `messages` takes it: (id, seq, role, content, reasoning,
    toolCallId, model, createdAt)."""
    return (m["id"], m["seq"], m["role"], content_of(m), _text(m.get("reasoning")),
            _text(m.get("toolCallId", m.get("tool_call_id"))), _text(m.get("model")),
            m["createdAt"])  # fmt: skip


def _session_id(resource: str, thread: str, owner: str | None, taken: dict[str, str | None]) -> str:
    """The thread id, kept when it is a safe name no other owner's session has;
    otherwise an id made from the resource and thread (the same every run)."""
    if images.safe_name(thread) and (thread not in taken or (taken[thread] or None) == owner):
        return thread
    return str(uuid.uuid5(_THREAD_IDS, f"{resource}/{thread}"))


def _read_messages(path: Path) -> list[dict[str, Any]]:
    """The messages of a conversation file; ValueError naming what is wrong."""
    try:
        text = _read_text(path)
    except OSError as e:
        raise ValueError(f"cannot be read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"cannot be read: {e}") from None
    if path.name.endswith(".jsonl"):
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"line {n} is not JSON ({e.msg})") from None
                except RecursionError:
                    raise ValueError(f"line {n} is JSON nested too deeply to read") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON (line {e.lineno}: {e.msg})") from None
        except RecursionError:  # json's parser recurses once per level
            raise ValueError("JSON nested too deeply to read") from None
        items = data.get("messages") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError("neither a list of messages nor an object with `messages`")
    messages = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise ValueError(f"message {n} has no role")
        messages.append(item)
    return messages


def _read_text(path: Path) -> str:
    """A conversation file's text; never a FIFO or a device swapped in (fs.open_regular)."""
    raw = fs.read_regular(path)
    if raw is None:
        raise FileNotFoundError(f"{path} is gone")
    return raw.decode("utf-8")


def _read_meta(path: Path) -> dict[str, Any]:
    """A thread's `.meta.json`; {} when it has none. A thread whose own name
    is near the 255-byte limit leaves no room for one: that name can't exist."""
    try:
        data = json.loads(_read_text(path))
    except FileNotFoundError:
        return {}
    except OSError as e:  # a FIFO or a device is never opened
        if e.errno == errno.ENAMETOOLONG:
            return {}
        raise ValueError(f"{path.name} cannot be read: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path.name} cannot be read: {e}") from None
    except RecursionError:
        raise ValueError(f"{path.name} cannot be read: JSON nested too deeply") from None
    return data if isinstance(data, dict) else {}


def _number(messages: list[dict[str, Any]], resource: str, thread: str, fallback: str) -> None:
    """Give each message an id, a seq and a time (kept when the file has them)."""
    for seq, m in enumerate(messages, 1):
        given = m.get("id")
        m["id"] = (
            str(given)
            if isinstance(given, str | int) and str(given)
            else str(uuid.uuid5(_THREAD_IDS, f"{resource}/{thread}/{seq}"))
        )
        m["seq"] = seq
        m["createdAt"] = (
            _stamp(m.get("createdAt", m.get("created_at", m.get("timestamp")))) or fallback
        )


def _stamp(value: object) -> str | None:
    """A time as stored (ISO 8601 UTC with ms and a Z), from ISO text or Unix seconds/ms."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return clock.iso(clock.from_epoch(seconds))
        except (OverflowError, OSError, ValueError):
            return None
    parsed = clock.parse_stored(value)
    try:
        return clock.iso(parsed) if parsed is not None else None
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the first UTC date
        return None


def _mtime(path: Path) -> str:
    return clock.iso(clock.from_epoch(path.stat().st_mtime))


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def content_of(message: dict[str, Any]) -> str | None:
    """A message's text: a string as it is; a list of parts, their text joined."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p if isinstance(p, str) else p.get("text")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        ]
        return "\n".join(texts) if texts else json.dumps(content, ensure_ascii=False)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return json.dumps(content, ensure_ascii=False)


# --- importing ---------------------------------------------------------------------------
def execute(store: Store, the_plan: Plan, *, timeout_ms: int = db.BUSY_TIMEOUT_MS) -> Plan:
    """Import what the plan says, in one transaction on the shared file (and one on
    a split artifacts file first); fills in `copied`. Busy (exit 4) when the
    agent keeps the store locked longer than `timeout_ms`."""
    _local_only(store)
    split = store.file_of(Database.ARTIFACTS) is not Database.SHARED
    todo = [f for f in the_plan.files if f.status is Status.IMPORT]
    aside = [f for f in todo if f.into is Database.ARTIFACTS and split]
    for f in aside:  # their own file; recorded with the rest below
        with store.writer(Database.ARTIFACTS, create=True, timeout_ms=timeout_ms) as conn:
            _copy_files(conn, [f], record=False)
    rest = [f for f in todo if f not in aside]
    aside = [f for f in aside if f.status is Status.IMPORT]  # not one its copy skipped
    with store.writer(create=True, timeout_ms=timeout_ms) as conn:
        _copy_files(conn, rest, record=True, also=aside,
                    threads=[t for t in the_plan.threads if t.status is Status.IMPORT])  # fmt: skip
    return the_plan


# What a copy may meet that is the legacy file's fault, not the store's: a row
# that breaks a constraint of kaja's table (SQLITE_CONSTRAINT, a text id in an
# INTEGER key: SQLITE_MISMATCH), a value too big (SQLITE_TOOBIG). Anything else
# (busy, disk full, I/O) stops the whole import.
_FILE_FAULTS = (sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG)


def _alone(conn: sqlite3.Connection, item: LegacyFile | Thread, copy) -> None:
    """Run `copy()` under a savepoint of its own: a fault of the file's rolls
    back that file alone, which is then skipped with the reason (not recorded)."""
    conn.execute("SAVEPOINT kaja_legacy_file")
    try:
        copy()
    except (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.OperationalError) as e:
        if (e.sqlite_errorcode & 0xFF) not in _FILE_FAULTS:
            raise
        conn.execute("ROLLBACK TO kaja_legacy_file")
        conn.execute("RELEASE kaja_legacy_file")
        item.status, item.reason = Status.SKIPPED, f"its rows don't fit kaja's tables: {e}"
        for t in getattr(item, "tables", ()):
            t.copied = None
        if isinstance(item, Thread):
            item.copied = None
        return
    conn.execute("RELEASE kaja_legacy_file")


def _copy_files(
    conn: sqlite3.Connection,
    files: list[LegacyFile],
    *,
    record: bool,
    also: list[LegacyFile] = (),  # type: ignore[assignment]
    threads: list[Thread] = (),  # type: ignore[assignment]
) -> None:
    with ExitStack() as attached:
        names = []
        for i, f in enumerate(files):
            name = f"legacy_{i}"
            conn.execute("ATTACH DATABASE ? AS " + name, (f.path.as_uri() + "?mode=ro",))
            attached.callback(_detach, conn, name)
            names.append(name)
        with db.transaction(conn):
            done = recorded(conn)
            for f, name in zip(files, names, strict=True):
                if was_imported(f.path, done) is None:  # another kaja may have been quicker
                    _alone(conn, f, lambda f=f, name=name: _copy_tables(conn, f, name))
            for t in threads:
                if str(t.path) not in done:
                    _alone(conn, t, lambda t=t: _import_thread(conn, t))
            if record:
                stamp = clock.now_iso()
                copied = [f for f in (*files, *also, *threads) if f.status is Status.IMPORT]
                sources = [f.path for f in copied]
                conn.executemany(
                    "INSERT OR IGNORE INTO kaja_migrations (source, migrated_at) VALUES (?, ?)",
                    [(str(p), stamp) for p in sources],
                )


def _detach(conn: sqlite3.Connection, name: str) -> None:
    try:
        conn.execute(f"DETACH DATABASE {name}")
    except sqlite3.Error:
        pass  # the connection closes next, which detaches it anyway


def _copy_tables(conn: sqlite3.Connection, f: LegacyFile, name: str) -> None:
    for t in f.tables:
        have = set(_columns(conn, "main", t.target))
        cols = [c for c in _columns(conn, name, t.source) if c in have]
        listed = ", ".join(f'"{c}"' for c in cols)
        cur = conn.execute(
            f'INSERT OR IGNORE INTO main."{t.target}" ({listed}) SELECT {listed} FROM {name}."{t.source}"'
        )
        t.copied = max(cur.rowcount, 0)


def _columns(conn: sqlite3.Connection, schema_name: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA {schema_name}.table_info("{table}")')]


def _import_thread(conn: sqlite3.Connection, t: Thread) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, createdAt, updatedAt, title, owner) VALUES (?, ?, ?, ?, ?)",
        (t.session_id, t.created_at, t.updated_at, t.title, t.owner),
    )
    copied = 0
    for row in t.rows:
        cur = conn.execute(
            "INSERT OR IGNORE INTO messages (id, sessionId, seq, role, content, reasoning,"
            " toolCallId, model, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row[0], t.session_id, *row[1:]),
        )
        copied += max(cur.rowcount, 0)
    t.copied = copied
    conn.execute(
        "INSERT OR REPLACE INTO conversation_threads (resource_id, thread_id, count, title)"
        " VALUES (?, ?, (SELECT count(*) FROM messages WHERE sessionId = ?), ?)",
        (t.resource_id or "terminal", t.session_id, t.session_id, t.title),
    )
