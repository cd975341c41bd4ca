"""The layout rule (kaja_cli/render): widths, wrapping and dropping, on made-up
tables at every width; the pager, through a real terminal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kaja_cli.render.layout import (
    Bar,
    Col,
    Marked,
    Styled,
    break_text,
    cells,
    prose_lines,
    table_lines,
)
from tests.conftest import examples


def text_of(line) -> str:
    return "".join(t for t, _ in line)


def lines_of(cols, rows, width) -> list[str]:
    return [text_of(line) for line in table_lines(cols, rows, width)]


# --- widths and wrapping ----------------------------------------------------------------------
def test_cells_counts_wide_and_combining_characters():
    assert cells("abc") == 3
    assert cells("Crème brûlée") == 12
    assert cells("日本") == 4
    assert cells("e\u0301") == 1  # e + a combining acute accent
    assert cells("⏸ approval") == 10


def test_break_text_breaks_at_spaces_and_drops_them():
    text = "Tomato leaves curling in the heat"
    spans = break_text(text, 14, 1)
    assert [text[a:b] for a, b in spans] == ["Tomato leaves", "curling in", "the heat"]


def test_a_long_word_breaks_after_a_slash_then_a_hyphen_else_where_the_line_ends():
    path = "/tmp/t16/state/db-stats.db"
    assert [path[a:b] for a, b in break_text(path, 20, 0)] == ["/tmp/t16/state/", "db-stats.db"]
    model = "claude-sonnet-4.5"
    assert [model[a:b] for a, b in break_text(model, 12, 0)] == ["claude-", "sonnet-4.5"]
    word = "abcdefghij"
    assert [word[a:b] for a, b in break_text(word, 4, 0)] == ["abcd", "efgh", "ij"]


def test_prose_continues_under_its_own_indent_plus_two():
    line = [("  ✓ ", "green"), ("a summary that is much too long for a narrow screen", "")]
    out = [text_of(x) for x in prose_lines(line, 24)]
    assert out == ["  ✓ a summary that is", "    much too long for a", "    narrow screen"]
    assert all(len(x) <= 24 for x in out)


# --- tables --------------------------------------------------------------------------------------
COLS = [
    Col("id", kind="whole"),
    Col("title"),
    Col("persona", drop=1),
    Col("model", drop=2),
    Col("tokens", justify="right"),
    Col("", kind="whole"),
]
ROWS = [
    ["01a226e4", "Nightly backup with rsync", "sysadmin", "claude-sonnet-4.5", "4.6k",
     Styled("⏸ approval", "bold yellow")],
    ["01a22652", "Tomato leaves curling in the heat", "gardener", "claude-sonnet-4.5", "4.7k", ""],
    ["01a21c62", "Train from Zürich to Genève", None, "gpt-5-mini", "22.5k", ""],
]  # fmt: skip


def test_a_table_that_fits_is_one_line_a_row_with_two_spaces_between_columns():
    out = lines_of(COLS, ROWS, 120)
    assert (
        out[0] == "id        title                              persona   model              tokens"
    )
    assert out[1].endswith("4.6k  ⏸ approval")
    assert len(out) == 4


def test_text_gives_way_first_then_columns_go_in_their_order():
    at_80 = lines_of(COLS, ROWS, 70)
    assert at_80[0].split() == ["id", "title", "persona", "model", "tokens"]  # all there, wrapped
    assert len(at_80) > 4
    at_50 = lines_of(COLS, ROWS, 50)
    assert at_50[0].split() == ["id", "title", "model", "tokens"]  # persona went first
    at_40 = lines_of(COLS, ROWS, 40)
    assert at_40[0].split() == ["id", "title", "tokens"]


@pytest.mark.parametrize("width", [*range(30, 121, 7), 37])
def test_numbers_ids_and_marks_stay_whole_and_nothing_passes_the_edge(width):
    out = lines_of(COLS, ROWS, width)
    assert all(cells(line) <= width for line in out), out
    screen = "\n".join(out)
    for row in ROWS:
        assert row[0] in screen and row[4] in screen
    assert screen.count("⏸ approval") == 1
    if width >= 37:  # id, the longest title word (7), tokens and the mark, with their gaps
        words = screen.split()
        for row in ROWS:  # every word of a title, whole
            assert all(w in words for w in row[1].split()), (width, out)


def test_a_marked_word_is_never_split_and_the_snippet_is_shown_whole():
    snippet = "…the pots, and put up a 30–40 % shade cloth from noon to four. The curl…"
    start = snippet.index("shade")
    cols = [Col("session", kind="whole"), Col("match", min=10)]
    out = lines_of(cols, [["01a22652", Marked(snippet, ((start, start + 5),))]], 30)
    assert all(cells(line) <= 30 for line in out)
    assert " ".join(" ".join(out[1:]).split()[1:]) == snippet  # every word, in order
    styled = [run for line in table_lines(cols, [["x", Marked(snippet, ((start, start + 5),))]], 30)
              for run in line if run[1] == "bold yellow"]  # fmt: skip
    assert styled == [("shade", "bold yellow")]


def test_a_chart_shrinks_then_goes():
    cols = [Col("day", kind="whole"), Col("tokens", justify="right"),
            Col("per day", kind="chart", drop=1)]  # fmt: skip
    rows = [["2026-11-28", "13,960", Bar(1.0)], ["2026-11-29", "7,000", Bar(0.5)]]
    wide = lines_of(cols, rows, 60)
    assert wide[1].endswith("█" * 30)
    narrow = lines_of(cols, rows, 32)
    assert narrow[1].endswith("█" * 10) and len(narrow[1]) <= 32
    assert lines_of(cols, rows, 24)[0].split() == ["day", "tokens"]


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé日-/", min_size=1, max_size=12)
titles = st.lists(words, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=examples(200))
@given(
    rows=st.lists(st.tuples(st.integers(0, 10**6), titles, titles), min_size=1, max_size=6),
    width=st.integers(30, 130),
)
def test_any_table_fits_its_width_and_keeps_every_number_whole(rows, width):
    cols = [Col("n", justify="right"), Col("title"), Col("note", drop=1)]
    out = lines_of(cols, [list(r) for r in rows], width)
    assert all(cells(line) <= width for line in out), (width, out)
    numbers = {t for line in out for t in line.split() if t.isdigit()}
    assert {str(r[0]) for r in rows} <= numbers


# --- the pager -----------------------------------------------------------------------------------
def test_long_output_is_paged_on_a_terminal_only(demo_store, tmp_path):
    from tests.conftest import KAJA
    from tests.support.sessions_support import run_in_pty

    paged = tmp_path / "paged.txt"
    env = dict(demo_store.env, PAGER=f"sh -c 'cat > {paged}'")
    env.pop("KAJA_PAGER", None)
    for argv in (["sessions", "--all-owners", "-n", "0"], ["search", "the", "--all-owners"],
                 ["usage", "--by", "day"], ["doctor"]):  # fmt: skip
        paged.unlink(missing_ok=True)
        code, screen = run_in_pty([KAJA, *argv], env, rows=8, cols=100)
        assert code in (0, 1), screen
        assert paged.exists() and len(paged.read_text().splitlines()) > 8, argv
        assert screen.strip() == "", (argv, screen)  # the pager had it, not the screen
        code, screen = run_in_pty([KAJA, *argv, "--no-pager"], env, rows=8, cols=100)
        assert len(screen.splitlines()) > 8, argv
        paged.unlink()
        code, screen = run_in_pty([KAJA, *argv], env, rows=200, cols=100)  # it fits
        assert not paged.exists() and screen.strip(), argv
    r = demo_store("sessions", "--all-owners", env={"PAGER": f"sh -c 'cat > {paged}'"})
    assert r.code == 0 and len(r.out.splitlines()) == 13 and not paged.exists()  # piped: never


def test_quitting_the_pager_stops_the_table(demo_store, tmp_path):
    from tests.conftest import KAJA
    from tests.support.sessions_support import run_in_pty

    env = dict(demo_store.env, KAJA_PAGER="head -n 3")
    code, screen = run_in_pty([KAJA, "sessions", "--all-owners", "-n", "0"], env, rows=5)
    assert code == 0, screen
    assert len(screen.splitlines()) == 3 and "Traceback" not in screen
    json.loads(demo_store("sessions", "--json").out)  # the store is as it was


_PIECES = st.sampled_from(["a", "é", "→", "😀", "\x00", "\n", "\u202e"])
_BROKEN = st.sampled_from([b"\x80", b"\xc3", b"\xe2\x86", b"\xf0\x9f\x98", b"\xff", b"\xc0\xaf",
                           b"\xed\xa0\x80", b"\x80\x80\x80\x80\x80"])  # fmt: skip


@settings(max_examples=examples(400))
@given(st.lists(_PIECES, max_size=60), st.one_of(st.none(), st.tuples(st.integers(0), _BROKEN)),
       st.sampled_from([4, 5, 8, 1 << 16]))  # fmt: skip
def test_utf8_valid_says_what_decoding_the_whole_says(pieces, broken, slice_size):
    """The exports' check (HTML's `lines_clean`, JSON's U+FFFD) reads its bytes a
    slice at a time, each cut before a character's first byte: whatever the
    cuts, it agrees with decoding the whole, broken sequences at any place."""
    import kaja_cli.core.values as values

    data = "".join(pieces).encode()
    if broken is not None:
        at = broken[0] % (len(data) + 1)
        data = data[:at] + broken[1] + data[at:]
    try:
        data.decode("utf-8")
        whole = True
    except UnicodeDecodeError:
        whole = False
    before = values._UTF8_SLICE
    values._UTF8_SLICE = slice_size
    try:
        assert values.utf8_valid(data) is whole
    finally:
        values._UTF8_SLICE = before


_FILLER = st.sampled_from(["a" * 40, "é", "\n", "\t", " · ", "\u00a0" * 30, "’", "Ø", "ا"])
_ODD = st.sampled_from(["\x1b", "\x00", "\x7f", "\r", "\x85", "\x9f", "\u061c", "\u200e",
                        "\u202e", "\u2069"])  # fmt: skip


@settings(max_examples=examples(300))
@given(st.lists(_FILLER, max_size=400), st.one_of(st.none(), st.tuples(st.integers(0), _ODD)),
       st.one_of(st.none(), st.tuples(st.integers(0), _BROKEN)))  # fmt: skip
def test_lines_clean_says_what_the_escaping_rule_says(filler, odd, broken):
    """`lines_clean` (a run SQLite wrote goes out as its bytes) looks for each
    lead byte by memchr where they are few and by one regex scan where they
    are many (Markdown's dots, a text of no-break spaces): either way it says
    what decoding the run and asking the rule says, the odd character
    anywhere, before or after the many."""
    from kaja_cli.render.layout import _LINES_FOUND, lines_clean

    text = "".join(filler)
    if odd is not None:
        at = odd[0] % (len(text) + 1)
        text = text[:at] + odd[1] + text[at:]
    data = text.encode()
    if broken is not None:
        at = broken[0] % (len(data) + 1)
        data = data[:at] + broken[1] + data[at:]
    try:
        expected = _LINES_FOUND(data.decode("utf-8")) is None
    except UnicodeDecodeError:
        expected = False
    assert lines_clean(data) is expected


@pytest.mark.parametrize("odd", ["\x85", "\u202e", "\x1b", ""])
@pytest.mark.parametrize("where", ["first", "after the dots"])
def test_lines_clean_finds_an_odd_character_past_a_long_run_of_its_lead(odd, where):
    """Few lead bytes at the start, many later (the memchr walk gives up and
    the regex scans on from there), the odd character among or after them."""
    from kaja_cli.render.layout import lines_clean

    dots = "x · " * 3000 + "\u00a0" * 500 + "→ — " * 500  # C2 and E2 leads, many
    text = ("a" * 5000 + odd + dots) if where == "first" else ("a" * 5000 + dots + odd + "z")
    assert lines_clean(text.encode()) is (odd == "")
