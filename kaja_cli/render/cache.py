"""What `kaja cache` prints for a person or a pipe (the JSON is the results'
own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core import clock
from kaja_cli.core.side.cache import How
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.side.cache import CacheReport, ClearPlan, ClearResult, PrunePlan


def remarks(result: CacheReport) -> None:
    """What there is to say of the cache on stderr (with --json too)."""
    if not result.exists:
        render.note(f"no cache: there is no cache.db at {result.path}")
    elif not result.has_table:
        render.note(f"no cache entries: {result.path} has no shared_cache table")
    for line in result.remarks:
        render.note(line)


def report(result: CacheReport) -> None:
    if not result.namespaces:
        return
    # Counts and the hit rate never give way; on a narrow terminal the oldest
    # access, then the newest, then the size go (docs/guides/maintenance.md).
    cols = [
        Col("namespace", kind="text", min=10), Col("entries", justify="right"),
        Col("size", justify="right", drop=3), Col("expired", justify="right"),
        Col("oldest access", kind="whole", drop=1), Col("newest access", kind="whole", drop=2),
        Col("hit rate", justify="right"),
    ]  # fmt: skip
    rows, plain = [], []
    now = clock.now()
    for s in result.namespaces:
        rate = s.hit_rate
        rows.append(
            [s.namespace, f"{s.entries:,}", render.human_size(s.bytes), f"{s.expired:,}",
             render.relative_time(s.oldest_access, now) if s.oldest_access else "-",
             render.relative_time(s.newest_access, now) if s.newest_access else "-",
             "-" if rate is None else f"{rate:.0%}"]
        )  # fmt: skip
        plain.append(
            [s.namespace, s.entries, s.bytes, s.expired, s.oldest_access, s.newest_access,
             s.hits, s.misses, "" if rate is None else f"{rate:.4f}"]
        )  # fmt: skip
    entries = sum(s.entries for s in result.namespaces)
    expired = sum(s.expired for s in result.namespaces)
    caption = (
        f"{render.plural(entries, 'entry', 'entries')}, {expired:,} expired;"
        f" {result.path} takes {render.human_size(result.file_size)}"
        if result.exists else None
    )  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption)


# --- prune ------------------------------------------------------------------------------------
def expired(per_namespace: dict[str, int]) -> str:
    """'12 expired entries (web_fetch 10, embeddings 2)'."""
    total = render.plural(sum(per_namespace.values()), "expired entry", "expired entries")
    parts = ", ".join(f"{n} {c:,}" for n, c in per_namespace.items())
    return f"{total} ({parts})" if parts else total


def pruned(plan: PrunePlan, done: dict[str, int] | None = None, *, dry_run: bool = False) -> None:
    if plan.exists:
        verb = "would drop" if dry_run else "dropped"
        render.note(f"{verb} {expired(plan.expired if done is None else done)}")


# --- clear ------------------------------------------------------------------------------------
def clear_question(plan: ClearPlan) -> str:
    entries = render.plural(plan.total, "entry", "entries")
    if plan.how is How.FILE:
        size = render.human_size(sum(size for _, size in plan.files))
        what = "damaged" if plan.damaged else entries
        return f"Delete {plan.path} ({what}, {size})"
    if plan.namespace is not None:
        return f"Delete the {entries} of namespace {plan.namespace} from {plan.path}"
    return f"Empty {plan.path} ({entries}): {plan.why_rows}"


def cleared(plan: ClearPlan, done: ClearResult | None = None, *, dry_run: bool = False) -> None:
    how = plan.how if done is None else done.how
    if how is How.NOTHING:
        return
    if dry_run:
        what = clear_question(plan)
        render.note(f"dry run: would {what[:1].lower()}{what[1:]}; nothing was deleted")
        return
    assert done is not None
    count = render.plural(sum(done.entries.values()), "entry", "entries")
    if how is How.FILE:
        render.note(f"deleted {', '.join(str(p) for p in done.files)} ({count})")
    elif plan.namespace is not None:
        render.note(f"cleared namespace {plan.namespace} ({count})")
    else:
        render.note(f"emptied {plan.path} ({count}) instead of deleting it: {done.why_rows}")
