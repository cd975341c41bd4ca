"""doctor's `server.encryption`: kaja's own link, as kaja's end sees it.
Through a pooler the server's side of a connection is the pooler's link, so a
plain TCP link from kaja to a pooler that reaches the server by socket read as
"a Unix socket"."""

from types import SimpleNamespace

import pytest

from kaja_cli.core.care.doctor.server import _encryption


def _conn(host: str, ssl: bool):
    pgconn = SimpleNamespace(ssl_in_use=ssl, ssl_attribute=lambda name: "TLSv1.3")
    return SimpleNamespace(raw=SimpleNamespace(pgconn=pgconn, info=SimpleNamespace(host=host)))


@pytest.mark.parametrize(
    ("host", "ssl", "status", "summary"),
    [
        ("db.example.org", True, "ok", "the connection is encrypted (TLSv1.3)"),
        ("127.0.0.1", False, "warn", "the connection is not encrypted"),
        ("db.example.org", False, "warn", "the connection is not encrypted"),
        ("/var/run/postgresql", False, "ok",
         "the connection is not encrypted: a Unix socket, on this machine"),
    ],
)  # fmt: skip
def test_kajas_own_link_is_what_is_reported(host, ssl, status, summary):
    check = _encryption(_conn(host, ssl), None)
    assert (check.status.value if hasattr(check.status, "value") else check.status) == status
    assert check.summary == summary
