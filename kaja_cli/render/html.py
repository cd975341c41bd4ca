"""A session as one self-contained HTML page (`kaja sessions export -f html`).

Self-contained: the style is inline, images are embedded as `data:` URIs
(when the file is there and at most `MAX_IMAGE` bytes; left out under
`--redact`, since a screenshot can show anything), and a Content Security
Policy forbids the page to load anything else, so whatever a conversation
holds (a `<script>`, an `<img src=http…>`) is shown as text and never
fetched or run. Every value from the store is escaped. Written in pieces,
one per message, like the Markdown export.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Iterator, Sequence
from html import escape
from typing import Any

from kaja_cli import render
from kaja_cli.core.conversations import pieces
from kaja_cli.core.conversations.transcript import CALLS_BEFORE, Asides, Entry, Pending, Pieces
from kaja_cli.core.owners import label
from kaja_cli.core.wording import plural
from kaja_cli.render.layout import lines_clean
from kaja_cli.render.replay import _compact, _lines, _utf8, indented, waiting

MAX_IMAGE = 5 * 1024 * 1024
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:52rem;margin:2rem auto;
padding:0 1rem;color:#1d1d1f;background:#fff}
h1{font-size:1.5rem;margin-bottom:.25rem}
.facts{color:#666;font-size:.85rem;margin:0 0 1.5rem;padding:0;list-style:none}
.facts li{display:inline;margin-right:1rem}
.msg{border-left:3px solid #ddd;margin:1rem 0;padding:.25rem .75rem}
.msg.user{border-color:#2a7ae2}.msg.assistant{border-color:#2ea44f}.msg.tool{border-color:#d29922}
.who{font-weight:600;font-size:.85rem}.when{color:#888;font-weight:400;margin-left:.5rem}
.text,pre{white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:.5rem;border-radius:4px;font-size:.85rem;max-height:40rem;overflow:auto}
.call{font-size:.9rem;margin:.25rem 0}.thinking{color:#666;font-style:italic}
.summary,.pending{background:#fff8e1;border:1px solid #f0d58c;padding:.5rem .75rem;margin:1rem 0}
.aside{margin:.5rem 0 .5rem 1rem;font-size:.9rem}.aside.notice{color:#0a6a7a}
.aside.error,.status.error{color:#b00}.status.ok{color:#2a7a3a}.status.declined,.status.waiting{color:#9a6700}
.status.skipped{color:#888}.pause{vertical-align:-1px;margin-right:.35rem}
img{max-width:100%;border:1px solid #ddd}.missing{color:#b00}
"""
# The pause sign of `kaja resume`'s banner, drawn: U+23F8 needs a font many systems lack.
_PAUSE = ('<svg class="pause" width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">'
          '<rect x="2" y="1" width="3" height="10" fill="#9a6700"/>'
          '<rect x="7" y="1" width="3" height="10" fill="#9a6700"/></svg>')  # fmt: skip


def _e(value: Any) -> str:
    """A stored value as HTML text: the escaping rule (`render.text`: control and
    BiDi characters shown as `\\x1b`, `\\u202e`), then HTML's."""
    return escape(render.text(value, lines=True), quote=True)


def _when(value: Any) -> str:
    """A stored time as `kaja resume` words it (`render.local_time`), the exact
    value kept in the `<time>` element's `datetime` and `title`; anything
    else as its text."""
    if value in (None, ""):
        return ""
    shown = render.local_time(value)
    if shown is None:
        return _e(value)
    exact = _e(value)
    return f'<time datetime="{exact}" title="{exact}">{shown}</time>'


