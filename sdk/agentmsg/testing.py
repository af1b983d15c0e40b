"""A local HTTP server that replays recorded provider responses, with faults on demand.

For tests and offline demos of the provider clients: real HTTP on loopback, no network::

    from agentmsg.testing import Reply, ReplayServer

    with ReplayServer() as server:
        server.add("/chat/completions", Reply(429, headers={"Retry-After": "0"}), Reply(body=sse_bytes, sse=True))
        client = Client("openai", base_url=server.url, api_key="test")
        ...
        server.requests[-1].json()   # what the client sent

Each path has a queue of :class:`Reply`; every request takes the next one (the last one repeats), whatever its
method: GET, POST, PUT, DELETE, PATCH, OPTIONS or any other (``requests[i].method`` says which). A HEAD takes none:
it gets the status and headers the next request would (its Content-Length too), no body, and is recorded as any
request is. A reply streams its body in ``chunk_size`` pieces (HTTP chunked encoding when ``sse``), and can inject
faults: ``disconnect_after`` bytes (the connection is dropped without ending the body), ``stall``
seconds of silence after ``stall_after`` bytes, a ``delay`` between pieces.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import orjson

__all__ = ["RecordedHeaders", "RecordedRequest", "ReplayServer", "Reply", "malformed"]

#: How often the server thread checks for stop(): stop() returns within about this long.
_POLL_SECONDS = 0.02


def _bodyless(status: object) -> bool:
    """A status whose response has no body (RFC 9110 6.4.1): 1xx, 204 and 304."""
    return type(status) is int and (100 <= status < 200 or status in (204, 304))


def _no_body(status: int) -> None:
    raise ValueError(f"Reply.body must be empty with status {status}: a 1xx, 204 or 304 response has no body")


def _bytes(instance: Reply, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, (bytes, bytearray)):
        hint = " (encode a str, or use Reply.json for a value)" if isinstance(value, str) else ""
        raise TypeError(f"Reply.{attribute.name} must be bytes, got {type(value).__name__}{hint}")
    # (on construction the validators run once every field is set: the status is the one given)
    if value and _bodyless(instance.status):
        _no_body(instance.status)


def _status(instance: Reply, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or not 100 <= value <= 599:
        raise ValueError(f"Reply.status must be an int from 100 to 599, got {value!r}")
    if _bodyless(value) and instance.body:
        _no_body(value)


def _count(least: int) -> Any:
    """A validator: None, or an int of at least ``least`` (a count of bytes)."""

    def check(instance: Reply, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and (type(value) is not int or value < least):
            raise ValueError(f"Reply.{attribute.name} must be None or an int >= {least}, got {value!r}")

    return check


@attrs.define
class Reply:
    """One scripted response. A value no server could send is refused here (a ``str`` body, a ``chunk_size`` of
    0 or less, a negative byte count, a ``status`` outside 100..599, a body with a status that has none: 1xx, 204,
    304), not met as a broken reply in the middle of a test. A reply of such a status is sent without framing
    (no Content-Length, Transfer-Encoding or chunk), unless ``headers`` scripts one."""

    status: int = attrs.field(default=200, validator=_status)
    body: bytes = attrs.field(default=b"", validator=_bytes)
    # sent as given; a Content-Type, Content-Length, Transfer-Encoding or Connection here is sent instead of the
    # server's own (the body is still framed as ``sse`` says: a mismatch is a fault you script)
    headers: dict[str, str] = attrs.field(factory=dict)
    sse: bool = False  # text/event-stream with chunked encoding (else JSON with Content-Length)
    # send the body in pieces of this many bytes (default: lines for SSE)
    chunk_size: int | None = attrs.field(default=None, validator=_count(1))
    delay: float = 0.0  # seconds between pieces
    # drop the connection after this many body bytes
    disconnect_after: int | None = attrs.field(default=None, validator=_count(0))
    # go silent after this many body bytes ...
    stall_after: int | None = attrs.field(default=None, validator=_count(0))
    stall: float = 0.0  # ... for this many seconds (then go on, unless the client has left)

    @classmethod
    def json(cls, value: Any, status: int = 200, **kwargs: Any) -> Reply:
        return cls(status, orjson.dumps(value), **kwargs)


class RecordedHeaders(Mapping[str, str]):
    """A request's headers as received, read only: a mapping whose names are case-insensitive, as HTTP's are
    (``headers["authorization"]`` finds ``Authorization``). Every header line is kept, in the order sent:
    ``headers[name]`` is the values of a repeated header joined with ``", "`` (RFC 9110 5.3), ``get_all(name)``
    the list of them (empty if none), ``multi_items()`` every ``(name, value)`` line with its name as sent.
    Iterating gives each name once, spelled as first sent. It equals a mapping with the same names in any case
    and the same values, and another ``RecordedHeaders`` with the same lines in the same order."""

    __slots__ = ("_lines", "_names", "_values")

    def __init__(self, lines: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = lines.items() if isinstance(lines, Mapping) else lines
        self._lines: tuple[tuple[str, str], ...] = tuple((str(k), str(v)) for k, v in pairs)
        self._values: dict[str, list[str]] = {}  # lowercased name: its values in order
        self._names: dict[str, str] = {}  # lowercased name: as first sent
        for name, value in self._lines:
            key = name.lower()
            self._names.setdefault(key, name)
            self._values.setdefault(key, []).append(value)

    def __getitem__(self, name: str) -> str:
        values = self._values.get(name.lower()) if isinstance(name, str) else None
        if values is None:
            raise KeyError(name)
        return ", ".join(values)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._names.values())

    def __len__(self) -> int:
        return len(self._names)

    def get_all(self, name: str) -> list[str]:
        """Every value of header ``name`` (any case), in the order sent; [] if it was not sent."""
        return list(self._values.get(name.lower(), ()))

    def multi_items(self) -> list[tuple[str, str]]:
        """Every header line as ``(name, value)``, names as sent, in the order sent."""
        return list(self._lines)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordedHeaders):
            return [(k.lower(), v) for k, v in self._lines] == [(k.lower(), v) for k, v in other._lines]
        if isinstance(other, Mapping):
            return {k.lower(): v for k, v in self.items()} == {str(k).lower(): v for k, v in other.items()}
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (equal to a dict, which is not hashable)

    def __repr__(self) -> str:
        return f"RecordedHeaders({list(self._lines)!r})"


def _recorded_headers(lines: Mapping[str, str] | Iterable[tuple[str, str]]) -> RecordedHeaders:
    return lines if isinstance(lines, RecordedHeaders) else RecordedHeaders(lines)


@attrs.frozen
class RecordedRequest:
    """A request the server received. ``headers``: a :class:`RecordedHeaders` (names in any case, every line kept
    in order); one made by hand may take a dict or ``(name, value)`` pairs."""

    method: str
    path: str
    headers: RecordedHeaders = attrs.field(converter=_recorded_headers)
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def malformed(body: bytes, *, every: int = 3) -> bytes:
    """An SSE body with a malformed line after every ``every``-th event (an int of at least 1): a data line that
    is not JSON, a field line with no colon and a stray comment (what a proxy or a buggy server may add). The
    blank line that ends a body is no event: what is added after the last event ends with one too."""
    if type(every) is not int or every < 1:
        raise ValueError(f"malformed: every must be an int >= 1, got {every!r}")
    events = body.split(b"\n\n")
    count = len(events) - 1 if events[-1] == b"" else len(events)
    out = []
    for n, event in enumerate(events):
        out.append(event)
        if n < count and n % every == every - 1:
            out.append(b"data: {not json\n:stray comment\ngarbage-line-without-colon")
    return b"\n\n".join(out)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def parse_request(self) -> bool:
        """Every method is served, the same way: the base class calls ``do_<METHOD>`` and answered 501, with an
        HTML page and nothing recorded, for a method without one (a HEAD, then PUT, DELETE, PATCH, OPTIONS)."""
        if not super().parse_request():
            return False
        setattr(self, f"do_{self.command}", self._serve)
        return True

    def _serve(self) -> None:
        body = self._request_body()
        owner = self.server.owner
        head = self.command == "HEAD"
        owner._record(RecordedRequest(self.command, self.path, RecordedHeaders(self.headers.items()), body))
        # (a HEAD shows the reply the next GET gets and leaves it in the queue: probing a path changes no script)
        reply = owner._next(self.path, take=not head)
        if reply is None:
            reply = Reply.json({"error": {"message": f"no reply scripted for {self.path}"}}, status=404)
        self.send_response(reply.status)
        headers = dict(reply.headers)
        if not any(k.lower() == "content-type" for k in headers):  # (a header's name in any case)
            headers["Content-Type"] = "text/event-stream" if reply.sse else "application/json"
        for k, v in headers.items():
            self.send_header(k, v)
        # The framing the server computes, unless the reply scripts its own (a wrong length: a fault to test a
        # client with; it was sent beside the computed one, a response no client reads the same way twice)
        given = {k.lower() for k in headers}
        # (none for a 1xx, 204 or 304: a Content-Length: 0, or the chunked terminator, was read by a client as the
        # start of the next response)
        if _bodyless(reply.status):
            pass
        elif reply.sse:
            if "transfer-encoding" not in given:
                self.send_header("Transfer-Encoding", "chunked")
        elif "content-length" not in given:
            self.send_header("Content-Length", str(len(reply.body)))
        if "connection" not in given:
            self.send_header("Connection", "close")
        self.end_headers()
        if head:  # the headers a GET gets, framing included (RFC 9110 9.3.2), and no body: none of its faults
            self.wfile.flush()
        else:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._body(reply)
        self.close_connection = True

    def _request_body(self) -> bytes:
        """The request's body: by its Content-Length, or its chunks (a client sending a generator or a file of
        unknown size) up to the last one, whose trailers are read and dropped."""
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""
        chunks: list[bytes] = []
        while True:
            size = int(self.rfile.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537).strip():  # trailers, up to the blank line
                    pass
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline(65537)  # the CRLF after the chunk

    def _pieces(self, reply: Reply) -> Iterator[bytes]:
        body = reply.body
        if reply.chunk_size:
            for i in range(0, len(body), reply.chunk_size):
                yield body[i : i + reply.chunk_size]
        elif reply.sse:
            yield from body.splitlines(keepends=True)
        else:
            yield body

    def _body(self, reply: Reply) -> None:
        sent = 0
        stalled = False
        for piece in self._pieces(reply):
            if reply.disconnect_after is not None and sent + len(piece) > reply.disconnect_after:
                piece = piece[: reply.disconnect_after - sent]
                if piece:
                    self._write(piece, reply.sse)
                self._drop()
                return
            if reply.stall_after is not None and not stalled and sent + len(piece) > reply.stall_after:
                head = piece[: reply.stall_after - sent]
                if head:
                    self._write(head, reply.sse)
                    sent += len(head)
                    piece = piece[len(head) :]
                stalled = True
                if self.server.owner._sleep(reply.stall):
                    return
            self._write(piece, reply.sse)
            sent += len(piece)
            if reply.delay and self.server.owner._sleep(reply.delay):
                return
        if reply.sse and not _bodyless(reply.status):
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write(self, data: bytes, chunked: bool) -> None:
        if chunked:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def _drop(self) -> None:
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.connection.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ReplayServer


class _Server6(_Server):
    address_family = socket.AF_INET6


def _zoned(host: str, port: int) -> tuple[str, int, int, int]:
    """The IPv6 socket address of ``host`` with a zone id (``"fe80::1%eth0"``, ``"::1%lo"``, ``"fe80::1%2"``),
    the zone an interface's name or index. Bound from the address and the index: glibc's resolver reads no
    interface name in the zone of an address that is not link-local (``"::1%lo"`` was a socket.gaierror)."""
    address, zone = host.split("%", 1)
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        raise ValueError(f"ReplayServer: host {host!r}: a zone id is for an IPv6 address, not {address!r}") from None
    if not zone:
        raise ValueError(f"ReplayServer: host {host!r} has an empty zone id after its '%'")
    if zone.isdecimal():
        return address, port, 0, int(zone)
    try:
        return address, port, 0, socket.if_nametoindex(zone)
    except OSError:
        raise ValueError(f"ReplayServer: host {host!r}: no network interface named {zone!r}") from None


class ReplayServer:
    """The replay server: ``start()`` (or ``with``) binds ``host`` (default 127.0.0.1; an IPv6 address such as
    ``"::1"`` binds IPv6, with a zone id too: ``"fe80::1%eth0"``, ``"::1%lo"``) on ``port`` (default: a free
    one); ``url`` is its base URL (an IPv6 address in brackets: ``http://[::1]:PORT``; the zone of a bound
    scope, a link-local address's, as RFC 6874 writes it: ``http://[fe80::1%25eth0]:PORT``); ``add(path,
    *replies)`` scripts a path; ``requests`` lists what it received; ``stop()`` ends it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self._routes: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the replay server is not started")
        address = self._server.server_address
        host, port = str(address[0]), address[1]
        if ":" not in host:
            return f"http://{host}:{port}"
        # the zone as the host named it, when the kernel bound a scope (a link-local address: ::1 has none)
        zone = self._host.split("%", 1)[1] if len(address) > 3 and address[3] and "%" in self._host else ""
        return f"http://[{host}%25{zone}]:{port}" if zone else f"http://[{host}]:{port}"

    def add(self, path: str, *replies: Reply) -> ReplayServer:
        """Script the replies for ``path`` (with or without its query string), replacing earlier ones."""
        with self._lock:
            self._routes[path] = list(replies)
        return self

    def _next(self, path: str, take: bool = True) -> Reply | None:
        """The reply for ``path``: taken from its queue (``take``), or only looked at (a HEAD)."""
        with self._lock:
            queue = self._routes.get(path)
            if queue is None:
                queue = self._routes.get(path.split("?", 1)[0])
            if not queue:
                return None
            return queue.pop(0) if take and len(queue) > 1 else queue[0]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first (True then)."""
        return self._stopping.wait(seconds)

    def start(self) -> ReplayServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        # (an IPv6 literal was looked up as an IPv4 name: "Address family for hostname not supported")
        if "%" in self._host:
            address = _zoned(self._host, self._port)
            try:
                server: _Server = _Server6(address, _Handler)
            except OSError as error:
                if error.errno not in (errno.EADDRNOTAVAIL, errno.EINVAL):
                    raise
                raise ValueError(
                    f"ReplayServer: cannot bind {address[0]} on interface {self._host.split('%', 1)[1]!r}"
                    f" (index {address[3]}): {error.strerror}"
                ) from error
        else:
            server = (_Server6 if ":" in self._host else _Server)((self._host, self._port), _Handler)
        server.owner = self
        self._server = server
        # serve_forever's default half-second poll made every stop() wait up to that long for the loop to notice
        self._thread = threading.Thread(
            target=server.serve_forever, args=(_POLL_SECONDS,), name="agentmsg-replay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        time.sleep(0)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
