"""`kaja sessions export --all` (core/export.py, render/export.py, render/html.py,
core/redact.py), through the real command: every format, the filters, the
HTML parsed as a browser parses it, --redact, where it may write, and memory
that stays flat however long a session is."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
from contextlib import closing

import html5lib
import pytest

from tests.conftest import KAJA
from tests.support.sessions_support import ANA, BACKUP, BUDGET, PRS, TOMATO


def ids_listed(kaja, *filters: str) -> list[str]:
    r = kaja("sessions", "list", "-n", "0", *filters)
    assert r.code == 0, r
    return [line.split("\t")[0] for line in r.out.splitlines()]


def test_jsonl_is_one_line_per_session_each_the_single_export(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    r = demo_store("sessions", "export", "--all", "-f", "jsonl")
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert [json.loads(line)["session"]["id"] for line in lines] == ids_listed(demo_store)
    one = demo_store("sessions", "export", BACKUP[:8], "-f", "json")
    assert json.loads(lines[0]) == json.loads(one.out)
    assert lines[0] == one.out.rstrip("\n")  # byte for byte


def test_the_filters_are_the_listings(shared_demo_store):
    demo_store = shared_demo_store  # only reads
    filters = ["--all-owners", "--before", "2026-11-28T12:00:00Z", "--max-messages", "14"]
    r = demo_store("sessions", "export", "--all", "-f", "jsonl", *filters)
    got = [json.loads(line)["session"]["id"] for line in r.out.splitlines()]
    assert got == ids_listed(demo_store, *filters) and len(got) == 5


def test_json_to_a_file_is_one_document_readable_only_by_you(demo_store, tmp_path):
    out = tmp_path / "everything.json"
    r = demo_store("sessions", "export", "--all", "--all-owners", "-o", str(out))
    assert r.code == 0, r
    assert r.err.startswith(f"kaja: wrote {out} (13 sessions, ")
    doc = json.loads(out.read_text())
    assert list(doc) == ["sessions"] and len(doc["sessions"]) == 13
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_markdown_of_all_is_each_sessions_markdown_in_turn(demo_store, tmp_path):
    out = tmp_path / "all.md"
    assert demo_store("sessions", "export", "--all", "-o", str(out)).code == 0
    parts = out.read_text().split("\n---\n\n")
    assert len(parts) == 7
    assert parts[0] == demo_store("sessions", "export", BACKUP).out
    assert parts[-1] == demo_store("sessions", "export", BUDGET).out


def test_a_folder_gets_one_file_per_session(demo_store, tmp_path):
    folder = tmp_path / "md/"
    r = demo_store("sessions", "export", "--all", "-o", str(folder) + "/", "--title", "*o*")
    assert r.code == 0, r
    names = sorted(os.listdir(folder))
    assert names == sorted(f"{i}.md" for i in ids_listed(demo_store, "--title", "*o*"))
    assert (folder / f"{TOMATO}.md").read_text() == demo_store("sessions", "export", TOMATO).out


def _parse(path):
    """Parsed as a browser parses it; html5lib's strict mode raises on any parse error."""
    with open(path, "rb") as f:
        return html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(f)


def test_html_is_a_self_contained_valid_page_per_session(demo_store, tmp_path):
    conn = sqlite3.connect(demo_store.db)
    with conn:
        conn.execute(
            "UPDATE messages SET content = ?1 WHERE sessionId = ?2 AND seq = (SELECT min(seq) FROM messages WHERE sessionId = ?2)",
            ('<script>alert(1)</script> & <img src="http://example.org/x.png">', PRS),
        )
    conn.close()
    out = tmp_path / "site"
    r = demo_store("sessions", "export", "--all", "--all-owners", "-f", "html", "-o", str(out))
    assert r.code == 0, r
    files = sorted(os.listdir(out))
    assert len(files) == 14 and "index.html" in files
    for name in files:
        tree = _parse(out / name)
        # nothing is fetched from elsewhere: no script, no stylesheet link, no remote source
        assert tree.findall(".//script") == [] and tree.findall(".//link") == []
        for el in tree.iter():
            for attr in ("src", "href"):
                value = el.get(attr)
                assert value is None or value.startswith("data:") or value.endswith(".html"), value
        csp = [m.get("content") for m in tree.findall(".//meta") if m.get("http-equiv")]
        assert csp == ["default-src 'none'; img-src data:; style-src 'unsafe-inline'"]
    page = (out / f"{PRS}.html").read_text()
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=&quot;http://example.org" in page
    )
    tomato = _parse(out / f"{TOMATO}.html")
    images = [i.get("src") for i in tomato.findall(".//img")]
    assert images and all(src.startswith("data:image/") for src in images)
    index = _parse(out / "index.html")
    assert sorted(a.get("href") for a in index.findall(".//a")) == sorted(
        f for f in files if f != "index.html"
    )


def test_html_shows_what_resume_shows(demo_store, tmp_path):
    """The timeline's error and notice, which no message holds, where `kaja
    resume` shows them; the call waiting on you as waiting, not "no result";
    the pause sign drawn, not a glyph a browser's font may lack."""
    out = tmp_path / "backup.html"
    assert demo_store("sessions", "export", BACKUP, "-o", str(out)).code == 0
    page = out.read_text()
    body = _parse(out).find(".//body")
    text = " ".join("".join(body.itertext()).split())
    error = "Error: The NAS was not mounted when I checked /mnt/nas: the job will fail until it is."
    assert text.index("Here is the cron line") < text.index(error) < text.index("It's mounted now")
    assert text.endswith("Notice: Waiting for your approval to run shell.")
    assert "→ shell waiting on you (approval)" in text and "no result" not in text
    assert text.startswith("Nightly backup with rsync id: ")
    assert "Waiting on you: shell (approval), call call_7327e5920673" in text
    pending = body.find(".//p[@class='pending']")
    assert [el.tag for el in pending.iter() if el.tag.endswith("svg")] == [
        "{http://www.w3.org/2000/svg}svg"
    ]
    # Only the punctuation every font has: no ⏸ (U+23F8), no ✓ ✗ ⊘ (dingbats, symbols).
    assert not re.search("[\u2300-\u23ff\u2600-\u27bf\u2295-\u22a1\U0001f000-\U0001faff]", page)
    resume = demo_store("resume", BACKUP).out
    assert "error: The NAS was not mounted" in resume and "• Waiting for your approval" in resume


def test_html_words_durations_and_times_as_resume_does(demo_store, tmp_path):
    """Issue 39: the HTML said `9100 ms` and `2026-11-29T05:55:12.547Z` where
    `kaja resume` says `9.1 s` and a local time (TZ, as the C library reads
    it). The HTML says what resume says; the exact time stays in the `<time>`
    element's datetime and title. A time kaja did not write (another offset)
    is worded the same way; what is not a time is shown, escaped, as it is."""
    from datetime import datetime, timedelta, timezone

    tz = {"TZ": "IST-5:30"}  # a POSIX zone: no zone database needed; half an hour off UTC

    def local(stored: str) -> str:
        dt = datetime.fromisoformat(stored.replace("Z", "+00:00"))
        return dt.astimezone(timezone(timedelta(hours=5, minutes=30))).strftime("%Y-%m-%d %H:%M")

    conn = sqlite3.connect(demo_store.db)
    with conn:
        (updated,) = conn.execute(
            'SELECT "updatedAt" FROM sessions WHERE id = ?', (PRS,)
        ).fetchone()
        (called,) = conn.execute(
            'SELECT m."createdAt" FROM tool_calls t JOIN messages m ON m.id = t."messageId"'
            " WHERE m.\"sessionId\" = ? AND t.name = 'spawn_subagent'",
            (PRS,),
        ).fetchone()
        # the first message: another offset; the second: no time at all
        conn.execute(
            'UPDATE messages SET "createdAt" = ? WHERE "sessionId" = ? AND seq = 1',
            ("2026-11-29T07:47:35+02:00", PRS),
        )
        conn.execute(
            'UPDATE messages SET "createdAt" = ? WHERE "sessionId" = ? AND seq = 3',
            ('soon"><b>x</b>', PRS),
        )
    conn.close()
    resume = demo_store.proc("resume", PRS, env=tz)
    assert resume.code == 0, resume
    assert "✓ spawn_subagent ok · 9.1 s" in resume.out
    assert f" · updated {local(updated)}\n" in resume.out
    assert updated.endswith("Z") and local(updated) != updated[:16].replace("T", " ")

    out = tmp_path / "prs.html"
    r = demo_store.proc("sessions", "export", PRS, "-f", "html", "-o", str(out), env=tz)
    assert r.code == 0, r
    page = out.read_text()
    assert f'updated: <time datetime="{updated}" title="{updated}">{local(updated)}</time>' in page
    assert f'<time datetime="{called}" title="{called}">{local(called)}</time>' in page
    other = "2026-11-29T07:47:35+02:00"
    assert f'<time datetime="{other}" title="{other}">{local(other)}</time>' in page
    assert '<span class="when">soon&quot;&gt;&lt;b&gt;x&lt;/b&gt;</span>' in page
    body = _parse(out).find(".//body")
    text = " ".join("".join(body.itertext()).split())
    assert "→ spawn_subagent ok · 9.1 s" in text and "→ browser_screenshot ok · 920 ms" in text
    assert "9100" not in page
    # no time shown as the store keeps it: only in the attributes
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text)


