"""The same data, the same answers, for the sessions' care commands (issue 28):
`sessions prune` (plans and results), `rename`, `archive`/`unarchive`,
`sessions stats` and `sessions export --all`, run on `kaja demo --seed 1`
loaded into SQLite (local) and into PostgreSQL (cloud), compared field by
field (`compare` of tests/cloud/test_cloud_same_output.py).

The fields allowed to differ, and why, are `ALLOWED` below (and the README
table "What works, and what differs"). Image folders are local files in
either mode: compared relative to each state dir.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cloud.test_cloud_same_output import compare, run

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]

# field (a path in the JSON document, [] for any list item) → why it may differ
ALLOWED = {
    "prune": {
        "rows.conversation_threads": "the seed's conversation search bookkeeping stays local",
        "deleted_rows.conversation_threads": "the seed's conversation search bookkeeping"
        " stays local",
    },
    "stats": {
        "index_bytes": "the search index is SQLite's FTS4 tables, or the server's GIN index",
        "database_bytes": "the file with its -wal, or kaja's tables on the server",
    },
}

TELEGRAM = "telegram:482913"
TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # the terminal's, with images

PRUNE_PLANS = [
    ["--all-owners", "--before", "2026-11-28"],
    ["--all-owners", "--empty"],
    ["--all-owners", "--title", "[A-M]*"],
    ["--all-owners", "--min-tokens", "500", "--model", "GPT-4O"],
    ["--owner", TELEGRAM, "--max-messages", "12"],
    ["--all-owners", "--before", "2026-11-29", "--include-pending"],
    ["--all-owners", "--before", "2026-11-29"],
    ["--before", "2026-11-28"],  # the terminal's (cloud mode: no account set, the terminal)
    ["--title", "no such title"],
]


@pytest.mark.parametrize("flags", PRUNE_PLANS, ids=" ".join)
def test_prune_plans_are_the_same(cloud_demo, local_demo, flags):
    doc = compare(local_demo, cloud_demo, ["sessions", "prune", "--dry-run", "--json", *flags],
                  ALLOWED["prune"])  # fmt: skip
    assert doc["dry_run"] is True and doc["done"] is False, doc


def test_a_prune_does_the_same_and_leaves_the_same(cloud_demo, local_demo):
    """Its result, then every listing, stats and search after it; a second run
    finds nothing; the image folders of the deleted sessions are gone."""
    argv = ["sessions", "prune", "--all-owners", "--before", "2026-11-29", "--yes", "--json"]
    doc = compare(local_demo, cloud_demo, argv, ALLOWED["prune"])
    assert doc["done"] is True and doc["deleted"] == len(doc["sessions"]) > 0, doc
    assert doc["image_folders_removed"] > 0, doc  # the demo's images went with their sessions
    for kaja in (local_demo, cloud_demo):
        left = {p.name for p in (kaja.state / "files" / "images").iterdir()}
        assert not left & {s["id"] for s in doc["sessions"]}, left
    for after in (["sessions", "--all-owners", "-n", "0", "--json"],
                  ["search", "--all-owners", "--json", "-n", "0", "the"]):  # fmt: skip
        compare(local_demo, cloud_demo, after)
    compare(local_demo, cloud_demo, ["sessions", "stats", "--json"], ALLOWED["stats"])
    again = compare(local_demo, cloud_demo, argv, ALLOWED["prune"])
    assert again["sessions"] == [] and "deleted" not in again, again


def test_a_yes_prune_reports_what_its_dry_run_planned(cloud_demo, local_demo):
    """--yes deletes in one pass, counting what its statements deleted (on the
    server: the batches' own counts): the counts its dry run showed."""
    argv = ["sessions", "prune", "--all-owners", "--before", "2026-11-28", "--json"]
    counts = ("sessions", "rows", "message_bytes", "image_files", "image_bytes", "pending_kept")
    for kaja in (cloud_demo, local_demo):
        dry = json.loads(kaja(*argv, "--dry-run").out)
        r = kaja(*argv, "--yes")
        assert r.code == 0, r
        done = json.loads(r.out)
        assert {k: done[k] for k in counts} == {k: dry[k] for k in counts}, kaja
        assert done["deleted_rows"] == done["rows"] and dry["sessions"], done


def test_prune_errors_and_refusals_are_the_same(cloud_demo, local_demo):
    for argv in (["sessions", "prune", "--all-owners"],  # no filter: exit 2
                 ["sessions", "prune", "--all-owners", "--before", "2026-11-29"],  # no --yes: 5
                 ["sessions", "prune", "--owner", "x", "--all-owners", "--empty"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.err) == (b.code, b.err), argv
        assert a.code in (2, 5), a


def test_rename_is_the_same(cloud_demo, local_demo):
    compare(local_demo, cloud_demo, ["sessions", "rename", TOMATO[:8], "Tomatoes, again", "--json"])
    compare(local_demo, cloud_demo, ["sessions", "--json", "-n", "0"])
    compare(local_demo, cloud_demo, ["resume", TOMATO, "--json"])
    for argv in (
        ["sessions", "rename", TOMATO, "  "],  # empty title: 2
        ["sessions", "rename", "zzz", "X"],  # no such session: 3
        ["sessions", "rename", TOMATO, "X", "--owner", TELEGRAM],
    ):  # not theirs: 3
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.err) == (b.code, b.err), argv
        assert a.code in (2, 3, 5), a


def test_archive_and_unarchive_are_the_same(cloud_demo, local_demo):
    terminal = [s["id"] for s in compare(local_demo, cloud_demo, ["sessions", "--json", "-n", "0"])[
        "sessions"]]  # fmt: skip
    picked = terminal[:2]
    doc = compare(local_demo, cloud_demo, ["sessions", "archive", *picked, "--json"])
    assert [s["id"] for s in doc["archived"]] == picked, doc
    again = compare(local_demo, cloud_demo, ["sessions", "archive", picked[0], "--json"])
    assert again["archived"] == [] and [s["id"] for s in again["unchanged"]] == picked[:1]
    for argv in (["sessions", "--json", "-n", "0"], ["sessions", "--archived", "--json"],
                 ["sessions", "--all-owners", "-n", "0", "--json"],
                 ["search", "--json", "-n", "0", "the"],
                 ["search", "--json", "-n", "0", "--archived", "the"],
                 ["sessions", "stats", "--json"], ["sessions", "stats", "--json", "--archived"],
                 ["sessions", "prune", "--dry-run", "--json", "--all-owners", "--empty"]):  # fmt: skip
        compare(local_demo, cloud_demo, argv, ALLOWED["stats"] | ALLOWED["prune"])
    listed = compare(local_demo, cloud_demo, ["sessions", "--json", "-n", "0"])
    assert not {s["id"] for s in listed["sessions"]} & set(picked)
    doc = compare(local_demo, cloud_demo, ["sessions", "unarchive", *picked, "--json"])
    assert [s["id"] for s in doc["unarchived"]] == picked, doc
    back = compare(local_demo, cloud_demo, ["sessions", "--json", "-n", "0"])
    assert [s["id"] for s in back["sessions"]] == terminal
    for argv in (["sessions", "archive", picked[0], "--owner", TELEGRAM],
                 ["sessions", "archive", "zzz"], ["sessions", "unarchive", picked[0], "nope"]):  # fmt: skip
        a, b = local_demo(*argv), cloud_demo(*argv)
        assert (a.code, a.err) == (b.code, b.err), argv
        assert a.code in (3, 5), a


def test_an_archived_session_deleted_loses_its_mark_on_the_server(cloud_demo):
    cloud_demo("sessions", "archive", TOMATO)
    marks = "SELECT count(*) FROM kaja.kaja_archived"
    assert cloud_demo.pg.query(marks) == [(1,)]
    r = cloud_demo("sessions", "delete", TOMATO, "--yes")
    assert r.code == 0, r
    assert cloud_demo.pg.query(marks) == [(0,)]


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--owner", TELEGRAM],
        ["--model", "gpt-4o"],
        ["--before", "2026-11-28"],
        ["--empty"],
        ["--title", "*a*", "--max-messages", "12"],
        # One owner's messages are read by the filter's condition a second
        # time (its parameters twice): with parameters beside the owner's.
        ["--owner", TELEGRAM, "--title", "*a*", "--since", "2026-11-01", "--min-tokens", "1"],
    ],
    ids=" ".join,
)
def test_sessions_stats_are_the_same(cloud_demo, local_demo, flags):
    doc = compare(local_demo, cloud_demo, ["sessions", "stats", "--json", *flags], ALLOWED["stats"])
    assert "total" in doc
    a, b = run(cloud_demo, "sessions", "stats", "--json", *flags)[1], doc
    assert a["database_bytes"] > 0 and isinstance(a["index_bytes"], int | None)
    assert b["total"]["sessions"] == a["total"]["sessions"]


