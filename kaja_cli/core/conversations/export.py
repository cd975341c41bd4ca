"""`kaja sessions export --all`: every session a filter selects, streamed.

`sessions()` yields one `SessionExport` per session: its row, summaries,
timeline events, model calls and pending call as plain data, and its
messages as an iterator of JSON texts read from SQLite as they are written
out. Memory stays bounded by the largest message (and a session's summaries
and events), not by the session or the store: the 76,000-message session is
never held whole.

Each session is read in one read transaction of its own (a consistent
session, while the agent writes), and the ids are picked first with the
listing's own condition (`filter.where`): a session deleted meanwhile
is skipped. `--redact` (core/redact.py) runs over every JSON text, so every
format gets the same redacted data.

`output_target()` decides where an export may write, by `core/guard.py`'s
rule: never one of the store's databases, journals or image files (SPEC §3),
a FIFO or a device.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from kaja_cli.core.conversations.columns import columns
from kaja_cli.core.conversations.filter import FILTER_TABLES, SessionFilter, matching_ids
from kaja_cli.core.conversations.transcript import SessionReader
from kaja_cli.core.engine import fs
from kaja_cli.core.engine.db import SecondReader, second_reader, stop_reading
from kaja_cli.core.store import guard
from kaja_cli.errors import Failed, Refused

if TYPE_CHECKING:
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Paths

Redact = Callable[[str], str]


class SessionExport(NamedTuple):
    """One session: `head` (session, summaries, events, model_calls, pending)
    and its messages' JSON texts, in order, read as they are consumed."""

    head: dict[str, Any]
    message_count: int
    # UTF-8 JSON text, as SQLite made it: each item one message's, or (without
    # --redact) a run of consecutive messages' joined by commas.
    messages: Iterator[bytes]
    # The same messages for Markdown or HTML (`rows("md")`), read plain where
    # that changes nothing (`transcript._Reader.message_pieces`); None: parse
    # `messages`. Consume one of the two, never both.
    rows: Callable[[str], Iterator[tuple | dict[str, Any]]] | None = None

    @property
    def id(self) -> str:
        return str(self.head["session"]["id"])


class Selection(NamedTuple):
    """The sessions an export will write, picked before the first is read."""

    ids: list[str]
    location: Path | str  # the store's file, or in cloud mode the server and schema
    store_exists: bool = True


def select(store: Store, flt: SessionFilter) -> Selection:
    """The ids `flt` selects, in the listing's order; a missing store selects none."""
    where = store.location()
    with store.maybe_reader() as conn:
        if conn is None:
            return Selection([], where, store_exists=False)
        return Selection(matching_ids(conn, flt), where)


def redactor(store: Store) -> Redact:
    """A `Redactor` knowing every owner of the store."""
    from kaja_cli.core.conversations.redact import Redactor

    owners: list[str] = []
    with store.maybe_reader() as conn:
        if conn is not None and "owner" in (columns(conn, "sessions").get("sessions") or ()):
            owners = [
                r[0] for r in conn.execute("SELECT DISTINCT owner FROM sessions")
                if isinstance(r[0], str)
            ]  # fmt: skip
    return Redactor(owners)


def sessions(
    store: Store, ids: list[str], *, redact: Redact | None = None
) -> Iterator[SessionExport]:
    """Each session of `ids` still in the store, read as it is consumed.

    Consume each one's messages before asking for the next: the next session
    begins a read transaction of its own."""
    with store.reader() as conn:
        yield from read(conn, store.paths.images_dir, ids, redact=redact)


def read(
    conn: sqlite3.Connection, images_dir: Path, ids: list[str], *, redact: Redact | None = None
) -> Iterator[SessionExport]:
    """`sessions` on a connection the caller holds open (`sessions export ID`
    found the session on it: one open, not two)."""
    have = columns(conn, *FILTER_TABLES)
    if not (have.get("sessions") and "id" in have["sessions"]):
        return
    texts: dict[str, frozenset[str]] = {}  # the tables' TEXT columns, asked once
    # Opened before the first BEGIN: a long session's pages are read on both
    # connections at once (`SecondReader`: it joins a snapshot begun after it looked).
    second = second_reader(conn) if redact is None else None
    for sid in ids:
        if conn.in_transaction:  # the last session's messages were not all read
            stop_reading(conn)  # nor is a thread reading them any longer
            conn.execute("COMMIT")
        if second is not None:
            second.leave()
        conn.execute("BEGIN")
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
            conn.execute("COMMIT")
            continue  # deleted since the ids were picked
        yield _one(conn, sid, images_dir, redact, texts, second)
    if conn.in_transaction:
        stop_reading(conn)
        conn.execute("COMMIT")
    if second is not None:
        second.leave()


