"""Bad input, property-based: whatever a user types or another program stored,
every run ends with an exit code 0-5 and at most one clear line, never a
traceback, and a reading command never modifies the store."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import examples

# Arguments a shell can pass (no NUL bytes); often odd on purpose.
text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)
odd = st.one_of(
    text,
    st.sampled_from(["", " ", "-", "--", "(", "'", '"', "../../etc/passwd", "%s", "NULL", "0" * 40,
                     "2026-13-45", "9999999999d", "-3d", "∞", "telegram:", ":", "\\", "\n", "2026-11-29T25:00",
                     "\u202egnp.exe", "\u2066x\u2069", "\x9b31m", "\x1b[2J"]),
)  # fmt: skip
# What never reaches the output raw (render.layout.ESCAPED): DEL, C1 and the BiDi controls.
RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
CHECK = settings(
    max_examples=examples(10),  # derandomized (tests/conftest.py): the same examples on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def fingerprint(kaja) -> dict:
    """Every file's content, but the -shm (SQLite's shared memory, where any
    reader marks what it reads: it holds no data) and the query profile, which
    every command adds its own queries to."""
    return {
        p.relative_to(kaja.state): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(kaja.state.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm") and not p.name.startswith("db-stats.db")
    }


def assert_clean(r, allowed=range(6)):
    assert r.code in allowed, r
    assert "Traceback" not in r.err, r
    assert not RAW.search(r.out), r
    if r.code != 0:
        assert r.err.startswith("kaja: ") or "Usage:" in r.err or "Error" in r.err, r
        if r.err.startswith("kaja: "):
            assert r.err.count("\n") == 1, r


@pytest.fixture
def store(demo_store):
    # The first search for a Chinese, Japanese or Korean word makes the CJK
    # index (README "Searching"): made here, so that no query may change the
    # store after that.
    assert demo_store("search", "東京").code == 0
    demo_store.before = fingerprint(demo_store)
    return demo_store


@CHECK
@given(value=odd)
def test_any_session_id(store, value):
    for argv in (["resume", value], ["resume", value, "--json"], ["sessions", "export", value]):
        r = store(*argv)
        assert_clean(r)
        assert r.code != 0 or value.strip()
    assert fingerprint(store) == store.before


@CHECK
@given(value=odd)
def test_any_owner(store, value):
    for argv in (["sessions", "--owner", value], ["resume", "-c", "--owner", value, "--json"]):
        assert_clean(store(*argv))
    assert fingerprint(store) == store.before


@CHECK
@given(value=odd)
def test_any_date(store, value):
    for argv in (["sessions", "--since", value], ["usage", "--since", value, "--json"],
                 ["usage", "--until", value], ["demo", "--now", value]):  # fmt: skip
        assert_clean(store(*argv))
    assert fingerprint(store) == store.before


@CHECK
@given(content=st.one_of(text, st.binary(max_size=60).map(lambda b: b.decode("latin-1"))))
def test_any_settings_file(kaja, content):
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(content, encoding="utf-8", errors="surrogateescape")
    for argv in (["config", "paths"], ["config", "show", "--json"], ["config", "get", "memory.mode"],
                 ["sessions"], ["usage", "--json"]):  # fmt: skip
        r = kaja(*argv)
        assert_clean(r, allowed={0, 1})
        if r.code == 1:
            assert str(kaja.config) in r.err
    assert not kaja.state.exists()  # reading never creates the store


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


json_junk = st.one_of(
    text,
    st.sampled_from(["{", "[]", "null", "42", '"x"', '[{"type": "image"}]', '[{"type":"image","sha256":"../../x"}]',
                     '{"text": null}', '[{"type":"image","sha256":5,"mime":[]}]', "\ud800" * 0 + "[1,2",
                     # deeper than Python and SQLite parse (1,500 levels), just within
                     # either SQLite's limit (1,000 since 3.45, 2,000 before), unbalanced
                     nested(1500), nested(1000), nested(2000), "[" * 5000, '{"a":' * 1200 + "1" + "}" * 1200,
                     '{"text": "a\u202egnp.exe \u009b31m"}', '["\u2066", "\u0085"]']),
)  # fmt: skip


@CHECK
@given(parts=json_junk, payload=json_junk, arguments=json_junk)
@example(parts=nested(1500), payload=nested(1500), arguments=nested(1500))  # issue 26
@example(parts=nested(2000), payload='{"text": "\u202e\x9b"}', arguments=nested(1000))
def test_any_json_in_the_store(store, parts, payload, arguments):
    """JSON columns hold whatever another program wrote there: not JSON, JSON
    nested deeper than a parser goes, characters never written raw."""
    c = sqlite3.connect(store.db)
    with c:
        sid = c.execute("SELECT id FROM sessions WHERE title LIKE 'Tomato%'").fetchone()[0]
        c.execute("UPDATE messages SET parts = ? WHERE sessionId = ?", (parts, sid))
        c.execute("UPDATE session_events SET payload = ? WHERE sessionId = ?", (payload, sid))
        c.execute("UPDATE tool_calls SET arguments = ? WHERE messageId IN (SELECT id FROM messages WHERE sessionId = ?)",
                  (arguments, sid))  # fmt: skip
    c.close()
    before = fingerprint(store)
    for argv in (["resume", sid], ["resume", sid, "--json"], ["sessions", "export", sid],
                 ["sessions", "export", sid, "--format", "json"], ["sessions", "--json"],
                 ["sessions", "export", sid, "--format", "html"]):  # fmt: skip
        r = store(*argv)
        assert_clean(r, allowed={0})
    r = store("doctor", "--json")  # exit 1 when a check is an error: the report says why
    assert r.code in (0, 1) and r.err == "" and not RAW.search(r.out), r
    assert json.loads(r.out)["checks"]
    assert fingerprint(store) == before


@CHECK
@given(query=odd, fts=st.booleans())
def test_any_search_query(store, query, fts):
    argv = ["search", *(["--fts"] if fts else []), "--", query]
    r = store(*argv)
    assert_clean(r, allowed={0, 2})
    if not fts and any(ch.isalnum() for ch in query):
        assert r.code == 0, r  # plain words never break: punctuation is harmless
    assert fingerprint(store) == store.before


# --- validated at the edge: numbers, paths, settings (each a finding once) ---------------------
def usage_error(r, option: str) -> None:
    assert r.code == 2, r
    assert r.err.startswith(f"kaja: Invalid value for '{option}") and r.err.count("\n") == 1, r


@pytest.mark.parametrize("wait", ["nan", "NaN", "inf", "-inf", "1e308", "-1", "3601"])
def test_a_wait_that_is_no_number_of_seconds_is_a_usage_error(store, wait):
    r = store("usage", "reset", "--wait", wait, "--yes")
    usage_error(r, "--wait")
    assert fingerprint(store) == store.before  # nothing was deleted


def test_huge_counts_are_usage_errors(store):
    huge = "99999999999999999999"
    for argv, option in [
        (["sessions", "-n", huge], "--limit"),
        (["sessions", "--limit", "1000000001"], "--limit"),
        (["search", "shade", "--limit", huge], "--limit"),
        (["resume", "-c", "--tail", huge], "--tail"),
        (["usage", "--tools", huge], "--tools"),
        (["demo", "--sessions", huge], "--sessions"),
        (["demo", "--messages", huge], "--messages"),
    ]:
        usage_error(store(*argv), option)
    assert store("sessions", "-n", "1000000000").code == 0  # the largest is fine


COUNT_OPTIONS = [
    (("sessions", "-n"), "--limit' / '-n", "sessions"),
    (("search", "shade", "--limit"), "--limit' / '-n", "search"),
    (("resume", "-c", "--tail"), "--tail", "resume"),
    (("usage", "--tools"), "--tools", "usage"),
    (("sessions", "--max-messages"), "--max-messages", "sessions"),
    (("sessions", "prune", "--min-tokens"), "--min-tokens", "sessions prune"),
    (("stats", "queries", "-n"), "--limit' / '-n", "stats queries"),
    (("demo", "--sessions"), "--sessions", "demo"),
    (("demo", "--messages"), "--messages", "demo"),
]


@pytest.mark.parametrize("value", ["abc", "2.5", "1e3"])
def test_a_count_that_is_no_whole_number_says_so(store, value):
    """Every count option in the same words, not Click's "not a valid int range"."""
    for argv, option, command in COUNT_OPTIONS:
        r = store(*argv, value)
        assert (r.code, r.err) == (2, f"kaja: Invalid value for '{option}': {value!r} is not a"
                                      f" whole number (see `kaja {command} --help`)\n"), argv  # fmt: skip
    r = store("sessions", "-n", "-1")
    assert r.err.startswith(
        "kaja: Invalid value for '--limit' / '-n': -1 is too small (at least 0)"
    )
    r = store("usage", "reset", "--wait", f"{value}s", "--yes")  # and a wait, in its own words
    assert (r.code, r.err) == (2, f"kaja: Invalid value for '--wait': '{value}s' is not a number of"
                                  " seconds (see `kaja usage reset --help`)\n")  # fmt: skip
    assert fingerprint(store) == store.before