def _images(text: str) -> str:
    """Image paths under either state dir (the demo wrote its timeline's into its
    template's) as `<images>/…`: images are local files in either mode."""
    return re.sub(r"/[^\s\"'()<>]*?/files/images/", "<images>/", text)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: _images(p.read_text()) for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("fmt", ["json", "jsonl", "md", "html"])
def test_export_all_writes_the_same_files(cloud_demo, local_demo, tmp_path, fmt):
    written = {}
    for name, kaja in (("local", local_demo), ("cloud", cloud_demo)):
        out = tmp_path / f"export-{name}"
        r = kaja("sessions", "export", "--all", "--all-owners", "-f", fmt, "-o", f"{out}/")
        assert r.code == 0, r
        written[name] = _files(out)
        assert r.err.replace(str(out), "<out>") == written.setdefault(
            "err", r.err.replace(str(out), "<out>")
        )  # fmt: skip
    assert written["local"] == written["cloud"]
    sessions = [n for n in written["local"] if n.startswith("01a")]  # html: an index.html too
    assert len(sessions) == 13, sorted(written["local"])


@pytest.mark.parametrize(
    "flags",
    [
        ["-f", "jsonl"],
        ["-f", "json", "--owner", TELEGRAM],
        ["-f", "md", "--before", "2026-11-28"],
        ["-f", "jsonl", "--redact", "--all-owners"],
        ["-f", "json", "--title", "no such"],
    ],
    ids=" ".join,
)
def test_export_all_to_stdout_is_the_same(cloud_demo, local_demo, flags):
    a = local_demo("sessions", "export", "--all", *flags)
    b = cloud_demo("sessions", "export", "--all", *flags)
    assert (a.code, a.err) == (b.code, b.err), flags
    assert _images(a.out) == _images(b.out)
    if "jsonl" in flags:
        docs = [json.loads(line) for line in a.out.splitlines()]
        assert docs and all("session" in d for d in docs)
