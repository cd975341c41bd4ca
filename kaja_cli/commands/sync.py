"""`kaja sync`: share the usage ledger with other machines through PostgreSQL."""

from typing import TYPE_CHECKING, Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of

if TYPE_CHECKING:
    from kaja_cli.core.ledger.sync import Status, SyncResult

URL_HELP = "PostgreSQL URL (default: USAGE_POSTGRES_URL, then \\[usage] postgres_url)."
UrlOption = Annotated[str | None, typer.Option("--url", metavar="URL", help=URL_HELP)]
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_HELP)]

app = typer.Typer()


@app.callback(invoke_without_command=True)
def sync(ctx: typer.Context, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Share the usage ledger: push this machine's changes, then pull the others'.

    The ledger (runs, calls, tools, events, logs, media, feedback, reviews) meets
    the other machines' in one PostgreSQL table, andromeda_ledger. The first
    sync also sends the history from before sync was on. Changes wait in the
    outbox while the server is unreachable (exit 1); one sync runs at a time
    (exit 4 while another holds the ledger). An interrupted sync is resumed by
    the next one. Needs `pip install 'kaja-cli\\[postgres]'`.
    """
    # `kaja sync --url U --json status` means the same as `kaja sync status --url U --json`.
    ctx.meta["sync_url"], ctx.meta["sync_json"] = url, as_json
    if ctx.invoked_subcommand is None:
        _run(ctx, url, push=True, pull=True, as_json=as_json)


@app.command("push")
def push(ctx: typer.Context, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Send this machine's ledger changes (and, the first time, its history)."""
    _run(ctx, url, push=True, pull=False, as_json=as_json)


@app.command("pull")
def pull(ctx: typer.Context, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Import the changes the other machines sent since the last pull."""
    _run(ctx, url, push=False, pull=True, as_json=as_json)


def _run(ctx: typer.Context, url: str | None, *, push: bool, pull: bool, as_json: bool) -> None:
    from kaja_cli import render
    from kaja_cli.core.ledger import sync as core

    store = store_of(ctx)
    target = core.require_url(store, url or ctx.meta.get("sync_url"))
    result = core.sync(store, target, push=push, pull=pull, progress=render.progress)
    if as_json or ctx.meta.get("sync_json"):
        _result_json(result)
    else:
        _result_text(result)


def _result_json(r: "SyncResult") -> None:
    from kaja_cli import render

    push = r.push and {
        "history": r.push.history, "changes": r.push.changes, "written": r.push.written,
        "deleted": r.push.deleted, "ignored": r.push.ignored,
    }  # fmt: skip
    pull = r.pull and {
        "changes": r.pull.changes, "inserted": r.pull.inserted, "updated": r.pull.updated,
        "deleted": r.pull.deleted, "kept_local": r.pull.kept_local, "skipped": r.pull.skipped,
        "origins": sorted(r.pull.origins),
    }  # fmt: skip
    render.emit_json(
        {"store": r.store, "url": r.url, "origin": r.origin, "reseeded": r.reseeded,
         "push": push, "pull": pull}
    )  # fmt: skip


def _result_text(r: "SyncResult") -> None:
    from kaja_cli import render

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


@app.command("status")
def status(ctx: typer.Context, url: UrlOption = None, as_json: JsonOption = False) -> None:
    """Show the outbox, the last push and pull, the lease, and what the server holds.

    Reads the store read-only and never creates anything. The server is asked
    with a short timeout: one that does not answer is reported, not waited for.
    """
    from kaja_cli.core.ledger import sync as core

    store = store_of(ctx)
    found = core.find_url(store, url or ctx.meta.get("sync_url"))
    result = core.status(store, found)
    if as_json or ctx.meta.get("sync_json"):
        _status_json(result)
    else:
        _status_text(result)


def _status_json(s: "Status") -> None:
    from kaja_cli import render

    lease = s.lease and {
        "pid": s.lease.pid, "host": s.lease.host, "expires": s.lease.expires,
        "expired": s.lease_expired, "alive": s.lease_alive,
    }  # fmt: skip
    server = s.server and {
        "answers": s.server.answers, "error": s.server.error, "ledger_id": s.server.ledger_id,
        "same_ledger": s.server.same_ledger, "rows": s.server.rows, "to_pull": s.server.to_pull,
        "schema": s.server.schema,
        "origins": [
            {"origin": o.origin, "host": o.host, "rows": o.rows, "deleted": o.deleted,
             "last_sync": o.last_sync, "this_machine": o.origin == s.origin}
            for o in s.server.origins
        ],
    }  # fmt: skip
    render.emit_json(
        {
            "store": s.store, "store_exists": s.store_exists, "url": s.url,
            "url_source": s.url_source, "origin": s.origin, "seeded": s.seeded,
            "outbox": {"rows": s.outbox_rows, "oldest": s.outbox_oldest},
            "last_push": s.last_push, "last_pull": s.last_pull, "pull_cursor": s.pull_cursor,
            "lease": lease, "importing_flag": s.importing_flag, "server": server,
        }
    )  # fmt: skip


def _status_text(s: "Status") -> None:
    from kaja_cli import render

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
        ["lease", _lease_text(s)],
    ]  # fmt: skip
    if s.importing_flag:
        rows.append(["import flag", "set (see `kaja doctor`)"])
    if s.server is not None:
        rows.append(["PostgreSQL", _server_text(s)])
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


def _lease_text(s: "Status") -> str:
    if s.lease is None:
        return "free"
    state = "expired" if s.lease_expired else "held"
    alive = {True: "running", False: "gone", None: "elsewhere"}[s.lease_alive]
    return f"{state} by pid {s.lease.pid} on {s.lease.host} ({alive}) until {s.lease.expires}"


def _server_text(s: "Status") -> str:
    from kaja_cli import render

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
