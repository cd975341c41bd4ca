"""One session read back: the terminal replay, the agent's resume context and
the full export (SPEC §4, §5).

- `replay()`: what the screen showed, from `session_events`; a session with no
  events (the Telegram bot keeps none, an older agent) is rebuilt from its
  messages and tool calls.
- `context()`: what the agent resumes with (`kaja resume --json`): the session
  row, the latest summary, the messages from its `summaryFrom` on with their
  tool calls, and each oversized tool result replaced by its `resultSummary`.
- `transcript()`: everything (`kaja sessions export`).

Rows come back as dicts keyed by the seed's column names (a missing column
reads as None, extra columns are kept). JSON columns are parsed when they hold
valid JSON and kept as the text they hold otherwise: another program wrote
them, and a reader shows what there is.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaja_cli.core import images
from kaja_cli.core.owners import Owner
from kaja_cli.core.sessions import SESSION_COLUMNS, SessionRef, col, columns, find, latest

if TYPE_CHECKING:
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
    """A JSON column's value: parsed if it is valid JSON text, else as stored."""
    if isinstance(value, str) and value:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# --- the data ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Image:
    sha256: str
    mime: str
    path: str | None  # None: the names in the database are not safe to make a path of
    exists: bool

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "mime": self.mime, "path": self.path, "exists": self.exists}


@dataclass(frozen=True)
class Entry:
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


@dataclass(frozen=True)
class Pending:
    """A tool call waiting on the human (`sessions.pendingCallId`)."""

    call_id: str
    kind: str | None
    name: str | None
    arguments: Any

    def to_json(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "kind": self.kind, "name": self.name,
                "arguments": self.arguments}  # fmt: skip


@dataclass
class Replay:
    session: dict[str, Any]
    entries: list[Entry]
    source: str  # "events", "messages", or "none" (nothing left to show)
    message_count: int
    earlier: int = 0  # entries left out by --tail
    pending: Pending | None = None


@dataclass
class Context:
    """What the agent resumes with: the shape `kaja resume --json` prints."""

    session: dict[str, Any]
    summary: dict[str, Any] | None
    messages: list[dict[str, Any]]
    pending: Pending | None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "summary": self.summary,
            "messages": self.messages,
            "pending": self.pending.to_json() if self.pending else None,
        }


@dataclass
class Transcript:
    """Everything about one session (`kaja sessions export`)."""

    session: dict[str, Any]
    summaries: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    events: list[dict[str, Any]]
    model_calls: list[dict[str, Any]]
    pending: Pending | None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "summaries": self.summaries,
            "messages": self.messages,
            "events": self.events,
            "model_calls": self.model_calls,
            "pending": self.pending.to_json() if self.pending else None,
        }


