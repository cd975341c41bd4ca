"""Cloud mode with many clients at once (issue 42, item 4): 20 readers running
real `kaja --database-url URL …` commands and 4 agents writing through the
write API, against one server, for a minute (`--smoke`: 5 s).

A throwaway server (tests/support/pg.py's) gets the benchmark store by COPY
through kaja's schema, as bench_cloud.py loads it, its usage ledger too (runs,
calls, tool calls, events: what `kaja usage` reads there); a real PgBouncer
stands in front of it in transaction pooling, with a pool of POOL server
connections, and every client goes through it, as a hosted server is used.
Then, for DURATION_S seconds:

- READERS threads each run one `kaja` process after another, cycling over
  READS (each starting at another command): `sessions` (the account's, which
  the writers are writing), `search` of a word in about 100 messages, `resume
  --json` of the account's latest session (being written) and of a stored
  session of about 100 messages, `usage`, `notes`, `doctor --quick`. A
  command counts as an error when it exits other than 0 or prints a
  traceback;
- WRITERS processes (this file, `writer`) each record what an agent's turn
  records, one transaction per turn (a session every few turns, a run with its
  events and model call, a user message, an assistant message with a tool
  call, the tool's result, the answer), plus a message of their own
  transaction into one session all of them share (a group chat: they number
  its messages beside each other). Each keeps the ids it committed.

After: what the writers say they committed is on the server, by id, exactly
(none lost, none there twice or unknown), each session's messages numbered
1..n, the shared one's too, and the search index's count of messages is the
table's. Printed per command: runs, p50, p99, the slowest (wall time), errors,
and a reader's own CPU (its process's user + system time, the kernel's count
from `wait4`, the median: the rest of its wall time it waited for a core, the
pooler or the server); a row with
an error, or a count that differs, is MISSED, in a smoke run too (a lost row
is lost at any size; only the ratios' goals wait for the benchmark store).
The load average before, at its highest (sampled every 2 s) and after: on two
cores, 24 clients and the server make a slow machine, and that is the point
(correctness and tails). BENCH_CLIENTS_SECONDS=N runs N seconds instead.

The store is the benchmark store (`--sessions`, `--messages`), not the demo's:
search, resume and usage then read a store of the size the goals are set for.
tests/cloud/test_many_clients.py runs `run()` for 5 s on the demo's store.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

READERS, WRITERS = 20, 4
DURATION_S, SMOKE_S = 60.0, 5.0
POOL = 10  # server connections in PgBouncer's pool: fewer than the clients, as hosted
ACCOUNT = "bench@example.org"  # whose rows the writers write and `kaja sessions` lists
SESSION_TURNS = 5  # a writer starts a new session every this many turns
WAIT_S = 300  # a client still running this long is killed (an error): kaja's own waits end sooner


# --- what the bench and the test share -------------------------------------------------------
@dataclass
class Sample:
    command: str
    ms: float
    error: str = ""  # empty: exit 0, no traceback
    cpu_ms: float | None = None  # a reader's: its process's user + system time (wait4)


@dataclass
class Check:
    """What the writers said they committed against what the server holds."""

    what: str
    reported: int
    found: int
    lost: int = 0  # reported, not found
    extra: int = 0  # found more often than reported (twice, or never reported)
    note: str = ""
    bad: bool = False  # wrong in a way the counts do not show (`note` says how)

    @property
    def ok(self) -> bool:
        return self.reported == self.found and not self.lost and not self.extra and not self.bad


@dataclass
class Result:
    readers: int
    writers: int
    seconds: float
    pool: int  # PgBouncer's server connections (for the heading)
    order: list[str] = field(default_factory=list)  # the commands' names, as the table lists them
    # PgBouncer's count over the run: transactions, and the seconds clients
    # waited for a server connection in all (None: not asked)
    pooled: tuple[int, float] | None = None
    samples: list[Sample] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)  # 1-min load: before, highest, after

    @property
    def errors(self) -> list[str]:
        return [f"{s.command}: {s.error}" for s in self.samples if s.error] + [
            f"{c.what}: reported {c.reported}, found {c.found}, lost {c.lost}, extra {c.extra}"
            + (f" ({c.note})" if c.note else "")
            for c in self.checks
            if not c.ok
        ]


def run(
    url: str, direct: str, reads: list[tuple[str, list[str]]], *, kaja: str, env: dict[str, str],
    readers: int = READERS, writers: int = WRITERS, seconds: float = DURATION_S, pool: int = POOL,
    pool_stats: Callable[[], dict[str, int]] | None = None,
) -> Result:  # fmt: skip
    """Readers and writers through `url` (the pooler, of `pool` server
    connections) for `seconds` (the readers until each command ran once, if
    that takes longer); then the writers' rows counted on the server
    (`direct`, without the pooler). `env` names the state dir and the account
    (KAJA_ACCOUNT) of every client; `pool_stats`, PgBouncer's `SHOW STATS` of
    the database (`Bouncer.stats`), says how long they waited for the pool."""
    result = Result(readers, writers, seconds, pool, [name for name, _ in reads])
    shared, first = _shared_session(url, env)
    pooled = pool_stats() if pool_stats else {}
    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-clients-"))
    load = Load()
    try:
        until = time.time() + seconds
        begun: set[str] = set()  # the commands some reader started
        procs = []
        for i in range(writers):
            out = scratch / f"writer-{i}.json"
            argv = [sys.executable, __file__, "writer", url, str(i), str(until), shared, str(out)]
            procs.append((subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True), out))  # fmt: skip
        threads = [
            threading.Thread(
                target=_read, args=(i, reads, url, until, kaja, env, result.samples, begun)
            )
            for i in range(readers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wrote = []
        for i, (p, out) in enumerate(procs):
            try:
                _, err = p.communicate(timeout=max(until - time.time(), 0) + WAIT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
                err += f"\nstill writing {WAIT_S} s after the end: killed"
            doc = json.loads(out.read_text()) if out.exists() else {}
            wrote.append(doc)
            for line in doc.get("errors", []):
                result.samples.append(Sample("writer turn", 0.0, line))
            if p.returncode != 0 or "Traceback" in err:
                result.samples.append(Sample(f"writer {i}", 0.0, _one_line(err, p.returncode)))
            for name, ms in doc.get("took", []):
                result.samples.append(Sample(name, ms))
        result.load = load.stop()
        if pool_stats:
            after = pool_stats()
            result.pooled = (
                after.get("total_xact_count", 0) - pooled.get("total_xact_count", 0),
                (after.get("total_wait_time", 0) - pooled.get("total_wait_time", 0)) / 1e6,
            )
        result.checks = _count(direct, shared, first, wrote)
    finally:
        load.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return result


_BEGUN_LOCK = threading.Lock()


def _read(
    i: int, reads: list[tuple[str, list[str]]], url: str, until: float, kaja: str,
    env: dict[str, str], out: list[Sample], begun: set[str],
) -> None:  # fmt: skip
    """One reader: one whole `kaja` process after another until `until`, and
    past it while a command has not been started by any reader (`begun`): on
    a loaded machine a short run would otherwise leave the last ones out."""
    k = i
    while True:
        with _BEGUN_LOCK:
            left = [r for r in reads if r[0] not in begun]
            if time.time() < until:
                name, argv = reads[k % len(reads)]
                k += 1
            elif left:
                name, argv = left[0]
            else:
                break
            begun.add(name)
        start = time.perf_counter()
        p = subprocess.Popen([kaja, "--database-url", url, *argv], env=env, text=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)  # fmt: skip
        killer = threading.Timer(WAIT_S, p.kill)
        killer.start()
        err = p.stderr.read() if p.stderr else ""
        _, status, usage = os.wait4(p.pid, 0)  # the kernel's count of its CPU
        killer.cancel()
        took = (time.perf_counter() - start) * 1000
        p.returncode = code = os.waitstatus_to_exitcode(status)
        if p.stderr:
            p.stderr.close()
        bad = code != 0 or "Traceback" in err
        why = _one_line(err, code) if code != -9 else f"still running after {WAIT_S} s: killed"
        cpu = (usage.ru_utime + usage.ru_stime) * 1000
        out.append(Sample(name, took, why if bad else "", cpu))


def _one_line(err: str, code: int) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    return f"exit {code}: {last[:300]}"


class Load:
    """The 1-minute load average before, at its highest (every 2 s), and after."""

    def __init__(self) -> None:
        self.before = os.getloadavg()[0]
        self.highest = self.before
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(2.0):
            self.highest = max(self.highest, os.getloadavg()[0])

    def stop(self) -> tuple[float, float, float]:
        self._done.set()
        now = os.getloadavg()[0]
        return self.before, max(self.highest, now), now


# --- the writers -----------------------------------------------------------------------------
def _recorder(url: str):
    from kaja_cli.core.conversations.record import Recorder
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    return Recorder(Store.locate(Overrides(database_url=url)))


def _shared_session(url: str, env: dict[str, str]) -> tuple[str, str]:
    """The session every writer adds to (a group chat), made before they start,
    so the readers' `resume --json` finds the account a session from the first:
    its id and its first message's."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from bench_cloud_clients import _recorder\n"
        "with _recorder(sys.argv[2]) as rec:\n"
        "    sid = rec.start_session(title='The group chat', model='bench')\n"
        "    m = rec.add_message(sid, 'user', 'Who is cooking tonight?')\n"
        "print(sid, m.id)"
    )
    p = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), url], env=env,
                       capture_output=True, text=True, check=False)  # fmt: skip
    if p.returncode != 0:
        from harness import BenchError

        raise BenchError(f"the shared session was not written: {p.stderr[-800:]}")
    sid, first = p.stdout.split()
    return sid, first


