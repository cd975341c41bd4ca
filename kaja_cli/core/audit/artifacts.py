"""`kaja artifacts` and `kaja artifacts show`: saved pages and the files tools
made (seed "Conversation search and artifacts"), and whether each file is
still on disk. The artifacts may live in their own file (KAJA_ARTIFACTS_DB):
the store says where (`store.maybe_reader("artifacts")`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kaja_cli.core.audit.common import Listing, col, columns, find_id, select, usable
from kaja_cli.core.store import Store

COLUMNS = ("id", "kind", "source", "title", "created_at", "path", "fingerprint")


def file_exists(path: object) -> bool:
    """Whether an artifact's path names a regular file here (False without a path)."""
    if not isinstance(path, str) or not path:
        return False
    try:
        return Path(path).is_file()
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

    @property
    def exists(self) -> bool:
        return file_exists(self.path)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
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
    items = [Artifact(*r) for r in rows]
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
    return Artifact(*row)


def missing_files(conn: Any) -> list[tuple[str, str]]:
    """(id, path) of the artifacts whose file is gone (doctor)."""
    have = columns(conn, "artifacts").get("artifacts")
    if not have or "id" not in have or "path" not in have:
        return []
    rows = conn.execute("SELECT id, path FROM artifacts WHERE path IS NOT NULL AND path <> ''")
    return [(str(i), p) for i, p in rows if isinstance(p, str) and not file_exists(p)]


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
