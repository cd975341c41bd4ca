"""Writing exported sessions (`core.export.SessionExport`) as JSON Lines, one
JSON document, Markdown or HTML, in pieces: a session's messages go out as
they are read, a few hundred at a time, so memory stays small whatever the
session's length; to stdout, one file, or a folder of them (`kaja sessions
export`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from kaja_cli.core.conversations.export import Selection, SessionExport, Target

FORMATS = ("jsonl", "json", "md", "html")
EXTENSIONS = {"jsonl": "jsonl", "json": "json", "md": "md", "html": "html"}
_JOIN = 256  # messages joined into one write
_LARGE = 1 << 16  # a text this long (a run of messages) is a write of its own


def json_chunks(doc: SessionExport) -> Iterator[str | bytes]:
    """One session as the JSON object `sessions export ID -f json` prints, in
    pieces; the messages' pieces are the bytes SQLite made, never decoded
    (the escaping rule applied: `render.json_bytes`)."""
    from kaja_cli.render import json_bytes, json_text

    head = json.dumps(doc.head, ensure_ascii=False, separators=(",", ":"), default=str)
    yield json_text(head[:-1] + ("," if doc.head else "") + '"messages":[')
    sep = b""
    batch: list[bytes] = []
    for data in doc.messages:  # a message's JSON, or a run of them (`SessionExport`)
        if len(data) >= _LARGE:
            if batch:
                yield sep + json_bytes(b",".join(batch))
                sep, batch = b",", []
            yield sep + json_bytes(data)
            sep = b","
            continue
        batch.append(data)
        if len(batch) >= _JOIN:
            yield sep + json_bytes(b",".join(batch))
            sep, batch = b",", []
    if batch:
        yield sep + json_bytes(b",".join(batch))
    yield "]}"


def _parsed(doc: SessionExport, view: str) -> Iterator[tuple | dict]:
    """The messages for Markdown or HTML (`view`): read plain where the core
    can (`doc.rows`: pieces, rows, or dicts where a message needs its JSON),
    else parsed."""
    if doc.rows is not None:
        return doc.rows(view)
    loads = json.loads
    return (loads(text) for text in doc.messages)


def markdown_chunks(doc: SessionExport) -> Iterator[str | bytes]:
    from kaja_cli.render import replay

    h = doc.head
    return replay.markdown_chunks(
        h["session"],
        h["summaries"],
        h["pending"],
        doc.message_count,
        _parsed(doc, "md"),
        h["events"],
    )


def html_chunks(doc: SessionExport, *, embed_images: bool) -> Iterator[str | bytes]:
    from kaja_cli.render import html

    h = doc.head
    return html.page_chunks(
        h["session"], h["summaries"], h["pending"], doc.message_count, _parsed(doc, "html"),
        h["events"], embed_images=embed_images,
    )  # fmt: skip


def session_chunks(
    doc: SessionExport, fmt: str, *, embed_images: bool = True
) -> Iterator[str | bytes]:
    """One session in `fmt` (a JSON Lines record ends with its newline)."""
    if fmt == "jsonl":
        yield from json_chunks(doc)
        yield "\n"
    elif fmt == "json":
        yield from json_chunks(doc)
    elif fmt == "md":
        yield from markdown_chunks(doc)
    else:
        yield from html_chunks(doc, embed_images=embed_images)


def write(out: BinaryIO, chunks: Iterator[str | bytes]) -> int:
    """Write the pieces (text as UTF-8); the bytes written."""
    n = 0
    for chunk in chunks:
        data = chunk if isinstance(chunk, bytes) else chunk.encode("utf-8", "surrogateescape")
        out.write(data)
        n += len(data)
    return n


def all_chunks(
    docs: Iterator[SessionExport], fmt: str, *, embed_images: bool
) -> Iterator[str | bytes]:
    """Every session in one stream: JSON Lines, one JSON document
    (`{"sessions": [...]}`), or Markdown transcripts separated by a rule."""
    if fmt == "json":
        yield '{"sessions":['
    for n, doc in enumerate(docs):
        if n and fmt == "json":
            yield ","
        elif n and fmt == "md":
            yield "\n---\n\n"
        yield from session_chunks(doc, fmt, embed_images=embed_images)
    if fmt == "json":
        yield "]}\n"


# --- where an export goes (`kaja sessions export`) ----------------------------------------------
def to_stdout(chunks: Iterator[str | bytes], end: str = "") -> int:
    import sys

    sys.stdout.flush()
    n = write(sys.stdout.buffer, chunks)
    if end:
        sys.stdout.buffer.write(end.encode())
    sys.stdout.buffer.flush()
    return n


def json_to_stdout(doc: SessionExport) -> None:
    """One session's JSON on stdout: indented for a person at a terminal, compact piped."""
    from kaja_cli import render

    if render.stdout_is_terminal():
        text = b"".join(c if isinstance(c, bytes) else c.encode() for c in json_chunks(doc))
        render.emit_json(json.loads(text))
        return
    to_stdout(json_chunks(doc), end="\n")


def stream(
    target: Target, docs: Iterator[SessionExport], fmt: str, *, embed_images: bool, count: int,
    single: bool = False,
) -> None:  # fmt: skip
    """Every session into one stream, stdout or a file (one session: its document alone)."""
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core

    if single:
        chunks = session_chunks(next(docs), "jsonl" if fmt == "json" else fmt,
                                embed_images=embed_images)  # fmt: skip
    else:
        chunks = all_chunks(docs, fmt, embed_images=embed_images)
    if target.path is None:
        to_stdout(chunks)
        return
    with core.private_file(target.real) as f:
        size = write(f, chunks)
    render.note(
        f"wrote {target.path} ({render.plural(count, 'session')}, {render.human_size(size)})"
    )


def to_folder(
    target: Target, docs: Iterator[SessionExport], fmt: str, *, embed_images: bool, count: int
) -> None:
    """One file per session, `<id>.<ext>`; for HTML an `index.html` of them."""
    from kaja_cli import render
    from kaja_cli.core.conversations import export as core

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


def none_selected(picked: Selection, target: Target) -> bool:
    """Say so when `export --all` selected nothing; True when nothing is written
    (no empty file, no empty folder: only stdout gets an empty document)."""
    from kaja_cli import render
    from kaja_cli.render import nothing_written

    if picked.ids:
        return False
    if not picked.store_exists:
        none = f"no sessions: there is no Kaja store at {picked.location}"
    else:
        none = "no sessions match the filters"
    if target.path is not None:
        render.note(f"{none}: {nothing_written(target.path)}")
        return True
    render.note(none)
    return False