WORDS = ("tomato basil garden water heat leaves rsync backup nightly kitchen recipe"
         " invoice train ticket weather forecast").split()  # fmt: skip


def write(url: str, index: int, until: float, shared: str, out: Path) -> None:
    """One agent until `until`: a turn per transaction, and a message into the
    shared session in a transaction of its own; what committed goes to `out`."""
    import random

    from kaja_cli.errors import KajaError

    rng = random.Random(index)
    wrote: dict[str, list] = {"sessions": [], "messages": [], "tool_calls": [], "runs": [],
                              "calls": [], "events": [], "shared": [], "errors": [], "took": []}  # fmt: skip
    sid = ""
    turn = 0
    with _recorder(url) as rec:
        while time.time() < until:
            words = " ".join(rng.choice(WORDS) for _ in range(12))
            mine: dict[str, list] = {k: [] for k in wrote}
            start = time.perf_counter()
            try:
                with rec.transaction():
                    if turn % SESSION_TURNS == 0:
                        sid = rec.start_session(title=f"Writer {index}, turn {turn}", model="bench")
                        mine["sessions"].append(sid)
                    run = rec.start_run(thread_id=sid, prompt=words, source="bench")
                    mine["runs"].append(run)
                    for kind in ("WorkflowExecutionStarted", "ActivityTaskScheduled"):
                        mine["events"].append([run, rec.add_run_event(run, kind)])
                    user = rec.add_message(sid, "user", f"w{index}t{turn} {words}")
                    ask = rec.add_message(sid, "assistant", None, model="bench-model",
                                          prompt_tokens=900 + turn, completion_tokens=40)  # fmt: skip
                    call = rec.add_tool_call(ask.id, "search", {"query": words[:40]})
                    result = rec.add_message(sid, "tool", f"3 results for {words[:40]}",
                                             tool_call_id=f"call_{call.replace('-', '')[-12:]}")  # fmt: skip
                    rec.finish_tool_call(call, status="ok", result_message_id=result.id,
                                         duration_ms=12)  # fmt: skip
                    answer = rec.add_message(sid, "assistant", f"Here is what I found: {words}",
                                             model="bench-model", prompt_tokens=1200,
                                             completion_tokens=80)  # fmt: skip
                    mine["messages"] += [[m.id, sid] for m in (user, ask, result, answer)]
                    mine["tool_calls"].append(call)
                    mine["calls"].append(rec.add_call(run, model="bench-model", ok=1,
                                                      prompt_tokens=2100, completion_tokens=120))  # fmt: skip
                    mine["events"].append(
                        [run, rec.add_run_event(run, "WorkflowExecutionCompleted")]
                    )
                    rec.end_run(run, "completed", result="ok")
                took = (time.perf_counter() - start) * 1000
                for k, v in mine.items():
                    wrote[k] += v
                wrote["took"].append(["writer turn (one transaction)", took])
            except KajaError as e:
                wrote["errors"].append(f"turn {turn}: {e.message}")
            start = time.perf_counter()
            try:
                m = rec.add_message(shared, "user", f"writer {index}, turn {turn}: {words}")
                wrote["shared"].append([m.id, shared])
                took = (time.perf_counter() - start) * 1000
                wrote["took"].append(["writer, the shared session", took])
            except KajaError as e:
                wrote["errors"].append(f"shared, turn {turn}: {e.message}")
            turn += 1
    out.write_text(json.dumps(wrote))