def page_chunks(
    s: dict[str, Any],
    summaries: list[dict[str, Any]],
    pending: dict[str, Any] | None,
    message_count: int,
    messages: Iterator[dict[str, Any]],
    events: Sequence[dict[str, Any]] = (),
    *,
    embed_images: bool = True,
) -> Iterator[str | bytes]:
    """The page in pieces: the head, then one piece per message, then the end
    (their UTF-8).
    The timeline's notices and errors (`events`) go where `kaja resume` shows
    them (`core.transcript.Asides`)."""
    title = s.get("title") or "Untitled session"
    facts = [("id", _e(s.get("id"))), ("owner", _e(label(s.get("owner")))), ("model", _e(s.get("model"))),
             ("persona", _e(s.get("persona"))), ("created", _when(s.get("createdAt"))),
             ("updated", _when(s.get("updatedAt"))), ("messages", _e(message_count))]  # fmt: skip
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="kaja">\n<title>{_e(title)}</title>',
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        '<ul class="facts">' + "".join(f"<li>{k}: {v}</li>" for k, v in facts if v) + "</ul>",
    ]
    p = Pending(**pending) if pending else None
    if p:
        kind = f" ({_e(p.kind)})" if p.kind else ""
        head.append(
            f'<p class="pending">{_PAUSE}Waiting on you: <code>{_e(p.name or "a tool call")}</code>'
            f"{kind}, call <code>{_e(p.call_id)}</code></p>"
        )
    if s.get("systemPrompt"):
        head.append(
            f"<details><summary>System prompt</summary><pre>{_e(s['systemPrompt'])}</pre></details>"
        )
    yield "\n".join(head) + "\n"
    ordered = sorted(
        (x for x in summaries if isinstance(x.get("summaryFrom"), int)),
        key=lambda x: x["summaryFrom"],
    )
    calls: dict[Any, dict[str, Any]] = {}
    asides = Asides(events)
    # The messages' pieces as UTF-8, joined a few hundred at a time: a run
    # SQLite wrote goes out as its bytes when there is nothing to escape.
    batch: list[bytes] = []
    for m in messages:
        if m.__class__ is Pieces:  # written by SQLite (`core.conversations.pieces`)
            if asides.waiting or ordered:
                if len(m) != m.n:  # joined, never where anything is placed between them
                    raise RuntimeError("messages read joined where the timeline places asides")
                texts = []
                for row in m:
                    seq, kind = row[1], row[2]
                    texts += [_aside(e) for e in asides.due()]
                    while ordered and (
                        not isinstance(seq, int) or ordered[0]["summaryFrom"] <= seq
                    ):
                        texts.append(_summary(ordered.pop(0)))
                    asides.count_kind(kind, m.tool_starts(seq))
                    texts.append(Pieces.decoded(row[0]))
                # the escaping rule, as render.text(…, lines=True) applies it (a
                # second time to what _aside escaped already: it changes nothing)
                batch.append(_utf8(_lines("".join(texts))))
            elif lines_clean(m.data):  # nothing to escape: the bytes as they are
                batch.append(m.data)
            else:
                batch.append(_utf8(_lines(m.text)))
            if len(batch) >= _BATCH or m.n >= _BATCH:
                yield b"".join(batch)
                batch = []
            continue
        parts = [_aside(e) for e in asides.due()]
        while ordered and (
            not isinstance(m.get("seq"), int) or ordered[0]["summaryFrom"] <= m["seq"]
        ):
            parts.append(_summary(ordered.pop(0)))
        for c in (*m.get(CALLS_BEFORE, ()), *(m.get("tool_calls") or ())):
            if c.get("resultMessageId"):
                calls[c["resultMessageId"]] = c
            if c.get("callId"):
                calls.setdefault(("call", c["callId"]), c)
        parts.append(_message(m, calls, p, embed_images))
        asides.count(m)
        batch.append(_utf8("".join(parts)))
        if len(batch) >= _BATCH:
            yield b"".join(batch)
            batch = []
    tail = [_aside(e) for e in asides.due()] + [_summary(x) for x in ordered]
    tail += [_aside(e) for e in asides.due(rest=True)]
    batch.append(_utf8("".join(tail) + "</body></html>\n"))
    yield b"".join(batch)


_BATCH = 256  # messages joined into one piece: one write, not one per message


def _aside(e: Entry) -> str:
    """A notice, an error or a newer agent's entry, as `kaja resume` shows it."""
    kind = {"error": "Error", "notice": "Notice"}.get(e.kind)
    text = e.text if e.text is not None else _compact(e.payload)
    css = "error" if e.kind == "error" else "notice"
    return (
        f'<div class="aside {css}"><strong>{_e(kind or f"[{e.kind}]")}:</strong>'
        f' <span class="text">{_e(text)}</span></div>\n'
    )


def _summary(x: dict[str, Any]) -> str:
    return (
        f'<div class="summary"><strong>Compacted</strong> (messages before #{_e(x["summaryFrom"])}):'
        f'<div class="text">{_e(x.get("summary"))}</div></div>\n'
    )


