"""What the audit views print for a person or a pipe (`kaja runs`, `runs show`,
`reviews`, `tasks`, `schedules`, `triggers`, `learning`, `artifacts`); their
--json is the results' own `to_json()`.

Tables follow the layout rule (render/__init__.py): ids, counts and times
never give way, prompts and titles wrap, and on a narrow terminal the
columns go in the order each table declares (docs/guides/agent.md).
Piped, each row is tab-separated with ISO times and exact figures. A run's
tree is drawn with the guides Rich's `Tree` uses (without loading Rich: the
house rule for start-up), wrapped and paged as any prose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.audit.artifacts import Artifact
    from kaja_cli.core.audit.common import Listing
    from kaja_cli.core.audit.reviews import Done
    from kaja_cli.core.audit.runs import RunNode

PROMPT_WIDTH = 60  # a prompt in a listing: its start


def nothing(result: Listing) -> bool:
    """Say on stderr why nothing is shown; True when there is nothing."""
    why = result.nothing()
    if why is not None:
        render.note(why)
        return True
    if not result.rows:
        render.note(f"no {result.what} match")
        return True
    return False


def nothing_noted(result: Listing, as_json: bool) -> None:
    """With --json, why nothing is listed, on stderr (the document itself is
    just empty); a table's view says it itself (`nothing`)."""
    if as_json and (why := result.nothing()) is not None:
        render.note(why)


def caption(result: Listing) -> str | None:
    return f"{result.more} more not shown (--limit 0 shows all)" if result.more else None


