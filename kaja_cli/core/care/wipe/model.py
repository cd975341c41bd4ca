"""What a wipe plans and does, as plain data: the commands render it, and the
same plan drives `--dry-run`, the question, `--json` and the execution."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from pathlib import Path

from kaja_cli.core.owners import Owner
from kaja_cli.core.store.registry import Database
from kaja_cli.errors import Busy, ExitStatus, KajaError, Refused


class Kind(StrEnum):
    """How a path goes (`--json`'s "kind")."""

    FILE = "file"
    LINK = "link"  # only the link goes; its target stays
    TREE = "tree"  # an image folder, with its files
    FOLDER = "folder"  # removed only if empty by then
    # Cloud mode, on the server: kaja's own tables, functions and unaccent (when
    # kaja made it there), then its schema, dropped only when nothing else is in it.
    TABLE = "table"
    FUNCTION = "function"
    EXTENSION = "extension"
    SCHEMA = "schema"


SERVER_KINDS = (Kind.TABLE, Kind.FUNCTION, Kind.EXTENSION, Kind.SCHEMA)


class Part(StrEnum):
    """What a path belongs to when it is not one of a database's files."""

    IMAGES = "images"  # a session's image folder (or a symlinked images/)
    FILES = "files"  # files/ and images/ once empty (or a symlinked files/)
    SETTINGS = "settings"
    PARENTS = "parents"  # folders removed after the marker: the state dir, the settings'


class Stage(IntEnum):
    """The order a whole wipe deletes in (a stage's paths go together)."""

    DATABASES = 0
    FILES = 1
    SETTINGS = 2
    PARENTS = 3


_STAGE_OF = {Part.IMAGES: Stage.FILES, Part.FILES: Stage.FILES,
             Part.SETTINGS: Stage.SETTINGS, Part.PARENTS: Stage.PARENTS}  # fmt: skip


@dataclass(frozen=True)
class Item:
    """One path the wipe deletes, in the order it does.

    group: the database whose file (or -wal, -shm, -journal) it is, or the
    `Part` it belongs to otherwise.
    """

    path: Path
    what: str
    kind: Kind
    group: Database | Part
    size: int = 0
    files: int = 0
    shown: str | None = None  # how to show it when it is no path (a schema on a server)

    @property
    def where(self) -> str:
        return self.shown if self.shown is not None else str(self.path)

    @property
    def database(self) -> Database | None:
        return self.group if isinstance(self.group, Database) else None

    @property
    def stage(self) -> Stage:
        return Stage.DATABASES if self.database is not None else _STAGE_OF[Part(self.group)]


@dataclass(frozen=True)
class Kept:
    """Something in reach that stays, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Refusal:
    """Why the wipe deletes nothing: an unsafe path (exit 5) or a file in use (exit 4)."""

    path: Path
    reason: str
    status: ExitStatus = ExitStatus.REFUSED

    @property
    def busy(self) -> bool:
        return self.status is ExitStatus.BUSY

    def error(self) -> KajaError:
        if self.busy:
            return Busy(self.reason, hint="close it first; nothing was deleted")
        return Refused(self.reason, hint="nothing was deleted")


@dataclass(frozen=True)
class Leftovers:
    """What an interrupted wipe left (for `kaja doctor` and the next wipe)."""

    summary: str
    details: tuple[str, ...]
    commands: tuple[str, ...]  # what finishes it
    remaining: tuple[Path, ...]


@dataclass(frozen=True)
class Stored:
    """What an engine part plans for a whole wipe: what it stores goes (`items`:
    the database files, or kaja's objects on the server), what stays, what is
    refused, and the sessions it knows (their image folders go too; None:
    they can't be read)."""

    items: list[Item]
    kept: list[Kept]
    refusals: list[Refusal]
    known: set[str] | None


@dataclass
class WipePlan:
    items: list[Item]
    kept: list[Kept]
    refusals: list[Refusal]
    marker: Path
    leftovers: Leftovers | None = None
    markers: list[Path] = field(default_factory=list)  # earlier wipes' markers to remove
    needs_yes: bool = False  # a terminal's answer is not enough (a server's shared store)

    @property
    def size(self) -> int:
        return sum(i.size for i in self.items)

    @property
    def nothing_to_do(self) -> bool:
        return not self.items and not self.markers

    def check(self) -> None:
        """Raise the first refusal (unsafe paths, exit 5, before busy ones, exit 4)."""
        if self.refusals:
            raise sorted(self.refusals, key=lambda r: r.busy)[0].error()


@dataclass
class WipeResult:
    deleted: list[Item]
    kept: list[Kept]


@dataclass(frozen=True)
class Mention:
    """Rows outside the wipe that still refer to the owner (kept)."""

    table: str
    rows: int
    reason: str


@dataclass
class OwnerPlan:
    owner: Owner
    rows: dict[str, int]
    image_folders: list[Item]
    mentions: list[Mention]
    leftovers: Leftovers | None = None
    images_link: Path | None = None  # a symlinked files/ or images/: their folders stay

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


@dataclass
class OwnerResult:
    owner: Owner
    rows: dict[str, int]
    image_folders: list[Path]
    index_purged: bool = False  # the search index no longer holds their words on disk