def test_html_needs_a_folder_and_filters_need_all(demo_store, tmp_path):
    r = demo_store("sessions", "export", "--all", "-f", "html")
    assert r.code == 2 and "give -o FOLDER" in r.err
    assert demo_store("sessions", "export", BACKUP, "--before", "3d").code == 2
    assert demo_store("sessions", "export", BACKUP, "--all").code == 2
    assert demo_store("sessions", "export").code == 2
    assert demo_store("sessions", "export", "--all", "-f", "pdf").code == 2
    # one session as HTML goes to stdout
    r = demo_store("sessions", "export", BACKUP, "-f", "html")
    assert r.code == 0 and r.out.startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("fmt", ["md", "json", "jsonl", "html"])
def test_an_export_that_matches_nothing_writes_no_file(demo_store, tmp_path, fmt):
    """Not an empty file (or folder) in its place, and one already there is not emptied."""
    out = tmp_path / ("pages" if fmt == "html" else f"out.{fmt}")
    args = ("sessions", "export", "--all", "--title", "no such title", "-f", fmt, "-o", str(out))
    r = demo_store(*args)
    assert (r.code, r.out, r.err) == (
        0, "", f"kaja: no sessions match the filters: nothing written to {out}\n"
    )  # fmt: skip
    assert not out.exists()
    if fmt != "html":
        out.write_text("last week's export\n")
        r = demo_store(*args)
        assert r.err == (
            f"kaja: no sessions match the filters: nothing written to {out} (it is left as it was)\n"
        )
        assert out.read_text() == "last week's export\n"
    r = demo_store("sessions", "export", "--all", "--title", "no such title", "-f", "json")
    assert (r.code, r.out) == (0, '{"sessions":[]}\n')  # on stdout, the empty document still
    bare = demo_store("--state-dir", str(tmp_path / "none"), *args)
    assert bare.err.endswith(f": nothing written to {out}" + (
        " (it is left as it was)\n" if fmt != "html" else "\n"))  # fmt: skip
    assert "there is no Kaja store" in bare.err


def test_never_over_the_stores_own_files(demo_store):
    for target in ("kaja.db", "kaja.db-wal", "files/images/x.md", "files/"):
        r = demo_store("sessions", "export", "--all", "-o", str(demo_store.state / target))
        assert r.code == 5, (target, r)
        assert "part of Kaja's store" in r.err
    assert sqlite3.connect(demo_store.db).execute("PRAGMA quick_check").fetchone() == ("ok",)


def test_redact_replaces_owners_homes_emails_and_tokens(demo_store):
    ana_session = json.loads(demo_store("sessions", "--owner", ANA, "--json").out)["sessions"][0][
        "id"
    ]
    secret = "sk-proj-Abc123def456GHI789jkl0"
    text = (
        f"write to ana.perez@example.org, my key is {secret}, the file is"
        f" {demo_store.home}/notes.txt and /home/marie/x; I am {ANA}"
    )
    conn = sqlite3.connect(demo_store.db)
    with conn:
        conn.execute(
            "UPDATE messages SET content = ?1 WHERE sessionId = ?2 AND seq = (SELECT min(seq) FROM messages WHERE sessionId = ?2)",
            (text, ana_session),
        )
    conn.close()
    r = demo_store("sessions", "export", "--all", "--owner", ANA, "-f", "jsonl", "--redact")
    assert r.code == 0, r
    for word in (
        "ana.perez@example.org",
        secret,
        str(demo_store.home),
        "/home/marie",
        ANA,
        "482913",
    ):
        assert word not in r.out, word
    docs = [json.loads(line) for line in r.out.splitlines()]  # still JSON
    assert {d["session"]["owner"] for d in docs} == {"telegram:owner-1"}
    first = next(m for d in docs for m in d["messages"] if "[email]" in (m["content"] or ""))
    assert first["content"] == (
        "write to [email], my key is [token], the file is ~/notes.txt and ~/x;"
        " I am telegram:owner-1"
    )
    # ids and image names stay: they are what a bug report refers to
    assert docs[0]["session"]["id"] == ana_session
    r = demo_store("sessions", "export", ana_session, "--owner", ANA, "--redact")
    assert "[email]" in r.out and secret not in r.out


def test_redacted_html_leaves_images_out(demo_store, tmp_path):
    out = tmp_path / "r"
    r = demo_store("sessions", "export", "--all", "-f", "html", "-o", str(out), "--redact")
    assert r.code == 0, r
    page = (out / f"{TOMATO}.html").read_text()
    assert "data:image" not in page and "left out (--redact)" in page


# --- memory ------------------------------------------------------------------------------
def _long_store(db, messages: int, size: int) -> None:
    """A store of another program: one session with `messages` messages of `size` bytes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(
        "PRAGMA journal_mode = WAL;"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt, updatedAt, title, owner);"
        "CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, seq INTEGER, role, content,"
        " createdAt);"
        "INSERT INTO sessions VALUES ('01a00000-0000-7000-8000-000000000001',"
        " '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 'Long', NULL);"
    )
    body = "lorem ipsum " * (size // 12)
    with conn:
        conn.executemany(
            "INSERT INTO messages VALUES (?, '01a00000-0000-7000-8000-000000000001', ?, 'user', ?, '')",
            ((f"m{i:08d}", i, f"{i} {body}") for i in range(messages)),
        )
    conn.close()


def _peak_rss_kb(kaja, *args: str) -> int:
    p = subprocess.Popen([KAJA, *args], env=kaja.env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    _, status, usage = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, p.stderr.read()
    p.returncode = 0
    p.stderr.close()
    return usage.ru_maxrss


@pytest.mark.process
@pytest.mark.parametrize("fmt", ["jsonl", "md"])
def test_memory_stays_flat_however_long_the_session(kaja, tmp_path, fmt):
    _long_store(kaja.db, 40, 1000)
    small = _peak_rss_kb(kaja, "sessions", "export", "--all", "-f", fmt, "-o", str(tmp_path / "a"))
    for p in kaja.state.iterdir():
        p.unlink()
    _long_store(kaja.db, 40_000, 1000)  # a 40 MB conversation
    big = _peak_rss_kb(kaja, "sessions", "export", "--all", "-f", fmt, "-o", str(tmp_path / "b"))
    assert (tmp_path / "b").stat().st_size > 40_000_000
    assert big - small < 12_000, (small, big)  # kB: far less than the 40 MB it wrote


def test_a_fifo_is_refused_and_a_link_is_followed(demo_store, tmp_path):
    """core/guard.py's rule, as for every file kaja writes: never a FIFO (a
    write would wait for a reader), a link to a regular file is kept."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = demo_store("sessions", "export", "--all", "-f", "jsonl", "-o", str(fifo))
    assert r.code == 5 and "not a regular file" in r.err, r
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("old\n")
    link.symlink_to(real)
    r = demo_store("sessions", "export", "--all", "-f", "jsonl", "-o", str(link))
    assert r.code == 0, r
    assert link.is_symlink() and len(real.read_text().splitlines()) == 7
    r = demo_store("sessions", "export", "--all", "-f", "jsonl", "-o", "")
    assert r.code == 2 and "Invalid value for '--output'" in r.err and "is empty" in r.err, r


