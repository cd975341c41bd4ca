"""The audit views (issue 25): `kaja runs`, `runs show`, `reviews`, `reviews done`,
`tasks`, `schedules`, `triggers`, `learning`, `learning fixes`, `artifacts`,
`artifacts show`, through the real command."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from contextlib import closing

import pytest

from kaja_cli.core.store import Store
from kaja_cli.core.store.paths import Overrides

SEED_TURNS = """
SELECT r.id, r.agent, r.source, r.status, r.started_at,
  (SELECT COUNT(*) FROM calls c WHERE c.run_id = r.id) AS model_calls,
  (SELECT COALESCE(SUM(c.prompt_tokens + c.completion_tokens), 0) FROM calls c WHERE c.run_id = r.id) AS tokens,
  (SELECT COUNT(*) FROM tools t WHERE t.run_id = r.id) AS tool_calls
FROM runs r
WHERE r.parent_id IS NULL
ORDER BY r.started_at DESC
LIMIT 5;
"""
SEED_SUBAGENTS = (
    "SELECT child.id, child.agent, child.status FROM runs child WHERE child.parent_id = 'run_7f3a';"
)
SEED_RECIPES = """
SELECT rec.id, rec.task, rec.uses, rec.wins, rec.losses, e.trace_run_id
FROM experience_recipes rec
JOIN experience_runs e ON e.learned_recipe = rec.id;
"""
SEED_DUE = """
SELECT id, name, cron, next_run_at
FROM schedules
WHERE status = 'active' AND next_run_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
ORDER BY next_run_at;
"""


def sqlite3_json(db, sql: str) -> list[dict]:
    """The seed's query as a person runs it: the sqlite3 shell, read-only, JSON out."""
    out = subprocess.run(["sqlite3", "-readonly", "-json", str(db), sql],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return json.loads(out) if out.strip() else []


def js(result) -> dict:
    assert result.code == 0, result
    return json.loads(result.out)


# --- the seed's worked example, written with raw SQL ------------------------------------------
WORKED = """
CREATE TABLE runs (id TEXT PRIMARY KEY, parent_id, agent, source, thread_id, prompt, started_at,
  ended_at, status, error, result, pid, host);
CREATE TABLE calls (id INTEGER PRIMARY KEY, run_id, at, engine, model, role, source, kind,
  prompt_tokens, completion_tokens, cached_tokens, cache_source, duration_ms, gen_ms, prompt_ms,
  ttft_ms, load_ms, tool_calls, think, purpose, ok, error);
CREATE TABLE tools (id INTEGER PRIMARY KEY, run_id, at, tool, outcome, duration_ms, arguments,
  result_chars, preview, error);
CREATE TABLE events (id INTEGER PRIMARY KEY, run_id, event_id, at, type, attributes,
  UNIQUE (run_id, event_id));
CREATE TABLE feedback (id INTEGER PRIMARY KEY, run_id, span_id, at, agent, source, type,
  value_num, value_text, comment, user_id, tags);
CREATE TABLE artifacts (id TEXT PRIMARY KEY, kind, source, title, text, fingerprint, path, created_at);
INSERT INTO runs (id, parent_id, agent, source, thread_id, prompt, started_at, ended_at, status, result)
  VALUES ('run_7f3a', NULL, 'andromeda', 'interactive', 'tui-2026-10-15',
          'Summarize the open PRs and screenshot the PR list', '2026-10-15T09:00:00Z',
          '2026-10-15T09:00:14Z', 'completed', 'There are 3 open PRs…');
INSERT INTO calls (id, run_id, engine, model, prompt_tokens, completion_tokens, ttft_ms, tool_calls)
  VALUES (1201, 'run_7f3a', 'ollama', 'llama3.2:3b', 2140, 96, 410, '["spawn_subagent"]');
INSERT INTO events (run_id, event_id, type, attributes)
  VALUES ('run_7f3a', 2, 'ActivityTaskScheduled', '{}'), ('run_7f3a', 1, 'WorkflowExecutionStarted', '{}');
INSERT INTO runs (id, parent_id, agent, status, started_at)
  VALUES ('run_91c0', 'run_7f3a', 'researcher', 'completed', '2026-10-15T09:00:02Z');
INSERT INTO tools (run_id, tool, outcome, duration_ms, result_chars)
  VALUES ('run_91c0', 'git_log', 'ok', 84, 3120);
INSERT INTO tools (run_id, tool, outcome, duration_ms, arguments)
  VALUES ('run_7f3a', 'browser_screenshot', 'ok', 920, '{"url":"[redacted]"}');
INSERT INTO artifacts (id, kind, source, path) VALUES ('a1b2c3', 'screenshot', 'browser_screenshot', '/nonexistent/pr-list.png');
INSERT INTO feedback (run_id, type, value_num, comment) VALUES ('run_7f3a', 'thumbs', 1, 'great');
"""


@pytest.fixture
def worked(kaja):
    kaja.state.mkdir(parents=True)
    conn = sqlite3.connect(kaja.db)
    conn.executescript(WORKED)
    conn.close()
    return kaja


def test_runs_lists_the_worked_example_with_the_seed_figures_and_the_subtree(worked):
    doc = js(worked("runs", "--json"))
    assert [r["id"] for r in doc["runs"]] == ["run_7f3a"]  # top-level only
    run = doc["runs"][0]
    assert (run["model_calls"], run["tokens"], run["tool_calls"]) == (1, 2236, 1)
    assert (
        run["subagents"],
        run["total_model_calls"],
        run["total_tokens"],
        run["total_tool_calls"],
    ) == (1, 1, 2236, 2)
    assert run["duration_ms"] == 14000
    every = js(worked("runs", "--all", "--json"))
    assert [r["id"] for r in every["runs"]] == ["run_91c0", "run_7f3a"]
    piped = worked("runs")
    assert piped.code == 0 and piped.out.startswith("run_7f3a\t2026-10-15T09:00:00Z\tandromeda\t")


def test_a_long_chain_of_subagents_lists_each_runs_subtree(worked):
    """`runs --all -n 0` of a chain of 400 subagents below the worked example's
    run: each run's subagents are those below it, its totals theirs and its
    own, read once each (one tree from every listed run read the chain
    80,000 times)."""
    with closing(sqlite3.connect(worked.db)) as conn, conn:
        conn.execute("CREATE INDEX runs_parent ON runs (parent_id)")
        conn.executemany(
            "INSERT INTO runs (id, parent_id, agent, status, started_at)"
            " VALUES (?, ?, 'helper', 'completed', ?)",
            [(f"chain_{i:03d}", f"chain_{i - 1:03d}" if i else "run_91c0",
              f"2026-10-15T09:01:{i % 60:02d}Z") for i in range(400)],
        )  # fmt: skip
        conn.executemany("INSERT INTO tools (run_id, tool, outcome) VALUES (?, 'grep', 'ok')",
                         [(f"chain_{i:03d}",) for i in range(400)])  # fmt: skip
    doc = js(worked("runs", "--all", "-n", "0", "--json"))
    got = {r["id"]: (r["subagents"], r["total_tool_calls"]) for r in doc["runs"]}
    assert len(got) == 402
    assert got["run_7f3a"] == (401, 2 + 400) and got["run_91c0"] == (400, 1 + 400)
    assert all(got[f"chain_{i:03d}"] == (399 - i, 400 - i) for i in range(400))


def test_runs_show_is_the_tree_of_the_worked_example(worked):
    tree = js(worked("runs", "show", "run_7f", "--json"))
    assert tree["id"] == "run_7f3a" and tree["result"] == "There are 3 open PRs…"
    assert [c["id"] for c in tree["calls"]] == [1201] and tree["calls"][0]["ttft_ms"] == 410
    assert [t["tool"] for t in tree["tools"]] == ["browser_screenshot"]
    assert tree["tools"][0]["arguments"] == '{"url":"[redacted]"}'  # as stored
    assert [e["event_id"] for e in tree["events"]] == [1, 2]  # in event_id order
    assert tree["feedback"][0]["comment"] == "great" and tree["review"] is None
    (child,) = tree["subagents"]
    assert child["id"] == "run_91c0" and child["tools"][0]["result_chars"] == 3120
    text = worked("runs", "show", "run_7f3a")
    assert text.code == 0
    lines = text.out.splitlines()
    assert lines[0].startswith("run_7f3a  completed · andromeda · interactive")
    assert any("model llama3.2:3b  2,236 tokens" in ln for ln in lines)
    assert lines[-1].endswith("tool git_log  ok · 84 ms · 3,120 chars")
    assert any(ln.startswith("└── run_91c0") for ln in lines)


def test_runs_show_unknown_and_ambiguous_ids(worked):
    r = worked("runs", "show", "run_nope")
    assert (r.code, r.out) == (3, "") and r.err.startswith("kaja: no run 'run_nope'")
    r = worked("runs", "show", "run_")
    assert r.code == 2 and "ambiguous" in r.err and "run_7f3a" in r.err and "Traceback" not in r.err


def test_an_older_store_without_the_tables_says_none_recorded(kaja):
    kaja.state.mkdir(parents=True)
    sqlite3.connect(kaja.db).executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY);")
    for args, what in ((("runs",), "runs"), (("reviews",), "reviews"), (("tasks",), "tasks"),
                       (("schedules", "--due"), "schedules"), (("triggers",), "triggers"),
                       (("learning",), "recipes"), (("learning", "fixes"), "fixes"),
                       (("artifacts",), "artifacts")):  # fmt: skip
        r = kaja(*args)
        assert (r.code, r.out) == (0, ""), (args, r)
        assert f"no {what} recorded" in r.err, (args, r)
        assert json.loads(kaja(*args, "--json").out)[what] == []
    r = kaja("runs", "show", "run_x")
    assert r.code == 3 and "no runs recorded" in r.err


