"""`kaja doctor --redact`: the report with the home folder, user name and host
name replaced, for pasting into a support ticket; in cloud mode the server's
host, the database user and name, and the account too (`Report.private`)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kaja_cli.core.care.doctor.model import Report

_ALONE = r"(?<![A-Za-z0-9]){}(?![A-Za-z0-9])"  # not part of a longer word
_LIBPQ_PLACE = re.compile(r'(connection to server (?:at|on socket) ")[^"]*(")')


def redactor(
    environ: dict[str, str] | None = None, private: dict[str, str] | None = None
) -> Callable[[str], str]:
    """A function replacing the home folder (~), user name (<user>) and host name
    (<host>), and each of `private` with its stand-in (longest first)."""
    import getpass
    import socket

    env = os.environ if environ is None else environ
    homes: set[str] = set()
    users: set[str] = set()
    hosts: set[str] = set()
    if env.get("HOME"):
        homes.add(env["HOME"])
    with contextlib.suppress(Exception):
        homes.add(str(Path.home()))
    with contextlib.suppress(Exception):
        users.add(getpass.getuser())
    with contextlib.suppress(Exception):
        import pwd

        entry = pwd.getpwuid(os.geteuid())
        users.add(entry.pw_name)
        homes.add(entry.pw_dir)
    for name in ("USER", "LOGNAME", "USERNAME"):
        if env.get(name):
            users.add(env[name])
    with contextlib.suppress(Exception):
        hosts.add(socket.gethostname())
    with contextlib.suppress(Exception):
        hosts.add(os.uname().nodename)
    hosts |= {h.split(".", 1)[0] for h in hosts}
    for home in list(homes):
        with contextlib.suppress(OSError):
            homes.add(os.path.realpath(home))
    homes = {h.rstrip("/") for h in homes if len(h.rstrip("/")) > 1}
    users = {u for u in users if len(u) > 1}
    hosts = {h for h in hosts if len(h) > 1}
    rules: list[tuple[re.Pattern[str], str]] = []
    # Whole names only: a database called `search` leaves "the search index"
    # alone, a role `serial` leaves "serializable".
    for text, token in sorted((private or {}).items(), key=lambda kv: -len(kv[0])):
        rules.append((re.compile(_ALONE.format(re.escape(text))), token))
    # Where libpq says it tried to connect: the address a name resolved to,
    # or a socket's path, which no setting spells out.
    rules.append((_LIBPQ_PLACE, r"\1<db-host>\2"))
    for home in sorted(homes, key=len, reverse=True):
        rules.append((re.compile(re.escape(home) + r"(?![\w.-])"), "~"))
    for names, token in ((users, "<user>"), (hosts, "<host>")):
        for name in sorted(names, key=len, reverse=True):
            rules.append(
                (
                    re.compile(_ALONE.format(re.escape(name)), re.I),
                    token,
                )
            )

    def redact(text: str) -> str:
        for pattern, token in rules:
            text = pattern.sub(token, text)
        return text

    return redact


def redacted(report: Report, environ: dict[str, str] | None = None) -> Report:
    """The same report with the home folder, user name and host name replaced everywhere."""
    fn = redactor(environ, report.private)

    def deep(value):
        if isinstance(value, str):
            return fn(value)
        if isinstance(value, list):
            return [deep(v) for v in value]
        if isinstance(value, dict):
            return {k: deep(v) for k, v in value.items()}
        return value

    checks = [
        replace(c, summary=fn(c.summary), details=[fn(d) for d in c.details],
                fix=fn(c.fix) if c.fix else c.fix, repairs=())
        for c in report.checks
    ]  # fmt: skip
    fixes = None
    if report.fixes is not None:
        fixes = [replace(f, message=fn(f.message)) for f in report.fixes]
    return replace(report, versions=deep(report.versions), checks=checks, fixes=fixes)
