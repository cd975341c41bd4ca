"""The scaled-up demo store (`kaja demo --sessions N --messages M`): words that
follow a Zipf law, conversation lengths spread like real ones, and the usage
ledger a real agent writes beside them.

Written for size: 100k sessions and 10M messages (with about as many ledger
calls) take minutes, not hours. Rows are plain tuples built in one loop, with
times as whole milliseconds (`clock.iso_ms`), buffered and written with
`Recorder.add_rows` (executemany), one transaction per batch; the secondary
indexes and the search index are built once after the rows
(`demo.local.bulk`). No row is dated after the demo's base time (`--now`).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from kaja_cli.core.clock import iso_ms, ms_of
from kaja_cli.core.conversations.record import uuid7_ms
from kaja_cli.core.store import markers
from kaja_cli.demo import png, script
from kaja_cli.demo.topics import ASSISTANT_OPENERS, FILLER, TOPICS, USER_OPENERS

if TYPE_CHECKING:
    from kaja_cli.core.conversations.record import Recorder
    from kaja_cli.demo.model import DemoResult

BATCH = 20_000  # messages per transaction (with their ledger rows)
DAY_MS = 86_400_000
# A conversation step is 20 s to 241 s after the previous one; a run ends a
# second after its last call or tool is done. A session starts early enough
# for all of it to end before the base time.
STEP_MS = (20_000, 221_000)
TAIL_MS = 120_000
SHOWN_TOOL_MS = 3000  # the longest a tool call the conversation shows takes
MODELS = ("gpt-5-mini", "claude-sonnet-4.5", "claude-haiku-4.5", "gpt-5")
SHOWN_TOOLS = ("web_search", "read_file", "run_tests", "shell", "web_fetch")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def owners_for(sessions: int) -> list[str | None]:
    """Who the generated sessions belong to: the terminal (None) most often,
    the scripted owners, and Telegram users, about one owner per 100 sessions
    (1,000 for 100k sessions), at least the five of a small store."""
    return (
        [None] * 7
        + [script.TELEGRAM_ANA, script.TELEGRAM_BJORN, script.WIDGET]
        + [f"telegram:{100000 + i}" for i in range(max(5, sessions // 100 - 4))]
    )


class GeneratedLedger:
    """The usage ledger of the generated conversations, the way an agent writes it.

    Every user turn is a run with its event history (started, one step per
    tool, completed) and now and then a log line. A reply takes one to four
    model calls (routing, planning with an internal tool, the answer): about
    one call per message, with tools, events and logs in proportion. Its
    randomness is a stream of its own. Times are Unix milliseconds.
    """

    # (tool, share of its calls that fail, share denied): some fail more than others
    INTERNAL_TOOLS = (("memory_search", 0.01, 0.0), ("read_note", 0.02, 0.0), ("web_search", 0.06, 0.0),
                      ("calendar_lookup", 0.15, 0.02), ("python", 0.09, 0.05))  # fmt: skip
    CALLS = ("run_id", "at", "engine", "model", "role", "source", "kind", "prompt_tokens",
             "completion_tokens", "cached_tokens", "cache_source", "duration_ms", "gen_ms",
             "prompt_ms", "ttft_ms", "load_ms", "tool_calls", "think", "purpose", "ok", "error")  # fmt: skip
    RUNS = ("id", "agent", "source", "thread_id", "prompt", "started_at", "ended_at", "status",
            "error", "pid", "host")  # fmt: skip
    TOOLS = ("run_id", "at", "tool", "outcome", "duration_ms", "result_chars", "error")
    EVENTS = ("run_id", "event_id", "at", "type", "attributes")
    LOGS = ("at", "level", "message", "entity_type", "entity_name", "process", "run_id")
    COLUMNS = (
        ("runs", RUNS),
        ("calls", CALLS),
        ("tools", TOOLS),
        ("events", EVENTS),
        ("logs", LOGS),
    )

    def __init__(self, seed: int, result: DemoResult):
        self.rng = random.Random(f"kaja-demo-ledger:{seed}")
        self.result = result
        self.rows: dict[str, list[tuple]] = {t: [] for t, _ in self.COLUMNS}
        self.run: list | None = None  # [run id, next event id, source, time of the last step]
        self.row: list | None = None  # the runs row of `run`, written when it ends
        self.pid = 4242  # the demo's imaginary agent, as in _Demo._start_run: reproducible
        self.host = "kaja-demo"

    def new_run(self, source: str, sid: str, prompt: str, when: int) -> str:
        r = self.rng.random()
        status, error = (
            ("completed", None)
            if r < 0.97
            else (("failed", "model call failed") if r < 0.99 else ("canceled", None))
        )
        run_id = "run_" + uuid7_ms(when, self.rng).replace("-", "")[-20:]  # 80 random bits
        self.start_run(run_id, when, source)
        # written when it ends (`close_run`): its end is its last step's
        self.row = [run_id, "kaja", source, sid, prompt, iso_ms(when), None, status, error,
                    self.pid, self.host]  # fmt: skip
        return run_id

    def start_run(self, run_id: str, when: int, source: str = "interactive") -> None:
        self.close_run()
        self.run = [run_id, 1, source, when]
        self._event("WorkflowExecutionStarted", '{"activity":"turn"}', when)
        if self.rng.random() < 0.3:
            self.rows["logs"].append(
                (iso_ms(when), "info", f"run {run_id} started", "run", "kaja", source, run_id)
            )

    def close_run(self) -> None:
        """The run ends a second after its last step (a call or a tool done)."""
        if self.run is not None:
            end = self.run[3] + 1000
            self._event("WorkflowExecutionCompleted", "{}", end)
            if self.row is not None and self.row[0] == self.run[0]:
                self.row[6] = iso_ms(end)
                self.rows["runs"].append(tuple(self.row))
                self.row = None
            self.run = None

    def _done(self, run_id: str, when: int) -> None:
        """A step of the run `run_id` is done at `when`: the run lasts until then."""
        run = self.run
        if run is not None and run[0] == run_id and when > run[3]:
            run[3] = when

    def _event(self, type: str, attributes: str, when: int) -> None:
        run = self.run
        assert run is not None
        self.rows["events"].append((run[0], run[1], iso_ms(when), type, attributes))
        run[1] += 1
        if when > run[3]:
            run[3] = when

    def reply(self, run_id, model, source, prompt_tokens, completion, cached, ttft, when) -> None:
        """The calls behind one assistant reply: a few helper calls, then the answer."""
        rnd = self.rng.random
        r = rnd()
        extra = 0 if r < 0.24 else 1 if r < 0.63 else 2 if r < 0.94 else 3
        for j in range(extra):
            at = when - 3000 * (extra - j)
            local = rnd() < 0.2
            tool = None
            if not local and rnd() < 0.45:
                tool = self.INTERNAL_TOOLS[int(rnd() * len(self.INTERNAL_TOOLS))]
            self._call(run_id, at, "llama3.2:3b" if local else model, source, max(120, prompt_tokens - 200 * (extra - j)),
                       15 + int(rnd() * 90), purpose="route" if local else "plan",
                       tool_calls=f'["{tool[0]}"]' if tool else "[]", can_fail=True)  # fmt: skip
            if tool:
                self._tool(run_id, tool, at + 400)
        self._call(run_id, when, model, source, prompt_tokens, completion, cached=cached, ttft=ttft)

    def tool_turn(self, run_id, model, name, status, duration, result_chars, when) -> None:
        """The call that asked for a tool the conversation shows, and the tool's row."""
        self._call(run_id, when, model, source=self.run[2] if self.run else "interactive",
                   prompt_tokens=500, completion=35, purpose="tool", tool_calls=f'["{name}"]')  # fmt: skip
        if status != "skipped":
            outcome = "denied" if status == "declined" else status
            self._add_tool(run_id, when, name, outcome, duration, result_chars)

    def _call(self, run_id, at, model, source, prompt_tokens, completion, *, cached=None, ttft=None,
              purpose="reply", tool_calls="[]", can_fail=False) -> None:  # fmt: skip
        r = self.rng.random()
        ok, error = 1, None
        if can_fail and r < 0.015:  # a helper call that failed (the agent went on without it)
            ok, error = 0, "rate limited (429)" if r < 0.01 else "timeout after 60 s"
            completion = 0
        if cached is None:
            cached = prompt_tokens // 2 if r > 0.4 else 0
        engine = "ollama" if model == "llama3.2:3b" else engine_of(model)
        stamp = iso_ms(at)
        self._done(run_id, at + 300 + completion * 12)
        self.rows["calls"].append((
            run_id, stamp, engine, model, "router" if purpose == "route" else "assistant", source, "chat",
            prompt_tokens, completion, cached, "provider" if cached else None, 300 + completion * 12,
            completion * 10, prompt_tokens // 10, ttft or 150 + int(r * 500), 0, tool_calls, 0, purpose,
            ok, error,
        ))  # fmt: skip
        self.result.calls += 1
        if not ok:
            self.rows["logs"].append(
                (stamp, "warn", f"model call failed: {error}", "model", model, source, run_id)
            )

    def _tool(self, run_id, tool, when) -> None:
        name, fails, denied = tool
        r = self.rng.random()
        outcome = "error" if r < fails else "denied" if r < fails + denied else "ok"
        self._add_tool(run_id, when, name, outcome, 20 + int(r * 1500), int(r * 4000))

    def _add_tool(self, run_id, when, name, outcome, duration, result_chars) -> None:
        error = f"{name} failed" if outcome == "error" else None
        self.rows["tools"].append(
            (run_id, iso_ms(when), name, outcome, duration, result_chars, error)
        )
        if self.run is not None and self.run[0] == run_id:  # completed once it has answered
            done = when + duration
            self._event("ActivityTaskCompleted", f'{{"tool":"{name}","outcome":"{outcome}"}}', done)
        if error:
            self.rows["logs"].append((iso_ms(when), "error", error, "tool", name, "kaja", run_id))

    def flush(self, rec: Recorder) -> None:
        for table, cols in self.COLUMNS:
            rows = self.rows[table]
            if rows:
                rec.add_rows(table, cols, rows)
                rows.clear()


