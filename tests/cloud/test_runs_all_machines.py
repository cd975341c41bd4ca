"""`kaja runs --all-machines` and `kaja runs show --all-machines` against a real PostgreSQL.

Two machines, each with its own Kaja store, sync to one shared ledger; each
then reads the other's runs from the server. The listing and the tree are the
ones the machine that made the runs prints locally, plus `machine`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from kaja_cli.core.conversations.record import Recorder
from tests.support.sync_support import machine, store_of

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

T0 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def two(tmp_path, pg):
    """a made run_a1; b made the seed's run_7f3a with its subagent run_91c0. a syncs
    first, then b: b holds a's run, a has not pulled b's."""
    a, b = machine(tmp_path / "a", pg.url), machine(tmp_path / "b", pg.url)
    with Recorder(store_of(a)) as rec:
        run = rec.start_run(run_id="run_a1", prompt="hello", host="a", at=_at(0))
        rec.add_call(run, model="gpt-5", prompt_tokens=100, completion_tokens=7, ok=1, at=_at(1))
        rec.end_run(run, "completed", result="hi", at=_at(2))
    with Recorder(store_of(b)) as rec:
        top = rec.start_run(run_id="run_7f3a", prompt="plan the trip", host="b", at=_at(10))
        rec.add_call(top, model="claude", prompt_tokens=1200, completion_tokens=300,
                     ttft_ms=420, ok=1, at=_at(10.1))  # fmt: skip
        sub = rec.start_run(run_id="run_91c0", parent_id=top, agent="researcher",
                            source="subagent", prompt="find flights", host="b", at=_at(10.2))  # fmt: skip
        rec.add_call(sub, model="gpt-5", prompt_tokens=800, completion_tokens=50, ok=0,
                     error="rate limited", at=_at(10.3))  # fmt: skip
        rec.add_call(sub, model="gpt-5", prompt_tokens=900, completion_tokens=60, ok=1,
                     at=_at(10.4))  # fmt: skip
        rec.add_tool(sub, "web_search", "ok", duration_ms=850, arguments='{"q": "flights"}',
                     result_chars=5120, at=_at(10.5))  # fmt: skip
        rec.add_tool(top, "shell", "error", duration_ms=40, error="exit 1", at=_at(10.6))
        rec.add_run_event(sub, "Started", {"step": 1}, at=_at(10.2))
        rec.add_run_event(sub, "Finished", {"step": 2}, at=_at(10.7))
        rec.end_run(sub, "completed", result="3 flights", at=_at(10.7))
        rec.end_run(top, "failed", error="budget exceeded", at=_at(11))
        rec.insert("feedback", run_id=top, at=_at(12).isoformat(), agent="kaja",
                   source="telegram", type="thumbs", value_num=-1, comment="wrong")  # fmt: skip
        rec.insert("reviews", run_id=top, status="needs-review", reason="feedback",
                   flagged_at=_at(12).isoformat(), updated_at=_at(12).isoformat())  # fmt: skip
    for k in (a, b):
        r = k("sync")
        assert r.code == 0, r
    return a, b


def _without_machine(tree: dict) -> dict:
    out = {k: v for k, v in tree.items() if k != "machine"}
    out["subagents"] = [_without_machine(s) for s in tree["subagents"]]
    return out


def test_the_listing_holds_every_machines_runs_with_their_machines(two):
    a, b = two
    assert [r["id"] for r in json.loads(a("runs", "--json").out)["runs"]] == ["run_a1"]
    r = a("runs", "--all-machines", "--json")
    assert r.code == 0, r
    data = json.loads(r.out)
    assert [(x["id"], x["machine"]) for x in data["runs"]] == [("run_7f3a", "b"), ("run_a1", "a")]
    # The same rows and figures b prints locally (b holds both runs), plus `machine`.
    local = json.loads(b("runs", "--json").out)
    assert [{k: v for k, v in x.items() if k != "machine"} for x in data["runs"]] == local["runs"]
    top = data["runs"][0]
    assert (top["model_calls"], top["tokens"], top["tool_calls"]) == (1, 1500, 1)
    assert (top["subagents"], top["total_model_calls"], top["total_tokens"],
            top["total_tool_calls"]) == (1, 3, 3310, 2)  # fmt: skip
    # Filters and -n as locally; --all brings the subagent.
    r = a("runs", "--all-machines", "--all", "--status", "completed", "--json")
    assert [x["id"] for x in json.loads(r.out)["runs"]] == ["run_91c0", "run_a1"]
    r = a("runs", "--all-machines", "-n", "1", "--json")
    assert json.loads(r.out) == {"runs": [data["runs"][0]], "left_out": 1}
    # Piped: the machine after the id.
    r = a("runs", "--all-machines")
    assert r.code == 0, r
    assert [line.split("\t")[:2] for line in r.out.splitlines()] == [
        ["run_7f3a", "b"],
        ["run_a1", "a"],
    ]


def test_show_reads_the_other_machines_run_and_its_subagent(two):
    a, b = two
    assert a("runs", "show", "run_7f3a").code == 3  # a has not pulled it
    r = a("runs", "show", "run_7f3a", "--all-machines", "--json")
    assert r.code == 0, r
    tree = json.loads(r.out)
    assert tree["machine"] == "b" and tree["subagents"][0]["machine"] == "b"
    local = json.loads(b("runs", "show", "run_7f3a", "--json").out)
    assert _without_machine(tree) == local
    sub = tree["subagents"][0]
    assert [c["error"] for c in sub["calls"]] == ["rate limited", None]
    assert [e["type"] for e in sub["events"]] == ["Started", "Finished"]
    assert tree["review"]["status"] == "needs-review" and tree["feedback"][0]["comment"] == "wrong"
    # The subagent by a prefix, as a tree.
    r = a("runs", "show", "run_91", "--all-machines")
    assert r.code == 0, r
    assert "run_91c0" in r.out and "on b" in r.out and "web_search" in r.out
    r = a("runs", "show", "run_91", "--all-machines", "--json")
    assert _without_machine(json.loads(r.out)) == json.loads(
        b("runs", "show", "run_91c0", "--json").out
    )


def test_an_unknown_run_an_ambiguous_prefix_and_bad_urls_are_one_line(two, tmp_path):
    a, _ = two
    r = a("runs", "show", "run_nope", "--all-machines")
    assert (r.code, r.out) == (3, "") and r.err.startswith("kaja: no run 'run_nope'"), r
    r = a("runs", "show", "run_", "--all-machines")
    assert r.code == 2 and "ambiguous" in r.err and r.err.count("\n") <= 2, r
    down = "postgresql://u:s3cretpw@127.0.0.1:1/db"
    for argv in (("runs", "--all-machines", "--ledger-url", down),
                 ("runs", "show", "run_7f3a", "--all-machines", "--ledger-url", down)):  # fmt: skip
        r = a(*argv)
        assert r.code == 1 and r.err.count("\n") == 1 and "s3cretpw" not in r.err + r.out, r
        assert "cannot reach PostgreSQL at postgresql://u:***@127.0.0.1:1/db" in r.err
    r = a("runs", "--ledger-url", down)
    assert (
        r.code == 2 and "--ledger-url goes with --all-machines" in r.err and "s3cretpw" not in r.err
    )
    lone = machine(tmp_path / "lone", "postgresql://127.0.0.1:1/db")
    lone.config.write_text("")
    r = lone("runs", "--all-machines")
    assert r.code == 1 and r.err.startswith("kaja: ledger sync is not configured"), r
