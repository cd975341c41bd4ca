"""`kaja artifacts` and `kaja artifacts show`: saved pages and the files tools
made (seed "Conversation search and artifacts"), and whether each file is
still on disk. The artifacts may live in their own file (KAJA_ARTIFACTS_DB):
the store says where (`store.maybe_reader("artifacts")`).

A relative `path` is the agent's file under its state directory (as a
relative database path is, in the seed): it is resolved against the state
dir, so a store copied, restored or moved keeps its artifacts' files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kaja_cli.core.audit.common import Listing, col, columns, find_id, select, usable
from kaja_cli.core.store import Store

COLUMNS = ("id", "kind", "source", "title", "created_at", "path", "fingerprint")


def resolved(path: object, base: Path | None) -> Path | None:
    """The file an artifact's path names: a relative one under `base` (the
    state dir); None without a path."""
    if not isinstance(path, str) or not path:
        return None
    where = Path(path)
    return base / where if base is not None and not where.is_absolute() else where


def file_exists(path: object, base: Path | None = None) -> bool:
    """Whether an artifact's path names a regular file here (False without a path)."""
    where = resolved(path, base)
    if where is None:
        return False
    try:
        return where.is_file()
    except (OSError, ValueError):
        return False


@dataclass
class Artifact:
    id: str
    kind: str | None
    source: str | None
    title: str | None
    created_at: str | None
    path: str | None
    fingerprint: str | None
    text: str | None = None  # `show` only
    base: Path | None = field(default=None, repr=False)  # the state dir a relative path is in

    @property
    def file(self) -> Path | None:
        """The file the path names (a relative one resolved), or None."""
        return resolved(self.path, self.base)

    @property
    def exists(self) -> bool:
        return file_exists(self.path, self.base)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("base")
        if self.text is None:
            d.pop("text")
        d["exists"] = self.exists
        return d


def listing(store: Store, *, kind: str | None = None, source: str | None = None,
            missing: bool = False, limit: int = 0) -> Listing:  # fmt: skip
    """The artifacts, newest first; `missing`: only those whose file is gone."""
    out = Listing("artifacts", store.where("artifacts"))
    with store.maybe_reader("artifacts") as conn:
        if conn is None:
            out.exists = False
            return out
        have = columns(conn, "artifacts")
        if not usable(out, have, "artifacts", "id"):
            return out
        cols = have["artifacts"]
        where, args = [], []
        for name, value in (("kind", kind), ("source", source)):
            if value is not None:
                where.append(f"{col(cols, 'a', name)} = ?")
                args.append(value)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        rows = conn.execute(
            f"SELECT {select(cols, 'a', COLUMNS)} FROM artifacts a{clause}"
            f" ORDER BY {col(cols, 'a', 'created_at')} DESC, a.id",
            args,
        ).fetchall()
    base = store.paths.state_dir.path
    items = [Artifact(*r, base=base) for r in rows]
    if missing:
        items = [a for a in items if a.path and not a.exists]
    if limit and len(items) > limit:
        out.more, items = len(items) - limit, items[:limit]
    out.rows = items
    return out


def show(store: Store, ref: str) -> Artifact:
    """One artifact with its text; NotFound (exit 3) when there is none such."""
    from kaja_cli.errors import NotFound

    with store.maybe_reader("artifacts") as conn:
        have = columns(conn, "artifacts").get("artifacts") if conn is not None else None
        if not have or "id" not in have:
            raise NotFound(f"no artifact {ref.strip()!r}: no artifacts recorded in "
                           f"{store.where('artifacts')}")  # fmt: skip
        art_id = find_id(conn, "artifacts", "id", ref, "artifact", "`kaja artifacts` lists them")
        row = conn.execute(
            f"SELECT {select(have, 'a', (*COLUMNS, 'text'))} FROM artifacts a WHERE a.id = ?",
            (art_id,),
        ).fetchone()
    return Artifact(*row, base=store.paths.state_dir.path)


def missing_files(conn: Any, base: Path | None = None) -> list[tuple[str, str]]:
    """(id, path) of the artifacts whose file is gone (doctor); a relative path
    is under `base`, the state dir."""
    have = columns(conn, "artifacts").get("artifacts")
    if not have or "id" not in have or "path" not in have:
        return []
    rows = conn.execute("SELECT id, path FROM artifacts WHERE path IS NOT NULL AND path <> ''")
    return [(str(i), p) for i, p in rows if isinstance(p, str) and not file_exists(p, base)]


def ids(conn: Any, prefix: str) -> list[tuple[str, str | None, str | None]]:
    """Artifact ids starting with `prefix`, for TAB: (id, kind, title)."""
    have = columns(conn, "artifacts").get("artifacts")
    if not have or "id" not in have:
        return []
    return conn.execute(
        f"SELECT a.id, {col(have, 'a', 'kind')}, {col(have, 'a', 'title')} FROM artifacts a"
        " WHERE a.id >= ? AND a.id < ? ORDER BY a.id LIMIT 200",
        (prefix, prefix + "\U0010ffff"),
    ).fetchall()
