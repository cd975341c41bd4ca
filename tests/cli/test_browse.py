"""`kaja browse` (issue 27): the picker driven by Textual's Pilot in this
process (type, navigate, select, delete with its question, resize, the owner
rule), the command's own answers (no terminal: exit 2), and once end to end
in a real terminal under tmux (type a word, the list changes, Enter prints the
id on stdout)."""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import KAJA

TOMATO = "01a22652-5660-76c3-b813-0c4237730edf"  # "Tomato leaves curling in the heat"
BACKUP = "01a226e4-d260-72a8-ab71-1343220d672b"  # the terminal's newest
RECEIPT = "01a220a6-4fa0-783a-b596-41d21b5c56d3"  # telegram:482913's "Photo of a receipt"


def _store(k):
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    return Store.locate(Overrides(config=k.config, state_dir=k.state))


def _app(k, *, owner=None, all_owners=False, archived=False, query=""):
    from kaja_cli.browse.app import BrowseApp
    from kaja_cli.browse.data import Options
    from kaja_cli.commands.options import SessionFilters

    store = _store(k)
    flt = SessionFilters(owner=owner, all_owners=all_owners, archived=archived).to_filter(store)
    return BrowseApp(store, Options(flt, owner), query)


def drive(app, steps, size=(120, 40)):
    """Run `app` headless; `steps(pilot)` is an async function driving it."""

    async def main():
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await steps(pilot)

    asyncio.run(main())
    return app.return_value


async def settle(pilot):
    """Until the searches and previews asked for are on screen."""
    for _ in range(50):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return


def ids(app) -> list[str]:
    return [r.id for r in app.page.rows]


def preview_text(app) -> str:
    from textual.widgets import Static

    return "\n".join(str(s.content) for s in app.query_one("#preview").query(Static))


def status(app) -> str:
    return str(app.query_one("#status").render())


# --- the command ---------------------------------------------------------------------------
def test_without_a_terminal_it_is_one_line_and_exit_2(shared_demo_store):
    r = shared_demo_store("browse", "tomato")
    assert r.code == 2, r
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("kaja: browse needs a terminal")
    assert "kaja search" in r.err and "kaja sessions" in r.err


def test_a_usage_error_in_the_filters_comes_first(shared_demo_store):
    r = shared_demo_store("browse", "--owner", "telegram:1", "--all-owners")
    assert r.code == 2 and "can't be combined" in r.err, r


def test_sessions_i_hands_over_to_browse(shared_demo_store):
    r = shared_demo_store("sessions", "-i", "--model", "gpt-5-mini")
    assert r.code == 2 and r.err.startswith("kaja: browse needs a terminal"), r
    r = shared_demo_store("sessions", "-i", "--json")
    assert r.code == 2 and "-i is full screen" in r.err, r


def test_the_browse_floor_imports_no_command():
    """browse sits beside render: it imports the core and render, never the
    commands or the app (they import it)."""
    from tests.unit.test_layering import ROOT, _kaja_imports

    for path in sorted((ROOT / "kaja_cli" / "browse").glob("*.py")):
        bad = {
            n for n in _kaja_imports(path) if n.startswith(("kaja_cli.commands", "kaja_cli.app"))
        }
        assert not bad, (path, bad)


def test_textual_is_imported_by_browse_only():
    """No other command's start-up moves: the app, every command module and
    the core load without Textual."""
    code = (
        "import sys, kaja_cli.app, kaja_cli.commands.browse\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- typing, moving, choosing ----------------------------------------------------------------
def test_typing_searches_and_enter_chooses_the_match(shared_demo_store):
    app = _app(shared_demo_store)

    async def steps(pilot):
        assert ids(app)[0] == BACKUP and TOMATO in ids(app)  # the listing: newest first
        assert "sessions · terminal" in str(app.query_one("#list").border_title)
        await pilot.press(*"tomato curling")
        await settle(pilot)
        assert ids(app) == [TOMATO]
        row = app.page.rows[0]
        assert "curling" in row.snippet.lower() and row.highlights
        assert "You: " in preview_text(app) and "tomato" in preview_text(app).lower()
        assert status(app).startswith("1 session matching")
        await pilot.press("enter")

    assert drive(app, steps) == TOMATO
    # Each page went on screen once its search was done (the benchmark's figure).
    assert app.timings and all(asked <= ready <= shown for _, asked, ready, shown in app.timings)


def test_enter_on_a_session_deleted_meanwhile_prints_nothing(demo_store):
    """Deleted from another shell after the list was read: Enter says so and
    reloads the list, instead of printing an id `kaja resume` cannot open."""
    import sqlite3

    app = _app(demo_store)

    async def steps(pilot):
        assert ids(app)[0] == BACKUP
        with sqlite3.connect(demo_store.db) as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (BACKUP,))
        conn.close()
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running and app.return_value is None
        assert status(app).startswith(f"{BACKUP[:8]} is gone: deleted since the list was read")
        assert BACKUP not in ids(app)
        await pilot.press("enter")  # the next one is there: chosen

    assert drive(app, steps) not in (None, BACKUP)