def test_text_that_is_not_utf8_is_shown_with_a_replacement_character(kaja):
    """Another program stored bytes that are not UTF-8 as TEXT: every format
    is still UTF-8 (U+FFFD in their place), as every other read shows them."""
    kaja.db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(kaja.db)
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, createdAt, updatedAt, title, owner);"
        "CREATE TABLE messages (id TEXT PRIMARY KEY, sessionId, seq INTEGER, role, content);"
        "INSERT INTO sessions VALUES ('s1', '2026-11-01', '2026-11-01', 'Bytes', NULL);"
        "INSERT INTO messages VALUES ('m1', 's1', 1, 'user', CAST(x'6361e4' AS TEXT));"
        "INSERT INTO messages VALUES ('m2', 's1', 2, 'assistant', 'ça va');"
    )
    conn.commit()
    conn.close()
    for argv in (["resume", "s1", "--json"], ["sessions", "export", "s1", "-f", "json"],
                 ["sessions", "export", "--all", "-f", "jsonl"]):  # fmt: skip
        r = kaja.proc(*argv)
        assert r.code == 0, (argv, r)
        doc = json.loads(r.out)
        assert [m["content"] for m in doc["messages"]] == ["ca\ufffd", "ça va"], argv
    r = kaja.proc("sessions", "export", "s1")
    assert r.code == 0 and "ca\ufffd" in r.out and "ça va" in r.out, r


# --- byte for byte: the exports of awkward data (issue 29) ------------------------------------
def _reference(fmt: str, state) -> str:
    import gzip

    from tests.support import awkward_session

    data = gzip.decompress((awkward_session.REFERENCE / f"awkward.{fmt}.gz").read_bytes())
    return data.decode().replace("<STATE>", str(state))


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_awkward_data_exports_byte_for_byte_as_before(kaja, tmp_path, fmt):
    """Control characters, BiDi, tabs and CRLF, `parts` and `arguments` that are
    not JSON or nest too deep, an image part spelled with a JSON escape, images
    present and missing, a BLOB, an infinity, bytes that are not UTF-8, a 1.6 MB
    tool result, notices and errors between messages: `sessions export ID` and
    `--all` write exactly what kaja wrote before its exports were made fast
    (tests/support/awkward_session.py, the files in export_reference/)."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    want = _reference(fmt, kaja.state)
    r = kaja("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", fmt)
    assert r.code == 0, r
    assert r.out == want
    if fmt == "html":
        r = kaja(
            "sessions", "export", "--all", "--all-owners", "-f", fmt, "-o", str(tmp_path / "d")
        )
        written = tmp_path / "d" / f"{awkward.SID}.html"
    else:
        written = tmp_path / f"all.{fmt}"
        r = kaja("sessions", "export", "--all", "--all-owners", "-f", fmt, "-o", str(written))
        want = want if fmt == "md" else f'{{"sessions":[{want.rstrip()}]}}\n'
    assert r.code == 0, r
    assert written.read_bytes() == want.encode()


def _every_message_by_render(monkeypatch) -> None:
    """From here on, every message is parsed from its JSON and written by
    render, as before SQLite wrote any piece itself: the reference output."""
    from kaja_cli.core.conversations import transcript

    monkeypatch.setattr(
        transcript._Reader,
        "message_pieces",
        lambda self, view, **_: (json.loads(t) for t in self.messages_json(condense=False)),
    )


def _as_render_writes(kaja, monkeypatch, argv: tuple[str, ...], fast) -> None:
    """`fast` (kaja ARGV as it is) is byte for byte what render writes."""
    _every_message_by_render(monkeypatch)
    reference = kaja(*argv)
    assert reference.code == 0, reference
    assert fast.out == reference.out


def _count_calls(monkeypatch, name: str) -> list[int]:
    """Each call of `transcript._Reader.<name>` from here on, counted."""
    from kaja_cli.core.conversations import transcript

    calls: list[int] = []
    original = getattr(transcript._Reader, name)

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(transcript._Reader, name, counted)
    return calls


@pytest.mark.parametrize("command", ["export", "resume"])
@pytest.mark.parametrize("seqs", ["whole numbers", "a fraction, then text"])
@pytest.mark.parametrize("run", [2, 3, 1024])
def test_json_by_pages_is_json_a_row_at_a_time(kaja, monkeypatch, command, seqs, run):
    """`export -f json` and `resume --json` read a session whose seq alone
    orders it a page of messages at a time, each page joined by SQLite
    (`_json_pages`): the same bytes as a row at a time, whatever the page's
    size, with pages that hold images to fill in (the page read again a row
    at a time), seqs that are not whole numbers (text ends the pages: the
    rest a row at a time), and resume's start at the latest summary with its
    condensed tool results."""
    from kaja_cli.core.conversations import transcript
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    awkward.seq_index(kaja.state)
    if seqs != "whole numbers":
        conn = sqlite3.connect(kaja.state / "kaja.db")
        with conn:
            conn.execute("UPDATE messages SET seq = seq + 0.5 WHERE seq IN (6, 7)")
            conn.execute("UPDATE messages SET seq = 'x' || (seq + 10) WHERE seq >= 12")
        conn.close()
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "json")
    if command == "resume":  # from seq 3 on, where a result is condensed
        argv = ("resume", awkward.SID, "--owner", awkward.OWNER, "--json")
        conn = sqlite3.connect(kaja.state / "kaja.db")
        with conn:
            conn.execute("DELETE FROM session_summaries WHERE summaryFrom = 4")
            conn.execute("UPDATE session_summaries SET summaryFrom = 3 WHERE summaryFrom = 99")
        conn.close()
    monkeypatch.setattr(transcript, "RUN", run)
    paged = kaja(*argv)
    assert paged.code == 0, paged
    pages = _count_calls(monkeypatch, "_json_pages")
    assert kaja(*argv).out == paged.out and pages  # the pages were read
    monkeypatch.setattr(transcript._Reader, "_seq_unique", lambda self: False)
    by_rows = kaja(*argv)
    assert by_rows.code == 0 and by_rows.out == paged.out
    got = json.loads(paged.out)
    seq = [m["seq"] for m in got["messages"]]
    if command == "resume":  # from the latest summary on
        assert got["summary"]["summaryFrom"] == seq[0] == 3 and len(seq) == 18
        assert got["messages"][0]["condensed"] is True
    elif seqs == "whole numbers":
        assert seq == list(range(1, 21))
    else:
        assert seq[5:8] == [6.5, 7.5, 8] and seq[11:] == [f"x{n}" for n in range(22, 31)]


def _spans_by_connection(monkeypatch, view: str = "json") -> dict[int, int]:
    """How many pages `transcript._Reader._json_span_reads` (`_html_…` for
    `view` "html") read on each connection (by id) from here on: the pages of
    an export split between two connections."""
    from kaja_cli.core.conversations import transcript

    pages: dict[int, int] = {}
    name = f"_{view}_span_reads"
    original = getattr(transcript._Reader, name)

    def counted(self, spans, *args):
        pages[id(self.conn)] = pages.get(id(self.conn), 0) + len(spans)
        return original(self, spans, *args)

    monkeypatch.setattr(transcript._Reader, name, counted)
    return pages


def _awkward_on(kaja, monkeypatch, fmt: str, run: int, processors: int):
    """The awkward session exported as `fmt` in pages of `run` messages on a
    machine of `processors`: on two, its pages read by two connections (all
    of them, between the two), on one by one. (argv, the result)."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db
    from tests.support import awkward_session as awkward

    monkeypatch.setattr(transcript, "RUN", run)  # 20 messages: 10 or 7 pages
    monkeypatch.setattr(db, "_processors", lambda: processors)
    pages = _spans_by_connection(monkeypatch, fmt)
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", fmt)
    split = kaja(*argv)
    assert split.code == 0, split
    if processors == 2:
        assert len(pages) == 2 and sum(pages.values()) == -(-20 // run), pages
    else:
        assert not pages
    return argv, split


@pytest.mark.parametrize("run", [2, 3])
@pytest.mark.parametrize("processors", [2, 1])
@pytest.mark.parametrize("seqs", ["whole", "fractions"])
def test_a_long_json_export_is_read_by_two_connections_the_same_bytes(
    kaja, monkeypatch, run, processors, seqs
):
    """A session of more than `SPLIT_PAGES` pages: its JSON pages are read by
    two connections at once, in turn (pages holding images read again a row
    at a time, text that is not UTF-8, a NUL in a text; seqs that are not whole
    numbers, a page's bound among them): the same bytes as a row at a time.
    One processor: one connection, the same bytes."""
    from kaja_cli.core.conversations import transcript
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    awkward.seq_index(kaja.state)
    want = list(range(1, 21))
    if seqs == "fractions":
        with closing(sqlite3.connect(kaja.state / "kaja.db")) as conn, conn:
            conn.execute("UPDATE messages SET seq = seq + 0.5 WHERE seq IN (4, 7, 13)")
        want = [s + 0.5 if s in (4, 7, 13) else s for s in want]
    argv, split = _awkward_on(kaja, monkeypatch, "json", run, processors)
    monkeypatch.setattr(transcript._Reader, "_seq_unique", lambda self: False)
    by_rows = kaja(*argv)
    assert by_rows.code == 0 and by_rows.out == split.out
    assert [m["seq"] for m in json.loads(split.out)["messages"]] == want


def test_export_all_joins_each_long_session_on_the_second_connection(kaja, monkeypatch, tmp_path):
    """`export --all`: the second connection joins each long session's snapshot
    in turn (its transaction ended before the next session begins): every
    session's bytes as a row at a time."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db

    _long_session(kaja.state, n=40)  # beside the awkward session of 20
    monkeypatch.setattr(transcript, "RUN", 2)
    monkeypatch.setattr(db, "_processors", lambda: 2)
    pages = _spans_by_connection(monkeypatch)
    argv = ("sessions", "export", "--all", "--all-owners", "-f", "jsonl")
    split = kaja(*argv)
    assert split.code == 0, split
    assert len(pages) == 2 and sum(pages.values()) == 20 // 2 + 40 // 2, pages
    monkeypatch.setattr(transcript._Reader, "_seq_unique", lambda self: False)
    by_rows = kaja(*argv)
    assert by_rows.code == 0 and by_rows.out == split.out
    assert len(split.out.splitlines()) >= 2


def test_a_commit_as_a_long_export_begins_leaves_it_on_one_connection(kaja, monkeypatch):
    """The agent commits after the export's snapshot began and before the
    second connection could join it: the export reads alone, at its own
    snapshot (the message as it was); the next export, with nothing
    committed meanwhile, is read by both and shows the change."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    awkward.seq_index(kaja.state)
    monkeypatch.setattr(transcript, "RUN", 2)
    monkeypatch.setattr(db, "_processors", lambda: 2)
    pages = _spans_by_connection(monkeypatch)
    bounds = transcript._Reader._page_bounds
    agent: list[bool] = []

    def commit_first(self, from_seq):  # inside the export's transaction
        if not agent:
            agent.append(True)
            with closing(sqlite3.connect(kaja.state / "kaja.db")) as conn, conn:
                conn.execute("UPDATE messages SET content = 'changed' WHERE seq = 19")
        return bounds(self, from_seq)

    monkeypatch.setattr(transcript._Reader, "_page_bounds", commit_first)
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "json")
    alone = kaja(*argv)
    assert alone.code == 0, alone
    contents = [m["content"] for m in json.loads(alone.out)["messages"]]
    assert "changed" not in contents and agent and not pages
    both = kaja(*argv)
    assert both.code == 0, both
    assert json.loads(both.out)["messages"][18]["content"] == "changed"
    assert len(pages) == 2


