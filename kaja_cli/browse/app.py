"""The screen of `kaja browse`: a search box, the list of sessions, the
selected one's replay beside it (below it on a narrow terminal), a status
line and the keys in a footer.

Every read runs in a worker thread (`data.load`, `data.preview`): one search
at a time per kind (exclusive: a newer keystroke cancels the older search,
whose answer is then dropped), so typing never waits on SQLite. A search by
meaning (Ctrl-S) runs there too, one at a time: the first one brings the
semantic index up to date, its progress on the status line, and stops after
a chunk once cancelled. Values from the store reach the screen as Rich
`Text`, never as markup.
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static
from textual.worker import get_current_worker

from kaja_cli.browse import data
from kaja_cli.browse.rowlist import RowList

if TYPE_CHECKING:
    from collections.abc import Iterator
    from concurrent.futures import Future

    from textual.worker import Worker

    from kaja_cli.core.conversations.search.model import Progress, ProgressFactory
    from kaja_cli.core.store import Store

DEBOUNCE_S = 0.04  # a search waits this long for the next keystroke before it starts
NARROW = 90  # columns: below this the preview goes under the list
MAX_CHUNKS = 300  # the preview's blocks (one widget each); more are merged

# The `?` overlay: the keys, two columns (key, what it does), each line
# short enough for an 80-column terminal. Every key bound below is here or
# in the footer (tests/cli/test_browse.py checks both screens).
HELP_KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ PgUp PgDn", "move in the list (from the search box too)"),
    ("Home End", "the first, the last session"),
    ("Tab Shift-Tab", "search box → list → preview (↑ ↓ scroll it)"),
    ("Enter", "print the session's id and quit"),
    ("o", "the whole replay in the pager"),
    ("e", "export it as Markdown (asks where)"),
    ("a", "archive it (again: unarchive)"),
    ("r", "rename it"),
    ("d", "delete it (asks first, naming what goes with it)"),
    ("Ctrl-O", "everyone's sessions, and back to yours"),
    ("Ctrl-S", "search by meaning, and back to words"),
    ("y n", "answer a question (Esc: no)"),
    ("? F1", "this help (F1 in the search box)"),
    ("Esc Ctrl-C", "quit, printing nothing (Ctrl-Q too)"),
)
HELP_TOP = "Type to search every message; an empty box lists your sessions."
HELP_END = (
    "In the search box letters are typed: Tab to the list for o e a r d ?",
    "⏸ in the list: a tool call waits on you.",
)
TITLE_MIN = 20  # the list's title column: narrower than this, other columns give way
GAP = "  "  # between two columns of the list, and two keys of the footer


def shown(text: str | None, style: str | None = None, **options) -> Text:
    """Rich Text of a string from the store (or of a message that may quote one):
    the one way browse puts words on the screen. Control characters, C1
    controls and BiDi overrides are escaped as `kaja resume` escapes them
    (`render.text(…, lines=True)`): an escape sequence in a message never
    reaches the terminal (a clipboard write, a cleared screen, hidden text)."""
    from kaja_cli import render

    return Text(render.text(text, lines=True), style=style or "", **options)


def runs_text(runs, indent: str = "") -> Text:  # type: ignore[no-untyped-def]
    """One drawn line: (text, style) runs, already escaped, after `indent`."""
    line = Text(indent, no_wrap=True, overflow="crop", end="")
    for piece, style in runs:
        line.append(piece, style or None)
    return line


class Prose:
    """A block of replay lines drawn as `kaja resume` prints them: wrapped at
    words to the pane's width, a continuation indented by its line's own
    indent plus two (`render.layout.prose_lines`, the house rule), so a
    message's wrapped lines sit under its text, not under "You:"."""

    def __init__(self, lines: list) -> None:
        from kaja_cli import render

        # Escaped once (`shown`'s rule), wrapped at each width asked.
        self.lines = [[(render.text(t, lines=True), st) for t, st in line] for line in lines]

    def __str__(self) -> str:
        return "\n".join("".join(t for t, _ in line) for line in self.lines)

    def __rich_console__(self, console, options):
        from kaja_cli.render import layout

        width = max(options.max_width, 1)
        out = [runs_text(part) for line in self.lines
               for part in (layout.prose_lines(line, width) if line else [[]])]  # fmt: skip
        yield Text("\n", no_wrap=True).join(out)  # ends with "\n": Textual counts those

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement(1, options.max_width)


