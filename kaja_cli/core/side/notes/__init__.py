"""Notes: the agent's long-term memory (`notes`, SPEC §4): listing them,
one by key, forgetting some, and searching them (`kaja search --notes`).

A note is keyed by (owner, key); the terminal's owner is the empty string
(NULL from another writer counts as the terminal too). The owner rule is
the sessions' one: a key the acting owner does not have but someone else
does is refused (exit 5) naming whose it is, never shown or deleted. "You"
is the store's (`store.owner`): the terminal locally, `[memory] account` in
cloud mode.

Every read copes with a file another program wrote: columns are read from
the file first and a missing one reads as NULL; `tags` may be a JSON list
(what kaja writes), a JSON string or plain comma-separated text.

One skeleton, two engine parts (`store.part`): this module reads and plans
with SQL both engines speak; `local` (the store's file) and `server` (kaja's
schema in cloud mode) say where the notes are, delete them, and search them.

Search needs no index of its own, so the agent's writes pay nothing for it:
notes are few (hundreds, not the messages' millions), so each search copies
the acting owner's notes into a temporary FTS4 table, with the messages
index's tokenizer, and asks it (`scan`): locally in the store's read-only
connection, in cloud mode in a SQLite database in memory holding the notes
read from the server. The matching rules are therefore exactly `kaja
search`'s (plain words, `--fts` syntax, accents and case ignored), the same
in both engines, and nothing is ever written to the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kaja_cli.core import values
from kaja_cli.core.conversations.sessions import col, columns
from kaja_cli.core.owners import Owner
from kaja_cli.errors import NotFound, Refused, UsageError

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

# The seed's columns of `notes`, in its order (a public contract).
NOTE_COLUMNS = (
    "owner", "key", "content", "importance", "tags", "sticky", "createdAt", "lastUsedAt",
    "useCount",
)  # fmt: skip
IMPORTANCE = ("high", "medium", "low")  # the seed's values, most important first
MAX_KEY = 500  # longer than any key a person types: not looked up


class Note(NamedTuple):
    owner: str  # as stored: "" is the terminal
    key: str
    content: str | None
    importance: str | None
    tags: tuple[str, ...]
    sticky: bool
    created_at: str | None
    last_used_at: str | None
    use_count: int
    extra: dict[str, Any]  # columns a newer writer added, as stored

    def as_json(self) -> dict[str, Any]:
        """The seed's column names, values as stored but `tags` (a list) and
        `sticky` (a boolean); extra columns follow."""
        return {
            "owner": self.owner, "key": self.key, "content": self.content,
            "importance": self.importance, "tags": list(self.tags), "sticky": self.sticky,
            "createdAt": self.created_at, "lastUsedAt": self.last_used_at,
            "useCount": self.use_count, **self.extra,
        }  # fmt: skip

    to_json = as_json  # `kaja notes show --json`


class NoteFilter(NamedTuple):
    """What `kaja notes` was asked for; `owner` None = every owner."""

    owner: Owner | None = Owner()
    tags: tuple[str, ...] = ()  # every one of them (case ignored)
    importance: str | None = None


class NoteListing(NamedTuple):
    notes: list[Note]
    location: Path | str  # the store's file, or the server (password as ***) and schema
    store_exists: bool = True
    has_table: bool = True

    def to_json(self, flt: NoteFilter) -> dict[str, Any]:
        """`kaja notes --json`, for the notes `flt` asked for."""
        return {"owner": flt.owner.label if flt.owner else None, "all_owners": flt.owner is None,
                "total": len(self.notes), "notes": [n.as_json() for n in self.notes]}  # fmt: skip


# --- reading ------------------------------------------------------------------------
def parse_tags(value: Any) -> tuple[str, ...]:
    """Tags as stored by any writer: a JSON list, a JSON string, or "a, b"."""
    if value is None or value == "":
        return ()
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = str(value)
    try:
        found = values.loads(text)
    except ValueError:
        found = text.split(",")
    if isinstance(found, str):
        found = found.split(",")
    if not isinstance(found, list):
        found = [text]
    return tuple(t for t in (str(x).strip() for x in found if x is not None) if t)


def _owner_where(owner: Owner, column: str) -> tuple[str, tuple]:
    """This owner's notes: the terminal is '' (or NULL from another writer)."""
    if owner.is_terminal:
        return f"({column} = '' OR {column} IS NULL)", ()
    return f"{column} = ?", (owner.id,)


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _note(row: dict[str, Any]) -> Note:
    return Note(
        owner=_as_text(row.get("owner")) or "",
        key=_as_text(row.get("key")) or "",
        content=_as_text(row.get("content")),
        importance=_as_text(row.get("importance")),
        tags=parse_tags(row.get("tags")),
        sticky=bool(_as_int(row.get("sticky"))),
        created_at=_as_text(row.get("createdAt")),
        last_used_at=_as_text(row.get("lastUsedAt")),
        use_count=_as_int(row.get("useCount")),
        extra={k: v for k, v in row.items() if k not in NOTE_COLUMNS and k != "kaja_rowid"},
    )


