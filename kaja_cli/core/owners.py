"""Owners: whose rows are whose inside one file (SPEC §4).

In `sessions` the terminal is NULL; in `notes` and `dataset_*` it is the empty
string; anyone else is a namespaced id such as `telegram:123456` or
`widget:ab12`. Commands act as one owner (the terminal unless `--owner`).
"""

from __future__ import annotations

from typing import NamedTuple

from kaja_cli.errors import UsageError

TERMINAL = "terminal"


def one_of(owner: str | None, all_owners: bool) -> None:
    """`--owner` names one owner and `--all-owners` every one: not both (exit 2),
    worded the same by every command that has the two."""
    if all_owners and owner is not None:
        raise UsageError("--owner and --all-owners can't be combined")


# A NamedTuple, not a dataclass: defining a dataclass costs ~0.5 ms at import,
# and this module is on the path of every listing (start-up is felt).
class Owner(NamedTuple):
    """The acting owner; `id` None is the terminal."""

    id: str | None = None

    @classmethod
    def parse(cls, value: str | None) -> Owner:
        """`--owner` as typed: "terminal" (or no option at all) is the terminal.

        An empty value is a usage error, not the terminal: an unset shell
        variable (`--owner "$WHO"`) must not quietly act on the terminal's data.
        """
        if value is None:
            return cls(None)
        value = value.strip()
        if not value:
            raise UsageError("--owner is empty", hint="say --owner terminal for the terminal")
        if value == TERMINAL:
            return cls(None)
        if any(ch in value for ch in "\n\r\t\x00") or len(value) > 200:
            raise UsageError(f"--owner: not an owner id: {value!r}")
        return cls(value)

    @property
    def is_terminal(self) -> bool:
        return self.id is None

    @property
    def label(self) -> str:
        return self.id or "terminal"

    @property
    def notes_value(self) -> str:
        """The value in `notes.owner` and `dataset_*.owner` (empty = terminal)."""
        return self.id or ""

    def sessions_where(self, column: str = "owner") -> tuple[str, tuple]:
        """SQL condition and parameters selecting this owner's sessions.

        The terminal matches NULL and, from other writers, the empty string
        and the word itself ('terminal', which every listing shows as the
        terminal: what is shown as the terminal's is the terminal's).
        """
        if self.id is None:
            return f"({column} IS NULL OR {column} IN ('', '{TERMINAL}'))", ()
        return f"{column} = ?", (self.id,)

    def rows_where(self, column: str = "owner") -> tuple[str, tuple]:
        """The same for `notes` and `dataset_*`, where the terminal is ''."""
        if self.id is None:
            return f"{column} IN ('', '{TERMINAL}')", ()
        return f"{column} = ?", (self.id,)

    def owns(self, session_owner: object) -> bool:
        if self.id is None:
            return session_owner in (None, "", TERMINAL)
        return session_owner == self.id


def label(session_owner: object) -> str:
    """How an owner column value is shown: the terminal for NULL or empty
    (a value of another type, an INTEGER say, as its text)."""
    from kaja_cli.core.values import text

    return text(session_owner) or TERMINAL
