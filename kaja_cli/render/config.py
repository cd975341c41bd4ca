"""What `kaja config` prints for a person or a pipe: where the data lives
(`paths`), the settings in effect (`show`), and what `set`/`unset` changed
(the --json of `paths` and `show` is the results' own `to_json()`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.store.paths import Overrides
    from kaja_cli.core.store.settings.view import View


def paths(found: dict[str, Any]) -> None:
    """Every location (its JSON shape: mode, backend, paths): a table, one row each."""
    from kaja_cli.core.store import paths as core

    backend, rows = found["backend"], found["paths"]
    # Paths wrap (after a slash when a name is too long); on a narrow terminal
    # "exists", the file count, the source, then the size go (docs/guides/settings.md).
    render.table(
        [Col("what", style="bold", kind="whole"), Col("path", min=20),
         Col("source", style="dim", drop=3),
         Col("exists", kind="whole", drop=1), Col("size", justify="right", drop=4),
         Col("files", justify="right", drop=2)],
        [[core.BACKEND_LABELS[name], b["value"] or "-", b["source"], "", "", ""]
         for name, b in backend.items()]
        + [
            [core.LABELS[name], r["path"], r["source"], "yes" if r["exists"] else "no",
             render.human_size(r["size"]) if r["exists"] else "-", _blank(r.get("files"))]
            for name, r in rows.items()
        ],
        plain_rows=[[name, b["value"] or "", b["source"], "", ""] for name, b in backend.items()]
        + [
            [name, r["path"], r["source"], "yes" if r["exists"] else "no",
             _blank(r["size"])]
            for name, r in rows.items()
        ],
    )  # fmt: skip
    if found["mode"] == "cloud":
        render.note(
            "cloud mode: the conversations are on the PostgreSQL server above; kaja keeps"
            " only the images here"
        )


def _blank(value: Any) -> Any:
    return "" if value is None else value


def settings(v: View) -> None:
    """Every setting in effect, its value and where it came from; the unknown keys."""
    from kaja_cli.core.store.settings.keys import to_text

    rows = [
        [e.key.name, "" if e.value is None else to_text(e.value), e.source, e.problem or ""]
        for e in v.settings
    ]
    rows += [
        [u.name, to_text(u.value), f"settings file line {u.line}",
         "unknown key" + (f": did you mean {u.suggestion}?" if u.suggestion else "")]
        for u in v.unknown
    ]  # fmt: skip
    source = v.settings_file.source
    render.table(
        [Col("key", style="bold", kind="whole"), Col("value", min=12),
         Col("source", style="dim", drop=1), Col("problem", style="red")],
        rows,
        title=f"{v.settings_file.path} ({source}{'' if v.exists else ', no such file'})",
    )  # fmt: skip


def set_(change: Any, *, dry_run: bool = False) -> None:
    from kaja_cli.core.store.settings.keys import toml_literal

    shown = toml_literal(change.after)
    if not change.changed:
        render.note(f"{change.key} is already {shown} in {change.file}; nothing to change")
        return
    was = "" if change.before is None else f" (was {toml_literal(change.before)})"
    if dry_run:
        render.note(
            f"dry run: would set {change.key} = {shown} in {change.file} line {change.line}{was};"
            " nothing was changed"
        )
    else:
        render.note(f"{change.key} = {shown} in {change.file} line {change.line}{was}")


def unset(change: Any, *, dry_run: bool = False) -> None:
    from kaja_cli.core.store.settings.keys import KEYS, toml_literal

    if not change.changed:
        render.note(f"{change.key} is not set in {change.file}; nothing to change")
        return
    known = KEYS.get(change.key)
    after = "" if known is None or known.default is None else (
        f"; the default applies: {toml_literal(known.default)}")  # fmt: skip
    if dry_run:
        render.note(
            f"dry run: would remove {change.key} from {change.file}{after}; nothing was changed"
        )
    else:
        render.note(f"removed {change.key} from {change.file}{after}")


def overridden(name: str, flags: Overrides) -> None:
    """Say so when an environment variable or flag outranks the file here."""
    from kaja_cli.core.store.settings.keys import KEYS

    key = KEYS.get(name)
    if key is None:
        return
    if key.flag == "--db" and flags.db is not None:
        render.note(f"--db given: it overrides {name} for this command")
    elif key.flag == "--database-url" and flags.database_url is not None:
        render.note(f"--database-url given: it overrides {name} for this command")
    elif key.env and os.environ.get(key.env, "").strip():
        render.note(f"{key.env} is set here, and overrides {name} wherever it is set")
