"""The model's tokenizer for a query, in plain Python, from tables in the
index: what `tokenizers` computes for wordllama's tokenizer file, without
loading it.

Loading that file (1.8 MB of JSON, 61,249 merges) costs a query 60–140 ms,
`import tokenizers` more; a query of a few words needs a few hundred of its
merges. So `store_tables` copies the file's vocabulary and merges into the
index when the index is made (`index.clear`), and `Tokenizer` looks up only
the pairs a text holds, each once.

What it implements is the file's own description, checked by `supported`
before the tables are written (a wordllama whose file says something else
leaves the tables out, and the query is tokenised by `tokenizers`):

- the added tokens (`<s>`, …) split the raw text first and are tokens of
  their own;
- the normalizer prepends `▁` to each other part and replaces each space
  with `▁`; there is no pre-tokenizer, so a part is one word;
- BPE: a character in the vocabulary is a symbol, any other is its UTF-8
  bytes as `<0xXX>` tokens (byte fallback); then the adjacent pair of lowest
  merge rank is merged, the leftmost first, until no pair has a merge.

tests/cli/test_semantic.py checks the ids equal `tokenizers`' on the demo
store's messages and on random text.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from pathlib import Path

PREFIX = "▁"
SCHEMA = """
CREATE TABLE IF NOT EXISTS semantic_vocab (piece TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS semantic_merges (
    pair TEXT PRIMARY KEY,  -- the two pieces, a space between (pieces hold none)
    rank INTEGER NOT NULL,
    id INTEGER NOT NULL     -- the merged piece's
) WITHOUT ROWID;
"""
_OPTIONS_AS_EXPECTED = {"dropout": None, "continuing_subword_prefix": None,
                        "end_of_word_suffix": None, "ignore_merges": False}  # fmt: skip


def supported(spec: dict) -> bool:
    """Whether a tokenizer file describes what `Tokenizer` implements."""
    model = spec.get("model") or {}
    normalizer = spec.get("normalizer") or {}
    steps = normalizer.get("normalizers") if normalizer.get("type") == "Sequence" else None
    return (
        model.get("type") == "BPE"
        and model.get("byte_fallback") is True
        and all(model.get(k, v) == v for k, v in _OPTIONS_AS_EXPECTED.items())
        and spec.get("pre_tokenizer") is None
        and steps
        == [
            {"type": "Prepend", "prepend": PREFIX},
            {"type": "Replace", "pattern": {"String": " "}, "content": PREFIX},
        ]
        and all(" " not in piece for piece in model.get("vocab", {}))
        and all(
            isinstance(t.get("content"), str) and t["content"] for t in spec.get("added_tokens", [])
        )
    )


def store_tables(conn: sqlite3.Connection, tokenizer: Path) -> bool:
    """Fill the tables from the tokenizer file (in the caller's transaction);
    False, and empty tables, when the file is not one `Tokenizer` implements."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("DELETE FROM semantic_vocab")
    conn.execute("DELETE FROM semantic_merges")
    spec = json.loads(tokenizer.read_text(encoding="utf-8"))
    if not supported(spec):
        return False
    vocab: dict[str, int] = spec["model"]["vocab"]
    added = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
    conn.executemany(
        "INSERT OR REPLACE INTO semantic_vocab(piece, id) VALUES (?, ?)", vocab.items()
    )
    merges = []
    for rank, m in enumerate(spec["model"]["merges"]):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a + b in vocab:
            merges.append((f"{a} {b}", rank, vocab[a + b]))
    conn.executemany(
        "INSERT OR IGNORE INTO semantic_merges(pair, rank, id) VALUES (?, ?, ?)", merges
    )
    conn.execute(
        "INSERT OR REPLACE INTO semantic_meta(key, value) VALUES ('added_tokens', ?)",
        (json.dumps(added),),
    )
    return True


def has_tables(conn: sqlite3.Connection) -> bool:
    try:
        return conn.execute("SELECT 1 FROM semantic_merges LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError:
        return False


class Tokenizer:
    """A text's token ids, as `tokenizers` gives them (`add_special_tokens=False`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        row = conn.execute("SELECT value FROM semantic_meta WHERE key = 'added_tokens'").fetchone()
        self.added: dict[str, int] = json.loads(row[0]) if row else {}
        self._pieces: dict[str, int | None] = {}
        self._merges: dict[str, tuple[int, int] | None] = {}

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part, special in self._split(text):
            if special:
                ids.append(self.added[part])
            elif part:
                ids += self._word(PREFIX + part.replace(" ", PREFIX))
        return ids

    def _split(self, text: str) -> list[tuple[str, bool]]:
        """The text cut at each added token, the longest first where two start at one place."""
        if not self.added:
            return [(text, False)]
        out: list[tuple[str, bool]] = []
        start = at = 0
        tokens = sorted(self.added, key=len, reverse=True)
        while at < len(text):
            hit = next((t for t in tokens if text.startswith(t, at)), None)
            if hit is None:
                at += 1
                continue
            out += [(text[start:at], False), (hit, True)]
            at = start = at + len(hit)
        out.append((text[start:], False))
        return out

    def _piece(self, piece: str) -> int | None:
        if piece not in self._pieces:
            row = self.conn.execute(
                "SELECT id FROM semantic_vocab WHERE piece = ?", (piece,)
            ).fetchone()
            self._pieces[piece] = None if row is None else row[0]
        return self._pieces[piece]

    def _merge(self, a: str, b: str) -> tuple[int, int] | None:
        pair = f"{a} {b}"
        if pair not in self._merges:
            row = self.conn.execute(
                "SELECT rank, id FROM semantic_merges WHERE pair = ?", (pair,)
            ).fetchone()
            self._merges[pair] = None if row is None else (row[0], row[1])
        return self._merges[pair]

    def _word(self, word: str) -> list[int]:
        pieces: list[str] = []
        ids: list[int] = []
        for ch in word:
            i = self._piece(ch)
            if i is not None:
                pieces.append(ch)
                ids.append(i)
                continue
            for byte in ch.encode("utf-8"):
                name = f"<0x{byte:02X}>"
                pieces.append(name)
                ids.append(self._piece(name) or 0)  # every byte has a token in this model
        n = len(pieces)
        nxt = list(range(1, n + 1))
        prev = list(range(-1, n - 1))
        alive = [True] * n
        heap: list[tuple[int, int, str, str, int]] = []

        def push(i: int) -> None:
            j = nxt[i]
            if j < n:
                found = self._merge(pieces[i], pieces[j])
                if found is not None:
                    heapq.heappush(heap, (found[0], i, pieces[i], pieces[j], found[1]))

        for i in range(n - 1):
            push(i)
        while heap:
            _, i, left, right, new = heapq.heappop(heap)
            j = nxt[i] if alive[i] else n
            if j >= n or pieces[i] != left or pieces[j] != right:
                continue  # stale: one of the two merged since
            pieces[i], ids[i] = left + right, new
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prev[nxt[j]] = i
            if prev[i] >= 0:
                push(prev[i])
            push(i)
        return [ids[i] for i in range(n) if alive[i]]