# --- counting ----------------------------------------------------------------------------------
def _count(direct: str, shared: str, first: str, wrote: list[dict]) -> list[Check]:
    """The writers' committed rows against the server's, by id (`first`: the
    shared session's first message, written before the writers started)."""
    import psycopg

    def rows(key: str) -> list:
        return [tuple(x) if isinstance(x, list) else x for doc in wrote for x in doc.get(key, [])]

    sessions = rows("sessions")
    messages = rows("messages") + rows("shared")
    runs = rows("runs")
    every = [*sessions, shared]
    checks = []
    with psycopg.connect(direct, autocommit=True) as conn:

        def check(what: str, reported: list, sql: str, *args) -> list:
            found = [tuple(r) if len(r) > 1 else r[0] for r in conn.execute(sql, args).fetchall()]
            want, have = Counter(reported), Counter(found)
            checks.append(Check(what, len(reported), len(found),
                                lost=sum((want - have).values()), extra=sum((have - want).values())))  # fmt: skip
            return found

        check("sessions", [*sessions, shared],
              "SELECT id FROM kaja.sessions WHERE owner = %s", ACCOUNT)  # fmt: skip
        found = check("messages", [*messages, (first, shared)],
                      'SELECT id, "sessionId" FROM kaja.messages WHERE "sessionId" = ANY(%s)',
                      every)  # fmt: skip
        calls = rows("tool_calls")
        check("tool calls", calls,
              'SELECT id FROM kaja.tool_calls WHERE "messageId" = ANY(%s)'
              " AND status = 'ok' AND \"resultMessageId\" IS NOT NULL",
              [m for m, _ in found])  # fmt: skip
        check("runs", runs, "SELECT id FROM kaja.runs WHERE thread_id = ANY(%s)"
              " AND status = 'completed'", every)  # fmt: skip
        check("model calls (ledger)", rows("calls"),
              "SELECT id FROM kaja.calls WHERE run_id = ANY(%s)", runs)  # fmt: skip
        check("run events", rows("events"),
              "SELECT run_id, event_id FROM kaja.events WHERE run_id = ANY(%s)", runs)  # fmt: skip
        numbered = conn.execute(
            'SELECT "sessionId", array_agg(seq ORDER BY seq) FROM kaja.messages'
            ' WHERE "sessionId" = ANY(%s) GROUP BY 1', (every,)
        ).fetchall()  # fmt: skip
        gaps = [sid for sid, seqs in numbered if seqs != list(range(1, len(seqs) + 1))]
        n = next((len(seqs) for sid, seqs in numbered if sid == shared), 0)
        gaps_note = f"; {len(gaps)} not numbered 1..n" if gaps else ""
        checks.append(Check("sessions numbered 1..n", len(numbered), len(numbered) - len(gaps),
                            note=f"the shared one: {n} messages from {len(wrote)} writers"
                                 + gaps_note, bad=bool(gaps)))  # fmt: skip
        counted, there = conn.execute(
            "SELECT (SELECT sum(messages) FROM kaja.kaja_search_stats),"
            " (SELECT count(*) FROM kaja.messages)"
        ).fetchone()
        checks.append(Check("search index: messages counted", int(there), int(counted or 0),
                            note="kaja_search_stats against count(*)"))  # fmt: skip
    return checks