@pytest.mark.parametrize("seqs", ["one missing", "one twice"])
def test_a_session_whose_seq_does_not_order_it_is_read_in_full_order(kaja, monkeypatch, seqs):
    """A seq missing (NULL) or given twice: the session's messages go out by
    seq, then time, then id, read a row at a time (not by pages of seq)."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        if seqs == "one missing":
            conn.execute("UPDATE messages SET seq = NULL WHERE seq = 7")
        else:
            conn.execute("UPDATE messages SET seq = 5 WHERE seq = 7")
    want = [r[0] for r in conn.execute(
        "SELECT id FROM messages WHERE sessionId = ? ORDER BY seq, createdAt, id", (awkward.SID,)
    )]  # fmt: skip
    conn.close()
    pages = _count_calls(monkeypatch, "_json_pages")
    r = kaja("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "json")
    assert r.code == 0, r
    assert [m["id"] for m in json.loads(r.out)["messages"]] == want and not pages


def _html_by_rows(kaja, monkeypatch, argv: tuple[str, ...]) -> str:
    """What kaja ARGV writes with HTML's messages read a row at a time, as where
    something is placed between them (not joined by pages)."""
    from kaja_cli.core.conversations import transcript

    real = transcript._Reader.message_pieces
    with monkeypatch.context() as patch:
        patch.setattr(
            transcript._Reader, "message_pieces", lambda self, view, **_: real(self, view)
        )
        by_rows = kaja(*argv)
    assert by_rows.code == 0, by_rows
    return by_rows.out


@pytest.mark.parametrize("run", [2, 3, 1024])
@pytest.mark.parametrize("texts", ["as they are", "no NUL"])
def test_html_by_pages_is_html_a_row_at_a_time(kaja, monkeypatch, run, texts):
    """Where nothing is placed between the messages (no notices, no
    summaries), `export -f html` reads a page of messages joined by SQLite
    (`_html_pages`, a thread reading the next page): the same bytes as a row
    at a time and as render writes every message, whatever the page's size,
    with messages SQLite does not write first, last and side by side in a
    page (read again alone), tool results, images, empty and missing texts,
    and texts that hold a NUL (that page read again a row at a time). On one
    processor: one connection (two: `test_a_long_html_export_is_read_by_two_…`)."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    awkward.seq_index(kaja.state)
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        conn.execute("DELETE FROM session_events")
        conn.execute("DELETE FROM session_summaries")
        conn.execute("UPDATE messages SET content = '' WHERE seq = 4")
        conn.execute("UPDATE messages SET content = NULL WHERE seq = 9")
        if texts == "no NUL":
            conn.text_factory = bytes
            for rowid, text in conn.execute(
                "SELECT rowid, content FROM messages WHERE instr(content, char(0))"
            ).fetchall():  # fmt: skip
                conn.execute("UPDATE messages SET content = ? WHERE rowid = ?",
                             (text.replace(b"\0", b"0").decode("utf-8", "replace"), rowid))  # fmt: skip
    conn.close()
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "html")
    monkeypatch.setattr(transcript, "RUN", run)
    monkeypatch.setattr(db, "_processors", lambda: 1)
    pages = _count_calls(monkeypatch, "_html_page_reads")
    rows = _count_calls(monkeypatch, "_piece_rows")
    alone = _count_calls(monkeypatch, "_json_message")
    paged = kaja(*argv)
    assert paged.code == 0, paged
    assert len(pages) == 1 and alone
    # a text holding a NUL: its page a row at a time; else never
    assert bool(rows) == (texts == "as they are")
    assert _html_by_rows(kaja, monkeypatch, argv) == paged.out
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:  # no index to find a page by
        conn.execute("DROP INDEX messages_session_seq")
    conn.close()
    pages.clear()
    unindexed = kaja(*argv)
    assert unindexed.code == 0 and unindexed.out == paged.out and not pages
    _as_render_writes(kaja, monkeypatch, argv, paged)
    assert paged.out.count('<section class="msg') == 20