def test_a_table_not_of_the_agents_shape_is_one_line(kaja):
    kaja.state.mkdir(parents=True)
    sqlite3.connect(kaja.db).executescript(
        "CREATE TABLE runs (name TEXT); CREATE TABLE schedules (x);"
        " CREATE TABLE calls (run_id);"  # an older agent's calls: no tokens
    )
    r = kaja("runs")
    assert r.code == 0 and r.out == "" and r.err.count("\n") == 1 and "no column id" in r.err
    assert kaja("schedules").code == 0


def test_an_older_runs_table_without_some_columns_still_lists(kaja):
    kaja.state.mkdir(parents=True)
    sqlite3.connect(kaja.db).executescript(
        "CREATE TABLE runs (id TEXT, started_at TEXT, status TEXT);"
        " INSERT INTO runs VALUES ('run_old', '2026-01-01T00:00:00Z', 'completed');"
        " CREATE TABLE calls (run_id, model);  INSERT INTO calls VALUES ('run_old', 'm');"
    )
    doc = js(kaja("runs", "--json"))
    assert doc["runs"][0]["id"] == "run_old" and doc["runs"][0]["model_calls"] == 1
    assert doc["runs"][0]["tokens"] == 0
    assert js(kaja("runs", "show", "run_old", "--json"))["calls"][0]["model"] == "m"


