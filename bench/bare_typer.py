"""The start-up floor: a bare Typer app shaped like kaja's top level.

Every TAB press of shell completion starts kaja, so start-up is measured
against what the framework itself costs: this plain `typer.Typer()` app, run
by the same Python with the same installed typer, with kaja's root options
(`--config`, `--state-dir`, `--db`, `--version`), its commands and command
groups under the same names, and `--json` where kaja has it. The commands do
nothing (`config paths --json` prints `{}`), so whatever kaja spends beyond
this app is kaja's own: its imports, path resolution, output.

Run as a script, like kaja's console script: `python bench/bare_typer.py …`.
"""

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(name="kaja", no_args_is_help=True)
sessions = typer.Typer()
usage = typer.Typer()
config = typer.Typer(no_args_is_help=True)
notes = typer.Typer()
cache = typer.Typer()
accounts = typer.Typer()
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
    """Administer the local storage of Kaja (the bench's bare app)."""


@sessions.callback(invoke_without_command=True)
def sessions_list(as_json: Json = False) -> None:
    """List sessions."""


@sessions.command("delete")
def sessions_delete(ids: list[str], yes: Annotated[bool, typer.Option("--yes")] = False) -> None:
    """Delete sessions."""


@sessions.command("export")
def sessions_export(session_id: str, as_json: Json = False) -> None:
    """Export a session."""


@app.command("resume")
def resume(session_id: Annotated[str | None, typer.Argument()] = None, as_json: Json = False):
    """Resume a session."""


@app.command("search")
def search(query: str, as_json: Json = False) -> None:
    """Search messages."""


@usage.callback(invoke_without_command=True)
def usage_report(as_json: Json = False) -> None:
    """Usage totals."""


@usage.command("reset")
def usage_reset(yes: Annotated[bool, typer.Option("--yes")] = False, as_json: Json = False):
    """Reset the usage ledger."""


@app.command("doctor")
def doctor(as_json: Json = False) -> None:
    """Diagnose the store."""


@app.command("wipe")
def wipe(yes: Annotated[bool, typer.Option("--yes")] = False, as_json: Json = False) -> None:
    """Delete the store."""


@config.command("paths")
def config_paths(as_json: Json = False) -> None:
    """Where the files are."""
    if as_json:
        print("{}")


@app.command("demo")
def demo() -> None:
    """Write a sample store."""


@notes.callback(invoke_without_command=True)
def notes_list(as_json: Json = False) -> None:
    """List notes."""


@notes.command("show")
def notes_show(key: str, as_json: Json = False) -> None:
    """Show a note."""


@notes.command("forget")
def notes_forget(keys: list[str], yes: Annotated[bool, typer.Option("--yes")] = False) -> None:
    """Forget notes."""


@notes.command("export")
def notes_export(as_json: Json = False) -> None:
    """Export notes."""


@cache.callback(invoke_without_command=True)
def cache_report(as_json: Json = False) -> None:
    """The cache per namespace."""


@cache.command("prune")
def cache_prune(yes: Annotated[bool, typer.Option("--yes")] = False) -> None:
    """Drop expired entries."""


@cache.command("clear")
def cache_clear(namespace: Annotated[str | None, typer.Argument()] = None) -> None:
    """Clear the cache."""


@accounts.callback(invoke_without_command=True)
def accounts_list(as_json: Json = False) -> None:
    """List accounts."""


def _account_command(name: str) -> None:
    def command(user: str, yes: Annotated[bool, typer.Option("--yes")] = False) -> None:
        """Change an account."""

    accounts.command(name)(command)


for _name in ("sessions", "revoke", "disable", "enable", "remove"):
    _account_command(_name)

app.add_typer(sessions, name="sessions")
app.add_typer(usage, name="usage")
app.add_typer(config, name="config")
app.add_typer(notes, name="notes")
app.add_typer(cache, name="cache")
app.add_typer(accounts, name="accounts")

if __name__ == "__main__":
    app(prog_name="kaja")  # as kaja's main() does: completion reads _KAJA_COMPLETE
