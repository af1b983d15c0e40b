"""URL downloads for media (the network half of :class:`~agentmsg.providers._request.media.MediaPolicy`).

A :class:`Downloader` fetches an http(s) URL for one media session: the name resolved once, within the
timeout, and the connection made to an address checked (no private, loopback, link-local or otherwise
non-global address unless ``allow_private``; the connected socket checked again before the request is sent;
at every redirect), with a deadline for the whole download, a redirect limit and a size cap on the body and
on its compressed bytes (gzip and deflate inflated here, never past the limit; a body cut short refused,
an empty one too).
Every refusal is a :class:`~agentmsg.ValidationError` whose pointer is the block's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
import zlib
from typing import Any, Final, Generic, TypeVar
from urllib.parse import SplitResult, urljoin, urlsplit

from agentmsg.errors import ValidationError

__all__ = ["MAX_PORT", "Downloader", "Fetched", "over_total", "split_url"]

#: The largest TCP port: a URL's port past it is malformed (httpx takes it, and connects to it modulo 65536)
MAX_PORT: Final = 65535


class Downloader:
    """Downloads URLs for one media session under its policy (a ``MediaPolicy``); ``close()`` closes its
    httpx client, made at the first download."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._client: Any = None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _resolve(self, host: str, port: int, pointer: str, url: str, deadline: float) -> list[str]:
        """The addresses of ``host``, looked up within the download's deadline (getaddrinfo has no timeout of
        its own: a slow resolver held the call as long as it liked). The lookup runs in a thread, left to end
        on its own when the deadline passes first."""
        box: list[Any] = []

        def lookup() -> None:
            try:
                box.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP))
            except Exception as exc:  # (handed to the caller)
                box.append(exc)

        worker = threading.Thread(target=lookup, name="agentmsg-media-resolve", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()))
        if not box:
            raise ValidationError.single(
                pointer, "media-fetch-failed", f"{url}: resolving {host!r} took over {self.policy.timeout} s"
            )
        if isinstance(box[0], Exception):
            raise ValidationError.single(pointer, "media-fetch-failed", f"cannot resolve {host!r}: {box[0]}")
        addresses = list(dict.fromkeys(str(info[4][0]) for info in box[0]))
        if not addresses:
            raise ValidationError.single(pointer, "media-fetch-failed", f"{host!r} resolves to no address")
        if not self.policy.allow_private:
            for address in addresses:
                _check_address(address, pointer, url)
        return addresses

    def _send(
        self, target: Any, host: str, port: int, pointer: str, url: str, deadline: float, watch: list[Any]
    ) -> Any:
        """Send the GET of one hop; its response is streamed. The name is resolved once, within the deadline,
        and the connection made to an address that was checked, each in turn (the request keeps the name in
        its Host header and TLS its server name): httpx resolving the name again, with no deadline, to
        addresses no one checked, is what the trace hook's check on the connected socket caught after the
        fact. With a ``transport`` of the caller's (a proxy resolves names itself), the name is checked the
        same way when private addresses are refused, and the URL sent as it is."""
        import httpx

        policy = self.policy
        extensions: dict[str, Any] = {"trace": self._on_connect(pointer, url, deadline, watch)}
        targets = [target]
        headers: dict[str, str] = {}
        if policy.transport is None or not policy.allow_private:
            addresses = self._resolve(host, port, pointer, url, deadline)
            if policy.transport is None:
                targets = [target.copy_with(host=address) for address in addresses]
                headers["Host"] = target.netloc.decode("ascii")
                extensions["sni_hostname"] = host
        for i, one in enumerate(targets):
            left = deadline - time.monotonic()
            if left <= 0:
                raise httpx.ConnectTimeout(f"no connection to {host!r} within the timeout")
            request = self._client.build_request(
                "GET", one, headers=headers, extensions=extensions, timeout=httpx.Timeout(min(left, policy.timeout))
            )
            try:
                return self._client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if i == len(targets) - 1:
                    raise
        raise AssertionError("unreachable: _resolve gives at least one address")

    def _on_connect(self, pointer: str, url: str, deadline: float, watch: list[Any]) -> Any:
        """An httpcore trace hook on each new connection: checks the address it reached before the
        request is sent on it (the name may resolve to another address than the one checked: DNS
        rebinding), and cuts it at the download's deadline (a server sending a byte now and then, each
        within the per-read timeout, would otherwise hold the download for as long as it likes)."""

        def trace(event: str, info: dict[str, Any]) -> None:
            if event != "connection.connect_tcp.complete":
                return
            stream = info["return_value"]
            if not self.policy.allow_private:
                peer = stream.get_extra_info("server_addr")
                try:
                    if not peer:
                        raise ValidationError.single(
                            pointer, "media-address-refused", f"{url}: the connected address is unknown"
                        )
                    _check_address(str(peer[0]), pointer, url)
                except ValidationError:
                    stream.close()
                    raise
            sock = stream.get_extra_info("socket")
            if sock is not None:
                cut = sock.dup()  # the same connection; still usable once TLS has taken over `sock`
                timer = threading.Timer(max(0.0, deadline - time.monotonic()), _shutdown, (cut,))
                timer.daemon = True
                watch.append((timer, cut))
                timer.start()

        return trace

    def fetch(self, url: str, pointer: str, room: int) -> tuple[bytes, str | None, int]:
        """The body of ``url``, its Content-Type and the bytes it counts against the request's
        ``max_total_bytes`` (the larger of the bytes received and the bytes decoded), under the policy
        (redirects followed up to its limit, each hop checked); stopped as soon as it counts more than
        ``room``. Every failure is a :class:`~agentmsg.ValidationError` at ``pointer``."""
        policy = self.policy
        from http.cookiejar import CookieJar, DefaultCookiePolicy  # (here, as httpx: a download's alone)

        import httpx

        if self._client is None:
            self._client = httpx.Client(
                transport=policy.transport,
                timeout=httpx.Timeout(policy.timeout),
                follow_redirects=False,
                trust_env=False,
                # No cookie is kept: a URL is rewritten to the checked address, so a jar would file one site's
                # cookies under an address another site shares (a CDN) and send them there
                cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
                headers={"Accept-Encoding": "gzip, deflate"},
                limits=httpx.Limits(max_keepalive_connections=0),  # each hop a new, checked connection
            )
        deadline = time.monotonic() + policy.timeout
        current = url
        for _ in range(policy.max_redirects + 1):
            parts = split_url(current, pointer, "media-fetch-failed")
            hop_scheme = parts.scheme.lower()
            if hop_scheme not in ("http", "https"):
                raise ValidationError.single(
                    pointer, "media-scheme-refused", f"only http(s) URLs are downloaded, not {current!r}"
                )
            try:
                target = httpx.URL(current)  # the host and port as httpx connects to them (IDNA 2008, ...)
                host = target.raw_host.decode("ascii")
                port = target.port or (443 if hop_scheme == "https" else 80)
            except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
                raise ValidationError.single(
                    pointer, "media-fetch-failed", f"malformed URL {current!r}: {exc}"
                ) from None
            if not host:
                raise ValidationError.single(pointer, "media-fetch-failed", f"URL without a host: {current!r}")
            if port > MAX_PORT:
                # httpx takes any number; the name is resolved and the connection made to it modulo 65536, another
                # port than the URL's (one past a C long failed as a name that could not be resolved)
                raise ValidationError.single(
                    pointer, "media-fetch-failed", f"malformed URL {current!r}: its port is past {MAX_PORT}"
                )
            watch: list[Any] = []
            try:
                with contextlib.closing(self._send(target, host, port, pointer, current, deadline, watch)) as response:
                    if response.is_redirect:
                        location = response.headers.get("location")
                        if not location:
                            raise ValidationError.single(
                                pointer, "media-fetch-failed", f"redirect without Location from {current}"
                            )
                        try:
                            current = urljoin(current, location)
                        except ValueError:
                            raise ValidationError.single(
                                pointer, "media-fetch-failed", f"{current} redirects to a malformed URL {location!r}"
                            ) from None
                        continue
                    if response.status_code != 200:
                        raise ValidationError.single(
                            pointer, "media-fetch-failed", f"GET {current} answered HTTP {response.status_code}"
                        )
                    declared = response.headers.get("content-length", "")
                    size = int(declared) if declared.isdigit() else 0
                    if size > policy.max_bytes:
                        raise ValidationError.single(
                            pointer,
                            "media-too-large",
                            f"{current} has {declared} bytes, over the limit of {policy.max_bytes}",
                        )
                    if size > room:
                        raise over_total(pointer, current, policy, room, size)
                    cap = min(policy.max_bytes, room)
                    encoding = response.headers.get("content-encoding", "").strip().lower()
                    if encoding in ("gzip", "x-gzip", "deflate"):
                        # decoded here, never more than the limit allows (httpx would inflate a whole
                        # network read at once: a few kB of gzip can be gigabytes)
                        decoder: _Inflater | None = _Inflater(encoding)
                    elif encoding in ("", "identity"):
                        decoder = None
                    else:
                        raise ValidationError.single(
                            pointer, "media-fetch-failed", f"{current} sent Content-Encoding {encoding!r}"
                        )
                    chunks = []
                    total = 0
                    received = 0
                    for raw in response.iter_raw():
                        received += len(raw)
                        if decoder is not None and received > policy.max_bytes:
                            # the compressed bytes too, as their Content-Length is: a body that inflates to
                            # little or nothing (zero padding, empty gzip members, an endless header) was
                            # read for as long as the timeout let it
                            raise ValidationError.single(
                                pointer,
                                "media-too-large",
                                f"{current} sent over {policy.max_bytes} bytes of {encoding} body (the limit)",
                            )
                        try:
                            chunk = decoder.feed(raw, cap + 1 - total) if decoder else raw
                        except zlib.error as exc:
                            raise ValidationError.single(
                                pointer, "media-fetch-failed", f"{current}: bad {encoding} body: {exc}"
                            ) from None
                        total += len(chunk)
                        if total > policy.max_bytes:
                            raise ValidationError.single(
                                pointer, "media-too-large", f"{current} is over the limit of {policy.max_bytes} bytes"
                            )
                        if max(received, total) > room:  # (the compressed bytes count too: they were read)
                            raise over_total(pointer, current, policy, room, max(received, total), more=True)
                        if time.monotonic() > deadline:
                            break
                        chunks.append(chunk)
                    if time.monotonic() > deadline:  # also a body without a length that the cut ended
                        raise ValidationError.single(
                            pointer, "media-fetch-failed", f"download of {current} took over {policy.timeout} s"
                        )
                    if decoder is not None and not decoder.complete():
                        # a body cut short (a connection closed early, without a length to tell): what was
                        # inflated is part of the media, never sent as if it were the media
                        raise ValidationError.single(
                            pointer,
                            "media-fetch-failed",
                            f"{current}: the {encoding} body is cut short (it ends inside its compressed stream)",
                        )
                    body = b"".join(chunks)
                    if not body:
                        # nothing to send: an empty image, audio or file went to the provider as the media
                        raise ValidationError.single(
                            pointer, "media-fetch-failed", f"GET {current} answered HTTP 200 with an empty body"
                        )
                    return body, response.headers.get("content-type"), max(received, len(body))
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                if time.monotonic() > deadline:
                    raise ValidationError.single(
                        pointer, "media-fetch-failed", f"download of {current} took over {policy.timeout} s"
                    ) from None
                raise ValidationError.single(
                    pointer, "media-fetch-failed", f"GET {current} failed: {type(exc).__name__}: {exc}"
                ) from None
            finally:
                for timer, cut in watch:
                    timer.cancel()
                    timer.join()  # not running when its socket is closed
                    cut.close()
        raise ValidationError.single(
            pointer, "media-fetch-failed", f"more than {policy.max_redirects} redirects from {url}"
        )


