"""What `kaja optimize` did, for either engine (`local`, `server`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class IndexResult:
    segments_before: int
    segments_after: int
    merge_steps: int
    optimized: bool  # one 'optimize' ran (no other process had the file open)


@dataclass
class FileResult:
    name: str
    path: Path
    bytes_before: int
    bytes_after: int
    index: IndexResult | None = None
    analyzed: bool = False
    vacuumed: bool = False
    vacuum_index: str | None = None  # after VACUUM: "checked" or "rebuilt" (None: no index)
    checkpointed: bool = False  # the -wal was emptied
    wal_bytes: int = 0  # what the -wal still holds
    wal_frames: int = 0  # pages the -wal held when the checkpoint came (0: nothing to fold in)
    free_bytes: int = 0  # free pages inside the file after it all (reused by new rows)

    @property
    def saved(self) -> int:
        return self.bytes_before - self.bytes_after

    @property
    def changed(self) -> bool:
        """Whether any step wrote something."""
        index = self.index is not None and (self.index.merge_steps > 0 or self.index.optimized)
        return index or self.analyzed or self.vacuumed or self.wal_frames > 0

    def would_change(self, vacuum: bool) -> bool:
        """A dry run's look: whether a step has something to do for sure (a
        search index in several segments, pages in the -wal, VACUUM asked
        for); ANALYZE's is known only by running it."""
        index = self.index is not None and self.index.segments_before > 1
        return index or self.wal_frames > 0 or vacuum

    def to_json(self, *, dry_run: bool = False, vacuum: bool = False) -> dict:
        i = self.index
        return {
            "name": self.name, "path": str(self.path), "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "search_index": None if i is None else {
                "segments_before": i.segments_before, "segments_after": i.segments_after,
                "merge_steps": i.merge_steps, "optimized": i.optimized,
            },
            "analyzed": self.analyzed, "vacuumed": self.vacuumed,
            "search_index_after_vacuum": self.vacuum_index,
            "checkpointed": self.checkpointed, "wal_bytes": self.wal_bytes,
            "wal_pages": self.wal_frames, "free_bytes": self.free_bytes,
            "changed": self.would_change(vacuum) if dry_run else self.changed,
        }  # fmt: skip


@dataclass
class OptimizeResult:
    files: list[FileResult]
    vacuum: bool
    tables: list[str] | None = None  # cloud mode: kaja's tables VACUUM (ANALYZE) went through

    @property
    def bytes_before(self) -> int:
        return sum(f.bytes_before for f in self.files)

    @property
    def bytes_after(self) -> int:
        return sum(f.bytes_after for f in self.files)

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    def would_change(self) -> bool:
        return any(f.would_change(self.vacuum) for f in self.files) or self.tables is not None

    def to_json(self, *, dry_run: bool = False) -> dict:
        """`kaja optimize --json`; `dry_run`: the files as they are (their sizes
        after given as before), `changed` whether a step surely has work."""
        return {
            "action": "optimize",
            "dry_run": dry_run,
            "vacuum": self.vacuum,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "databases": [f.to_json(dry_run=dry_run, vacuum=self.vacuum) for f in self.files],
            "changed": self.would_change() if dry_run else self.changed,
        } | ({} if self.tables is None else {"tables": self.tables})
