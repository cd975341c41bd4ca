"""The embedding model of `kaja search --semantic`: wordllama's bundled one.

wordllama's wheel ships a 256-dimension token-embedding table (16 MB,
float16) and its tokenizer; a message's vector is the mean of its tokens'
rows, normalised (what `WordLlama.load(...).embed(texts, norm=True)`
computes; tests/unit/test_semantic.py checks we agree). kaja reads the two
files itself, by their place in the installed package, rather than through
`WordLlama.load`:

- `WordLlama.load` looks for the tokenizer in `wordllama/tokenizer/`, the
  wheel ships it in `wordllama/tokenizers/`, and a miss downloads it from
  Hugging Face: kaja must never open a connection for this;
- `import wordllama` costs ~0.5 s (pydantic, requests) and sets up the root
  logger; the two files and numpy are all a query needs.

The package is found without being imported (`importlib.util.find_spec`).
Without the `semantic` extra, `Missing` (exit 2) says how to install it.
"""

from __future__ import annotations

import hashlib
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from kaja_cli.errors import UsageError

if TYPE_CHECKING:
    import sqlite3

    import numpy as np

NAME = "wordllama l2_supercat 256"  # what the index records and doctor shows
DIMS = 256
WEIGHTS = ("weights", "l2_supercat_256.safetensors")
TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
TENSOR = "embedding.weight"
MAX_CHARS = 2000  # of a message embedded: its start says what it is about; tokenising is the cost
INSTALL = "pip install 'kaja-cli[semantic]'"
# What the tokenizer file says of its BPE model, passed on as it says it (`for_many`).
_BPE_OPTIONS = ("dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                "fuse_unk", "byte_fallback", "ignore_merges")  # fmt: skip


class Missing(UsageError):
    """The `semantic` extra is not installed (exit 2)."""


def files() -> tuple[Path, Path]:
    """(weights, tokenizer) inside the installed wordllama; Missing without it."""
    for module in ("numpy", "tokenizers", "wordllama"):
        try:
            spec = find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise Missing(
                f"semantic search needs the semantic extra ({module} is not installed): {INSTALL}"
            )
    spec = find_spec("wordllama")
    root = Path(next(iter(spec.submodule_search_locations or ())))
    weights, tokenizer = root.joinpath(*WEIGHTS), root.joinpath(*TOKENIZER)
    for path in (weights, tokenizer):
        if not path.is_file():
            raise Missing(
                f"semantic search: wordllama's bundled model is missing ({path}): {INSTALL}"
            )
    return weights, tokenizer


class Embedder:
    """Texts → unit vectors (float32, DIMS wide), with nothing downloaded."""

    def __init__(self) -> None:
        weights, tokenizer = files()
        import numpy as np
        from tokenizers import Tokenizer

        self.np = np
        self.table = _table(weights)  # float16 (vocabulary × DIMS), 16 MB, mapped
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def for_many(self) -> None:
        """Ready for a build: the tokenizer's model made again, the same but
        without its cache of whole texts (10,000 of them, ~50 MB that a build
        never hits: each message is tokenised once), and one thread (on two
        cores beside the agent, threads cost more than they give;
        TOKENIZERS_PARALLELISM set by the user wins)."""
        import json
        import os

        from tokenizers.models import BPE

        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        spec = json.loads(files()[1].read_text(encoding="utf-8"))["model"]
        merges = [
            tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in spec["merges"]
        ]
        given = {k: spec[k] for k in _BPE_OPTIONS if spec.get(k) is not None}
        self.tokenizer.model = BPE(spec["vocab"], merges, cache_capacity=0, **given)

    def embed(self, texts: list[str]) -> np.ndarray:
        """One normalised row per text (a text without tokens: a zero row)."""
        np = self.np
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(
            [t[:MAX_CHARS] for t in texts], add_special_tokens=False
        )
        lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
        if not lengths.sum():
            return out
        ids = np.fromiter(
            (i for e in encoded for i in e.ids), dtype=np.int64, count=int(lengths.sum())
        )
        np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
        some = lengths > 0
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[some]
        sums = np.add.reduceat(self.table[ids], starts, axis=0, dtype=np.float32)
        out[some] = sums / lengths[some, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _table(path: Path) -> np.ndarray:
    """The embedding table of a safetensors file, mapped rather than read: a
    query touches only its tokens' rows; safetensors' own loader copies the
    whole 16 MB."""
    import numpy as np

    offset, rows = _layout(path)
    return np.memmap(path, np.float16, "r", offset=offset, shape=(rows, DIMS))


def _layout(path: Path) -> tuple[int, int]:
    """(where the table starts, its rows) in a safetensors file: an 8-byte
    header length, a JSON header of dtype, shape and offsets, then the data
    (the documented format)."""
    import json

    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    tensor = header[TENSOR]
    if tensor["dtype"] != "F16" or len(tensor["shape"]) != 2 or tensor["shape"][1] != DIMS:
        raise Missing(f"semantic search: {path} is not the model kaja knows: {INSTALL}")
    start, end = tensor["data_offsets"]
    rows = tensor["shape"][0]
    if end - start != rows * DIMS * 2:
        raise Missing(f"semantic search: {path} is damaged: {INSTALL}")
    return 8 + size + start, rows


def query_vector(ix: sqlite3.Connection, text: str) -> list[float]:
    """`Embedder().embed([text])[0]` without numpy or `tokenizers` (a query's
    whole budget is 300 ms; the two cost 200): the tokens from the index's
    tables (`bpe`), their rows read from the weights file. An index without
    the tables (a tokenizer `bpe` does not implement) falls back to `Embedder`."""
    import struct

    from kaja_cli.core.conversations.semantic import bpe

    if not bpe.has_tables(ix):
        return [float(v) for v in Embedder().embed([text])[0]]
    ids = bpe.Tokenizer(ix).encode(text[:MAX_CHARS])
    weights, _ = files()
    offset, rows = _layout(weights)
    total = [0.0] * DIMS
    row = struct.Struct(f"<{DIMS}e")
    with weights.open("rb") as f:
        for i in ids:
            f.seek(offset + min(max(i, 0), rows - 1) * row.size)
            total = list(map(sum, zip(total, row.unpack(f.read(row.size)), strict=True)))
    norm = sum(v * v for v in total) ** 0.5
    return [v / norm for v in total] if norm else total


def key(message_id: object) -> int:
    """A message id as the signed 64-bit number stored beside its vector: a
    rowid the agent reused for another message no longer matches."""
    digest = hashlib.blake2b(str(message_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)