def _start(text: Any, width: int = PROMPT_WIDTH) -> str:
    text = " ".join(render.text(text).split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _n(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else render.text(value)


def _ms(value: Any) -> str:
    return "-" if value is None else render.human_duration(value)


# --- runs ---------------------------------------------------------------------------------
def runs(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("run", style="cyan", kind="whole"), Col("started", kind="whole"),
        Col("agent", kind="whole", drop=4), Col("source", kind="whole", drop=3),
        Col("status", kind="whole"), Col("time", justify="right", drop=5),
        Col("calls", justify="right"), Col("tokens", justify="right"),
        Col("tools", justify="right"), Col("subagents", justify="right", drop=2),
        Col("all tokens", justify="right", drop=1), Col("prompt", kind="text", min=16, drop=6),
    ]  # fmt: skip
    machines = any(r.machine is not None for r in result.rows)  # --all-machines
    if machines:
        cols.insert(1, Col("machine", kind="whole", drop=4))
    rows, plain = [], []
    for r in result.rows:
        rows.append([render.text(r.short_id or r.id), render.relative_time(r.started_at), render.text(r.agent),
                     render.text(r.source), render.text(r.status), _ms(r.duration_ms),
                     _n(r.model_calls), _n(r.tokens), _n(r.tool_calls),
                     _n(r.subagents) if r.subagents else "",
                     _n(r.total_tokens) if r.subagents else "", _start(r.prompt)])  # fmt: skip
        plain.append([r.id, r.started_at, r.agent, r.source, r.status, r.duration_ms,
                      r.model_calls, r.tokens, r.tool_calls, r.subagents, r.total_model_calls,
                      r.total_tokens, r.total_tool_calls, r.prompt])  # fmt: skip
        if machines:
            rows[-1].insert(1, render.text(r.machine))
            plain[-1].insert(1, r.machine)
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


TEE, LAST, PIPE, SPACE = "├── ", "└── ", "│   ", "    "


def run_tree(node: RunNode) -> None:
    """One run as a tree: its facts, prompt, result or error, then its model
    calls, tool calls, events, feedback and review, then its subagents (inside
    the command's pager)."""
    render.print_lines(_node_lines(node, "", None), pager=False)


def _node_lines(node: RunNode, indent: str, guide: str | None) -> list[list[tuple[str, str]]]:
    r = node.run
    head = [(indent + (guide or ""), "dim"), (render.text(r["id"]), "bold cyan")]
    facts = [render.text(r.get(k)) for k in ("status", "agent", "source") if r.get(k)]
    if node.machine is not None:
        facts.append("on " + render.text(node.machine))
    if r.get("started_at"):
        facts.append(render.text(r["started_at"]))
    dur = node.to_json()["duration_ms"]
    if dur is not None:
        facts.append(render.human_duration(dur))
    head.append(("  " + " · ".join(facts), "red" if r.get("status") == "failed" else ""))
    lines = [head]
    inner = indent + ("" if guide is None else SPACE if guide == LAST else PIPE)
    items: list[tuple[str, Any]] = []
    for name in ("prompt", "result", "error"):
        if r.get(name) not in (None, ""):
            items.append(("text", (name, r[name])))
    items += [("call", c) for c in node.calls] + [("tool", t) for t in node.tools]
    items += [("event", e) for e in node.events] + [("feedback", f) for f in node.feedback]
    if node.review is not None:
        items.append(("review", node.review))
    items += [("run", s) for s in node.subagents]
    if node.below:
        items.append(("below", node))
    for i, (kind, item) in enumerate(items):
        g = LAST if i == len(items) - 1 else TEE
        if kind == "run":
            lines += _node_lines(item, inner, g)
        elif kind == "below":
            lines.append([(inner + g, "dim"), (f"… {render.plural(item.below, 'run')} deeper"
                          f" not shown: kaja runs show {render.text(item.id)}", "dim")])  # fmt: skip
        else:
            lines.append([(inner + g, "dim"), *_item(kind, item)])
    return lines


def _item(kind: str, x: Any) -> list[tuple[str, str]]:
    t = render.text
    if kind == "text":
        name, value = x
        return [(f"{name}: ", "dim"), (t(value), "red" if name == "error" else "")]
    if kind == "call":
        tokens = None
        given = [render.number(x[k]) for k in ("prompt_tokens", "completion_tokens")]
        if any(n is not None for n in given):  # a text the agent stored is shown, not added
            tokens = sum(n or 0 for n in given)
        parts = [
            f"{_n(tokens)} tokens ({_n(x['prompt_tokens'])} in, {_n(x['completion_tokens'])} out)"
        ]
        if x["ttft_ms"] is not None:
            parts.append(f"ttft {_ms(x['ttft_ms'])}")
        if x["duration_ms"] is not None:
            parts.append(_ms(x["duration_ms"]))
        out = [("model ", "dim"), (t(x["model"]) or "?", "bold"), ("  " + " · ".join(parts), "")]
        if x["ok"] in (0, "0", False) or x["error"]:
            out.append(("  ✗ " + (t(x["error"]) or "failed"), "red"))
        return out
    if kind == "tool":
        parts = [t(x["outcome"]) or "?"]
        if x["duration_ms"] is not None:
            parts.append(_ms(x["duration_ms"]))
        if x["result_chars"] is not None:
            parts.append(f"{_n(x['result_chars'])} chars")
        out = [("tool ", "dim"), (t(x["tool"]) or "?", "bold"),
               ("  " + " · ".join(parts), "red" if x["outcome"] in ("error", "denied") else "")]  # fmt: skip
        if x["arguments"] not in (None, ""):
            out.append(("  " + t(x["arguments"]), "dim"))
        if x["error"]:
            out.append(("  ✗ " + t(x["error"]), "red"))
        return out
    if kind == "event":
        attrs = "" if x["attributes"] in (None, "", "{}") else "  " + t(x["attributes"])
        return [(f"event {_n(x['event_id'])} ", "dim"), (t(x["type"]), ""), (attrs, "dim")]
    if kind == "feedback":
        value = x["value_text"] if x["value_text"] not in (None, "") else x["value_num"]
        out = [("feedback ", "dim"), (t(x["type"]) or "?", ""), (f" {t(value)}", "bold")]
        if x["comment"]:
            out.append((f"  “{t(x['comment'])}”", ""))
        return out
    # review
    out = [
        ("review ", "dim"),
        (t(x["status"]) or "?", "yellow" if x["status"] == "needs-review" else ""),
    ]
    if x["reason"]:
        out.append((f" ({t(x['reason'])})", ""))
    if x["note"]:
        out.append((f"  {t(x['note'])}", "dim"))
    return out


# --- reviews ------------------------------------------------------------------------------
def reviews(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("run", style="cyan", kind="whole"), Col("status", kind="whole"),
        Col("reason", kind="whole", drop=2), Col("flagged", kind="whole", drop=3),
        Col("agent", kind="whole", drop=1), Col("prompt", kind="text", min=16),
        Col("note", kind="text", drop=4),
    ]  # fmt: skip
    rows, plain = [], []
    for v in result.rows:
        rows.append([v.run_id, render.text(v.status), render.text(v.reason),
                     render.relative_time(v.flagged_at), render.text(v.agent), _start(v.prompt),
                     _start(v.note, 40)])  # fmt: skip
        plain.append([v.run_id, v.status, v.reason, v.flagged_at, v.agent, v.prompt, v.note])
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


def review_done(done: Done, *, dry_run: bool = False) -> None:
    v = done.review
    run = render.text(v.run_id)
    if dry_run and done.changed:
        what = "mark the review of run" if done.completed else "set the note of the review of run"
        end = " complete" if done.completed else ""
        note = f" with note: {render.text(v.note)}" if v.note and done.completed else (
            f" to: {render.text(v.note)}" if not done.completed else "")  # fmt: skip
        render.note(f"dry run: would {what} {run}{end}{note}; nothing was changed")
    elif done.completed:
        render.note(f"review of run {run} marked complete"
                    + (f" with note: {render.text(v.note)}" if v.note else ""))  # fmt: skip
    elif done.changed:
        render.note(f"review of run {run} was already complete; its note is now: "
                    f"{render.text(v.note)}")  # fmt: skip
    else:
        render.note(f"review of run {run} was already complete")


# --- services -----------------------------------------------------------------------------
def tasks(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("task", style="cyan", kind="whole"), Col("status", kind="whole"),
        Col("tool", kind="whole"), Col("attempts", justify="right", drop=2),
        Col("started", kind="whole", drop=3), Col("timeout", justify="right", drop=1),
        Col("agent", kind="whole", drop=4), Col("error", kind="text", drop=5),
    ]  # fmt: skip
    rows, plain = [], []
    for k in result.rows:
        tries = (
            f"{_n(k.attempts)}/{_n(k.max_retries)}" if k.max_retries is not None else _n(k.attempts)
        )
        started = k.started_at or k.created_at
        rows.append([render.text(k.id), render.text(k.status), render.text(k.tool_name), tries,
                     render.relative_time(started), "-" if k.timeout_seconds is None
                     else render.human_duration(k.timeout_seconds * 1000),
                     render.text(k.agent_id), render.text(k.error)])  # fmt: skip
        plain.append([k.id, k.status, k.tool_name, k.attempts, k.max_retries, started,
                      k.timeout_seconds, k.agent_id, k.error])  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


def schedules(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("schedule", style="cyan", kind="whole"), Col("name", kind="text", drop=5),
        Col("cron", kind="whole"), Col("timezone", kind="whole", drop=3),
        Col("status", kind="whole"), Col("next run", kind="whole"),
        Col("last run", kind="whole", drop=2), Col("agent", kind="whole", drop=1),
        Col("prompt", kind="text", drop=4),
    ]  # fmt: skip
    rows, plain = [], []
    for s in result.rows:
        rows.append([render.text(s.id), render.text(s.name), render.text(s.cron),
                     render.text(s.timezone), render.text(s.status), _when(s.next_run_at),
                     _when(s.last_run_at), render.text(s.agent_id), _start(s.prompt, 40)])  # fmt: skip
        plain.append([s.id, s.name, s.cron, s.timezone, s.status, s.next_run_at, s.last_run_at,
                      s.agent_id, s.prompt])  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


def _when(value: Any) -> str:
    """A time past or to come: "3h ago", "in 2d", or "-"."""
    if value is None:
        return "-"
    from datetime import UTC, datetime

    from kaja_cli.core import clock

    dt = clock.parse_stored(value)
    if dt is None:
        return render.text(value)
    now = datetime.now(UTC)
    if dt <= now:
        return render.relative_time(value, now)
    secs = int((dt - now).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"in {secs // size}{unit}"
    return "in <1m"


def triggers(result: Listing) -> None:
    if nothing(result):
        return
    from kaja_cli.core.audit.services import config_text

    cols = [
        Col("trigger", style="cyan", kind="whole"), Col("name", kind="text", drop=4),
        Col("kind", kind="whole"), Col("status", kind="whole"),
        Col("next check", kind="whole", drop=2), Col("last fired", kind="whole", drop=1),
        Col("last error", kind="text", drop=3), Col("config", kind="text", drop=5),
    ]  # fmt: skip
    rows, plain = [], []
    for g in result.rows:
        cfg = config_text(g.config)
        rows.append([render.text(g.id), render.text(g.name), render.text(g.kind),
                     render.text(g.status), _when(g.next_check_at), _when(g.last_fired_at),
                     render.text(g.last_error), render.text(cfg)])  # fmt: skip
        plain.append([g.id, g.name, g.kind, g.status, g.next_check_at, g.last_fired_at,
                      g.last_error, cfg])  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


# --- learning -----------------------------------------------------------------------------
def recipes(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("recipe", style="cyan", justify="right"), Col("task", kind="text", min=20),
        Col("uses", justify="right"), Col("wins", justify="right"),
        Col("losses", justify="right"), Col("learned from", kind="whole", drop=2),
        Col("updated", kind="whole", drop=1),
    ]  # fmt: skip
    rows, plain = [], []
    for r in result.rows:
        rows.append([_n(r.id), render.text(r.task), _n(r.uses), _n(r.wins), _n(r.losses),
                     render.text(r.trace_run_id) or "-", render.relative_time(r.updated_at)])  # fmt: skip
        plain.append([r.id, r.task, r.uses, r.wins, r.losses, r.trace_run_id, r.updated_at])
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


def fixes(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("fix", style="cyan", justify="right"), Col("tool", kind="whole"),
        Col("error", kind="text", min=16), Col("fixed call", kind="text", drop=2),
        Col("hits", justify="right"), Col("updated", kind="whole", drop=1),
        Col("scope", kind="whole", drop=3),
    ]  # fmt: skip
    rows, plain = [], []
    for f in result.rows:
        rows.append([_n(f.id), render.text(f.tool), render.text(f.error), render.text(f.fixed),
                     _n(f.hits), render.relative_time(f.updated_at), render.text(f.scope)])  # fmt: skip
        plain.append([f.id, f.tool, f.error, f.fixed, f.hits, f.updated_at, f.scope])
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


# --- artifacts ----------------------------------------------------------------------------
def artifacts(result: Listing) -> None:
    if nothing(result):
        return
    cols = [
        Col("artifact", style="cyan", kind="whole"), Col("kind", kind="whole"),
        Col("source", kind="text", drop=3), Col("title", kind="text", min=12),
        Col("created", kind="whole", drop=2), Col("file", kind="whole"),
        Col("path", kind="text", drop=1),
    ]  # fmt: skip
    rows, plain = [], []
    for a in result.rows:
        mark = "" if not a.path else "✓" if a.exists else "✗ gone"
        rows.append([render.text(a.id), render.text(a.kind), render.text(a.source),
                     render.text(a.title), render.relative_time(a.created_at), mark,
                     render.text(a.path)])  # fmt: skip
        plain.append([a.id, a.kind, a.source, a.title, a.created_at,
                      "" if not a.path else "yes" if a.exists else "no", a.path])  # fmt: skip
    render.table(cols, rows, plain_rows=plain, caption=caption(result))


def artifact(a: Artifact) -> None:
    """One artifact: its text, or its path (and whether the file is there)."""
    if a.text not in (None, ""):
        render.print_lines([[(line, "")] for line in a.text.splitlines()], pager=True)
        return
    if a.path:
        if not a.exists:
            render.note(f"the file of artifact {a.id} is gone: {render.text(str(a.file))}")
        print(render.text(str(a.file)))
        return
    render.note(f"artifact {a.id} has neither text nor a file")
