"""The command layer: parse options, call the core, hand the result to render.

A command is: its options (the shared ones are `commands/options.py`), one or
a few core calls, and `render.emit(result, as_json, view)`: the result knows
its JSON shape (`to_json()`), and its view for a person or a pipe is in
`render/<command>.py`.

No `from __future__ import annotations` in this package: typer would eval
every stringified annotation at start-up (~0.1 ms each, on every TAB press).

One module per command group (a package for `sessions`); `app.py` registers
them. Modules import the core and render inside their functions so that
start-up (every TAB press) stays cheap.
"""

from typing import TYPE_CHECKING

import typer

from kaja_cli.typer_internals import FloatRange, IntRange, TyperPath, quiet_range

if TYPE_CHECKING:
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides


def overrides(ctx: typer.Context) -> "Overrides":
    """The root options (--config, --state-dir, --db) as given.

    A `--config` naming no file is an error (exit 1): typed for this one
    command, a typo must not quietly mean the defaults. `KAJA_CONFIG` may name
    a file that does not exist yet (set once in a profile; the defaults apply
    until `kaja config set` writes it), and so may `--config` for `config
    set`, `unset` and `edit`, which read `ctx.find_root().obj` themselves.
    """
    import os

    given = ctx.find_root().obj
    path = given.config
    if path is not None:
        full = os.path.expanduser(path)
        if not (os.path.exists(full) or os.path.islink(full)):
            from kaja_cli.errors import Failed

            raise Failed(
                f"--config {path}: no such file",
                hint="check the path, or create it with `kaja --config PATH config set KEY VALUE`",
            )
    return given


def store_of(ctx: typer.Context) -> "Store":
    """The store the root options (--config, --state-dir, --db) point at."""
    from kaja_cli.core.side import profiler
    from kaja_cli.core.store import Store

    store = Store.locate(overrides(ctx))
    profiler.configure(store.paths, ctx.command_path)  # where this command's profile goes
    return store


# Bounds of the numbers typed on the command line (exit 2 beyond them): a
# count of rows or entries, and a lock wait. SQLite's LIMIT takes at most
# 2^63 - 1, and a wait is given to SQLite in milliseconds.
COUNT_MAX = 1_000_000_000
WAIT_MAX = 3600.0


class _Count(quiet_range(IntRange)):
    """A count typed on the command line, in words a person reads: "'abc' is
    not a whole number", "-1 is too small (at least 0)", rather than Click's
    "'abc' is not a valid int range" (exit 2 either way). Its help shows the
    range only where it tells something (`--count 1..1000000`), not 0 to a
    billion."""

    def __init__(self, min: int, max: int) -> None:
        super().__init__(min=min, max=max)
        self.shown = (min, max) != (0, COUNT_MAX)

    def get_metavar(self, param, ctx=None):  # type: ignore[no-untyped-def]
        return "N"  # `-n N`, not `-n <int range>`

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if isinstance(value, int) and not isinstance(value, bool):
            n = value  # a default
        else:
            try:
                n = int(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a whole number", param, ctx)
        if self.min is not None and n < self.min:
            self.fail(f"{n} is too small (at least {self.min})", param, ctx)
        if self.max is not None and n > self.max:
            self.fail(f"{n} is too large (at most {self.max})", param, ctx)
        return n


def count(min: int = 0, max: int = COUNT_MAX) -> IntRange:
    """The click type of every count option (`--limit/-n`, `--tail`, `--tools`…):
    `click_type=count()`, instead of typer's `min=`/`max=`."""
    return _Count(min, max)


class _Seconds(FloatRange):
    """A wait in seconds, said as `_Count` says a count. NaN passes every range
    check (it compares false), so it is refused here too."""

    def get_metavar(self, param, ctx=None):  # type: ignore[no-untyped-def]
        return "SECONDS"

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        try:
            n = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if n != n:
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if self.min is not None and n < self.min:
            self.fail(f"{value} is too small (at least {self.min:g})", param, ctx)
        if self.max is not None and n > self.max:
            self.fail(f"{value} is too large (at most {self.max:g})", param, ctx)
        return n


def seconds(max: float = WAIT_MAX) -> FloatRange:
    """The click type of a wait option (`--wait SECONDS`): 0 to `max`."""
    return _Seconds(min=0, max=max)


def subcommand_runs(ctx: typer.Context) -> bool:
    """For a group whose callback is also its listing (`kaja sessions`, `notes`,
    `cache`, `accounts`): True when a subcommand runs instead. The listing's
    options typed before that subcommand are a usage error (exit 2)."""
    if ctx.invoked_subcommand is None:
        return False
    given = [p.opts[0] for p in ctx.command.params
             if getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"]  # fmt: skip
    if given:
        from kaja_cli.errors import UsageError

        path, sub = ctx.command_path, ctx.invoked_subcommand
        command = ctx.command.get_command(ctx, sub) if hasattr(ctx.command, "get_command") else None
        takes = {o for q in getattr(command, "params", ()) for o in q.opts}
        if not all(g in takes for g in given):  # `usage --owner X reset`: reset has none
            hint = f"`{path} {sub}` takes no such option: see `{path} {sub} --help`"
        elif len(ctx.command.params) == 1:  # the listing's one option: named in the hint
            hint = f"put it after it: {path} {sub} {given[0]}"
        else:
            hint = f"put the options after it: {path} {sub} …"
        verb = "belongs" if len(given) == 1 else "belong"
        raise UsageError(f"{', '.join(given)} {verb} to the listing, not to `{sub}`", hint=hint)
    return True


class _TypedPath(TyperPath):
    """A path option as typed. An empty one is a mistake (`--db "$UNSET"`), not
    the current folder, which is what `Path("")` would quietly mean."""

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if isinstance(value, str) and not value.strip():
            self.fail("is empty: give a path (an unset shell variable?)", param, ctx)
        return super().convert(value, param, ctx)


def typed_path() -> TyperPath:
    """The click type of every path option (`click_type=typed_path()`)."""
    return _TypedPath()
