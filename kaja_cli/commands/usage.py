"""`kaja usage`: what the agent spent, from the usage ledger; `kaja usage reset` clears it."""

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, count, seconds, store_of

if TYPE_CHECKING:
    from kaja_cli.core.ledger.sync import MachineTotals
    from kaja_cli.core.ledger.usage import ResetPlan, Totals, UsageReport, VacuumResult


class By(StrEnum):
    model = "model"
    day = "day"
    source = "source"
    engine = "engine"


app = typer.Typer()


@app.callback(invoke_without_command=True)
def usage(
    ctx: typer.Context,
    by: Annotated[
        By, typer.Option(case_sensitive=False, help="Group the calls by this.")
    ] = By.model,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN", help="Only from then on: 2026-11-01, 2026-11-01T08:00, 3d, 12h."
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option(metavar="WHEN", help="Only before then (same forms as --since).")
    ] = None,
    tools: Annotated[
        int,
        typer.Option(
            "--tools",
            click_type=count(),
            metavar="N",
            help="Show the N tools that fail most (0 = all).",
        ),
    ] = 10,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="Never page long output on a terminal.")
    ] = False,
    all_machines: Annotated[
        bool,
        typer.Option(
            "--all-machines", help="Report the shared ledger on PostgreSQL: every machine's usage."
        ),
    ] = False,
    url: Annotated[
        str | None,
        typer.Option(
            "--url", metavar="URL", help="With --all-machines: the PostgreSQL URL (as `kaja sync`)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Show token and call totals from the usage ledger, and the tools that fail most.

    Calls, failed calls, prompt, completion and cached tokens and time, by
    model (or --by day, source or engine), then the tools with the most
    errors and denials, and runs by status. --since is inclusive, --until
    exclusive; both are UTC. Reads the store read-only. `kaja usage reset`
    clears the ledger. --all-machines asks the shared ledger on PostgreSQL
    instead (what every machine has pushed, see `kaja sync`), with the calls
    of each machine.
    """
    if ctx.invoked_subcommand is not None:
        return
    from kaja_cli.core import timeparse
    from kaja_cli.core.ledger import usage as core

    start = timeparse.parse_when(since, option="--since") if since else None
    end = timeparse.parse_when(until, option="--until") if until else None
    machines = None
    if all_machines:
        from kaja_cli.core.ledger import sync

        store = store_of(ctx)
        target = sync.require_url(store, url)
        result, machines = sync.all_machines_report(store, target, by.value, start, end)
    else:
        if url is not None:
            from kaja_cli.errors import UsageError

            raise UsageError("--url goes with --all-machines")
        result = core.report(store_of(ctx), by=by.value, since=start, until=end)
    shown = result.tools if tools == 0 else result.tools[:tools]
    if as_json:
        _report_json(result, shown, machines)
    else:
        from kaja_cli import render

        with render.paged(not no_pager):
            _report_text(result, shown, machines)


def _totals_json(t: "Totals") -> dict:
    return {
        "calls": t.calls, "failed": t.failed, "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens, "cached_tokens": t.cached_tokens,
        "tokens": t.tokens, "duration_ms": t.duration_ms,
    }  # fmt: skip


def _nothing_yet(result: "UsageReport", machines: "list | None") -> str:
    if machines is not None:
        return f"nothing shared yet: no andromeda_ledger at {result.location} (run `kaja sync`)"
    return f"nothing recorded yet: no Kaja store at {result.location}"


def _machines_json(machines: "list[MachineTotals]") -> list:
    return [
        {"origin": m.origin, "host": m.host, "calls": m.calls, "prompt_tokens": m.prompt_tokens,
         "completion_tokens": m.completion_tokens, "this_machine": m.this_machine}
        for m in machines
    ]  # fmt: skip


def _report_json(result: "UsageReport", shown: list, machines: "list | None" = None) -> None:
    from kaja_cli import render

    if not result.exists:
        render.note(_nothing_yet(result, machines))
    extra = {} if machines is None else {"machines": _machines_json(machines)}
    render.emit_json(
        {
            "store": result.location,
            "exists": result.exists,
            "by": result.by,
            "since": result.since,
            "until": result.until,
            "groups": [{result.by: g.key, **_totals_json(g)} for g in result.groups],
            "total": _totals_json(result.total),
            "tools": [
                {
                    "tool": t.tool,
                    "calls": t.calls,
                    "failures": t.failures,
                    "avg_ms": t.avg_ms,
                    "outcomes": {
                        o: {"calls": n, "avg_ms": t.outcome_ms.get(o)}
                        for o, n in t.outcomes.items()
                    },
                }
                for t in shown
            ],
            "tools_left_out": len(result.tools) - len(shown),
            "runs": result.runs,
            "missing": result.missing,
            **extra,
        }
    )


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _report_text(result: "UsageReport", shown: list, machines: "list | None" = None) -> None:
    from kaja_cli import render

    if not result.exists:
        render.note(_nothing_yet(result, machines))
        return
    if result.missing:
        render.note(
            "this ledger lacks " + ", ".join(result.missing) + " (written by an older agent?)"
        )
    terminal = render.stdout_is_terminal()
    groups = _with_empty_days(result.groups) if result.by == "day" and terminal else result.groups
    Col = render.Col
    # Every figure is whole; on a narrow terminal the chart shrinks, then cached
    # tokens, the chart, completion, failed and prompt go, in that order (README, "Usage").
    cols = [
        Col(result.by, style="bold", kind="whole"), Col("calls", "right"),
        Col("failed", "right", drop=4), Col("prompt", "right", drop=5),
        Col("completion", "right", drop=3), Col("cached", "right", drop=1),
        Col("tokens", "right"), Col("time", "right"),
    ]  # fmt: skip
    rows = [_text_row(g.key or "(none)", g) for g in groups]
    if result.by == "day" and groups:
        largest = max(g.tokens or 0 for g in groups) or 1
        cols.append(Col("tokens per day", style="cyan", kind="chart", drop=2))
        rows = [
            [*row, render.Bar((g.tokens or 0) / largest)]
            for row, g in zip(rows, groups, strict=True)
        ]
    total = _text_row("total", result.total) + ([""] if result.by == "day" and groups else [])
    plain = [_plain_row(result.by, g.key, g) for g in result.groups]
    plain.append(_plain_row("total", None, result.total))
    period = _period(result)
    if not result.total.calls:
        render.note(f"no model calls recorded{period}")
    render.table(
        cols, [*rows, total] if rows else [total], plain_rows=plain,
        title=f"model calls{period}" if terminal else None,
    )  # fmt: skip
    if shown:
        left_out = len(result.tools) - len(shown)
        render.table(
            [Col("tool", style="bold", kind="whole"), Col("calls", "right"), Col("ok", "right", drop=1),
             Col("error", "right", drop=3), Col("denied", "right", drop=2), Col("fail rate", "right"),
             Col("avg time", "right", drop=4)],
            [[t.tool or "(none)", _n(t.calls), _n(t.outcomes.get("ok", 0)), _n(t.outcomes.get("error", 0)),
              _n(t.outcomes.get("denied", 0)), f"{100 * t.failures / t.calls:.1f}%" if t.calls else "-",
              render.human_duration(t.avg_ms)] for t in shown],
            plain_rows=[["tool", t.tool, t.calls, t.outcomes.get("ok", 0), t.outcomes.get("error", 0),
                         t.outcomes.get("denied", 0), t.failures, t.avg_ms] for t in shown],
            title="tools that fail most" if terminal else None,
            caption=f"{left_out} more {render.noun(left_out, 'tool')} (--tools 0 shows all)"
            if left_out else None,
        )  # fmt: skip
    if result.runs:
        render.table(
            [Col("runs", style="bold", kind="whole"), Col("count", "right")],
            [[status, _n(n)] for status, n in result.runs.items()],
            plain_rows=[["runs", status, n] for status, n in result.runs.items()],
        )
    if machines:
        _machines_text(machines)


def _machines_text(machines: "list[MachineTotals]") -> None:
    """Calls per machine (each ledger's origin, with the host that pushed it)."""
    from kaja_cli import render

    def label(m: "MachineTotals") -> str:
        return (m.host or "?") + (" (this machine)" if m.this_machine else "")

    render.table(
        [render.Col("machine", style="bold"), render.Col("origin"), render.Col("calls", "right"),
         render.Col("tokens", "right")],
        [[label(m), m.origin[:8], _n(m.calls), _n((m.prompt_tokens or 0) + (m.completion_tokens or 0))]
         for m in machines],
        plain_rows=[["machine", m.origin, m.host, m.calls, m.prompt_tokens, m.completion_tokens,
                     int(m.this_machine)] for m in machines],
    )  # fmt: skip


def _text_row(label: str, t: "Totals") -> list:
    from kaja_cli import render

    return [label, _n(t.calls), _n(t.failed), _n(t.prompt_tokens), _n(t.completion_tokens),
            _n(t.cached_tokens), _n(t.tokens), render.human_duration(t.duration_ms)]  # fmt: skip


def _plain_row(section: str, key: str | None, t: "Totals") -> list:
    """Piped: exact numbers, the section first (`kaja usage | grep ^total`)."""
    return [section, *([key] if section != "total" else []), t.calls, t.failed, t.prompt_tokens,
            t.completion_tokens, t.cached_tokens, t.tokens, t.duration_ms]  # fmt: skip


def _with_empty_days(groups: list) -> list:
    """Days without calls between the first and the last, so the chart's gaps show."""
    from kaja_cli.core import clock
    from kaja_cli.core.ledger.usage import Totals

    days = {g.key: g for g in groups}
    keys = clock.days(groups[0].key, groups[-1].key, most=3661) if groups else None
    if keys is None:
        return groups
    out = [days.get(key) or Totals(key) for key in keys]
    shown = {t.key for t in out}
    return out + [g for g in groups if g.key not in shown]


def _period(result: "UsageReport") -> str:
    if result.since and result.until:
        return f" from {result.since} until {result.until}"
    if result.since:
        return f" since {result.since}"
    if result.until:
        return f" until {result.until}"
    return ""


@app.command("reset")
def reset(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be deleted.")
    ] = False,
    before: Annotated[
        str | None,
        typer.Option(metavar="WHEN", help="Only rows older than this: 2026-01-01, 1y, 90d (UTC)."),
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            click_type=seconds(),
            metavar="SECONDS",
            help="How long to wait for the agent to finish writing.",
        ),
    ] = 5.0,
    vacuum: Annotated[
        bool, typer.Option("--vacuum", help="Then give the freed space back to the disk.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Clear the usage ledger: runs, calls, tools, events, logs, media, feedback, reviews, cache stats.

    Keeps the conversations, learning, services, counters and everything
    else. Pending sync rows of the ledger are dropped and nothing is queued
    for sync: a reset is local. One transaction, all or nothing; if the agent
    is writing, it waits up to --wait seconds, then gives up (exit 4) having
    deleted nothing. Asks first; --yes skips the question, and without a
    terminal to ask on it refuses (exit 5).
    """
    from kaja_cli import render
    from kaja_cli.core import timeparse
    from kaja_cli.core.ledger import usage as core
    from kaja_cli.errors import KajaError

    cutoff = timeparse.parse_when(before, option="--before") if before else None
    store = store_of(ctx)
    plan = core.plan_reset(store, before=cutoff)
    if dry_run:
        _reset_out(plan, plan.tables, plan.outbox, None, dry_run=True, as_json=as_json)
        return
    deleted, outbox, asked = dict.fromkeys(plan.tables, 0), 0, False
    if plan.total or plan.outbox:
        asked = not yes and render.stdin_is_terminal()
        if asked:
            _plan_table(plan.tables, plan.outbox)
        render.confirm(_question(plan), assume_yes=yes)
        done = core.reset(store, plan, timeout_ms=int(wait * 1000))
        deleted, outbox = done.deleted, done.outbox
    freed = None
    if vacuum:
        try:
            freed = core.vacuum(store, timeout_ms=int(wait * 1000))
        except KajaError:
            # The deletion is committed: say so before the error line.
            _reset_out(plan, deleted, outbox, None, dry_run=False, as_json=as_json, table=not asked)
            raise
    _reset_out(plan, deleted, outbox, freed, dry_run=False, as_json=as_json, table=not asked)


def _question(plan: "ResetPlan") -> str:
    older = f" older than {plan.before}" if plan.before else ""
    return f"Delete {_rows(plan.total, plan.outbox, older)} from {plan.location}?"


def _rows(total: int, outbox: int, older: str = "", *, always_outbox: bool = False) -> str:
    """'229 usage rows and 4 pending sync rows': what the table's total counts."""
    from kaja_cli import render

    text = f"{render.plural(total, 'usage row', commas=True)}{older}"
    if outbox or always_outbox:
        text += f" and {render.plural(outbox, 'pending sync row', commas=True)}"
    return text


def _plan_table(tables: dict[str, int], outbox: int) -> None:
    from kaja_cli import render

    rows = [[t, n] for t, n in tables.items()] + [["sync_outbox (pending)", outbox]]
    render.table(
        [render.Col("table", style="bold"), render.Col("rows", "right")],
        # The total is the sum of the rows above it, the pending sync rows included.
        [[t, f"{n:,}"] for t, n in rows] + [["total", f"{sum(n for _, n in rows):,}"]],
        plain_rows=rows,
    )


def _reset_out(
    plan: "ResetPlan", tables: dict[str, int], outbox: int, freed: "VacuumResult | None", *,
    dry_run: bool, as_json: bool, table: bool = True,
) -> None:  # fmt: skip
    from kaja_cli import render

    total = sum(tables.values())
    if as_json:
        render.emit_json(
            {
                "store": plan.location, "dry_run": dry_run, "before": plan.before,
                "tables": tables, "total": total, "sync_outbox": outbox, "skipped": plan.skipped,
                "vacuum": None if freed is None else {
                    "bytes_before": freed.bytes_before, "bytes_after": freed.bytes_after,
                    "freed_bytes": freed.freed, "search_index": freed.search_index,
                    "readers_waited": freed.readers_waited,
                },
            }
        )  # fmt: skip
        return
    if table:
        _plan_table(tables, outbox)
    older = f" older than {plan.before}" if plan.before else ""
    if dry_run:
        render.note(f"dry run: would delete {_rows(total, outbox, older)}; nothing was deleted")
    elif not total and not outbox and freed is None:
        render.note(f"the usage ledger has no rows{older}: nothing to delete")
    else:
        render.note(
            f"deleted {_rows(total, outbox, older, always_outbox=True)};"
            " conversations, learning, services and counters were kept"
        )
    if plan.synced and not dry_run:
        render.note(
            "the reset is local: nothing was queued for sync, and the shared ledger and the"
            " other machines keep their copies"
        )
    elif plan.synced:
        render.note("a reset is local: the shared ledger and the other machines keep their copies")
    if freed is not None:
        rebuilt = "; the search index was rebuilt" if freed.search_index == "rebuilt" else ""
        render.note(
            f"vacuumed {plan.location}: {render.human_size(freed.bytes_before)} → "
            f"{render.human_size(freed.bytes_after)}, {render.human_size(freed.freed)} "
            f"given back to the disk{rebuilt}"
        )
        if freed.readers_waited:
            render.note(
                "another process is reading the file: the rest of the space goes back to the"
                " disk once it is done"
            )
