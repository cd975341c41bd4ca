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

import pytest

from tests.cloud.test_cloud_same_output import compare, differences, run
from tests.support.cloud_support import use_server

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