class Columns:
    """The list's rows in columns: the id, when, (the owner), the title cut
    with an ellipsis to the room left, the message count at the right; each
    column as wide as its widest cell on the page, so every row's columns
    start at the same offset. A search's snippet is on the lines below,
    under the title, wrapped whole (its matched words are in it). On a
    narrow list the count goes first, then the time, then the owner, before
    the title gets narrower than TITLE_MIN."""

    def __init__(self, rows: list[data.Row], *, all_owners: bool, now) -> None:
        from kaja_cli import render
        from kaja_cli.core.owners import label

        self.rows = rows
        self.when = [render.relative_time(r.updated_at, now) for r in rows]
        self.owner = [render.text(label(r.owner)) if all_owners else "" for r in rows]
        self.count = [
            "" if r.messages is None else render.plural(r.messages, "message") for r in rows
        ]
        self.pending = any(r.pending for r in rows)
        # Each column as wide as its widest cell on the page (the owner at most 16).
        self.widest = (self._width(self.when), self._width(self.owner, 16), self._width(self.count))

    @staticmethod
    def _width(cells: list[str], cap: int = 0) -> int:
        from kaja_cli.render import layout

        widest = max((layout.cells(c) for c in cells), default=0)
        return min(widest, cap) if cap else widest

    def widths(self, width: int) -> tuple[int, int, int]:
        """(when, owner, count) at this list width; 0: the column is left out."""
        when, owner, count = self.widest

        def title_room() -> int:
            fixed = 8 + sum(w + len(GAP) for w in (when, owner) if w)
            fixed += len(GAP) + (2 if self.pending else 0)
            return width - fixed - (count + len(GAP) if count else 0)

        if count and title_room() < TITLE_MIN:
            count = 0
        if when and title_room() < TITLE_MIN:
            when = 0
        if owner and title_room() < TITLE_MIN:
            owner = 0
        return when, owner, count

    def draw(self, index: int, width: int) -> list[Text]:
        from kaja_cli import render
        from kaja_cli.render import layout

        row = self.rows[index]
        when, owner, count = self.widths(width)
        head = Text(no_wrap=True, overflow="crop", end="")
        head.append(render.text(row.short_id).ljust(8)[:8], "cyan")
        if when:
            head.append(GAP)
            head.append(render.text(self.when[index]).rjust(when), "dim")
        if owner:
            head.append(GAP)
            cell = Text(self.owner[index], "magenta")
            cell.truncate(owner, overflow="ellipsis", pad=True)
            head.append_text(cell)
        head.append(GAP)
        if self.pending:
            head.append("⏸ " if row.pending else "  ", "bold yellow")
        indent = head.cell_len
        room = max(width - indent - (count + len(GAP) if count else 0), 1)
        if row.title:
            title = Text(row.title, "bold")
        elif row.first_prompt:
            title = Text("“" + " ".join(render.text(row.first_prompt).split()) + "”", "italic")
        else:
            title = Text("(untitled)", "dim")
        title.truncate(room, overflow="ellipsis", pad=bool(count))
        head.append_text(title)
        if count:
            head.append(GAP)
            head.append(self.count[index].rjust(count), "dim")
        if row.snippet is None:
            return [head]
        text = render.text(row.snippet)
        runs: list[tuple[str, str]] = [(render.text((row.role or "") + ": "), "dim")]
        at = 0
        for start, end in row.highlights:
            runs += [(text[at:start], ""), (text[start:end], "bold reverse")]
            at = end
        runs.append((text[at:], ""))
        if width - indent < TITLE_MIN:
            indent = 2  # a narrow list: the snippet from the left, not squeezed
        wrapped = layout.wrap_runs(runs, max(width - indent, 1), 0)
        return [head, *(runs_text(part, " " * indent) for part in wrapped)]


def render_text(text: str) -> str:
    """A string for a widget that takes no Rich Text (a notification, an input,
    a border title), escaped as `shown` escapes."""
    from kaja_cli import render

    return render.text(text)


