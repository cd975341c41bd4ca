"""What `kaja backup` and `kaja restore` print for a person or a pipe (the
JSON is the results' own `to_json()`).

Names from the disk and the archive go through `render.text`: an escape
sequence in a file name is shown as `\\x1b`, never sent to the terminal; what
the manifest says is the archive's word, not kaja's, and is escaped too."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.care.backup.archive import Manifest
    from kaja_cli.core.care.backup.create import BackupResult
    from kaja_cli.core.care.backup.interrupted import Finished
    from kaja_cli.core.care.backup.restore import RestorePlan, RestoreResult


def backed_up(result: BackupResult, *, images: Path) -> None:
    contents(result.manifest, [str(e.source) for e in result.manifest.databases], str(images))
    for reason in result.skipped:
        render.note(f"left out: {render.text(reason)}")
    path = render.text(result.path)
    render.note(
        f"wrote {path} ({render.human_size(result.bytes)}): {_summary(result.manifest)};"
        f" `kaja restore {path}` puts it back"
    )


def _summary(manifest: Manifest) -> str:
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


def _went_in(rows: dict[str, int], manifest: Manifest) -> str:
    """Cloud mode's restore: the sessions and messages that went in, and those
    of the archive's other owners, left out (cloud mode keeps your account's)."""
    from kaja_cli.core.care.backup import archive

    held = archive.describe(manifest)["rows"]
    said = [render.plural(rows.get(t, 0), w) for t, w in (("sessions", "session"),
                                                          ("messages", "message"))]  # fmt: skip
    out = ", ".join(said)
    left = [render.plural(held[t] - rows.get(t, 0), w)
            for t, w in (("sessions", "session"), ("messages", "message"))
            if t in held and held[t] > rows.get(t, 0)]  # fmt: skip
    if left:
        out += f" ({' and '.join(left)} of other owners left out: they are not your account's)"
    return out


def contents(manifest: Manifest, wheres: list[str], images_dir: str) -> None:
    """What the archive holds: a row per database (with where it was or goes), then the images."""
    pictures = manifest.image_files
    size = sum(f.bytes for f in pictures)
    rows = [[d.name, where, render.human_size(d.bytes)]
            for d, where in zip(manifest.databases, wheres, strict=False)]  # fmt: skip
    plain = [[d.name, where, d.bytes] for d, where in zip(manifest.databases, wheres, strict=False)]
    rows.append([f"images ({render.plural(len(pictures), 'file')})", images_dir,
                 render.human_size(size)])  # fmt: skip
    plain.append(["images", images_dir, size])
    render.table(
        [Col("what", style="bold"), Col("path"), Col("size", justify="right")],
        rows,
        plain_rows=plain,
    )


# --- restore ----------------------------------------------------------------------------------
def finished(done: Finished | None, *, finish: bool) -> None:
    """What finishing an interrupted restore did (the command's whole job with --finish)."""
    if done is not None:
        render.note(render.text(done.summary))
    elif finish:
        render.note("there is no interrupted restore to finish")


def question(plan: RestorePlan, manifest: Manifest) -> str:
    size = sum(e.size for e in plan.existing)
    rows = sum(e.rows or 0 for e in plan.existing)
    what = render.plural(rows, "row") if any(e.rows is not None for e in plan.existing) else (
        render.human_size(size))  # fmt: skip
    return (
        f"Replace the store in place ({what}) with the backup made"
        f" {render.text(manifest.created_at)}? It is backed up first, beside the state dir."
    )


def _size_of(e) -> str:
    return render.plural(e.rows, "row") if e.rows is not None else render.human_size(e.size)


def existing(plan: RestorePlan) -> None:
    """The store the restore replaces, before the question."""
    render.note("the store in place, which the restore replaces:")
    render.table(
        [Col("what", style="bold"), Col("path"), Col("size", justify="right")],
        [[render.text(e.what), str(e.path), _size_of(e)] for e in plan.existing],
        plain_rows=[
            [e.what, str(e.path), e.size if e.rows is None else e.rows] for e in plan.existing
        ],
    )
    strays(plan)


def restored(
    plan: RestorePlan, manifest: Manifest, done: RestoreResult | None = None, *,
    finished: Finished | None = None, dry_run: bool = False,
) -> None:  # fmt: skip
    wheres = {p.name: str(p.target) for p in plan.parts}
    contents(manifest, [wheres.get(d.name, "?") for d in manifest.databases], wheres["images"])
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
        strays(plan)
        return
    assert done is not None
    if done.rows is None:
        render.note(f"restored {archive} ({made}): {_summary(manifest)}")
    else:
        render.note(
            f"restored {archive} ({made}) into your account: {_went_in(done.rows, manifest)}"
        )
    if done.kept:
        images = Path(wheres["images"])
        render.note(
            f"kept {render.plural(len(done.kept), 'entry', 'entries')} of {render.text(images)}"
            f" that were not the replaced store's: {_some(done.kept, images)}"
        )
    if done.previous_backup is not None:
        previous = render.text(done.previous_backup)
        render.note(
            f"the store it replaced is in {previous} (`kaja restore {previous} --force` puts it"
            " back)"
        )


def strays(plan: RestorePlan) -> None:
    """What the plan does with what is no image kaja wrote in the replaced store's session folders."""
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


def _some(paths: list[Path], folder: Path) -> str:
    """Up to five paths, relative to `folder`, escaped (file names are anyone's)."""
    shown = ", ".join(render.text(p.relative_to(folder)) for p in paths[:5])
    return shown + (", …" if len(paths) > 5 else "")
