"""`kaja backup` and `kaja restore`: the whole store in one archive, and back."""

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import store_of, typed_path
from kaja_cli.commands.options import DryRun, Json, Yes

if TYPE_CHECKING:
    from kaja_cli.core.care.backup.interrupted import Finished
    from kaja_cli.core.care.backup.restore import RestorePlan, Staged


def backup(
    ctx: typer.Context,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            click_type=typed_path(),  # an empty -o is a usage error, not the current folder
            help="The archive to write (a folder: the default name in it); *.tar is not compressed.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace FILE even when it is not a kaja backup, or is a symbolic link"
            " (the link itself is replaced; what it points to is left alone).",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Back up the whole store into one archive, while Kaja runs.

    Every database (the shared file, cache.db, db-stats.db, web-auth.db, a
    separate artifacts file) is copied consistently with SQLite's online
    backup API, whatever the agent writes meanwhile, with the image files of
    its sessions and a manifest (kaja and schema versions, a sha256 of every
    file). By default kaja-backup-<UTC time>.tar.gz in the current folder;
    gzip-compressed unless the name ends in .tar. Written whole or not at
    all, readable only by you, never over one of the store's own files, and
    never through a symbolic link or over a file that is not a kaja backup
    unless --force (exit 5). Settings stay out. `kaja restore FILE` puts it back. Free
    space: about the archive's size for a .tar (on ext4 and XFS the
    shared file's copy becomes the archive in place), a copy of each
    database besides the archive otherwise.
    """
    from kaja_cli import render
    from kaja_cli.core.care.backup import backup as run
    from kaja_cli.core.side import profiler
    from kaja_cli.render import backup as view

    # No profile of its own: the archive is the store as it was copied, and
    # the copy's own statements written afterwards would make the two differ.
    profiler.discard()
    store = store_of(ctx)
    with render.progress("backing up") as progress:
        result = run(store, output, progress=progress, force=force)
    render.emit(result, as_json, partial(view.backed_up, images=store.paths.images_dir))


def restore(
    ctx: typer.Context,
    archive: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE", click_type=typed_path(), help="An archive written by `kaja backup`."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace the store in place (it is backed up first)."),
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    finish: Annotated[
        bool, typer.Option("--finish", help="Only finish an interrupted restore.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Restore a backup made by `kaja backup`, whole or not at all.

    The archive is extracted into a folder beside the state dir and verified
    (its manifest's every field, every sha256, each database's quick_check)
    before anything changes: a damaged archive restores nothing (exit 1), one
    holding links or paths outside its folders is refused (exit 5). It goes
    where --state-dir/--db point now. A store already there is refused (exit
    5) unless --force, which backs it up first (beside the state dir) and
    asks; --yes skips the question, and without a terminal it refuses (exit
    5). Never while Kaja or the Telegram bot has the store open (exit 4). An
    interrupted restore is finished by --finish or the next restore; until
    then `kaja doctor` reports it.
    """
    from kaja_cli import render
    from kaja_cli.core.care import backup as engine
    from kaja_cli.core.care.backup import interrupted
    from kaja_cli.core.care.backup import restore as core
    from kaja_cli.core.side import profiler
    from kaja_cli.render import backup as view

    profiler.discard()  # the restored store is the archive's, db-stats.db included
    _check_options(archive, finish=finish, dry_run=dry_run)
    store = store_of(ctx)
    done = None if dry_run else interrupted.finish(store, archive)
    render.preview(as_json, view.finished, done, finish=finish)
    if finish or (done is not None and done.same_archive):  # nothing more to do
        render.emit({"action": "restore", "finished": done and done.to_json()}, as_json)
        return
    assert archive is not None
    plan = engine.plan_restore(store, archive, force=force, dry_run=dry_run)
    with render.progress("verifying") as progress:
        staged = core.extract(plan, progress)
    if not _go_ahead(plan, staged, done, dry_run=dry_run, yes=yes, as_json=as_json):
        return
    if plan.replaces:
        with render.progress("backing up the store in place") as progress:
            result = engine.execute(store, staged, backup_progress=progress)
    else:
        result = engine.execute(store, staged)
    render.emit(plan, as_json, view.restored, manifest=staged.manifest, done=result, finished=done)


def _check_options(archive: "Path | None", *, finish: bool, dry_run: bool) -> None:
    from kaja_cli.errors import UsageError

    if finish and archive is not None:
        raise UsageError("--finish takes no FILE: it completes the restore that was interrupted")
    if archive is None and not finish:
        raise UsageError("give the archive to restore (FILE), or --finish")
    if finish and dry_run:
        raise UsageError(
            "--finish has no --dry-run: `kaja doctor --check interrupted-restore` describes it"
        )


def _go_ahead(
    plan: "RestorePlan", staged: "Staged", done: "Finished | None", *,
    dry_run: bool, yes: bool, as_json: bool,
) -> bool:  # fmt: skip
    """After the archive was verified: show a dry run, or ask before replacing a
    store. False (the staged archive removed) when the restore stops here."""
    from kaja_cli import render
    from kaja_cli.core.care.backup import restore as core
    from kaja_cli.errors import Refused
    from kaja_cli.render import backup as view

    go = False
    try:
        if dry_run:
            render.emit(plan, as_json, view.restored, manifest=staged.manifest, finished=done,
                        dry_run=True)  # fmt: skip
            return False
        if plan.replaces:
            render.preview(as_json, view.existing, plan)
            if not yes and not render.stdin_is_terminal():
                raise Refused("not replacing the store in place without confirmation",
                              hint="rerun with --yes")  # fmt: skip
            render.confirm(view.question(plan, staged.manifest), assume_yes=yes)
        go = True
    finally:
        if not go:
            core.discard(plan)
    return True
