"""`kaja runs` and `kaja runs show`: the run tables as trees (seed "Usage ledger").

The listing answers the seed's "last five turns" query: for each run its own
`model_calls`, `tokens` (prompt + completion, summed as the seed sums them)
and `tool_calls`, with the same subqueries (no row multiplication), plus the
totals of its whole subtree (the run and every subagent below it, through
`runs.parent_id`). `show` reads one run's subtree with everything tagged
with its ids. Joins allow a missing parent; a parent cycle written by a
confused writer ends (UNION, not UNION ALL).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from kaja_cli.core import clock, values
from kaja_cli.core.audit.common import Listing, col, columns, find_id, select, usable
from kaja_cli.core.engine import dialect
from kaja_cli.core.ids import short_id
from kaja_cli.core.owners import Owner, label
from kaja_cli.core.store import Store, whose

RUN_COLUMNS = ("id", "parent_id", "agent", "source", "thread_id", "prompt", "started_at",
               "ended_at", "status", "error", "result", "pid", "host")  # fmt: skip
CALL_COLUMNS = ("id", "run_id", "at", "engine", "model", "role", "source", "kind",
                "prompt_tokens", "completion_tokens", "cached_tokens", "duration_ms",
                "ttft_ms", "tool_calls", "purpose", "ok", "error")  # fmt: skip
TOOL_COLUMNS = ("id", "run_id", "at", "tool", "outcome", "duration_ms", "arguments",
                "result_chars", "preview", "error")  # fmt: skip
EVENT_COLUMNS = ("run_id", "event_id", "at", "type", "attributes")
FEEDBACK_COLUMNS = ("id", "run_id", "at", "agent", "source", "type", "value_num",
                    "value_text", "comment", "user_id", "tags")  # fmt: skip
REVIEW_COLUMNS = ("run_id", "status", "tags", "reason", "note", "flagged_at", "reviewed_at",
                  "updated_at")  # fmt: skip
HINT = "`kaja runs --subagents` lists them"


def duration_ms(started: object, ended: object) -> int | None:
    a, b = clock.parse_stored(started), clock.parse_stored(ended)
    if a is None or b is None:
        return None
    return int((b - a).total_seconds() * 1000)


@dataclass
class RunFilter:
    status: str | None = None
    source: str | None = None
    agent: str | None = None
    since: str | None = None  # ISO, inclusive
    until: str | None = None  # ISO, exclusive
    thread: str | None = None
    subagents: bool = False  # --subagents: subagents' runs too
    limit: int = 20  # 0: all
    owner: Owner | None = None  # one owner's runs (`store.whose`); None: everyone's


@dataclass
class RunRow:
    """One run of the listing: the seed query's figures for its own rows, and its subtree's."""

    id: str
    parent_id: str | None
    agent: str | None
    source: str | None
    thread_id: str | None
    status: str | None
    started_at: str | None
    ended_at: str | None
    prompt: str | None
    model_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0
    subagents: int = 0  # runs below it, at any depth
    total_model_calls: int = 0
    total_tokens: int = 0
    total_tool_calls: int = 0
    machine: str | None = None  # --all-machines: the machine it ran on
    short_id: str = ""  # the shortest unique prefix among all runs, as the table shows it

    @property
    def duration_ms(self) -> int | None:
        return duration_ms(self.started_at, self.ended_at)

    def to_json(self) -> dict[str, Any]:
        d = {"id": self.id, "short_id": self.short_id or self.id} | asdict(self)
        if self.machine is None:
            del d["machine"]
        d["duration_ms"] = self.duration_ms
        return d


def _own(have: dict[str, list[str]], alias: str) -> tuple[str, str, str]:
    """The seed's three subqueries for the run `alias`.id (0 without the table)."""
    calls, tools = have.get("calls") or [], have.get("tools") or []
    if "run_id" in calls:
        n_calls = f"(SELECT COUNT(*) FROM calls c WHERE c.run_id = {alias}.id)"
        both = "prompt_tokens" in calls and "completion_tokens" in calls
        tokens = (
            f"(SELECT COALESCE(SUM(c.prompt_tokens + c.completion_tokens), 0) FROM calls c"
            f" WHERE c.run_id = {alias}.id)"
            if both
            else "0"
        )
    else:
        n_calls = tokens = "0"
    n_tools = (
        f"(SELECT COUNT(*) FROM tools t WHERE t.run_id = {alias}.id)" if "run_id" in tools else "0"
    )
    return n_calls, tokens, n_tools


