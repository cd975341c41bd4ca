"""FTS4 query syntax, as PostgreSQL `tsquery` (cloud search, SPEC §6 and §10).

`kaja search` takes the same query in both modes: plain words (which
`search.model.plain_match` writes as FTS4 phrases) or, with `--fts`, FTS4's
own syntax as this SQLite parses it (compiled with FTS3_PARENTHESIS: AND, OR,
NOT, NEAR/N, "phrases", prefix*, ^first, (groups), content:word; a `-` is
not an operator there, only a separator). So the query is parsed here the way
SQLite's fts3_expr.c parses it, token for token:

- whether it is malformed is asked of SQLite itself (an FTS4 table in
  memory), so exit 2 comes with SQLite's own words;
- the words of each phrase are cut by SQLite's tokenizer (fts3tokenize), so
  they are the words local search looks up, folded the same way;
- the tree is built with fts3_expr.c's precedence (NEAR, NOT, AND, OR from
  tightest) and its implicit ANDs.

`Query.tsquery` is the tree as PostgreSQL text search syntax over the index
of `pg.tokenizer` (whose position 1 is a sentinel, so `^word` is
`'^' <-> 'word'`), and `Query.phrases` are the phrases BM25 scores, in
SQLite's order (those on the right of a NOT don't count, as in matchinfo).
FTS4 counts a phrase's hits in a message only where the branch of the query
holding it matched too: in `(naive cafe) OR cafe`, a message with only
"cafe" has no hits for the first "cafe". So each phrase carries the
condition under which its hits count (`Phrase.condition`): every branch
above it, up to the nearest OR, must match.

`a NEAR/N b` is every distance FTS4 accepts between the end of one phrase
and the other, either way round (`<d>` for each). A chain of NEARs (a NEAR b
NEAR c) checks each neighbouring pair, where FTS4 wants one position of the
middle phrase to serve both: it may match a few more messages.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass, field

from kaja_cli.errors import UsageError

NEAR_DEFAULT = 10
NEAR_LIMIT = 200  # distances spelt out per NEAR (each is a term of the tsquery)
MAX_WORD_BYTES = 2047  # longer words are not in the server's index
SENTINEL = "^"
_SPACES = b" \t\n\r\v\f"
_COLUMN = b"content"  # the index's one column: `content:word` is `word`
FTS_HINT = 'FTS4 syntax: words, "a phrase", OR, NOT, NEAR, prefix*, (groups)'


@dataclass
class Token:
    text: str
    prefix: bool = False
    first: bool = False  # ^word: the message's first word


@dataclass
class Node:
    """A phrase (tokens) or an operator (kind, left, right; near: NEAR's N)."""

    kind: str  # "phrase", "NEAR", "NOT", "AND", "OR"
    tokens: list[Token] = field(default_factory=list)
    left: Node | None = None
    right: Node | None = None
    parent: Node | None = field(default=None, repr=False)
    near: int = NEAR_DEFAULT
    group: bool = False  # came from parentheses: counts as a phrase for the grammar


# fts3_expr.c's order, tightest first (its FTSQUERY_* values).
_PRECEDENCE = {"NEAR": 1, "NOT": 2, "AND": 3, "OR": 4, "phrase": 5}
_KEYWORDS = ((b"OR", "OR"), (b"AND", "AND"), (b"NOT", "NOT"), (b"NEAR", "NEAR"))


class Malformed(Exception):
    """Not a query SQLite accepts (raised as UsageError by `parse`)."""


@functools.lru_cache(maxsize=1)
def _sqlite() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute(
        'CREATE VIRTUAL TABLE temp.q USING fts4(content, tokenize=unicode61 "remove_diacritics=2")'
    )
    conn.execute(
        "CREATE VIRTUAL TABLE temp.tok USING fts3tokenize(unicode61, 'remove_diacritics=2')"
    )
    return conn


def check(match: str) -> None:
    """UsageError (exit 2) with SQLite's reason when SQLite would refuse `match`."""
    try:
        _sqlite().execute("SELECT 1 FROM temp.q WHERE q MATCH ?", (match,)).fetchall()
    except sqlite3.OperationalError as e:
        raise UsageError(f"--fts: {e}", hint=FTS_HINT) from None


def tokens(text: bytes) -> list[tuple[str, int, int]]:
    """SQLite's words of `text` with their byte offsets (start, end)."""
    if not text:
        return []
    rows = _sqlite().execute(
        'SELECT token, start, "end" FROM temp.tok WHERE input = ?',
        (text.decode("utf-8", "surrogatepass"),),
    )
    return [(t, s, e) for t, s, e in rows]


# --- parsing, as fts3_expr.c does --------------------------------------------------------------
class _Parser:
    def __init__(self) -> None:
        self.nest = 0  # open parentheses

    def expr(self, z: bytes) -> tuple[Node | None, int]:
        """fts3ExprParse: nodes until the end or an unmatched ')'; (tree, bytes used)."""
        ret: Node | None = None
        prev: Node | None = None
        require_phrase = True
        at = 0
        while True:
            done, p, used = self.next_node(z[at:])
            at += used
            if done:
                break
            if p is None:
                continue
            is_phrase = p.kind == "phrase" or p.group
            if not is_phrase and require_phrase:
                raise Malformed
            if is_phrase and not require_phrase:
                assert ret is not None and prev is not None
                implicit = Node("AND")
                ret = _insert(ret, prev, implicit)
                prev = implicit
            if prev is not None and (
                (p.kind == "NEAR" and not is_phrase and prev.kind != "phrase")
                or (p.kind != "phrase" and is_phrase and prev.kind == "NEAR")
            ):
                raise Malformed
            if is_phrase:
                if ret is not None:
                    assert prev is not None
                    prev.right, p.parent = p, prev
                else:
                    ret = p
            else:
                assert prev is not None and ret is not None
                ret = _insert(ret, prev, p)
            require_phrase = not is_phrase
            prev = p
        if ret is not None and require_phrase:
            raise Malformed
        return ret, at

    def next_node(self, z: bytes) -> tuple[bool, Node | None, int]:
        """getNextNode: (done, node or None, bytes used)."""
        i = 0
        while i < len(z) and z[i] in _SPACES:
            i += 1
        if i == len(z):
            return True, None, i
        rest = z[i:]
        for word, kind in _KEYWORDS:  # case matters: "or" and "ORacle" are words
            if rest.startswith(word):
                n, near = len(word), NEAR_DEFAULT
                if kind == "NEAR" and rest[4:5] == b"/" and rest[5:6].isdigit():
                    digits = 0
                    while rest[5 + digits : 6 + digits].isdigit():
                        digits += 1
                    near = int(rest[5 : 5 + digits])
                    n += 1 + digits
                after = rest[n : n + 1]
                if after == b"" or after in _SPACES or after in b'"()':
                    return False, Node(kind, near=near), i + n
        if rest[:1] == b'"':
            end = rest.find(b'"', 1)
            if end < 0:
                raise Malformed
            return False, self.phrase(rest[1:end]), i + end + 1
        if rest[:1] == b"(":
            self.nest += 1
            node, used = self.expr(rest[1:])
            if node is not None:
                node.group = True
            return False, node, i + 1 + used  # "()" is nothing, and parsing goes on
        if rest[:1] == b")":
            self.nest -= 1
            return True, None, i + 1
        skip = 0
        if (
            len(rest) > len(_COLUMN)
            and rest[len(_COLUMN) : len(_COLUMN) + 1] == b":"
            and (rest[: len(_COLUMN)].lower() == _COLUMN)
        ):
            skip = i + len(_COLUMN) + 1
        return self.token(z[skip:], skip)

    def token(self, z: bytes, offset: int) -> tuple[bool, Node | None, int]:
        """getNextToken: the first word before any ( ) or ", as a one-word phrase."""
        i = 0
        while i < len(z) and z[i : i + 1] not in (b"(", b")", b'"'):
            i += 1
        found = tokens(z[:i])
        if not found:
            return i == 0, None, offset + i  # nothing here: FTS4 goes on (or stops at i = 0)
        text, start, end = found[0]
        tok = Token(text)
        if end < len(z) and z[end : end + 1] == b"*":
            tok.prefix = True
            end += 1
        if start > 0 and z[start - 1 : start] == b"^":
            tok.first = True
        return False, Node("phrase", [tok]), offset + end

    def phrase(self, inner: bytes) -> Node:
        """getNextString: every word of a quoted phrase."""
        out = []
        for text, start, end in tokens(inner):
            out.append(
                Token(
                    text,
                    prefix=end < len(inner) and inner[end : end + 1] == b"*",
                    first=start > 0 and inner[start - 1 : start] == b"^",
                )
            )
        return Node("phrase", out)


def _insert(head: Node, prev: Node, new: Node) -> Node:
    """insertBinaryOperator: hang `new` above `prev` as far up as its precedence
    allows; returns the (maybe new) root."""
    split = prev
    while split.parent is not None and _PRECEDENCE[split.parent.kind] <= _PRECEDENCE[new.kind]:
        split = split.parent
    if split.parent is not None:
        split.parent.right, new.parent = new, split.parent
    else:
        head = new
    new.left, split.parent = split, new
    return head


# --- as PostgreSQL ----------------------------------------------------------------------------
@dataclass
class Phrase:
    """A phrase BM25 scores: its tsquery, and where its hits count (None: wherever
    the message matches the whole query)."""

    tsquery: str
    condition: str | None = None


@dataclass
class Query:
    tree: Node | None
    tsquery: str | None  # None: nothing can match
    phrases: list[Phrase]  # the scored phrases, in SQLite's matchinfo order


def parse(match: str) -> Query:
    """The FTS4 query `match` as PostgreSQL text search (UsageError when malformed)."""
    check(match)
    parser = _Parser()
    try:
        tree, _ = parser.expr(match.encode("utf-8", "surrogatepass"))
        if parser.nest:
            raise Malformed
    except Malformed:  # SQLite accepted it: a difference between the two parsers
        raise UsageError(f"--fts: malformed MATCH expression: [{match}]", hint=FTS_HINT) from None
    phrases: list[Phrase] = []
    _scored(tree, phrases, negated=False)
    return Query(tree, _ts(tree), phrases)


def _scored(node: Node | None, out: list[Phrase], *, negated: bool) -> None:
    if node is None:
        return
    if node.kind == "phrase":
        text = phrase_tsquery(node.tokens)
        if not negated and text is not None:
            out.append(Phrase(text, _condition(node)))
        return
    _scored(node.left, out, negated=negated)
    _scored(node.right, out, negated=negated or node.kind == "NOT")


def _condition(phrase: Node) -> str | None:
    """Where the phrase's hits count: each branch under an OR on its way to the
    root must match (the root itself does, in every message found)."""
    parts = []
    node = phrase
    while node.parent is not None:
        if node.parent.kind == "OR" and node is not phrase:
            parts.append(_ts(node))
        node = node.parent
    if any(p is None for p in parts):
        return "'^' & !'^'"  # a branch that cannot match: never counts
    return " & ".join(f"({p})" for p in parts) if parts else None


def _lexeme(tok: Token) -> str | None:
    if len(tok.text.encode("utf-8")) > MAX_WORD_BYTES:
        return None  # not in the server's index
    text = tok.text.replace("\\", "\\\\").replace("'", "''")
    return f"'{text}'" + (":*" if tok.prefix else "")


def phrase_tsquery(tokens: list[Token]) -> str | None:
    """A phrase as tsquery; None when it matches nothing (no words, a word too
    long for the index, ^ on any but its first word)."""
    if not tokens or any(t.first for t in tokens[1:]):
        return None
    parts = [_lexeme(t) for t in tokens]
    if any(p is None for p in parts):
        return None
    if tokens[0].first:
        parts.insert(0, f"'{SENTINEL}'")
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"  # type: ignore[arg-type]


def _ts(node: Node | None) -> str | None:
    """The tree as tsquery text; None for "matches nothing"."""
    if node is None:
        return None
    if node.kind == "phrase":
        return phrase_tsquery(node.tokens)
    left, right = _ts(node.left), _ts(node.right)
    if node.kind == "OR":
        if left is None or right is None:
            return left or right
        return f"({left} | {right})"
    if node.kind == "NOT":
        if left is None or right is None:
            return left
        return f"({left} & !{right})"
    if left is None or right is None:
        return None
    if node.kind == "AND":
        return f"({left} & {right})"
    return _near(node, left, right)


def _near(node: Node, left: str, right: str) -> str:
    """`left NEAR/N right`: the right phrase ends at most N words after the left
    one ends, or the other way round (`pg.fts4` module docstring). For a chain,
    `left` is itself a NEAR: its last phrase is the neighbour."""
    a = _last_phrase(node.left)
    b = _first_phrase(node.right)
    la = len(a.tokens) + (1 if a.tokens and a.tokens[0].first else 0) if a else 1
    lb = len(b.tokens) + (1 if b.tokens and b.tokens[0].first else 0) if b else 1
    a_text = phrase_tsquery(a.tokens) if a else left
    b_text = phrase_tsquery(b.tokens) if b else right
    n = min(node.near, NEAR_LIMIT)
    after = [f"{a_text} <{d}> {b_text}" for d in range(max(0, 2 - lb), n + 2)]
    before = [f"{b_text} <{d}> {a_text}" for d in range(max(0, 2 - la), n + 2)]
    pair = "(" + " | ".join(f"({x})" for x in after + before) + ")"
    if node.left is not None and node.left.kind == "NEAR":
        return f"({left} & {pair})"
    return pair


def _last_phrase(node: Node | None) -> Node | None:
    while node is not None and node.kind != "phrase":
        node = node.right
    return node


def _first_phrase(node: Node | None) -> Node | None:
    while node is not None and node.kind != "phrase":
        node = node.left
    return node