@pytest.mark.parametrize("run", [2, 3])
@pytest.mark.parametrize("processors", [2, 1])
@pytest.mark.parametrize("texts", ["as they are", "no NUL"])
def test_a_long_html_export_is_read_by_two_connections_the_same_bytes(
    kaja, monkeypatch, run, processors, texts
):
    """A session of more than `SPLIT_PAGES` pages: its HTML pages are read by
    two connections at once, in turn (`_html_split`), with everything the
    one-connection test has (messages SQLite does not write, tool results,
    images, texts holding a NUL): the same bytes as a row at a time and as
    render writes every message. One processor: one connection."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    awkward.seq_index(kaja.state)
    with closing(sqlite3.connect(kaja.state / "kaja.db")) as conn, conn:
        conn.execute("DELETE FROM session_events")
        conn.execute("DELETE FROM session_summaries")
        if texts == "no NUL":
            conn.execute("UPDATE messages SET content = replace(content, char(0), '0')"
                         " WHERE typeof(content) = 'text'")  # fmt: skip
    argv, split = _awkward_on(kaja, monkeypatch, "html", run, processors)
    assert _html_by_rows(kaja, monkeypatch, argv) == split.out
    _as_render_writes(kaja, monkeypatch, argv, split)
    assert split.out.count('<section class="msg') == 20


def _tool_session(state, turns: int, summarized: int) -> str:
    """A session of `turns` tool calls, each an assistant's message with its
    call and the tool's result after it (the agent's indexes by seq and by
    result), beside the awkward one; every `summarized`th call with a result
    summary, its result one SQLite does not write, at the end of the session
    (pages after its call): given whole, it names its call from those render
    has seen (`CALLS_BEFORE`). Its id."""
    from tests.support import awkward_session as awkward

    awkward.build(state)
    awkward.seq_index(state)
    sid = "01a00000-0000-7000-8000-00000000c3c3"
    at = "2026-11-03T10:00:00.000Z"
    with closing(sqlite3.connect(state / "kaja.db")) as conn, conn:
        conn.execute(
            'CREATE INDEX IF NOT EXISTS tool_calls_result ON tool_calls ("resultMessageId")'
        )
        conn.execute("INSERT INTO sessions (id, createdAt, updatedAt, owner, title)"
                     " VALUES (?, ?, ?, ?, 'tools')", (sid, at, at, awkward.OWNER))  # fmt: skip
        for i in range(turns):
            whole = i % summarized == summarized - 1
            conn.execute(
                "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
                " VALUES (?, ?, ?, 'assistant', ?, ?), (?, ?, ?, 'tool', ?, ?)",
                (f"A{i}", sid, 2 * i, f"looking {i}", at, f"R{i}", sid,
                 2 * turns + i if whole else 2 * i + 1, f"found {i} <&>", at),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO tool_calls (id, messageId, position, callId, name, arguments,"
                " resultMessageId, status, resultSummary) VALUES (?, ?, 0, ?, ?, ?, ?, 'ok', ?)",
                (f"T{i}", f"A{i}", f"call{i}", f"tool_{i % 3}", json.dumps({"q": f"item {i}"}),
                 f"R{i}", "in short" if whole else None),
            )  # fmt: skip
    return sid


@pytest.mark.parametrize("processors", [2, 1])
@pytest.mark.parametrize("summarized", [9, 7])  # 4 results on the last page, or 5: by rows
def test_tool_results_given_whole_name_their_calls_across_both_connections(
    kaja, monkeypatch, processors, summarized
):
    """A tool result SQLite does not write names its call from the calls render
    has seen, some written by SQLite on pages the other connection read: each
    reading thread keeps the calls it found, the caller keeps those after the
    last result given whole (`_settled`): the same bytes as render writes."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db
    from tests.support import awkward_session as awkward

    sid = _tool_session(kaja.state, turns=40, summarized=summarized)  # 80 messages
    monkeypatch.setattr(transcript, "RUN", 8)  # 10 pages: those results on the last
    monkeypatch.setattr(db, "_processors", lambda: processors)
    pages = _spans_by_connection(monkeypatch, "html")
    whole = _count_calls(monkeypatch, "_json_message")
    argv = ("sessions", "export", sid, "--owner", awkward.OWNER, "-f", "html")
    split = kaja(*argv)
    assert split.code == 0, split
    assert len(whole) == 40 // summarized and len(pages) == 2 * (processors == 2), pages
    assert split.out.count("tool_1") >= 13 and split.out.count("in short") == 40 // summarized
    _as_render_writes(kaja, monkeypatch, argv, split)


def test_a_long_session_of_many_marks_on_two_connections_reads_the_rest_by_rows(kaja, monkeypatch):
    """Split between two connections, from a page of many messages SQLite does
    not write the rest of the session is read by rows in the caller's thread,
    as on one connection, both reading threads stopped first: one statement
    for the rest, the same bytes as render writes."""
    from kaja_cli.core.conversations import transcript
    from kaja_cli.core.engine import db
    from tests.support import awkward_session as awkward

    sid = _long_session(kaja.state, n=160, every=2)
    monkeypatch.setattr(transcript, "RUN", 16)  # 10 pages of 8 marks: more than `_MARKED`
    monkeypatch.setattr(db, "_processors", lambda: 2)
    pages = _spans_by_connection(monkeypatch, "html")
    statements = _statements(monkeypatch)
    argv = ("sessions", "export", sid, "--owner", awkward.OWNER, "-f", "html")
    split = kaja(*argv)
    assert split.code == 0, split
    assert len(pages) == 2 and sum(pages.values()) == 10, pages
    # the first page joined (and a few the other thread read ahead), the rest by rows
    joined = [q for q in statements if q.startswith("SELECT CAST(group_concat(j")]
    by_rows = [q for q in statements if q.startswith("SELECT CAST(j AS BLOB)")]
    assert 1 <= len(joined) <= 4 and len(by_rows) == 1, statements
    _as_render_writes(kaja, monkeypatch, argv, split)


def test_a_page_longer_than_sqlites_longest_string_is_read_a_row_at_a_time(tmp_path, monkeypatch):
    """A page of messages joined is one string, and SQLite refuses one longer
    than its limit (1 GB by default: "string or blob too big"); each message
    alone is within it, so that page is read a row at a time: the same bytes."""
    from kaja_cli.core.conversations import transcript
    from tests.support import awkward_session as awkward

    awkward.build(tmp_path)
    awkward.seq_index(tmp_path)
    monkeypatch.setattr(transcript, "RUN", 8)
    conn = sqlite3.connect(tmp_path / "kaja.db")
    try:
        reader = transcript.SessionReader(conn, awkward.SID, tmp_path / "images")
        one_by_one = list(reader.messages_json_bytes(condense=False))
        longest = max(map(len, one_by_one))
        at = [len(m) for m in one_by_one].index(longest) // 8 * 8
        assert len(b",".join(one_by_one[at : at + 8])) > longest + 200  # that page is longer
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, longest + 200)
        refused: list[str] = []
        execute = reader._execute

        def noting(sql, args):
            try:
                return execute(sql, args)
            except sqlite3.DataError as e:
                refused.append(str(e))
                raise

        monkeypatch.setattr(reader, "_execute", noting)
        runs = list(reader.messages_json_runs(condense=False))
        assert refused == ["string or blob too big"]  # that page's join, and only it
        assert b",".join(runs) == b",".join(one_by_one)
        assert conn.text_factory is str  # as it was
    finally:
        conn.close()


def test_an_html_page_longer_than_sqlites_longest_string_is_read_a_row_at_a_time(
    tmp_path, monkeypatch
):
    """HTML's pages too (`_html_page_reads`): a page SQLite refuses to join is
    read a row at a time, the same pieces as the row path."""
    from kaja_cli.core.conversations import transcript
    from tests.support import awkward_session as awkward

    awkward.build(tmp_path)
    awkward.seq_index(tmp_path)
    monkeypatch.setattr(transcript, "RUN", 8)
    conn = sqlite3.connect(tmp_path / "kaja.db")
    try:
        with conn:
            conn.execute("DELETE FROM session_events")
            conn.execute("DELETE FROM session_summaries")

        def pieces(**kwargs) -> list[bytes]:
            reader = transcript.SessionReader(conn, awkward.SID, tmp_path / "images")
            return [m.data if isinstance(m, transcript.Pieces) else json.dumps(m).encode()
                    for m in reader.message_pieces("html", **kwargs)]  # fmt: skip

        by_rows = pieces()
        joined = pieces(asides=False)
        assert b"".join(joined) == b"".join(by_rows)
        longest = max(len(m) for m in by_rows)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, longest + 200)
        assert b"".join(pieces(asides=False)) == b"".join(by_rows)  # not "string or blob too big"
    finally:
        conn.close()


