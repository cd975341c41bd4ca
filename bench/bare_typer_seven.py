"""The small start-up floor: a bare Typer app with seven commands.

kaja builds only the command group its arguments name (`kaja_cli/app.py`,
issue 29), so `kaja config paths --json` should cost what a small Typer app
costs, whatever the length of kaja's command list. This is that small app:
kaja's root options (`--config`, `--state-dir`, `--db`, `--version`) and
seven commands (`config paths`, `config get`, `sessions`, `resume`,
`search`, `usage`, `doctor`), each with `--json`, doing nothing
(`config paths --json` prints `{}`). Same Python, same installed typer.

Run as a script, like kaja's console script: `python bench/bare_typer_seven.py …`.
"""

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(name="kaja", no_args_is_help=True)
config = typer.Typer(no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json")]


def _version(value: bool) -> None:
    if value:
        print("kaja 0")
        raise typer.Exit()


@app.callback()
def root(
    config_path: Annotated[Path | None, typer.Option("--config", metavar="PATH")] = None,
    state_dir: Annotated[Path | None, typer.Option("--state-dir", metavar="DIR")] = None,
    db: Annotated[Path | None, typer.Option("--db", metavar="PATH")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True)] = False,
) -> None:
    """Administer the local storage of Kaja (the bench's seven-command app)."""


@config.command("paths")
def config_paths(as_json: Json = False) -> None:
    """Where the files are."""
    if as_json:
        print("{}")


@config.command("get")
def config_get(key: str, as_json: Json = False) -> None:
    """One setting."""


@app.command("sessions")
def sessions(as_json: Json = False) -> None:
    """List sessions."""


@app.command("resume")
def resume(session_id: Annotated[str | None, typer.Argument()] = None, as_json: Json = False):
    """Resume a session."""


@app.command("search")
def search(query: str, as_json: Json = False) -> None:
    """Search messages."""


@app.command("usage")
def usage(as_json: Json = False) -> None:
    """Usage totals."""


@app.command("doctor")
def doctor(as_json: Json = False) -> None:
    """Diagnose the store."""


app.add_typer(config, name="config")

if __name__ == "__main__":
    app(prog_name="kaja")
