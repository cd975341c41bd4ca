"""One owner's usage ledger (`--owner` on `usage`, `runs`, `runs show`,
`reviews`, `reviews done`; core/store/whose.py): the runs of their sessions,
the runs with no thread below them (subagents') at any depth, and the calls,
tools and reviews of those runs; a run in no session is nobody's. Through the real command on the demo
store, against the same answer worked out here from the rows themselves."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kaja_cli.core.conversations.record import Recorder
from tests.support.sync_support import store_of

OWNERS = ("terminal", "telegram:482913", "telegram:771204", "widget:ab12")


@contextmanager
def _open(db) -> Iterator[sqlite3.Connection]:
    """The test's own look at the file, committed and closed before kaja runs."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _theirs(db, owner: str) -> set[str]:
    """The owner's run ids, from the rows: a run of one of their sessions, and
    every run below one (by parent_id), worked out in Python."""
    with _open(db) as conn:
        sessions = {
            sid for sid, o in conn.execute("SELECT id, owner FROM sessions")
            if (o or "terminal") == owner
        }  # fmt: skip
        runs = conn.execute("SELECT id, parent_id, thread_id FROM runs").fetchall()
    mine = {rid for rid, _, thread in runs if thread in sessions}
    while True:  # a run with no thread of its own is its parent's owner's
        below = {rid for rid, parent, thread in runs if parent in mine and not thread} - mine
        if not below:
            return mine
        mine |= below


def _expected(db, owner: str) -> dict:
    mine = _theirs(db, owner)
    with _open(db) as conn:
        calls = [r for r in conn.execute("SELECT run_id, prompt_tokens, completion_tokens FROM calls")
                 if r[0] in mine]  # fmt: skip
        tools = [r for r in conn.execute("SELECT run_id, tool FROM tools") if r[0] in mine]
        statuses = [s for rid, s in conn.execute("SELECT id, status FROM runs") if rid in mine]
    return {
        "calls": len(calls),
        "tokens": sum((p or 0) + (c or 0) for _, p, c in calls),
        "tools": sum(1 for _ in tools),
        "runs": {s: statuses.count(s) for s in set(statuses)},
    }


def _usage(kaja, *args: str) -> dict:
    r = kaja("usage", "--tools", "0", "--json", *args)
    assert r.code == 0, r
    return json.loads(r.out)


@pytest.mark.parametrize("owner", OWNERS)
def test_usage_of_one_owner_counts_their_runs_and_what_was_done_in_them(demo_store, owner):
    doc = _usage(demo_store, "--owner", owner)
    want = _expected(demo_store.db, owner)
    assert doc["owner"] == owner
    assert doc["total"]["calls"] == want["calls"] and doc["total"]["tokens"] == want["tokens"]
    assert sum(t["calls"] for t in doc["tools"]) == want["tools"]
    assert doc["runs"] == want["runs"]
    assert want["calls"]  # every demo owner has spent something


def test_the_owners_and_nobodys_add_up_to_everyones(demo_store):
    everyone = _usage(demo_store)
    assert everyone["owner"] is None
    parts = [_usage(demo_store, "--owner", o) for o in OWNERS]
    mine = set().union(*(_theirs(demo_store.db, o) for o in OWNERS))
    with _open(demo_store.db) as conn:
        nobodys = conn.execute("SELECT count(*) FROM calls").fetchone()[0] - sum(
            1 for (rid,) in conn.execute("SELECT run_id FROM calls") if rid in mine
        )
    assert nobodys > 0  # the demo has work outside any session: a scheduled run's calls
    assert sum(p["total"]["calls"] for p in parts) + nobodys == everyone["total"]["calls"]
    assert _usage(demo_store, "--all-owners") == everyone  # the local default, said out loud