# IPv6 forms that carry an IPv4 address a gateway may deliver to (NAT64, SIIT, IPv4-compatible), and
# prefixes not routed publicly that older Pythons call global (NAT64 local use, deprecated site-local)
_EMBEDS_V4: Final = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "::ffff:0:0:0/96", "::/96"))
_NOT_GLOBAL_V6: Final = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b:1::/48", "fec0::/10"))
# Networks IANA marks not globally reachable that a Python calls global, whichever its version: 192.0.0.0/24 (IETF
# protocol assignments, an Oracle Cloud metadata service at 192.0.0.192; before the CVE-2024-4032 fix), 3fff::/20
# (documentation), 5f00::/16 (SRv6 SIDs). Checked on every Python, as the others are by ``is_global``
_NOT_GLOBAL: Final[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]] = (
    *_NOT_GLOBAL_V6,
    ipaddress.IPv4Network("192.0.0.0/24"),
    ipaddress.IPv6Network("3fff::/20"),
    ipaddress.IPv6Network("5f00::/16"),
)


def _check_address(addr: str, pointer: str, url: str) -> None:
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        raise ValidationError.single(pointer, "media-address-refused", f"{url}: unusable address {addr!r}") from None
    seen: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        seen += [v4 for v4 in (ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())) if v4 is not None]
        if any(ip in net for net in _EMBEDS_V4):
            seen.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    for one in seen:
        if not one.is_global or one.is_multicast or any(one in net for net in _NOT_GLOBAL):
            shown = f"{ip} ({one})" if one is not ip else str(ip)
            raise ValidationError.single(
                pointer,
                "media-address-refused",
                f"{url} resolves to the non-public address {shown} (MediaPolicy.allow_private)",
            )


