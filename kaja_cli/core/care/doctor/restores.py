"""Check of what an interrupted `kaja restore` left (its marker beside the shared file)."""

from __future__ import annotations

from kaja_cli.core.care.doctor import check
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group

ID = "interrupted-restore"


@check(ID, Group.PATHS, "what an interrupted `kaja restore` left to finish")
def check_interrupted_restore(ctx: Context) -> Check:
    from kaja_cli.core.care.backup import interrupted

    left = interrupted.interrupted(ctx.paths)
    if left is None:
        return Check(ID, Group.PATHS, OK, "no unfinished restore")
    details = [f"marker: {left.marker}", f"started: {left.started_at}", *left.details]
    if left.pid is not None:
        return Check(ID, Group.PATHS, OK, f"a restore of {left.archive} is under way (process"
                     f" {left.pid})", details)  # fmt: skip
    if left.half_done:
        # Some files are the backup's and some the old store's: the agent must
        # not open it until the rest of the backup is in place.
        return Check(
            ID, Group.PATHS, ERROR,
            f"a restore of {left.archive} stopped half way: the store is part old, part new",
            details, fix="`kaja restore --finish` (puts the rest of the backup in place)",
        )  # fmt: skip
    if left.in_place:
        return Check(
            ID, Group.PATHS, WARN,
            f"a restore of {left.archive} put the backup in place but stopped before cleaning up",
            details, fix="`kaja restore --finish` (removes what it left)",
        )  # fmt: skip
    return Check(
        ID, Group.PATHS, WARN,
        f"a restore of {left.archive} stopped before it changed anything; the store is as it was",
        details, fix="`kaja restore --finish` (removes what it left)",
    )  # fmt: skip
