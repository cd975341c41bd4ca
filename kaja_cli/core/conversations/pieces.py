"""The Markdown and HTML of the plainest messages, written by SQLite itself
(`sessions export ID -f md|html`, issue 29).

Most of a long session is a user's or the assistant's message with nothing
but text: no tool call, no part, no image. For those, SQLite writes the very piece `render/replay.py`'s
`_message_md` or `render/html.py`'s `_message` would (the same spelling,
the same truthiness: an empty text is no text), and Python only appends it:
a 76,000-message session goes out at about the cost of reading its rows.
Every other message is read as before (`transcript._Reader.message_rows`)
and written by render. `tests/cli/test_export.py` compares both with the
exports as they were, byte for byte.

`simple()` is the condition, `piece()` the text (render applies the
escaping rule to it, as `render.text` would have to each value: in C, and
only where a control or BiDi character is there), `kind()` what the
timeline's counting needs (`transcript.Asides.count_kind`). Every other
message comes as its JSON, in the same read. SQLite only
(`dialect.writes_pieces`); the server's messages all go through render.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaja_cli.core.conversations.columns import col

VIEWS = ("md", "html")
_TEXTS = ("content", "model", "createdAt")  # the values a plain piece shows
_BREAKS = "('*[' || char(9) || '-' || char(13) || ']*')"  # \t \n \v \f \r


def simple(have: Sequence[str], t_have: Sequence[str], view: str) -> str:
    """The condition (never NULL) for a message SQLite writes: a user's or the
    assistant's message whose shown values are text or NULL, with no
    reasoning, no parts, no tool calls. The escaping rule is render's: it
    escapes the whole piece SQLite wrote as `render.text(…, lines=True)` does,
    so Markdown's one-line heading must hold nothing that rule spells
    otherwise on one line (a tab, a line break, \\r, \\v, \\f; NUL, where
    GLOB stops)."""
    c = {n: col(have, "m", n) for n in ("role", "reasoning", "parts", "id", *_TEXTS)}
    terms = [f"{c['role']} IN ('user', 'assistant')"]
    if c["reasoning"] != "NULL":
        terms.append(f"({c['reasoning']} IS NULL OR {c['reasoning']} = '')")
    if c["parts"] != "NULL":
        terms.append(f"{c['parts']} IS NULL")
    if "messageId" in t_have and c["id"] != "NULL":
        terms.append(f'NOT EXISTS (SELECT 1 FROM tool_calls AS t WHERE t."messageId" = {c["id"]})')
    terms += [f"typeof({c[n]}) IN ('text', 'null')" for n in _TEXTS if c[n] != "NULL"]
    if view == "md":
        for n in ("model", "createdAt"):
            if c[n] != "NULL":
                terms += [f"NOT (ifnull({c[n]}, '') GLOB {_BREAKS})",
                          f"instr(ifnull({c[n]}, ''), char(0)) = 0"]  # fmt: skip
    return f"coalesce({' AND '.join(terms)}, 0)"


def _html(expr: str) -> str:
    """`html.escape(text, quote=True)`."""
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"),
                        ("''", "&#x27;")):  # fmt: skip
        expr = f"replace({expr}, '{raw}', '{entity}')"
    return expr


def piece(have: Sequence[str], view: str) -> str:
    """The message's piece, for a message `simple()` holds for: what
    `_message_md` or `_message` writes, before the escaping rule."""
    role, content, model, created = (col(have, "m", n) for n in ("role", *_TEXTS))

    def given(expr: str, then: str) -> str:  # Python's `if value:` for text or NULL
        return "''" if expr == "NULL" else f"CASE WHEN {expr} <> '' THEN {then} ELSE '' END"

    if view == "md":
        with_model = given(model, f"' · ' || {model}")
        when = given(created, f"' · ' || {created}")
        text = given(content, f"char(10, 10) || {content}")
        return (
            f"char(10, 10) || '### ' || CASE WHEN {role} = 'user' THEN 'You'"
            f" ELSE 'Kaja' || {with_model} END || {when} || {text}"
        )
    with_model = given(model, f"' · ' || {_html(model)}")
    when = given(created, f"'<span class=\"when\">' || {_html(created)} || '</span>'")
    text = given(content, f"'<div class=\"text\">' || {_html(content)} || '</div>'")
    return (
        f"'<section class=\"msg ' || {role} || '\"><div class=\"who\">'"
        f" || CASE WHEN {role} = 'user' THEN 'You' ELSE 'Kaja' || {with_model} END"
        f" || {when} || '</div>' || {text} || '</section>' || char(10)"
    )


def kind(have: Sequence[str]) -> str:
    """What the message adds to a timeline rebuilt from messages: 1 a user's
    entry, 2 the assistant's, 0 none (`Asides.count_kind`)."""
    role, content = col(have, "m", "role"), col(have, "m", "content")
    if content == "NULL":
        return "0"
    return f"CASE WHEN {content} <> '' THEN CASE WHEN {role} = 'user' THEN 1 ELSE 2 END ELSE 0 END"
