"""agentmsg.testing, the replay server users script their own tests with: a scripted reply is sent as scripted,
and a script no server could send is refused where it is written, not met as a broken reply mid-test."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from agentmsg.testing import RecordedHeaders, RecordedRequest, ReplayServer, Reply, malformed

pytestmark = pytest.mark.no_kernel


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("body", "héllo", TypeError),  # was sent with Content-Length 5 (characters), then no body at all
        ("body", {"a": 1}, TypeError),
        ("body", None, TypeError),
        ("chunk_size", -1, ValueError),  # was: the body never sent, the client left waiting for its bytes
        ("chunk_size", 0, ValueError),
        ("chunk_size", True, ValueError),
        ("chunk_size", 2.5, ValueError),
        ("disconnect_after", -1, ValueError),  # was: all but the last byte sent, then the connection dropped
        ("stall_after", -3, ValueError),
        ("status", 99, ValueError),  # was sent as given: a status line no client reads
        ("status", 600, ValueError),
        ("status", 0, ValueError),
        ("status", True, ValueError),
        ("status", "200", ValueError),
    ],
)
def test_a_reply_no_server_could_send_is_refused(field: str, value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=f"Reply.{field} must be"):
        Reply(**{field: value})
    reply = Reply()
    with pytest.raises(error, match=f"Reply.{field} must be"):  # and when set after construction
        setattr(reply, field, value)


def test_a_str_body_says_how_to_make_bytes() -> None:
    with pytest.raises(TypeError, match=r"got str \(encode a str, or use Reply.json for a value\)"):
        Reply(body="hello")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b"hello"),
        Reply(body=b"hello", chunk_size=1),
        Reply(body=b"hello", sse=True, chunk_size=2),
        Reply(body=b"hello", disconnect_after=None, stall_after=0),
    ],
)
def test_the_replies_it_takes_are_sent_whole(reply: Reply) -> None:
    with ReplayServer() as server:
        server.add("/x", reply)
        response = httpx.post(f"{server.url}/x", content=b"q", timeout=10)
    assert (response.status_code, response.content) == (200, b"hello")


@pytest.mark.parametrize("pieces", [[b"abc", b"defgh"], [b""], [b"x" * 70_000]])
def test_a_chunked_request_body_is_recorded_whole(pieces: list[bytes]) -> None:
    """A client sending a body of unknown size (a generator: Transfer-Encoding chunked) is recorded with it
    (it was recorded as b"")."""
    with ReplayServer() as server:
        server.add("/x", Reply(body=b"ok"))
        response = httpx.post(f"{server.url}/x", content=iter(pieces), timeout=10)
        (request,) = server.requests
    assert response.content == b"ok" and request.headers.get("Transfer-Encoding") == "chunked"
    assert request.body == b"".join(pieces)


BAD = b"data: {not json\n:stray comment\ngarbage-line-without-colon\n\n"


@pytest.mark.parametrize(
    ("every", "want"),
    [
        (1, b"data: 1\n\n" + BAD + b"data: 2\n\n" + BAD + b"data: 3\n\n" + BAD),
        (2, b"data: 1\n\ndata: 2\n\n" + BAD + b"data: 3\n\n"),
        (3, b"data: 1\n\ndata: 2\n\ndata: 3\n\n" + BAD),
        (4, b"data: 1\n\ndata: 2\n\ndata: 3\n\n"),
    ],
)
def test_malformed_adds_its_lines_after_every_nth_event(every: int, want: bytes) -> None:
    """The blank line that ends the body is no event: every=1 and every=2 added lines after it too, unterminated
    (a reader drops an event cut at the end of the body), and every=1 an empty event."""
    assert malformed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", every=every) == want


def test_malformed_without_the_final_blank_line_keeps_it_so() -> None:
    assert malformed(b"data: 1\n\ndata: 2", every=1) == b"data: 1\n\n" + BAD + b"data: 2\n\n" + BAD[:-2]


@pytest.mark.parametrize("every", [0, -1, 1.5, None])
def test_malformed_refuses_an_every_that_is_no_count(every: Any) -> None:
    with pytest.raises(ValueError, match="every must be an int >= 1"):  # (0 was a ZeroDivisionError)
        malformed(b"data: 1\n\n", every=every)


@pytest.mark.parametrize(
    ("reply", "name", "value"),
    [
        (Reply(body=b'{"a": 1}', headers={"Content-Length": "3"}), b"content-length", b"3"),
        (
            Reply(body=b"data: {}\n\n", sse=True, headers={"transfer-encoding": "identity"}),
            b"transfer-encoding",
            b"identity",
        ),
        (Reply(body=b"{}", headers={"Connection": "keep-alive"}), b"connection", b"keep-alive"),
    ],
)
def test_a_framing_header_the_reply_scripts_is_sent_instead_of_the_servers(
    reply: Reply, name: bytes, value: bytes
) -> None:
    """A Content-Length (a wrong one: a fault to test a client with), Transfer-Encoding or Connection in
    ``Reply.headers`` was sent beside the one the server computes: two lengths, a response each client reads its
    own way. The scripted one is sent, once."""
    import socket

    with ReplayServer() as server:
        server.add("/x", reply)
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = b""
            while b"\r\n\r\n" not in raw and (data := sock.recv(4096)):
                raw += data
    head = raw.split(b"\r\n\r\n", 1)[0].lower().split(b"\r\n")[1:]
    assert [line.split(b": ", 1)[1] for line in head if line.split(b": ", 1)[0] == name] == [value]


def _ipv6_loopback() -> bool:
    import socket

    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1 cannot be bound)")
def test_an_ipv6_loopback_host_is_served_and_bracketed_in_the_url() -> None:
    """host="::1" failed in start() (the server's socket was AF_INET: "Address family for hostname not
    supported"); the url brackets the address, as a URL must."""
    with ReplayServer(host="::1") as server:
        server.add("/x", Reply(body=b"six"))
        assert server.url.startswith("http://[::1]:")
        response = httpx.get(f"{server.url}/x", timeout=10)
        (request,) = server.requests
    assert response.content == b"six" and request.path == "/x"


def test_an_ipv4_host_keeps_its_plain_url() -> None:
    with ReplayServer(host="127.0.0.1") as server:
        assert server.url.startswith("http://127.0.0.1:")


def test_recorded_headers_are_read_in_any_case_and_keep_every_line_in_order() -> None:
    """HTTP header names are case-insensitive: ``headers["authorization"]`` raised KeyError for a client that sent
    ``Authorization``, and a repeated header kept only its last line (a dict)."""
    sent = [("Authorization", "Bearer k"), ("X-Tag", "one"), ("x-tag", "two"), ("Accept", "*/*")]
    with ReplayServer() as server:
        server.add("/x", Reply(body=b"ok"))
        httpx.get(f"{server.url}/x", headers=sent, timeout=10)
        (request,) = server.requests
    headers = request.headers
    assert isinstance(headers, RecordedHeaders)
    assert headers["authorization"] == headers["AUTHORIZATION"] == headers.get("Authorization") == "Bearer k"
    assert "AUTHORIZATION" in headers and "proxy-authorization" not in headers and 1 not in headers  # type: ignore[comparison-overlap]
    assert headers.get("x-missing") is None and headers.get_all("x-missing") == []
    assert headers.get_all("X-TAG") == ["one", "two"] and headers["x-tag"] == "one, two"  # (RFC 9110 5.3)
    assert [(k, v) for k, v in headers.multi_items() if k.lower() in ("x-tag", "authorization")] == sent[:3]
    assert [k.lower() for k in headers].count("x-tag") == 1 and len(headers) == len(list(headers))
    assert headers == {**dict(headers.items()), "X-TAG": "one, two"}  # (a mapping: compared by names in any case)
    with pytest.raises(KeyError):
        headers["x-missing"]


def test_recorded_headers_are_made_from_a_mapping_or_pairs() -> None:
    """A RecordedRequest made by hand (a test double) takes a dict, as it did, or (name, value) pairs."""
    assert RecordedRequest("GET", "/", {"Host": "x"}, b"").headers["host"] == "x"
    pairs = RecordedHeaders([("A", "1"), ("a", "2")])
    assert RecordedRequest("GET", "/", pairs, b"").headers.get_all("A") == ["1", "2"]
    assert repr(pairs) == "RecordedHeaders([('A', '1'), ('a', '2')])"
    assert pairs == RecordedHeaders([("a", "1"), ("A", "2")]) != RecordedHeaders([("a", "2"), ("A", "1")])


@pytest.mark.parametrize("status", [100, 101, 103, 204, 304])
def test_a_body_with_a_status_that_has_none_is_refused(status: int) -> None:
    """A 1xx, 204 or 304 response has no body (RFC 9110 6.4.1): one scripted with a body was sent as given, and the
    client read the body as the start of the next response, or not at all. Refused where it is written, whichever
    of the two is set last."""
    with pytest.raises(ValueError, match=f"Reply.body must be empty with status {status}"):
        Reply(status, body=b"x")
    with pytest.raises(ValueError, match=f"Reply.body must be empty with status {status}"):
        Reply.json({"a": 1}, status=status)
    reply = Reply(status)
    with pytest.raises(ValueError, match=f"Reply.body must be empty with status {status}"):
        reply.body = b"x"
    reply = Reply(body=b"x")
    with pytest.raises(ValueError, match=f"Reply.body must be empty with status {status}"):
        reply.status = status


@pytest.mark.parametrize("sse", [False, True])
@pytest.mark.parametrize("status", [204, 304])
def test_a_status_without_a_body_is_sent_without_framing(status: int, sse: bool) -> None:
    """A 204 or 304 is sent with no Content-Length, Transfer-Encoding or chunk (a 204 with Content-Length: 0, or
    an SSE one with the chunked terminator, which a client on the same connection reads as the next response)."""
    import socket

    with ReplayServer() as server:
        server.add("/x", Reply(status, sse=sse))
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = b""
            while data := sock.recv(4096):  # (the server closes the connection)
                raw += data
    head, body = raw.split(b"\r\n\r\n", 1)
    names = [line.split(b":", 1)[0].lower() for line in head.split(b"\r\n")[1:]]
    assert head.startswith(f"HTTP/1.1 {status} ".encode()) and body == b""
    assert b"content-length" not in names and b"transfer-encoding" not in names


def _raw_exchange(url: str, request: bytes) -> bytes:
    """Everything the server sends for ``request`` on one connection, until it closes it (the server closes
    every connection after its response: a body sent after a HEAD's headers would be read here)."""
    import socket

    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as sock:
        sock.sendall(request)
        raw = b""
        while data := sock.recv(4096):
            raw += data
    return raw


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=b'{"answer": 42}'),
        Reply(body=b"data: {}\n\ndata: {}\n\n", sse=True),
        Reply(429, body=b"{}", headers={"Retry-After": "0"}),
        Reply(body=b"x" * 100, disconnect_after=10),  # (a fault of the body: a HEAD sends none)
    ],
)
def test_a_head_gets_the_status_and_headers_a_get_would_and_no_body(reply: Reply) -> None:
    """A HEAD was answered 501 Unsupported method, with the length of an HTML error page, and not recorded."""
    with ReplayServer() as server:
        server.add("/x", reply)
        get = _raw_exchange(server.url, b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        head = _raw_exchange(server.url, b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n")
        got = httpx.head(f"{server.url}/x", timeout=10)
        methods = [r.method for r in server.requests]

    def lines(raw: bytes) -> list[bytes]:  # the status line and headers, but the Date
        top = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
        return [line for line in top if not line.lower().startswith(b"date:")]

    assert lines(head) == lines(get) and head.endswith(b"\r\n\r\n") and head.count(b"\r\n\r\n") == 1
    assert got.status_code == reply.status and got.content == b""
    if not reply.sse:
        assert got.headers["content-length"] == str(len(reply.body))
    assert methods == ["GET", "HEAD", "HEAD"]


def test_a_head_to_a_path_not_scripted_gets_the_404_a_get_would() -> None:
    with ReplayServer() as server:
        get, head = httpx.get(f"{server.url}/nope", timeout=10), httpx.head(f"{server.url}/nope", timeout=10)
    assert head.status_code == get.status_code == 404 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))


