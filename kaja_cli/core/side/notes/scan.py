"""`kaja search --notes` over a SQLite connection holding `notes`: the store's
file locally, a copy in memory of the notes read from the server in cloud
mode. Both engines' notes are thus found and ranked by the same code.

The candidates (the acting owner's notes, used since `--since`) are copied
into a temporary FTS4 table with the messages index's tokenizer and asked;
BM25 is sqlite-fts4's `rank_bm25` over matchinfo('pcnalx') with FTS5's idf
floor, as `kaja search` ranks messages; ties go to the note stored first
(the lower rowid).
"""

from __future__ import annotations

import json
import math
import sqlite3
from array import array

from kaja_cli.core.conversations.sessions import col
from kaja_cli.core.owners import Owner
from kaja_cli.core.side.notes import (
    NoteHit,
    NoteSearch,
    _have,
    _note,
    _owner_where,
    _rows,
    _select,
)
from kaja_cli.errors import UsageError

_SCAN = "kaja_notes_scan"
K1, B, IDF_FLOOR = 1.2, 0.75, 1e-6  # as `kaja search` (FTS5's bm25 constants and idf floor)


def search(
    conn: sqlite3.Connection, result: NoteSearch, after: str | None, before: str | None = None
) -> NoteSearch:
    """`result` with the hits of its query among `conn`'s notes (and a remark
    when there is no notes table)."""
    have = _have(conn)
    if have is None:
        result.remarks.append(f"{result.location} has no notes table: no notes to search")
        return result
    _load_scan(conn, have, result.owner, after, before)
    groups = None
    if result.languages and not result.fts:
        from kaja_cli.core.conversations.search import plain_words, stems

        plan = stems.plan(plain_words(result.query), _vocabulary(conn), result.languages)
        result = result._replace(match=plan.match)
        groups = plan.groups
    try:
        ranked = _ranked(conn, have, result.match, result.recent, groups)
    except sqlite3.OperationalError as e:
        if "malformed match" in str(e).lower() or "fts expression" in str(e).lower():
            raise UsageError(
                f"--fts: {e}",
                hint='FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)',
            ) from None
        raise
    want = len(ranked) if result.limit == 0 else result.limit
    hits = _hits(conn, have, result.match, ranked[:want])
    return result._replace(hits=hits, more=len(ranked) > want)


def _load_scan(
    conn: sqlite3.Connection,
    have: list[str],
    owner: Owner | None,
    after: str | None,
    before: str | None = None,
) -> None:
    """The candidates (the owner's notes, last used from `after` to before
    `before`) into a temporary
    FTS4 table of this read-only connection, in one statement (FTS4 writes a
    segment per transaction: row by row it would be ten times slower). A
    JSON list of tags is indexed as its words, without the brackets."""
    where, args = ["1"], []
    if owner is not None:
        cond, cargs = _owner_where(owner, col(have, "n", "owner"))
        where.append(cond)
        args.extend(cargs)
    last = f"coalesce({col(have, 'n', 'lastUsedAt')}, {col(have, 'n', 'createdAt')}, '')"
    if after is not None:
        where.append(f"{last} >= ?")
        args.append(after)
    if before is not None:
        where.append(f"{last} < ?")
        args.append(before)
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


def _vocabulary(conn: sqlite3.Connection):
    """The candidates' words in a range, with how many notes hold each."""
    from kaja_cli.core.conversations.search import words

    return lambda low, high, inclusive: words.aux_terms(conn, "temp", _SCAN, low, high, inclusive)


def _ranked(
    conn: sqlite3.Connection, have: list[str], match: str, recent: bool, groups=None
) -> list[tuple[int, float]]:
    """Every match as (docid, score), best first (ties: the older note first),
    or with `recent` the most recently used first (`groups`: the query's
    words as groups of its phrases, from stemming)."""
    last = f"coalesce({col(have, 'n', 'lastUsedAt')}, {col(have, 'n', 'createdAt')}, '')"
    rows = conn.execute(
        f"SELECT {_SCAN}.docid, matchinfo({_SCAN}, 'pcnalx'), {last} FROM temp.{_SCAN}"
        f" JOIN main.notes AS n ON n.rowid = {_SCAN}.docid WHERE {_SCAN} MATCH ?",
        (match,),
    ).fetchall()
    scored = [(docid, bm25(info, groups), str(when)) for docid, info, when in rows]
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
                f"{_select(have, rowid=True)} WHERE n.rowid IN (SELECT value FROM json_each(?))",
                (ids,),
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


def bm25(info: bytes, groups: list[list[tuple[int, float | None]]] | None = None) -> float:
    """sqlite-fts4's `rank_bm25` over matchinfo('pcnalx'), with FTS5's idf
    floor, as SPEC §6 ranks messages (summed over key, tags and content).
    A word with other forms (`groups`, from stemming) counts as one, as a
    message search counts it (`search.rank.Bm25`): its hits weighed, the idf
    of its most frequent form."""
    from kaja_cli.core.conversations.search.stems import hits as group_hits

    values = array("I")
    values.frombytes(info)
    phrases, cols, rows = values[0], values[1], values[2]
    avg = values[3 : 3 + cols]
    length = values[3 + cols : 3 + 2 * cols]
    hits = values[3 + 2 * cols :]
    score = 0.0
    for group in groups or [[(p, None)] for p in range(phrases)]:
        for c in range(cols):
            here = group_hits(group, [hits[3 * (p * cols + c)] for p in range(phrases)])
            if not here:
                continue
            docs = max(hits[3 * (p * cols + c) + 2] for p, _ in group)
            idf = math.log((rows - docs + 0.5) / (docs + 0.5))
            norm = K1 * (1 - B + B * length[c] / avg[c]) if avg[c] else K1
            score += max(idf, IDF_FLOOR) * (here * (K1 + 1)) / (here + norm)
    return score


def _snippet(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    from kaja_cli.core.conversations.search import parse_snippet  # the message search's marks

    return parse_snippet(raw)