@pytest.mark.parametrize("option", ["--db", "--state-dir", "--config"])
def test_an_empty_path_is_a_usage_error_not_the_current_folder(store, option):
    for value in ("", "  "):
        usage_error(store(option, value, "sessions"), option)
    r = store("sessions", "export", "x", "-o", "")
    usage_error(r, "--output")
    usage_error(store("backup", "-o", ""), "--output")  # as export: not the current folder


@pytest.mark.parametrize("root", ["/", "/.", "//", "/tmp/.."])
def test_the_root_folder_as_the_database_is_one_line(kaja, root):
    for argv, code in [(["wipe", "--yes"], 5), (["wipe", "--dry-run"], 5), (["demo"], 5),
                       (["sessions"], 1), (["usage", "reset", "--yes"], 5),
                       (["wipe", "--owner", "telegram:1", "--yes"], 5),
                       (["backup", "-o", str(kaja.root / "b.tar.gz")], 5), (["optimize"], 5)]:  # fmt: skip
        r = kaja("--db", root, *argv)
        assert r.code == code, (argv, r)
        assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, (argv, r)
        assert "internal error" not in r.err
    r = kaja("--db", root, "wipe", "--yes")
    assert "is the root folder, not a Kaja database" in r.err
    r = kaja("--db", root, "doctor")
    assert r.code == 1 and "is a folder, not a SQLite database" in r.out, r
    # `config paths` looks at / without walking the whole disk.
    r = kaja.proc("--db", root, "config", "paths", "--json", timeout=30)
    assert r.code == 0 and '"size":null' in r.out, r


