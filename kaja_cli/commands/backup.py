"""`kaja backup` and `kaja restore`: the whole store in one archive, and back."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of, typed_path

if TYPE_CHECKING:
    from kaja_cli.core.care.backup.archive import Manifest
    from kaja_cli.core.care.backup.create import BackupResult
    from kaja_cli.core.care.backup.interrupted import Finished
    from kaja_cli.core.care.backup.restore import RestorePlan, RestoreResult, Staged


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
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Back up the whole store into one archive, while Kaja runs.

    Every database (the shared file, cache.db, db-stats.db, web-auth.db, a
    separate artifacts file) is copied consistently with SQLite's online
    backup API, whatever the agent writes meanwhile, with the image files of
    its sessions and a manifest (kaja and schema versions, a sha256 of every
    file). By default kaja-backup-<UTC time>.tar.gz in the current folder;
    gzip-compressed unless the name ends in .tar. Written whole or not at
    all, readable only by you, and never over one of the store's own files
    (exit 5). Settings stay out. `kaja restore FILE` puts it back.
    """
    from kaja_cli import render
    from kaja_cli.core.care.backup.create import backup as run
    from kaja_cli.core.side import profiler

    # No profile of its own: the archive is the store as it was copied, and
    # the copy's own statements written afterwards would make the two differ.
    profiler.discard()
    store = store_of(ctx)
    with render.progress("backing up") as progress:
        result = run(store, output, progress=progress)
    if as_json:
        render.emit_json(_backup_json(result))
        return
    _contents(
        result.manifest,
        [str(e.source) for e in result.manifest.databases],
        str(store.paths.images_dir),
    )
    # Names from the disk and the archive go through render.text: an escape
    # sequence in a file name is shown as `\x1b`, never sent to the terminal.
    for reason in result.skipped:
        render.note(f"left out: {render.text(reason)}")
    path = render.text(result.path)
    render.note(
        f"wrote {path} ({render.human_size(result.bytes)}): {_summary(result.manifest)};"
        f" `kaja restore {path}` puts it back"
    )


def _summary(manifest: "Manifest") -> str:
    from kaja_cli import render
    from kaja_cli.core.care.backup import archive

    head = archive.describe(manifest)
    rows = head["rows"]
    parts = [render.plural(len(head["databases"]), "database")]
    if "sessions" in rows:
        parts.append(render.plural(rows["sessions"], "session"))
    if "messages" in rows:
        parts.append(render.plural(rows["messages"], "message"))
    parts.append(render.plural(head["images"], "image"))
    return ", ".join(parts)


def _contents(manifest: "Manifest", wheres: list[str], images_dir: str) -> None:
    """What the archive holds: a row per database (with where it was or goes), then the images."""
    from kaja_cli import render

    pictures = manifest.image_files
    size = sum(f.bytes for f in pictures)
    rows = [[d.name, where, render.human_size(d.bytes)]
            for d, where in zip(manifest.databases, wheres, strict=False)]  # fmt: skip
    plain = [[d.name, where, d.bytes] for d, where in zip(manifest.databases, wheres, strict=False)]
    rows.append([f"images ({render.plural(len(pictures), 'file')})", images_dir,
                 render.human_size(size)])  # fmt: skip
    plain.append(["images", images_dir, size])
    render.table(
        [render.Col("what", style="bold"), render.Col("path"), render.Col("size", justify="right")],
        rows,
        plain_rows=plain,
    )


def _backup_json(result: "BackupResult") -> dict:
    m = result.manifest
    pictures = m.image_files
    return {
        "action": "backup",
        "path": str(result.path),
        "bytes": result.bytes,
        "compressed": result.compressed,
        **_manifest_json(m),
        "images": {"files": len(pictures), "bytes": sum(f.bytes for f in pictures)},
        "skipped": result.skipped,
    }


