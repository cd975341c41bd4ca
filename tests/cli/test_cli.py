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


def test_command_modules_do_not_import_each_other():
    """A command module imports the shared pieces (`commands`, `commands.options`),
    never another command's module: a group is built by its package's `__init__`
    (`commands/sessions/`), so no two command modules import each other."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    try:
        from test_layering import imported_modules
    finally:
        sys.path.pop(0)

    def module(path: Path) -> tuple[str, bool]:
        parts = path.relative_to(ROOT).with_suffix("").parts
        package = path.name == "__init__.py"
        return ".".join(parts[:-1] if package else parts), package

    paths = sorted((ROOT / "kaja_cli/commands").rglob("*.py"))
    commands = {module(p)[0] for p in paths} - {"kaja_cli.commands", "kaja_cli.commands.options"}
    assert len(commands) > 15
    for path in paths:
        name, package = module(path)
        for n in imported_modules(path.read_text(), name, package=package) & commands - {name}:
            # a group's __init__ registers its own subcommand modules, and only those
            assert package and n.startswith(name + "."), (path, n)


def _tests_json(test: ast.expr) -> bool:
    """`as_json`, `not as_json`, `x and as_json`…: a branch on --json (an argument
    passed on in a call is not one)."""
    if isinstance(test, ast.Name):
        return test.id == "as_json"
    if isinstance(test, ast.UnaryOp):
        return _tests_json(test.operand)
    if isinstance(test, ast.BoolOp):
        return any(_tests_json(v) for v in test.values)
    return False


def test_command_modules_are_thin():
    """Output is render's: a command module writes no JSON and never branches on
    --json itself; it hands its result to `render.emit` (JSON through the
    result's `to_json()`) and shows a plan through `render.preview`. Where --json
    asks the core for something else, the command picks the call: `kaja resume
    --json` streams another document (the agent's context, not the replay), and
    `kaja sessions --json` takes rows SQLite built as JSON (`listing_json`)."""
    writers = {"dumps", "dump", "emit_json", "emit_json_document", "emit_json_stream"}
    allowed = {"resume.py": {"if as_json", "emit_json_stream"}, "listing.py": {"if as_json"}}
    seen: dict[str, set[str]] = {}
    paths = sorted((ROOT / "kaja_cli/commands").rglob("*.py"))
    for path in paths:
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if "json" in names:
                    found.add("import json")
            elif isinstance(node, ast.Attribute) and node.attr in writers:
                found.add(node.attr)
            elif isinstance(node, ast.Name) and node.id in writers:
                found.add(node.id)
            elif isinstance(node, ast.If | ast.IfExp) and _tests_json(node.test):
                found.add("if as_json")
        assert found <= allowed.get(path.name, set()), (path, found)
        seen[path.name] = found
    for name, expected in allowed.items():
        assert seen[name] == expected  # the check sees what it looks for
    assert len(paths) > 15


def test_shared_options_read_the_same_everywhere():
    """--yes, --dry-run and each session filter: one declaration, one help text,
    whatever the command (commands/options.py)."""
    helps: dict[tuple, set] = {}
    filters = ("--since", "--before", "--older-than", "--model", "--persona", "--title",
               "--max-messages", "--min-tokens", "--empty", "--archived")  # fmt: skip
    filtered = set()
    for path, command in walk(typer.main.get_command(app)):
        for p in command.params:
            name = p.opts[0]
            if name in filters and getattr(p, "rich_help_panel", None) != "Which sessions":
                continue  # another command's --since (usage, search): its own meaning
            if name in ("--yes", "--dry-run", *filters):
                helps.setdefault((name, tuple(p.opts[1:]), getattr(p, "rich_help_panel", None)),
                                 set()).add(p.help)  # fmt: skip
            if name in filters:
                filtered.add(path)
    assert {n for n, *_ in helps} == {"--yes", "--dry-run", *filters}
    for key, texts in helps.items():
        assert len(texts) == 1, (key, texts)
    assert filtered >= {("sessions",), ("sessions", "list"), ("sessions", "prune"),
                        ("sessions", "export"), ("sessions", "stats")}  # fmt: skip


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


# --- start-up builds the command it runs (issue 29) ------------------------------------------
_LOADED = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write(repr(sorted(m for m in sys.modules"
    " if m.startswith('kaja_cli.commands'))) + '\\n'))\n"
    "sys.argv = ['kaja', *sys.argv[1:]]\n"
    "from kaja_cli.app import main\n"
    "main()\n"
)


def _command_modules(kaja, *args: str) -> set[str]:
    """The command modules a real `kaja ARGS` process loaded (printed as it exits)."""
    import ast as syntax
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", _LOADED, *args], env=kaja.env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    return set(syntax.literal_eval(p.stderr.strip().splitlines()[-1]))


def test_a_command_builds_its_own_group_and_no_other(kaja):
    """`kaja config paths --json` imports and builds the `config` group alone, so
    start-up does not grow with the command list; --help, an unknown command
    and no command build the whole app."""
    shared = {"kaja_cli.commands", "kaja_cli.commands.options"}
    assert _command_modules(kaja, "config", "paths", "--json") == shared | {
        "kaja_cli.commands.config"
    }
    assert _command_modules(kaja, "--db", "x.db", "runs", "--help") == shared | {
        "kaja_cli.commands.audit"
    }
    every = {f"kaja_cli.commands.{m}" for m in ("sessions", "search", "doctor", "config", "audit")}
    for args in (["--help"], ["no-such-command"], ["--version"], []):
        assert every <= _command_modules(kaja, *args), args


def test_the_one_group_answers_as_the_whole_app(kaja, monkeypatch):
    """Help screens and usage errors read the same whether kaja built one command
    group or all of them (`command_named` → None builds the whole app)."""
    from kaja_cli import app as module

    cases = [
        ["config", "paths", "--help"], ["config", "--help"], ["sessions", "export", "--help"],
        ["runs", "show", "--help"], ["restore", "--help"], ["config", "paths", "--bogus"],
        ["config", "pahts"], ["sessions", "-n", "-1"], ["--db=", "config", "paths"],
        ["--state-dir", str(kaja.state), "config", "paths", "--json", "x"], ["search"],
        ["--database-url", "bogus", "usage"], ["sessions"], ["sessions", "ls", "-n", "1"],
        ["sessions", "exprt"], ["sessions", "export"], ["sessions", "-n", "1", "list"],
        ["usage", "reset"], ["notes"], ["runs", "--json"], ["config"], ["config", "--help"],
        ["cache"], ["accounts"], ["sync"], ["stats"], ["reviews"], ["learning"], ["artifacts"],
    ]  # fmt: skip
    one = [kaja(*args) for args in cases]
    assert {module.command_named(args) for args in cases} >= {"config", "sessions", "runs"}
    monkeypatch.setattr(module, "command_named", lambda args: None)
    whole = [kaja(*args) for args in cases]
    for args, a, b in zip(cases, one, whole, strict=True):
        assert (a.code, a.out, a.err) == (b.code, b.out, b.err), args
    assert {0, 2} <= {r.code for r in one}
