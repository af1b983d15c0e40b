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
  redirect limit and a size cap, over httpx;
* what one session (one format call) reads and downloads is capped as a whole (``max_total_bytes``,
  every block counted), a file or download refused as soon as it would cross it.

Every refusal is a :class:`~agentmsg.ValidationError` whose pointer is the block's. This module holds the
policy and resolves a source; local files are read by ``_files``, URLs downloaded by ``_download``.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any, Final
from urllib.parse import unquote_to_bytes, urlsplit

import attrs

from agentmsg._wire.token import TOKEN
from agentmsg.errors import ValidationError, require_count, require_seconds, wrong_type
from agentmsg.providers._request.download import Downloader, Fetched
from agentmsg.providers._request.files import LocalFiles

__all__ = ["Media", "MediaPolicy", "MediaSession", "guess_mime", "inline_base64"]

DEFAULT_MAX_BYTES: Final = 20 * 1024 * 1024
#: the default of ``max_total_bytes``, a multiple of ``max_bytes``: 80 MiB for the default 20 MiB, which is
#: 107 MiB in base64, just above the largest inline request a provider documents (Gemini: 100 MB of base64
#: inline data; Anthropic's Messages API takes 32 MB a request), so no request that a provider would take
#: is refused, and what one formatter call reads or fetches stays bounded
TOTAL_PER_FILE: Final = 4


def _roots(value: Any) -> tuple[str, ...]:
    """The roots as given, a relative one made absolute now, against the current directory when the policy is
    made: resolved at each read, a later ``chdir`` (anyone's, in the process) moved the root with it."""
    if value is None:
        return ()
    single = isinstance(value, (str, bytes, os.PathLike))
    if single:
        value = (value,)
    elif not isinstance(value, Iterable):
        raise wrong_type("/allowed_roots", "allowed_roots is a path or an iterable of paths", value)
    roots = []
    for i, one in enumerate(value):
        at = "/allowed_roots" if single else f"/allowed_roots/{i}"
        if not isinstance(one, (str, bytes, os.PathLike)):
            raise wrong_type(at, "a root is a path (str, bytes or os.PathLike)", one)
        if isinstance(one, PurePath) and not one.parts:
            # Path("") is Path("."), the same object: an empty path left unset (Path(os.environ.get(...,
            # ""))) cannot be told from the current directory, so neither is taken
            raise ValidationError.single(
                at,
                "empty-root",
                f"{one!r} is no root: it may be an empty path (Path('') is Path('.')); "
                "give '.' or Path.cwd() for the current directory",
            )
        root = os.fsdecode(one)
        if not root:  # ("" would be the current directory: a root left unset, most likely)
            raise ValidationError.single(
                at, "empty-root", "an empty path is no root (give '.' for the current directory)"
            )
        if "\x00" in root:  # (no path holds one: the first read raised a bare ValueError)
            raise ValidationError.single(at, "type", "a root holds a NUL character, which no path holds")
        roots.append(root if os.path.isabs(root) else os.path.abspath(root))
    return tuple(roots)


def _count(instance: Any, attribute: attrs.Attribute[int], value: object) -> None:
    """A size or count of the policy is an int, 0 or more (a bool is none): else a ValidationError at ``/<name>``
    (rule ``type``, a TypeError too, or ``minimum``). -1 or "20" was taken, and every file then refused as too
    large, or the size compared with a text (a bare TypeError at the first media block)."""
    require_count(value, attribute.name, 0, f"{attribute.name} is a number of {_UNIT[attribute.name]} (an int >= 0)")


_UNIT: Final = {"max_bytes": "bytes", "max_total_bytes": "bytes", "max_redirects": "redirects"}


def _flag(instance: Any, attribute: attrs.Attribute[bool], value: object) -> None:
    """A switch of the policy is True or False: ``allow_download="no"`` (a true value) turned downloads on."""
    if not isinstance(value, bool):
        raise wrong_type(f"/{attribute.name}", f"{attribute.name} is True or False", value)


def _seconds(instance: Any, attribute: attrs.Attribute[float], value: object) -> None:
    require_seconds(value, attribute.name, f"{attribute.name} is finite seconds above 0", infinite=False)


def _total(policy: MediaPolicy) -> int:
    """``max_total_bytes``'s default: :data:`TOTAL_PER_FILE` x ``max_bytes`` (a ``max_bytes`` that is no count is
    left to its own check, which refuses it)."""
    given = policy.max_bytes
    return TOTAL_PER_FILE * given if type(given) is int else 0


