"""`kaja sessions export`: one session, or every session the filters select
(`--all`), as Markdown, JSON, JSON Lines or HTML (written by `render/export.py`)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import store_of, typed_path
from kaja_cli.commands.options import SessionFilters, session_filters
from kaja_cli.completion.hooks import hook

if TYPE_CHECKING:
    from kaja_cli.core.store import Store

_SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".html": "html",
             ".htm": "html", ".md": "md", ".markdown": "md"}  # fmt: skip


@session_filters
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
    filters: SessionFilters = SessionFilters(),
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
    from kaja_cli.core.engine import memstatus
    from kaja_cli.errors import UsageError

    # Before anything of SQLite is open: a long export's two reading threads
    # (`db.SecondReader`) then run side by side, not one waiting on the other.
    memstatus.turn_off()
    if all_ and session_id is not None:
        raise UsageError("give a session id or --all, not both")
    if not all_ and session_id is None:
        raise UsageError("which session?", hint="give its id, or --all with filters")
    if not all_ and filters.given:
        raise UsageError("filters go with --all", hint="kaja sessions export --all --until 90d …")
    fmt = _format(fmt, output)
    store = store_of(ctx)
    if all_:
        _export_all(store, filters, fmt, output, redact)
    else:
        _export_one(store, session_id, filters.owner, fmt, output, redact)


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
    from kaja_cli.render import export as out

    # Where it writes is decided (exit 5 for the store's files, a FIFO…)
    # before the store is opened.
    target = core.output_target(store.paths, output, folder_wanted=False)
    if target.folder:
        from kaja_cli.errors import UsageError

        raise UsageError(f"-o: {target.path} is a folder", hint="give a file name")
    fix = core.redactor(store) if redact else None
    with store.reader() as conn:  # the session found and read on one connection
        sid = resolve(conn, ref, store.owner(owner)).id
        docs = core.read(conn, store.paths.images_dir, [sid], redact=fix)
        if target.path is None and fmt == "json":
            doc = next(docs, None)
            if doc is None:  # deleted since it was found
                from kaja_cli.errors import NotFound

                raise NotFound(f"no session {ref!r}", hint="`kaja sessions` lists them")
            out.json_to_stdout(doc)
            return
        out.stream(target, docs, fmt, embed_images=not redact, count=1, single=True)


def _export_all(
    store: "Store", filters: SessionFilters, fmt: str, output: str | None, redact: bool
) -> None:
    from kaja_cli.core.conversations import export as core
    from kaja_cli.errors import UsageError
    from kaja_cli.render import export as out

    flt = filters.to_filter(store, limit=0)
    if fmt == "html" and output is None:
        raise UsageError("HTML is one page per session", hint="give -o FOLDER")
    target = core.output_target(store.paths, output, folder_wanted=fmt == "html")
    picked = core.select(store, flt)
    if out.none_selected(picked, target):
        return
    fix = core.redactor(store) if redact and picked.ids else None
    docs = core.sessions(store, picked.ids, redact=fix) if picked.ids else iter(())
    write = out.to_folder if target.folder else out.stream
    write(target, docs, fmt, embed_images=not redact, count=len(picked.ids))
