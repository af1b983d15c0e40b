"""Media safety: local files only under allowed roots (no traversal, no symlink escape, size limits),
downloads off by default and, when on, http(s) only with no private/loopback address unless allowed.
The download tests run a real HTTP server on loopback (started and stopped by the test)."""

from __future__ import annotations

import base64
import gzip
import http.server
import os
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentmsg import AssistantMessage, AudioBlock, DataBlock, ImageBlock, URLSource, UserMessage, ValidationError
from agentmsg.providers import FormatOptions, MediaPolicy, get
from tests.oracles import formatted

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 28


def image_msg(url: str) -> list[Any]:
    return [UserMessage([ImageBlock(source=URLSource(url=url, mime_type="image/png"))])]


def refused(provider: str, msgs: list[Any], options: Any = None) -> tuple[str, str]:
    with pytest.raises(ValidationError) as exc:
        get(provider).format_request(msgs, options=options)
    p = exc.value.problems[0]
    return p.pointer, p.rule


@pytest.fixture
def media_root(tmp_path: Path) -> Path:
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\nxyz")
    (tmp_path / "secret.png").write_bytes(b"secret")
    return root


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
def test_local_files_refused_by_default(provider: str, media_root: Path) -> None:
    assert refused(provider, image_msg(str(media_root / "dot.png"))) == ("/0/content/0", "media-local-refused")
    assert refused(provider, image_msg((media_root / "dot.png").as_uri())) == ("/0/content/0", "media-local-refused")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
def test_local_file_read_under_an_allowed_root(provider: str, media_root: Path) -> None:
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    encoded = base64.b64encode((media_root / "dot.png").read_bytes()).decode()
    for url in (str(media_root / "dot.png"), (media_root / "dot.png").as_uri()):
        r = formatted(provider, image_msg(url), options=options)
        assert encoded in r.body_bytes().decode()
        assert str(media_root) not in r.body_bytes().decode()


def test_traversal_and_symlink_escape_refused(media_root: Path) -> None:
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    assert refused("openai", image_msg(str(media_root / ".." / "secret.png")), options) == (
        "/0/content/0",
        "media-local-refused",
    )
    link = media_root / "link.png"
    link.symlink_to(media_root.parent / "secret.png")
    assert refused("openai", image_msg(str(link)), options) == ("/0/content/0", "media-local-refused")
    inner = media_root / "sub"
    inner.symlink_to(media_root.parent, target_is_directory=True)
    assert refused("openai", image_msg(str(inner / "secret.png")), options)[1] == "media-local-refused"
    # a link that stays inside the root is fine
    (media_root / "alias.png").symlink_to(media_root / "dot.png")
    formatted("openai", image_msg(str(media_root / "alias.png")), options=options)


