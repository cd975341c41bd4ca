"""The manual cannot drift from kaja (docs/generate.py): its reference pages and the
man page are what kaja prints now, every command and settings key has its entry,
each `--json` document validates against its published schema on the demo store,
and no user document names an internal issue. Its examples run in test_readme.py."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    """A module of docs/ under a name of its own (completions/ has a `generate` too)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


documents = _load("kaja_docs_json_documents", ROOT / "docs/json_documents.py")
DEMO_NOW, DOCUMENTS = documents.DEMO_NOW, documents.DOCUMENTS


def test_the_reference_pages_and_the_man_page_are_current():
    """What `python docs/generate.py` writes from the help texts and the registries."""
    generate = _load("kaja_docs_generate", ROOT / "docs/generate.py")
    helps = {path: generate.help_text(path) for path in generate.command_paths()}
    expected = {
        "docs/reference/commands.md": generate.commands_page(helps),
        "docs/reference/settings.md": generate.settings_page(),
        "docs/reference/exit-codes.md": generate.exit_codes_page(),
        "man/kaja.1": generate.man_page(helps),
    }
    stale = [name for name, text in expected.items() if (ROOT / name).read_text() != text]
    assert stale == [], f"stale: {stale}; run python docs/generate.py"


def test_every_command_option_and_key_has_its_entry():
    import typer.main

    from kaja_cli.app import build
    from kaja_cli.core.store.settings.keys import KEYS

    commands = (ROOT / "docs/reference/commands.md").read_text()
    missing = []

    def walk(command, path):
        if f"## kaja {path}".rstrip() + "\n" not in commands:
            missing.append(path)
        for option in (o for p in command.params for o in p.opts if o.startswith("--")):
            section = commands.split(f"## kaja {path}".rstrip() + "\n", 1)[-1].split("\n## ", 1)[0]
            if option not in section:
                missing.append(f"{path} {option}")
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(build()), "")
    assert missing == []
    settings = (ROOT / "docs/reference/settings.md").read_text()
    assert [k for k in KEYS if f"| `{k}` |" not in settings] == []


def test_every_json_document_has_a_published_schema():
    names = {f"{n.replace(' ', '-').replace('--', '')}.schema.json" for n in DOCUMENTS}
    assert names == {p.name for p in (ROOT / "docs/reference/json").glob("*.schema.json")}
    page = (ROOT / "docs/reference/json.md").read_text()
    assert all(f"## kaja {name}\n" in page for name in DOCUMENTS)


@pytest.fixture(scope="module")
def docs_store(tmp_path_factory) -> Path:
    from tests.conftest import Kaja

    k = Kaja(tmp_path_factory.mktemp("docs-demo"))
    r = k("demo", "--seed", "1", "--now", DEMO_NOW)
    assert r.code == 0, r
    return k.state


@pytest.mark.parametrize("name", DOCUMENTS)
def test_each_json_document_validates_against_its_schema(name, kaja, docs_store, tmp_path):
    import subprocess

    import jsonschema

    from tests.conftest import KAJA

    argv, setup = DOCUMENTS[name]
    shutil.copytree(docs_store, kaja.state, symlinks=True)
    env = dict(kaja.env, PATH=f"{Path(KAJA).parent}:{kaja.env['PATH']}")
    for line in setup:
        subprocess.run(["bash", "-c", line.format(here=tmp_path)], env=env, check=True,
                       capture_output=True)  # fmt: skip
    r = kaja(*(a.format(here=tmp_path) for a in argv))
    assert r.code in (0, 1), r  # doctor: 1 when a check is an error
    file = f"{name.replace(' ', '-').replace('--', '')}.schema.json"
    schema = json.loads((ROOT / "docs/reference/json" / file).read_text())
    jsonschema.validate(json.loads(r.out), schema)


def test_no_user_document_names_an_internal_issue():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md")]
    found = [f"{p.relative_to(ROOT)}: {m.group()}" for p in pages
             for m in re.finditer(r"\bissues? #?[0-9]+\b", p.read_text())]  # fmt: skip
    assert found == []


def test_the_wheel_installs_the_man_page(tmp_path):
    """`man kaja` after `pipx install .`: the page is in the wheel's share/man/man1."""
    import subprocess
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w",
                    str(tmp_path)], check=True, capture_output=True)  # fmt: skip
    (wheel,) = tmp_path.glob("kaja_cli-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/data/share/man/man1/kaja.1") for n in names), names[-5:]


def test_the_readme_stays_short():
    """What kaja is, install, try, day one, where data lives, links: the manual is docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
