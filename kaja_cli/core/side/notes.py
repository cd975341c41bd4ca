"""Notes: the agent's long-term memory (`notes`, SPEC §4): listing them,
one by key, forgetting some, and searching them (`kaja search --notes`).

A note is keyed by (owner, key); the terminal's owner is the empty string
(NULL from another writer counts as the terminal too). The owner rule is
the sessions' one: a key the acting owner does not have but someone else
does is refused (exit 5) naming whose it is, never shown or deleted.

Every read copes with a file another program wrote: columns are read from
the file first and a missing one reads as NULL; `tags` may be a JSON list
(what kaja writes), a JSON string or plain comma-separated text.

Search needs no index of its own, so the agent's writes pay nothing for it:
notes are few (hundreds, not the messages' millions), so each search copies
the acting owner's notes into a temporary FTS4 table of its read-only
connection, with the messages index's tokenizer, and asks it. The matching
rules are therefore exactly `kaja search`'s (plain words, `--fts` syntax,
accents and case ignored), and nothing is ever written to the store.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from array import array
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
    location: Path
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


def _select(have: list[str]) -> str:
    """Every known column (NULL when missing), then the extras, and the rowid."""
    known = ", ".join(f'{col(have, "n", c)} AS "{c}"' for c in NOTE_COLUMNS)
    extras = "".join(f', n."{c}"' for c in have if c not in NOTE_COLUMNS)
    return f"SELECT {known}{extras}, n.rowid AS kaja_rowid FROM notes AS n"


def _rows(cur: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]


def _have(conn: sqlite3.Connection) -> list[str] | None:
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


def list_notes(conn: sqlite3.Connection, flt: NoteFilter) -> list[Note] | None:
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
    """`list_notes` on the store's shared file; a missing store lists nothing
    (and says where kaja looked) rather than failing."""
    store.require_local()
    path = _shared(store)
    if not path.exists():
        return NoteListing([], path, store_exists=False)
    with store.reader() as conn:
        notes = list_notes(conn, flt)
    return NoteListing(notes or [], path, has_table=notes is not None)


def find(conn: sqlite3.Connection, key: str, owner: Owner) -> Note:
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


def _suggest(conn: sqlite3.Connection, have: list[str], key: str, owner: Owner) -> str:
    import difflib

    where, args = _owner_where(owner, col(have, "n", "owner"))
    keys = [str(r[0]) for r in conn.execute(f"SELECT n.key FROM notes AS n WHERE {where}", args)]
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(k) for k in close) + "?"
    return f"`kaja notes{'' if owner.is_terminal else ' --owner ' + owner.label}` lists them"


def _shared(store: Store, *, writing: bool = False) -> Path:
    """The shared file's path. What is not a SQLite file (a FIFO would block)
    is never opened: exit 1 for a reading command, 5 for a writing one (the
    core's one rule, `db.require_database`)."""
    from kaja_cli.core.engine import db

    path = store.path()
    if os.path.lexists(path):
        db.require_database(path, writing=writing)
    return path


def show(store: Store, key: str, owner: Owner) -> Note:
    store.require_local()
    _shared(store)
    with store.reader() as conn:
        return find(conn, key, owner)


# --- forgetting -------------------------------------------------------------------------
class ForgetPlan(NamedTuple):
    """What `kaja notes forget` will delete; the same plan drives --dry-run,
    the question and the deletion."""

    owner: Owner
    notes: list[Note]
    location: Path

    def to_json(self, done: list[Note] | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """`kaja notes forget --json`: the notes forgotten (`done`), or to forget."""
        notes = self.notes if done is None else done
        return {"action": "forget", "dry_run": dry_run, "owner": self.owner.label,
                "path": str(self.location), "notes": [n.key for n in notes],
                "forgotten": 0 if dry_run else len(notes)}  # fmt: skip


def plan_forget(store: Store, keys: Iterable[str], owner: Owner) -> ForgetPlan:
    """Read-only: every key must be the acting owner's, or nothing is deleted."""
    from kaja_cli.core.store import guard

    store.require_local()
    _shared(store, writing=True)
    found: dict[str, Note] = {}
    with store.reader() as conn:
        guard.require_kajas(conn, store.path(), store.paths.file_of("shared"))
        for key in keys:
            note = find(conn, key, owner)
            found.setdefault(note.key, note)
    return ForgetPlan(owner, list(found.values()), store.path())


def forget(store: Store, plan: ForgetPlan) -> list[Note]:
    """Delete the planned notes in one transaction; returns those deleted
    (a note deleted meanwhile by the agent is simply not among them).
    Overwritten on disk (`secure_delete`): forgotten text does not linger."""
    from kaja_cli.core.engine import db
    from kaja_cli.core.store import markers

    with store.writer() as conn:
        conn.execute("PRAGMA secure_delete = ON")
        have = _have(conn) or []
        where, args = _owner_where(plan.owner, col(have, "notes", "owner"))
        gone = []
        with db.transaction(conn):
            for note in plan.notes:
                cur = conn.execute(
                    f"DELETE FROM notes WHERE key = ? AND {where}", (note.key, *args)
                )
                if cur.rowcount:
                    gone.append(note)
            markers.checkpoint("notes-commit")
    return gone


# --- search ----------------------------------------------------------------------------------
_SCAN = "kaja_notes_scan"
K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6  # as `kaja search` (FTS5's bm25 constants and idf floor)


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
) -> NoteSearch:
    """The acting owner's notes matching `query` (plain words, or FTS4 syntax
    with `fts`; key, tags and content are searched), best first or, with
    `recent`, most recently used first. `since`: used (or written) since then."""
    from kaja_cli.core.conversations import search as message_search

    store.require_local()
    if all_owners and owner is not None:
        raise UsageError("--owner and --all-owners can't be used together")
    acting = None if all_owners else Owner.parse(owner)
    after = None
    if since:
        from kaja_cli.core import timeparse

        after = timeparse.parse_when(since, option="--since")
    if limit < 0:
        raise UsageError("--limit must be 0 (all) or more")
    if not query.strip():
        raise UsageError(
            "nothing to search for", hint="give some words, e.g. `kaja search --notes budget`"
        )
    match = query if fts else message_search.plain_match(query)
    path = _shared(store)
    result = NoteSearch(query, match, fts, recent, acting, limit, str(path), [], False, [])
    if not path.exists():
        result.remarks.append(f"no Kaja store at {path}: no notes to search")
        return result
    with store.reader() as conn:
        have = _have(conn)
        if have is None:
            result.remarks.append(f"{path} has no notes table: no notes to search")
            return result
        _load_scan(conn, have, acting, after)
        try:
            ranked = _ranked(conn, have, match, recent)
        except sqlite3.OperationalError as e:
            if "malformed match" in str(e).lower() or "fts expression" in str(e).lower():
                raise UsageError(
                    f"--fts: {e}",
                    hint='FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)',
                ) from None
            raise
        want = len(ranked) if limit == 0 else limit
        hits = _hits(conn, have, match, ranked[:want])
    return result._replace(hits=hits, more=len(ranked) > want)


def _load_scan(
    conn: sqlite3.Connection, have: list[str], owner: Owner | None, after: str | None
) -> None:
    """The candidates (the owner's notes, used since `after`) into a temporary
    FTS4 table of this read-only connection, in one statement (FTS4 writes a
    segment per transaction: row by row it would be ten times slower). A
    JSON list of tags is indexed as its words, without the brackets."""
    where, args = ["1"], []
    if owner is not None:
        cond, cargs = _owner_where(owner, col(have, "n", "owner"))
        where.append(cond)
        args.extend(cargs)
    if after is not None:
        last = f"coalesce({col(have, 'n', 'lastUsedAt')}, {col(have, 'n', 'createdAt')}, '')"
        where.append(f"{last} >= ?")
        args.append(after)
    tags = col(have, "n", "tags")
    tag_words = (
        f"CASE WHEN json_valid({tags}) AND json_type({tags}) = 'array'"
        f" THEN (SELECT group_concat(j.value, ' ') FROM json_each({tags}) AS j) ELSE {tags} END"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE temp.{_SCAN} USING fts4(key, tags, content, "
        'tokenize=unicode61 "remove_diacritics=2")'
    )
    conn.execute(
        f"INSERT INTO temp.{_SCAN}(docid, key, tags, content) SELECT n.rowid, n.key, {tag_words},"
        f" {col(have, 'n', 'content')} FROM notes AS n WHERE {' AND '.join(where)}",
        args,
    )


def _ranked(
    conn: sqlite3.Connection, have: list[str], match: str, recent: bool
) -> list[tuple[int, float]]:
    """Every match as (docid, score), best first (ties: the older note first),
    or with `recent` the most recently used first."""
    last = f"coalesce({col(have, 'n', 'lastUsedAt')}, {col(have, 'n', 'createdAt')}, '')"
    rows = conn.execute(
        f"SELECT {_SCAN}.docid, matchinfo({_SCAN}, 'pcnalx'), {last} FROM temp.{_SCAN}"
        f" JOIN main.notes AS n ON n.rowid = {_SCAN}.docid WHERE {_SCAN} MATCH ?",
        (match,),
    ).fetchall()
    scored = [(docid, bm25(info), str(when)) for docid, info, when in rows]
    scored.sort(key=lambda r: (-r[1], r[0]))
    if recent:
        scored.sort(key=lambda r: r[2], reverse=True)
    return [(docid, score) for docid, score, _ in scored]


def _hits(
    conn: sqlite3.Connection, have: list[str], match: str, picked: list[tuple[int, float]]
) -> list[NoteHit]:
    """The picked notes, in order, with a snippet each (asked of these only:
    snippet() is most of a search's time)."""
    from kaja_cli.core.conversations.search import MARK_END, MARK_START, SNIPPET_TOKENS

    if not picked:
        return []
    ids = json.dumps([docid for docid, _ in picked])
    notes = {
        r["kaja_rowid"]: _note(r)
        for r in _rows(
            conn.execute(
                f"{_select(have)} WHERE n.rowid IN (SELECT value FROM json_each(?))", (ids,)
            )
        )
    }
    snippets = dict(
        conn.execute(
            f"SELECT docid, snippet({_SCAN}, ?, ?, '…', -1, {SNIPPET_TOKENS}) FROM temp.{_SCAN}"
            f" WHERE {_SCAN} MATCH ? AND docid IN (SELECT value FROM json_each(?))",
            (MARK_START, MARK_END, match, ids),
        ).fetchall()
    )
    return [
        NoteHit(notes[d], score, *_snippet(snippets.get(d) or ""))
        for d, score in picked
        if d in notes
    ]


def bm25(info: bytes) -> float:
    """sqlite-fts4's `rank_bm25` over matchinfo('pcnalx'), with FTS5's idf
    floor, as SPEC §6 ranks messages (summed over key, tags and content)."""
    values = array("I")
    values.frombytes(info)
    phrases, cols, rows = values[0], values[1], values[2]
    avg = values[3 : 3 + cols]
    length = values[3 + cols : 3 + 2 * cols]
    hits = values[3 + 2 * cols :]
    score = 0.0
    for p in range(phrases):
        for c in range(cols):
            here, _, docs = hits[3 * (p * cols + c) : 3 * (p * cols + c) + 3]
            if not here:
                continue
            idf = math.log((rows - docs + 0.5) / (docs + 0.5))
            norm = K1 * (1 - B + B * length[c] / avg[c]) if avg[c] else K1
            score += max(idf, IDF_FLOOR) * (here * (K1 + 1)) / (here + norm)
    return score


def _snippet(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    from kaja_cli.core.conversations.search import parse_snippet  # the message search's marks

    return parse_snippet(raw)
