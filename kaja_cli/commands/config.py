"""`kaja config`: where Kaja's files are (`paths`), and settings.toml (`show`,
`get`, `set`, `unset`, `edit`)."""

from typing import Annotated

import typer

from kaja_cli.commands import overrides, store_of
from kaja_cli.commands.options import DryRun, Json
from kaja_cli.completion.hooks import hook

app = typer.Typer(
    no_args_is_help=True,
    help="Show where Kaja keeps its data; read and change its settings (settings.toml).",
)


@app.command("paths")
def paths(
    ctx: typer.Context,
    as_json: Json = False,
) -> None:
    """Print every location as resolved, where it came from, and whether it exists.

    Sources, strongest first: a flag (--config, --state-dir, --db), an
    environment variable (KAJA_CONFIG, KAJA_STATE_DIR, KAJA_DB_PATH), a
    settings.toml key (\\[memory] dbPath), the platform default. In cloud mode
    (--database-url, or \\[memory] mode = "cloud"): the server (its password as
    ***), the account and the schema instead of the local databases. Nothing is
    created, and no server is contacted.
    """
    from kaja_cli import render
    from kaja_cli.core.store import paths as core
    from kaja_cli.render import config as view

    paths = store_of(ctx).paths
    found = {"mode": paths.mode, "backend": {b.name: b.to_json() for b in core.backend(paths)},
             "paths": {r.name: r.to_json() for r in core.inspect(paths)}}  # fmt: skip
    render.emit(found, as_json, view.paths)


# --- settings.toml --------------------------------------------------------------------------------
# The keys, their types and defaults: kaja_cli/core/store/settings/keys.py (and the
# docs/guides/settings.md). Reading never imports tomlkit; set/unset/edit do.
KEY_HELP = "A dotted key, e.g. memory.mode or logging.database.slow_ms."


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: Json = False,
) -> None:
    """Print every setting in effect, its value and where it came from.

    Sources: default, settings file line N, env VAR, flag --db. Keys in
    settings.toml that kaja does not know are listed too, with a guess at
    what was meant. Secrets (a password in a database URL) print as ***.
    """
    from kaja_cli import render
    from kaja_cli.core.store.settings import view as settings_view
    from kaja_cli.render import config as view

    render.emit(settings_view.view(overrides(ctx)), as_json, view.settings)


@app.command("get")
def get(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help=KEY_HELP, autocompletion=hook("key"))],
) -> None:
    """Print one setting's value in effect, alone on a line (for scripts).

    Exit 3 when the key is not set and has no default, 2 for a key kaja does
    not know. Path keys print the path they resolve to; secrets print masked.
    """
    import sys

    from kaja_cli.core.store.settings import keys as settings_keys
    from kaja_cli.core.store.settings import view as settings_view

    found = settings_view.get(key, overrides(ctx))
    sys.stdout.write(settings_keys.to_text(found.value) + "\n")


# A negative number is a value, not an option: `kaja config set KEY -1`.
@app.command("set", context_settings={"ignore_unknown_options": True})
def set_(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help=KEY_HELP, autocompletion=hook("key"))],
    value: Annotated[
        str,
        typer.Argument(
            metavar="VALUE",
            help="The new value (true/false, a number, a word or a path).",
            autocompletion=hook("value"),
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Write a key kaja does not know (it is not checked).")
    ] = False,
    dry_run: DryRun = False,
) -> None:
    """Set a key in settings.toml, keeping its comments and layout.

    The value is checked against the key's type, allowed values and range
    (exit 2 with what is allowed); an unknown key is refused (exit 2) unless
    --force. The file is written atomically (0600) under a lock; a file that
    does not parse is left untouched (exit 1). A symlinked settings.toml is
    edited at its target when that is a regular file you own.
    """
    from kaja_cli.core.store import guard
    from kaja_cli.core.store.settings import view as settings_view
    from kaja_cli.core.store.settings import write as settings_write
    from kaja_cli.render import config as view

    paths = settings_view.locate(ctx.find_root().obj, tolerant=True)
    change = settings_write.set_value(
        paths.settings_file.path, key, value, force=force,
        protected=guard.store_files(paths), dry_run=dry_run,
    )  # fmt: skip
    view.set_(change, dry_run=dry_run)
    view.overridden(change.key, ctx.find_root().obj)


