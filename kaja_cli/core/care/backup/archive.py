"""The backup archive's format: its members, their names, and the manifest.

One tar file (POSIX pax), gzip-compressed unless its name ends in `.tar`:

- `databases/<name>.db`: a consistent copy of each database of the registry
  that exists (`shared`, `artifacts` when it has a file of its own, `cache`,
  `stats`, `auth`);
- `images/<sessionId>/<sha256>.<ext>`: the image files of the sessions in
  the shared file's copy;
- `MANIFEST.json`, last: the format and its version, when and by which kaja,
  SQLite and Python it was made, where each database came from with its
  schema state and a few counts, and every other member's size and sha256.

Reading one (`kaja restore`), a member is accepted only if it is a regular
file whose name has one of those three shapes, each part a safe name (no
`/`, no `..`, nothing absolute, nothing hidden): a link, a device, a folder
or any other name refuses the whole archive before anything is written
outside the staging folder. Nothing here touches the store.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from kaja_cli.core import clock
from kaja_cli.core.conversations import images
from kaja_cli.core.store.registry import Database
from kaja_cli.errors import Failed, Refused

FORMAT = "kaja-backup"
VERSION = 1  # of the archive's layout and manifest; a newer one is refused
MANIFEST = "MANIFEST.json"
DB_FOLDER = "databases"
IMAGES_FOLDER = "images"
MANIFEST_LIMIT = 64 << 20  # bytes: a manifest larger than this is not one of ours
CHUNK = 1 << 20
COMPRESSLEVEL = 6  # gzip's own default: most of the gain, a third of level 9's time
METHOD = "sqlite3 online backup API, one step per database (a single read transaction)"
SERVER_METHOD = (
    "a SELECT of each table, the account's rows (streamed in chunks, or COPY … TO STDOUT with"
    " an older libpq), in one REPEATABLE READ read-only transaction, into a SQLite file of the"
    " same tables"
)
ENGINES = ("sqlite", "postgresql")  # where a backup came from: a local store, or cloud mode's

DAMAGED_HINT = "the archive is damaged or not a kaja backup; nothing was restored"


def database_member(name: Database) -> str:
    return f"{DB_FOLDER}/{name.value}.db"


def image_member(session_id: str, file_name: str) -> str:
    return f"{IMAGES_FOLDER}/{session_id}/{file_name}"


def compressed(name: str) -> bool:
    """Whether an archive of this name is gzip-compressed: all but `*.tar`."""
    return not name.lower().endswith(".tar")


class Member(NamedTuple):
    """What a member's name says it is."""

    kind: str  # "manifest", "database", "image"
    database: Database | None = None
    session_id: str | None = None
    file_name: str | None = None


def parse_member_name(name: str) -> Member | None:
    """The member a name denotes, or None when it is not a name kaja writes."""
    if name == MANIFEST:
        return Member("manifest")
    parts = name.split("/")
    if len(parts) == 2 and parts[0] == DB_FOLDER and parts[1].endswith(".db"):
        try:
            return Member("database", Database(parts[1].removesuffix(".db")))
        except ValueError:
            return None
    if (
        len(parts) == 3
        and parts[0] == IMAGES_FOLDER
        and images.safe_name(parts[1])
        and images.safe_name(parts[2])
    ):
        return Member("image", session_id=parts[1], file_name=parts[2])
    return None


def check_member(info: tarfile.TarInfo) -> Member:
    """The member `info` is; Refused (exit 5) for a link, a device, a folder or
    a name kaja never writes (`../x`, `/etc/passwd`, `images/../../x`)."""
    if not info.isreg():
        what = (
            "a symbolic link" if info.issym()
            else "a hard link" if info.islnk()
            else "a folder" if info.isdir()
            else "a device or a FIFO"
        )  # fmt: skip
        raise Refused(
            f"the archive holds {what} ({info.name!r}): kaja restores regular files only",
            hint="nothing was restored",
        )
    member = parse_member_name(info.name)
    if member is None:
        raise Refused(
            f"the archive holds a member kaja does not write ({info.name!r})",
            hint="nothing was restored: a kaja backup holds databases/, images/ and MANIFEST.json",
        )
    return member