# How many rows a ledger table holds, read on the listing's connection from
# somewhere cheaper than the table (`ledger.usage.counted`: kaja's rollups);
# None when it cannot say. Passed in by the command: audit/ stays apart from ledger/.
Counter = Callable[[Any, str], "int | None"]


def _short_among(ordered: list[str], run_id: str) -> str:
    """The shortest unique prefix of `run_id` in the sorted list of every run id."""
    at = bisect.bisect_left(ordered, run_id)
    nxt = at + 1 if at < len(ordered) and ordered[at] == run_id else at
    return short_id(run_id, ordered[at - 1] if at else None,
                    ordered[nxt] if nxt < len(ordered) else None)  # fmt: skip


def _shorten(conn: Any, rows: list[RunRow]) -> None:
    """Each row's short id: a prefix no other run starts with. A short listing
    asks for the runs' two neighbours in id order (the primary key's index),
    every run in one statement (one round trip to a server, not one a run); a
    long one reads the ids once."""
    if len(rows) > 1000:
        ordered = sorted(str(r[0]) for r in conn.execute("SELECT id FROM runs"))
        for row in rows:
            row.short_id = _short_among(ordered, str(row.id))
        return
    if not rows:
        return
    # Each id as it is stored (an INTEGER the agent wrote stays one): VALUES
    # names its column `column1` on both engines.
    values = ", ".join(["(?)"] * len(rows))
    around = {
        run_id: (prev, nxt)
        for run_id, prev, nxt in conn.execute(
            "SELECT v.column1, (SELECT max(id) FROM runs WHERE id < v.column1),"
            f" (SELECT min(id) FROM runs WHERE id > v.column1) FROM (VALUES {values}) AS v",
            tuple(row.id for row in rows),
        )
    }
    for row in rows:
        prev, nxt = around.get(row.id, (None, None))
        row.short_id = short_id(row.id, prev, nxt)


def listing(store: Store, flt: RunFilter, counted: Counter | None = None) -> Listing:
    """The runs, newest first (top-level ones unless `subagents`); `counted`
    answers "N more not shown" without counting the runs, where it can."""
    out = Listing("runs", store.where())
    with store.maybe_reader() as conn:
        if conn is None:
            out.exists = False
            return out
        have = columns(conn, "runs", "calls", "tools", "sessions")
        if not usable(out, have, "runs", "id"):
            return out
        runs = have["runs"]
        shown = [c for c in RUN_COLUMNS if c not in ("error", "result", "pid", "host")]
        where, args = [], []
        top = None  # the owner's top-level runs, as a set: to count them
        parts = None  # the owner's runs with their subagents', in two (`whose.Split`)
        if flt.owner is not None:
            d = dialect.of(conn)
            parts = whose.split(flt.owner, have, d, shown) if flt.subagents else None
            if parts is None:
                if flt.subagents or "parent_id" not in runs:
                    mine, mine_args = whose.tagged("r.id", flt.owner, have, d)
                else:
                    top = whose.top_level("r", flt.owner, have, d)
                    mine, mine_args = whose.top_level_each("r", flt.owner, have)
                where.append(mine)
                args.extend(mine_args)
        filters = _filters(runs, flt)
        where += filters[0]
        args += filters[1]
        clause = _where(where)
        n_calls, tokens, n_tools = _own(have, "r")
        newest = f" ORDER BY {col(runs, 'r', 'started_at')} DESC, r.id DESC"
        limit = f" LIMIT {int(flt.limit)}" if flt.limit else ""
        source = "runs r"
        if parts is not None:
            source, args = _newest_of(parts, filters, newest + limit)
            clause = ""
        sql = (
            f"SELECT {select(runs, 'r', shown)}, {n_calls} AS model_calls, {tokens} AS tokens,"
            f" {n_tools} AS tool_calls FROM {source}{clause}{newest}{limit}"
        )
        rows = conn.execute(sql, args).fetchall()
        n = len(shown)
        out.rows = [
            RunRow(**dict(zip(shown, r[:n], strict=True)), model_calls=r[n] or 0,
                   tokens=values.whole(r[n + 1]) or 0, tool_calls=r[n + 2] or 0)
            for r in rows
        ]  # fmt: skip
        _shorten(conn, out.rows)
        if flt.limit and len(rows) == flt.limit:
            if parts is not None:
                total = _count_parts(conn, parts, filters)
            else:
                total = _how_many(conn, flt, runs, clause, args, counted, top)
            out.more = max(0, total - len(rows))
        _add_subtrees(conn, have, out.rows, owned=flt.owner is not None)
    return out


