"""Writing exported sessions (`core.export.SessionExport`) as JSON Lines, one
JSON document, Markdown or HTML, in pieces: a session's messages go out as
they are read, a few hundred at a time, so memory stays small whatever the
session's length."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from kaja_cli.core.export import SessionExport

FORMATS = ("jsonl", "json", "md", "html")
EXTENSIONS = {"jsonl": "jsonl", "json": "json", "md": "md", "html": "html"}
_JOIN = 256  # messages joined into one write


def json_chunks(doc: SessionExport) -> Iterator[str]:
    """One session as the JSON object `sessions export ID -f json` prints, in pieces."""
    head = json.dumps(doc.head, ensure_ascii=False, separators=(",", ":"), default=str)
    yield head[:-1] + ("," if doc.head else "") + '"messages":['
    first = True
    batch: list[str] = []
    for text in doc.messages:
        batch.append(text)
        if len(batch) >= _JOIN:
            yield ("" if first else ",") + ",".join(batch)
            first, batch = False, []
    if batch:
        yield ("" if first else ",") + ",".join(batch)
    yield "]}"


def _parsed(doc: SessionExport) -> Iterator[dict]:
    loads = json.loads
    return (loads(text) for text in doc.messages)


def markdown_chunks(doc: SessionExport) -> Iterator[str]:
    from kaja_cli.render import replay

    h = doc.head
    return replay.markdown_chunks(
        h["session"], h["summaries"], h["pending"], doc.message_count, _parsed(doc)
    )


def html_chunks(doc: SessionExport, *, embed_images: bool) -> Iterator[str]:
    from kaja_cli.render import html

    h = doc.head
    return html.page_chunks(
        h["session"], h["summaries"], h["pending"], doc.message_count, _parsed(doc),
        embed_images=embed_images,
    )  # fmt: skip


def session_chunks(doc: SessionExport, fmt: str, *, embed_images: bool = True) -> Iterator[str]:
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


def write(out: BinaryIO, chunks: Iterator[str]) -> int:
    """Write the pieces as UTF-8; the bytes written."""
    n = 0
    for chunk in chunks:
        data = chunk.encode("utf-8", "surrogatepass")
        out.write(data)
        n += len(data)
    return n


def all_chunks(docs: Iterator[SessionExport], fmt: str, *, embed_images: bool) -> Iterator[str]:
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
