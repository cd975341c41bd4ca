"""`kaja reviews` and `kaja reviews done`: the runs flagged for a person to look at.

The queue is the `reviews` table (at most one row per run), needs-review
first, each with its run's agent, prompt and status (LEFT JOIN: a review may
be written before its run). `done` marks one complete with ordinary SQL in
one transaction (`status`, `reviewed_at`, `updated_at`, and `note` when
given), so the agent's sync triggers queue the change like any other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kaja_cli.core import clock
from kaja_cli.core.audit.common import Listing, col, columns, find_id, select, usable
from kaja_cli.core.engine import dialect
from kaja_cli.core.owners import Owner, label
from kaja_cli.core.store import Store, whose

REVIEW_COLUMNS = ("run_id", "status", "reason", "tags", "note", "flagged_at", "reviewed_at",
                  "updated_at")  # fmt: skip
NEEDS_REVIEW, COMPLETE = "needs-review", "complete"


@dataclass
class Review:
    run_id: str
    status: str | None
    reason: str | None
    tags: str | None
    note: str | None
    flagged_at: str | None
    reviewed_at: str | None
    updated_at: str | None
    agent: str | None = None
    prompt: str | None = None
    run_status: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def listing(
    store: Store, *, status: str | None = None, limit: int = 0, owner: Owner | None = None
) -> Listing:
    """The review queue: needs-review first, then the newest flagged; of
    `owner`'s runs only (`store.whose`), or everyone's (None)."""
    out = Listing("reviews", store.where())
    with store.maybe_reader() as conn:
        if conn is None:
            out.exists = False
            return out
        have = columns(conn, "reviews", "runs", "sessions")
        if not usable(out, have, "reviews", "run_id"):
            return out
        rv, runs = have["reviews"], have.get("runs")
        joined = runs is not None and "id" in runs
        extra = (
            f"{col(runs, 'r', 'agent')}, {col(runs, 'r', 'prompt')}, {col(runs, 'r', 'status')}"
            if joined
            else "NULL, NULL, NULL"
        )
        join = " LEFT JOIN runs r ON r.id = v.run_id" if joined else ""
        # Each review's run asked on its own, up its parents (`whose.owns`):
        # reviews are a few runs in thousands, where the owner's runs all read
        # to pick them out cost far more.
        mine, args = (
            ("1 = 1", ())
            if owner is None
            else whose.owns("v.run_id", owner, have, dialect.of(conn))
        )
        where = f" WHERE {mine}"
        if status is not None:
            where, args = f"{where} AND {col(rv, 'v', 'status')} = ?", [*args, status]
        rows = conn.execute(
            f"SELECT {select(rv, 'v', REVIEW_COLUMNS)}, {extra} FROM reviews v{join}{where}"
            f" ORDER BY CASE WHEN {col(rv, 'v', 'status')} = '{NEEDS_REVIEW}' THEN 0 ELSE 1 END,"
            f" {col(rv, 'v', 'flagged_at')} DESC, v.run_id",
            args,
        ).fetchall()
    out.rows = [Review(*r) for r in rows]
    if limit and len(out.rows) > limit:
        out.rows, out.more = out.rows[:limit], len(out.rows) - limit
    return out


@dataclass
class Done:
    """What `reviews done` did: the review as it is now, and whether it changed."""

    review: Review
    changed: bool
    completed: bool = False  # this call marked it complete (it was not before)

    def to_json(self, *, dry_run: bool = False) -> dict[str, Any]:
        return {"dry_run": dry_run, "review": self.review.to_json(), "changed": self.changed,
                "completed": self.completed}  # fmt: skip


def done(
    store: Store,
    ref: str,
    note: str | None = None,
    *,
    dry_run: bool = False,
    owner: Owner | None = None,
) -> Done:
    """Mark the review of run `ref` (an id or unique prefix) complete; one
    transaction. NotFound (exit 3) when the run is not in the queue (or not
    one of `owner`'s runs, when given). An already complete review is left as
    it is, unless a note is given. `dry_run`: the same lookup read only, and
    the review as it would be."""
    from kaja_cli.errors import NotFound

    with store.maybe_reader() as conn:
        present = conn is not None and "run_id" in (columns(conn, "reviews").get("reviews") or [])
    if not present:
        raise NotFound(f"no review of run {ref.strip()!r}: no reviews recorded in {store.where()}")
    import contextlib
    from dataclasses import replace

    from kaja_cli.core.engine import db

    opened = store.reader(writing=True) if dry_run else store.writer()
    with opened as conn, contextlib.nullcontext() if dry_run else db.transaction(conn):
        hint, among = "`kaja reviews` lists the queue", ("1 = 1", ())
        if owner is not None:
            have = columns(conn, "runs", "sessions")
            among = whose.owns("reviews.run_id", owner, have, dialect.of(conn))
            hint = f"not among {label(owner.id)}'s runs; --all-owners looks at everyone's"
        run_id = find_id(conn, "reviews", "run_id", ref, "review of run", hint, among)
        before = after = _one(conn, run_id)
        changed = before.status != COMPLETE or (note is not None and note != before.note)
        if changed:
            now = clock.now_iso()
            reviewed = before.reviewed_at if before.status == COMPLETE else now
            if dry_run:  # the review as the UPDATE below would leave it
                after = replace(before, status=COMPLETE, reviewed_at=reviewed, updated_at=now,
                                note=before.note if note is None else note)  # fmt: skip
            else:
                conn.execute(
                    "UPDATE reviews SET status = ?, reviewed_at = ?, updated_at = ?,"
                    " note = COALESCE(?, note) WHERE run_id = ?",
                    (COMPLETE, reviewed, now, note, run_id),
                )
                after = _one(conn, run_id)
    return Done(after, changed, completed=before.status != COMPLETE)


def _one(conn: Any, run_id: str) -> Review:
    have = columns(conn, "reviews", "runs")
    runs = have.get("runs")
    joined = runs is not None and "id" in runs
    extra = (
        f"{col(runs, 'r', 'agent')}, {col(runs, 'r', 'prompt')}, {col(runs, 'r', 'status')}"
        if joined
        else "NULL, NULL, NULL"
    )
    join = " LEFT JOIN runs r ON r.id = v.run_id" if joined else ""
    row = conn.execute(
        f"SELECT {select(have['reviews'], 'v', REVIEW_COLUMNS)}, {extra} FROM reviews v{join}"
        " WHERE v.run_id = ?",
        (run_id,),
    ).fetchone()
    return Review(*row)


def run_ids(conn: Any, prefix: str) -> list[tuple[str, str | None, str | None]]:
    """Runs in the queue starting with `prefix`, for TAB: (run_id, status, reason)."""
    have = columns(conn, "reviews").get("reviews")
    if not have or "run_id" not in have:
        return []
    return conn.execute(
        f"SELECT v.run_id, {col(have, 'v', 'status')}, {col(have, 'v', 'reason')} FROM reviews v"
        " WHERE v.run_id >= ? AND v.run_id < ? ORDER BY v.run_id LIMIT 200",
        (prefix, prefix + "\U0010ffff"),
    ).fetchall()
