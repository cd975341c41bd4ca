"""One session read back: the terminal replay, the agent's resume context and
the full export (SPEC §4, §5).

- `replay()`: what the screen showed, from `session_events`; a session with no
  events (the Telegram bot keeps none, an older agent) is rebuilt from its
  messages and tool calls.
- `context_stream()` (and `context_json()`, the same held in memory): what
  the agent resumes with (`kaja resume --json`): the session row, the latest
  summary, the messages from its `summaryFrom` on with their tool calls, and
  each oversized tool result replaced by its `resultSummary`; streamed as
  SQLite's UTF-8 bytes while the connection stays open.
- `transcript()` / `transcript_json()`: everything (`kaja sessions export`).

Rows are keyed by the seed's column names (a missing column reads as null,
extra columns are kept, BLOBs become hex). JSON columns (`parts`,
`arguments`, `payload`) are parsed when they hold valid JSON and kept as the
text they hold otherwise: another program wrote them, and a reader shows what
there is.

Each message is serialized by SQLite (`json_object`), one row per message:
the largest benchmark session (76,000 messages) would otherwise spend most of
its time building Python dicts and encoding them again. The human views parse
those same objects, so there is one definition of a message, with one
exception for speed (issue 29): the Markdown and HTML exports have SQLite
write the plainest messages' pieces itself (`message_pieces`,
`conversations/pieces.py`), and parse the JSON of the others only.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kaja_cli.core import clock, values
from kaja_cli.core.conversations import images
from kaja_cli.core.conversations.columns import col, columns
from kaja_cli.core.conversations.sessions import (
    SESSION_COLUMNS,
    SessionRef,
    find,
    json_fields,
    latest,
)
from kaja_cli.core.engine import dialect
from kaja_cli.core.owners import Owner
from kaja_cli.errors import Failed

if TYPE_CHECKING:
    from kaja_cli.core.engine.db import SecondReader
    from kaja_cli.core.store import Store

MESSAGE_COLUMNS = (
    "id", "sessionId", "seq", "role", "content", "parts", "reasoning", "toolCallId", "persona",
    "model", "promptTokens", "completionTokens", "latencyMs", "finishReason", "createdAt",
)  # fmt: skip
TOOL_CALL_COLUMNS = (
    "id", "messageId", "position", "callId", "name", "arguments", "resultMessageId", "status",
    "durationMs", "approval", "resultSummary",
)  # fmt: skip
SUMMARY_COLUMNS = ("sessionId", "summaryFrom", "summary", "createdAt")
MODEL_CALL_COLUMNS = (
    "sessionId", "kind", "model", "promptTokens", "completionTokens", "latencyMs", "createdAt",
)  # fmt: skip
EVENT_TYPES = (
    "user", "assistant", "reasoning", "tool_start", "tool_end", "notice", "error", "image",
)  # fmt: skip

_TABLES = ("sessions", "messages", "tool_calls", "session_summaries", "session_events",
           "model_calls")  # fmt: skip


def parse_json(value: Any) -> Any:
    """A JSON column's value: parsed if it is JSON text (`values.loads`: not
    `NaN`, not nested deeper than `values.JSON_DEPTH`), else as stored."""
    if isinstance(value, str) and value:
        try:
            return values.loads(value)
        except ValueError:
            return value
    return _plain(value)


_plain = values.json_safe


def _valid_utf8(data: bytes) -> bytes:
    """SQLite's UTF-8 as it is, unless another program stored TEXT that is not
    UTF-8: then with U+FFFD, as `db._text` reads every other value."""
    if values.utf8_valid(data):
        return data
    return data.decode("utf-8", "replace").encode("utf-8")


def _filled(data: bytes, texts: list[bytes], at: int) -> bytes:
    """`data` (pieces) with each NUL replaced by the next of `texts`, from `at` on."""
    parts = data.split(b"\0")
    if len(parts) == 1:
        return data
    out: list[bytes] = [b""] * (2 * len(parts) - 1)
    out[0::2] = parts
    out[1::2] = texts[at : at + len(parts) - 1]
    return b"".join(out)


# A page marking more messages SQLite does not write than this, or than a 16th
# of a page, is read by rows, and the rest of the session too: reading each
# of them again, and each page twice, cost more than the rows (a session of
# reasoning or tool calls).
_MARKED = 4
RUN = 1024  # messages fetched, and handed on, at a time by the exports' readers
SPLIT_PAGES = 4  # a JSON or HTML export of more pages than this is read by two connections
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_T = TypeVar("_T")  # a page, as `_split` reads it
# A tool result's key (Markdown export): the calls of the messages before it
# that render has not seen as dicts, SQLite having written them (`message_pieces`).
CALLS_BEFORE = "kaja_calls_before"
# Its calls as a reading thread found them, with their seqs: (the tool result's
# seq, [(seq, calls)]), for the caller to settle (`_Reader._settled`).
_PENDING = "kaja_calls_pending"


# --- the data ---------------------------------------------------------------------------
# Named tuples, not dataclasses: a frozen dataclass costs ~0.5 ms to define (its methods
# written and compiled at import), on every command that reads a session (issue 40).
class Entry(NamedTuple):
    """One line of the timeline, as the terminal showed it."""

    kind: str  # one of EVENT_TYPES, or an unknown type written by a newer agent
    text: str | None = None
    name: str | None = None
    arguments: Any = None
    status: str | None = None
    duration_ms: int | None = None
    path: str | None = None
    missing: bool = False  # an image whose file is gone
    payload: Any = None  # an unknown type's payload, as stored (parsed if JSON)


class Pending(NamedTuple):
    """A tool call waiting on the human (`sessions.pendingCallId`)."""

    call_id: str
    kind: str | None
    name: str | None
    arguments: Any

    def to_json(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "kind": self.kind, "name": self.name,
                "arguments": self.arguments}  # fmt: skip


class Replay(NamedTuple):
    session: dict[str, Any]
    entries: list[Entry]
    source: str  # "events", "messages", or "none" (nothing left to show)
    message_count: int
    earlier: int = 0  # entries left out by --tail
    pending: Pending | None = None


class Transcript(NamedTuple):
    """Everything about one session (`kaja sessions export`)."""

    session: dict[str, Any]
    summaries: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    events: list[dict[str, Any]]
    model_calls: list[dict[str, Any]]
    pending: Pending | None


class JsonDocument(NamedTuple):
    """A JSON object whose last key holds a long list already serialized:
    `head` as plain data, then `key` = the items' JSON texts, in order."""

    head: dict[str, Any]
    key: str
    items: Iterator[str]


class Pieces(list):
    """Consecutive messages SQLite wrote itself (`_Reader.message_pieces`): rows
    of (piece, seq, `pieces.kind`, parts), and in Markdown the heading's model
    and time (`pieces.heading`), in order, their text as SQLite's UTF-8 bytes;
    `data` is the pieces joined, `text` that decoded (U+FFFD where a byte is
    not UTF-8: each piece begins with ASCII, so that is each piece's own),
    when it is asked for: render writes `data` as it is where the text holds
    nothing to escape (`layout.lines_clean`). A piece is the message's
    Markdown or HTML before the escaping rule (`render.text(…, lines=True)`),
    which, a character at a time, applies to the run's text as to each
    piece."""

    def __init__(self, rows: list[tuple], starts: Callable[[int], int] | None = None):
        super().__init__(rows)
        self.data = b"".join(map(_FIRST, rows))
        self.n = len(rows)  # the messages
        self._text: str | None = None
        self._starts = starts

    @classmethod
    def joined(cls, data: bytes, n: int, starts: Callable[[int], int] | None = None) -> Pieces:
        """`n` messages' pieces SQLite joined itself (`_Reader._html_pages`):
        their `data` alone, no rows (asked for only where nothing is placed
        between messages, so render never counts them)."""
        made = cls([], starts)
        made.data, made.n = data, n
        return made

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.data.decode("utf-8", "replace")
        return self._text

    def tool_starts(self, seq: int) -> int:
        """How many tool calls the piece at `seq` shows (`pieces.calls_piece`)."""
        return self._starts(seq) if self._starts is not None else 0

    @staticmethod
    def decoded(value: bytes | None) -> str | None:
        return None if value is None else value.decode("utf-8", "replace")