# --- --json against the seed's queries through the sqlite3 shell, on the demo store --------------
@pytest.mark.needs("sqlite3")
def test_json_matches_the_seeds_queries_run_with_sqlite3(demo_store):
    k = demo_store  # the sqlite3 shell leaves a -wal behind: not the shared store
    mine = js(k("runs", "-n", "5", "--json"))["runs"]
    keys = ("id", "agent", "source", "status", "started_at", "model_calls", "tokens", "tool_calls")
    assert [{c: r[c] for c in keys} for r in mine] == sqlite3_json(k.db, SEED_TURNS)
    assert any(r["model_calls"] for r in mine)  # the comparison compares something

    tree = js(k("runs", "show", "run_7f3a", "--json"))
    subs = [{"id": s["id"], "agent": s["agent"], "status": s["status"]} for s in tree["subagents"]]
    assert subs == sqlite3_json(k.db, SEED_SUBAGENTS) and subs

    recipes = js(k("learning", "--json"))["recipes"]
    learned = [{c: r[c] for c in ("id", "task", "uses", "wins", "losses", "trace_run_id")}
               for r in recipes if r["trace_run_id"] is not None]  # fmt: skip
    assert (
        sorted(learned, key=lambda r: r["id"])
        == sorted(sqlite3_json(k.db, SEED_RECIPES), key=lambda r: r["id"])
        and learned
    )

    due = js(k("schedules", "--due", "--json"))["schedules"]
    seed_due = sqlite3_json(k.db, SEED_DUE)
    assert [{c: s[c] for c in ("id", "name", "cron", "next_run_at")} for s in due] == seed_due
    assert seed_due  # the demo has schedules due
    assert len(js(k("schedules", "--json"))["schedules"]) > len(due)  # and some not


