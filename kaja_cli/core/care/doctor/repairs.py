"""The repairs `--fix` may apply to a database: roll back an interrupted
write, bring its schema up to date (and switch it to WAL), checkpoint its
-wal, rebuild the search index.

Each is a `Repair` a check attaches to its finding; none runs unless asked.
They write through `db.open_write` with a slightly longer lock wait, so a
running agent can finish its turn."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kaja_cli.core.care.doctor.common import Header, in_use, size_of
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import Repair, RepairOrder
from kaja_cli.core.engine import db, fs
from kaja_cli.core.engine.fs import human_size
from kaja_cli.core.store import search_index
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy

# --fix's writes wait a little longer for a running agent to finish a turn.
FIX_TIMEOUT_MS = 3000


@contextmanager
def _writing(ctx: Context, name: str) -> Iterator[sqlite3.Connection]:
    """The one way a repair writes: `db.open_write`, which refuses (exit 5) a
    file that is not Kaja's before anything in it changes."""
    with db.open_write(ctx.db_path(name), ctx.file(name), timeout_ms=FIX_TIMEOUT_MS) as conn:
        yield conn


def recovery_repair(ctx: Context, name: str, leftover: Path) -> Repair:
    """Roll back the interrupted write that left `leftover` (a hot -journal),
    or recover a -wal, as a read-write SQLite connection does on its first read."""
    from kaja_cli.core.store import guard

    path = ctx.db_path(name)

    def run() -> str:
        recognise = guard.may_recover(ctx.file(name))
        db.recover_interrupted(path, leftover, recognise, timeout_ms=FIX_TIMEOUT_MS)
        if leftover.name.endswith("-journal"):
            return f"{path.name}: rolled back the interrupted write ({leftover.name})"
        return f"{path.name}: recovered the committed changes in {leftover.name}"

    return Repair(f"recover:{name}", RepairOrder.RECOVERY, run, name)


def schema_repair(ctx: Context, name: str) -> Repair:
    from kaja_cli.core.store import Store

    paths, path = ctx.paths, ctx.db_path(name)

    def run() -> str:
        header = Header.read(path)
        with _writing(ctx, name) as conn:  # opening for writing switches the file to WAL
            report = Store(paths).ensure_schema(conn, name)
        done = _squash(report.changes)
        if header is None or not header.wal:
            done.insert(0, "switched to WAL mode")
        return f"{path.name}: " + ("; ".join(done) or "nothing was missing")

    return Repair(f"schema:{name}", RepairOrder.SCHEMA, run, name)


def _squash(changes: list[str]) -> list[str]:
    """ "created table a", "created table b" → "created tables a, b"."""
    grouped: dict[str, list[str]] = {}
    for c in changes:
        words = c.rsplit(" ", 1)
        key, item = (words[0], words[1]) if len(words) == 2 else (c, "")
        grouped.setdefault(key, []).append(item)
    out = []
    for key, items in grouped.items():
        if len(items) == 1:
            out.append(f"{key} {items[0]}".strip())
            continue
        verb, _, word = key.rpartition(" ")
        nouns = noun(len(items), word)
        shown = ", ".join(items[:3]) + (", …" if len(items) > 3 else "")
        count = f"{len(items)} " if len(items) > 3 else ""
        out.append(f"{verb} {count}{nouns} {shown}")
    return out


def checkpoint_repair(ctx: Context, name: str) -> Repair:
    path = ctx.db_path(name)

    def run() -> str:
        in_use = db.holder(path) is not None
        # A running agent keeps writing: copy what can be copied without
        # waiting for it (PASSIVE); otherwise fold the whole -wal in and
        # truncate it (TRUNCATE waits at most the busy timeout).
        mode = "PASSIVE" if in_use else "TRUNCATE"
        before = size_of(fs.beside(path, "-wal")) or 0
        with _writing(ctx, name) as conn:
            blocked, frames, done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        if blocked or (frames > 0 and done < frames):
            return (f"{path.name}: checkpointed {done} of {plural(frames, 'page')};"
                    " Kaja is using the rest")  # fmt: skip
        return f"{path.name}: checkpointed the -wal ({human_size(before)}) into the file"

    return Repair(f"checkpoint:{name}", RepairOrder.CHECKPOINT, run, name)


def rebuild_repair(ctx: Context) -> Repair:
    path = ctx.db_path("shared")

    def run() -> str:
        # The rebuild holds the write lock throughout (about 6 s per million
        # messages here): a running agent would time out on its own writes.
        pid = db.holder(path)
        if pid is not None:
            raise Busy(
                f"{path.name}: not rebuilding the search index while it is {in_use(pid)}",
                hint="close Kaja and the Telegram bot, then run kaja doctor --fix again",
            )
        with _writing(ctx, "shared") as conn:
            with db.transaction(conn):
                search_index.rebuild(conn)
            n = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        return f"{path.name}: rebuilt the search index ({plural(n, 'message')})"

    return Repair("rebuild-search:shared", RepairOrder.SEARCH_INDEX, run, "shared")
