"""How a session reads to a person: the `kaja resume` replay and the Markdown
of `kaja sessions export`.

Both take the core's plain data (`core.transcript`) and return text: the
replay as styled lines for `render.print_lines` (plain when piped), the
export as one Markdown string. Nothing here touches a database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

from kaja_cli import render
from kaja_cli.core.conversations import pieces
from kaja_cli.core.conversations.transcript import (
    CALLS_BEFORE,
    Asides,
    Entry,
    Pending,
    Pieces,
    Replay,
    Transcript,
)
from kaja_cli.core.owners import label
from kaja_cli.core.wording import noun, plural
from kaja_cli.render.layout import _LINES, _LINES_FOUND, _ONE_LINE, lines_clean

ARGS_WIDTH = 160  # a tool call's arguments on one line, cut beyond this

STATUS_MARKS = {
    "ok": ("✓", "green"),
    "error": ("✗", "bold red"),
    "declined": ("⊘", "yellow"),
    "skipped": ("–", "dim"),
}


def _compact(value: Any, width: int = ARGS_WIDTH) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _block(first: list[tuple[str, str]], text: str | None, style: str = "") -> list[render.Line]:
    """A labelled block: the first line after the label, the rest indented."""
    lines = (text or "").split("\n")
    out: list[render.Line] = [[*first, (lines[0], style)]]
    out.extend([("  " + rest if rest else "", style)] for rest in lines[1:])
    return out


def header(session: dict[str, Any], message_count: int) -> list[render.Line]:
    one = render.text
    title = one(session.get("title")) or "(untitled)"
    facts = [one(session.get("id")), label(session.get("owner"))]
    facts += [one(session[k]) for k in ("model", "persona") if session.get(k)]
    facts.append(plural(message_count, "message"))
    if session.get("updatedAt"):
        updated = session["updatedAt"]
        facts.append(f"updated {render.local_time(updated) or one(updated)}")
    return [[(title, "bold")], [(" · ".join(facts), "dim")]]


def entry_lines(e: Entry) -> list[render.Line]:
    k = e.kind
    if k == "user":
        return _block([("You: ", "bold cyan")], e.text)
    if k == "assistant":
        return _block([("Kaja: ", "bold green")], e.text)
    if k == "reasoning":
        return _block([("  thinking: ", "dim italic")], e.text, "dim italic")
    if k == "tool_start":
        line = [("  → ", "yellow"), (e.name or "tool", "bold")]
        if e.arguments not in (None, "", {}):
            line.append((" " + _compact(e.arguments), "dim"))
        return [line]
    if k == "tool_end":
        mark, style = STATUS_MARKS.get(e.status or "", ("←", "yellow"))
        line = [(f"  {mark} ", style), (e.name or "tool", "bold")]
        if e.status:
            line.append((" " + e.status, style))
        if e.duration_ms is not None:
            line.append((" · " + render.human_duration(e.duration_ms), "dim"))
        return [line]
    if k == "notice":
        return _block([("  • ", "cyan")], e.text, "cyan")
    if k == "error":
        return _block([("  error: ", "bold red")], e.text, "red")
    if k == "image":
        line = [("  image: ", "magenta")]
        if e.path:
            line.append((e.path, ""))
        else:
            line.append(("(no usable path in the database)", "dim"))
        if e.text:
            line.append((f" ({e.text})", "dim"))
        if e.missing:
            line.append((" — file missing", "bold red"))
        return [line]
    # A type or role this kaja does not know (a newer agent): show it plainly.
    text = e.text if e.text is not None else _compact(e.payload)
    return _block([(f"  [{k}] ", "dim")], text)


def pending_lines(p: Pending) -> list[render.Line]:
    what = p.name or "a tool call"
    line = [("⏸ Waiting on you: ", "bold yellow"), (render.text(what), "bold")]
    if p.kind:
        line.append((f" ({render.text(p.kind)})", "yellow"))
    line.append((f" · call {render.text(p.call_id)}", "dim"))
    out = [line]
    if p.arguments not in (None, "", {}):
        out.append([("  " + _compact(p.arguments), "dim")])
    out.append([("  Open this session in Kaja to answer it.", "dim")])
    return out


def replay_lines(rep: Replay) -> list[render.Line]:
    lines = header(rep.session, rep.message_count)
    if rep.earlier:
        entries = noun(rep.earlier, "entry", "entries")
        lines.append([(f"… {rep.earlier} earlier {entries} not shown (--tail)", "dim")])
    first = True
    for e in rep.entries:
        if e.kind == "user" or first:
            lines.append([])
        first = False
        lines.extend(entry_lines(e))
    if rep.source == "none":
        lines.append([])
        lines.append([("(nothing to replay: this session has no events and no messages)", "dim")])
    if rep.pending:
        lines.append([])
        lines.extend(pending_lines(rep.pending))
    return lines


# --- Markdown ------------------------------------------------------------------------------
_TICKS = re.compile("`{3,}")


def _fence(text: str, info: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max(map(len, _TICKS.findall(text)), default=0) if "```" in text else 0
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _inline(value: Any) -> str:
    text = render.text(value)
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n"))


def _json_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return render.text(value, lines=True), ""
    return render.text(indented(value), lines=True), "json"


_ONE = json.JSONEncoder(ensure_ascii=False).encode


def indented(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)`: Python's encoder
    writes indented JSON a piece at a time in Python, so a flat object (a
    tool call's usual arguments) is written here, each value by the encoder
    in C (issue 29)."""
    if value.__class__ is dict and value:
        items = []
        for k, v in value.items():
            if ((v.__class__ is dict or v.__class__ is list) and v) or k.__class__ is not str:
                break
            items.append(f"  {_ONE(k)}: {_ONE(v)}")
        else:
            return "{\n" + ",\n".join(items) + "\n}"
    return json.dumps(value, ensure_ascii=False, indent=2)


