"""The settings check: settings.toml parses and has no unknown keys."""

from __future__ import annotations

from kaja_cli.core import settings as settings_mod
from kaja_cli.core.doctor import check
from kaja_cli.core.doctor.common import quote
from kaja_cli.core.doctor.context import Context
from kaja_cli.core.doctor.model import ERROR, OK, WARN, Check, Group


@check(
    "settings",
    Group.SETTINGS,
    "settings.toml parses (line and column of an error) and has no unknown keys",
)
def check_settings(ctx: Context) -> list[Check]:
    path = ctx.paths.settings_file.path
    err = ctx.settings_error
    if err is not None:
        return [Check(
            "settings", Group.SETTINGS, ERROR, err.message,
            ["until it is fixed, Kaja cannot start; the checks below use the default locations"],
            fix=err.hint or f"fix it, or move it aside: mv -- {quote(path)} {quote(str(path) + '.bak')}",
        )]  # fmt: skip
    settings = ctx.paths.settings
    if not settings.exists:
        return [Check("settings", Group.SETTINGS, OK, f"no {path.name}: the defaults apply")]
    out = [Check("settings", Group.SETTINGS, OK, f"{path.name} parses")]
    if settings.mode is settings_mod.Mode.CLOUD:
        out[0].summary += ' (mode = "cloud": no local database, the database checks are skipped)'
    unknown = settings.unknown_keys()
    if unknown:
        known = ", ".join(
            f"[{t}] {k}" for t, keys in settings_mod.KNOWN_KEYS.items() for k in sorted(keys)
        )
        out.append(Check(
            "settings.keys", Group.SETTINGS, WARN, f"unknown keys in settings.toml: {', '.join(unknown)}",
            [f"kaja knows {known}", "a misspelt key is silently ignored"],
            fix="remove them, or correct their spelling",
        ))  # fmt: skip
    else:
        out.append(Check("settings.keys", Group.SETTINGS, OK, "no unknown keys in settings.toml"))
    return out
