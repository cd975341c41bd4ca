"""Values read from the store, whatever their type.

Another program writes these files, and SQLite keeps whatever it is given:
an id may be an INTEGER or NULL, a duration the text 'slow', a token count
2^63 - 1 or a BLOB. The core turns such a value into the type it works with
here, once, instead of trusting the column's declared type:

- `text`: an id, a name, a key (None stays None; a BLOB is its hex, as in
  `--json`, upper-case as SQLite's hex());
- `whole`: a count or a duration (None for anything that is not a number);
- sums are made as REAL in SQL (`real_sum`), which never overflows, and
  `whole` makes them integers again;
- JSON text (`loads`) is JSON only when it nests at most `JSON_DEPTH` levels
  deep: deeper, it is shown as the text it is, as any text that is not JSON.

What reaches the screen goes through one place too: `render.text`.
"""

from __future__ import annotations

import codecs
import math
import re
from typing import Any

# How deep stored JSON may nest to be read as JSON (`messages.parts`,
# `tool_calls.arguments`, event payloads, …): deeper, it is its text. Every
# parser on the way has a limit (Python's ~1,000 levels, less what the call
# stack already uses; SQLite's JSON functions 1,000 or 2,000 by version; jq
# 1.6 256), and a value beyond one of them made commands fail; kaja's JSON
# around a value adds a few levels (a session export: seven).
JSON_DEPTH = 200


def text(value: Any) -> str | None:
    """An id, name or key as text; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex().upper()
    return str(value)


def whole(value: Any) -> int | None:
    """A count or a duration as an int; None for NULL, text that is not a
    number ('slow'), NaN or an infinity. A server's sum of integers (a
    Decimal: PostgreSQL's numeric) is a number like any other."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    elif not isinstance(value, float) and hasattr(value, "__float__"):
        value = float(value)
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def json_safe(value: Any) -> Any:
    """A stored value as JSON can hold it, the way SQLite's own JSON shows it:
    a BLOB as its hex (SQLite's hex()), an infinite REAL as SQLite's text
    for it (`Inf`, `-Inf`: Python would write `Infinity`, which is not JSON)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex().upper()
    if isinstance(value, float) and not math.isfinite(value):
        return "Inf" if value > 0 else "-Inf"
    return value


# A JSON string (skipped whole: its brackets do not nest), or a bracket.
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def too_deep(text: str) -> bool:
    """Whether JSON text nests more than JSON_DEPTH levels (counted, never parsed)."""
    if text.count("[") + text.count("{") <= JSON_DEPTH:
        return False  # most values: two scans in C
    depth = 0
    for m in _NESTING.finditer(text):
        c = text[m.start()]
        if c == "[" or c == "{":
            depth += 1
            if depth > JSON_DEPTH:
                return True
        elif c != '"':
            depth -= 1
    return False


def loads(text: str) -> Any:
    """Stored JSON text parsed; ValueError when it is not JSON (`NaN` and
    `Infinity` are not, though Python's parser takes them) or nests deeper
    than JSON_DEPTH (never a RecursionError)."""
    import json

    if too_deep(text):
        raise ValueError(f"JSON nested more than {JSON_DEPTH} levels deep")
    return json.loads(text, parse_constant=_not_json)


def _not_json(constant: str) -> Any:
    raise ValueError(constant)


def real_sum(expr: str) -> str:
    """SQL summing `expr` as REAL, NULL when every value is (as SUM is):
    SQLite's SUM of integers fails with "integer overflow" past 2^63 - 1,
    and a report must still add up. TOTAL is REAL, and as fast as SUM."""
    return f"iif(count({expr}), total({expr}), NULL)"


_UTF8_SLICE = 1 << 16  # bytes: decoded into a string that stays in the CPU's cache


def utf8_valid(data: bytes) -> bool:
    """Whether `data` is valid UTF-8 (SQLite keeps TEXT another program stored
    as it is). Checked a slice at a time, each cut before a byte that begins
    a character: decoding a 21 MB export whole makes a string of up to four
    bytes a character (27-60 ms); its 64 KB slices, about 12 ms (issue 29)."""
    if data.isascii():
        return True
    n = len(data)
    view = memoryview(data)
    decode = codecs.utf_8_decode
    start = 0
    try:
        while start < n:
            end = start + _UTF8_SLICE
            # Back to a character's first byte, at most three (a character is
            # at most four bytes): a slice still starting on a continuation
            # byte then is not UTF-8, and its decode says so.
            for _ in range(3):
                if end >= n or data[end] & 0xC0 != 0x80:
                    break
                end -= 1
            decode(view[start:end], "strict", True)
            start = end
    except UnicodeDecodeError:
        return False
    return True
