"""The sample store: the scripted conversations, then every other table.

The default store plays the conversations of `script` (several owners,
tool calls with every status, an oversized result, compaction, a pending call,
images, timelines) and fills every other table of SPEC §4 and the side
databases. `sessions`/`messages` scale it up into the benchmark store with
generated conversations whose words follow a Zipf law.

The same seed and base time give the same rows.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kaja_cli.core import clock
from kaja_cli.core.clock import iso, ms_of
from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.engine import fs
from kaja_cli.core.ledger import usage
from kaja_cli.core.store import Store, markers
from kaja_cli.demo import png, script
from kaja_cli.demo.generated import GeneratedStore, engine_of
from kaja_cli.demo.model import DemoOptions, DemoResult
from kaja_cli.demo.script import Assistant, Compact, Image, Pending, Shown, Tool, User
from kaja_cli.demo.tables import OtherTables
from kaja_cli.errors import Interrupted, KajaError, Refused, UsageError

Progress = Callable[[int, int | None], None]

# The time the demo's ids count from, whatever --now is: the rows' times follow
# the clock, their ids do not, so `kaja demo` always writes the ids the manual's
# examples use (the time part of a UUIDv7 is its first 12 hex digits, so of every
# short id). Ids still sort in the order their rows were written.
ID_EPOCH = datetime(2026, 11, 29, 12, tzinfo=UTC)


def existing_store(store: Store) -> list[str]:
    """What already lives at the store's location (demo refuses to touch it)."""
    return [str(p) for p in _existing(store)]


def _existing(store: Store) -> list[Path | str]:
    """The files there (a path), or the server's schema holding conversations."""
    found = store.part(__package__).existing(store)
    if store.paths.files_dir.exists():
        found.append(store.paths.files_dir)
    return found


def _what_is_there(path: Path) -> str | None:
    """None for a file that may be a store (demo says one exists); else what it is."""
    from kaja_cli.core.engine import db

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

    left = wipe.interrupted(store.paths)
    if left is not None:
        raise Refused(f"an interrupted wipe is not finished: {left.summary}")
    if markers.pending(store.paths, markers.Operation.DEMO):
        raise Refused(
            f"an earlier `kaja demo` was cut short: a partial store is left at {store.where()}",
            hint="`kaja wipe --yes` removes it, then run `kaja demo` again",
        )
    found = _existing(store)
    if options.legacy:
        from kaja_cli.demo import legacy

        found += legacy.existing(store.paths.state_dir.path)
    if found:
        first = found[0]
        files = store.paths.files_dir
        what = _what_is_there(first) if isinstance(first, Path) and first != files else None
        raise Refused(
            f"a Kaja store already exists ({first})" if what is None else f"{first} is {what}",
            hint="demo only writes a fresh one: use another --state-dir, or `kaja wipe` first"
            if what is None
            else "demo writes a new store only where there is nothing: use another --db or --state-dir",
        )
    rng = random.Random(options.seed)
    base = options.now or clock.now().replace(minute=0, second=0, microsecond=0)
    base = base.astimezone(UTC)
    demo = _Demo(store, rng, base, progress or (lambda done, total=None: None), options.seed)
    demo.legacy = options.legacy
    scripted = script.SESSIONS[: options.sessions] if options.sessions else script.SESSIONS
    _plan(options, len(scripted), _count_scripted(scripted))  # bad options: before any file
    marker = _mark_start(store)
    try:
        _write(demo, store, options, rng, base)
        usage.keep_up(store)  # its first `kaja usage` reads the rollups, as in a store in use
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: a partial demo store is left at {store.where()}",
            hint="`kaja wipe --yes` removes it before another `kaja demo`",
        ) from None
    except BaseException:
        if _wrote_nothing(store):  # it stopped before writing anything
            markers.finish(marker)
        raise
    # Every file is closed (the -wal folded in): the store is whole.
    markers.finish(marker)
    demo.result.location = store.where()
    if options.legacy:
        from kaja_cli.demo import legacy

        demo.result.legacy_files = legacy.write(store.paths.state_dir.path, base)
    return demo.result


def _mark_start(store: Store) -> Path:
    """`kaja.db.demo` (core/store/markers.py), made durable before the first
    file: until it goes, the store is a demo cut short (doctor says so, `kaja
    wipe` removes both). On a server too: the images it writes are here."""
    marker = markers.path(store.paths, markers.Operation.DEMO)
    fs.ensure_private_dir(marker.parent)
    markers.begin(marker, markers.Operation.DEMO)
    return marker


def _wrote_nothing(store: Store) -> bool:
    try:
        return not _existing(store)
    except KajaError:  # the server that failed the demo can't say: the marker stays
        return False


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