# --- the manifest ------------------------------------------------------------------------
@dataclass
class DatabaseEntry:
    """One database in the archive: where it came from and what it was."""

    name: str  # the registry's name: "shared", "cache", …
    member: str
    source: str  # its path when it was backed up
    bytes: int
    sha256: str
    schema_upgraded: str | None = None  # `counters` schema:upgraded: the kaja that last upgraded it
    schema_missing: list[str] = field(default_factory=list)  # what the kaja that made it would add
    rows: dict[str, int] = field(default_factory=dict)  # sessions, messages, … (shared file)


@dataclass
class FileEntry:
    member: str
    bytes: int
    sha256: str


@dataclass
class Manifest:
    created_at: str
    kaja: str
    sqlite: str
    python: str
    state_dir: str
    databases: list[DatabaseEntry]
    files: list[FileEntry]  # every member but the manifest, databases included
    method: str = METHOD
    engine: str = "sqlite"  # a local store's files, or "postgresql": cloud mode's server
    account: str | None = None  # cloud mode: whose rows ("terminal" when no account is set)
    format: str = FORMAT
    version: int = VERSION

    @property
    def image_files(self) -> list[FileEntry]:
        return [f for f in self.files if f.member.startswith(IMAGES_FOLDER + "/")]

    def database(self, name: Database) -> DatabaseEntry | None:
        return next((d for d in self.databases if d.name == name.value), None)

    def to_bytes(self) -> bytes:
        data = asdict(self)
        head = {k: data.pop(k) for k in ("format", "version")}
        return json.dumps(head | data, indent=1, ensure_ascii=False).encode() + b"\n"

    def to_json(self) -> dict:
        """What `kaja backup --json` and `restore --json` say of the archive."""
        return {
            "created_at": self.created_at,
            "kaja": self.kaja,
            "sqlite": self.sqlite,
            "format": self.version,
            "method": self.method,
            "engine": self.engine,
            "account": self.account,
            "databases": [
                {"name": d.name, "source": d.source, "bytes": d.bytes, "sha256": d.sha256,
                 "rows": d.rows, "schema_upgraded": d.schema_upgraded,
                 "schema_missing": d.schema_missing}
                for d in self.databases
            ],
        }  # fmt: skip


def parse_manifest(data: bytes) -> Manifest:
    """The manifest from its bytes, every field checked before anything is
    done with it: Failed (exit 1) when it is not a kaja backup's, one a newer
    kaja made, or one whose fields have the wrong type, are missing, repeat,
    or disagree; Refused (exit 5) when it lists a member kaja never writes (a
    name outside the archive's folders). Fields it does not know are ignored."""
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        raise Failed("the archive's MANIFEST.json is not JSON", hint=DAMAGED_HINT) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise Failed("the archive is not a kaja backup (its manifest says otherwise)")
    version = raw.get("version")
    if type(version) is int and version > VERSION:
        raise Failed(
            f"the archive was made by a newer kaja (backup format {_shown(version)}; this kaja"
            f" reads {VERSION})",
            hint="upgrade kaja, then restore it; nothing was restored",
        )
    if type(version) is not int or version < 1:
        raise _malformed("version", "is not a format version")
    head = {key: _text(raw, key) for key in ("created_at", "kaja", "sqlite", "python",
                                             "state_dir", "method")}  # fmt: skip
    if clock.parse_stored(head["created_at"]) is None:
        raise _malformed("created_at", "is not a time")
    files = [_file_entry(f, f"files[{i}]") for i, f in enumerate(_array(raw, "files"))]
    dbs = [_database_entry(d, f"databases[{i}]") for i, d in enumerate(_array(raw, "databases"))]
    _check_agree(files, dbs)
    engine = raw.get("engine", "sqlite")  # absent: made before cloud backups, a local store
    if engine not in ENGINES:
        raise _malformed("engine", f"is not an engine kaja knows ({_shown(engine)})")
    account = _text(raw, "account", null=True) if "account" in raw else None
    return Manifest(**head, databases=dbs, files=files, engine=engine, account=account,
                    format=FORMAT, version=version)  # fmt: skip


LARGEST = 2**63 - 1  # bytes or rows: nothing kaja counts is larger (SQLite's own limit)
TEXT_LIMIT = 4096  # characters of one text field: a path, a version
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _malformed(where: str, problem: str) -> Failed:
    return Failed(f"the archive's manifest is malformed: {where} {problem}", hint=DAMAGED_HINT)