def test_filters_and_limit(shared_demo_store):
    k = shared_demo_store
    failed = js(k("runs", "--status", "failed", "-n", "0", "--json"))["runs"]
    assert failed and {r["status"] for r in failed} == {"failed"}
    r = k("runs", "-n", "2")
    assert r.code == 0 and len(r.out.splitlines()) == 2 and "more not shown" in r.err
    sched = js(k("runs", "--source", "schedule", "-n", "0", "--json"))["runs"]
    assert sched and {r["source"] for r in sched} == {"schedule"}
    thread = next(
        r["thread_id"] for r in js(k("runs", "-n", "0", "--json"))["runs"] if r["thread_id"]
    )
    assert {
        r["thread_id"] for r in js(k("runs", "--thread", thread, "-n", "0", "--json"))["runs"]
    } == {thread}
    old = js(k("runs", "--until", "2000-01-01", "--json"))["runs"]
    assert old == []
    assert k("runs", "--since", "yesterday-ish").code == 2
    tasks = js(k("tasks", "--json"))["tasks"]
    assert {t["status"] for t in tasks} >= {
        "queued",
        "running",
        "paused",
        "completed",
        "failed",
        "cancelled",
    }
    assert [t["status"] for t in js(k("tasks", "--status", "failed", "--json"))["tasks"]] == [
        "failed"
    ]
    r = k("runs", "--status", "failed", "show", "run_7f3a")
    assert r.code == 2 and "belongs to the listing" in r.err


def test_reviews_queue_needs_review_first(shared_demo_store):
    reviews = js(shared_demo_store("reviews", "--json"))["reviews"]
    assert reviews[0]["status"] == "needs-review" and reviews[0]["prompt"]
    assert {r["status"] for r in reviews} == {"needs-review", "complete"}


def test_reviews_done_marks_it_complete_through_ordinary_sql(demo_store):
    k = demo_store
    run = js(k("reviews", "--status", "needs-review", "--json"))["reviews"][0]["run_id"]
    with closing(sqlite3.connect(k.db)) as conn, conn:
        conn.execute("INSERT OR REPLACE INTO sync_state (name, value) VALUES ('origin', 'me')")
        conn.execute("DELETE FROM sync_outbox")
    conn.close()
    r = k("reviews", "done", run[:12], "--note", "times fixed")
    assert r.code == 0 and f"review of run {run} marked complete" in r.err
    conn = sqlite3.connect(k.db)
    row = conn.execute("SELECT status, note, reviewed_at, updated_at FROM reviews WHERE run_id = ?",
                       (run,)).fetchone()  # fmt: skip
    assert row[0] == "complete" and row[1] == "times fixed" and row[2] and row[2] == row[3]
    # The agent's sync trigger saw it: the change waits in the outbox.
    assert conn.execute("SELECT tbl, key FROM sync_outbox").fetchall() == [("reviews", run)]
    conn.close()
    again = js(k("reviews", "done", run, "--json"))
    assert again["changed"] is False and again["review"]["note"] == "times fixed"
    assert k("reviews", "done", "run_not_flagged").code == 3
    # Already complete: a new note is said as a new note, not as marking it complete.
    r = k("reviews", "done", run, "--note", "checked again")
    assert r.code == 0 and r.err == (
        f"kaja: review of run {run} was already complete; its note is now: checked again\n"
    ), r
    doc = js(k("reviews", "done", run, "--note", "once more", "--json"))
    assert (doc["changed"], doc["completed"]) == (True, False)