def _where(conditions: list[str]) -> str:
    """` WHERE` and the conditions joined by AND; nothing for none."""
    return (" WHERE " + " AND ".join(conditions)) if conditions else ""


def _filters(runs: list[str], flt: RunFilter) -> tuple[list[str], list]:
    """The conditions of the listing's filters on the run `r`, and their values."""
    where: list[str] = []
    args: list = []
    if not flt.subagents:
        where.append(f"{col(runs, 'r', 'parent_id')} IS NULL")
    for name, value in (("status", flt.status), ("source", flt.source),
                        ("agent", flt.agent), ("thread_id", flt.thread)):  # fmt: skip
        if value is not None:
            where.append(f"{col(runs, 'r', name)} = ?")
            args.append(value)
    if flt.since is not None:
        where.append(f"{col(runs, 'r', 'started_at')} >= ?")
        args.append(flt.since)
    if flt.until is not None:
        where.append(f"{col(runs, 'r', 'started_at')} < ?")
        args.append(flt.until)
    return where, args


def _newest_of(parts: whose.Split, filters: tuple[list[str], list], page: str) -> tuple[str, list]:
    """The runs of both `parts` the filters select, as a table `r` of the
    newest of each (`page`: the listing's ORDER BY and LIMIT): each part read
    by its own plan (the runs by time, asking each of its owner, up to the
    limit; or the owner's by their keys), never the owner's whole tree."""
    (a, a_args), (b, b_args) = parts.threaded, parts.below
    columns = ", ".join(f'r."{c}"' for c in parts.columns)
    threaded = f"SELECT {columns} FROM runs r{_where([a, *filters[0]])}{page}"
    below = f"SELECT * FROM ({b}) AS r{_where(filters[0])}{page}"
    args = [*a_args, *filters[1], *b_args, *filters[1]]
    return f"(SELECT * FROM ({threaded}) AS a UNION ALL SELECT * FROM ({below}) AS b) AS r", args


def _count_parts(conn: Any, parts: whose.Split, filters: tuple[list[str], list]) -> int:
    """How many runs both `parts` hold that the filters select: the threaded
    ones by the owner's sessions (unfiltered, in the thread index alone), the
    ones below them where they are found."""
    (a, a_args), (b, b_args) = parts.threaded_set, parts.below
    return conn.execute(
        f"SELECT (SELECT COUNT(*) FROM runs r{_where([a, *filters[0]])})"
        f" + (SELECT COUNT(*) FROM ({b}) AS r{_where(filters[0])})",
        (*a_args, *filters[1], *b_args, *filters[1]),
    ).fetchone()[0]


def _how_many(
    conn: Any,
    flt: RunFilter,
    runs: list[str],
    clause: str,
    args: list,
    counted: Counter | None,
    top: tuple[str, tuple] | None = None,
) -> int:
    """How many runs the listing selects, for "N more not shown". Unfiltered, all
    runs as `counted` has them (kaja's rollups: tens of rows) less the subagents'
    runs (an index range): counting millions of top-level runs grew with the
    ledger. One owner's top-level runs (`top`: by their threads), the same way:
    their runs by thread, counted in the thread index alone, less those of
    them below another run; the heap of a shared server holds one owner's runs
    one page in many. Filtered, or where `counted` cannot say, the selection
    is counted."""
    filtered = (flt.status, flt.source, flt.agent, flt.thread, flt.since, flt.until)
    if top is not None and all(v is None for v in filtered):
        cond, top_args = top
        return conn.execute(
            f"SELECT (SELECT COUNT(*) FROM runs r WHERE {cond}) - (SELECT COUNT(*) FROM runs r"
            f' WHERE r."parent_id" IS NOT NULL AND {cond})',
            (*top_args, *top_args),
        ).fetchone()[0]
    if counted is not None and flt.owner is None and all(v is None for v in filtered):
        total = counted(conn, "runs")
        if total is not None:
            if not flt.subagents and "parent_id" in runs:
                below = conn.execute('SELECT COUNT(*) FROM runs WHERE "parent_id" IS NOT NULL')
                total -= below.fetchone()[0]
            return total
    return conn.execute(f"SELECT COUNT(*) FROM runs r{clause}", args).fetchone()[0]