def test_a_head_takes_no_reply_from_the_queue() -> None:
    """Each GET takes the next scripted reply; a HEAD shows the one the next GET gets, and leaves it there."""
    with ReplayServer() as server:
        server.add("/x", Reply(503, body=b"{}"), Reply(body=b"[1, 2]"))
        statuses = [
            httpx.request(method, f"{server.url}/x", timeout=10).status_code for method in ["HEAD", "HEAD", "GET"]
        ]
        head = httpx.head(f"{server.url}/x", timeout=10)
        get = httpx.get(f"{server.url}/x", timeout=10)
    assert statuses == [503, 503, 503]
    assert (head.status_code, head.headers["content-length"]) == (200, "6") and get.content == b"[1, 2]"


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "QUERY"])
def test_every_method_is_served_from_the_paths_queue_and_recorded(method: str) -> None:
    """Only GET, POST and HEAD were served: any other method got 501 with an HTML page, and was not recorded (a
    fake files API, a batch's cancel could not be scripted)."""
    with ReplayServer() as server:
        server.add("/files/f1", Reply.json({"id": "f1"}), Reply(404, body=b"{}"))
        head = httpx.head(f"{server.url}/files/f1", timeout=10)
        first = httpx.request(method, f"{server.url}/files/f1?x=1", content=b'{"a": 1}', timeout=10)
        second = httpx.request(method, f"{server.url}/files/f1", timeout=10)
        recorded = [(r.method, r.path, r.body) for r in server.requests]
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "11", b"")
    assert (first.status_code, first.content) == (200, b'{"id":"f1"}')
    assert (second.status_code, second.content) == (404, b"{}")
    assert recorded == [
        ("HEAD", "/files/f1", b""),
        (method, "/files/f1?x=1", b'{"a": 1}'),
        (method, "/files/f1", b""),
    ]