def test_a_review_of_a_run_stored_as_a_number_is_found_as_listed(demo_store):
    """Another program's `reviews` table, its run_id without a type, holding an
    INTEGER 42: `reviews` lists 42, and `reviews done 42` finds it (it was exit 3)."""
    k = demo_store
    with closing(sqlite3.connect(k.db)) as conn, conn:
        conn.execute("DROP TABLE reviews")
        conn.execute("CREATE TABLE reviews (run_id PRIMARY KEY, status, tags, reason, note,"
                     " flagged_at, reviewed_at, updated_at)")  # fmt: skip
        conn.execute("INSERT INTO reviews (run_id, status, reason, flagged_at)"
                     " VALUES (42, 'needs-review', 'numbers', '2026-11-29T12:00:00.000Z')")  # fmt: skip
    conn.close()
    listed = [r["run_id"] for r in js(k("reviews", "--json"))["reviews"]]
    assert 42 in listed and "42\tneeds-review" in k("reviews").out
    r = k("reviews", "done", "42")
    assert r.code == 0 and r.err == "kaja: review of run 42 marked complete\n", r
    conn = sqlite3.connect(k.db)
    assert conn.execute(
        "SELECT status, typeof(run_id) FROM reviews WHERE run_id = 42"
    ).fetchone() == ("complete", "integer")
    conn.close()


def test_artifacts_say_whether_the_file_exists(demo_store):
    from pathlib import Path

    k = demo_store
    arts = {a["id"]: a for a in js(k("artifacts", "--json"))["artifacts"]}
    (shot,) = [a for a in arts.values() if a["path"]]
    page = next(a for a in arts.values() if a["path"] is None)
    assert shot["exists"] is True and page["exists"] is False
    assert js(k("artifacts", "--missing", "--json"))["artifacts"] == []
    shown = k("artifacts", "show", page["id"])
    assert shown.code == 0 and "Zürich HB" in shown.out
    assert not Path(shot["path"]).is_absolute()  # under the state dir: this copy's own file
    (k.state / shot["path"]).unlink()
    gone = js(k("artifacts", "--json"))["artifacts"]
    assert [a["exists"] for a in gone if a["id"] == shot["id"]] == [False]
    assert [a["id"] for a in js(k("artifacts", "--missing", "--json"))["artifacts"]] == [shot["id"]]
    r = k("artifacts", "show", shot["id"][:3])
    assert r.code == 0 and r.out.strip() == str(k.state / shot["path"]) and "is gone" in r.err
    piped = k("artifacts")
    assert f"{shot['id']}\tscreenshot\t" in piped.out and "\tno\t" in piped.out
    assert k("artifacts", "show", "zzz").code == 3


# --- secrets -------------------------------------------------------------------------------------
SECRET = "whsec_TOPSECRET_0123456789"
TOKEN = "xoxb-CONFIG-TOKEN-987654"
PASSWORD = "hunter2-pw-556677"