class Vocabulary:
    """Words ranked by a Zipf law: common words everywhere, a long tail of rare ones."""

    SYLLABLES = ("ka", "lo", "mir", "ven", "sa", "dor", "tel", "bri", "ska", "nu", "ro", "fa", "gel", "ti",
                 "mon", "ber", "al", "quin", "zu", "pe", "ras", "lin", "ok", "var")  # fmt: skip

    def __init__(self, rng: random.Random, tail: int = 30000):
        self.rng = rng
        head = list(FILLER)
        topic_words = sorted({w for t in TOPICS.values() for w in t["words"]})
        gen = random.Random(7)  # the same tail whatever the seed
        tail_words: list[str] = []
        seen = set(head) | set(topic_words)
        for combo in itertools.product(self.SYLLABLES, repeat=3):
            word = "".join(combo)
            if word not in seen:
                tail_words.append(word)
                seen.add(word)
        gen.shuffle(tail_words)
        self.words = head + topic_words + tail_words[:tail]
        weights = [1 / (rank + 1) ** 1.2 for rank in range(len(self.words))]
        self.cum = list(itertools.accumulate(weights))
        self.topic_words = {k: v["words"] for k, v in TOPICS.items()}

    def sentence(self, topic: str, role: str) -> str:
        rng = self.rng
        picks = rng.choices(self.words, cum_weights=self.cum, k=10 + int(rng.random() * 17))
        topic_words = self.topic_words[topic]
        for _ in range(1 + int(rng.random() * 3)):
            picks.insert(int(rng.random() * (len(picks) + 1)), rng.choice(topic_words))
        body = " ".join(picks)
        if role == "user":
            return f"{rng.choice(USER_OPENERS)} {body}?"
        if role == "tool":
            return body
        return f"{rng.choice(ASSISTANT_OPENERS)} {body}."