def _select(have: list[str], *, rowid: bool = False) -> str:
    """Every known column (NULL when missing), then the extras (and SQLite's
    rowid: the search's FTS4 docid)."""
    known = ", ".join(f'{col(have, "n", c)} AS "{c}"' for c in NOTE_COLUMNS)
    extras = "".join(f', n."{c}"' for c in have if c not in NOTE_COLUMNS)
    return f"SELECT {known}{extras}{', n.rowid AS kaja_rowid' if rowid else ''} FROM notes AS n"


def _rows(cur: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]


def _have(conn: Any) -> list[str] | None:
    """The notes table's columns, or None when there is no usable one."""
    have = columns(conn, "notes").get("notes")
    return have if have and "key" in have else None


def _in_order(notes: list[Note]) -> list[Note]:
    """Sticky first, then the most important, then the most recently used
    (then owner and key): stable sorts, the weakest key first."""
    notes = sorted(notes, key=lambda n: (n.owner, n.key))
    notes.sort(key=_last_used, reverse=True)
    notes.sort(key=_rank)
    notes.sort(key=lambda n: not n.sticky)
    return notes


def _rank(note: Note) -> int:
    return IMPORTANCE.index(note.importance) if note.importance in IMPORTANCE else len(IMPORTANCE)


def _last_used(note: Note) -> str:
    return note.last_used_at or note.created_at or ""


def list_notes(conn: Any, flt: NoteFilter) -> list[Note] | None:
    """The notes `flt` selects, in the listing's order; None without a notes table."""
    have = _have(conn)
    if have is None:
        return None
    sql, args = _select(have), ()
    if flt.owner is not None:
        where, args = _owner_where(flt.owner, col(have, "n", "owner"))
        sql += f" WHERE {where}"
    notes = [_note(r) for r in _rows(conn.execute(sql, args))]
    wanted = {t.casefold() for t in flt.tags}
    if wanted:
        notes = [n for n in notes if wanted <= {t.casefold() for t in n.tags}]
    if flt.importance:
        notes = [n for n in notes if (n.importance or "").casefold() == flt.importance.casefold()]
    return _in_order(notes)


def listing(store: Store, flt: NoteFilter) -> NoteListing:
    """`list_notes` on the store (its shared file, or kaja's schema on the
    server); a missing store lists nothing (and says where kaja looked)
    rather than failing."""
    where = store.part(__package__).location(store)
    with store.maybe_reader() as conn:
        if conn is None:
            return NoteListing([], where, store_exists=False)
        notes = list_notes(conn, flt)
    return NoteListing(notes or [], where, has_table=notes is not None)


def find(conn: Any, key: str, owner: Owner) -> Note:
    """The acting owner's note `key`. NotFound (exit 3) when nobody has it,
    with the closest keys; Refused (exit 5) when only other owners do."""
    if not key.strip():
        raise UsageError("empty note key")
    have = _have(conn)
    if have is None:
        raise NotFound(f"no note {key!r}", hint="this store has no notes table")
    if len(key) <= MAX_KEY:
        where, args = _owner_where(owner, col(have, "n", "owner"))
        rows = _rows(conn.execute(f"{_select(have)} WHERE n.key = ? AND {where}", (key, *args)))
        if rows:
            return _note(rows[0])
        others = sorted(
            {_label(r[0]) for r in conn.execute(
                f"SELECT {col(have, 'n', 'owner')} FROM notes AS n WHERE n.key = ?", (key,))}
        )  # fmt: skip
        if others:
            raise Refused(
                f"note {key!r} belongs to {', '.join(others)}, not {owner.label}",
                hint=f"act as that owner with --owner {others[0]}" if len(others) == 1 else None,
            )
    raise NotFound(f"{owner.label} has no note {key!r}", hint=_suggest(conn, have, key, owner))


def _label(stored: Any) -> str:
    return str(stored) if stored else "terminal"


def _suggest(conn: Any, have: list[str], key: str, owner: Owner) -> str:
    import difflib

    where, args = _owner_where(owner, col(have, "n", "owner"))
    keys = [str(r[0]) for r in conn.execute(f"SELECT n.key FROM notes AS n WHERE {where}", args)]
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(k) for k in close) + "?"
    return f"`kaja notes{'' if owner.is_terminal else ' --owner ' + owner.label}` lists them"


