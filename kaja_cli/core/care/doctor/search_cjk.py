"""The CJK search index check: made or not, its triggers and queue in place,
a build finished, and no entry left of a message that is gone (with
--thorough: every message holding CJK text indexed or queued).

The index is made by the first search for a Chinese, Japanese or Korean word,
so a store without one is fine; messages queued by the agent's triggers are
normal too (the next CJK search indexes them)."""

from __future__ import annotations

import sqlite3

from kaja_cli.core.care.doctor.context import Context, raise_if_interrupted
from kaja_cli.core.care.doctor.model import OK, WARN, Check, Group, Repair, RepairOrder
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.care.doctor.repairs import FIX_TIMEOUT_MS
from kaja_cli.core.conversations.search import cjk, cjk_index
from kaja_cli.core.engine import db
from kaja_cli.core.wording import plural

CID, GROUP = "search-index-cjk", Group.SEARCH_INDEX


def rebuild_cjk_repair(ctx: Context) -> Repair:
    """Start the CJK index again from the messages, in short transactions
    (the agent may write meanwhile: what it writes is queued)."""
    path = ctx.db_path("shared")

    def run() -> str:
        with db.open_write(path, ctx.file("shared"), timeout_ms=FIX_TIMEOUT_MS) as conn:
            with db.transaction(conn):
                cjk_index.reset(conn)
            cjk_index.catch_up(conn)
            n = cjk_index.indexed(conn)
        return f"{path.name}: rebuilt the CJK search index ({plural(n, 'message')})"

    return Repair("rebuild-search-cjk:shared", RepairOrder.SEARCH_INDEX, run, "shared")


@check(
    CID, GROUP,
    "the index of Chinese, Japanese and Korean text: triggers, queue, build, entries of "
    "deleted messages (with --thorough, every such message indexed or queued)",
    needs_shared=True,
)  # fmt: skip
def check_cjk_index(ctx: Context) -> Check:
    conn = ctx.conn("shared")
    assert conn is not None
    tables = db.table_names(conn)
    if "messages" not in tables:
        return Check(CID, GROUP, OK, "no messages table: nothing to index")
    try:
        return _look(ctx, conn, tables)
    except sqlite3.Error as e:
        raise_if_interrupted(e)
        text = str(e)
        if "locked" in text or "busy" in text:
            return Check(CID, GROUP, WARN, "the CJK search index: not checked, the file is busy")
        return Check(CID, GROUP, WARN, f"the CJK search index cannot be read: {text}",
                     fix="rebuild it from the messages", fixable=True,
                     repairs=(rebuild_cjk_repair(ctx),))  # fmt: skip


def _look(ctx: Context, conn: sqlite3.Connection, tables: set[str]) -> Check:
    state = cjk_index.state(conn)
    if state == cjk_index.MISSING and cjk_index.TABLE not in tables:
        return Check(CID, GROUP, OK, "no CJK search index yet: the first search in Chinese, "
                     "Japanese or Korean makes it")  # fmt: skip
    if state == cjk_index.FOREIGN:
        return Check(CID, GROUP, WARN, f"{cjk_index.TABLE} is not kaja's CJK search index",
                     ["`kaja search` scans messages for Chinese, Japanese and Korean words"],
                     fix="`kaja search --reindex` replaces it")  # fmt: skip
    if state == cjk_index.MISSING:
        return Check(CID, GROUP, WARN, "the CJK search index lacks a trigger or its queue",
                     ["messages written since may be missing from it, or deleted ones shown"],
                     fix="rebuild it from the messages", fixable=True,
                     repairs=(rebuild_cjk_repair(ctx),))  # fmt: skip
    if state == cjk_index.FILLING:
        upto, done = cjk_index.fill_state(conn) or (0, 0)
        return Check(CID, GROUP, WARN, f"the CJK search index is being built: up to message {done} of {upto}",
                     ["a build was cut short (or is running now): the next CJK search finishes it"],
                     fix="rebuild it from the messages", fixable=True,
                     repairs=(rebuild_cjk_repair(ctx),))  # fmt: skip
    indexed, queued = cjk_index.indexed(conn), cjk_index.queued(conn)
    details = [f"{plural(queued, 'message')} queued for the next CJK search"] if queued else []
    gone = 0
    if ctx.quick:
        ctx.skip(CID, "looking for entries of deleted messages (reads every entry)")
    else:
        gone = conn.execute(
            f"SELECT count(*) FROM {cjk_index.TABLE}_docsize AS d"
            " WHERE NOT EXISTS (SELECT 1 FROM messages WHERE rowid = d.docid)"
        ).fetchone()[0]
    problems = [f"{plural(gone, 'entry', 'entries')} of deleted messages"] if gone else []
    if ctx.thorough:
        rows = conn.execute(
            f"SELECT content FROM messages AS m WHERE {cjk.maybe_cjk_sql('content')}"
            f" AND NOT EXISTS (SELECT 1 FROM {cjk_index.TABLE}_docsize WHERE docid = m.rowid)"
            f" AND NOT EXISTS (SELECT 1 FROM {cjk_index.QUEUE} WHERE docid = m.rowid)"
        )
        missed = sum(
            1 for (content,) in rows if (text := cjk_index.text_of(content)) and cjk.holds_cjk(text)
        )
        if missed:
            problems.append(f"{plural(missed, 'message')} with CJK text neither indexed nor queued")
        else:
            details.append("every message with CJK text is indexed or queued")
    if problems:
        return Check(CID, GROUP, WARN, f"the CJK search index is out of step: {problems[0]}",
                     [*problems[1:], *details], fix="rebuild it from the messages", fixable=True,
                     repairs=(rebuild_cjk_repair(ctx),))  # fmt: skip
    return Check(CID, GROUP, OK, f"the CJK search index is in step ({plural(indexed, 'message')})",
                 details)  # fmt: skip