# --- reading -----------------------------------------------------------------------------
class _Reader:
    """Queries over one session that tolerate missing tables and columns."""

    def __init__(self, conn: sqlite3.Connection, session_id: str, images_dir: Path):
        self.conn = conn
        self.sid = session_id
        self.images_dir = images_dir
        self.have = columns(conn, *_TABLES)

    def rows(self, sql: str, args: tuple, known: tuple[str, ...]) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        extras = [n for n in names if n not in known]
        out = []
        if not extras and tuple(names) == known:
            for r in cur:
                out.append(dict(zip(known, r, strict=True)))
            return out
        for r in cur:
            values = dict(zip(names, r, strict=True))
            out.append({c: values.get(c) for c in known} | {c: values[c] for c in extras})
        return out

    def session(self) -> dict[str, Any]:
        got = self.rows("SELECT * FROM sessions WHERE id = ?", (self.sid,), SESSION_COLUMNS)
        return got[0] if got else {c: None for c in SESSION_COLUMNS} | {"id": self.sid}

    def _has(self, table: str, *cols: str) -> bool:
        have = self.have.get(table)
        return bool(have) and all(c in have for c in cols)

    def message_count(self) -> int:
        if not self._has("messages", "sessionId"):
            return 0
        return self.conn.execute(
            "SELECT count(*) FROM messages WHERE sessionId = ?", (self.sid,)
        ).fetchone()[0]

    def summaries(self) -> list[dict[str, Any]]:
        if not self._has("session_summaries", "sessionId"):
            return []
        order = col(self.have["session_summaries"], "s", "summaryFrom")
        return self.rows(
            f"SELECT * FROM session_summaries AS s WHERE sessionId = ? ORDER BY {order}",
            (self.sid,),
            SUMMARY_COLUMNS,
        )

    def latest_summary(self) -> dict[str, Any] | None:
        if not self._has("session_summaries", "sessionId", "summaryFrom"):
            return None
        got = self.rows(
            "SELECT * FROM session_summaries WHERE sessionId = ? ORDER BY summaryFrom DESC LIMIT 1",
            (self.sid,),
            SUMMARY_COLUMNS,
        )
        return got[0] if got else None

    def messages(self, from_seq: int | None = None, *, condense: bool) -> list[dict[str, Any]]:
        """The session's messages in order, each with its tool calls and images."""
        if not self._has("messages", "sessionId"):
            return []
        have = self.have["messages"]
        seq = col(have, "m", "seq")
        where, args = "m.sessionId = ?", (self.sid,)
        if from_seq is not None and "seq" in have:
            where, args = where + " AND m.seq >= ?", (self.sid, from_seq)
        tie = col(have, "m", "createdAt") + ", " + col(have, "m", "id")
        msgs = self.rows(
            f"SELECT * FROM messages AS m WHERE {where} ORDER BY {seq}, {tie}",
            args,
            MESSAGE_COLUMNS,
        )
        calls = self._tool_calls(where, args)
        by_message: dict[Any, list[dict[str, Any]]] = {}
        by_result: dict[Any, str] = {}
        by_call: dict[Any, str] = {}
        for c in calls:
            by_message.setdefault(c["messageId"], []).append(c)
            if c["resultSummary"]:
                if c["resultMessageId"]:
                    by_result[c["resultMessageId"]] = c["resultSummary"]
                if c["callId"]:
                    by_call[c["callId"]] = c["resultSummary"]
        for m in msgs:
            parts = m["parts"]
            if parts is not None:
                m["parts"] = parsed = parse_json(parts)
                m["images"] = [self.image(p) for p in images.image_parts(parsed)]
            else:
                m["images"] = []
            m["tool_calls"] = by_message.get(m["id"], [])
            condensed = False
            if condense and (by_result or by_call):
                summary = by_result.get(m["id"])
                if summary is None and m["toolCallId"]:
                    summary = by_call.get(m["toolCallId"])
                if summary is not None:
                    m["content"] = summary
                    condensed = True
            m["condensed"] = condensed
        return msgs

    def _tool_calls(self, where: str, args: tuple) -> list[dict[str, Any]]:
        if not self._has("tool_calls", "messageId") or not self._has("messages", "id"):
            return []
        pos = col(self.have["tool_calls"], "t", "position")
        calls = self.rows(
            f"SELECT t.* FROM tool_calls AS t JOIN messages AS m ON t.messageId = m.id"
            f" WHERE {where} ORDER BY t.messageId, {pos}",
            args,
            TOOL_CALL_COLUMNS,
        )
        for c in calls:
            if c["arguments"] is not None:
                c["arguments"] = parse_json(c["arguments"])
        return calls

    def image(self, part: images.ImagePart) -> Image:
        path = images.image_path(self.images_dir, self.sid, part.sha256, part.mime)
        return Image(
            part.sha256, part.mime, str(path) if path else None, bool(path and path.is_file())
        )

    def events(self) -> list[dict[str, Any]]:
        if not self._has("session_events", "sessionId"):
            return []
        have = self.have["session_events"]
        rows = self.conn.execute(
            f"SELECT {col(have, 'e', 'seq')}, {col(have, 'e', 'type')}, {col(have, 'e', 'payload')}"
            f" FROM session_events AS e WHERE sessionId = ? ORDER BY {col(have, 'e', 'seq')}",
            (self.sid,),
        ).fetchall()
        return [{"seq": s, "type": t, "payload": parse_json(p)} for s, t, p in rows]

    def model_calls(self) -> list[dict[str, Any]]:
        if not self._has("model_calls", "sessionId"):
            return []
        order = col(self.have["model_calls"], "c", "createdAt")
        return self.rows(
            f"SELECT * FROM model_calls AS c WHERE sessionId = ? ORDER BY {order}",
            (self.sid,),
            MODEL_CALL_COLUMNS,
        )

    def pending(self, session: dict[str, Any]) -> Pending | None:
        call_id = session.get("pendingCallId")
        if not call_id:
            return None
        name = arguments = None
        if self._has("tool_calls", "messageId", "callId") and self._has("messages", "id"):
            tc = self.have["tool_calls"]
            row = self.conn.execute(
                f"SELECT {col(tc, 't', 'name')}, {col(tc, 't', 'arguments')} FROM tool_calls AS t"
                " JOIN messages AS m ON t.messageId = m.id"
                " WHERE m.sessionId = ? AND t.callId = ? LIMIT 1",
                (self.sid, call_id),
            ).fetchone()
            if row:
                name, arguments = row[0], parse_json(row[1])
        return Pending(str(call_id), session.get("pendingKind"), name, arguments)

    def event_path(self, value: Any) -> tuple[str | None, bool]:
        """An image event's path and whether its file is missing."""
        if not isinstance(value, str) or not value:
            return None, True
        path = Path(value)
        if not path.is_absolute():  # relative to the shared file's folder
            path = self.images_dir.parent.parent / path
        return value, not os.path.isfile(path)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return None