@app.command("unset")
def unset(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help=KEY_HELP, autocompletion=hook("key"))],
    dry_run: DryRun = False,
) -> None:
    """Remove a key from settings.toml, so its default applies again.

    Any key the file has can be removed, known or not (a misspelt one, say);
    a table left with nothing in it goes too. A key that is not set is not an
    error (exit 0).
    """
    from kaja_cli.core.store import guard
    from kaja_cli.core.store.settings import view as settings_view
    from kaja_cli.core.store.settings import write as settings_write
    from kaja_cli.render import config as view

    paths = settings_view.locate(ctx.find_root().obj, tolerant=True)
    change = settings_write.unset_value(
        paths.settings_file.path, key, protected=guard.store_files(paths), dry_run=dry_run
    )
    view.unset(change, dry_run=dry_run)
    if change.changed:
        view.overridden(change.key, ctx.find_root().obj)


@app.command("edit")
def edit(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Accept keys kaja does not know.")] = False,
) -> None:
    """Open settings.toml in $VISUAL or $EDITOR, and save it only if it is valid.

    You edit a copy; when the editor closes, kaja checks it (TOML syntax,
    known keys, allowed values). On an error it shows the line and offers to
    reopen the editor; without a terminal it exits 1 keeping nothing. A
    missing file starts from a commented template of every key.
    """
    import shutil
    import tempfile
    from pathlib import Path

    from kaja_cli import render
    from kaja_cli.core.store import guard
    from kaja_cli.core.store.settings import view as settings_view
    from kaja_cli.core.store.settings import write as settings_write

    paths = settings_view.locate(ctx.find_root().obj, tolerant=True)
    draft = settings_write.begin_edit(paths.settings_file.path, protected=guard.store_files(paths))
    argv = settings_write.editor_command()
    folder = Path(tempfile.mkdtemp(prefix="kaja-settings-"))
    copy = folder / "settings.toml"
    copy.write_text(draft.text, encoding="utf-8")
    keep = False
    try:
        text = _edit_until_valid(argv, copy, draft, force)
        if text is None:
            render.note(f"no changes: {draft.target.path} left as it was")
            return
        try:
            settings_write.save_edit(draft, text)
        except Exception:
            keep = True
            render.note(f"your edited copy is kept in {copy}")
            raise
        render.note(f"saved {draft.target.real}")
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _edit_until_valid(argv: list[str], copy, draft, force: bool) -> str | None:
    """Run the editor until the copy is valid; None if it was left unchanged."""
    from kaja_cli import render
    from kaja_cli.core.engine import fs
    from kaja_cli.core.store.settings import write as settings_write
    from kaja_cli.errors import Declined, Failed

    path = draft.target.path
    while True:
        settings_write.run_editor(argv, copy)
        try:
            raw = fs.read_regular(copy)  # a FIFO left in its place would block a plain read
            if raw is None:
                raise FileNotFoundError(copy)
            text = raw.decode("utf-8")
        except FileNotFoundError:
            raise Failed(f"the editor removed its copy of {path.name}: nothing was saved") from None
        except fs.NotRegularFile as e:
            raise Failed(
                f"the editor left {e.what} where its copy of {path.name} was: nothing was saved"
            ) from None
        except UnicodeDecodeError as e:
            text, problem = None, f"not UTF-8 text (byte {e.start})"
        else:
            if text == draft.text:
                return None
            problem = settings_write.problem(path, text, force=force)
        if problem is None:
            return text
        if not render.stdin_is_terminal():
            raise Failed(f"{path}: {problem}", hint="nothing was saved")
        render.note(f"{path}: {problem}")
        if not render.ask("Open the editor again to fix it?"):
            raise Declined(f"nothing was saved; {path} is as it was")