def test_a_path_longer_than_the_system_opens_is_refused_before_it_is_resolved(
    media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving a path costs time quadratic in its length (``realpath`` joins and looks up each component):
    ``root/a/a/.../x.png`` of 800 kB, under the root as written, took 19 s to refuse, 4 MB minutes. A path longer
    than PATH_MAX names no file the system opens: refused at once, never resolved; one of PATH_MAX is resolved."""
    from agentmsg.providers._request import files

    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    resolved: list[str] = []
    real = os.path.realpath

    def realpath(path: str) -> str:
        if path != str(media_root):  # (the policy's root, resolved by each call: not counted)
            resolved.append(path)
        return real(path)

    monkeypatch.setattr(os.path, "realpath", realpath)
    for path in (
        f"{media_root}/{'a/' * 400_000}x.png",
        f"{media_root}/{'./' * 3000}dot.png",
        f"{media_root}/é{'x' * 4090}",
    ):
        with pytest.raises(ValidationError, match=r"longer than the system opens \(4096\)") as exc:
            get("openai").format_request(image_msg(path), options=options)
        assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/0/content/0", "media-local-refused")
    assert resolved == []
    at_most = f"{media_root}/{'./' * ((files.PATH_MAX - len(str(media_root)) - 8) // 2)}dot.png"
    assert len(at_most) <= files.PATH_MAX
    formatted("openai", image_msg(at_most), options=options)
    assert at_most in resolved


def test_a_chain_of_symlinks_too_long_to_resolve_is_refused_as_the_sdk_s_error(media_root: Path) -> None:
    """``realpath`` recurses once per link: a chain of 1,500 symlinks under the root raised a bare RecursionError."""
    links = 1500
    for i in range(links):
        (media_root / f"l{i}").symlink_to(f"l{i + 1}" if i + 1 < links else "dot.png")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    with pytest.raises(ValidationError, match="a chain of symlinks too long to resolve") as exc:
        get("openai").format_request(image_msg(str(media_root / "l0")), options=options)
    assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/0/content/0", "media-local-refused")


def test_a_root_holding_a_nul_character_is_refused_when_the_policy_is_made(tmp_path: Path) -> None:
    """No path holds NUL: such a root was taken, and the first file read under any root raised a bare ValueError."""
    for roots, pointer in ((f"{tmp_path}\x00/r", "/allowed_roots"), ([tmp_path, b"/tmp\x00"], "/allowed_roots/1")):
        with pytest.raises(ValidationError, match="NUL") as exc:
            MediaPolicy(allowed_roots=roots)
        assert exc.value.problems[0].pointer == pointer


def test_a_hard_link_to_a_file_outside_the_root_is_refused(media_root: Path) -> None:
    """A hard link under a root to a file outside it (made by anyone who can write under the root) is the
    file's second name, as real as the first: path checks pass it and O_NOFOLLOW has nothing to refuse. It was
    read and sent; a file with more than one name is refused now unless the policy allows hard links."""
    secret = media_root.parent / "secret.png"
    os.link(secret, media_root / "hard.png")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    for url in (str(media_root / "hard.png"), (media_root / "hard.png").as_uri()):
        assert refused("openai", image_msg(url), options) == ("/0/content/0", "media-local-refused")
    with pytest.raises(ValidationError, match="hard links"):
        get("openai").format_request(image_msg(str(media_root / "hard.png")), options=options)
    # both names inside the root are refused too (a count cannot tell where the other name is) ...
    os.link(media_root / "dot.png", media_root / "dot2.png")
    assert refused("openai", image_msg(str(media_root / "dot.png")), options)[1] == "media-local-refused"
    # ... unless the caller allows hard links (a store of hard-linked files: nix, pnpm, uv)
    allowed = FormatOptions(media=MediaPolicy(allowed_roots=[media_root], allow_hard_links=True))
    r = formatted("openai", image_msg(str(media_root / "hard.png")), options=allowed)
    assert base64.b64encode(b"secret").decode() in r.body_bytes().decode()
    # a file with one name is read as before
    (media_root / "dot2.png").unlink()
    formatted("openai", image_msg(str(media_root / "dot.png")), options=options)
    # and the CLI: refused (exit 1, the problem on stderr) unless --allow-hard-links
    from tests._support import cli

    conversation = media_root.parent / "c.json"
    conversation.write_text(image_msg(str(media_root / "hard.png"))[0].to_json())
    base = ["format", "--provider", "openai", "--allow-root", str(media_root)]
    run = cli.run(*base, str(conversation))
    assert run.returncode == 1 and "media-local-refused" in run.stderr, run.stderr
    run = cli.run(*base, "--allow-hard-links", str(conversation))
    assert run.returncode == 0 and base64.b64encode(b"secret").decode() in run.stdout, run.stderr


def test_directory_swapped_for_a_symlink_after_the_check(media_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the path is resolved and checked, then (a race won by someone who can write under the root) a
    # directory on it becomes a symlink out of the root: the file is opened without following it
    (media_root / "sub").mkdir()
    (media_root / "sub" / "dot.png").write_bytes(b"inside")
    (media_root.parent / "out").mkdir()
    (media_root.parent / "out" / "dot.png").write_bytes(b"secret")
    target = str(media_root / "sub" / "dot.png")
    real_realpath = os.path.realpath

    def realpath(path: Any, *args: Any, **kwargs: Any) -> Any:
        resolved = real_realpath(path, *args, **kwargs)
        if path == target:
            (media_root / "sub").rename(media_root / "sub.old")
            (media_root / "sub").symlink_to(media_root.parent / "out", target_is_directory=True)
        return resolved

    monkeypatch.setattr(os.path, "realpath", realpath)
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    assert refused("openai", image_msg(target), options) == ("/0/content/0", "media-local-refused")


def test_local_size_limit_and_non_files(media_root: Path) -> None:
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root], max_bytes=5))
    assert refused("openai", image_msg(str(media_root / "dot.png")), options) == ("/0/content/0", "media-too-large")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    assert refused("openai", image_msg(str(media_root)), options)[1] == "media-local-refused"
    assert refused("openai", image_msg(str(media_root / "missing.png")), options)[1] == "media-local-refused"


def test_data_block_pointer_inside_a_tool_result(media_root: Path) -> None:
    from agentmsg import AssistantMessage, ToolResultBlock, ToolResultMessage, ToolUseBlock

    msgs = [
        UserMessage("q"),
        AssistantMessage([ToolUseBlock(id="c", name="f", input={})]),
        ToolResultMessage(
            ToolResultBlock(
                id="c", name="f", output=[DataBlock(source=URLSource(url="/etc/passwd", mime_type="image/png"))]
            )
        ),
    ]
    assert refused("anthropic", msgs) == ("/2/content/0/output/0", "media-local-refused")


# ---- downloads over a loopback server ---------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    raw: ClassVar[dict[str, bytes]] = {}  # a whole response as it is sent, then the connection is closed
    seen: ClassVar[list[str]] = []
    hosts: ClassVar[list[str | None]] = []  # the Host header of each request
    cookies: ClassVar[list[str | None]] = []  # the Cookie header of each request
    left: ClassVar[threading.Event] = threading.Event()  # set when a client hangs up on a trickle

    def do_GET(self) -> None:
        self.seen.append(self.path)
        self.hosts.append(self.headers.get("Host"))
        self.cookies.append(self.headers.get("Cookie"))
        if self.path in self.raw:
            self.wfile.write(self.raw[self.path])
            self.close_connection = True
            return
        if self.path == "/endless.wav":  # a body without length, sent as fast as it is read, until the client hangs up
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: audio/wav\r\n\r\n" + WAV)
            block = b"\x00" * (64 << 10)
            for _ in range(1 << 14):  # (1 GiB, more than any limit of the tests)
                try:
                    self.wfile.write(block)
                except OSError:
                    self.left.set()
                    return
            return
        if self.path.startswith("/slow"):  # a byte every 50 ms for 60 s: of the headers, or of a body without length
            head = self.path == "/slow-head"
            self.wfile.write(b"HTTP/1.1 200 OK\r\n" if head else b"HTTP/1.0 200 OK\r\nContent-Type: audio/wav\r\n\r\n")
            for _ in range(1200):
                try:
                    self.wfile.write(b"X" if head else b"\x00")
                    self.wfile.flush()
                except OSError:
                    self.left.set()  # the client hung up before the trickle ended
                    return
                time.sleep(0.05)
            return
        status, headers, body = self.routes.get(self.path, (404, {}, b"no"))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _raw_deflate(data: bytes) -> bytes:
    """A raw deflate stream (no zlib header): zlib.compress takes wbits from Python 3.11 only."""
    c = zlib.compressobj(wbits=-15)
    return c.compress(data) + c.flush()


def _gzip_bomb(size: int) -> bytes:
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    return b"".join(co.compress(zeros) for _ in range(size >> 20)) + co.flush()


_BOMB = _gzip_bomb(64 << 20)  # 64 MiB of zeros in about 64 kB


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    _Handler.hosts = []
    _Handler.cookies = []
    _Handler.raw = {}
    _Handler.left = threading.Event()
    _Handler.routes = {
        "/a.wav": (200, {"Content-Type": "audio/wav"}, WAV),
        "/big.wav": (200, {"Content-Type": "audio/wav"}, b"x" * 5000),
        "/hop": (302, {"Location": "/a.wav"}, b""),
        "/cookie.wav": (200, {"Content-Type": "audio/wav", "Set-Cookie": "secret=of-a; Path=/"}, WAV),
        "/loop": (302, {"Location": "/loop"}, b""),
        "/badhop": (302, {"Location": "http://[::1/a.wav"}, b""),
        "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
        "/to-data": (302, {"Location": "data:audio/wav;base64,UklGRg=="}, b""),
        "/gone.wav": (404, {}, b""),
        "/z.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "gzip"}, gzip.compress(WAV)),
        "/zd.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "deflate"}, zlib.compress(WAV)),
        "/zr.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "deflate"}, _raw_deflate(WAV)),
        "/bomb.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "gzip"}, _BOMB),
        "/br.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "br"}, b"\x0b\x01\x80abc\x03"),
    }
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def audio_msg(url: str) -> list[Any]:
    return [UserMessage([AudioBlock(source=URLSource(url=url, mime_type="audio/wav"))])]


def test_download_off_by_default(server: str) -> None:
    assert refused("openai", audio_msg(f"{server}/a.wav")) == ("/0/content/0", "media-download-refused")


def test_loopback_refused_unless_allowed(server: str) -> None:
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=5))
    assert refused("openai", audio_msg(f"{server}/a.wav"), on) == ("/0/content/0", "media-address-refused")
    assert refused("openai", audio_msg(f"http://localhost:{server.rsplit(':', 1)[1]}/a.wav"), on)[1] == (
        "media-address-refused"
    )
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    r = formatted("openai", audio_msg(f"{server}/a.wav"), options=private)
    part = r.body["messages"][0]["content"][0]
    assert part == {"type": "input_audio", "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "wav"}}
    r = formatted("openai", audio_msg(f"{server}/hop"), options=private)  # a redirect is followed
    assert r.body["messages"][0]["content"][0]["input_audio"]["data"] == base64.b64encode(WAV).decode()


def test_dns_rebinding_refused_before_the_request_is_sent(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the name resolves to a public address when checked, then to loopback when httpx connects: the
    # connected address is checked before the request goes out, so the private server sees nothing.
    # (agentmsg connects to the address it checked, so httpx resolves no name: only a transport of the
    # caller's, which gets the URL as it is, resolves it a second time)
    import httpx

    real = socket.getaddrinfo
    answers = iter(["93.184.216.34", "127.0.0.1"])

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=5, transport=httpx.HTTPTransport()))
    url = f"http://rebind.test:{server.rsplit(':', 1)[1]}/a.wav"
    assert refused("openai", audio_msg(url), on) == ("/0/content/0", "media-address-refused")
    assert _Handler.seen == []


def test_a_name_is_resolved_once_and_the_checked_address_connected(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name was resolved for the check, then again by httpx to connect (two answers, only the first
    checked before connecting, the second looked up with no deadline). It is resolved once now and the
    connection made to the address checked; the request still names the host (Host header; TLS's server
    name). Here every address passes the check (as if loopback were public), and the name answers 127.0.0.1
    once, then 127.0.0.2, where nothing listens."""
    from agentmsg.providers._request import download as _download

    real = socket.getaddrinfo
    asked: list[Any] = []
    checked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "name.test":
            asked.append(host)
            ip = "127.0.0.1" if len(asked) == 1 else "127.0.0.2"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(_download, "_check_address", lambda address, pointer, url: checked.append(address))
    port = server.rsplit(":", 1)[1]
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=5))
    r = formatted("openai", audio_msg(f"http://name.test:{port}/a.wav"), options=on)
    assert r.body["messages"][0]["content"][0]["input_audio"]["data"] == base64.b64encode(WAV).decode()
    assert asked == ["name.test"]
    assert set(checked) == {"127.0.0.1"}  # before connecting, and the connected socket's peer
    assert _Handler.hosts == [f"name.test:{port}"]
    # an international name is looked up as httpx sends it (IDNA 2008): faß was checked as "fass" (Python's
    # IDNA 2003) and fetched as xn--fa-hia, two names, two answers
    asked.clear()

    def any_name(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "127.0.0.1":  # (the address connected is looked up too, as a number)
            asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", any_name)
    formatted("openai", audio_msg(f"http://faß.test:{port}/a.wav"), options=on)
    assert asked == ["xn--fa-hia.test"]
    assert _Handler.hosts[-1] == f"xn--fa-hia.test:{port}"


@pytest.mark.parametrize("allow_private", [False, True])
def test_a_slow_resolver_is_cut_at_the_timeout(allow_private: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """getaddrinfo has no timeout: a resolver that takes its time held the download past its timeout (the
    check's lookup, and httpx's own when private addresses are allowed). The lookup is under the deadline now:
    the call fails (media-fetch-failed) while the resolver has not answered yet."""
    release = threading.Event()
    answered: list[bool] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        release.wait(30)  # (a resolver that answers late: 127.0.0.1, after the test)
        answered.append(True)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    options = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=allow_private, timeout=0.3))
    try:
        with pytest.raises(ValidationError) as exc:
            get("openai").format_request(audio_msg("http://slow.test/a.wav"), options=options)
        assert not answered  # it ended before the resolver answered
        p = exc.value.problems[0]
        assert (p.pointer, p.rule) == ("/0/content/0", "media-fetch-failed")
        assert "resolving 'slow.test' took over 0.3 s" in p.message
    finally:
        release.set()


