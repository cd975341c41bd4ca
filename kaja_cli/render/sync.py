"""What `kaja sync` and `kaja sync status` print for a person or a pipe (the
JSON is the results' own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render

if TYPE_CHECKING:
    from kaja_cli.core.ledger.sync import Status, SyncPlan, SyncResult


def synced(r: SyncResult) -> None:
    if r.reseeded:
        render.note(f"sending the history again: {r.reseeded}")
    parts = []
    if r.push is not None:
        sent = render.plural(r.push.changes, "change", commas=True)
        if r.push.history:
            sent = f"{render.plural(r.push.history, 'row', commas=True)} of history and " + sent
        parts.append(f"pushed {sent}")
    if r.pull is not None:
        machines = len(r.pull.origins - {"*"})
        got = f"pulled {render.plural(r.pull.changes, 'change', commas=True)}"
        if machines:
            got += f" from {render.plural(machines, 'other machine')}"
        if r.pull.kept_local:
            got += f" ({r.pull.kept_local:,} kept this machine's newer change)"
        parts.append(got)
    render.note("; ".join(parts) + f" ({r.url})")


def would_sync(plan: SyncPlan) -> None:
    parts = []
    if plan.push:
        sent = render.plural(plan.status.outbox_rows, "change", commas=True)
        parts.append(f"push {'the history and ' if plan.history else ''}{sent}")
    if plan.pull:
        n = plan.to_pull
        parts.append("pull what the server holds" if n is None
                     else f"pull {render.plural(n, 'change', commas=True)}")  # fmt: skip
    render.note(f"dry run: would {' and '.join(parts)} ({plan.status.url}); nothing was changed")


def status(s: Status) -> None:
    if not s.store_exists:
        render.note(f"no Kaja store at {s.store}")
    rows = [
        ["store", s.store],
        ["server", f"{s.url} ({s.url_source})" if s.url else "not configured"],
        ["this ledger", s.origin or "never synced"],
        ["outbox", render.plural(s.outbox_rows, "change", commas=True)
                   + (f", the oldest from {s.outbox_oldest}" if s.outbox_oldest else "")],
        ["history sent", "yes" if s.seeded else "no"],
        ["last push", s.last_push or "never"],
        ["last pull", s.last_pull or "never"],
        ["lease", _lease(s)],
    ]  # fmt: skip
    if s.importing_flag:
        rows.append(["import flag", "set (see `kaja doctor`)"])
    if s.server is not None:
        rows.append(["PostgreSQL", _server(s)])
        for o in s.server.origins:
            label = "shared runs, events, reviews" if o.origin == "*" else o.host or "?"
            mark = " (this machine)" if o.origin == s.origin else ""
            deleted = f", {o.deleted:,} deleted" if o.deleted else ""
            shown = render.plural(o.rows, "row", commas=True)
            rows.append([f"  {o.origin}", f"{shown}{deleted} · {label}{mark}"])
    render.table(
        [render.Col("", style="bold"), render.Col("")], rows,
        plain_rows=[[k.strip(), v] for k, v in rows],
    )  # fmt: skip


def _lease(s: Status) -> str:
    if s.lease is None:
        return "free"
    state = "expired" if s.lease_expired else "held"
    alive = {True: "running", False: "gone", None: "elsewhere"}[s.lease_alive]
    return f"{state} by pid {s.lease.pid} on {s.lease.host} ({alive}) until {s.lease.expires}"


def _server(s: Status) -> str:
    server = s.server
    assert server is not None
    if not server.answers:
        return f"does not answer: {server.error}"
    if server.ledger_id is None:
        return "answers; no shared ledger yet (the first `kaja sync` makes it)"
    text = (
        f"answers; {render.plural(server.rows, 'row', commas=True)}"
        f" from {render.plural(len(server.origins), 'origin')}"
    )
    text += f" in schema {server.schema}"
    if server.same_ledger is False:
        text += "; not the ledger this one synced with (the next sync starts over)"
    if server.to_pull is not None:
        text += f"; {render.plural(server.to_pull, 'change', commas=True)} to pull"
    return text
