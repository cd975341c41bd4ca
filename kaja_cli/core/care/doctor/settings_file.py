"""The settings check: settings.toml parses and has no unknown keys."""

from __future__ import annotations

from kaja_cli.core.care.doctor.common import quote
from kaja_cli.core.care.doctor.context import Context
from kaja_cli.core.care.doctor.model import ERROR, OK, WARN, Check, Group
from kaja_cli.core.care.doctor.registry import check
from kaja_cli.core.store import settings as settings_mod
from kaja_cli.core.store.settings import keys as settings_keys
from kaja_cli.core.wording import plural


@check(
    "settings",
    Group.SETTINGS,
    "settings.toml parses (line and column of an error), its values are allowed, no unknown keys",
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
    out.append(_values(settings))
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


def _values(settings: settings_mod.Settings) -> Check:
    """Values kaja would refuse to `config set` (the ones that locate the data
    already failed the read above, so these are the agent's settings)."""
    problems = settings.problems()
    if not problems:
        return Check(
            "settings.values", Group.SETTINGS, OK, "every known setting has an allowed value"
        )
    details = []
    for name, why in problems:
        line = settings.line_of(settings_keys.KEYS[name].parts)
        details.append(f"line {line}: {why}" if line else why)
    return Check(
        "settings.values", Group.SETTINGS, WARN,
        f"{plural(len(problems), 'setting')} in settings.toml with a value that is not allowed",
        [*details, "Kaja may refuse to start or ignore them"],
        fix="kaja config set KEY VALUE, or kaja config edit",
    )  # fmt: skip