def _image_md(img: dict[str, Any], alt: str = "image") -> str:
    if not img.get("path"):
        return f"*{alt}: sha256 {render.text(img.get('sha256'))} (no usable path in the database)*"
    md = f"![{alt}](<{render.text(img['path'])}>)"
    return md if img.get("exists") else md + " *(file missing)*"


def waiting(c: dict[str, Any], p: Pending | None) -> str | None:
    """The status of the call `p` is while it has none: "waiting on you (approval)"."""
    if p is None or c.get("status") or c.get("callId") is None or str(c["callId"]) != p.call_id:
        return None
    return "waiting on you" + (f" ({render.text(p.kind)})" if p.kind else "")


def aside_md(e: Entry) -> str:
    """A notice, an error or a newer agent's entry, as `kaja resume` shows it."""
    if e.kind == "error":
        head = "**Error:** "
    elif e.kind == "notice":
        head = "**Notice:** "
    else:
        head = f"**[{render.text(e.kind)}]** "
    text = e.text if e.text is not None else _compact(e.payload)
    return _quote((head + render.text(text, lines=True)).rstrip())


def markdown(t: Transcript) -> str:
    chunks = markdown_chunks(
        t.session, t.summaries, t.pending, len(t.messages), iter(t.messages), t.events
    )
    return "".join(
        c if isinstance(c, str) else c.decode("utf-8", "surrogateescape") for c in chunks
    )


def markdown_chunks(
    s: dict[str, Any],
    summaries: list[dict[str, Any]],
    pending: Pending | dict[str, Any] | None,
    message_count: int,
    messages: Iterator[dict[str, Any]],
    events: Sequence[dict[str, Any]] = (),
) -> Iterator[str | bytes]:
    """The Markdown transcript in pieces, one per message: a session of any
    length is written without being held whole (`sessions export --all`).
    The timeline's notices and errors (`events`) go where `kaja resume` shows
    them (`core.transcript.Asides`).

    A tool result names its call from the calls seen so far: the assistant
    message that made a call comes before its result."""
    one = render.text  # every stored value is printed through it: any type, no control character
    out = [f"# {one(s.get('title')) or 'Untitled session'}", ""]
    facts = [
        ("id", _inline(s.get("id"))),
        ("owner", one(label(s.get("owner")))),
        ("model", one(s.get("model"))),
        ("persona", one(s.get("persona"))),
        ("created", one(s.get("createdAt"))),
        ("updated", one(s.get("updatedAt"))),
        ("messages", str(message_count)),
    ]
    out += [f"- **{k}:** {v}" for k, v in facts if v]
    p = Pending(**pending) if isinstance(pending, dict) else pending
    if p:
        out += ["", _quote(
            f"**Waiting on you:** {_inline(p.name or 'a tool call')}"
            + (f" ({one(p.kind)})" if p.kind else "") + f", call {_inline(p.call_id)}"
        )]  # fmt: skip
    if s.get("systemPrompt"):
        out += ["", "<details><summary>System prompt</summary>", "", _fence(one(s["systemPrompt"], lines=True)),
                "", "</details>"]  # fmt: skip
    yield "\n".join(out)

    calls: dict[Any, dict[str, Any]] = {}
    pending_summaries = sorted(
        (x for x in summaries if isinstance(x.get("summaryFrom"), int)),
        key=lambda x: x["summaryFrom"],
    )

    def summaries_before(seq: Any) -> list[str]:
        lines = []
        while pending_summaries and (
            not isinstance(seq, int) or pending_summaries[0]["summaryFrom"] <= seq
        ):
            x = pending_summaries.pop(0)
            lines += ["", _quote(
                f"**Compacted** (messages before #{x['summaryFrom']}):\n\n{one(x.get('summary'), lines=True)}"
            )]  # fmt: skip
        return lines

    asides = Asides(events)

    def asides_md(rest: bool = False) -> list[str]:
        return [line for e in asides.due(rest=rest) for line in ("", aside_md(e))]

    # The messages' Markdown as UTF-8, joined a few hundred at a time: a run
    # SQLite wrote goes out as its bytes when there is nothing to escape.
    batch: list[bytes] = []
    for m in messages:
        if m.__class__ is Pieces:  # written by SQLite (`core.conversations.pieces`)
            mended = _BREAK(b" ".join(filter(None, map(_MODEL, m)))) or _BREAK(
                b" ".join(filter(None, map(_TIME, m)))
            )  # a heading to write on one line: one piece at a time
            if mended or asides.waiting or pending_summaries:
                texts = []
                for row in m:
                    text, seq, kind = mend(row), row[1], row[2]
                    before = asides_md() + summaries_before(seq)
                    if before:
                        text = "\n" + "\n".join(before) + text
                    asides.count_kind(kind, m.tool_starts(seq))
                    texts.append(text)
                # the escaping rule, as render.text(…, lines=True) applies it (a
                # second time to what asides_md escaped already: it changes nothing)
                batch.append(_utf8(_lines("".join(texts))))
            elif lines_clean(m.data):  # nothing to escape: the bytes as they are
                batch.append(m.data)
            else:
                batch.append(_utf8(_lines(m.text)))
            if len(batch) >= _BATCH or len(m) >= _BATCH:
                yield b"".join(batch)
                batch = []
            continue
        for c in (*m.get(CALLS_BEFORE, ()), *m["tool_calls"]):
            if c["resultMessageId"]:
                calls[c["resultMessageId"]] = c
            if c["callId"]:
                calls.setdefault(("call", c["callId"]), c)
        out = asides_md() + summaries_before(m["seq"]) + _message_md(m, calls, p)
        asides.count(m)
        batch.append(_utf8("\n" + "\n".join(out)))
        if len(batch) >= _BATCH:
            yield b"".join(batch)
            batch = []
    tail = asides_md() + summaries_before(None) + asides_md(rest=True)
    batch.append(_utf8(("\n" + "\n".join(tail) if tail else "") + "\n"))
    yield b"".join(batch)


