"""What `kaja demo` is asked for (`DemoOptions`) and what it wrote (`DemoResult`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

DEFAULT_SEED = 1  # the store the manual and the tests describe


@dataclass(frozen=True)
class DemoOptions:
    seed: int = DEFAULT_SEED
    sessions: int | None = None  # total sessions (None: the scripted ones)
    messages: int | None = None  # total messages (None: about 20 per generated session)
    now: datetime | None = None  # base time; default: the current hour
    legacy: bool = False  # also the legacy files of an older install (demo/legacy.py)


@dataclass
class DemoResult:
    sessions: int = 0
    messages: int = 0
    tool_calls: int = 0
    images: int = 0
    owners: Counter[str] = field(default_factory=Counter)  # sessions per owner
    calls: int = 0
    location: str = ""
    legacy_files: int = 0

    def to_json(self) -> dict:
        """`kaja demo --json`: what was written."""
        return {"path": self.location, "sessions": self.sessions, "messages": self.messages,
                "tool_calls": self.tool_calls, "images": self.images,
                "owners": sorted(self.owners), "calls": self.calls,
                "legacy_files": self.legacy_files}  # fmt: skip