# --- the bench row ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClientsRow:
    """A command's latencies among the clients (or a count): no ratio, no goal;
    MISSED when it met an error (or the count differs)."""

    case: str
    runs: int
    p50: float | None
    p99: float | None
    slowest: float | None
    errors: int
    note: str = ""
    cpu_p50: float | None = None  # a reader's own CPU (its process's), the median
    timed: str = "clients"  # "count": a count of rows, no latency
    goal: float | None = None
    # Never "could not be measured" (`harness.Row.error`): a command's failures
    # are its `errors`, counted, and make the row MISSED.
    error = ""

    @property
    def verdict(self) -> str:
        return "MISSED" if self.errors else "ok"

    @property
    def missed(self) -> bool:
        return bool(self.errors)

    def as_json(self) -> dict:
        return asdict(self) | {"verdict": self.verdict}


def rows(result: Result) -> list[ClientsRow]:
    """One row per command (readers first, in READS' order, then the writers),
    then one per count."""
    names = list(dict.fromkeys([*result.order, *(s.command for s in result.samples)]))
    out = []
    for name in names:
        mine = [s for s in result.samples if s.command == name]
        if not mine:
            continue
        ms = sorted(s.ms for s in mine if not s.error)
        cpu = sorted(s.cpu_ms for s in mine if not s.error and s.cpu_ms is not None)
        errors = [s.error for s in mine if s.error]
        out.append(ClientsRow(name, len(mine), _pct(ms, 50), _pct(ms, 99), ms[-1] if ms else None,
                              len(errors), "; ".join(sorted(set(errors))[:2]),
                              cpu_p50=_pct(cpu, 50)))  # fmt: skip
    for c in result.checks:
        out.append(ClientsRow(c.what, c.reported, None, None, None, 0 if c.ok else 1,
                              f"said {c.reported:,}, found {c.found:,}: lost {c.lost},"
                              f" extra {c.extra}" + (f"; {c.note}" if c.note else ""),
                              timed="count"))  # fmt: skip
    return out