def _one(
    conn: sqlite3.Connection,
    sid: str,
    images_dir: Path,
    redact: Redact | None,
    texts: dict[str, frozenset[str]] | None = None,
    second: SecondReader | None = None,
) -> SessionExport:
    r = SessionReader(conn, sid, images_dir, texts, second)
    session = r.session()
    head = {
        "session": session,
        "summaries": r.summaries(),
        "events": r.events(),
        "model_calls": r.model_calls(),
        "pending": p.to_json() if (p := r.pending(session)) else None,
    }
    count = r.message_count()
    # notices or summaries placed between the messages: render counts each one
    placed = bool(head["events"] or head["summaries"])
    if redact is None:  # redaction rewrites the JSON texts: it reads them
        return SessionExport(
            head, count, _then_commit(conn, r.messages_json_runs(condense=False)),
            lambda view: _then_commit(conn, r.message_pieces(view, asides=placed)),
        )  # fmt: skip
    head = json.loads(redact(json.dumps(head, ensure_ascii=False, default=str)))
    messages = (
        redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        for data in r.messages_json_bytes(condense=False)
    )
    return SessionExport(head, count, _then_commit(conn, messages))


def _then_commit(conn: sqlite3.Connection, messages: Iterator[bytes]) -> Iterator[bytes]:
    yield from messages
    if conn.in_transaction:
        conn.execute("COMMIT")


# --- where an export writes ------------------------------------------------------------------
class Target(NamedTuple):
    path: Path | None  # None: stdout; else as named (what the messages say)
    folder: bool  # one file per session inside `path`
    real: Path | None = None  # the file written (a link to a regular file is followed)
    protected: tuple[Path, ...] = ()  # the store's files (`guard.store_files`)

    def file(self, name: str) -> Path:
        """A file of the export folder, checked by the same rule (exit 5)."""
        assert self.path is not None and self.folder
        return guard.write_target(self.path / name, self.protected, what="transcript").real


def output_target(paths: Paths, output: str | None, *, folder_wanted: bool) -> Target:
    """Where `-o` points: stdout, a file, or a folder (an existing one, a
    name ending in `/`, or any name when the format is one file per session).

    `guard.write_target` decides every file (exit 5 for one of the store's
    files, a FIFO, a device, another user's or a read-only file); a folder is
    refused when it is, or lies in, the store."""
    if output is None or output == "-":
        return Target(None, False)
    path = Path(os.path.abspath(os.path.expanduser(output)))
    protected = tuple(guard.store_files(paths))
    if path.is_dir() or output.endswith(("/", os.sep)) or folder_wanted:
        hit = guard.part_of_store(path, protected)
        if hit is not None:
            raise Refused(
                f"-o: {path} is part of Kaja's store ({hit})",
                hint="export somewhere else: kaja never writes over its own files",
            )
        return Target(path, True, path, protected)
    real = guard.write_target(path, protected, what="transcript").real
    return Target(path, False, real, protected)


def file_for(sid: str, ext: str) -> str:
    """A session's file name in an export folder: `<id>.<ext>` (ids are safe names)."""
    from kaja_cli.core.conversations import images

    if not images.safe_name(sid):
        raise Failed(f"session id {sid!r} is not a safe file name")
    return f"{sid}.{ext}"


@contextmanager
def private_file(path: Path) -> Iterator[BinaryIO]:
    """A file written whole or not at all: a temporary file beside it (0600),
    flushed to disk, then renamed over `path` (a `Target`'s `real` file, which
    `guard.write_target` allowed)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, fs.FILE_MODE)
    except OSError as e:
        raise Failed(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def ensure_folder(path: Path) -> None:
    try:
        fs.ensure_private_dir(path)
    except OSError as e:
        raise Failed(f"cannot create {path}: {e.strerror or e}") from None
