"""`kaja sessions`: the group, built here from its commands' modules (each
module defines plain functions; none imports this one)."""

import typer

from kaja_cli.commands.sessions import care, delete, export, listing, prune, stats

app = typer.Typer(
    help="List your conversations, newest first; prune, export, archive or rename them.",
    invoke_without_command=True,
)
app.callback(invoke_without_command=True)(listing.sessions)
app.command("list")(listing.list_)
app.command("ls", hidden=True)(listing.list_)
app.command("delete")(delete.delete)
app.command("export")(export.export)
app.command("prune")(prune.prune)
app.command("rename")(care.rename)
app.command("archive")(care.archive)
app.command("unarchive")(care.unarchive)
app.command("stats")(stats.stats)
