"""Checks of each database file of the registry: it is SQLite and opens
(`database`), an interrupted write waiting to be rolled back (`recovery`),
whether another process has it open (`in-use`), `quick_check`
(`integrity`), the tables kaja expects (`schema`), and its -wal and free
pages (`space`)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from kaja_cli.core.care.doctor.common import (
    Header,
    db_group,
    in_use,
    listed,
    owner_name,
    quote,
    safe,
    size_of,
)
from kaja_cli.core.care.doctor.context import Context, raise_if_interrupted
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.care.doctor.repairs import checkpoint_repair, recovery_repair, schema_repair
from kaja_cli.core.engine import db, fs
from kaja_cli.core.engine.fs import human_size
from kaja_cli.core.store import guard, schema
from kaja_cli.core.store.paths import companions
from kaja_cli.core.store.registry import DatabaseFile
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, KajaError

# Thresholds. A WAL this large means checkpoints cannot keep up (a reader
# that never lets go); free pages above both limits are worth a VACUUM.
WAL_WARN_BYTES = 64 * 1024 * 1024
FREE_WARN_BYTES = 32 * 1024 * 1024
FREE_WARN_SHARE = 0.20


@check(
    "database", Group.SHARED_FILE,
    "each database exists, is SQLite (not a folder, another file, empty or truncated), opens read-only, is in WAL mode",
    per_database=True,
)  # fmt: skip
def check_database(ctx: Context, name: str) -> Check:
    path = ctx.db_path(name)
    cid, group, label = f"database.{name}", db_group(name), path.name
    kind = db.classify(path)
    where = f"the path comes from: {ctx.file(name).source}"
    not_a_file = _not_regular(ctx, name, kind)
    if not_a_file is not None:
        return not_a_file
    if kind == "other" and path.is_file() and not os.access(path, os.R_OK):
        return Check(cid, group, ERROR, f"{path} cannot be read: permission denied", [where],
                     fix=f"check its owner and mode: ls -l {quote(path)}")  # fmt: skip
    if kind == "missing":
        if name == "shared":
            return Check(cid, group, WARN, f"no Kaja store at {path} yet",
                         ["a fresh machine: Kaja creates it on its first start", where],
                         fix="start Kaja (or `kaja demo` for a sample store), or point --db at the store")  # fmt: skip
        return Check(cid, group, OK, f"{label}: not created yet", [where])
    if kind == "dir":
        return Check(cid, group, ERROR, f"{path} is a folder, not a SQLite database", [where],
                     fix=_not_a_database_fix(ctx.file(name)))  # fmt: skip
    size = path.stat().st_size
    if kind == "other":
        return Check(cid, group, ERROR, f"{path} is not a SQLite database ({human_size(size)}, no SQLite header)",
                     [where, "kaja never writes to it"],
                     fix=_not_a_database_fix(ctx.file(name)))  # fmt: skip
    if kind == "empty":
        return Check(cid, group, WARN, f"{label}: an empty file (0 bytes)",
                     [str(path), "SQLite reads it as an empty database; Kaja creates the tables on its next start"],
                     fix="create the tables", fixable=True, repairs=(schema_repair(ctx, name),))  # fmt: skip
    header = Header.read(path)
    details = [str(path), where]
    if header is None:
        return Check(cid, group, ERROR, f"{label}: the SQLite header is cut short ({plural(size, 'byte')})", details,
                     fix="restore the file from a backup")  # fmt: skip
    details.append(f"page size {header.page_size}, last written by SQLite {header.version}")
    too_new = db.format_too_new(path)
    if too_new:
        return Check(cid, group, ERROR, f"{label}: {too_new}", details, fix=db.TOO_NEW_HINT)
    if ctx.holder(name) is None and _main_file_is_whole(path):
        # Otherwise the pages the header counts may be in the -wal (a
        # checkpoint cut short), or a rollback is pending: SQLite's own
        # checks say whether anything is missing.
        truncated = _truncation(header, size)
        if truncated:
            return Check(cid, group, ERROR, f"{label} is truncated: {truncated}", details,
                         fix=_recover_advice(ctx.file(name)))  # fmt: skip
    err = ctx.open_error(name)
    if isinstance(err, db.NeedsRecovery):  # `recovery` says what, and repairs it
        return Check(cid, group, OK, f"{label}: SQLite, {human_size(size)}",
                     [*details, "looked at further once the interrupted write is rolled back"])  # fmt: skip
    if err is not None:
        if isinstance(err, Busy):
            return Check(
                cid, group, WARN, f"{label}: not checked, the file is busy", details, fix=err.hint
            )
        reason = ctx.open_reason(name) or err.message
        if _is_damage(reason):
            return Check(cid, group, ERROR, f"{label} is damaged: it cannot be opened ({reason})",
                         details, fix=_recover_advice(ctx.file(name)))  # fmt: skip
        return Check(cid, group, ERROR, f"{label} cannot be opened: {reason}", details,
                     fix=f"check the owner and mode of the file and its folder: "
                     f"ls -ld {quote(path.parent)} {quote(path)}")  # fmt: skip
    foreign = _not_kajas(ctx, name, details)
    if foreign is not None:
        return foreign
    if not header.wal:
        return Check(cid, group, WARN, f"{label}: {human_size(size)}, not in WAL mode",
                     [*details, "without WAL, the terminal chat and the Telegram bot cannot use it at the same time"],
                     fix="switch it to WAL (needs Kaja closed)", fixable=True,
                     repairs=(schema_repair(ctx, name),))  # fmt: skip
    return Check(cid, group, OK, f"{label}: SQLite, {human_size(size)}, WAL mode", details)


def _not_regular(ctx: Context, name: str, kind: str) -> Check | None:
    """A FIFO, a device or a folder at the database's path or at its -wal, -shm
    or -journal: reported, never opened (a FIFO would block every reader)."""
    path = ctx.db_path(name)
    cid, group = f"database.{name}", db_group(name)
    where = f"the path comes from: {ctx.file(name).source}"
    if kind == "special":
        what = fs.what_is(path.stat())
        return Check(cid, group, ERROR, f"{path} is {what}, not a SQLite database",
                     [where, "kaja never opens it"], fix=_not_a_database_fix(ctx.file(name)))  # fmt: skip
    if kind not in ("sqlite", "empty"):
        return None
    for extra in companions(path):
        what = fs.regular_or_missing(extra)
        if what is not None:
            aside = quote(str(extra) + ".aside")
            return Check(cid, group, ERROR, f"{extra} is {what}, where SQLite keeps a file of {path.name}'s",
                         [where, "kaja opens no database beside it: SQLite would block on it or fail"],
                         fix=f"close Kaja, then move it aside: mv -- {quote(extra)} {aside}")  # fmt: skip
    return None


def _not_kajas(ctx: Context, name: str, details: list[str]) -> Check | None:
    """A SQLite file that is not Kaja's (by its tables and columns): reported,
    and no repair is offered (`guard`: kaja changes nothing in it)."""
    verdict = ctx.verdict(name)
    if verdict is None or verdict.kajas:
        return None
    path = ctx.db_path(name)
    return Check(
        f"database.{name}", db_group(name), ERROR,
        f"{path.name}: a SQLite database, but not Kaja's {ctx.file(name).spec.noun} (its tables: {verdict.named()})",
        [*details, "kaja reads it but changes nothing in it: no repair, no chmod, no wipe"],
        fix=_not_a_database_fix(ctx.file(name)),
    )  # fmt: skip


def _main_file_is_whole(path: Path) -> bool:
    """No committed change waits in the -wal and no rollback in a -journal:
    the main file alone is the database."""
    wal, _shm, journal = companions(path)
    return not size_of(journal) and not db.wal_commits(wal)


def _truncation(header: Header, size: int) -> str | None:
    if header.page_count is not None:
        expected = header.page_count * header.page_size
        if size < expected:
            return (f"its header counts {plural(header.page_count, 'page')} ({human_size(expected)}),"
                    f" the file holds {human_size(size)}")  # fmt: skip
    if size % header.page_size:
        return "it ends in the middle of a page"
    return None


def _is_damage(reason: str) -> bool:
    low = reason.lower()
    return any(w in low for w in ("malformed", "corrupt", "not a database", "encrypted"))


def _not_a_database_fix(file: DatabaseFile) -> str:
    """Point the setting that placed it elsewhere; a side database is made anew."""
    names = file.spec.moved_by.names()
    if names:
        what = "the database file" if file.spec.host is None else f"the {file.spec.label} database"
        return f"point {', '.join(names[:-1])} or {names[-1]} at {what}"
    path, aside = file.path, quote(str(file.path) + ".bak")
    return f"move it aside and Kaja creates a new one: mv -- {quote(path)} {aside}"


def _recover_advice(file: DatabaseFile) -> str:
    path = file.path
    if file.spec.disposable:
        # The seed: the cache "churns constantly and can be deleted at any time".
        files = " ".join(quote(p) for p in [path, *companions(path)[:2]])
        return f"the cache can be deleted at any time: close Kaja, then rm -f -- {files}"
    rescued = path.with_name(path.stem + "-recovered" + path.suffix)
    return (
        f"close Kaja, keep a copy of the file, then recover what SQLite can still read: "
        f"sqlite3 {quote(path)} .recover | sqlite3 {quote(rescued)}"
    )


@check(
    "recovery", Group.SHARED_FILE,
    "an interrupted write (a hot -journal, a -wal a read-only open cannot use) waiting to be rolled back",
    per_database=True, unopened=True,
)  # fmt: skip
def check_recovery(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"recovery.{name}", db_group(name), path.name
    if db.classify(path) != "sqlite":
        return None  # the database check says what is there
    err = ctx.open_error(name)
    if not isinstance(err, db.NeedsRecovery):
        return Check(cid, group, OK, f"{label}: no interrupted write to roll back")
    left = err.leftover
    journal = left.name.endswith("-journal")
    size = human_size(size_of(left) or 0)
    what = (f"{left.name} ({size}) to roll back" if journal
            else f"{left.name} ({size}) with committed changes a read-only check cannot see"
            f" ({err.why or 'its -shm cannot be used'})")  # fmt: skip
    summary = f"{label}: an interrupted write left {what}"
    details = [
        "no process is writing it: a writer stopped in the middle of a transaction (a crash, kill -9, a power cut)",
        "rolling it back leaves the file as the last finished transaction left it: nothing committed is lost"
        if journal else "recovering it puts those changes in the file: nothing committed is lost",
        "until then the other checks of this file cannot run",
    ]  # fmt: skip
    if not guard.may_recover(ctx.file(name))(path):
        return Check(cid, group, ERROR, f"{summary}, and {label} is not recognisably Kaja's",
                     [*details, "kaja rolls back only a file of Kaja's"],
                     fix="open it with the program that wrote it, or point kaja at Kaja's file")  # fmt: skip
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        who = owner_name(path.stat().st_uid)
        return Check(cid, group, ERROR, f"{summary}; it needs write access to {label} and its folder",
                     [*details, "kaja's commands cannot read the file until it is done"],
                     fix=f"run `kaja doctor --fix` as {who}, the owner of {label}")  # fmt: skip
    return Check(cid, group, WARN, summary,
                 [*details, "any other kaja command, or the agent, does it on its first read"],
                 fix="roll it back" if journal else "recover it", fixable=True,
                 repairs=(recovery_repair(ctx, name, left),))  # fmt: skip


@check("in-use", Group.SHARED_FILE, "another process has the file open; a stale -wal with no holder",
       per_database=True, unopened=True)  # fmt: skip
def check_in_use(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"in-use.{name}", db_group(name), path.name
    if db.classify(path) not in ("sqlite", "empty"):
        return None  # the database check says what is there
    wal, shm, _journal = companions(path)
    pid = ctx.holder(name)
    wal_size = size_of(wal) if ctx.companion(wal) else None
    if pid is not None:
        details = [f"-wal: {human_size(wal_size or 0)}"] if wal_size is not None else []
        return Check(cid, group, OK, f"{label}: {in_use(pid)}", details)
    if wal_size and db.wal_commits(wal):
        details = ["no process has the file open: its last writer stopped without closing it",
                   "the committed changes in it are replayed the next time the file is opened; nothing is lost"]  # fmt: skip
        if not ctx.companion(shm):
            details.append(
                "its -shm is gone: the other checks read the file without the -wal's changes"
            )
        return Check(cid, group, WARN, f"{label}: a stale -wal ({human_size(wal_size)}) with no process holding it",
                     details, fix="checkpoint its changes into the file", fixable=True,
                     repairs=(checkpoint_repair(ctx, name),))  # fmt: skip
    details = (
        ["a -wal/-shm pair with no committed change in it is left over: harmless"]
        if ctx.companion(wal) or ctx.companion(shm)
        else []
    )
    return Check(cid, group, OK, f"{label}: not open in another process", details)


@check(
    "integrity",
    Group.SHARED_FILE,
    "quick_check (integrity_check with --thorough)",
    per_database=True,
    scans="reads every page of the file",
)
def check_integrity(ctx: Context, name: str) -> Check:
    path = ctx.db_path(name)
    cid, group, label = f"integrity.{name}", db_group(name), path.name
    pragma = ctx.integrity_pragma
    try:
        rows, seconds = ctx.integrity(name)
    except KajaError as e:
        raise_if_interrupted()
        status = WARN if "busy" in str(e) else ERROR
        return Check(
            cid, group, status, f"{label}: {pragma} could not run: {e.message}", fix=e.hint
        )
    except sqlite3.Error as e:
        raise_if_interrupted(e)
        text = str(e)
        if "locked" in text or "busy" in text:
            return Check(cid, group, WARN, f"{label}: {pragma} could not run: the file is busy")
        return Check(cid, group, ERROR, f"{label} is damaged: {text}", [f"{pragma} stopped on it"],
                     fix=_recover_advice(ctx.file(name)))  # fmt: skip
    if rows == ["ok"]:
        return Check(cid, group, OK, f"{label}: {pragma} passed", [f"took {seconds:.2f} s"])
    return Check(cid, group, ERROR, f"{label} is damaged: {pragma} found {plural(len(rows), 'problem')}"
                 + (" (the first 20)" if len(rows) >= 20 else ""), rows, fix=_recover_advice(ctx.file(name)))  # fmt: skip


def _describe_missing(items: list[str]) -> str:
    counts: dict[str, int] = {"table": 0, "column": 0, "index": 0, "step": 0}
    for m in items:
        what = m.split(" ", 1)[0]
        counts[what] = counts.get(what, 0) + 1
    words = {"step": "upgrade step"}
    return ", ".join(plural(n, words.get(what, what)) for what, n in counts.items() if n)


@check(
    "schema",
    Group.SHARED_FILE,
    "the tables, columns and indexes kaja and the agent use",
    per_database=True,
)
def check_schema(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"schema.{name}", db_group(name), path.name
    conn = ctx.conn(name)
    if conn is None or db.classify(path) == "empty" or ctx.foreign(name):
        return None  # the database check says why

    def look() -> Check:
        file = ctx.file(name)
        kinds = ("table", "column", "index", "step")
        missing = sorted(
            (m for m in schema.missing(conn, file) if not m.startswith("search index")),
            key=lambda m: kinds.index(m.split(" ", 1)[0]) if m.split(" ", 1)[0] in kinds else 9,
        )
        expected = {t.name for t in schema.tables_of(file)}
        present = db.table_names(conn)
        extra = sorted(
            t for t in present - expected
            if not t.startswith(("sqlite_", schema.FTS_TABLE)) and t != "schedule_runs"
        )  # fmt: skip
        details = [f"also holds {', '.join(extra)} (written by another program?)"] if extra else []
        newer = schema.steps_unknown(conn) if file.search_index else []
        if newer:
            return Check(cid, group, WARN, f"{label}: upgraded by a newer kaja ({noun(len(newer), 'step')} {', '.join(newer)})",
                         [*listed(missing), *details],
                         fix="update kaja: this one may not know what the newer one added")  # fmt: skip
        if missing:
            return Check(cid, group, WARN, f"{label}: missing {_describe_missing(missing)}",
                         listed(missing) + details,
                         fix="add them (CREATE TABLE IF NOT EXISTS, ALTER TABLE … ADD COLUMN); no row changes",
                         fixable=True, repairs=(schema_repair(ctx, name),))  # fmt: skip
        return Check(cid, group, OK, f"{label}: every table and column kaja expects ({plural(len(expected), 'table')})",
                     details)  # fmt: skip

    return safe(look, cid, group, f"{label}: the schema")


@check(
    "space",
    Group.SHARED_FILE,
    "WAL size and free pages (suggests a checkpoint or VACUUM)",
    per_database=True,
)
def check_space(ctx: Context, name: str) -> Check | None:
    path = ctx.db_path(name)
    cid, group, label = f"space.{name}", db_group(name), path.name
    conn = ctx.conn(name)
    if conn is None:
        return None

    def look() -> Check:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page_size
        total = conn.execute("PRAGMA page_count").fetchone()[0] * page_size
        wal = size_of(fs.beside(path, "-wal")) or 0
        summary = f"{label}: -wal {human_size(wal)}, {human_size(free)} in free pages"
        problems, fixes, repairs = [], [], []
        if wal > WAL_WARN_BYTES:
            problems.append(
                f"the -wal has grown to {human_size(wal)}: checkpoints are not keeping up"
            )
            fixes.append("checkpoint it (--fix)")
            repairs.append(checkpoint_repair(ctx, name))
        if free >= FREE_WARN_BYTES and free >= FREE_WARN_SHARE * max(total, 1):
            problems.append(f"{human_size(free)} of {human_size(total)} is free pages")
            fixes.append(f"close Kaja and the Telegram bot, then: sqlite3 {quote(path)} VACUUM")
        if not problems:
            return Check(cid, group, OK, summary)
        return Check(cid, group, WARN, f"{label}: {'; '.join(problems)}", [summary],
                     fix="; ".join(fixes), fixable=bool(repairs), repairs=tuple(repairs))  # fmt: skip

    return safe(look, cid, group, f"{label}: its size")
