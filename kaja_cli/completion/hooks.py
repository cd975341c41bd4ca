"""Typer's side of completion: `autocompletion=` functions for the options
and arguments that take values kaja knows (see `values`).

`hook("session")` answers through `values.complete`, as the fast path does;
the fixed lists are computed from the core here (the fast path reads them
from the generated table). Descriptions are escaped for Rich, which Typer
renders them with: a title like "[draft] plan" stays as it is.
"""

from collections.abc import Callable

import typer

from kaja_cli.completion import values


def hook(kind: str) -> Callable[..., list]:
    def complete(ctx: typer.Context, incomplete: str) -> list:
        params = {**ctx.find_root().params, **ctx.params}
        if kind in FIXED_KINDS:
            items = [i for i in values.fixed()[kind] if i[0].startswith(incomplete)]
        else:
            items = values.complete(kind, params, incomplete)
        return [(v, _escaped(h)) if h else v for v, h in items]

    complete.kaja_values = kind  # type: ignore[attr-defined]  # read by completions/generate.py
    return complete


FIXED_KINDS = ("check", "role", "format")


def _escaped(text: str) -> str:
    """`text` as Rich markup that Typer renders back to `text`: Rich's `escape`
    adds a backslash after one that ends the text (for markup that might
    follow), which rendering keeps."""
    from rich.markup import escape

    out = escape(text)
    return out[:-1] if text.endswith("\\") and not text.endswith("\\\\") else out