@pytest.mark.parametrize("depth", [40, 500, 5000])
def test_settings_nested_too_deep_are_one_line(kaja, depth):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text("x = " + "[" * depth + "]" * depth + "\n")
    for argv in (["sessions"], ["config", "paths"], ["config", "show"], ["config", "set",
                 "memory.mode", "local"], ["doctor", "--check", "settings"]):  # fmt: skip
        r = kaja(*argv)
        assert r.code == 1, (argv, r)
        assert "values nested more than 32 levels deep" in r.out + r.err, (argv, r)
        assert "internal error" not in r.err and "Recursion" not in r.err


def test_a_nul_in_db_path_is_one_line(kaja):
    kaja.config.parent.mkdir(parents=True)
    kaja.config.write_text('[memory]\ndbPath = "a\\u0000b"\n')
    for argv in (["sessions"], ["wipe", "--yes"], ["demo"], ["config", "paths"]):
        r = kaja(*argv)
        assert r.code == 1, (argv, r)
        assert r.err == (
            f"kaja: {kaja.config}:2: memory.dbPath must be a file path, not 'a\\x00b': fix it with"
            " `kaja config edit`\n"
        ), (argv, r)


# --- archives that lie: MANIFEST.json, every field wrong in turn ------------------------------
def _lying(members: dict[str, bytes], manifest: bytes, dest) -> None:
    import io
    import tarfile

    with tarfile.open(dest, "w:gz") as tar:
        for name, data in [*((n, d) for n, d in members.items() if n != "MANIFEST.json"),
                           ("MANIFEST.json", manifest)]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def honest_backup(tmp_path_factory, _demo_template) -> dict[str, bytes]:
    """The members of a backup of the demo store, as `kaja backup` wrote them."""
    import shutil
    import tarfile

    from tests.conftest import Kaja

    k = Kaja(tmp_path_factory.mktemp("honest"))
    shutil.copytree(_demo_template, k.state, symlinks=True)
    arch = k.root / "b.tar.gz"
    assert k("backup", "-o", str(arch)).code == 0
    with tarfile.open(arch) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _db(m: dict, name: str = "shared") -> dict:
    return next(d for d in m["databases"] if d["name"] == name)


