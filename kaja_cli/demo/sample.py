"""The sample store: the scripted conversations, then every other table.

The default store plays the conversations of `script` (several owners,
tool calls with every status, an oversized result, compaction, a pending call,
images, timelines) and fills every other table of SPEC §4 and the side
databases. `sessions`/`messages` scale it up into the benchmark store with
generated conversations whose words follow a Zipf law.

The same seed and base time give the same rows.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kaja_cli.core.clock import iso, now_iso
from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.engine import fs
from kaja_cli.core.store import Store
from kaja_cli.demo import png, script
from kaja_cli.demo.generated import GeneratedLedger, Vocabulary, engine_of, split_counts
from kaja_cli.demo.script import Assistant, Compact, Image, Pending, Shown, Tool, User
from kaja_cli.errors import Interrupted, Refused, UsageError

Progress = Callable[[int, int | None], None]

BATCH = 2000  # messages per transaction in the scaled-up store

# The time the demo's ids count from, whatever --now is: the rows' times follow
# the clock, their ids do not, so `kaja demo` always writes the ids the README's
# examples use (the time part of a UUIDv7 is its first 12 hex digits, so of every
# short id). Ids still sort in the order their rows were written.
ID_EPOCH = datetime(2026, 11, 29, 12, tzinfo=UTC)
DEFAULT_SEED = 1  # the store the README and the tests describe


@dataclass(frozen=True)
class DemoOptions:
    seed: int = DEFAULT_SEED
    sessions: int | None = None  # total sessions (None: the scripted ones)
    messages: int | None = None  # total messages (None: about 20 per generated session)
    now: datetime | None = None  # base time; default: the current hour
    legacy: bool = False  # also the legacy files of an older install (demo/legacy.py)


@dataclass
class DemoResult:
    sessions: int = 0
    messages: int = 0
    tool_calls: int = 0
    images: int = 0
    owners: set[str] = field(default_factory=set)
    calls: int = 0
    location: str = ""
    legacy_files: int = 0

    def to_json(self) -> dict:
        """`kaja demo --json`: what was written."""
        return {"path": self.location, "sessions": self.sessions, "messages": self.messages,
                "tool_calls": self.tool_calls, "images": self.images,
                "owners": sorted(self.owners), "calls": self.calls,
                "legacy_files": self.legacy_files}  # fmt: skip


def existing_store(store: Store) -> list[str]:
    """What already lives at the store's location (demo refuses to touch it)."""
    paths = store.paths
    if store.cloud:
        found = _existing_on_server(store)
    else:
        found = [str(f.path) for f in paths.databases() if f.path.exists() or f.path.is_symlink()]
    if paths.files_dir.exists():
        found.append(str(paths.files_dir))
    return found


def _existing_on_server(store: Store) -> list[str]:
    """Kaja's schema on the server, if it holds conversations (or isn't Kaja's)."""
    from kaja_cli.core.engine import postgres as connection
    from kaja_cli.core.store.server import schema

    with connection.connect(store.target()) as conn:
        state = schema.status(conn)
        state.require_kaja(conn.target, writing=True)
        if "sessions" in state.tables and conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone():
            return [conn.target.where]
    return []


def _what_is_there(path: Path) -> str | None:
    """None for a file that may be a store (demo says one exists); else what it is."""
    from kaja_cli.core.engine import db, fs

    kind = db.classify(path) if not path.is_symlink() else "link"
    if kind in ("sqlite", "empty", "missing"):
        return None
    if kind == "other":
        return "a file that is not a SQLite database"
    try:
        return fs.what_is(path.lstat())
    except OSError:
        return None


def create(store: Store, options: DemoOptions, progress: Progress | None = None) -> DemoResult:
    if options.sessions is not None and options.sessions < 1:
        raise UsageError("--sessions must be at least 1")
    if options.messages is not None and options.messages < 0:
        raise UsageError("--messages must not be negative")
    from kaja_cli.core.care import wipe

    left = None if store.cloud else wipe.interrupted(store.paths)
    if left is not None:
        raise Refused(f"an interrupted wipe is not finished: {left.summary}")
    if not store.cloud and wipe.demo_cut_short(store.paths) is not None:
        raise Refused(
            f"an earlier `kaja demo` was cut short: a partial store is left at"
            f" {store.paths.shared_db.path}",
            hint="`kaja wipe --yes` removes it, then run `kaja demo` again",
        )
    found = existing_store(store)
    if options.legacy:
        from kaja_cli.demo import legacy

        found += [str(p) for p in legacy.existing(store.paths.state_dir.path)]
    if found:
        first = Path(found[0])
        what = None if store.cloud or first == store.paths.files_dir else _what_is_there(first)
        raise Refused(
            f"a Kaja store already exists ({found[0]})"
            if what is None
            else f"{found[0]} is {what}",
            hint="demo only writes a fresh one: use another --state-dir, or `kaja wipe` first"
            if what is None
            else "demo writes a new store only where there is nothing: use another --db or --state-dir",
        )
    rng = random.Random(options.seed)
    base = options.now or datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    base = base.astimezone(UTC)
    demo = _Demo(store, rng, base, progress or (lambda done, total=None: None), options.seed)
    demo.legacy = options.legacy
    scripted = script.SESSIONS[: options.sessions] if options.sessions else script.SESSIONS
    _plan(options, len(scripted), _count_scripted(scripted))  # bad options: before any file
    # On a server the schema is the store: a demo cut short there leaves
    # sessions (or images) that the next demo finds, and `kaja wipe` drops.
    marker = None if store.cloud else _mark_start(store)
    try:
        _write(demo, store, options, rng, base)
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: a partial demo store is left at {store.where()}",
            hint="`kaja wipe --yes` removes it before another `kaja demo`",
        ) from None
    except BaseException:
        if marker is not None and not existing_store(store):  # it stopped before writing anything
            marker.unlink(missing_ok=True)
        raise
    if marker is not None:  # every file is closed (the -wal folded in): the store is whole
        marker.unlink()
        fs.fsync_dir(marker.parent)
    demo.result.location = store.where()
    if options.legacy:
        from kaja_cli.demo import legacy

        demo.result.legacy_files = legacy.write(store.paths.state_dir.path, base)
    return demo.result