def test_compressed_downloads_decoded_within_the_limit(server: str) -> None:
    private: dict[str, Any] = {"allow_download": True, "allow_private": True, "timeout": 5}
    for path in ("/z.wav", "/zd.wav", "/zr.wav"):  # gzip, deflate (zlib), deflate sent raw
        r = formatted("openai", audio_msg(f"{server}{path}"), options=FormatOptions(media=MediaPolicy(**private)))
        assert r.body["messages"][0]["content"][0]["input_audio"]["data"] == base64.b64encode(WAV).decode()
    # a gzip bomb under the Content-Length limit is refused without inflating more than the limit
    small = FormatOptions(media=MediaPolicy(max_bytes=100_000, **private))
    tracemalloc.start()
    try:
        assert refused("openai", audio_msg(f"{server}/bomb.wav"), small) == ("/0/content/0", "media-too-large")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    # an encoding agentmsg does not decode is refused, not passed on as if it were the media
    assert refused("openai", audio_msg(f"{server}/br.wav"), small)[1] == "media-fetch-failed"


def test_a_body_cut_short_is_refused_not_sent_in_part(server: str) -> None:
    """A gzip or deflate body that ends inside its compressed stream (the connection closed early, with no
    length, or a length that agrees with the cut) was inflated as far as it went and that part sent as the
    media; a gzip body of two members (valid gzip) lost its second one; bytes after the end were ignored."""
    big = WAV + bytes(range(256)) * 40
    z = gzip.compress(big)
    d = zlib.compress(big)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\nContent-Encoding: %s\r\n"
    _Handler.raw = {
        "/cut.gz": head % b"gzip" + b"Connection: close\r\n\r\n" + z[: len(z) // 2],  # no length
        "/cut-len.gz": head % b"gzip" + b"Content-Length: %d\r\n\r\n" % (len(z) // 2) + z[: len(z) // 2],
        "/no-trailer.gz": head % b"gzip" + b"Content-Length: %d\r\n\r\n" % (len(z) - 8) + z[:-8],  # no CRC, size
        "/cut.zd": head % b"deflate" + b"Connection: close\r\n\r\n" + d[: len(d) // 2],
        "/cut.zr": head % b"deflate" + b"Connection: close\r\n\r\n" + d[2 : len(d) // 2],  # raw deflate
        "/one-byte.zd": head % b"deflate" + b"Content-Length: 1\r\n\r\nx",  # too short to tell zlib from raw
        "/junk.gz": head % b"gzip" + b"Content-Length: %d\r\n\r\n" % (len(z) + 5) + z + b"junk!",
        # an identity body shorter than its Content-Length, a chunked body without its last chunk
        "/short.wav": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(big) + big[:100],
        "/chunked.wav": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + big[:16] + b"\r\n",
    }
    half = len(big) // 2
    two = gzip.compress(big[:half]) + b"\x00\x00" + gzip.compress(big[half:]) + b"\x00" * 4  # zero padding
    _Handler.raw["/two.gz"] = head % b"gzip" + b"Content-Length: %d\r\n\r\n" % len(two) + two
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    for path in (
        "/cut.gz",
        "/cut-len.gz",
        "/no-trailer.gz",
        "/cut.zd",
        "/cut.zr",
        "/one-byte.zd",
        "/junk.gz",
        "/short.wav",
        "/chunked.wav",
    ):
        assert refused("openai", audio_msg(f"{server}{path}"), private) == ("/0/content/0", "media-fetch-failed"), path
    r = formatted("openai", audio_msg(f"{server}/two.gz"), options=private)
    assert base64.b64decode(r.body["messages"][0]["content"][0]["input_audio"]["data"]) == big
    # compressed bytes count too: zero padding (or empty members) that inflate to nothing were read on
    _Handler.raw["/padded.gz"] = head % b"gzip" + b"Connection: close\r\n\r\n" + z + bytes(2 << 20)
    padded = FormatOptions(media=MediaPolicy(max_bytes=1 << 20, allow_download=True, allow_private=True))
    assert refused("openai", audio_msg(f"{server}/padded.gz"), padded) == ("/0/content/0", "media-too-large")
    # the limit holds across members: both are counted
    small = FormatOptions(media=MediaPolicy(max_bytes=len(big) - 1, allow_download=True, allow_private=True))
    assert refused("openai", audio_msg(f"{server}/two.gz"), small)[1] == "media-too-large"


@pytest.mark.parametrize("path", ["/slow-head", "/slow-body"])
def test_trickling_server_cut_at_the_timeout(server: str, path: str) -> None:
    # each byte comes well within the per-read timeout; the whole download still ends at the timeout
    options = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=0.5))
    pointer, rule = refused("openai", audio_msg(f"{server}{path}"), options)
    assert (pointer, rule) == ("/0/content/0", "media-fetch-failed")
    # The client hung up while the server had most of its minute of bytes still to send: the download ended at
    # its timeout, not with the trickle. (No clock is read: on a loaded machine the refusal comes later, not
    # wrongly; without the overall timeout it would come after the whole minute, with the trickle.)
    assert _Handler.left.wait(30)


def test_malformed_urls_are_refusals_not_exceptions(server: str, media_root: Path) -> None:
    on = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    for url in (
        "http://[::1/a.wav",  # urlsplit: Invalid IPv6 URL
        f"{server}/badhop",  # the same in a redirect's Location
        f"{server}/{'a' * 70000}.wav",  # httpx: URL too long
    ):
        assert refused("openai", audio_msg(url), on) == ("/0/content/0", "media-fetch-failed")
    local = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    assert refused("openai", image_msg("file://[::1/dot.png"), local) == ("/0/content/0", "media-local-refused")
    # a URL the provider fetches itself passes as it is, even one this module cannot parse
    formatted("openai", [UserMessage([ImageBlock(source=URLSource(url="http://[::1/a"))])])


def test_a_url_whose_port_is_past_65535_is_refused_not_fetched_from_another_port(server: str) -> None:
    """A port past 65535 was taken: the name resolved with it and the connection made to it modulo 65536 (the
    port of a URL 65,536 past the loopback server's reached that server, and its body was sent as the media); one
    past a C long was said as a name that could not be resolved. Each is a malformed URL now, in a redirect's
    Location too, and nothing is fetched."""
    on = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    port = int(server.rsplit(":", 1)[1])
    _Handler.routes["/to-port.wav"] = (302, {"Location": f"http://127.0.0.1:{port + 65536}/a.wav"}, b"")
    for url in (
        f"http://127.0.0.1:{port + 65536}/a.wav",
        f"http://127.0.0.1:{port + (1 << 32)}/a.wav",
        f"http://127.0.0.1:{10**21}/a.wav",
        f"{server}/to-port.wav",
    ):
        with pytest.raises(ValidationError) as info:
            get("openai").format_request(audio_msg(url), options=on)
        problem = info.value.problems[0]
        assert (problem.pointer, problem.rule) == ("/0/content/0", "media-fetch-failed"), url
        assert "port" in problem.message and "65535" in problem.message, problem.message
    assert _Handler.seen == ["/to-port.wav"]  # (the redirect itself; never /a.wav)


def test_mixed_dns_answers_and_redirects_out_of_http(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "mixed.test":  # one public answer and one private: refused, nothing is sent
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in ("93.184.216.34", "127.0.0.1")]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=5))
    url = f"http://mixed.test:{server.rsplit(':', 1)[1]}/a.wav"
    assert refused("openai", audio_msg(url), on) == ("/0/content/0", "media-address-refused")
    assert _Handler.seen == []
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    assert refused("openai", audio_msg(f"{server}/to-file"), private)[1] == "media-scheme-refused"
    assert refused("openai", audio_msg(f"{server}/to-data"), private)[1] in (
        "media-scheme-refused",
        "media-fetch-failed",
    )


