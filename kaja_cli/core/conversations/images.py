"""Image files: `files/images/<sessionId>/<sha256>.<ext>` beside the shared file.

Names come from the database, which another program writes, so every path is
built here and refused unless it stays inside the images folder: a session id
or sha256 holding `../` never makes kaja read or delete anything else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from kaja_cli.core import values
from kaja_cli.core.engine.fs import safe_name  # the rule for any name kaja puts in a path

EXT_BY_MIME = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "image/svg+xml": "svg",
}
MIME_BY_EXT = {ext: mime for mime, ext in EXT_BY_MIME.items()} | {"jpeg": "image/jpeg"}

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_IMAGE_FILE_NAME = re.compile(r"^[0-9a-f]{64}\.[A-Za-z0-9]+$")


def is_image_file_name(name: str) -> bool:
    """Whether `name` is one kaja gives an image file: `<sha256>.<ext>`."""
    return bool(_IMAGE_FILE_NAME.match(name))


def session_dir(images_dir: Path, session_id: object) -> Path | None:
    return images_dir / session_id if safe_name(session_id) else None  # type: ignore[operator]


def image_path(images_dir: Path, session_id: object, sha256: object, mime: object) -> Path | None:
    """Where an image part's file lives, or None if the names are not safe."""
    folder = session_dir(images_dir, session_id)
    if folder is None or not isinstance(sha256, str) or not _SHA256.match(sha256):
        return None
    ext = EXT_BY_MIME.get(mime if isinstance(mime, str) else "", "bin")
    return folder / f"{sha256}.{ext}"


class ImagePart(NamedTuple):
    sha256: str
    mime: str


def image_parts(parts: object) -> list[ImagePart]:
    """The image parts of a `messages.parts` value; tolerant of anything else."""
    if isinstance(parts, str):
        try:
            parts = values.loads(parts)
        except ValueError:
            return []
    if not isinstance(parts, list):
        return []
    out = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "image":
            sha, mime = part.get("sha256"), part.get("mime")
            if isinstance(sha, str):
                out.append(ImagePart(sha, mime if isinstance(mime, str) else ""))
    return out
