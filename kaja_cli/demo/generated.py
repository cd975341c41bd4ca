"""The scaled-up demo store (`kaja demo --sessions N --messages M`): words that
follow a Zipf law, conversation lengths spread like real ones, and the usage
ledger a real agent writes beside them, buffered and written in batches."""

from __future__ import annotations

import bisect
import itertools
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from kaja_cli.core.clock import iso
from kaja_cli.core.conversations.record import uuid7
from kaja_cli.demo.topics import ASSISTANT_OPENERS, FILLER, TOPICS, USER_OPENERS

if TYPE_CHECKING:
    from kaja_cli.demo.model import DemoResult


class GeneratedLedger:
    """The usage ledger of the generated conversations, the way an agent writes it.

    Every user turn is a run with its event history (started, one step per
    tool, completed) and now and then a log line. A reply takes one to four
    model calls (routing, planning with an internal tool, the answer): about
    one call per message, with tools, events and logs in proportion. Its
    randomness is a stream of its own, so the generated conversations are the
    rows they always were. Rows are buffered and written with executemany
    once per batch: the 1M-message store holds about 3M ledger rows.
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

    def __init__(self, seed: int, result: DemoResult):
        self.rng = random.Random(f"kaja-demo-ledger:{seed}")
        self.result = result
        self.rows: dict[str, list[tuple]] = {
            t: [] for t in ("runs", "calls", "tools", "events", "logs")
        }
        self.run: list | None = None  # [run id, next event id, source, time of the last step]
        self.pid = 4242  # the demo's imaginary agent, as in _Demo._start_run: reproducible
        self.host = "kaja-demo"

    def new_run(self, source: str, sid: str, prompt: str, when: datetime) -> str:
        r = self.rng.random()
        status, error = (
            ("completed", None)
            if r < 0.97
            else (("failed", "model call failed") if r < 0.99 else ("canceled", None))
        )
        run_id = "run_" + uuid7(when, self.rng).replace("-", "")[-20:]  # 80 random bits
        self.rows["runs"].append((run_id, "kaja", source, sid, prompt, iso(when),
                                  iso(when + timedelta(seconds=2 + 40 * r)), status, error, self.pid, self.host))  # fmt: skip
        self.start_run(run_id, when, source)
        return run_id

    def start_run(self, run_id: str, when: datetime, source: str = "interactive") -> None:
        self.close_run()
        self.run = [run_id, 1, source, when]
        self._event("WorkflowExecutionStarted", '{"activity":"turn"}', when)
        if self.rng.random() < 0.3:
            self.rows["logs"].append(
                (iso(when), "info", f"run {run_id} started", "run", "kaja", source, run_id)
            )

    def close_run(self) -> None:
        if self.run is not None:
            self._event("WorkflowExecutionCompleted", "{}", self.run[3] + timedelta(seconds=1))
            self.run = None

    def _event(self, type: str, attributes: str, when: datetime) -> None:
        run = self.run
        assert run is not None
        self.rows["events"].append((run[0], run[1], iso(when), type, attributes))
        run[1] += 1
        run[3] = max(run[3], when)

    def reply(self, run_id, model, source, prompt_tokens, completion, cached, ttft, when) -> None:
        """The calls behind one assistant reply: a few helper calls, then the answer."""
        r = self.rng.random()
        extra = 0 if r < 0.24 else 1 if r < 0.63 else 2 if r < 0.94 else 3
        for j in range(extra):
            at = when - timedelta(seconds=3 * (extra - j))
            local = self.rng.random() < 0.2
            tool = None
            if not local and self.rng.random() < 0.45:
                tool = self.INTERNAL_TOOLS[int(self.rng.random() * len(self.INTERNAL_TOOLS))]
            self._call(run_id, at, "llama3.2:3b" if local else model, source, max(120, prompt_tokens - 200 * (extra - j)),
                       15 + int(self.rng.random() * 90), purpose="route" if local else "plan",
                       tool_calls=f'["{tool[0]}"]' if tool else "[]", can_fail=True)  # fmt: skip
            if tool:
                self._tool(run_id, tool, at + timedelta(milliseconds=400))
        self._call(run_id, when, model, source, prompt_tokens, completion, cached=cached, ttft=ttft)

    def tool_turn(self, run_id, model, name, status, duration, result_chars, when) -> None:
        """The call that asked for a tool the conversation shows, and the tool's row."""
        self._call(run_id, when, model, source=self.run[2] if self.run else "interactive",
                   prompt_tokens=500, completion=35, purpose="tool", tool_calls=f'["{name}"]')  # fmt: skip
        if status != "skipped":
            outcome = {"declined": "denied"}.get(status, status)
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
        self.rows["calls"].append((
            run_id, iso(at), engine, model, "router" if purpose == "route" else "assistant", source, "chat",
            prompt_tokens, completion, cached, "provider" if cached else None, 300 + completion * 12,
            completion * 10, prompt_tokens // 10, ttft or 150 + int(r * 500), 0, tool_calls, 0, purpose,
            ok, error,
        ))  # fmt: skip
        self.result.calls += 1
        if not ok:
            self.rows["logs"].append(
                (iso(at), "warn", f"model call failed: {error}", "model", model, source, run_id)
            )

    def _tool(self, run_id, tool, when) -> None:
        name, fails, denied = tool
        r = self.rng.random()
        outcome = "error" if r < fails else "denied" if r < fails + denied else "ok"
        self._add_tool(run_id, when, name, outcome, 20 + int(r * 1500), int(r * 4000))

    def _add_tool(self, run_id, when, name, outcome, duration, result_chars) -> None:
        error = f"{name} failed" if outcome == "error" else None
        self.rows["tools"].append((run_id, iso(when), name, outcome, duration, result_chars, error))
        if self.run is not None and self.run[0] == run_id:
            self._event("ActivityTaskCompleted", f'{{"tool":"{name}","outcome":"{outcome}"}}', when)
        if error:
            self.rows["logs"].append((iso(when), "error", error, "tool", name, "kaja", run_id))

    def flush(self, conn) -> None:
        for table, cols in (("runs", self.RUNS), ("calls", self.CALLS), ("tools", self.TOOLS),
                            ("events", self.EVENTS), ("logs", self.LOGS)):  # fmt: skip
            rows = self.rows[table]
            if rows:
                conn.executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    rows,
                )
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
        n = rng.randint(10, 26)
        total = self.cum[-1]
        picks = [self.words[bisect.bisect_left(self.cum, rng.random() * total)] for _ in range(n)]
        for _ in range(rng.randint(1, 3)):
            picks.insert(rng.randrange(len(picks) + 1), rng.choice(self.topic_words[topic]))
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
