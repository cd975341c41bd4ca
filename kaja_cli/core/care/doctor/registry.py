"""doctor's registry: every check as a `Spec`, registered with `@check` as its
module loads (the check modules import this, never the package, so the
package may import them without a circle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kaja_cli.core.care.doctor.model import GROUPS, Group


@dataclass(frozen=True)
class Spec:
    """A registered check: what `--list-checks` shows and what the runner calls."""

    id: str
    group: Group
    about: str
    run: Callable
    per_database: bool = False  # run once per database file: `integrity.shared`, …
    needs_shared: bool = False  # skipped (silently, in a full run) without a readable shared file
    unopened: bool = False  # per database: runs even when the file cannot be opened
    # What it reads in proportion to the store ("every page of the file"):
    # `--quick` leaves it out and says so. None: bounded whatever the size.
    scans: str | None = None

    def to_json(self) -> dict:
        """A row of `kaja doctor --list-checks --json`."""
        return {"id": self.id, "group": self.group, "about": self.about,
                "per_database": self.per_database, "in_quick": self.scans is None}  # fmt: skip


CHECKS: list[Spec] = []


def check(
    id: str,
    group: Group | str,
    about: str,
    *,
    per_database: bool = False,
    needs_shared: bool = False,
    unopened: bool = False,
    scans: str | None = None,
) -> Callable:
    """Register a check function (see the module docstring)."""
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}")

    def register(fn: Callable) -> Callable:
        if any(s.id == id for s in CHECKS):
            raise ValueError(f"check {id!r} registered twice")
        CHECKS.append(
            Spec(id, Group(group), about, fn, per_database, needs_shared, unopened, scans)
        )
        return fn

    return register


def list_checks() -> list[Spec]:
    return list(CHECKS)
