"""Shell completion: the committed files are current, the fast path answers
exactly what Typer would, from the store, read-only and without waiting, and
real shells use it.

The fast path (kaja_cli/completion/fast.py) answers from a table generated
from the Typer app; `test_the_fast_path_answers_what_typer_answers` runs
both on the same words, for every command, subcommand, option and value kind
(and the odd cases of Click's parsing), and compares the bytes each shell
would read. Typer runs with an unbounded COLUMNS there: it wraps long
descriptions at the terminal's width (80 when piped), which the fast path
never does.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KAJA
from sessions_support import BACKUP, TOMATO

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "completions"


def test_committed_scripts_and_table_are_current():
    p = subprocess.run(
        [sys.executable, str(SCRIPTS / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr


# --- the fast path against Typer ------------------------------------------------------------
@contextlib.contextmanager
def environment(env: dict[str, str]):
    saved = dict(os.environ)
    _become(env)
    try:
        yield
    finally:
        _become(saved)


def _become(env: dict[str, str]) -> None:
    """os.environ made equal to `env`, touching only what differs: clearing it
    whole (a putenv/unsetenv per variable) was a third of the comparison's time."""
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@functools.cache
def kaja_command():
    """kaja's Click command, its help options named in one order (-h, --help) as
    the table has them: Click takes them from a set, whose order changes with
    each process's hash seed."""
    import typer.main
    from typer import _completion_classes

    from kaja_cli.app import app

    sys.path.insert(0, str(SCRIPTS))
    from generate import canonical_help

    _completion_classes.completion_init()
    root = typer.main.get_command(app)

    def walk(command, parent) -> None:
        ctx = command.context_class(command, parent=parent, **command.context_settings)
        canonical_help(command, ctx)
        for name in getattr(command, "commands", {}):
            walk(command.get_command(ctx, name), ctx)

    walk(root, None)
    return root


def typer_answer(env: dict[str, str]) -> tuple[str, int]:
    """What kaja's Typer app prints for a completion request, and its exit status."""
    from typer.completion import shell_complete

    out = io.StringIO()
    with environment(env), contextlib.redirect_stdout(out):
        try:
            code = shell_complete(
                kaja_command(), {}, "kaja", "_KAJA_COMPLETE", env["_KAJA_COMPLETE"]
            )
        except SystemExit as e:  # fish's is-args answers with the exit status alone
            code = e.code
    return out.getvalue(), code


def fast_answer(env: dict[str, str]) -> tuple[str, int]:
    from kaja_cli.completion import fast

    with environment(env):
        answer = fast.respond(env)
    assert answer is not None
    return answer


def requests(base: dict[str, str], words: list[str], incomplete: str) -> dict[str, dict]:
    """The environment each shell's script gives kaja for `kaja WORDS INCOMPLETE<TAB>`."""
    line = " ".join(["kaja", *words, incomplete])
    typer_line = line if incomplete else line.rstrip(" ") + " "
    return {
        "bash": dict(base, _KAJA_COMPLETE="complete_bash", COMP_WORDS=line,
                     COMP_CWORD=str(len(words) + 1)),
        "zsh": dict(base, _KAJA_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS=typer_line),
        "fish": dict(base, _KAJA_COMPLETE="complete_fish", _TYPER_COMPLETE_ARGS=typer_line,
                     _TYPER_COMPLETE_FISH_ACTION="get-args"),
        "fish?": dict(base, _KAJA_COMPLETE="complete_fish", _TYPER_COMPLETE_ARGS=typer_line,
                      _TYPER_COMPLETE_FISH_ACTION="is-args"),
    }  # fmt: skip