def _shown(value: object) -> str:
    """A value from the archive in a message: quoted, escaped (repr), and short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _field(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        raise _malformed(f"{where}{key}", "is missing")
    return obj[key]


def _text(obj: dict, key: str, where: str = "", *, null: bool = False) -> Any:
    value = _field(obj, key, where)
    if null and value is None:
        return None
    if not isinstance(value, str) or len(value) > TEXT_LIMIT:
        raise _malformed(f"{where}{key}", f"is not a text ({_shown(value)})")
    return value


def _count(obj: dict, key: str, where: str) -> int:
    value = _field(obj, key, where)
    if type(value) is not int or not 0 <= value <= LARGEST:
        raise _malformed(f"{where}{key}", f"is not a count ({_shown(value)})")
    return value


def _array(obj: dict, key: str) -> list[dict]:
    value = _field(obj, key, "")
    if not isinstance(value, list):
        raise _malformed(key, "is not a list")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _malformed(f"{key}[{i}]", "is not an object")
    return value


def _member(obj: dict, where: str) -> str:
    """The member an entry names; Refused (exit 5) for a name kaja never writes."""
    name = _text(obj, "member", where)
    found = parse_member_name(name)
    if found is None:
        raise Refused(
            f"the archive's manifest lists a member kaja does not write ({_shown(name)})",
            hint="nothing was restored: a kaja backup holds databases/, images/ and MANIFEST.json",
        )
    if found.kind == "manifest":
        raise _malformed(f"{where}member", "names the manifest itself")
    return name


def _sum(obj: dict, where: str) -> str:
    value = _text(obj, "sha256", where)
    if not _SHA256.fullmatch(value):
        raise _malformed(f"{where}sha256", f"is not a sha256 ({_shown(value)})")
    return value


def _file_entry(obj: dict, where: str) -> FileEntry:
    where += "."
    return FileEntry(_member(obj, where), _count(obj, "bytes", where), _sum(obj, where))


def _database_entry(obj: dict, where: str) -> DatabaseEntry:
    where += "."
    name = _text(obj, "name", where)
    try:
        database = Database(name)
    except ValueError:
        raise _malformed(f"{where}name", f"is not a database kaja knows ({_shown(name)})") from None
    member = _member(obj, where)
    if member != database_member(database):
        raise _malformed(f"{where}member", f"is not the {name} database's ({_shown(member)})")
    missing = _field(obj, "schema_missing", where)
    if not isinstance(missing, list) or not all(
        isinstance(m, str) and len(m) <= TEXT_LIMIT for m in missing
    ):
        raise _malformed(f"{where}schema_missing", "is not a list of texts")
    rows = _field(obj, "rows", where)
    if not isinstance(rows, dict):
        raise _malformed(f"{where}rows", f"is not an object of counts ({_shown(rows)})")
    for table in rows:
        if not (table.isascii() and table.isidentifier() and len(table) <= 64):
            raise _malformed(f"{where}rows", f"counts something that is no table ({_shown(table)})")
        _count(rows, table, f"{where}rows.")
    return DatabaseEntry(
        name=name, member=member, source=_text(obj, "source", where),
        bytes=_count(obj, "bytes", where), sha256=_sum(obj, where),
        schema_upgraded=_text(obj, "schema_upgraded", where, null=True),
        schema_missing=list(missing), rows=dict(rows),
    )  # fmt: skip


def _check_agree(files: list[FileEntry], dbs: list[DatabaseEntry]) -> None:
    """No member listed twice, no database twice, and each database described
    once, with its file's size and sha256 (a database the files list but the
    databases do not describe would be put in place unchecked)."""
    listed: dict[str, FileEntry] = {}
    for f in files:
        if f.member in listed:
            raise _malformed("files", f"list {f.member} twice")
        listed[f.member] = f
    described: set[str] = set()
    for d in dbs:
        if d.name in described:
            raise _malformed("databases", f"describe the {d.name} database twice")
        described.add(d.name)
        f = listed.get(d.member)
        if f is None:
            raise _malformed("files", f"do not list {d.member}, which its databases describe")
        if (f.bytes, f.sha256) != (d.bytes, d.sha256):
            raise _malformed("databases", f"and files disagree on the size or sha256 of {d.member}")
    for member in listed:
        database = parse_member_name(member).database  # type: ignore[union-attr]  # (_member)
        if database is not None and database.value not in described:
            raise _malformed("files", f"list {member}, which its databases do not describe")


# --- reading and writing members ------------------------------------------------------------
class Hashing:
    """A file-like reader that hashes (sha256) and counts what is read through it,
    telling `progress` how many bytes went by."""

    def __init__(self, raw: IO[bytes], progress: Callable[[int], None] | None = None) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()
        self.count = 0
        self.progress = progress

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        self.count += len(data)
        if self.progress is not None and data:
            self.progress(len(data))
        return data

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


class Counting:
    """A file-like reader that tells `progress` how many bytes went by (the archive
    itself, read by a restore: compressed bytes, against its size on disk)."""

    def __init__(self, raw: IO[bytes], progress: Callable[[int], None]) -> None:
        self.raw = raw
        self.progress = progress

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        if data:
            self.progress(len(data))
        return data


def tar_info(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    """A member's header: a private regular file, no owner names (they mean
    nothing on the machine it is restored on)."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = int(mtime)
    info.mode = 0o600
    info.uname = info.gname = ""
    return info


