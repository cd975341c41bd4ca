"""`--dry-run`, one meaning in every command that writes: it says what would be
done, exits 0, and changes nothing on disk (the store's files byte for byte,
no -wal or -shm left, no settings file, no folder, not even kaja's own query
profile). With --json it prints the document the real run prints, with
`"dry_run": true`.

Which commands write is declared here, not found: a new command fails
`test_every_command_is_classified` until someone says which it is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Kaja

DRY_RUN_HELP = "Show what would be done; change nothing."

# Commands that change the store, the settings or a side database: each has --dry-run.
WRITERS = {
    "wipe", "restore", "optimize", "migrate",
    "sessions delete", "sessions prune", "sessions rename", "sessions archive",
    "sessions unarchive",
    "notes forget",
    "reviews done",
    "usage reset",
    "sync", "sync push", "sync pull",
    "cache prune", "cache clear",
    "accounts revoke", "accounts disable", "accounts enable", "accounts remove",
    "config set", "config unset",
}  # fmt: skip

# Commands that write, but where a dry run has nothing to show: why, for each.
NO_DRY_RUN = {
    "backup": "writes only the archive it is asked for; the store is read, not changed",
    "sessions export": "writes only the file named by -o (or stdout)",
    "notes export": "writes only the file named by -o (or stdout)",
    "demo": "writes only where there is nothing yet: an existing store is refused (exit 5)",
    "config edit": "interactive: nothing is saved unless you save a valid edit in the editor",
    "browse": "interactive: each change in it (archive, rename, delete) is asked for first",
    "doctor": "writes only with --fix; without --fix it is the dry run (each repair listed)",
    "search": "writes only with --reindex (the search index, rebuilt from the messages)",
}

# Commands that only read.
READERS = {
    "resume", "tasks", "schedules", "triggers",
    "sessions", "sessions list", "sessions ls", "sessions stats",
    "notes", "notes list", "notes ls", "notes show",
    "runs", "runs show", "reviews", "learning", "learning fixes", "artifacts", "artifacts show",
    "usage", "sync status", "stats", "stats queries", "stats slow",
    "cache", "accounts", "accounts sessions",
    "config", "config paths", "config show", "config get",
}  # fmt: skip


def commands() -> dict[str, list]:
    """Every command of the app (groups too: a group's callback may run), by path,
    with its options."""
    import typer.main

    from kaja_cli.app import build

    found: dict[str, list] = {}

    def walk(command, path: str) -> None:
        if path:
            found[path] = command.params
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(build()), "")
    return found


def test_every_command_is_classified():
    every = set(commands())
    assert WRITERS.isdisjoint(READERS) and WRITERS.isdisjoint(NO_DRY_RUN)
    assert set(NO_DRY_RUN).isdisjoint(READERS)
    unclassified = every - WRITERS - READERS - set(NO_DRY_RUN)
    assert unclassified == set(), "say which: add each to WRITERS, NO_DRY_RUN or READERS"
    assert (WRITERS | READERS | set(NO_DRY_RUN)) - every == set(), "gone: remove them here"


def test_every_command_that_writes_has_dry_run_with_one_meaning():
    found = commands()
    dry = {path for path, params in found.items()
           if any("--dry-run" in getattr(p, "opts", ()) for p in params)}  # fmt: skip
    assert WRITERS - dry == set(), "a command that writes lacks --dry-run"
    assert dry - WRITERS == set(), "--dry-run on a command not declared a writer"
    helps = {p.help for path in dry for p in found[path] if "--dry-run" in getattr(p, "opts", ())}
    assert helps == {DRY_RUN_HELP}


# --- each new --dry-run changes nothing ---------------------------------------------------------
BACKUP = "01a226e4-d260-72a8-ab71-1343220d672b"  # "Nightly backup with rsync", the terminal's
TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # "Tomato leaves curling in the heat"
OPEN_REVIEW = "run_7c6ab3fa7aa7e1fab9d7"  # needs-review
SETTINGS = "# mine\n[memory]\nstatementTimeout = 30\n"


def fingerprint(root: Path) -> dict[str, str]:
    """Every file and folder below `root`, each file's sha256 (-wal and -shm included)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def store(demo_store: Kaja) -> Kaja:
    """The demo store with a settings file of the user's own."""
    demo_store.config.parent.mkdir(parents=True)
    demo_store.config.write_text(SETTINGS)
    return demo_store


CASES = {
    "optimize": (["optimize"], "kaja: dry run: kaja.db: would merge the search index"
                 " (12 segments), run ANALYZE\nkaja: dry run: cache.db: would run ANALYZE\n"),
    "optimize --vacuum": (["optimize", "--vacuum"], "kaja: dry run: kaja.db: would merge the"
                          " search index (12 segments), run ANALYZE, VACUUM (0 B free inside)\n"),
    "sessions rename": (["sessions", "rename", BACKUP[:8], "Backups"],
                        f"kaja: dry run: would rename {BACKUP}: Nightly backup with rsync →"
                        " Backups; nothing was changed\n"),
    "sessions archive": (["sessions", "archive", BACKUP[:8], TOMATO[:8]],
                         f"kaja: dry run: would archive {BACKUP}  Nightly backup with rsync\n"
                         f"kaja: dry run: would archive {TOMATO}  Tomato leaves curling in the"
                         " heat\nkaja: dry run: nothing was changed\n"),
    "sessions unarchive": (["sessions", "unarchive", BACKUP[:8]],
                           f"kaja: {BACKUP} was already unarchived\n"
                           "kaja: dry run: nothing was changed\n"),
    "sessions delete": (["sessions", "delete", BACKUP[:8], TOMATO[:8]],
                        "kaja: dry run: would delete 2 sessions (16 messages, 3 tool calls,"
                        " 2 model calls, 19 events) and 1 image folder; nothing was deleted\n"),
    "reviews done": (["reviews", "done", OPEN_REVIEW[:8], "--note", "seen"],
                     f"kaja: dry run: would mark the review of run {OPEN_REVIEW} complete with"
                     " note: seen; nothing was changed\n"),
    "config set": (["config", "set", "memory.statementTimeout", "45"],
                   "kaja: dry run: would set memory.statementTimeout = 45 in {config} line 3"
                   " (was 30); nothing was changed\n"),
    "config unset": (["config", "unset", "memory.statementTimeout"],
                     "kaja: dry run: would remove memory.statementTimeout from {config}; the"
                     " default applies: 60; nothing was changed\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_a_dry_run_says_what_it_would_do_and_changes_nothing(store, name):
    argv, said = CASES[name]
    before = fingerprint(store.root)
    r = store(*argv, "--dry-run")
    assert r.code == 0, r
    assert said.format(config=store.config) in r.err, r
    last = r.err.splitlines()[-1]
    assert last.startswith("kaja: dry run: ") and last.endswith(
        ("nothing was changed", "nothing was deleted")
    ), r
    assert fingerprint(store.root) == before


# config set and unset have no --json.
@pytest.mark.parametrize(
    "name", [n for n in CASES if n != "optimize --vacuum" and "config" not in n]
)
def test_a_dry_runs_json_is_the_real_runs_document(store, tmp_path, name):
    argv, _ = CASES[name]
    before = fingerprint(store.root)
    dry = store(*argv, "--dry-run", "--json")
    assert dry.code == 0, dry
    assert fingerprint(store.root) == before
    real = Kaja(tmp_path / "real")
    shutil.copytree(store.state, real.state, symlinks=True)
    shutil.copytree(store.config.parent, real.config.parent)
    done = real(*argv, "--yes", "--json") if name == "sessions delete" else real(*argv, "--json")
    assert done.code == 0, done
    dry_doc = json.loads(dry.out.replace(str(store.state), str(real.state)))
    done_doc = json.loads(done.out)
    assert dry_doc.pop("dry_run") is True and done_doc.pop("dry_run") is False
    assert dry_doc.keys() == done_doc.keys()
    if name in ("sessions rename", "sessions archive", "sessions unarchive", "sessions delete"):
        assert dry_doc == done_doc  # what would be done is what was done
    if name == "reviews done":
        for moment in ("reviewed_at", "updated_at"):
            dry_doc["review"].pop(moment), done_doc["review"].pop(moment)
        assert dry_doc == done_doc


def test_config_set_dry_run_makes_no_settings_file_or_folder(kaja):
    r = kaja("config", "set", "memory.statementTimeout", "45", "--dry-run")
    assert r.code == 0, r
    assert r.err == (f"kaja: dry run: would set memory.statementTimeout = 45 in {kaja.config}"
                     " line 2; nothing was changed\n")  # fmt: skip
    assert not kaja.config.parent.exists() and not kaja.state.exists()


def test_a_dry_run_refuses_what_the_real_run_refuses(store):
    before = fingerprint(store.root)
    r = store("sessions", "rename", "nope", "x", "--dry-run")
    assert (r.code, r.err) == (3, "kaja: no session 'nope': `kaja sessions` lists them\n")
    r = store("reviews", "done", "nope", "--dry-run")
    assert r.code == 3 and r.err.startswith("kaja: no review of run 'nope'")
    r = store("config", "set", "memory.nope", "1", "--dry-run")
    assert r.code == 2
    r = store("sessions", "rename", BACKUP[:8], "   ", "--dry-run")
    assert (r.code, r.err) == (2, "kaja: the new title is empty: give the title in quotes\n")
    assert fingerprint(store.root) == before


def test_every_dry_run_leaves_the_query_profile_alone(store):
    """A dry run writes no profile either (every other command adds its queries to db-stats.db)."""
    before = fingerprint(store.root)
    r = store("sessions", "prune", "--older-than", "1d", "--dry-run")
    assert r.code == 0, r
    r = store("usage", "reset", "--dry-run")
    assert r.code == 0, r
    assert fingerprint(store.root) == before
    assert store("sessions", "list").code == 0
    assert fingerprint(store.root) != before  # a reader records its queries: the test can fail
