"""`--help` under the layout rule (docs/reference/terminal.md), at any width.

Typer draws each panel of options as a Rich table. On a narrow terminal Rich
squeezes every column of it: option names are cut (`--max-messa…`), a range
is split (`[0<=x<=10000` / `00000]`) and a long word of the help is cut
(`("telegram:1…`). Where Typer's table would squeeze, kaja shows each option
as a short record instead: its names, metavar and range on a line (wrapped
only at spaces), then its help under it, indented and wrapped at words. Where
the table fits, it is Typer's, unchanged.

Typer also keeps the line breaks of a command's description; on a terminal
narrower than those lines each paragraph is wrapped as one instead, so that
it does not come out as alternating long and short lines.

app.py calls `patch()` from Typer's `format_help`: nothing here, nor Rich,
is imported until a help screen is drawn (start-up is felt on every TAB press).
"""

from __future__ import annotations

from typing import Any

HELP_ROOM = 20  # Typer's table is kept while its help column has this much, and no word is cut
INDENT = 4  # a record's help, under its names
PANEL = 4  # a panel's two borders and their padding

_patched = False


def patch() -> None:
    """Draw Typer's help through kaja's panels and paragraphs (once; app.py calls
    it when the first help screen is drawn)."""
    global _patched
    if _patched:
        return
    from kaja_cli import typer_internals

    options_panel, fix_linebreaks = typer_internals.help_drawers()

    def print_options_panel(*, name, params, ctx, markup_mode, console) -> None:
        captured = _Capture()
        options_panel(name=name, params=params, ctx=ctx, markup_mode=markup_mode,
                      console=captured)  # fmt: skip
        for panel in captured.printed:
            console.print(_fitted(panel, console.width))

    def wrapped_paragraphs(paragraphs: list[str], markup_mode: Any) -> str:
        text = fix_linebreaks(paragraphs, markup_mode)
        longest = max((len(line) for line in text.splitlines()), default=0)
        if markup_mode != "rich" or longest + 2 <= typer_internals.help_width():
            return text
        return "\n\n".join(_one_line(p) for p in text.split("\n\n"))

    typer_internals.replace_help_drawers(print_options_panel, wrapped_paragraphs)
    _patched = True


class _Capture:
    """Stands for the console while Typer builds a panel: the panel is kept,
    to be printed as it is or as records."""

    def __init__(self) -> None:
        self.printed: list[Any] = []

    def print(self, *objects: Any, **_: Any) -> None:
        self.printed.extend(objects)


def _one_line(paragraph: str) -> str:
    """A paragraph's lines joined (a `\\b` paragraph keeps them, as Click's rule has it,
    and so do command lines: the Examples a help screen ends with)."""
    lines = paragraph.splitlines()
    if paragraph.startswith("\b") or all(line.lstrip().startswith("$ ") for line in lines):
        return paragraph
    return " ".join(line.strip() for line in lines)


def _fitted(panel: Any, width: int) -> Any:
    """Typer's panel if its table fits `width` without cutting anything, else records."""
    from rich.panel import Panel
    from rich.table import Table

    table = getattr(panel, "renderable", None)
    if not isinstance(panel, Panel) or not isinstance(table, Table) or len(table.columns) < 2:
        return panel
    rows = [list(cells) for cells in zip(*(c.cells for c in table.columns), strict=True)]
    fixed = [
        max((_width(row[i]) for row in rows), default=0) for i in range(len(table.columns) - 1)
    ]
    room = width - PANEL - sum(fixed) - 2 * (len(table.columns) - 1)
    from rich.cells import cell_len

    words = max((cell_len(w) for row in rows for w in _plain(row[-1]).split()), default=0)
    if room >= max(HELP_ROOM, words, *fixed):
        return panel
    return Panel(
        _records(rows), border_style=panel.border_style, title=panel.title,
        title_align=panel.title_align,
    )  # fmt: skip


def _records(rows: list[list[Any]]) -> Any:
    """Each option: its names and types on a line, its help under it."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    out: list[Any] = []
    for *heads, help_cell in rows:
        # Typer's columns: [a required mark], long names, short names, their
        # negative forms (--no-x), the metavar with its range; then the help.
        *names, kind = [h if isinstance(h, Text) else Text(_plain(h)) for h in heads]
        mark = names.pop(0) if len(names) > 4 else Text("")
        line = Text(", ").join(n for n in names if n.plain)
        if mark.plain:
            line = Text.assemble(mark, " ", line)
        if kind.plain:
            line = Text.assemble(line, " ", kind)
        out.append(line)
        items = list(getattr(help_cell, "renderables", [help_cell]))
        if items and all(isinstance(i, Text) for i in items):
            out.append(Padding(Text(" ").join(items), (0, 0, 0, INDENT)))
        elif items:
            out.append(Padding(Group(*items), (0, 0, 0, INDENT)))
    return Group(*out)


def _plain(cell: Any) -> str:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    items = getattr(cell, "renderables", None)
    if items is not None:
        return " ".join(_plain(i) for i in items)
    return str(getattr(cell, "markup", "") or "")


def _width(cell: Any) -> int:
    from rich.cells import cell_len

    return cell_len(_plain(cell))
