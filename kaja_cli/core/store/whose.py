"""Whose ledger rows: one owner's runs, and the rows tagged with them.

The usage ledger (the seed's `runs`, `calls`, `tools`, `events`, `feedback`,
`reviews`, …) has no owner column. A run is the owner's of the session it
ran in (`runs.thread_id` is a `sessions.id`); a run with no thread (a
subagent's, as the agent writes them) is its parent's owner's
(`runs.parent_id`, up to the first run with a thread); a row with a `run_id`
is its run's owner's. The thread decides when there is one, so a run is one
owner's at most. A run in no session (a scheduled job with no thread, a
session deleted since) is nobody's, and so are the runs below it that have
no thread of their own: only everyone's ledger shows them.

`kaja usage --owner`, `kaja runs --owner` and `kaja reviews --owner` read
one owner's rows. In cloud mode with `[memory] account` set, the account's
are the default (`acting`, `Store.account`): a hosted server's ledger holds
every account's runs, and one account must not read another's by default.
Locally, and on a server without an account, the ledger is the machine's
(or the server's) and the default is everyone's.

The conditions are one statement's SQL on both engines, with `?` placeholders:
the owner's sessions by their owner index, their runs by `runs.thread_id`'s,
the runs below them by `runs.parent_id`'s, and a run's rows by their `run_id`
index, so reading one owner's ledger costs what their runs cost, whatever
the others hold.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaja_cli.core.engine import dialect
from kaja_cli.core.owners import Owner

if TYPE_CHECKING:
    from kaja_cli.core.store import Store


def no_thread(alias: str) -> str:
    """The run `alias` has no thread of its own: it is its parent's owner's."""
    return f"({alias}.thread_id IS NULL OR {alias}.thread_id = '')"


def acting(store: Store, owner: str | None, all_owners: bool) -> Owner | None:
    """Whose ledger a command reads: `--owner` as typed, everyone's with
    `--all-owners`; by default the account's in cloud mode when `[memory]
    account` is set, else everyone's (None)."""
    from kaja_cli.core.owners import one_of

    one_of(owner, all_owners)
    if all_owners:
        return None
    if owner is not None:
        return store.owner(owner)
    return store.account


def _sessions_of(owner: Owner, sessions: Collection[str]) -> tuple[str, tuple]:
    """A SELECT of the owner's session ids."""
    theirs, args = _theirs(owner, sessions)
    return f"SELECT s.id FROM sessions s WHERE {theirs}", args


def _theirs(owner: Owner, sessions: Collection[str], column: str = "s.owner") -> tuple[str, tuple]:
    """The condition that session `s` is the owner's; a store whose sessions
    have no `owner` is the terminal's alone."""
    if "owner" in sessions:
        return owner.sessions_where(column)
    return ("1 = 1" if owner.id is None else "1 = 0"), ()


def _ties(have: Mapping[str, Collection[str]]) -> bool:
    """Whether the store ties runs to sessions at all: without `runs.thread_id`
    (or the ids) every run is nobody's."""
    return {"id", "thread_id"} <= set(have.get("runs", ())) and "id" in set(
        have.get("sessions", ())
    )


def runs_of(
    owner: Owner,
    have: Mapping[str, Collection[str]],
    d: dialect.Dialect = dialect.SQLITE,
    *,
    carry: tuple[str, ...] = (),
    select: str = "id",
) -> tuple[str, tuple]:
    """A SELECT of the owner's runs and its parameters: `mine(id, …)`, each
    run's id and the columns of `carry` under their own names (NULL where the
    store lacks one), of which it selects `select` (the ids alone by default).

    `have`: each table's columns. A store whose runs have no `thread_id`
    (or no `id`) ties no run to a session: nobody's, so the owner has none.
    """
    with_, args = with_mine(owner, have, d, carry=carry)
    return f"{with_} SELECT {select} FROM mine", args


def with_mine(
    owner: Owner,
    have: Mapping[str, Collection[str]],
    d: dialect.Dialect = dialect.SQLITE,
    *,
    carry: tuple[str, ...] = (),
    many: bool = False,
) -> tuple[str, tuple]:
    """`runs_of`'s WITH clause alone (`WITH [RECURSIVE] mine(id, …) AS (…)`),
    for a statement of the caller's that reads `mine` more than once. `many`:
    the owner's sessions as a plain subquery the planner counts from their
    owner (PostgreSQL's array of them hides how many runs they hold: it
    planned for 500 where an account had 443,000, and probed an index for
    each), for a caller that reads all of the owner's runs."""
    names = ", ".join(["id", *(f'"{c}"' for c in carry)])
    if not _ties(have):
        nulls = ", ".join(["NULL"] * (len(carry) + 1))
        return f"WITH mine({names}) AS (SELECT {nulls} WHERE 1 = 0)", ()
    runs = set(have["runs"])

    def row(t: str) -> str:
        return ", ".join([f"{t}.id", *(f'{t}."{c}"' if c in runs else "NULL" for c in carry)])

    sessions, args = _sessions_of(owner, have["sessions"])

    def held(t: str) -> str:
        return (
            f"{t}.thread_id IN ({sessions})" if many else d.in_subquery(f"{t}.thread_id", sessions)
        )

    roots = f"SELECT {row('r')} FROM runs r WHERE {held('r')}"
    if "parent_id" not in runs:
        return f"WITH mine({names}) AS ({roots})", args
    # The runs with a thread of the owner's, then the runs with none below
    # them (`_below`), apart: a recursive walk whose every step joined the
    # owner's whole tree so far to the runs table read all of a shared
    # server's runs (4.4 million for `usage` on the 10M crowded server).
    threaded, threaded_args = top_level_each("b", owner, have)  # a root already
    below = _below(f"{row('c')}, c.thread_id", held("p"), d)
    return (
        f"WITH RECURSIVE below({names}, thread_id) AS ({below}),"
        f" mine({names}) AS ({roots} UNION ALL SELECT {row('b')} FROM below b"
        f" WHERE NOT {threaded})",
        (*args, *args, *threaded_args),
    )


def _below(columns: str, held: str, d: dialect.Dialect) -> str:
    """The body of a recursive `below`: `columns` of the runs with no thread
    whose parent `p` is `held` (a run with a thread of the owner's), then of
    the runs with no thread below those, by `runs.parent_id`. SQLite reads
    the owner's runs first and each one's children by `runs_parent`;
    PostgreSQL starts from the smaller side. UNION, not UNION ALL: a parent
    cycle written by a confused writer ends."""
    return (
        f"SELECT {columns} FROM runs p {d.join_in_order} runs c ON c.parent_id = p.id"
        f" WHERE {held} AND {no_thread('c')}"
        f" UNION SELECT {columns} FROM runs c JOIN below b ON c.parent_id = b.id"
        f" WHERE {no_thread('c')}"
    )


def tagged(
    column: str,
    owner: Owner,
    have: Mapping[str, Collection[str]],
    d: dialect.Dialect = dialect.SQLITE,
) -> tuple[str, tuple]:
    """The condition that `column` (a run id: `runs.id`, `calls.run_id`, …)
    is one of the owner's runs, and its parameters."""
    sql, args = runs_of(owner, have, d)
    return d.in_subquery(column, sql), args


def owns(
    column: str,
    owner: Owner,
    have: Mapping[str, Collection[str]],
    d: dialect.Dialect = dialect.SQLITE,
) -> tuple[str, tuple]:
    """The condition that the run whose id is `column` is the owner's, asked
    of that run alone: its thread, or its parents' (`parent_id`) up to the
    first run with one, a session of the owner's, found by its key. For a
    run or a few (`runs show`, `reviews`, `reviews done`), where reading
    every run of the owner would cost far more."""
    if not _ties(have):
        return "0 = 1", ()
    # The owner kept off its index: each session found by its key.
    theirs, args = _theirs(owner, have["sessions"], d.no_index("s.owner"))
    if "parent_id" not in have["runs"]:
        threads = f"SELECT u.thread_id FROM runs u WHERE u.id = {column}"
    else:  # UNION: a parent cycle written by a confused writer ends.
        threads = (
            "WITH RECURSIVE up(id, parent_id, thread_id) AS ("
            f"SELECT u.id, u.parent_id, u.thread_id FROM runs u WHERE u.id = {column}"
            " UNION SELECT p.id, p.parent_id, p.thread_id FROM runs p JOIN up ON p.id = up.parent_id"
            f" WHERE {no_thread('up')})"  # up to the first run with a thread
            " SELECT up.thread_id FROM up"
        )
    return (
        f"EXISTS (SELECT 1 FROM sessions s WHERE {d.in_subquery('s.id', threads)} AND {theirs})",
        args,
    )


def top_level(
    alias: str, owner: Owner, have: Mapping[str, Collection[str]], d: dialect.Dialect
) -> tuple[str, tuple]:
    """`tagged` for top-level runs (`alias.parent_id IS NULL`, which the caller
    tests), as a set: such a run is the owner's when its thread is one of
    their sessions (the sessions' owner index, then the runs' thread index),
    no subagent walked. To count them."""
    if not _ties(have):
        return "0 = 1", ()
    sessions, args = _sessions_of(owner, have["sessions"])
    return d.in_subquery(f"{alias}.thread_id", sessions), args


@dataclass(frozen=True)
class Split:
    """The owner's runs (`tagged`) in two parts no run is in both of, neither
    read through the owner's whole run tree for a page of it:

    - `threaded`: the condition that the run `alias` has a thread of the
      owner's, asked of each run (`top_level_each`: the session by its key);
      `threaded_set` the same as a set, to count them in the thread index
      alone (`top_level`);
    - `below`: a SELECT of the rows (the columns `_carry` names) of the runs
      with no thread below those, through runs with no thread: the owner's
      runs joined to their children with no thread, then down
      `runs.parent_id`; each row carried, so a page of them is sorted where
      they were found.

    Their union is `tagged`: a run with a thread is the owner's exactly when
    that thread is theirs, one with none when its nearest threaded parent's
    is (or, a session whose id is '', when its own empty thread is theirs:
    then it is `threaded`, and `below` leaves it out). `kaja runs --owner
    --subagents` reads the newest of each and counts each, where the tree
    built downwards from all of the owner's runs, then matched against every
    run, took seconds for an account of 443,000 runs (issue 42)."""

    threaded: tuple[str, tuple]
    threaded_set: tuple[str, tuple]
    below: tuple[str, tuple]
    columns: tuple[str, ...]  # the runs' columns `below` carries (`_carry`)


def split(
    owner: Owner, have: Mapping[str, Collection[str]], d: dialect.Dialect, columns: Sequence[str]
) -> Split | None:
    """`Split` of the owner's runs (as `r`), `below` carrying the runs' `columns`
    (those of them the table has, and its `id` and `thread_id`: not a run's
    whole result, read for a page of 20); None where runs have no parent (no
    run is below another: `top_level` is all of them) or none is anyone's."""
    if not _ties(have) or "parent_id" not in have["runs"]:
        return None
    each, each_args = top_level_each("r", owner, have)
    sessions, args = _sessions_of(owner, have["sessions"])
    kept = _carry(have, columns)
    carried = ", ".join(f'c."{c}"' for c in kept)
    below = (
        f"WITH RECURSIVE below AS ({_below(carried, f'p.thread_id IN ({sessions})', d)})"
        f" SELECT * FROM below r WHERE NOT {each}"
    )
    return Split(
        threaded=(each, each_args),
        threaded_set=top_level("r", owner, have, d),
        below=(below, (*args, *each_args)),
        columns=tuple(kept),
    )


def _carry(have: Mapping[str, Collection[str]], columns: Sequence[str]) -> list[str]:
    """The runs' columns a `Split` carries: those of `columns` the table has,
    with `id` and `thread_id`, in the table's order."""
    wanted = {*columns, "id", "thread_id"}
    return [c for c in have["runs"] if c in wanted]


def top_level_each(
    alias: str, owner: Owner, have: Mapping[str, Collection[str]]
) -> tuple[str, tuple]:
    """`top_level` asked of each run on its own: its thread's session by the
    primary key. For the newest few, where the server's planner then weighs
    walking the runs by time against reading all of the owner's, with true
    estimates of both."""
    if not _ties(have):
        return "0 = 1", ()
    theirs, args = _theirs(owner, have["sessions"])
    return f"EXISTS (SELECT 1 FROM sessions s WHERE s.id = {alias}.thread_id AND {theirs})", args