def _message(
    m: dict[str, Any], calls: dict[Any, dict[str, Any]], pending: Pending | None, embed: bool
) -> str:
    role = m.get("role") if isinstance(m.get("role"), str) and m.get("role") else "message"
    when = f'<span class="when">{_when(m["createdAt"])}</span>' if m.get("createdAt") else ""
    css = role if role in ("user", "assistant", "tool") else "other"
    out = [f'<section class="msg {css}">']
    if role == "tool":
        c = calls.get(m.get("id")) or calls.get(("call", m.get("toolCallId")))
        name = (c or {}).get("name") or m.get("toolCallId") or "?"
        out.append(f'<div class="who">Tool result · <code>{_e(name)}</code>{when}</div>')
        if m.get("content") is not None:
            out.append(f"<pre>{_e(_text(m['content']))}</pre>")
        if c and c.get("resultSummary"):
            out.append(
                "<p><em>Too long for the model; it was sent this instead:</em></p>"
                f'<div class="text">{_e(c["resultSummary"])}</div>'
            )
    else:
        who = {"user": "You", "assistant": "Kaja"}.get(role, role.capitalize())
        model = f" · {_e(m['model'])}" if role == "assistant" and m.get("model") else ""
        out.append(f'<div class="who">{_e(who)}{model}{when}</div>')
        if m.get("reasoning"):
            out.append(
                f'<details class="thinking"><summary>Thinking</summary>'
                f'<div class="text">{_e(m["reasoning"])}</div></details>'
            )
        if m.get("content"):
            out.append(f'<div class="text">{_e(_text(m["content"]))}</div>')
        for c in m.get("tool_calls") or ():
            out.append(_call(c, pending))
    if isinstance(m.get("parts"), str) and not m.get("images"):  # as Markdown says it
        out.append(
            f'<p><em>parts (not valid JSON):</em></p><div class="text">{_e(m["parts"])}</div>'
        )
    for img in m.get("images") or ():
        out.append(_image(img, embed))
    out.append("</section>\n")
    return "".join(out)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_STATUSES = pieces.STATUSES  # the statuses that have a color of their own


def _call(c: dict[str, Any], pending: Pending | None) -> str:
    """A tool call: its status as a word, colored (the terminal's marks ✓ ✗ ⊘
    need fonts a browser may lack), a waiting call with the pause sign."""
    wait = waiting(c, pending)
    if wait:
        status = f'<span class="status waiting">{_PAUSE}{_e(wait)}</span>'
    else:
        word = render.text(c.get("status")) or "no result"
        css = f"status {word}" if word in _STATUSES else "status"
        status = f'<span class="{css}">{_e(word)}</span>'
    took = f" · {_e(render.human_duration(c['durationMs']))}" if c.get("durationMs") else ""
    approval = f" · {_e(c['approval'])}" if c.get("approval") else ""
    line = (
        f'<div class="call">→ <code>{_e(c.get("name") or "?")}</code>'
        f" {status}{took}{approval}</div>"
    )
    args = c.get("arguments")
    if args in (None, "", {}):
        return line
    text = args if isinstance(args, str) else indented(args)
    return f"{line}<details><summary>arguments</summary><pre>{_e(text)}</pre></details>"


def _image(img: dict[str, Any], embed: bool) -> str:
    path = img.get("path")
    name = os.path.basename(path) if isinstance(path, str) else img.get("sha256")
    if not embed:
        return f'<p class="missing">[image {_e(name)} left out (--redact)]</p>'
    data = _read_image(path) if isinstance(path, str) and img.get("exists") else None
    if data is None:
        why = "file missing" if not img.get("exists") else f"over {MAX_IMAGE // 1048576} MB"
        return f'<p class="missing">[image {_e(name)}: {why}]</p>'
    mime = img.get("mime") if isinstance(img.get("mime"), str) else "application/octet-stream"
    uri = f"data:{_e(mime)};base64,{base64.b64encode(data).decode()}"
    return f'<p><img alt="{_e(name)}" src="{uri}"></p>'


def _read_image(path: str) -> bytes | None:
    """The image file's bytes: a regular file, not through a link, not too big."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IMAGE:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_IMAGE + 1)
    finally:
        os.close(fd)


def index_page(entries: list[tuple[str, str | None, str | None, str | None, int]]) -> str:
    """`index.html` of an export folder: (file name, title, owner, updated, messages)."""
    rows = "".join(
        f'<tr><td><a href="{_e(f)}">{_e(t or "Untitled session")}</a></td><td>{_e(label(o))}</td>'
        f"<td>{_when(u)}</td><td>{n}</td></tr>\n"
        for f, t, o, u, n in entries
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>Kaja sessions</title><style>{_STYLE}td{{padding:.2rem .6rem}}</style></head><body>"
        f"<h1>Kaja sessions</h1><p>{_e(plural(len(entries), 'session'))}</p>"
        "<table><thead><tr><th>title</th><th>owner</th><th>updated</th><th>messages</th></tr></thead>"
        f"<tbody>\n{rows}</tbody></table></body></html>\n"
    )
