"""What `kaja sessions` prints for a person or a pipe: the listing, `delete`,
`prune`, `rename`, `archive` and `stats` (their JSON is the results' own
`to_json()`; `kaja sessions export` writes through `render/export.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaja_cli import render
from kaja_cli.core import clock
from kaja_cli.core.owners import label
from kaja_cli.render import Col
from kaja_cli.render import Styled as S

if TYPE_CHECKING:
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.conversations.prune import PrunePlan, PruneResult
    from kaja_cli.core.conversations.sessions import DeletePlan, DeleteResult, Listing
    from kaja_cli.core.conversations.stats import Stats, Totals
    from kaja_cli.core.qdrant import Forget

TITLE_ROOM = 20  # a listing's title wraps to two lines, not four, before columns go


# --- the listing ------------------------------------------------------------------------------
def no_store(result: Listing | Stats) -> None:
    """There is no store where the listing (or stats) looked: said on stderr."""
    if not result.store_exists:
        render.note(f"no sessions: there is no Kaja store at {result.location}")


def none_listed(result: Listing, flt: SessionFilter) -> None:
    """Why the listing is empty, on stderr (with --json too)."""
    if not result.store_exists:
        no_store(result)
    elif not result.has_sessions_table:
        render.note(f"no sessions: {result.location} has no sessions table")
    elif not result.sessions:
        whose = "anyone" if flt.owner is None else flt.owner.label
        archived = " archived" if flt.archived == "only" else ""
        matching = flt.narrowed and flt.described() != ["--archived"]
        render.note(
            f"no{archived} sessions for {whose}" + (" matching the filters" if matching else "")
        )


def listing(result: Listing, flt: SessionFilter) -> None:
    """The sessions, newest first: a table on a terminal, full ids and ISO times piped."""
    if not result.sessions:
        return
    all_owners = flt.owner is None
    more = f"{result.left_out} more not shown (--limit 0 shows all)" if result.left_out else None
    # The id (you type it), the counts and the mark never give way; the title,
    # persona and model wrap; on a narrow terminal persona, model, the message
    # count and the time go, in that order (docs/guides/conversations.md), before
    # the title, what a row is, gets narrower than TITLE_ROOM.
    text = "text"
    cols = [Col("id", style="cyan", kind="whole"), Col("updated", kind="whole", drop=4)]
    if all_owners:
        cols.append(Col("owner", kind="whole"))
    cols += [
        Col("title", kind=text, min=TITLE_ROOM),
        Col("persona", kind=text, drop=1),
        Col("model", kind=text, drop=2),
        Col("msgs", justify="right", drop=3),
        Col("tokens", justify="right"),
    ]
    pending = any(s.pending for s in result.sessions)
    if pending:
        cols.append(Col("", kind="whole"))
    rows, plain = [], []
    now = clock.now()
    for s in result.sessions:
        r = s.row
        kind = (render.text(r.get("pendingKind")) or "pending") if s.pending else ""
        owner = [label(r.get("owner"))] if all_owners else []
        if r.get("title"):
            title = S(render.text(r["title"]))
        elif s.first_prompt:
            title = S("“" + " ".join(s.first_prompt.split())[:57] + "”", "dim italic")
        else:
            title = S("(untitled)", "dim")
        mark = [S("⏸ " + kind, "bold yellow") if kind else ""] if pending else []
        rows.append(
            [S(s.short_id, "cyan"), render.relative_time(r.get("updatedAt"), now), *owner, title,
             r.get("persona"), r.get("model"), s.message_count, render.human_count(s.tokens),
             *mark]
        )  # fmt: skip
        plain.append(
            [s.id, r.get("updatedAt"), *owner, r.get("title"), r.get("persona"), r.get("model"),
             s.message_count, s.tokens, kind]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=more)


# --- delete -----------------------------------------------------------------------------------
def deletion(plan: DeletePlan, points: Forget | None) -> str:
    """What `kaja sessions delete` will delete, as its question says it."""
    n = len(plan.sessions)
    if not n:
        text = f"{render.plural(len(plan.left_over), 'image folder')} an interrupted delete left"
        text += f" ({render.plural(plan.image_files, 'image file')})"
    else:
        text = render.plural(n, "session")
        if n == 1:
            text += f" “{plan.sessions[0].title or 'untitled'}”"
        text += f" ({rows_text(plan.rows)}"
        if plan.image_files:
            text += f", {render.plural(plan.image_files, 'image file')}"
            text += f", {render.human_size(plan.image_bytes)}"
        text += ")"
    if points and points.points:
        text += f" and {render.plural(points.points, 'point')} in Qdrant"
    return text


def delete_plan(plan: DeletePlan, *, yes: bool) -> None:
    """Before the question: the sessions (when there are several to ask about)."""
    if not yes and len(plan.sessions) > 1:
        for s in plan.sessions:
            render.note(f"will delete {s.id}  {s.title or '(untitled)'}")
    if plan.images_link is not None:
        render.note(
            f"keeping their image folders: {plan.images_link} is a symbolic link,"
            " and kaja deletes nothing through one"
        )


def deleted(
    done: DeleteResult, *, qdrant_points: int | None, points: Forget | None, dry_run: bool = False
) -> None:
    verb = "dry run: would delete" if dry_run else "deleted"
    end = "; nothing was deleted" if dry_run else ""
    if not done.sessions:
        n = render.plural(len(done.image_folders), "image folder")
        verb = "dry run: would remove" if dry_run else "removed"
        render.note(f"{verb} {n} an interrupted delete left{end}")
        return
    n, f = len(done.sessions), len(done.image_folders)
    folders = f" and {render.plural(f, 'image folder')}" if f else ""
    qdrant = ""
    if points is not None:
        qdrant = (f"; {render.plural(qdrant_points or 0, 'point')} of them from Qdrant"
                  f" ({points.where.collection} at {points.where.where})")  # fmt: skip
    if dry_run:
        render.note(f"{verb} {render.plural(n, 'session')} ({rows_text(done.rows)}){folders}"
                    f"{qdrant}{end}")  # fmt: skip
        return
    render.note(f"{verb} {render.plural(n, 'session')} ({rows_text(done.rows)}){folders}")
    if points is not None:
        render.note(f"deleted {qdrant[2:]}")


def rows_text(rows: dict[str, int]) -> str:
    """'12 messages, 3 tool calls, 1 summary': what hangs off deleted sessions."""
    names = {"messages": "message", "tool_calls": "tool call", "session_summaries": "summary",
             "model_calls": "model call", "session_events": "event"}  # fmt: skip
    parts = []
    for table, word in names.items():
        n = rows.get(table, 0)
        if n:
            parts.append(render.plural(n, word, "summaries" if word == "summary" else None))
    return ", ".join(parts) or "no messages"


# --- rename, archive --------------------------------------------------------------------------
def renamed(done: Any, *, dry_run: bool = False) -> None:
    old, new = render.text(done.old_title), render.text(done.new_title)  # no control character
    if dry_run:
        render.note(
            f"dry run: would rename {done.session.id}: {old or '(untitled)'} → {new};"
            " nothing was changed"
        )
    else:
        render.note(f"renamed {done.session.id}: {old or '(untitled)'} → {new}")


def archived(done: Any, *, archived: bool, dry_run: bool = False) -> None:
    verb = "archived" if archived else "unarchived"
    would = f"dry run: would {verb[:-1]}" if dry_run else verb
    for s in done.changed:
        render.note(f"{would} {s.id}  {render.text(s.title) or '(untitled)'}")
    for s in done.unchanged:
        render.note(f"{s.id} was already {verb}")
    if dry_run:
        render.note("dry run: nothing was changed")


# --- prune ------------------------------------------------------------------------------------
def nothing_to_prune(plan: PrunePlan, *, dry_run: bool) -> None:
    if not plan.store_exists:
        render.note(f"nothing to prune: there is no Kaja store at {plan.location}")
        return
    render.note("nothing to prune: no session matches the filters")
    if plan.pending_kept:
        render.note(f"{_pending(plan.pending_kept)} (--include-pending deletes them)")


def _pending(n: int) -> str:
    return f"{render.plural(n, 'session')} with a call waiting on you kept"


def prune_plan(plan: PrunePlan, *, counted: bool = True) -> None:
    """The plan: the sessions (a sample on a terminal, all of them piped), then
    a summary (not `counted`: --yes's one pass, which counts as it deletes)."""
    everyone = plan.filter.owner is None
    terminal = render.stdout_is_terminal()
    shown = plan.sample if terminal else plan.sessions
    cols = [Col("id", style="cyan", kind="whole"), Col("updated", kind="whole")]
    if everyone:
        cols.append(Col("owner", kind="whole"))
    cols += [Col("title", kind="text"), Col("msgs", justify="right")]
    rows = []
    for c in shown:
        owner = [label(c.owner)] if everyone else []
        updated = clock.day_of(c.updated or "-") if terminal else c.updated
        rows.append([c.id if not terminal else c.id[:13], updated, *owner, c.title, c.messages])
    more = len(plan.sessions) - len(shown)
    caption = f"… and {render.plural(more, 'more session')} between them" if more else None
    if rows:
        render.table(cols, rows, caption=caption)
    if counted:
        render.note(f"will delete {_prune_sizes(plan)}")
    if plan.pending_kept:
        render.note(f"{_pending(plan.pending_kept)} (--include-pending deletes them too)")
    if plan.leftovers:
        n = render.plural(len(plan.leftovers), "image folder")
        render.note(f"and finish an interrupted prune: {n} of deleted sessions")


def _prune_sizes(plan: PrunePlan) -> str:
    text = render.plural(len(plan.sessions), "session")
    text += f" ({rows_text(plan.rows)}; {render.human_size(plan.message_bytes)} of text"
    if plan.image_files:
        text += f", {render.plural(plan.image_files, 'image file')}"
        text += f" ({render.human_size(plan.image_bytes)})"
    return text + ")"


def prune_question(plan: PrunePlan) -> str:
    what = render.plural(len(plan.sessions), "session")
    return f"Delete these {what}? This cannot be undone."


def pruned(plan: PrunePlan, *, dry_run: bool = False, done: PruneResult | None = None) -> None:
    if done is None:
        render.note("dry run: nothing was deleted")
        return
    folders = render.plural(done.image_folders, "image folder")
    batches = render.plural(done.batches, "transaction")
    if done.ids:  # --yes's one pass: what its statements deleted, measured as it went
        render.note(f"deleted {_prune_sizes(plan)} and {folders} in {batches}")
    else:
        render.note(
            f"deleted {render.plural(done.deleted, 'session')} ({rows_text(done.rows)})"
            f" and {folders} in {batches}"
        )
    if done.skipped:
        render.note(
            f"{render.plural(done.skipped, 'session')} changed meanwhile (or went) and were"
            " left alone"
        )
    for folder, why in done.kept_folders:
        render.note(f"kept {folder}: {why}")


# --- stats ------------------------------------------------------------------------------------
def stats(r: Stats, *, flt: SessionFilter) -> None:
    """Every section a table (piped: each row with its section first)."""
    size, n = render.human_size, render.human_count
    terminal = render.stdout_is_terminal()

    def section(name: str, groups: list[Totals], show=lambda k: k or "(none)") -> None:
        cols = [Col(name, style="bold"), Col("sessions", "right"), Col("messages", "right"),
                Col("tokens", "right"), Col("bytes", "right")]  # fmt: skip
        rows = [[show(t.key), n(t.sessions), n(t.messages), n(t.tokens), size(t.bytes)]
                for t in groups]  # fmt: skip
        plain = [[name, show(t.key), t.sessions, t.messages, t.prompt_tokens, t.completion_tokens,
                  t.bytes] for t in groups]  # fmt: skip
        render.table(cols, rows, plain_rows=plain, title=" " if terminal else None)

    t = r.total
    render.table(
        [Col("", style="bold"), Col("", "right")],
        [["sessions", n(t.sessions)], ["messages", n(t.messages)], ["tokens", n(t.tokens)],
         ["text", size(t.bytes)], ["images", f"{size(r.image_bytes)} ({render.plural(r.image_files, 'file')})"],
         ["search index", size(r.index_bytes) if r.index_bytes is not None else "-"],
         ["database file", size(r.database_bytes)]],
        plain_rows=[["total", t.sessions, t.messages, t.prompt_tokens, t.completion_tokens, t.bytes,
                     r.image_files, r.image_bytes, r.index_bytes, r.database_bytes]],
        title="total" if terminal else None,
    )  # fmt: skip
    section("owner", r.by_owner, label)
    section("model", r.by_model)
    section("persona", r.by_persona)
    section("month", r.by_month)
    render.table(
        [Col("id", style="cyan", kind="whole"), Col("owner", kind="whole", drop=2),
         Col("title", kind="text"), Col("messages", "right", drop=1), Col("tokens", "right"),
         Col("bytes", "right"), Col("images", "right", drop=3)],
        [[S(x.id[:13], "cyan"), label(x.owner), x.title or "(untitled)", n(x.messages), n(x.tokens),
          size(x.bytes), size(x.image_bytes) if x.image_bytes else "-"] for x in r.largest],
        plain_rows=[["largest", x.id, x.owner, x.title, x.messages, x.tokens, x.bytes, x.image_bytes]
                    for x in r.largest],
        title="\nlargest sessions" if terminal else None,
    )  # fmt: skip