def _mark_start(store: Store) -> Path:
    """`kaja.db.demo`, made durable before the first file: until it goes, the
    store is a demo cut short (doctor says so, `kaja wipe` removes both)."""
    from kaja_cli.core.care import wipe

    marker = wipe.demo_marker(store.paths)
    fs.ensure_private_dir(marker.parent)
    wipe.write_marker(marker, {"version": wipe.MARKER_VERSION, "action": "demo",
                               "started_at": now_iso(), "pid": os.getpid()})  # fmt: skip
    return marker


def _write(
    demo: _Demo, store: Store, options: DemoOptions, rng: random.Random, base: datetime
) -> None:
    with Recorder(store, clock=lambda: base, rng=rng, id_shift=ID_EPOCH - base) as rec:
        demo.rec = rec
        scripted = script.SESSIONS
        if options.sessions is not None:
            scripted = scripted[: options.sessions]
        generated_sessions, generated_messages = _plan(
            options, len(scripted), _count_scripted(scripted)
        )
        demo.total = _count_scripted(scripted) + generated_messages
        with rec.transaction():
            for spec in scripted:
                demo.play(spec)
        demo.fill_other_tables()
        if generated_sessions:
            demo.generate(generated_sessions, generated_messages)


def _count_scripted(sessions: list[dict]) -> int:
    """The messages the scripted sessions write (a tool call writes two)."""
    per_step = {User: 1, Assistant: 1, Tool: 2, Image: 1, Pending: 1}
    return sum(per_step.get(type(step), 0) for s in sessions for step in script.steps(s))


