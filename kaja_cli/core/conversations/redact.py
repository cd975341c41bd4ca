"""`--redact` for exports: a conversation made fit to paste into a bug report.

Replaced everywhere, in the session row, the messages, tool calls, events
and paths alike:

- owner ids (`telegram:482913` → `telegram:owner-1`, numbered in the order
  the store's owners sort; their bare id `482913` too, when 6 characters or
  more);
- home folders (yours, and any `/home/NAME`, `/Users/NAME`, `C:\\Users\\NAME`)
  → `~`;
- e-mail addresses → `[email]`;
- passwords in URLs (`postgresql://kaja:***@…`, as `core.masking` hides
  them everywhere) and `password=`, `token=`, `secret=`, `api_key=` values
  → `***`;
- strings that look like tokens → `[token]`: the well-known key shapes
  (`sk-…`, `ghp_…`, `github_pat_…`, `xoxb-…`, `AKIA…`, `AIza…`, `glpat-…`,
  JWTs, `Bearer …`) and any other run of 24 or more letters, digits, `_`,
  `-`, `+` or `=` that mixes upper case, lower case and at least three
  digits (ids made of one case, such as UUIDs and sha256 names, stay).

It works on text, JSON text included: no replacement ever contains or
removes a quote or a backslash, so JSON stays JSON.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kaja_cli.core.masking import mask_urls

_KEY_SHAPES = (
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}",
    r"sk_(?:live|test)_[A-Za-z0-9]{16,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"xox[abprs]-[A-Za-z0-9-]{10,}",
    r"AKIA[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"glpat-[A-Za-z0-9_-]{20,}",
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
)
_KEYS = re.compile(r"(?<![A-Za-z0-9_-])(?:" + "|".join(_KEY_SHAPES) + r")")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/-]{12,}=*")
_ASSIGNED = re.compile(
    r"(?i)\b((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*)"
    r"(?!\*\*\*)[^\s\"\\&,;]{3,}"
)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_RUN = re.compile(r"(?<![A-Za-z0-9_+=-])[A-Za-z0-9_+=-]{24,}(?![A-Za-z0-9_+=-])")
_HOMES = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)[^/\\\s\"]+(?=[/\\]|\b|$)")


def _token_like(text: str) -> bool:
    return (
        any(c.isupper() for c in text)
        and any(c.islower() for c in text)
        and sum(c.isdigit() for c in text) >= 3
    )


class Redactor:
    """Replaces what the module docstring lists in any text."""

    def __init__(self, owners: Iterable[str], home: str | None = None) -> None:
        self.owners: list[tuple[re.Pattern[str], str]] = []
        for n, owner in enumerate(sorted(set(o for o in owners if o)), start=1):
            kind, sep, bare = owner.rpartition(":")
            alias = f"{kind}{sep}owner-{n}" if sep else f"owner-{n}"
            self.owners.append((_word(owner), alias))
            if sep and len(bare) >= 6:
                self.owners.append((_word(bare), f"owner-{n}"))
        homes = {h.rstrip("/") for h in _homes(home) if len(h.rstrip("/")) > 1}
        self.homes = [
            re.compile(re.escape(h) + r"(?![\w.-])") for h in sorted(homes, key=len, reverse=True)
        ]

    def __call__(self, text: str) -> str:
        for pattern in self.homes:
            text = pattern.sub("~", text)
        text = _HOMES.sub("~", text)
        text = mask_urls(text)  # a password holding `/ ? # @` too
        text = _EMAIL.sub("[email]", text)
        text = _KEYS.sub("[token]", text)
        text = _BEARER.sub(r"\1[token]", text)
        text = _ASSIGNED.sub(r"\1***", text)
        text = _RUN.sub(lambda m: "[token]" if _token_like(m.group(0)) else m.group(0), text)
        for pattern, alias in self.owners:
            text = pattern.sub(alias, text)
        return text


def _word(text: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(text) + r"(?![A-Za-z0-9_])")


def _homes(home: str | None) -> set[str]:
    out = {home} if home else set()
    if os.environ.get("HOME"):
        out.add(os.environ["HOME"])
    with contextlib.suppress(Exception):
        out.add(str(Path.home()))
    for h in list(out):
        with contextlib.suppress(OSError):
            out.add(os.path.realpath(h))
    return out