def _subtree_cte(have: dict[str, list[str]], roots: str, *, owned: bool = False) -> str:
    """`tree(root, id)`: every run below each root (and the root), by parent_id;
    `owned` (one owner's view): not below a run with a thread of its own,
    which is its session's owner's (`store.whose`), not the root's."""
    if "parent_id" not in have["runs"]:
        return f"tree(root, id) AS (SELECT id, id FROM runs WHERE {roots})"
    return (
        f"tree(root, id) AS (SELECT id, id FROM runs WHERE {roots}"
        f" UNION SELECT tree.root, r.id FROM runs r JOIN tree"
        f" ON r.parent_id = tree.id{_kept_below(have, owned)})"
    )


def _kept_below(have: dict[str, list[str]], owned: bool) -> str:
    """The condition (` AND …`, or nothing) on a run `r` under its parent in a
    tree (`_subtree_cte`): in one owner's view, not a run with a thread of its
    own, which is its session's owner's (`store.whose`), not the root's."""
    return f" AND {whose.no_thread('r')}" if owned and "thread_id" in have["runs"] else ""


def _add_subtrees(
    conn: Any, have: dict[str, list[str]], rows: list[RunRow], *, owned: bool = False
) -> None:
    """Each listed run's subagents below it, and its and their model calls,
    tokens and tool calls (`_subtree_totals`)."""
    if not rows:
        return
    totals = _subtree_totals(conn, have, [r.id for r in rows], owned=owned)
    for row in rows:
        sub, calls, toks, tools = totals.get(row.id, (0, 0, 0, 0))
        row.subagents, row.total_model_calls = int(sub or 0), int(calls or 0)
        row.total_tokens, row.total_tool_calls = int(toks or 0), int(tools or 0)


def _subtree_totals(
    conn: Any, have: dict[str, list[str]], ids: list[Any], *, owned: bool = False
) -> dict[Any, tuple[Any, ...]]:
    """For each of `ids`: (runs below it, then the model calls, tokens and tool
    calls of it and them), by `_subtree_cte`'s tree. Every run below any of
    them is read once and summed from the leaves up, so a listing holding a
    run and the runs below it (`runs --subagents`) costs what its runs do: one
    tree from each listed run read a chain of 5,000 runs 12.5 million times.
    Where a run is reached twice (an id on two runs, or runs in a loop: another
    program's data) the sums would count it twice: one tree each, as before."""
    marks = ", ".join("?" for _ in ids)
    if "parent_id" not in have["runs"]:
        return _trees_each(conn, have, marks, ids, owned)
    kept = _kept_below(have, owned)
    reach = (
        f"WITH RECURSIVE reach(id) AS (SELECT id FROM runs WHERE id IN ({marks})"
        f" UNION SELECT r.id FROM runs r JOIN reach ON r.parent_id = reach.id{kept})"
    )
    n_calls, tokens, n_tools = _own(have, "reach")
    # The runs with their own figures, and each run's parent among them: one
    # statement (a round trip to a server), the tree read once.
    rows = conn.execute(
        f"{reach} SELECT 0, id, NULL, {n_calls}, {tokens}, {n_tools} FROM reach UNION ALL"
        f" SELECT 1, r.id, reach.id, NULL, NULL, NULL FROM reach JOIN runs r"
        f" ON r.parent_id = reach.id{kept}",
        ids,
    ).fetchall()
    own = {r[1]: r[3:] for r in rows if r[0] == 0}
    children: dict[Any, list[Any]] = {}
    reached: set[Any] = set()
    for _, child, parent, *_figures in (r for r in rows if r[0] == 1):
        if child in reached or child == parent:  # two ways to a run, or a loop
            return _trees_each(conn, have, marks, ids, owned)
        reached.add(child)
        children.setdefault(parent, []).append(child)
    order = [run for run in own if run not in reached]  # the runs at the top
    for run in order:  # growing as it goes: each run's children after it
        order.extend(children.get(run, ()))
    if len(order) != len(own):  # a loop no run outside it reaches: one tree each
        return _trees_each(conn, have, marks, ids, owned)
    # Each figure is a count or a COALESCE: never NULL, so summed as numbers.
    sums: dict[Any, tuple[Any, ...]] = {}
    for run in reversed(order):  # from the leaves up: each run after every run below it
        count, calls, toks, tools = 1, *own[run]
        for child in children.get(run, ()):
            c = sums[child]
            count, calls, toks, tools = count + c[0], calls + c[1], toks + c[2], tools + c[3]
        sums[run] = (count, calls, toks, tools)
    return {run: (c[0] - 1, *c[1:]) for run, c in sums.items()}