def _manifest_json(m: "Manifest") -> dict:
    return {
        "created_at": m.created_at,
        "kaja": m.kaja,
        "sqlite": m.sqlite,
        "format": m.version,
        "method": m.method,
        "databases": [
            {"name": d.name, "source": d.source, "bytes": d.bytes, "sha256": d.sha256,
             "rows": d.rows, "schema_upgraded": d.schema_upgraded,
             "schema_missing": d.schema_missing}
            for d in m.databases
        ],
    }  # fmt: skip


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
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask (needed without a terminal).")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Verify the archive and show the plan; change nothing."),
    ] = False,
    finish: Annotated[
        bool, typer.Option("--finish", help="Only finish an interrupted restore.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
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
    from kaja_cli.core.care.backup import restore as core
    from kaja_cli.core.side import profiler

    profiler.discard()  # the restored store is the archive's, db-stats.db included
    _check_options(archive, finish=finish, dry_run=dry_run)
    store = store_of(ctx)
    store.require_local()
    from kaja_cli.core.care.backup import interrupted

    done = None if dry_run else interrupted.finish(store, archive)
    if _finished(done, finish=finish, as_json=as_json):
        return
    assert archive is not None
    plan = core.plan_restore(store, archive, force=force, dry_run=dry_run)
    with render.progress("verifying") as progress:
        staged = core.extract(plan, progress)
    if not _go_ahead(plan, staged, done, dry_run=dry_run, yes=yes, as_json=as_json):
        return
    if plan.replaces:
        with render.progress("backing up the store in place") as progress:
            result = core.execute(store, staged, backup_progress=progress)
    else:
        result = core.execute(store, staged)
    _restore_out(plan, staged.manifest, result, done, dry_run=False, as_json=as_json)


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


def _finished(done: "Finished | None", *, finish: bool, as_json: bool) -> bool:
    """Say what finishing an interrupted restore did; True when that is all there is to do
    (--finish, or the interrupted restore was of this same archive)."""
    from kaja_cli import render

    if done is not None and not as_json:
        render.note(render.text(done.summary))
    if not (finish or (done is not None and done.same_archive)):
        return False
    if as_json:
        render.emit_json({"action": "restore", "finished": _finished_json(done)})
    elif done is None:
        render.note("there is no interrupted restore to finish")
    return True


def _go_ahead(
    plan: "RestorePlan", staged: "Staged", done: "Finished | None", *,
    dry_run: bool, yes: bool, as_json: bool,
) -> bool:  # fmt: skip
    """After the archive was verified: show a dry run, or ask before replacing a
    store. False (the staged archive removed) when the restore stops here."""
    from kaja_cli import render
    from kaja_cli.core.care.backup import restore as core
    from kaja_cli.errors import Refused

    go = False
    try:
        if dry_run:
            _restore_out(plan, staged.manifest, None, done, dry_run=True, as_json=as_json)
            return False
        if plan.replaces:
            if not as_json:
                _existing(plan)
                _strays(plan)
            if not yes and not render.stdin_is_terminal():
                raise Refused("not replacing the store in place without confirmation",
                              hint="rerun with --yes")  # fmt: skip
            render.confirm(_question(plan, staged.manifest), assume_yes=yes)
        go = True
    finally:
        if not go:
            core.discard(plan)
    return True


def _question(plan: "RestorePlan", manifest: "Manifest") -> str:
    from kaja_cli import render

    size = sum(e.size for e in plan.existing)
    return (
        f"Replace the store in place ({render.human_size(size)}) with the backup made"
        f" {render.text(manifest.created_at)}? It is backed up first, beside the state dir."
    )


def _existing(plan: "RestorePlan") -> None:
    from kaja_cli import render

    render.note("the store in place, which the restore replaces:")
    render.table(
        [render.Col("what", style="bold"), render.Col("path"), render.Col("size", justify="right")],
        [[e.what, str(e.path), render.human_size(e.size)] for e in plan.existing],
        plain_rows=[[e.what, str(e.path), e.size] for e in plan.existing],
    )


def _restore_out(
    plan: "RestorePlan", manifest: "Manifest", result: "RestoreResult | None",
    done: "Finished | None", *, dry_run: bool, as_json: bool,
) -> None:  # fmt: skip
    from kaja_cli import render

    wheres = {p.name: str(p.target) for p in plan.parts}
    if as_json:
        render.emit_json(_restore_json(plan, manifest, result, done, wheres, dry_run=dry_run))
        return
    _contents(manifest, [wheres.get(d.name, "?") for d in manifest.databases], wheres["images"])
    # What the manifest says is the archive's word, not kaja's: escaped (render.text).
    made = f"made by kaja {render.text(manifest.kaja)} at {render.text(manifest.created_at)}"
    archive = render.text(plan.archive)
    if dry_run:
        render.note(
            f"dry run: {archive} is whole ({made}; every sha256 matches): "
            f"{_summary(manifest)}; nothing was restored"
        )
        if plan.replaces and not plan.force:
            render.note(
                "a store is in place: restoring there needs --force, which backs it up first"
            )
        _strays(plan)
        return
    assert result is not None
    render.note(f"restored {archive} ({made}): {_summary(manifest)}")
    if result.kept:
        images = Path(wheres["images"])
        render.note(
            f"kept {render.plural(len(result.kept), 'entry', 'entries')} of {render.text(images)}"
            f" that were not the replaced store's: {_some(result.kept, images)}"
        )
    if result.previous_backup is not None:
        previous = render.text(result.previous_backup)
        render.note(
            f"the store it replaced is in {previous} (`kaja restore {previous} --force` puts it"
            " back)"
        )


def _strays(plan: "RestorePlan") -> None:
    """What the plan does with what is no image kaja wrote in the replaced store's session folders."""
    from kaja_cli import render

    images = next(p.target for p in plan.parts if p.name == "images")
    if plan.only_in_backup:
        n = len(plan.only_in_backup)
        render.note(
            f"in the image folders of the store in place, {render.plural(n, 'file')}"
            f" {render.noun(n, 'is', 'are')} no image kaja wrote ({_some(plan.only_in_backup, images)}):"
            f" {render.noun(n, 'it goes', 'they go')} with that store, kept only in the backup made"
            " first"
        )
    if plan.put_back:
        n = len(plan.put_back)
        render.note(
            f"{render.plural(n, 'entry', 'entries')} there that a backup cannot hold"
            f" ({_some(plan.put_back, images)}) {render.noun(n, 'is', 'are')} put back in place"
        )


def _some(paths: "list[Path]", folder: Path) -> str:
    """Up to five paths, relative to `folder`, escaped (file names are anyone's)."""
    from kaja_cli import render

    shown = ", ".join(render.text(p.relative_to(folder)) for p in paths[:5])
    return shown + (", …" if len(paths) > 5 else "")


def _restore_json(
    plan: "RestorePlan", manifest: "Manifest", result: "RestoreResult | None",
    done: "Finished | None", wheres: dict[str, str], *, dry_run: bool,
) -> dict:  # fmt: skip
    return {
        "action": "restore",
        "archive": str(plan.archive),
        "dry_run": dry_run,
        "done": result is not None,
        "backup": _manifest_json(manifest),
        "images": {"files": len(manifest.image_files),
                   "bytes": sum(f.bytes for f in manifest.image_files), "path": wheres["images"]},
        "placed": [] if result is None else [
            {"name": p.name, "path": str(p.path), "bytes": p.bytes, "files": p.files}
            for p in result.placed
        ],
        "replaced": [{"path": str(e.path), "what": e.what, "bytes": e.size} for e in plan.existing],
        "previous_backup": None if result is None or result.previous_backup is None
        else str(result.previous_backup),
        "kept": [] if result is None else [str(p) for p in result.kept],
        "only_in_backup": [str(p) for p in plan.only_in_backup],
        "put_back": [str(p) for p in plan.put_back],
        "finished": _finished_json(done),
    }  # fmt: skip


def _finished_json(done: "Finished | None") -> dict | None:
    if done is None:
        return None
    return {"archive": done.archive, "completed": done.completed, "summary": done.summary}
