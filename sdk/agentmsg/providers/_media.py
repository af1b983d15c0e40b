"""Media loading for formatters, safe by default.

A media block's source is inline base64, a URL, or a local file (a ``file://`` URL or a path).
Formatters pass URLs through to providers that fetch them themselves. They need the bytes when the
source is local or the provider takes only inline data, and then this module applies the policy:

* local files are read only under ``allowed_roots`` (after resolving ``..`` and symlinks, so neither
  traversal nor a symlink can leave a root; opened from the root following no symlink, so neither
  can a directory swapped for one after the check), only regular files with one name (a hard link's
  other name may be outside the roots) unless ``allow_hard_links``, at most ``max_bytes``;
* URLs are downloaded only when ``allow_download`` is set: http(s) only, no private, loopback,
  link-local or otherwise non-global address (the name resolved once, within the timeout, and the
  connection made to an address checked; the connected socket checked again before the request is
  sent; at every redirect) unless ``allow_private``, with a timeout for the whole download, a
  redirect limit and a size cap, over httpx.

Every refusal is a :class:`~agentmsg.ValidationError` whose pointer is the block's.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import os
import re
import socket
import stat
import threading
import time
import zlib
from typing import Any, Final
from urllib.parse import SplitResult, unquote, unquote_to_bytes, urljoin, urlsplit

import attrs

from agentmsg.errors import ValidationError

__all__ = ["Media", "MediaPolicy", "MediaSession", "guess_mime"]

DEFAULT_MAX_BYTES: Final = 20 * 1024 * 1024


def _roots(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, os.PathLike)):
        value = (value,)
    roots = tuple(os.fspath(v) for v in value)
    if any(not r for r in roots):  # ("" would be the current directory: a root left unset, most likely)
        raise ValueError("allowed_roots: an empty path is no root (give '.' for the current directory)")
    return roots


@attrs.frozen(kw_only=True)
class MediaPolicy:
    """What a formatter may read or fetch to get media bytes. The default reads and fetches nothing.

    ``allowed_roots``: directories under which local files may be read.
    ``allow_hard_links``: read a file that has other names (hard links), which may be outside the roots.
    ``max_bytes``: size limit of one file or download (default 20 MiB).
    ``allow_download``: fetch http(s) URLs for providers that take only inline bytes.
    ``allow_private``: let downloads reach private, loopback and link-local addresses.
    ``timeout``: seconds per network operation, and for a whole download.
    ``max_redirects``: redirects followed per download.
    ``transport``: an ``httpx.BaseTransport`` to use instead of the network (tests, proxies).
    """

    allowed_roots: tuple[str, ...] = attrs.field(default=(), converter=_roots)
    allow_hard_links: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    allow_download: bool = False
    allow_private: bool = False
    timeout: float = 10.0
    max_redirects: int = 3
    transport: Any = attrs.field(default=None, eq=False)

    def session(self) -> MediaSession:
        return MediaSession(self)


class Media:
    """Resolved media: either a ``url`` passed through, or inline ``data`` (base64) with its MIME type."""

    __slots__ = ("data", "mime", "url")

    def __init__(self, mime: str | None, url: str | None = None, data: str | None = None) -> None:
        self.mime = mime
        self.url = url
        self.data = data

    def data_uri(self) -> str:
        return f"data:{self.mime or 'application/octet-stream'};base64,{self.data}"


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")

_EXT_MIME: Final = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
    "heic": "image/heic",
    "heif": "image/heif",
    "bmp": "image/bmp",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "aiff": "audio/aiff",
    "aac": "audio/aac",
    "ogg": "audio/ogg",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "opus": "audio/opus",
    "mp4": "video/mp4",
    "mpeg": "video/mpeg",
    "mpg": "video/mpeg",
    "mov": "video/quicktime",
    "avi": "video/x-msvideo",
    "webm": "video/webm",
    "wmv": "video/x-ms-wmv",
    "flv": "video/x-flv",
    "3gp": "video/3gpp",
    "3gpp": "video/3gpp",
    "pdf": "application/pdf",
    "txt": "text/plain",
    "md": "text/markdown",
    "csv": "text/csv",
    "html": "text/html",
    "json": "application/json",
}


def guess_mime(ref: str) -> str | None:
    """MIME type from a URL's or path's extension (None when unknown)."""
    try:
        path = urlsplit(ref).path if _SCHEME.match(ref) else ref
    except ValueError:  # a malformed URL ("http://[::1/x")
        return None
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    return _EXT_MIME.get(path[dot + 1 :].lower())


def scheme_of(ref: str) -> str | None:
    """The URL scheme in lowercase, or None for a local path (``C:`` drive letters are paths)."""
    m = _SCHEME.match(ref)
    return m.group(1).lower() if m else None


class MediaSession:
    """Resolves media for one format call under a policy (caches what it read; closes its client)."""

    def __init__(self, policy: MediaPolicy) -> None:
        self.policy = policy
        self._cache: dict[str, tuple[bytes, str | None]] = {}
        self._client: Any = None
        self._real_roots: tuple[str, ...] | None = None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # ---- entry point ----

    def resolve(
        self, source: Any, pointer: str, *, inline: bool, schemes: tuple[str, ...] = ("http", "https")
    ) -> Media:
        """Resolve a block's source. With ``inline`` the bytes are needed (read or downloaded under
        the policy); otherwise URLs whose scheme is in ``schemes`` pass through as they are."""
        if source.type == "base64":
            return Media(source.media_type.lower(), data=source.data)  # (a MIME type's case means nothing)
        url: str = source.url
        declared = source.mime_type.lower() if source.mime_type else None
        scheme = scheme_of(url)
        if scheme == "data":
            mime, data = _parse_data_url(url, pointer)
            return Media(declared or mime, data=data)
        if scheme is None or scheme == "file":
            raw, _ = self._local(url, scheme, pointer)
            return Media(declared or guess_mime(url), data=base64.b64encode(raw).decode("ascii"))
        if not inline and scheme in schemes:
            return Media(declared or guess_mime(url), url=url)
        if not inline:
            raise ValidationError.single(
                pointer, "media-scheme-refused", f"{scheme}: URLs cannot be sent to this provider ({url})"
            )
        raw, content_type = self._download(url, scheme, pointer)
        expected, sent = declared or guess_mime(url), _clean_mime(content_type)
        if expected and sent and _family(sent) not in (None, _family(expected)):
            # the formatter chose how to send it from the block's type (OpenAI: wav or mp3, a PDF file):
            # an HTML page answering 200 (a login page, a soft 404) would go as that audio or document
            raise ValidationError.single(
                pointer,
                "media-fetch-failed",
                f"{url} sent {sent} where {expected} was expected"
                f"{'' if declared else ' (from the URL)'}: not sent as {expected}",
            )
        mime = expected or sent
        return Media(mime, data=base64.b64encode(raw).decode("ascii"))

    # ---- local files ----

    def _roots(self) -> tuple[str, ...]:
        if self._real_roots is None:
            self._real_roots = tuple(os.path.realpath(r) for r in self.policy.allowed_roots)
        return self._real_roots

    def _local(self, ref: str, scheme: str | None, pointer: str) -> tuple[bytes, str | None]:
        if scheme == "file":
            parts = _split(ref, pointer, "media-local-refused")
            if parts.netloc not in ("", "localhost"):
                raise ValidationError.single(pointer, "media-local-refused", f"file URL with a remote host: {ref}")
            path = unquote(parts.path)
        else:
            path = ref
        roots = self._roots()
        if not roots:
            raise ValidationError.single(
                pointer,
                "media-local-refused",
                f"local file {ref!r} not read: no allowed roots (MediaPolicy.allowed_roots)",
            )
        if "\x00" in path:
            raise ValidationError.single(pointer, "media-local-refused", "local path contains a NUL character")
        real = os.path.realpath(path)
        root = next((r for r in roots if real == r or real.startswith(r.rstrip(os.sep) + os.sep)), None)
        if root is None:
            raise ValidationError.single(
                pointer, "media-local-refused", f"local file {ref!r} is outside the allowed roots"
            )
        cached = self._cache.get(real)
        if cached is not None:
            return cached
        limit = self.policy.max_bytes
        try:
            fd = _open_under(root, real)
        except OSError as exc:
            raise ValidationError.single(
                pointer, "media-local-refused", f"cannot read {ref!r}: {exc.strerror or exc}"
            ) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValidationError.single(pointer, "media-local-refused", f"{ref!r} is not a regular file")
            if st.st_nlink > 1 and not self.policy.allow_hard_links:
                # a hard link is a second name of the same file, just as real as the first: one made under
                # a root (by anyone who can write there) to a file outside it (/etc/shadow, another user's
                # key) passes every path check, and O_NOFOLLOW has no link to refuse. Its count shows it.
                raise ValidationError.single(
                    pointer,
                    "media-local-refused",
                    f"{ref!r} has {st.st_nlink} names (hard links), which may be outside the allowed roots "
                    "(MediaPolicy.allow_hard_links)",
                )
            if st.st_size > limit:
                raise ValidationError.single(
                    pointer, "media-too-large", f"{ref!r} has {st.st_size} bytes, over the limit of {limit}"
                )
            chunks = []
            total = 0
            while True:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise ValidationError.single(
                        pointer, "media-too-large", f"{ref!r} is over the limit of {limit} bytes"
                    )
        finally:
            os.close(fd)
        result = (b"".join(chunks), None)
        self._cache[real] = result
        return result

    # ---- downloads ----

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

    def _download(self, url: str, scheme: str, pointer: str) -> tuple[bytes, str | None]:
        policy = self.policy
        if not policy.allow_download:
            raise ValidationError.single(
                pointer,
                "media-download-refused",
                f"this provider needs the bytes of {url}; downloads are off (MediaPolicy.allow_download)",
            )
        cached = self._cache.get(url)
        if cached is not None:
            return cached
        import httpx

        if self._client is None:
            self._client = httpx.Client(
                transport=policy.transport,
                timeout=httpx.Timeout(policy.timeout),
                follow_redirects=False,
                trust_env=False,
                headers={"Accept-Encoding": "gzip, deflate"},
                limits=httpx.Limits(max_keepalive_connections=0),  # each hop a new, checked connection
            )
        deadline = time.monotonic() + policy.timeout
        current = url
        for _ in range(policy.max_redirects + 1):
            parts = _split(current, pointer, "media-fetch-failed")
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
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > policy.max_bytes:
                        raise ValidationError.single(
                            pointer,
                            "media-too-large",
                            f"{current} has {declared} bytes, over the limit of {policy.max_bytes}",
                        )
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
                            chunk = decoder.feed(raw, policy.max_bytes + 1 - total) if decoder else raw
                        except zlib.error as exc:
                            raise ValidationError.single(
                                pointer, "media-fetch-failed", f"{current}: bad {encoding} body: {exc}"
                            ) from None
                        total += len(chunk)
                        if total > policy.max_bytes:
                            raise ValidationError.single(
                                pointer, "media-too-large", f"{current} is over the limit of {policy.max_bytes} bytes"
                            )
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
                    result = (b"".join(chunks), response.headers.get("content-type"))
                    self._cache[url] = result
                    return result
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
        if not one.is_global or one.is_multicast or any(one in net for net in _NOT_GLOBAL_V6):
            shown = f"{ip} ({one})" if one is not ip else str(ip)
            raise ValidationError.single(
                pointer,
                "media-address-refused",
                f"{url} resolves to the non-public address {shown} (MediaPolicy.allow_private)",
            )


_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _open_under(root: str, real: str) -> int:
    """Open ``real`` (resolved, under ``root``) one component at a time from ``root``, following no
    symlink: a directory swapped for a symlink after the check cannot lead out of the root."""
    flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    rel = os.path.relpath(real, root)
    if rel == os.curdir or not _NOFOLLOW or os.open not in os.supports_dir_fd:
        return os.open(real, flags)
    *dirs, name = rel.split(os.sep)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in dirs:
            inner = os.open(part, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(name, flags, dir_fd=fd)
    finally:
        os.close(fd)


def _split(url: str, pointer: str, rule: str) -> SplitResult:
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


def _family(mime: str) -> str | None:
    """What kind of content a MIME type names, coarsely, for telling a download that is not what was expected
    (audio and video are one: servers label mp4, ogg and webm either way); None for a type that says nothing
    (``application/octet-stream``) or that agentmsg does not tell apart."""
    main, _, sub = mime.partition("/")
    if main in ("audio", "video"):
        return "audio/video"
    if main == "image":
        return "image"
    if main == "text" or sub in ("json", "xml", "xhtml+xml", "javascript") or sub.endswith(("+json", "+xml")):
        return "text"
    if sub in ("pdf", "x-pdf"):
        return "pdf"
    return None


def _clean_mime(value: str | None) -> str | None:
    if not value:
        return None
    mime = value.split(";", 1)[0].strip().lower()
    return mime or None


_DATA_B64 = re.compile(r";[ \t]*base64[ \t]*$", re.IGNORECASE)
_B64_SPACE = re.compile(rb"[\t\n\f\r ]+")


def data_url_mime(url: str) -> str | None:
    """The MIME type a ``data:`` URL declares, in lowercase (None when it declares none)."""
    return url[5:].partition(",")[0].split(";", 1)[0].strip().lower() or None


def _parse_data_url(url: str, pointer: str) -> tuple[str | None, str]:
    """``data:[<mime>][;...][;base64],<payload>`` (RFC 2397, read as browsers do: the MIME type and the
    ``base64`` token in any case, percent-escapes decoded to bytes, whitespace in base64 ignored)."""
    head, sep, payload = url.partition(",")
    if not sep:
        raise ValidationError.single(pointer, "media-data-url", "data: URL without a comma")
    meta = head[5:]
    b64 = _DATA_B64.search(meta)
    mime = data_url_mime(url)
    if b64:
        text = _B64_SPACE.sub(b"", unquote_to_bytes(payload))
        try:
            decoded = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError.single(pointer, "media-data-url", "data: URL with invalid base64") from None
        # the same length: nothing was unescaped or dropped (a non-ASCII character is not base64)
        return mime, payload if len(text) == len(payload) else base64.b64encode(decoded).decode("ascii")
    return mime, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")