T = TypeVar("T")


class Fetched(Generic[T]):
    """What one media session read or downloaded (by its key: a file's real path, a URL), each once, with the bytes
    it counted: served again only within what is left of the request's ``max_total_bytes``, refused as the first
    reading would have been (:func:`over_total`). The one such check of local files and downloads."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._held: dict[str, tuple[T, int]] = {}

    def get(self, key: str, pointer: str, what: str, room: int) -> T | None:
        """What is held for ``key`` (None: nothing yet), when its size fits in ``room``."""
        held = self._held.get(key)
        if held is None:
            return None
        value, size = held
        if size > room:
            raise over_total(pointer, what, self.policy, room, size)
        return value

    def keep(self, key: str, value: T, size: int) -> T:
        """Hold ``value`` (``size`` bytes) for ``key``; ``value``."""
        self._held[key] = (value, size)
        return value


def over_total(pointer: str, what: str, policy: Any, room: int, size: int, *, more: bool = False) -> ValidationError:
    """The refusal of the media ``what`` (``size`` bytes, or ``more`` than that when it was stopped there), which
    would take the request's media over ``max_total_bytes`` with ``room`` bytes of it left."""
    before = policy.max_total_bytes - room
    return ValidationError.single(
        pointer,
        "media-total-too-large",
        f"{what} ({'over ' if more else ''}{size} bytes) takes the media of this request over its limit of "
        f"{policy.max_total_bytes} bytes (MediaPolicy.max_total_bytes; {before} bytes before it)",
    )


