"""`kaja sessions prune`: delete the sessions a filter selects, beside a running
agent (`plan()`, then `execute()`).

With `--yes` there is no question to ask, so prune acts in one pass
(`selected()`, then `execute(measure=True)`): it reads only which sessions
the filter selects and their message counts (for the batches), and reports
what its statements deleted, the text and image files measured batch by
batch; the counts are those a `--dry-run` plan shows (a test holds them equal).

The plan reads only (a read-only connection): the sessions the filter selects
(`session_filter.where`, the listing's own condition), less those with a tool
call waiting on the human unless asked; their rows per table, the bytes of
their messages, their image files, and a sample to show. The same plan drives
`--dry-run`, the question and the execution.

The execution deletes in batches, one transaction each (`BEGIN IMMEDIATE`; in
cloud mode a transaction on the server that locks the batch's session rows
first), so the agent never waits on kaja for long: inside each batch's
transaction the filter is checked again, and a session the agent touched
meanwhile (a new message makes it newer, a call now waits on the human, it
changed owner or was archived) is left alone. Image folders (local files in
either mode) go after their batch committed, never through a symbolic link: a
linked session folder loses the link, and a linked `files/` or
`files/images/` keeps its folders (they are counted as kept). Before each
commit a marker beside the shared file (`kaja.db.pruning`, in the state dir in
cloud mode too) lists the batch's image folders; a prune killed after a
commit leaves it, and the next prune removes the folders it lists whose
sessions are gone, then the marker.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kaja_cli.core.conversations import cascade, images
from kaja_cli.core.conversations.filter import FILTER_TABLES, SessionFilter, when, where
from kaja_cli.core.conversations.sessions import col, columns
from kaja_cli.core.engine import db, dialect, fs
from kaja_cli.core.store import markers
from kaja_cli.core.wording import noun, plural
from kaja_cli.errors import Busy, ExitStatus, Failed, Interrupted, KajaError, Refused

if TYPE_CHECKING:
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Paths

Progress = Callable[[int, int | None], None]
SAMPLE = 5  # sessions shown in the plan: the oldest and the newest
# One transaction deletes at most this many sessions, or messages (each
# message also leaves the search index): about 0.1 s of the write lock on a
# busy 2-core machine, so the agent's writes never wait longer than that.
BATCH_SESSIONS = 100
BATCH_MESSAGES = 2000


class Candidate(NamedTuple):
    """A session the plan would delete, with what the plan shows of it."""

    id: str
    owner: str | None
    title: str | None
    updated: str | None
    messages: int


class PrunePlan(NamedTuple):
    filter: SessionFilter
    sessions: list[Candidate]  # what will be deleted, oldest first
    rows: dict[str, int]  # rows per table, the sessions' own included
    message_bytes: int  # text of their messages (content, parts, reasoning)
    image_files: int
    image_bytes: int
    pending_kept: int  # sessions the filter selects but kept: a call waits on the human
    leftovers: list[Path]  # image folders an interrupted prune left behind
    location: Path | str  # the store's file, or in cloud mode the server and schema
    store_exists: bool = True

    @property
    def sample(self) -> list[Candidate]:
        s = self.sessions
        return s if len(s) <= SAMPLE else [*s[: SAMPLE - 2], *s[-2:]]

    def to_json(self, done: PruneResult | None = None, *, dry_run: bool = False) -> dict:
        """`kaja sessions prune --json`: the plan, and what `done` did."""
        doc = {"action": "prune", "dry_run": dry_run, "done": done is not None}
        doc |= self.filter.to_json() | {
            "sessions": [c._asdict() for c in self.sessions],
            "rows": self.rows,
            "message_bytes": self.message_bytes,
            "image_files": self.image_files,
            "image_bytes": self.image_bytes,
            "pending_kept": self.pending_kept,
            "leftover_image_folders": [str(p) for p in self.leftovers],
        }
        if done is not None:
            doc |= {
                "deleted": done.deleted,
                "deleted_rows": done.rows,
                "skipped": done.skipped,
                "image_folders_removed": done.image_folders,
                "kept": [{"path": str(p), "reason": why} for p, why in done.kept_folders],
                "batches": done.batches,
            }
        return doc


class PruneResult(NamedTuple):
    deleted: int  # sessions
    rows: dict[str, int]
    image_folders: int  # removed
    kept_folders: list[tuple[Path, str]]  # (folder, why it stayed)
    skipped: int  # planned, but changed meanwhile (or gone): left alone
    batches: int
    # Measured while deleting (`execute(measure=True)`, the one pass of --yes):
    # the sessions deleted, the bytes of their text, their image files.
    ids: frozenset[str] = frozenset()
    message_bytes: int = 0
    image_files: int = 0
    image_bytes: int = 0

    def reported(self, light: PrunePlan) -> PrunePlan:
        """The plan as this one pass did it: the sessions it deleted, with the
        rows, text and image files its statements deleted."""
        return light._replace(
            sessions=[c for c in light.sessions if c.id in self.ids], rows=self.rows,
            message_bytes=self.message_bytes, image_files=self.image_files,
            image_bytes=self.image_bytes,
        )  # fmt: skip


# --- the plan ---------------------------------------------------------------------------
def plan(store: Store, flt: SessionFilter, *, include_pending: bool = False) -> PrunePlan:
    """What prune would delete; reads, never writes. A missing store plans nothing."""
    return _read(store, flt, include_pending=include_pending, counted=True)


def selected(store: Store, flt: SessionFilter, *, include_pending: bool = False) -> PrunePlan:
    """The sessions prune would delete, each with its messages counted through
    the index on their session, and nothing else: what `--yes` reads before it
    deletes in one pass (`execute(measure=True)` then counts what went)."""
    return _read(store, flt, include_pending=include_pending, counted=False)


def _read(store: Store, flt: SessionFilter, *, include_pending: bool, counted: bool) -> PrunePlan:
    """The sessions the filter selects and the pending ones kept; `counted`:
    with their rows per table, the bytes of their text and their image files."""
    path = store.location()
    leftovers = _leftovers(store)
    flt = flt._replace(limit=0, pending=None if include_pending else False)
    with store.maybe_reader(writing=True) as conn:  # on the server the deletes will read
        if conn is None:
            return PrunePlan(flt, [], {}, 0, 0, 0, 0, leftovers, path, store_exists=False)
        have = columns(conn, *FILTER_TABLES)
        s = have.get("sessions")
        if not s or "id" not in s:
            return PrunePlan(flt, [], {}, 0, 0, 0, 0, leftovers, path)
        sessions, text = _candidates(conn, have, flt, text=counted)
        pending_kept = 0
        if not include_pending:
            cond, args = where(have, flt._replace(pending=True), d=dialect.of(conn))
            pending_kept = conn.execute(
                f"SELECT count(*) FROM sessions AS s WHERE {cond}", args
            ).fetchone()[0]
        rows = {}
        if counted:
            rows = _count_rows(conn, sessions, "sessionId" in (have.get("messages") or []))
    files, size = _image_sizes(store.paths, [c.id for c in sessions]) if counted else (0, 0)
    return PrunePlan(flt, sessions, rows, text, files, size, pending_kept, leftovers, path)


def _image_sizes(paths: Paths, session_ids: list[str]) -> tuple[int, int]:
    """The image files of these sessions' folders and their bytes (a linked
    folder counts nothing: prune removes only the link)."""
    files = size = 0
    for sid in session_ids:
        folder = images.session_dir(paths.images_dir, sid)
        if folder is not None and folder.is_dir() and not folder.is_symlink():
            b, n = fs.tree_size(folder)
            size, files = size + b, files + n
    return files, size


def _candidates(
    conn: sqlite3.Connection, have: dict[str, list[str]], flt: SessionFilter, *, text: bool = True
) -> tuple[list[Candidate], int]:
    """The sessions the filter selects, each with its messages counted, and
    (`text`) the bytes of their text (content, parts, reasoning): one
    statement, each session's messages read once through the index on their
    session."""
    s = have["sessions"]
    d = dialect.of(conn)
    cond, args = where(have, flt, d=d)
    m = have.get("messages") or []
    count = size = "0"
    if "sessionId" in m:
        mine = 'FROM messages AS m WHERE m."sessionId" = s.id'
        count = f"(SELECT count(*) {mine})"
        parts = _text_parts(d, m, "m")
        if parts and text:
            size = f"(SELECT coalesce(sum({' + '.join(parts)}), 0) {mine})"
    sql = (
        f"SELECT s.id, {col(s, 's', 'owner')}, {col(s, 's', 'title')}, {when(s)}, {count}, {size}"
        f" FROM sessions AS s WHERE {cond} ORDER BY {when(s)}, s.id"
    )
    found, text = [], 0
    for i, o, t, u, n, b in conn.execute(sql, args):
        found.append(Candidate(str(i), o if isinstance(o, str) else None,
                               t if isinstance(t, str) else None,
                               u if isinstance(u, str) else None, int(n or 0)))  # fmt: skip
        text += int(b or 0)
    return found, text


def _text_parts(d: dialect.Dialect, message_columns: list[str], alias: str = "") -> list[str]:
    """A message's text columns, each as its length in bytes (`alias`: the
    messages' name in the statement, none where the table is the statement's)."""
    at = f"{alias}." if alias else ""
    return [
        d.byte_length(f'{at}"{c}"')
        for c in ("content", "parts", "reasoning")
        if c in message_columns
    ]


def _count_rows(
    conn: sqlite3.Connection, sessions: list[Candidate], counted: bool
) -> dict[str, int]:
    """Rows per table; the messages are the candidates' (`counted`: the table
    has their session column), not counted again."""
    if not sessions:
        return {}
    ids = [c.id for c in sessions]
    given = {"messages": sum(c.messages for c in sessions)} if counted else {}
    try:
        return cascade.count_session_rows(conn, ids, given=given)
    except sqlite3.OperationalError:
        # A table another program left without a column the cascade uses:
        # the counts are for the plan only.
        return {"sessions": len(ids)}


# --- the execution ----------------------------------------------------------------------
def batches(sessions: list[Candidate]) -> list[list[Candidate]]:
    """The plan's sessions in transactions of at most BATCH_SESSIONS sessions
    or BATCH_MESSAGES messages (a bigger session is a batch of its own)."""
    out: list[list[Candidate]] = []
    current: list[Candidate] = []
    messages = 0
    for c in sessions:
        if current and (len(current) >= BATCH_SESSIONS or messages + c.messages > BATCH_MESSAGES):
            out.append(current)
            current, messages = [], 0
        current.append(c)
        messages += c.messages
    if current:
        out.append(current)
    return out


def execute(
    store: Store, pruning: PrunePlan, progress: Progress | None = None, *, measure: bool = False
) -> PruneResult:
    """Delete the planned sessions, a batch per transaction, then each batch's
    image folders (the module docstring). Ctrl-C between batches keeps what
    was committed and says how to finish. `measure`: also count, in each
    batch, the text and image files of what it deletes (the one pass of
    `--yes`, which read no plan of them)."""
    paths = store.paths
    report = progress or (lambda done, total=None: None)
    total = len(pruning.sessions)
    rows: dict[str, int] = {}
    removed, kept = _finish_leftovers(store)
    deleted = skipped = done = 0
    text = files = size = 0
    ids: set[str] = set()
    groups = batches(pruning.sessions)
    report(0, total)
    with store.writer() as conn:
        have = columns(conn, *FILTER_TABLES)
        known = cascade.tables(conn)
        for n, group in enumerate(groups):
            try:
                gone, counts, bytes_ = _delete_batch(
                    conn, have, known, pruning.filter, group, paths, measure=measure
                )
            except KeyboardInterrupt:
                so_far = PruneResult(deleted, rows, removed, kept, skipped, n)
                raise _after(Interrupted("interrupted"), so_far, total, len(groups)) from None
            except KajaError as e:
                if not n:
                    raise  # nothing was deleted: the error says so as it is
                so_far = PruneResult(deleted, rows, removed, kept, skipped, n)
                raise _after(e, so_far, total, len(groups)) from None
            for table, k in counts.items():
                rows[table] = rows.get(table, 0) + k
            deleted += len(gone)
            skipped += len(group) - len(gone)
            if measure:
                ids.update(gone)
                text += bytes_
                n, b = _image_sizes(paths, gone)
                files, size = files + n, size + b
            try:
                markers.checkpoint("prune-images")
                r, k = remove_folders(paths, gone)
                _clear_marker(paths)
            except KeyboardInterrupt:
                raise Interrupted(
                    f"interrupted after deleting {deleted} of {plural(total, 'session')}, before all"
                    " their image folders",
                    hint="run the same `kaja sessions prune` again to finish",
                ) from None
            removed += r
            kept += k
            done += len(group)
            report(done, total)
    return PruneResult(
        deleted, rows, removed, kept, skipped, len(groups), frozenset(ids), text, files, size
    )


def _after(e: KajaError, done: PruneResult, total: int, batches: int) -> KajaError:
    """`e`, met after `done.batches` batches were committed: what it stopped,
    and what stays done. A lost connection's own "nothing was changed" would be
    false here."""
    kind = {ExitStatus.BUSY: Busy, ExitStatus.INTERRUPTED: Interrupted}.get(e.status, Failed)
    messages = plural(done.rows.get("messages", 0), "message")
    return kind(
        f"{e.message} after {done.deleted} of {plural(total, 'session')} and their {messages}"
        f" {noun(done.deleted, 'was', 'were')} deleted"
        f" ({done.batches} of {plural(batches, 'batch', 'batches')})",
        hint="those stay deleted, the rest as it was: run the same `kaja sessions prune` again"
        " to finish",
    )


def _delete_batch(
    conn: sqlite3.Connection,
    have: dict[str, list[str]],
    known: cascade.Tables,
    flt: SessionFilter,
    group: list[Candidate],
    paths: Paths,
    *,
    measure: bool = False,
) -> tuple[list[str], dict[str, int], int]:
    """One transaction: the sessions of `group` that still match, their rows,
    and (`measure`) the bytes of their messages' text.

    Their rows are locked first (on a server, where the agent writes beside
    kaja: `lock_rows`), then the filter is checked again: what it sees stays
    so until the commit."""
    wrote = False
    try:
        with db.transaction(conn):
            d = dialect.of(conn)
            listed, ids = d.in_list("s.id", [c.id for c in group])
            if d.lock_rows:
                conn.execute(f"SELECT s.id FROM sessions AS s WHERE {listed}{d.lock_rows}", (ids,))
            cond, args = where(have, flt, d=d)
            still = [
                r[0]
                for r in conn.execute(
                    f"SELECT s.id FROM sessions AS s WHERE {listed} AND {cond}", (ids, *args)
                )
            ]
            # The bytes of their messages' text, summed as they are deleted.
            parts = _text_parts(d, have.get("messages") or []) if measure else []
            if still:  # their vectors in kaja's semantic index go too
                from kaja_cli.core.conversations.semantic import index

                index.forget_sessions(paths.semantic_db, conn, still)
            counts, text = (
                cascade.delete_measured(conn, still, known, " + ".join(parts) or None)
                if still
                else ({}, 0)
            )
            folders = [
                str(d) for sid in still
                if (d := images.session_dir(paths.images_dir, sid)) and _lexists(d)
            ]  # fmt: skip
            if folders:
                markers.begin(marker_path(paths), markers.Operation.PRUNE, paths=folders)
                wrote = True
            markers.checkpoint("prune-commit")
    except BaseException:
        if wrote:  # rolled back: the folders stay with their sessions
            markers.finish(marker_path(paths))
        raise
    return still, counts, int(text or 0)


# --- image folders, never through a link ------------------------------------------------
def _lexists(path: Path) -> bool:
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def remove_folders(paths: Paths, session_ids: list[str]) -> tuple[int, list[tuple[Path, str]]]:
    """Remove `images/<id>/` of these (deleted) sessions: (removed, kept with why).

    A session folder that is a link loses the link; under a linked `files/`
    or `images/` nothing is removed (it would be deleting through the link)."""
    removed = 0
    kept: list[tuple[Path, str]] = []
    folders = [d for sid in session_ids if (d := images.session_dir(paths.images_dir, sid))]
    folders = [d for d in folders if _lexists(d)]
    if not folders:
        return 0, []
    linked = cascade.images_link(paths.images_dir)
    for folder in folders:
        if linked is not None:
            kept.append((folder, f"{linked} is a symbolic link: kaja deletes nothing through one"))
            continue
        mode = os.lstat(folder).st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
            folder.unlink()
        else:
            shutil.rmtree(folder)  # fd-based: links inside lose the link, never their target
        removed += 1
    return removed, kept


# --- the marker an interrupted prune leaves (core/store/markers.py) ---------------------------
def marker_path(paths: Paths) -> Path:
    return markers.path(paths, markers.Operation.PRUNE)


def _clear_marker(paths: Paths) -> None:
    if markers.lexists(marker_path(paths)):
        markers.finish(marker_path(paths))


def _marker(paths: Paths) -> markers.Pending | None:
    """The marker an interrupted prune left; Refused (exit 5) when what is at
    its path is not a file kaja wrote (it is never read, nor removed)."""
    found = markers.of(marker_path(paths), markers.Operation.PRUNE)
    if found is not None and (why := markers.refusal(found)) is not None:
        raise Refused(why, hint="nothing was deleted")
    return found


def _listed(paths: Paths) -> list[Path]:
    """The image folders the marker lists that are still there (and in reach)."""
    found = _marker(paths)
    return [
        folder
        for folder in (found.listed if found is not None else [])
        if folder.parent == paths.images_dir and images.safe_name(folder.name) and _lexists(folder)
    ]


def _leftovers(store: Store) -> list[Path]:
    """Folders an interrupted prune left, whose sessions are gone (read-only)."""
    listed = _listed(store.paths)
    if not listed:
        return listed
    try:
        with store.maybe_reader() as conn:
            if conn is None:  # no store: no session is left
                return listed
            live = _live(conn, [p.name for p in listed])
    except Exception:  # an unreadable store: its folders stay, nothing is guessed
        return []
    return [p for p in listed if p.name not in live]


def _live(conn: sqlite3.Connection, ids: list[str]) -> set[str]:
    cond, arg = dialect.of(conn).in_list("id", ids)
    return {r[0] for r in conn.execute(f"SELECT id FROM sessions WHERE {cond}", (arg,))}


def _finish_leftovers(store: Store) -> tuple[int, list[tuple[Path, str]]]:
    """Remove what an interrupted prune left (its sessions are gone), then its marker.

    A marker written before a rollback lists folders whose sessions are still
    there: those stay."""
    paths = store.paths
    if _marker(paths) is None:
        return 0, []
    listed = _listed(paths)
    with store.reader() as conn:
        live = _live(conn, [p.name for p in listed]) if listed else set()
    removed, kept = remove_folders(paths, [p.name for p in listed if p.name not in live])
    _clear_marker(paths)
    return removed, kept