def test_a_newer_keystroke_wins(shared_demo_store):
    """Typed fast, only the last query's answer is shown."""
    app = _app(shared_demo_store)

    async def steps(pilot):
        for ch in "brulee":
            await pilot.press(ch)  # no pause for the searches in between
        await settle(pilot)
        assert app.page.query == "brulee"
        assert [r.title for r in app.page.rows] == ["Crème brûlée for eight"]  # accents ignored
        await pilot.press("escape")

    assert drive(app, steps) is None


def test_keys_move_the_list_from_the_search_box_and_in_it(shared_demo_store):
    app = _app(shared_demo_store)

    async def steps(pilot):
        lst = app.query_one("#list")
        n = len(ids(app))
        await pilot.press("down", "down")
        assert lst.highlighted == 2
        await pilot.press("end")
        assert lst.highlighted == n - 1
        await pilot.press("home", "down")
        await settle(pilot)
        assert lst.highlighted == 1
        title = app.page.rows[1].title
        assert title in preview_text(app)  # the preview follows the selection
        await pilot.press("tab")  # into the list
        assert app.focused is lst
        await pilot.press("down", "up", "pagedown")
        assert lst.highlighted == n - 1
        await pilot.press("enter")

    assert drive(app, steps) == ids(app)[-1]


def test_letters_in_the_search_box_are_typed_not_actions(shared_demo_store):
    app = _app(shared_demo_store)

    async def steps(pilot):
        await pilot.press(*"dare o?")
        await settle(pilot)
        assert len(app.screen_stack) == 1  # no question, no help, nothing deleted
        assert app.query_one("#search").value == "dare o?"
        await pilot.press("tab", "question_mark")
        assert type(app.screen).__name__ == "Help"
        await pilot.press("escape")
        assert len(app.screen_stack) == 1
        await pilot.press("ctrl+c")

    assert drive(app, steps) is None


def test_a_bad_fts_query_is_said_on_the_status_line(shared_demo_store):
    from kaja_cli.browse.app import BrowseApp
    from kaja_cli.browse.data import Options
    from kaja_cli.core.conversations.filter import SessionFilter

    store = _store(shared_demo_store)
    app = BrowseApp(store, Options(SessionFilter(store.owner(None)), fts=True), 'tomato "')

    async def steps(pilot):
        assert app.page.rows == []
        assert "--fts" in status(app)
        await pilot.press("escape")

    assert drive(app, steps) is None


def list_lines(app) -> list[str]:
    """The list's lines as drawn, scrolled to the top."""
    lst = app.query_one("#list")
    return [lst.render_line(y).text.rstrip() for y in range(lst.scrollable_content_region.height)]


def test_a_long_row_keeps_its_snippet_whole_and_a_click_chooses(shared_demo_store):
    """The list draws a row's title on one line, cut with an ellipsis to the
    room left (the whole title heads the preview), and a search's snippet
    whole, wrapped under the title; a click on a row chooses it, as Enter does."""
    app = _app(shared_demo_store, query="tomato")

    async def steps(pilot):
        lines = list_lines(app)
        width = app.query_one("#list").scrollable_content_region.width
        assert all(len(line) <= width for line in lines)
        drawn = " ".join(" ".join(lines).split())
        row = app.page.rows[0]
        assert len(row.title) + len(row.snippet) > width  # more than one line's worth
        assert row.title not in drawn and row.title[:10] in lines[0] and "…" in lines[0]
        assert row.title in preview_text(app)
        assert " ".join(row.snippet.split()) in drawn
        await pilot.click("#list", offset=(4, 1))  # inside the border: the first row
        await settle(pilot)

    assert drive(app, steps, size=(50, 30)) == TOMATO