class SearchBox(Input):
    """The search box: ↑/↓/PgUp/PgDn/Home/End move the list while you type."""

    BINDINGS: ClassVar = [
        Binding("up", "app.move('cursor_up')", "up", show=False),
        Binding("down", "app.move('cursor_down')", "down", show=False),
        Binding("pageup", "app.move('page_up')", show=False),
        Binding("pagedown", "app.move('page_down')", show=False),
        Binding("home", "app.move('first')", show=False),
        Binding("end", "app.move('last')", show=False),
        Binding("enter", "submit", "choose", key_display="⏎"),
        Binding("tab", "app.focus_next", "list"),
    ]


class Confirm(ModalScreen[bool]):
    """A yes/no question; No is the default (Esc, n, Enter on Cancel)."""

    BINDINGS: ClassVar = [
        Binding("escape,n", "dismiss(False)", "cancel"),
        Binding("y", "dismiss(True)", "yes"),
    ]

    def __init__(self, question: str, yes: str) -> None:
        super().__init__()
        self.question, self.yes = question, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(shown(self.question), classes="question")
            with Horizontal(classes="buttons"):
                yield Button(self.yes, variant="error", id="yes")
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Ask(ModalScreen[str | None]):
    """One line of text (a title, a file name); Esc cancels."""

    BINDINGS: ClassVar = [Binding("escape", "dismiss(None)", "cancel")]

    def __init__(self, question: str, value: str) -> None:
        super().__init__()
        self.question, self.value = question, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(shown(self.question), classes="question")
            yield Input(render_text(self.value), id="answer")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)


class Help(ModalScreen[None]):
    """The keys (`HELP_KEYS`) in two columns: a description too long for its
    column wraps inside it, never back under the keys."""

    BINDINGS: ClassVar = [Binding("escape,q,question_mark,f1,enter", "dismiss(None)", "close")]

    def compose(self) -> ComposeResult:
        from rich.console import Group
        from rich.table import Table

        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold", no_wrap=True)
        keys.add_column()
        for key, what in HELP_KEYS:
            keys.add_row(key, what)
        end = [Text(line) for line in HELP_END]
        with VerticalScroll(classes="dialog help") as box:
            box.border_title = "keys"
            box.border_subtitle = "Esc or ? closes"
            box.styles.width = help_width() + 4  # the border and the padding
            yield Static(Group(Text(HELP_TOP), Text(), keys, Text(), *end))


def help_width() -> int:
    """The `?` overlay's text at its natural width: its widest line, or the
    widest key and description side by side. A narrower terminal wraps the
    descriptions inside their column."""
    from kaja_cli.render.layout import cells

    key = max(cells(k) for k, _ in HELP_KEYS)
    row = key + 2 + max(cells(w) for _, w in HELP_KEYS)
    return max(row, cells(HELP_TOP), *(cells(line) for line in HELP_END))