def test_curl_reads_a_head_and_returns() -> None:
    import shutil
    import subprocess

    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    with ReplayServer() as server:
        server.add("/x", Reply(body=b"hello"))
        done = subprocess.run(
            [curl, "-sS", "-I", "--max-time", "10", f"{server.url}/x"], capture_output=True, check=False
        )
    assert done.returncode == 0, done.stderr
    head = done.stdout.decode().lower()
    assert head.startswith("http/1.1 200 ") and "content-length: 5\r\n" in head and head.endswith("\r\n\r\n")


def _bindable(address: str, scope_id: int) -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0, 0, scope_id))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _bindable("::1", 1), reason="::1 cannot be bound with a scope id on this machine")
@pytest.mark.parametrize("zone", ["lo", "1"])
def test_a_zone_id_on_ipv6_loopback_is_served(zone: str) -> None:
    """host="::1%lo" failed in start() with socket.gaierror: glibc resolves no interface name in a zone of an
    address that is not link-local. A zone means nothing to ::1 (the kernel binds it with scope 0): the url has none."""
    import socket

    if zone == "lo" and "lo" not in {name for _, name in socket.if_nameindex()}:
        pytest.skip("this machine has no interface named lo")
    with ReplayServer(host=f"::1%{zone}") as server:
        server.add("/x", Reply(body=b"six"))
        assert server.url.startswith("http://[::1]:")
        response = httpx.get(f"{server.url}/x", timeout=10)
    assert response.content == b"six"


