"""`kaja browse`'s Ctrl-S (issue 41): the query in the box searched by
meaning (`kaja search --semantic`) and back to words; where semantic search
cannot run (the extra not installed, cloud mode) the status line says why
and words stay. The demo store (seed 1), a copy per test: a search by
meaning writes its index beside the store."""

from __future__ import annotations

import sys

import pytest

from tests.cli.test_browse import TOMATO, _app, _store, drive, ids, preview_text, settle, status

pytest.importorskip("wordllama")  # the `semantic` extra (in the test extra too)

QUERY = "my vegetables look unwell in hot weather"  # none of the tomato session's words


def title(app) -> str:
    return str(app.query_one("#list").border_title)


def test_ctrl_s_searches_by_meaning_and_back_to_words(demo_store):
    app = _app(demo_store)
    seen = {}

    async def steps(pilot):
        listing = ids(app)
        await pilot.press("ctrl+s")  # an empty box: the listing, as in word mode
        await settle(pilot)
        assert ids(app) == listing
        assert title(app) == "sessions · terminal · by meaning"
        assert status(app).startswith("search by meaning · ")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert title(app) == "sessions · terminal"
        await pilot.press(*QUERY)
        await settle(pilot)
        assert ids(app) == [] and status(app).startswith("0 sessions matching")  # words: none
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert title(app) == "sessions · terminal · by meaning"
        assert app.query_one("#search").value == QUERY  # the same query, by meaning
        assert ids(app)[0] == TOMATO
        seen["rows"] = list(app.page.rows)
        row = app.page.rows[0]
        assert row.title == "Tomato leaves curling in the heat" and row.snippet
        said = status(app)
        assert said.startswith("search by meaning · ")
        assert "sessions closest in meaning" in said
        assert "built the semantic index (96 messages)" in said
        assert row.title in preview_text(app)
        await pilot.press("tab")  # the key works from the list too
        assert app.focused is app.query_one("#list")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert title(app) == "sessions · terminal"
        assert ids(app) == [] and status(app).startswith("search by words · 0 sessions matching")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert ids(app)[0] == TOMATO and "built" not in status(app)  # the index is kept
        await pilot.press("enter")

    assert drive(app, steps) == TOMATO
    # Best first: the sessions in the order of their best message's score.
    from kaja_cli.core.conversations import semantic

    result = semantic.search(_store(demo_store), QUERY, limit=20)
    best = list(dict.fromkeys(h.session_id for h in result.hits))
    assert [r.id for r in seen["rows"]] == best[: len(seen["rows"])]
    assert (demo_store.state / "semantic.db").is_file()


def test_the_preview_opens_at_the_message_found_by_meaning(demo_store):
    """No words are highlighted (none matched): the preview opens at the
    message whose start is the row's snippet."""
    from dataclasses import replace

    from kaja_cli.browse import data

    app = _app(demo_store, query=QUERY)
    store = _store(demo_store)
    page = data.load(store, replace(app.opts, semantic=True), QUERY)
    row = page.rows[0]
    assert row.id == TOMATO and not row.highlights
    p = data.preview(store, app.opts, row)
    assert p.target is not None and p.target > 2  # not the title: the message itself
    first_words = " ".join(row.snippet.split()[:4])
    assert first_words in " ".join("".join(t for t, _ in p.lines[p.target]).split())

    async def steps(pilot):
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert ids(app)[0] == TOMATO
        for _ in range(400):  # the scroll follows the layout
            if app.query_one("#preview").scroll_y > 0:
                break
            await pilot.pause(0.025)
        assert app.query_one("#preview").scroll_y > 0  # opened at the match
        await pilot.press("escape")

    drive(app, steps, size=(120, 30))


def test_without_the_extra_the_status_line_says_how_to_install_it(demo_store, monkeypatch):
    monkeypatch.setitem(sys.modules, "wordllama", None)  # as if not installed
    app = _app(demo_store, query="tomato")

    async def steps(pilot):
        words = ids(app)
        assert words == [TOMATO]
        await pilot.press("ctrl+s")
        await settle(pilot)
        said = status(app)
        assert said == (
            "semantic search needs the semantic extra (wordllama is not installed):"
            " pip install 'kaja-cli[semantic]'"
        )
        assert title(app) == "sessions · terminal" and not app.opts.semantic  # words stay
        assert ids(app) == words
        await pilot.press(*" curling")  # and the app goes on working
        await settle(pilot)
        assert ids(app) == [TOMATO] and status(app).startswith("1 session matching")
        await pilot.press("enter")

    assert drive(app, steps) == TOMATO
    assert not (demo_store.state / "semantic.db").exists()


