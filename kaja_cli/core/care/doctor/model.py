"""What doctor reports: findings (`Check`), the repairs `--fix` may apply
(`Repair`), what they did (`FixResult`), and the whole `Report`.

Plain data: the command renders it (text or `--json`), `redaction` copies it
with names replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from kaja_cli.core.wording import plural

# How core shows a long job: `render.progress(description, total)` gives a
# callback taking (done, total).
ProgressFactory = Callable[
    [str, int | None], AbstractContextManager[Callable[[int, int | None], None]]
]


class Status(StrEnum):
    """How a check went; `--json` prints the value."""

    OK = "ok"
    WARN = "warn"
    ERROR = "error"


OK, WARN, ERROR = Status.OK, Status.WARN, Status.ERROR


class Group(StrEnum):
    """The report's sections, in the order it prints them."""

    ENVIRONMENT = "environment"
    PATHS = "paths"
    SETTINGS = "settings"
    SERVER = "server"  # cloud mode's PostgreSQL
    SHARED_FILE = "shared file"
    SEARCH_INDEX = "search index"
    IMAGES = "images"
    AGENT = "agent"  # what the agent runs and keeps: tasks, schedules, artifacts
    SIDE_DATABASES = "side databases"
    SYNC = "sync"
    QDRANT = "qdrant"


GROUPS = tuple(Group)


class RepairOrder(IntEnum):
    """The order `--fix` runs repairs in: what others build on goes first."""

    PERMISSIONS = 0  # a file kaja cannot write stops every later repair
    RECOVERY = 1  # an interrupted write rolled back: the file reads as it is again
    SCHEMA = 2  # tables, columns, indexes, WAL mode: the search index needs them
    SEARCH_INDEX = 3  # rebuilt over the messages as they now are
    CHECKPOINT = 4  # last: the repairs above wrote to the -wal


@dataclass(frozen=True)
class Repair:
    """A safe repair `--fix` applies. One per `key`; run in `order`."""

    key: str
    order: RepairOrder
    run: Callable[[], str]  # returns what it did; raises on failure
    database: str | None = None  # the database it writes to, if any


@dataclass
class Check:
    """One finding: what was checked, how it went, and what would fix it."""

    id: str
    group: Group
    status: Status
    summary: str
    details: list[str] = field(default_factory=list)
    fix: str | None = None
    fixable: bool = False  # `--fix` applies `fix`; otherwise it is advice for a person
    repairs: tuple[Repair, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "group": self.group,
            "status": self.status,
            "summary": self.summary,
            "details": list(self.details),
            "fix": self.fix,
            "fixable": self.fixable,
        }


@dataclass
class FixResult:
    """What one repair did (or why it could not)."""

    check: str
    done: bool
    message: str

    def to_dict(self) -> dict:
        return {"check": self.check, "done": self.done, "message": self.message}


@dataclass(frozen=True)
class Skipped:
    """What `--quick` left out: a check, or part of one, and what it would have read."""

    check: str
    what: str

    def to_dict(self) -> dict:
        return {"check": self.check, "what": self.what}


@dataclass
class Report:
    versions: dict[str, str | bool]
    checks: list[Check]
    thorough: bool = False
    quick: bool = False
    skipped: list[Skipped] = field(default_factory=list)  # what --quick left out
    fixes: list[FixResult] | None = None  # None: --fix was not asked for
    # What --redact hides besides the home folder, user and host: cloud mode's
    # server host, database user, database name and account.
    private: dict[str, str] = field(default_factory=dict)  # text → what replaces it

    @property
    def errors(self) -> int:
        return sum(c.status == ERROR for c in self.checks)

    @property
    def warnings(self) -> int:
        return sum(c.status == WARN for c in self.checks)

    @property
    def status(self) -> Status:
        return ERROR if self.errors else WARN if self.warnings else OK

    def verdict(self) -> str:
        """The report's last line: "no problems" or "N errors, M warnings"."""
        if not self.errors and not self.warnings:
            return "no problems"
        return f"{plural(self.errors, 'error')}, {plural(self.warnings, 'warning')}"

    def grouped(self) -> list[tuple[str, list[Check]]]:
        order = {g: i for i, g in enumerate(GROUPS)}
        groups: dict[str, list[Check]] = {}
        for c in self.checks:
            groups.setdefault(c.group, []).append(c)
        return sorted(groups.items(), key=lambda kv: order.get(kv[0], len(order)))

    def to_dict(self) -> dict:
        out: dict = dict(self.versions)
        out["thorough"] = self.thorough
        out["quick"] = self.quick
        out["status"] = self.status
        out["summary"] = {
            "errors": self.errors,
            "warnings": self.warnings,
            "ok": sum(c.status == OK for c in self.checks),
            "text": self.verdict(),
        }
        if self.fixes is not None:
            out["fixes"] = [f.to_dict() for f in self.fixes]
        out["checks"] = [c.to_dict() for _, group in self.grouped() for c in group]
        out["skipped"] = [s.to_dict() for s in self.skipped]
        return out

    to_json = to_dict  # `kaja doctor --json`
