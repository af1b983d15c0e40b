"""A loopback HTTP server that answers whatever bytes a test scripts (the standard library's sockets), for the
clients' hostile-server and reply-limit tests; the ``raw`` fixture (tests/clients/conftest.py) makes them."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

__all__ = ["RawServer", "chunk"]


class RawServer:
    """Loopback server: reads one request per connection, then runs ``handler(conn)``; ``requests`` is released
    once per request read whole (the client now waits for the response), ``finished`` set when a handler wrote
    all it meant to (no broken pipe: the client read it all)."""

    def __init__(self, handler: Callable[[socket.socket], None]) -> None:
        self.handler = handler
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.requests = threading.Semaphore(0)
        self.finished = threading.Event()
        self.broken = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(rest) < length:
                got = conn.recv(65536)
                if not got:
                    return
                rest += got
            self.requests.release()
            try:
                self.handler(conn)
                self.finished.set()
            except OSError:
                self.broken.set()

    def close(self) -> None:
        self.sock.close()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"