def every_case() -> list[tuple[list[str], str]]:
    """Words for every command, subcommand, option, option value and argument of
    the table, and the cases where Click's parsing has rules of its own."""
    from kaja_cli.completion.table import COMMANDS

    cases: list[tuple[list[str], str]] = [([], ""), ([], "-"), ([], "--"), ([], "s"), ([], "x")]
    for path, spec in COMMANDS.items():
        words = path.split()
        cases += [(words, ""), (words, "-"), (words, "--"), (words, "--j"), (words, "a")]
        cases += [(words, name[:1]) for name, _, _ in spec["commands"]]
        for p in spec["params"]:
            if p[0] == "option":
                for opt in p[2]:
                    cases += [(words, opt[:3]), ([*words, opt], ""), ([*words, opt], "0"),
                              ([*words, opt], "t"), (words, f"{opt}="), (words, f"{opt}=t"),
                              ([*words, opt, "x"], "-"), ([*words, opt, "x"], "")]  # fmt: skip
            else:
                cases += [([*words, "x"], ""), ([*words, "x", "y"], ""), ([*words, "--"], "0")]
    s, t = TOMATO[:8], "telegram:482913"
    cases += [
        (["resume"], "01a22"), (["resume"], "01a226"), (["resume"], TOMATO[:12]),
        (["resume"], "01A2"), (["resume", "--owner", t], ""), (["resume", "--owner", t], "01a2"),
        (["resume", "--owner", "terminal"], ""), (["resume", "--owner", ""], ""),
        (["resume", "--owner=" + t], ""), (["resume", s], ""), (["resume", s], "-"),
        (["resume", "-c"], "-"), (["resume", "--tail", "x"], "-"), (["resume", "--bogus"], ""),
        (["sessions", "delete", s], ""), (["sessions", "delete", s, BACKUP[:8]], "01a22"),
        (["sessions", "delete", "--owner", t], ""), (["sessions", "export", s, "-f"], ""),
        (["sessions", "export", s, "-f"], "j"), (["sessions", "export", s], "-o"),
        (["sessions", "--owner", t], "d"), (["sessions", "-n", "5"], "l"), (["sessions", "ls"], "-"),
        (["search", "--all-owners", "--session"], ""), (["search", "--session"], "01a22"),
        (["search", "--role", "user", "--role"], ""), (["search", "--role", "user"], "--r"),
        (["search", "-n5"], "--"), (["search", "-n"], ""), (["search", "word", "--"], "-x"),
        (["search", "--json", "--json"], "--j"), (["search", "--", "--role"], ""),
        (["doctor", "--check"], "int"), (["doctor", "--check"], "integrity."),
        (["doctor", "--check", "orphans", "--check"], "s"), (["doctor", "--check=orph"], ""),
        (["wipe", "--owner"], "tele"), (["wipe", "--owner"], "w"),
        (["usage", "--by"], ""), (["usage", "--by"], "D"), (["usage", "--by"], "m"),
        (["usage", "reset"], "--"), (["config", "get"], "mem"), (["config", "get"], "MEM"),
        (["config", "set", "memory.mode"], ""), (["config", "set", "usage.enabled"], "t"),
        (["config", "set", "logging.database.slow_ms"], ""), (["config", "set", "nope"], ""),
        (["config", "set", "memory.mode", "-1"], ""), (["config", "set", "-x"], ""),
        (["config", "set", "-fx", "k"], ""), (["config", "unset"], "logging."),
        (["--db", "/nowhere/kaja.db", "resume"], ""), (["--state-dir", "/nowhere", "wipe", "--owner"], ""),
        (["--version"], ""), (["-V"], "s"), (["-hV"], ""), (["--bogus", "resume"], ""),
        (["--config"], ""), (["--db"], "/tm"), (["sessions", "nope"], ""), (["config", "x"], ""),
        (["search", "'unfinished"], ""), (["resume"], "="), (["search", "--role=as"], ""),
    ]  # fmt: skip
    return cases


SHARDS = 3  # the 1,000 cases in three tests: xdist runs them side by side


@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda i: f"{i + 1} of {SHARDS}")
def test_the_fast_path_answers_what_typer_answers(shared_demo_store, shard):
    base = dict(shared_demo_store.env, COLUMNS="100000")
    differ = []
    cases = every_case()
    assert len(cases) > 1000
    for words, incomplete in cases[shard::SHARDS]:
        for shell, env in requests(base, words, incomplete).items():
            if fast_answer(env) != typer_answer(env):
                differ.append((shell, words, incomplete, fast_answer(env), typer_answer(env)))
    assert not differ, differ[:5]


def test_without_a_store_values_complete_nothing_the_same_way(kaja):
    base = dict(kaja.env, COLUMNS="100000")
    for words, incomplete in [(["resume"], ""), (["wipe", "--owner"], ""), (["search", "-"], ""),
                              (["doctor", "--check"], "")]:  # fmt: skip
        for env in requests(base, words, incomplete).values():
            assert fast_answer(env) == typer_answer(env)
    assert fast_answer(requests(base, ["resume"], "")["bash"]) == ("\n", 0)
    assert not kaja.state.exists()  # nothing created


