"""`kaja demo`: a realistic sample store, for trying kaja and for benchmarks."""

from typing import Annotated

import typer

from kaja_cli.commands import count, store_of
from kaja_cli.commands.options import JsonDone


def demo(
    ctx: typer.Context,
    seed: Annotated[
        int,
        typer.Option(
            help="Random seed: the same seed and --now give the same rows"
            " (the ids depend on the seed alone)."
        ),
    ] = 1,
    sessions: Annotated[
        int | None,
        typer.Option(
            click_type=count(1, 1_000_000),
            help="Scale up: this many sessions in all (the benchmark store: 10000).",
        ),
    ] = None,
    messages: Annotated[
        int | None,
        typer.Option(
            click_type=count(0, 100_000_000),
            help="Scale up: this many messages in all (the benchmark store: 1000000).",
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            metavar="TIME", help="Base time for every timestamp (ISO 8601); default: this hour."
        ),
    ] = None,
    legacy: Annotated[
        bool,
        typer.Option(
            "--legacy",
            help="Also write the legacy files of an older install (per-feature files,"
            " conversation files) for `kaja migrate`.",
        ),
    ] = False,
    as_json: JsonDone = False,
) -> None:
    """Write a realistic sample store into the resolved location.

    Several owners (the terminal, two Telegram users, a website visitor),
    tool calls with every status, compacted sessions, a call waiting for
    approval, images, notes, datasets, the usage ledger, services and the
    side databases. Refuses to touch an existing store (exit 5): point
    --state-dir (or KAJA_STATE_DIR) at an empty folder. --legacy adds the
    files an older install left behind, waiting for `kaja migrate`.
    """
    from functools import partial

    from kaja_cli import demo as sample
    from kaja_cli import render
    from kaja_cli.core.side import profiler
    from kaja_cli.errors import UsageError
    from kaja_cli.render import demo as view

    profiler.discard()  # the sample store is reproducible: it carries sample profile rows

    base = None
    if now is not None:
        from kaja_cli.core.clock import parse_stored

        base = parse_stored(now)
        if base is None:
            raise UsageError(f"--now: not an ISO 8601 time: {now!r}")
    store = store_of(ctx)
    options = sample.DemoOptions(
        seed=seed, sessions=sessions, messages=messages, now=base, legacy=legacy
    )
    with render.progress("writing the demo store") as bar:
        result = sample.create(store, options, progress=bar)
    render.emit(result, as_json, partial(view.written, legacy=legacy))