def split_url(url: str, pointer: str, rule: str) -> SplitResult:
    """``url`` split, or a ValidationError at ``pointer`` with ``rule`` when it is malformed."""
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise ValidationError.single(pointer, rule, f"malformed URL {url!r}: {exc}") from None


class _Inflater:
    """A gzip or deflate body inflated as it comes, never past a limit. It is complete only at the end of
    its compressed stream: a body that ends before (cut short) is not, and bytes after it are an error,
    except what the gzip format allows there (another member, zero padding), as Python's gzip reads it."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding != "deflate"
        self._head = b"" if encoding == "deflate" else None  # deflate: zlib-wrapped or raw? (first 2 bytes)
        self._inflate: Any = None if self._head is not None else zlib.decompressobj(zlib.MAX_WBITS | 32)
        self._fed = False

    def feed(self, data: bytes, room: int) -> bytes:
        """Inflate ``data``; at most ``room`` bytes come out (more would be over the limit anyway)."""
        if data:
            self._fed = True
        if self._head is not None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, None
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS if _zlib_head(data) else -zlib.MAX_WBITS)
        out = []
        while data and room > 0:
            if self._inflate is None:  # after the end of a stream
                if not self._gzip:
                    raise zlib.error(f"{len(data)} bytes after the end of the deflate stream")
                data = data.lstrip(b"\x00")
                if not data:
                    break
                self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)  # another member
            chunk = self._inflate.decompress(data, room)
            out.append(chunk)
            room -= len(chunk)
            if not self._inflate.eof:
                break  # all taken in, or `room` is full (the caller refuses the size)
            data = self._inflate.unused_data
            self._inflate = None
        return b"".join(out)

    def complete(self) -> bool:
        """Whether the body ended where its compressed stream did (or was empty)."""
        return not self._fed or (self._head is None and self._inflate is None)


def _zlib_head(data: bytes) -> bool:
    """Whether ``data`` starts with a zlib header (RFC 1950: deflate method, check bits)."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