def test_session_ids_come_with_title_and_age_in_zsh_and_fish(demo_store):
    base = dict(demo_store.env, COLUMNS="100000")
    env = requests(base, ["resume"], "01a2265")
    assert fast_answer(env["bash"]) == ("01a22652\n", 0)
    zsh, _ = fast_answer(env["zsh"])
    assert zsh.startswith('_arguments \'*: :(("01a22652":"Tomato leaves curling in the heat · ')
    fish, _ = fast_answer(env["fish"])
    assert fish.startswith("01a22652\tTomato leaves curling in the heat · ")
    # past the short id, the full id; another owner's session is not offered
    assert fast_answer(requests(base, ["resume"], TOMATO[:12])["bash"]) == (TOMATO + "\n", 0)
    assert fast_answer(requests(base, ["resume"], "01a22612")["bash"]) == ("\n", 0)
    mine = requests(base, ["resume", "--owner", "telegram:482913"], "01a22612")["bash"]
    assert fast_answer(mine) == ("01a22612\n", 0)


def test_a_long_description_stays_on_one_line(demo_store):
    """Typer wraps descriptions at 80 columns when piped: a fish candidate each."""
    env = requests(dict(demo_store.env), ["doctor"], "--")["fish"]
    env.pop("COLUMNS", None)
    out, _ = fast_answer(env)
    assert all(line.startswith("--") for line in out.splitlines())


