"""The search index check: present, its triggers in place, and in step with
the messages (counts, the segment tree, a sample looked up by its own words;
FTS4's own `integrity-check` with --thorough)."""

from __future__ import annotations

import contextlib
import re
import sqlite3

from kaja_cli.core.care.doctor.context import _INTERRUPTED as _INTERRUPTED  # for tests: Ctrl-C here
from kaja_cli.core.care.doctor.context import Context, raise_if_interrupted
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.care.doctor.repairs import rebuild_repair, schema_repair
from kaja_cli.core.engine import db
from kaja_cli.core.engine.sqlite_format import varints
from kaja_cli.core.store import schema, search_index
from kaja_cli.core.wording import noun, plural

SEARCH_SAMPLE = 16  # messages looked up in the index by the default check


_TOKEN = re.compile(r"[^\W_]+")


def _probe_word(text: str) -> str | None:
    """A word of `text` that the unicode61 tokenizer keeps whole: the longest ASCII one."""
    words = [w for w in _TOKEN.findall(text) if w.isascii() and len(w) >= 3]
    return max(words, key=len) if words else None


@check(
    "search-index", Group.SEARCH_INDEX,
    "the FTS4 index is present and in step with messages (counts and sampled lookups; "
    "FTS4 'integrity-check' with --thorough)",
    needs_shared=True,
)  # fmt: skip
def check_search_index(ctx: Context) -> Check:
    conn = ctx.conn("shared")
    assert conn is not None
    cid, group = "search-index", Group.SEARCH_INDEX
    tables = db.table_names(conn)
    if "messages" not in tables:
        return Check(cid, group, OK, "no messages table: nothing to index")
    if schema.FTS_TABLE not in tables:
        return Check(cid, group, WARN, f"no search index ({schema.FTS_TABLE})",
                     ["`kaja search` scans every message instead, which is slow on a large store"],
                     fix="create it and index every message", fixable=True,
                     repairs=(schema_repair(ctx, "shared"),))  # fmt: skip

    filling = (
        search_index.fill_state(conn) if search_index.state(conn) == search_index.FILLING else None
    )
    if filling is not None:
        upto, done = filling
        return Check(cid, group, WARN, f"the search index is being built: {done} of {plural(upto, 'message')} so far",
                     ["an index build was cut short (or is running now): the next writing kaja,",
                      "`kaja search` included, finishes it (one that can't write scans the messages)"],
                     fix="finish the build", fixable=True,
                     repairs=(schema_repair(ctx, "shared"),))  # fmt: skip
    if not search_index.present(conn):
        return Check(cid, group, WARN, "the triggers that keep the search index current are missing",
                     ["messages written since then are not found by `kaja search`"],
                     fix="recreate them and index every message", fixable=True,
                     repairs=(schema_repair(ctx, "shared"),))  # fmt: skip
    try:
        problems, details = _index_in_step(conn, count=False) if ctx.quick else _index_in_step(conn)
        if ctx.quick:
            ctx.skip(
                cid, "counting the messages against the index's count (reads every message's id)"
            )
        if ctx.thorough:
            failure = _fts_integrity(conn)
            if failure is not None:
                return Check(cid, group, ERROR, f"the search index is damaged: FTS4 integrity-check: {failure}",
                             problems + details, fix="rebuild it from the messages", fixable=True,
                             repairs=(rebuild_repair(ctx),))  # fmt: skip
            details.append("FTS4 integrity-check passed")
    except sqlite3.Error as e:
        raise_if_interrupted(e)
        text = str(e)
        if "no such module" in text:
            return Check(cid, group, WARN, f"the search index cannot be read: {text}",
                         ["this SQLite lacks FTS4 (see the versions check)"])  # fmt: skip
        if "locked" in text or "busy" in text:
            return Check(cid, group, WARN, "the search index: not checked, the file is busy")
        return Check(cid, group, ERROR, f"the search index is damaged: {text}",
                     fix="rebuild it from the messages", fixable=True, repairs=(rebuild_repair(ctx),))  # fmt: skip
    if problems:
        return Check(cid, group, WARN, f"the search index is out of step with messages: {problems[0]}",
                     [*problems[1:], *(d for d in details if d != problems[0]),
                      "`kaja search` misses messages or shows deleted ones"],
                     fix="rebuild it from the messages", fixable=True, repairs=(rebuild_repair(ctx),))  # fmt: skip
    return Check(
        cid, group, OK, f"the search index is in step with messages ({details[0]})", details[1:]
    )