def _pct(ms: list[float], p: int) -> float | None:
    """The p-th percentile of the figures (interpolated between the two nearest)."""
    if not ms:
        return None
    if len(ms) == 1:
        return ms[0]
    return statistics.quantiles(ms, n=100, method="inclusive")[p - 1]


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def format_rows(result: Result) -> list[str]:
    """The latencies' table, then the counts'."""
    before, highest, after = result.load
    pooled = ""
    if result.pooled:
        n, waited = result.pooled
        pooled = (f"; PgBouncer: {n:,} transactions, whose clients waited {waited:.1f} s in all"
                  f" for a server connection ({waited * 1000 / max(n, 1):.0f} ms a transaction)")  # fmt: skip
    lines = [
        f"cloud, many clients: {result.readers} readers (kaja processes) and {result.writers}"
        f" writers (the write API) through PgBouncer (transaction pooling, {result.pool} server"
        f" connection{'s' if result.pool != 1 else ''}) for {result.seconds:.0f} s; load average"
        f" {before:.1f} before, {highest:.1f} at most, {after:.1f} after{pooled}",
        f"{'command':<46} {'runs':>6} {'p50':>9} {'p99':>9} {'slowest':>9} {'errors':>6}"
        f" {'CPU p50':>9}",
    ]
    table = rows(result)
    for r in table:
        if r.timed != "count":
            lines.append(f"{r.case:<46} {r.runs:>6,} {_ms(r.p50):>9} {_ms(r.p99):>9}"
                         f" {_ms(r.slowest):>9} {r.errors:>6} {_ms(r.cpu_p50):>9}"
                         f"  {r.verdict:<6} {r.note}")  # fmt: skip
    lines.append(f"{'what the writers committed':<46} {'said':>6} {'found':>9} {'lost':>9}"
                 f" {'extra':>9}")  # fmt: skip
    for r, c in zip((r for r in table if r.timed == "count"), result.checks, strict=True):
        lines.append(f"{r.case:<46} {c.reported:>6,} {c.found:>9,} {c.lost:>9,} {c.extra:>9,}"
                     f" {'':>6} {'':>9}  {r.verdict:<6} {c.note}")  # fmt: skip
    return lines