class _Demo(OtherTables):
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
        # What the store's engine keeps (demo.local, demo.server): a server the
        # conversations and the ledger only.
        self.keeps = store.part(__package__).keeps

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
        ticks = _Clock(at)
        sid = rec.start_session(
            owner=owner, persona=spec["persona"], model=spec["model"], title=spec["title"],
            system_prompt=f"You are Kaja, a helpful personal assistant{_persona(spec['persona'])}.",
            at=ticks.now,
        )  # fmt: skip
        self.result.sessions += 1
        self.result.owners[owner or "terminal"] += 1
        self.session_ids.append((sid, owner, spec["title"]))
        timeline = owner is None  # the terminal keeps a screen timeline
        model = spec["model"]
        run_id: str | None = None
        turn: _Turn | None = None
        run_ids = list(spec.get("run_ids", []))
        prompt_tokens = 900
        for step in steps:
            when = ticks.step(rng)
            if isinstance(step, User) and turn is not None:
                self._end_turn(turn, cap=when)
            elif turn is not None:  # a step of the turn: its run lasts at least until then
                turn.last = max(turn.last, when)
            if isinstance(step, User):
                rec.add_message(sid, "user", step.text, at=when)
                turn = self._run_for(
                    owner, sid, step.text, when, run_ids.pop(0) if run_ids else None
                )
                run_id = turn.run_id
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
                took = self._ledger_call(run_id, model, prompt_tokens, completion, when)
                if turn is not None:
                    turn.last = max(turn.last, when + took)
                prompt_tokens += completion + 60
                if timeline:
                    if reasoning:
                        rec.add_event(sid, "reasoning", {"text": reasoning})
                    rec.add_event(sid, "assistant", {"text": text})
                self._tick()
            elif isinstance(step, Tool):
                self._tool_step(sid, spec, step, when, run_id, prompt_tokens, timeline)
                if turn is not None:  # the run lasts until the tool has answered
                    turn.last = max(turn.last, when + timedelta(milliseconds=step.duration_ms or 5))
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
        if turn is not None:
            self._end_turn(turn)
        if not any(isinstance(s, Compact) for s in steps) and len(steps) >= 8:
            # after the last message, as the summary of what was said (the session's time span)
            rec.add_model_call(sid, "summarize", model, prompt_tokens=prompt_tokens, completion_tokens=120,
                               latency_ms=1500, at=ticks.now)  # fmt: skip
        if self.keeps("conversation_threads"):
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

    def _run_for(
        self, owner: str | None, sid: str, prompt: str, when: datetime, run_id: str | None = None
    ) -> _Turn:
        """The run of a user turn, started with the message; it ends with the
        turn (`_end_turn`): every call and tool of the turn lies inside it."""
        rec = self.rec
        run_id = self._start_run(
            agent="kaja",
            source=_source(owner),
            thread_id=sid,
            prompt=prompt[:200],
            at=when,
            run_id=run_id,
        )
        # the least a turn takes, when nothing follows the message (a turn cut short)
        least = when + timedelta(seconds=self.rng.randint(2, 40))
        rec.add_run_event(run_id, "WorkflowExecutionStarted", {"prompt": prompt[:60]}, at=when)
        rec.add_run_event(run_id, "ActivityTaskScheduled", {"activity": "model"}, at=when)
        rec.insert(
            "logs", at=iso(when), level="info", message=f"run {run_id} started", entity_type="run",
            entity_name="kaja", process=_source(owner), run_id=run_id,
        )  # fmt: skip
        self.runs.append(run_id)
        return _Turn(run_id, when, least)

    def _end_turn(self, turn: _Turn, cap: datetime | None = None) -> None:
        """The run ends once its last call or tool is done (not before the turn's
        least), and before the next turn's message (`cap`)."""
        end = max(turn.last, turn.least)
        if cap is not None:
            end = min(end, cap)
        self.rec.add_run_event(turn.run_id, "WorkflowExecutionCompleted", {}, at=end)
        self.rec.end_run(turn.run_id, "completed", result="ok", at=end)

    def _ledger_call(self, run_id, model, prompt_tokens, completion, when) -> timedelta:
        """The model call behind a reply; returns how long it took."""
        rng = self.rng
        cached = prompt_tokens // 2 if rng.random() < 0.6 else 0
        took = 400 + completion * 12
        self.rec.add_call(
            run_id, model=model, at=when, engine=engine_of(model), role="assistant", source="chat",
            kind="chat", prompt_tokens=prompt_tokens, completion_tokens=completion,
            cached_tokens=cached, cache_source="provider" if cached else None,
            duration_ms=took, gen_ms=completion * 10, prompt_ms=prompt_tokens // 10,
            ttft_ms=200 + rng.randint(0, 400), load_ms=0, tool_calls="[]", think=0, purpose="reply", ok=1,
        )  # fmt: skip
        self.result.calls += 1
        return timedelta(milliseconds=took)

    # -- the scaled-up store -----------------------------------------------------------
    def generate(self, sessions: int, messages: int) -> None:
        """The generated sessions (demo/generated.py), written in bulk."""
        writer = GeneratedStore(self.rec, self.rng, self.base, ms_of(ID_EPOCH) - ms_of(self.base),
                                self.seed, self.result, self._tick)  # fmt: skip
        with self.store.part(__package__).bulk(self.rec):
            writer.write(sessions, messages)


class _Turn:
    """A user turn's run while it lasts: when it started, the least it takes,
    and when its last call or tool was done."""

    def __init__(self, run_id: str, start: datetime, least: datetime):
        self.run_id, self.last, self.least = run_id, start, least


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
