"""`kaja notes`: the agent's long-term memory; `show`, `forget` and `export` notes."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kaja_cli.commands import store_of, subcommand_runs
from kaja_cli.commands.options import AllOwners, DryRun, Json, JsonDone, NoPager, OwnerOpt, Yes
from kaja_cli.completion.hooks import hook

app = typer.Typer(
    help="List what the agent remembers about you; show, forget or export notes.",
    invoke_without_command=True,
)

Tag = Annotated[
    list[str] | None,
    typer.Option(
        "--tag", metavar="TAG", help="Only notes with this tag (repeatable: all of them).",
        autocompletion=hook("tag"), show_default=False,
    ),
]  # fmt: skip


class Level(StrEnum):
    high = "high"
    medium = "medium"
    low = "low"


Importance = Annotated[
    Level | None,
    typer.Option(case_sensitive=False, help="Only notes of this importance."),
]
Keys = Annotated[
    list[str],
    typer.Argument(metavar="KEY...", help="Note keys, as `kaja notes` lists them.",
                   autocompletion=hook("note")),
]  # fmt: skip


@app.callback(invoke_without_command=True)
def notes(
    ctx: typer.Context,
    owner: OwnerOpt = None,
    all_owners: AllOwners = False,
    tag: Tag = None,
    importance: Importance = None,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """List what the agent remembers about you; show, forget or export notes.

    Without a subcommand (or with `list`): the acting owner's notes (the
    terminal unless --owner), sticky ones first, then by importance and
    when each was last used: key, importance, tags, sticky, last used, use
    count and the start of the content. Piped, the rows are tab-separated
    with the whole content and ISO times.
    """
    if not subcommand_runs(ctx):
        _list(ctx, owner, all_owners, tag, importance, no_pager, as_json)


@app.command("list")
def list_(
    ctx: typer.Context,
    owner: OwnerOpt = None,
    all_owners: AllOwners = False,
    tag: Tag = None,
    importance: Importance = None,
    no_pager: NoPager = False,
    as_json: Json = False,
) -> None:
    """List the notes (the same as `kaja notes`).

    The acting owner's notes (the terminal unless --owner), sticky ones
    first, then by importance and when each was last used.
    """
    _list(ctx, owner, all_owners, tag, importance, no_pager, as_json)


app.command("ls", hidden=True)(list_)


def _filter(
    store, owner: str | None, all_owners: bool, tag: list[str] | None, importance: Level | None
):
    from kaja_cli.core.owners import one_of
    from kaja_cli.core.side import notes as core

    one_of(owner, all_owners)
    tags = tuple(t.strip() for t in tag or () if t.strip())
    acting = None if all_owners else store.owner(owner)
    return core.NoteFilter(acting, tags, importance.value if importance else None)


def _list(
    ctx: typer.Context, owner: str | None, all_owners: bool, tag: list[str] | None,
    importance: Level | None, no_pager: bool, as_json: bool,
) -> None:  # fmt: skip
    from kaja_cli import render
    from kaja_cli.core.side import notes as core
    from kaja_cli.render import notes as view

    store = store_of(ctx)
    flt = _filter(store, owner, all_owners, tag, importance)
    result = core.listing(store, flt)
    none = view.none_found(result, flt)
    if none is not None:
        render.note(none)
    render.emit(result, as_json, view.listing, pager=not no_pager, flt=flt)


@app.command("show")
def show(
    ctx: typer.Context,
    key: Annotated[
        str,
        typer.Argument(metavar="KEY", help="The note's key.", autocompletion=hook("note")),
    ],
    owner: OwnerOpt = None,
    as_json: Json = False,
) -> None:
    """Show one note whole: content, importance, tags, times and use count.

    When it was written and last used, and how often. Another owner's note is refused (exit 5): act as them with --owner.
    """
    from kaja_cli import render
    from kaja_cli.core.side import notes as core
    from kaja_cli.render import notes as view

    store = store_of(ctx)
    render.emit(core.show(store, key, store.owner(owner)), as_json, view.show)


@app.command("forget")
def forget(
    ctx: typer.Context,
    keys: Keys,
    owner: OwnerOpt = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonDone = False,
) -> None:
    """Delete notes: the agent forgets them.

    Every key must be the acting owner's (the terminal unless --owner); if
    one is not, or does not exist, nothing is deleted. One transaction, and
    the text is overwritten on disk. Asks first; with no terminal to ask,
    refuses unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.side import notes as core
    from kaja_cli.render import notes as view

    store = store_of(ctx)
    plan = core.plan_forget(store, keys, store.owner(owner))
    if dry_run:
        render.emit(plan, as_json, view.forgot, dry_run=True)
        return
    render.confirm(f"Forget {view.forgetting(plan)}?", assume_yes=yes)
    render.emit(plan, as_json, view.forgot, done=core.forget(store, plan))


@app.command("export")
def export(
    ctx: typer.Context,
    owner: OwnerOpt = None,
    all_owners: AllOwners = False,
    tag: Tag = None,
    importance: Importance = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="md|json",
            autocompletion=hook("format"),
            help="Markdown or JSON; default: from -o's suffix, else md.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write here instead of stdout."),
    ] = None,
) -> None:
    """Export notes as Markdown (one section per note) or JSON.

    The acting owner's notes (the terminal unless --owner; --all-owners for
    everyone's, grouped by owner), with the listing's filters. The file (-o)
    is written whole or not at all, readable only by you.
    """
    from kaja_cli import render
    from kaja_cli.core.side import notes as core
    from kaja_cli.errors import UsageError
    from kaja_cli.render import notes as view

    if output is not None and str(output) == "-":
        output = None
    if fmt is None:
        fmt = "json" if output is not None and output.suffix.lower() == ".json" else "md"
    fmt = fmt.lower()
    if fmt not in ("md", "markdown", "json"):
        raise UsageError(f"--format: {fmt!r} is not md or json")
    if output is not None and output.is_dir():
        raise UsageError(f"-o: {output} is a folder", hint="give a file name")
    store = store_of(ctx)
    flt = _filter(store, owner, all_owners, tag, importance)
    result = core.listing(store, flt)
    none = view.none_found(result, flt)
    if none is not None and output is not None:  # no file holding "No notes."
        render.note(f"{none}: {render.nothing_written(output)}")
        return
    if not result.store_exists:
        render.note(f"no notes: there is no Kaja store at {result.location}")
    text = view.export_text(result, flt, fmt)
    if output is None:
        import sys

        sys.stdout.write(text)
        return
    _write(output, text)
    render.note(f"wrote {render.plural(len(result.notes), 'note')} to {output}")


def _write(output: Path, text: str) -> None:
    from kaja_cli.core.engine import fs
    from kaja_cli.errors import Failed

    try:
        fs.write_private_file(output, text.encode())
    except OSError as e:
        raise Failed(f"cannot write {output}: {e.strerror or e}") from None