# --- what the fast path does not do -----------------------------------------------------------
def run_completion(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([KAJA, *argv], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("line", ["kaja se", "kaja resume ", "kaja wipe --owner "])
def test_a_tab_press_imports_neither_typer_nor_rich(demo_store, line):
    env = dict(demo_store.env, PYTHONPROFILEIMPORTTIME="1", _KAJA_COMPLETE="complete_zsh",
               _TYPER_COMPLETE_ARGS=line)  # fmt: skip
    p = run_completion(env)
    assert p.returncode == 0 and p.stdout.startswith("_arguments"), p
    imported = {ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if "|" in ln}
    assert "kaja_cli.completion.fast" in imported
    assert not {m for m in imported if m.split(".")[0] in ("typer", "rich", "click")}


def test_printing_the_scripts_still_goes_to_typer(kaja):
    p = run_completion(dict(kaja.env, _KAJA_COMPLETE="source_zsh"))
    assert p.returncode == 0 and "compdef _kaja_completion kaja" in p.stdout


def test_completing_never_writes_and_never_waits_on_a_lock(demo_store):
    from sessions_support import snapshot

    env = requests(dict(demo_store.env), ["resume"], "")["zsh"]
    before = snapshot(demo_store.state)
    assert "Tomato" in run_completion(env).stdout
    assert snapshot(demo_store.state) == before  # byte for byte, and nothing beside it
    # A process holding the store exclusively: completion offers nothing, at once.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_EXCLUSIVE, str(demo_store.db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        start = time.monotonic()
        p = run_completion(env)
        took = time.monotonic() - start
        assert (p.returncode, p.stdout, p.stderr) == (0, "_files\n", "")
        assert took < 4  # far from the 5 s a reading command waits for a lock
        p = run_completion(requests(dict(demo_store.env), ["wipe", "--owner"], "")["bash"])
        assert (p.returncode, p.stdout) == (0, "\n")
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


HOLD_EXCLUSIVE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE sessions SET title = title")
print("locked", flush=True)
sys.stdin.read()
"""


def test_version_is_no_candidate(kaja):
    env = requests(dict(kaja.env), ["--version"], "")["bash"]
    assert "kaja " not in run_completion(env).stdout


# --- real shells --------------------------------------------------------------------------------
def shell_env(kaja) -> dict:
    return dict(kaja.env, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")


def bash_complete(kaja, line: str) -> list[str]:
    words = line.split(" ")
    script = (
        f"source {SCRIPTS / 'kaja.bash'}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_kaja_completion kaja\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    p = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
        env=shell_env(kaja),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return sorted(w for w in p.stdout.split("\n") if w)


def test_bash_completes_commands_options_session_ids_and_check_ids(demo_store):
    assert bash_complete(demo_store, "kaja se") == ["search", "sessions"]
    assert bash_complete(demo_store, "kaja co") == ["config"]
    assert bash_complete(demo_store, "kaja config p") == ["paths"]
    assert "--json" in bash_complete(demo_store, "kaja config paths --")
    assert bash_complete(demo_store, "kaja resume 01a2265") == ["01a22652"]
    assert bash_complete(demo_store, "kaja sessions delete 01a226") == ["01a22652", "01a226e4"]
    assert bash_complete(demo_store, "kaja doctor --check orph") == ["orphans"]
    assert bash_complete(demo_store, "kaja doctor --check integrity.s") == [
        "integrity.shared", "integrity.stats"]  # fmt: skip


def fish(kaja, line: str) -> list[str]:
    p = subprocess.run(
        ["fish", "--no-config", "-c", f"source {SCRIPTS / 'kaja.fish'}; complete -C {shlex.quote(line)}"],
        capture_output=True, text=True, env=shell_env(kaja),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
def test_fish_completes_commands_session_ids_with_titles_and_check_ids(demo_store):
    assert [line.split("\t")[0] for line in fish(demo_store, "kaja se")] == ["search", "sessions"]
    found = fish(demo_store, "kaja resume 01a226")
    assert [line.split("\t")[0] for line in found] == ["01a22652", "01a226e4"]
    assert found[0].split("\t")[1].startswith("Tomato leaves curling in the heat · ")
    found = fish(demo_store, "kaja doctor --check orph")
    assert found == ["orphans\trows whose parent is gone: messages, tool calls, tool results, "
                     "summaries, events, model calls"]  # fmt: skip


class Tmux:
    """One tmux server with a pane; `screen()` is what the pane shows."""

    def __init__(self, tmp_path: Path, env: dict, command: str, width: int = 120) -> None:
        self.tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]
        subprocess.run([*self.tmux, "new-session", "-d", "-x", str(width), "-y", "30", command],
                       env=env, check=True)  # fmt: skip

    def screen(self, shows=lambda s: True, seconds: float = 10) -> str:
        """The pane's text once `shows` is true of it, or when `seconds` are up."""
        deadline = time.monotonic() + seconds
        while True:
            text = subprocess.run([*self.tmux, "capture-pane", "-p"], capture_output=True,
                                  text=True).stdout  # fmt: skip
            if shows(text) or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


@pytest.mark.skipif(not (shutil.which("zsh") and shutil.which("tmux")), reason="needs zsh and tmux")
def test_zsh_in_a_real_terminal_shows_session_titles_and_check_ids(demo_store, tmp_path):
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text(
        f"autoload -Uz compinit && compinit -u\nsource {SCRIPTS / 'kaja.zsh'}\nPROMPT='> '\n"
    )
    env = dict(shell_env(demo_store), ZDOTDIR=str(zdot), TERM="xterm")
    pane = Tmux(tmp_path, env, "zsh")
    try:
        # The prompt ("> ") is set last in .zshrc: once it shows, completion is loaded.
        pane.screen(lambda s: s.startswith(">"))
        pane.keys("kaja con", "Tab")
        assert "kaja config" in pane.screen(lambda s: "kaja config" in s)
        pane.keys("C-u", "kaja resume 01a226", "Tab")
        screen = pane.screen(lambda s: "Nightly backup" in s)
        assert "01a22652" in screen and "Tomato leaves curling in the heat" in screen, screen
        assert "01a226e4" in screen and "Nightly backup with rsync" in screen, screen
        # Wait for what the TAB writes, not for text the last menu still shows.
        pane.keys("C-u", "kaja resume 01a2265", "Tab")
        assert "kaja resume 01a22652" in pane.screen(lambda s: "kaja resume 01a22652" in s)
        pane.keys("C-u", "kaja doctor --check orph", "Tab")
        assert "--check orphans" in pane.screen(lambda s: "--check orphans" in s)
    finally:
        pane.close()


@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_install_completion_writes_into_home(kaja):
    r = kaja("--install-completion", "bash", env={"SHELL": "/bin/bash"})
    assert r.code == 0, r
    bashrc = (kaja.home / ".bashrc").read_text()
    assert "kaja" in bashrc


@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_install_completion_for_the_shell_named_not_the_one_running(kaja):
    r = kaja("--install-completion", "zsh", env={"SHELL": "/bin/bash"})
    assert r.code == 0, r
    assert r.out.startswith("zsh completion installed in ")
    assert (kaja.home / ".zfunc" / "_kaja").is_file()  # zsh's way: a function on fpath
    assert not (kaja.home / ".bashrc").exists()


def test_install_completion_without_a_shell_among_the_parents(monkeypatch, capsys):
    """Run from a service or an IDE: `$SHELL` is the fallback, else one line asking."""
    import shellingham

    from kaja_cli.completion import install

    def no_shell():
        raise shellingham.ShellDetectionFailure()

    monkeypatch.setattr(shellingham, "detect_shell", no_shell)
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    assert install.wanted_shell(["--install-completion"]) == "fish"
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert install.install(["--install-completion"]) == 2
    assert "name it, as in `kaja --install-completion bash`" in capsys.readouterr().err