_BATCH = 256  # messages joined into one piece: one write, not one per message


_MODEL, _TIME = itemgetter(4), itemgetter(5)  # a Markdown piece's heading values
# What the one-line rule spells otherwise than the lines rule (`render.text`).
_BREAK = re.compile(b"[\t\n\r\v\f]").search


def mend(row: tuple) -> str:
    """A piece's text (`Pieces`), its heading written by the one-line rule where
    its model or time needs it (`pieces.heading`)."""
    text = Pieces.decoded(row[0])
    model, created = row[4], row[5]
    if _BREAK(b" ".join(filter(None, (model, created)))):
        return pieces.heading(text, Pieces.decoded(model), Pieces.decoded(created), _ONE_LINE)
    return text


def _lines(text: str) -> str:
    """`render.text(text, lines=True)` of a text known to be one."""
    return text.translate(_LINES) if _LINES_FOUND(text) else text


def _utf8(text: str) -> bytes:
    """Text as the exports write it (`render.export.write`)."""
    return text.encode("utf-8", "surrogateescape")


def _message_md(
    m: dict[str, Any], calls: dict[Any, dict[str, Any]], pending: Pending | None = None
) -> list[str]:
    one = render.text
    out: list[str] = []
    role = one(m["role"]) or "message"
    when = f" · {one(m['createdAt'])}" if m.get("createdAt") else ""
    if role == "tool":
        c = calls.get(m["id"]) or calls.get(("call", m["toolCallId"]))
        name = _inline(c["name"]) if c and c.get("name") else _inline(m["toolCallId"] or "?")
        out += ["", f"### Tool result · {name}{when}", ""]
        if m["content"] is not None:
            out.append(_fence(one(m["content"], lines=True)))
        if c and c.get("resultSummary"):
            out += ["", "*Too long for the model; it was sent this instead:*", "",
                    _quote(one(c["resultSummary"], lines=True))]  # fmt: skip
    else:
        who = {"user": "You", "assistant": "Kaja"}.get(role, role.capitalize())
        model = f" · {one(m['model'])}" if role == "assistant" and m.get("model") else ""
        out += ["", f"### {who}{model}{when}"]
        if m["reasoning"]:
            out += ["", _quote("*Thinking:* " + one(m["reasoning"], lines=True))]
        if m["content"]:
            out += ["", one(m["content"], lines=True)]
        for c in m["tool_calls"]:
            status = waiting(c, pending) or one(c.get("status")) or "no result"
            took = f" · {render.human_duration(c['durationMs'])}" if c.get("durationMs") else ""
            approval = f" · {one(c['approval'])}" if c.get("approval") else ""
            out += [
                "",
                f"**Tool call** {_inline(c.get('name') or '?')} — {status}{took}{approval}",
            ]
            if c.get("arguments") not in (None, "", {}):
                text, info = _json_text(c["arguments"])
                out += ["", _fence(text, info)]
    if isinstance(m["parts"], str) and not m["images"]:
        out += ["", f"*parts (not valid JSON):* {_inline(m['parts'])}"]
    for img in m["images"]:
        out += ["", _image_md(img)]
    return out