class KeysBar(Static):
    """The footer: the keys that work where the focus is, in the order they
    are bound (the most used first), as many as fit the width, and always
    the help key last, so a key not shown is one `?` away. One line, never
    cut. A key is clickable, as in Textual's own footer."""

    DEFAULT_CSS = """
    KeysBar {
        dock: bottom; height: 1; width: 1fr;
        color: $footer-foreground; background: $footer-background;
    }
    KeysBar > .keys-bar--key {
        color: $footer-key-foreground; background: $footer-key-background; text-style: bold;
    }
    KeysBar > .keys-bar--description {
        color: $footer-description-foreground; background: $footer-description-background;
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"keys-bar--key", "keys-bar--description"}

    def on_mount(self) -> None:
        self.watch(self.screen, "focused", lambda _focused: self.show_keys())

    def on_resize(self) -> None:
        self.show_keys()

    def keys(self) -> list[tuple[str, str, str]]:
        """(key as shown, description, action) of each key shown here now."""
        seen: dict[str, tuple[str, str, str]] = {}
        for _node, binding, enabled, _tip in self.screen.active_bindings.values():
            if binding.show and enabled and binding.action not in seen:
                shown_key = self.app.get_key_display(binding)
                seen[binding.action] = (shown_key, binding.description, binding.action)
        items = list(seen.values())
        help_ = [i for i in items if i[2] == "help"]
        items = [i for i in items if i[2] != "help"]
        width = self.size.width or self.app.size.width
        cost = lambda its: sum(len(GAP) + len(k) + 1 + len(d) for k, d, _ in its) - 1  # noqa: E731
        while items and cost(items + help_) > width:
            items.pop()
        return items + help_

    def show_keys(self) -> None:
        key_style = self.get_component_rich_style("keys-bar--key")
        description_style = self.get_component_rich_style("keys-bar--description")
        line = Text(no_wrap=True, overflow="crop", end="")
        for key, description, action in self.keys():
            click = Style(meta={"@click": f"app.{action}"})
            line.append(GAP[1:] + key, key_style + click)
            line.append(" " + description + GAP[1:], description_style + click)
        self.update(line)


class BrowseApp(App[str | None]):
    """`kaja browse`: exits with the chosen session's id, or None."""

    TITLE = "kaja browse"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #search { dock: top; }
    #panes { height: 1fr; layout: horizontal; }
    #panes.narrow { layout: vertical; }
    #list { width: 50%; height: 1fr; border: round $primary-darken-2; }
    #preview { width: 1fr; height: 1fr; border: round $primary-darken-2; }
    #panes.narrow #list { width: 1fr; height: 1fr; }
    #panes.narrow #preview { width: 1fr; height: 1fr; }
    #list:focus, #preview:focus { border: round $accent; }
    #status { height: 1; padding: 0 1; color: $text-muted; }
    Confirm, Ask, Help { align: center middle; }
    .dialog { width: 80%; max-width: 100; height: auto; max-height: 90%;
              border: thick $accent; background: $surface; padding: 1 2; }
    .help { width: auto; max-width: 100%; max-height: 100%; padding: 0 1; }
    .buttons { height: auto; margin-top: 1; }
    .buttons Button { margin-right: 2; }
    """
    BINDINGS: ClassVar = [
        # In this order in the footer (the most used first) as far as the
        # width goes; the help key always, last (`KeysBar`).
        Binding("enter", "choose", "choose", key_display="⏎"),  # from the preview
        Binding("escape", "leave", "quit"),
        Binding("ctrl+c", "leave", "quit", show=False, priority=True),
        Binding("d", "delete", "delete"),
        Binding("a", "archive", "archive"),
        Binding("e", "export", "export"),
        Binding("r", "rename", "rename"),
        Binding("o", "open", "open"),
        Binding("ctrl+o", "toggle_owners", "everyone", priority=True),
        Binding("ctrl+s", "toggle_semantic", "meaning", priority=True),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("f1", "help", "help", priority=True),  # the search box takes `?`
    ]

    def __init__(
        self, store: Store, opts: data.Options, query: str = "", *, early: Future | None = None
    ) -> None:
        super().__init__()
        self._early = early  # the first page, read while Textual was imported (`browse.run`)
        self.store = store
        self.opts = opts
        self.mine = opts.filter.owner  # the owner Ctrl-O comes back to
        self.initial_query = query
        self.page: data.Page | None = None
        self.generation = 0
        self.preview_for: str | None = None
        self._said: str | None = None  # what an action did, kept on the status line
        # For the benchmark and the tests: when each page was asked for, was
        # ready, and was on screen (time.perf_counter()).
        self.started = time.perf_counter()
        self.timings: list[tuple[str, float, float, float]] = []
        self._asked: dict[int, float] = {}
        # One search by meaning at a time: the first brings the index up to
        # date (long on a big store), the next one waits for it, not beside it.
        self._semantic_lock = threading.Lock()

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield SearchBox(self.initial_query, placeholder="search every message…", id="search")
        with Container(id="panes"):
            yield RowList(id="list")
            yield VerticalScroll(id="preview")
        yield Static(id="status")
        yield KeysBar(id="keys")

    def on_mount(self) -> None:
        self._title_bar()
        self._fit(self.size.width)
        self.query_one("#search", SearchBox).focus()
        self._ask(self.initial_query)
        self.call_after_refresh(gc.enable)  # `browse.run` turned it off for the first frame

    def on_resize(self, event) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        self.query_one("#panes").set_class(width < NARROW, "narrow")

    def _title_bar(self) -> None:
        from kaja_cli.core.owners import label

        who = "everyone" if self.opts.all_owners else label(self.opts.filter.owner.id)
        how = " · by meaning" if self.opts.semantic else ""
        self.query_one("#list", RowList).border_title = render_text(f"sessions · {who}{how}")
        self.query_one("#preview").border_title = "preview"
        search = self.query_one("#search", SearchBox)
        search.placeholder = "search by meaning…" if self.opts.semantic else "search every message…"

    # -- the rows -----------------------------------------------------------------------
    @on(Input.Changed, "#search")
    def _typed(self, event: Input.Changed) -> None:
        self._ask(event.value)

    def _ask(self, query: str) -> None:
        self.generation += 1
        self._asked[self.generation] = time.perf_counter()
        early = self._early
        if self.generation == 1 and early is not None and early.done() and not early.exception():
            # Read already (it usually is: the read takes less than Textual's
            # import): into the list now, so the first frame holds it whatever
            # the worker thread's scheduling on a loaded machine.
            self._early = None
            page, ready = early.result()
            self._show(page, self.generation, ready)
            return
        if not query.strip():
            self._status("loading…")
        else:
            self._status("searching by meaning…" if self.opts.semantic else "searching…")
        self._load(query, self.generation, self.opts)

    @work(exclusive=True, thread=True, group="rows")
    def _load(self, query: str, generation: int, opts: data.Options) -> None:
        worker = get_current_worker()
        early, self._early = self._early, None
        if early is not None and generation == 1:  # the first page: already being read
            page, ready = early.result()
            self.call_from_thread(self._show, page, generation, ready)
            return
        if query.strip():
            time.sleep(DEBOUNCE_S)  # the next keystroke cancels this one before it starts
            if worker.is_cancelled:
                return
        if opts.semantic and query.strip():
            with self._semantic_lock:
                if worker.is_cancelled:
                    return
                try:
                    page = data.load(self.store, opts, query, self._index_progress(worker))
                except _Stopped:
                    return
        else:
            page = data.load(self.store, opts, query)
        if worker.is_cancelled:
            return
        self.call_from_thread(self._show, page, generation, time.perf_counter())

    def _index_progress(self, worker: Worker) -> ProgressFactory:
        """The semantic index catching up, on the status line (a `ProgressFactory`).
        A search cancelled meanwhile (a newer keystroke, quitting) stops there:
        the index keeps each chunk it committed, and the next search goes on."""
        from kaja_cli.core.wording import plural

        def bar(done: int, total: int | None = None) -> None:
            if worker.is_cancelled:
                raise _Stopped
            of = f" of {plural(total, 'message', commas=True)}" if total else " messages"
            try:
                self.call_from_thread(self._status, f"building the semantic index… {done:,}{of}")
            except Exception:  # the screen is closing: nothing to say it on, stop here
                raise _Stopped from None

        @contextmanager
        def factory(description: str, total: int | None) -> Iterator[Progress]:
            yield bar

        return factory

    def _show(self, page: data.Page, generation: int, ready: float) -> None:
        if generation != self.generation:
            return  # a newer keystroke's answer is coming
        from kaja_cli.core import clock

        keep = self.selected()
        self.page = page
        now = clock.now()
        lst = self.query_one("#list", RowList)
        lst.set_rows(
            len(page.rows), Columns(page.rows, all_owners=self.opts.all_owners, now=now).draw
        )
        if page.rows:
            index = 0
            if keep is not None:
                index = next((i for i, r in enumerate(page.rows) if r.id == keep.id), 0)
            lst.highlighted = index
            self._preview(page.rows[index])
        else:
            self.preview_for = None
            self.query_one("#preview").remove_children()
        summary = self._summary(page)
        self._status(f"{self._said} · {summary}" if self._said else summary)
        self._said = None
        asked = self._asked.pop(generation, ready)
        self.call_after_refresh(self._painted, page.query, asked, ready)

    def _painted(self, query: str, asked: float, ready: float) -> None:
        self.timings.append((query, asked, ready, time.perf_counter()))

    def _summary(self, page: data.Page) -> str:
        from kaja_cli.core.wording import plural

        if page.error:
            return page.error
        n = len(page.rows)
        if page.query.strip():
            how = "closest in meaning" if self.opts.semantic else "matching"
            text = f"{plural(n, 'session')} {how}" + (" (the best shown)" if page.more else "")
        elif page.total is not None and page.more:
            text = f"the newest {n} of {plural(page.total, 'session')}"
        else:
            text = plural(n, "session")
        notes = [*page.notes]
        if not n and not page.query.strip() and not notes:
            notes.append("type to search; Ctrl-O for everyone's")
        return " · ".join([text, *notes])

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(shown(text, no_wrap=True, overflow="ellipsis"))

    def selected(self) -> data.Row | None:
        if self.page is None or not self.page.rows:
            return None
        index = self.query_one("#list", RowList).highlighted
        if index is None or index >= len(self.page.rows):
            return None
        return self.page.rows[index]

    def action_move(self, how: str) -> None:
        lst = self.query_one("#list", RowList)
        getattr(lst, f"action_{how}")()

    # -- the preview --------------------------------------------------------------------
    @on(RowList.Highlighted, "#list")
    def _highlighted(self, event: RowList.Highlighted) -> None:
        row = self.selected()
        if row is not None and row.id != self.preview_for:
            self._preview(row)

    def _preview(self, row: data.Row) -> None:
        self.preview_for = row.id
        self._load_preview(row, self.opts)

    @work(exclusive=True, thread=True, group="preview")
    def _load_preview(self, row: data.Row, opts: data.Options) -> None:
        worker = get_current_worker()
        p = data.preview(self.store, opts, row)
        if not worker.is_cancelled:
            self.call_from_thread(self._show_preview, p)

    async def _show_preview(self, p: data.Preview) -> None:
        if p.session_id != self.preview_for:
            return
        pane = self.query_one("#preview", VerticalScroll)
        await pane.remove_children()
        if p.error:
            await pane.mount(Static(shown(p.error, "red")))
            return
        blocks, target = _chunks(p.lines, p.target)
        widgets = [Static(Prose(b)) for b in blocks]
        await pane.mount_all(widgets)
        if target is not None:  # once laid out: where the matching message is
            self.call_after_refresh(self._scroll_to_match, pane, widgets[target], p.session_id, 0)
        else:
            pane.scroll_home(animate=False)

    def _scroll_to_match(
        self, pane: VerticalScroll, block: Static, session: str, tries: int
    ) -> None:
        """Scroll the preview to the matching block once the layout has placed it.
        On a loaded machine one refresh may come before the blocks have their sizes
        (nothing to scroll yet): look again a little later, for up to a second."""
        if session != self.preview_for or not block.is_attached:
            return  # another session's preview replaced this one
        if (pane.max_scroll_y == 0 or block.virtual_region.height == 0) and tries < 50:
            self.set_timer(0.02, lambda: self._scroll_to_match(pane, block, session, tries + 1))
            return
        pane.scroll_to_widget(block, top=True, animate=False, immediate=True)

    # -- the keys -----------------------------------------------------------------------
    @on(Input.Submitted, "#search")
    @on(RowList.Selected, "#list")
    def _chosen(self, event) -> None:
        self.action_choose()

    def action_choose(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            there = data.still_there(self.store, row)
        except Exception as e:
            return self._fail(e)
        if not there:  # deleted from another shell meanwhile: its id would resume nothing
            self._done(f"{row.short_id} is gone: deleted since the list was read")
            self.preview_for = None
            return self._reload()
        self.exit(row.id)

    def action_leave(self) -> None:
        self.exit(None)

    def action_toggle_owners(self) -> None:
        flt = self.opts.filter
        owner = self.mine if flt.owner is None else None
        if owner is None and flt.owner is None:
            return
        self.opts = replace(self.opts, filter=flt._replace(owner=owner))
        self._title_bar()
        self._ask(self.query_one("#search", SearchBox).value)

    def action_toggle_semantic(self) -> None:
        """Words ⇄ meaning (`kaja search --semantic`) for the query in the box.
        Where semantic search cannot run (cloud mode, the extra not installed)
        the status line says why and how to install it, and words stay."""
        if not self.opts.semantic:
            from kaja_cli.core.conversations import semantic

            try:
                semantic.require(self.store)
            except Exception as e:
                return self._fail(e)
        self.opts = replace(self.opts, semantic=not self.opts.semantic)
        self._title_bar()
        self._said = "search by meaning" if self.opts.semantic else "search by words"
        self._reload()

    def action_help(self) -> None:
        self.push_screen(Help())

    def _reload(self) -> None:
        self._ask(self.query_one("#search", SearchBox).value)

    def _fail(self, e: Exception) -> None:
        from kaja_cli.errors import KajaError

        if not isinstance(e, KajaError | OSError):
            raise e
        text = str(e) if isinstance(e, KajaError) else f"{e.strerror or e} ({e.filename})"
        self.notify(render_text(text), severity="error", markup=False, timeout=8)
        self._status(text)
        self._said = None

    def _done(self, text: str) -> None:
        self.notify(render_text(text), markup=False, timeout=5)
        self._status(text)
        self._said = text

    def action_delete(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            plan, points, question = data.plan_delete(self.store, self.opts, row)
        except Exception as e:
            return self._fail(e)

        def answer(yes: bool | None) -> None:
            if not yes:
                self._done("nothing deleted")
                return
            try:
                self._done(data.delete(self.store, self.opts, plan, points))
            except Exception as e:
                return self._fail(e)
            self.preview_for = None
            self._reload()

        self.push_screen(Confirm(question, "Delete"), answer)

    def action_archive(self) -> None:
        from kaja_cli.core.conversations.filter import Archived

        row = self.selected()
        if row is None:
            return
        try:
            on_ = self.opts.filter.archived is not Archived.ONLY
            self._done(data.set_archived(self.store, self.opts, row, on_))
        except Exception as e:
            return self._fail(e)
        self._reload()

    def action_rename(self) -> None:
        row = self.selected()
        if row is None:
            return

        def answer(title: str | None) -> None:
            if title is None:
                return
            try:
                self._done(data.rename(self.store, self.opts, row, title))
            except Exception as e:
                return self._fail(e)
            self._reload()

        self.push_screen(Ask(f"New title for {row.id}:", row.title), answer)

    def action_export(self) -> None:
        row = self.selected()
        if row is None:
            return

        def answer(path: str | None) -> None:
            if path is None:
                return
            try:
                self._done(data.export_markdown(self.store, self.opts, row, path))
            except Exception as e:
                self._fail(e)

        self.push_screen(Ask("Export as Markdown to:", data.default_export_path(row)), answer)

    def action_open(self) -> None:
        """The whole replay in the pager, as `kaja resume ID` shows it."""
        from kaja_cli import render
        from kaja_cli.core.conversations import transcript
        from kaja_cli.core.owners import Owner
        from kaja_cli.render import replay

        row = self.selected()
        if row is None:
            return
        try:
            rep = transcript.load_replay(self.store, row.id, Owner.parse(row.owner))
        except Exception as e:
            return self._fail(e)
        try:
            with self.suspend():
                with _stdout_on_terminal():
                    render.print_lines(replay.replay_lines(rep), pager=True)
        except Exception as e:  # no terminal to give the pager (a test, a headless run)
            from textual.app import SuspendNotSupported

            if not isinstance(e, SuspendNotSupported):
                raise
            self.notify("the pager needs a terminal", severity="warning")


class _Stopped(Exception):
    """A search by meaning cancelled while its index was catching up."""


class _stdout_on_terminal:
    """While the pager runs: stdout on the terminal the screen is drawn on
    (stderr), when stdout is a pipe (`kaja resume "$(kaja browse)"`)."""

    def __enter__(self) -> None:
        self.saved = None
        try:
            if not sys.stdout.isatty() and sys.stderr.isatty():
                sys.stdout.flush()
                self.saved = os.dup(1)
                os.dup2(2, 1)
        except (OSError, ValueError, AttributeError):
            self.saved = None

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            sys.stdout.flush()
            os.dup2(self.saved, 1)
            os.close(self.saved)


def _chunks(lines: list, target: int | None) -> tuple[list[list], int | None]:
    """The replay's lines in blocks, one per turn (a blank line starts one),
    and one starting at `target`; the index of that block. At most
    MAX_CHUNKS blocks: a long session's turns are grouped."""
    starts = [0] + [i for i, line in enumerate(lines) if not line and i]
    if target is not None:
        starts = sorted({*starts, target})
    if len(starts) > MAX_CHUNKS:
        step = -(-len(starts) // MAX_CHUNKS)
        kept = set(starts[::step])
        if target is not None:
            kept.add(target)
        starts = sorted(kept)
    bounds = [*starts, len(lines)]
    blocks = [lines[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [[]]
    at = starts.index(target) if target is not None and target < len(lines) else None
    return blocks, at