def _image(m: dict) -> dict:
    return next(f for f in m["files"] if f["member"].startswith("images/"))


def _both(m: dict, member: str) -> list[dict]:
    """The files entry and the databases entry of a database: a consistent lie."""
    return [e for e in [*m["files"], *m["databases"]] if e["member"] == member]


def _set(where, key, value):
    def edit(m: dict) -> None:
        where(m)[key] = value

    return edit


def _drop(where, key):
    return lambda m: where(m).pop(key)


TOP = lambda m: m  # noqa: E731
SHARED = _db
FILE = _image
# Each field of MANIFEST.json with a value of the wrong type (where, key, value), then missing.
WRONG_TYPE = {
    "format": (TOP, "format", 1), "version": (TOP, "version", "1"),
    "version (true)": (TOP, "version", True), "created_at": (TOP, "created_at", 20261202),
    "kaja": (TOP, "kaja", ["0.1.0"]), "sqlite": (TOP, "sqlite", 3), "python": (TOP, "python", None),
    "state_dir": (TOP, "state_dir", {}), "method": (TOP, "method", 5),
    "databases": (TOP, "databases", {}), "files": (TOP, "files", "all of them"),
    "databases[].name": (SHARED, "name", 5), "databases[].member": (SHARED, "member", 5),
    "databases[].source": (SHARED, "source", None), "databases[].bytes": (SHARED, "bytes", "561152"),
    "databases[].sha256": (SHARED, "sha256", 5),
    "databases[].schema_upgraded": (SHARED, "schema_upgraded", 5),
    "databases[].schema_missing": (SHARED, "schema_missing", "none"),
    "databases[].schema_missing[]": (SHARED, "schema_missing", [5]),
    "databases[].rows": (SHARED, "rows", 5),
    "databases[].rows.sessions": (SHARED, "rows", {"sessions": "13"}),
    "files[].member": (FILE, "member", 5), "files[].bytes": (FILE, "bytes", "5"),
    "files[].bytes (true)": (FILE, "bytes", True), "files[].sha256": (FILE, "sha256", None),
}  # fmt: skip
MISSING = {
    **{k: (TOP, k) for k in ("version", "created_at", "kaja", "sqlite", "python", "state_dir",
                             "method", "databases", "files")},
    **{f"databases[].{k}": (SHARED, k) for k in ("name", "member", "source", "bytes", "sha256",
                                                 "schema_upgraded", "schema_missing", "rows")},
    **{f"files[].{k}": (FILE, k) for k in ("member", "bytes", "sha256")},
}  # fmt: skip


def _raw(text: str):
    return lambda m: text.encode()


def _twice(key: str, pick):
    return lambda m: m[key].append(dict(pick(m)))


def _both_set(which: str, **values):
    def edit(m: dict) -> None:
        for e in _both(m, which):
            e.update(values)

    return edit


