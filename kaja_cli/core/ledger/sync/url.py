"""Where the shared ledger is: the PostgreSQL URL of ledger sync, and where it came from.

`--ledger-url`, then `USAGE_POSTGRES_URL`, then `[usage] postgres_url` in
settings.toml; shown with its password masked (`core/masking.py`).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kaja_cli.core.store import Store
from kaja_cli.errors import Failed

ENV_URL = "USAGE_POSTGRES_URL"
URL_KEY = "usage.postgres_url"


class Url(NamedTuple):
    value: str
    source: str  # "flag --ledger-url", "env USAGE_POSTGRES_URL", "settings [usage] postgres_url"

    @property
    def shown(self) -> str:
        from kaja_cli.core.masking import mask

        return mask(self.value)


def find_url(store: Store, flag: str | None = None, environ: dict | None = None) -> Url | None:
    """The PostgreSQL URL: --ledger-url, then USAGE_POSTGRES_URL, then [usage] postgres_url.

    A value that is not a postgresql:// URL is an error naming where it came from."""
    from kaja_cli.core.store.settings import keys as settings_keys
    from kaja_cli.errors import SettingsError, UsageError

    key = settings_keys.KEYS[URL_KEY]
    env = os.environ if environ is None else environ
    if flag is not None:
        if why := settings_keys.check(key, flag):
            raise UsageError(f"--ledger-url: {why.removeprefix(URL_KEY + ' ')}")
        return Url(flag, "flag --ledger-url")
    if env.get(ENV_URL):
        if why := settings_keys.check(key, env[ENV_URL]):
            raise Failed(f"{ENV_URL}: {why.removeprefix(URL_KEY + ' ')}")
        return Url(env[ENV_URL], f"env {ENV_URL}")
    settings = store.paths.settings
    value = settings.get("usage", "postgres_url")
    if value is None:
        return None
    if why := settings_keys.check(key, value):
        line = settings.line_of(key.parts)
        raise SettingsError(
            f"{settings.path}{f':{line}' if line else ''}: {why}",
            hint="fix it with `kaja config edit`",
        )
    return Url(value, "settings [usage] postgres_url")


NOT_CONFIGURED_HINT = (
    "set [usage] postgres_url in settings.toml or USAGE_POSTGRES_URL, or pass --ledger-url"
)


def require_url(store: Store, flag: str | None = None) -> Url:
    url = find_url(store, flag)
    if url is None:
        raise Failed("ledger sync is not configured", hint=NOT_CONFIGURED_HINT)
    return url
