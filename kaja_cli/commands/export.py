"""`kaja sessions export`: one session, or every session the filters select
(`--all`), as Markdown, JSON, JSON Lines or HTML (registered on the
`sessions` group)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import nothing_written, store_of, typed_path
from kaja_cli.commands import session_options as opt
from kaja_cli.commands.sessions import app
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.conversations.export import Target
    from kaja_cli.core.store import Store

_SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".html": "html",
             ".htm": "html", ".md": "md", ".markdown": "md"}  # fmt: skip


@app.command("export")
def export(
    ctx: typer.Context,
    session_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]", help="A session id or unique prefix.", autocompletion=hook("session")
        ),
    ] = None,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Every session the filters select (the terminal's by default)."),
    ] = False,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="md|json|jsonl|html",
            autocompletion=hook("format"),
            help="Markdown, the full JSON, one JSON line per session, or an HTML page per"
            " session; default: from -o's suffix, else md.",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE|DIR",
            click_type=typed_path(),  # an empty -o is a usage error, not the current folder
            help="Write here instead of stdout: a file, or a folder (one file per session).",
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace owner ids, home folders, e-mail addresses and token-like strings.",
        ),
    ] = False,
    owner: opt.OwnerOpt = None,
    all_owners: opt.AllOwners = False,
    since: opt.Since = None,
    before: opt.Before = None,
    older_than: opt.OlderThan = None,
    model: opt.Model = None,
    persona: opt.Persona = None,
    title: opt.Title = None,
    max_messages: opt.MaxMessages = None,
    min_tokens: opt.MinTokens = None,
    empty: opt.Empty = False,
    archived: opt.ArchivedOpt = False,
) -> None:
    """Export one session, or every session the filters select (--all).

    Markdown has every message, tool call (arguments, status, duration, full
    result) and image (as a link to its file), and the timeline's notices and
    errors where `kaja resume` shows them. JSON has the session row, all
    summaries, messages with their tool calls, timeline events and model
    calls; jsonl is that object on one line per session. HTML is one
    self-contained page per session (images embedded), so --all -f html
    needs -o FOLDER. With --all, -o FOLDER writes one file per session
    (`<id>.<ext>`), -o FILE (or stdout) all of them in one. Sessions are
    written as they are read, in constant memory. --redact makes a copy fit
    for a bug report. Files are written whole or not at all, readable only
    by you; never one of the store's own files, a FIFO or a device (exit 5).
    """
    from kaja_cli.errors import UsageError

    args = opt.FilterArgs(owner, all_owners, since, before, older_than, model, persona, title,
                          max_messages, min_tokens, empty, archived)  # fmt: skip
    if all_ and session_id is not None:
        raise UsageError("give a session id or --all, not both")
    if not all_ and session_id is None:
        raise UsageError("which session?", hint="give its id, or --all with filters")
    if not all_ and (args.all_owners or args._replace(owner=None) != opt.FilterArgs()):
        raise UsageError(
            "filters go with --all", hint="kaja sessions export --all --older-than 90d …"
        )
    fmt = _format(fmt, output)
    store = store_of(ctx)
    if all_:
        _export_all(store, args, fmt, output, redact)
    else:
        _export_one(store, session_id, args.owner, fmt, output, redact)


def _format(fmt: str | None, output: str | None) -> str:
    from kaja_cli.errors import UsageError

    if fmt is None:
        suffix = Path(output).suffix.lower() if output is not None and output != "-" else ""
        return _SUFFIXES.get(suffix, "md")
    low = {"markdown": "md", "ndjson": "jsonl", "htm": "html"}.get(fmt.lower(), fmt.lower())
    if low not in ("md", "json", "jsonl", "html"):
        raise UsageError(f"--format: {fmt!r} is not md, json, jsonl or html")
    return low


def _export_one(
    store: "Store", ref: str, owner: str | None, fmt: str, output: str | None, redact: bool
) -> None:
    from kaja_cli.core.conversations import export as core
    from kaja_cli.core.conversations.transcript import resolve
    from kaja_cli.core.owners import Owner

    # Where it writes is decided (exit 5 for the store's files, a FIFO…)
    # before the store is opened.
    target = core.output_target(store.paths, output, folder_wanted=False)
    if target.folder:
        from kaja_cli.errors import UsageError

        raise UsageError(f"-o: {target.path} is a folder", hint="give a file name")
    with store.reader() as conn:
        sid = resolve(conn, ref, Owner.parse(owner)).id
    fix = core.redactor(store) if redact else None
    docs = core.sessions(store, [sid], redact=fix)
    if target.path is None and fmt == "json":
        _json_to_terminal_or_pipe(next(docs))
        return
    _stream(target, docs, fmt, embed_images=not redact, count=1, single=True)


def _json_to_terminal_or_pipe(doc) -> None:
    from kaja_cli import render
    from kaja_cli.render.export import json_chunks

    if render.stdout_is_terminal():
        import json

        text = b"".join(c if isinstance(c, bytes) else c.encode() for c in json_chunks(doc))
        render.emit_json(json.loads(text))
        return
    _to_stdout(json_chunks(doc), end="\n")


def _to_stdout(chunks, end: str = "") -> int:
    import sys

    from kaja_cli.render.export import write

    sys.stdout.flush()
    n = write(sys.stdout.buffer, chunks)
    if end:
        sys.stdout.buffer.write(end.encode())
    sys.stdout.buffer.flush()
    return n


def _stream(
    target: "Target", docs, fmt: str, *, embed_images: bool, count: int, single: bool = False
) -> None:
    """Every session into one stream (one session: its document alone)."""
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core
    from kaja_cli.render.export import all_chunks, session_chunks, write

    if single:
        chunks = session_chunks(next(docs), "jsonl" if fmt == "json" else fmt,
                                embed_images=embed_images)  # fmt: skip
    else:
        chunks = all_chunks(docs, fmt, embed_images=embed_images)
    if target.path is None:
        _to_stdout(chunks)
        return
    with core.private_file(target.real) as f:
        size = write(f, chunks)
    render.note(
        f"wrote {target.path} ({render.plural(count, 'session')}, {render.human_size(size)})"
    )


def _export_all(
    store: "Store", args: opt.FilterArgs, fmt: str, output: str | None, redact: bool
) -> None:
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core
    from kaja_cli.errors import UsageError

    flt = args.to_filter(limit=0)
    if fmt == "html" and output is None:
        raise UsageError("HTML is one page per session", hint="give -o FOLDER")
    target = core.output_target(store.paths, output, folder_wanted=fmt == "html")
    picked = core.select(store, flt)
    if not picked.store_exists:
        none = f"no sessions: there is no Kaja store at {picked.location}"
    else:
        none = "no sessions match the filters"
    if not picked.ids and target.path is not None:  # no empty file, no empty folder
        render.note(f"{none}: {nothing_written(target.path)}")
        return
    if not picked.ids:
        render.note(none)
    fix = core.redactor(store) if redact and picked.ids else None
    docs = core.sessions(store, picked.ids, redact=fix) if picked.ids else iter(())
    if not target.folder:
        _stream(target, docs, fmt, embed_images=not redact, count=len(picked.ids))
        return
    _to_folder(target, docs, fmt, embed_images=not redact, count=len(picked.ids))


def _to_folder(target: "Target", docs, fmt: str, *, embed_images: bool, count: int) -> None:
    """One file per session, `<id>.<ext>`; for HTML an `index.html` of them."""
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core
    from kaja_cli.render.export import EXTENSIONS, session_chunks, write

    folder = target.path
    assert folder is not None
    core.ensure_folder(folder)
    ext = EXTENSIONS[fmt]
    index = []
    size = 0
    with render.progress("exporting sessions", count) as bar:
        for n, doc in enumerate(docs, start=1):
            path = target.file(core.file_for(doc.id, ext))
            with core.private_file(path) as f:
                size += write(f, session_chunks(doc, fmt, embed_images=embed_images))
            s = doc.head["session"]
            index.append((path.name, s.get("title"), s.get("owner"), s.get("updatedAt"),
                          doc.message_count))  # fmt: skip
            bar(n, count)
    if fmt == "html":
        from kaja_cli.render.html import index_page

        with core.private_file(target.file("index.html")) as f:
            size += write(f, iter([index_page(index)]))
    render.note(
        f"wrote {render.plural(len(index), 'session')} to {folder} ({render.human_size(size)})"
    )
