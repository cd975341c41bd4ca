"""`kaja backup` and `kaja restore` (core/care/backup/, commands/backup.py).

Through the real command: what the archive holds (members, manifest, sums,
mode), where it may be written, a backup beside live writers restored
elsewhere with every committed row and image, damaged and unsafe archives
that restore nothing, refusals (an existing store, a running Kaja), and
`kill -9` of a real restore at each of its steps (tests/support/paused.py),
after which the next restore or `--finish` leaves the old store or the new
one, whole, and doctor says what happened meanwhile.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.cli.test_wipe import holding, listing, snapshot
from tests.conftest import DEMO_NOW, KAJA, Kaja
from tests.support.faults import assert_store_sound, kill_mid_transaction
from tests.support.paused import killed_at, paused

AGENTS = Path(__file__).parents[1] / "support" / "agents"
DATABASE_MEMBERS = ["databases/shared.db", "databases/cache.db", "databases/stats.db",
                    "databases/auth.db"]  # fmt: skip


# --- helpers ---------------------------------------------------------------------------------
def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]


def manifest_of(path: Path) -> dict:
    return json.loads(members(path)["MANIFEST.json"])


def write_archive(path: Path, entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def rebuilt(src: Path, dest: Path, *, change=None, drop=(), add=(), manifest=None) -> Path:
    """`src` written again with members changed (`change(name, data)`), dropped,
    added, or the manifest edited (`manifest(dict)`)."""
    entries = []
    for name, data in members(src).items():
        if name in drop:
            continue
        if name == "MANIFEST.json" and manifest is not None:
            doc = json.loads(data)
            manifest(doc)
            data = json.dumps(doc).encode()
        elif change is not None:
            data = change(name, data)
        entries.append((tarfile.TarInfo(name), data))
    entries += [(tarfile.TarInfo(n), d) for n, d in add]
    return write_archive(dest, entries)


def backup(kaja: Kaja, out: Path, *args: str) -> dict:
    r = kaja("backup", "-o", str(out), "--json", *args)
    assert r.code == 0, r
    return json.loads(r.out)


def images_of(state: Path) -> dict[str, str]:
    """Every image file under state/files/images: relative path → sha256 of its bytes."""
    root = state / "files" / "images"
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath, n)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def store_state(state: Path, scratch: Path) -> tuple[dict, dict]:
    """Every table's rows (the search index's own tables aside) and every image."""
    return snapshot(state / "kaja.db", scratch), images_of(state)


def leftovers(folder: Path) -> list[str]:
    """Hidden names a backup or restore may leave behind (temporary files, staging)."""
    return sorted(
        n for n in os.listdir(folder) if ".restore-" in n or n.endswith((".tmp", ".partial"))
    )


def second_store(kaja: Kaja, tmp_path: Path) -> tuple[Path, Path]:
    """A backup of the demo store, and another store (demo seed 2) in the kaja's
    state dir: (the archive, its state before any restore)."""
    arch = tmp_path / "demo1.tar.gz"
    backup(kaja, arch)
    shutil.rmtree(kaja.state)
    r = kaja("demo", "--seed", "2", "--now", DEMO_NOW)
    assert r.code == 0, r
    return arch, kaja.state


# --- what a backup writes --------------------------------------------------------------------
def test_backup_holds_every_database_the_images_and_a_manifest_of_sums(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    out = tmp_path / "out" / "b.tar.gz"
    out.parent.mkdir()
    before = listing(kaja.state)
    doc = backup(kaja, out)
    assert listing(kaja.state) == before  # a backup changes nothing in the store
    assert out.stat().st_mode & 0o777 == 0o600
    assert os.listdir(out.parent) == ["b.tar.gz"]  # no temporary file or staging left
    with gzip.open(out) as f:
        assert f.read(1)  # gzip-compressed
    got = members(out)
    images = sorted(n for n in got if n.startswith("images/"))
    assert sorted(got) == sorted([*DATABASE_MEMBERS, *images, "MANIFEST.json"])
    assert list(got)[-1] == "MANIFEST.json"
    assert [f"images/{p}" for p in sorted(images_of(kaja.state))] == images and len(images) == 3

    manifest = json.loads(got["MANIFEST.json"])
    assert manifest["format"] == "kaja-backup" and manifest["version"] == 1
    from kaja_cli import __version__

    assert manifest["kaja"] == __version__ and manifest["sqlite"] == sqlite3.sqlite_version
    listed = {f["member"]: f for f in manifest["files"]}
    assert sorted(listed) == sorted(n for n in got if n != "MANIFEST.json")
    for name, data in got.items():
        if name != "MANIFEST.json":
            assert listed[name] == {"member": name, "bytes": len(data),
                                    "sha256": hashlib.sha256(data).hexdigest()}  # fmt: skip
    shared = next(d for d in manifest["databases"] if d["name"] == "shared")
    assert shared["source"] == str(kaja.db) and shared["schema_missing"] == []
    assert shared["rows"]["sessions"] == 13 and shared["rows"]["messages"] == 96
    assert shared["schema_upgraded"].startswith("kaja ")

    assert doc["action"] == "backup" and doc["path"] == str(out) and doc["compressed"] is True
    assert doc["bytes"] == out.stat().st_size
    assert doc["images"] == {"files": 3, "bytes": sum(len(got[n]) for n in images)}
    assert [d["name"] for d in doc["databases"]] == ["shared", "cache", "stats", "auth"]


def test_backup_copies_are_the_databases_as_they_are(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    out = tmp_path / "b.tar.gz"
    backup(kaja, out)
    copy = tmp_path / "copy.db"
    copy.write_bytes(members(out)["databases/shared.db"])
    assert snapshot(copy, tmp_path / "s1") == snapshot(kaja.db, tmp_path / "s2")
    conn = sqlite3.connect(copy)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO conversation_text(conversation_text) VALUES ('integrity-check')")


def test_piped_output_and_the_line_on_stderr(demo_store: Kaja, tmp_path: Path):
    out = tmp_path / "b.tar.gz"
    r = demo_store("backup", "-o", str(out))
    assert r.code == 0, r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert [row[0] for row in rows] == ["shared", "cache", "stats", "auth", "images"]
    assert rows[0][1:] == [str(demo_store.db), str(demo_store.db.stat().st_size)]
    assert rows[-1][1] == str(demo_store.state / "files" / "images")
    assert r.err == (
        f"kaja: wrote {out} ({_human(out.stat().st_size)}): 4 databases, 13 sessions, 96"
        f" messages, 3 images; `kaja restore {out}` puts it back\n"
    )


def _human(n: int) -> str:
    from kaja_cli.core.engine.fs import human_size

    return human_size(n)


def test_a_tar_name_is_not_compressed_and_a_folder_gets_the_default_name(
    demo_store: Kaja, tmp_path: Path
):
    plain = tmp_path / "b.tar"
    backup(demo_store, plain)
    with open(plain, "rb") as f:
        assert f.read(2) != b"\x1f\x8b"
    assert "MANIFEST.json" in members(plain)
    folder = tmp_path / "backups"
    folder.mkdir()
    doc = backup(demo_store, folder)
    (name,) = os.listdir(folder)
    assert name.startswith("kaja-backup-") and name.endswith("Z.tar.gz")
    assert doc["path"] == str(folder / name)


@pytest.mark.process
def test_an_uncompressed_archive_is_made_in_place_and_any_tar_reads_it(
    demo_store: Kaja, tmp_path: Path
):
    """A `.tar` backup's shared copy becomes the archive's start (room made in
    front of it for its header) instead of being copied into it: GNU tar
    lists and extracts the same members, sums as the manifest says, the
    database whole; and kaja restores it."""
    from kaja_cli.core.engine import fs

    probe = tmp_path / "probe"
    probe.write_bytes(bytes(8192))
    with open(probe, "rb+") as f:
        if not fs.insert_at_start(f.fileno(), os.fstat(f.fileno()).st_blksize):
            pytest.skip(f"the file system of {tmp_path} cannot insert a range (fallocate)")
    kaja = demo_store
    plain = tmp_path / "b.tar"
    backup(kaja, plain)
    with tarfile.open(plain) as tar:  # the header fills the room made: one file-system block
        assert tar.next().offset_data == os.stat(plain).st_blksize  # type: ignore[union-attr]
    listed = subprocess.run(["tar", "-tf", str(plain)], capture_output=True, text=True, check=True)
    assert listed.stderr == ""
    assert listed.stdout.splitlines() == list(members(plain))
    assert listed.stdout.splitlines()[:4] == DATABASE_MEMBERS
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["tar", "-xf", str(plain), "-C", str(out)], check=True)
    manifest = manifest_of(plain)
    for f in manifest["files"]:
        data = (out / f["member"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (f["bytes"], f["sha256"])
    copy = out / "databases" / "shared.db"
    assert snapshot(copy, tmp_path / "s1") == snapshot(kaja.db, tmp_path / "s2")
    r = kaja("--state-dir", str(tmp_path / "back"), "restore", str(plain))
    assert r.code == 0, r
    assert snapshot(tmp_path / "back" / "kaja.db", tmp_path / "s3") == snapshot(
        kaja.db, tmp_path / "s4"
    )


def test_where_no_room_can_be_made_in_front_the_copy_is_copied_the_same(
    demo_store: Kaja, tmp_path: Path, monkeypatch
):
    """A file system that cannot insert a range (tmpfs, btrfs, NFS) gets the
    copy written into the archive: the same members, byte for byte, and the
    progress counts each byte once."""
    kaja = demo_store
    backup(kaja, tmp_path / "in-place.tar")
    from kaja_cli.core.engine import fs

    asked = []
    monkeypatch.setattr(fs, "insert_at_start", lambda fd, n: asked.append(n) is not None)
    backup(kaja, tmp_path / "copied.tar")
    assert asked == [os.stat(tmp_path).st_blksize]
    a, b = members(tmp_path / "in-place.tar"), members(tmp_path / "copied.tar")
    assert list(a) == list(b) and len(a) == 8  # 4 databases, 3 images, the manifest
    assert {n: d for n, d in a.items() if n != "MANIFEST.json"} == {
        n: d for n, d in b.items() if n != "MANIFEST.json"
    }
    listed = manifest_of(tmp_path / "copied.tar")["files"]
    assert listed == manifest_of(tmp_path / "in-place.tar")["files"]
    assert [f["member"] for f in listed] == list(b)[:-1]


def test_without_o_it_writes_the_default_name_in_the_current_folder(
    demo_store: Kaja, tmp_path: Path
):
    here = tmp_path / "here"
    here.mkdir()
    p = subprocess.run([sys.executable, "-c", "from kaja_cli.app import main; main()", "backup"],
                       cwd=here, env=demo_store.env, capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 0, p.stderr
    (name,) = os.listdir(here)
    assert name.startswith("kaja-backup-") and name.endswith(".tar.gz")
    assert f"wrote {here / name}" in p.stderr


def test_an_older_backup_is_replaced_whole_and_any_other_file_only_with_force(
    demo_store: Kaja, tmp_path: Path
):
    out = tmp_path / "b.tar.gz"
    backup(demo_store, out)
    first = out.read_bytes()
    backup(demo_store, out)  # a kaja backup: replaced, as a new backup
    assert "MANIFEST.json" in members(out) and out.read_bytes() != first
    assert out.stat().st_mode & 0o777 == 0o600
    notes = tmp_path / "notes.tar.gz"
    notes.write_text("my notes, not a backup")
    r = demo_store("backup", "-o", str(notes))
    assert r.code == 5 and "is not a kaja backup" in r.err and "--force" in r.err, r
    assert notes.read_text() == "my notes, not a backup"
    r = demo_store("backup", "-o", str(notes), "--force")
    assert r.code == 0, r
    assert "MANIFEST.json" in members(notes)


def test_a_link_is_never_written_through(demo_store: Kaja, tmp_path: Path):
    """`backup -o LINK` replaced the file the link named (as root, `/etc/passwd`
    became a gzip archive): a link is refused, and with --force the link itself
    is replaced by the archive; what it named is left as it was."""
    victim = tmp_path / "victim.txt"
    victim.write_text("root:x:0:0:root:/root:/bin/bash\n")
    victim.chmod(0o644)
    link = tmp_path / "backup.tar.gz"
    link.symlink_to(victim)
    r = demo_store("backup", "-o", str(link))
    assert r.code == 5 and "symbolic link" in r.err and r.err.count("\n") == 1, r
    assert link.is_symlink() and victim.read_text().startswith("root:x:0:0")
    r = demo_store("backup", "-o", str(link), "--force")
    assert r.code == 0, r
    assert not link.is_symlink() and "MANIFEST.json" in members(link)
    assert victim.read_text().startswith("root:x:0:0") and victim.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "where",
    ["kaja.db", "kaja.db-wal", "cache.db", "files/images/new.tar.gz", "files/x.tar.gz",
     "hard link to kaja.db", "symlink to web-auth.db", "kaja.db.restoring"],
)  # fmt: skip
def test_the_archive_is_never_one_of_the_stores_files(demo_store: Kaja, tmp_path: Path, where: str):
    kaja = demo_store
    if where == "hard link to kaja.db":
        out = tmp_path / "innocent.tar.gz"
        os.link(kaja.db, out)
    elif where == "symlink to web-auth.db":
        out = tmp_path / "link.tar.gz"
        out.symlink_to(kaja.state / "web-auth.db")
    else:
        out = kaja.state / where
    before = listing(kaja.state)
    r = kaja("backup", "-o", str(out))
    assert r.code == 5, r
    assert "part of Kaja's store" in r.err and r.err.count("\n") == 1
    assert listing(kaja.state) == before


def test_a_fifo_a_dangling_link_and_a_missing_folder_are_refused(demo_store: Kaja, tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = demo_store("backup", "-o", str(fifo))
    assert r.code == 5 and "not a regular file" in r.err, r
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    r = demo_store("backup", "-o", str(dangling))
    assert r.code == 5 and "symbolic link" in r.err, r
    r = demo_store("backup", "-o", str(tmp_path / "no" / "such" / "b.tar.gz"))
    assert r.code == 2 and "no folder" in r.err, r
    assert sorted(os.listdir(tmp_path)) == ["dangling", "fifo", "home", "state"]


def test_no_store_is_exit_3_and_another_programs_database_exit_5(kaja: Kaja, tmp_path: Path):
    r = kaja("backup", "-o", str(tmp_path / "b.tar.gz"))
    assert r.code == 3 and "no Kaja store" in r.err, r
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    r = kaja("--db", str(other), "backup", "-o", str(tmp_path / "b.tar.gz"))
    assert r.code == 5 and "not Kaja's" in r.err, r
    assert not (tmp_path / "b.tar.gz").exists()


@pytest.mark.process
def test_a_killed_backup_leaves_no_archive_and_the_next_one_tidies_up(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    out = tmp_path / "out" / "b.tar.gz"
    out.parent.mkdir()
    killed_at(kaja, "written", "backup", "-o", str(out))
    assert not out.exists()  # the archive is renamed into place only once whole
    assert len(leftovers(out.parent)) == 2  # its temporary file and its staging folder
    backup(kaja, out)
    assert os.listdir(out.parent) == ["b.tar.gz"]


@pytest.mark.process
def test_a_full_disk_is_one_line_and_leaves_nothing(demo_store: Kaja, tmp_path: Path):
    from tests.support.faults import can_mount_tmpfs

    if not can_mount_tmpfs():
        pytest.skip("no private tmpfs mounts here")
    small, out = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    out.mkdir()
    # Full while copying the databases, then while writing the archive (the
    # copies fit, the archive does not), plain and compressed: sizes from the
    # store's own (the demo's databases: about 750 kB).
    copies = sum(f.stat().st_size for f in demo_store.state.glob("*.db")) // 1024
    for name, size, when in (("a.tar", f"{copies - 40}k", "cannot copy"),
                             ("b.tar", f"{copies + 300}k", "cannot write"),
                             ("c.tar.gz", f"{copies + 18}k", "cannot write")):  # fmt: skip
        script = (
            f'mount -t tmpfs -o size={size} tmpfs "{small}" && '
            f'"{KAJA}" backup -o "{small}/{name}" 2> "{out}/err"; echo $? > "{out}/rc"; '
            f'ls -A "{small}" > "{out}/left"'
        )
        subprocess.run(["unshare", "-m", "sh", "-c", script], env=demo_store.env, check=True)
        err = (out / "err").read_text()
        assert (out / "rc").read_text().strip() == "1", err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert when in err and "free some disk space" in err, err
        assert (out / "left").read_text() == ""  # no archive, no temporary file, no copies


@pytest.mark.process
@pytest.mark.needs("root", "mkfs.ext4", "unshare")
def test_an_uncompressed_backup_is_built_in_place_on_ext4_with_1_kib_blocks(
    demo_store: Kaja, tmp_path: Path
):
    """mkfs.ext4 gives file systems under 512 MB 1 KiB blocks: the header's room
    (three tar blocks, 1.5 KiB) was no whole number of them, so the archive was
    copied, needed twice the store's size, and said "the disk is full" with room
    for one. A 12 MB store on a 20 MB ext4 (17 MB free): written in place."""
    pad = sqlite3.connect(demo_store.db)
    with pad:
        pad.execute("CREATE TABLE padding (x BLOB)")
        pad.executemany("INSERT INTO padding VALUES (randomblob(?))", [(1 << 20,)] * 11)
    pad.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pad.close()
    image, mnt, out = tmp_path / "ext4.img", tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir()
    with image.open("wb") as f:
        f.truncate(20 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "1024", "-m", "0", str(image)], check=True)
    script = (
        f'mount -o loop "{image}" "{mnt}" || exit 77; '
        f'"{KAJA}" backup -o "{mnt}/x.tar" 2> "{out}/err"; echo $? > "{out}/rc"; '
        f'stat -f -c %S "{mnt}" > "{out}/block"; tar -tf "{mnt}/x.tar" > "{out}/members"; '
        f'umount "{mnt}"'
    )
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], env=demo_store.env)
    if p.returncode == 77:
        pytest.skip("no loop device to mount an ext4 image on here")
    err = (out / "err").read_text()
    assert (out / "block").read_text().strip() == "1024"
    assert (out / "rc").read_text().strip() == "0", err
    assert "MANIFEST.json" in (out / "members").read_text().split()


def test_the_header_room_is_whole_blocks_of_tar_and_of_the_file_system():
    from kaja_cli.core.care.backup.create import header_room

    assert [header_room(b) for b in (512, 1024, 2048, 4096, 65536)] == [
        1536, 2048, 2048, 4096, 65536
    ]  # fmt: skip
    assert header_room(4096, 1024) == 4096 and header_room(0) == 1536


def test_an_empty_o_is_a_usage_error_as_for_export(demo_store: Kaja, tmp_path: Path):
    here = Path.cwd()
    before = sorted(os.listdir(here))
    for argv, what in ((["backup", "-o", ""], "'--output' / '-o'"), (["restore", ""], "'FILE'"),
                       (["restore", " ", "--dry-run"], "'FILE'")):  # fmt: skip
        r = demo_store(*argv)
        assert r.code == 2 and r.err.startswith(f"kaja: Invalid value for {what}: is empty"), r
    assert sorted(os.listdir(here)) == before  # no archive in the current folder


def test_image_names_are_printed_escaped(demo_store: Kaja, tmp_path: Path):
    """A file in a session's image folder named with an escape sequence (clear the
    screen, OSC 52: set the clipboard) is shown as `\\x1b`, never sent raw."""
    kaja = demo_store
    folder = next((kaja.state / "files" / "images").iterdir())
    (folder / "\x1b[2J\x1b]52;c;aGk=\x07.png").write_bytes(b"x")
    r = kaja("backup", "-o", str(tmp_path / "b.tar.gz"))
    assert r.code == 0, r
    assert "left out: " in r.err and "/\\x1b[2J\\x1b]52;c;aGk=\\x07.png: not a name" in r.err, r
    assert "\x1b" not in r.err + r.out and "\x07" not in r.err + r.out


def test_what_a_manifest_says_is_printed_escaped(demo_store: Kaja, tmp_path: Path):
    """`kaja`, the version that made it, is the archive's word: escaped. `created_at`
    must be a time (a manifest where it is not is refused, and the refusal escapes it)."""
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    osc = "\x1b]52;c;aGk=\x07\x1b[2J"
    bad = rebuilt(arch, tmp_path / "bad.tar.gz", manifest=lambda m: m.update(kaja=osc))
    other = str(tmp_path / "other")
    for argv in (["--state-dir", other, "restore", str(bad), "--dry-run"],
                 ["--state-dir", other, "restore", str(bad)], ["restore", str(bad), "--force", "--yes"]):  # fmt: skip
        r = demo_store(*argv)
        assert r.code == 0, r
        assert "made by kaja \\x1b]52;c;aGk=\\x07\\x1b[2J at " in r.err, r
        assert "\x1b" not in r.err + r.out and "\x07" not in r.err + r.out, r
    bad = rebuilt(arch, tmp_path / "worse.tar.gz", manifest=lambda m: m.update(created_at=osc))
    r = demo_store("restore", str(bad), "--dry-run")
    assert r.code == 1 and "created_at is not a time" in r.err and "\x1b" not in r.err, r


def _tree_bytes(state: Path) -> dict:
    """Every file below `state` byte for byte, but SQLite's shared memory (-shm)."""
    return {p.relative_to(state): p.read_bytes() for p in sorted(state.rglob("*"))
            if p.is_file() and not p.name.endswith("-shm")}  # fmt: skip


