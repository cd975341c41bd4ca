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
import json
import os
import random
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import KAJA, Kaja
from tests.support.sessions_support import BACKUP, RECEIPT, TOMATO

ROOT = Path(__file__).resolve().parents[2]
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

    from kaja_cli.completion import shells

    command = kaja_command()
    shells.register()  # kaja's shell formats, as `kaja` answers through Typer
    out = io.StringIO()
    with environment(env), contextlib.redirect_stdout(out):
        try:
            code = shell_complete(command, {}, "kaja", "_KAJA_COMPLETE", env["_KAJA_COMPLETE"])
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


def every_case() -> tuple[list[tuple[list[str], str]], list[tuple[list[str], str]]]:
    """Words for every command, subcommand, option, option value and argument of
    the table (generated), and the cases where Click's parsing has rules of its
    own (written out)."""
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
    special: list[tuple[list[str], str]] = [
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
    return cases, special


SHARDS = 4  # the 1,000 generated cases in four tests: xdist runs them side by side


@pytest.mark.parametrize(
    "shard",
    [pytest.param(i, id=f"{i + 1} of {SHARDS}", marks=[pytest.mark.exhaustive] if i else [])
     for i in range(SHARDS)],
)  # fmt: skip
def test_the_fast_path_answers_what_typer_answers(shared_demo_store, shard):
    """Every case in the three shells, the fast path against Typer. The default set: the
    written-out cases and every fourth generated one (each command is in it); `-m
    exhaustive` adds the other three quarters."""
    base = dict(shared_demo_store.env, COLUMNS="100000")
    differ = []
    generated, special = every_case()
    assert len(generated) + len(special) > 1000
    for words, incomplete in generated[shard::SHARDS] + (special if shard == 0 else []):
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
    assert zsh.startswith(r"_arguments $'*: :(($\x2701a22652:Tomato leaves curling in the heat · ")
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
    from tests.support.sessions_support import snapshot

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
        env=shell_env(kaja), cwd=kaja.root,
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
        capture_output=True, text=True, env=shell_env(kaja), cwd=kaja.root,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


@pytest.mark.needs("fish")
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

    def __init__(self, tmp_path: Path, env: dict, command: str, width: int = 120,
                 height: int = 30, cwd: Path | None = None) -> None:  # fmt: skip
        self.tmux = ["tmux", "-S", str(tmp_path / "tmux.sock")]
        subprocess.run([*self.tmux, "new-session", "-d", "-x", str(width), "-y", str(height),
                        "-c", str(cwd or tmp_path), command], env=env, check=True)  # fmt: skip
        # Every byte the shell writes to its terminal, escape sequences and all.
        self.written = tmp_path / "written"
        self.written.touch()
        subprocess.run([*self.tmux, "pipe-pane", "-o", f"cat >> {shlex.quote(str(self.written))}"],
                       check=True)  # fmt: skip

    def screen(self, shows=lambda s: True, seconds: float = 60) -> str:
        """The pane's text once `shows` is true of it, or when `seconds` are up
        (a minute: under load 13 a zsh loading its completion took over 10 s)."""
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


@pytest.mark.needs("zsh", "tmux")
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
    # kaja's script, which joins the words bash breaks at `:` and `=`, not Typer's
    installed = (kaja.home / ".bash_completions" / "kaja.sh").read_text()
    assert installed.strip() == (SCRIPTS / "kaja.bash").read_text().strip()
    assert "mapfile -t COMPREPLY" in installed


@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_install_completion_for_the_shell_named_not_the_one_running(kaja):
    r = kaja("--install-completion", "zsh", env={"SHELL": "/bin/bash"})
    assert r.code == 0, r
    assert r.out.startswith(f"zsh completion installed in {kaja.home / '.zfunc' / '_kaja'}\n")
    assert (kaja.home / ".zfunc" / "_kaja").is_file()
    assert not (kaja.home / ".bashrc").exists()


# What `--install-completion` adds to a start-up file: the lines that load kaja's script.
ZSH_LINES = ("# kaja's shell completion (kaja --install-completion zsh)\n"
             "[[ -r ~/.zfunc/_kaja ]] && source ~/.zfunc/_kaja\n")  # fmt: skip
BASH_LINES = ("# kaja's shell completion (kaja --install-completion bash)\n"
              "[[ -r ~/.bash_completions/kaja.sh ]] && source ~/.bash_completions/kaja.sh\n")  # fmt: skip
# Counts the calls of compinit made after the user's own (zsh).
COUNT_COMPINIT = "compinit() { print called >> ~/compinit-calls }\n"


def _said_added(out: str, rc: Path, lines: str) -> bool:
    """The install's output names the start-up file and shows the exact lines it added."""
    return f"Added to {rc}:\n" + "".join(f"    {line}\n" for line in lines.splitlines()) in out


@pytest.mark.needs("zsh")
@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
@pytest.mark.parametrize("compinit", ["before", "after", "none"])
def test_zsh_install_adds_only_what_loads_kaja(kaja, compinit):
    """`kaja --install-completion zsh` appends to ~/.zshrc the two lines that
    load kaja's script, and nothing else (Typer's added a compinit, a second
    one for most users, and a menu style for every command); a second install
    adds nothing. A new zsh then completes kaja whether the user's compinit
    comes before kaja's lines, after them (at the first prompt, kaja registers
    then) or nowhere (kaja starts it then, the one time it runs)."""
    zshrc = kaja.home / ".zshrc"
    kaja.home.mkdir(parents=True, exist_ok=True)
    (kaja.home / ".zshenv").write_text("skip_global_compinit=1\n")  # Ubuntu's /etc/zsh/zshrc
    mine = "PROMPT='> '\n"
    if compinit == "before":
        mine += "autoload -Uz compinit; compinit\n" + COUNT_COMPINIT
    zshrc.write_text(mine)
    r = kaja("--install-completion", "zsh", env={"SHELL": "/bin/bash"})
    assert r.code == 0, r
    assert zshrc.read_text() == mine + "\n" + ZSH_LINES
    assert _said_added(r.out, zshrc, ZSH_LINES), r.out
    assert f"zsh completion installed in {kaja.home / '.zfunc' / '_kaja'}\n" in r.out
    if compinit == "after":
        zshrc.write_text(zshrc.read_text() + "autoload -Uz compinit; compinit\n" + COUNT_COMPINIT)
    before = zshrc.read_text()
    again = kaja("--install-completion", "zsh", env={"SHELL": "/bin/bash"})
    assert again.code == 0 and zshrc.read_text() == before
    assert f"{zshrc} loads it already: left as it was." in again.out and "Added" not in again.out
    assert "zstyle" not in before and before.count("compinit;") == (compinit != "none")
    # A new interactive zsh, its start-up files run, then the first prompt's hooks.
    p = subprocess.run(
        ["zsh", "-i", "-c", "for f in $precmd_functions; $f; print -r -- $_comps[kaja]"],
        capture_output=True, text=True, env=shell_env(kaja), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert p.stdout.splitlines()[-1:] == ["_kaja_completion"], p
    assert not (kaja.home / "compinit-calls").exists()  # never a second compinit


@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_zsh_install_over_typers_lines_says_so_and_leaves_them(kaja):
    """An earlier kaja (Typer's install) appended a compinit and a global zstyle:
    the new install adds its own lines, names those, and leaves them."""
    zshrc = kaja.home / ".zshrc"
    kaja.home.mkdir(parents=True, exist_ok=True)
    typers = ("fpath+=~/.zfunc; autoload -Uz compinit; compinit\n\n"
              "zstyle ':completion:*' menu select\n")  # fmt: skip
    zshrc.write_text(typers)
    r = kaja("--install-completion", "zsh")
    assert r.code == 0 and zshrc.read_text() == typers + "\n" + ZSH_LINES
    assert (f"{zshrc} also has these lines, which an earlier kaja (or another program's "
            "completion) added; kaja no longer needs them, and left them as they are:\n"
            "    fpath+=~/.zfunc; autoload -Uz compinit; compinit\n"
            "    zstyle ':completion:*' menu select\n") in r.out, r.out  # fmt: skip


@pytest.mark.needs("zsh", "tmux")
@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_zsh_without_compinit_completes_after_install(kaja, tmp_path):
    """A .zshrc that never starts compinit: kaja's lines start it at the first
    prompt, and TAB completes kaja's commands in a real terminal."""
    kaja.home.mkdir(parents=True, exist_ok=True)
    (kaja.home / ".zshenv").write_text("skip_global_compinit=1\n")
    (kaja.home / ".zshrc").write_text("PROMPT='> '\n")
    assert kaja("--install-completion", "zsh").code == 0
    _zsh_tab_completes_config(tmp_path, dict(shell_env(kaja), TERM="xterm"))


@pytest.mark.needs("zsh", "tmux")
def test_zsh_script_on_fpath_completes_at_the_first_tab(demo_store, tmp_path):
    """Found on `fpath` by compinit (the `#compdef` line), kaja's script completes
    at the first TAB (Typer's only registered itself then, completing nothing)."""
    zdot, functions = tmp_path / "zdot", tmp_path / "functions"
    zdot.mkdir()
    functions.mkdir()
    (functions / "_kaja").write_text((SCRIPTS / "kaja.zsh").read_text())
    (zdot / ".zshrc").write_text(f"fpath=({functions} $fpath)\nautoload -Uz compinit && "
                                 "compinit -u\nPROMPT='> '\n")  # fmt: skip
    _zsh_tab_completes_config(
        tmp_path, dict(shell_env(demo_store), ZDOTDIR=str(zdot), TERM="xterm")
    )


def _zsh_tab_completes_config(tmp_path, env: dict) -> None:
    """In a real zsh (tmux) started with `env`, `kaja con` TAB becomes `kaja config`."""
    pane = Tmux(tmp_path, env, "zsh")
    try:
        pane.screen(lambda s: s.startswith(">"))
        pane.keys("kaja con", "Tab")
        assert "kaja config" in pane.screen(lambda s: "kaja config" in s)
    finally:
        pane.close()


@pytest.mark.needs("bash")
@pytest.mark.process  # edits a shell start-up file: only the real command, in its HOME
def test_bash_install_adds_only_what_loads_kaja_once(kaja):
    """Two lines in ~/.bashrc, said; a second install adds nothing (Typer's
    added a line end each time), nor does one over Typer's own line."""
    bashrc = kaja.home / ".bashrc"
    kaja.home.mkdir(parents=True, exist_ok=True)
    bashrc.write_text("alias ll='ls -l'")  # no line end at the end
    r = kaja("--install-completion", "bash")
    assert r.code == 0, r
    assert bashrc.read_text() == "alias ll='ls -l'\n\n" + BASH_LINES
    assert _said_added(r.out, bashrc, BASH_LINES), r.out
    again = kaja("--install-completion", "bash")
    assert again.code == 0 and bashrc.read_text() == "alias ll='ls -l'\n\n" + BASH_LINES
    assert f"{bashrc} loads it already: left as it was." in again.out
    p = subprocess.run(["bash", "-i", "-c", "complete -p kaja"], capture_output=True, text=True,
                       env=shell_env(kaja), stdin=subprocess.DEVNULL)  # fmt: skip
    assert p.stdout.strip() == "complete -o default -F _kaja_completion kaja", p
    typers = f"source '{kaja.home / '.bash_completions' / 'kaja.sh'}'\n"
    bashrc.write_text(typers)  # what an earlier kaja (Typer's install) wrote
    assert kaja("--install-completion", "bash").code == 0 and bashrc.read_text() == typers


@pytest.mark.needs("fish")
@pytest.mark.process  # writes into HOME: only the real command
def test_fish_install_writes_the_script_alone(kaja):
    r = kaja("--install-completion", "fish")
    assert r.code == 0, r
    script = kaja.home / ".config" / "fish" / "completions" / "kaja.fish"
    assert r.out.startswith(f"fish completion installed in {script}\n")
    assert "no start-up file was changed" in r.out
    files = sorted(str(p.relative_to(kaja.home)) for p in kaja.home.rglob("*") if p.is_file())
    assert files == [".config/fish/completions/kaja.fish"]
    p = subprocess.run(["fish", "-c", "complete -C 'kaja con'"], capture_output=True, text=True,
                       env=shell_env(kaja))  # fmt: skip
    assert p.stdout.split("\t")[0] == "config", p


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


# --- data that tries to run: nothing runs, nothing reaches the terminal raw ----------------------
# Values TAB offers (session ids, owners, note keys, tags, namespaces, usernames) and the
# descriptions beside them (titles, note contents, display names: a site visitor chooses one)
# come from the store, which other programs and other people write.
OSC52 = "\x1b]52;c;SGFja2Vk\x07"  # the terminal's clipboard := "Hacked"
ESCAPES = (OSC52, "\x1b]2;PWNED\x07", "\x1b[31mRED")  # the window's title; a color


def attacks(name: str) -> list[str]:
    """Texts that run `touch ran/NAME…` (in the shell's folder) wherever a shell evaluates
    them; short, so that a title cut at 48 characters still holds the whole attack."""
    t = f"touch ran/{name}"
    return [
        f"t\\'$({t}1)",  # the title: a backslash before the quote
        f"`{t}2`",
        f'"; {t}3; "',
        f"'; {t}4; '",
        f'\\\\\\"$({t}5)\\',
        f"a:b\\:c  $({t}6)",  # colons, one escaped; two spaces
        f"$'\\x41' ${{IFS}}$({t}7) %d",
        f"line\n$({t}8)\tx",  # a line break, a tab
        "".join(ESCAPES) + f"$({t}9)",
    ]


def offered(values) -> list[str]:
    """The values TAB offers, sorted: one with a control character in it is not."""
    return sorted({v for v in values if not re.search("[\x00-\x1f\x7f-\x9f]", v)})


@dataclass
class Hostile:
    kaja: Kaja
    ids: list[str]  # the terminal's sessions with hostile titles or ids
    values: dict[str, list[str]]  # by the words before them: what TAB should offer


@pytest.fixture
def hostile(demo_store) -> Hostile:
    """The demo store, and data that tries to run a command or write to the terminal
    in every kind of value TAB offers and every description beside one."""
    (demo_store.root / "ran").mkdir()
    when = "2026-11-29T10:00:00Z"
    ids = [f"0fff{i:04d}-0000-7000-8000-000000000000" for i in range(10)]
    ids += ["0ffe$(touch ran/id1)", "0ffe$(touch ran/id2)"]  # their short ids hold the attack
    titles = [*attacks("title"), "L" * 5000, "one", "two"]
    owners = [*attacks("owner"), "w:" + "9" * 400]
    keys = [*attacks("key"), "k" * 400]
    tags = attacks("tag")
    with closing(sqlite3.connect(demo_store.db)) as db, db:
        rows = [(i, t, "") for i, t in zip(ids, titles, strict=True)]
        rows += [(f"0ffd{n:04d}", "owned", o) for n, o in enumerate(owners)]
        db.executemany("INSERT INTO sessions (id, createdAt, updatedAt, title, owner)"
                       f" VALUES (?, '{when}', '{when}', ?, ?)", rows)  # fmt: skip
        notes = zip(keys, [*attacks("note"), "N" * 3000], [*([t] for t in tags), []], strict=True)
        db.executemany("INSERT INTO notes (owner, key, content, tags) VALUES ('', ?, ?, ?)",
                       [(k, c, json.dumps(t)) for k, c, t in notes])  # fmt: skip
        old_owners = [o for (o,) in db.execute("SELECT owner FROM sessions")]
        old_keys = [k for (k,) in db.execute("SELECT key FROM notes WHERE owner = ''")]
        old_tags = [t for (ts,) in db.execute("SELECT tags FROM notes WHERE owner = ''")
                    for t in json.loads(ts)]  # fmt: skip
    with closing(sqlite3.connect(demo_store.state / "cache.db")) as db, db:
        db.executemany("INSERT INTO shared_cache (namespace, key, value) VALUES (?, 'k', 'v')",
                       [(n,) for n in attacks("ns")])  # fmt: skip
        namespaces = [n for (n,) in db.execute("SELECT DISTINCT namespace FROM shared_cache")]
    with closing(sqlite3.connect(demo_store.state / "web-auth.db")) as db, db:
        names = attacks("name")
        names = [names[7], names[8], "N" * 3000 + ESCAPES[0], *names[:6]]
        users = zip(attacks("user"), names, strict=True)
        db.executemany("INSERT INTO web_users (id, username, display_name, role)"
                       " VALUES (?, ?, ?, 'user')",
                       [(f"x{n}", u, d) for n, (u, d) in enumerate(users)])  # fmt: skip
        usernames = [u for (u,) in db.execute("SELECT username FROM web_users")]
    values = {
        "wipe --owner": offered([o or "terminal" for o in old_owners]),
        "notes show": offered(old_keys),
        "notes --tag": offered(old_tags),
        "cache clear": offered(namespaces),
        "accounts disable": offered(usernames),
    }
    return Hostile(demo_store, ids, values)


def zsh_reads(answer: str, cwd: Path) -> list[tuple[str, str | None]]:
    """The candidates zsh reads in kaja's answer: through zsh's own evaluations, the
    script's `eval $(kaja)` and `_arguments`' `eval ws=( … )` (as _arguments does it),
    then split as `_describe` splits them."""
    p = subprocess.run(["zsh", "-f", "-c", ZSH_READS], input=answer, capture_output=True,
                       text=True, cwd=cwd)  # fmt: skip
    assert p.returncode == 0, p.stderr
    return [_described(item) for item in p.stdout.split("\0")[:-1]]


ZSH_READS = r"""
_arguments() {  # `*: :((…))`: the action, a backslash before a colon dropped, evaluated
  local action=${${1#\*: :}//\\:/:} ws
  eval ws\=\( "${action[3,-3]}" \)
  print -rN -- $ws
}
eval $(cat)
"""


def _described(item: str) -> tuple[str, str | None]:
    """`_describe`: the value up to the first colon not after a backslash, the
    description after it; a backslash keeps the character after it, in both."""
    value, _, description = re.match(r"((?:\\.|[^\\:])*)(:?)(.*)", item, re.S).groups()
    unescape = functools.partial(re.sub, r"\\(.)", r"\1", flags=re.S)
    return unescape(value), unescape(description) if _ else None


@pytest.mark.needs("zsh")
def test_data_in_the_store_reaches_every_shell_as_text(hostile):
    """Every value kind and every description, read by each shell as its script reads
    kaja's answer: the values exactly as stored, descriptions without a control
    character, nothing run; Typer (through kaja's classes) answers the same."""
    base = dict(hostile.kaja.env, COLUMNS="100000")
    for words, incomplete in [*((w.split(), "") for w in hostile.values), (["resume"], "0ff")]:
        envs = requests(base, words, incomplete)
        for env in envs.values():
            assert fast_answer(env) == typer_answer(env), (words, env["_KAJA_COMPLETE"])
        zsh = zsh_reads(fast_answer(envs["zsh"])[0], hostile.kaja.root)
        values = [v for v, _ in zsh]
        bash = fast_answer(envs["bash"])[0].splitlines()
        assert [shlex.split(line) for line in bash] == [[v] for v in values]
        fish = [line.split("\t") for line in fast_answer(envs["fish"])[0].splitlines()]
        assert fish == [[v, h] if h else [v] for v, h in zsh]
        assert all(h is None or h.isprintable() for _, h in zsh), zsh
        if words == ["resume"]:  # short ids, one for each session
            ids = [next(i for i in hostile.ids if i.startswith(v)) for v in values]
            assert sorted(ids) == sorted(hostile.ids)
            shown = dict(zsh)
            assert shown["0fff0000"].startswith("t\\'$(touch ran/title1) · ")
            assert shown["0fff0008"].startswith(r"\x1b]52;c;SGFja2Vk\x07\x1b]2;PWNED\x07")
            assert len(shown["0fff0009"]) < 70  # 5,000 characters, cut
        else:
            assert sorted(values) == hostile.values[" ".join(words)], words
    users = dict(zsh_reads(fast_answer(requests(base, ["accounts", "disable"], "")["zsh"])[0],
                           hostile.kaja.root))  # fmt: skip
    assert users["t\\'$(touch ran/user1)"] == "line $(touch ran/name8) x · user"
    escaped = r"\x1b]52;c;SGFja2Vk\x07\x1b]2;PWNED\x07\x1b[31mRED$(touch ran/n… · user"
    assert users["`touch ran/user2`"] == escaped  # the escape sequences shown, not sent
    assert users['"; touch ran/user3; "'] == "N" * 47 + "… · user"  # 3,000 characters, cut
    assert users["'; touch ran/user4; '"] == "t\\'$(touch ran/name1) · user"
    assert not list((hostile.kaja.root / "ran").iterdir())


def shell_pane(shell: str, kaja: Kaja, tmp_path: Path) -> Tmux:
    """`shell` on a terminal (tmux), kaja's completion loaded from completions/, in kaja's
    folder (where the store's attacks would create ran/…), once its prompt `> ` shows."""
    env = dict(shell_env(kaja), TERM="xterm")
    if shell == "zsh":
        (tmp_path / "zdot").mkdir()
        (tmp_path / "zdot" / ".zshrc").write_text(
            f"autoload -Uz compinit && compinit -u\nsource {SCRIPTS / 'kaja.zsh'}\nPROMPT='> '\n"
        )
        env["ZDOTDIR"] = str(tmp_path / "zdot")
        command = "zsh"
    elif shell == "bash":  # a list at the first TAB, as zsh and fish show one
        (tmp_path / "bashrc").write_text(f"source {SCRIPTS / 'kaja.bash'}\nPS1='> '\n"
                                         "bind 'set show-all-if-ambiguous on'\n")  # fmt: skip
        command = f"bash --noprofile --rcfile {tmp_path / 'bashrc'} -i"
    else:
        init = (f"source {SCRIPTS / 'kaja.fish'}; function fish_greeting; end;"
                " function fish_prompt; echo -n '> '; end; set -g fish_autosuggestion_enabled 0")  # fmt: skip
        command = f"fish --no-config -C {shlex.quote(init)}"
    pane = Tmux(tmp_path, env, command, width=200, height=60, cwd=kaja.root)
    assert pane.screen(lambda s: s.startswith(">")).startswith(">")
    return pane


def row(screen: str, value: str, description: str) -> bool:
    """Whether a line of the screen shows `value`, then `description` beside it."""
    return any(value in line and description in line.split(value, 1)[1]
               for line in screen.splitlines())  # fmt: skip


def prompt_line(screen: str) -> str:
    """The last line with the prompt: what is typed, as the shell shows it ("" while
    the shell is between clearing the line and drawing the prompt again: a capture
    under load can land there)."""
    lines = [line for line in screen.splitlines() if line.startswith("> ")]
    return lines[-1].rstrip() if lines else ""


def nothing_ran_nor_reached_the_terminal(hostile: Hostile, pane: Tmux) -> None:
    assert not list((hostile.kaja.root / "ran").iterdir())
    written = pane.written.read_bytes()
    assert not [e for e in ESCAPES if e.encode() in written]


def a_value_on_the_line_is_the_value(pane: Tmux) -> None:
    """The note key `a:b\\:c  $(touch ran/key6)`, completed then run: kaja gets it whole
    (it shows that note), and the shell runs nothing in it."""
    pane.keys("C-u", "kaja notes show a", "Tab")
    pane.screen(lambda s: "ran/key6" in s)
    pane.keys("Enter")
    assert "ran/note6" in pane.screen(lambda s: "ran/note6" in s)


@pytest.mark.needs("zsh", "tmux")
def test_zsh_tab_runs_nothing_found_in_the_store(hostile, tmp_path):
    pane = shell_pane("zsh", hostile.kaja, tmp_path)
    try:
        # The title, owner, note and account, each on its own: all at once, the
        # attacks leave a quote unmatched and zsh's eval stops before running any.
        for typed in ["resume 0fff0000", "notes show t", "accounts disable t", "wipe --owner t"]:
            pane.keys("C-u", f"kaja {typed}", "Tab")
        pane.keys("C-u", "echo done-$((6 * 7))", "Enter")  # once shown, every TAB was answered
        pane.screen(lambda s: "done-42" in s)
        assert not list((hostile.kaja.root / "ran").iterdir())
        pane.keys("C-u", "kaja resume 0fff000", "Tab")
        screen = pane.screen(lambda s: "0fff0009" in s)
        assert row(screen, "0fff0000", "-- t\\'$(touch ran/title1) · "), screen
        assert row(screen, "0fff0008", r"-- \x1b]52;c;SGFja2Vk\x07\x1b]2;PWNED\x07"), screen
        pane.keys("C-u", "kaja accounts disable ", "Tab")
        screen = pane.screen(lambda s: "marie" in s)
        assert row(screen, "t\\'$(touch ran/user1)", "-- line $(touch ran/name8) x · user")
        pane.keys("C-u", "kaja notes --tag ", "Tab")
        assert "t\\'$(touch ran/tag1)" in pane.screen(lambda s: "profile" in s)
        pane.keys("C-u", "kaja cache clear ", "Tab")
        assert "`touch ran/ns2`" in pane.screen(lambda s: "web_fetch" in s)
        pane.keys("C-u", "kaja wipe --owner ", "Tab")
        assert '"; touch ran/owner3; "' in pane.screen(lambda s: "widget:ab12" in s)
        a_value_on_the_line_is_the_value(pane)
    finally:
        pane.close()
    nothing_ran_nor_reached_the_terminal(hostile, pane)


@pytest.mark.needs("tmux")
def test_bash_tab_offers_what_the_store_holds_quoted(hostile, tmp_path):
    pane = shell_pane("bash", hostile.kaja, tmp_path)
    try:
        # Wait for every value, not the first: bash may still be printing the list.
        user1, user5 = r"t\\\'\$\(touch\ ran/user1\)", r"\\\\\\\"\$\(touch\ ran/user5\)\\"
        pane.keys("kaja accounts disable ", "Tab")
        screen = pane.screen(lambda s: "marie" in s and user1 in s and user5 in s)
        assert user1 in screen and user5 in screen, screen
        pane.keys("C-u", "kaja wipe --owner ", "Tab")
        owner3 = r"\"\;\ touch\ ran/owner3\;\ \""
        screen = pane.screen(lambda s: "widget:ab12" in s and owner3 in s)
        assert owner3 in screen, screen
        a_value_on_the_line_is_the_value(pane)
    finally:
        pane.close()
    nothing_ran_nor_reached_the_terminal(hostile, pane)


@pytest.mark.needs("fish", "tmux")
def test_fish_tab_shows_the_store_as_text(hostile, tmp_path):
    found = fish(hostile.kaja, "kaja accounts disable ")
    assert "t\\'$(touch ran/user1)\tline $(touch ran/name8) x · user" in found
    pane = shell_pane("fish", hostile.kaja, tmp_path)
    try:
        pane.keys("kaja resume 0fff000", "Tab")
        screen = pane.screen(lambda s: "0fff0009" in s)
        assert r"(\x1b]52;c;SGFja2Vk\x07\x1b]2;PWNED\x07" in screen, screen
        a_value_on_the_line_is_the_value(pane)
    finally:
        pane.close()
    nothing_ran_nor_reached_the_terminal(hostile, pane)


@pytest.mark.needs("tmux")
def test_bash_completes_an_owner_id_past_its_colon(demo_store, tmp_path):
    """bash breaks words at `:` and `=` (COMP_WORDBREAKS): the script joins them again."""
    pane = shell_pane("bash", demo_store, tmp_path)
    try:
        for typed, shows in [
            ("kaja wipe --owner telegram:4", "kaja wipe --owner telegram:482913"),
            ("kaja wipe --owner=telegram:48", "kaja wipe --owner=telegram:482913"),
            ("kaja wipe --owner tele", "kaja wipe --owner telegram:"),
            (f"kaja resume --owner telegram:482913 {RECEIPT[:6]}",
             f"kaja resume --owner telegram:482913 {RECEIPT[:8]}"),
            ("kaja search --role=as", "kaja search --role=assistant"),
        ]:  # fmt: skip
            pane.keys("C-u", typed, "Tab")
            screen = pane.screen(lambda s, shows=shows: prompt_line(s) == f"> {shows}")
            assert prompt_line(screen) == f"> {shows}", (typed, screen)
        pane.keys("C-u", "kaja wipe --owner telegram:", "Tab")
        screen = pane.screen(lambda s: "771204" in s)
        assert "482913" in screen and "telegram:telegram" not in screen, screen
    finally:
        pane.close()


@pytest.mark.needs("zsh")
def test_zsh_and_bash_read_any_text_back_as_it_was(tmp_path):
    """Whatever a value or description holds (quotes, backslashes, colons, runs of
    spaces, control characters but NUL, line separators, emoji), zsh reads back
    exactly it through its evaluations, and bash parses each value's line as that
    one word. (No argument can hold a NUL; `values` offers no control character.)"""
    from kaja_cli.completion import fast

    rng = random.Random(26)
    pieces = [*"ab:\\'\"$`;()[]{}*?!#~&|<> =%-,.é·…\u00a0\u2028\u200b🙂", "  ", "$(", "\\'", "''",
              '""', "\\\\", "\\:", "\t", "\n", "\x1b]52;", "\x85", "\x7f"]  # fmt: skip

    def text() -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))

    items = [(text(), text() if rng.random() < 0.7 else None) for _ in range(500)]
    assert zsh_reads(fast.render("zsh", items, {})[0], tmp_path) == items
    bash = subprocess.run(["bash", "-c", """while IFS= read -r l; do eval "printf '%s\\0' $l"; done"""],
                          input=fast.render("bash", items, {})[0], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert not list(tmp_path.iterdir())  # and wrote nothing (a `>` evaluated would)
    assert bash.stdout.split("\0")[:-1] == [v for v, _ in items], bash.stderr
