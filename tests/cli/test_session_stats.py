"""`kaja sessions stats` (core/stats.py), through the real command: the
figures against plain SQL over the same demo store, the filters, piped rows."""

from __future__ import annotations

import json
import sqlite3

from tests.support.sessions_support import ANA, BACKUP, PRS, TOMATO


def sql(kaja, query: str, *args):
    conn = sqlite3.connect(kaja.db)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


TEXT = (
    "coalesce(length(CAST(content AS BLOB)), 0) + coalesce(length(CAST(parts AS BLOB)), 0)"
    " + coalesce(length(CAST(reasoning AS BLOB)), 0)"
)


def test_totals_and_groups_are_what_sql_counts(demo_store):
    r = demo_store("sessions", "stats", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    ((n, pt, ct, text),) = sql(
        demo_store,
        f"SELECT count(*), sum(promptTokens), sum(completionTokens), sum({TEXT}) FROM messages",
    )
    assert doc["total"] == {"sessions": 13, "messages": n, "prompt_tokens": pt,
                            "completion_tokens": ct, "tokens": pt + ct, "bytes": text}  # fmt: skip
    assert doc["all_owners"] is True and doc["owner"] is None
    by_owner = {g["owner"]: g["sessions"] for g in doc["by_owner"]}
    assert by_owner == {None: 7, ANA: 3, "telegram:771204": 2, "widget:ab12": 1}
    assert sum(g["messages"] for g in doc["by_model"]) == n
    assert [g["month"] for g in doc["by_month"]] == ["2026-11"]
    biggest = doc["largest"][0]
    ((sid, size),) = sql(
        demo_store,
        f"SELECT sessionId, sum({TEXT}) AS b FROM messages GROUP BY sessionId ORDER BY b DESC LIMIT 1",
    )
    assert (biggest["id"], biggest["bytes"]) == (sid, size)
    assert len(doc["largest"]) == 10
    # the demo's three images: Tomato's, the PR screenshot and Ana's receipt
    assert doc["images"]["files"] == 3 and doc["images"]["bytes"] > 0
    assert doc["index_bytes"] > 0 and doc["database_bytes"] >= demo_store.db.stat().st_size


def test_filters_narrow_and_archived_sessions_are_left_out(demo_store):
    doc = json.loads(demo_store("sessions", "stats", "--owner", "terminal", "--json").out)
    assert doc["total"]["sessions"] == 7 and [g["owner"] for g in doc["by_owner"]] == [None]
    assert doc["images"]["files"] == 2
    assert demo_store("sessions", "archive", BACKUP, TOMATO).code == 0
    doc = json.loads(demo_store("sessions", "stats", "--owner", "terminal", "--json").out)
    assert doc["total"]["sessions"] == 5 and doc["images"]["files"] == 1
    doc = json.loads(demo_store("sessions", "stats", "--archived", "--json").out)
    assert doc["total"]["sessions"] == 2 and doc["filters"] == ["--archived"]
    doc = json.loads(demo_store("sessions", "stats", "--title", "Open PRs*", "--json").out)
    assert [x["id"] for x in doc["largest"]] == [PRS]


def test_piped_rows_name_their_section_first(demo_store):
    r = demo_store("sessions", "stats")
    assert r.code == 0 and r.err == ""
    sections = [line.split("\t")[0] for line in r.out.splitlines()]
    assert sections[0] == "total"
    assert set(sections) == {"total", "owner", "model", "persona", "month", "largest"}
    owners = [line.split("\t")[1] for line in r.out.splitlines() if line.startswith("owner\t")]
    assert owners[0] == "terminal"


def test_no_store_has_nothing_to_count(kaja):
    r = kaja("sessions", "stats", "--json")
    assert r.code == 0
    assert json.loads(r.out)["total"]["sessions"] == 0
    assert "no Kaja store" in r.err and not kaja.db.exists()


def test_one_image_file_is_one_file_on_a_terminal(kaja):
    from tests.conftest import KAJA
    from tests.support.sessions_support import run_in_pty

    assert kaja("demo", "--sessions", "1", "--messages", "1", "--seed", "1").code == 0
    code, screen = run_in_pty([KAJA, "sessions", "stats"], kaja.env)
    assert code == 0, screen
    images = next(line for line in screen.splitlines() if line.strip().startswith("images"))
    assert images.rstrip().endswith("(1 file)"), images
