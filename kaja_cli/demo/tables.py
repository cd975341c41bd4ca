"""The sample store beyond the conversations: notes, datasets, the rest of the
usage ledger, learning, services, the sync bookkeeping and the side
databases (SPEC §4), filled after the scripted conversations (`sample`).

What the store's engine keeps is asked of it (`keeps`, the demo's engine
part): a server holds the conversations and the ledger; learning, services,
the bookkeeping and the side databases are a local store's only.

The same seed and base time give the same rows.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from kaja_cli.core import clock
from kaja_cli.core.clock import iso
from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.store import Store
from kaja_cli.demo import script


class OtherTables:
    """Every table but the conversations', for the demo (`sample._Demo`) that
    played them: the runs it started, its seed, its clock."""

    store: Store
    rec: Recorder
    rng: random.Random
    base: datetime
    seed: int
    legacy: bool
    runs: list[str]
    session_ids: list[tuple[str, str | None, str]]  # (id, owner, title)
    keeps: Callable[[str], bool]  # whether the store's engine keeps a table

    def _start_run(self, **kw) -> str:
        """Runs of the demo's imaginary agent: a fixed pid and host keep the store reproducible."""
        return self.rec.start_run(pid=4242, host="kaja-demo", **kw)

    def _subagent_span(self, parent: str, takes: timedelta) -> tuple[datetime, datetime]:
        """When a subagent of `parent` that `takes` this long runs: from the
        parent's spawn_subagent tool call (or a second into the parent) to
        `takes` later, and never past the parent's end."""
        conn = self.rec.conn()
        row = conn.execute(
            "SELECT at FROM tools WHERE run_id = ? AND tool = 'spawn_subagent' ORDER BY at LIMIT 1",
            (parent,),
        ).fetchone()
        started, ended = conn.execute(
            "SELECT started_at, ended_at FROM runs WHERE id = ?", (parent,)
        ).fetchone()
        start = clock.parse_stored(row[0] if row else None)
        if start is None:
            start = clock.parse_stored(started) + timedelta(seconds=1)  # type: ignore[operator]
        end = start + takes
        last = clock.parse_stored(ended)
        if last is not None:
            start, end = min(start, last), min(end, last)
        return start, end

    def _ended(self, run: str) -> datetime:
        """When `run` ended (or started, while it runs), or the base time."""
        row = (
            self.rec.conn()
            .execute("SELECT COALESCE(ended_at, started_at) FROM runs WHERE id = ?", (run,))
            .fetchone()
        )
        return clock.parse_stored(row[0] if row else None) or self.base

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
            if self.keeps("experience_runs"):  # the agent's own tables: local only
                self._learning_and_services()
                self._bookkeeping()
        if self.keeps("shared_cache"):  # the side databases: local only
            self._side_databases()

    def _ledger_extras(self) -> None:
        rec, rng, base = self.rec, self.rng, self.base
        # The seed's example turn: run_7f3a's model call 1201 starts subagent run_91c0,
        # inside its parent's time: while the turn's spawn_subagent tool call runs.
        parent = "run_7f3a" if "run_7f3a" in self.runs else self.runs[0]
        when, end = self._subagent_span(parent, timedelta(seconds=9))
        rec.insert("calls", id=1201, run_id=parent, at=iso(when - timedelta(milliseconds=1650)), engine="ollama",
                   model="llama3.2:3b", role="assistant", source="interactive", kind="chat", prompt_tokens=2140,
                   completion_tokens=96, cached_tokens=0, duration_ms=1650, ttft_ms=410, ok=1,
                   tool_calls='["spawn_subagent"]', purpose="reply")  # fmt: skip
        child = self._start_run(agent="researcher", source="subagent", parent_id=parent, prompt="Read the open PRs",
                              at=when, run_id="run_91c0")  # fmt: skip
        rec.end_run(child, "completed", result="3 open PRs", at=end)
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
            # while the run goes on: it started an hour ago
            rec.insert("logs", at=iso(base - timedelta(minutes=rng.randint(1, 48))), level=level, message=message,
                       entity_type="agent", entity_name="kaja", process="terminal", run_id=running)  # fmt: skip
        rec.insert("logs", at=iso(base - timedelta(days=1)), level="info", message="kaja started", entity_type="process",
                   entity_name="kaja", process="telegram", run_id="")  # fmt: skip
        rec.insert("media", run_id=running, at=iso(base - timedelta(minutes=50)), kind="stt", engine="whisper",
                   model="whisper-small", source="telegram", channel="voice", duration_ms=1800, first_ms=400,
                   audio_ms=5200, chars=96, outcome="ok", cold=1, details={"language": "es"})  # fmt: skip
        rec.insert("media", run_id=running, at=iso(base - timedelta(minutes=50)), kind="tts", engine="piper",
                   model="es_ES-davefx", source="telegram", channel="voice", duration_ms=900, first_ms=250,
                   audio_ms=4100, chars=120, outcome="error", error="voice not installed", cold=0)  # fmt: skip
        good, bad = self.runs[0], self.runs[min(3, len(self.runs) - 1)]
        # a rating comes after the answer
        rated = min(self._ended(bad) + timedelta(minutes=10), base)
        rec.insert("feedback", run_id=good, span_id="span_1", at=iso(base - timedelta(hours=2)), agent="kaja",
                   source="terminal", type="thumbs", value_num=1, comment="exactly what I needed", user_id="local")  # fmt: skip
        rec.insert("feedback", run_id=bad, span_id="span_2", at=iso(rated), agent="kaja",
                   source="telegram", type="thumbs", value_num=-1, comment="the times were wrong", user_id=script.TELEGRAM_ANA)  # fmt: skip
        rec.insert("feedback", run_id=good, at=iso(base - timedelta(hours=1)), agent="kaja", source="web",
                   type="score", value_num=4.5, value_text="4.5/5", tags=["helpful"])  # fmt: skip
        rec.insert("reviews", run_id=bad, status="needs-review", reason="feedback", note="thumbs down on timetable",
                   flagged_at=iso(rated), updated_at=iso(rated))  # fmt: skip
        rec.insert("reviews", run_id=failed, status="complete", reason="manual", tags=["calendar"], note="integration fixed",
                   flagged_at=iso(base - timedelta(days=3, hours=-1)), reviewed_at=iso(base - timedelta(days=2)),
                   updated_at=iso(base - timedelta(days=2)))  # fmt: skip
        for i in range(6):
            minute = clock.minute(base - timedelta(minutes=15 * i))
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
        # learned from the run it traces, once that run had ended
        learned = (self._ended(self.runs[0]) + timedelta(seconds=2)).timestamp()
        recipe = rec.insert(
            "experience_recipes", created_at=learned, updated_at=learned, task="split a long function and rerun the tests",
            steps=["read_file", "edit_file", "run_tests"], source="learned", prompt="Refactor the invoice parser",
            uses=3, wins=2, losses=1,
        )  # fmt: skip
        rec.insert(
            "experience_runs", created_at=learned, resource_id="terminal", thread_id=self.session_ids[0][0],
            prompt="Refactor the invoice parser", steps=[{"tool": "read_file"}, {"tool": "run_tests"}],
            output="All 412 tests pass.", model_calls=4, tool_calls=6, tool_errors=1, duration=41.5,
            used_recipes=[recipe], learned_recipe=recipe, feedback=1, trace_run_id=self.runs[0],
        )  # fmt: skip
        rec.insert(
            "experience_recipes", created_at=ts - 86400, updated_at=ts, task="check the train times before a trip",
            steps=["web_fetch", "summarise"], source="manual", prompt="When is the next train to Geneva?",
            uses=1, wins=1, losses=0,
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
                   prompt="Tell me when the deploy finishes", config={"path": "/hooks/deploy", "notify_token": "xoxb-demo-0000-notify"}, status="active",
                   secret="whsec_" + "%040x" % self.rng.getrandbits(160), last_error="signature mismatch",
                   created_at=iso(base - 10 * day), updated_at=iso(base - day))  # fmt: skip
        # A task in every status; the running one (a long fetch, an hour allowed) started a
        # minute ago: a demo made now is well within it (`kaja doctor`'s `tasks` check).
        for i, (status, err) in enumerate((("completed", None), ("running", None), ("failed", "timeout after 300 s"),
                                           ("queued", None), ("cancelled", None), ("paused", None))):  # fmt: skip
            created = base - timedelta(hours=i + 1)
            started = None if status == "queued" else (base - timedelta(minutes=1) if status == "running"
                                                       else created + timedelta(seconds=2))  # fmt: skip
            rec.insert("background_tasks", id=f"bg_{i + 1:03d}", agent_id="kaja", tool_name="web_fetch",
                       arguments={"url": f"https://example.org/report/{i}"}, status=status, error=err,
                       result="saved" if status == "completed" else None, attempts=1 if status != "queued" else 0,
                       max_retries=3, timeout_seconds=3600 if status == "running" else 300, resource_id="terminal", notify=1, notified=int(status == "completed"),
                       created_at=iso(created), updated_at=iso(base - timedelta(hours=i)), started_at=iso(started) if started else None,
                       completed_at=iso(created + timedelta(seconds=40)) if status in ("completed", "failed") else None)  # fmt: skip
        # The screenshot's file is there (`kaja artifacts` shows ✓): the browser tool saved it
        # where a session's images are (so `kaja wipe` and `backup` treat it as theirs),
        # named relative to the state dir (a copied or restored store keeps it);
        # the saved page has no file.
        shots = sorted(self.store.paths.images_dir.glob("*/*.png"))
        shot = shots[0] if shots else self.store.paths.files_dir / "artifacts" / "pr-list.png"
        rec.insert("artifacts", id="a1b2c3", kind="screenshot", source="browser_screenshot", title="PR list",
                   fingerprint="sha256:" + "%064x" % self.rng.getrandbits(256),
                   path=str(shot.relative_to(self.store.paths.state_dir.path))
                   if shot.is_relative_to(self.store.paths.state_dir.path) else str(shot),
                   created_at=iso(base - day))  # fmt: skip
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
                        rec.insert("db_query_stats", bucket=clock.minute(minute), pid=pid,
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
