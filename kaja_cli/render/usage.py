"""What `kaja usage` and `kaja usage reset` print for a person or a pipe (the
JSON is the results' own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.ledger.sync import MachineTotals
    from kaja_cli.core.ledger.usage import ResetPlan, ResetResult, Totals, UsageReport, VacuumResult


def nothing_yet(result: UsageReport, machines: list | None = None) -> None:
    """There is no ledger to report, on stderr (with --json too)."""
    if result.exists:
        return
    if machines is not None:
        render.note(
            f"nothing shared yet: no andromeda_ledger at {result.location} (run `kaja sync`)"
        )
    else:
        render.note(f"nothing recorded yet: no Kaja store at {result.location}")


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def report(result: UsageReport, *, tools: int, machines: list | None = None) -> None:
    """Model calls by group, the tools that fail most, runs by status (and each machine)."""
    if not result.exists:
        return
    shown = result.tools if tools == 0 else result.tools[:tools]
    if result.missing:
        render.note(
            "this ledger lacks " + ", ".join(result.missing) + " (written by an older agent?)"
        )
    terminal = render.stdout_is_terminal()
    groups = _with_empty_days(result.groups) if result.by == "day" and terminal else result.groups
    # Every figure is whole; on a narrow terminal the chart shrinks, then cached
    # tokens, the chart, completion, failed and prompt go, in that order (docs/guides/usage.md).
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
        _machines(machines)


def _machines(machines: list[MachineTotals]) -> None:
    """Calls per machine (each ledger's origin, with the host that pushed it)."""

    def label(m: MachineTotals) -> str:
        return (m.host or "?") + (" (this machine)" if m.this_machine else "")

    render.table(
        [Col("machine", style="bold"), Col("origin"), Col("calls", "right"), Col("tokens", "right")],
        [[label(m), m.origin[:8], _n(m.calls), _n((m.prompt_tokens or 0) + (m.completion_tokens or 0))]
         for m in machines],
        plain_rows=[["machine", m.origin, m.host, m.calls, m.prompt_tokens, m.completion_tokens,
                     int(m.this_machine)] for m in machines],
    )  # fmt: skip


def _text_row(label: str, t: Totals) -> list:
    return [label, _n(t.calls), _n(t.failed), _n(t.prompt_tokens), _n(t.completion_tokens),
            _n(t.cached_tokens), _n(t.tokens), render.human_duration(t.duration_ms)]  # fmt: skip


def _plain_row(section: str, key: str | None, t: Totals) -> list:
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


def _period(result: UsageReport) -> str:
    """Whose runs (when one owner's) and when: the title's and the note's words."""
    whose = "" if result.whose is None else f" in {result.whose}'s runs"
    if result.since and result.until:
        return f"{whose} from {result.since} until {result.until}"
    if result.since:
        return f"{whose} since {result.since}"
    if result.until:
        return f"{whose} until {result.until}"
    return whose


# --- reset ------------------------------------------------------------------------------------
def reset_question(plan: ResetPlan) -> str:
    older = f" older than {plan.before}" if plan.before else ""
    return f"Delete {_rows(plan.total, plan.outbox, older)} from {plan.location}?"


def _rows(total: int, outbox: int, older: str = "", *, always_outbox: bool = False) -> str:
    """'229 usage rows and 4 pending sync rows': what the table's total counts."""
    text = f"{render.plural(total, 'usage row', commas=True)}{older}"
    if outbox or always_outbox:
        text += f" and {render.plural(outbox, 'pending sync row', commas=True)}"
    return text


def reset_plan(tables: dict[str, int], outbox: int) -> None:
    """Rows per ledger table, the pending sync rows, and their total."""
    rows = [[t, n] for t, n in tables.items()] + [["sync_outbox (pending)", outbox]]
    render.table(
        [Col("table", style="bold"), Col("rows", "right")],
        # The total is the sum of the rows above it, the pending sync rows included.
        [[t, f"{n:,}"] for t, n in rows] + [["total", f"{sum(n for _, n in rows):,}"]],
        plain_rows=rows,
    )


def reset(
    plan: ResetPlan, done: ResetResult | None = None, *, freed: VacuumResult | None = None,
    dry_run: bool = False, table: bool = True,
) -> None:  # fmt: skip
    """What a reset deleted (`done`; None: nothing, or the dry run's plan), and
    what vacuuming gave back; `table`: the counts again (not after a question)."""
    tables = plan.tables if done is None else done.deleted
    outbox = plan.outbox if done is None else done.outbox
    total = sum(tables.values())
    if table:
        reset_plan(tables, outbox)
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
