"""The values TAB offers for an option or argument, by kind.

Each kind is a function of the words already parsed (`params`: the root
options and the command's own, by parameter name, as Typer names them) and
the word being completed; it returns (value, description) pairs, the
description None where there is none. `described=False` skips descriptions
(bash shows none, and ages cost a date parse each).

Fixed lists (check ids, roles, export formats) are read from the generated
`table` by the fast path and computed live here for Typer (`fixed()`), so
the test comparing the two also finds a stale table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

Item = tuple[str, str | None]
Params = Mapping[str, Any]
TITLE_WIDTH = 48  # a session's title beside its id, cut beyond this


def complete(kind: str, params: Params, incomplete: str, *, described: bool = True) -> list[Item]:
    """The values of `kind` starting with `incomplete`; [] on any failure.

    What the store holds reaches a terminal here, so a value with a control
    character in it (an escape sequence, a line break) is not offered: no
    shell shows it without the terminal acting on it, and no one types it.
    In a description, control characters are shown escaped (`\\x1b`), line
    breaks and tabs as spaces, as kaja's tables show them.
    """
    try:
        items = KINDS[kind](params, incomplete, described)
    except Exception:  # a TAB press never fails: a bad settings file, a typo'd --owner
        return []
    return [(v, _shown(h)) for v, h in items
            if v.startswith(incomplete) and v and not _CONTROL.search(v)]  # fmt: skip


# As kaja_cli/render/layout.py escapes them (importing it would cost a TAB press
# the render package): C0 and C1 controls and DEL.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_ONE_LINE = str.maketrans(
    {**{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
     **dict.fromkeys(map(ord, "\t\n\r\v\f"), " ")}
)  # fmt: skip


def _shown(text: str | None) -> str | None:
    if text is None or text.isprintable():
        return text
    return text.replace("\r\n", " ").translate(_ONE_LINE)


def _store_paths(params: Params):
    from kaja_cli.core.store.paths import Overrides, resolve

    def path(value: Any):
        from pathlib import Path

        return None if value is None else Path(os.fspath(value))

    return resolve(
        Overrides(path(params.get("config_path")), path(params.get("state_dir")),
                  path(params.get("db")))
    )  # fmt: skip


def _acting(params: Params):
    """The owner the command acts as; None with --all-owners (anyone's)."""
    from kaja_cli.core.owners import Owner

    if params.get("all_owners"):
        return None
    return Owner.parse(params.get("owner"))


def sessions(params: Params, incomplete: str, described: bool) -> list[Item]:
    """Session ids: the short id (what `kaja sessions` shows), or the full id
    once more than the short id is typed; with the title and age."""
    from kaja_cli.core import choices

    given = [str(v) for v in params.get("ids") or () if v and str(v) != incomplete]
    clock = _Clock() if described else None
    out: list[Item] = []
    for c in choices.sessions(_store_paths(params), _acting(params), incomplete):
        if any(c.id.startswith(g) for g in given):
            continue  # already on the line (`sessions delete A B …`)
        value = c.short_id if c.short_id.startswith(incomplete) else c.id
        out.append((value, _describe(c, clock) if clock is not None else None))
    return out


class _Clock:
    """Now, once for every value TAB offers; a time as `kaja sessions` shows it (`clock.ago`)."""

    def __init__(self) -> None:
        from kaja_cli.core import clock

        self.now = clock.now()

    def ago(self, value: str) -> str:
        """ "3h ago", "2d ago", or the date for anything older than a month (as `kaja sessions`)."""
        from kaja_cli.core.clock import ago

        return ago(value, self.now) or value


def _describe(c, clock: _Clock) -> str:
    title = " ".join((c.title or "(untitled)").split())
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    return f"{title} · {clock.ago(c.updated_at)}" if c.updated_at else title


def owners(params: Params, incomplete: str, described: bool) -> list[Item]:
    from kaja_cli.core import choices
    from kaja_cli.core.wording import plural

    return [
        (o.owner, plural(o.sessions, "session") if described else None)
        for o in choices.owners(_store_paths(params))
    ]


def keys(params: Params, incomplete: str, described: bool) -> list[Item]:
    """Settings keys (matched ignoring case, as `config` reads them)."""
    from kaja_cli.core.store.settings.keys import KEYS

    low = incomplete.lower()
    return [(k.name, k.description) for k in KEYS.values() if k.name.lower().startswith(low)]


def settings_values(params: Params, incomplete: str, described: bool) -> list[Item]:
    """After `config set KEY`: true/false, the allowed words, or the default."""
    from kaja_cli.core.store.settings.keys import BOOL, CHOICE, KEYS

    key = KEYS.get(params.get("key") or "")
    if key is None:
        return []
    if key.kind == BOOL:
        values = ["true", "false"]
    elif key.kind == CHOICE:
        values = list(key.choices)
    else:
        values = [] if key.default is None else [str(key.default)]
    return [(v, None) for v in values]


def notes(params: Params, incomplete: str, described: bool) -> list[Item]:
    """Note keys of the acting owner, with the start of each note."""
    from kaja_cli.core import choices

    given = {str(v) for v in params.get("keys") or () if v and str(v) != incomplete}
    return [(c.value, c.about if described else None)
            for c in choices.note_keys(_store_paths(params), _acting(params)) if c.value not in given]  # fmt: skip


def tags(params: Params, incomplete: str, described: bool) -> list[Item]:
    from kaja_cli.core import choices

    return [(c.value, c.about if described else None)
            for c in choices.note_tags(_store_paths(params), _acting(params))]  # fmt: skip


def namespaces(params: Params, incomplete: str, described: bool) -> list[Item]:
    from kaja_cli.core import choices

    return [
        (c.value, c.about if described else None) for c in choices.namespaces(_store_paths(params))
    ]


def accounts(params: Params, incomplete: str, described: bool) -> list[Item]:
    from kaja_cli.core import choices

    return [
        (c.value, c.about if described else None) for c in choices.accounts(_store_paths(params))
    ]


def _audit(name: str) -> Callable[[Params, str, bool], list[Item]]:
    """Run ids, runs in the review queue, artifact ids (`choices`)."""

    def values(params: Params, incomplete: str, described: bool) -> list[Item]:
        from kaja_cli.core import choices

        found = getattr(choices, name)(_store_paths(params), incomplete)
        return [(c.value, c.about if described else None) for c in found]

    return values


def _fixed(kind: str) -> Callable[[Params, str, bool], list[Item]]:
    def values(params: Params, incomplete: str, described: bool) -> list[Item]:
        from kaja_cli.completion.table import FIXED

        return [(v, h if described else None) for v, h in FIXED[kind]]

    return values


def fixed() -> dict[str, list[Item]]:
    """The fixed lists, computed from the core (what `table.FIXED` holds)."""
    from kaja_cli.core.care import doctor
    from kaja_cli.core.conversations.search import ROLES

    checks: list[Item] = []
    for spec in doctor.list_checks():
        checks.append((spec.id, spec.about))
        if spec.per_database:
            checks += [(f"{spec.id}.{db}", f"{db}: {spec.about}") for db in doctor.DATABASE_NAMES]
    return {
        "check": checks,
        "role": [(r, None) for r in ROLES],
        "format": [
            ("md", "a Markdown transcript"),
            ("json", "the full JSON"),
            ("jsonl", "one JSON line per session"),
            ("html", "a self-contained page per session"),
        ],
    }


KINDS: dict[str, Callable[[Params, str, bool], list[Item]]] = {
    "session": sessions,
    "owner": owners,
    "key": keys,
    "value": settings_values,
    "note": notes,
    "tag": tags,
    "namespace": namespaces,
    "account": accounts,
    "run": _audit("run_ids"),
    "review": _audit("review_ids"),
    "artifact": _audit("artifact_ids"),
    "check": _fixed("check"),
    "role": _fixed("role"),
    "format": _fixed("format"),
}