def _statements(monkeypatch) -> list[str]:
    """Each statement the exports' readers run (`_Reader._execute`) from here on."""
    from kaja_cli.core.conversations import transcript

    statements: list[str] = []
    execute = transcript._Reader._execute

    def counted(self, sql, args):
        statements.append(sql)
        return execute(self, sql, args)

    monkeypatch.setattr(transcript._Reader, "_execute", counted)
    return statements


def _long_session(state, n: int = 5000, every: int = 0) -> str:
    """A session of `n` plain messages (with the agent's index by seq) beside
    the awkward one; `every`: each such message a reasoning one, which SQLite
    does not write (the rest HTML's pages join). Its id."""
    from tests.support import awkward_session as awkward

    awkward.build(state)
    awkward.seq_index(state)
    sid = "01a00000-0000-7000-8000-00000000b2b2"
    at = "2026-11-03T10:00:00.000Z"
    conn = sqlite3.connect(state / "kaja.db")
    with conn:
        conn.execute("INSERT INTO sessions (id, createdAt, updatedAt, owner, title)"
                     " VALUES (?, ?, ?, ?, 'long')", (sid, at, at, awkward.OWNER))  # fmt: skip
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, reasoning, createdAt)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(f"L{i}", sid, i, "user" if i % 2 else "assistant", f"message {i} <&> " * 20,
              "thinking" if every and i % every == 0 else None, at) for i in range(n)],
        )  # fmt: skip
    conn.close()
    return sid


