"""`--since` and `--until` values: a date, an ISO time, or an age like `3d`.

Everything becomes an ISO 8601 UTC string comparable with the TEXT timestamps
in the store (`2026-11-29T21:00:00.000Z`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from kaja_cli.core import clock
from kaja_cli.core.clock import iso
from kaja_cli.errors import UsageError

_AGE = re.compile(r"^\s*(\d+)\s*(s|sec|m|min|h|d|w|mo|y)\s*$", re.IGNORECASE)
_UNITS = {
    "s": timedelta(seconds=1), "sec": timedelta(seconds=1), "m": timedelta(minutes=1),
    "min": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1),
    "w": timedelta(weeks=1), "mo": timedelta(days=30), "y": timedelta(days=365),
}  # fmt: skip


def parse_when(value: str, *, option: str = "--since", now: datetime | None = None) -> str:
    """`2026-11-01`, `2026-11-01T08:00`, `2026-11-01T08:00:00+01:00`, `3d`, `12h`,
    `2w`, `today`, `yesterday` → ISO 8601 UTC. Naive times are UTC."""
    now = now or clock.now()
    text = value.strip()
    low = text.lower()
    if low in ("now",):
        return iso(now)
    if low in ("today", "yesterday"):
        day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return iso(day - timedelta(days=1 if low == "yesterday" else 0))
    m = _AGE.match(text)
    if m:
        amount, unit = int(m.group(1)), m.group(2).lower()
        try:
            return iso(now - amount * _UNITS[unit])
        except OverflowError:
            raise UsageError(f"{option}: {value!r} is too far back") from None
    dt = clock.parse_stored(text)  # ISO 8601, naive = UTC
    if dt is None:
        raise UsageError(
            f"{option}: not a date or age: {value!r}",
            hint="use e.g. 2026-11-01, 2026-11-01T08:00, 3d, 12h or 2w",
        )
    return iso(dt)
