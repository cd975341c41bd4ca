"""The list of `kaja browse`: a line-based widget drawing only the rows on screen.

Textual's OptionList turns every option into its own text model, wraps and
measures it, and renders it through that model before its first frame: for
200 sessions that was half of the first frame's CPU. Here a row's lines are
drawn by the caller's function at the list's width (columns, a title cut to
fit: a few ms for 200 rows, again only when the width changes), and a line
becomes segments only when it is on screen; the highlighted row is in the
block cursor's colours, as OptionList drew it.

The keys, the mouse and the messages are OptionList's: ↑/↓ move (wrapping
round), PgUp/PgDn a screenful, Home/End, Enter selects, a click highlights and
selects; `highlighted` is the row's index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RowList(ScrollView, can_focus=True):
    """Rows drawn as lines of Rich `Text` at the list's width; one highlighted."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "cursor_down", "Down", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("enter", "select", "choose", key_display="⏎"),
        Binding("home", "first", "First", show=False),
        Binding("pagedown", "page_down", "Page Down", show=False),
        Binding("pageup", "page_up", "Page Up", show=False),
        Binding("up", "cursor_up", "Up", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-list--highlighted",
        "row-list--hover",
    }
    # OptionList's look: the highlight dimmer while the search box has the focus.
    DEFAULT_CSS = """
    RowList {
        color: $foreground;
        overflow-x: hidden;
        border: tall $border-blurred;
        padding: 0 1;
        background: $surface;
        & > .row-list--highlighted {
            color: $foreground;
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            border: tall $border;
            background-tint: $foreground 5%;
            & > .row-list--highlighted {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
        }
        & > .row-list--hover {
            background: $block-hover-background;
        }
    }
    """

    highlighted: reactive[int | None] = reactive(None)
    _hover: reactive[int | None] = reactive(None)

    class _RowMessage(Message):
        def __init__(self, row_list: RowList, index: int) -> None:
            super().__init__()
            self.row_list = row_list
            self.index = index

        @property
        def control(self) -> RowList:  # for @on(..., "#list")
            return self.row_list

    class Highlighted(_RowMessage):
        """A row was highlighted (by a key, a click, or `highlighted = i`)."""

    class Selected(_RowMessage):
        """Enter on a row, or a click."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._count = 0
        self._draw: Callable[[int, int], list[Text]] = lambda index, width: [Text()]
        self._width = 0  # the width the rows are wrapped to (0: not yet)
        self._first_line: list[int] = []  # each row's first line
        self._heights: list[int] = []  # each row's lines
        self._lines: list[tuple[int, Text]] = []  # each line: its row, its text
        self._strips: dict[tuple[int, int, Style], Strip] = {}

    @property
    def row_count(self) -> int:
        return self._count

    def set_rows(self, count: int, draw: Callable[[int, int], list[Text]]) -> None:
        """Show `count` rows, `draw(index, width)` giving a row's lines (each at
        most `width` cells; a longer one is cut). The highlight is cleared: set
        `highlighted` after."""
        self._count, self._draw = count, draw
        self._width = 0
        self._hover = None
        self.highlighted = None
        self._lay_out()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def _lay_out(self) -> None:
        """The rows drawn at the width, once per width."""
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._width:
            return
        self._width = width
        self._first_line, self._heights, self._lines = [], [], []
        for index in range(self._count):
            lines = self._draw(index, width) or [Text()]
            self._first_line.append(len(self._lines))
            self._heights.append(len(lines))
            self._lines.extend((index, line) for line in lines)
        self._strips.clear()
        self.virtual_size = Size(0, len(self._lines))

    # -- drawing --------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        self._lay_out()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        at = self.scroll_offset.y + y
        if width != self._width or not 0 <= at < len(self._lines):
            return Strip.blank(width, self.rich_style)
        index, line = self._lines[at]
        if index == self.highlighted:
            style = self.get_component_rich_style("row-list--highlighted")
        elif index == self._hover:
            style = self.get_component_rich_style("row-list--hover")
        else:
            style = self.rich_style
        key = (at, width, style)
        strip = self._strips.get(key)
        if strip is None:
            segments = list(line.render(self.app.console))
            strip = Strip(segments).adjust_cell_length(width).apply_style(style)
            strip = self._strips[key] = strip.apply_meta({"row": index})
        return strip

    def notify_style_update(self) -> None:
        self._strips.clear()  # the theme or the focus changed the styles
        super().notify_style_update()

    def _on_resize(self, event: events.Resize) -> None:
        self._lay_out()

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    # -- the highlight --------------------------------------------------------------------
    def validate_highlighted(self, index: int | None) -> int | None:
        if index is None or not self._count:
            return None
        return max(0, min(index, self._count - 1))

    def watch_highlighted(self, index: int | None) -> None:
        self.refresh()
        if index is None:
            return
        self.scroll_to_highlight()
        self.post_message(self.Highlighted(self, index))

    def watch__hover(self) -> None:
        self.refresh()

    def scroll_to_highlight(self) -> None:
        index = self.highlighted
        if index is None or not self.is_mounted:
            return
        self._lay_out()
        if not self._width:
            return
        region = Region(0, self._first_line[index], max(1, self.size.width), self._heights[index])
        self.scroll_to_region(region, force=True, animate=False, immediate=True)

    def on_show(self) -> None:
        self.scroll_to_highlight()

    # -- keys and mouse -------------------------------------------------------------------
    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def _step(self, direction: int) -> None:
        count = self._count
        if not count:
            return
        if self.highlighted is None:
            self.highlighted = 0 if direction > 0 else count - 1
        else:
            self.highlighted = (self.highlighted + direction) % count

    def action_first(self) -> None:
        if self._count:
            self.highlighted = 0

    def action_last(self) -> None:
        if self._count:
            self.highlighted = self._count - 1

    def action_page_up(self) -> None:
        self._page(-1)

    def action_page_down(self) -> None:
        self._page(1)

    def _page(self, direction: int) -> None:
        if not self._count:
            return
        self._lay_out()
        if self.highlighted is None or not self._width:
            self.action_first() if direction < 0 else self.action_last()
            return
        line = (
            self._first_line[self.highlighted] + direction * self.scrollable_content_region.height
        )
        line = max(0, min(line, len(self._lines) - 1))
        self.highlighted = self._lines[line][0]

    def action_select(self) -> None:
        if self.highlighted is not None:
            self.post_message(self.Selected(self, self.highlighted))

    def _on_click(self, event: events.Click) -> None:
        index = event.style.meta.get("row")
        if index is not None:
            self.highlighted = index
            self.action_select()

    def _on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover = event.style.meta.get("row")

    def _on_leave(self, event: events.Leave) -> None:
        self._hover = None
