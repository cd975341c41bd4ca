"""`kaja search --semantic`: the messages closest in meaning to the words
given, offline (issue 41; docs/guides/semantic-search.md).

- `model`: the embedding model (wordllama's bundled one, read without a
  download), and `Missing` when the `semantic` extra is not installed;
- `index`: kaja's side database of vectors (`<state dir>/semantic.db`),
  brought up to date before each search, and what deleting forgets;
- `bpe`: the tokenizer for a query, from tables in the index;
- `rank`: the ranking, plain Python: the clusters nearest the query (all
  vectors on a small index), their vectors by the Hamming distance of their
  signs, the nearest scored with the query's own values, the best
  `_FIRST_CANDIDATES` re-ranked by cosine on their int8 vectors.

A search keeps, best first, those whose message is still there with the
same id and passes the filters (the word search's, `search.local`); with
too few it looks again at eight times as many. The answer is the word
search's `SearchResult` (score: the cosine similarity), shown the same way.
Local stores only: cloud mode is refused in one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaja_cli.core.conversations.search.model import ProgressFactory, SearchResult
    from kaja_cli.core.store import Store


def require(store: Store) -> None:
    """UsageError (exit 2) in cloud mode, or without the `semantic` extra."""
    store.part(__package__).require()


def search(
    store: Store,
    query: str,
    *,
    owner: str | None = None,
    all_owners: bool = False,
    session: str | None = None,
    roles: Iterable[str] = (),
    since: str | None = None,
    until: str | None = None,
    limit: int = 20,
    progress: ProgressFactory | None = None,
    archived: bool = False,
) -> SearchResult:
    """The messages closest in meaning to `query`, best first (the options
    are `search.search`'s; `progress` shows the index catching up)."""
    return store.part(__package__).search(
        store, query, owner=owner, all_owners=all_owners, session=session, roles=roles,
        since=since, until=until, limit=limit, progress=progress, archived=archived,
    )  # fmt: skip


def reindex(store: Store, progress: ProgressFactory | None = None) -> int:
    """Build the index again from every message; returns how many vectors it holds."""
    return store.part(__package__).reindex(store, progress)
