"""`kaja demo`: a realistic store in every table, written through the write API."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
from contextlib import closing

import pytest

from tests.unit.test_schema import SEED_COLUMNS, SIDE_COLUMNS

SECRETS = ("password_hash", "salt", "token_hash", "secret")


def rows(db, sql, *args):
    with closing(sqlite3.connect(db)) as c, c:
        return c.execute(sql, args).fetchall()


def test_demo_fills_every_table(demo_store):
    # kaja_archived is the user's mark (`kaja sessions archive`), not something the agent writes
    for table in (t for t in SEED_COLUMNS if t != "kaja_archived"):
        n = rows(demo_store.db, f'SELECT COUNT(*) FROM "{table}"')[0][0]
        assert n > 0, f"{table} is empty"
    for name, tables in SIDE_COLUMNS.items():
        for table in tables:
            assert rows(demo_store.state / name, f"SELECT COUNT(*) FROM {table}")[0][0] > 0, table
    # the FTS4 index holds every message (external content, kept by triggers)
    assert (
        rows(
            demo_store.db,
            "SELECT COUNT(*) FROM conversation_text WHERE conversation_text MATCH 'brûlée'",
        )[0][0]
        >= 1
    )


def test_demo_is_realistic(demo_store):
    db = demo_store.db
    owners = {r[0] for r in rows(db, "SELECT DISTINCT owner FROM sessions")}
    assert owners == {None, "telegram:482913", "telegram:771204", "widget:ab12"}
    assert {r[0] for r in rows(db, "SELECT DISTINCT status FROM tool_calls")} == {
        "ok",
        "error",
        "declined",
        "skipped",
        None,
    }
    assert {r[0] for r in rows(db, "SELECT DISTINCT approval FROM tool_calls")} == {
        None,
        "approved",
        "declined",
    }
    assert rows(db, "SELECT COUNT(*) FROM tool_calls WHERE resultSummary IS NOT NULL")[0][0] >= 2
    assert {r[0] for r in rows(db, "SELECT DISTINCT kind FROM model_calls")} == {
        "compact",
        "condense",
        "summarize",
    }
    pending = rows(
        db, "SELECT pendingCallId, pendingKind FROM sessions WHERE pendingCallId IS NOT NULL"
    )
    assert len(pending) == 1 and pending[0][1] == "approval"
    assert rows(db, "SELECT COUNT(*) FROM tool_calls WHERE callId = ?", pending[0][0])[0][0] == 1
    types = {r[0] for r in rows(db, "SELECT DISTINCT type FROM session_events")}
    assert {
        "user",
        "assistant",
        "reasoning",
        "tool_start",
        "tool_end",
        "notice",
        "error",
        "image",
    } <= types
    # summaries point at the seq of the first message they don't cover
    for sid, summary_from in rows(db, "SELECT sessionId, summaryFrom FROM session_summaries"):
        assert (
            rows(
                db,
                "SELECT COUNT(*) FROM messages WHERE sessionId = ? AND seq = ?",
                sid,
                summary_from,
            )[0][0]
            == 1
        )
    assert rows(db, "SELECT COUNT(*) FROM runs WHERE parent_id IS NOT NULL")[0][0] >= 1
    assert rows(db, "SELECT COUNT(*) FROM notes WHERE owner = ''")[0][0] >= 1  # '' is the terminal
    assert rows(db, "SELECT COUNT(*) FROM dataset_versions WHERE owner = ''")[0][0] >= 1
    titles = [r[0] for r in rows(db, "SELECT title FROM sessions")]
    assert "Crème brûlée for eight" in titles and "Train from Zürich to Genève" in titles


def test_images_are_real_pngs_named_by_sha256_once_per_session(demo_store):
    images = demo_store.state / "files/images"
    files = sorted(images.rglob("*.png"))
    assert len(files) == 3
    sessions = {r[0] for r in rows(demo_store.db, "SELECT id FROM sessions")}
    for f in files:
        data = f.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert f.stem == hashlib.sha256(data).hexdigest()
        assert f.parent.name in sessions
    referenced = set()
    for sid, parts in rows(
        demo_store.db, "SELECT sessionId, parts FROM messages WHERE parts IS NOT NULL"
    ):
        for part in json.loads(parts):
            referenced.add(images / sid / f"{part['sha256']}.png")
    assert referenced == set(files)


def test_files_are_private(demo_store):
    assert stat.S_IMODE(demo_store.state.stat().st_mode) == 0o700
    for p in demo_store.state.rglob("*"):
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), p


def test_folders_and_files_are_private_even_with_a_loose_umask(kaja):
    from tests.conftest import KAJA

    deep = kaja.root / "a" / "b" / "state"
    p = subprocess.run(
        ["bash", "-c", f'umask 000; exec "{KAJA}" --state-dir "{deep}" demo'], env=kaja.env
    )
    assert p.returncode == 0
    for d in (kaja.root / "a", kaja.root / "a/b", deep, deep / "files", deep / "files/images"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in deep.rglob("*"):
        if f.is_file():
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_demo_refuses_an_existing_store_and_changes_nothing(demo_store):
    before = {p: p.read_bytes() for p in demo_store.state.rglob("*") if p.is_file()}
    r = demo_store("demo")
    assert r.code == 5
    assert r.out == ""
    assert r.err.startswith("kaja: a Kaja store already exists") and r.err.count("\n") == 1
    assert {p: p.read_bytes() for p in demo_store.state.rglob("*") if p.is_file()} == before


def test_demo_refuses_a_lone_side_database(kaja):
    kaja.state.mkdir(parents=True)
    (kaja.state / "cache.db").write_bytes(b"")
    assert kaja("demo").code == 5


def _dump(state):
    out = {}
    for name in ("kaja.db", "cache.db", "db-stats.db"):
        with closing(sqlite3.connect(state / name)) as c, c:
            out[name] = list(c.iterdump())
    return out


def test_same_seed_and_time_give_the_same_store(kaja, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        assert (
            kaja("--state-dir", str(d), "demo", "--seed", "7", "--now", "2026-05-01T10:00:00Z").code
            == 0
        )
    da, db_ = _dump(a), _dump(b)
    # paths differ by folder name only
    norm = lambda dump, d: {k: [s.replace(str(d), "<state>") for s in v] for k, v in dump.items()}  # noqa: E731
    assert norm(da, a) == norm(db_, b)
    assert (
        kaja(
            "--state-dir",
            str(tmp_path / "c"),
            "demo",
            "--seed",
            "8",
            "--now",
            "2026-05-01T10:00:00Z",
        ).code
        == 0
    )
    assert norm(_dump(tmp_path / "c"), tmp_path / "c") != norm(da, a)


def _ids(k):
    """Every session's full id and every account's id, as kaja lists them."""
    sessions = k("sessions", "--all-owners", "-n", "0", "--json")
    accounts = k("accounts", "--json")
    assert sessions.code == 0 and accounts.code == 0, (sessions, accounts)
    return (
        sorted((s["id"], s["title"]) for s in json.loads(sessions.out)["sessions"]),
        sorted((a["id"], a["username"]) for a in json.loads(accounts.out)["accounts"]),
    )


def test_the_demo_writes_the_same_ids_whenever_it_runs(demo_store, tmp_path):
    """The README's examples (`kaja resume 01a226e4`) work on a plain `kaja demo`:
    its ids come from the seed (default 1, the tests' store) alone, not from the clock;
    the rows' times do follow --now."""
    from tests.conftest import Kaja

    expected = _ids(demo_store)  # --seed 1 --now DEMO_NOW
    plain = Kaja(tmp_path / "plain")
    assert plain("demo").code == 0
    assert _ids(plain) == expected
    assert plain("resume", "01a226e4", "--tail", "1").code == 0
    earlier = Kaja(tmp_path / "earlier")
    assert earlier("demo", "--seed", "1", "--now", "2025-03-01T08:00:00Z").code == 0
    assert _ids(earlier) == expected
    latest = json.loads(earlier("sessions", "-n", "1", "--json").out)["sessions"][0]
    assert latest["id"].startswith("01a226e4") and latest["updatedAt"].startswith("2025-0")
    other = Kaja(tmp_path / "other")
    assert other("demo", "--seed", "2").code == 0
    assert _ids(other)[0] != expected[0]  # another seed, other ids


def test_scaled_up_store_has_the_counts_asked_for(kaja):
    r = kaja("demo", "--sessions", "40", "--messages", "3000", "--json")
    assert r.code == 0, r
    report = json.loads(r.out)
    assert report["sessions"] == 40 and report["messages"] == 3000
    assert rows(kaja.db, "SELECT COUNT(*) FROM sessions")[0][0] == 40
    assert rows(kaja.db, "SELECT COUNT(*) FROM messages")[0][0] == 3000
    assert rows(kaja.db, "SELECT COUNT(*) FROM calls")[0][0] > 0
    # the search index is complete
    assert rows(kaja.db, "SELECT COUNT(*) FROM conversation_text_docsize")[0][0] == 3000


# Columns that name a time to come: an expiry, the next run of a schedule.
FUTURE_COLUMNS = {"expires_at", "next_run_at", "next_check_at"}
ISO = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T*"


def _rows_after(state, now_iso: str, now_epoch: float) -> list[str]:
    """Every (file, table, column) holding a time after `now`: ISO 8601 text,
    or a Unix time (seconds or ms) in a column named like a time."""
    late = []
    for db in sorted(state.glob("*.db")):
        with closing(sqlite3.connect(db)) as c, c:
            tables = [
                r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for table in tables:
                try:
                    cols = [r[1] for r in c.execute(f'PRAGMA table_info("{table}")')]
                except sqlite3.DatabaseError:  # a virtual table of a module not loaded
                    continue
                for col in (c for c in cols if c not in FUTURE_COLUMNS):
                    q = f'SELECT count(*) FROM "{table}" WHERE '
                    text = c.execute(q + f'"{col}" GLOB ? AND "{col}" > ?', (ISO, now_iso))
                    n = text.fetchone()[0]
                    if col.lower().endswith(("_at", "at")):
                        n += c.execute(
                            q + f"typeof(\"{col}\") IN ('integer', 'real')"
                            f' AND ("{col}" BETWEEN ?1 AND 1e11 OR "{col}" > ?1 * 1000)',
                            (now_epoch,),
                        ).fetchone()[0]
                    if n:
                        late.append(f"{db.name} {table}.{col}: {n} rows")
    return late


def test_a_scaled_up_store_dates_nothing_after_now(kaja):
    """Issue 29: the generated sessions ended up to 16 h after --now (a long
    session started shortly before it ran on), so "most recent" began in the
    future. Every time the store holds is at or before --now."""
    from datetime import datetime

    now = "2026-06-01T12:00:00.000Z"
    r = kaja("demo", "--seed", "14", "--sessions", "16", "--messages", "8000", "--now", now)
    assert r.code == 0, r
    epoch = datetime.fromisoformat(now.replace("Z", "+00:00")).timestamp()
    assert _rows_after(kaja.state, now, epoch) == []
    assert causality_broken(kaja.db) == {}  # the generated sessions' runs too
    latest = json.loads(kaja("sessions", "-n", "1", "--all-owners", "--json").out)["sessions"][0]
    assert latest["updatedAt"] <= now


# What the seed's worked example implies about time (one chat turn, row by row):
# a subagent runs inside the run that started it, everything tagged with a run
# happens while it runs, a run belongs to its conversation's time, a session
# was last updated by its last message. Each query finds the rows that break it.
_STAMP = "strftime('%Y-%m-%dT%H:%M:%fZ', {at}, '+' || (ifnull({ms}, 0) / 1000.0) || ' seconds')"
CAUSALITY = {
    "a subagent outside its parent's time": """
        SELECT k.id, k.started_at, k.ended_at, p.started_at, p.ended_at
        FROM runs k JOIN runs p ON p.id = k.parent_id
        WHERE k.started_at < p.started_at OR k.ended_at > p.ended_at
           OR (k.ended_at IS NULL AND p.ended_at IS NOT NULL)""",
    "a run that ends before it starts": "SELECT id FROM runs WHERE ended_at < started_at",
    "a model call outside its run": """
        SELECT c.id, c.run_id, c.at, r.started_at, r.ended_at FROM calls c JOIN runs r ON r.id = c.run_id
        WHERE c.at < r.started_at OR c.at > ifnull(r.ended_at, '9')""",
    "a tool call outside its run": f"""
        SELECT t.id, t.run_id, t.at, t.duration_ms, r.started_at, r.ended_at
        FROM tools t JOIN runs r ON r.id = t.run_id
        WHERE t.at < r.started_at OR {_STAMP.format(at="t.at", ms="t.duration_ms")} > ifnull(r.ended_at, '9')""",
    "an event outside its run": """
        SELECT e.run_id, e.type, e.at FROM events e JOIN runs r ON r.id = e.run_id
        WHERE e.at < r.started_at OR e.at > ifnull(r.ended_at, '9')""",
    "a log or media job outside its run": """
        SELECT x.at, r.id FROM (SELECT run_id, at FROM logs UNION ALL SELECT run_id, at FROM media) x
        JOIN runs r ON r.id = x.run_id WHERE x.at < r.started_at OR x.at > ifnull(r.ended_at, '9')""",
    "a rating or review before its run ended": """
        SELECT x.at, r.id FROM (SELECT run_id, at FROM feedback UNION ALL SELECT run_id, flagged_at FROM reviews) x
        JOIN runs r ON r.id = x.run_id WHERE x.at < ifnull(r.ended_at, r.started_at)""",
    "a run outside its conversation": """
        SELECT r.id, r.started_at, s."createdAt", s."updatedAt" FROM runs r JOIN sessions s ON s.id = r.thread_id
        WHERE r.started_at < s."createdAt" OR r.started_at > s."updatedAt"
    """,
    "a message outside its session": """
        SELECT m.id FROM messages m JOIN sessions s ON s.id = m."sessionId"
        WHERE m."createdAt" < s."createdAt" OR m."createdAt" > s."updatedAt"
    """,
    "a session not updated by its last message": """
        SELECT s.id FROM sessions s JOIN messages m ON m."sessionId" = s.id
        GROUP BY s.id HAVING max(m."createdAt") <> s."updatedAt"
    """,
    "a tool's result before the call was done": f"""
        SELECT t.id FROM tool_calls t JOIN messages a ON a.id = t."messageId"
        JOIN messages r ON r.id = t."resultMessageId"
        WHERE r."createdAt" < {_STAMP.format(at='a."createdAt"', ms='t."durationMs"')}""",
}


def causality_broken(db) -> dict[str, list]:
    """The rows of the demo store that break CAUSALITY, by what they break."""
    found = {what: rows(db, sql) for what, sql in CAUSALITY.items()}
    return {what: hits[:3] for what, hits in found.items() if hits}


def test_the_demo_keeps_time_in_order(shared_demo_store):
    """Issue 39: the seed's subagent run_91c0 started 12 minutes after its
    30-second parent run_7f3a had ended; a turn's run ended seconds after its
    message, before the calls and tools it made. Every child run lies inside
    its parent's time, and every row tagged with a run inside that run."""
    db = shared_demo_store.db
    assert rows(db, "SELECT count(*) FROM runs WHERE parent_id IS NOT NULL")[0][0] >= 1
    assert causality_broken(db) == {}
    # the seed's example: the subagent runs while the turn's spawn_subagent call does
    ((child_start, child_end),) = rows(
        db, "SELECT started_at, ended_at FROM runs WHERE id = 'run_91c0'"
    )
    ((spawned, took),) = rows(
        db,
        "SELECT at, duration_ms FROM tools WHERE run_id = 'run_7f3a' AND tool = 'spawn_subagent'",
    )
    assert child_start == spawned and took == 9100
    assert rows(db, f"SELECT {_STAMP.format(at='?', ms='?')}", spawned, took)[0][0] >= child_end


def test_a_store_of_one_session_says_so_in_the_singular(kaja):
    r = kaja("demo", "--sessions", "1", "--messages", "1", "--seed", "1")
    assert r.code == 0, r
    assert r.err.startswith("kaja: wrote 1 session, ")
    assert f" for 1 owner into {kaja.db}\n" in r.err


def test_bad_options(kaja):
    assert kaja("demo", "--sessions", "0").code == 2
    r = kaja("demo", "--now", "yesterday-ish")
    assert r.code == 2 and "--now" in r.err
    assert not kaja.state.exists()


@pytest.mark.process  # the test keeps a connection to the store open across the runs
def test_no_secret_in_demo_output(kaja):
    r = kaja("demo", "--json")
    assert r.code == 0
    with closing(sqlite3.connect(kaja.state / "web-auth.db")) as c, c:
        secrets = [v for row in c.execute("SELECT password_hash, salt FROM web_users") for v in row]
        secrets += [r[0] for r in c.execute("SELECT token_hash FROM web_sessions")]
    with closing(sqlite3.connect(kaja.db)) as c, c:
        secrets += [r[0] for r in c.execute("SELECT secret FROM triggers")]
    for out in (r.out + r.err, kaja("config", "paths").out, kaja("config", "paths", "--json").out):
        for s in secrets:
            assert s not in out
    # the web password is a real scrypt hash, never the password
    with closing(sqlite3.connect(kaja.state / "web-auth.db")) as c, c:
        h, salt = c.execute("SELECT password_hash, salt FROM web_users").fetchone()
    assert len(bytes.fromhex(h)) == 32 and len(bytes.fromhex(salt)) == 16


@pytest.mark.needs("sqlite3")
def test_the_seeds_example_queries_run_unmodified_and_return_rows(demo_store):
    """andromeda-database.txt, "Querying it", all but the FTS5 one (kaja's index is FTS4)."""
    queries = [
        """SELECT r.id, r.agent, r.source, r.status, r.started_at,
(SELECT COUNT(*) FROM calls c WHERE c.run_id = r.id) AS model_calls,
(SELECT COALESCE(SUM(c.prompt_tokens + c.completion_tokens), 0) FROM calls c WHERE c.run_id = r.id) AS tokens,
(SELECT COUNT(*) FROM tools t WHERE t.run_id = r.id) AS tool_calls
FROM runs r
WHERE r.parent_id IS NULL
ORDER BY r.started_at DESC
LIMIT 5;""",
        """SELECT child.id, child.agent, child.status
FROM runs child
WHERE child.parent_id = 'run_7f3a';""",
        """SELECT tool, outcome, COUNT(*) AS calls, ROUND(AVG(duration_ms)) AS avg_ms
FROM tools
GROUP BY tool, outcome
ORDER BY calls DESC;""",
        """SELECT rec.id, rec.task, rec.uses, rec.wins, rec.losses, e.trace_run_id
FROM experience_recipes rec
JOIN experience_runs e ON e.learned_recipe = rec.id;""",
        """SELECT id, name, cron, next_run_at
FROM schedules
WHERE status = 'active' AND next_run_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
ORDER BY next_run_at;""",
    ]
    for sql in queries:
        p = subprocess.run(
            ["sqlite3", "-readonly", str(demo_store.db), sql], capture_output=True, text=True
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip(), sql
    child = subprocess.run(
        ["sqlite3", "-readonly", str(demo_store.db), queries[1]], capture_output=True, text=True
    )
    assert child.stdout.strip() == "run_91c0|researcher|completed"


def test_the_write_api_makes_uuid7_ids_that_sort_by_creation(demo_store):
    ids = [r[0] for r in rows(demo_store.db, "SELECT id FROM sessions ORDER BY createdAt")]
    assert ids == sorted(ids)
    assert all(i[14] == "7" for i in ids)  # the version nibble


def test_python_dash_m_runs_the_same_program(kaja):
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "kaja_cli", "--version"],
        capture_output=True,
        text=True,
        env=kaja.env,
    )
    assert p.returncode == 0 and p.stdout.startswith("kaja ")
    assert os.environ.get("KAJA_DEBUG") is None


def test_a_terminal_sees_a_progress_bar(kaja):
    """On a terminal (stderr is a tty) the scaled-up demo draws a progress bar."""
    import pty

    from tests.conftest import KAJA

    out = bytearray()

    def read(fd):
        data = os.read(fd, 4096)
        out.extend(data)
        return data

    env = dict(kaja.env, TERM="xterm", COLUMNS="100")
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        status = pty.spawn([KAJA, "demo", "--sessions", "30", "--messages", "6000"], read)
    finally:
        os.environ.clear()
        os.environ.update(old)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0
    assert "writing the demo store" in text
    assert "6000" in text  # the bar counts messages: m/6000
