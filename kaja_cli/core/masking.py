"""Secrets in a server's address, hidden before anything prints it: the one masker.

kaja names servers in many places (`config show/get/set/paths`, `sync`,
`sync status`, `usage --all-machines`, `doctor`, cloud mode's messages, the
driver's errors, `export --redact`); each one shows the address through this
module, so none can disagree with another about where a password ends.

An address is a URL (`postgresql://user:password@host:port/db?key=value`) or
libpq's `key=value` string (`host=db password='a b\\'c'`). What is hidden is
decided the way that hides the most:

- in a URL, everything from the first `:` after `//` to the *last* `@`.
  libpq ends the user part at the first `@`, and at a `/`; but a person who
  writes `/ ? # @ :` unencoded in a password means them as part of it (and
  libpq then reads a piece of the password as a host, port or database: its
  messages may quote that piece, see `scrub`);
- the values of parameters whose name sounds secret (`password`,
  `sslpassword`, `token`, `api_key`, …): in a URL's query up to the next
  `&name=`, in a key=value string the whole value, quoted or not;
- anything that is neither a URL nor a clean run of `key=value` pairs is
  hidden whole.

`mask` is for a value known to hold an address; `mask_text` for any text that
may hold some (a settings value, a message); `scrub` for a driver's message
about one address, which may quote the address or a piece of it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"

_SECRET_WORD = r"(?:password|passwd|pwd|secret|token|api[_-]?key|credential)"
_SECRET_NAME = re.compile(_SECRET_WORD, re.I)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# A query parameter with a secret name; its value runs to the next `&name=`
# (a password may hold a bare `&`) or the end.
_QUERY_SECRET = re.compile(
    r"[?&][\w.-]*" + _SECRET_WORD + r"[\w.-]*=(?P<value>(?:(?!&[\w.-]+=).)*)", re.I | re.S
)
# libpq's key=value: spaces allowed around `=`; a value quoted ('…' with
# backslash escapes) or running to the next space (a backslash escapes).
_PAIR = re.compile(r"\s*(?P<key>[^\s=]+)\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'|(?!')(?:[^\s\\]|\\.)*)")
# In free text: a URL ends at a space, a quote, a backslash or an angle bracket.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"\\<>]*")
_ASSIGNED_IN_TEXT = re.compile(
    r"(?P<head>\b[\w.-]*" + _SECRET_WORD + r"[\w.-]*\s*=\s*)"
    r"(?!\*\*\*(?:[\s&'\"]|$))"  # already masked
    r"(?P<value>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?"
    r"|(?:(?!&[\w.-]+=)(?:[^\s\\'\"]|\\.))+)",
    re.I | re.S,
)
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'")


def secret_name(name: str) -> bool:
    """Whether a key's name says it holds a secret (password, token, api_key…)."""
    return bool(_SECRET_NAME.search(name))


def is_url(text: str) -> bool:
    return _SCHEME.match(text) is not None


def mask(value: str) -> str:
    """The address `value` as kaja may print it: each secret in it as ***
    (a value that is no address at all becomes *** whole)."""
    out, end = [], 0
    for start, stop in _spans(value):
        out += [value[end:start], MASK]
        end = stop
    return "".join(out) + value[end:]


def mask_text(text: str) -> str:
    """`text` with the secrets of every address in it as ***: each URL's
    password and secret parameters, and `password=…`-like assignments. Text
    holding neither comes back unchanged."""
    text = mask_urls(text)
    return _ASSIGNED_IN_TEXT.sub(lambda m: m.group("head") + MASK, text)


def mask_urls(text: str) -> str:
    """`text` with each URL in it masked as `mask` does. A replacement never
    contains or removes a quote or a backslash, so JSON text stays JSON."""
    return _URL_IN_TEXT.sub(lambda m: mask(m.group()), text)


def secrets(value: str) -> list[str]:
    """The secrets of the address `value` as written, and as the driver reads
    them (percent-decoded, unquoted), longest first."""
    found: set[str] = set()
    for start, stop in _spans(value):
        raw = value[start:stop]
        found |= {raw, unquote(raw), _unquote_libpq(raw)}
    return sorted((s for s in found if s), key=len, reverse=True)