def test_a_window_and_an_owner_together(demo_store):
    mine = _theirs(demo_store.db, "terminal")
    with _open(demo_store.db) as conn:
        times = sorted(
            at for rid, at in conn.execute("SELECT run_id, at FROM calls") if rid in mine
        )
        starts = [at for rid, at in conn.execute("SELECT id, started_at FROM runs") if rid in mine]
    since = times[len(times) // 2]
    doc = _usage(demo_store, "--owner", "terminal", "--since", since)
    assert doc["total"]["calls"] == sum(1 for at in times if at >= since) < len(times)
    assert sum(doc["runs"].values()) == sum(1 for at in starts if at >= since)
    r = demo_store("usage", "--owner", "telegram:482913", "--since", "2999-01-01")
    assert r.code == 0 and "no model calls recorded in telegram:482913's runs since" in r.err


def test_a_subagents_run_is_its_parents_owners(demo_store):
    # run_91c0 (the researcher) has no thread: it is the terminal's through run_7f3a.
    r = demo_store("runs", "--owner", "terminal", "--subagents", "-n", "0", "--json")
    ids = {run["id"] for run in json.loads(r.out)["runs"]}
    assert "run_91c0" in ids and ids == _theirs(demo_store.db, "terminal")
    r = demo_store("runs", "--owner", "telegram:482913", "--subagents", "-n", "0", "--json")
    assert "run_91c0" not in {run["id"] for run in json.loads(r.out)["runs"]}
    r = demo_store("runs", "show", "run_91c0", "--owner", "terminal", "--json")
    assert r.code == 0 and json.loads(r.out)["id"] == "run_91c0"


@pytest.mark.parametrize("owner", OWNERS)
def test_runs_of_one_owner_list_exactly_theirs_and_count_the_rest(demo_store, owner):
    mine = _theirs(demo_store.db, owner)
    with _open(demo_store.db) as conn:
        top = {rid for rid, parent in conn.execute("SELECT id, parent_id FROM runs")
               if parent is None and rid in mine}  # fmt: skip
    r = demo_store("runs", "--owner", owner, "-n", "2", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert {run["id"] for run in doc["runs"]} <= top
    assert len(doc["runs"]) + doc["left_out"] == len(top)
    whole = json.loads(demo_store("runs", "--owner", owner, "-n", "0", "--json").out)
    assert {run["id"] for run in whole["runs"]} == top


def test_another_owners_run_is_not_found_and_no_id_of_theirs_is_named(demo_store):
    theirs = sorted(_theirs(demo_store.db, "telegram:482913"))[0]
    r = demo_store("runs", "show", theirs, "--owner", "terminal")
    assert r.code == 3 and r.out == ""
    assert r.err.strip() == (
        f"kaja: no run {theirs!r}: not among terminal's runs; --all-owners looks at everyone's"
    )
    # A prefix every run shares: ambiguous among the owner's alone.
    r = demo_store("runs", "show", "run_", "--owner", "widget:ab12")
    assert r.code == 2 and "ambiguous" in r.err
    named = r.err.split("ambiguous: ")[1].split(":")[0].replace(" …", "").split(", ")
    assert set(named) <= _theirs(demo_store.db, "widget:ab12")
    assert demo_store("runs", "show", theirs, "--all-owners").code == 0


def test_reviews_of_one_owner(demo_store):
    with _open(demo_store.db) as conn:
        reviewed = {rid for (rid,) in conn.execute("SELECT run_id FROM reviews")}
    for owner in OWNERS:
        r = demo_store("reviews", "--owner", owner, "--json")
        assert r.code == 0, r
        got = {v["run_id"] for v in json.loads(r.out)["reviews"]}
        assert got == reviewed & _theirs(demo_store.db, owner)
    terminal = reviewed & _theirs(demo_store.db, "terminal")
    assert terminal  # the demo's thumbs-down review is on a terminal's run
    run = sorted(terminal)[0]
    r = demo_store("reviews", "done", run, "--owner", "telegram:482913")
    assert r.code == 3 and "not among telegram:482913's runs" in r.err
    with _open(demo_store.db) as conn:
        assert conn.execute("SELECT status FROM reviews WHERE run_id = ?", (run,)).fetchone()[
            0
        ] == "needs-review"  # fmt: skip
    assert demo_store("reviews", "done", run, "--owner", "terminal").code == 0


def test_a_parent_cycle_ends_and_a_ledger_without_threads_is_nobodys(kaja):
    """A confused writer's runs that are each other's parents: the walk ends.
    A ledger whose runs have no thread_id ties no run to anyone."""
    with Recorder(store_of(kaja)) as rec:
        sid = rec.start_session(title="mine")
        a = rec.start_run(thread_id=sid, run_id="run_a")
        b = rec.start_run(parent_id="run_c", run_id="run_b")
        c = rec.start_run(parent_id="run_b", run_id="run_c")
        for run in (a, b, c):
            rec.add_call(run, model="m", prompt_tokens=1, completion_tokens=1)
    doc = _usage(kaja, "--owner", "terminal")
    assert doc["total"]["calls"] == 1 and doc["runs"] == {"running": 1}
    with _open(kaja.db) as conn:
        conn.execute("UPDATE runs SET parent_id = 'run_a' WHERE id = 'run_b'")
    assert _usage(kaja, "--owner", "terminal")["total"]["calls"] == 3  # a, and b and c below it
    r = kaja("runs", "show", "run_c", "--owner", "terminal", "--json")
    assert r.code == 0, r
    with _open(kaja.db) as conn:
        conn.execute("DROP INDEX runs_thread")
        conn.execute("ALTER TABLE runs DROP COLUMN thread_id")
    assert _usage(kaja, "--owner", "terminal")["total"]["calls"] == 0
    assert _usage(kaja)["total"]["calls"] == 3


def test_owner_goes_neither_with_all_owners_nor_with_the_shared_ledger(demo_store):
    for args in (("usage", "--owner", "terminal", "--all-owners"),
                 ("runs", "--owner", "terminal", "--all-owners")):  # fmt: skip
        r = demo_store(*args)
        assert r.code == 2 and r.err.strip() == "kaja: --owner and --all-owners can't be combined"
    for args in (("usage", "--owner", "terminal", "--all-machines"),
                 ("runs", "--owner", "terminal", "--all-machines")):  # fmt: skip
        r = demo_store(*args)
        assert r.code == 2, r
        assert "--owner goes without --all-machines" in r.err and "Traceback" not in r.err
    r = demo_store("usage", "--owner", "")
    assert r.code == 2 and "Traceback" not in r.err


def test_a_run_is_one_owners_at_most_its_thread_deciding(kaja):
    """A run in A's session below B's run is A's (its thread decides), not both
    owners': the owners' figures add up to everyone's. A run with no thread
    below it is A's too."""
    with Recorder(store_of(kaja)) as rec:
        sa = rec.start_session(title="a", owner="telegram:1", session_id="s_a")
        sb = rec.start_session(title="b", owner="telegram:2", session_id="s_b")
        rec.start_run(run_id="run_b1", thread_id=sb)
        rec.start_run(run_id="run_x", thread_id=sa, parent_id="run_b1")
        rec.start_run(run_id="run_y", parent_id="run_x")
        for run in ("run_b1", "run_x", "run_y"):
            rec.add_call(run, model="m", prompt_tokens=1, completion_tokens=1)
    a, b = (_usage(kaja, "--owner", o)["total"]["calls"] for o in ("telegram:1", "telegram:2"))
    assert (a, b) == (2, 1) and a + b == _usage(kaja)["total"]["calls"]
    for run, owner, other in (("run_x", "telegram:1", "telegram:2"),
                              ("run_y", "telegram:1", "telegram:2"),
                              ("run_b1", "telegram:2", "telegram:1")):  # fmt: skip
        assert kaja("runs", "show", run, "--owner", owner).code == 0
        assert kaja("runs", "show", run, "--owner", other).code == 3
    r = kaja("runs", "--owner", "telegram:1", "--subagents", "-n", "0", "--json")
    assert {x["id"] for x in json.loads(r.out)["runs"]} == {"run_x", "run_y"}


def test_an_owner_before_reset_is_refused_not_dropped(demo_store):
    """`kaja usage --owner X reset --yes` would read as a reset of X's ledger;
    reset clears everyone's, so the owner typed before it is an error and
    nothing is deleted."""
    before = _usage(demo_store)["total"]["calls"]
    r = demo_store("usage", "--owner", "telegram:482913", "reset", "--yes")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("kaja: --owner belongs to the listing, not to `reset`")
    assert "`kaja usage reset` takes no such option" in r.err
    assert _usage(demo_store)["total"]["calls"] == before > 0


def _random_ledger(db, rng) -> None:
    """Runs in random trees over four owners' sessions: threads of a session,
    of none (NULL, ''), of a session that is gone; parents at any depth, a
    missing one, a cycle; start times that tie."""
    sessions = [(f"s{i}", rng.choice([None, "telegram:1", "telegram:2", "widget:x"]))
                for i in range(6)] + [("", "telegram:1")]  # fmt: skip
    threads = [s for s, _ in sessions] + [None, None, None, "", "s_gone"]
    with _open(db) as conn:
        conn.execute("DELETE FROM runs")
        conn.execute("DELETE FROM calls")
        for sid, owner in sessions:
            conn.execute("INSERT OR REPLACE INTO sessions (id, owner, createdAt) VALUES (?, ?, ?)",
                         (sid, owner, "2026-01-01T00:00:00.000Z"))  # fmt: skip
        ids = [f"run_{i:02}" for i in range(rng.randrange(1, 40))]
        for i, rid in enumerate(ids):
            parent = rng.choice([None, None, "run_missing", *ids[:i]]) if i else None
            if i > 2 and rng.random() < 0.05:
                parent = ids[i + 1] if i + 1 < len(ids) else ids[0]  # a cycle, or a late parent
            conn.execute(
                "INSERT INTO runs (id, parent_id, thread_id, started_at, status) VALUES (?, ?, ?, ?, ?)",
                (rid, parent, rng.choice(threads), f"2026-01-0{rng.randrange(1, 4)}T00:00:00Z",
                 rng.choice(["completed", "failed"])),
            )  # fmt: skip
            for _ in range(rng.randrange(3)):
                conn.execute(
                    "INSERT INTO calls (run_id, at, model, prompt_tokens, completion_tokens)"
                    " VALUES (?, '2026-01-01T00:00:00Z', 'm', ?, ?)",
                    (rid, rng.randrange(100), rng.randrange(100)),
                )


def test_an_owners_runs_with_subagents_are_their_tree_on_random_ledgers(demo_store):
    """`runs --owner --subagents` reads the runs with a thread of the owner's
    and the thread-less ones below them apart (`whose.split`), never the
    whole tree: the page and "N more" are the owner's runs worked out from
    the rows, newest first, on random ledgers, whatever the page's size;
    `usage --owner` (`whose.with_mine`, read the same way) counts their calls
    and runs."""
    import random

    rng = random.Random(42)
    for _ in range(12):
        _random_ledger(demo_store.db, rng)
        with _open(demo_store.db) as conn:
            started = dict(conn.execute("SELECT id, started_at FROM runs"))
        for owner in ("terminal", "telegram:1", "telegram:2", "widget:x"):
            mine = sorted(
                _theirs(demo_store.db, owner), key=lambda r: (started[r], r), reverse=True
            )
            for n in (0, 1, 3):
                r = demo_store("runs", "--owner", owner, "--subagents", "-n", str(n), "--json")
                assert r.code == 0, r
                doc = json.loads(r.out)
                shown = [run["id"] for run in doc["runs"]]
                assert shown == (mine[:n] if n else mine), (owner, n)
                assert len(shown) + doc.get("left_out", 0) == len(mine), (owner, n)
            r = demo_store("runs", "--owner", owner, "--subagents", "-n", "2", "--since",
                           "2026-01-02", "--json")  # fmt: skip
            since = [x for x in mine if started[x] >= "2026-01-02"]
            doc = json.loads(r.out)
            assert [run["id"] for run in doc["runs"]] == since[:2], owner
            assert len(doc["runs"]) + doc.get("left_out", 0) == len(since), owner
            doc, want = _usage(demo_store, "--owner", owner), _expected(demo_store.db, owner)
            assert (doc["total"]["calls"], doc["total"]["tokens"]) == (
                want["calls"],
                want["tokens"],
            )
            assert doc["runs"] == want["runs"], owner