def _room(path: Path) -> int:
    """Bytes `path` takes on a tmpfs: whole pages, each folder one."""
    pages = 0
    for p in [path, *path.rglob("*")]:
        pages += 1 if p.is_dir() else -(-p.stat().st_size // 4096)
    return pages * 4096


@pytest.mark.process
def test_a_full_disk_during_a_restore_says_so_and_keeps_the_old_store(
    demo_store: Kaja, tmp_path: Path
):
    """The state dir on a small file system: full while unpacking the archive (it
    was "the archive is damaged"), then while backing up the store in place."""
    from tests.support.faults import can_mount_tmpfs

    if not can_mount_tmpfs():
        pytest.skip("no private tmpfs mounts here")
    kaja = demo_store
    arch, state = second_store(kaja, tmp_path)
    unpacked = sum(-(-len(d) // 4096) * 4096 for d in members(arch).values())
    store = _room(state)
    small, out = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    for case, room, said in (("unpacking", store + unpacked // 2, "unpacking the archive"),
                             ("backing up", store + unpacked + 64 * 1024, "back up the store")):  # fmt: skip
        dest = out / case
        dest.mkdir(parents=True)
        script = (
            f'mount -t tmpfs -o size={-(-room // 1024)}k tmpfs "{small}" && cp -a "{state}" "{small}/s" && '
            f'"{KAJA}" --state-dir "{small}/s" restore "{arch}" --force --yes 2> "{dest}/err"; '
            f'echo $? > "{dest}/rc"; ls -A "{small}" > "{dest}/left"; cp -a "{small}/s" "{dest}/s"'
        )
        subprocess.run(["unshare", "-m", "sh", "-c", script], env=kaja.env, check=True)
        err = (dest / "err").read_text()
        assert (dest / "rc").read_text().strip() == "1", (case, err)
        assert "Traceback" not in err and "internal error" not in err, (case, err)
        last = err.splitlines()[-1]  # after the plan: the store in place, which it replaces
        assert "the disk is full" in last, (case, err)
        assert said in last and "damaged" not in err, (case, err)
        assert _tree_bytes(dest / "s") == _tree_bytes(state), case  # the old store, whole
        assert (dest / "left").read_text() == "s\n", case  # no staging, no backup, no marker


# --- restore ---------------------------------------------------------------------------------
def test_restore_elsewhere_gives_back_every_row_and_image(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch = tmp_path / "b.tar.gz"
    backup(kaja, arch)
    other = tmp_path / "other"
    r = kaja("--state-dir", str(other), "restore", str(arch), "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["done"] is True and doc["dry_run"] is False and doc["replaced"] == []
    assert doc["previous_backup"] is None
    assert [p["name"] for p in doc["placed"]] == ["shared", "cache", "stats", "auth", "images"]
    assert store_state(other, tmp_path / "a") == store_state(kaja.state, tmp_path / "b")
    for name in ("cache.db", "db-stats.db", "web-auth.db"):
        assert snapshot(other / name, tmp_path / "c") == snapshot(kaja.state / name, tmp_path / "d")
    assert_store_sound(other)
    for p in other.rglob("*"):
        assert p.stat().st_mode & 0o777 == (0o700 if p.is_dir() else 0o600), p
    assert leftovers(tmp_path) == [] and not (other / "kaja.db.restoring").exists()
    # kaja reads it as it read the original
    assert (
        kaja("--state-dir", str(other), "sessions", "--all-owners", "-n", "0").out
        == kaja("sessions", "--all-owners", "-n", "0").out
    )
    r = kaja("--state-dir", str(other), "doctor")
    assert r.code == 0, r


def test_after_a_writer_crashed_mid_transaction_backup_holds_what_was_committed(
    demo_store: Kaja, tmp_path: Path
):
    """A hot journal (a writer in rollback mode killed mid-edit) is rolled back
    first, as every command does after a crash: the edit is in no copy."""
    kaja = demo_store
    committed = store_state(kaja.state, tmp_path / "committed")
    kill_mid_transaction(kaja.db)
    arch = tmp_path / "b.tar.gz"
    backup(kaja, arch)
    other = tmp_path / "other"
    r = kaja("--state-dir", str(other), "restore", str(arch))
    assert r.code == 0, r
    assert store_state(other, tmp_path / "restored") == committed
    assert_store_sound(other)


def test_restore_prints_what_went_where(demo_store: Kaja, tmp_path: Path):
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    other = tmp_path / "other"
    r = demo_store("--state-dir", str(other), "restore", str(arch))
    assert r.code == 0, r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert rows[0] == ["shared", str(other / "kaja.db"), str((other / "kaja.db").stat().st_size)]
    assert rows[-1][:2] == ["images", str(other / "files" / "images")]
    made = manifest_of(arch)["created_at"]
    assert r.err == (
        f"kaja: restored {arch} (made by kaja {manifest_of(arch)['kaja']} at {made}): 4 databases,"
        " 13 sessions, 96 messages, 3 images\n"
    )


def test_an_existing_store_is_refused_without_force(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch = tmp_path / "b.tar.gz"
    backup(kaja, arch)
    before = listing(kaja.state)
    r = kaja("restore", str(arch), "--yes")
    assert r.code == 5 and "already" in r.err and "--force" in r.err, r
    assert listing(kaja.state) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "name, content, code, said",
    [
        ("hostname", b"kaja-laptop\n", 1, "not a kaja backup"),
        ("empty.tar", b"", 1, "not a kaja backup"),
        ("nothing.tar", b"\0" * 10240, 1, "an empty archive"),
        ("notes.tar", None, 5, "a member kaja does not write ('notes.txt')"),
    ],
)
def test_a_file_that_is_no_backup_is_told_as_such_before_the_store_in_place(
    demo_store: Kaja, tmp_path: Path, name: str, content: bytes | None, code: int, said: str
):
    """`kaja restore /etc/hostname` over a store: "not a kaja backup", not "a
    store is already there" (which invites a --force that could only fail)."""
    bad = tmp_path / name
    if content is None:
        write_archive(bad, [(tarfile.TarInfo("notes.txt"), b"milk, eggs\n")])
    else:
        bad.write_bytes(content)
    before = listing(demo_store.state)
    for extra in ([], ["--force", "--yes"]):
        r = demo_store("restore", str(bad), *extra)
        assert r.code == code and said in r.err and "already" not in r.err, r
        assert r.err.count("\n") == 1 and "Traceback" not in r.err, r
    assert listing(demo_store.state) == before
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob("kaja-before-restore-*"))


def test_force_backs_the_old_store_up_first_and_that_backup_brings_it_back(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    old = store_state(kaja.state, tmp_path / "old")
    r = kaja("restore", str(arch), "--force", "--yes", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    previous = Path(doc["previous_backup"])
    assert previous.parent == kaja.state.parent and previous.name.startswith("kaja-before-restore-")
    assert {e["path"] for e in doc["replaced"]} >= {str(kaja.db), str(kaja.state / "files/images")}
    restored = store_state(kaja.state, tmp_path / "new")
    assert (
        restored != old
        and restored[0]["sessions"]
        == snapshot(_extract_db(arch, tmp_path), tmp_path / "x")["sessions"]
    )
    assert_store_sound(kaja.state)
    assert sorted(os.listdir(kaja.state)) == ["cache.db", "db-stats.db", "files", "kaja.db",
                                              "web-auth.db"]  # fmt: skip
    # and back again
    r = kaja("restore", str(previous), "--force", "--yes")
    assert r.code == 0, r
    assert store_state(kaja.state, tmp_path / "back") == old


def _extract_db(arch: Path, tmp_path: Path) -> Path:
    p = tmp_path / "extracted-shared.db"
    p.write_bytes(members(arch)["databases/shared.db"])
    return p


def test_force_keeps_in_images_what_was_not_the_old_stores(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    images = kaja.state / "files" / "images"
    (images / "README").write_text("my notes")
    (images / "not-a-session").mkdir()
    (images / "not-a-session" / "x.png").write_bytes(b"x")
    old_sessions = [n for n in os.listdir(images) if n not in ("README", "not-a-session")]
    r = kaja("restore", str(arch), "--force", "--yes", "--json")
    assert r.code == 0, r
    assert sorted(json.loads(r.out)["kept"]) == [str(images / "README"),
                                                 str(images / "not-a-session")]  # fmt: skip
    assert (images / "README").read_text() == "my notes"
    assert (images / "not-a-session" / "x.png").read_bytes() == b"x"
    assert not any((images / n).exists() for n in old_sessions)  # in the backup made first
    expected = {f"images/{p}" for p in images_of(kaja.state)} - {"images/README",
                                                                 "images/not-a-session/x.png"}  # fmt: skip
    assert expected == {n for n in members(arch) if n.startswith("images/")}


def test_force_without_yes_and_no_terminal_refuses_and_changes_nothing(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    before = listing(kaja.state)
    r = kaja("restore", str(arch), "--force")
    assert r.code == 5 and "--yes" in r.err, r
    assert listing(kaja.state) == before
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob("kaja-before-restore-*"))


def test_dry_run_verifies_the_archive_and_writes_nothing(demo_store: Kaja, tmp_path: Path):
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    other = tmp_path / "other"
    r = demo_store("--state-dir", str(other), "restore", str(arch), "--dry-run", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["dry_run"] is True and doc["done"] is False and doc["placed"] == []
    assert doc["backup"]["kaja"] and len(doc["backup"]["databases"]) == 4
    assert not other.exists()
    assert leftovers(tmp_path) == []
    r = demo_store("--state-dir", str(other), "restore", str(arch), "--dry-run")
    assert r.code == 0 and "is whole" in r.err and "nothing was restored" in r.err, r
    # over the store in place: verified all the same, and told what it would take
    before = listing(demo_store.state)
    r = demo_store("restore", str(arch), "--dry-run")
    assert r.code == 0 and "needs --force" in r.err, r
    assert listing(demo_store.state) == before and leftovers(tmp_path) == []


def test_force_says_in_the_plan_what_in_a_sessions_folder_is_kept_only_in_its_backup(
    demo_store: Kaja, tmp_path: Path
):
    """A file of yours in a session's image folder goes with the store it is in,
    kept only in the backup made first: the plan says so. What that backup cannot
    hold (a name kaja never gives, a folder, a link) is put back in place."""
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    images = kaja.state / "files" / "images"
    session = sorted(images.iterdir())[0]
    (session / "notes.txt").write_text("mine")
    (session / "my notes.txt").write_text("mine too")
    (session / "drafts").mkdir()
    (session / "drafts" / "a.txt").write_text("a draft")
    sid = session.name
    r = kaja("restore", str(arch), "--dry-run", "--json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    assert doc["only_in_backup"] == [str(session / "notes.txt")]
    assert doc["put_back"] == [str(session / "drafts"), str(session / "my notes.txt")]
    r = kaja("restore", str(arch), "--dry-run")
    assert (
        f"kaja: in the image folders of the store in place, 1 file is no image kaja wrote"
        f" ({sid}/notes.txt): it goes with that store, kept only in the backup made first\n"
    ) in r.err, r
    assert (
        f"kaja: 2 entries there that a backup cannot hold ({sid}/drafts, {sid}/my notes.txt)"
        " are put back in place\n"
    ) in r.err, r
    r = kaja("restore", str(arch), "--force", "--yes")
    assert r.code == 0, r
    assert "kept only in the backup made first" in r.err, r  # the plan, before the question
    assert (session / "my notes.txt").read_text() == "mine too"
    assert (session / "drafts" / "a.txt").read_text() == "a draft"
    assert not (session / "notes.txt").exists()
    (previous,) = tmp_path.glob("kaja-before-restore-*")
    assert members(previous)[f"images/{sid}/notes.txt"] == b"mine"
    assert f"{sid}/my notes.txt" in r.err and "kept 2 entries" in r.err, r


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_root_removes_no_staging_folder_but_its_own(demo_store: Kaja, tmp_path: Path):
    """`.<state>.restore-<pid>` in place already (the pid of this run: in-process, the
    test's own) is removed only when provably a leftover of this user's restore."""
    from tests.support import inprocess

    if inprocess.every_run_real:
        pytest.skip("needs kaja to run in this process, with its process id")
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)

    def planted(state: str, uid: int, inside: str) -> Path:
        folder = tmp_path / f".{state}.restore-{os.getpid()}"
        (folder / "new").mkdir(parents=True)
        (folder / "new" / inside).write_text("theirs")
        for p in (folder, folder / "new", folder / "new" / inside):
            os.chown(p, uid, uid)
        return folder

    for state, uid, inside, stays in (
        ("a", 65534, "MANIFEST.json", True),  # another user's
        ("b", 0, "precious.txt", True),  # not what kaja stages
        ("c", 0, "MANIFEST.json", False),
    ):  # a leftover of ours
        folder = planted(state, uid, inside)
        r = demo_store("--state-dir", str(tmp_path / state), "restore", str(arch))
        assert r.code == 0, r
        assert folder.exists() == stays, state
        if stays:
            assert (folder / "new" / inside).read_text() == "theirs"
            assert folder.stat().st_uid == uid
    assert leftovers(tmp_path) == [
        ".a.restore-" + str(os.getpid()),
        ".b.restore-" + str(os.getpid()),
    ]


def test_manifest_fields_a_newer_kaja_adds_are_ignored(demo_store: Kaja, tmp_path: Path):
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    newer = rebuilt(arch, tmp_path / "newer.tar.gz", manifest=lambda m: (
        m.update(host="laptop"), m["files"][0].update(mode=384), m["databases"][0].update(pages=1)))  # fmt: skip
    r = demo_store("--state-dir", str(tmp_path / "other"), "restore", str(newer))
    assert r.code == 0, r


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_many_small_images_are_flushed_once_not_one_by_one(
    demo_store: Kaja, tmp_path: Path, monkeypatch
):
    """20,000 tiny images restored at ~23 files/s: an fsync per file (a journal commit
    each) and tarfile reading 1 MB buffers 512 bytes at a time. Now the staging folder
    is flushed once (syncfs) before the swap, and the archive read in tar's own records."""
    kaja = demo_store
    images = kaja.state / "files" / "images"
    conn = sqlite3.connect(kaja.db)
    sessions = [r[0] for r in conn.execute("SELECT id FROM sessions")]
    conn.close()
    for i in range(2000):
        data = f"image {i}".encode()
        folder = images / sessions[i % len(sessions)]
        folder.mkdir(exist_ok=True)
        (folder / f"{hashlib.sha256(data).hexdigest()}.png").write_bytes(data)
    arch = tmp_path / "many.tar.gz"
    backup(kaja, arch)
    fsyncs = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real(fd))[1])
    cpu = time.process_time()
    r = kaja("--state-dir", str(tmp_path / "other"), "restore", str(arch))
    cpu = time.process_time() - cpu
    assert r.code == 0 and ", 2003 images" in r.err, r
    assert len(fsyncs) < 20, len(fsyncs)  # the marker's, the folders': not one per image
    assert cpu < 5, cpu  # was ~10 s of copying buffers for 3,000 images
    assert images_of(tmp_path / "other") == images_of(kaja.state)


@pytest.mark.process  # the test process holds the store open
def test_a_running_kaja_means_exit_4_and_nothing_changes(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    with holding(kaja.db, "idle"):
        before = listing(kaja.state)
        r = kaja("restore", str(arch), "--force", "--yes")
        assert listing(kaja.state) == before
    assert r.code == 4 and "Kaja is running" in r.err, r
    assert leftovers(tmp_path) == []


def test_a_missing_archive_is_exit_3_and_a_folder_exit_5(kaja: Kaja, tmp_path: Path):
    r = kaja("restore", str(tmp_path / "nope.tar.gz"))
    assert r.code == 3 and "no such file" in r.err, r
    r = kaja("restore", str(tmp_path))
    assert r.code == 5 and "folder" in r.err, r
    r = kaja("restore")
    assert r.code == 2, r
    assert not kaja.state.exists()


# --- damaged and unsafe archives restore nothing ---------------------------------------------
def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


DAMAGE = {
    "a flipped byte in the compressed stream": lambda a, d: d.write_bytes(_flip(a.read_bytes(), a.stat().st_size // 2)),
    "truncated": lambda a, d: d.write_bytes(a.read_bytes()[: a.stat().st_size // 2]),
    "not an archive": lambda a, d: d.write_bytes(b"hello, this is not a backup\n" * 100),
    "a database changed": lambda a, d: rebuilt(
        a, d, change=lambda n, b: _flip(b, 5000) if n == "databases/shared.db" else b),
    "an image changed": lambda a, d: rebuilt(
        a, d, change=lambda n, b: b + b"x" if n.startswith("images/") else b),
    "a member missing": lambda a, d: rebuilt(a, d, drop={"databases/cache.db"}),
    "a member the manifest does not list": lambda a, d: rebuilt(
        a, d, add=[("images/01a22af3-07a0-783a-b596-41d21b5c56d3/extra.png", b"x")]),
    "no manifest": lambda a, d: rebuilt(a, d, drop={"MANIFEST.json"}),
    "a manifest of a newer kaja": lambda a, d: rebuilt(
        a, d, manifest=lambda m: m.update(version=99)),
    "a manifest of something else": lambda a, d: rebuilt(
        a, d, manifest=lambda m: m.update(format="other")),
    "a manifest that is not JSON": lambda a, d: write_archive(
        d, [(tarfile.TarInfo("MANIFEST.json"), b"{not json")]),
    "a member twice": lambda a, d: rebuilt(
        a, d, add=[("databases/cache.db", members(a)["databases/cache.db"])]),
    # gzip's trailer (CRC-32, then the size) lies past the tar's end: read all the same
    "the gzip trailer's CRC-32 flipped": lambda a, d: d.write_bytes(_flip(a.read_bytes(), a.stat().st_size - 8)),
    "the gzip trailer's size flipped": lambda a, d: d.write_bytes(_flip(a.read_bytes(), a.stat().st_size - 1)),
    "the gzip trailer cut off": lambda a, d: d.write_bytes(a.read_bytes()[:-8]),
}  # fmt: skip


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_archive_restores_nothing(demo_store: Kaja, tmp_path: Path, damage: str):
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    bad = tmp_path / "bad.tar.gz"
    DAMAGE[damage](arch, bad)
    other = tmp_path / "other"
    r = demo_store("--state-dir", str(other), "restore", str(bad))
    assert r.code == 1, r
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r
    assert not other.exists()  # not even the state dir it made to restore into
    assert leftovers(tmp_path) == []


def test_a_damaged_archive_over_an_existing_store_changes_nothing(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch = tmp_path / "b.tar.gz"
    backup(kaja, arch)
    bad = rebuilt(arch, tmp_path / "bad.tar.gz",
                  change=lambda n, b: _flip(b, 9000) if n == "databases/shared.db" else b)  # fmt: skip
    before = listing(kaja.state)
    r = kaja("restore", str(bad), "--force", "--yes")
    assert r.code == 1 and "sha256" in r.err, r
    assert listing(kaja.state) == before
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob("kaja-before-restore-*"))


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


UNSAFE = {
    "../ in a name": [(_info("../escaped.txt"), b"boo")],
    "an absolute name": [(_info("/tmp/kaja-escaped-absolute.txt"), b"boo")],
    "images/../../": [(_info("images/../../escaped.txt"), b"boo")],
    "a hidden folder": [(_info("images/.x/escaped.txt"), b"boo")],
    "a symlink": [(_info("images/s1/link.png", tarfile.SYMTYPE, "/etc/passwd"), None)],
    "a hard link": [(_info("images/s1/link.png", tarfile.LNKTYPE, "/etc/passwd"), None)],
    "a device": [(_info("images/s1/dev.png", tarfile.CHRTYPE), None)],
    "a folder": [(_info("images/s1", tarfile.DIRTYPE), None)],
    "a name kaja never writes": [(_info("settings.toml"), b"[memory]\n")],
}


@pytest.mark.parametrize("case", list(UNSAFE))
def test_links_and_names_outside_its_folders_are_refused(demo_store: Kaja, tmp_path: Path, case):
    """Whatever comes first (before the manifest, as here) stops the restore."""
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    bad = tmp_path / "deep" / "bad.tar.gz"
    bad.parent.mkdir()
    good = [(tarfile.TarInfo(n), d) for n, d in members(arch).items()]
    write_archive(bad, UNSAFE[case] + good)
    other = tmp_path / "deep" / "other"
    r = demo_store("--state-dir", str(other), "restore", str(bad))
    assert r.code == 5, r
    assert "nothing was restored" in r.err and r.err.count("\n") == 1, r
    assert (
        not (tmp_path / "escaped.txt").exists() and not (tmp_path / "deep" / "escaped.txt").exists()
    )
    assert not Path("/tmp/kaja-escaped-absolute.txt").exists()
    assert not other.exists()
    assert leftovers(tmp_path / "deep") == []


def test_an_archive_with_a_foreign_shared_file_is_refused(demo_store: Kaja, tmp_path: Path):
    other_db = tmp_path / "foreign.db"
    conn = sqlite3.connect(other_db)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    data = other_db.read_bytes()

    def swap(m: dict) -> None:
        for f in [*m["files"], *m["databases"]]:  # both entries agree, as kaja writes them
            if f["member"] == "databases/shared.db":
                f.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())

    bad = rebuilt(arch, tmp_path / "bad.tar.gz", manifest=swap,
                  change=lambda n, b: data if n == "databases/shared.db" else b)  # fmt: skip
    r = demo_store("--state-dir", str(tmp_path / "other"), "restore", str(bad))
    assert r.code == 5 and "not a Kaja database" in r.err, r


def test_artifacts_kept_apart_must_match_the_configuration(demo_store: Kaja, tmp_path: Path):
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    r = demo_store("--state-dir", str(tmp_path / "other"), "restore", str(arch),
                   env={"KAJA_ARTIFACTS_DB": str(tmp_path / "artifacts.db")})  # fmt: skip
    assert r.code == 1 and "artifacts" in r.err and "KAJA_ARTIFACTS_DB" in r.err, r
    assert leftovers(tmp_path) == []


def test_a_separate_artifacts_file_goes_along(kaja: Kaja, tmp_path: Path):
    split = {"KAJA_ARTIFACTS_DB": str(kaja.state / "artifacts.db")}
    assert kaja("demo", "--seed", "1", "--now", DEMO_NOW, env=split).code == 0
    assert (kaja.state / "artifacts.db").exists()
    arch = tmp_path / "b.tar.gz"
    r = kaja("backup", "-o", str(arch), "--json", env=split)
    assert r.code == 0, r
    assert "databases/artifacts.db" in members(arch)
    other = tmp_path / "other"
    r = kaja("--state-dir", str(other), "restore", str(arch),
             env={"KAJA_ARTIFACTS_DB": str(other / "artifacts.db")})  # fmt: skip
    assert r.code == 0, r
    assert snapshot(other / "artifacts.db", tmp_path / "a") == snapshot(
        kaja.state / "artifacts.db", tmp_path / "b"
    )
    assert snapshot(other / "artifacts.db", tmp_path / "c")["artifacts"][1]


def test_a_store_on_another_disk_is_restored_through_copies_beside_it(
    demo_store: Kaja, tmp_path: Path
):
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system to put the shared file on")
    arch = tmp_path / "b.tar.gz"
    backup(demo_store, arch)
    far = Path(os.path.realpath(shm)) / f"kaja-test-{os.getpid()}-{tmp_path.name}"
    try:
        other = tmp_path / "other"
        r = demo_store("--state-dir", str(other), "--db", str(far / "kaja.db"), "restore",
                       str(arch))  # fmt: skip
        assert r.code == 0, r
        assert snapshot(far / "kaja.db", tmp_path / "a") == snapshot(demo_store.db, tmp_path / "b")
        assert images_of(far) == images_of(demo_store.state)
        assert sorted(os.listdir(far)) == ["files", "kaja.db"]
        assert leftovers(tmp_path) == []
    finally:
        shutil.rmtree(far, ignore_errors=True)


# --- interrupted restores ---------------------------------------------------------------------
def restore_args(arch: Path) -> list[str]:
    return ["restore", str(arch), "--force", "--yes"]


@pytest.mark.parametrize("step", ["extracted", "prepared"])
def test_killed_before_the_swap_leaves_the_old_store_and_finish_tidies_up(
    demo_store: Kaja, tmp_path: Path, step: str
):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    old = store_state(kaja.state, tmp_path / "old")
    killed_at(kaja, step, *restore_args(arch))
    assert store_state(kaja.state, tmp_path / "after") == old
    assert_store_sound(kaja.state)
    r = kaja("doctor", "--json", "--check", "interrupted-restore")
    (check,) = json.loads(r.out)["checks"]
    assert check["status"] == "warn" and "before it changed anything" in check["summary"]
    assert check["fix"] == "`kaja restore --finish` (removes what it left)"
    r = kaja("restore", "--finish")
    assert r.code == 0 and "had changed nothing" in r.err, r
    assert store_state(kaja.state, tmp_path / "finished") == old
    assert leftovers(tmp_path) == [] and not (kaja.state / "kaja.db.restoring").exists()
    assert [p.name for p in tmp_path.glob(".kaja-before-restore-*")] == []
    r = kaja("doctor", "--json", "--check", "interrupted-restore")
    assert json.loads(r.out)["checks"][0]["status"] == "ok"


@pytest.mark.parametrize("step", ["move:kaja.db", "move:cache.db", "move:web-auth.db",
                                  "move:images", "cleanup"])  # fmt: skip
def test_killed_during_the_swap_the_next_restore_completes_it(
    demo_store: Kaja, tmp_path: Path, step: str
):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    expected = tmp_path / "expected"
    assert kaja("--state-dir", str(expected), "restore", str(arch)).code == 0
    readme = kaja.state / "files" / "images" / "README"
    readme.write_text("not the store's: it stays")
    killed_at(kaja, step, *restore_args(arch))
    r = kaja("doctor", "--json", "--check", "interrupted-restore")
    (check,) = json.loads(r.out)["checks"]
    if step == "cleanup":
        assert check["status"] == "warn" and "before cleaning up" in check["summary"], check
    else:
        assert check["status"] == "error" and "half way" in check["summary"], check
        name = step.removeprefix("move:")
        target = kaja.state / ("files/images" if name == "images" else name)
        assert f"not yet in place: {target}" in check["details"]
        assert r.code == 1
    # The same command again finishes it, and does not restore a second time.
    r = kaja(*restore_args(arch))
    assert r.code == 0 and "finished the interrupted restore" in r.err, r
    assert readme.read_text() == "not the store's: it stays"
    readme.unlink()
    assert store_state(kaja.state, tmp_path / "a") == store_state(expected, tmp_path / "b")
    assert_store_sound(kaja.state)
    assert leftovers(tmp_path) == [] and not (kaja.state / "kaja.db.restoring").exists()
    assert not [n for n in os.listdir(kaja.state) if n.startswith(".")]
    assert len(list(tmp_path.glob("kaja-before-restore-*"))) == 1


def test_finish_completes_a_half_done_restore_without_the_archive(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    expected = tmp_path / "expected"
    assert kaja("--state-dir", str(expected), "restore", str(arch)).code == 0
    killed_at(kaja, "move:db-stats.db", *restore_args(arch))
    arch.unlink()
    r = kaja("restore", "--finish", "--json")
    assert r.code == 0, r
    assert json.loads(r.out)["finished"]["completed"] is True
    assert store_state(kaja.state, tmp_path / "a") == store_state(expected, tmp_path / "b")
    r = kaja("restore", "--finish")
    assert r.code == 0 and "no interrupted restore" in r.err, r


@pytest.mark.process  # the test process holds the store open
def test_finish_waits_for_kaja_to_close(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    killed_at(kaja, "move:cache.db", *restore_args(arch))
    with holding(kaja.db, "idle"):
        r = kaja("restore", "--finish")
    assert r.code == 4 and "half done" in r.err, r
    assert kaja("restore", "--finish").code == 0


def test_a_restore_under_way_is_left_alone(demo_store: Kaja, tmp_path: Path):
    kaja = demo_store
    arch, _ = second_store(kaja, tmp_path)
    old = store_state(kaja.state, tmp_path / "old")
    p = paused(kaja, "prepared", *restore_args(arch))
    try:
        for args in (["restore", "--finish"], ["restore", str(arch), "--dry-run"]):
            r = kaja(*args)
            assert r.code == 4 and f"(process {p.pid}) is restoring" in r.err, r
        r = kaja("doctor", "--json", "--check", "interrupted-restore")
        (check,) = json.loads(r.out)["checks"]
        assert check["status"] == "ok" and "under way" in check["summary"], check
    finally:
        p.kill()
        p.communicate()
    r = kaja("restore", str(arch), "--dry-run")
    assert r.code == 5 and "--finish" in r.err, r  # a dry run finishes nothing
    assert kaja("restore", "--finish").code == 0
    assert store_state(kaja.state, tmp_path / "after") == old


# --- beside live writers -----------------------------------------------------------------------
def _ids(db: Path, table: str) -> set[str]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute(f"SELECT id FROM {table}")}
    finally:
        conn.close()


@pytest.mark.process  # kaja as one more process beside the writers, as users run it
def test_backup_beside_live_writers_restores_every_committed_row_and_image(
    demo_store: Kaja, tmp_path: Path
):
    kaja = demo_store
    env = dict(kaja.env, PYTHONPATH=str(Path(__file__).parents[2]))
    agent = subprocess.Popen(
        [sys.executable, str(AGENTS / "kaja_agent.py"), "--owner", "telegram:999", "--seconds", "8",
         "--long-every", "20", "--image-every", "3"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    raw = subprocess.Popen(
        [sys.executable, str(AGENTS / "raw_writer.py"), str(kaja.db), "--seconds", "8"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    archives = []
    try:
        for p in (agent, raw):
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for n in range(3):
            time.sleep(0.8)
            committed = {t: _ids(kaja.db, t) for t in ("sessions", "messages", "tool_calls")}
            arch = tmp_path / f"live-{n}.tar.gz"
            r = kaja("backup", "-o", str(arch))
            assert r.code == 0, r
            archives.append((arch, committed))
    finally:
        for p in (agent, raw):
            p.communicate(timeout=120)
            assert p.returncode == 0
    final = {t: _ids(kaja.db, t) for t in ("sessions", "messages", "tool_calls")}
    for n, (arch, committed) in enumerate(archives):
        other = tmp_path / f"restored-{n}"
        r = kaja("--state-dir", str(other), "restore", str(arch))
        assert r.code == 0, r
        db = other / "kaja.db"
        for table, before in committed.items():
            got = _ids(db, table)
            assert before <= got, (table, len(before - got))  # every row committed before it
            assert got <= final[table]  # and nothing that was never committed
        assert_store_sound(other)
        conn = sqlite3.connect(db)
        # A consistent moment: every turn whole (its question, its answer, its image).
        questions = conn.execute(
            "SELECT count(*) FROM messages WHERE content LIKE 'turn %: zanzibarite%'"
        ).fetchone()[0]
        answers = conn.execute(
            "SELECT count(*) FROM messages WHERE content LIKE 'answer %'"
        ).fetchone()[0]
        assert questions == answers > 0
        parts = [json.loads(p)[0] for sid, p in conn.execute(
            "SELECT sessionId, parts FROM messages WHERE parts IS NOT NULL")]  # fmt: skip
        referenced = conn.execute(
            "SELECT sessionId, parts FROM messages WHERE parts LIKE '%image%'"
        ).fetchall()
        conn.close()
        assert len(parts) == len(referenced) > 3
        for sid, p in referenced:
            for part in json.loads(p):
                f = other / "files" / "images" / sid / f"{part['sha256']}.png"
                assert hashlib.sha256(f.read_bytes()).hexdigest() == part["sha256"], f
        r = kaja("--state-dir", str(other), "doctor", "--check", "images", "--check", "orphans")
        assert r.code == 0 and "✗" not in r.out and "!" not in r.out, r
