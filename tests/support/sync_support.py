"""Helpers for the ledger sync tests: machines, an agent's ledger writes, and
each machine's ledger in a form that can be compared across machines."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.ledger.sync import rows as sync_rows
from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Overrides
from tests.conftest import Kaja

KILLER = str(Path(__file__).with_name("agents") / "sync_killer.py")


def machine(root: Path, url: str) -> Kaja:
    """A machine: its own state dir, with `[usage] postgres_url` in its settings."""
    k = Kaja(root)
    k.config.parent.mkdir(parents=True, exist_ok=True)
    k.config.write_text(f"[usage]\npostgres_url = {json.dumps(url)}\n")
    return k


def store_of(k: Kaja) -> Store:
    return Store.locate(Overrides(state_dir=k.state, config=k.config), environ={})


def killed_sync(
    k: Kaja, step: str, *args: str, n: int = 1, batch: int = 0, exec_cmd: str | None = None
) -> subprocess.CompletedProcess:
    """`kaja ARGS` through the killer launcher: SIGKILLed the `n`th time it reaches `step`."""
    argv = [sys.executable, KILLER]
    if batch:
        argv += ["--batch", str(batch)]
    if exec_cmd:
        argv += ["--exec", exec_cmd]
    return subprocess.run(
        [*argv, step, str(n), "--", *args], env=k.env, capture_output=True, text=True, timeout=120
    )


# --- what an agent writes ---------------------------------------------------------------------
class Agent:
    """Random ledger writes of one machine: the core's write API and raw SQL, as the agent."""

    def __init__(self, k: Kaja, name: str, rng: random.Random) -> None:
        self.k, self.name, self.rng = k, name, rng
        self.turns = 0
        self.created_runs: set[str] = set()
        self.deleted_runs: set[str] = set()

    def work(self, turns: int) -> None:
        with Recorder(store_of(self.k), rng=random.Random(self.rng.random())) as rec:
            for _ in range(turns):
                self.turns += 1
                op = self.rng.choices(
                    ["run", "end", "review", "update", "prune", "drop_run", "feedback"],
                    weights=[6, 3, 2, 2, 1, 1, 1],
                )[0]
                getattr(self, f"_{op}")(rec)

    # The ledger rows a turn of the agent writes, through the write API.
    def _run(self, rec: Recorder) -> None:
        run = rec.start_run(prompt=f"{self.name} turn {self.turns}",
                            run_id=f"run_{self.name}_{self.turns}", host=self.name)  # fmt: skip
        self.created_runs.add(run)
        with rec.transaction():
            for i in range(self.rng.randint(1, 3)):
                rec.add_call(run, model=self.rng.choice(["gpt-5", "claude", "llama"]),
                             prompt_tokens=self.rng.randint(1, 5000), completion_tokens=i,
                             ok=self.rng.choice([1, 1, 0]), engine="e", duration_ms=10 * i)  # fmt: skip
                rec.add_run_event(run, "ActivityTaskScheduled", {"i": i})
            if self.rng.random() < 0.7:
                rec.add_tool(run, self.rng.choice(["shell", "web"]),
                             self.rng.choice(["ok", "error", "denied"]), duration_ms=5)  # fmt: skip
            if self.rng.random() < 0.5:
                rec.insert("logs", at="2026-11-01T00:00:00.000Z", level="info",
                           message=f"log {self.turns} — ünïcode", run_id=run)  # fmt: skip
            if self.rng.random() < 0.3:
                rec.insert("media", run_id=run, kind="tts", engine="piper", chars=12, cold=0)

    def _runs(self, rec: Recorder) -> list[str]:
        """A few recent runs: the machines keep changing the same ones (conflicts)."""
        rows = (
            rec.conn()
            .execute("SELECT id FROM runs ORDER BY started_at DESC, id LIMIT 4")
            .fetchall()
        )
        return sorted(r[0] for r in rows)

    def _own(self, rec: Recorder, table: str) -> list[int]:
        rows = (
            rec.conn()
            .execute(
                f"SELECT id FROM {table} WHERE CAST(id AS TEXT) NOT IN"
                " (SELECT local_id FROM sync_map WHERE tbl = ?) ORDER BY id",
                (table,),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def _end(self, rec: Recorder) -> None:  # any run, this machine's or another's
        runs = self._runs(rec)
        if runs:
            run = self.rng.choice(runs)
            rec.end_run(run, self.rng.choice(["completed", "failed"]), result=f"by {self.name}")

    def _review(self, rec: Recorder) -> None:  # raw SQL, as another program would
        runs = self._runs(rec)
        if runs:
            with rec.transaction() as conn:
                conn.execute(
                    "INSERT INTO reviews (run_id, status, reason, note, updated_at)"
                    " VALUES (?, 'needs-review', 'manual', ?, '2026-11-02T00:00:00.000Z')"
                    " ON CONFLICT (run_id) DO UPDATE SET note = excluded.note",
                    (self.rng.choice(runs), f"{self.name} {self.turns}"),
                )

    def _update(self, rec: Recorder) -> None:
        own = self._own(rec, "calls")
        if own:
            with rec.transaction() as conn:
                conn.execute(
                    "UPDATE calls SET completion_tokens = ? WHERE id = ?",
                    (self.rng.randint(1, 99), self.rng.choice(own)),
                )

    def _prune(self, rec: Recorder) -> None:  # the agent's log retention
        own = self._own(rec, "logs")
        if own:
            with rec.transaction() as conn:
                conn.execute("DELETE FROM logs WHERE id = ?", (self.rng.choice(own),))

    def _drop_run(self, rec: Recorder) -> None:
        runs = sorted(self.created_runs - self.deleted_runs)
        if runs:
            run = self.rng.choice(runs)
            with rec.transaction() as conn:
                conn.execute("DELETE FROM runs WHERE id = ?", (run,))
            self.deleted_runs.add(run)

    def _feedback(self, rec: Recorder) -> None:
        runs = self._runs(rec)
        if runs:
            rec.insert("feedback", run_id=self.rng.choice(runs), type="thumbs",
                       value_num=self.rng.choice([1.0, -1.0, 0.5]), at="2026-11-03T00:00:00.000Z")  # fmt: skip


# --- a ledger, comparable across machines ------------------------------------------------------
def ledger(db: Path) -> dict[tuple, dict]:
    """Every synced row of one machine, keyed as the shared ledger keys it:
    (table, origin, key) with imported ids resolved through sync_map. A key
    met twice (a duplicate) fails the test."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        state = dict(conn.execute("SELECT name, value FROM sync_state").fetchall())
        origin = state.get("origin")
        epochs = json.loads(state.get("epochs") or "{}")
        imported = {
            (r["tbl"], r["local_id"]): (r["origin"], r["key"])
            for r in conn.execute("SELECT origin, tbl, key, local_id FROM sync_map")
        }
        out: dict[tuple, dict] = {}
        for table in sync_rows.TABLES:
            for row in conn.execute(f"SELECT * FROM {table}"):
                values = dict(row)
                if table in sync_rows.OWNED:
                    local = str(values.pop("id"))
                    who = imported.get((table, local)) or (
                        origin,
                        sync_rows.server_key(table, local, epochs),
                    )
                else:
                    if table == "events":
                        values.pop("id")
                        key = json.dumps([values["run_id"], values["event_id"]],
                                         separators=(",", ":"), ensure_ascii=False)  # fmt: skip
                    else:
                        key = str(values[sync_rows.LOCAL_ID[table]])
                    who = ("*", key)
                ident = (table, *who)
                assert ident not in out, f"{db}: {ident} twice"
                out[ident] = values
        return out
    finally:
        conn.close()


def own_rows(db: Path) -> dict[tuple, dict]:
    """The integer-id rows this machine made (its origin's, authoritative), by
    (table, key): before its first sync too, when it has no origin yet."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT value FROM sync_state WHERE name = 'origin'").fetchone()
    finally:
        conn.close()
    origin = row[0] if row else None
    return {
        (table, key): values
        for (table, who, key), values in ledger(db).items()
        if table in sync_rows.OWNED and who == origin
    }


def server_ledger(pg) -> dict[tuple, dict]:
    """The live rows on the server, keyed like `ledger` (the row JSON as values)."""
    rows = pg.query("SELECT tbl, origin, key, row FROM andromeda_ledger WHERE row IS NOT NULL")
    return {(t, o, k): r for t, o, k, r in rows}


def sql(db: Path, *statements: str | tuple[str, tuple]) -> None:
    """Run statements in one transaction, as another program would, and close:
    an open connection would hold locks an in-process kaja cannot see."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            for statement in statements:
                text, params = statement if isinstance(statement, tuple) else (statement, ())
                conn.execute(text, params)
    finally:
        conn.close()


def rows(db: Path, query: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def outbox(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM sync_outbox").fetchone()[0]
    finally:
        conn.close()
