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
    SEMANTIC = "semantic"  # kaja's semantic index (`kaja search --semantic`), with its companions


class Stage(IntEnum):
    """The order a whole wipe deletes in (a stage's paths go together)."""

    DATABASES = 0
    FILES = 1
    SETTINGS = 2
    PARENTS = 3


_STAGE_OF = {Part.SEMANTIC: Stage.DATABASES, Part.IMAGES: Stage.FILES, Part.FILES: Stage.FILES,
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

    def to_json(self) -> dict:
        return {"path": self.where, "what": self.what, "kind": self.kind, "size": self.size,
                "files": self.files}  # fmt: skip


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

    def to_json(self) -> dict:
        return {"summary": self.summary, "details": list(self.details),
                "commands": list(self.commands),
                "remaining": [str(p) for p in self.remaining]}  # fmt: skip


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

    def to_json(self, done: WipeResult | None = None, *, dry_run: bool = False) -> dict:
        """`kaja wipe --json`: what `done` deleted and kept, or the plan would."""
        items = self.items if done is None else done.deleted
        kept = self.kept if done is None else done.kept
        return {
            "action": "wipe",
            "dry_run": dry_run,
            "done": done is not None,
            "paths": [i.to_json() for i in items],
            "size": sum(i.size for i in items),
            "kept": [{"path": str(k.path), "reason": k.reason} for k in kept],
            "refused": [
                {"path": str(r.path), "reason": r.reason, "exit": int(r.status)}
                for r in self.refusals
            ],
            "interrupted": None if self.leftovers is None else self.leftovers.to_json(),
        }


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

    def to_json(
        self, done: OwnerResult | None = None, *, dry_run: bool = False,
        qdrant_points: int | None = None,
    ) -> dict:  # fmt: skip
        """`kaja wipe --owner --json`: what `done` erased, or the dry run would;
        `qdrant_points`: erased (or to erase) there too, None without Qdrant."""
        rows = self.rows if done is None else done.rows
        folders = [i.path for i in self.image_folders] if done is None else done.image_folders
        return {
            "action": "wipe-owner",
            "owner": self.owner.label,
            "dry_run": dry_run,
            "done": not dry_run,
            "rows": rows,
            "image_folders": [str(p) for p in folders],
            "images_link": None if self.images_link is None else str(self.images_link),
            **({} if done is None else {"index_purged": done.index_purged}),
            "kept_rows": [
                {"table": m.table, "rows": m.rows, "reason": m.reason} for m in self.mentions
            ],
            "interrupted": None if self.leftovers is None else self.leftovers.to_json(),
            "qdrant_points": qdrant_points,
        }


@dataclass
class OwnerResult:
    owner: Owner
    rows: dict[str, int]
    image_folders: list[Path]
    index_purged: bool = False  # the search index no longer holds their words on disk
