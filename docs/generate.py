"""Write the manual's reference pages from kaja itself, so that they cannot drift:

- docs/reference/commands.md: every command's `--help`, as kaja prints it (100
  columns, no color), examples included (kaja_cli/render/examples.py);
- docs/reference/settings.md: every settings key, from the registry
  (kaja_cli/core/store/settings/keys.py);
- docs/reference/exit-codes.md: from `kaja_cli.errors.ExitStatus`;
- docs/reference/json.md and docs/reference/json/*.schema.json: each `--json`
  document's shape, inferred from kaja's own output on the demo store
  (docs/json_documents.py);
- man/kaja.1: the manual page (`man kaja`), from the same help texts.

    python docs/generate.py           # write them
    python docs/generate.py --check   # exit 1 when one is stale (tests/cli/test_docs.py)

Run with the Python kaja is installed in (the help is kaja's own output).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WIDTH = 100
BOX = re.compile(r"[╭╮╰╯│─]")


def command_paths() -> list[str]:
    """Every command and group of the app, as typed after `kaja`, in the app's order."""
    import typer.main

    from kaja_cli.app import build

    found = [""]

    def walk(command, path: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                found.append(" ".join([*path, name]))
                walk(sub, [*path, name])

    walk(typer.main.get_command(build()), [])
    return found


def help_text(path: str) -> str:
    """`kaja PATH --help` as kaja prints it to a pipe 100 columns wide."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
    env.update(COLUMNS=str(WIDTH), NO_COLOR="1", TERM="dumb", KAJA_STATE_DIR="/nonexistent",
               KAJA_CONFIG="/nonexistent/settings.toml")  # fmt: skip
    argv = [sys.executable, "-m", "kaja_cli", *path.split(), "--help"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return "\n".join(line.rstrip() for line in out.strip("\n").splitlines()) + "\n"


def old_names() -> dict[str, list[str]]:
    """Each command's options renamed since, hidden from its --help and still
    accepted: "`--before` (now `--until`)", by command path."""
    import typer.main

    from kaja_cli.app import build

    found: dict[str, list[str]] = {}

    def walk(command, path: list[str]) -> None:
        for p in command.params:
            new = re.match(r"The old name of (--[\w-]+)", p.help or "") if p.hidden else None
            if new:
                found.setdefault(" ".join(path), []).append(f"`{p.opts[0]}` (now `{new[1]}`)")
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                walk(sub, [*path, name])

    walk(typer.main.get_command(build()), [])
    return found


def commands_page(helps: dict[str, str]) -> str:
    out = [
        "# Commands",
        "",
        "Every command's `--help`, as kaja prints it. Generated from kaja itself"
        " (`python docs/generate.py`); a test fails when this page is stale.",
        "",
    ]
    old = old_names()
    for path, text in helps.items():
        out += [f"## kaja {path}".rstrip(), "", "```text", text.rstrip(), "```", ""]
        if path in old:
            out += [f"Old names, still accepted: {', '.join(old[path])}.", ""]
    return "\n".join(out)


def settings_page() -> str:
    from kaja_cli.core.store.settings.keys import KEYS, to_text

    out = [
        "# Settings keys",
        "",
        "Every key of `settings.toml`, from kaja's registry of them (generated; how to set them:"
        " [Settings](../guides/settings.md)). `kaja config show` prints each one in effect and"
        " where it came from.",
        "",
        "| Key | What it does | Allowed | Default | Overridden by |",
        "|---|---|---|---|---|",
    ]
    for name, key in KEYS.items():
        default = f"`{to_text(key.default)}`" if key.default is not None else "not set"
        over = ", ".join(f"`{v}`" for v in (key.env, key.flag) if v)
        what = key.description.replace("|", "\\|") + (
            " (a secret: shown masked)" if key.secret else ""
        )
        out.append(f"| `{name}` | {what} | {key.allowed()} | {default} | {over} |")
    return "\n".join(out) + "\n"


def exit_codes_page() -> str:
    from kaja_cli.errors import ExitStatus

    out = [
        "# Exit codes",
        "",
        "Every command ends with one of these (generated from `kaja_cli.errors.ExitStatus`)."
        " A failure is one line on stderr saying what is wrong and what to do;"
        " `KAJA_DEBUG=1` shows the traceback of an unexpected one.",
        "",
        "| Code | Meaning |",
        "|---|---|",
    ]
    out += [f"| {s.value} | {s.meaning} |" for s in ExitStatus]
    return "\n".join(out) + "\n"


def man_page(helps: dict[str, str]) -> str:
    """The manual page: NAME, SYNOPSIS, DESCRIPTION, then each command's help."""
    from kaja_cli import __version__

    def roff(text: str) -> str:
        lines = []
        for line in text.splitlines():
            line = BOX.sub(" ", line).rstrip().replace("\\", "\\e")
            if line.startswith((".", "'")):
                line = "\\&" + line
            lines.append(line.replace("-", "\\-"))
        return "\n".join(lines)

    out = [
        f'.TH KAJA 1 "{release_date()}" "kaja {__version__}" "User Commands"',
        ".SH NAME",
        "kaja \\- look after the local storage of Kaja, a personal AI agent",
        ".SH SYNOPSIS",
        ".B kaja",
        "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        "kaja lists, resumes, searches and exports Kaja's conversations, reports and resets"
        " usage, diagnoses problems, backs the store up and deletes data safely. The manual"
        " is in the docs/ folder of its repository.",
    ]
    for path, text in helps.items():
        out += [
            f".SH KAJA {path.upper()}" if path else ".SH USAGE",
            ".nf",
            roff(text),
            ".fi",
        ]
    out += [
        ".SH EXIT STATUS",
        "0 done, 1 failed, 2 bad usage, 3 not found, 4 busy, 5 refused, 130 interrupted.",
    ]
    return "\n".join(out) + "\n"


def _documents():
    """docs/json_documents.py, loaded by its path (docs/ is not put on sys.path: the
    tests have a `generate` of completions/ too)."""
    import importlib.util

    name = "kaja_docs_json_documents"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs/json_documents.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def json_documents() -> dict[str, object]:
    """Each command's `--json` document on a fresh copy of the demo store."""
    import json
    import shutil
    import tempfile

    DEMO_NOW, DOCUMENTS = _documents().DEMO_NOW, _documents().DOCUMENTS

    base = Path(tempfile.mkdtemp(prefix="kaja-docs-"))
    try:
        template = base / "template"
        run_kaja(template, ["demo", "--seed", "1", "--now", DEMO_NOW])
        out = {}
        for name, (argv, setup) in DOCUMENTS.items():
            here = base / "run"
            shutil.rmtree(here, ignore_errors=True)
            shutil.copytree(template, here, symlinks=True)
            for line in setup:
                subprocess.run(["bash", "-c", line.format(here=here)], env=kaja_env(here),
                               cwd=here, check=True, capture_output=True)  # fmt: skip
            out[name] = json.loads(run_kaja(here, [a.format(here=here) for a in argv]))
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def kaja_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAJA_")}
    env.update(KAJA_STATE_DIR=str(root / "state"), HOME=str(root / "home"), NO_COLOR="1",
               KAJA_CONFIG=str(root / "home/.config/kaja/settings.toml"),
               PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")  # fmt: skip
    return env


def run_kaja(root: Path, argv: list[str]) -> str:
    root.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "kaja_cli", *argv], env=kaja_env(root), cwd=root,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)  # fmt: skip
    if p.returncode not in (0, 1):  # doctor: 1 when a check is an error
        raise SystemExit(f"kaja {' '.join(argv)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def json_pages(documents: dict[str, object]) -> dict[Path, str]:
    import json

    DOCUMENTS, schema_of = _documents().DOCUMENTS, _documents().schema_of

    out: dict[Path, str] = {}
    page = [
        "# JSON documents",
        "",
        "Every command with `--json` prints one JSON document on stdout. Below, each one's",
        "shape as a JSON Schema: generated from what kaja prints on the demo store",
        "(`kaja demo --seed 1`); a test validates kaja's output against each on every change.",
        "Keys may be added in a later release (a newer agent's columns appear under their own",
        "names); a key is not removed or renamed without a note in the changelog. Times are",
        "ISO 8601 UTC; stored columns keep the seed's names (camelCase for the conversation",
        "store, snake_case for the ledger).",
        "",
    ]
    for name, doc in documents.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                  "title": f"kaja {name} --json", **schema_of([doc])}  # fmt: skip
        text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        file = f"{name.replace(' ', '-').replace('--', '')}.schema.json"
        out[ROOT / "docs/reference/json" / file] = text
        argv = " ".join(DOCUMENTS[name][0])
        page += [f"## kaja {name}", "", f"`kaja {argv}` · schema: [`json/{file}`](json/{file})",
                 "", '??? note "The schema"', "", "    ```json"]  # fmt: skip
        page += [f"    {line}" for line in text.rstrip().splitlines()] + ["    ```", ""]
    out[ROOT / "docs/reference/json.md"] = "\n".join(page)
    return out


def release_date() -> str:
    """The date of the newest release in CHANGELOG.md (`## [0.1.0] - 2026-12-06`)."""
    found = re.search(
        r"^## \[\d[^\]]*\] - (\d{4}-\d{2}-\d{2})", (ROOT / "CHANGELOG.md").read_text(), re.M
    )
    return found.group(1) if found else "unreleased"


def pages() -> dict[Path, str]:
    helps = {path: help_text(path) for path in command_paths()}
    return {
        ROOT / "docs/reference/commands.md": commands_page(helps),
        ROOT / "docs/reference/settings.md": settings_page(),
        ROOT / "docs/reference/exit-codes.md": exit_codes_page(),
        ROOT / "man/kaja.1": man_page(helps),
        **json_pages(json_documents()),
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in pages().items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if check and stale:
        print(f"stale: {', '.join(map(str, stale))}; run python docs/generate.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