def test_a_triggers_secret_and_config_tokens_never_appear(demo_store):
    k = demo_store
    with closing(sqlite3.connect(k.db)) as conn, conn:
        conn.execute(
            "INSERT INTO triggers (id, name, kind, status, secret, config, last_error, state)"
            " VALUES ('trg_leak', 'leaky', 'webhook', 'active', ?, ?, ?, ?)",
            (SECRET, json.dumps({"url": f"https://bot:{PASSWORD}@hooks.example/x", "auth": {"token": TOKEN},
                                 "api_key": TOKEN, "channel": "#ops", "headers": [{"Authorization": TOKEN}]}),
             f"POST failed: token={TOKEN}", json.dumps({"refresh_token": TOKEN})),
        )  # fmt: skip
    conn.close()
    outputs = []
    for args in (("triggers",), ("triggers", "--json"), ("triggers", "--kind", "webhook"),
                 ("tasks", "--json"), ("schedules", "--json"), ("runs", "--json"), ("reviews", "--json"),
                 ("learning", "--json"), ("artifacts", "--json"), ("doctor",), ("doctor", "--json")):  # fmt: skip
        r = k(*args)
        assert r.code in (0, 1), (args, r)
        outputs.append(r.out + r.err)
    every = "\n".join(outputs)
    for secret in (SECRET, TOKEN, PASSWORD):
        assert secret not in every
    trig = next(t for t in js(k("triggers", "--json"))["triggers"] if t["id"] == "trg_leak")
    assert trig["config"]["auth"] == "***" and trig["config"]["api_key"] == "***"
    assert trig["config"]["channel"] == "#ops" and "hooks.example" in trig["config"]["url"]
    assert "secret" not in trig and "state" not in trig


# The configs of round 4 that printed a credential: (config as stored, last_error, the secrets).
_J = json.dumps
HOSTILE_TRIGGERS = [
    (_J({"url": "https://ghp_GITHUB0TOKEN1abc@github.com/org/repo.git"}), None, ["ghp_GITHUB0TOKEN1abc"]),
    (_J({"url": "https://x.example/hook?key=KEYVALUE2"}), None, ["KEYVALUE2"]),
    (_J({"url": "https://blob.example/f?sv=2020&sig=SIGVALUE3&se=2026"}), None, ["SIGVALUE3"]),
    (_J({"url": "https://api.telegram.org/bot123456789:AAH-TELEGRAM_TOKEN_4xyz/sendMessage"}), None,
     ["AAH-TELEGRAM_TOKEN_4xyz"]),
    (_J({"webhook": "https://hooks.slack.com/services/T0AAA/B0BBB/SLACKSECRET5xyz"}), None,
     ["SLACKSECRET5xyz"]),
    (_J({"webhook": "https://discord.com/api/webhooks/123456/DISCORD_SECRET_6_abcdef"}), None,
     ["DISCORD_SECRET_6_abcdef"]),
    (_J({"headers": [["Authorization", "Bearer BEARER7TOKEN"]]}), None, ["BEARER7TOKEN"]),
    (_J({"headers": [{"name": "Authorization", "value": "Bearer BEARER8TOKEN"}]}), None,
     ["BEARER8TOKEN"]),
    (_J({"headers": {"X-Api-Key": "APIKEY9VALUE"}}), None, ["APIKEY9VALUE"]),
    (_J({"options": _J({"token": "JSONINSTRING10"})}), None, ["JSONINSTRING10"]),
    ("token: NONJSON11", None, ["NONJSON11"]),
    ("Authorization: Bearer NONJSON12", None, ["NONJSON12"]),
    (_J({"PASS": "PASS13VALUE"}), None, ["PASS13VALUE"]),
    (_J({"pw": "PW14VALUE"}), None, ["PW14VALUE"]),
    (_J({"hmac": "HMAC15VALUE"}), None, ["HMAC15VALUE"]),
    (_J({"target": "me:PASSWORD16@db.internal:5432"}), None, ["PASSWORD16"]),
    (_J({"kind": "poll"}), "401: Authorization: Bearer LASTERR17 refused", ["LASTERR17"]),
    (b'{"token": "BLOB18VALUE"}', None, ["BLOB18VALUE"]),
    (_J({"url": "https://user:PASS19VALUE@example.com/x"}), None, ["PASS19VALUE"]),
    (_J({"headers": {"Cookie": "sid=COOKIE20VALUE"}}), None, ["COOKIE20VALUE"]),
    (_J({"env": ["API_TOKEN=ENVTOKEN21"]}), None, ["ENVTOKEN21"]),
    (_J({"cmd": "curl -H 'Authorization: Bearer CURL22TOKEN' https://x.example"}), None,
     ["CURL22TOKEN"]),
    (_J({"url": "https://x.example/cb?access_token=ACCESS23&x=1"}), None, ["ACCESS23"]),
    (_J({"auth": {"user": "me", "password": "NESTED24VALUE"}}), None, ["NESTED24VALUE"]),
    (_J({"url": "wss://WSUSER25TOKEN@stream.example/feed"}), None, ["WSUSER25TOKEN"]),
    (_J({"query": "?signature=SIGNATURE26"}), None, ["SIGNATURE26"]),
    (_J({"Authorization": "Basic QkFTSUMyNzpwdw=="}), None, ["QkFTSUMyNzpwdw=="]),
    (_J({"headers": "Authorization: Bearer HDRSTR28"}), None, ["HDRSTR28"]),
    (_J({"telegram": "5123456789:AAEF_BARE_TELEGRAM29_tokenvalue"}), None,
     ["AAEF_BARE_TELEGRAM29_tokenvalue"]),
    (_J({"url": "https://hooks.slack.com/workflows/T1/A2/333/SLACKWF30SECRET"}), None,
     ["SLACKWF30SECRET"]),
    (_J({"hooks": ["https://discordapp.com/api/webhooks/99/DISCORDAPP31token"]}), None,
     ["DISCORDAPP31token"]),
    (_J({"x": {"name": "api-key", "value": "NAMEVALUE32"}}), None, ["NAMEVALUE32"]),
    (_J({"x": ["X-Auth-Token", "PAIR33VALUE"]}), None, ["PAIR33VALUE"]),
    (_J({"webhook_url": "https://example.com/h?token=TOK34VALUE"}), None, ["TOK34VALUE"]),
    (_J({"nested": _J({"headers": {"Authorization": "Bearer NESTEDJSON35"}})}), None,
     ["NESTEDJSON35"]),
    ("url: https://x.example\napi_key: YAML36VALUE\nchannel: ops", None, ["YAML36VALUE"]),
]  # fmt: skip


