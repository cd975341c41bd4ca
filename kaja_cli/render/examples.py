"""The examples every command's `--help` ends with: the same lines the manual shows
(docs/reference/commands.md is generated from them), and each one runs in a test
against the store `kaja demo` writes (tests/cli/test_examples.py).

A comment after `#` says what the line does; `# on a terminal` marks one that
needs a terminal (the test checks it says so, exit 2, where there is none).
`app.py` puts them under the help text when a help screen is drawn: nothing
here is imported at start-up.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "kaja sessions  # your conversations, newest first",
        "kaja search tomato  # every message, best match first",
        "kaja doctor --redact  # a report to paste into a support ticket",
    ),
    "resume": (
        "kaja resume 01a226e4  # a session by any unique prefix of its id",
        "kaja resume -c --tail 20  # the latest one, its last 20 entries",
        "kaja resume 01a226e4 --json | jq .session.title",
    ),
    "search": (
        "kaja search tomato heat  # messages holding both words",
        "kaja search --all-owners -n 5 budget",
        "kaja search --fts 'tomato OR basil' --role user",
        "kaja search --notes diet --all-owners",
    ),
    "browse": (
        "kaja browse  # on a terminal: type, pick, Enter prints the id",
        'kaja resume "$(kaja browse)"  # on a terminal',
    ),
    "tasks": (
        "kaja tasks  # the agent's background tasks",
        "kaja tasks --status running --json",
    ),
    "schedules": (
        "kaja schedules  # every schedule, soonest first",
        "kaja schedules --due  # what the scheduler would run now",
    ),
    "triggers": (
        "kaja triggers  # secrets never shown, tokens masked",
        "kaja triggers --kind webhook --json",
    ),
    "doctor": (
        "kaja doctor  # every check; exit 1 when one is an error",
        "kaja doctor --redact  # safe to paste into a support ticket",
        "kaja doctor --quick --json",
        "kaja doctor --check orphans --check images",
    ),
    "wipe": (
        "kaja wipe --dry-run  # what would be deleted, with sizes",
        "kaja wipe --owner telegram:482913 --dry-run",
        "kaja wipe --owner telegram:482913 --yes  # forget one person",
    ),
    "backup": (
        "kaja backup  # kaja-backup-<time>.tar.gz here",
        "kaja backup -o store.tar  # uncompressed",
    ),
    "restore": (
        "kaja backup -o b.tar.gz && kaja restore b.tar.gz --dry-run",
        "kaja restore --finish  # complete one that was interrupted",
    ),
    "optimize": (
        "kaja optimize  # search index, ANALYZE, checkpoint",
        "kaja optimize --vacuum  # and VACUUM, when nothing has the store open",
    ),
    "demo": (
        "KAJA_STATE_DIR=$(mktemp -d) kaja demo  # a sample store somewhere new",
        "KAJA_STATE_DIR=$(mktemp -d) kaja demo --seed 2 --sessions 50",
    ),
    "migrate": ("kaja migrate --dry-run  # what an older install left, and where it goes",),
    "sessions": (
        "kaja sessions  # your 20 newest",
        "kaja sessions --all-owners -n 0  # everyone's, all of them",
        "kaja sessions --since 7d --model gpt-4o --json",
    ),
    "sessions list": (
        "kaja sessions list --archived",
        "kaja sessions list --owner telegram:482913",
    ),
    "sessions delete": (
        "kaja sessions delete 01a226e4 --yes",
        "kaja sessions delete 01a226e4 01a22652 --yes --json",
    ),
    "sessions export": (
        "kaja sessions export 01a22652 -f html -o tomato.html",
        "kaja sessions export 01a22652 -f json | jq '.messages | length'",
        "kaja sessions export --all -o exported/  # one Markdown file per session",
        "kaja sessions export 01a22652 --redact  # fit for a bug report",
    ),
    "sessions prune": (
        "kaja sessions prune --until 90d --dry-run",
        "kaja sessions prune --empty --yes",
    ),
    "sessions rename": ("kaja sessions rename 01a22652 'Tomatoes in the heat'",),
    "sessions archive": (
        "kaja sessions archive 01a226e4  # out of the listing, kept",
        "kaja sessions list --archived",
    ),
    "sessions unarchive": ("kaja sessions archive 01a226e4 && kaja sessions unarchive 01a226e4",),
    "sessions stats": (
        "kaja sessions stats  # how many, how big, by model",
        "kaja sessions stats --owner telegram:482913 --json",
    ),
    "notes": (
        "kaja notes  # what the agent remembers about you",
        "kaja notes --all-owners --json",
    ),
    "notes list": ("kaja notes list --tag diet --all-owners",),
    "notes show": ("kaja notes show budget-q4",),
    "notes forget": (
        "kaja notes forget budget-q4 --dry-run",
        "kaja notes forget budget-q4 --yes",
    ),
    "notes export": ("kaja notes export -o notes.json",),
    "runs": (
        "kaja runs  # the agent's turns, newest first",
        "kaja runs --status failed --since 7d",
        "kaja runs --subagents --json",
    ),
    "runs show": ("kaja runs show run_7f3a  # the run as a tree",),
    "reviews": (
        "kaja reviews  # the runs flagged for you to look at",
        "kaja reviews --status needs-review --json",
    ),
    "reviews done": ("kaja reviews done run_7c6a --note 'times fixed'",),
    "learning": ("kaja learning  # recipes and the run each was learned from",),
    "learning fixes": ("kaja learning fixes",),
    "artifacts": (
        "kaja artifacts  # and whether each file is there",
        "kaja artifacts --missing",
    ),
    "artifacts show": ("kaja artifacts show a4d5e6",),
    "usage": (
        "kaja usage  # tokens and calls by model, failing tools",
        "kaja usage --by day --since 30d",
        "kaja usage --json | jq .totals",
    ),
    "usage reset": (
        "kaja usage reset --dry-run  # what would be deleted",
        "kaja usage reset --until 30d --yes",
    ),
    "sync": ("kaja sync  # push, then pull, with [usage] postgres_url",),
    "sync push": ("kaja sync push",),
    "sync pull": ("kaja sync pull",),
    "sync status": ("kaja sync status --json",),
    "stats": ("kaja stats queries  # kaja's own queries, heaviest first",),
    "stats queries": ("kaja stats queries --database cache",),
    "stats slow": ("kaja stats slow --json",),
    "cache": ("kaja cache  # the shared cache's namespaces",),
    "cache prune": (
        "kaja cache prune --dry-run  # the expired entries",
        "kaja cache prune --yes",
    ),
    "cache clear": ("kaja cache clear embeddings --dry-run",),
    "accounts": ("kaja accounts  # the web accounts, no secrets",),
    "accounts sessions": ("kaja accounts sessions marie",),
    "accounts revoke": ("kaja accounts revoke ana --yes  # sign out everywhere",),
    "accounts disable": ("kaja accounts disable ana --yes",),
    "accounts enable": ("kaja accounts enable guest",),
    "accounts remove": ("kaja accounts remove guest --yes",),
    "config": ("kaja config paths  # where everything is, and why",),
    "config paths": ("kaja config paths --json | jq -r .paths.shared_db.path",),
    "config show": ("kaja config show  # every key, its value, where it came from",),
    "config get": ("kaja config get memory.mode",),
    "config set": (
        "kaja config set memory.statementTimeout 30",
        "kaja config set memory.mode cloud",
    ),
    "config unset": ("kaja config unset memory.statementTimeout",),
    "config edit": ("kaja config edit  # on a terminal: in $VISUAL or $EDITOR",),
}


def epilog(command_path: str) -> str | None:
    """The Examples section of `kaja …`'s help (`command_path` as click names it), or None."""
    key = command_path.removeprefix("kaja").strip()
    lines = EXAMPLES.get(key)
    if not lines:
        return None
    return "Examples:\n\n" + "\n".join(f"  $ {line}" for line in lines)