def _link_local() -> tuple[str, str] | None:
    """A link-local IPv6 address of this machine and its interface (Linux: /proc/net/if_inet6), or None."""
    import ipaddress
    import socket
    from pathlib import Path

    table = Path("/proc/net/if_inet6")
    if not table.exists():
        return None
    for row in table.read_text().splitlines():
        hex_address, _index, _length, scope, _flags, name = row.split()
        address = str(ipaddress.IPv6Address(bytes.fromhex(hex_address)))
        if scope == "20" and _bindable(address, socket.if_nametoindex(name)):
            return address, name
    return None


LINK_LOCAL = _link_local()


@pytest.mark.skipif(LINK_LOCAL is None, reason="this machine has no link-local IPv6 address it can bind")
def test_a_link_local_host_keeps_its_zone_in_the_url_as_rfc_6874_writes_it() -> None:
    import shutil
    import subprocess

    assert LINK_LOCAL is not None
    address, name = LINK_LOCAL
    with ReplayServer(host=f"{address}%{name}") as server:
        server.add("/x", Reply(body=b"six"))
        assert server.url.startswith(f"http://[{address}%25{name}]:")
        assert httpx.URL(server.url).host == f"{address}%25{name}"  # (httpx parses it)
        port = int(server.url.rsplit(":", 1)[1])
        response = httpx.get(f"http://[{address}%{name}]:{port}/x", timeout=10)  # (httpx connects with no %25)
        curl = shutil.which("curl")
        done = (
            subprocess.run([curl, "-sS", "-g", "--max-time", "10", f"{server.url}/x"], capture_output=True)
            if curl
            else None
        )
    assert response.content == b"six"
    assert done is None or done.stdout == b"six", done


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("::1%no-such-interface", "no network interface named 'no-such-interface'"),
        ("::1%", "an empty zone"),
        ("127.0.0.1%lo", "a zone id is for an IPv6 address"),
        ("localhost%lo", "a zone id is for an IPv6 address"),
        ("fe80::1%lo", "cannot bind fe80::1 on interface 'lo'"),  # (no such address on lo)
    ],
)
def test_a_zone_id_that_cannot_be_served_is_refused_clearly(host: str, said: str) -> None:
    server = ReplayServer(host=host)
    with pytest.raises(ValueError, match=said):
        server.start()
    server.stop()
