"""One vocabulary across every command (issue 39): an option name means one
thing wherever it appears, the time bounds are `--since`/`--until` with one
text and one set of forms, and the old names still work, hidden.

The walk below reads the options of every command of the real app. A name
used by two commands or more must be declared in MEANINGS, and each use's
help must say that meaning: a new command that reuses a name for something
else, or a new shared name nobody declared, fails here."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections import defaultdict

import pytest
import typer

from kaja_cli.app import build
from kaja_cli.commands.options import SINCE_HELP, UNTIL_HELP
from tests.conftest import KAJA, Kaja

# Each shared option name, and what its help must say wherever it is used
# (a regular expression matched at the start of the help text).
MEANINGS = {
    "--since": re.escape(SINCE_HELP) + "$",
    "--until": re.escape(UNTIL_HELP) + "$",
    "--all": r"Every session the filters select",  # sessions export; nowhere else
    "--all-owners": r"Everyone's",
    "--all-machines": r"(Read|Report) the shared ledger on PostgreSQL",
    "--ledger-url": r"The shared ledger's PostgreSQL URL",
    "--archived": r"(Archived sessions only|Search archived sessions too)",
    "--json": r"Print .*(one )?JSON document",
    "--limit": r"(Show at most this many; 0 shows all|Rows in the list .*0: all)",
    "--owner": r"(Act as this owner|Erase only what this owner stored)",
    "--dry-run": r"Show what would be done; change nothing\.$",
    "--yes": r"Do not ask",
    "--no-pager": r"Never page",
    "--force": r"(Replace|Accept|Write|Remove)",  # do it despite the refusal, said per command
    "--format": r"Markdown",
    "--output": r"(The archive to write|Write here instead of stdout)",
    "--redact": r"Replace ",
    "--fts": r"(QUERY is|The search box takes) SQLite FTS4",
    "--status": r"Only \w+ with this status",
    "--kind": r"Only (triggers of )?this kind",
    "--source": r"Only \w+ from this source",
    "--vacuum": r"(Also rewrite each file without its free pages|Then give the freed space)",
    "--model": r"Only sessions with this model",
    "--persona": r"Only sessions with this persona",
    "--title": r"Titles matching",
    "--max-messages": r"At most N messages",
    "--min-tokens": r"At least N tokens",
    "--empty": r"Sessions without messages",
    "--database": r"Only queries on this database",
    "--help": r"Show this message and exit",
    "--wait": r"How long to wait",
    "--by": r"Group the calls by",
    "--tag": r"Only notes with this tag",
    "--importance": r"Only notes of this importance",
}


def _walk():
    """Every visible long option of every command: name → [(command, help)]."""
    uses: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def walk(command, path: str) -> None:  # type: ignore[no-untyped-def]
        for p in command.params:
            if p.param_type_name != "option" or p.hidden:
                continue
            for name in p.opts + p.secondary_opts:
                if name.startswith("--"):
                    uses[name].append((path, p.help or ""))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(build()), "kaja")
    return uses


def test_a_name_used_by_two_commands_means_one_thing_everywhere():
    uses = _walk()
    problems = []
    for name, where in sorted(uses.items()):
        commands = {path for path, _ in where}
        if len(commands) < 2 and name not in MEANINGS:
            continue  # one command's own option: its first use defines it
        if name not in MEANINGS:
            problems.append(f"{name} is used by {sorted(commands)}: declare its one meaning")
            continue
        for path, text in where:
            if not re.match(MEANINGS[name], text):
                problems.append(f"{path} {name}: {text!r} is not {MEANINGS[name]!r}")
    assert not problems, "\n".join(problems)


def test_the_old_names_are_hidden_and_none_is_shown_with_another_meaning():
    uses = _walk()
    for old in ("--before", "--older-than", "--url"):
        assert old not in uses, uses.get(old)
    assert [path for path, _ in uses["--db"]] == ["kaja"]  # the shared file's path, only there
    assert [path for path, _ in uses["--all"]] == ["kaja sessions export"]
    assert [path for path, _ in uses["--by"]] == ["kaja usage"]  # grouping; stats has --sort


def test_every_upper_bound_is_until_with_the_same_forms_as_since():
    uses = _walk()
    until = {path for path, _ in uses["--until"]}
    assert {"kaja sessions", "kaja sessions prune", "kaja sessions export", "kaja runs",
            "kaja usage", "kaja usage reset", "kaja browse", "kaja search"} <= until  # fmt: skip
    assert until <= {path for path, _ in uses["--since"]} | {"kaja usage reset"}


# --- the old names still work, and mean what the new ones do -------------------------------------
@pytest.mark.parametrize(
    "new,old",
    [
        (["sessions", "--until", "2026-11-28"], ["sessions", "--before", "2026-11-28"]),
        (["sessions", "--until", "2026-11-28"], ["sessions", "--older-than", "2026-11-28"]),
        (["sessions", "prune", "--until", "2026-11-28", "--dry-run"],
         ["sessions", "prune", "--older-than", "2026-11-28", "--dry-run"]),
        (["usage", "reset", "--until", "2026-11-29", "--dry-run"],
         ["usage", "reset", "--before", "2026-11-29", "--dry-run"]),
        (["usage", "--until", "2026-11-29T10:00"], ["usage", "--before", "2026-11-29T10:00"]),
        (["runs", "--subagents", "-n", "0"], ["runs", "--all", "-n", "0"]),
        (["runs", "--until", "2026-11-29T10:00", "-n", "0"], ["runs", "--before", "2026-11-29T10:00", "-n", "0"]),
        (["stats", "queries", "--database", "shared", "--sort", "max"],
         ["stats", "queries", "--db", "shared", "--by", "max"]),
    ],
)  # fmt: skip
def test_an_old_name_does_what_the_new_one_does(shared_demo_store: Kaja, new, old):
    a, b = shared_demo_store(*new, "--json"), shared_demo_store(*old, "--json")
    assert a.code == b.code == 0, (a, b)
    assert a.out == b.out and a.out


def test_runs_until_leaves_out_what_started_then_or_later(shared_demo_store: Kaja):
    every = json.loads(shared_demo_store("runs", "--subagents", "-n", "0", "--json").out)["runs"]
    cut = sorted(r["started_at"] for r in every)[len(every) // 2]
    kept = json.loads(
        shared_demo_store("runs", "--subagents", "-n", "0", "--until", cut, "--json").out
    )["runs"]
    assert kept and all(r["started_at"] < cut for r in kept)
    assert len(kept) == sum(r["started_at"] < cut for r in every)


@pytest.mark.parametrize(
    "argv,said",
    [
        (["sessions", "--until", "3d", "--before", "2026-11-28"], "--until and --before say the same"),
        (["sessions", "--before", "3d", "--older-than", "2026-11-28"],
         "--before and --older-than say the same"),
        (["usage", "reset", "--until", "1d", "--before", "2026-11-29", "--dry-run"],
         "--until and --before say the same"),
        (["runs", "--ledger-url", "postgresql://127.0.0.1/x", "--url", "postgresql://127.0.0.1/x"],
         "--ledger-url and --url say the same"),
        (["stats", "queries", "--database", "shared", "--db", "cache"],
         "--database and --db say the same"),
    ],
)  # fmt: skip
def test_a_name_and_its_old_name_together_is_a_usage_error(shared_demo_store: Kaja, argv, said):
    r = shared_demo_store(*argv)
    assert r.code == 2 and r.out == "", r
    assert r.err.startswith(f"kaja: {said}: give one"), r.err
    assert len(r.err.splitlines()) == 1


def test_a_bad_time_names_the_option_typed(shared_demo_store: Kaja):
    r = shared_demo_store("sessions", "--older-than", "soon")
    assert r.code == 2 and r.err.startswith("kaja: --older-than: not a date or age: 'soon'"), r
    r = shared_demo_store("runs", "--until", "soon")
    assert r.code == 2 and r.err.startswith("kaja: --until: not a date or age: 'soon'"), r


def test_sync_old_url_name_still_reaches_the_ledger_server(shared_demo_store: Kaja):
    # Nothing listens on port 9 of this machine: both names fail the same way, naming the URL.
    url = "postgresql://kaja@127.0.0.1:9/none"
    a = shared_demo_store("sync", "status", "--ledger-url", url, "--json")
    b = shared_demo_store("sync", "status", "--url", url, "--json")
    assert a.code == b.code and a.out == b.out, (a, b)
    assert "flag --ledger-url" in a.out


# --- the words a listing and an error use ---------------------------------------------------------
def test_every_listing_footer_names_limit_the_same_way(shared_demo_store: Kaja):
    for argv in (["runs", "-n", "1"], ["sessions", "-n", "1"], ["tasks", "-n", "1"]):
        r = shared_demo_store(*argv)
        assert r.code == 0, r
        assert r.err.endswith(" more not shown (--limit 0 shows all)\n"), (argv, r.err)


def test_listing_options_before_a_subcommand_agree_in_number(shared_demo_store: Kaja):
    one = shared_demo_store("runs", "--status", "failed", "show", "run_7f3a")
    assert one.code == 2 and "kaja: --status belongs to the listing, not to `show`" in one.err
    two = shared_demo_store("runs", "--status", "failed", "--agent", "kaja", "show", "run_7f3a")
    assert two.code == 2, two
    assert "kaja: --status, --agent belong to the listing, not to `show`" in two.err


@pytest.mark.parametrize(
    "typed,said",
    [
        ("export", "Did you mean `kaja sessions export` or `kaja notes export`?"),
        ("prune", "Did you mean `kaja sessions prune` or `kaja cache prune`?"),
        ("rename", "Did you mean `kaja sessions rename`?"),
    ],
)
def test_a_subcommand_typed_at_the_top_level_is_suggested_where_it_lives(
    kaja: Kaja, typed: str, said: str
):
    r = kaja(typed, "x")
    assert r.code == 2 and r.out == "", r
    assert r.err == f"kaja: No such command '{typed}'. {said} (see `kaja --help`)\n"


def test_a_misspelt_command_still_gets_the_nearest_name(kaja: Kaja):
    r = kaja("sesions")
    assert r.code == 2
    assert (
        r.err == "kaja: No such command 'sesions'. Did you mean 'sessions'? (see `kaja --help`)\n"
    )


# --- runs: short ids in the table, whole ones on request ------------------------------------------
def test_runs_json_has_whole_ids_and_the_unique_short_ones(shared_demo_store: Kaja):
    runs = json.loads(shared_demo_store("runs", "--subagents", "-n", "0", "--json").out)["runs"]
    ids = [r["id"] for r in runs]
    for r in runs:
        assert r["id"].startswith(r["short_id"]) and len(r["short_id"]) >= 8
        assert [i for i in ids if i.startswith(r["short_id"])] == [r["id"]]
    short = runs[0]["short_id"]
    shown = json.loads(shared_demo_store("runs", "show", short, "--json").out)
    assert shown["id"] == runs[0]["id"]


@pytest.mark.needs("script")
def test_runs_table_shows_short_ids_as_sessions_do(shared_demo_store: Kaja):
    p = subprocess.run(
        ["script", "-qc", shlex.join([KAJA, "runs", "--subagents", "--no-pager"]), "/dev/null"],
        env={**shared_demo_store.env, "COLUMNS": "120"}, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p
    screen = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout).replace("\r", "")
    runs = json.loads(shared_demo_store("runs", "--subagents", "--json").out)["runs"]
    firsts = [ln.split()[0] for ln in screen.splitlines()[1:] if ln.startswith("run_")]
    assert firsts == [r["short_id"] for r in runs], screen
    assert all(r["id"] not in screen for r in runs if r["id"] != r["short_id"])
    piped = shared_demo_store("runs", "--subagents")  # not a terminal: whole ids, for scripts
    assert [ln.split("\t")[0] for ln in piped.out.splitlines()] == [r["id"] for r in runs]


# --- kaja demo says where the other owners' sessions are -----------------------------------------
def test_demo_says_how_to_see_the_other_owners_sessions(kaja: Kaja):
    r = kaja("demo", "--now", "2026-11-29T12:00:00Z")
    assert r.code == 0, r
    lines = r.err.splitlines()
    assert lines[0].startswith("kaja: wrote 13 sessions, ") and " for 4 owners " in lines[0]
    assert lines[1] == (
        "kaja: `kaja sessions` lists the terminal's 7; the other 6 belong to 3 other owners:"
        " `kaja sessions --all-owners` shows them all"
    )
    assert len(kaja("sessions").out.splitlines()) == 7
    assert len(kaja("sessions", "--all-owners").out.splitlines()) == 13
