"""What shell completion offers from the store: session ids (with their title
and when they were last updated), owners, note keys and tags, the cache's
namespaces and web usernames.

Completion runs on every TAB press, often while the agent writes. So these
only read, through the store's glance (`Store.glance`, `db.open_glance`):
nothing is written or created, no lock is waited for, and a missing, busy,
damaged or foreign file (or a store on a server, which a TAB press never
asks) offers nothing rather than an error. The commands' own checks
(owner rule, prefixes) still apply when the command runs.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from kaja_cli.core.conversations.sessions import col, columns
from kaja_cli.core.ids import short_id
from kaja_cli.core.owners import Owner
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Paths
from kaja_cli.core.wording import plural


class SessionChoice(NamedTuple):
    id: str
    short_id: str  # the shortest unique prefix, as `kaja sessions` shows it
    title: str | None
    updated_at: str | None  # ISO 8601 UTC, as stored


class OwnerChoice(NamedTuple):
    owner: str  # as `--owner` takes it: "terminal" for the terminal
    sessions: int


def sessions(paths: Paths, owner: Owner | None, prefix: str) -> list[SessionChoice]:
    """The sessions of `owner` (None: anyone's) whose id starts with `prefix`,
    in id order; [] when the store can't be read at once."""
    try:
        return _sessions(paths, owner, prefix)
    except sqlite3.Error:
        return []


def _sessions(paths: Paths, owner: Owner | None, prefix: str) -> list[SessionChoice]:
    with Store(paths).glance() as conn:
        if conn is None:
            return []
        have = columns(conn, "sessions").get("sessions")
        if not have or "id" not in have:
            return []
        # Every id in the range, in order, anyone's: a short id is unique among
        # all sessions, so its neighbours may be another owner's.
        end = prefix + "\U0010ffff"
        rows = conn.execute(
            f"SELECT s.id, {col(have, 's', 'owner')}, {col(have, 's', 'title')},"
            f" coalesce({col(have, 's', 'updatedAt')}, {col(have, 's', 'createdAt')})"
            " FROM sessions AS s WHERE s.id >= ? AND s.id < ? ORDER BY s.id",
            (prefix, end),
        ).fetchall()
        before = conn.execute("SELECT max(id) FROM sessions WHERE id < ?", (prefix,)).fetchone()
        after = conn.execute("SELECT min(id) FROM sessions WHERE id >= ?", (end,)).fetchone()
    ids = [before[0], *(str(r[0]) for r in rows), after[0]]
    return [
        SessionChoice(
            ids[i + 1], short_id(ids[i + 1], ids[i], ids[i + 2]), _text(title), _text(when)
        )
        for i, (_, who, title, when) in enumerate(rows)
        if owner is None or owner.owns(who)
    ]


def owners(paths: Paths) -> list[OwnerChoice]:
    """Every owner with something in the store (sessions, notes, datasets),
    the terminal first, then by id; [] when the store can't be read at once."""
    try:
        return _owners(paths)
    except sqlite3.Error:
        return []


def _owners(paths: Paths) -> list[OwnerChoice]:
    counts: dict[str, int] = {}
    with Store(paths).glance() as conn:
        if conn is None:
            return []
        have = columns(conn, "sessions", "notes", "dataset_answers", "dataset_versions")
        if "owner" in have.get("sessions", ()):
            for who, n in conn.execute("SELECT owner, count(*) FROM sessions GROUP BY owner"):
                key = _owner(who)
                counts[key] = counts.get(key, 0) + n
        for table in ("notes", "dataset_answers", "dataset_versions"):
            if "owner" in have.get(table, ()):
                for (who,) in conn.execute(f"SELECT DISTINCT owner FROM {table}"):
                    counts.setdefault(_owner(who), 0)
    return [
        OwnerChoice(o, n)
        for o, n in sorted(counts.items(), key=lambda i: (i[0] != "terminal", i[0]))
    ]


def _owner(value: object) -> str:
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    return text or "terminal"


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


# --- notes, the cache's namespaces, web accounts ------------------------------------------
class Choice(NamedTuple):
    value: str
    about: str | None


def _glance(paths: Paths, name: str, query: str, args: tuple = ()) -> list[tuple]:
    """Rows of `query` on a database through the store's glance; [] on any failure."""
    try:
        with Store(paths).glance(name) as conn:
            if conn is None:
                return []
            return conn.execute(query, args).fetchall()
    except sqlite3.Error:
        return []


def note_keys(paths: Paths, owner: Owner | None) -> list[Choice]:
    """The keys of `owner`'s notes (None: anyone's), with the start of each."""
    where, args = "1", ()
    if owner is not None:
        where, args = (
            ("(owner = '' OR owner IS NULL)", ())
            if owner.is_terminal
            else ("owner = ?", (owner.id,))
        )
    rows = _glance(paths, "shared", f"SELECT key, content FROM notes WHERE {where} ORDER BY key",
                   args)  # fmt: skip
    return [Choice(str(k), _start(v)) for k, v in rows if k is not None]


def note_tags(paths: Paths, owner: Owner | None) -> list[Choice]:
    """The tags of `owner`'s notes, with how many notes have each."""
    from kaja_cli.core.side.notes import parse_tags

    where, args = "1", ()
    if owner is not None:
        where, args = (
            ("(owner = '' OR owner IS NULL)", ())
            if owner.is_terminal
            else ("owner = ?", (owner.id,))
        )
    counts: dict[str, int] = {}
    for (tags,) in _glance(paths, "shared", f"SELECT tags FROM notes WHERE {where}", args):
        for tag in parse_tags(tags):
            counts[tag] = counts.get(tag, 0) + 1
    return [Choice(t, plural(n, "note")) for t, n in sorted(counts.items())]


def namespaces(paths: Paths) -> list[Choice]:
    """The cache's namespaces, with their entry counts."""
    rows = _glance(
        paths, "cache",
        "SELECT namespace, count(*) FROM shared_cache GROUP BY namespace ORDER BY namespace",
    )  # fmt: skip
    return [Choice(str(ns), plural(n, "entry", "entries")) for ns, n in rows if ns is not None]


def accounts(paths: Paths) -> list[Choice]:
    """Web usernames, with the display name (a site visitor chooses it: cut as
    a note is) and role (never a secret)."""
    rows = _glance(
        paths, "auth", "SELECT username, display_name, role FROM web_users ORDER BY username"
    )
    return [
        Choice(str(u), " · ".join(x for x in (_start(_text(d)), _text(r)) if x) or None)
        for u, d, r in rows
        if u
    ]


def _start(text: object, width: int = 48) -> str | None:
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- the audit views: runs, reviews, artifacts ------------------------------------------
def _audit(paths: Paths, name: str, lister, prefix: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    try:
        with Store(paths).glance(name) as conn:
            return [] if conn is None else lister(conn, prefix)
    except sqlite3.Error:
        return []


def run_ids(paths: Paths, prefix: str) -> list[Choice]:
    """Run ids, newest first, with the agent, when it started and the start of its prompt."""
    from kaja_cli.core.audit import runs
    from kaja_cli.core.clock import ago

    out = []
    for rid, agent, started, prompt in _audit(paths, "shared", runs.ids, prefix):
        when = ago(started) if isinstance(started, str) else None
        about = " · ".join(x for x in (_text(agent), when, _start(prompt, 40)) if x)
        out.append(Choice(str(rid), about or None))
    return out


def review_ids(paths: Paths, prefix: str) -> list[Choice]:
    """The runs in the review queue, with the review's status and reason."""
    from kaja_cli.core.audit import reviews

    return [
        Choice(str(rid), " · ".join(x for x in (_text(s), _text(r)) if x) or None)
        for rid, s, r in _audit(paths, "shared", reviews.run_ids, prefix)
    ]


def artifact_ids(paths: Paths, prefix: str) -> list[Choice]:
    """Artifact ids, with the kind and title."""
    from kaja_cli.core.audit import artifacts

    return [
        Choice(str(aid), " · ".join(x for x in (_text(k), _start(t)) if x) or None)
        for aid, k, t in _audit(paths, "artifacts", artifacts.ids, prefix)
    ]