# --- the store and the server -----------------------------------------------------------------------
def cases(bench) -> None:
    from harness import postgres

    pg = postgres(bench, "cloud clients", pgbouncer=True)
    if pg is None:
        return
    from tests.support.pgbouncer import Bouncer

    server = pg.server.start_new(pg.bindir)
    bouncer = Bouncer(server, pool_size=POOL, query_wait_s=120)  # PgBouncer's own default wait
    scratch = Path(tempfile.mkdtemp(prefix="kaja-bench-clients-state-"))
    try:
        bouncer.start()
        database = server.create_database("kaja_clients")
        _load(bench, database.url)
        env = bench.env | {"KAJA_STATE_DIR": str(scratch / "state"),
                           "KAJA_CONFIG": str(scratch / "settings.toml"), "KAJA_ACCOUNT": ACCOUNT}  # fmt: skip
        seconds = float(os.environ.get("BENCH_CLIENTS_SECONDS", 0)) or (
            DURATION_S if bench.judged else SMOKE_S
        )
        result = run(bouncer.url(database.name), database.url, reads(bench.db.resolve()),
                     kaja=bench.kaja_command, env=env, seconds=seconds,
                     pool_stats=lambda: bouncer.stats(database.name))  # fmt: skip
        for line in format_rows(result):
            bench.echo(line)
        bench.rows.extend(rows(result))
    finally:
        bouncer.stop()
        server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


def reads(db: Path) -> list[tuple[str, list[str]]]:
    """The readers' commands on the benchmark store, each named as the table prints it."""
    from harness import search_words

    (word, n), _common = search_words(db)
    with closing(sqlite3.connect(db.as_uri() + "?mode=ro", uri=True)) as conn:
        sid, owner, count = conn.execute(
            "SELECT m.sessionId, s.owner, count(*) AS n FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId GROUP BY m.sessionId"
            " ORDER BY abs(count(*) - 100), m.sessionId LIMIT 1"
        ).fetchone()
    who = ["--owner", owner] if owner else ["--owner", "terminal"]
    return [
        ("sessions (the account's, being written)", ["sessions"]),
        (f"search '{word}' ({n} messages) --all-owners", ["search", word, "--all-owners"]),
        ("resume --json (the account's latest)", ["resume", "--json"]),
        (f"resume --json, {count} messages", ["resume", sid, "--json", *who]),
        ("usage", ["usage"]),
        ("notes --all-owners", ["notes", "--all-owners"]),
        ("doctor --quick", ["doctor", "--quick"]),
    ]


def _load(bench, url: str) -> None:
    """kaja's schema on the server, then the benchmark store's tables of it by
    COPY (the conversations and the usage ledger), identities moved past the
    ids copied, as a writer's next row needs."""
    from harness import copy_into

    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides
    from kaja_cli.core.store.server import ddl, schema

    store = Store.locate(Overrides(database_url=url), environ=bench.env)
    start = time.perf_counter()
    count = 0
    with store.writer(create=True) as conn:
        conn.set_statement_timeout(3_600_000)  # COPY computes the search index of every row
        raw = conn.raw
        with (
            closing(sqlite3.connect(bench.db.resolve().as_uri() + "?mode=ro", uri=True)) as src,
            raw.transaction(),
        ):
            for table in schema.CLOUD_TABLES:
                have = {r[1] for r in src.execute(f'PRAGMA table_info("{table.name}")')}
                columns = [c for c in table.column_names if c in have]
                if not columns:
                    continue
                names = ", ".join(f'"{c}"' for c in columns)
                selected = src.execute(f'SELECT {names} FROM "{table.name}"')
                count += copy_into(raw, table.name, columns, selected)
                rowid = next((c.name for c in table.columns if ddl.is_rowid(c)), None)
                if rowid in columns:
                    raw.execute(
                        "SELECT pg_catalog.setval(pg_catalog.pg_get_serial_sequence(%s, %s),"
                        f" greatest((SELECT max({ddl.quote(rowid)}) FROM kaja.{ddl.quote(table.name)}), 1))",
                        (f"kaja.{ddl.quote(table.name)}", rowid),
                    )
        raw.execute("ANALYZE")
    bench.echo(f"(cloud clients: loaded {count:,} rows of the benchmark store, its usage ledger"
               f" included, into PostgreSQL with COPY in {time.perf_counter() - start:.0f} s)")  # fmt: skip


# --- a writer, as its own process ------------------------------------------------------------------
if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="one writer of bench_cloud_clients (not run by hand)")
    ap.add_argument("role", choices=["writer"])
    ap.add_argument("url")
    ap.add_argument("index", type=int)
    ap.add_argument("until", type=float)
    ap.add_argument("shared")
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    write(args.url, args.index, args.until, args.shared, args.out)
