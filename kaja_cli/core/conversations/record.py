"""The write API: how the agent, `kaja demo` and the tests record what happens.

    with Recorder(store) as rec:
        sid = rec.start_session(owner="telegram:123", model="gpt-5", title="Tomatoes")
        with rec.transaction():            # one user action = one transaction
            rec.add_message(sid, "user", "Why are my tomato leaves curling?")
            rec.add_message(sid, "assistant", "Usually heat or too much water…")

Each call outside a `transaction()` block is its own transaction. Ids are
UUIDv7 (they sort by creation time); timestamps are ISO 8601 UTC. Rows refer to
each other by shared ids, never enforced foreign keys, like every writer of
these files.

In cloud mode the same calls write to kaja's schema on the PostgreSQL server
(the store's server part): one SQL text for both engines (quoted names, `?`
placeholders the server's connection rewrites; a row is inserted the way the
store's engine does it, `Store.insert`), and "you" (no owner given) is
`[memory] account` there.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kaja_cli.core.clock import iso, now
from kaja_cli.core.conversations import images
from kaja_cli.core.engine import fs
from kaja_cli.core.engine.db import transaction
from kaja_cli.core.store import Store, schema
from kaja_cli.errors import UsageError

Clock = Callable[[], datetime]


def uuid7(dt: datetime, rng: random.Random | None = None) -> str:
    """A UUIDv7: 48 bits of Unix milliseconds, then random bits."""
    return uuid7_ms(int(dt.timestamp() * 1000), rng)


def uuid7_ms(ms: int, rng: random.Random | None = None) -> str:
    """`uuid7` of a Unix time in whole milliseconds."""
    rand = (rng or _sysrand).getrandbits(74)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_sysrand = random.SystemRandom()


def _json(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Message:
    id: str
    seq: int


class Recorder:
    """A write connection to a store's files, with the schema brought up to date."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        id_shift: timedelta = timedelta(0),
    ):
        self.store = store
        self.clock: Clock = clock or now
        self.rng = rng
        # The ids' time part is the row's time moved by this much: `kaja demo`
        # writes the same ids whenever it runs (the manual's examples use them).
        self.id_shift = id_shift
        self._stack: ExitStack | None = None
        self._conns: dict[str, sqlite3.Connection] = {}
        self._depth: dict[str, int] = {}
        # Whose rows "no owner" means: the terminal locally, the account in cloud mode.
        self._you = store.owner(None).id

    # -- connections and transactions ---------------------------------------
    def __enter__(self) -> Recorder:
        self._stack = ExitStack()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stack is not None
        self._stack.close()
        self._conns.clear()

    def conn(self, name: str = "shared") -> sqlite3.Connection:
        if self._stack is None:
            raise RuntimeError("use Recorder as a context manager")
        name = self.store.file_of(name)
        if name not in self._conns:
            self._conns[name] = self._stack.enter_context(self.store.writer(name, create=True))
        return self._conns[name]

    @contextmanager
    def transaction(self, name: str = "shared") -> Iterator[sqlite3.Connection]:
        """One user action: BEGIN IMMEDIATE … COMMIT (nested blocks join the outer one)."""
        name = self.store.file_of(name)
        conn = self.conn(name)
        if self._depth.get(name):
            self._depth[name] += 1
            try:
                yield conn
            finally:
                self._depth[name] -= 1
            return
        self._depth[name] = 1
        try:
            with transaction(conn):
                yield conn
        finally:
            self._depth[name] = 0

    def _next(self, conn: sqlite3.Connection, table: str, column: str, key: str, value: str) -> int:
        """The next number of `value`'s rows in `table` (a session's messages or
        events, a run's events), kept this writer's until its transaction ends:
        on a server, another writer of the same session waits for it
        (`Store.hold_numbering`) instead of writing the same number. A session's
        messages and events share one lock, so a writer that numbers both, in
        either order, never waits on one who holds the other."""
        owner = "run" if key == "run_id" else "session"
        self.store.hold_numbering(conn, f"{owner} {value}")
        return conn.execute(
            f'SELECT COALESCE(MAX("{column}"), 0) + 1 FROM {table} WHERE "{key}" = ?', (value,)
        ).fetchone()[0]

    def _now(self, at: datetime | None) -> datetime:
        return at or self.clock()

    def new_id(self, at: datetime | None = None) -> str:
        return uuid7(self._now(at) + self.id_shift, self.rng)

    # -- generic rows ---------------------------------------------------------
    def insert(self, table: str, /, *, or_replace: bool = False, **columns: Any) -> int:
        """Insert one row into any table of SPEC §4; returns its rowid.

        Column names are checked against the schema (they are a public
        contract), dicts and lists become JSON text.
        """
        spec = schema.TABLES.get(table)
        if spec is None:
            raise UsageError(f"unknown table {table!r}")
        unknown = set(columns) - set(spec.column_names)
        if unknown:
            raise UsageError(f"{table} has no column {', '.join(sorted(unknown))}")
        name = schema.database_of(table)  # in TABLES (checked above): one of the registry's
        names = list(columns)
        values = [_json(v) if isinstance(v, dict | list) else v for v in columns.values()]
        with self.transaction(name) as conn:
            return self.store.insert(conn, spec, names, values, or_replace=or_replace)

    def add_rows(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Many rows of one table in one statement (`kaja demo`'s bulk writer):
        plain values in the order of `columns`, checked against the schema."""
        spec = schema.TABLES.get(table)
        if spec is None:
            raise UsageError(f"unknown table {table!r}")
        unknown = set(columns) - set(spec.column_names)
        if unknown:
            raise UsageError(f"{table} has no column {', '.join(sorted(unknown))}")
        if not rows:
            return
        names = ", ".join(f'"{c}"' for c in columns)
        with self.transaction(schema.database_of(table)) as conn:
            conn.executemany(
                f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})', rows
            )

    # -- the conversation store ---------------------------------------------
    def start_session(
        self,
        *,
        owner: str | None = None,
        persona: str | None = None,
        model: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        at: datetime | None = None,
        session_id: str | None = None,
    ) -> str:
        now = self._now(at)
        sid = session_id or self.new_id(now)
        if not images.safe_name(sid):
            raise UsageError(f"unsafe session id {sid!r}")
        self.insert(
            "sessions", id=sid, createdAt=iso(now), updatedAt=iso(now), persona=persona,
            model=model, title=title, owner=owner or self._you, systemPrompt=system_prompt,
        )  # fmt: skip
        return sid

    def set_title(self, session_id: str, title: str) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))

    def add_message(
        self,
        session_id: str,
        role: str,
        content: str | None = None,
        *,
        parts: list[dict] | None = None,
        reasoning: str | None = None,
        tool_call_id: str | None = None,
        persona: str | None = None,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        latency_ms: int | None = None,
        finish_reason: str | None = None,
        at: datetime | None = None,
        seq: int | None = None,
    ) -> Message:
        """Append a message (next `seq` in its session) and touch the session."""
        now = self._now(at)
        stamp = iso(now)
        mid = self.new_id(now)
        with self.transaction() as conn:
            if seq is None:
                seq = self._next(conn, "messages", "seq", "sessionId", session_id)
            conn.execute(
                'INSERT INTO messages (id, "sessionId", seq, role, content, parts, reasoning,'
                ' "toolCallId", persona, model, "promptTokens", "completionTokens", "latencyMs",'
                ' "finishReason", "createdAt") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)',
                (mid, session_id, seq, role, content, _json(parts), reasoning, tool_call_id,
                 persona, model, prompt_tokens, completion_tokens, latency_ms, finish_reason,
                 stamp),
            )  # fmt: skip
            conn.execute(
                'UPDATE sessions SET "updatedAt" = ? WHERE id = ?'
                ' AND ("updatedAt" IS NULL OR "updatedAt" < ?)',
                (stamp, session_id, stamp),
            )
        return Message(mid, seq)

    def add_tool_call(
        self,
        message_id: str,
        name: str,
        arguments: Any = None,
        *,
        position: int = 0,
        call_id: str | None = None,
        at: datetime | None = None,
    ) -> str:
        """A tool call the assistant message made; its outcome comes with `finish_tool_call`."""
        tid = self.new_id(at)
        self.insert(
            "tool_calls", id=tid, messageId=message_id, position=position,
            callId=call_id or f"call_{tid.replace('-', '')[-12:]}", name=name,
            arguments=_json(arguments),
        )  # fmt: skip
        return tid

    def finish_tool_call(
        self,
        tool_call_id: str,
        *,
        status: str,
        result_message_id: str | None = None,
        duration_ms: int | None = None,
        approval: str | None = None,
        result_summary: str | None = None,
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                'UPDATE tool_calls SET "resultMessageId" = ?, status = ?, "durationMs" = ?,'
                ' approval = COALESCE(?, approval), "resultSummary" = ? WHERE id = ?',
                (result_message_id, status, duration_ms, approval, result_summary, tool_call_id),
            )

    def add_image(self, session_id: str, data: bytes, mime: str = "image/png") -> dict:
        """Store an image once per session, named by its sha256; returns its message part."""
        sha = hashlib.sha256(data).hexdigest()
        path = images.image_path(self.store.paths.images_dir, session_id, sha, mime)
        if path is None:
            raise UsageError(f"unsafe session id {session_id!r}")
        if not path.exists():
            fs.ensure_private_dir(path.parent)
            fs.write_private_file(path, data)
        return {"type": "image", "sha256": sha, "mime": mime}

    def add_summary(
        self, session_id: str, summary_from: int, summary: str, *, at: datetime | None = None
    ) -> None:
        self.insert(
            "session_summaries", sessionId=session_id, summaryFrom=summary_from,
            summary=summary, createdAt=iso(self._now(at)),
        )  # fmt: skip

    def add_model_call(
        self,
        session_id: str,
        kind: str,
        model: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        latency_ms: int | None = None,
        at: datetime | None = None,
    ) -> None:
        self.insert(
            "model_calls", sessionId=session_id, kind=kind, model=model,
            promptTokens=prompt_tokens, completionTokens=completion_tokens,
            latencyMs=latency_ms, createdAt=iso(self._now(at)),
        )  # fmt: skip

    def add_event(self, session_id: str, type: str, payload: dict | None = None) -> int:
        """Append to the terminal timeline; returns the event's `seq`."""
        with self.transaction() as conn:
            seq = self._next(conn, "session_events", "seq", "sessionId", session_id)
            conn.execute(
                'INSERT INTO session_events ("sessionId", seq, type, payload) VALUES (?, ?, ?, ?)',
                (session_id, seq, type, _json(payload or {})),
            )
        return seq

    def set_pending(self, session_id: str, call_id: str | None, kind: str | None) -> None:
        """Mark (or with None, clear) a tool call waiting on the human."""
        with self.transaction() as conn:
            conn.execute(
                'UPDATE sessions SET "pendingCallId" = ?, "pendingKind" = ? WHERE id = ?',
                (call_id, kind, session_id),
            )

    def put_note(
        self,
        owner: str,
        key: str,
        content: str,
        *,
        importance: str = "medium",
        tags: list[str] | None = None,
        sticky: bool = False,
        at: datetime | None = None,
    ) -> None:
        """Write a note; updating one keeps when it was created and how often used."""
        stamp = iso(self._now(at))
        with self.transaction() as conn:
            conn.execute(
                'INSERT INTO notes (owner, key, content, importance, tags, sticky, "createdAt",'
                ' "lastUsedAt", "useCount") VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)'
                " ON CONFLICT (owner, key) DO UPDATE SET content = excluded.content,"
                " importance = excluded.importance, tags = excluded.tags, sticky = excluded.sticky,"
                ' "lastUsedAt" = excluded."lastUsedAt"',
                (owner or self._you or "", key, content, importance, _json(tags), int(sticky),
                 stamp, stamp),
            )  # fmt: skip

    def use_note(self, owner: str, key: str, *, at: datetime | None = None, times: int = 1) -> None:
        """The agent read a note into a conversation (`times` times, the last at `at`)."""
        with self.transaction() as conn:
            conn.execute(
                'UPDATE notes SET "useCount" = coalesce("useCount", 0) + ?, "lastUsedAt" = ?'
                " WHERE owner = ? AND key = ?",
                (times, iso(self._now(at)), owner or self._you or "", key),
            )

    def answer_dataset(
        self,
        topic: str,
        owner: str,
        version: int,
        field: str,
        value: Any,
        *,
        at: datetime | None = None,
    ) -> None:
        self.insert(
            "dataset_answers", or_replace=True, topic=topic, owner=owner or self._you or "",
            version=version,
            field=field, value=_json(value), answeredAt=iso(self._now(at)),
        )  # fmt: skip

    def complete_dataset(
        self, topic: str, owner: str, version: int, *, at: datetime | None = None
    ) -> None:
        self.insert(
            "dataset_versions", or_replace=True, topic=topic, owner=owner or self._you or "",
            version=version,
            completedAt=iso(self._now(at)),
        )  # fmt: skip

    # -- the usage ledger ------------------------------------------------------
    def start_run(
        self,
        *,
        agent: str = "kaja",
        source: str = "interactive",
        thread_id: str | None = None,
        prompt: str | None = None,
        parent_id: str | None = None,
        at: datetime | None = None,
        run_id: str | None = None,
        pid: int | None = None,
        host: str | None = None,
    ) -> str:
        now = self._now(at)
        run_id = run_id or "run_" + self.new_id(now).replace("-", "")[-20:]  # 80 random bits
        self.insert(
            "runs", id=run_id, parent_id=parent_id, agent=agent, source=source,
            thread_id=thread_id, prompt=prompt, started_at=iso(now), status="running",
            pid=pid if pid is not None else os.getpid(),
            host=host if host is not None else (os.uname().nodename if hasattr(os, "uname") else None),
        )  # fmt: skip
        return run_id

    def end_run(
        self, run_id: str, status: str, *, result: str | None = None, error: str | None = None,
        at: datetime | None = None,
    ) -> None:  # fmt: skip
        with self.transaction() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, result = ?, error = ?, ended_at = ? WHERE id = ?",
                (status, result, error, iso(self._now(at)), run_id),
            )

    def add_call(
        self, run_id: str | None, *, model: str, at: datetime | None = None, **columns: Any
    ) -> int:
        """One model request of a run (tokens, timings: the `calls` columns)."""
        return self.insert(
            "calls", run_id=run_id or "", at=iso(self._now(at)), model=model, **columns
        )

    def add_tool(
        self,
        run_id: str | None,
        tool: str,
        outcome: str,
        *,
        at: datetime | None = None,
        **columns: Any,
    ) -> int:
        return self.insert(
            "tools",
            run_id=run_id or "",
            at=iso(self._now(at)),
            tool=tool,
            outcome=outcome,
            **columns,
        )

    def add_run_event(
        self, run_id: str, type: str, attributes: Any = None, *, at: datetime | None = None
    ) -> int:
        """The next step of a run's event history; returns its `event_id`."""
        with self.transaction() as conn:
            event_id = self._next(conn, "events", "event_id", "run_id", run_id)
            conn.execute(
                "INSERT INTO events (run_id, event_id, at, type, attributes) VALUES (?, ?, ?, ?, ?)",
                (run_id, event_id, iso(self._now(at)), type, _json(attributes or {})),
            )
        return event_id

    def count_cache(
        self,
        minute: str,
        cache: str,
        *,
        hits: int = 0,
        misses: int = 0,
        saved_ms: int = 0,
        load_ms: int = 0,
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO cache_stats (minute, cache, hits, misses, saved_ms, load_ms)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (minute, cache) DO UPDATE SET"
                " hits = cache_stats.hits + excluded.hits,"
                " misses = cache_stats.misses + excluded.misses,"
                " saved_ms = cache_stats.saved_ms + excluded.saved_ms,"
                " load_ms = cache_stats.load_ms + excluded.load_ms",
                (minute, cache, hits, misses, saved_ms, load_ms),
            )

    # -- the side databases ------------------------------------------------------
    def cache_put(
        self, namespace: str, key: str, value: Any, *, expires_at: str | None = None,
        at: datetime | None = None,
    ) -> None:  # fmt: skip
        """A shared cache entry; `at` is its last access (default: now)."""
        self.insert(
            "shared_cache", or_replace=True, namespace=namespace, key=key, value=_json(value),
            expires_at=expires_at, last_access=iso(self._now(at)),
        )  # fmt: skip

    def add_web_user(
        self, username: str, password: str, *, role: str = "user", display_name: str | None = None,
        at: datetime | None = None, active: bool = True,
    ) -> str:  # fmt: skip
        """A web account; the password is kept only as a scrypt hash with its salt."""
        salt = (self.rng or _sysrand).randbytes(16)
        digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
        user_id = self.new_id(at)
        self.insert(
            "web_users", id=user_id, username=username, display_name=display_name or username,
            password_hash=digest.hex(), salt=salt.hex(), role=role, active=int(active),
            created_at=iso(self._now(at)),
        )  # fmt: skip
        return user_id

    def add_web_session(
        self, user_id: str, token: str, *, expires_at: str, at: datetime | None = None
    ) -> str:
        """A sign-in session; only the token's SHA-256 is stored."""
        token_hash = hashlib.sha256(token.encode()).hexdigest()
        self.insert(
            "web_sessions", token_hash=token_hash, user_id=user_id, expires_at=expires_at,
            created_at=iso(self._now(at)),
        )  # fmt: skip
        return token_hash