def test_a_first_page_read_already_is_on_the_first_frame(shared_demo_store):
    """`kaja browse` reads the first page while Textual is imported: when it
    is ready, the list holds it as soon as the screen is up (no worker, no
    "loading…")."""
    from concurrent.futures import Future

    from kaja_cli.browse import data
    from kaja_cli.browse.app import BrowseApp

    plain = _app(shared_demo_store)
    page = data.load(plain.store, plain.opts, "")
    early: Future = Future()
    early.set_result((page, time.perf_counter()))
    app = BrowseApp(plain.store, plain.opts, early=early)

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            assert app.page is page  # no pause yet: on_mount put it in the list
            assert "loading" not in status(app) and status(app).endswith("sessions")
            assert not [w for w in app.workers if w.group == "rows"]
            await pilot.pause()
            assert page.rows[0].short_id in "\n".join(list_lines(app))
            await pilot.press("escape")

    asyncio.run(main())


def test_resize_from_40_to_200_columns(shared_demo_store):
    app = _app(shared_demo_store)

    async def steps(pilot):
        panes = app.query_one("#panes")
        assert panes.has_class("narrow")  # the preview under the list
        lst, preview = app.query_one("#list").region, app.query_one("#preview").region
        assert lst.width == preview.width == 40 and preview.y > lst.y
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        assert not panes.has_class("narrow")
        assert app.query_one("#preview").region.x > app.query_one("#list").region.x
        await pilot.press(*"sauna")  # another owner's: not found as the terminal
        await settle(pilot)
        assert ids(app) == [] and "0 sessions" in status(app)
        await pilot.resize_terminal(40, 12)
        await settle(pilot)
        await pilot.press("escape")

    assert drive(app, steps, size=(40, 20)) is None


# --- owners --------------------------------------------------------------------------------
def test_ctrl_o_shows_everyone_and_back(shared_demo_store):
    app = _app(shared_demo_store)

    async def steps(pilot):
        mine = ids(app)
        assert RECEIPT not in mine
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert RECEIPT in ids(app) and len(ids(app)) > len(mine)
        assert "everyone" in str(app.query_one("#list").border_title)
        await pilot.press(*"sauna")
        await settle(pilot)
        assert [r.title for r in app.page.rows] == ["Sauna temperature"]
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert ids(app) == []
        await pilot.press("escape")

    drive(app, steps)


def test_another_owners_session_is_refused_unless_acting_as_it(demo_store):
    app = _app(demo_store, all_owners=True)

    async def steps(pilot):
        await pilot.press(*"receipt", "tab")
        await settle(pilot)
        assert ids(app) == [RECEIPT]
        await pilot.press("d")  # acting as the terminal: refused before any question
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert "belongs to telegram:482913" in status(app)
        await pilot.press("escape")

    drive(app, steps)
    assert RECEIPT in demo_store("sessions", "--owner", "telegram:482913", "-n", "0").out

    app = _app(demo_store, owner="telegram:482913")

    async def steps2(pilot):
        await pilot.press(*"receipt", "tab", "a")
        await settle(pilot)
        assert "archived " + RECEIPT in status(app)
        await pilot.press("escape")

    drive(app, steps2)
    r = demo_store("sessions", "--owner", "telegram:482913", "--archived", "-n", "0")
    assert RECEIPT in r.out


# --- the actions ---------------------------------------------------------------------------
def test_delete_asks_naming_the_session_and_what_goes(demo_store):
    app = _app(demo_store)

    async def steps(pilot):
        await pilot.press(*"tomato", "tab", "d")
        await settle(pilot)
        question = str(app.screen.query_one(".question").render())
        assert TOMATO in question and "“Tomato leaves curling in the heat”" in question
        assert "9 messages" in question
        await pilot.press("n")  # no: nothing goes
        await settle(pilot)
        assert ids(app) == [TOMATO] and status(app) == "nothing deleted"
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("enter")  # Cancel has the focus: Enter is no
        await settle(pilot)
        assert ids(app) == [TOMATO]
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert status(app).startswith(f"deleted {TOMATO}")
        assert ids(app) == []  # the search ran again
        await pilot.press("escape")

    drive(app, steps)
    r = demo_store("resume", TOMATO)
    assert r.code == 3, r


def test_rename_and_archive(demo_store):
    app = _app(demo_store)

    async def steps(pilot):
        await pilot.press("tab", "r")
        await settle(pilot)
        answer = app.screen.query_one("#answer")
        assert answer.value == "Nightly backup with rsync"
        await pilot.press("ctrl+u", *"Backups at night", "enter")
        await settle(pilot)
        assert app.page.rows[0].title == "Backups at night"
        await pilot.press("a")
        await settle(pilot)
        assert BACKUP not in ids(app)
        await pilot.press("escape")

    drive(app, steps)
    r = demo_store("sessions", "--archived", "--json")
    assert [s["title"] for s in json.loads(r.out)["sessions"]] == ["Backups at night"]