def test_a_download_of_another_kind_than_the_block_says_is_refused(server: str) -> None:
    """A server answering 200 with an HTML page (a login page, a soft 404) for a block that says it is WAV audio
    (its type, or its URL's extension): the page went to OpenAI as that audio. It is refused when the server's
    Content-Type names another kind of content; a type that says nothing, or another name of the same kind,
    is not."""
    page = b"<html><body>Please log in</body></html>"
    _Handler.routes.update(
        {
            "/page.wav": (200, {"Content-Type": "text/html; charset=utf-8"}, page),
            "/json.wav": (200, {"Content-Type": "application/json"}, b"{}"),
            "/image.wav": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n"),
            "/octet.wav": (200, {"Content-Type": "application/octet-stream"}, WAV),
            "/x-wav.wav": (200, {"Content-Type": "Audio/X-WAV"}, WAV),
            "/video.wav": (200, {"Content-Type": "video/x-wav"}, WAV),
            "/none.wav": (200, {}, WAV),
        }
    )
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    for path in ("/page.wav", "/json.wav", "/image.wav"):
        assert refused("openai", audio_msg(f"{server}{path}"), private) == ("/0/content/0", "media-fetch-failed")
    # the type from the URL's extension, the block declaring none
    untyped = [UserMessage([AudioBlock(source=URLSource(url=f"{server}/page.wav"))])]
    with pytest.raises(ValidationError, match="sent text/html where audio/wav was expected"):
        get("openai").format_request(untyped, options=private)
    for path in ("/octet.wav", "/x-wav.wav", "/video.wav", "/none.wav"):
        r = formatted("openai", audio_msg(f"{server}{path}"), options=private)
        assert r.body["messages"][0]["content"][0]["input_audio"]["data"] == base64.b64encode(WAV).decode(), path


def test_download_limits(server: str) -> None:
    private: dict[str, Any] = {"allow_download": True, "allow_private": True, "timeout": 5}
    small = FormatOptions(media=MediaPolicy(max_bytes=1000, **private))
    assert refused("openai", audio_msg(f"{server}/big.wav"), small) == ("/0/content/0", "media-too-large")
    few = FormatOptions(media=MediaPolicy(max_redirects=2, **private))
    assert refused("openai", audio_msg(f"{server}/loop"), few)[1] == "media-fetch-failed"
    assert refused("openai", audio_msg(f"{server}/gone.wav"), few)[1] == "media-fetch-failed"


def test_only_http_downloads() -> None:
    on = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True))
    assert refused("openai", audio_msg("ftp://example.com/a.wav"), on)[1] == "media-scheme-refused"


def test_private_addresses_refused_without_connecting() -> None:
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=1))
    for url in (
        "http://10.0.0.1/a.wav",
        "http://169.254.169.254/a.wav",
        "http://[::1]/a.wav",
        "http://192.168.1.1/x.wav",
        "http://192.0.0.192/a.wav",  # an Oracle Cloud metadata service (192.0.0.0/24: global to older Pythons)
        "http://192.0.0.8/a.wav",
    ):
        assert refused("openai", audio_msg(url), on)[1] == "media-address-refused"


def test_ipv6_forms_of_private_ipv4_refused_without_connecting() -> None:
    # NAT64, 6to4, SIIT and IPv4-compatible addresses carry an IPv4 address a gateway may deliver to;
    # NAT64 local use and site-local are not public (Python 3.11 calls all of these global)
    on = FormatOptions(media=MediaPolicy(allow_download=True, timeout=1))
    for host in (
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the cloud metadata address
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "::ffff:0:a00:1",  # SIIT of 10.0.0.1
        "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
        "64:ff9b:1::a00:1",
        "fec0::1",
        "3fff::1",  # documentation (3fff::/20): every Python 3.11 calls it global
        "5f00::1",  # SRv6 SIDs (5f00::/16)
    ):
        assert refused("openai", audio_msg(f"http://[{host}]/a.wav"), on)[1] == "media-address-refused", host


