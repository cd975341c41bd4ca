"""Exit codes and the errors that carry them.

Every failure a user can meet is a `KajaError` whose `status` says how kaja
exits; `app.main` maps them to one line on stderr in one place. The core raises
these too (this module imports nothing from typer or rich).
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    FAILED = 1  # failed, or `doctor` found an error
    USAGE = 2  # bad usage: options, a malformed query
    NOT_FOUND = 3  # no such session, no store where one is needed
    BUSY = 4  # the store is in use by another process, or a lock wait ran out
    REFUSED = 5  # another owner's session, an unsafe path, no --yes and no terminal
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        """What the code tells a script (the manual's table is generated from this)."""
        return _MEANINGS[self]


_MEANINGS = {
    ExitStatus.OK: "done",
    ExitStatus.FAILED: "failed, or `kaja doctor` found an error",
    ExitStatus.USAGE: "bad usage: an option, a value, a malformed query",
    ExitStatus.NOT_FOUND: "not found: no such session, no store where one is needed",
    ExitStatus.BUSY: "busy: another process has the store, or a lock wait ran out",
    ExitStatus.REFUSED: "refused: another owner's session, an unsafe path, a destructive action"
    " without `--yes` and no terminal to ask",
    ExitStatus.INTERRUPTED: "interrupted (Ctrl-C); a destructive command says how to finish",
}


class KajaError(Exception):
    """A failure with a one-line message for the user and an exit status."""

    status: ExitStatus = ExitStatus.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}: {self.hint}" if self.hint else self.message


class Failed(KajaError):
    status = ExitStatus.FAILED


class UsageError(KajaError):
    status = ExitStatus.USAGE


class NotFound(KajaError):
    status = ExitStatus.NOT_FOUND


class Busy(KajaError):
    status = ExitStatus.BUSY


class Refused(KajaError):
    status = ExitStatus.REFUSED


class Interrupted(KajaError):
    """Ctrl-C in the middle of something that says how to finish it."""

    status = ExitStatus.INTERRUPTED


class SettingsError(Failed):
    """settings.toml could not be read or parsed."""


class NotADatabase(Refused):
    """A path where a SQLite file should be holds something else."""


class Declined(Failed):
    """The user answered no to a confirmation: nothing was done."""
