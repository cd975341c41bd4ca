"""The `--json` documents of the manual's reference (docs/reference/json.md): each
command's document on the demo store, and a JSON Schema of its shape inferred
from it. `docs/generate.py` writes the schemas; tests/cli/test_docs.py runs every
command below on a fresh demo store and validates what it prints against them.

The setup lines run first; `{here}` in them and in the arguments is a scratch folder.
"""

from __future__ import annotations

DEMO_NOW = "2026-11-29T12:00:00Z"

# command as named in the manual: (argv after `kaja`, setup shell lines)
DOCUMENTS: dict[str, tuple[list[str], list[str]]] = {
    "resume": (["resume", "01a226e4", "--json"], []),
    "search": (["search", "tomato", "--all-owners", "--json"], []),
    "tasks": (["tasks", "--json"], []),
    "schedules": (["schedules", "--json"], []),
    "triggers": (["triggers", "--json"], []),
    "doctor": (["doctor", "--json"], []),
    "wipe": (["wipe", "--dry-run", "--json"], []),
    "wipe --owner": (["wipe", "--owner", "telegram:482913", "--yes", "--json"], []),
    "backup": (["backup", "-o", "{here}/b.tar", "--json"], []),
    "restore": (
        ["restore", "{here}/b.tar", "--dry-run", "--json"],
        ["kaja backup -o {here}/b.tar"],
    ),
    "optimize": (["optimize", "--json"], []),
    "demo": (["--state-dir", "{here}/new", "demo", "--json"], []),
    "migrate": (["migrate", "--dry-run", "--json"], []),
    "sessions": (["sessions", "--all-owners", "--json"], []),
    "sessions delete": (["sessions", "delete", "01a226e4", "--yes", "--json"], []),
    "sessions prune": (["sessions", "prune", "--title", "*Tomato*", "--dry-run", "--json"], []),
    "sessions rename": (["sessions", "rename", "01a22652", "Tomatoes", "--json"], []),
    "sessions archive": (["sessions", "archive", "01a226e4", "--json"], []),
    "sessions unarchive": (
        ["sessions", "unarchive", "01a226e4", "--json"],
        ["kaja sessions archive 01a226e4"],
    ),
    "sessions stats": (["sessions", "stats", "--json"], []),
    "notes": (["notes", "--all-owners", "--json"], []),
    "notes show": (["notes", "show", "budget-q4", "--json"], []),
    "notes forget": (["notes", "forget", "budget-q4", "--yes", "--json"], []),
    "runs": (["runs", "--all", "--json"], []),
    "runs show": (["runs", "show", "run_7f3a", "--json"], []),
    "reviews": (["reviews", "--json"], []),
    "reviews done": (["reviews", "done", "run_7c6a", "--json"], []),
    "learning": (["learning", "--json"], []),
    "learning fixes": (["learning", "fixes", "--json"], []),
    "artifacts": (["artifacts", "--json"], []),
    "artifacts show": (["artifacts", "show", "a4d5e6", "--json"], []),
    "usage": (["usage", "--json"], []),
    "usage reset": (["usage", "reset", "--dry-run", "--json"], []),
    "stats queries": (["stats", "queries", "--json"], []),
    "stats slow": (["stats", "slow", "--json"], []),
    "cache": (["cache", "--json"], []),
    "cache prune": (["cache", "prune", "--dry-run", "--json"], []),
    "cache clear": (["cache", "clear", "embeddings", "--yes", "--json"], []),
    "accounts": (["accounts", "--json"], []),
    "accounts sessions": (["accounts", "sessions", "marie", "--json"], []),
    "accounts revoke": (["accounts", "revoke", "ana", "--yes", "--json"], []),
    "accounts disable": (["accounts", "disable", "ana", "--yes", "--json"], []),
    "accounts enable": (["accounts", "enable", "guest", "--json"], []),
    "accounts remove": (["accounts", "remove", "guest", "--yes", "--json"], []),
    "config paths": (["config", "paths", "--json"], []),
    "config show": (["config", "show", "--json"], []),
    "sync status": (["sync", "status", "--json"], []),
}


def schema_of(values: list) -> dict:
    """A JSON Schema that every one of `values` (parsed JSON) satisfies: objects
    with the keys they all have required (more keys allowed: a newer kaja, a
    newer agent's columns), arrays of their items' merged shape, scalars by
    type (a value seen only as null may be anything)."""
    kinds = {_kind(v) for v in values}
    if kinds <= {"null"}:
        return {}
    out: list[dict] = []
    for kind in sorted(kinds - {"null"}):
        of = [v for v in values if _kind(v) == kind]
        if kind == "object":
            keys = sorted({k for v in of for k in v})
            out.append(
                {
                    "type": "object",
                    "properties": {k: schema_of([v[k] for v in of if k in v]) for k in keys},
                    "required": [k for k in keys if all(k in v for v in of)],
                }
            )
        elif kind == "array":
            items = [x for v in of for x in v]
            out.append({"type": "array", **({"items": schema_of(items)} if items else {})})
        else:
            out.append({"type": kind})
    if "null" in kinds:
        out.append({"type": "null"})
    return out[0] if len(out) == 1 else {"anyOf": out}


def _kind(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"
