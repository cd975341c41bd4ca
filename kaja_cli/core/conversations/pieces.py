"""The Markdown and HTML of the plainest messages, written by SQLite itself
(`sessions export ID -f md|html`, issue 29).

Most of a long session is a user's or the assistant's message with nothing
but text: no tool call, no part, no image, and most of the rest tool results.
For those, SQLite writes the very piece `render/replay.py`'s
`_message_md` or `render/html.py`'s `_message` would (the same spelling,
the same truthiness: an empty text is no text), and Python only appends it:
a 76,000-message session goes out at about the cost of reading its rows.
Every other message is read as before (`transcript._Reader.message_rows`)
and written by render. `tests/cli/test_export.py` compares both with the
exports as they were, byte for byte.

`simple()` is the condition, `piece()` the text (`tool_simple()` and
`tool_piece()` for a tool result; render applies the
escaping rule to it, as `render.text` would have to each value: in C, and
only where a control or BiDi character is there), `kind()` what the
timeline's counting needs (`transcript.Asides.count_kind`). Every other
message comes as its JSON, in the same read. SQLite only
(`dialect.writes_pieces`); the server's messages all go through render.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter

from kaja_cli.core.clock import SHOWN_MINUTE
from kaja_cli.core.conversations.columns import col

VIEWS = ("md", "html")
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_TEXTS = ("content", "model", "createdAt")  # the values a plain piece shows
_BREAKS = "('*[' || char(9) || '-' || char(13) || ']*')"  # \t \n \v \f \r


def simple(have: Sequence[str], t_have: Sequence[str], view: str, utc: Span | None = None) -> str:
    """The condition for a message SQLite writes (for CASE WHEN: NULL is not
    true; read there, its terms are tried in turn and stop at the first that
    fails, where a value would be all of them, issue 29): a user's or the
    assistant's message whose shown values are text or NULL, with no
    reasoning, no parts, no tool calls. The escaping rule is render's: it
    escapes the whole piece SQLite wrote as `render.text(…, lines=True)` does;
    Markdown's heading is one line, and where its model or time holds what
    that rule spells otherwise on one line (a tab, a line break, \\r, \\v,
    \\f), render mends it (`heading()`: a GLOB per value here cost a sixth of
    the export, issue 29)."""
    c = {n: col(have, "m", n) for n in ("role", "reasoning", "parts", "id", *_TEXTS)}
    terms = [f"{c['role']} IN ('user', 'assistant')"]
    if c["reasoning"] != "NULL":
        terms.append(f"({c['reasoning']} IS NULL OR {c['reasoning']} = '')")
    if c["parts"] != "NULL":
        terms.append(f"{c['parts']} IS NULL")
    if "messageId" in t_have and c["id"] != "NULL":
        terms.append(f'NOT EXISTS (SELECT 1 FROM tool_calls AS t WHERE t."messageId" = {c["id"]})')
    # In HTML no NUL either: `piece` writes the values with printf(), whose %s
    # ends at one; render writes such a message.
    # In HTML the text is not written by printf(), and the time holds no NUL
    # where `_stored_time` holds.
    terms += [_text_or_null(c[n], nul=view != "html" or n != "model")
              for n in _TEXTS if c[n] != "NULL"]  # fmt: skip
    if view == "html" and c["createdAt"] != "NULL":
        terms.append(_stored_time(c["createdAt"], utc))
    return f"({' AND '.join(terms)})"


def _text_or_null(expr: str, *, nul: bool = True) -> str:
    """`typeof(expr) IN ('text', 'null')` told by comparisons (SQLite orders NULL
    < numbers < text < BLOB; unary + drops the column's affinity): no function
    call for every message (issue 29). `nul`: a text may hold a NUL."""
    found = "" if nul else f" AND instr({expr}, char(0)) = 0"
    return f"({expr} IS NULL OR +{expr} >= '' AND +{expr} < X''{found})"


def heading_values(have: Sequence[str]) -> str:
    """The two values of a Markdown piece's heading, as they are (model, time):
    the extra columns a Markdown read selects for `heading()`."""
    return f"{col(have, 'm', 'model')}, {col(have, 'm', 'createdAt')}"


_HEAD = len("\n\n### ")


def heading(piece: str, model: str | None, created: str | None, one_line: dict) -> str:
    """A Markdown piece whose heading is written by the one-line rule
    (`one_line`: render's table for it), as `_message_md` writes it: the
    heading's length is known from the values it shows."""
    n = _HEAD + (3 if piece.startswith("You", _HEAD) else 4 + (3 + len(model) if model else 0))
    n += 3 + len(created) if created else 0
    return piece[:2] + piece[2:n].translate(one_line) + piece[n:]  # after its two line breaks


# A stored time as kaja writes it (`clock.iso`), in the years the C library's
# localtime() knows as Python does: in HTML, SQLite words it as
# `render.local_time` does (`local_time`); any other value goes to render.
# Its shape by GLOB, its digits by SQLite's own reading of a time (which also
# refuses a month 13 or a minute 60, as Python does): a character class at
# each of the 24 places was 5% of a long HTML export's SQLite work (issue 40).
_ISO = "'????-??-??T??:??:??.???Z'"


# Where the local zone is UTC (`clock.utc_span`: a server's, a container's),
# the local minute of a time `_ISO` holds for is its own first characters:
# SQLite's strftime() of each (parsing the text, 0.05 s of a 76,000-message
# page) is left out for the times of that span (issue 40).
Span = tuple[str, str]  # the stored times, first and last, the local zone shows as UTC


def _stored_time(expr: str, utc: Span | None = None) -> str:
    """`expr` (text or NULL) is empty, NULL or a time as `_ISO` (in `utc`'s
    span when given: the others go to render)."""
    lo, hi = utc or ("1970-01-02", "2037-12-31")
    # GLOB stops at a NUL: its 24 bytes, whole (a BLOB's length: no scan), hold none,
    # and are 24 characters: ASCII.
    return (
        f"(ifnull({expr}, '') = '' OR {expr} GLOB {_ISO} AND length(CAST({expr} AS BLOB)) = 24"
        f" AND julianday({expr}) IS NOT NULL AND {expr} BETWEEN '{lo}' AND '{hi}')"
    )


def local_time(expr: str, utc: Span | None = None) -> tuple[str, list[str]]:
    """HTML's `<time>` of a time `_stored_time` holds for, as `html._when`
    writes it: the local time (`render.local_time`), the exact value in its
    attributes (no character to escape: `_ISO`); as a printf() format and its
    values (`utc`: the time's own characters, no strftime())."""
    if utc is not None:
        return ('<time datetime="%s" title="%s">%.10s %s</time>',
                [expr, expr, expr, f"substr({expr}, 12, 5)"])  # fmt: skip
    return ('<time datetime="%s" title="%s">%s</time>',
            [expr, expr, f"strftime('{SHOWN_MINUTE}', {expr}, 'localtime')"])  # fmt: skip


def _printf(formats: str, values: list[str]) -> str:
    """printf() of `values` with the format `formats` (an SQL expression, a
    CASE of literal formats) chooses: one call, where a chain of || copies
    what it has so far at each step (issue 29); a value a format does not
    show is read by `%.0s` (and shows nothing). The formats hold no quote."""
    return f"printf({formats}, {', '.join(values)})"


def _choose(tests: list[tuple[str, str, str]], make) -> str:
    """A CASE over `tests` (condition, the part when true, when false), each
    leaf the SQL literal of `make(parts)`: the format for that message."""

    def choose(i: int, parts: tuple[str, ...]) -> str:
        if i == len(tests):
            return "'" + make(parts).replace("'", "''") + "'"
        cond, yes, no = tests[i]
        if cond == "1":
            return choose(i + 1, (*parts, yes))
        if cond == "0":
            return choose(i + 1, (*parts, no))
        return f"CASE WHEN {cond} THEN {choose(i + 1, (*parts, yes))} ELSE {choose(i + 1, (*parts, no))} END"

    return choose(0, ())


def _skip(fmt: str) -> str:
    """`%.0s` for each value `fmt` would show: its values read, nothing shown."""
    return "%.0s" * fmt.count("%")


def _html(expr: str) -> str:
    """`html.escape(text, quote=True)`."""
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"),
                        ("''", "&#x27;")):  # fmt: skip
        expr = f"replace({expr}, '{raw}', '{entity}')"
    return expr


def _html_text(column: str, *, nul: bool = True) -> str:
    """`_html(column)` for a column's text (not an expression: it is read more
    than once), with replace() only where one of the characters is there.
    Each replace() copies the whole text even when it finds nothing; a GLOB
    of one literal character is a strcspn() in C, so five of them cost less
    than one replace() (issue 29: 0.11 s -> 0.06 s of SQLite's time on a
    76,000-message session, where most texts hold none and the rest an
    apostrophe). GLOB stops at a NUL: a text holding one is escaped in full
    (`nul`: it may hold one)."""
    found = " OR ".join(
        [f"instr({column}, char(0))"] * nul + [f"{column} GLOB '*{c}*'" for c in '&<>"']
    )
    apostrophe = f"replace({column}, '''', '&#x27;')"
    return (
        f"CASE WHEN {found} THEN {_html(column)}"
        f" WHEN {column} GLOB '*''*' THEN {apostrophe} ELSE {column} END"
    )


def piece(have: Sequence[str], view: str, calls: str = "''", utc: Span | None = None) -> str:
    """The message's piece, for a message `simple()` holds for: what
    `_message_md` or `_message` writes, before the escaping rule (in HTML,
    `calls` before the section's end: `calls_piece`; `utc` as `simple`'s)."""
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

    # The model escaped on its own (a GLOB of a class of characters over
    # the two joined tried the class at every character: 0.03 s of this
    # session's 0.2 s); the text is not written here but marked (`TEXT_HERE`,
    # `fill_texts`). One printf() whose format holds the markup, chosen by
    # what the message shows (issue 40: building the `<time>` with || was
    # 0.045 s of a 76,000-message page). Its %s ends at a NUL: `simple`
    # leaves a model or time holding one to render.
    def esc(expr: str) -> str:
        return _html_text(expr, nul=False)

    when, when_values = local_time(created, utc)
    values = ["NULL" if model == "NULL" else esc(model)]
    values += when_values if created != "NULL" else []
    values += [TEXT_HERE, calls]
    tests = [
        (f"{role} = 'user'", "user", "assistant"),
        ("0" if model == "NULL" else f"{model} <> ''", " · %s", "%.0s"),
        ("0" if created == "NULL" else f"{created} <> ''", f'<span class="when">{when}</span>',
         _skip(when) if created != "NULL" else ""),
        # no text: its mark all the same, where an empty text goes (one NUL in
        # every piece, `transcript._html_pages`)
        ("0" if content == "NULL" else f"{content} <> ''", '<div class="text">%c</div>', "%c"),
    ]  # fmt: skip

    def page(parts: tuple[str, ...]) -> str:
        who, with_model, shown, text = parts
        if who == "user":  # `_message` shows no model for you
            with_model = "%.0s"
        name = "You" if who == "user" else "Kaja"
        return (f'<section class="msg {who}"><div class="who">{name}{with_model}{shown}</div>'
                f"{text}%s</section>\n")  # fmt: skip

    return _printf(_choose(tests, page), values)


# HTML's texts (a message's, a tool result's) are not escaped by SQLite: five
# scans of each text (four GLOBs, an apostrophe's) and a NUL's (printf() ends
# at one) were most of a plain message's cost, at some ns a character (issue
# 40). A piece holds a NUL where its text goes (printf's `%c` of it: nothing
# else in a piece is a NUL), the text comes beside it (`text_value`), and
# `fill_texts` escapes the texts of a run of messages at once, as
# `html.escape` does, with bytes.replace() in C, and puts each in its place.
TEXT_HERE = "char(0)"


def text_value(have: Sequence[str]) -> str:
    """The column beside an HTML piece: the message's text, where it is text
    (else empty: a piece only marks text `simple` or `tool_simple` found)."""
    content = col(have, "m", "content")
    if content == "NULL":
        return "''"
    return f"CASE WHEN +{content} >= '' AND +{content} < X'' THEN {content} ELSE '' END"


def _escaped(data: bytes) -> bytes:
    """`html.escape(text, quote=True)` of UTF-8 bytes (each a character of its own)."""
    for raw, entity in ((b"&", b"&amp;"), (b"<", b"&lt;"), (b">", b"&gt;"),
                        (b'"', b"&quot;"), (b"'", b"&#x27;")):  # fmt: skip
        data = data.replace(raw, entity)
    return data


def escaped_texts(texts: bytes | None) -> list[bytes]:
    """Texts joined by NULs (as `group_concat(t, char(0))` joins them; None: no
    text), each escaped: one escaping of all."""
    return [] if texts is None else _escaped(texts).split(b"\0")


def fill_texts(rows: list[tuple]) -> list[tuple]:
    """Rows of (piece, text, …) as SQLite wrote them in HTML: each piece with
    its text escaped in its place (`TEXT_HERE`), the text's column dropped."""
    texts = list(map(_SECOND, rows))
    escaped = _escaped(b"\0".join(texts)).split(b"\0")  # one escaping of all
    if len(escaped) != len(texts):  # a text holds a NUL
        escaped = list(map(_escaped, texts))
    filled = map(bytes.replace, map(_FIRST, rows), repeat(b"\0"), escaped)
    return [(piece, *row[2:]) for piece, row in zip(filled, rows, strict=True)]


def _one_line(expr: str) -> list[str]:
    """`expr` (text or NULL) holds nothing Markdown's one-line rule spells
    otherwise than the escaping rule (a tab, a line break, \\r, \\v, \\f; NUL,
    where GLOB stops)."""
    return [f"NOT (ifnull({expr}, '') GLOB {_BREAKS})", f"instr(ifnull({expr}, ''), char(0)) = 0"]


# The call a tool result's heading names, as render finds it: the one call
# whose `resultMessageId` is the result's id (`calls[m["id"]]`), made by a
# message of the session before it. Render has seen that message: it has a
# tool call, so it is never written by SQLite. CROSS JOIN keeps the planner
# to that order (the call by its index, then its message by id): the other
# reads every earlier message of the session, for every result.
_CALL = (
    'FROM tool_calls AS t CROSS JOIN messages AS tm ON tm.id = t."messageId"'
    ' WHERE t."resultMessageId" = m.id'
)


def tool_simple(
    have: Sequence[str], t_have: Sequence[str], view: str, *, indexed: bool = True,
    utc: Span | None = None,
) -> str:  # fmt: skip
    """The condition (for CASE WHEN, as `simple`) for a tool result SQLite
    writes: no parts, no tool calls of its own, content text or NULL (in
    Markdown, with no fence inside it: its fence is three backticks), and its
    call found without doubt (`_CALL`): the only call naming it as its
    result, with a name that is text, no summary, and in Markdown no backtick
    and nothing the one-line rule spells otherwise. Never (`0`) without an
    index of `tool_calls."resultMessageId"` (`indexed`): each result would
    read every call."""
    c = {n: col(have, "m", n) for n in ("role", "parts", "id", "seq", "sessionId", *_TEXTS)}
    need = ("messageId", "resultMessageId", "name", "resultSummary")
    if (
        not indexed
        or any(c[n] == "NULL" for n in ("role", "id", "seq", "sessionId"))
        or not all(n in t_have for n in need)
    ):
        return "0"
    terms = [f"{c['role']} = 'tool'", f"typeof({c['id']}) = 'text'", f"{c['id']} <> ''",
             f"typeof({c['seq']}) = 'integer'"]  # fmt: skip
    if c["parts"] != "NULL":
        terms.append(f"{c['parts']} IS NULL")
    terms.append(f'NOT EXISTS (SELECT 1 FROM tool_calls AS t WHERE t."messageId" = {c["id"]})')
    for n in ("content", "createdAt"):
        if c[n] != "NULL":
            terms.append(f"typeof({c[n]}) IN ('text', 'null')")
    if view == "md":
        if c["content"] != "NULL":
            terms.append(f"instr(ifnull({c['content']}, ''), '```') = 0")
        if c["createdAt"] != "NULL":
            terms += _one_line(c["createdAt"])
    elif c["createdAt"] != "NULL":
        terms.append(_stored_time(c["createdAt"], utc))
    name = 't."name"'
    found = ["typeof(t.\"resultMessageId\") = 'text'", f"tm.\"sessionId\" = {c['sessionId']}",
             "typeof(tm.seq) = 'integer'", f"tm.seq < {c['seq']}", f"typeof({name}) = 'text'",
             f"{name} <> ''", "ifnull(t.\"resultSummary\", '') = ''"]  # fmt: skip
    if view == "md":
        found += [f"instr({name}, '`') = 0", *_one_line(name)]
    else:  # printf() writes it (`tool_piece`)
        found.append(f"instr({name}, char(0)) = 0")
    terms += [
        # No call whose id, as render reads it (a BLOB as its hex, an infinity
        # as text), is this id where SQLite's = would not find it.
        f"({c['id']} GLOB '*[^0-9A-F]*' OR length({c['id']}) % 2 = 1)",
        f"{c['id']} NOT IN ('Inf', '-Inf')",
        f'(SELECT count(*) FROM tool_calls AS t WHERE t."resultMessageId" = {c["id"]}) = 1',
        f"EXISTS (SELECT 1 {_CALL} AND {' AND '.join(found)})",
    ]
    return f"({' AND '.join(terms)})"


def tool_piece(have: Sequence[str], view: str, utc: Span | None = None) -> str:
    """A tool result's piece, for a message `tool_simple()` holds for: what
    `_message_md` or `_message` writes, before the escaping rule."""
    content, created = col(have, "m", "content"), col(have, "m", "createdAt")
    # `tool_simple` found it the only call naming this result: its name by
    # that index alone.
    name = '(SELECT t."name" FROM tool_calls AS t WHERE t."resultMessageId" = m.id)'

    def given(expr: str, then: str) -> str:
        return "''" if expr == "NULL" else f"CASE WHEN {expr} <> '' THEN {then} ELSE '' END"

    def present(expr: str, then: str) -> str:  # `is not None`
        return "''" if expr == "NULL" else f"CASE WHEN {expr} IS NOT NULL THEN {then} ELSE '' END"

    if view == "md":
        when = given(created, f"' · ' || {created}")
        text = present(content, f"char(10) || '```' || char(10) || {content} || char(10) || '```'")
        return f"char(10, 10) || '### Tool result · `' || {name} || '`' || {when} || char(10) || {text}"
    # The name is read once (replace() of it, short; `tool_simple` found no
    # NUL in it), the text marked (`TEXT_HERE`); one printf(), as `piece`.
    when, when_values = local_time(created, utc)
    values = [_html(name)] + (when_values if created != "NULL" else [])
    values.append(TEXT_HERE)
    tests = [
        ("0" if created == "NULL" else f"{created} <> ''", f'<span class="when">{when}</span>',
         _skip(when) if created != "NULL" else ""),
        ("0" if content == "NULL" else f"{content} IS NOT NULL", "<pre>%c</pre>", "%c"),
    ]  # fmt: skip

    def page(parts: tuple[str, ...]) -> str:
        shown, text = parts
        return (f'<section class="msg tool"><div class="who">Tool result · <code>%s</code>{shown}'
                f"</div>{text}</section>\n")  # fmt: skip

    return _printf(_choose(tests, page), values)


_CALL_COLUMNS = ("messageId", "position", "name", "status", "durationMs", "approval", "arguments")


def calls_simple(
    have: Sequence[str], t_have: Sequence[str], view: str = "md", utc: Span | None = None
) -> str:
    """The condition (for CASE WHEN, as `simple`) for an assistant's message
    with tool calls whose Markdown or HTML (`view`) SQLite writes
    (`calls_piece`): what `simple` asks but the calls, which must all be
    plain: a position of their own, a name, a status (so none waits on you),
    a duration in whole milliseconds under a minute that rounds to tenths of
    a second as Python rounds it (not ending in 50 ms: `render.human_duration`),
    approval text, and arguments that are none, or a JSON object of text
    values (no `\\u` escape, no key twice): render's `indented` of it is
    SQLite's. In HTML also: a time as kaja writes it (`_stored_time`). In
    Markdown also: a name with no backtick, no fence in the arguments, and
    nothing in the name or approval that its one-line rule spells otherwise."""
    c = {n: col(have, "m", n) for n in ("role", "reasoning", "parts", "id", *_TEXTS)}
    if c["id"] == "NULL" or c["role"] == "NULL" or not all(n in t_have for n in _CALL_COLUMNS):
        return "0"
    terms = [f"{c['role']} = 'assistant'"]
    if c["reasoning"] != "NULL":
        terms.append(f"({c['reasoning']} IS NULL OR {c['reasoning']} = '')")
    if c["parts"] != "NULL":
        terms.append(f"{c['parts']} IS NULL")
    terms += [_text_or_null(c[n], nul=view != "html" or n != "model")
              for n in _TEXTS if c[n] != "NULL"]  # fmt: skip
    if view == "html" and c["createdAt"] != "NULL":
        terms.append(_stored_time(c["createdAt"], utc))
    d, args = 't."durationMs"', 't."arguments"'
    md = view == "md"
    plain = [
        "typeof(t.position) = 'integer'",
        "typeof(t.name) = 'text'", "t.name <> ''",
        *(["instr(t.name, '`') = 0", *_one_line("t.name")] if md else ["instr(t.name, char(0)) = 0"]),
        "typeof(t.status) = 'text'", "t.status <> ''", *_one_line("t.status"),
        f"typeof({d}) IN ('integer', 'null')",
        f"ifnull({d}, 0) < 60000", f"(ifnull({d}, 0) < 1000 OR {d} % 100 <> 50)",
        "typeof(t.approval) IN ('text', 'null')",
        *(_one_line("t.approval") if md else ["instr(ifnull(t.approval, ''), char(0)) = 0"]),
        f"({args} IS NULL OR {args} = '' OR typeof({args}) = 'text' AND json_valid({args})"
        f" AND instr({args}, char(0)) = 0"  # json_each() would stop at it: render writes it
        f" AND json_type({args}) = 'object' AND instr({args}, '\\u') = 0"
        + (f" AND instr({args}, '```') = 0" if md else "")
        # every value text, no key twice: one reading of the object
        + f" AND (SELECT count(*) = total(a.type = 'text') AND count(*) = count(DISTINCT a.key)"
        f" FROM json_each({args}) AS a))",
    ]  # fmt: skip
    # Some calls, each plain (a term that is NULL counts as plain, as NOT EXISTS
    # read it), each at a position of its own: one reading of the calls. In
    # CASE WHEN, where SQLite stops at the first term that fails (json_each()
    # of what is not JSON fails the statement).
    terms.append(
        f"(SELECT count(*) > 0 AND total(CASE WHEN NOT ({' AND '.join(plain)}) THEN 1 END) = 0"
        " AND count(*) = count(DISTINCT t.position)"
        f' FROM tool_calls AS t WHERE t."messageId" = {c["id"]})'
    )
    return f"({' AND '.join(terms)})"


STATUSES = ("ok", "error", "declined", "skipped")  # a status HTML colors (`html._call`)


def calls_piece(have: Sequence[str], view: str = "md", utc: Span | None = None) -> str:
    """The Markdown or HTML of a message `calls_simple()` holds for: its piece
    as a plain message's (`piece`), with each call as `_message_md` or
    `html._call` writes it."""
    d, args = 't."durationMs"', 't."arguments"'
    indented = (
        "(SELECT '{' || char(10) || group_concat('  ' || json_quote(a.key) || ': '"
        " || json_quote(a.value), ',' || char(10)) || char(10) || '}'"
        f" FROM json_each({args}) AS a)"
    )
    none = f"{args} IS NULL OR {args} = '' OR {args} = '{{}}'"
    each = f'FROM tool_calls AS t WHERE t."messageId" = {col(have, "m", "id")} ORDER BY t.position'
    # `render.human_duration` of a duration `calls_simple` holds for (under a minute)
    took = (
        f"CASE WHEN ifnull({d}, 0) = 0 THEN '' WHEN {d} < 1000 THEN ' · ' || {d} || ' ms'"
        f" ELSE ' · ' || (({d} + 50) / 100 / 10) || '.' || (({d} + 50) / 100 % 10) || ' s' END"
    )
    if view == "html":
        # name, status and approval hold no NUL here (`calls_simple`)
        def esc(column: str) -> str:
            return _html_text(column, nul=False)

        css = ", ".join(f"'{s}'" for s in STATUSES)
        call = (
            f"'<div class=\"call\">→ <code>' || {esc('t.name')} || '</code> <span class=\"status'"
            f" || CASE WHEN t.status IN ({css}) THEN ' ' || t.status ELSE '' END || '\">'"
            f" || {esc('t.status')} || '</span>'"
            f" || {took}"
            f" || CASE WHEN t.approval <> '' THEN ' · ' || {esc('t.approval')} ELSE '' END"
            f" || '</div>' || CASE WHEN {none} THEN '' ELSE ifnull('<details><summary>arguments"
            f"</summary><pre>' || {_html(indented)} || '</pre></details>', '') END"
        )
        calls = f"(SELECT group_concat(x.s, '') FROM (SELECT {call} AS s {each}) AS x)"
        return piece(have, "html", calls, utc)
    approval = "CASE WHEN t.approval <> '' THEN ' · ' || t.approval ELSE '' END"
    arguments = (
        f"CASE WHEN {none} THEN ''"
        f" ELSE ifnull(char(10, 10) || '```json' || char(10) || {indented}"
        " || char(10) || '```', '') END"
    )
    call = (
        "char(10, 10) || '**Tool call** `' || t.name || '` — ' || t.status"
        f" || {took} || {approval} || {arguments}"
    )
    return f"{piece(have, 'md')} || (SELECT group_concat(x.s, '') FROM (SELECT {call} AS s {each}) AS x)"


def kind(have: Sequence[str]) -> str:
    """What the message adds to a timeline rebuilt from messages: 1 a user's
    entry, 2 the assistant's, 0 none (`Asides.count_kind`)."""
    role, content = col(have, "m", "role"), col(have, "m", "content")
    if content == "NULL":
        return "0"
    return (
        f"CASE WHEN {content} <> '' THEN CASE {role} WHEN 'user' THEN 1 WHEN 'assistant' THEN 2"
        " ELSE 0 END ELSE 0 END"
    )
