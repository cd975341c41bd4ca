"""Checks of what interrupted commands left to finish, from their markers
beside the shared file (core/store/markers.py): a wipe (or `wipe --owner`),
a demo cut short, a restore."""

from __future__ import annotations

from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.store import markers


@check(
    "interrupted-wipe",
    Group.PATHS,
    "what an interrupted `kaja wipe` (or `wipe --owner`) left to finish",
)
def check_interrupted_wipe(ctx: Context) -> Check:
    from kaja_cli.core.care import wipe

    left = wipe.interrupted(ctx.paths)
    if left is None:
        return Check("interrupted-wipe", Group.PATHS, OK, "no unfinished wipe")
    # A -wal whose database is gone would be replayed into the next database
    # created at that name: that one is an error, the rest is unfinished work.
    orphan_wal = any(
        p.name.endswith("-wal") and not p.with_name(p.name.removesuffix("-wal")).exists()
        for p in left.remaining
    )
    return Check(
        "interrupted-wipe", Group.PATHS, ERROR if orphan_wal else WARN, left.summary,
        [*left.details, *(f"left: {p}" for p in left.remaining)],
        fix=" and ".join(f"`{c}`" for c in left.commands),
    )  # fmt: skip


@check(
    "interrupted-demo",
    Group.PATHS,
    "a `kaja demo` cut short (Ctrl-C, kill -9, a full disk): a partial sample store",
)
def check_interrupted_demo(ctx: Context) -> Check:
    found = markers.pending(ctx.paths, markers.Operation.DEMO)
    if not found:
        return Check("interrupted-demo", Group.PATHS, OK, "no demo store cut short")
    demo = found[0]
    started = demo.started_at or "at an unknown time"
    return Check(
        "interrupted-demo", Group.PATHS, WARN,
        f"`kaja demo` (started {started}) was cut short: the store holds part of the sample",
        [f"left: {demo.path}", "what it wrote is sound, but conversations, tables or side databases are missing"],
        fix="`kaja wipe --yes`, then `kaja demo`",
    )  # fmt: skip


RESTORE = "interrupted-restore"


@check(RESTORE, Group.PATHS, "what an interrupted `kaja restore` left to finish")
def check_interrupted_restore(ctx: Context) -> Check:
    from kaja_cli.core.care.backup import interrupted
    from kaja_cli.core.care.backup.swap import Phase

    left = interrupted.interrupted(ctx.paths)
    if left is None:
        return Check(RESTORE, Group.PATHS, OK, "no unfinished restore")
    if left.foreign is not None:
        marker = left.marker
        return Check(RESTORE, Group.PATHS, WARN, f"{left.foreign} at the restore marker's path"
                     f" {marker}: kaja did not write it", [f"left: {marker}"],
                     fix=f"`mv -- {marker} {marker}.aside`")  # fmt: skip
    details = [f"marker: {left.marker}", f"started: {left.started_at}", *left.details]
    if left.pid is not None:
        return Check(RESTORE, Group.PATHS, OK, f"a restore of {left.archive} is under way (process"
                     f" {left.pid})", details)  # fmt: skip
    if left.half_done:
        # Some files are the backup's and some the old store's: the agent must
        # not open it until the rest of the backup is in place.
        return Check(
            RESTORE, Group.PATHS, ERROR,
            f"a restore of {left.archive} stopped half way: the store is part old, part new",
            details, fix="`kaja restore --finish` (puts the rest of the backup in place)",
        )  # fmt: skip
    if left.phase == Phase.COMMIT:  # cloud mode: the server's transaction decides
        return Check(
            RESTORE, Group.PATHS, WARN,
            f"a restore of {left.archive} into cloud mode stopped at its commit: the server"
            " holds the account's old rows or the archive's, whole",
            details, fix="`kaja restore --finish` (asks the server which, and removes what it"
            " left)",
        )  # fmt: skip
    if left.in_place:
        return Check(
            RESTORE, Group.PATHS, WARN,
            f"a restore of {left.archive} put the backup in place but stopped before cleaning up",
            details, fix="`kaja restore --finish` (removes what it left)",
        )  # fmt: skip
    return Check(
        RESTORE, Group.PATHS, WARN,
        f"a restore of {left.archive} stopped before it changed anything; the store is as it was",
        details, fix="`kaja restore --finish` (removes what it left)",
    )  # fmt: skip