@attrs.frozen(kw_only=True)
class MediaPolicy:
    """What a formatter may read or fetch to get media bytes. The default reads and fetches nothing.

    ``allowed_roots``: directories under which local files may be read; a relative one is made absolute
    when the policy is made (a later change of directory does not move it). An empty path is refused, and
    ``Path("")``, which is ``Path(".")``: give ``"."`` or ``Path.cwd()`` for the current directory (a
    ValidationError, rule ``empty-root``, pointer ``/allowed_roots/N``, or ``/allowed_roots`` for a single path
    given). Roots that are no path (``allowed_roots=1``) raise a ValidationError (rule ``type``).
    ``allow_hard_links``: read a file that has other names (hard links), which may be outside the roots.
    ``max_bytes``: size limit of one file or download (default 20 MiB).
    ``max_total_bytes``: size limit of the media one request reads and downloads, every block counted (a file
    or URL in two blocks counts twice: it is sent twice); default 4 x ``max_bytes``.
    ``allow_download``: fetch http(s) URLs for providers that take only inline bytes.
    ``allow_private``: let downloads reach private, loopback and link-local addresses.
    ``timeout``: seconds per network operation, and for a whole download.
    ``max_redirects``: redirects followed per download.
    A size or count that is no int >= 0 (a bool is none), a ``timeout`` that is no finite number of seconds above 0,
    or a switch (``allow_*``) that is not True or False raises a ValidationError naming the field (``/max_bytes``),
    rule ``type`` (a TypeError too), ``minimum``, ``exclusiveMinimum`` or ``maximum``.
    ``transport``: an ``httpx.BaseTransport`` to use instead of the network (tests, proxies).
    """

    allowed_roots: tuple[str, ...] = attrs.field(default=(), converter=_roots)
    allow_hard_links: bool = attrs.field(default=False, validator=_flag)
    max_bytes: int = attrs.field(default=DEFAULT_MAX_BYTES, validator=_count)
    max_total_bytes: int = attrs.field(default=attrs.Factory(_total, takes_self=True), validator=_count)
    allow_download: bool = attrs.field(default=False, validator=_flag)
    allow_private: bool = attrs.field(default=False, validator=_flag)
    timeout: float = attrs.field(default=10.0, validator=_seconds)
    max_redirects: int = attrs.field(default=3, validator=_count)
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
    """Resolves media for one format call under a policy: local files (:class:`LocalFiles`) and downloads
    (:class:`Downloader`), each read once; ``close()`` closes the download client."""

    def __init__(self, policy: MediaPolicy) -> None:
        self.policy = policy
        self._files = LocalFiles(policy)
        self._downloader = Downloader(policy)
        self._downloads: Fetched[tuple[bytes, str | None, int]] = Fetched(policy)
        #: the bytes each block's media counted against ``max_total_bytes`` (by the block's pointer: a block
        #: resolved twice counts once), and their sum
        self._counted: dict[str, int] = {}
        self._total = 0

    def close(self) -> None:
        self._downloader.close()

    def resolve(
        self,
        source: Any,
        pointer: str,
        *,
        inline: bool,
        schemes: tuple[str, ...] = ("http", "https"),
        kind: str | None = None,
    ) -> Media:
        """Resolve a block's source. With ``inline`` the bytes are needed (read or downloaded under
        the policy); otherwise URLs whose scheme is in ``schemes`` pass through as they are. ``kind``, the
        block's (image, audio, video), is what a download must be when no MIME type says what to expect."""
        if source.type == "base64":
            return Media(source.media_type.lower(), data=source.data)  # (a MIME type's case means nothing)
        url: str = source.url
        declared = source.mime_type.lower() if source.mime_type else None
        scheme = scheme_of(url)
        if scheme == "data":
            mime, data = _parse_data_url(url, pointer)
            return Media(declared or mime, data=data)
        if scheme is None or scheme == "file":
            raw = self._files.read(url, scheme, pointer, self._room(pointer))
            self._count(pointer, len(raw))
            return Media(declared or guess_mime(url), data=base64.b64encode(raw).decode("ascii"))
        if not inline and scheme in schemes:
            return Media(declared or guess_mime(url), url=url)
        if not inline:
            raise ValidationError.single(
                pointer, "media-scheme-refused", f"{scheme}: URLs cannot be sent to this provider ({url})"
            )
        raw, content_type, size = self._download(url, pointer)
        self._count(pointer, size)
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
        wanted = _KIND_FAMILY.get(kind or "")
        if not expected and sent and wanted and _family(sent) not in (None, wanted):
            # no type to expect (Gemini downloads what has none, to name one): the block's kind is what it
            # must be, or that HTML page went as inline text/html in the place of an image
            raise ValidationError.single(
                pointer,
                "media-fetch-failed",
                f"{url} sent {sent} where {'an' if kind == 'image' else 'a'} {kind} was expected "
                f"(the block's type): not sent",
            )
        mime = expected or sent
        return Media(mime, data=base64.b64encode(raw).decode("ascii"))

    def _room(self, pointer: str) -> int:
        """What is left of ``max_total_bytes`` for the block at ``pointer`` (all of its own count if it was
        counted before)."""
        return self.policy.max_total_bytes - self._total + self._counted.get(pointer, 0)

    def _count(self, pointer: str, size: int) -> None:
        self._total += size - self._counted.get(pointer, 0)
        self._counted[pointer] = size

    def _download(self, url: str, pointer: str) -> tuple[bytes, str | None, int]:
        """The body of ``url``, its Content-Type and the bytes it counts (the larger of what came over the
        network and what it decoded to), downloaded once a session; within what is left of the total."""
        if not self.policy.allow_download:
            raise ValidationError.single(
                pointer,
                "media-download-refused",
                f"this provider needs the bytes of {url}; downloads are off (MediaPolicy.allow_download)",
            )
        room = self._room(pointer)
        got = self._downloads.get(url, pointer, url, room)
        if got is None:
            got = self._downloader.fetch(url, pointer, room)
            self._downloads.keep(url, got, got[2])
        return got