def test_no_trigger_config_of_the_hostile_corpus_prints_a_credential(demo_store):
    """Round 4's 36 configs (a token as a URL's user, in its query or path, a
    header as a pair, JSON inside a string, a config that is no JSON, a BLOB…)
    and a config nested 100,000 deep: every output that shows a trigger runs,
    exit 0, and holds none of their secrets; what is not secret is still shown."""
    assert len(HOSTILE_TRIGGERS) == 36
    k = demo_store
    with closing(sqlite3.connect(k.db)) as conn, conn:
        for n, (config, error, _) in enumerate(HOSTILE_TRIGGERS):
            conn.execute("INSERT INTO triggers (id, name, kind, status, config, last_error)"
                         " VALUES (?, ?, 'webhook', 'active', ?, ?)",
                         (f"trg_h{n:02d}", f"hostile {n}", config, error))  # fmt: skip
        deep = "[" * 100_000 + "]" * 100_000
        conn.execute("INSERT INTO triggers (id, name, kind, status, config)"
                     " VALUES ('trg_deep', 'deep', 'webhook', 'active', ?)", (deep,))  # fmt: skip
    outputs = []
    for args in (("triggers",), ("triggers", "--json"), ("triggers", "--kind", "webhook", "-n", "0"),
                 ("doctor",), ("doctor", "--json")):  # fmt: skip
        r = k(*args)
        assert r.code in (0, 1) and "internal error" not in r.err, (args, r)
        outputs.append(r.out + r.err)
    every = "\n".join(outputs)
    leaked = [s for _, _, secrets in HOSTILE_TRIGGERS for s in secrets if s in every]
    assert leaked == []
    shown = {t["id"]: t for t in js(k("triggers", "--json", "-n", "0"))["triggers"]}
    assert shown["trg_h00"]["config"]["url"] == "https://***@github.com/org/repo.git"
    assert shown["trg_h02"]["config"]["url"] == "https://blob.example/f?sv=2020&sig=***&se=2026"
    assert shown["trg_h16"]["last_error"] == "401: Authorization: Bearer *** refused"
    assert shown["trg_h17"]["config"] == {"token": "***"}  # the BLOB, read as text
    assert shown["trg_deep"]["config"].startswith("[[[")  # too deep to be shown as JSON: text


