"""`kaja search` for Chinese, Japanese or Korean words: which index answers,
bringing it up to date, scanning when it can't, and snippets (SPEC §6).

The bigram index is `cjk_index`'s, the text transformations `cjk`'s; this
module is what local search (`search.local`) does with them, imported only
for a query that is not plain ASCII, so a Latin search loads none of it. The
ranking, filters and output are local search's own, over whichever FTS4
table (`tables.Index`) this picks.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli.core.conversations.search import cjk, cjk_index
from kaja_cli.core.conversations.search.model import TOKENIZE, ProgressFactory, SearchResult
from kaja_cli.core.conversations.search.model import progress as progress_of
from kaja_cli.core.conversations.search.tables import NOT_KAJAS, Index, add_index
from kaja_cli.core.engine import db
from kaja_cli.core.store import search_index
from kaja_cli.core.wording import plural

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

SCAN_CJK_TABLE = "kaja_scan_cjk"


def choose(
    store: Store,
    path: Path,
    conn: sqlite3.Connection,
    progress: ProgressFactory | None,
    result: SearchResult,
) -> tuple[Index | None, list[cjk.Term] | None]:
    """For a query holding CJK: the index to ask and the words to highlight,
    with `result.match` turned into bigram phrases; (None, None) otherwise."""
    if not cjk.has_cjk(result.match):
        return None, None
    terms = cjk.terms(result.match)
    ix = _cjk_index(store, path, conn, progress, result)
    result.match = cjk.match(result.match)
    return ix, terms


def _cjk_index(
    store: Store,
    path: Path,
    conn: sqlite3.Connection,
    progress: ProgressFactory | None,
    result: SearchResult,
) -> Index:
    """The CJK index, made or brought up to date first if the store may be
    written (what the agent wrote since is only queued); else a scan."""
    state = cjk_index.state(conn)
    made, why_not = False, None
    if state in (cjk_index.MISSING, cjk_index.FILLING, cjk_index.BEHIND):
        made, why_not = _build_cjk(store, path, progress)
        state = cjk_index.state(conn)
    if state == cjk_index.READY:
        if made:
            count = cjk_index.indexed(conn)
            result.notes.append(
                f"built the CJK search index of {path} "
                f"({plural(count, 'message')} in Chinese, Japanese or Korean)"
            )
        return Index("main", cjk_index.TABLE, cjk=True)
    count = _scan_cjk(conn, progress)
    result.source = "scan"
    result.notes.append(_scan_cjk_note(path, state, why_not, count))
    return Index("temp", SCAN_CJK_TABLE, cjk=True)


def _build_cjk(
    store: Store, path: Path, progress: ProgressFactory | None
) -> tuple[bool, str | None]:
    """Make the CJK index or index what was queued: (made now, why it could not)."""

    def fill(conn: sqlite3.Connection) -> None:
        if cjk_index.fill_state(conn) is None:
            cjk_index.catch_up(conn)
        else:
            with progress_of(progress, "indexing Chinese, Japanese and Korean", None) as bar:
                cjk_index.catch_up(conn, bar)

    return add_index(store, path, cjk_index.ensure, fill)


def _scan_cjk_note(path: Path, state: str, why_not: str | None, count: int) -> str:
    if why_not == NOT_KAJAS:
        reason = "it is not Kaja's store, so kaja adds no search index to it"
    elif state == cjk_index.FOREIGN:
        reason = (
            f"its {cjk_index.TABLE} is not kaja's CJK search index "
            "(`kaja search --reindex` replaces it)"
        )
    elif state == cjk_index.MISSING:
        reason = f"it has no CJK search index and can't be written now ({why_not})"
    else:
        reason = f"its CJK search index is behind and it can't be written now ({why_not})"
    return (
        f"searched {path} by scanning its {plural(count, 'message')} in Chinese, "
        f"Japanese or Korean: {reason}"
    )


def _scan_cjk(conn: sqlite3.Connection, progress: ProgressFactory | None) -> int:
    """Index every message holding CJK text into a temporary FTS4 table."""
    conn.execute("PRAGMA temp.cache_size = -65536")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{SCAN_CJK_TABLE} USING fts4(content, {TOKENIZE})")
    upto = conn.execute("SELECT ifnull(max(rowid), 0) FROM main.messages").fetchone()[0]
    step, count = search_index.FILL_BATCH, 0
    with progress_of(progress, "scanning messages", upto) as bar:
        for low in range(0, upto, step):
            rows = conn.execute(
                "SELECT rowid, content FROM main.messages"
                f" WHERE rowid > ? AND rowid <= ? AND {cjk.maybe_cjk_sql('content')}",
                (low, low + step),
            )
            count += cjk_index.put(conn, f"temp.{SCAN_CJK_TABLE}", rows)
            bar(min(low + step, upto), upto)
    return count


def reindex(store: Store, path: Path, progress: ProgressFactory | None) -> None:
    """Rebuild the CJK index too, if the store has one (a first CJK search makes it)."""
    with db.open_write(path, store.paths.file_of("shared")) as conn:
        if not cjk_index.exists(conn):
            return
        with db.transaction(conn):
            cjk_index.reset(conn)
        with progress_of(progress, "indexing Chinese, Japanese and Korean", None) as bar:
            cjk_index.catch_up(conn, bar)


def snippets(
    conn: sqlite3.Connection, wanted: str, terms: list[cjk.Term]
) -> dict[int, tuple[str, tuple[tuple[int, int], ...]]]:
    """Snippets cut from the messages' text: the CJK index holds bigrams,
    whose own snippet() would show "東京 京都" for 東京都."""
    rows = conn.execute(
        "SELECT rowid, content FROM main.messages WHERE rowid IN (SELECT value FROM json_each(?))",
        (wanted,),
    )
    return {
        rowid: cjk.snippet(text, terms)
        for rowid, content in rows
        if (text := cjk_index.text_of(content)) is not None
    }