_KIND_FAMILY: Final = {"image": "image", "audio": "audio/video", "video": "audio/video"}


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


# a MIME type's essence, type/subtype, each an RFC 9110 token
_MIME_ESSENCE = re.compile(f"{TOKEN}/{TOKEN}")


def _clean_mime(value: str | None) -> str | None:
    """A Content-Type's MIME type as browsers read it (Fetch, extract a MIME type): of its comma-separated values
    (httpx joins repeated headers so), the last that is a ``type/subtype`` (not ``*/*``), in lowercase without parameters; None
    when none is. What the server wrote is not sent on as it is: it goes in the request as the media's type."""
    if not value:
        return None
    found = None
    for one in value.split(","):
        mime = one.split(";", 1)[0].strip(" \t").lower()
        if _MIME_ESSENCE.fullmatch(mime) and mime != "*/*":
            found = mime
    return found


_DATA_B64 = re.compile(r";[ \t]*base64[ \t]*$", re.IGNORECASE)
_B64_SPACE = re.compile(rb"[\t\n\f\r ]+")
# Base64 as RFC 4648 writes it: whole quanta, the last padded with one or two '=' (base64.b64decode with
# validate=True also reads "QUJD===" and "QUJD=", padding after a whole quantum, as "ABC"; Python 3.10 has no
# strict_mode to refuse it)
_B64_STRICT = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


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
            if not _B64_STRICT.fullmatch(text):
                raise ValueError(text)
            decoded = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError.single(pointer, "media-data-url", "data: URL with invalid base64") from None
        # the same length: nothing was unescaped or dropped (a non-ASCII character is not base64)
        return mime, payload if len(text) == len(payload) else base64.b64encode(decoded).decode("ascii")
    return mime, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")


def inline_base64(source: Any) -> str | None:
    """The base64 text of an inline source, read without a policy or a session: a base64 source's data, or the
    payload of a ``data:`` URL as :meth:`MediaSession.resolve` gives it (the formatters send a data: URL inline, as
    base64); None for any other URL (never read nor fetched) and for a data: URL that does not parse (which resolve
    refuses). What a rule that looks at the bytes before they are sent reads (the count, a formatter's
    ``media_placeholder``)."""
    if getattr(source, "type", None) == "base64":
        return source.data  # type: ignore[no-any-return]
    url = getattr(source, "url", None)
    if isinstance(url, str) and scheme_of(url) == "data":
        try:
            return _parse_data_url(url, "")[1]
        except ValidationError:
            return None
    return None
