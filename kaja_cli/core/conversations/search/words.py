"""The words an FTS4 index holds in a range, read from its segment b-trees
(stemming's vocabulary, `stems.Vocabulary`, on the local engine).

FTS4's own view of its words, `fts4aux`, decodes every doclist in the range
to count occurrences: for a common word that is the cost of a search again
(`one`, in a tenth of the benchmark store's messages, took 25 ms). Stemming
needs only the words, so this reads them from the index's segments as FTS4
stores them (sqlite.org/fts3.html#segment_b_tree_format) and steps over each
doclist by its length: for every segment in `%_segdir`, down its interior
nodes to the leaf where the range starts, then along its leaves (numbered in
order) until a word past the range. Each word comes with the bytes of its
doclists, which orders the forms as their frequency would.

A word may still be listed after every message holding it was deleted (FTS4
deletes by writing markers in newer segments, until a merge): a form that
matches nothing, which the query's counts then weigh as nothing. Anything
this reader does not recognise in the file raises `Unreadable`, and the
caller asks fts4aux instead.
"""

from __future__ import annotations

import sqlite3

from kaja_cli.core.engine.sqlite_format import varint_at


class Unreadable(Exception):
    """The segments are not in the shape this reader knows."""


def _varint(data: bytes, i: int) -> tuple[int, int]:
    if i < len(data) and data[i] < 0x80:  # one byte: most lengths and prefixes
        return data[i], i + 1
    found = varint_at(data, i)
    if found is None:
        raise Unreadable("a varint runs past its node")
    return found


def _terms(node: bytes, i: int, *, doclists: bool):
    """A node's terms from offset `i`, in order, as FTS4 writes them (the first
    whole, the others as the length of the prefix they share with the one
    before and the rest), each with its doclist's bytes, which a leaf holds
    after each term (`doclists`) and an interior node does not (0)."""
    term = b""
    first = True
    while i < len(node):
        if first:
            size, i = _varint(node, i)
            term = node[i : i + size]
            first = False
        else:
            prefix, i = _varint(node, i)
            size, i = _varint(node, i)
            term = term[:prefix] + node[i : i + size]
        i += size
        doclist = 0
        if doclists:
            doclist, i = _varint(node, i)
            i += doclist
        if i > len(node):
            raise Unreadable("a term or its doclist runs past its node")
        yield term, doclist


def _child(node: bytes, i: int, low: bytes) -> int:
    """The child of an interior node (its height read, up to `i`) whose terms
    reach `low`: the first child's number plus the separating terms up to
    `low` (each the shortest prefix of its child's first term; they are in
    order, so reading stops at the first past `low`)."""
    child, i = _varint(node, i)
    for term, _ in _terms(node, i, doclists=False):
        if term > low:
            break
        child += 1
    return child


def terms(
    conn: sqlite3.Connection, schema: str, table: str, low: str, high: str, inclusive: bool
) -> list[tuple[str, int]]:
    """The words of FTS4 table `schema.table` from `low` (included when
    `inclusive`) to `high` (not included), each with its doclists' bytes
    summed over the segments, in word order."""
    lo, hi = low.encode(), high.encode()
    found: dict[bytes, int] = {}

    def block(blockid: int) -> bytes:
        row = conn.execute(
            f'SELECT block FROM {schema}."{table}_segments" WHERE blockid = ?', (blockid,)
        ).fetchone()
        if row is None or not isinstance(row[0], bytes):
            raise Unreadable(f"block {blockid} is missing")
        return row[0]

    segments = conn.execute(
        f'SELECT start_block, leaves_end_block, root FROM {schema}."{table}_segdir"'
    ).fetchall()
    for start, leaves_end, root in segments:
        if not isinstance(root, bytes) or not root:
            continue
        node = root
        height, i = _varint(node, 0)
        while height > 0:  # down to the leaf holding `low`
            child = _child(node, i, lo)
            node = block(child)
            below, i = _varint(node, 0)
            if below != height - 1:
                raise Unreadable("a node's height does not follow its parent's")
            height = below
            blockid = child
        leaf_id = blockid if node is not root else None
        while True:
            for term, size in _terms(node, i, doclists=True):
                if term >= hi:
                    break
                if term > lo or (inclusive and term == lo):
                    found[term] = found.get(term, 0) + size
            else:
                if leaf_id is None or not start or leaf_id >= leaves_end:
                    break
                leaf_id += 1
                node = block(leaf_id)
                height, i = _varint(node, 0)
                if height != 0:
                    raise Unreadable("a leaf run holds an interior node")
                continue
            break
    out = []
    for term in sorted(found):
        try:
            out.append((term.decode(), found[term]))
        except UnicodeDecodeError as e:
            raise Unreadable("a term is not UTF-8") from e
    return out


def aux_terms(
    conn: sqlite3.Connection, schema: str, table: str, low: str, high: str, inclusive: bool
) -> list[tuple[str, int]]:
    """The same words as `terms` by FTS4's own fts4aux, each with how many
    rows hold it: it decodes every doclist of the range (a small table's, or
    an index in a shape `terms` does not know). A temporary table of the
    connection, `<table>_terms`, made once."""
    aux = f'temp."{table}_terms"'
    conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS {aux} USING fts4aux({schema}, "{table}")')
    return conn.execute(
        f"SELECT term, documents FROM {aux} WHERE col = '*'"
        f" AND term {'>=' if inclusive else '>'} ? AND term < ?",
        (low, high),
    ).fetchall()