def _trees_each(
    conn: Any, have: dict[str, list[str]], marks: str, ids: list[Any], owned: bool
) -> dict[Any, tuple[Any, ...]]:
    """`_subtree_totals` by one tree from each id, summed by the server."""
    n_calls, tokens, n_tools = _own(have, "tree")
    sql = (
        f"WITH RECURSIVE {_subtree_cte(have, f'id IN ({marks})', owned=owned)}"
        f" SELECT root, COUNT(*) - 1, SUM({n_calls}), SUM({tokens}), SUM({n_tools})"
        " FROM tree GROUP BY root"
    )
    return {r[0]: r[1:] for r in conn.execute(sql, ids)}


# --- one run as a tree -------------------------------------------------------------------
@dataclass
class RunNode:
    """A run with everything tagged with its id, and its subagents' runs below it."""

    run: dict[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    review: dict[str, Any] | None = None
    subagents: list[RunNode] = field(default_factory=list)
    machine: str | None = None  # --all-machines: the machine it ran on
    below: int = 0  # runs under this one deeper than the tree shows (`SHOWN_DEPTH`)

    @property
    def id(self) -> str:
        return self.run["id"]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.run,
            "duration_ms": duration_ms(self.run.get("started_at"), self.run.get("ended_at")),
            "calls": self.calls,
            "tools": self.tools,
            "events": self.events,
            "feedback": self.feedback,
            "review": self.review,
            "subagents": [s.to_json() for s in self.subagents],
            **({} if self.machine is None else {"machine": self.machine}),
            **({"subagents_not_shown": self.below} if self.below else {}),
        }


# How deep `runs show` draws subagents: a deeper chain (an agent's runaway
# recursion, or a hostile store's 600 levels) is counted at the last level
# shown, and `kaja runs show` of that run goes on from there.
SHOWN_DEPTH = 32


def _link(nodes: dict[Any, RunNode], ordered: list[dict[str, Any]], run_id: Any) -> RunNode:
    """Hang each run under its parent, in `ordered`'s order, from `run_id` down
    to SHOWN_DEPTH levels; below that, each last shown run counts what it holds."""
    children = _below([r for r in ordered if r["id"] != run_id])
    level = [nodes[run_id]]
    for _ in range(SHOWN_DEPTH):
        below = []
        for node in level:
            node.subagents = [nodes[c] for c in children.get(node.id, ()) if c in nodes]
            below += node.subagents
        level = below
    for node in level:
        node.below = len(_subtree(node.id, children)) - 1
    return nodes[run_id]