def scrub(message: str, value: str) -> str:
    """A driver's `message` about the address `value`, fit to print: the
    address, wherever it is quoted, and any piece of a secret it quotes
    (libpq quotes the piece of the URL it choked on) as ***. The caller names
    the server itself, so a quoted copy of the whole address is dropped."""
    message = re.sub(r"\s*\bin URI:\s*\"" + re.escape(value) + '"', "", message)
    message = message.replace(value, mask(value))
    spans = _spans(value)
    known = secrets(value)

    def quoted(m: re.Match[str]) -> str:
        piece = m.group(1) if m.group(1) is not None else m.group(2)
        mark = '"' if m.group(1) is not None else "'"
        if not any(c.isalnum() for c in piece):  # `"="`, `"]"`: nothing to give away
            return m.group()
        return f"{mark}{_masked_piece(piece, value, spans, known)}{mark}"

    message = _QUOTED.sub(quoted, message)
    for secret in known:
        if len(secret) >= 3:  # shorter ones are caught quoted, not as any letters anywhere
            message = message.replace(secret, MASK)
    return mask_text(message)


# --- where the secrets are ----------------------------------------------------------------
def _spans(value: str) -> list[tuple[int, int]]:
    """The (start, end) of each secret in the address `value`, in order."""
    if not value:
        return []
    scheme = _SCHEME.match(value)
    if scheme is not None:
        return _url_spans(value, scheme.end())
    return _pairs_spans(value)


def _url_spans(value: str, start: int) -> list[tuple[int, int]]:
    spans = []
    at = value.rfind("@", start)
    if at >= 0:
        colon = value.find(":", start, at)
        if colon >= 0 and colon + 1 < at:
            spans.append((colon + 1, at))
    # From the start: a `?password=` before the last `@` may hold that `@`.
    spans += [m.span("value") for m in _QUERY_SECRET.finditer(value, start) if m.group("value")]
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def _pairs_spans(value: str) -> list[tuple[int, int]]:
    spans, pos, pairs = [], 0, 0
    while pos < len(value):
        m = _PAIR.match(value, pos)
        if m is None or m.end() == pos:
            break
        pairs += 1
        if secret_name(m.group("key")) and m.group("value"):
            spans.append(m.span("value"))
        pos = m.end()
    if not pairs or value[pos:].strip():
        return [(0, len(value))]  # not a connection string: all of it may be secret
    return spans


def _unquote_libpq(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        raw = raw[1:-1]
    return re.sub(r"\\(.)", r"\1", raw)


def _masked_piece(piece: str, value: str, spans: list[tuple[int, int]], known: list[str]) -> str:
    """A quoted `piece` of a message as it may be printed: where it is a
    piece of `value` overlapping a secret, that part as ***."""
    for at in _occurrences(value, piece):
        covered = [(max(a, at), min(b, at + len(piece))) for a, b in spans]
        covered = [(a, b) for a, b in covered if a < b]
        if covered:
            out, end = [], at
            for a, b in covered:
                out += [value[end:a], MASK]
                end = b
            return "".join(out) + value[end : at + len(piece)]
    if any(s in piece or piece in s for s in known):
        return MASK
    return piece


def _occurrences(text: str, piece: str) -> list[int]:
    found, at = [], text.find(piece)
    while at >= 0 and piece:
        found.append(at)
        at = text.find(piece, at + 1)
    return found


# --- settings another program stored as JSON (a trigger's `config`) -----------------------
# Wider than an address's parameters: in a config any key naming a key, an
# auth, a cookie, a session or a signature may hold a credential. Masking a
# harmless value by mistake costs nothing; printing a token costs much.
_CONFIG_SECRET = re.compile(
    _SECRET_WORD + r"|key|auth|cookie|session|signature|bearer|private|passphrase", re.I
)


def secret_key(name: str) -> bool:
    """Whether a JSON key's name says its value may be a credential."""
    return bool(_CONFIG_SECRET.search(name))


def mask_json(value: object) -> object:
    """A parsed JSON value fit to print: the value under each secret-looking
    key (`secret_key`), at any depth, as ***, and each string's addresses
    masked (`mask_text`: a webhook URL may carry a token)."""
    if isinstance(value, dict):
        return {k: MASK if secret_key(str(k)) and v not in (None, "")
                else mask_json(v) for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def mask_json_text(text: object) -> object:
    """Stored JSON text as `mask_json` shows it (parsed); text that is not
    JSON is masked as free text is (`mask_text`)."""
    import json

    if not isinstance(text, str):
        return text
    try:
        return mask_json(json.loads(text))
    except ValueError:
        return mask_text(text)
