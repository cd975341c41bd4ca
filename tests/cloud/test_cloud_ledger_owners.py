"""The usage ledger of one account in cloud mode (issue 42; core/store/whose.py).

A hosted server's ledger holds every account's runs, and has no account
column: with `[memory] account` set, `usage`, `runs`, `runs show`,
`reviews`, `reviews done` and `sessions stats` read the account's (the runs of
its sessions, their subagents', and what was done in them) unless
`--all-owners`, and answer what a local store answers with `--owner` for that
owner. Without an account the server is one user's, and everyone's stays the
default, as locally."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from kaja_cli.core.conversations.record import Recorder
from tests.cloud.test_cloud_same_output import compare, differences, run
from tests.conftest import Kaja
from tests.support.cloud_support import use_server
from tests.support.sync_support import store_of

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

ANA = "telegram:482913"
STORE = {"store": "where the ledger is"}
READS = [
    ["usage", "--json", "--tools", "0"],
    ["usage", "--json", "--by", "day", "--since", "2026-11-01"],
    ["runs", "--json", "-n", "0"],
    ["runs", "--json", "--subagents", "-n", "2"],
    ["reviews", "--json"],
    ["sessions", "stats", "--json"],
]


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_the_account_reads_its_own_ledger(cloud_demo, local_demo, argv):
    use_server(cloud_demo, cloud_demo.pg.url, account=ANA)
    allowed = {**STORE, "database_bytes": "the file's size, or the server's",
               "index_bytes": "FTS4's tables, or the server's GIN index"}  # fmt: skip
    (lc, ld, _), (cc, cd, ce) = run(local_demo, *argv, "--owner", ANA), run(cloud_demo, *argv)
    assert lc == cc == 0, (argv, ce)
    assert [d for d in differences(ld, cd) if d not in allowed] == [], (argv, ld, cd)
    # --all-owners: everyone's, what the local store shows by default.
    everyone = [*argv, "--all-owners"]
    compare(local_demo, cloud_demo, everyone, allowed)


def test_the_account_sees_nothing_of_another_accounts_runs(cloud_demo):
    use_server(cloud_demo, cloud_demo.pg.url, account=ANA)
    everyone = json.loads(cloud_demo("runs", "--json", "-n", "0", "--all-owners").out)["runs"]
    mine = json.loads(cloud_demo("runs", "--json", "-n", "0").out)["runs"]
    assert 0 < len(mine) < len(everyone)
    threads = {row[0] for row in cloud_demo.pg.query(
        f"SELECT id FROM kaja.sessions WHERE owner = '{ANA}'")}  # fmt: skip
    assert {r["thread_id"] for r in mine} <= threads
    theirs = next(r["id"] for r in everyone if r["thread_id"] not in threads)
    r = cloud_demo("runs", "show", theirs)
    assert r.code == 3 and r.out == "", r
    assert f"not among {ANA}'s runs; --all-owners looks at everyone's" in r.err
    assert cloud_demo("runs", "show", theirs, "--all-owners").code == 0
    usage = json.loads(cloud_demo("usage", "--json").out)
    assert usage["owner"] == ANA
    assert usage["total"]["calls"] < json.loads(
        cloud_demo("usage", "--json", "--all-owners").out
    )["total"]["calls"]  # fmt: skip


def test_without_an_account_the_servers_ledger_is_everyones(cloud_demo, local_demo):
    for argv in (["usage", "--json"], ["runs", "--json", "-n", "0"], ["reviews", "--json"]):
        doc = compare(local_demo, cloud_demo, argv, STORE)
        assert doc.get("owner") is None


# --- crafted edges, the same locally and on the server (a second reader's cases) -------------
A, B = "telegram:1", "telegram:2"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _edges(k) -> None:
    """Runs of every kind an agent (or a confused writer) leaves: a parent
    that is not there, a run in A's session below B's, a subagent with no
    thread, a parent cycle, no session, a deleted session."""
    with Recorder(store_of(k)) as rec:
        st = rec.start_session(title="t", session_id="s_t")
        sa = rec.start_session(title="a", owner=A, session_id="s_a")
        sb = rec.start_session(title="b", owner=B, session_id="s_b")

        def run(
            rid: str, *, thread: str | None = None, parent: str | None = None, day: int
        ) -> None:
            rec.start_run(
                run_id=rid, thread_id=thread, parent_id=parent, at=T0 + timedelta(days=day)
            )
            rec.add_call(rid, model="m", prompt_tokens=1, completion_tokens=0,
                         at=T0 + timedelta(days=day))  # fmt: skip

        run("run_a1", thread=sa, day=1)
        run("run_a2", thread=sa, day=2)
        run("run_a3", thread=sa, parent="run_ghost", day=3)
        run("run_b1", thread=sb, day=4)
        run("run_x", thread=sa, parent="run_b1", day=5)
        run("run_b2", parent="run_b1", day=6)
        run("run_c1", parent="run_c2", day=7)
        run("run_c2", parent="run_c1", day=8)
        run("run_n1", day=9)
        run("run_d1", thread="s_deleted", day=10)
        run("run_t1", thread=st, day=11)
        rec.insert("reviews", run_id="run_a3", status="needs-review", reason="manual")
        rec.insert("reviews", run_id="run_b2", status="needs-review", reason="manual")


def _seen(k, owner: str) -> dict:
    out = {}
    for name, argv in {
        "top": ("runs", "-n", "0"), "top1": ("runs", "-n", "1"),
        "sub": ("runs", "--subagents", "-n", "0"), "sub1": ("runs", "--subagents", "-n", "1"),
        "usage": ("usage", "--tools", "0"),
        "usage_window": ("usage", "--since", "2026-11-03", "--until", "2026-11-06"),
        "reviews": ("reviews",),
    }.items():  # fmt: skip
        r = k(*argv, "--owner", owner, "--json")
        assert r.code == 0, (argv, r)
        doc = json.loads(r.out)
        if name.startswith("usage"):
            out[name] = (doc["total"]["calls"], doc["runs"])
        elif name == "reviews":
            out[name] = sorted(v["run_id"] for v in doc["reviews"])
        else:
            out[name] = (sorted(x["id"] for x in doc["runs"]), doc["left_out"])
    return out


def test_crafted_edges_are_the_same_locally_and_on_the_server(tmp_path, cloud):
    local = Kaja(tmp_path / "local")
    _edges(local)
    _edges(cloud)
    seen = {o: _seen(local, o) for o in (A, B, "terminal")}
    for owner in (A, B, "terminal"):
        assert _seen(cloud, owner) == seen[owner], owner
    assert seen[A]["top"] == (["run_a1", "run_a2"], 0)  # run_a3 and run_x sit below a run
    assert seen[A]["sub"] == (["run_a1", "run_a2", "run_a3", "run_x"], 0)  # x: its thread decides
    assert seen[A]["sub1"][1] == 3 and seen[A]["usage"] == (4, {"running": 4})
    assert seen[A]["usage_window"] == (2, {"running": 2})  # run_a3 and run_x
    assert seen[B]["sub"] == (["run_b1", "run_b2"], 0) and seen[B]["reviews"] == ["run_b2"]
    assert seen["terminal"]["sub"] == (["run_t1"], 0) and seen[A]["reviews"] == ["run_a3"]
    for k in (local, cloud):
        for owner, rid, code in ((A, "run_x", 0), (B, "run_x", 3), (A, "run_b2", 3), (B, "run_b2", 0),
                                 (A, "run_a3", 0), (A, "run_c1", 3), ("terminal", "run_n1", 3),
                                 ("terminal", "run_d1", 3)):  # fmt: skip
            assert k("runs", "show", rid, "--owner", owner).code == code, (owner, rid)
    for k in (local, cloud):  # B's tree of run_b1 holds B's runs, not A's run_x below it
        tree = json.loads(k("runs", "show", "run_b1", "--owner", B, "--json").out)
        assert [s["id"] for s in tree["subagents"]] == ["run_b2"]
        whole = json.loads(k("runs", "show", "run_b1", "--all-owners", "--json").out)
        assert sorted(s["id"] for s in whole["subagents"]) == ["run_b2", "run_x"]
        listed = json.loads(k("runs", "--owner", B, "--json").out)["runs"]
        assert [(r["id"], r["subagents"], r["total_model_calls"]) for r in listed] == [
            ("run_b1", 1, 2)
        ]