def test_export_asks_where_and_writes_markdown(demo_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = _app(demo_store)

    async def steps(pilot):
        await pilot.press(*"tomato", "tab", "e")
        await settle(pilot)
        assert app.screen.query_one("#answer").value == str(tmp_path / f"{TOMATO}.md")
        await pilot.press("enter")
        await settle(pilot)
        assert status(app).startswith(f"wrote {tmp_path / TOMATO}.md")
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("ctrl+u", *str(demo_store.db), "enter")  # never the store's own file
        await settle(pilot)
        assert "store" in status(app)
        await pilot.press("escape")

    drive(app, steps)
    text = (tmp_path / f"{TOMATO}.md").read_text()
    assert text.startswith("# Tomato leaves curling in the heat")
    assert oct((tmp_path / f"{TOMATO}.md").stat().st_mode & 0o777) == "0o600"


def test_the_preview_is_scrolled_to_the_match(shared_demo_store):
    """In a long session the preview opens at the matching message, not the top."""
    from kaja_cli.browse import data

    store = _store(shared_demo_store)
    app = _app(shared_demo_store)
    page = data.load(store, app.opts, "invoice parser")
    row = next(r for r in page.rows if r.title == "Refactor the invoice parser")
    p = data.preview(store, app.opts, row)
    assert p.target is not None and p.target > 0
    word = row.snippet[row.highlights[0][0] : row.highlights[0][1]].lower()
    assert word in "".join(t for t, _ in p.lines[p.target]).lower()

    app = _app(shared_demo_store, query="invoice parser")

    async def steps(pilot):
        await settle(pilot)  # the search and the preview are on screen (under load: seconds)
        for _ in range(400):  # then the scroll follows the layout
            if app.query_one("#preview").scroll_y > 0:
                break
            await pilot.pause(0.025)
        assert app.query_one("#preview").scroll_y > 0  # opened at the match
        await pilot.press("escape")

    drive(app, steps, size=(120, 30))


# --- end to end, in a real terminal ---------------------------------------------------------
@pytest.mark.process
@pytest.mark.needs("tmux")
def test_in_tmux_typing_changes_the_list_and_enter_prints_the_id(shared_demo_store, tmp_path):
    from tests.support.tmux_browse import BrowseInTmux

    with BrowseInTmux(shared_demo_store, tmp_path) as term:
        term.wait_for(lambda s: "Nightly backup" in s and "Tomato leaves" in s, "the listing")
        term.type("tomato")
        term.wait_for(
            lambda s: "1 session matching" in s and "Nightly backup" not in s, "the search"
        )
        term.keys("Enter")
        assert term.result() == ("0", TOMATO + "\n")


# --- escapes from the data never reach the terminal -----------------------------------------
ESC = "\x1b"
# What a message may hold, and the exact bytes that reach a terminal if it is written raw.
HOSTILE = {
    "clipboard": f"{ESC}]52;c;SGFja2VkIGNsaXBib2FyZA==\x07",
    "cleared": f"{ESC}[2J{ESC}[HCLEARED-BY-DATA",
    "hidden": f"{ESC}[8mHIDDEN-BY-DATA",
    "c1": "\u009b31mRED-BY-C1",
    "bidi": "\u202eRTL-OVERRIDE\u202c",
}


@pytest.mark.process
@pytest.mark.needs("tmux")
def test_no_escape_from_a_message_reaches_the_terminal(demo_store, tmp_path):
    """A session whose title, role, messages and tool call hold escape sequences:
    the list, the preview, the delete question, the rename box and the status
    line show them escaped; the raw bytes written to the terminal (tmux
    pipe-pane) hold none of them."""
    from kaja_cli.core.conversations.record import Recorder

    hostile = " ".join(HOSTILE.values())
    with Recorder(_store(demo_store)) as rec:
        sid = rec.start_session(title=f"zzhostile {hostile}")
        rec.add_message(sid, "user", f"zzhostile question {hostile}")
        m = rec.add_message(sid, "assistant", f"zzhostile answer {hostile}")
        rec.add_tool_call(m.id, f"tool{HOSTILE['cleared']}", {"q": hostile})
        rec.add_message(sid, f"role{HOSTILE['hidden']}", f"zzhostile odd role {hostile}")
    k = demo_store
    sock, raw = str(tmp_path / "tmux.sock"), tmp_path / "raw"
    tmux = ["tmux", "-S", sock]
    env = dict(k.env, TERM="xterm-256color", PATH=f"{Path(KAJA).parent}:{os.environ['PATH']}")
    env.pop("NO_COLOR")
    env.pop("COLUMNS")  # the screen is the pane's size, not the tests' wide 200 columns
    subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40",
                    "sh", "-c", f"{KAJA} browse; sleep 30"], env=env, check=True)  # fmt: skip
    subprocess.run([*tmux, "pipe-pane", "-o", f"cat >> {raw}"], check=True)

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True,
                              text=True).stdout  # fmt: skip

    def wait_for(cond, what: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if cond(text := screen()):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{what} never showed:\n{screen()}")

    def keys(*k: str) -> None:
        subprocess.run([*tmux, "send-keys", *k], check=True)

    try:
        wait_for(lambda s: "zzhostile" in s, "the hostile session in the list")
        subprocess.run([*tmux, "send-keys", "-l", "zzhostile"], check=True)
        shown = wait_for(lambda s: "Kaja: zzhostile answer" in s and "[role" in s, "the preview")
        assert r"\x1b]52;c;" in shown and r"\x1b[2J" in shown  # escaped, visible
        keys("Tab")
        wait_for(lambda s: "d delete" in s, "the list's keys in the footer")
        keys("d")
        wait_for(lambda s: "Delete session" in s, "the delete question")
        keys("Escape")
        wait_for(lambda s: "nothing deleted" in s, "the status line")
        keys("r")
        wait_for(lambda s: "New title for" in s, "the rename box")
        keys("Escape")
        time.sleep(0.5)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    written = raw.read_bytes()
    assert b"zzhostile" in written  # the pane's output was recorded
    for name, sequence in HOSTILE.items():
        assert sequence.encode() not in written, name
    assert "\u009b".encode() not in written and "\u202e".encode() not in written


# --- what fits on the screen: 80×24 and 120×40 ------------------------------------------------
SVG_TEXT = re.compile(
    r'<text class="[^"]*-r\d+" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
    r'clip-path="url\(#[^)]*-line-(\d+)\)">([^<]*)</text>'
)


def screen_lines(app) -> list[str]:
    """The screen as a person sees it: the text of each line, read from
    Textual's own screenshot (`App.export_screenshot`, an SVG: one <text> per
    run of one style, x in cells of 12.2 pixels)."""
    from rich.cells import cell_len

    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, line, text in SVG_TEXT.findall(app.export_screenshot()):
        col = round(float(x) / 12.2)
        for ch in html.unescape(text).replace("\xa0", " "):
            if col < width:
                rows[int(line)][col] = ch
                if cell_len(ch) == 2 and col + 1 < width:
                    rows[int(line)][col + 1] = ""
            col += cell_len(ch)
    return ["".join(r).rstrip() for r in rows]


def boxed(lines: list[str], title: str) -> list[str]:
    """The inside of the bordered box titled `title` (its first column to its
    last), one string a line."""
    top = next(i for i, line in enumerate(lines) if f"─ {title} ─" in line)
    left = lines[top].index("╭", max(0, lines[top].index(f"─ {title} ─") - 2))
    right = lines[top].index("╮", left)
    out = []
    for line in lines[top + 1 :]:
        if line[left : left + 1] == "╰":
            return out
        out.append(line[left + 1 : right])
    return out


# How the `?` overlay spells a key bound in Textual's words.
SPELLED = {"up": "↑", "down": "↓", "pageup": "PgUp", "pagedown": "PgDn", "home": "Home",
           "end": "End", "enter": "Enter", "escape": "Esc", "ctrl+c": "Ctrl-C",
           "ctrl+q": "Ctrl-Q", "ctrl+o": "Ctrl-O", "question_mark": "?", "f1": "F1",
           "tab": "Tab", "shift+tab": "Shift-Tab"}  # fmt: skip


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_every_key_is_in_the_footer_or_one_question_mark_away(shared_demo_store, size):
    """At 80×24 and 120×40: the footer is whole (it ends with the help key,
    nothing cut), in the search box and in the list; every key kaja binds is
    in the footer or in the `?` overlay, whose lines are whole (a key and
    its description on one line, never broken mid-phrase) and all on screen."""
    from textual.binding import Binding

    from kaja_cli.browse.app import HELP_END, HELP_KEYS, HELP_TOP, BrowseApp, Confirm, SearchBox
    from kaja_cli.browse.rowlist import RowList

    app = _app(shared_demo_store)
    width, _ = size
    screens = {}

    async def steps(pilot):
        screens["search box"] = screen_lines(app)
        await pilot.press("tab")
        assert app.focused is app.query_one("#list")
        screens["list"] = screen_lines(app)
        await pilot.press("question_mark")
        await pilot.pause()
        screens["help"] = screen_lines(app)
        await pilot.press("escape", "escape")

    drive(app, steps, size=size)

    # The footer: whole, the help key last, every item a key and its word.
    footers = {where: screens[where][-1] for where in ("search box", "list")}
    assert footers["search box"].endswith("  f1 help"), footers  # `?` is typed there
    assert footers["list"].endswith("  ? help"), footers
    for footer in footers.values():
        assert len(footer) < width and footer.startswith(" ⏎ choose  ")
        assert all(len(item.split(" ")) == 2 for item in footer.strip().split("  ")), footer
    assert "esc quit" in footers["search box"] and "tab list" in footers["search box"]
    assert "d delete" in footers["list"] and "a archive" in footers["list"]

    # The overlay: every line whole, and all of it on the screen at once.
    help_text = "\n".join(screens["help"])
    for key, what in HELP_KEYS:
        assert any(key in line and what in line for line in screens["help"]), (key, what)
    for line in (HELP_TOP, *HELP_END):
        assert line in help_text, line
    assert "Esc or ? closes" in help_text

    # Every key bound is in a footer or in the overlay's key column.
    shown = {item.split(" ")[0] for f in footers.values() for item in f.strip().split("  ")}
    overlay_keys = {k for key, _ in HELP_KEYS for k in key.split()}
    bound = [b.key for cls in (BrowseApp, SearchBox, RowList, Confirm) for b in cls.BINDINGS]
    keys = {k for key in [*bound, "tab", "shift+tab", "ctrl+q"] for k in key.split(",")}
    keys -= {"left", "right"}  # the search box's cursor, the list's: no sideways scroll
    missing = [
        k for k in sorted(keys)
        if not ({SPELLED.get(k, k), app.get_key_display(Binding(k, ""))} & (shown | overlay_keys))
        and not (k == "ctrl+q" and "Ctrl-Q" in help_text)
    ]  # fmt: skip
    assert not missing, (missing, footers)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_list_rows_are_in_columns_and_the_preview_indents_its_wrapped_lines(
    shared_demo_store, size
):
    """The list: the id, the time, the title and the message count start at
    the same column on every row; a title longer than its room is cut with
    an ellipsis. The preview: a message's wrapped lines are indented (the
    line's own indent plus two, as `kaja resume` prints them), never back
    under "You:"."""
    app = _app(shared_demo_store)
    lines: list[str] = []

    async def steps(pilot):
        lines.extend(screen_lines(app))
        await pilot.press("escape")

    drive(app, steps, size=size)
    rows = [line for line in boxed(lines, "sessions · terminal") if line.strip()]
    titles = [r.title for r in app.page.rows][: len(rows)]
    assert len(rows) >= 6, lines
    starts = [row.index(title[:12]) for row, title in zip(rows, titles, strict=False)]
    for where in (
        [row.index(r.short_id) for row, r in zip(rows, app.page.rows, strict=False)],  # the id
        starts,  # the title
        [len(row[:at].replace("⏸", " ").rstrip()) for row, at in zip(rows, starts, strict=False)],
        [row.rstrip().index("messages") for row in rows],  # the count, at the right
    ):
        assert len(set(where)) == 1, (where, rows)
    for row, title in zip(rows, titles, strict=False):
        assert title in row or (title[:12] in row and "…" in row), (title, row)

    preview = boxed(lines, "preview")
    first = next(i for i, line in enumerate(preview) if line.startswith("You: Set up a nightly"))
    message = []
    for i, line in enumerate(preview[first:]):
        if i and not line.startswith("  "):
            break
        message.append(line.strip().removeprefix("You: "))
    assert len(message) > 1, preview  # it wraps at this width
    for line in preview[first + 1 : first + len(message)]:
        assert line.startswith("  ") and line[2] != " ", line
    assert " ".join(" ".join(message).split()).startswith(
        "Set up a nightly backup of ~/Documents to my NAS at /mnt/nas/backup with rsync"
    )