def test_no_cookie_goes_from_one_site_to_another_on_its_address(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A download connects to the address it checked (the URL rewritten to it): the session's cookie jar filed a.test's
    cookie under that address and sent it to b.test, which shares it (a CDN, shared hosting). No cookie is kept."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host in ("a.test", "b.test") else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    port = server.rsplit(":", 1)[1]
    msgs = [
        UserMessage([AudioBlock(source=URLSource(url=f"http://a.test:{port}/cookie.wav"))]),
        UserMessage([AudioBlock(source=URLSource(url=f"http://b.test:{port}/a.wav"))]),
    ]
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    formatted("openai", msgs, options=private)
    assert _Handler.seen == ["/cookie.wav", "/a.wav"]
    assert _Handler.cookies == [None, None]


def test_data_urls_are_inline() -> None:
    msgs = [UserMessage([AudioBlock(source=URLSource(url="data:audio/wav;base64,UklGRg=="))])]
    r = formatted("openai", msgs)
    assert r.body["messages"][0]["content"][0]["input_audio"] == {"data": "UklGRg==", "format": "wav"}
    bad = [UserMessage([AudioBlock(source=URLSource(url="data:audio/wav;base64,@@@"))])]
    assert refused("openai", bad)[1] == "media-data-url"


def test_data_urls_read_as_browsers_do() -> None:
    # the base64 token in any case, percent-escapes and whitespace in the payload:
    # the bytes sent are the bytes meant (";BASE64" was taken for text and its base64 encoded again)
    riff = base64.b64encode(b"RIFF").decode()
    for url in (
        "data:audio/wav;BASE64,UklGRg==",
        "data:audio/wav;base64,UklG%0ARg%3D%3D",
        "data:audio/wav,RIFF",
    ):
        r = formatted("openai", [UserMessage([AudioBlock(source=URLSource(url=url))])])
        assert r.body["messages"][0]["content"][0]["input_audio"] == {"data": riff, "format": "wav"}, url
    # percent-escaped bytes of a non-base64 payload are those bytes, not U+FFFD in UTF-8
    r = formatted("openai", [UserMessage([AudioBlock(source=URLSource(url="data:audio/wav,%FF%00RIFF"))])])
    assert base64.b64decode(r.body["messages"][0]["content"][0]["input_audio"]["data"]) == b"\xff\x00RIFF"


def test_placeholders_name_inline_data_by_type_and_local_files_by_name() -> None:
    """A placeholder is text sent to the provider: it put a data: URL whole into the prompt (megabytes of base64,
    as text) and a local file's full path (the caller's directories). It names inline data by its type and a
    local file by its name now; a long web URL is cut."""
    import json

    payload = base64.b64encode(WAV * 100).decode()
    msgs = [
        UserMessage(
            [
                ImageBlock(source=URLSource(url=f"data:image/PNG;base64,{payload}")),
                ImageBlock(source=URLSource(url="file:///home/alice/private/scan%201.png")),
                ImageBlock(source=URLSource(url="/srv/alice/photo.jpg")),
                ImageBlock(source=URLSource(url="https://example.com/" + "a" * 500 + ".png")),
            ]
        )
    ]
    r = formatted("deepseek", msgs)  # (text only: every media block is a placeholder)
    text = json.dumps(r.body)
    assert "[image: data:image/png]" in text and payload[:40] not in text
    assert "[image: scan 1.png]" in text and "[image: photo.jpg]" in text and "alice" not in text
    assert "[image: https://example.com/" + "a" * 180 in text and "a" * 300 not in text
    said = [d for d in r.diagnostics if d.rule == "media-unsupported"]  # once, for the 4 blocks
    assert [d.pointers for d in said] == [("/0/content/0", "/0/content/1", "/0/content/2", "/0/content/3")]


def test_a_mime_type_in_another_case_is_the_same_type() -> None:
    """MIME types are case-insensitive: data:Audio/WAV went to OpenAI as a placeholder (only wav and mp3), and a
    base64 image/PNG to Anthropic as one too (not among its image types). Both are sent as the media now, with
    the type in lowercase as the providers list them."""
    wav = base64.b64encode(WAV).decode()
    msgs = [UserMessage([AudioBlock(source=URLSource(url=f"data:Audio/WAV;base64,{wav}"))])]
    part = formatted("openai", msgs, model="gpt-4o-audio-preview").body["messages"][0]["content"][0]
    assert part == {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}}
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
    from agentmsg import Base64Source

    msgs = [UserMessage([ImageBlock(source=Base64Source(media_type="Image/PNG", data=png))])]
    r = formatted("anthropic", msgs, model="claude-sonnet-4-5", max_tokens=16)
    image = r.body["messages"][0]["content"][0]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    assert not r.diagnostics and r.body["max_tokens"] == 16
    # and the usual image's one-pass path of the other providers agrees with it
    parts = {
        "openai": formatted("openai", msgs, model="gpt-4o").body["messages"][0]["content"][0],
        "gemini": formatted("gemini", msgs, model="gemini-2.5-flash").body["contents"][0]["parts"][0],
        "dashscope": formatted("dashscope", msgs, model="qwen-vl-max").body["input"]["messages"][0]["content"][0],
    }
    assert parts == {
        "openai": {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        "gemini": {"inlineData": {"mimeType": "image/png", "data": png}},
        "dashscope": {"image": f"data:image/png;base64,{png}"},
    }


def test_an_empty_allowed_root_is_refused_not_the_current_directory(tmp_path: Path) -> None:
    """allowed_roots="" (a root left unset: os.environ.get("MEDIA_ROOT", "")) meant the current directory, whose
    files a message could then have sent to a provider; it is refused now ('.' says the current directory)."""
    with pytest.raises(ValueError, match="empty path"):
        MediaPolicy(allowed_roots="")
    with pytest.raises(ValueError, match="empty path"):
        MediaPolicy(allowed_roots=[str(tmp_path), ""])
    # Path("") is Path("."): the same object, so neither can say the current directory (the string '.' does)
    for empty in (Path(""), [tmp_path, Path("")], Path(".")):
        with pytest.raises(ValueError, match=r"/allowed_roots(/1)?: PosixPath\('\.'\).*empty path"):
            MediaPolicy(allowed_roots=empty)
    from tests._support import cli

    conversation = tmp_path / "c.json"
    conversation.write_text('[{"role": "USER", "content": [{"type": "text", "text": "hi"}]}]')
    run = cli.run("format", "--provider", "openai", "--allow-root", "", str(conversation))
    assert run.returncode == 2 and "empty path" in run.stderr and "Traceback" not in run.stderr


def test_a_relative_root_is_resolved_when_the_policy_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative root was resolved against the current directory of each format call: a policy made for
    ./media in /app read /home/x/media's files once something changed directory. It is made absolute when the
    policy is made; a symlink under it out of it is still refused."""
    for place in ("app", "elsewhere"):
        (tmp_path / place / "media").mkdir(parents=True)
        (tmp_path / place / "media" / "x.png").write_bytes(place.encode())
    (tmp_path / "secret.png").write_bytes(b"secret")
    monkeypatch.chdir(tmp_path / "app")
    policy = MediaPolicy(allowed_roots="media")
    dot = MediaPolicy(allowed_roots=".")
    assert policy.allowed_roots == (str(tmp_path / "app" / "media"),)
    assert dot.allowed_roots == (str(tmp_path / "app"),)
    options, here = FormatOptions(media=policy), FormatOptions(media=dot)
    (tmp_path / "app" / "media" / "out.png").symlink_to(tmp_path / "secret.png")
    monkeypatch.chdir(tmp_path / "elsewhere")
    for opts in (options, here):
        assert refused("openai", image_msg("media/x.png"), opts) == ("/0/content/0", "media-local-refused")
        assert refused("openai", image_msg(str(tmp_path / "elsewhere" / "media" / "x.png")), opts)[1] == (
            "media-local-refused"
        )
        assert refused("openai", image_msg(str(tmp_path / "app" / "media" / "out.png")), opts)[1] == (
            "media-local-refused"
        )
        r = formatted("openai", image_msg(str(tmp_path / "app" / "media" / "x.png")), options=opts)
        assert base64.b64encode(b"app").decode() in r.body_bytes().decode()


def _problem(msgs: list[Any], options: Any) -> tuple[str, str, str]:
    with pytest.raises(ValidationError) as exc:
        get("openai").format_request(msgs, options=options)
    p = exc.value.problems[0]
    return p.pointer, p.rule, p.message


@pytest.mark.parametrize("root", ["allowed", "/"])
def test_a_file_url_is_read_as_rfc_8089_says(media_root: Path, root: str) -> None:
    """file:////abs is the UNC form (RFC 8089 appendix E.3.2: file:////host/share/path), a file on another host,
    whose path POSIX leaves to the system ("//x"): it was refused as "outside the allowed roots" under a folder
    root and read under "/", and file://///abs (three slashes more) was read under either. Both are refused now,
    saying why, as is a path made to start so by an escape (%2F). file://localhost/abs is file:///abs (the host
    in any case), and file:relative has no absolute path (it was read against the current directory)."""
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root if root == "allowed" else Path(root)]))
    inside, outside = media_root / "dot.png", media_root.parent / "secret.png"
    bare = str(inside).lstrip("/")
    for url in (f"file:////{bare}", f"file://///{bare}", f"file:///%2F{bare}", f"file://localhost//{bare}"):
        pointer, rule, message = _problem(image_msg(url), options)
        assert (pointer, rule) == ("/0/content/0", "media-local-refused"), url
        assert "UNC" in message and "another host" in message, message
    pointer, rule, message = _problem(image_msg("file:dot.png"), options)
    assert (pointer, rule) == ("/0/content/0", "media-local-refused") and "relative path" in message, message
    expected = base64.b64encode(inside.read_bytes()).decode()
    (media_root / "sub").mkdir()
    for path in (inside, media_root / "sub" / ".." / "dot.png"):
        for host in ("", "localhost", "LOCALHOST", "LocalHost"):
            url = f"file://{host}/{str(path).lstrip('/')}"
            assert _read_local(media_root if root == "allowed" else Path(root), url) == expected, url
    for host in ("", "localhost", "LOCALHOST"):
        url = f"file://{host}/{str(outside).lstrip('/')}"
        if root == "allowed":
            assert _problem(image_msg(url), options)[:2] == ("/0/content/0", "media-local-refused"), url
        for other in (f"file://{host}.example/{bare}", f"file://{host}:80/{bare}", f"file://user@{host}/{bare}"):
            assert _problem(image_msg(other), options)[:2] == ("/0/content/0", "media-local-refused"), other


def _blocks(*urls: str) -> list[Any]:
    """A user message of an image block per local path and an audio block per http URL."""
    return [
        UserMessage(
            [
                AudioBlock(source=URLSource(url=u, mime_type="audio/wav"))
                if u.startswith("http")
                else ImageBlock(source=URLSource(url=u, mime_type="image/png"))
                for u in urls
            ]
        )
    ]


def test_the_media_of_a_request_is_capped_as_a_whole(media_root: Path) -> None:
    """Each file was capped (max_bytes) but not a request's media: a conversation of 1,000 blocks of 20 MiB
    files was read into 20 GB and sent. max_total_bytes caps what one format call reads, every block counted;
    the block that crosses it is refused at its pointer, and inline media (held by the caller) is not counted."""
    for name, size in (("a", 40), ("b", 60), ("c", 1)):
        (media_root / f"{name}.png").write_bytes(b"A" * size)
    a, b, c = (str(media_root / f"{name}.png") for name in "abc")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root], max_bytes=64, max_total_bytes=100))
    r = formatted("openai", _blocks(a, b), options=options)  # exactly the total
    assert [part["image_url"]["url"].partition(",")[2] for part in r.body["messages"][0]["content"]] == [
        base64.b64encode(b"A" * n).decode() for n in (40, 60)
    ]
    pointer, rule, message = _problem(_blocks(a, b, c), options)  # one byte more
    assert (pointer, rule) == ("/0/content/2", "media-total-too-large"), message
    assert (
        "MediaPolicy.max_total_bytes" in message and "limit of 100 bytes" in message and "100 bytes before" in message
    )
    across = [_blocks(a)[0], AssistantMessage("seen"), _blocks(c, b)[0]]
    assert _problem(across, options)[:2] == ("/2/content/1", "media-total-too-large")
    # a file in two blocks is sent twice, so it counts twice (read once)
    assert _problem(_blocks(b, b), options)[:2] == ("/0/content/1", "media-total-too-large")
    # a data: URL is the caller's bytes already: not counted
    inline = "data:image/png;base64," + base64.b64encode(b"B" * 500).decode()
    formatted("openai", _blocks(inline, a, b), options=options)
    # per request: the same options format the next request with the whole total
    formatted("openai", _blocks(b, a), options=options)
    # a file over max_bytes is refused by that rule first
    (media_root / "big.png").write_bytes(b"A" * 65)
    assert _problem(_blocks(str(media_root / "big.png")), options)[1] == "media-too-large"
    # the default: 4 x max_bytes (80 MiB for the default 20 MiB)
    assert MediaPolicy().max_total_bytes == 80 << 20
    assert MediaPolicy(max_bytes=10).max_total_bytes == 40


@pytest.mark.parametrize("body", ["with-length", "chunked", "gzip"])
def test_downloads_count_toward_the_total_with_local_files(server: str, media_root: Path, body: str) -> None:
    """Downloads and local files count against one total; the download that crosses it is refused at its block,
    whether its length is declared (refused before its body is read), only counted as it comes, or compressed."""
    (media_root / "a.png").write_bytes(b"A" * 40)
    a = str(media_root / "a.png")
    data = WAV + b"\x01" * (60 - len(WAV))
    for size in (60, 61):
        one = (data + b"\x02")[:size]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\n"
        if body == "with-length":
            _Handler.raw[f"/w{size}.wav"] = head + b"Content-Length: %d\r\n\r\n" % size + one
        else:
            wire = gzip.compress(one, mtime=0) if body == "gzip" else one
            head += b"Content-Encoding: gzip\r\n" if body == "gzip" else b""
            _Handler.raw[f"/w{size}.wav"] = (
                head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(wire) + wire + b"\r\n0\r\n\r\n"
            )
    total = 100  # (a gzip body counts the larger of its bytes and what they inflate to: here the latter)
    policy: dict[str, Any] = {"allow_download": True, "allow_private": True, "timeout": 5, "max_bytes": 200}
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root], max_total_bytes=total, **policy))
    r = formatted("openai", _blocks(a, f"{server}/w60.wav"), options=options)
    assert base64.b64decode(r.body["messages"][0]["content"][1]["input_audio"]["data"]) == data
    pointer, rule, message = _problem(_blocks(a, f"{server}/w61.wav"), options)
    assert (pointer, rule) == ("/0/content/1", "media-total-too-large"), message
    assert f"{server}/w61.wav" in message and f"limit of {total} bytes" in message
    # the same URL in two blocks counts twice (downloaded once)
    small = FormatOptions(media=MediaPolicy(max_total_bytes=119, **policy))
    _Handler.seen.clear()
    assert _problem(_blocks(f"{server}/w60.wav", f"{server}/w60.wav"), small)[:2] == (
        "/0/content/1",
        "media-total-too-large",
    )
    assert _Handler.seen == ["/w60.wav"]
    if body == "gzip":  # zero padding after the member inflates to nothing, but was read: it counts
        wire = gzip.compress(data, mtime=0) + bytes(100)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n"
        _Handler.raw["/padded.wav"] = head + wire
        alone = FormatOptions(media=MediaPolicy(max_total_bytes=len(wire) - 1, **policy))
        assert _problem(audio_msg(f"{server}/padded.wav"), alone)[:2] == ("/0/content/0", "media-total-too-large")
        alone = FormatOptions(media=MediaPolicy(max_total_bytes=len(wire), **policy))
        r = formatted("openai", audio_msg(f"{server}/padded.wav"), options=alone)
        assert base64.b64decode(r.body["messages"][0]["content"][0]["input_audio"]["data"]) == data


def test_a_download_is_stopped_as_soon_as_it_crosses_the_total(server: str) -> None:
    """A body without end is read up to the total and no further (not to max_bytes, nor to the timeout): the
    refusal names the total, the server sees the client hang up, and the memory used stays near the total."""
    options = FormatOptions(
        media=MediaPolicy(allow_download=True, allow_private=True, timeout=60, max_total_bytes=1 << 20)
    )
    tracemalloc.start()
    try:
        pointer, rule, message = _problem(audio_msg(f"{server}/endless.wav"), options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (pointer, rule) == ("/0/content/0", "media-total-too-large"), message
    assert _Handler.left.wait(30)
    assert peak < 8 << 20, peak  # (the per-file limit, 20 MiB, would have been read whole)


def _self_signed(tmp_path: Path, name: str) -> tuple[str, str]:
    """A certificate for ``name`` (its own CA) and its key, as PEM files."""
    import datetime

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


def test_https_to_the_checked_address_keeps_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection goes to the address resolved and checked; TLS still sends the name (SNI) and checks the
    certificate against it, not against the address."""
    import ssl

    import httpx

    from agentmsg.providers._request.media import MediaSession

    cert, key = _self_signed(tmp_path, "name.test")
    names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    _Handler.routes = {"/a.wav": (200, {"Content-Type": "audio/wav"}, WAV)}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("name.test", "other.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        port = httpd.server_address[1]
        results: dict[str, Any] = {}
        for host in ("name.test", "other.test"):
            session = MediaSession(MediaPolicy(allow_download=True, allow_private=True, timeout=5))
            # (the client agentmsg makes, trusting this certificate)
            session._downloader._client = httpx.Client(verify=ssl.create_default_context(cafile=cert), trust_env=False)
            try:
                results[host] = session._download(f"https://{host}:{port}/a.wav", "/p")[0]
            except ValidationError as exc:
                results[host] = exc.problems[0].message
            finally:
                session.close()
        assert results["name.test"] == WAV
        assert "not valid for 'other.test'" in results["other.test"]
        assert names == ["name.test", "other.test"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_an_empty_download_or_local_file_is_refused_not_sent_as_empty_media(server: str, media_root: Path) -> None:
    """A 200 with an empty body (or a gzip body that inflates to nothing) went to the provider as empty base64
    audio or image; an empty local file the same. Both are refused, naming the URL or the file."""
    _Handler.routes.update(
        {
            "/empty.wav": (200, {"Content-Type": "audio/wav"}, b""),
            "/empty-gz.wav": (200, {"Content-Type": "audio/wav", "Content-Encoding": "gzip"}, gzip.compress(b"")),
        }
    )
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))
    for path in ("/empty.wav", "/empty-gz.wav"):
        with pytest.raises(ValidationError, match=f"{server}{path}.*empty body") as exc:
            get("openai").format_request(audio_msg(f"{server}{path}"), options=private)
        p = exc.value.problems[0]
        assert (p.pointer, p.rule) == ("/0/content/0", "media-fetch-failed"), path
    (media_root / "empty.png").write_bytes(b"")
    local = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    for url in (str(media_root / "empty.png"), (media_root / "empty.png").as_uri()):
        with pytest.raises(ValidationError, match=r"empty\.png.* is empty") as exc:
            get("anthropic").format_request(image_msg(url), options=local)
        p = exc.value.problems[0]
        assert (p.pointer, p.rule) == ("/0/content/0", "media-local-refused"), url


