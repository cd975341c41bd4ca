"""The sessions' care commands in cloud mode (issue 28), beyond the same-output
test (tests/cloud/test_cloud_same_output_sessions.py): a cloud `sessions prune`
killed at its transaction boundaries (tests/support/agents/kill_at_step.py: at
an exact step, no timing), a session the agent changes between the plan and
the batch, and the archive marks' table added to a schema kaja made before it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kaja_cli.core.conversations import prune as core_prune
from kaja_cli.core.store.server import schema as pg_schema

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

KILL_AT_STEP = str(Path(__file__).parents[1] / "support" / "agents" / "kill_at_step.py")
BULK = 250  # sessions: batches of 100, 100 and 50 (core_prune.BATCH_SESSIONS)
DEMO_SESSIONS = 13
PRUNE = ["sessions", "prune", "--title", "bulk *", "--yes", "--json"]


def _fill(kaja) -> list[str]:
    """BULK of the terminal's sessions on the server (3 messages and a tool call
    each, oldest first), every tenth with an image folder; their ids in order."""
    ids = [f"bulk-{i:04d}" for i in range(1, BULK + 1)]
    with kaja.pg.connect() as conn:
        conn.execute("SET search_path = kaja")
        conn.execute(
            'INSERT INTO sessions (id, "createdAt", "updatedAt", owner, title, model)'
            " SELECT 'bulk-' || lpad(i::text, 4, '0'), '2026-01-01T00:00:00.000Z',"
            " to_char(timestamp '2026-01-01' + i * interval '1 minute',"
            " 'YYYY-MM-DD\"T\"HH24:MI:SS.000\"Z\"'), 'terminal', 'bulk ' || i, 'gpt-4o'"
            " FROM generate_series(1, %s) AS i",
            (BULK,),
        )
        conn.execute(
            'INSERT INTO messages (id, "sessionId", seq, role, content, "createdAt")'
            " SELECT 'bulk-m-' || i || '-' || j, 'bulk-' || lpad(i::text, 4, '0'), j,"
            " 'user', 'hello bulk ' || i, '2026-01-01T00:00:00.000Z'"
            " FROM generate_series(1, %s) AS i, generate_series(1, 3) AS j",
            (BULK,),
        )
        conn.execute(
            "INSERT INTO tool_calls (id, \"messageId\", name) SELECT 'bulk-t-' || i,"
            " 'bulk-m-' || i || '-1', 'web_search' FROM generate_series(1, %s) AS i",
            (BULK,),
        )
    for sid in ids[::10]:
        folder = kaja.state / "files" / "images" / sid
        folder.mkdir(parents=True)
        (folder / "a.png").write_bytes(b"\x89PNG bulk")
    return ids


def _state(kaja) -> dict:
    """What the server and the state dir hold of the bulk sessions."""
    q = kaja.pg.query
    return {
        "sessions": [
            r[0] for r in q("SELECT id FROM kaja.sessions WHERE id LIKE 'bulk-%' ORDER BY id")
        ],
        "demo": q("SELECT count(*) FROM kaja.sessions WHERE id NOT LIKE 'bulk-%'")[0][0],
        # nothing half-done: every session has all its rows, no row outlived its session
        "short": q(
            "SELECT count(*) FROM kaja.sessions AS s WHERE s.id LIKE 'bulk-%' AND"
            ' ((SELECT count(*) FROM kaja.messages AS m WHERE m."sessionId" = s.id) <> 3'
            " OR NOT EXISTS (SELECT 1 FROM kaja.tool_calls AS t WHERE t.id = 'bulk-t-'"
            " || ltrim(substr(s.id, 6), '0')))"
        )[0][0],
        "orphans": q(
            "SELECT count(*) FROM kaja.messages AS m WHERE m.\"sessionId\" LIKE 'bulk-%'"
            ' AND NOT EXISTS (SELECT 1 FROM kaja.sessions AS s WHERE s.id = m."sessionId")'
        )[0][0]
        + q(
            "SELECT count(*) FROM kaja.tool_calls AS t WHERE t.id LIKE 'bulk-t-%' AND NOT EXISTS"
            ' (SELECT 1 FROM kaja.messages AS m WHERE m.id = t."messageId")'
        )[0][0],
        "folders": sorted(
            p.name
            for p in (kaja.state / "files" / "images").iterdir()
            if p.name.startswith("bulk-")
        ),
        "marker": (kaja.state / "kaja.db.pruning").exists(),
    }


def _killed_at(kaja, step: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, KILL_AT_STEP, step, "--", *PRUNE],
        env=kaja.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


# (step, the sessions left after the kill, image folders left of deleted
# sessions, image folders removed): 25 folders, 10 + 10 + 5 by batch
KILLS = [
    ("prune-commit#1", 250, 0, 0),  # inside the first batch's transaction: nothing deleted
    ("prune-images#1", 150, 10, 0),  # the first batch committed, its folders not yet removed
    ("prune-commit#2", 150, 0, 10),  # between batches: the first whole, inside the second
    ("prune-images#2", 50, 10, 10),  # the second committed, its folders left
    ("prune-commit#3", 50, 0, 20),  # inside the last
    ("prune-images#3", 0, 5, 20),  # every row gone, the last folders left
]


@pytest.mark.process
@pytest.mark.parametrize(("step", "left", "leftover", "removed"), KILLS, ids=[k[0] for k in KILLS])
def test_a_cloud_prune_killed_at_a_transaction_boundary_leaves_whole_batches(
    cloud_demo, step, left, leftover, removed
):
    kaja = cloud_demo
    ids = _fill(kaja)
    assert core_prune.BATCH_SESSIONS == 100
    folders = ids[::10]
    killed = _killed_at(kaja, step)
    assert killed.returncode == -signal.SIGKILL, killed
    after = _state(kaja)
    assert after["sessions"] == ids[BULK - left :], step  # whole batches, oldest first
    assert (after["short"], after["orphans"], after["demo"]) == (0, 0, DEMO_SESSIONS)
    assert after["folders"] == folders[removed:]
    assert len(set(after["folders"]) - set(after["sessions"])) == leftover
    assert after["marker"]  # written before each commit: it lists the batch's folders
    # A plan sees what was left behind; the same prune again finishes the work.
    r = kaja("sessions", "prune", "--title", "bulk *", "--dry-run", "--json")
    assert r.code == 0, r
    plan = json.loads(r.out)
    assert len(plan["sessions"]) == left
    assert len(plan["leftover_image_folders"]) == leftover
    r = kaja(*PRUNE)
    assert r.code == 0, r
    done = _state(kaja)
    assert done == {"sessions": [], "demo": DEMO_SESSIONS, "short": 0, "orphans": 0,
                    "folders": [], "marker": False}  # fmt: skip
    doc = json.loads(r.out)
    assert (doc["deleted"], doc["image_folders_removed"]) == (left, len(folders) - removed), doc


def test_a_session_the_agent_changes_after_the_plan_is_left_alone(cloud_demo):
    """The batch locks its sessions' rows and checks the filter again (the
    agent writes beside kaja on the server)."""
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store

    ids = _fill(cloud_demo)
    store = Store.locate(environ=cloud_demo.env)
    plan = core_prune.plan(store, SessionFilter(limit=0, title="bulk *"))
    assert [c.id for c in plan.sessions] == ids
    with cloud_demo.pg.connect() as conn:  # the agent, between the question and the answer
        conn.execute(
            "UPDATE kaja.sessions SET \"updatedAt\" = '2026-11-30T00:00:00.000Z', title = 'kept'"
            " WHERE id = %s",
            (ids[0],),
        )
        conn.execute('UPDATE kaja.sessions SET "pendingCallId" = \'call_x\' WHERE id = %s',
                     (ids[150],))  # fmt: skip
    result = core_prune.execute(store, plan)
    assert (result.deleted, result.skipped, result.batches) == (BULK - 2, 2, 3)
    assert _state(cloud_demo)["sessions"] == [ids[0], ids[150]]


def test_archive_marks_are_added_to_a_schema_made_before_them(cloud_demo):
    """A schema of version 1 (no kaja_archived): read commands see nothing
    archived; the first archive adds the table (a writer brings the schema up
    to date, additively) and the version."""
    with cloud_demo.pg.connect() as conn:
        conn.execute("DROP TABLE kaja.kaja_archived")
        conn.execute("DELETE FROM kaja.kaja_schema WHERE version > 1")
        conn.execute(
            "INSERT INTO kaja.kaja_schema VALUES (1, 'x', 'kaja 0.9', NULL) ON CONFLICT DO NOTHING"
        )
    for argv in (["sessions", "--archived", "--json"], ["search", "--json", "tomato"],
                 ["sessions", "stats", "--json", "--archived"]):  # fmt: skip
        r = cloud_demo(*argv)
        assert r.code == 0, (argv, r)
    assert json.loads(cloud_demo("sessions", "--archived", "--json").out)["sessions"] == []
    first = json.loads(cloud_demo("sessions", "--json").out)["sessions"][0]["id"]
    r = cloud_demo("sessions", "archive", first, "--json")
    assert r.code == 0, r
    assert [s["id"] for s in json.loads(r.out)["archived"]] == [first]
    assert cloud_demo.pg.query("SELECT max(version) FROM kaja.kaja_schema") == [
        (pg_schema.SCHEMA_VERSION,)
    ]
    listed = json.loads(cloud_demo("sessions", "--archived", "--json").out)["sessions"]
    assert [s["id"] for s in listed] == [first]
    hits = json.loads(cloud_demo("search", "--json", "-n", "0", "the").out)["results"]
    assert first not in {h["session_id"] for h in hits}


@pytest.mark.parametrize("stopped_at", ["prune-images#1", "prune-commit#2", "prune-images#2"])
def test_a_server_stopped_between_batches_says_what_was_committed(
    cloud_demo, pg_server, monkeypatch, stopped_at
):
    """Round 4: with the server stopped a second in, prune said "nothing was changed"
    while 105 of 600 sessions were gone (or was an internal error). It says how
    many sessions and batches were committed, that a rerun finishes, exit 1, and
    the rerun does."""
    from kaja_cli.core.store import markers

    kaja = cloud_demo
    ids = _fill(kaja)
    seen: dict[str, int] = {}

    def stop_there(step: str) -> None:
        seen[step] = seen.get(step, 0) + 1
        if f"{step}#{seen[step]}" == stopped_at:
            pg_server.stop()

    monkeypatch.setattr(markers, "checkpoint", stop_there)
    r = kaja(*PRUNE)
    pg_server.start()
    committed = {"prune-images#1": 1, "prune-commit#2": 1, "prune-images#2": 2}[stopped_at]
    gone = 100 * committed
    assert r.code == 1 and "internal error" not in r.err, r
    assert r.err.startswith("kaja: "), r
    said = f"after {gone} of 250 sessions and their {3 * gone} messages were deleted"
    assert f"{said} ({committed} of 3 batches)" in r.err, r
    assert "nothing was changed" not in r.err and "run the same `kaja sessions prune`" in r.err
    assert _state(kaja)["sessions"] == ids[gone:]
    monkeypatch.undo()
    r = kaja(*PRUNE)
    assert r.code == 0, r
    assert _state(kaja)["sessions"] == [] and json.loads(r.out)["deleted"] == BULK - gone