@pytest.mark.parametrize(
    "argv",
    [["sessions", "export", "{sid}", "-f", "html"], ["sessions", "export", "{sid}", "-f", "json"],
     ["sessions", "export", "{sid}", "-f", "jsonl"], ["resume", "{sid}", "--json"]],
)  # fmt: skip
def test_a_reader_that_goes_away_from_a_long_export_is_not_a_failure(kaja, argv):
    """`kaja sessions export ID | head`: the thread reading the next page is
    stopped before the connection closes (a statement on a closed connection
    crashes the interpreter): exit 0, nothing on stderr, every time."""
    from tests.support import awkward_session as awkward

    sid = _long_session(kaja.state)
    line = " ".join(a.format(sid=sid) for a in argv) + f" --owner {awkward.OWNER}"
    for _ in range(4):
        p = subprocess.run(
            ["bash", "-c", f'set -o pipefail; "{KAJA}" {line} | head -c 100 >/dev/null'],
            env=kaja.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert (p.returncode, p.stderr) == (0, ""), line


def test_a_session_of_many_messages_sqlite_does_not_write_is_read_by_rows(kaja, monkeypatch):
    """Where most messages are ones SQLite does not write (reasoning, tool
    calls), HTML reads the session a row at a time after its first page, not
    each of them again alone: a few statements a page, the same bytes."""
    from kaja_cli.core.conversations import transcript
    from tests.support import awkward_session as awkward

    sid = _long_session(kaja.state, n=64, every=2)
    monkeypatch.setattr(transcript, "RUN", 16)  # 8 a page: more than `_MARKED`
    statements = _statements(monkeypatch)
    argv = ("sessions", "export", sid, "--owner", awkward.OWNER, "-f", "html")
    fast = kaja(*argv)
    assert fast.code == 0, fast
    # a page each, the first twice (joined, then by rows), not one for each
    assert len(statements) <= 64 // 16 + 4, statements
    _as_render_writes(kaja, monkeypatch, argv, fast)


def test_json_of_images_beside_text_that_is_not_utf8(kaja):
    """A message with an image and text that is not UTF-8: its JSON is written
    with U+FFFD for the bad bytes (the images filled in), not an error."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        conn.execute("UPDATE messages SET content = CAST(x'6361e4206f6b' AS TEXT)"
                     " WHERE parts LIKE '%image%' AND parts LIKE '%" + awkward.SHA_HERE + "%'")  # fmt: skip
    conn.close()
    r = kaja("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "json")
    assert r.code == 0, r
    got = [m for m in json.loads(r.out)["messages"] if m["content"] == "ca\ufffd ok"]
    assert got and got[0]["images"][0]["sha256"] == awkward.SHA_HERE


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_what_sqlite_writes_is_what_render_writes(demo_store, tmp_path, monkeypatch, fmt):
    """Every session of the demo, exported with the plainest messages written by
    SQLite (core/conversations/pieces.py) and with every message parsed from its
    JSON and written by render, as before: the same bytes."""

    def export(name: str) -> dict[str, bytes]:
        out = tmp_path / name  # a folder: one file per session
        r = demo_store("sessions", "export", "--all", "--all-owners", "-f", fmt, "-o", f"{out}/")
        assert r.code == 0, r
        return {p.name: p.read_bytes() for p in out.iterdir()}

    fast = export("fast")
    _every_message_by_render(monkeypatch)
    reference = export("reference")
    assert len(fast) > 5 and fast == reference


def _tool_results_store(state) -> str:
    """A session of tool results of every kind beside their calls (the
    awkward session's schema, with the agent's indexes on `tool_calls`): the
    plain ones SQLite writes itself (core/conversations/pieces.py
    `tool_simple`), and each way one may not be, which render writes."""
    from tests.support import awkward_session as awkward

    sid = awkward.SID
    awkward.build(state)
    with sqlite3.connect(state / "kaja.db") as conn:
        conn.execute('CREATE INDEX tool_calls_message ON tool_calls ("messageId")')
        conn.execute('CREATE INDEX tool_calls_result ON tool_calls ("resultMessageId")')
        conn.execute("DELETE FROM tool_calls")
        conn.execute("DELETE FROM messages")
        conn.execute("DELETE FROM session_events WHERE seq > 3")
        at = "2026-11-03T10:00:00.000Z"
        results = [
            # id, content, createdAt, parts: the tool results, one call each unless said
            ("r01", "plain result & <b> \"q\" 'x'", at, None),
            ("r02", "fence inside\n```\ncode\n```", at, None),
            ("r03", None, at, None),
            ("r04", "", "", None),
            ("r05", b"\x00blob", at, None),
            ("r06", "ctl \x1b[31m \u202e bidi\r\n", "2026\tx", None),
            ("r07", "named twice", at, None),
            ("r08", "call made after", at, None),
            ("r09", "call in another session", at, None),
            ("ABCD", "hex id, a BLOB call id", at, None),
            ("r11", "summarized", at, None),
            ("r12", "parts", at, "[broken"),
            ("r13", "own call", at, None),
            ("r14", "name with `tick`", at, None),
            ("r15", "name\twith tab", at, None),
            ("r16", "no name", at, None),
            ("r17", "number name", at, None),
            ("r18", "empty summary", at, None),
            ("r19", "zero summary", at, None),
            ("r20", "by call id only", at, None),
        ]
        rows, calls, seq = [], [], 0
        for n, (rid, content, created, parts) in enumerate(results):
            seq += 1
            caller = f"a{n:02d}"
            rows.append((caller, sid, seq, "assistant", None, None, "gpt", at))
            seq += 1
            rows.append((rid, sid, seq, "tool", content, parts, None, created))
            name = {"r04": "a&b", "r14": "read`x", "r15": "read\tx", "r16": "", "r17": 7}.get(
                rid, "read"
            )
            summary = {"r11": "shorter", "r18": "", "r19": 0}.get(rid)
            result = None if rid == "r20" else rid
            calls.append((f"t{n:02d}", caller, 0, f"call_{n}", name, '{"q": "x"}', result,
                          "ok", 1500, None, summary))  # fmt: skip
        calls += [
            ("t90", "a06", 1, "call_90", "second", "{}", "r07", "ok", None, None, None),
            ("t91", "a99", 0, "call_91", "later", "{}", "r08", "ok", None, None, None),
            ("t92", "zz", 0, "call_92", "elsewhere", "{}", "r09", "ok", None, None, None),
            ("t93", "r13", 0, "call_93", "own", "{}", None, None, None, None, None),
        ]
        calls = [c for c in calls if c[0] not in ("t07", "t08")]  # r08, r09: only the odd call
        calls.append(("t94", "a09", 0, "call_94", "blob", "{}", b"\xab\xcd", "ok", 5, None, None))
        rows.append(("a99", sid, 999, "assistant", "last", None, "gpt", at))
        # Calls of every shape (pieces.calls_simple): name, status, duration,
        # approval, arguments, position; a message's text; a model with a tab.
        q = '{"q": "x"}'
        shapes = [
            [("read", "ok", 1500, None, q)], [("read", "ok", 1250, None, q)],
            [("read", "ok", 59960, None, q)], [("read", "ok", 60000, None, q)],
            [("read", "ok", -5, None, q)], [("read", "ok", 0, None, q)],
            [("read", "ok", 999, "auto", q)], [("read", "ok", 100, "a\tb", q)],
            [("read", "ok", 1500.0, None, q)], [("read", "ok", None, None, '{"a": {"b": 1}}')],
            [("read", "ok", None, None, '{"n": 5}')], [("read", "ok", None, None, '{"k": "v", "k": "w"}')],
            [("read", "ok", None, None, '{"e": "\\u00e9"}')], [("read", "ok", None, None, '{"c": "```x"}')],
            [("read", "ok", None, None, "{}")], [("read", "ok", None, None, "")],
            [("read", "ok", None, None, "{not json")], [("read", "ok", None, None, "[1, 2]")],
            [("read", "ok", None, None, '{"s": "a\\nb \\"q\\" \\\\ \\t \x7f \u2028 \u00e9", "t": ""}')],
            [("read", "", None, None, q)], [("read", None, None, None, q)],
            [("read", "ok\nx", None, None, q)], [("a`b", "ok", None, None, q)],
            [("one", "ok", 5, None, q), ("two", "error", 2500, "asked", None)],
            [("same1", "ok", None, None, q), ("same2", "ok", None, None, q)],
        ]  # fmt: skip
        for n, shape in enumerate(shapes):
            mid = f"b{n:02d}"
            model = "gpt\tx" if n == 3 else "gpt"
            content = "Some text" if n in (0, 23) else None
            rows.append((mid, sid, 1000 + n, "assistant", content, None, model, at))
            for k, (name, status, took, approval, args) in enumerate(shape):
                position = 0 if n == 24 else k
                calls.append((f"u{n:02d}{k}", mid, position, "call_wait" if n == 20 else f"c{n}{k}",
                              name, args, None, status, took, approval, None))  # fmt: skip
        conn.execute("DELETE FROM session_events")
        events = [(1, "tool_start", "{}"), (2, "notice", '{"text": "after the first call"}'),
                  (3, "tool_start", "{}"), (4, "tool_start", "{}"),
                  (5, "error", '{"text": "after the third"}')]  # fmt: skip
        conn.executemany(
            "INSERT INTO session_events VALUES (?, ?, ?, ?)", [(sid, *e) for e in events]
        )
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, parts, model, createdAt)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany("INSERT INTO tool_calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", calls)
        conn.execute(
            "INSERT INTO messages (id, sessionId, seq, role, content) VALUES ('zz', 'other', 1,"
            " 'assistant', 'x')"
        )
    return sid


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_tool_results_sqlite_writes_are_what_render_writes(kaja, monkeypatch, fmt):
    """Tool results SQLite writes itself (a plain one, its call found without
    doubt), and every kind it leaves to render: the same bytes as render
    writing every message from its JSON."""
    from tests.support import awkward_session as awkward

    sid = _tool_results_store(kaja.state)
    argv = ("sessions", "export", sid, "--owner", awkward.OWNER, "-f", fmt)
    fast = kaja(*argv)
    assert fast.code == 0, fast
    written = {"md": "### Tool result · `read` · 2026-11-03T10:00:00.000Z\n\n```\nplain",
               "html": "Tool result · <code>read</code><span class=\"when\">"}  # fmt: skip
    assert written[fmt] in fast.out
    _as_render_writes(kaja, monkeypatch, argv, fast)


@pytest.mark.parametrize("tz", ["UTC0", "CET-1CEST,M3.5.0,M10.5.0/3"])
def test_html_texts_and_times_sqlite_writes_are_what_render_writes(kaja, monkeypatch, tz):
    """The HTML SQLite writes with each text escaped in Python beside it (a NUL,
    `&<>"'`, a text holding a NUL in a tool result, a tool's name holding
    one) and each time worded from its own characters where the zone is UTC
    (issue 40): in UTC and in a zone whose offset changes inside the
    session, with times outside the session's span too, and text in a time's
    shape that is no time, the same bytes as render writing every message."""
    import time

    from tests.support import awkward_session as awkward

    sid = _tool_results_store(kaja.state)
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        conn.execute(
            "UPDATE sessions SET \"createdAt\" = '2026-10-24T20:00:00.000Z',"
            " \"updatedAt\" = '2026-11-03T10:00:00.000Z' WHERE id = ?", (sid,),
        )  # fmt: skip
        times = {"r02": "2026-10-25T00:30:00.000Z", "r03": "2026-10-25T01:30:00.000Z",
                 "a02": "2026-10-25T00:59:59.999Z", "a03": "2020-01-01T00:00:00.000Z",
                 "b00": "2026-10-25T01:00:00.000Z", "a04": "2031-01-01T00:00:00.000Z",
                 "a05": "2026-10-25T00:10:00.000Z\x00<x>", "r06": "2026-10-25T00:10:00.000Z\x00"}  # fmt: skip
        for mid, at in times.items():
            conn.execute('UPDATE messages SET "createdAt" = ? WHERE id = ?', (at, mid))
        conn.execute("UPDATE messages SET content = ? WHERE id = 'r02'", ("x\x00<y> & 'z'",))
        conn.execute("UPDATE messages SET content = ? WHERE id = 'b00'", ('"a"\x00<b>',))
        conn.execute("UPDATE tool_calls SET name = ? WHERE id = 't00'", ("rd\x00<x>",))
        conn.execute(
            'INSERT INTO messages (id, "sessionId", seq, role, content, model, "createdAt")'
            " VALUES ('u1', ?, 5000, 'user', ?, NULL, '2026-10-25T00:10:00.000Z'),"
            " ('u2', ?, 5001, 'assistant', ?, 'gpt <4>', '2026-10-25T02:10:00.000Z'),"
            # in the session's span and in the shape of a time, but none (render
            # shows them as text): a day 32, a minute 60, a letter for a digit
            " ('u3', ?, 5002, 'user', 'a', NULL, '2026-10-32T00:10:00.000Z'),"
            " ('u4', ?, 5003, 'user', 'b', NULL, '2026-10-25T10:60:00.000Z'),"
            " ('u5', ?, 5004, 'assistant', 'c', 'gpt', '2026-10-25T1x:10:00.000Z')",
            (sid, "<b>bold</b> & \"q\" 'a' \x00 end", sid, "fine", sid, sid, sid),
        )
    conn.close()
    monkeypatch.setenv("TZ", tz)
    time.tzset()
    try:
        argv = ("sessions", "export", sid, "--owner", awkward.OWNER, "-f", "html")
        fast = kaja(*argv)
        assert fast.code == 0, fast
        assert "&lt;b&gt;bold&lt;/b&gt; &amp; &quot;q&quot; &#x27;a&#x27; \\x00 end" in fast.out
        assert "x\\x00&lt;y&gt; &amp; &#x27;z&#x27;" in fast.out
        _as_render_writes(kaja, monkeypatch, argv, fast)
    finally:
        monkeypatch.delenv("TZ")
        os.environ["TZ"] = "UTC"
        time.tzset()


def test_html_escapes_what_follows_a_nul(kaja, monkeypatch):
    """SQLite's GLOB stops at a NUL, and so does printf's %s: a `<` after one, in
    a message's text, its model or its time, a tool call's name or approval,
    is escaped all the same (as render escapes it), never reaches the page
    raw, and nothing after the NUL is lost."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    at = "2026-11-03T10:00:00.000Z"
    rows = [
        ("n1", "user", "a\x00<script>x</script> & 'q'", None, at),
        ("n2", "assistant", "plain 'one'", "gpt\x00", "<b>" + at),
        ("n3", "assistant", 'it\'s "quoted" & <tagged>', "gpt", at),
        ("n4", "user", "only 'apostrophes'", None, at),
        ("n5", "assistant", "a model to escape", "gpt <&> \"'", at + " '&'"),
        ("n6", "assistant", "calls", "gpt", at),
        ("n7", "assistant", None, "gpt", at),
        ("n8", "assistant", None, "gpt", at),
    ]
    calls = [
        ("c6", "n6", 0, "x6", "na\x00<me>", '{"q": "<x>"}', None, "ok", 5, None, None),
        ("c8", "n8", 0, "x8", "name", None, None, "ok", None, "y\x00<es>", None),
        ("c7", "n7", 0, "x7", "name <&>", '{"q": "it\'s"}', None, "error", 5, "by <you>", None),
    ]
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        conn.execute("DELETE FROM tool_calls")
        conn.execute("DELETE FROM messages")
        conn.execute("DELETE FROM session_events")
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, model, createdAt)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(i, awkward.SID, n, role, text, model, when)
             for n, (i, role, text, model, when) in enumerate(rows, start=1)],
        )  # fmt: skip
        conn.executemany("INSERT INTO tool_calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", calls)
    conn.close()
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "html")
    fast = kaja(*argv)
    assert fast.code == 0, fast
    assert "<script>" not in fast.out and "<b>" not in fast.out
    assert "a\\x00&lt;script&gt;x&lt;/script&gt; &amp; &#x27;q&#x27;" in fast.out
    assert "only &#x27;apostrophes&#x27;" in fast.out
    assert "Kaja · gpt &lt;&amp;&gt; &quot;&#x27;" in fast.out and "Z &#x27;&amp;&#x27;" in fast.out
    assert "na\\x00&lt;me&gt;" in fast.out and "y\\x00&lt;es&gt;" in fast.out
    assert "<code>name &lt;&amp;&gt;</code>" in fast.out and "by &lt;you&gt;" in fast.out
    _as_render_writes(kaja, monkeypatch, argv, fast)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_runs_sqlite_writes_are_escaped_as_render_escapes_them(kaja, monkeypatch, fmt):
    """A run of plain messages SQLite wrote goes out as its bytes only when it
    holds nothing the escaping rule changes: each control (C0, DEL, C1), each
    BiDi control and bytes that are not UTF-8, alone among plain messages,
    come out as render writes them, and so do the characters that merely
    share a first byte with them (`·`, `’`, `→`, `Ø`), each a run of its own."""
    from kaja_cli.render.layout import ESCAPED
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    at = "2026-11-03T10:00:00.000Z"
    odd = [chr(c) for c in ESCAPED if c not in (0x09, 0x0A)]
    texts = [f"text {c} here" for c in odd] + [b"not \xff\xfe utf-8", b"cut \xe2\x80"]
    texts += ["only · ’ → Ø é tab\there"]
    rows = []
    for n, text in enumerate(texts):
        # a system message (render writes it) between: each text a run of its own
        rows.append((f"p{n:03d}", 2 * n + 1, "system", "plain one", at))
        rows.append((f"q{n:03d}", 2 * n + 2, "assistant", text, at))
    conn = sqlite3.connect(kaja.state / "kaja.db")
    with conn:
        conn.execute("DELETE FROM tool_calls")
        conn.execute("DELETE FROM messages")
        conn.execute("DELETE FROM session_events")
        conn.execute("DELETE FROM session_summaries")  # nothing to place between the runs
        conn.executemany(
            "INSERT INTO messages (id, sessionId, seq, role, content, createdAt)"
            " VALUES (?, ?, ?, ?, CAST(? AS TEXT), ?)",
            [(i, awkward.SID, seq, role, text, when) for i, seq, role, text, when in rows],
        )
    conn.close()
    argv = ("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", fmt)
    fast = kaja(*argv)
    assert fast.code == 0, fast
    assert "text \\x1b here" in fast.out and "text \\u202e here" in fast.out
    assert "not \ufffd\ufffd utf-8" in fast.out and "only · ’ → Ø é tab\there" in fast.out
    _as_render_writes(kaja, monkeypatch, argv, fast)


