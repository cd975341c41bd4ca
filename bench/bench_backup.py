"""`kaja backup`, `kaja restore` and `kaja optimize` on the benchmark store (issue 19).

The floor of a backup is what the standard tools take to make the same
archive: the `sqlite3` command line's `.backup` of every database (SQLite's
online backup API, as kaja uses) into a scratch folder, then GNU `tar` of
those copies and the image folders, gzip-compressed (`tar -z`: gzip's default
level, 6, the level kaja uses) or not. kaja does more on top (a sha256 of
every member, the manifest, a rename into place; both flush the archive to
disk): the ratio is what that and Python cost. Both write their archive into the same folder, on the same disk
as the store, and the archives are removed before each run.

A restore's floor is `tar -x` of kaja's own archive plus `sqlite3`'s
`PRAGMA quick_check` of each database (what kaja verifies besides the sums);
an optimize's is `sqlite3` running the same statements (merge, 'optimize',
ANALYZE sampled as kaja samples it, checkpoint) on a fresh copy of the store. Those two are information.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
from pathlib import Path

GOAL = 1.3  # the goal for bulk work against a floor measured the same way
DATABASES = {
    "shared": "kaja.db",
    "cache": "cache.db",
    "stats": "db-stats.db",
    "auth": "web-auth.db",
}


def _sizes(state: Path) -> str:
    total = sum((state / n).stat().st_size for n in DATABASES.values() if (state / n).exists())
    images = state / "files" / "images"
    files = sum(len(f) for _, _, f in os.walk(images)) if images.exists() else 0
    return f"{total / 1e6:,.0f} MB of databases, {files:,} images"


def _floor_backup(state: Path, scratch: Path, out: Path, compress: bool) -> list[str]:
    """sqlite3 .backup of every database, then tar of the copies and the images."""
    q = shlex.quote
    copies = scratch / "floor-copies"
    lines = ["set -e", f"rm -rf {q(str(copies))}", f"mkdir -p {q(str(copies / 'databases'))}"]
    for name, file in DATABASES.items():
        if (state / file).exists():
            dest = copies / "databases" / f"{name}.db"
            lines.append(f"sqlite3 -readonly {q(str(state / file))} {q(f'.backup {dest}')}")
    images = state / "files"
    tar = f"tar -C {q(str(copies))} -c{'z' if compress else ''}f {q(str(out))} databases"
    if (images / "images").exists():
        tar += f" -C {q(str(images))} images"
    # kaja flushes its archive to disk before renaming it into place: so does the floor.
    lines += [tar, f"sync {q(str(out))}", f"rm -rf {q(str(copies))}"]
    return ["bash", "-c", "; ".join(lines)]


def cases(bench) -> None:
    state = bench.state_dir
    scratch = state.parent / "backup-scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    repeat = min(bench.repeat, 5)  # each run writes the whole store: seconds, not milliseconds
    note = _sizes(state)
    try:
        for compress, name in ((True, "b.tar.gz"), (False, "b.tar")):
            out = scratch / name

            def clean(out: Path = out) -> None:
                out.unlink(missing_ok=True)
                os.sync()  # neither side pays for the other's writeback

            what = "gzip" if compress else "no compression"
            bench.process(
                f"backup -o {name} ({what})", bench.kaja("backup", "-o", str(out)),
                _floor_backup(state, scratch, out, compress),
                f"sqlite3 .backup of each database + tar{' -z' if compress else ''}",
                goal=GOAL, repeat=repeat, setup=clean, note=note,
            )  # fmt: skip
        _restore(bench, scratch, repeat)
        _optimize(bench, scratch, repeat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _restore(bench, scratch: Path, repeat: int) -> None:
    archive = scratch / "restore-me.tar.gz"
    bench.run(bench.kaja("backup", "-o", str(archive)))
    target = scratch / "restored"

    def clean() -> None:
        shutil.rmtree(target, ignore_errors=True)
        os.sync()

    q = shlex.quote
    checks = "; ".join(
        f"sqlite3 -readonly {q(str(target / 'databases' / (n + '.db')))} 'PRAGMA quick_check'"
        for n in DATABASES
    )
    floor = ["bash", "-c", f"set -e; mkdir -p {q(str(target))}; tar -C {q(str(target))} -xzf"
             f" {q(str(archive))}; {checks}"]  # fmt: skip
    bench.process(
        "restore (into an empty state dir)",
        bench.kaja("--state-dir", str(target), "restore", str(archive)),
        floor, "tar -xz + sqlite3 PRAGMA quick_check of each database", repeat=repeat,
        setup=clean, note="sha256 of every member and the swap on top",
    )  # fmt: skip
    clean()


def _optimize(bench, scratch: Path, repeat: int) -> None:
    """On a fresh copy each run (optimize writes): the same steps in sqlite3."""
    from kaja_cli.core.care.optimize.local import ANALYSIS_LIMIT

    copy = scratch / "optimize"
    source = bench.state_dir

    def fresh() -> None:
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        for file in DATABASES.values():
            if (source / file).exists():
                conn = sqlite3.connect(f"{(source / file).as_uri()}?mode=ro", uri=True)
                dest = sqlite3.connect(copy / file)
                conn.backup(dest)  # the store as it is, its -wal folded in
                dest.close()
                conn.close()
        os.sync()

    fts = "conversation_text"
    analyze = f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}; ANALYZE;"  # sampled, as kaja's
    shared = (f"INSERT INTO {fts}({fts}) VALUES ('merge=200,2'); "
              f"INSERT INTO {fts}({fts}) VALUES ('optimize'); {analyze} "
              "PRAGMA wal_checkpoint(TRUNCATE);")  # fmt: skip
    side = f"{analyze} PRAGMA wal_checkpoint(TRUNCATE);"
    q = shlex.quote
    script = "; ".join(
        f"sqlite3 {q(str(copy / file))} {q(shared if name == 'shared' else side)} >/dev/null"
        for name, file in DATABASES.items()
    )
    bench.process(
        "optimize", bench.kaja("--state-dir", str(copy), "optimize"),
        ["bash", "-c", script], "sqlite3: merge, 'optimize', ANALYZE, checkpoint",
        repeat=repeat, setup=fresh, note="fresh copy each run",
    )  # fmt: skip
    shutil.rmtree(copy, ignore_errors=True)
