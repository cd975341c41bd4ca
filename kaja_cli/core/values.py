"""Values read from the store, whatever their type.

Another program writes these files, and SQLite keeps whatever it is given:
an id may be an INTEGER or NULL, a duration the text 'slow', a token count
2^63 - 1 or a BLOB. The core turns such a value into the type it works with
here, once, instead of trusting the column's declared type:

- `text`: an id, a name, a key (None stays None; a BLOB is its hex, as in
  `--json`, upper-case as SQLite's hex());
- `whole`: a count or a duration (None for anything that is not a number);
- sums are made as REAL in SQL (`real_sum`), which never overflows, and
  `whole` makes them integers again.

What reaches the screen goes through one place too: `render.text`.
"""

from __future__ import annotations

import math
from typing import Any


def text(value: Any) -> str | None:
    """An id, name or key as text; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex().upper()
    return str(value)


def whole(value: Any) -> int | None:
    """A count or a duration as an int; None for NULL, text that is not a
    number ('slow'), NaN or an infinity."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
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


def real_sum(expr: str) -> str:
    """SQL summing `expr` as REAL, NULL when every value is (as SUM is):
    SQLite's SUM of integers fails with "integer overflow" past 2^63 - 1,
    and a report must still add up. TOTAL is REAL, and as fast as SUM."""
    return f"iif(count({expr}), total({expr}), NULL)"