LIES = {
    **{f"{k} of the wrong type": (_set(w, f, v), 1) for k, (w, f, v) in WRONG_TYPE.items()},
    **{f"{k} missing": (_drop(w, f), 1) for k, (w, f) in MISSING.items()},
    "format missing": (_drop(TOP, "format"), 1),
    "a database entry that is no object": (lambda m: m["databases"].append(5), 1),
    "a file entry that is no object": (lambda m: m["files"].append("x"), 1),
    "created_at that is no time": (_set(TOP, "created_at", "yesterday"), 1),
    "rows of something that is no table": (_set(SHARED, "rows", {"\x1b[2J": 1}), 1),
    "a negative size": (_set(FILE, "bytes", -1), 1),
    "a negative count": (_set(SHARED, "rows", {"sessions": -1}), 1),
    # an unknown database name, and a database name in the wrong place
    "an unknown database name": (_set(lambda m: _db(m, "cache"), "name", "bogus"), 1),
    "an unknown database member": (_both_set("databases/cache.db", member="databases/bogus.db"), 5),
    "a database under another's name": (_set(lambda m: _db(m, "cache"), "name", "stats"), 1),
    # sizes and sums that are wrong, or disagree
    "an image's size off by one": (lambda m: _image(m).update(bytes=_image(m)["bytes"] + 1), 1),
    "an image's sha256 wrong": (_set(FILE, "sha256", "0" * 64), 1),
    "a sha256 in capitals": (lambda m: _image(m).update(sha256=_image(m)["sha256"].upper()), 1),
    "a sha256 that is no sha256": (_set(FILE, "sha256", "zz"), 1),
    "a database's sha256 wrong in both lists": (_both_set("databases/shared.db", sha256="1" * 64), 1),
    "a database's size in the two lists disagreeing": (_set(SHARED, "bytes", 4096), 1),
    "a database the databases list does not describe": (
        lambda m: m["databases"].remove(_db(m, "cache")), 1),
    "a database described but not among the files": (
        lambda m: m["files"].remove(_both(m, "databases/cache.db")[0]), 1),
    # duplicates
    "a file listed twice": (_twice("files", _image), 1),
    "a database described twice": (_twice("databases", _db), 1),
    # names that escape the archive's folders
    "../ in a member": (_set(FILE, "member", "../../escaped.png"), 5),
    "images/../../ in a member": (_set(FILE, "member", "images/../../escaped.png"), 5),
    "an absolute member": (_set(FILE, "member", "/etc/passwd"), 5),
    "a hidden member": (_set(FILE, "member", "images/s1/.hidden"), 5),
    "a database member outside databases/": (
        _both_set("databases/cache.db", member="databases/../../cache.db"), 5),
    "the manifest among the files": (_set(FILE, "member", "MANIFEST.json"), 1),
    # huge numbers
    "a size of 10**30": (_set(FILE, "bytes", 10**30), 1),
    "a size of 1e400 (infinity)": (_set(FILE, "bytes", float("inf")), 1),
    "a count of 10**30": (_set(SHARED, "rows", {"sessions": 10**30}), 1),
    "a version of 10**30": (_set(TOP, "version", 10**30), 1),
    "a version of 0": (_set(TOP, "version", 0), 1),
    "a number of 5,000 digits": (_raw('{"format": "kaja-backup", "version": ' + "9" * 5000 + "}"), 1),
    "a text of a million characters": (_set(TOP, "kaja", "x" * 1_000_000), 1),
    # not a manifest at all
    "nested 100,000 deep": (_raw("[" * 100_000), 1),
    "a list": (_raw("[]"), 1),
    "not UTF-8": (lambda m: b"\xff\xfe{}", 1),
}  # fmt: skip


def every_byte(state) -> dict:
    """Every file of the store, byte for byte (db-stats.db too: a restore records no
    profile), but the -shm, SQLite's shared memory, which any reader marks."""
    return {
        p.relative_to(state): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }


@pytest.mark.parametrize("lie", list(LIES))
def test_a_manifest_that_lies_restores_nothing(demo_store, honest_backup, tmp_path, lie):
    """`restore --force --yes` over the store in place: one line, the documented
    code, and the store as it was, byte for byte; no backup of it made, no staging left."""
    import json
    import os

    edit, code = LIES[lie]
    manifest = json.loads(honest_backup["MANIFEST.json"])
    raw = edit(manifest)
    data = raw if isinstance(raw, bytes) else json.dumps(manifest).encode()
    bad = tmp_path / "lying.tar.gz"
    _lying(honest_backup, data, bad)
    before = every_byte(demo_store.state)
    r = demo_store("restore", str(bad), "--force", "--yes")
    assert r.code == code, r
    assert r.err.startswith("kaja: ") and r.err.count("\n") == 1, r
    assert "internal error" not in r.err and "Traceback" not in r.err and "\x1b" not in r.err, r
    assert every_byte(demo_store.state) == before
    assert sorted(os.listdir(tmp_path)) == ["home", "lying.tar.gz", "state"]  # nothing left


