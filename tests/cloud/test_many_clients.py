"""Cloud mode with many clients at once (issue 42, item 4).

A server runs writers beside each other, where SQLite's BEGIN IMMEDIATE makes
them take turns: two agents writing into one session (a group chat, a
subagent beside its parent) must still number its messages and events one
after the other, and neither may fail on the other's number. Then a short run
of bench/bench_cloud_clients.py's: readers running real `kaja` commands and
writers recording through the write API, all through PgBouncer in transaction
pooling, for a few seconds: no error, and every row a writer says it wrote is
on the server, once.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from kaja_cli.core.conversations.record import Recorder
from tests.support.sync_support import store_of

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures", "tests.support.pgbouncer"]

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _beside(first: Recorder, then) -> tuple[list[str], threading.Thread]:
    """Run `then` in a thread while `first` holds a transaction open (after
    the caller's block wrote in it), and let that transaction commit a second
    later: a second writer meeting the first one mid-transaction. Returns the
    errors the second writer met, and its thread (join it after the commit)."""
    errors: list[str] = []

    def second() -> None:
        try:
            then()
        except Exception as e:  # what the agent would see
            errors.append(f"{type(e).__name__}: {e}")

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(1.0)  # with the fix, it waits for the first writer's commit
    return errors, thread


def test_two_writers_of_one_session_number_its_messages_one_after_the_other(cloud):
    store = store_of(cloud)
    with Recorder(store) as first, Recorder(store) as second:
        sid = first.start_session(title="A group chat")
        first.add_message(sid, "user", "Who is cooking tonight?")
        with first.transaction():
            first.add_message(sid, "assistant", "Ana is, says the first agent.")
            errors, thread = _beside(first, lambda: second.add_message(sid, "user", "And Bo?"))
        thread.join(10)
    assert errors == []
    r = cloud("resume", "--json", sid)
    assert r.code == 0, r
    messages = json.loads(r.out)["messages"]
    assert [(m["seq"], m["content"]) for m in messages] == [
        (1, "Who is cooking tonight?"),
        (2, "Ana is, says the first agent."),
        (3, "And Bo?"),
    ]


def test_two_writers_of_one_session_number_its_events_without_failing(cloud):
    store = store_of(cloud)
    with Recorder(store) as first, Recorder(store) as second:
        sid = first.start_session(title="A group chat")
        with first.transaction():
            first.add_event(sid, "user", {"text": "from the first agent"})
            errors, thread = _beside(
                first, lambda: second.add_event(sid, "user", {"text": "from the second agent"})
            )
        thread.join(10)
    assert errors == []  # before: the second failed on the first's (sessionId, seq)
    r = cloud("resume", sid, "--no-pager")
    assert r.code == 0, r
    assert r.out.index("from the first agent") < r.out.index("from the second agent")


def test_two_writers_of_one_run_number_its_events_without_failing(cloud):
    store = store_of(cloud)
    with Recorder(store) as first, Recorder(store) as second:
        run = first.start_run(run_id="run_group", prompt="dinner")
        with first.transaction():
            first.add_run_event(run, "WorkflowExecutionStarted")
            errors, thread = _beside(
                first, lambda: second.add_run_event(run, "ActivityTaskScheduled")
            )
        thread.join(10)
    assert errors == []  # before: the second failed on the first's (run_id, event_id)
    r = cloud("runs", "show", run, "--json")
    assert r.code == 0, r
    events = json.loads(r.out)["events"]
    assert [(e["event_id"], e["type"]) for e in events] == [
        (1, "WorkflowExecutionStarted"),
        (2, "ActivityTaskScheduled"),
    ]


def _bench():
    """bench/bench_cloud_clients.py, whose run this test makes short."""
    import sys

    sys.path.insert(0, str(BENCH))
    import bench_cloud_clients

    return bench_cloud_clients


def test_readers_and_writers_at_once_through_the_pooler_lose_nothing(cloud_demo, pgbouncer):
    """4 readers (whole `kaja` processes) and 2 writers (the write API) for 5 s,
    through PgBouncer's pool of one server connection: every command exits 0,
    every row a writer committed is on the server once, and every session,
    the one both writers add to included, is numbered 1..n."""
    from tests.conftest import KAJA

    clients = _bench()
    reads = [
        ("sessions", ["sessions"]),
        ("search", ["search", "tomato", "--all-owners"]),
        ("resume --json", ["resume", "--json"]),
        ("usage", ["usage"]),
        ("notes", ["notes", "--all-owners"]),
        ("doctor --quick", ["doctor", "--quick"]),
    ]
    env = cloud_demo.env | {"KAJA_ACCOUNT": clients.ACCOUNT}
    result = clients.run(pgbouncer.url(cloud_demo.pg.name), cloud_demo.pg.url, reads, kaja=KAJA,
                         env=env, readers=4, writers=2, seconds=5, pool=1,
                         pool_stats=lambda: pgbouncer.stats(cloud_demo.pg.name))  # fmt: skip
    assert result.errors == []
    ran = {s.command for s in result.samples}
    assert {name for name, _ in reads} <= ran, ran
    checks = {c.what: c for c in result.checks}
    assert checks["messages"].found > 2 and checks["run events"].found > 0, checks
    assert all(c.ok for c in result.checks), result.checks
    table = "\n".join(clients.format_rows(result))
    assert "MISSED" not in table and "sessions numbered 1..n" in table, table
    assert result.pooled is not None and result.pooled[0] > len(result.samples), table