# ---- limits at their edge (issue 28, class 9: each kills a mutation the suite let live) ----------------------


def _read_local(root: Path, path: Path | str, **policy: Any) -> str:
    """The base64 data the openai formatter sends for the local image ``path`` under ``root``."""
    options = FormatOptions(media=MediaPolicy(allowed_roots=[root], **policy))
    r = formatted("openai", image_msg(str(path)), options=options)
    url: str = r.body["messages"][0]["content"][0]["image_url"]["url"]
    return url.partition(",")[2]


def test_a_sibling_folder_whose_name_starts_with_the_roots_is_outside_it(tmp_path: Path) -> None:
    """A root is a folder, not a prefix of a string: for the root /x/root, /x/root-evil, /x/rootX and /x/root.d
    are other folders (a check by ``startswith(root)`` without the separator passed them). Reached by a plain
    path, a ``file:`` URL, ``..`` out of the root, a symlink under the root into the sibling, a root given with a
    trailing separator, and a root in another case (Linux names are case-sensitive: /x/ROOT is not /x/root)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.png").write_bytes(b"inside")
    for sibling in ("root-evil", "rootX", "root.d", "root "):
        (tmp_path / sibling).mkdir()
        (tmp_path / sibling / "secret.png").write_bytes(b"secret")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[root]))
    trailing = FormatOptions(media=MediaPolicy(allowed_roots=[str(root) + os.sep]))
    for sibling in ("root-evil", "rootX", "root.d", "root "):
        secret = tmp_path / sibling / "secret.png"
        for url in (str(secret), secret.as_uri(), str(root / ".." / sibling / "secret.png")):
            for opts in (options, trailing):
                assert refused("openai", image_msg(url), opts) == ("/0/content/0", "media-local-refused"), url
        link = root / f"to-{sibling}.png"
        link.symlink_to(secret)
        assert refused("openai", image_msg(str(link)), options)[1] == "media-local-refused", link
        folder = root / f"dir-{sibling}"
        folder.symlink_to(tmp_path / sibling, target_is_directory=True)
        assert refused("openai", image_msg(str(folder / "secret.png")), options)[1] == "media-local-refused"
    # `..` that comes back into the root is inside it; the root itself is no file
    assert base64.b64decode(_read_local(root, root / ".." / "root" / "ok.png")) == b"inside"
    assert base64.b64decode(_read_local(Path(str(root) + os.sep), root / "ok.png")) == b"inside"
    assert refused("openai", image_msg(str(root)), options)[1] == "media-local-refused"
    # another case is another folder on a case-sensitive file system (skipped where it is the same one)
    upper = tmp_path / "ROOT"
    if not upper.exists():
        upper.mkdir()
        (upper / "ok.png").write_bytes(b"other")
        assert refused("openai", image_msg(str(upper / "ok.png")), options)[1] == "media-local-refused"
        upper_root = FormatOptions(media=MediaPolicy(allowed_roots=[upper]))
        assert refused("openai", image_msg(str(root / "ok.png")), upper_root)[1] == "media-local-refused"


def test_the_filesystem_root_as_allowed_root_holds_every_file(tmp_path: Path) -> None:
    """``/`` as a root (its separator is its whole name) holds every absolute path, not none of them."""
    (tmp_path / "f.png").write_bytes(b"anywhere")
    assert base64.b64decode(_read_local(Path(os.sep), tmp_path / "f.png")) == b"anywhere"


def test_a_local_file_of_exactly_max_bytes_is_read_and_one_more_is_refused(media_root: Path) -> None:
    (media_root / "n.png").write_bytes(b"x" * 64)
    assert base64.b64decode(_read_local(media_root, media_root / "n.png", max_bytes=64)) == b"x" * 64
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root], max_bytes=63))
    assert refused("openai", image_msg(str(media_root / "n.png")), options) == ("/0/content/0", "media-too-large")


def _chain(server: str, hops: int) -> str:
    """A URL that redirects ``hops`` times before the audio (routes /chain/<k> -> /chain/<k-1> ... -> /a.wav)."""
    if hops == 0:
        return f"{server}/a.wav"
    for k in range(1, hops + 1):
        _Handler.routes[f"/chain/{k}"] = (302, {"Location": f"/chain/{k - 1}" if k > 1 else "/a.wav"}, b"")
    return f"{server}/chain/{hops}"


@pytest.mark.parametrize("limit", [0, 1, 3])
def test_a_download_follows_exactly_max_redirects_and_refuses_one_more(server: str, limit: int) -> None:
    policy: dict[str, Any] = {"allow_download": True, "allow_private": True, "timeout": 5, "max_redirects": limit}
    options = FormatOptions(media=MediaPolicy(**policy))
    r = formatted("openai", audio_msg(_chain(server, limit)), options=options)
    assert r.body["messages"][0]["content"][0]["input_audio"]["data"] == base64.b64encode(WAV).decode()
    _Handler.seen.clear()
    with pytest.raises(ValidationError, match=f"more than {limit} redirects") as info:
        get("openai").format_request(audio_msg(_chain(server, limit + 1)), options=options)
    assert info.value.problems[0].rule == "media-fetch-failed"
    assert len(_Handler.seen) == limit + 1  # the hop past the limit is not requested


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
@pytest.mark.parametrize("declared", [True, False], ids=["with-length", "chunked"])
def test_a_download_of_exactly_max_bytes_is_sent_and_one_more_is_refused(
    server: str, encoding: str, declared: bool
) -> None:
    """At the limit the body is sent; one byte over it is refused, whether the length is declared
    (Content-Length) or only counted as the body comes (chunked), and whether it is compressed or not."""
    body = WAV + b"\x01" * 100
    for size in (len(body), len(body) + 1):
        data = body[:size] if size <= len(body) else body + b"\x02"
        wire = gzip.compress(data) if encoding == "gzip" else data
        head = b"HTTP/1.1 200 OK\r\nContent-Type: audio/wav\r\n"
        if encoding == "gzip":
            head += b"Content-Encoding: gzip\r\n"
        if declared and encoding == "identity":
            _Handler.raw[f"/n{size}"] = head + b"Content-Length: %d\r\n\r\n" % len(wire) + wire
        else:
            _Handler.raw[f"/n{size}"] = (
                head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(wire) + wire + b"\r\n0\r\n\r\n"
            )
    options = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5, max_bytes=len(body)))
    r = formatted("openai", audio_msg(f"{server}/n{len(body)}"), options=options)
    assert base64.b64decode(r.body["messages"][0]["content"][0]["input_audio"]["data"]) == body
    assert refused("openai", audio_msg(f"{server}/n{len(body) + 1}"), options) == ("/0/content/0", "media-too-large")


@pytest.mark.parametrize(
    ("payload", "raw"),
    [("QUJD", b"ABC"), ("QUI=", b"AB"), ("QQ==", b"A"), ("QUJDRA==", b"ABCD"), ("QUJ%0AD", b"ABC")],
    ids=["no-padding", "one", "two", "two-after-a-quantum", "escaped-line-break"],
)
def test_a_base64_data_url_with_zero_one_or_two_padding_characters_is_read(payload: str, raw: bytes) -> None:
    msgs = [UserMessage([AudioBlock(source=URLSource(url=f"data:audio/wav;base64,{payload}"))])]
    r = formatted("openai", msgs)
    assert base64.b64decode(r.body["messages"][0]["content"][0]["input_audio"]["data"]) == raw


@pytest.mark.parametrize(
    "payload",
    ["Q===", "QQ===", "QUI===", "QUJD===", "QUJD=", "QUJD==", "QUJD%3D%3D%3D", "QQ=Q", "QQ==QQ==", "QQ=", "=", "==="],
)
def test_a_base64_data_url_with_three_padding_characters_or_misplaced_padding_is_refused(payload: str) -> None:
    """Base64 pads the last quantum with at most two '=': three, padding after a whole quantum or inside the
    data, or a quantum cut short is no base64, refused at the block. (``base64.b64decode(validate=True)`` reads
    "QUJD===" and "QUJD=" as "ABC", and the data URL's payload was then sent on as it was: base64 the provider
    and the source schema refuse.)"""
    msgs = [UserMessage([AudioBlock(source=URLSource(url=f"data:audio/wav;base64,{payload}"))])]
    assert refused("openai", msgs) == ("/0/content/0", "media-data-url")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope", "openai-responses"])
def test_a_media_session_is_made_only_for_media_to_resolve(
    provider: str, media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose conversation holds no media to resolve makes no media session (no file reader, no download
    client); one whose local image is read makes one, closed when the call ends."""
    made: list[str] = []
    session = MediaPolicy.session

    def recorded(self: MediaPolicy) -> Any:
        s = session(self)
        close = s.close
        made.append("made")

        def closing() -> None:
            made.append("closed")
            close()

        s.close = closing  # type: ignore[method-assign]
        return s

    monkeypatch.setattr(MediaPolicy, "session", recorded)
    get(provider).format_request([UserMessage("hello")], model="m")
    assert made == []
    get(provider).format_request(image_msg("https://example.com/cat.png"), model="m")  # (sent as a URL)
    assert made == []
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    get(provider).format_request(image_msg(str(media_root / "dot.png")), model="m", options=options)
    assert made == ["made", "closed"]


