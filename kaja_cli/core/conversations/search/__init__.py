"""`kaja search`: full-text search across every past conversation (SPEC §6, §10).

One skeleton, two engine parts. This module checks what the user asked for
and hands it to the store's engine part (`store.part`), which answers with
the model's `SearchResult`:

- `model`: the query's plain words, `Hit`, `SearchResult`, the snippet's
  marks, the BM25 constants and idf, progress; what both engines share.
- `local`: FTS4 over the store's SQLite file (the index and its triggers
  are the store's `search_index`), with `rank` (BM25 in SQL over FTS4's blobs), `tables` (which
  FTS4 table answers), and `cjk`, `cjk_index`, `cjk_search` (Chinese,
  Japanese and Korean words, as bigrams).
- `server`: PostgreSQL full-text search over kaja's schema, with `fts4`
  (FTS4's query syntax as a tsquery); SQLite's unicode61 words in SQL are
  the server schema's (`store.server.tokenizer`).

Both parts expose `search(store, query, …)` and `reindex(store, progress)`
and find, rank and show the same messages for the same query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kaja_cli.core import owners
from kaja_cli.core.conversations.search.model import (
    MARK_END,
    MARK_START,
    MAX_WORDS,
    ROLES,
    SNIPPET_TOKENS,
    Hit,
    ProgressFactory,
    SearchResult,
    parse_roles,
    parse_snippet,
    plain_match,
    plain_words,
)
from kaja_cli.errors import UsageError

if TYPE_CHECKING:
    from kaja_cli.core.owners import Owner
    from kaja_cli.core.store import Store

__all__ = [
    "MARK_END", "MARK_START", "MAX_WORDS", "ROLES", "SNIPPET_TOKENS", "Hit", "ProgressFactory",
    "SearchResult", "checked", "language", "parse_snippet", "plain_match", "plain_words", "reindex",
    "search",
]  # fmt: skip


def search(
    store: Store,
    query: str,
    *,
    fts: bool = False,
    owner: str | None = None,
    all_owners: bool = False,
    session: str | None = None,
    roles: Iterable[str] = (),
    since: str | None = None,
    limit: int = 20,
    recent: bool = False,
    progress: ProgressFactory | None = None,
    archived: bool = False,
    until: str | None = None,
    exact: bool = False,
) -> SearchResult:
    """Find the messages matching `query` (plain words, or FTS4 syntax with
    `fts`), best first or with `recent` newest first.

    `owner` is --owner as typed (None: "you", `store.owner`), `session` an id
    or unique prefix, `since` and `until` (not included) a date, ISO time or age, `limit` 0 for all.
    `progress` (`render.progress`) shows an index build or a scan. Archived
    sessions' messages are left out unless `archived` or the `session` is
    named. Plain words also find their other forms (`stems`, the language
    of `search.language`) unless `exact`. The store's engine part answers
    (`search.local`, `search.server`): the same matches, ranked the same way."""
    wanted_roles = parse_roles(roles)
    acting, after, before = checked(store, query, owner=owner, all_owners=all_owners,
                                    since=since, until=until, limit=limit,
                                    example="kaja search tomato shade")  # fmt: skip
    names, problem = language(store, exact=exact or fts)
    result = store.part(__package__).search(
        store, query, fts=fts, owner=acting, session=session, roles=wanted_roles, since=after,
        until=before, limit=limit, recent=recent, progress=progress, archived=archived,
        languages=names,
    )  # fmt: skip
    if problem:
        result.notes.append(problem)
    return result


def language(store: Store, *, exact: bool) -> tuple[tuple[str, ...], str | None]:
    """The stemmers a plain search uses (none when `exact`), from
    `search.language`, and what to say if that setting is wrong."""
    if exact:
        return (), None
    from kaja_cli.core.conversations.search import stems

    return stems.languages(store.paths.settings.get("search", "language"))


def checked(
    store: Store, query: str, *, owner: str | None, all_owners: bool, since: str | None,
    limit: int, example: str, until: str | None = None,
) -> tuple[Owner | None, str | None, str | None]:  # fmt: skip
    """The options every search shares (messages, `--notes`), checked in the
    order the user reads them: the acting owner (None: anyone's), `since` and
    `until` as times; a UsageError naming the option otherwise (`example` is the
    hint when there is nothing to search for)."""
    owners.one_of(owner, all_owners)
    acting = None if all_owners else store.owner(owner)
    after = before = None
    if since or until:
        from kaja_cli.core import timeparse

        after = timeparse.parse_when(since, option="--since") if since else None
        before = timeparse.parse_when(until, option="--until") if until else None
    if limit < 0:
        raise UsageError("--limit must be 0 (all) or more")
    if not query.strip():
        raise UsageError("nothing to search for", hint=f"give some words, e.g. `{example}`")
    return acting, after, before


def reindex(store: Store, progress: ProgressFactory | None = None) -> int:
    """Rebuild the store's search index from every message (`progress` shows
    it where the engine builds in steps); returns how many messages it holds."""
    return store.part(__package__).reindex(store, progress)
