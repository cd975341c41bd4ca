"""The agent's own work (issue 25): a background task `running` past its
`timeout_seconds`, an active schedule overdue by more than a day (is the
scheduler running?), artifacts whose file is gone.

Compared with the real clock (`ctx.now`): a store whose agent stopped days
ago truly has work overdue. Only ids, names, tools, times and paths are
printed: never a task's arguments, result or error, a schedule's prompt, or
anything of a trigger (which holds secrets).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from kaja_cli.core import clock
from kaja_cli.core.audit import artifacts as audit_artifacts
from kaja_cli.core.audit.common import columns, select
from kaja_cli.core.care.doctor.common import listed, safe
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.store.registry import Database
from kaja_cli.core.wording import plural

# An active schedule this late: the scheduler (part of the running agent) is not running.
SCHEDULE_OVERDUE = timedelta(days=1)


def _span(delta: timedelta) -> str:
    """A length of time as a person says it: "3 min", "5 h", "2 d 4 h"."""
    seconds = int(delta.total_seconds())
    if seconds < 3600:
        return f"{max(seconds // 60, 1)} min"
    if seconds < 86400:
        return f"{seconds // 3600} h"
    days, hours = divmod(seconds // 3600, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _shared(ctx: Context) -> sqlite3.Connection:
    conn = ctx.conn("shared")
    assert conn is not None  # needs_shared
    return conn


@check(
    "tasks",
    Group.AGENT,
    "background tasks still running past their timeout_seconds",
    needs_shared=True,
)
def check_tasks(ctx: Context) -> Check | None:
    conn = _shared(ctx)
    cols = columns(conn, "background_tasks").get("background_tasks")
    if not cols or "status" not in cols or "id" not in cols:
        return None  # an agent from before background tasks
    return safe(lambda: _tasks(ctx.now, conn, cols), "tasks", Group.AGENT, "background tasks")


def _tasks(now: datetime, conn: sqlite3.Connection, cols: list[str]) -> Check:
    names = ("id", "tool_name", "started_at", "updated_at", "timeout_seconds")
    rows = conn.execute(
        f"SELECT {select(cols, 't', names)} FROM background_tasks t WHERE t.status = 'running'"
        " ORDER BY t.id"
    ).fetchall()
    late: list[str] = []
    for task_id, tool, started, updated, timeout in rows:
        since = clock.parse_stored(started) or clock.parse_stored(updated)
        if since is None or not isinstance(timeout, int | float) or timeout <= 0:
            continue  # no start recorded, or no timeout: nothing to compare
        running = now - since
        # Compared as seconds: timedelta(seconds=1e308), or 2**63 - 1, would overflow.
        if running.total_seconds() > timeout:
            late.append(f"{task_id} ({tool or 'no tool'}): running since {started or updated},"
                        f" {_span(running)}; its timeout is {plural(int(timeout), 'second')}")  # fmt: skip
    if not late:
        return Check("tasks", Group.AGENT, OK,
                     f"no background task running past its timeout ({len(rows)} running)")  # fmt: skip
    return Check(
        "tasks", Group.AGENT, WARN,
        f"{plural(len(late), 'background task')} still running past {'its' if len(late) == 1 else 'their'} timeout",
        ["the agent that ran it stopped, or the task hangs; a restarted agent puts running"
         " tasks back in the queue", *listed(late)],
        fix="restart the agent; `kaja tasks --status running` lists them",
    )  # fmt: skip


@check(
    "schedules",
    Group.AGENT,
    "active schedules whose next run is more than a day overdue (is the scheduler running?)",
    needs_shared=True,
)
def check_schedules(ctx: Context) -> Check | None:
    conn = _shared(ctx)
    cols = columns(conn, "schedules").get("schedules")
    if not cols or not {"id", "status", "next_run_at"} <= set(cols):
        return None  # an agent from before schedules
    return safe(lambda: _schedules(ctx.now, conn, cols), "schedules", Group.AGENT, "schedules")


def _schedules(now: datetime, conn: sqlite3.Connection, cols: list[str]) -> Check:
    names = ("id", "name", "cron", "next_run_at")
    rows = conn.execute(
        f"SELECT {select(cols, 't', names)} FROM schedules t WHERE t.status = 'active'"
        " ORDER BY t.next_run_at, t.id"
    ).fetchall()
    late: list[str] = []
    for sched_id, name, cron, next_run in rows:
        when = clock.parse_stored(next_run)
        if when is not None and now - when > SCHEDULE_OVERDUE:
            label = f"{sched_id} ({name})" if name else str(sched_id)
            late.append(f"{label}: due {next_run}, {_span(now - when)} ago"
                        + (f" (cron {cron})" if cron else ""))  # fmt: skip
    if not late:
        return Check("schedules", Group.AGENT, OK,
                     f"no active schedule overdue ({len(rows)} active)")  # fmt: skip
    return Check(
        "schedules", Group.AGENT, WARN,
        f"{plural(len(late), 'active schedule')} overdue by more than a day: is the scheduler running?",
        ["the scheduler runs inside the agent and moves next_run_at on at every run", *listed(late)],
        fix="start the agent; `kaja schedules --due` lists what waits",
    )  # fmt: skip


@check(
    "artifacts",
    Group.AGENT,
    "artifacts whose file is gone (saved pages without a file are fine)",
)
def check_artifacts(ctx: Context) -> Check | None:
    host = next((f for f in ctx.databases() if Database.ARTIFACTS in f.holds), None)
    conn = ctx.conn(host.name) if host is not None else None
    if conn is None:
        return None  # cloud mode, or a file doctor reports on elsewhere
    have = columns(conn, "artifacts").get("artifacts")
    if not have or not {"id", "path"} <= set(have):
        return None

    def look() -> Check:
        with_file = conn.execute(
            "SELECT count(*) FROM artifacts WHERE path IS NOT NULL AND path <> ''"
        ).fetchone()[0]
        gone = audit_artifacts.missing_files(conn, ctx.paths.state_dir.path)
        if not gone:
            return Check("artifacts", Group.AGENT, OK,
                         f"every artifact's file is there ({plural(with_file, 'file')})")  # fmt: skip
        return Check(
            "artifacts", Group.AGENT, WARN,
            f"{len(gone)} of {plural(with_file, 'artifact file')} {'is' if len(gone) == 1 else 'are'} gone",
            ["the rows stay (the agent saved them); restore the files from a backup if you need them",
             *listed([f"{art_id}: {path}" for art_id, path in gone])],
            fix="`kaja artifacts --missing` lists them",
        )  # fmt: skip

    return safe(look, "artifacts", Group.AGENT, "artifacts")
