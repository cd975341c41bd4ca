"""The README's two commands are what CI runs: CI proves the README; and every
kaja example in it runs against the store the README's own `kaja demo` writes
(its ids and owners exist there, whenever that demo runs)."""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.tools import require

ROOT = Path(__file__).resolve().parents[2]
pytest_plugins = ["tests.support.pg"]  # the sync examples run against a real PostgreSQL


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_the_two_commands():
    blocks = sh_blocks()
    assert "kaja demo && kaja sessions" in blocks[0]
    assert "mktemp -d" in blocks[0]  # a throwaway state dir
    assert "pytest" in blocks[1]


def test_ci_runs_exactly_the_readme_commands():
    ci = (ROOT / ".ci/run").read_text()
    assert sh_blocks()[1] in ci.splitlines()  # the test command, verbatim, on its own line
    assert sh_blocks()[0] in ci  # and the first one, in a subshell of its own


def test_ci_lists_the_slowest_tests_and_runs_every_kill_point():
    """CI prints the 15 slowest tests of the README's run, then runs the kill
    points the README's run leaves out (pyproject's addopts: not exhaustive)."""
    lines = (ROOT / ".ci/run").read_text().splitlines()
    readme = lines.index(sh_blocks()[1])
    assert 'export PYTEST_ADDOPTS="--durations=15"' in lines[:readme]
    assert "pytest -q -n auto -m exhaustive" in lines[readme + 1 :]
    assert "-m 'not exhaustive'" in (ROOT / "pyproject.toml").read_text()


def test_the_readme_names_the_oldest_versions_ci_tests():
    """Each run-time dependency's lower bound (what .ci/run's second run installs)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("deps", ROOT / ".ci/deps.py")
    deps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(deps)
    text = " ".join((ROOT / "README.md").read_text().split())
    assert deps.bounds() and all(f"{n} {v}," in text or f"{n} {v} " in text
                                 for n, v in deps.bounds().items()), deps.bounds()  # fmt: skip


# --- every example runs ----------------------------------------------------------------------
# What an example exits with when it is not 0: the documented refusal without a terminal,
# and what needs a terminal (the test has none: it says so, exit 2).
REFUSED_WITHOUT_A_TERMINAL = {"kaja usage reset", "kaja wipe"}
NEEDS_A_TERMINAL = ("kaja browse", 'kaja resume "$(kaja browse)"')


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples() -> list[str]:
    """Every kaja command line a user is shown: in the README and the manual (`$ kaja …`
    in any block, `kaja …` in sh blocks), and at the end of every `--help`
    (kaja_cli/render/examples.py); comments removed, each once."""
    from kaja_cli.render.examples import EXAMPLES

    out = [line for lines in EXAMPLES.values() for line in lines]
    for page in DOCS:
        for lang, body in re.findall(r"```(\w*)\n(.*?)\n```", page.read_text(), re.S):
            for line in body.splitlines():
                if line.startswith("$ kaja "):
                    out.append(line[2:])
                elif lang == "sh" and line.startswith("kaja "):
                    out.append(line)
    return list(dict.fromkeys(re.sub(r"\s+# .*$", "", line).strip() for line in out))


def test_the_readme_has_its_examples():
    found = examples()
    assert len(found) > 100
    assert "kaja resume 01a226e4 --tail 20" in found
    assert "kaja wipe --owner telegram:482913 --dry-run" in found


def test_every_command_ends_its_help_with_examples():
    """Each command and group of the app has its Examples, and no example names a command
    that is not there."""
    import typer.main

    from kaja_cli.app import build
    from kaja_cli.render.examples import EXAMPLES

    found = [""]

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                found.append(" ".join([*path, name]))
                walk(sub, [*path, name])

    walk(typer.main.get_command(build()), [])
    assert sorted(found) == sorted(EXAMPLES)
    for key, lines in EXAMPLES.items():
        assert 1 <= len(lines) <= 4, key
        assert any(f"kaja {key}".rstrip() in line for line in lines), key


def readme_demo_command() -> str:
    """The `kaja demo …` of the README's first command, as a new user runs it."""
    (demo,) = [c.strip() for c in sh_blocks()[0].split("&&") if c.strip().startswith("kaja demo")]
    return demo


