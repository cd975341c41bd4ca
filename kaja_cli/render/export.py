"""Writing exported sessions (`core.export.SessionExport`) as JSON Lines, one
JSON document, Markdown or HTML, in pieces: a session's messages go out as
they are read, a few hundred at a time, so memory stays small whatever the
session's length."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from kaja_cli.core.conversations.export import SessionExport

FORMATS = ("jsonl", "json", "md", "html")
EXTENSIONS = {"jsonl": "jsonl", "json": "json", "md": "md", "html": "html"}
_JOIN = 256  # messages joined into one write


def json_chunks(doc: SessionExport) -> Iterator[str | bytes]:
    """One session as the JSON object `sessions export ID -f json` prints, in
    pieces; the messages' pieces are the bytes SQLite made, never decoded
    (the escaping rule applied: `render.json_bytes`)."""
    from kaja_cli.render import json_bytes, json_text

    head = json.dumps(doc.head, ensure_ascii=False, separators=(",", ":"), default=str)
    yield json_text(head[:-1] + ("," if doc.head else "") + '"messages":[')
    sep = b""
    batch: list[bytes] = []
    for data in doc.messages:
        batch.append(data)
        if len(batch) >= _JOIN:
            yield sep + json_bytes(b",".join(batch))
            sep, batch = b",", []
    if batch:
        yield sep + json_bytes(b",".join(batch))
    yield "]}"


def _parsed(doc: SessionExport) -> Iterator[dict]:
    loads = json.loads
    return (loads(text) for text in doc.messages)


def markdown_chunks(doc: SessionExport) -> Iterator[str]:
    from kaja_cli.render import replay

    h = doc.head
    return replay.markdown_chunks(
        h["session"], h["summaries"], h["pending"], doc.message_count, _parsed(doc), h["events"]
    )


def html_chunks(doc: SessionExport, *, embed_images: bool) -> Iterator[str]:
    from kaja_cli.render import html

    h = doc.head
    return html.page_chunks(
        h["session"], h["summaries"], h["pending"], doc.message_count, _parsed(doc),
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
