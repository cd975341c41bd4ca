"""The command as a whole: help, version, exit codes, and what commands may hold
(the core's own layering rules are tests/unit/test_layering.py)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import typer.main

from kaja_cli import __version__
from kaja_cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def walk(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, (*path, name))


def test_version(kaja):
    r = kaja("--version")
    assert (r.code, r.out, r.err) == (0, f"kaja {__version__}\n", "")


def test_help_lists_every_command(kaja):
    r = kaja("--help")
    assert r.code == 0
    for path, _ in walk(typer.main.get_command(app)):
        if len(path) == 1:
            assert path[0] in r.out
    assert kaja().code in (0, 2)  # no arguments shows help


def test_every_command_and_option_has_help_text(kaja):
    for path, command in walk(typer.main.get_command(app)):
        assert (command.help or "").strip(), f"kaja {' '.join(path)} has no help"
        for param in command.params:
            if getattr(param, "hidden", False) or param.param_type_name == "argument":
                continue
            assert (param.help or "").strip(), f"kaja {' '.join(path)} {param.opts} has no help"
        r = kaja(*path, "--help")
        assert r.code == 0 and "Usage: kaja" in r.out, path


def test_bad_usage_is_exit_2_without_traceback(kaja):
    r = kaja("config", "paths", "--no-such-option")
    assert r.code == 2 and "Traceback" not in r.err and "No such option" in r.err
    r = kaja("no-such-command")
    assert r.code == 2 and "Traceback" not in r.err


def test_an_unexpected_error_is_one_line_not_a_traceback(kaja, tmp_path):
    # A state dir path that is a file: demo cannot create anything inside it.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = kaja("--state-dir", str(blocker / "sub"), "demo")
    assert r.code == 1
    assert "Traceback" not in r.err and r.err.count("\n") == 1 and r.err.startswith("kaja: ")


def test_commands_build_no_sql():
    """SQL lives in the core: a PostgreSQL backend will replace it, not the commands."""
    keywords = ("SELECT ", "INSERT INTO", "DELETE FROM", "UPDATE ", "CREATE TABLE", "PRAGMA ")
    for path in [
        *(ROOT / "kaja_cli/commands").rglob("*.py"),
        ROOT / "kaja_cli/app.py",
        *(ROOT / "kaja_cli/render").rglob("*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not any(k in node.value for k in keywords), f"{path}: {node.value[:60]!r}"


def test_no_stringified_annotations_in_the_command_layer():
    """typer evals them at every start-up: keep `from __future__ import annotations` out."""
    for path in [*(ROOT / "kaja_cli/commands").rglob("*.py"), ROOT / "kaja_cli/app.py"]:
        lines = path.read_text().splitlines()
        assert "from __future__ import annotations" not in lines, path


def test_a_usage_error_is_one_line_naming_the_help(kaja):
    r = kaja("sessions", "--limit", "-1")
    assert r.code == 2
    assert r.err == (
        "kaja: Invalid value for '--limit' / '-n': -1 is too small (at least 0) "
        "(see `kaja sessions --help`)\n"
    )


def test_a_reader_that_goes_away_is_not_a_failure(demo_store):
    """`kaja … | head -1`: exit 0 every time, nothing on stderr (pipefail-safe)."""
    import subprocess

    from tests.conftest import KAJA

    for argv in (["search", "the", "--all-owners", "--limit", "0"], ["config", "paths"],
                 ["sessions", "--all-owners", "-n", "0"]):  # fmt: skip
        for _ in range(3):
            p = subprocess.run(
                ["bash", "-c", f'set -o pipefail; "{KAJA}" {" ".join(argv)} | head -c 1 >/dev/null'],
                env=demo_store.env, capture_output=True, text=True,
            )  # fmt: skip
            assert (p.returncode, p.stderr) == (0, ""), argv


# One command line of every group (its output, an error, a write) run twice on
# the same fresh store: by the real console script, then in-process as most
# tests run it. An in-process-only difference (main()'s wiring, the state
# tests/support/inprocess.py gives a run) shows here as a different exit code, output
# or set of files left.
EVERY_GROUP = {
    "kaja": [["--version"], ["--help"], [], ["no-such-command"]],
    "config": [["config", "paths"], ["config", "paths", "--json"], ["config", "paths", "--bogus"]],
    "sessions": [
        ["sessions", "--all-owners", "-n", "0"], ["sessions", "export", "01a22652"],
        ["sessions", "delete", "01a22652", "--yes"], ["sessions", "delete", "01a22652"],
    ],
    "resume": [["resume"], ["resume", "--json"], ["resume", "nope"], ["resume", "--tail", "x"]],
    "search": [
        ["search", "shade", "--all-owners"], ["search", "--fts", '"shade'],
        ["search", "--reindex", "--json"],
    ],
    "usage": [["usage", "--by", "day"], ["usage", "reset", "--yes", "--json"], ["usage", "reset"]],
    "doctor": [
        ["doctor", "--check", "integrity.shared", "--check", "orphans"],
        ["doctor", "--json", "--check", "schema"], ["doctor", "--check", "nope"],
    ],
    "wipe": [
        ["wipe", "--dry-run"], ["wipe", "--owner", "telegram:482913", "--yes", "--json"],
        ["wipe", "--yes"], ["wipe"],
    ],
    "demo": [["demo"], ["--state-dir", "{root}/fresh", "demo", "--seed", "2", "--now", "2026-01-01"]],
    "backup": [
        ["backup", "-o", "{root}/b.tar"], ["backup", "-o", "{root}/state/kaja.db"],
        ["--state-dir", "{root}/fresh", "restore", "{root}/b.tar"], ["restore", "{root}/b.tar"],
        ["optimize", "--json"],
    ],
    "notes": [
        ["notes", "--all-owners"], ["notes", "show", "dieta"], ["notes", "forget", "diet", "--yes"],
        ["notes", "export", "-f", "json"], ["search", "--notes", "marie"],
    ],
    "cache": [["cache"], ["cache", "clear", "nope", "--yes"], ["cache", "clear", "--yes"], ["cache", "prune"]],
    "accounts": [
        ["accounts", "--json"], ["accounts", "remove", "marie", "--yes"],
        ["accounts", "revoke", "marie", "--all", "--yes"], ["accounts", "sessions", "nobody"],
    ],
}  # fmt: skip


@pytest.mark.parametrize("group", list(EVERY_GROUP))
def test_the_console_script_and_the_in_process_runs_agree(kaja, _demo_template, group):
    def fresh_store() -> None:
        for name in ("state", "fresh"):
            shutil.rmtree(kaja.root / name, ignore_errors=True)
        shutil.copytree(_demo_template, kaja.state, symlinks=True)

    def files() -> list[str]:
        return sorted(str(p.relative_to(kaja.root)) for p in kaja.root.rglob("*"))

    for argv in EVERY_GROUP[group]:
        argv = [a.format(root=kaja.root) for a in argv]
        fresh_store()
        real, real_files = kaja.proc(*argv), files()
        fresh_store()
        assert (kaja(*argv), files()) == (real, real_files), argv


def test_an_in_process_run_leaves_this_process_as_it_was(demo_store):
    """What tests/support/inprocess.py promises: after a run (doctor sets a Ctrl-C
    handler, opens probe descriptors and threads), this process is as before."""
    import os
    import signal
    import sys
    import threading

    from kaja_cli.core.engine import db

    def state():
        return (
            dict(os.environ), list(sys.argv), (sys.stdin, sys.stdout, sys.stderr), sys.excepthook,
            os.getcwd(), signal.getsignal(signal.SIGINT), set(threading.enumerate()),
            dict(db._probe_fds),
        )  # fmt: skip

    before = state()
    r = demo_store("doctor", "--json")
    assert r.code == 0 and r.out.startswith("{"), r
    assert state() == before
    assert "KAJA_STATE_DIR" in demo_store.env and os.environ.get("HOME") != demo_store.env["HOME"]


# --- small habits -------------------------------------------------------------------------
def test_dash_capital_v_is_the_version(kaja):
    r = kaja("-V")
    assert (r.code, r.out, r.err) == (0, f"kaja {__version__}\n", "")


def test_a_config_flag_naming_no_file_is_an_error(kaja, tmp_path):
    missing = tmp_path / "typo.toml"
    for argv in (["sessions"], ["config", "paths"], ["config", "show"], ["doctor"],
                 ["config", "get", "memory.mode"], ["usage"]):  # fmt: skip
        r = kaja("--config", str(missing), *argv)
        assert r.code == 1, (argv, r)
        assert r.err.startswith(f"kaja: --config {missing}: no such file: "), r.err
        assert r.err.count("\n") == 1
    # writing it is how a new settings file is made
    r = kaja("--config", str(missing), "config", "set", "memory.mode", "local")
    assert r.code == 0, r
    assert kaja("--config", str(missing), "config", "get", "memory.mode").out == "local\n"


def test_kaja_config_may_name_a_file_not_written_yet(kaja):
    assert not kaja.config.exists()  # the fixture's KAJA_CONFIG: the defaults apply
    r = kaja("config", "get", "memory.mode")
    assert (r.code, r.out) == (0, "local\n")


def test_sessions_list_and_ls_are_the_listing(demo_store):
    listing = demo_store("sessions", "--all-owners", "-n", "3")
    assert listing.code == 0 and len(listing.out.splitlines()) == 3
    for word in ("list", "ls"):
        r = demo_store("sessions", word, "--all-owners", "-n", "3")
        assert (r.code, r.out, r.err) == (0, listing.out, listing.err), word
    assert "ls" not in demo_store("sessions", "--help").out.split()  # the listing's alias, unlisted
    r = demo_store("sessions", "--all-owners", "list")
    assert r.code == 2 and "put the options after it" in r.err
