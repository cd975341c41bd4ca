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
about one address, which may quote the address or a piece of it;
`mask_stored` and `mask_stored_text` for what another program stored (a
trigger's config and last error), which may hold any credential in any shape:
a token as a URL's user, in its query or path, an HTTP authorization, a
header as a pair, JSON inside a string, a BLOB.
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


# --- what another program stored: a trigger's `config`, its `last_error` -------------------
# Wider than an address's parameters: in a config any key naming a key, an
# auth, a cookie, a session or a signature may hold a credential. Masking a
# harmless value by mistake costs nothing; printing a token costs much.
_CONFIG_SECRET = re.compile(
    _SECRET_WORD + r"|key|auth|cookie|session|signature|bearer|private|passphrase", re.I
)
# Short names that are secrets as whole words of a key (`PASS`, `db_pw`, `hmac`).
_SECRET_PARTS = {"pass", "pw", "pwd", "hmac", "sig", "jwt", "otp", "pin", "cred", "creds", "dsn"}
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# In a URL another program stored: the query values under such names (`?key=`, `?sig=`).
_CONFIG_QUERY = re.compile(r"([?&;])([^=&#\s]+)=([^&#\s]*)")
# Tokens a path carries: Telegram's `bot<id>:<token>`, and the path after a
# Slack or Discord webhook's fixed part; any long run of letters and digits.
_PATH_TOKENS = (
    re.compile(r"(?i)(/bot\d+:)[\w-]+"),
    re.compile(r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[^?#\s]+"),
    re.compile(r"(?i)(discord(?:app)?\.com/api/webhooks/\d+/)[^/?#\s]+"),
)
# A path segment that looks like a key: 16 or more letters and digits, both,
# between separators (not a slug of words: `getting-started-2026`).
_LONG_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{16,}(?![A-Za-z0-9])"
)
# In free text: an HTTP authorization, a `name: value` or `name=value` whose
# name is secret-looking, a scheme-less `user:password@host`, a bare Telegram
# bot token (`123456789:AA…`).
_AUTH_SCHEME = re.compile(r"(?i)\b(Bearer|Basic|Token|Digest|Bot)(\s+)[^\s'\",;]+")
_NAMED = re.compile(
    r"(?P<name>[\w.-]+)(?P<sep>\s*[:=]\s*)(?P<value>\"[^\"]*\"?|'[^']*'?|[^\s,;&'\":=]+)"
)
_USERINFO = re.compile(r"(?<![\w/:.-])([\w.+-]+):([^\s@/:'\"]+)@(?=[\w.-]+)")
_TELEGRAM = re.compile(r"\b(\d{6,}:)[\w-]{20,}")


def secret_key(name: str) -> bool:
    """Whether a key's name says its value may be a credential (`api_key`,
    `Authorization`, `X-Auth-Token`, `PASS`, `db_pw`, `hmac`)."""
    if _CONFIG_SECRET.search(name):
        return True
    return any(part.lower() in _SECRET_PARTS for part in _PARTS.findall(name))


MAX_DEPTH = 64  # JSON nested deeper is shown as masked text (each step of a print recurses)


def mask_stored(value: object) -> object:
    """A value another program stored (a trigger's `config`) fit to print:
    JSON text is parsed and shown masked (`mask_json`); anything else, a
    BLOB's bytes decoded included, is masked as free text (`mask_stored_text`),
    and so is JSON nested deeper than MAX_DEPTH (100,000 levels are text too)."""
    import json

    text = stored_text(value)
    if text is None:
        return value
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return mask_stored_text(text)
    if _depth(parsed) > MAX_DEPTH:
        return mask_stored_text(text)
    return mask_json(parsed)


def stored_text(value: object) -> str | None:
    """A stored value as text (a BLOB's bytes as UTF-8); None for a number or NULL."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _depth(value: object) -> int:
    """How deep a parsed JSON value nests, counted without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
            todo.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def mask_json(value: object) -> object:
    """A parsed JSON value fit to print: the value under each secret-looking
    key (`secret_key`), at any depth, as ***; a secret-looking header given as
    `{"name": …, "value": …}` or `[name, value]` likewise; each string masked
    as free text (`mask_stored_text`), and a string holding JSON masked as JSON."""
    if isinstance(value, dict):
        named = _named_secret(value)
        return {k: MASK if (secret_key(str(k)) or k in named) and v not in (None, "")
                else mask_json(v) for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        if len(value) == 2 and all(isinstance(v, str) for v in value) and secret_key(value[0]):
            return [value[0], MASK]
        return [mask_json(v) for v in value]
    if isinstance(value, str):
        return _mask_string(value)
    return value


_NAME_FIELDS = ("name", "key", "header", "field", "param", "id")
_VALUE_FIELDS = ("value", "val", "content", "data", "text")


def _named_secret(obj: dict) -> set:
    """The value fields of `{"name": "Authorization", "value": …}`."""
    for field in _NAME_FIELDS:
        name = obj.get(field)
        if isinstance(name, str) and secret_key(name):
            return {k for k in obj if str(k).lower() in _VALUE_FIELDS}
    return set()


def _mask_string(text: str) -> str:
    import json

    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            inner = json.loads(stripped)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, dict | list) and _depth(inner) <= MAX_DEPTH:
            return json.dumps(mask_json(inner), ensure_ascii=False)
    return mask_stored_text(text)


def mask_stored_text(text: str) -> str:
    """Free text another program stored (a config that is not JSON, a last
    error), fit to print: every address masked as `mask_text` does, and also
    a URL's user part and its secret-looking query values, a token in its
    path (Telegram's, a Slack or Discord webhook's, any long run of letters
    and digits), an HTTP authorization (`Bearer …`), a `name: value` or
    `name=value` whose name looks secret, a scheme-less `user:password@host`
    and a bare Telegram bot token."""
    text = mask_text(text)
    text = _URL_IN_TEXT.sub(lambda m: _stored_url(m.group()), text)
    text = _AUTH_SCHEME.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _NAMED.sub(_named_value, text)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    return _TELEGRAM.sub(lambda m: m.group(1) + MASK, text)


_SCHEME_WORDS = {"bearer", "basic", "token", "digest", "bot"}


def _named_value(m: re.Match[str]) -> str:
    value = m.group("value")
    keep = (
        not secret_key(m.group("name"))
        or value.strip("'\"") in ("", MASK)
        or value.startswith("//")  # `https://…`: the URL was masked above
        or value.lower() in _SCHEME_WORDS  # `Authorization: Bearer ***`
    )
    return m.group() if keep else m.group("name") + m.group("sep") + MASK


def _stored_url(url: str) -> str:
    url = mask(url)  # the password, and parameters named like one
    scheme = _SCHEME.match(url)
    rest = url[scheme.end() :] if scheme else url
    host_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, host_end)
    if at > 0 and rest[:at] != MASK:
        rest = MASK + rest[at:]  # the user too: a token may be it (`https://TOKEN@github.com/…`)
    for pattern in _PATH_TOKENS:
        rest = pattern.sub(lambda m: m.group(1) + MASK, rest)
    rest = _CONFIG_QUERY.sub(
        lambda m: (
            f"{m.group(1)}{m.group(2)}={MASK}"
            if secret_key(m.group(2)) and m.group(3)
            else m.group()
        ),
        rest,
    )
    rest = _LONG_TOKEN.sub(MASK, rest)
    return (scheme.group() if scheme else "") + rest