def split_counts(total: int, parts: int, rng: random.Random) -> list[int]:
    """`total` split into `parts` uneven counts (some long sessions, many short)."""
    if parts <= 0:
        return []
    weights = [rng.paretovariate(1.5) for _ in range(parts)]
    scale = total / sum(weights)
    counts = [int(w * scale) for w in weights]
    short = total - sum(counts)
    for i in range(short):
        counts[i % parts] += 1
    return counts


def engine_of(model: str) -> str:
    """The provider a model name belongs to, as the ledger's `engine` column says."""
    return "anthropic" if model.startswith("claude") else "openai"


class GeneratedStore:
    """Writes the generated sessions: conversations and their ledger, in batches.

    `rec` is the demo's Recorder (its rng draws the ids, as the scripted
    sessions' do), `tick(n)` reports n more messages written.
    """

    SESSIONS = ("id", "createdAt", "updatedAt", "model", "title", "owner")
    MESSAGES = ("id", "sessionId", "seq", "role", "content", "parts", "toolCallId", "model",
                "promptTokens", "completionTokens", "latencyMs", "finishReason", "createdAt")  # fmt: skip
    TOOL_CALLS = ("id", "messageId", "position", "callId", "name", "arguments", "resultMessageId",
                  "status", "durationMs", "approval")  # fmt: skip
    EVENTS = ("sessionId", "seq", "type", "payload")

    def __init__(self, rec: Recorder, rng: random.Random, base: datetime, id_shift_ms: int,
                 seed: int, result: DemoResult, tick: Callable[[int], None]):  # fmt: skip
        self.rec = rec
        self.rng = rng
        self.base_ms = ms_of(base)
        self.id_shift = id_shift_ms
        self.result = result
        self.tick = tick
        self.you = rec.store.owner(None).id
        self.ledger = GeneratedLedger(seed, result)
        self.rows: dict[str, list[tuple]] = {"sessions": [], "messages": [], "tool_calls": [],
                                             "session_events": []}  # fmt: skip

    def write(self, sessions: int, messages: int) -> None:
        rng, rec, ledger, result = self.rng, self.rec, self.ledger, self.result
        rnd = rng.random
        words = Vocabulary(rng)
        sentence = words.sentence
        topics = list(TOPICS)
        owners = owners_for(sessions)
        counts = split_counts(messages, sessions, rng)
        base, shift = self.base_ms, self.id_shift
        step_min, step_span = STEP_MS
        step_max = step_min + step_span
        out_messages = self.rows["messages"]
        out_events = self.rows["session_events"]
        pending = 0
        for n, count in enumerate(counts):
            topic = rng.choice(topics)
            owner = rng.choice(owners)
            title = rng.choice(TOPICS[topic]["titles"])
            model = rng.choice(MODELS)
            # Early enough for every step (and its run) to end before the base time.
            start = min(
                base - int(rng.uniform(0.1, 365) * DAY_MS), base - count * step_max - TAIL_MS
            )
            sid = uuid7_ms(start + shift, rng)
            result.sessions += 1
            result.owners[owner or "terminal"] += 1
            timeline = owner is None and n % 10 == 0
            with_image = n % 97 == 5 and owner is None and count >= 2
            source = "interactive" if owner is None else owner.split(":", 1)[0]
            run_id = None
            seq = 0
            events = 0
            t = last = start
            remaining = count - 1 if with_image else count
            while remaining > 0:
                t += step_min + int(rnd() * step_span)
                seq += 1
                user = seq % 2 == 1
                if not user and remaining >= 2 and rnd() < 0.12:
                    last = self._tool_turn(sid, model, seq, t, run_id, sentence, topic)
                    seq += 1
                    remaining -= 2
                    pending += 2
                    continue
                last = t
                stamp = iso_ms(t)
                mid = uuid7_ms(t + shift, rng)
                if user:
                    text = sentence(topic, "user")
                    out_messages.append((mid, sid, seq, "user", text, None, None, None, None,
                                         None, None, None, stamp))  # fmt: skip
                    run_id = ledger.new_run(source, sid, text[:120], t)
                else:
                    text = sentence(topic, "assistant")
                    completion = 20 + len(text) // 4
                    prompt_tokens = 400 + seq * 30
                    out_messages.append((mid, sid, seq, "assistant", text, None, None, model,
                                         prompt_tokens, completion, 300 + completion * 10, "stop",
                                         stamp))  # fmt: skip
                    cached = prompt_tokens // 2 if rnd() < 0.6 else 0
                    ttft = 200 + int(rnd() * 401)
                    ledger.reply(run_id, model, source, prompt_tokens, completion, cached, ttft, t)
                if timeline:
                    events += 1
                    out_events.append((sid, events, "user" if user else "assistant",
                                       _dumps({"text": text})))  # fmt: skip
                remaining -= 1
                pending += 1
                if pending >= BATCH:
                    self.flush()
                    self.tick(pending)
                    pending = 0
            ledger.close_run()
            if with_image:
                part = rec.add_image(sid, png.gradient(16, 16, (rng.randrange(256), 80, 120),
                                                       (20, rng.randrange(256), 60)))  # fmt: skip
                t += step_min + int(rnd() * step_span)
                seq += 1
                last = t
                out_messages.append((uuid7_ms(t + shift, rng), sid, seq, "user", None, _dumps([part]),
                                     None, None, None, None, None, None, iso_ms(t)))  # fmt: skip
                result.images += 1
                pending += 1
            self.rows["sessions"].append((sid, iso_ms(start), iso_ms(last), model, title,
                                          owner or self.you))  # fmt: skip
        self.flush()
        self.tick(pending)

    def _tool_turn(self, sid, model, seq, t, run_id, sentence, topic) -> int:
        """A tool call the conversation shows (two messages); returns the time of the last."""
        rng, shift = self.rng, self.id_shift
        rnd = rng.random
        mid = uuid7_ms(t + shift, rng)
        name = SHOWN_TOOLS[int(rnd() * len(SHOWN_TOOLS))]
        r = rnd() * 100
        status = "ok" if r < 85 else "error" if r < 94 else "declined" if r < 98 else "skipped"
        tool_id = uuid7_ms(t + shift, rng)
        arguments = _dumps({"query": sentence(topic, "tool")[:60]})
        text = sentence(topic, "tool")
        done = t + SHOWN_TOOL_MS + 1  # the result: once the call is done, however long it took
        res_id = uuid7_ms(done + shift, rng)
        call_id = f"call_{tool_id.replace('-', '')[-12:]}"
        self.rows["messages"].append((mid, sid, seq, "assistant", None, None, None, model, 500, 35,
                                      500, "tool_calls", iso_ms(t)))  # fmt: skip
        self.rows["messages"].append((res_id, sid, seq + 1, "tool", text, None, call_id, None, None,
                                      None, None, None, iso_ms(done)))  # fmt: skip
        duration = 5 + int(rnd() * (SHOWN_TOOL_MS - 4))
        approval = "declined" if status == "declined" else ("approved" if name == "shell" else None)
        self.rows["tool_calls"].append((tool_id, mid, 0, call_id, name, arguments, res_id, status,
                                        duration, approval))  # fmt: skip
        if run_id:
            self.ledger.tool_turn(run_id, model, name, status, duration, len(text), t)
        self.result.tool_calls += 1
        return done

    def flush(self) -> None:
        """Write what is buffered, in one transaction."""
        rec = self.rec
        with rec.transaction():
            for table, cols in (("sessions", self.SESSIONS), ("messages", self.MESSAGES),
                                ("tool_calls", self.TOOL_CALLS), ("session_events", self.EVENTS)):  # fmt: skip
                rows = self.rows[table]
                if rows:
                    rec.add_rows(table, cols, rows)
                    rows.clear()
            self.ledger.flush(rec)
        markers.checkpoint("demo-batch")  # a test may stop here (tests/support/paused.py)
