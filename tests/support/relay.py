"""A PostgreSQL server that stops answering, for the tests: a relay on
127.0.0.1 in front of tests/support/pg.py's server (which listens on a Unix socket
only), that can stop relaying.

Frozen, it keeps every connection open and moves nothing either way, as a
server that hangs (or a network that drops everything) looks to a client:
TCP still answers, no reply ever comes. `freeze_after_login=True` freezes
each connection as soon as it has logged in (the server's first
ReadyForQuery went through), so its first query waits forever. URLs through it ask for
no TLS or GSS encryption, so the server's messages can be told apart.

    with Relay(pg.server) as relay:
        url = relay.url(pg.name)
        ...
        relay.freeze()

`run_all` runs several kaja commands at once as real processes (against a
relay that freezes, each would otherwise wait its turn to time out).
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any


class Relay:
    def __init__(self, server: Any, *, freeze_after_login: bool = False) -> None:
        self.target = str(server.socket)  # tests/support/pg.py's PgServer
        self.freeze_after_login = freeze_after_login
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self._logins: list[int] = []  # one entry per session that logged in (list.append is atomic)
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, dbname: str, user: str = "postgres") -> str:
        return (
            f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}?sslmode=disable&gssencmode=disable"
        )

    @property
    def logins(self) -> int:
        """Sessions that logged in through the relay (with `freeze_after_login`)."""
        return len(self._logins)

    def freeze(self) -> None:
        self.frozen.set()

    def close(self) -> None:
        self.closed.set()
        for sock in [self._listener, *self._sockets]:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- relaying ---------------------------------------------------------------------
    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.target)
            self._sockets += [client, server]
            mine = threading.Event()  # this connection alone is frozen
            for pump in (self._to_server, self._to_client):
                threading.Thread(target=pump, args=(client, server, mine), daemon=True).start()

    def _hold(self) -> None:
        """Frozen: keep everything open, move nothing, until the relay closes."""
        self.closed.wait()

    def _to_server(self, client: socket.socket, server: socket.socket, mine) -> None:
        try:
            while data := client.recv(65536):
                if self.frozen.is_set() or mine.is_set():
                    return self._hold()
                server.sendall(data)
        except OSError:
            pass

    def _to_client(self, client: socket.socket, server: socket.socket, mine) -> None:
        """The server's messages one by one (type byte, length), so the relay can
        freeze right after the first ReadyForQuery ('Z')."""
        pending = b""
        try:
            while data := server.recv(65536):
                pending += data
                while len(pending) >= 5:
                    size = 1 + int.from_bytes(pending[1:5], "big")
                    if len(pending) < size:
                        break
                    message, pending = pending[:size], pending[size:]
                    if self.frozen.is_set() or mine.is_set():
                        return self._hold()
                    client.sendall(message)
                    if message[:1] == b"Z" and self.freeze_after_login:
                        self._logins.append(1)
                        mine.set()
        except OSError:
            pass


def run_all(
    k: Any, commands: Iterable[tuple[str, ...]], *, before_waiting: Callable[[], None] | None = None
) -> list[tuple[tuple[str, ...], int, str, str, float]]:
    """Run the commands at once as real processes; each one's (argv, exit, stdout,
    stderr, seconds). One still running after 60 s is killed and fails the test."""
    procs = [(argv, time.monotonic(), k.popen(*argv, stdin=subprocess.DEVNULL,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
             for argv in commands]  # fmt: skip
    if before_waiting:
        before_waiting()
    done = []
    try:
        for argv, start, p in procs:
            out, err = p.communicate(timeout=max(1, 60 - (time.monotonic() - start)))
            done.append((argv, p.returncode, out, err, time.monotonic() - start))
    finally:
        for _, _, p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return done