def padded_header(info: tarfile.TarInfo, length: int) -> bytes:
    """`info`'s pax header, exactly `length` bytes long (a multiple of 512, at
    least 1,536): a pax `comment` record fills what the member's own records
    leave, which every tar reader skips. A database copy with this much room
    made in front of it is a whole member in place (see backup's create)."""
    if length % tarfile.BLOCKSIZE or length < 3 * tarfile.BLOCKSIZE:
        raise ValueError(f"no pax header is {length} bytes long")
    for n in range(length - 2 * tarfile.BLOCKSIZE - 20, -1, -1):
        info.pax_headers = {"comment": " " * n}
        buf = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        if len(buf) == length:
            return buf
    raise ValueError(f"no pax header is {length} bytes long")  # pragma: no cover


def sums_match(entry: FileEntry, size: int, sha256: str) -> bool:
    return entry.bytes == size and entry.sha256 == sha256


def describe(manifest: Manifest) -> dict[str, Any]:
    """The manifest's head, for a person or `--json`: who made it, when, and what it holds."""
    shared = manifest.database(Database.SHARED)
    return {
        "created_at": manifest.created_at,
        "kaja": manifest.kaja,
        "sqlite": manifest.sqlite,
        "format": manifest.version,
        "databases": [d.name for d in manifest.databases],
        "rows": dict(shared.rows) if shared else {},
        "images": len(manifest.image_files),
    }


# --- reading an archive's members (restore, and backup's own-file check) -----------------------
def check_first_member(path: Path) -> None:
    """The archive's first member read and checked (a few hundred bytes): a
    file that is no kaja backup (`/etc/hostname`, a zip) is told as such
    before anything else is looked at, as the whole read would tell it
    (Failed, exit 1; a member kaja never writes: Refused, exit 5)."""
    try:
        with open(path, "rb") as raw:
            with members(decompressed(raw, raw)) as tar:
                first = tar.next()
    except DAMAGED as e:
        raise Failed(f"cannot read {path}: {reason(e)}", hint=DAMAGED_HINT) from None
    except OSError as e:
        raise Failed(f"cannot read {path}: {e.strerror or e}", hint=DAMAGED_HINT) from None
    if first is None:
        raise Failed(f"{path} is an empty archive", hint=DAMAGED_HINT)
    check_member(first)


# What reading a damaged archive (or a file that is none) raises.
DAMAGED = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


def members(stream: IO[bytes]) -> tarfile.TarFile:
    """The archive's members, read in order from its tar stream. tarfile's own
    bufsize: a larger one makes every 512-byte header read copy the rest of
    the buffer (minutes for 20,000 images)."""
    return tarfile.open(fileobj=stream, mode="r|" if isinstance(stream, gzip.GzipFile) else "r|*")


def decompressed(raw: IO[bytes], counted: IO[bytes]) -> IO[bytes]:
    """The archive's tar stream: through `gzip` (which checks the CRC-32 and size
    in its trailer, as tarfile's own stream reader does not) when it is gzip."""
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[return-value]
    return counted  # plain tar (or another compression tarfile knows)


def reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return (
        "it ends early (truncated)" if isinstance(e, EOFError) or "unexpected end" in text else text
    )
