"""`clock.iso_ms` / `clock.ms_of`: the demo's bulk writer formats times from whole
milliseconds; they must read exactly as `clock.iso()` writes the same instant."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from kaja_cli.core.clock import iso, iso_ms, ms_of


def test_iso_ms_is_iso_of_the_same_millisecond():
    rng = random.Random(29)
    edges = [0, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000]  # 2000-02-29
    for ms in edges + [rng.randrange(0, 4_102_444_800_000) for _ in range(20_000)]:
        dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
            milliseconds=ms, microseconds=rng.randrange(1000)
        )
        assert iso_ms(ms) == iso(dt), ms
        assert ms_of(dt) == ms  # whole milliseconds, never a float's rounding
