"""The same data, the same answers: `kaja demo --seed 1 --now …` loaded into
SQLite (local) and into PostgreSQL (cloud), and every conversation command's
`--json` compared field by field (SPEC §10; README "Cloud mode").

The fields allowed to differ, and why, are `ALLOWED` below (and the README):
where the store is, and what only one engine has. The state dirs differ too
(each store keeps its images in its own); paths under them are compared
relative to them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

# field (a path in the JSON document, [] for any list item) → why it may differ
ALLOWED = {
    "usage": {
        "store": "where the ledger is: the file's path, or the server (password as ***) and schema",
    },
    "delete": {
        "rows.conversation_threads": "the seed's conversation search bookkeeping stays local",
    },
    "wipe-owner": {
        "rows.conversation_threads": "the seed's conversation search bookkeeping stays local",
        "kept_rows": "learning and services rows that mention the owner stay local (only the"
        " ledger is on the server)",
    },
}


def run(kaja, *argv: str) -> tuple[int, Any, str]:
    r = kaja(*argv)
    doc = json.loads(r.out) if r.out.strip() else None
    return r.code, _relative(doc, kaja), r.err.replace(str(kaja.state), "<state>")


def _relative(value: Any, kaja) -> Any:
    """Paths under a state dir, relative to it (each store has its own; the
    demo wrote its timeline's image paths into the template's)."""
    if isinstance(value, str):
        return re.sub(r"^/\S*?/files/images/", "<state>/files/images/", value)
    if isinstance(value, list):
        return [_relative(v, kaja) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, kaja) for k, v in value.items()}
    return value


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else key
            if key not in a or key not in b:
                out.append(where)
            else:
                out += differences(a[key], b[key], where)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path]
        return [d for x, y in zip(a, b, strict=True) for d in differences(x, y, path + "[]")]
    return [] if a == b and type(a) is type(b) else [path]


def compare(local, cloud, argv: list[str], allowed: dict[str, str] | None = None) -> Any:
    (lc, ld, le), (cc, cd, ce) = run(local, *argv), run(cloud, *argv)
    assert lc == cc, (argv, le, ce)
    found = differences(ld, cd)
    unexplained = [d for d in found if not any(d == f or d.startswith(f + ".") or
                                               d.startswith(f + "[]") for f in allowed or {})]  # fmt: skip
    assert unexplained == [], (argv, unexplained, ld, cd)
    return ld


def session_ids(kaja) -> list[tuple[str, str | None]]:
    doc = json.loads(kaja("sessions", "--all-owners", "-n", "0", "--json").out)
    return [(s["id"], s["owner"]) for s in doc["sessions"]]


SESSIONS = [
    # The one filter model (core/session_filter.py) in both dialects: GLOB, counts, sums.
    ["sessions", "--json", "--all-owners", "--title", "*a*", "-n", "0"],
    ["sessions", "--json", "--all-owners", "--title", "[A-M]*", "--max-messages", "12"],
    ["sessions", "--json", "--all-owners", "--min-tokens", "500", "--model", "GPT-4O"],
    ["sessions", "--json", "--all-owners", "--before", "2026-11-28", "--empty"],
    ["sessions", "--json"],
    ["sessions", "--all-owners", "-n", "0", "--json"],
    ["sessions", "--owner", "telegram:482913", "--json"],
    ["sessions", "--since", "2026-11-28", "--model", "GPT-5-MINI", "--json"],
    ["sessions", "--persona", "sysadmin", "-n", "1", "--json"],
]
SEARCHES = [
    ["search", "--json", "tomato"],
    ["search", "--json", "--all-owners", "-n", "0", "the"],
    ["search", "--json", "--all-owners", "--recent", "-n", "0", "a"],
    ["search", "--json", "--all-owners", "creme", "brulee"],
    ["search", "--json", "--owner", "telegram:482913", "lista"],
    ["search", "--json", "--all-owners", "--fts", "(tomato OR basil) heat* NOT shade"],
    ["search", "--json", "--role", "tool", "--since", "2026-11-27", "--all-owners", "log"],
    ["search", "--json", "--all-owners", "-n", "0", "--until", "2026-11-29T06:00", "the"],
]
USAGE = [
    ["usage", "--json"],
    ["usage", "--json", "--by", "day", "--since", "2026-11-01", "--until", "2026-12-01"],
    ["usage", "--json", "--by", "source", "--tools", "0"],
    ["usage", "--json", "--by", "engine"],
]


@pytest.mark.parametrize("argv", SESSIONS + SEARCHES, ids=" ".join)
def test_listings_and_searches_are_the_same(cloud_demo, local_demo, argv):
    doc = compare(local_demo, cloud_demo, argv)
    assert doc is not None


@pytest.mark.parametrize("argv", USAGE, ids=" ".join)
def test_usage_is_the_same_but_for_where_the_ledger_is(cloud_demo, local_demo, argv):
    compare(local_demo, cloud_demo, argv, ALLOWED["usage"])


def test_every_session_resumes_and_exports_the_same(cloud_demo, local_demo):
    ids = session_ids(local_demo)
    assert ids == session_ids(cloud_demo) and len(ids) == 13
    for sid, owner in ids:
        who = ["--owner", owner] if owner else []
        compare(local_demo, cloud_demo, ["resume", sid, "--json", *who])
        compare(local_demo, cloud_demo, ["sessions", "export", sid, "-f", "json", *who])
        a = local_demo("sessions", "export", sid, *who)  # the Markdown too
        b = cloud_demo("sessions", "export", sid, *who)
        assert a.out.replace(str(local_demo.state), "") == b.out.replace(str(cloud_demo.state), "")


def test_plain_output_is_the_same_too(cloud_demo, local_demo):
    for argv in (["sessions", "--all-owners", "-n", "0"], ["search", "--all-owners", "the"],
                 ["resume", "01a22161", "--no-pager"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.out) == (b.code, b.out), argv


def test_the_plans_of_a_wipe_and_a_delete_are_the_same(cloud_demo, local_demo):
    for owner in ("terminal", "telegram:482913", "widget:ab12"):
        compare(local_demo, cloud_demo, ["wipe", "--owner", owner, "--dry-run", "--json"],
                ALLOWED["wipe-owner"])  # fmt: skip
    compare(local_demo, cloud_demo, ["sessions", "delete", "01a22161", "01a215b9", "--yes", "--json"],
            ALLOWED["delete"])  # fmt: skip
    compare(local_demo, cloud_demo, ["sessions", "--json", "-n", "0"])  # and after it


def test_errors_are_the_same(cloud_demo, local_demo):
    for argv in (["resume", "01a22612"], ["resume", "zzz"], ["resume", "01a2"],
                 ["search", "--fts", "a AND"], ["sessions", "export", "nope"],
                 ["wipe", "--owner", "telegram:0", "--dry-run"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.err) == (b.code, b.err), argv


@pytest.mark.parametrize("depth", [200, 201, 1500, 100_000])
def test_json_nested_deep_reads_the_same(cloud_demo, local_demo, depth):
    """JSON nested deeper than `values.JSON_DEPTH` (200) is its text in both
    engines: the server's parser goes deeper than SQLite's and Python's (and
    100,000 levels are past its stack), kaja counts instead of parsing."""
    import sqlite3

    nested = "[" * depth + "]" * depth
    tomato = "01a22652-5660-76c3-b813-0c4237730edf"
    conn = sqlite3.connect(local_demo.state / "kaja.db")
    with conn:
        conn.execute("UPDATE messages SET parts = ? WHERE sessionId = ? AND seq = 1",
                     (nested, tomato))  # fmt: skip
        conn.execute("UPDATE tool_calls SET arguments = ? WHERE messageId IN"
                     " (SELECT id FROM messages WHERE sessionId = ?)", (nested, tomato))  # fmt: skip
    conn.close()
    with cloud_demo.pg.connect() as pg:
        pg.execute("SET search_path = kaja")
        pg.execute('UPDATE messages SET parts = %s WHERE "sessionId" = %s AND seq = 1',
                   (nested, tomato))  # fmt: skip
        pg.execute('UPDATE tool_calls SET arguments = %s WHERE "messageId" IN'
                   ' (SELECT id FROM messages WHERE "sessionId" = %s)', (nested, tomato))  # fmt: skip
    doc = compare(local_demo, cloud_demo, ["resume", tomato, "--json"])
    assert doc["messages"][0]["parts"] == (nested if depth > 200 else json.loads(nested))
    compare(local_demo, cloud_demo, ["sessions", "export", tomato, "-f", "json"])
    a, b = local_demo("sessions", "export", tomato), cloud_demo("sessions", "export", tomato)
    assert (a.code, a.out.replace(str(local_demo.state), "")) == (
        b.code, b.out.replace(str(cloud_demo.state), "")
    )  # fmt: skip
    assert a.code == 0, a
