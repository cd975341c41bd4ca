"""`kaja cache`: what the shared cache (cache.db) holds; `prune` and `clear` it."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.side.cache import CacheReport, ClearPlan, ClearResult, PrunePlan

app = typer.Typer(
    help="Show what the shared cache holds per namespace; prune or clear it.",
    invoke_without_command=True,
)

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Don't ask first.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Only show what would be deleted.")]
Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
DoneJson = Annotated[bool, typer.Option("--json", help="Print what was done as one JSON document.")]


@app.callback(invoke_without_command=True)
def cache(ctx: typer.Context, as_json: Json = False) -> None:
    """Show what the shared cache holds per namespace; prune or clear it.

    Without a subcommand: for each namespace (web fetches, embeddings…) its
    entries, their size, how many have expired, the oldest and newest access,
    and the hit rate the agent counted (cache_stats in the shared file).
    Reads cache.db read-only. Piped, the rows are tab-separated with bytes,
    ISO times, hits and misses.
    """
    if ctx.invoked_subcommand is not None:
        if as_json:
            from kaja_cli.errors import UsageError

            raise UsageError(
                f"--json belongs to the listing, not to `{ctx.invoked_subcommand}`",
                hint=f"put it after it: kaja cache {ctx.invoked_subcommand} --json",
            )
        return
    from kaja_cli import render
    from kaja_cli.core.side import cache as core

    result = core.report(store_of(ctx))
    if not result.exists:
        render.note(f"no cache: there is no cache.db at {result.path}")
    elif not result.has_table:
        render.note(f"no cache entries: {result.path} has no shared_cache table")
    for line in result.remarks:
        render.note(line)
    if as_json:
        render.emit_json(_report_json(result))
    elif result.namespaces:
        _table(result)


def _report_json(result: "CacheReport") -> dict:
    def one(s) -> dict:
        rate = s.hit_rate
        return {
            "namespace": s.namespace, "entries": s.entries, "bytes": s.bytes,
            "expired": s.expired, "oldest_access": s.oldest_access,
            "newest_access": s.newest_access, "hits": s.hits, "misses": s.misses,
            "hit_rate": None if rate is None else round(rate, 4),
        }  # fmt: skip

    spaces = result.namespaces
    return {
        "path": str(result.path), "exists": result.exists, "file_size": result.file_size,
        "namespaces": [one(s) for s in spaces],
        "total": {"entries": sum(s.entries for s in spaces),
                  "bytes": sum(s.bytes for s in spaces),
                  "expired": sum(s.expired for s in spaces)},
    }  # fmt: skip


def _table(result: "CacheReport") -> None:
    from kaja_cli import render
    from kaja_cli.core import clock

    Col = render.Col
    # Counts and the hit rate never give way; on a narrow terminal the oldest
    # access, then the newest, then the size go (README, "The cache").
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


@app.command("prune")
def prune(
    ctx: typer.Context, yes: Yes = False, dry_run: DryRun = False, as_json: DoneJson = False
) -> None:
    """Drop the expired entries (what the agent would drop as it goes).

    One transaction; if the agent is writing, waits for it up to 5 seconds,
    then gives up (exit 4). Asks first; with no terminal to ask, refuses
    unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.side import cache as core

    store = store_of(ctx)
    plan = core.plan_prune(store)
    if not plan.exists:
        render.note(f"nothing to prune: there is no cache.db at {plan.path}")
    if dry_run or not plan.total:
        _prune_out(plan, plan.expired, dry_run=dry_run, as_json=as_json)
        return
    render.confirm(f"Drop {_entries(plan.expired)} from {plan.path}?", assume_yes=yes)
    _prune_out(plan, core.prune(store, plan), dry_run=False, as_json=as_json)


def _entries(per_namespace: dict[str, int]) -> str:
    from kaja_cli import render

    total = render.plural(sum(per_namespace.values()), "expired entry", "expired entries")
    parts = ", ".join(f"{n} {c:,}" for n, c in per_namespace.items())
    return f"{total} ({parts})" if parts else total


def _prune_out(plan: "PrunePlan", done: dict[str, int], *, dry_run: bool, as_json: bool) -> None:
    from kaja_cli import render

    if as_json:
        render.emit_json({"action": "prune", "dry_run": dry_run, "path": str(plan.path),
                          "expired_before": plan.now, "namespaces": done,
                          "deleted": 0 if dry_run else sum(done.values())})  # fmt: skip
        return
    if plan.exists:
        render.note(f"{'would drop' if dry_run else 'dropped'} {_entries(done)}")


@app.command("clear")
def clear(
    ctx: typer.Context,
    namespace: Annotated[
        str | None,
        typer.Argument(
            metavar="[NAMESPACE]",
            help="Only this namespace (web_fetch, embeddings…).",
            autocompletion=hook("namespace"),
            show_default=False,
        ),
    ] = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: DoneJson = False,
) -> None:
    """Clear the cache: one namespace, or all of it.

    Without a namespace, cache.db is deleted with its -wal, -shm and
    -journal (the cache can be deleted at any time), unless another process
    has it open or it is a symbolic link: then it is emptied instead, in
    one transaction. A file that is not Kaja's cache is refused (exit 5).
    Asks first; with no terminal to ask, refuses unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.side import cache as core

    store = store_of(ctx)
    plan = core.plan_clear(store, namespace)
    if plan.how is core.How.NOTHING:
        render.note(f"nothing to clear: there is no cache.db at {plan.path}")
    if dry_run or plan.how is core.How.NOTHING:
        _clear_out(plan, None, dry_run=dry_run, as_json=as_json)
        return
    render.confirm(f"{_clear_question(plan)}?", assume_yes=yes)
    _clear_out(plan, core.clear(store, plan), dry_run=False, as_json=as_json)


def _clear_question(plan: "ClearPlan") -> str:
    from kaja_cli import render
    from kaja_cli.core.side.cache import How

    entries = render.plural(plan.total, "entry", "entries")
    if plan.how is How.FILE:
        size = render.human_size(sum(size for _, size in plan.files))
        what = "damaged" if plan.damaged else entries
        return f"Delete {plan.path} ({what}, {size})"
    if plan.namespace is not None:
        return f"Delete the {entries} of namespace {plan.namespace} from {plan.path}"
    return f"Empty {plan.path} ({entries}): {plan.why_rows}"


def _clear_out(
    plan: "ClearPlan", done: "ClearResult | None", *, dry_run: bool, as_json: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.side.cache import How

    how = plan.how if done is None else done.how
    entries = plan.entries if done is None else done.entries
    why = plan.why_rows if done is None else done.why_rows
    files = [p for p, _ in plan.files] if done is None else done.files
    if as_json:
        render.emit_json({"action": "clear", "dry_run": dry_run, "path": str(plan.path),
                          "namespace": plan.namespace, "how": str(how), "why": why,
                          "damaged": plan.damaged, "namespaces": entries,
                          "entries": sum(entries.values()),
                          "files": [str(p) for p in files]})  # fmt: skip
        return
    if how is How.NOTHING:
        return
    if dry_run:
        what = _clear_question(plan)
        render.note(f"dry run: would {what[:1].lower()}{what[1:]}; nothing was deleted")
        return
    count = render.plural(sum(entries.values()), "entry", "entries")
    if how is How.FILE:
        render.note(f"deleted {', '.join(str(p) for p in files)} ({count})")
    elif plan.namespace is not None:
        render.note(f"cleared namespace {plan.namespace} ({count})")
    else:
        render.note(f"emptied {plan.path} ({count}) instead of deleting it: {why}")