def test_a_blob_or_infinity_in_kajas_own_columns_is_json(demo_store):
    """kaja's schema declares its columns' types: a BLOB where TEXT is declared
    (which no number can be) is its hex, an infinite REAL in an INTEGER column
    its text, as in a file another program wrote (the awkward session)."""
    with sqlite3.connect(demo_store.state / "kaja.db") as conn:
        mid, sid, owner = conn.execute(
            'SELECT m.id, m."sessionId", s.owner FROM messages AS m'
            ' JOIN sessions AS s ON s.id = m."sessionId" ORDER BY m.rowid LIMIT 1'
        ).fetchone()
        conn.execute(
            "UPDATE messages SET content = X'00FF', model = X'', \"promptTokens\" = 9e999,"
            ' "latencyMs" = -9e999 WHERE id = ?',
            (mid,),
        )
    conn.close()
    r = demo_store("sessions", "export", sid, "--owner", owner, "-f", "json")
    assert r.code == 0, r
    m = next(m for m in json.loads(r.out)["messages"] if m["id"] == mid)
    assert (m["content"], m["model"], m["promptTokens"], m["latencyMs"]) == (
        "00FF",
        "",
        "Inf",
        "-Inf",
    )


def test_json_text_with_a_nul_is_exported_whole(demo_store):
    """SQLite's JSON functions stop at a NUL (json_valid() says yes to `{…}`
    NUL `tail`, json() drops the tail): a tool call's arguments or a message's
    parts holding one is text, as Python's parser reads it, and every format
    writes all of it."""
    from contextlib import closing

    args = '{"path": "/var/log/backup.log"}\x00TAIL-ARGS'
    parts = '[{"type": "text", "text": "hi"}]\x00TAIL-PARTS'
    with closing(sqlite3.connect(demo_store.db)) as conn, conn:
        call, caller = conn.execute(
            "SELECT t.id, m.id FROM tool_calls AS t JOIN messages AS m ON m.id = t.messageId"
            " WHERE m.sessionId LIKE ? ORDER BY m.seq, t.position LIMIT 1", (BACKUP[:8] + "%",),
        ).fetchone()  # fmt: skip
        message = conn.execute(  # another message: the caller stays one SQLite writes itself
            "SELECT id FROM messages WHERE sessionId LIKE ? AND role = 'user' ORDER BY seq LIMIT 1",
            (BACKUP[:8] + "%",),
        ).fetchone()[0]
        conn.execute("UPDATE tool_calls SET arguments = ? WHERE id = ?", (args, call))
        conn.execute("UPDATE messages SET parts = ? WHERE id = ?", (parts, message))
    r = demo_store("sessions", "export", BACKUP[:8], "-f", "json")
    assert r.code == 0, r
    doc = json.loads(r.out)
    by_id = {m["id"]: m for m in doc["messages"]}
    assert by_id[message]["parts"] == parts
    assert [c["arguments"] for c in by_id[caller]["tool_calls"] if c["id"] == call] == [args]
    r = demo_store("resume", BACKUP[:8], "--json")
    assert r.code == 0 and "TAIL-ARGS" in r.out, r
    for fmt, tails in (("md", ["TAIL-ARGS", "TAIL-PARTS"]), ("html", ["TAIL-ARGS"])):
        r = demo_store("sessions", "export", BACKUP[:8], "-f", fmt)
        assert r.code == 0 and all(t in r.out for t in tails), (fmt, r)
