"""Timestamps as the store keeps them: ISO 8601 UTC with milliseconds and a Z.

Every TEXT timestamp kaja writes (`2026-11-29T21:00:00.000Z`) comes from
`iso()`, and every one it reads back goes through `parse_stored()`; `now()`
is the one clock the core asks.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a Z, the format of every TEXT timestamp."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def now_iso() -> str:
    """The current time as the store writes it."""
    return iso(now())


def parse_stored(value: object) -> datetime | None:
    """A timestamp as stored (ISO 8601, naive = UTC), or None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def iso_before(column: str, param: str = ":now") -> str:
    """SQL: `column` holds an ISO 8601 time (text starting YYYY-MM-DD) before
    `param`. Anything else (a number another writer stored, NULL) is not
    "before": an expiry kaja can't read never makes a row count as expired."""
    return (
        f"({column} < {param} AND typeof({column}) = 'text'"
        f" AND {column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*')"
    )