def _rows(conn: Any, sql: str, args: list[Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    # fetchall, then the dicts: a run of 1,000 calls is read in C first (bench/bench_runs.py).
    rows = conn.execute(sql, args).fetchall()
    return [dict(zip(names, r, strict=True)) for r in rows]


def show(store: Store, ref: str, owner: Owner | None = None) -> RunNode:
    """The run `ref` (an id or a unique prefix) as a tree; NotFound (exit 3) when
    there is no such run (or no runs at all), or it is not one of `owner`'s
    (`store.whose`; None: anyone's)."""
    from kaja_cli.errors import NotFound

    with store.maybe_reader() as conn:
        if conn is None:
            raise NotFound(f"no run {ref.strip()!r}: there is no Kaja store at {store.where()}")
        tables = ("runs", "calls", "tools", "events", "feedback", "reviews", "sessions")
        have = columns(conn, *tables)
        if "id" not in (have.get("runs") or []):
            raise NotFound(f"no run {ref.strip()!r}: no runs recorded in {store.where()}")
        if owner is None:
            run_id = find_id(conn, "runs", "id", ref, "run", HINT)
        else:
            among = whose.owns("runs.id", owner, have, dialect.of(conn))
            hint = f"not among {label(owner.id)}'s runs; --all-owners looks at everyone's"
            run_id = find_id(conn, "runs", "id", ref, "run", hint, among)
        cte = "WITH RECURSIVE " + _subtree_cte(have, "id = ?", owned=owner is not None)
        runs = _rows(conn, f"{cte} SELECT {select(have['runs'], 'r', RUN_COLUMNS)} FROM runs r"
                     f" WHERE r.id IN (SELECT id FROM tree) ORDER BY"
                     f" {col(have['runs'], 'r', 'started_at')}, r.id", [run_id], RUN_COLUMNS)  # fmt: skip
        nodes = {r["id"]: RunNode(r) for r in runs}

        def tagged(table: str, names: tuple[str, ...], order: str) -> list[dict[str, Any]]:
            cols = have.get(table)
            if not cols or "run_id" not in cols:
                return []
            key = "t.run_id"
            return _rows(conn, f"{cte} SELECT {select(cols, 't', names)} FROM {table} t"
                         f" WHERE {key} IN (SELECT id FROM tree) ORDER BY {order}",
                         [run_id], names)  # fmt: skip

        def order(table: str, *names: str) -> str:
            return ", ".join(col(have.get(table), "t", n) for n in names)

        for table, names, by in (("calls", CALL_COLUMNS, ("at", "id")),
                                 ("tools", TOOL_COLUMNS, ("at", "id")),
                                 ("events", EVENT_COLUMNS, ("run_id", "event_id")),
                                 ("feedback", FEEDBACK_COLUMNS, ("at", "id"))):  # fmt: skip
            for row in tagged(table, names, order(table, *by)):
                node = nodes.get(row["run_id"])
                if node is not None:  # a run id stored with another type: left out
                    getattr(node, table).append(row)
        for review in tagged("reviews", REVIEW_COLUMNS, "t.run_id"):
            node = nodes.get(review["run_id"])
            if node is not None:
                node.review = review
    return _link(nodes, runs, run_id)


def ids(conn: Any, prefix: str) -> list[tuple[str, str | None, str | None, str | None]]:
    """Run ids starting with `prefix` for TAB: (id, agent, started_at, prompt), newest first."""
    have = columns(conn, "runs").get("runs")
    if not have or "id" not in have:
        return []
    return conn.execute(
        f"SELECT r.id, {col(have, 'r', 'agent')}, {col(have, 'r', 'started_at')},"
        f" {col(have, 'r', 'prompt')} FROM runs r WHERE r.id >= ? AND r.id < ?"
        f" ORDER BY {col(have, 'r', 'started_at')} DESC LIMIT 200",
        (prefix, prefix + "\U0010ffff"),
    ).fetchall()


# --- the same from plain rows (the shared ledger: `kaja runs --all-machines`) ---------------
def _first(value: Any) -> tuple[int, int | float, str]:
    """A sort key ordering as SQLite does: NULL, then numbers, then text."""
    if value is None:
        return (0, 0, "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, value, "")
    return (2, 0, str(value))


def _below(runs: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    children: dict[Any, list[Any]] = {}
    for r in runs:
        if r.get("parent_id") is not None:
            children.setdefault(r["parent_id"], []).append(r["id"])
    return children


def _subtree(root: Any, children: dict[Any, list[Any]]) -> list[Any]:
    """The root and every run below it (a parent cycle ends)."""
    seen, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return list(seen)


def listing_on(
    runs: list[dict[str, Any]],
    own: dict[Any, tuple[int, int, int]],
    flt: RunFilter,
    location: str,
) -> Listing:
    """`listing` computed from plain rows: `runs` dicts with the runs' columns
    (and the `machine` each ran on), `own` each run id's model calls, tokens
    and tool calls as the seed's query counts them. Same rows, same order,
    same figures."""
    out = Listing("runs", location)
    if not runs:
        out.recorded = False
        return out

    def wanted(r: dict[str, Any]) -> bool:
        if not flt.subagents and r.get("parent_id") is not None:
            return False
        for name, value in (("status", flt.status), ("source", flt.source),
                            ("agent", flt.agent), ("thread_id", flt.thread)):  # fmt: skip
            if value is not None and r.get(name) != value:
                return False
        started = r.get("started_at")
        if flt.since is not None and (started is None or str(started) < flt.since):
            return False
        return not (flt.until is not None and (started is None or str(started) >= flt.until))

    chosen = sorted((r for r in runs if wanted(r)),
                    key=lambda r: (_first(r.get("started_at")), _first(r["id"])), reverse=True)  # fmt: skip
    if flt.limit and len(chosen) > flt.limit:
        out.more = len(chosen) - flt.limit
        chosen = chosen[: flt.limit]
    children = _below(runs)
    shown = [c for c in RUN_COLUMNS if c not in ("error", "result", "pid", "host")]
    ordered = sorted(str(r["id"]) for r in runs)
    for r in chosen:
        calls_n, tokens, tools_n = own.get(r["id"], (0, 0, 0))
        row = RunRow(**{c: r.get(c) for c in shown}, model_calls=calls_n, tokens=tokens,
                     tool_calls=tools_n, machine=r.get("machine"))  # fmt: skip
        row.short_id = _short_among(ordered, str(r["id"]))
        tree = _subtree(r["id"], children)
        row.subagents = len(tree) - 1
        for run_id in tree:
            c, t, n = own.get(run_id, (0, 0, 0))
            row.total_model_calls += c
            row.total_tokens += t
            row.total_tool_calls += n
        out.rows.append(row)
    return out


def find_on(ids: list[str], ref: str, location: str) -> str:
    """`find_id` over a list of run ids: the one that is `ref` or starts with it."""
    from kaja_cli.errors import NotFound, UsageError

    ref = ref.strip()
    if not ref:
        raise UsageError("empty run id")
    if not ids:
        raise NotFound(f"no run {ref!r}: no runs recorded in {location}")
    if ref in ids:
        return ref
    found = sorted(i for i in ids if i.startswith(ref))
    if not found:
        raise NotFound(f"no run {ref!r}", hint="`kaja runs --subagents --all-machines` lists them")
    if len(found) > 1:
        from kaja_cli.core.audit.common import MAX_CANDIDATES

        shown = ", ".join(found[:MAX_CANDIDATES])
        more = " …" if len(found) > MAX_CANDIDATES else ""
        raise UsageError(f"run prefix {ref!r} is ambiguous: {shown}{more}",
                         hint="type more of the id")  # fmt: skip
    return found[0]


def subtree_on(runs: list[dict[str, Any]], run_id: str) -> list[Any]:
    """The ids of `run_id` and every run below it, from plain rows."""
    return _subtree(run_id, _below(runs))


def tree_on(
    run_id: str, runs: list[dict[str, Any]], rows: dict[str, list[dict[str, Any]]]
) -> RunNode:
    """`show` computed from plain rows: `runs` (the subtree's, each with its
    `machine`), `rows` the calls, tools, events, feedback and reviews tagged
    with their ids. Same tree, same order, as `show` reads locally."""

    def pick(row: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
        return {n: row.get(n) for n in names}

    ordered = sorted(runs, key=lambda r: (_first(r.get("started_at")), _first(r["id"])))
    nodes = {r["id"]: RunNode(pick(r, RUN_COLUMNS), machine=r.get("machine")) for r in ordered}
    for table, names, by in (("calls", CALL_COLUMNS, ("at", "id")),
                             ("tools", TOOL_COLUMNS, ("at", "id")),
                             ("events", EVENT_COLUMNS, ("run_id", "event_id")),
                             ("feedback", FEEDBACK_COLUMNS, ("at", "id"))):  # fmt: skip
        found = sorted(rows.get(table, []), key=lambda x: tuple(_first(x.get(n)) for n in by))
        for row in found:
            node = nodes.get(row.get("run_id"))
            if node is not None:
                getattr(node, table).append(pick(row, names))
    for review in rows.get("reviews", []):
        node = nodes.get(review.get("run_id"))
        if node is not None:
            node.review = pick(review, REVIEW_COLUMNS)
    return _link(nodes, ordered, run_id)