def _from_events(reader: _Reader, events: list[dict[str, Any]]) -> list[Entry]:
    out = []
    for e in events:
        kind = e["type"] if isinstance(e["type"], str) and e["type"] else "event"
        p = e["payload"]
        if not isinstance(p, dict):
            # Not a JSON object: show the text that is there.
            out.append(Entry(kind, text=_text(p), payload=p if kind not in EVENT_TYPES else None))
            continue
        if kind == "image":
            path, missing = reader.event_path(p.get("path"))
            out.append(Entry(kind, text=_text(p.get("text")), path=path, missing=missing))
        elif kind in EVENT_TYPES:
            out.append(
                Entry(
                    kind,
                    text=_text(p.get("text")),
                    name=_text(p.get("name")),
                    arguments=p.get("arguments"),
                    status=_text(p.get("status")),
                    duration_ms=_int_or_none(p.get("durationMs")),
                )
            )
        else:
            out.append(Entry(kind, text=_text(p.get("text")), payload=p))
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
            out.append(Entry("image", text=label, path=img.path, missing=not img.exists))

    def end(c: dict[str, Any]) -> None:
        ended.add(id(c))
        out.append(
            Entry("tool_end", name=_text(c["name"]), status=_text(c["status"]),
                  duration_ms=_int_or_none(c["durationMs"]))
        )  # fmt: skip

    for m in messages:
        role = m["role"] if isinstance(m["role"], str) and m["role"] else "message"
        content = _text(m["content"])
        if role == "assistant":
            if m["reasoning"]:
                out.append(Entry("reasoning", text=_text(m["reasoning"])))
            if content:
                out.append(Entry("assistant", text=content))
            image_entries(m)
            for c in m["tool_calls"]:
                out.append(Entry("tool_start", name=_text(c["name"]), arguments=c["arguments"]))
                has_result = c["resultMessageId"] in result_ids
                if c["status"] and not has_result:
                    end(c)  # finished, but its result message is not there
        elif role == "tool":
            c = calls_by_result.get(m["id"]) or calls_by_call_id.get(m["toolCallId"])
            if c is not None and id(c) not in ended:
                end(c)
            elif c is None:
                out.append(Entry("tool_end", name=_text(m["toolCallId"]), status=None))
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
    if tail is not None and tail >= 0 and len(entries) > tail:
        earlier = len(entries) - tail
        entries = entries[earlier:]
    return Replay(session, entries, source, count, earlier, r.pending(session))


def _images_to_json(messages: list[dict[str, Any]]) -> None:
    for m in messages:
        if m["images"]:
            m["images"] = [i.to_json() for i in m["images"]]


def context(conn: sqlite3.Connection, session_id: str, images_dir: Path) -> Context:
    """The agent's resume context (see the README for the shape)."""
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    summary = r.latest_summary()
    start = summary.get("summaryFrom") if summary else None
    messages = r.messages(start if isinstance(start, int) else None, condense=True)
    _images_to_json(messages)
    return Context(session, summary, messages, r.pending(session))


def transcript(conn: sqlite3.Connection, session_id: str, images_dir: Path) -> Transcript:
    """Everything about one session, tool results in full."""
    r = _Reader(conn, session_id, images_dir)
    session = r.session()
    messages = r.messages(condense=False)
    for m in messages:
        del m["condensed"]
    _images_to_json(messages)
    return Transcript(
        session, r.summaries(), messages, r.events(), r.model_calls(), r.pending(session)
    )


# --- from a store: resolve the id (owner rule), then read --------------------------------
def resolve(conn: sqlite3.Connection, ref: str | None, owner: Owner) -> SessionRef:
    """`ref` as an id or unique prefix, or (None) the owner's latest session."""
    return find(conn, ref, owner) if ref is not None else latest(conn, owner)


def load_replay(store: Store, ref: str | None, owner: Owner, *, tail: int | None = None) -> Replay:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return replay(conn, s.id, store.paths.images_dir, tail=tail)


def load_context(store: Store, ref: str | None, owner: Owner) -> Context:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return context(conn, s.id, store.paths.images_dir)


def load_transcript(store: Store, ref: str, owner: Owner) -> Transcript:
    with store.reader() as conn:
        s = resolve(conn, ref, owner)
        return transcript(conn, s.id, store.paths.images_dir)
