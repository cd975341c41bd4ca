"""`kaja config`: where Kaja's files are, and (later) the settings file."""

from typing import Annotated

import typer

from kaja_cli.commands import JSON_HELP, store_of

app = typer.Typer(no_args_is_help=True, help="Show where Kaja keeps its data and settings.")


@app.command("paths")
def paths(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Print every location as resolved, where it came from, and whether it exists.

    Sources, strongest first: a flag (--config, --state-dir, --db), an
    environment variable (KAJA_CONFIG, KAJA_STATE_DIR, KAJA_DB_PATH), a
    settings.toml key (\\[memory] dbPath), the platform default. Nothing is
    created.
    """
    from kaja_cli import render
    from kaja_cli.core import paths as core_paths

    store = store_of(ctx)
    rows = core_paths.inspect(store.paths)
    if as_json:
        render.emit_json(
            {
                "mode": store.paths.mode,
                "paths": {
                    r.name: {
                        "path": str(r.path),
                        "source": r.source,
                        "kind": r.kind,
                        "exists": r.exists,
                        "size": r.size,
                        **({"files": r.files} if r.kind == "dir" else {}),
                    }
                    for r in rows
                },
            }
        )
        return
    render.table(
        [render.Col("what", style="bold"), render.Col("path"), render.Col("source", style="dim"),
         render.Col("exists"), render.Col("size", justify="right")],
        [
            [core_paths.LABELS[r.name], str(r.path), r.source, "yes" if r.exists else "no",
             render.human_size(r.size) + (f" ({r.files} files)" if r.files else "") if r.exists else "-"]
            for r in rows
        ],
        plain_rows=[
            [r.name, r.path, r.source, "yes" if r.exists else "no", "" if r.size is None else r.size]
            for r in rows
        ],
    )  # fmt: skip
    if store.paths.mode == "cloud":
        render.note('[memory] mode = "cloud": Kaja keeps no local database in this mode')