# --- hostile rows of round 4: each an internal error, or shown as nothing -----------------------
def _runs_chain(c) -> list[str]:
    prev = None
    for i in range(600):
        c.execute("INSERT INTO runs (id, parent_id, agent, status, started_at)"
                  " VALUES (?, ?, 'a', 'done', '2026-11-29T12:00:00.000Z')", (f"deep{i:04d}", prev))  # fmt: skip
        prev = f"deep{i:04d}"
    return ["runs", "show", "deep0000"]


def _text_tokens(c) -> list[str]:
    c.execute("INSERT INTO runs (id, agent, status, started_at)"
              " VALUES ('txt1', 'a', 'done', '2026-11-29T12:00:00.000Z')")  # fmt: skip
    c.execute("INSERT INTO calls (run_id, at, model, prompt_tokens, completion_tokens)"
              " VALUES ('txt1', '2026-11-29T12:00:00.000Z', 'm', 'many', 3)")  # fmt: skip
    return ["runs", "show", "txt1"]


def _huge_timeouts(c) -> list[str]:
    for task, timeout in (("bt_huge", 1e308), ("bt_big", 2**63 - 1)):
        c.execute("INSERT INTO background_tasks (id, tool_name, status, timeout_seconds, started_at)"
                  " VALUES (?, 't', 'running', ?, '2026-11-29T12:00:00.000Z')", (task, timeout))  # fmt: skip
    return ["doctor"]


HOSTILE_ROWS = {"a 600-deep runs.parent_id chain": _runs_chain,
                "a text prompt_tokens": _text_tokens,
                "timeout_seconds 1e308 and 2**63-1": _huge_timeouts}  # fmt: skip


@pytest.mark.parametrize("name", HOSTILE_ROWS)
def test_hostile_rows_end_in_an_answer(store, name):
    c = sqlite3.connect(store.db)
    with c:
        argv = HOSTILE_ROWS[name](c)
    c.close()
    for args in (argv, [*argv, "--json"]):
        r = store(*args)
        assert_clean(r, allowed={0, 1})
        assert "internal error" not in r.err, r
    if name.startswith("a 600"):
        assert "… 567 runs deeper not shown: kaja runs show deep0032" in store(*argv).out
    if name.startswith("a text"):
        assert "3 tokens (many in, 3 out)" in store(*argv).out


@pytest.mark.parametrize(
    "parts",
    ['[{"type":"text","text":"SHOWN"}]\x00AND THE TAIL', "[" * 3000 + '"SHOWN"' + "]" * 3000],
)
def test_parts_that_are_not_json_are_shown_as_the_text_they_hold(store, parts):
    """Valid JSON followed by a NUL, or nested 3,000 deep: Markdown and JSON
    showed it; `resume` and the HTML export showed nothing."""
    c = sqlite3.connect(store.db)
    with c:
        sid = c.execute("SELECT id FROM sessions WHERE title LIKE 'Tomato%'").fetchone()[0]
        c.execute("UPDATE messages SET content = NULL, parts = ? WHERE sessionId = ? AND seq = 1",
                  (parts, sid))  # fmt: skip
        c.execute("DELETE FROM session_events WHERE sessionId = ?", (sid,))  # resume: the messages
    c.close()
    for argv in (["resume", sid], ["sessions", "export", sid, "-f", "html"],
                 ["sessions", "export", sid, "-f", "md"]):  # fmt: skip
        r = store(*argv)
        assert_clean(r, allowed={0})
        assert "parts (not valid JSON)" in r.out and "SHOWN" in r.out, argv
