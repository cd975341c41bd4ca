"""doctor's `server.encryption`: kaja's own link, as kaja's end sees it.
Through a pooler the server's side of a connection is the pooler's link, so a
plain TCP link from kaja to a pooler that reaches the server by socket read as
"a Unix socket"; and a URL's `host` may name a socket's folder while its
`hostaddr` makes libpq connect by TCP: the socket itself is asked."""

import socket
from types import SimpleNamespace

import pytest

from kaja_cli.core.care.doctor.server import _encryption


def _conn(sock: socket.socket, ssl: bool, host: str):
    pgconn = SimpleNamespace(ssl_in_use=ssl, ssl_attribute=lambda name: "TLSv1.3")
    raw = SimpleNamespace(pgconn=pgconn, info=SimpleNamespace(host=host), fileno=sock.fileno)
    return SimpleNamespace(raw=raw)


@pytest.fixture
def tcp():
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        with client, peer:
            yield client


@pytest.fixture
def unix():
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        yield a


@pytest.mark.parametrize(
    ("link", "ssl", "host", "status", "summary"),
    [
        ("tcp", True, "db.example.org", "ok", "the connection is encrypted (TLSv1.3)"),
        ("tcp", False, "127.0.0.1", "warn", "the connection is not encrypted"),
        ("tcp", False, "/var/run/postgresql", "warn", "the connection is not encrypted"),
        ("unix", False, "/var/run/postgresql", "ok",
         "the connection is not encrypted: a Unix socket, on this machine"),
    ],
)  # fmt: skip
def test_kajas_own_link_is_what_is_reported(request, link, ssl, host, status, summary):
    check = _encryption(_conn(request.getfixturevalue(link), ssl, host), None)
    assert getattr(check.status, "value", check.status) == status
    assert check.summary == summary