@pytest.fixture(scope="module")
def readme_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state dir the README's own demo command fills, now (its times follow the clock)."""
    import subprocess

    from tests.conftest import KAJA, Kaja

    k = Kaja(tmp_path_factory.mktemp("readme-demo"))
    p = subprocess.run(
        ["bash", "-c", readme_demo_command()], env=dict(k.env, PATH=f"{Path(KAJA).parent}:{k.env['PATH']}"),
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return k.state


def readme_ids() -> set[str]:
    """Every session, message or account id (or prefix of one) and tool call id the README
    and the manual show: 8+ hex digits with a digit and a letter among them, or `call_` and
    12 of them."""
    text = "\n".join(page.read_text() for page in DOCS)
    ids = set(re.findall(r"\bcall_[0-9a-f]{12}\b", text))
    for token in re.findall(r"(?<![\w-])[0-9a-f]{8}(?:-[0-9a-f]{4}){0,4}(?![\w-])", text):
        if re.search(r"[0-9]", token) and re.search(r"[a-f]", token):
            ids.add(token)
    return ids


def test_every_id_in_the_readme_exists_after_its_demo_command(readme_store, tmp_path):
    """Not only in the examples that run: the sample outputs too (`kaja search`'s,
    `kaja accounts`'), so a reader can find each one in the demo store."""
    import shutil
    import sqlite3

    copy = tmp_path / "state"  # opening the files writes beside them: not in the template
    shutil.copytree(readme_store, copy, symlinks=True)

    found = readme_ids()
    assert {"01a226e4", "01a125af", "call_7327e5920673"} <= found  # the pattern finds them
    known: list[str] = []
    with closing(sqlite3.connect(copy / "kaja.db")) as c, c:
        for query in ("SELECT id FROM sessions", "SELECT id FROM messages",
                      'SELECT id FROM tool_calls', 'SELECT "callId" FROM tool_calls'):  # fmt: skip
            known += [r[0] for r in c.execute(query)]
    with closing(sqlite3.connect(copy / "web-auth.db")) as c, c:
        known += [r[0] for r in c.execute("SELECT id FROM web_users")]
    missing = sorted(i for i in found if not any(k.startswith(i) for k in known))
    assert missing == [], f"ids in README.md that `{readme_demo_command()}` does not write"


@pytest.mark.parametrize("line", examples())
def test_each_readme_example_runs_against_the_readme_demo_store(
    line, kaja, readme_store, tmp_path, request
):
    """Each on its own copy of the store the README's own demo command writes:
    the ids and owners the README uses exist there. Sync's examples get a real
    PostgreSQL of their own (USAGE_POSTGRES_URL, as the README sets it up)."""
    import shutil
    import subprocess

    from tests.conftest import KAJA

    if "| jq" in line:
        require("jq")
    shutil.copytree(readme_store, kaja.state, symlinks=True)
    env = dict(kaja.env, PATH=f"{Path(KAJA).parent}:{kaja.env['PATH']}",
               VISUAL="true", EDITOR="true")  # fmt: skip
    if line.startswith("kaja sync") or "--all-machines" in line:
        env["USAGE_POSTGRES_URL"] = request.getfixturevalue("pg").url
    if "--database-url 'postgresql://kaja@db.example.org/kaja'" in line:
        # Cloud mode's example, on a real (empty) server of its own: nothing listed.
        url = request.getfixturevalue("pg").url
        line = line.replace("'postgresql://kaja@db.example.org/kaja'", f"'{url}'")
    p = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line}"], env=env, cwd=tmp_path, capture_output=True,
        text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    if line.startswith(NEEDS_A_TERMINAL):
        assert p.returncode == 2 and "browse needs a terminal" in p.stderr, (line, p.stderr)
        return
    expected = 5 if line in REFUSED_WITHOUT_A_TERMINAL else 0
    assert p.returncode == expected, (line, p.stdout[-1000:], p.stderr[-1000:])
    assert "Traceback" not in p.stderr