def _plan(options: DemoOptions, scripted: int, scripted_messages: int) -> tuple[int, int]:
    """(generated sessions, generated messages) beyond the scripted ones."""
    if options.sessions is None and options.messages is None:
        return 0, 0
    sessions = (
        options.sessions
        if options.sessions is not None
        else max(scripted + 1, (options.messages or 0) // 100)
    )
    extra_sessions = max(0, sessions - scripted)
    if options.messages is None:
        return extra_sessions, extra_sessions * 20
    extra_messages = max(0, options.messages - scripted_messages)
    if extra_messages and not extra_sessions:
        raise UsageError(f"--messages beyond {scripted_messages} need --sessions above {scripted}")
    return extra_sessions, extra_messages


class _Demo:
    def __init__(
        self, store: Store, rng: random.Random, base: datetime, progress: Progress, seed: int = 0
    ):
        self.store = store
        self.rng = rng
        self.base = base
        self.progress = progress
        self.rec: Recorder
        self.result = DemoResult()
        self.total: int | None = None
        self.runs: list[str] = []
        self.session_ids: list[tuple[str, str | None, str]] = []  # (id, owner, title)
        self.seed = seed
        self.legacy = False  # --legacy: the older install's files are written beside the store
        self.ledger: GeneratedLedger
        # The server holds the conversations and the ledger (core.pg.schema):
        # learning, services, bookkeeping and the side databases stay local.
        self.cloud = store.cloud

    def _tick(self, n: int = 1) -> None:
        self.result.messages += n
        if self.result.messages % 500 == 0 or n > 1:
            self.progress(self.result.messages, self.total)

    # -- the scripted conversations ---------------------------------------------
    def play(self, spec: dict) -> None:
        rec, rng = self.rec, self.rng
        owner = spec["owner"]
        steps = script.steps(spec)
        end = self.base - timedelta(hours=spec["hours_ago"], minutes=rng.randint(0, 50))
        at = end - timedelta(minutes=2 * len(steps))
        clock = _Clock(at)
        sid = rec.start_session(
            owner=owner, persona=spec["persona"], model=spec["model"], title=spec["title"],
            system_prompt=f"You are Kaja, a helpful personal assistant{_persona(spec['persona'])}.",
            at=clock.now,
        )  # fmt: skip
        self.result.sessions += 1
        self.result.owners.add(owner or "terminal")
        self.session_ids.append((sid, owner, spec["title"]))
        timeline = owner is None  # the terminal keeps a screen timeline
        model = spec["model"]
        run_id: str | None = None
        run_ids = list(spec.get("run_ids", []))
        prompt_tokens = 900
        for step in steps:
            when = clock.step(rng)
            if isinstance(step, User):
                rec.add_message(sid, "user", step.text, at=when)
                run_id = self._run_for(
                    owner, sid, step.text, when, run_ids.pop(0) if run_ids else None
                )
                if timeline:
                    rec.add_event(sid, "user", {"text": step.text})
                self._tick()
            elif isinstance(step, Assistant):
                text, reasoning = step.text, step.reasoning
                completion = max(20, len(text) // 4)
                rec.add_message(
                    sid, "assistant", text, reasoning=reasoning, persona=spec["persona"], model=model,
                    prompt_tokens=prompt_tokens, completion_tokens=completion,
                    latency_ms=400 + completion * 12, finish_reason="stop", at=when,
                )  # fmt: skip
                self._ledger_call(run_id, model, prompt_tokens, completion, when)
                prompt_tokens += completion + 60
                if timeline:
                    if reasoning:
                        rec.add_event(sid, "reasoning", {"text": reasoning})
                    rec.add_event(sid, "assistant", {"text": text})
                self._tick()
            elif isinstance(step, Tool):
                self._tool_step(sid, spec, step, when, run_id, prompt_tokens, timeline)
                prompt_tokens += 200
            elif isinstance(step, Image):
                size = 24 + rng.randint(0, 16)
                part = rec.add_image(sid, png.gradient(size, size, step.start, step.end))
                rec.add_message(sid, step.sender, None, parts=[part], at=when)
                self.result.images += 1
                if timeline:
                    path = self.store.paths.images_dir / sid / f"{part['sha256']}.png"
                    rec.add_event(sid, "image", {"path": str(path), "text": step.label})
                if run_id:
                    rec.insert(
                        "media", run_id=run_id, at=iso(when), kind="image", engine="vision",
                        model=model, source=_source(owner), channel=_source(owner),
                        duration_ms=rng.randint(300, 1500), chars=0, outcome="ok", cold=0,
                    )  # fmt: skip
                self._tick()
            elif isinstance(step, Compact):
                summary_from = self._next_seq(sid)
                rec.add_summary(sid, summary_from, step.summary, at=when)
                rec.add_model_call(
                    sid, "compact", model, prompt_tokens=prompt_tokens, completion_tokens=len(step.summary) // 4,
                    latency_ms=1800 + rng.randint(0, 900), at=when,
                )  # fmt: skip
                prompt_tokens = 700
                if timeline:
                    rec.add_event(sid, "notice", {"text": "Conversation compacted into a summary."})
            elif isinstance(step, Pending):
                name, args = step.name, step.arguments
                msg = rec.add_message(
                    sid, "assistant", None, model=model, prompt_tokens=prompt_tokens,
                    completion_tokens=40, latency_ms=700, finish_reason="tool_calls", at=when,
                )  # fmt: skip
                tool_id = rec.add_tool_call(msg.id, name, args, at=when)
                call_id = self._call_id(tool_id)
                rec.set_pending(sid, call_id, step.kind)
                if timeline:
                    rec.add_event(sid, "tool_start", {"name": name, "arguments": args})
                    rec.add_event(
                        sid, "notice", {"text": f"Waiting for your approval to run {name}."}
                    )
                self.result.tool_calls += 1
                self._tick()
            elif isinstance(step, Shown):
                if timeline:
                    rec.add_event(sid, step.type, {"text": step.text})
        if not any(isinstance(s, Compact) for s in steps) and len(steps) >= 8:
            rec.add_model_call(sid, "summarize", model, prompt_tokens=prompt_tokens, completion_tokens=120,
                               latency_ms=1500, at=end)  # fmt: skip
        if not self.cloud:
            rec.insert(
                "conversation_threads", or_replace=True, resource_id=owner or "terminal",
                thread_id=sid, count=self._next_seq(sid) - 1, title=spec["title"],
            )  # fmt: skip

    def _tool_step(self, sid, spec, step: Tool, when, run_id, prompt_tokens, timeline) -> None:
        rec, rng = self.rec, self.rng
        name, args, status, approval = step.name, step.arguments, step.status, step.approval
        result, summary, duration = step.result, step.summary, step.duration_ms
        parts = None
        if step.colors is not None:
            parts = [rec.add_image(sid, png.gradient(32, 20, *step.colors))]
            self.result.images += 1
        msg = rec.add_message(
            sid, "assistant", None, persona=spec["persona"], model=spec["model"],
            prompt_tokens=prompt_tokens, completion_tokens=30 + rng.randint(0, 40),
            latency_ms=600 + rng.randint(0, 500), finish_reason="tool_calls", at=when,
        )  # fmt: skip
        tool_id = rec.add_tool_call(msg.id, name, args, at=when)
        call_id = self._call_id(tool_id)
        result_msg = rec.add_message(
            sid,
            "tool",
            result,
            parts=parts,
            tool_call_id=call_id,
            at=when + timedelta(milliseconds=duration or 5),
        )
        rec.finish_tool_call(
            tool_id, status=status, result_message_id=result_msg.id, duration_ms=duration,
            approval=approval, result_summary=summary,
        )  # fmt: skip
        if summary:
            rec.add_model_call(
                sid, "condense", spec["model"], prompt_tokens=len(result) // 4,
                completion_tokens=len(summary) // 4, latency_ms=900 + rng.randint(0, 400), at=when,
            )  # fmt: skip
        if timeline:
            rec.add_event(sid, "tool_start", {"name": name, "arguments": args})
            rec.add_event(sid, "tool_end", {"name": name, "status": status, "durationMs": duration})
            for part in parts or []:
                path = self.store.paths.images_dir / sid / f"{part['sha256']}.png"
                rec.add_event(sid, "image", {"path": str(path), "text": name})
        if run_id and status != "skipped":
            outcome = {"ok": "ok", "error": "error", "declined": "denied"}[status]
            rec.add_tool(
                run_id, name, outcome, at=when, duration_ms=duration or 0, arguments=args,
                result_chars=len(result), preview=result[:80],
                error=result[:200] if status == "error" else None,
            )  # fmt: skip
        self.result.tool_calls += 1
        self._tick(1)
        self._tick(1)

    def _call_id(self, tool_id: str) -> str:
        return (
            self.rec.conn()
            .execute('SELECT "callId" FROM tool_calls WHERE id = ?', (tool_id,))
            .fetchone()[0]
        )

    def _next_seq(self, sid: str) -> int:
        row = self.rec.conn().execute(
            'SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE "sessionId" = ?', (sid,)
        )
        return row.fetchone()[0]

    def _start_run(self, **kw) -> str:
        """Runs of the demo's imaginary agent: a fixed pid and host keep the store reproducible."""
        return self.rec.start_run(pid=4242, host="kaja-demo", **kw)

    def _run_for(
        self, owner: str | None, sid: str, prompt: str, when: datetime, run_id: str | None = None
    ) -> str:
        rec = self.rec
        run_id = self._start_run(
            agent="kaja",
            source=_source(owner),
            thread_id=sid,
            prompt=prompt[:200],
            at=when,
            run_id=run_id,
        )
        rec.end_run(
            run_id, "completed", result="ok", at=when + timedelta(seconds=self.rng.randint(2, 40))
        )
        rec.add_run_event(run_id, "WorkflowExecutionStarted", {"prompt": prompt[:60]}, at=when)
        rec.add_run_event(run_id, "ActivityTaskScheduled", {"activity": "model"}, at=when)
        rec.add_run_event(run_id, "WorkflowExecutionCompleted", {}, at=when + timedelta(seconds=3))
        rec.insert(
            "logs", at=iso(when), level="info", message=f"run {run_id} started", entity_type="run",
            entity_name="kaja", process=_source(owner), run_id=run_id,
        )  # fmt: skip
        self.runs.append(run_id)
        return run_id

    def _ledger_call(self, run_id, model, prompt_tokens, completion, when) -> None:
        rng = self.rng
        cached = prompt_tokens // 2 if rng.random() < 0.6 else 0
        self.rec.add_call(
            run_id, model=model, at=when, engine=engine_of(model), role="assistant", source="chat",
            kind="chat", prompt_tokens=prompt_tokens, completion_tokens=completion,
            cached_tokens=cached, cache_source="provider" if cached else None,
            duration_ms=400 + completion * 12, gen_ms=completion * 10, prompt_ms=prompt_tokens // 10,
            ttft_ms=200 + rng.randint(0, 400), load_ms=0, tool_calls="[]", think=0, purpose="reply", ok=1,
        )  # fmt: skip
        self.result.calls += 1

    # -- every other table ---------------------------------------------------------
    def fill_other_tables(self) -> None:
        rec, rng, base = self.rec, self.rng, self.base
        with rec.transaction():
            for owner, key, content, importance, tags, sticky in script.NOTES:
                rec.put_note(owner, key, content, importance=importance, tags=tags, sticky=sticky,
                             at=base - timedelta(days=rng.randint(1, 60)))  # fmt: skip
            for (owner, key), (times, ago) in script.NOTE_USES.items():
                rec.use_note(owner, key, at=base - ago, times=times)
            for topic, owner, version, answers, completed in script.DATASETS:
                when = base - timedelta(days=rng.randint(1, 90))
                for fld, value in answers.items():
                    rec.answer_dataset(topic, owner, version, fld, value, at=when)
                if completed:
                    rec.complete_dataset(topic, owner, version, at=when + timedelta(minutes=5))
            self._ledger_extras()
            if not self.cloud:
                self._learning_and_services()
                self._bookkeeping()
        if not self.cloud:
            self._side_databases()

    def _ledger_extras(self) -> None:
        rec, rng, base = self.rec, self.rng, self.base
        # The seed's example turn: run_7f3a's model call 1201 starts subagent run_91c0.
        parent = "run_7f3a" if "run_7f3a" in self.runs else self.runs[0]
        when = base - timedelta(hours=6)
        rec.insert("calls", id=1201, run_id=parent, at=iso(when), engine="ollama", model="llama3.2:3b", role="assistant",
                   source="interactive", kind="chat", prompt_tokens=2140, completion_tokens=96, cached_tokens=0,
                   duration_ms=1650, ttft_ms=410, ok=1, tool_calls='["spawn_subagent"]', purpose="reply")  # fmt: skip
        child = self._start_run(agent="researcher", source="subagent", parent_id=parent, prompt="Read the open PRs",
                              at=when, run_id="run_91c0")  # fmt: skip
        rec.end_run(child, "completed", result="3 open PRs", at=when + timedelta(seconds=9))
        rec.add_call(child, model="llama3.2:3b", at=when, engine="ollama", role="subagent", source="subagent",
                     kind="chat", prompt_tokens=1320, completion_tokens=210, cached_tokens=0, duration_ms=1300,
                     ttft_ms=380, ok=1, tool_calls='["git_log"]', purpose="subagent")  # fmt: skip
        rec.add_tool(
            child,
            "git_log",
            "ok",
            at=when,
            duration_ms=84,
            result_chars=3120,
            preview="commit 4c1e2d9…",
        )
        failed = self._start_run(
            agent="kaja",
            source="schedule",
            prompt="Weekly running plan",
            at=base - timedelta(days=3),
        )
        rec.end_run(
            failed,
            "failed",
            error="calendar integration not connected",
            at=base - timedelta(days=3, seconds=-20),
        )
        rec.add_call(failed, model="claude-haiku-4.5", at=base - timedelta(days=3), engine="anthropic", ok=0,
                     error="tool failed", prompt_tokens=800, completion_tokens=0)  # fmt: skip
        canceled = self._start_run(
            agent="kaja", source="api", prompt="Summarise my inbox", at=base - timedelta(days=2)
        )
        rec.end_run(canceled, "canceled", at=base - timedelta(days=2, seconds=-4))
        running = self._start_run(
            agent="kaja",
            source="interactive",
            prompt="Install the nightly backup",
            at=base - timedelta(hours=1),
        )
        for level, message in (("warn", "slow model response: 8.2 s"), ("error", "calendar API returned 403"),
                               ("debug", "cache hit for web_search")):  # fmt: skip
            rec.insert("logs", at=iso(base - timedelta(hours=rng.randint(1, 48))), level=level, message=message,
                       entity_type="agent", entity_name="kaja", process="terminal", run_id=running)  # fmt: skip
        rec.insert("logs", at=iso(base - timedelta(days=1)), level="info", message="kaja started", entity_type="process",
                   entity_name="kaja", process="telegram", run_id="")  # fmt: skip
        rec.insert("media", run_id=running, at=iso(base - timedelta(hours=2)), kind="stt", engine="whisper",
                   model="whisper-small", source="telegram", channel="voice", duration_ms=1800, first_ms=400,
                   audio_ms=5200, chars=96, outcome="ok", cold=1, details={"language": "es"})  # fmt: skip
        rec.insert("media", run_id=running, at=iso(base - timedelta(hours=2)), kind="tts", engine="piper",
                   model="es_ES-davefx", source="telegram", channel="voice", duration_ms=900, first_ms=250,
                   audio_ms=4100, chars=120, outcome="error", error="voice not installed", cold=0)  # fmt: skip
        good, bad = self.runs[0], self.runs[min(3, len(self.runs) - 1)]
        rec.insert("feedback", run_id=good, span_id="span_1", at=iso(base - timedelta(hours=2)), agent="kaja",
                   source="terminal", type="thumbs", value_num=1, comment="exactly what I needed", user_id="local")  # fmt: skip
        rec.insert("feedback", run_id=bad, span_id="span_2", at=iso(base - timedelta(hours=30)), agent="kaja",
                   source="telegram", type="thumbs", value_num=-1, comment="the times were wrong", user_id=script.TELEGRAM_ANA)  # fmt: skip
        rec.insert("feedback", run_id=good, at=iso(base - timedelta(hours=1)), agent="kaja", source="web",
                   type="score", value_num=4.5, value_text="4.5/5", tags=["helpful"])  # fmt: skip
        rec.insert("reviews", run_id=bad, status="needs-review", reason="feedback", note="thumbs down on timetable",
                   flagged_at=iso(base - timedelta(hours=30)), updated_at=iso(base - timedelta(hours=30)))  # fmt: skip
        rec.insert("reviews", run_id=failed, status="complete", reason="manual", tags=["calendar"], note="integration fixed",
                   flagged_at=iso(base - timedelta(days=3)), reviewed_at=iso(base - timedelta(days=2)),
                   updated_at=iso(base - timedelta(days=2)))  # fmt: skip
        for i in range(6):
            minute = (base - timedelta(minutes=15 * i)).strftime("%Y-%m-%dT%H:%M")
            rec.count_cache(minute, "web_fetch", hits=rng.randint(0, 9), misses=rng.randint(0, 4),
                            saved_ms=rng.randint(0, 4000), load_ms=rng.randint(0, 900))  # fmt: skip
            rec.count_cache(minute, "embeddings", hits=rng.randint(0, 30), misses=rng.randint(0, 3),
                            saved_ms=rng.randint(0, 900), load_ms=rng.randint(0, 200))  # fmt: skip
        rec.insert(
            "counters",
            or_replace=True,
            name="backfill:cache-estimates",
            value=iso(base - timedelta(days=40)),
        )

    def _learning_and_services(self) -> None:
        rec, base = self.rec, self.base
        ts = (base - timedelta(days=1)).timestamp()
        recipe = rec.insert(
            "experience_recipes", created_at=ts, updated_at=ts, task="split a long function and rerun the tests",
            steps=["read_file", "edit_file", "run_tests"], source="learned", prompt="Refactor the invoice parser",
            uses=3, wins=2, losses=1,
        )  # fmt: skip
        rec.insert(
            "experience_runs", created_at=ts, resource_id="terminal", thread_id=self.session_ids[0][0],
            prompt="Refactor the invoice parser", steps=[{"tool": "read_file"}, {"tool": "run_tests"}],
            output="All 412 tests pass.", model_calls=4, tool_calls=6, tool_errors=1, duration=41.5,
            used_recipes=[recipe], learned_recipe=recipe, feedback=1, trace_run_id=self.runs[0],
        )  # fmt: skip
        rec.insert("experience_tool_fixes", created_at=ts, updated_at=ts, scope="terminal", tool="run_tests",
                   error_key="pytest: no tests ran", error="no tests ran", failed={"command": "pytest tests/billing/"},
                   fixed={"command": "pytest tests/billing -q"}, hits=2)  # fmt: skip
        day = timedelta(days=1)
        rec.insert("schedules", id="sch_dentist", agent_id="kaja", cron="30 8 * * 2", prompt="Recordar la cita con el dentista",
                   name="dentista", timezone="Europe/Madrid", resource_id=script.TELEGRAM_ANA, status="active",
                   next_run_at=iso(base + 2 * day), last_run_at=iso(base - 5 * day), created_at=iso(base - 9 * day),
                   updated_at=iso(base - 5 * day), metadata={"channel": "telegram"})  # fmt: skip
        rec.insert("schedules", id="sch_running", agent_id="coach", cron="0 19 * * 0", prompt="Send this week's runs",
                   name="running plan", timezone="Europe/Stockholm", resource_id=script.TELEGRAM_BJORN, status="active",
                   next_run_at=iso(base - timedelta(minutes=5)), created_at=iso(base - 6 * day), updated_at=iso(base - day))  # fmt: skip
        rec.insert("schedules", id="sch_digest", agent_id="kaja", cron="0 7 * * *", prompt="Morning news digest",
                   name="digest", timezone="Europe/Paris", status="paused", created_at=iso(base - 30 * day),
                   updated_at=iso(base - 20 * day))  # fmt: skip
        rec.insert("triggers", id="trg_gmail", agent_id="kaja", name="invoices by mail", kind="gmail",
                   prompt="File invoices that arrive by mail", config={"label": "invoices"}, status="active",
                   secret="gmail-oauth-refresh-" + "%032x" % self.rng.getrandbits(128), state={"historyId": 88123},
                   next_check_at=iso(base + timedelta(minutes=10)), last_fired_at=iso(base - 2 * day),
                   recent_fires=[iso(base - 2 * day)], created_at=iso(base - 20 * day), updated_at=iso(base - 2 * day))  # fmt: skip
        rec.insert("triggers", id="trg_hook", agent_id="kaja", name="deploy finished", kind="webhook",
                   prompt="Tell me when the deploy finishes", config={"path": "/hooks/deploy"}, status="active",
                   secret="whsec_" + "%040x" % self.rng.getrandbits(160), last_error="signature mismatch",
                   created_at=iso(base - 10 * day), updated_at=iso(base - day))  # fmt: skip
        for i, (status, err) in enumerate((("completed", None), ("running", None), ("failed", "timeout after 300 s"),
                                           ("queued", None), ("cancelled", None))):  # fmt: skip
            rec.insert("background_tasks", id=f"bg_{i + 1:03d}", agent_id="kaja", tool_name="web_fetch",
                       arguments={"url": f"https://example.org/report/{i}"}, status=status, error=err,
                       result="saved" if status == "completed" else None, attempts=1 if status != "queued" else 0,
                       max_retries=3, timeout_seconds=300, resource_id="terminal", notify=1, notified=int(status == "completed"),
                       created_at=iso(base - timedelta(hours=i + 1)), updated_at=iso(base - timedelta(hours=i)))  # fmt: skip
        rec.insert("artifacts", id="a1b2c3", kind="screenshot", source="browser_screenshot", title="PR list",
                   fingerprint="sha256:" + "%064x" % self.rng.getrandbits(256),
                   path=str(self.store.paths.files_dir / "artifacts" / "pr-list.png"), created_at=iso(base - day))  # fmt: skip
        rec.insert("artifacts", id="a4d5e6", kind="page", source="https://www.sbb.ch/en", title="SBB timetable",
                   text="Zürich HB 07:32 → Genève 10:18", fingerprint="sha256:" + "%064x" % self.rng.getrandbits(256),
                   created_at=iso(base - 2 * day))  # fmt: skip

    def _bookkeeping(self) -> None:
        rec, base = self.rec, self.base
        if not self.legacy:  # with --legacy, usage.db is there waiting for `kaja migrate`
            rec.insert("kaja_migrations", or_replace=True, source=str(self.store.paths.state_dir.path / "usage.db"),
                       migrated_at=iso(base - timedelta(days=45)))  # fmt: skip
        for i in range(3):
            rec.insert(
                "sync_outbox",
                tbl="calls",
                key=str(i + 1),
                op="upsert",
                at=iso(base - timedelta(minutes=i)),
            )
        rec.insert("sync_outbox", tbl="runs", key=self.runs[-1], op="upsert", at=iso(base))
        rec.insert(
            "sync_map",
            or_replace=True,
            origin="laptop-7f3a",
            tbl="calls",
            key="1201",
            local_id="9001",
            seq=41,
        )
        rec.insert(
            "sync_state",
            or_replace=True,
            name="pull_cursor",
            value="41",
            updated_at=iso(base - timedelta(minutes=3)),
        )
        rec.insert(
            "sync_state",
            or_replace=True,
            name="history_seeded",
            value="1",
            updated_at=iso(base - timedelta(days=45)),
        )
        rec.insert("sync_flags", or_replace=True, name="importing", value="0")

    def _side_databases(self) -> None:
        rec, rng, base = self.rec, self.rng, self.base
        with rec.transaction("cache"):
            for i in range(8):
                expires = base + timedelta(hours=6) if i % 3 else base - timedelta(hours=2)
                rec.cache_put("web_fetch", f"https://example.org/page/{i}", {"status": 200, "bytes": 1000 + i},
                              expires_at=iso(expires), at=base - timedelta(minutes=35 * i))  # fmt: skip
            rec.cache_put(
                "embeddings",
                "all-minilm:tomato leaves curling",
                [0.12, -0.03, 0.44],
                expires_at=None,
                at=base - timedelta(days=3),
            )
        self._query_profile()
        with rec.transaction("auth"):
            user = rec.add_web_user("marie", "correct horse battery staple %d" % rng.getrandbits(32),
                                    role="admin", display_name="Marie", at=base - timedelta(days=50))  # fmt: skip
            rec.add_web_session(user, "token-%032x" % rng.getrandbits(128), expires_at=iso(base + timedelta(days=30)),
                                at=base - timedelta(hours=4))  # fmt: skip
            rec.add_web_session(user, "token-%032x" % rng.getrandbits(128), expires_at=iso(base - timedelta(days=2)),
                                at=base - timedelta(days=32))  # fmt: skip
            rec.insert("web_auth_meta", or_replace=True, key="legacy_owner_id", value=user)
            # Accounts made later: one signed in, one disabled (`kaja accounts`).
            ana = rec.add_web_user("ana", "mi contraseña %d" % rng.getrandbits(32), display_name="Ana García",
                                   at=base - timedelta(days=20))  # fmt: skip
            rec.add_web_session(ana, "token-%032x" % rng.getrandbits(128), expires_at=iso(base + timedelta(days=30)),
                                at=base - timedelta(days=2))  # fmt: skip
            rec.add_web_user("guest", "guest password %d" % rng.getrandbits(32), display_name="Guest",
                             at=base - timedelta(days=9), active=False)  # fmt: skip

    # The statements the agent's profiler times most: (db, sql, mean ms, rows per call).
    PROFILED = (
        ("kaja.db", "SELECT * FROM messages WHERE sessionId = ? ORDER BY seq", 1.4, 24),
        ("kaja.db", 'INSERT INTO messages (id, sessionId, seq, role, content, parts, reasoning, toolCallId, persona, model, promptTokens, completionTokens, latencyMs, finishReason, createdAt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)', 0.35, 1),
        ("kaja.db", "INSERT INTO calls (run_id, at, engine, model, prompt_tokens, completion_tokens, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)", 0.3, 1),
        ("kaja.db", "SELECT id, name, cron, next_run_at FROM schedules WHERE status = ? AND next_run_at <= ? ORDER BY next_run_at", 0.12, 0),
        ("cache.db", "SELECT value, expires_at FROM shared_cache WHERE namespace = ? AND key = ?", 0.06, 1),
    )  # fmt: skip

    def _query_profile(self) -> None:
        """db-stats.db as the profilers leave it: per-minute totals of the terminal's,
        the bot's and kaja's statements over three days, and a few slow queries."""
        # Its own random numbers: the rows written after these stay as they were.
        rec, rng, base = self.rec, random.Random(f"profile {self.seed}"), self.base
        processes = ((4242, "terminal"), (4311, "telegram"), (5120, "scheduler"))
        with rec.transaction("stats"):
            for day in range(3):
                for hours in (1, 5, 10):
                    pid, process = processes[(day + hours) % 3]
                    minute = base - timedelta(days=day, hours=hours, minutes=rng.randrange(60))
                    for db, sql, mean, rows in self.PROFILED:
                        calls = rng.randint(3, 30)
                        times = [mean * rng.uniform(0.5, 1.6) for _ in range(calls)]
                        rec.insert("db_query_stats", bucket=minute.strftime("%Y-%m-%dT%H:%M"), pid=pid,
                                   db=db, sql=sql, calls=calls, total_ms=round(sum(times), 3),
                                   max_ms=round(max(times), 3), rows=rows * calls, errors=0,
                                   process=process)  # fmt: skip
            slow = (
                (4242, "terminal", "kaja.db", "SELECT * FROM calls WHERE at >= ?", 88.0, 5000),
                (4311, "telegram", "kaja.db", "SELECT * FROM messages WHERE sessionId = ? ORDER BY seq", 61.5, 410),
                (4242, "terminal", "cache.db", "DELETE FROM shared_cache WHERE expires_at < ?", 53.2, 120),
            )  # fmt: skip
            for i, (pid, process, db, sql, ms, rows) in enumerate(slow):
                rec.insert("db_slow_queries", at=iso(base - timedelta(hours=5 * i + 1, minutes=7)), pid=pid,
                           process=process, db=db, sql=sql, duration_ms=ms, rows=rows)  # fmt: skip

    # -- the scaled-up store -----------------------------------------------------------
    def generate(self, sessions: int, messages: int) -> None:
        rec, rng, base = self.rec, self.rng, self.base
        words = Vocabulary(rng)
        topics = list(script.TOPICS)
        owners = (
            [None] * 7
            + [script.TELEGRAM_ANA, script.TELEGRAM_BJORN, script.WIDGET]
            + [f"telegram:{100000 + i}" for i in range(5)]
        )
        counts = split_counts(messages, sessions, rng)
        ledger = self.ledger = GeneratedLedger(self.seed, self.result)
        pending_rows = 0
        txn = rec.transaction()
        txn.__enter__()
        try:
            for n, count in enumerate(counts):
                topic = rng.choice(topics)
                owner = rng.choice(owners)
                spec = script.TOPICS[topic]
                title = rng.choice(spec["titles"])
                model = rng.choice(("gpt-5-mini", "claude-sonnet-4.5", "claude-haiku-4.5", "gpt-5"))
                start = base - timedelta(days=rng.uniform(0.1, 365))
                clock = _Clock(start)
                sid = rec.start_session(
                    owner=owner, persona=None, model=model, title=title, at=start
                )
                self.result.sessions += 1
                self.result.owners.add(owner or "terminal")
                timeline = owner is None and n % 10 == 0
                with_image = n % 97 == 5 and owner is None and count >= 2
                source = _source(owner)
                run_id = None
                seq = 0
                remaining = count - 1 if with_image else count
                while remaining > 0:
                    when = clock.step(rng)
                    seq += 1
                    role = "user" if seq % 2 == 1 else "assistant"
                    if role == "assistant" and remaining >= 2 and rng.random() < 0.12:
                        seq = self._generated_tool(sid, model, seq, when, run_id, words, topic)
                        remaining -= 2
                        pending_rows += 2
                        continue
                    text = words.sentence(topic, role)
                    if role == "user":
                        rec.add_message(sid, "user", text, at=when, seq=seq)
                        if rng.random() < 0.5:
                            run_id = self._start_run(
                                source=source, thread_id=sid, prompt=text[:120], at=when
                            )
                            rec.end_run(run_id, "completed", at=when + timedelta(seconds=5))
                            ledger.start_run(run_id, when)
                        else:  # every turn is a run, as the agent records them
                            run_id = ledger.new_run(source, sid, text[:120], when)
                    else:
                        completion = 20 + len(text) // 4
                        rec.add_message(
                            sid, "assistant", text, model=model, prompt_tokens=400 + seq * 30,
                            completion_tokens=completion, latency_ms=300 + completion * 10,
                            finish_reason="stop", at=when, seq=seq,
                        )  # fmt: skip
                        prompt_tokens = 400 + seq * 30
                        # The same draws as _ledger_call's: the conversations stay as they were.
                        cached = prompt_tokens // 2 if rng.random() < 0.6 else 0
                        ttft = 200 + rng.randint(0, 400)
                        ledger.reply(
                            run_id, model, source, prompt_tokens, completion, cached, ttft, when
                        )
                    if timeline:
                        rec.add_event(sid, role, {"text": text})
                    remaining -= 1
                    pending_rows += 1
                    if pending_rows >= BATCH:
                        ledger.flush(rec.conn())
                        txn.__exit__(None, None, None)
                        self._tick(pending_rows)
                        pending_rows = 0
                        txn = rec.transaction()
                        txn.__enter__()
                ledger.close_run()
                if with_image:
                    part = rec.add_image(
                        sid,
                        png.gradient(
                            16, 16, (rng.randrange(256), 80, 120), (20, rng.randrange(256), 60)
                        ),
                    )
                    seq += 1
                    rec.add_message(sid, "user", None, parts=[part], at=clock.step(rng), seq=seq)
                    self.result.images += 1
                    pending_rows += 1
            ledger.flush(rec.conn())
        except BaseException as e:
            txn.__exit__(type(e), e, e.__traceback__)
            raise
        txn.__exit__(None, None, None)
        self._tick(pending_rows)

    def _generated_tool(self, sid, model, seq, when, run_id, words, topic) -> int:
        rec, rng = self.rec, self.rng
        msg = rec.add_message(sid, "assistant", None, model=model, prompt_tokens=500, completion_tokens=35,
                              latency_ms=500, finish_reason="tool_calls", at=when, seq=seq)  # fmt: skip
        name = rng.choice(("web_search", "read_file", "run_tests", "shell", "web_fetch"))
        status = rng.choices(("ok", "error", "declined", "skipped"), weights=(85, 9, 4, 2))[0]
        tool_id = rec.add_tool_call(
            msg.id, name, {"query": words.sentence(topic, "tool")[:60]}, at=when
        )
        result = words.sentence(topic, "tool")
        res = rec.add_message(sid, "tool", result, tool_call_id=f"call_{tool_id.replace('-', '')[-12:]}",
                              at=when + timedelta(seconds=1), seq=seq + 1)  # fmt: skip
        duration = rng.randint(5, 3000)
        rec.finish_tool_call(tool_id, status=status, result_message_id=res.id, duration_ms=duration,
                             approval="declined" if status == "declined" else ("approved" if name == "shell" else None))  # fmt: skip
        if run_id:
            self.ledger.tool_turn(run_id, model, name, status, duration, len(result), when)
        self.result.tool_calls += 1
        return seq + 1


class _Clock:
    """Conversation time: each step a little after the previous one."""

    def __init__(self, start: datetime):
        self.now = start

    def step(self, rng: random.Random) -> datetime:
        self.now = self.now + timedelta(
            seconds=rng.randint(20, 240), milliseconds=rng.randint(0, 999)
        )
        return self.now


def _source(owner: str | None) -> str:
    if owner is None:
        return "interactive"
    return owner.split(":", 1)[0]


def _persona(persona: str | None) -> str:
    if not persona:
        return ""
    article = "an" if persona[0] in "aeiou" else "a"
    return f", acting as {article} {persona}"