def _index_in_step(conn: sqlite3.Connection, *, count: bool = True) -> tuple[list[str], list[str]]:
    """Cheap checks: counts, the segment tree, a sample.

    All bounded whatever the size but counting the messages, which reads an
    index of every message (left out by --quick: `count` False). FTS4's own
    'integrity-check' re-tokenizes every message (2.2 s on the benchmark
    store, three times its quick_check), so it runs with --thorough only.
    """
    fts = schema.FTS_TABLE
    problems: list[str] = []
    messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0] if count else None
    top_message = conn.execute("SELECT max(rowid) FROM messages").fetchone()[0]
    shadows = db.table_names(conn)
    if {f"{fts}_stat", f"{fts}_docsize"} <= shadows:
        # Kaja's index keeps document sizes (FTS4's default); one made by
        # another program with matchinfo=fts3 does not, and only gets sampled.
        row = conn.execute(f"SELECT value FROM {fts}_stat WHERE id = 0").fetchone()
        indexed = (varints(row[0], count=1) or [0])[0] if row and isinstance(row[0], bytes) else 0
        if messages is None:
            details = [f"{indexed} indexed, up to message {top_message}"]
        else:
            details = [f"{plural(messages, 'message')}, {indexed} indexed"]
            if indexed != messages:
                problems.append(f"{plural(messages, 'message')}, {indexed} indexed")
        top_doc = conn.execute(f"SELECT max(docid) FROM {fts}_docsize").fetchone()[0]
        if top_message != top_doc and not problems:
            problems.append(f"the last message is {top_message}, the last indexed one {top_doc}")
    else:
        details = [plural(messages, "message") if messages is not None
                   else f"messages up to {top_message}"]  # fmt: skip
    broken = conn.execute(
        f"SELECT count(*) FROM {fts}_segdir s WHERE"
        f" (s.start_block > 0 AND NOT EXISTS (SELECT 1 FROM {fts}_segments WHERE blockid = s.start_block))"
        f" OR (s.leaves_end_block > 0 AND NOT EXISTS (SELECT 1 FROM {fts}_segments WHERE blockid = s.leaves_end_block))"
    ).fetchone()[0]
    if broken:
        problems.append(f"{plural(broken, 'index segment')} point at missing blocks")
    # A sample of messages, spread over the table, each looked up in the index
    # by a word of its own under its own rowid: catches entries that point at
    # the wrong message, not only missing ones.
    # Two queries: SQLite answers min() or max() alone with one seek, both at once with a scan.
    lo = conn.execute("SELECT min(rowid) FROM messages").fetchone()[0]
    hi = top_message
    tried = missed = 0
    seen: set[int] = set()
    if lo is not None:
        steps = max(1, SEARCH_SAMPLE - 1)
        for i in range(SEARCH_SAMPLE):
            target = lo + (hi - lo) * i // steps
            found = conn.execute(
                "SELECT rowid, content FROM messages WHERE rowid >= ? AND content IS NOT NULL"
                " AND content != '' LIMIT 1",
                (target,),
            ).fetchone()
            if not found or found[0] in seen or not isinstance(found[1], str):
                continue
            seen.add(found[0])
            word = _probe_word(found[1])
            if word is None:
                continue
            tried += 1
            # `docid BETWEEN d AND d`, not `docid = d`: FTS4 then walks the
            # word's doclist only up to d (2 to 7 times faster on the
            # benchmark store's common words), where `=` takes a row lookup
            # and evaluates the whole MATCH for it.
            hit = conn.execute(
                f"SELECT count(*) FROM {fts} WHERE {fts} MATCH ? AND docid BETWEEN ? AND ?",
                (f'"{word}"', found[0], found[0]),
            ).fetchone()[0]
            missed += not hit
    their = noun(tried, "its", "their")
    details.append(f"{plural(tried, 'sampled message')} looked up by a word of {their} own,"
                   f" {missed} not found")  # fmt: skip
    if missed:
        problems.append(f"{missed} of {plural(tried, 'sampled message')}"
                        f" {noun(missed, 'is', 'are')} not found under {their} own words")  # fmt: skip
    return problems, details


def _fts_integrity(conn: sqlite3.Connection) -> str | None:
    """FTS4's 'integrity-check' on a read-only connection; the error text, or None.

    The check is an INSERT, refused on a read-only file. So the index's four
    shadow tables are copied into the connection's temp schema, under an FTS4
    table reading the messages through a temp view, and checked there: the
    store's files are never written.
    """
    fts = schema.FTS_TABLE
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (fts,)).fetchone()[0]
    ddl, n = re.subn(
        r"^CREATE VIRTUAL TABLE\s+(IF NOT EXISTS\s+)?\S+",
        "CREATE VIRTUAL TABLE temp.doctor_fts",
        sql,
    )
    ddl, m = re.subn(r"""content\s*=\s*["'`]?messages["'`]?""", 'content="doctor_fts_content"', ddl)
    if not n or not m:
        return None  # not kaja's external-content index: nothing comparable to check
    conn.execute(
        "CREATE TEMP VIEW doctor_fts_content AS SELECT rowid AS rowid, content FROM main.messages"
    )
    try:
        conn.execute(ddl)
        present = db.table_names(conn)
        for shadow in ("segments", "segdir", "docsize", "stat"):
            if f"{fts}_{shadow}" in present:  # the same options made the same shadow tables
                conn.execute(
                    f"INSERT INTO temp.doctor_fts_{shadow} SELECT * FROM main.{fts}_{shadow}"
                )
        try:
            conn.execute("INSERT INTO temp.doctor_fts(doctor_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as e:
            raise_if_interrupted(e)
            return str(e)
        return None
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("DROP TABLE IF EXISTS temp.doctor_fts")
            conn.execute("DROP VIEW IF EXISTS temp.doctor_fts_content")
