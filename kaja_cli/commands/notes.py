"""`kaja notes`: the agent's long-term memory; `show`, `forget` and `export` notes."""

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, OWNER_HELP, nothing_written, store_of
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.side.notes import Note

app = typer.Typer(
    help="List what the agent remembers about you; show, forget or export notes.",
    invoke_without_command=True,
)

OwnerOpt = Annotated[
    str | None, typer.Option(metavar="ID", help=OWNER_HELP, autocompletion=hook("owner"))
]
AllOwners = Annotated[
    bool, typer.Option("--all-owners", help="Everyone's notes, with an owner column.")
]
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
NoPager = Annotated[bool, typer.Option("--no-pager", help="Never page long output on a terminal.")]
Json = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
Keys = Annotated[
    list[str],
    typer.Argument(metavar="KEY...", help="Note keys, as `kaja notes` lists them.",
                   autocompletion=hook("note")),
]  # fmt: skip
CONTENT_WIDTH = 72  # a note's content on a terminal listing: its start, cut at a word


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
    if ctx.invoked_subcommand is not None:
        given = [p.opts[0] for p in ctx.command.params
                 if getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"]  # fmt: skip
        if given:
            from kaja_cli.errors import UsageError

            raise UsageError(
                f"{', '.join(given)} belongs to the listing, not to `{ctx.invoked_subcommand}`",
                hint=f"put the options after it: kaja notes {ctx.invoked_subcommand} …",
            )
        return
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


def _filter(owner: str | None, all_owners: bool, tag: list[str] | None, importance: Level | None):
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.side import notes as core
    from kaja_cli.errors import UsageError

    if all_owners and owner is not None:
        raise UsageError("--owner and --all-owners can't be combined")
    tags = tuple(t.strip() for t in tag or () if t.strip())
    acting = None if all_owners else Owner.parse(owner)
    return core.NoteFilter(acting, tags, importance.value if importance else None)


def _none_found(result, flt) -> str | None:
    """Why there are no notes to show, when there are none."""
    if not result.store_exists:
        return f"no notes: there is no Kaja store at {result.location}"
    if not result.has_table:
        return f"no notes: {result.location} has no notes table"
    if not result.notes:
        whose = "anyone" if flt.owner is None else flt.owner.label
        filtered = " matching the filters" if flt.tags or flt.importance else ""
        return f"no notes for {whose}{filtered}"
    return None


def _list(
    ctx: typer.Context, owner: str | None, all_owners: bool, tag: list[str] | None,
    importance: Level | None, no_pager: bool, as_json: bool,
) -> None:  # fmt: skip
    from kaja_cli import render
    from kaja_cli.core.side import notes as core

    flt = _filter(owner, all_owners, tag, importance)
    result = core.listing(store_of(ctx), flt)
    none = _none_found(result, flt)
    if none is not None:
        render.note(none)
    if as_json:
        render.emit_json(
            {
                "owner": flt.owner.label if flt.owner else None,
                "all_owners": flt.owner is None,
                "total": len(result.notes),
                "notes": [n.as_json() for n in result.notes],
            }
        )
        return
    if result.notes:
        with render.paged(not no_pager):
            _table(result.notes, all_owners=flt.owner is None)


app.command("ls", hidden=True)(list_)


def _table(notes: "list[Note]", *, all_owners: bool) -> None:
    from kaja_cli import render
    from kaja_cli.core import clock
    from kaja_cli.core.owners import label

    Col = render.Col
    # The key (you type it), the counts and the sticky mark never give way;
    # the content and tags wrap; on a narrow terminal the use count, the
    # time, the tags and the importance go, in that order (README, "Notes").
    cols = [Col("key", style="cyan", kind="whole")]
    if all_owners:
        cols.insert(0, Col("owner", kind="whole"))
    cols += [
        Col("importance", kind="whole", drop=4),
        Col("tags", kind="text", drop=3),
        Col("sticky", kind="whole"),
        Col("last used", kind="whole", drop=2),
        Col("uses", justify="right", drop=1),
        Col("content", kind="text", min=20),
    ]
    rows, plain = [], []
    now = clock.now()
    for n in notes:
        who = [label(n.owner)] if all_owners else []
        rows.append(
            [*who, n.key, n.importance or "", ", ".join(n.tags), "yes" if n.sticky else "",
             render.relative_time(n.last_used_at or n.created_at, now), n.use_count,
             shorten(n.content or "", CONTENT_WIDTH)]
        )  # fmt: skip
        plain.append(
            [*who, n.key, n.importance, ",".join(n.tags), int(n.sticky),
             n.last_used_at or n.created_at, n.use_count, n.content]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain)


def shorten(text: str, width: int) -> str:
    """The start of `text` on one line, cut at a word, with … when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.") + "…"


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
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.side import notes as core

    note = core.show(store_of(ctx), key, Owner.parse(owner))
    if as_json:
        render.emit_json(note.as_json())
        return
    render.print_lines(_show_lines(note), pager=False)


def _show_lines(n: "Note") -> list:
    from kaja_cli import render
    from kaja_cli.core.owners import label

    used = n.last_used_at or n.created_at
    facts = [
        ("owner", label(n.owner)),
        ("importance", n.importance or "-"),
        ("tags", ", ".join(n.tags) or "-"),
        ("sticky", "yes" if n.sticky else "no"),
        ("created", n.created_at or "-"),
        ("last used", f"{used} ({render.relative_time(used)})" if used else "-"),
        ("uses", str(n.use_count)),
    ]
    lines = [[(n.key, "bold cyan")]]
    lines += [[(f"{name:<11}", "dim"), (value, "")] for name, value in facts]
    lines.append([("", "")])
    lines += [[(line, "")] for line in (n.content or "").splitlines() or [""]]
    return lines


@app.command("forget")
def forget(
    ctx: typer.Context,
    keys: Keys,
    owner: OwnerOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Don't ask first.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would be forgotten.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was forgotten as one JSON document.")
    ] = False,
) -> None:
    """Delete notes: the agent forgets them.

    Every key must be the acting owner's (the terminal unless --owner); if
    one is not, or does not exist, nothing is deleted. One transaction, and
    the text is overwritten on disk. Asks first; with no terminal to ask,
    refuses unless --yes.
    """
    from kaja_cli import render
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.side import notes as core

    store = store_of(ctx)
    plan = core.plan_forget(store, keys, Owner.parse(owner))
    names = ", ".join(n.key for n in plan.notes)
    what = f"{render.plural(len(plan.notes), 'note')} of {plan.owner.label} ({names})"
    if dry_run:
        _forget_out(plan, plan.notes, dry_run=True, as_json=as_json, what=what)
        return
    render.confirm(f"Forget {what}?", assume_yes=yes)
    gone = core.forget(store, plan)
    _forget_out(plan, gone, dry_run=False, as_json=as_json, what=what)


def _forget_out(plan, notes: "list[Note]", *, dry_run: bool, as_json: bool, what: str) -> None:
    from kaja_cli import render

    if as_json:
        render.emit_json(
            {
                "action": "forget", "dry_run": dry_run, "owner": plan.owner.label,
                "path": str(plan.location), "notes": [n.key for n in notes],
                "forgotten": 0 if dry_run else len(notes),
            }
        )  # fmt: skip
        return
    if dry_run:
        render.note(f"would forget {what}")
        return
    names = ", ".join(n.key for n in notes)
    render.note(f"forgot {render.plural(len(notes), 'note')} of {plan.owner.label} ({names})")
    if len(notes) < len(plan.notes):
        render.note(f"{len(plan.notes) - len(notes)} were already gone")


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

    if output is not None and str(output) == "-":
        output = None
    if fmt is None:
        fmt = "json" if output is not None and output.suffix.lower() == ".json" else "md"
    fmt = fmt.lower()
    if fmt not in ("md", "markdown", "json"):
        raise UsageError(f"--format: {fmt!r} is not md or json")
    if output is not None and output.is_dir():
        raise UsageError(f"-o: {output} is a folder", hint="give a file name")
    flt = _filter(owner, all_owners, tag, importance)
    result = core.listing(store_of(ctx), flt)
    none = _none_found(result, flt)
    if none is not None and output is not None:  # no file holding "No notes."
        render.note(f"{none}: {nothing_written(output)}")
        return
    if not result.store_exists:
        render.note(f"no notes: there is no Kaja store at {result.location}")
    if fmt == "json":
        import json

        doc = {"owner": flt.owner.label if flt.owner else None, "all_owners": flt.owner is None,
               "notes": [n.as_json() for n in result.notes]}  # fmt: skip
        text = render.json_text(json.dumps(doc, ensure_ascii=False, indent=2)) + "\n"
    else:
        text = markdown(result.notes, flt.owner.label if flt.owner else None)
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


def markdown(notes: "list[Note]", owner: str | None) -> str:
    """The notes as Markdown: a section per note (per owner, then note, for everyone's)."""
    from kaja_cli.core.clock import day_of
    from kaja_cli.core.owners import label
    from kaja_cli.core.wording import plural

    out = [f"# Kaja's notes: {owner}" if owner else "# Kaja's notes", ""]
    if not notes:
        out += ["No notes.", ""]
    level = "##" if owner else "###"
    current = None
    for n in sorted(notes, key=lambda n: (n.owner != "", n.owner)) if owner is None else notes:
        if owner is None and label(n.owner) != current:
            current = label(n.owner)
            out += [f"## {current}", ""]
        facts = [n.importance or "no importance"]
        if n.sticky:
            facts.append("sticky")
        if n.tags:
            facts.append("tags: " + ", ".join(n.tags))
        facts.append(f"used {plural(n.use_count, 'time')}")
        if n.last_used_at:
            facts.append(f"last {day_of(n.last_used_at)}")
        if n.created_at:
            facts.append(f"written {day_of(n.created_at)}")
        out += [
            f"{level} {n.key}",
            "",
            "*" + " · ".join(facts) + "*",
            "",
            (n.content or "").strip(),
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


# --- kaja search --notes ---------------------------------------------------------------
def search(
    ctx: typer.Context, text: str, *, fts: bool, recent: bool, owner: str | None,
    all_owners: bool, since: str | None, limit: int, no_pager: bool, as_json: bool,
) -> None:  # fmt: skip
    """`kaja search --notes`: the notes matching `text`, as `kaja search` shows messages."""
    from kaja_cli import render
    from kaja_cli.core.side import notes as core

    result = core.search(
        store_of(ctx), text, fts=fts, owner=owner, all_owners=all_owners, since=since,
        limit=limit, recent=recent,
    )  # fmt: skip
    if as_json:
        render.emit_json(_search_json(result))
    elif result.hits:
        with render.paged(not no_pager):
            _search_table(result)
    for line in result.remarks:
        render.note(line)
    if not result.hits and not result.remarks:
        whose = "" if result.owner is None else (
            f" in {result.owner.label}'s notes (--all-owners searches everyone's)")  # fmt: skip
        render.note(f"no notes match {text!r}{whose}")


def _search_json(result) -> dict:
    return {
        "query": result.query, "match": result.match, "fts": result.fts,
        "order": "recent" if result.recent else "best", "searched": "notes",
        "owner": result.owner.label if result.owner else None,
        "all_owners": result.owner is None, "limit": result.limit, "more": result.more,
        "results": [
            {**h.note.as_json(), "score": round(h.score, 6), "snippet": h.snippet,
             "highlights": [list(span) for span in h.highlights]}
            for h in result.hits
        ],
    }  # fmt: skip


def _search_table(result) -> None:
    from kaja_cli import render
    from kaja_cli.core import clock
    from kaja_cli.core.owners import label

    Col = render.Col
    owners = result.owner is None
    # The match is shown whole, as a message search's; on a narrow terminal
    # the time, the importance and the owner go, in that order.
    cols = [Col("key", style="cyan", kind="whole")]
    if owners:
        cols.insert(0, Col("owner", kind="whole", drop=3))
    cols += [Col("importance", kind="whole", drop=2), Col("last used", kind="whole", drop=1),
             Col("match", kind="text", min=30)]  # fmt: skip
    rows, plain = [], []
    now = clock.now()
    for h in result.hits:
        n = h.note
        who = [label(n.owner)] if owners else []
        used = n.last_used_at or n.created_at
        rows.append([*who, n.key, n.importance or "", render.relative_time(used, now),
                     render.highlighted(h.snippet, h.highlights)])  # fmt: skip
        plain.append([*who, n.key, used or "", n.importance or "", h.snippet])
    caption = None
    if result.more:
        caption = (f"showing the {'most recently used' if result.recent else 'best'} "
                   f"{len(result.hits)}; more match (--limit N, or 0 for all)")  # fmt: skip
    render.table(cols, rows, caption=caption, plain_rows=plain)
