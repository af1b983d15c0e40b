"""The loopback SSE server of the live-path bench (bench_live.py), run in its own process so that its CPU
is not the client's.

    python bench/live_server.py [--pace-us N]  (the paced streams' wait between two events)

It prints the port it listens on (127.0.0.1), then serves until its standard input closes (the bench
process holds the other end: the server ends with it). Every POST gets one recorded stream
(:func:`bench_live.live_streams`), chosen by the request's model: the body's ``"model"`` or, for Gemini,
the ``/models/<model>:`` of the path. Each SSE event is written as its own HTTP chunk (chunked transfer
encoding, TCP_NODELAY, one ``sendall`` each), back to back, or ``--pace-us`` microseconds apart for the
paced streams; the headers go first, as their own write. HTTP/1.1 keep-alive: a client's connection is reused from one
request to the next, as a real client's is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import socketserver
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
_GEMINI_MODEL = re.compile(rb"/models/([^/:?]+):")


def _model(target: bytes, body: bytes) -> str | None:
    found = _GEMINI_MODEL.search(target)
    if found:
        return found.group(1).decode()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    model = value.get("model") if isinstance(value, dict) else None
    return model if isinstance(model, str) else None


def _not_found(why: str) -> bytes:
    body = why.encode()
    return b"HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def make_handler(streams: dict[str, tuple[list[bytes], float]]) -> type[socketserver.BaseRequestHandler]:
    """``streams``: each stream's HTTP chunks, framed beforehand (the server writes as fast as it can), and the
    seconds to wait between two of them."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with contextlib.suppress(ConnectionError):  # a client gone (closed between two requests)
                self._serve(self.request)

        def _serve(self, sock: socket.socket) -> None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                target = lines[0].split(b" ")[1]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    headers[name.strip().lower()] = value.strip()
                if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
                    body = b""
                    while True:
                        while b"\r\n" not in buf:
                            buf += sock.recv(65536)
                        size_line, _, buf = buf.partition(b"\r\n")
                        size = int(size_line.split(b";")[0], 16)
                        while len(buf) < size + 2:
                            buf += sock.recv(65536)
                        body, buf = body + buf[:size], buf[size + 2 :]
                        if size == 0:
                            break
                else:
                    size = int(headers.get(b"content-length", b"0"))
                    while len(buf) < size:
                        buf += sock.recv(65536)
                    body, buf = buf[:size], buf[size:]
                name = _model(target, body)
                frames, pace = streams.get(name or "", (None, 0.0))
                if frames is None:
                    sock.sendall(_not_found(f"no stream for model {name!r}"))
                    continue
                sock.sendall(HEAD)
                for frame in frames:
                    sock.sendall(frame)
                    if pace:
                        time.sleep(pace)
                sock.sendall(b"0\r\n\r\n")
                if headers.get(b"connection", b"").lower() == b"close":
                    return

    return Handler


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pace-us", type=float, default=0.0, help="microseconds between two events")
    args = parser.parse_args()
    import bench_live

    streams = {
        name: ([b"%x\r\n%s\r\n" % (len(e), e) for e in s.events], s.pace_us / 1e6)
        for name, s in bench_live.live_streams(args.pace_us).items()
    }
    server = Server(("127.0.0.1", 0), make_handler(streams))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # until the bench process ends (or closes the pipe)
    server.shutdown()


if __name__ == "__main__":
    main()