# --- TAB -----------------------------------------------------------------------------------------
def test_run_ids_are_offered_on_tab(shared_demo_store):
    from kaja_cli.completion import values

    params = {"state_dir": shared_demo_store.state, "config_path": shared_demo_store.config}
    runs = values.complete("run", params, "run_7f")
    assert ("run_7f3a" in [v for v, _ in runs]) and all(v.startswith("run_7f") for v, _ in runs)
    assert [v for v, _ in values.complete("artifact", params, "a1")] == ["a1b2c3"]
    assert values.complete("review", params, "run_") != []


def _store(kaja) -> Store:
    return Store.locate(Overrides(config=kaja.config, state_dir=kaja.state), environ={})


def test_the_runs_listing_reads_the_newest_runs_not_every_run(demo_store, monkeypatch):
    """Issue 29: `kaja runs` took the top-level runs through `runs_parent`
    (parent_id only), then sorted every one of them by time to keep 20 (a
    temporary B-tree of the whole ledger: 35 s cold on the 1M store). Its
    listing statement now reads the newest top-level runs in index order."""
    from tests.support.plans import full_scans, plans, traced_statements

    r, seen = traced_statements(demo_store, monkeypatch, "runs", "-n", "2")
    assert r.code == 0, r
    listing = [(sql, steps) for sql, steps in plans(demo_store.db, seen).items()
               if "FROM runs r" in sql and "ORDER BY" in sql]  # fmt: skip
    assert listing, seen
    for sql, steps in listing:
        assert not any("TEMP B-TREE" in s for s in steps), (steps, sql[:200])
    assert full_scans(demo_store.db, seen) == []


def test_the_count_of_runs_not_shown_is_the_ledgers_in_every_state_of_the_rollups(demo_store):
    """Unfiltered, "N more not shown" is read from kaja's usage rollups (all runs by
    status) less the subagents' runs; it must be the SQL count whatever state the
    rollups are in: current, behind (runs written since), dirty (a run deleted, one
    made a subagent, a status changed), gone (then the runs are counted)."""
    k = demo_store

    def agree() -> None:
        with closing(sqlite3.connect(k.db)) as conn:
            top, every = conn.execute(
                "SELECT count(*) FILTER (WHERE parent_id IS NULL), count(*) FROM runs"
            ).fetchone()
            done = conn.execute("SELECT count(*) FROM runs WHERE parent_id IS NULL"
                                " AND status = 'completed'").fetchone()[0]  # fmt: skip
        assert js(k("runs", "-n", "1", "--json"))["left_out"] == top - 1
        assert js(k("runs", "-n", "1", "--all", "--json"))["left_out"] == every - 1
        assert js(k("runs", "-n", "1", "--status", "completed", "--json"))["left_out"] == done - 1
        r = k("runs", "-n", "1")
        assert r.err == f"kaja: {top - 1} more not shown (--limit 0 shows all)\n", r

    def write(sql: str, rows: list[tuple] = ()) -> None:
        with closing(sqlite3.connect(k.db)) as conn, conn:
            conn.executemany(sql, rows) if rows else conn.execute(sql)

    assert js(k("usage", "--json"))  # the rollups are current
    agree()
    write("INSERT INTO runs (id, parent_id, agent, source, started_at, status)"
          " VALUES (?, ?, 'kaja', 'interactive', '2026-12-02T09:00:00.000Z', 'completed')",
          [(f"run_new{i}", None if i % 3 else "run_new1", ) for i in range(1, 8)])  # fmt: skip
    agree()  # behind: the new runs are past what the rollups hold
    assert js(k("usage", "--json"))
    write("DELETE FROM runs WHERE id = 'run_new2'")
    write("UPDATE runs SET parent_id = 'run_new1' WHERE id = 'run_new4'")
    write("UPDATE runs SET status = 'failed' WHERE id = 'run_new5'")
    agree()  # dirty hours, read raw
    write("DROP TABLE kaja_usage_state")
    agree()  # no rollup to trust: the runs counted
