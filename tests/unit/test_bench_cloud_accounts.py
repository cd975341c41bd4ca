"""bench/bench_cloud_accounts.py's own logic (issue 42): the other accounts'
rows are copies with unique ids and their own owners, and the plan check
tells a scan by account (or by ids) from one over everyone's rows."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_cloud_accounts as accounts  # noqa: E402

FIRST = {"sessions_owner_updated": "owner", "messages_session_seq": "sessionId",
         "messages_kaja_search": "kaja_search", "runs_started": "started_at",
         "sessions_pkey": "id"}  # fmt: skip


def plan(*nodes: dict) -> dict:
    return {"Plan": {"Node Type": "Limit", "Plans": list(nodes)}, "first_columns": FIRST}


def test_a_scan_by_the_account_or_a_given_session_is_ok():
    by_owner = {"Node Type": "Index Scan", "Relation Name": "sessions",
                "Index Name": "sessions_owner_updated", "Index Cond": "(owner = 'you')"}  # fmt: skip
    by_session = {"Node Type": "Index Scan", "Relation Name": "messages",
                  "Index Name": "messages_session_seq",
                  "Index Cond": "(\"sessionId\" = 'abc')"}  # fmt: skip
    small = {"Node Type": "Seq Scan", "Relation Name": "notes", "Actual Rows": 8,
             "Rows Removed by Filter": 72}  # fmt: skip
    verdict = accounts.check(plan(by_owner, by_session, small))
    assert verdict.startswith("ok: ")
    assert "sessions_owner_updated (owner)" in verdict
    assert "messages_session_seq (sessionId given)" in verdict


def test_a_scan_of_everyones_rows_is_not_by_account():
    seq = {"Node Type": "Seq Scan", "Relation Name": "messages", "Actual Rows": 91_000,
           "Rows Removed by Filter": 909_000}  # fmt: skip
    newest = {"Node Type": "Index Scan", "Relation Name": "runs", "Index Name": "runs_started"}
    gin = {"Node Type": "Bitmap Heap Scan", "Relation Name": "messages",
           "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "messages_kaja_search",
                      "Index Cond": "(kaja_search @@ 'the')"}]}  # fmt: skip
    verdict = accounts.check(plan(seq, newest, gin))
    assert verdict.startswith("NOT BY ACCOUNT: ")
    assert "Seq Scan on messages (1,000,000 rows)" in verdict
    assert "runs_started on runs (first column started_at" in verdict
    assert "messages_kaja_search on messages (first column kaja_search" in verdict


def test_the_other_accounts_rows_are_copies_with_unique_ids_and_their_own_owners():
    columns = ["id", "createdAt", "owner", "title"]
    rewrite = accounts._rewriter("sessions", columns, ["id"])
    rows = [rewrite(("s1", "2026-01-01", None, "t"), c) for c in range(accounts.COPIES + 1)]
    assert rows[0] == ["s1", "2026-01-01", accounts.ACCOUNT, "t"]
    assert len({r[0] for r in rows}) == len(rows)  # every id unique
    others = {r[2] for r in rows[1:]}
    assert accounts.ACCOUNT not in others and len(others) == accounts.COPIES
    messages = accounts._rewriter("messages", ["id", "sessionId", "seq"], ["id"])
    assert messages(("m1", "s1", 3), 2) == ["a2-m1", "a2-s1", 3]  # its session's copy
    calls = accounts._rewriter("calls", ["id", "run_id"], ["id"])
    assert calls((7, "run_1"), 1) == [1_000_000_007, "a1-run_1"]
    notes = accounts._rewriter("notes", ["owner", "key"], ["owner", "key"])
    assert notes(("", "diet"), 0) == [accounts.ACCOUNT, "diet"]
    assert notes(("telegram:1", "diet"), 0) is None  # the same key, now yours twice: once
