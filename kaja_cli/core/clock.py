"""Timestamps: as the store keeps them, as kaja shows them, and the one clock.

Every TEXT timestamp kaja writes (`2026-11-29T21:00:00.000Z`, ISO 8601 UTC
with milliseconds and a Z) comes from `iso()`, or from `SQLITE_NOW` in a
trigger, and every one it reads back goes through `parse_stored()`; `now()`
is the one clock kaja asks. The other forms a time takes are spelled here
too, so that no module writes a format of its own: the minute of the seed's
per-minute rows (`minute()`), the stamp in a file name (`stamp()`), the day
or minute of a stored time (`day_of()`, `minute_of()`, and in SQL
`day_sql()`, `month_sql()`; `postgres_iso()` is `iso()` on the server), and
a time as a listing shows it (`ago()`).

Imports nothing but datetime: shell completion reads it on every TAB press.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

# `iso(now())` as SQLite writes it in SQL (a trigger's, a default's): %f is SS.SSS.
SQLITE_NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


# A time as a person reads it, to the minute: in the local time zone where
# `kaja resume` and the HTML export word a stored time (`render.local_time`;
# in SQLite, `conversations.pieces`).
SHOWN_MINUTE = "%Y-%m-%d %H:%M"


def now() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


def from_epoch(seconds: float) -> datetime:
    """A Unix time (seconds) as a UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def iso(dt: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a Z, the format of every TEXT timestamp."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


_DAYS: dict[int, str] = {}  # day number since 1970 → "YYYY-MM-DDT" (iso_ms)
_HOURS_MINUTES: list[str] = []  # minute of the day → "HH:MM:"
_SECONDS: list[str] = []  # millisecond of the minute → "SS.mmmZ"


def iso_ms(ms: int) -> str:
    """`iso()` of a Unix time in whole milliseconds, without a datetime: the
    demo's bulk writer formats tens of millions of them (three lookups)."""
    if not _SECONDS:
        _HOURS_MINUTES.extend(f"{m // 60:02d}:{m % 60:02d}:" for m in range(1440))
        _SECONDS.extend(f"{s // 1000:02d}.{s % 1000:03d}Z" for s in range(60_000))
    day, rest = divmod(ms, 86_400_000)
    prefix = _DAYS.get(day)
    if prefix is None:
        prefix = _DAYS[day] = (date(1970, 1, 1) + timedelta(days=day)).strftime("%Y-%m-%dT")
    return prefix + _HOURS_MINUTES[rest // 60_000] + _SECONDS[rest % 60_000]


def ms_of(dt: datetime) -> int:
    """A datetime as whole Unix milliseconds (what `iso()` shows of it)."""
    return (dt - _EPOCH) // _MS


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def now_iso() -> str:
    """The current time as the store writes it."""
    return iso(now())


def minute(dt: datetime) -> str:
    """The minute of `dt` in UTC, `2026-11-29T21:00`: the key of the seed's
    per-minute rows (`cache_stats.minute`, `db_query_stats.bucket`)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def stamp(dt: datetime) -> str:
    """`dt` in UTC as a file name carries it, `20261129T210000Z` (sorts as it reads)."""
    return dt.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def day_of(text: str) -> str:
    """The day of a stored time, `2026-11-29`, read off its text (no parsing)."""
    return text[:10]


def minute_of(text: str) -> str:
    """The minute of a stored time, `2026-11-29T21:00` (as `minute()` writes it), off its text."""
    return text[:16]


def postgres_iso(expr: str) -> str:
    """SQL (PostgreSQL): the timestamptz `expr` as `iso()` writes it."""
    return f"to_char({expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"


def day_sql(expr: str) -> str:
    """SQL: the day of the stored time `expr` (`day_of`), in SQLite and PostgreSQL alike."""
    return f"substr({expr}, 1, 10)"


def month_sql(expr: str) -> str:
    """SQL: the month of the stored time `expr`, `2026-11`."""
    return f"substr({expr}, 1, 7)"


def days(first: str, last: str, most: int) -> list[str] | None:
    """Every day from `first` to `last` (`2026-11-29`, both included), or None
    when either is not a day or there would be more than `most` of them."""
    try:
        start, end = date.fromisoformat(first), date.fromisoformat(last)
    except (TypeError, ValueError):
        return None
    count = (end - start).days + 1
    if count > most:
        return None
    return [(start + timedelta(days=i)).isoformat() for i in range(count)]


def parse_stored(value: object) -> datetime | None:
    """A timestamp as stored (ISO 8601, naive = UTC), or None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def ago(value: str, now: datetime | None = None) -> str | None:
    """A stored time as a listing shows it: "just now", "5m ago", "3h ago",
    "2d ago", the day for one older than 30 days, the minute for one still to
    come (another machine's clock); None when `value` is not a time."""
    if now is not None and value.endswith("Z") and value[10:11] == "T":
        # Most of a big store is older than a month: its day is the text's
        # first ten characters, no parsing (10,000 rows of a listing).
        if value < _month_before(now):
            return day_of(value)
    dt = parse_stored(value)
    if dt is None:
        return None
    seconds = ((now or datetime.now(UTC)) - dt).total_seconds()
    if seconds < 0:
        return dt.strftime(SHOWN_MINUTE)
    for limit, div, unit in (
        (60, 1, "s"),
        (3600, 60, "m"),
        (86400, 3600, "h"),
        (86400 * 30, 86400, "d"),
    ):
        if seconds < limit:
            return f"{int(seconds // div)}{unit} ago" if unit != "s" else "just now"
    return dt.strftime("%Y-%m-%d")


_MONTH_BEFORE: dict[datetime, str] = {}


def _month_before(now: datetime) -> str:
    """30 days before `now` as stored text (ISO 8601 UTC, to the second)."""
    text = _MONTH_BEFORE.get(now)
    if text is None:
        text = (now - timedelta(days=30)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _MONTH_BEFORE.clear()
        _MONTH_BEFORE[now] = text
    return text


def iso_before(column: str, param: str = ":now") -> str:
    """SQL: `column` holds an ISO 8601 time (text starting YYYY-MM-DD) before
    `param`. Anything else (a number another writer stored, NULL) is not
    "before": an expiry kaja can't read never makes a row count as expired."""
    return (
        f"({column} < {param} AND typeof({column}) = 'text'"
        f" AND {column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*')"
    )


# --- where the local time is UTC (`utc_span`) -----------------------------------------------
UTC_SPAN_DAYS = 800  # a longer span is not looked at: its times are worded one by one
# (the zone, a UTC day as days since 1970) -> the local zone is UTC all that day
_UTC_DAYS: dict[tuple[object, int], bool] = {}


def _utc_all_day(zone: object, day: int) -> bool:
    """Whether the local zone (TZ as the C library reads it) is UTC at every
    hour of `day`: a change of offset in between would show at the next hour
    (the offsets of the zone database last hours at least)."""
    found = _UTC_DAYS.get((zone, day))
    if found is None:
        import time

        start = day * 86400
        found = all(time.localtime(start + h * 3600).tm_gmtoff == 0 for h in range(25))
        _UTC_DAYS[zone, day] = found
    return found


def utc_span(first: object, last: object) -> tuple[str, str] | None:
    """The stored times from a day before `first` to a day after `last` (a
    session's creation and last update), within 1970-01-02 and 2037-12-31 as
    SQLite words a local time: (first, last) as stored times, when the local
    zone is UTC at every hour of them, so a time there is shown as its own
    characters (`conversations.pieces.local_time`); else None."""
    a, b = parse_stored(first), parse_stored(last)
    if a is None or b is None or b < a:
        return None
    lo = max(a - timedelta(days=1), datetime(1970, 1, 2, tzinfo=UTC))
    hi = min(b + timedelta(days=1), datetime(2037, 12, 31, tzinfo=UTC))
    first_day, last_day = (int(x.timestamp()) // 86400 for x in (lo, hi))
    if last_day < first_day or last_day - first_day > UTC_SPAN_DAYS:
        return None
    import os
    import time

    zone = (os.environ.get("TZ"), time.tzname)  # a process that changed its zone asks again
    if not all(_utc_all_day(zone, d) for d in range(first_day, last_day + 1)):
        return None
    # As text, the bounds SQLite's own are (a time of 2037-12-31 sorts after it).
    return max(iso(lo), "1970-01-02"), min(iso(hi), "2037-12-31")