# --- reading -----------------------------------------------------------------------------
class _Reader:
    """Queries over one session that tolerate missing tables and columns."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        images_dir: Path,
        text_columns: dict[str, frozenset[str]] | None = None,
        second: SecondReader | None = None,
    ):
        self.conn = conn
        self.second = second  # a connection that may share the snapshot (`_json_split`)
        self.sid = session_id
        self.images_dir = images_dir
        self.have = columns(conn, *_TABLES)
        self.dialect = dialect.of(conn)
        self._counts: tuple[int, int] | None = None  # `_seq_counts`
        self._starts: dict[int, int] | None = None
        # `_texts`, per connection: the bulk export reads every session through one.
        self._text_columns: dict[str, frozenset[str]] = (
            text_columns if text_columns is not None else {}
        )

    def _texts(self, table: str) -> frozenset[str]:
        """`table`'s columns of TEXT affinity (`Dialect.text_columns`), asked once."""
        if table not in self._text_columns:
            self._text_columns[table] = self.dialect.text_columns(self.conn, table)
        return self._text_columns[table]

    def _has(self, table: str, *cols: str) -> bool:
        have = self.have.get(table)
        return bool(have) and all(c in have for c in cols)

    def rows(self, sql: str, args: tuple, known: tuple[str, ...]) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        extras = [n for n in names if n not in known]
        out = []
        for r in cur:
            values = dict(zip(names, map(_plain, r), strict=True))
            out.append({c: values.get(c) for c in known} | {c: values[c] for c in extras})
        return out

    def session(self) -> dict[str, Any]:
        got = self.rows("SELECT * FROM sessions WHERE id = ?", (self.sid,), SESSION_COLUMNS)
        return got[0] if got else {c: None for c in SESSION_COLUMNS} | {"id": self.sid}

    def message_count(self) -> int:
        if not self._has("messages", "sessionId"):
            return 0
        if self.dialect.checks_seq_order and "seq" in self.have["messages"]:
            return self._seq_counts()[0]  # the same read tells `_seq_unique`
        return self.conn.execute(
            'SELECT count(*) FROM messages WHERE "sessionId" = ?', (self.sid,)
        ).fetchone()[0]

    def summaries(self) -> list[dict[str, Any]]:
        if not self._has("session_summaries", "sessionId"):
            return []
        order = col(self.have["session_summaries"], "s", "summaryFrom")
        return self.rows(
            f'SELECT * FROM session_summaries AS s WHERE "sessionId" = ? ORDER BY {order}',
            (self.sid,),
            SUMMARY_COLUMNS,
        )

    def latest_summary(self) -> dict[str, Any] | None:
        if not self._has("session_summaries", "sessionId", "summaryFrom"):
            return None
        got = self.rows(
            'SELECT * FROM session_summaries WHERE "sessionId" = ?'
            ' ORDER BY "summaryFrom" DESC LIMIT 1',
            (self.sid,),
            SUMMARY_COLUMNS,
        )
        return got[0] if got else None

    def messages_sql(
        self, from_seq: int | None, *, condense: bool, keyed: bool = False, after: bool = False,
        before: bool = False,
    ) -> tuple[str, tuple]:  # fmt: skip
        """One row per message: its JSON object (columns, `tool_calls`, `images`
        to fill in, `condensed`) and its raw `parts` when it has some; `keyed`,
        its seq too; `after`, only the messages after a seq given as one more
        parameter; `before`, only those before a seq given as the next."""
        m = self.have["messages"]
        where, args = 'm."sessionId" = ?', (self.sid,)
        if from_seq is not None and "seq" in m:
            where, args = where + " AND m.seq >= ?", (self.sid, from_seq)
        if after:
            where += " AND m.seq > ?"
        if before:
            where += " AND m.seq < ?"
        t = self.have.get("tool_calls") or []
        linked = "resultMessageId" in t and "resultSummary" in t and "id" in m
        summary = (
            '(SELECT t."resultSummary" FROM tool_calls AS t WHERE t."resultMessageId" = m.id'
            " AND t.\"resultSummary\" <> '' LIMIT 1)"
            if condense and linked
            else "NULL"
        )
        sql = (
            f"SELECT {self._message_object(condense, summary != 'NULL')} AS j,"
            f" {col(m, 'm', 'parts')} AS p{', m.seq AS s' if keyed else ''}"
            f" FROM (SELECT m.*, {summary} AS kaja_summary FROM messages AS m WHERE {where}) AS m"
            f" ORDER BY {self._message_order()}"
        )
        return sql, args

    def _message_order(self) -> str:
        m = self.have["messages"]
        seq = col(m, "m", "seq")
        if seq != "NULL" and "sessionId" in m and self._seq_unique():
            return seq  # the same order (`Dialect.checks_seq_order`)
        return f"{seq}, {col(m, 'm', 'createdAt')}, {col(m, 'm', 'id')}"

    def _seq_unique(self) -> bool:
        """Whether every message of the session has a `seq` and no two the same."""
        if not self.dialect.checks_seq_order:
            return False
        n, distinct = self._seq_counts()
        return n == distinct  # count(DISTINCT) leaves NULL out: none is NULL either

    def _seq_indexed(self) -> bool:
        """Whether an index of `messages` begins with (sessionId, seq), the
        agent's: the exports' pages, each after a seq, are found by it
        (without one, each page read the session's messages again)."""
        return bool(self.conn.execute(
            "SELECT 1 FROM pragma_index_list('messages') AS l, pragma_index_info(l.name) AS a,"
            " pragma_index_info(l.name) AS b WHERE a.seqno = 0 AND a.name = 'sessionId'"
            " AND b.seqno = 1 AND b.name = 'seq' LIMIT 1",
        ).fetchone())  # fmt: skip

    def _seq_counts(self) -> tuple[int, int]:
        """The session's messages and its distinct seqs: reads of the
        (sessionId, seq) index, made once. count(DISTINCT) alone in its
        statement reads the index's order, where beside other aggregates it
        sorts every seq into a temporary index (13 -> 9 ms on 76,000 messages);
        count(*) alone counts the index's entries without reading a seq
        (count(seq) beside it: 13 -> 9 ms again)."""
        if self._counts is None:
            self._counts = self.conn.execute(
                'SELECT count(*), (SELECT count(DISTINCT seq) FROM messages WHERE "sessionId" = ?)'
                ' FROM messages WHERE "sessionId" = ?', (self.sid, self.sid),
            ).fetchone()  # fmt: skip
        return self._counts

    def _seq_whole(self) -> bool:
        """Whether every seq of the session is an integer: asked by the
        Markdown and HTML exports before SQLite writes messages with tool
        calls (a typeof() per message in `_seq_counts` was 8 of its 20 ms on
        a 76,000-message session, in the JSON export too)."""
        return not self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM messages"
            """ WHERE "sessionId" = ? AND typeof(seq) <> 'integer')""", (self.sid,),
        ).fetchone()[0]  # fmt: skip

    def _tool_starts(self, seq: int) -> int:
        """How many tool calls the message at `seq` made (`Pieces.tool_starts`)."""
        if self._starts is None:
            self._starts = dict(self.conn.execute(
                'SELECT m.seq, count(*) FROM messages AS m JOIN tool_calls AS t'
                ' ON t."messageId" = m.id WHERE m."sessionId" = ? GROUP BY m.seq', (self.sid,),
            ).fetchall())  # fmt: skip
        return self._starts.get(seq, 0)

    def _calls_between(self, after: int | None, before: int) -> list[tuple[int, list[Any]]]:
        """The tool calls of the session's messages after seq `after` (None: from
        the first) and before `before`, in their order, each message's with its
        seq: what render has seen by then, where SQLite wrote some of those
        messages (`pieces.calls_piece`)."""
        where, args = 'm."sessionId" = ? AND m.seq < ?', [self.sid, before]
        if after is not None:
            where, args = where + " AND m.seq > ?", [*args, after]
        rows = self.conn.execute(  # as BLOBs, whatever the connection's text_factory
            f"SELECT m.seq, CAST({self._calls_json()} AS BLOB) FROM messages AS m WHERE {where}"
            ' AND EXISTS (SELECT 1 FROM tool_calls AS t WHERE t."messageId" = m.id)'
            " ORDER BY m.seq",
            args,
        ).fetchall()
        return [(seq, json.loads(_valid_utf8(data))) for seq, data in rows]

    def _calls_json(self, *, only_if_any: bool = False) -> str:
        """A message's tool calls as a JSON array, in their order (`only_if_any`:
        the array built only when it has some, else the empty array as it is)."""
        d = self.dialect
        m = self.have["messages"]
        t = self.have.get("tool_calls") or []
        if not ("messageId" in t and "id" in m):
            return d.empty_json_array
        fields = json_fields(
            t, "t", TOOL_CALL_COLUMNS, {"arguments": d.json_parsed(col(t, "t", "arguments"))}, d,
            self._texts("tool_calls"),
        )  # fmt: skip
        source = 'FROM tool_calls AS t WHERE t."messageId" = m.id'
        order = col(t, "t", "position")
        if only_if_any:  # one CASE, not a coalesce() of it: 13 ms on 76,000 messages
            return d.json_array_if_any(d.json_object(fields), source, order)
        return d.json_array(d.json_object(fields), source, order)

    def _message_object(self, condense: bool, summarized: bool = False) -> str:
        """A message's JSON object, read from `m` (a messages row; with
        `kaja_summary` when `summarized`)."""
        d = self.dialect
        m = self.have["messages"]
        texts = self._texts("messages")
        content = d.json_value(col(m, "m", "content"), text="content" in texts)
        overrides = {
            "content": f"coalesce(m.kaja_summary, {content})" if summarized else content,
            "parts": d.json_parsed(col(m, "m", "parts")),
        }
        fields = json_fields(m, "m", MESSAGE_COLUMNS, overrides, d, texts)
        # Built only for a message that has tool calls: most have none.
        calls = self._calls_json(only_if_any=True)
        fields += [("tool_calls", calls), ("images", d.empty_json_array)]
        if condense:
            fields.append(("condensed", d.json_bool("m.kaja_summary IS NOT NULL")))
        return d.json_object(fields)

    def message_pieces(
        self, view: str, *, asides: bool = True
    ) -> Iterator[Pieces | dict[str, Any]]:
        """The messages for the human exports in `view` ("md" or "html"), in
        order: the plainest written by SQLite (`conversations.pieces`), a run
        of consecutive ones at a time (`Pieces`); any other the dict
        `messages()` makes of it. One read, no JSON round trip for most.
        `asides`: the timeline has notices or summaries to place between the
        messages, so render counts each message SQLite wrote (a `Pieces`'
        rows); without (HTML), a page of them comes joined (`_html_pages`)."""
        if not self._has("messages", "sessionId"):
            return
        if not self.dialect.writes_pieces:
            for text in self.messages_json(condense=False):
                yield json.loads(text)
            return
        from kaja_cli.core.conversations import pieces

        m = self.have["messages"]
        t = self.have.get("tool_calls") or ()
        utc = self._utc_span() if view == "html" else None
        simple = pieces.simple(m, t, view, utc)
        tool = pieces.tool_simple(
            m, t, view, indexed=self._indexed("tool_calls", "resultMessageId"), utc=utc
        )
        # An assistant's message with tool calls too, where render's `calls`
        # can be given what it has seen (`_calls_between`): by seq.
        by_seq = "seq" in m and "sessionId" in m and self._seq_unique()
        whole = by_seq and self._seq_whole()
        with_calls = pieces.calls_simple(m, t, view, utc) if whole else "0"

        def columns(other: str, *, joined: bool = False) -> str:
            """The rows: `other`, what a message SQLite does not write gets;
            `joined`, only what `_html_page_reads` joins (no kind, no parts)."""
            return (
                f"SELECT CASE WHEN {simple} THEN {pieces.piece(m, view, utc=utc)}"
                + (f" WHEN {tool} THEN {pieces.tool_piece(m, view, utc)}" if tool != "0" else "")
                + (
                    f" WHEN {with_calls} THEN {pieces.calls_piece(m, view, utc)}"
                    if with_calls != "0"
                    else ""
                )
                + f" ELSE {other} END AS j,"
                + (f" {pieces.text_value(m)} AS t," if view == "html" else "")
                + f" {col(m, 'm', 'seq')} AS s"
                + ("" if joined else f", {pieces.kind(m)} AS k, {col(m, 'm', 'parts')} AS q")
                + (f", {pieces.heading_values(m)}" if view == "md" else "")
                + ' FROM messages AS m WHERE m."sessionId" = ?'
            )

        order = f" ORDER BY {self._message_order()}"
        starts = self._tool_starts if with_calls != "0" else None
        seen: list[int | None] = [None]  # the seq up to which render was given the calls
        as_json = self._message_object(False)
        if view == "html" and not asides and whole and self._seq_indexed():
            # a message SQLite does not write marked by its seq (`_html_page_reads`)
            marked = columns("char(0, 1) || m.seq || char(0)", joined=True)
            yield from self._html_pages(marked, columns(as_json), order, starts, seen)
            return
        conn = self.conn
        factory = conn.text_factory
        # As bytes, decoded a run at a time (`Pieces`): a text_factory that
        # decodes with U+FFFD is a Python call per value.
        conn.text_factory = bytes  # applies to the rows fetched while it is set
        try:
            cur = self._execute(columns(as_json) + order, (self.sid,))
            while rows := cur.fetchmany(RUN):
                conn.text_factory = factory  # not while the caller runs
                yield from self._piece_rows(rows, view, starts, seen)
                conn.text_factory = bytes
        finally:
            conn.text_factory = factory

    def _piece_rows(
        self, rows: list[tuple], view: str, starts: Callable[[int], int] | None,
        seen: list[int | None], *, pending: bool = False,
    ) -> Iterator[Pieces | dict[str, Any]]:  # fmt: skip
        """`message_pieces` of rows read: runs of pieces, and each message
        SQLite gave as JSON parsed (`seen`: the seq up to which render was
        given the calls, kept from one call to the next; `pending`, by a reading
        thread, `_json_message`)."""
        if view == "html":
            from kaja_cli.core.conversations.pieces import fill_texts

            rows = fill_texts(rows)
        # A piece begins with a line break or "<", JSON with "{", which
        # sorts after both: a run of pieces alone is told by max(), in C.
        if max(map(_FIRST, rows))[0] != 123:
            yield Pieces(rows, starts)
            return
        start = 0
        for i, row in enumerate(rows):
            if row[0][0] == 123:  # JSON's "{"; a piece is Markdown or HTML, never "{"
                if i > start:
                    yield Pieces(rows[start:i], starts)
                start = i + 1
                yield self._json_message(row[0], row[1], row[3], starts, seen, pending=pending)
        if start < len(rows):
            yield Pieces(rows[start:] if start else rows, starts)

    def _json_message(
        self, data: bytes, seq: Any, parts: Any, starts: Callable[[int], int] | None,
        seen: list[int | None], *, pending: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        """A message SQLite gave as its JSON (`message_pieces`), parsed, with
        its images; a tool result, where SQLite wrote the calls before it, with
        those calls (`CALLS_BEFORE`). `pending`: read by HTML's reading thread
        (`_html_page`), which may see only some of the session's pages
        (`_html_split`), so `seen` is only as far as it knows; the calls are kept
        with their seqs (`_PENDING`) for the caller, who sees every page in
        order, to keep those after its own (`_settled`)."""
        message = json.loads(self._with_images(_valid_utf8(data), parts))
        if starts is not None and message.get("role") == "tool":
            calls = self._calls_between(seen[0], seq)
            if pending:
                message[_PENDING] = (seq, calls)
            else:
                message[CALLS_BEFORE] = [c for _, some in calls for c in some]
            seen[0] = seq
        return message

    def _html_pages(
        self, marked: str, columns: str, order: str, starts: Callable[[int], int] | None,
        seen: list[int | None],
    ) -> Iterator[Pieces | dict[str, Any]]:  # fmt: skip
        """`message_pieces` in HTML where nothing is placed between messages and
        every seq is a whole number: a page of `RUN` messages at a time joined
        by SQLite and read by a thread of its own (`_html_page_reads`; a long
        session's pages by two connections at once, `_html_split`) while this
        one escapes the last page's texts, puts them in their places and hands
        the page on (a row at a time, Python's sqlite3 spent more on fetching
        76,000 rows of five values each than SQLite on joining them, and no
        thread could read ahead: issue 40)."""
        from kaja_cli.core.conversations.pieces import escaped_texts

        pages = self._html_split(marked, columns, order, starts)
        if pages is None:
            pages = self._ahead(self._html_page_reads(marked, columns, order, starts))
        rest: tuple[str, tuple] | None = None
        try:
            for items, texts in pages:
                if items is None:  # the rest of the session by rows, here (`_MARKED`)
                    rest = texts
                    break
                escaped = escaped_texts(texts)
                at = 0  # the page's texts put in their places, or passed
                for item in items:
                    if item.__class__ is tuple:  # a run of pieces, their texts to put in
                        data, n = item
                        yield Pieces.joined(_filled(data, escaped, at), n, starts)
                        at += n
                    else:  # a message given as JSON (its text is in it), or rows read
                        at += 1
                        yield self._settled(item, seen) if item.__class__ is dict else item
        finally:  # the reading threads stopped (and waited for) before this one reads
            close = getattr(pages, "close", None)
            if close is not None:
                close()
        if rest is not None:  # the threads are done: the rows as they always were read
            after, args = rest
            cur = self._blob_rows(f"{columns}{after}{order}", args)
            while rows := cur.fetchmany(RUN):
                yield from self._piece_rows(rows, "html", starts, seen)

    @staticmethod
    def _settled(message: dict[str, Any], seen: list[int | None]) -> dict[str, Any]:
        """A message from a reading thread (`_json_message`'s `pending`) with the
        calls render has not seen yet (`CALLS_BEFORE`): those after `seen`,
        the last tool result given as JSON before it in the session's order."""
        found = message.pop(_PENDING, None)
        if found is not None:
            seq, calls = found
            after = seen[0]
            message[CALLS_BEFORE] = [
                c for s, some in calls if after is None or s > after for c in some
            ]
            seen[0] = seq
        return message

    def _html_split(
        self, marked: str, columns: str, order: str, starts: Callable[[int], int] | None
    ) -> Iterator[tuple[list[Any] | None, Any]] | None:
        """`_html_pages`' pages read by two connections at the one snapshot, as
        `_json_split` reads JSON's: SQLite writing the pieces is most of a long
        HTML export's time. Each thread knows only its own pages, so a tool
        result given as JSON keeps the calls it found for the caller to settle
        (`_settled`); from a page with many marks (`_MARKED`) the caller reads
        the rest of the session by rows, as with one connection, both threads
        stopped. None where that cannot be: `_html_page_reads` alone."""
        return self._split(
            None,
            lambda reader, spans: reader._html_span_reads(spans, marked, columns, order, starts),
        )

    def _html_span_reads(
        self, spans: list[tuple[Any, Any]], marked: str, columns: str, order: str,
        starts: Callable[[int], int] | None,
    ) -> Iterator[tuple[list[Any] | None, Any]]:  # fmt: skip
        """`_html_page_reads` of the pages `spans` names ((from, before) seqs,
        None for no bound), one item each; from a page with many marks, no
        items and where the rest of the session starts (the caller reads it
        by rows), this thread done."""
        seen: list[int | None] = [None]  # as far as this thread knows (`_json_message`)
        for start, before in spans:
            # From the page's first message on: the rest of the session, if the caller reads it.
            rest = ("", (self.sid,)) if start is None else (" AND m.seq >= ?", (self.sid, start))
            where, args = rest
            if before is not None:
                where, args = f"{where} AND m.seq < ?", (*args, before)
            page, _n, _last = self._html_page(marked, columns, where, order, args, starts, seen)
            if page is None:  # many marks: this page and the rest by rows
                yield None, rest  # read by the caller, this thread done
                return
            yield page

    def _html_page_reads(
        self, marked: str, columns: str, order: str, starts: Callable[[int], int] | None
    ) -> Iterator[tuple[list[Any] | None, Any]]:
        """`_html_pages`' reads (in the reading thread, the only one using the
        connection meanwhile; its text as BLOBs, its `text_factory` left
        alone), a page at a time (`_html_page`); from a page with many marks
        on (`_MARKED`) the rest of the session is read by the caller, this
        thread done (no items, where to start)."""
        seen: list[int | None] = [None]  # as far as this thread knows (`_json_message`)
        after, args = "", (self.sid,)
        while True:
            page, n, last = self._html_page(marked, columns, after, order, args, starts, seen)
            if page is None:  # many marks: this page and the rest by rows
                yield None, (after, args)  # read by the caller, this thread done
                return
            if not n:
                return
            yield page
            if n < RUN:
                return
            after, args = " AND m.seq > ?", (self.sid, last)

    def _html_page(
        self, marked: str, columns: str, where: str, order: str, args: tuple,
        starts: Callable[[int], int] | None, seen: list[int | None],
    ) -> tuple[tuple[list[Any], Any] | None, int, Any]:  # fmt: skip
        """A page of `RUN` messages at most (those `where` picks from the
        session's, in `order`): its runs of pieces, each (its bytes, its
        messages) with a NUL for each message's text, and between them each
        message given as JSON, parsed; and the page's texts, joined by NULs;
        with how many messages and the last seq. `marked` writes a message
        SQLite does not write as NUL, 0x01, its seq, NUL (a piece's NUL is never
        followed by 0x01: the markup goes on there), and `columns` reads those
        of a page again (`_marked`). A page is read a row at a time instead
        (its items `_piece_rows'`, no texts) where its texts hold a NUL or it is
        longer than SQLite's longest string. No page (None) where it has many
        marks (`_MARKED`): the caller reads it by rows."""
        rows_sql = f"{columns}{where}{order} LIMIT {RUN}"
        data: bytes | None = None
        rows: list[tuple] | None = None
        try:
            data, texts, n, last = self._execute(
                "SELECT CAST(group_concat(j, '') AS BLOB),"
                " CAST(group_concat(t, char(0)) AS BLOB), count(*), max(s)"
                f" FROM ({marked}{where}{order} LIMIT {RUN}) AS p",
                args,
            ).fetchone()
        except sqlite3.DataError:  # longer than SQLite's longest string
            rows = self._blob_rows(rows_sql, args).fetchall()
            n, last = len(rows), rows[-1][2] if rows else None
        if not n:
            return ([], None), 0, None
        marks: list[tuple[int, int]] = []  # where each mark begins and ends
        if data is not None:
            start = data.find(b"\0\x01")
            while start >= 0:
                end = data.index(b"\0", start + 2) + 1
                marks.append((start, end))
                start = data.find(b"\0\x01", end)
            given = 0 if texts is None else texts.count(b"\0") + 1
            if len(marks) > max(_MARKED, RUN // 16):
                return None, n, last
            if given != n or data.count(b"\0") != n + len(marks):  # a text holds a NUL
                rows = self._blob_rows(rows_sql, args).fetchall()
        if rows is not None:
            return (list(self._piece_rows(rows, "html", starts, seen, pending=True)), None), n, last
        if not marks:
            return ([(data, n)], texts), n, last
        return (self._marked(data, marks, columns, order, starts, seen), texts), n, last

    def _marked(
        self, data: bytes, marks: list[tuple[int, int]], columns: str, order: str,
        starts: Callable[[int], int] | None, seen: list[int | None],
    ) -> list[Any]:  # fmt: skip
        """A page of `_html_page` with messages SQLite does not write,
        marked: the runs of pieces between them, and each of them read again
        (all in one statement, by their seqs) and parsed."""
        seqs = [int(data[start + 2 : end - 1]) for start, end in marks]
        found = self._blob_rows(
            f"{columns} AND m.seq IN ({', '.join('?' * len(seqs))}){order}", (self.sid, *seqs)
        ).fetchall()
        items: list[Any] = []
        done = 0
        for (start, end), row in zip(marks, found, strict=True):
            if start > done:
                items.append((data[done:start], data.count(b"\0", done, start)))
            items.append(self._json_message(row[0], row[2], row[4], starts, seen, pending=True))
            done = end
        if done < len(data):
            items.append((data[done:], data.count(b"\0", done)))
        return items

    def _blob_rows(self, sql: str, args: tuple) -> Any:
        """The rows of `sql` (HTML's `message_pieces` columns), their text as
        BLOBs: the same bytes whatever the connection's `text_factory`."""
        return self._execute(
            f"SELECT CAST(j AS BLOB), CAST(t AS BLOB), s, k, CAST(q AS BLOB) FROM ({sql}) AS x",
            args,
        )

    def _ahead(self, pages: Iterator[Any]) -> Iterator[Any]:
        """`pages` read by a thread of its own (`engine.ahead`) where the session
        has more than one (its seqs counted, `_seq_counts`); a session of one
        page is read here: a thread for each of `export --all`'s 10,000
        sessions cost it 40% more time."""
        if self._seq_counts()[0] <= RUN:
            return pages
        from kaja_cli.core.engine.ahead import read_ahead
        from kaja_cli.core.engine.db import usable_here

        return read_ahead(pages, usable=lambda: usable_here(self.conn), reading=self.conn)

    def _utc_span(self) -> tuple[str, str] | None:
        """The span of the session's times in which the local zone is UTC
        (`clock.utc_span`, from the session's creation and last update), where
        the HTML export words a time without strftime(); None: everywhere."""
        if not self._has("sessions", "id", "createdAt", "updatedAt"):
            return None
        row = self.conn.execute(
            'SELECT "createdAt", "updatedAt" FROM sessions WHERE id = ?', (self.sid,)
        ).fetchone()
        if row is None:
            return None
        first, last = (Pieces.decoded(v) if isinstance(v, bytes) else v for v in row)
        return clock.utc_span(first, last)

    def _indexed(self, table: str, column: str) -> bool:
        """Whether an index of `table` (SQLite's) begins with `column`."""
        return bool(self.conn.execute(
            "SELECT 1 FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i"
            " WHERE i.seqno = 0 AND i.name = ? LIMIT 1", (table, column),
        ).fetchone())  # fmt: skip

    def _execute(self, sql: str, args: tuple) -> Any:
        try:
            return self.conn.execute(sql, args)
        except sqlite3.OperationalError as e:
            if "no such function" in str(e):
                raise Failed(
                    f"this SQLite ({sqlite3.sqlite_version}) has no JSON functions",
                    hint="kaja needs SQLite 3.38 or later, or one built with JSON1",
                ) from None
            raise

    def _with_images(self, data: bytes, parts: Any) -> bytes:
        """A message's JSON (UTF-8) with its `images` filled in from `parts`."""
        if parts is None:
            return data
        if isinstance(parts, bytes):
            parts = parts.decode("utf-8", "replace")
        found = images.image_parts(parse_json(parts))
        if not found:
            return data
        # Text that is not UTF-8 as U+FFFD, as the export writes it (`_valid_utf8`).
        obj = json.loads(data.decode("utf-8", "replace"))
        obj["images"] = [self.image(p) for p in found]
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()

    def messages_json(self, from_seq: int | None = None, *, condense: bool) -> Iterator[str]:
        """Each message's JSON text, in order; images resolved to their files."""
        for data in self.messages_json_bytes(from_seq, condense=condense):
            yield data.decode("utf-8", "surrogateescape")

    def messages_json_bytes(
        self, from_seq: int | None = None, *, condense: bool
    ) -> Iterator[bytes]:
        """Each message's JSON text as UTF-8 bytes, as SQLite made it: a long
        session goes out without being decoded and encoded again."""
        if not self._has("messages", "sessionId"):
            return
        sql, args = self.messages_sql(from_seq, condense=condense)
        conn = self.conn
        as_bytes = self.dialect.text_as_bytes
        factory = conn.text_factory if as_bytes else None
        if as_bytes:
            conn.text_factory = bytes  # applies to the rows fetched while it is set
        try:
            cur = self._execute(sql, args)
            for data, parts in cur:
                if isinstance(data, str):
                    data = data.encode("utf-8")
                elif not data.isascii():
                    data = _valid_utf8(data)
                yield self._with_images(data, parts)
        finally:
            if as_bytes:
                conn.text_factory = factory

    def messages_json_runs(self, from_seq: int | None = None, *, condense: bool) -> Iterator[bytes]:
        """`messages_json_bytes` a run at a time: each item the JSON texts of up
        to `RUN` consecutive messages joined by commas, so a long session costs
        Python a few steps per run rather than per message (issue 29)."""
        if not self.dialect.text_as_bytes:
            yield from self.messages_json_bytes(from_seq, condense=condense)
            return
        if not self._has("messages", "sessionId"):
            return
        if "seq" in self.have["messages"] and self._seq_unique() and self._seq_indexed():
            yield from self._json_pages(from_seq, condense)
            return
        sql, args = self.messages_sql(from_seq, condense=condense)
        yield from self._json_runs(sql, args)

    def _json_runs(self, sql: str, args: tuple) -> Iterator[bytes]:
        """The rows of `sql` (a message's JSON, its parts), `RUN` at a time,
        joined by commas (as BLOBs: the same bytes whatever the connection's
        `text_factory`, which a reading thread leaves alone, `_json_pages`)."""
        cur = self._execute(f"SELECT CAST(j AS BLOB), CAST(p AS BLOB) FROM ({sql}) AS x", args)
        while rows := cur.fetchmany(RUN):
            yield self._run_of(rows)

    def _run_of(self, rows: list[tuple]) -> bytes:
        if list(map(_SECOND, rows)).count(None) != len(rows):  # some parts
            data = b",".join([self._with_images(d, parts) for d, parts, *_ in rows])
        else:
            data = b",".join(map(_FIRST, rows))
        # U+FFFD where the text is not UTF-8 (`_valid_utf8`): the commas
        # between messages end any sequence, so one check of the run
        # is each message's.
        return data if data.isascii() else _valid_utf8(data)

    def _json_pages(self, from_seq: int | None, condense: bool) -> Iterator[bytes]:
        """`messages_json_runs` where `seq` alone orders the session (set, never
        repeated): each run one row that SQLite joined itself, `group_concat`
        over a page of `RUN` messages after the last seq of the page before,
        read by a thread of its own while this one checks the last page's
        UTF-8 and hands it on (`engine.ahead`, `_json_page_reads`); a long
        session's pages by two connections at once (`_json_split`)."""
        pages = self._json_split(from_seq, condense)
        if pages is None:
            pages = self._ahead(self._json_page_reads(from_seq, condense))
        for data, checked in pages:
            yield data if checked or data.isascii() else _valid_utf8(data)

    def _json_split(
        self, from_seq: int | None, condense: bool
    ) -> Iterator[tuple[bytes, bool]] | None:
        """`_json_pages`' pages read by two connections at the one snapshot
        (`_split`): SQLite writing each message's JSON is most of a long
        export's time, and two processors write it in about three quarters of
        one's (issue 40). None where that cannot be: `_json_page_reads` alone."""
        return self._split(from_seq, lambda reader, spans: reader._json_span_reads(spans, condense))

    def _split(
        self, from_seq: int | None, reads: Callable[[_Reader, list[tuple[Any, Any]]], Iterator[_T]]
    ) -> Iterator[_T] | None:
        """A long session's pages (from `from_seq`) read by two connections at
        the one snapshot (`SecondReader`), each by a thread of its own, the
        pages taken in turn (`_in_turn`): `reads(reader, spans)`, one item for
        each page `spans` names, by this reader and by a copy on the second
        connection. None where that cannot be (no second connection, or it
        could not join this snapshot; a session of fewer than `SPLIT_PAGES`
        pages; a page's bound that is not a number)."""
        if self.second is None or self._seq_counts()[0] <= SPLIT_PAGES * RUN:
            return None
        bounds = self._page_bounds(from_seq)
        if bounds is None:
            return None
        joined = self.second.join()
        if joined is None:
            return None
        conn, turn = joined
        from copy import copy

        from kaja_cli.core.engine.ahead import read_ahead

        other = copy(self)
        other.conn, other.second = conn, None
        # Page k holds the messages from bound k-1 (the first from `from_seq`)
        # to before bound k (the last to the end): pages 0, 2, … here, 1, 3, …
        # there. Each thread is stopped with the connection it reads (`reading`);
        # both are `open_read`'s, usable from any thread (`db.usable_here`).
        spans = list(zip([from_seq, *bounds], [*bounds, None], strict=True))
        mine = read_ahead(reads(self, spans[0::2]), reading=self.conn)
        theirs = read_ahead(reads(other, spans[1::2]), reading=conn)
        return self._in_turn(mine, theirs, turn)

    def _in_turn(self, mine: Iterator[_T], theirs: Iterator[_T], turn: int) -> Iterator[_T]:
        """One page of each in turn (`_split`); the second connection's
        transaction (`turn`) ended after the last, or when this is closed."""
        second = self.second
        assert second is not None
        try:
            for page in mine:  # as many as theirs, or one more
                yield page
                yield from itertools.islice(theirs, 1)
        finally:
            try:
                mine.close()  # type: ignore[attr-defined]
            finally:
                try:
                    theirs.close()  # type: ignore[attr-defined]
                finally:
                    second.leave(turn)

    def _page_bounds(self, from_seq: int | None) -> list[Any] | None:
        """The first seq of each page of `RUN` messages but the first (from
        `from_seq`), read from the (sessionId, seq) index: about 0.05 ms a
        page. None when one is not a number (`_json_page_reads` reads on by
        rows after such a seq)."""
        bounds: list[Any] = []
        start = from_seq  # each page's first seq (the first page's: None, or from_seq)
        while True:
            after = "" if start is None else " AND seq >= ?"
            row = self.conn.execute(
                f'SELECT seq FROM messages WHERE "sessionId" = ?{after}'
                f" ORDER BY seq LIMIT 1 OFFSET {RUN}",
                (self.sid, *(() if start is None else (start,))),
            ).fetchone()
            if row is None:
                return bounds
            if not isinstance(row[0], int | float):
                return None
            start = row[0]
            bounds.append(start)

    def _json_span_reads(
        self, spans: list[tuple[Any, Any]], condense: bool
    ) -> Iterator[tuple[bytes, bool]]:
        """`_json_page_reads` of the pages `spans` names: (from, before) seqs,
        None for no bound; one item each."""
        made: dict[tuple[bool, bool], str] = {}  # three kinds of page at most
        for start, before in spans:
            kind = (start is not None, before is not None)
            if kind not in made:
                made[kind] = self.messages_sql(
                    start, condense=condense, keyed=True, before=kind[1]
                )[0]
            args = (self.sid, *(b for b in (start, before) if b is not None))
            # A limit keeps the order `group_concat` joins in (`_json_page_reads`).
            item, _n, _last = self._json_page(f"{made[kind]} LIMIT -1", args)
            yield item

    def _json_page_reads(
        self, from_seq: int | None, condense: bool
    ) -> Iterator[tuple[bytes, bool]]:
        """`_json_pages`' reads (in the reading thread, the only one using the
        connection meanwhile; its text as BLOBs, its `text_factory` left
        alone): each page's messages joined by commas, and whether they were
        checked for UTF-8 already. A row per message cost Python's sqlite3
        236M instructions of a 76,000-message export's 2,917M (a step, a lock
        and a copy each); a page costs it one. A page with parts (images to
        fill in) is read again a row at a time, and so is one whose messages
        joined are longer than SQLite's longest string (`SQLITE_LIMIT_LENGTH`,
        1 GB by default: a thousand messages of a megabyte each); after a seq
        that is not a number the rest is read a row at a time. `group_concat`
        joins in the order it is given: here the page's `ORDER BY … LIMIT`,
        which SQLite never drops from a subquery with a limit (its `ORDER BY`
        argument needs SQLite 3.44)."""
        first, args = self.messages_sql(from_seq, condense=condense, keyed=True)
        rest, _ = self.messages_sql(from_seq, condense=condense, keyed=True, after=True)
        sql, page_args = first, args
        given = 0
        while True:
            item, n, last = self._json_page(f"{sql} LIMIT {RUN}", page_args)
            if not n:
                return
            yield item
            given += n
            if n < RUN:
                return
            if not isinstance(last, int | float):
                for data in self._json_runs(f"{first} LIMIT -1 OFFSET {given}", args):
                    yield data, True
                return
            sql, page_args = rest, (*args, last)

    def _json_page(self, page: str, args: tuple) -> tuple[tuple[bytes, bool], int, Any]:
        """One page of `_json_page_reads`: (its messages joined, whether checked
        for UTF-8), how many, and the last one's seq."""
        rows: list[tuple] | None = None
        try:
            data, parts, last, n = self._execute(
                "SELECT CAST(group_concat(j, ',') AS BLOB), count(p), max(s), count(*)"
                f" FROM ({page}) AS x",
                args,
            ).fetchone()
        except sqlite3.DataError:  # "string or blob too big": a row at a time
            rows = self._page_rows(page, args)
            n, last = len(rows), rows[-1][2] if rows else None
        if n and rows is None and parts:
            rows = self._page_rows(page, args)
        if rows is not None:
            return (self._run_of(rows), True), n, last
        return (data or b"", False), n, last

    def _page_rows(self, page: str, args: tuple) -> list[tuple]:
        """A page's messages a row at a time: (JSON, parts) as BLOBs, and the seq."""
        return self._execute(
            f"SELECT CAST(j AS BLOB), CAST(p AS BLOB), s FROM ({page}) AS x", args
        ).fetchall()

    def messages(self, from_seq: int | None = None, *, condense: bool) -> list[dict[str, Any]]:
        # One parse of the whole list: far cheaper than one json.loads per message.
        return json.loads("[" + ",".join(self.messages_json(from_seq, condense=condense)) + "]")

    def image(self, part: images.ImagePart) -> dict[str, Any]:
        path = images.image_path(self.images_dir, self.sid, part.sha256, part.mime)
        return {"sha256": part.sha256, "mime": part.mime, "path": str(path) if path else None,
                "exists": bool(path and path.is_file())}  # fmt: skip

    def events(self) -> list[dict[str, Any]]:
        if not self._has("session_events", "sessionId"):
            return []
        have = self.have["session_events"]
        rows = self.conn.execute(
            f"SELECT {col(have, 'e', 'seq')}, {col(have, 'e', 'type')}, {col(have, 'e', 'payload')}"
            f' FROM session_events AS e WHERE "sessionId" = ? ORDER BY {col(have, "e", "seq")}',
            (self.sid,),
        ).fetchall()
        return [{"seq": s, "type": _plain(t), "payload": parse_json(_plain(p))} for s, t, p in rows]

    def model_calls(self) -> list[dict[str, Any]]:
        if not self._has("model_calls", "sessionId"):
            return []
        order = col(self.have["model_calls"], "c", "createdAt")
        return self.rows(
            f'SELECT * FROM model_calls AS c WHERE "sessionId" = ? ORDER BY {order}',
            (self.sid,),
            MODEL_CALL_COLUMNS,
        )

    def pending(self, session: dict[str, Any]) -> Pending | None:
        call_id = session.get("pendingCallId")
        if not call_id:
            return None
        name = arguments = None
        if self._has("tool_calls", "messageId", "callId") and self._has(
            "messages", "id", "sessionId"
        ):
            tc = self.have["tool_calls"]
            row = self.conn.execute(
                f"SELECT {col(tc, 't', 'name')}, {col(tc, 't', 'arguments')} FROM tool_calls AS t"
                ' JOIN messages AS m ON t."messageId" = m.id'
                ' WHERE m."sessionId" = ? AND t."callId" = ? LIMIT 1',
                (self.sid, call_id),
            ).fetchone()
            if row:
                name, arguments = _plain(row[0]), parse_json(_plain(row[1]))
        return Pending(str(call_id), session.get("pendingKind"), name, arguments)

    def event_path(self, value: Any) -> tuple[str | None, bool]:
        """An image event's path and whether its file is missing.

        The agent writes the absolute path it saved the file to. A file of
        this session's image folder (`<sessionId>/<sha256>.<ext>`) is shown
        where it is now, so a store that was moved or copied still finds it.
        """
        if not isinstance(value, str) or not value:
            return None, True
        path = Path(value)
        sha, _, ext = path.name.partition(".")
        if path.parent.name == self.sid and ext:
            here = images.image_path(self.images_dir, self.sid, sha, images.MIME_BY_EXT.get(ext))
            if here is not None and here.name == path.name:
                return str(here), not here.is_file()
        if not path.is_absolute():  # relative to the shared file's folder
            path = self.images_dir.parent.parent / path
        return value, not os.path.isfile(path)


SessionReader = _Reader  # for the bulk export (core/export.py), which reads the same way


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _int_or_none(value: Any) -> int | None:
    """A duration as stored: a number, else None (NaN, an infinity, 'slow')."""
    return None if isinstance(value, bool | str) else values.whole(value)


def _from_events(reader: _Reader, events: list[dict[str, Any]]) -> list[Entry]:
    return [_event_entry(e, reader) for e in events]


def _event_entry(e: dict[str, Any], reader: _Reader | None = None) -> Entry:
    """One event as a timeline entry (an image's file is looked up with `reader`)."""
    kind = e["type"] if isinstance(e["type"], str) and e["type"] else "event"
    p = e["payload"]
    if not isinstance(p, dict):
        # Not a JSON object: show the text that is there.
        return Entry(kind, text=_text(p), payload=p if kind not in EVENT_TYPES else None)
    if kind == "image":
        path, missing = reader.event_path(p.get("path")) if reader else (None, True)
        return Entry(kind, text=_text(p.get("text")), path=path, missing=missing)
    if kind in EVENT_TYPES:
        return Entry(
            kind,
            text=_text(p.get("text")),
            name=_text(p.get("name")),
            arguments=p.get("arguments"),
            status=_text(p.get("status")),
            duration_ms=_int_or_none(p.get("durationMs")),
        )
    return Entry(kind, text=_text(p.get("text")), payload=p)


# --- what the messages do not hold (the exports) --------------------------------------------
# The exports are written from the messages (every tool result in full), but
# the timeline also holds entries no message does: notices ("Waiting for your
# approval to run shell."), errors, and the types of a newer agent. Each goes
# after the message that holds the timeline entry before it, found by
# counting: the n-th `user`, `assistant` or `tool_start` entry of the events
# is the n-th the messages make (`_from_messages`' rules). Whatever cannot be
# placed so (a timeline longer than the messages) goes at the end.
_MESSAGE_KINDS = ("user", "assistant", "reasoning", "tool_start", "tool_end", "image")
_COUNTED = ("user", "assistant", "tool_start")


class Asides:
    """The timeline's entries that no message holds, handed out in order as the
    messages they follow are written: `due()` before each message (and once
    after the last), `count(m)` after it."""

    def __init__(self, events: Iterable[dict[str, Any]]):
        seen = dict.fromkeys(_COUNTED, 0)
        after: tuple[str, int] | None = None
        self._left: list[tuple[tuple[str, int] | None, Entry]] = []
        for e in events:
            entry = _event_entry(e)
            if entry.kind in _COUNTED:
                seen[entry.kind] += 1
                after = (entry.kind, seen[entry.kind])
            elif entry.kind not in _MESSAGE_KINDS:
                self._left.append((after, entry))
        self._left.reverse()  # taken from the end
        self._seen = dict.fromkeys(_COUNTED, 0)

    @property
    def waiting(self) -> bool:
        """Whether any entry is still to be handed out."""
        return bool(self._left)

    def count_kind(self, kind: int, tool_starts: int = 0) -> None:
        """`count` of a message SQLite wrote (`pieces.kind`: 1 a user's entry,
        2 the assistant's; and the tool calls it shows)."""
        if kind:
            self._seen["user" if kind == 1 else "assistant"] += 1
        self._seen["tool_start"] += tool_starts

    def count(self, m: dict[str, Any]) -> None:
        """Count the entries message `m` makes in a timeline rebuilt from messages."""
        role = m.get("role")
        if role == "user" and _text(m.get("content")):
            self._seen["user"] += 1
        elif role == "assistant":
            if _text(m.get("content")):
                self._seen["assistant"] += 1
            self._seen["tool_start"] += len(m.get("tool_calls") or ())

    def due(self, *, rest: bool = False) -> list[Entry]:
        """The entries whose place is before the next message (`rest`: all that are left)."""
        out = []
        while self._left:
            after = self._left[-1][0]
            if not rest and after is not None and self._seen[after[0]] < after[1]:
                break
            out.append(self._left.pop()[1])
        return out


def _from_messages(messages: list[dict[str, Any]]) -> list[Entry]:
    """The timeline the terminal would have shown, rebuilt from the messages."""
    out: list[Entry] = []
    calls_by_result: dict[Any, dict[str, Any]] = {}
    calls_by_call_id: dict[Any, dict[str, Any]] = {}
    ended: set[int] = set()
    for m in messages:
        for c in m["tool_calls"]:
            if c["resultMessageId"]:
                calls_by_result[c["resultMessageId"]] = c
            if c["callId"]:
                calls_by_call_id[c["callId"]] = c
    result_ids = {m["id"] for m in messages}

    def image_entries(m: dict[str, Any], label: str | None = None) -> None:
        for img in m["images"]:
            out.append(Entry("image", text=label, path=img["path"], missing=not img["exists"]))

    def end(c: dict[str, Any]) -> None:
        ended.add(id(c))
        out.append(
            Entry("tool_end", name=_text(c["name"]), status=_text(c["status"]),
                  duration_ms=_int_or_none(c["durationMs"]))
        )  # fmt: skip

    for m in messages:
        role = m["role"] if isinstance(m["role"], str) and m["role"] else "message"
        content = _text(m["content"])
        if isinstance(m["parts"], str) and not m["images"]:  # shown as the text it holds
            raw = f"parts (not valid JSON): {m['parts']}"
            content = f"{content}\n{raw}" if content else raw
        if role == "assistant":
            if m["reasoning"]:
                out.append(Entry("reasoning", text=_text(m["reasoning"])))
            if content:
                out.append(Entry("assistant", text=content))
            image_entries(m)
            for c in m["tool_calls"]:
                out.append(Entry("tool_start", name=_text(c["name"]), arguments=c["arguments"]))
                if c["status"] and c["resultMessageId"] not in result_ids:
                    end(c)  # finished, but its result message is not there
        elif role == "tool":
            c = calls_by_result.get(m["id"]) or calls_by_call_id.get(m["toolCallId"])
            if c is None:
                out.append(Entry("tool_end", name=_text(m["toolCallId"])))
            elif id(c) not in ended:
                end(c)
            image_entries(m, _text(c["name"]) if c else None)
        elif role == "user":
            if content:
                out.append(Entry("user", text=content))
            image_entries(m)
        else:  # system, or a role a newer agent added
            if content:
                out.append(Entry(role, text=content))
            image_entries(m)
    return out


def replay(
    conn: sqlite3.Connection, session_id: str, images_dir: Path, *, tail: int | None = None
) -> Replay:
    """The timeline of one session: its events, else rebuilt from its messages."""
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    events = r.events()
    count = r.message_count()
    if events:
        entries, source = _from_events(r, events), "events"
    else:
        entries = _from_messages(r.messages(condense=False)) if count else []
        source = "messages" if entries else "none"
    earlier = 0
    if tail is not None and len(entries) > tail:
        earlier = len(entries) - tail
        entries = entries[earlier:]
    return Replay(session, entries, source, count, earlier, r.pending(session))


def context_json(conn: sqlite3.Connection, session_id: str, images_dir: Path) -> JsonDocument:
    """The agent's resume context (docs/guides/conversations.md documents the shape)."""
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    summary = r.latest_summary()
    start = summary.get("summaryFrom") if summary else None
    head = {
        "session": session,
        "summary": summary,
        "pending": p.to_json() if (p := r.pending(session)) else None,
    }
    # Read now: the connection closes when the caller's `with` ends.
    items = list(r.messages_json(start if isinstance(start, int) else None, condense=True))
    return JsonDocument(head, "messages", iter(items))


class JsonStream(NamedTuple):
    """`JsonDocument` whose items are UTF-8 bytes, read as they are written:
    each a message's JSON or a run of them joined by commas."""

    head: dict[str, Any]
    key: str
    items: Iterator[bytes]


@contextmanager
def context_stream(store: Store, ref: str | None, owner: Owner) -> Iterator[JsonStream]:
    """`kaja resume --json` without holding the messages: the connection stays
    open while the caller writes them out, in one read transaction."""
    with store.reader() as conn:
        conn.execute("BEGIN")
        s = resolve(conn, ref, owner)
        r = _Reader(conn, s.id, store.paths.images_dir)
        session = r.session()
        summary = r.latest_summary()
        start = summary.get("summaryFrom") if summary else None
        head = {
            "session": session,
            "summary": summary,
            "pending": p.to_json() if (p := r.pending(session)) else None,
        }
        frm = start if isinstance(start, int) else None
        yield JsonStream(head, "messages", r.messages_json_runs(frm, condense=True))
        conn.execute("COMMIT")


def transcript(conn: sqlite3.Connection, session_id: str, images_dir: Path) -> Transcript:
    """Everything about one session, tool results in full."""
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    return Transcript(
        session, r.summaries(), r.messages(condense=False), r.events(), r.model_calls(),
        r.pending(session),
    )  # fmt: skip


def transcript_json(conn: sqlite3.Connection, session_id: str, images_dir: Path) -> JsonDocument:
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    head = {
        "session": session,
        "summaries": r.summaries(),
        "events": r.events(),
        "model_calls": r.model_calls(),
        "pending": p.to_json() if (p := r.pending(session)) else None,
    }
    return JsonDocument(head, "messages", iter(list(r.messages_json(condense=False))))


def messages_query(
    conn: sqlite3.Connection,
    session_id: str,
    images_dir: Path,
    from_seq: int | None = None,
    *,
    condense: bool,
) -> tuple[str, tuple]:
    """The SQL behind a session's messages (what bench/ compares with sqlite3)."""
    return _Reader(conn, session_id, images_dir).messages_sql(from_seq, condense=condense)


# --- from a store: resolve the id (owner rule), then read --------------------------------
def resolve(conn: sqlite3.Connection, ref: str | None, owner: Owner) -> SessionRef:
    """`ref` as an id or unique prefix, or (None) the owner's latest session."""
    return find(conn, ref, owner) if ref is not None else latest(conn, owner)


def load_replay(store: Store, ref: str | None, owner: Owner, *, tail: int | None = None) -> Replay:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return replay(conn, s.id, store.paths.images_dir, tail=tail)


def load_context_json(store: Store, ref: str | None, owner: Owner) -> JsonDocument:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return context_json(conn, s.id, store.paths.images_dir)


def load_transcript(store: Store, ref: str, owner: Owner) -> Transcript:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return transcript(conn, s.id, store.paths.images_dir)


def load_transcript_json(store: Store, ref: str, owner: Owner) -> JsonDocument:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return transcript_json(conn, s.id, store.paths.images_dir)