def show(store: Store, key: str, owner: Owner) -> Note:
    store.part(__package__).location(store)
    with store.reader() as conn:
        return find(conn, key, owner)


# --- forgetting -------------------------------------------------------------------------
class ForgetPlan(NamedTuple):
    """What `kaja notes forget` will delete; the same plan drives --dry-run,
    the question and the deletion."""

    owner: Owner
    notes: list[Note]
    location: Path | str  # the store's file, or the server (password as ***) and schema

    def to_json(self, done: list[Note] | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """`kaja notes forget --json`: the notes forgotten (`done`), or to forget."""
        notes = self.notes if done is None else done
        return {"action": "forget", "dry_run": dry_run, "owner": self.owner.label,
                "path": str(self.location), "notes": [n.key for n in notes],
                "forgotten": 0 if dry_run else len(notes)}  # fmt: skip


def plan_forget(store: Store, keys: Iterable[str], owner: Owner) -> ForgetPlan:
    """Read-only: every key must be the acting owner's, or nothing is deleted.
    A store kaja would not write (not Kaja's) is refused here already (exit 5)."""
    where = store.part(__package__).location(store, writing=True)
    found: dict[str, Note] = {}
    with store.reader(writing=True) as conn:
        for key in keys:
            note = find(conn, key, owner)
            found.setdefault(note.key, note)
    return ForgetPlan(owner, list(found.values()), where)


def forget(store: Store, plan: ForgetPlan) -> list[Note]:
    """Delete the planned notes in one transaction; returns those deleted
    (a note deleted meanwhile by the agent is simply not among them). The
    engine part does it: locally the text is overwritten on disk too."""
    return store.part(__package__).forget(store, plan)


def deleting(conn: Any, plan: ForgetPlan) -> list[Note]:
    """The planned notes deleted, inside the caller's transaction (both engines)."""
    have = _have(conn) or []
    where, args = _owner_where(plan.owner, col(have, "notes", "owner"))
    gone = []
    for note in plan.notes:
        cur = conn.execute(f"DELETE FROM notes WHERE key = ? AND {where}", (note.key, *args))
        if cur.rowcount:
            gone.append(note)
    return gone


# --- search ----------------------------------------------------------------------------------
class NoteHit(NamedTuple):
    note: Note
    score: float  # BM25, higher is better
    snippet: str  # one line around the matches (key, tags or content: the best column)
    highlights: tuple[tuple[int, int], ...]  # [start, end) of each match in `snippet`


class NoteSearch(NamedTuple):
    query: str
    match: str  # the FTS4 query that ran
    fts: bool
    recent: bool
    owner: Owner | None  # None: every owner
    limit: int
    location: str
    hits: list[NoteHit]
    more: bool  # more notes match than `limit` showed
    remarks: list[str]  # what to say on stderr
    languages: tuple[str, ...] = ()  # the stemmers of a plain query (none: exact words)

    def to_json(self) -> dict[str, Any]:
        """`kaja search --notes --json`: as a message search's, each hit a note."""
        return {
            "query": self.query, "match": self.match, "fts": self.fts,
            "order": "recent" if self.recent else "best", "searched": "notes",
            "owner": self.owner.label if self.owner else None,
            "all_owners": self.owner is None, "limit": self.limit, "more": self.more,
            "results": [
                {**h.note.as_json(), "score": round(h.score, 6), "snippet": h.snippet,
                 "highlights": [list(span) for span in h.highlights]}
                for h in self.hits
            ],
        }  # fmt: skip


def search(
    store: Store,
    query: str,
    *,
    fts: bool = False,
    owner: str | None = None,
    all_owners: bool = False,
    since: str | None = None,
    limit: int = 20,
    recent: bool = False,
    until: str | None = None,
    exact: bool = False,
) -> NoteSearch:
    """The acting owner's notes matching `query` (plain words, or FTS4 syntax
    with `fts`; key, tags and content are searched), best first or, with
    `recent`, most recently used first. `since`: used (or written) since then;
    `until`: last used (or written) before then. Plain words find their
    other forms as a message search's do, unless `exact`."""
    from kaja_cli.core.conversations import search as message_search

    acting, after, before = message_search.checked(
        store,
        query,
        owner=owner,
        all_owners=all_owners,
        since=since,
        until=until,
        limit=limit,
        example="kaja search --notes budget",
    )
    match = query if fts else message_search.plain_match(query)
    part = store.part(__package__)
    where = part.location(store)
    names, problem = message_search.language(store, exact=exact or fts)
    result = NoteSearch(query, match, fts, recent, acting, limit, str(where), [], False,
                        [problem] if problem else [], names)  # fmt: skip
    return part.search(store, result, after, before)