def test_in_cloud_mode_it_says_semantic_search_is_local_only(kaja):
    """No server needed: the key is refused before any search."""
    from kaja_cli.browse.app import BrowseApp
    from kaja_cli.browse.data import Options
    from kaja_cli.core.conversations.filter import SessionFilter
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    store = Store.locate(
        Overrides(config=kaja.config, database_url="postgresql://nobody@127.0.0.1:1/none")
    )
    app = BrowseApp(store, Options(SessionFilter(store.owner(None))))

    async def steps(pilot):
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert status(app).startswith(
            "semantic search is local only: in cloud mode the messages are on the server"
        )
        assert not app.opts.semantic and title(app) == "sessions · terminal"
        await pilot.press("escape")

    assert drive(app, steps) is None


def test_the_index_catching_up_is_on_the_status_line(demo_store):
    """The first search by meaning builds the index in the worker: the screen
    keeps answering and the status line says what it is doing."""
    app = _app(demo_store, query=QUERY)
    said: list[str] = []
    shown = app._status

    def spy(text):
        said.append(text)
        shown(text)

    app._status = spy

    async def steps(pilot):
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert ids(app)[0] == TOMATO
        await pilot.press("escape")

    drive(app, steps)
    assert "searching by meaning…" in said
    building = [s for s in said if s.startswith("building the semantic index…")]
    assert building and building[-1] == "building the semantic index… 96 of 96 messages"


def test_quitting_while_the_index_catches_up_stops_the_build_at_a_chunk(demo_store, monkeypatch):
    """Esc during a long first build: the worker stops at the next chunk (the
    index keeps what it committed) instead of keeping the app from exiting
    until every message is embedded; the next search goes on from there."""
    import sqlite3
    import time

    from kaja_cli.core.conversations.semantic import index, model

    monkeypatch.setattr(index, "CHUNK", 8)  # 96 messages: 12 chunks
    embed = model.Embedder.embed

    def slow(self, texts):
        time.sleep(0.3)
        return embed(self, texts)

    monkeypatch.setattr(model.Embedder, "embed", slow)
    app = _app(demo_store, query=QUERY)

    async def steps(pilot):
        await pilot.press("ctrl+s")
        for _ in range(200):
            if status(app).startswith("building the semantic index… 8 of 96"):
                break
            await pilot.pause(0.02)
        assert status(app).startswith("building the semantic index…"), status(app)
        await pilot.press("escape")

    assert drive(app, steps) is None  # the app exited, with the index not whole (below)
    store = sqlite3.connect(demo_store.db)
    ix = sqlite3.connect(demo_store.state / "semantic.db")
    try:
        assert 0 < index.behind(ix, store) < 96  # stopped half way, the chunks kept
    finally:
        store.close()
        ix.close()
    monkeypatch.setattr(model.Embedder, "embed", embed)
    again = _app(demo_store, query=QUERY)

    async def resume(pilot):
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert ids(again)[0] == TOMATO

    drive(again, resume)


@pytest.mark.process
@pytest.mark.needs("tmux")
def test_in_tmux_ctrl_s_reaches_the_screen_and_enter_prints_the_match(demo_store, tmp_path):
    """In a real terminal Ctrl-S is a key, not flow control (XOFF): the query
    is searched by meaning, and Enter prints the session found."""
    from tests.support.tmux_browse import BrowseInTmux

    with BrowseInTmux(demo_store, tmp_path) as term:
        term.wait_for(lambda s: "Tomato leaves" in s, "the listing")
        term.type(QUERY)
        term.wait_for(lambda s: "0 sessions matching" in s, "the word search")
        term.keys("C-s")
        term.wait_for(
            lambda s: "by meaning" in s and "closest in meaning" in s, "the search by meaning"
        )
        term.keys("Enter")
        assert term.result() == ("0", TOMATO + "\n")