def test_a_path_outside_the_roots_is_refused_without_touching_it(
    media_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path outside every root is refused as written: not one of its folders is looked up (resolving it
    would lstat each), since the caller allowed none of it. So a symlink outside the roots is refused even
    when it leads into one; a root given through a symlink holds paths written under either name."""
    elsewhere = media_root.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "into.png").symlink_to(media_root / "dot.png")
    options = FormatOptions(media=MediaPolicy(allowed_roots=[media_root]))
    looked: list[str] = []
    for name in ("lstat", "stat", "open", "readlink"):
        original = getattr(os, name)

        def spy(path: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            looked.append(os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else repr(path))
            return _original(path, *args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    for url in (str(elsewhere / "into.png"), (elsewhere / "into.png").as_uri(), str(elsewhere / "missing" / "x.png")):
        assert refused("openai", image_msg(url), options) == ("/0/content/0", "media-local-refused"), url
    monkeypatch.undo()
    assert not [p for p in looked if "elsewhere" in p], looked
    alias = media_root.parent / "alias"
    alias.symlink_to(media_root, target_is_directory=True)
    for path in (alias / "dot.png", media_root / "dot.png"):
        assert base64.b64decode(_read_local(alias, path)).startswith(b"\x89PNG")


def test_a_download_for_a_block_of_unknown_type_is_checked_against_the_block_kind(server: str) -> None:
    """Gemini downloads a URL whose MIME type neither the block nor the URL's extension says (it needs one for
    inline data), so nothing was expected and the Content-Type went unchecked: an HTML page (a login page, a soft
    404) answering for an image block went to Gemini as inline text/html. The block's kind is checked instead; a
    type that says nothing, or one of that kind, is taken."""
    page = b"<html><body>Please log in</body></html>"
    _Handler.routes.update(
        {
            "/page": (200, {"Content-Type": "text/html"}, page),
            "/png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n"),
            "/octet": (200, {"Content-Type": "application/octet-stream"}, b"\x89PNG\r\n\x1a\n"),
        }
    )
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))

    def image(path: str) -> list[Any]:
        return [UserMessage([ImageBlock(source=URLSource(url=f"{server}{path}"))])]

    with pytest.raises(ValidationError, match="sent text/html where an image was expected") as exc:
        get("gemini").format_request(image("/page"), options=private)
    assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/0/content/0", "media-fetch-failed")
    audio = [UserMessage([AudioBlock(source=URLSource(url=f"{server}/page"))])]
    assert refused("gemini", audio, private) == ("/0/content/0", "media-fetch-failed")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    part = formatted("gemini", image("/png"), options=private).body["contents"][0]["parts"][0]
    assert part == {"inlineData": {"mimeType": "image/png", "data": png}}
    part = formatted("gemini", image("/octet"), options=private).body["contents"][0]["parts"][0]
    assert part == {"inlineData": {"mimeType": "application/octet-stream", "data": png}}
    # a data block of no known type is of no kind: whatever it is, it goes as the server names it
    data = [UserMessage([DataBlock(source=URLSource(url=f"{server}/page"))])]
    part = formatted("gemini", data, options=private).body["contents"][0]["parts"][0]
    assert part == {"inlineData": {"mimeType": "text/html", "data": base64.b64encode(page).decode()}}


def test_a_content_type_is_read_as_one_mime_type_the_last_the_server_gave(server: str) -> None:
    """The Content-Type went on as the server wrote it, joined by httpx when repeated: two headers (image/png, then
    text/html) were judged by the first, which a browser ignores for the last, and either one, or 3,000 bytes of
    anything, became the mimeType of Gemini's inline data. It is read as browsers read it (the last valid
    ``type/subtype`` of the comma-separated values, in lowercase, parameters dropped); none valid says nothing."""
    png = b"\x89PNG\r\n\x1a\n"

    def reply(*types: bytes) -> bytes:
        head = b"".join(b"Content-Type: " + t + b"\r\n" for t in types)
        return b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: 8\r\n\r\n" + png

    _Handler.raw.update(
        {
            "/two": reply(b"image/png", b"text/html"),
            "/comma": reply(b"image/png, text/html"),
            "/last-good": reply(b'text/html; charset="a,b", Image/PNG ;q=1'),
            "/junk": reply(b"z" * 3000),
            "/words": reply(b"image/png foo bar"),
        }
    )
    private = FormatOptions(media=MediaPolicy(allow_download=True, allow_private=True, timeout=5))

    def part(path: str) -> Any:
        msgs = [UserMessage([ImageBlock(source=URLSource(url=f"{server}{path}"))])]
        return formatted("gemini", msgs, options=private).body["contents"][0]["parts"][0]["inlineData"]

    for path in ("/two", "/comma"):
        msgs = [UserMessage([ImageBlock(source=URLSource(url=f"{server}{path}"))])]
        with pytest.raises(ValidationError, match="sent text/html where an image was expected"):
            get("gemini").format_request(msgs, options=private)
    assert part("/last-good") == {"mimeType": "image/png", "data": base64.b64encode(png).decode()}
    assert part("/junk")["mimeType"] == part("/words")["mimeType"] == "application/octet-stream"


@pytest.mark.parametrize(
    ("make", "pointer"),
    [
        (lambda: FormatOptions(media=1), "/media"),  # type: ignore[arg-type]
        (lambda: FormatOptions(media=[".", "/tmp"]), "/media"),  # type: ignore[arg-type]
        (lambda: MediaPolicy(allowed_roots=1), "/allowed_roots"),
        (lambda: MediaPolicy(allowed_roots=[".", 5]), "/allowed_roots/1"),
    ],
)
def test_the_options_refuse_a_media_policy_or_roots_of_the_wrong_type(make: Any, pointer: str) -> None:
    """``FormatOptions(media=1)`` and ``MediaPolicy(allowed_roots=1)`` raised a bare TypeError ('int' object is
    not iterable); now a ValidationError naming the argument."""
    with pytest.raises(ValidationError) as info:
        make()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "type")]


@pytest.mark.parametrize(
    ("make", "pointer", "rule"),
    [
        # a key that is no field: MediaPolicy(**media) raised a bare TypeError (unexpected keyword argument)
        (lambda: FormatOptions(media={"allowed_root": "."}), "/media/allowed_root", "additionalProperties"),
        (lambda: FormatOptions(media={1: "."}), "/media/1", "additionalProperties"),  # type: ignore[dict-item]
        # an empty root: a bare ValueError
        (lambda: MediaPolicy(allowed_roots=""), "/allowed_roots", "empty-root"),
        (lambda: MediaPolicy(allowed_roots=[".", ""]), "/allowed_roots/1", "empty-root"),
        (lambda: MediaPolicy(allowed_roots=[Path("")]), "/allowed_roots/0", "empty-root"),
        (lambda: FormatOptions(media={"allowed_roots": [".", ""]}), "/media/allowed_roots/1", "empty-root"),
    ],
)
def test_a_media_key_that_is_no_field_or_an_empty_root_is_a_validation_error(
    make: Any, pointer: str, rule: str
) -> None:
    with pytest.raises(ValidationError) as info:
        make()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    assert isinstance(info.value, TypeError if rule == "additionalProperties" else ValueError)


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("max_bytes", -1, "minimum"),
        ("max_bytes", True, "type"),
        ("max_bytes", "20", "type"),
        ("max_bytes", None, "type"),
        ("max_total_bytes", -5, "minimum"),
        ("max_total_bytes", 1.5, "type"),
        ("max_redirects", -1, "minimum"),
        ("max_redirects", False, "type"),
        ("timeout", 0, "exclusiveMinimum"),
        ("timeout", -1.0, "exclusiveMinimum"),
        ("timeout", float("nan"), "type"),
        ("timeout", float("inf"), "maximum"),
        ("timeout", "10", "type"),
        ("allow_download", "no", "type"),
        ("allow_private", 1, "type"),
        ("allow_hard_links", None, "type"),
    ],
)
def test_a_media_policy_size_count_or_switch_out_of_range_is_a_validation_error(
    field: str, value: Any, rule: str
) -> None:
    """MediaPolicy(max_bytes=-1) was taken (every file then refused as too large), max_bytes=None failed in the
    default of max_total_bytes with a bare TypeError, timeout=0 or inf reached the socket, allow_download="no" (a
    true value) turned downloads on: each is now a ValidationError naming the field (a TypeError too for a type)."""
    with pytest.raises(ValidationError) as info:
        MediaPolicy(**{field: value})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(f"/{field}", rule)]
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError) == (rule == "type")
    with pytest.raises(ValidationError) as info:  # (through a format call's options: under /options/media)
        get("openai").format_request([UserMessage("q")], model="m", options={"media": {field: value}})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(f"/options/media/{field}", rule)]


def test_a_media_policy_in_range_keeps_its_values() -> None:
    policy = MediaPolicy(max_bytes=0, max_total_bytes=0, max_redirects=0, timeout=0.5, allow_download=True)
    assert (policy.max_bytes, policy.max_total_bytes, policy.max_redirects, policy.timeout) == (0, 0, 0, 0.5)
    assert MediaPolicy(max_bytes=5).max_total_bytes == 20  # (the default: 4 x max_bytes)
