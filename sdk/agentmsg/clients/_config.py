"""What the sync and async clients share, without IO: their settings, and the HTTP request to send for a formatted
request, built from the provider's :class:`~agentmsg.providers.Spec` (base URL, API-key variables, how the key is
sent, the headers every request carries). The clients read every provider fact from the registry: none is named
here."""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar, overload

import attrs
import httpx

from agentmsg import Msg, providers
from agentmsg._wire.token import HEADER_NAME
from agentmsg.clients._errors import (
    CREDENTIAL_QUERY,
    ERROR_BODY_MAX,
    REDACTED,
    AuthenticationError,
    BadRequestError,
    Redactor,
    client_closed,
    credentials,
    error_for_status,
    no_response,
    not_http,
    redirected,
)
from agentmsg.clients._retry import LONGEST_WAIT, RetryPolicy
from agentmsg.errors import (
    ValidationError,
    pointer_of,
    require_count,
    require_seconds,
    short_repr,
    unknown_choice,
    wrong_type,
)
from agentmsg.providers import FormatOptions, FormattedRequest, Spec
from agentmsg.providers._request.download import MAX_PORT
from agentmsg.providers._response.think import THINK_TAG_MODES

if TYPE_CHECKING:
    from agentmsg.providers._response.parser import StreamParser

__all__ = ["DEFAULT_TIMEOUT", "URLS_KEPT", "BaseClient", "HeadersGiven", "Outgoing", "request_headers", "request_url"]

#: Seconds, for the client's own http_client: 10 to connect, 600 for the rest, as the providers' own SDKs
#: (a reasoning model's first byte, streamed or not, often comes after more than a minute: with 60 s the
#: call timed out, was retried and billed again, and failed).
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


#: URLs a client keeps parsed (:meth:`BaseClient._url`): past them, it starts again from none
URLS_KEPT: Final = 16

#: Where a URL's authority ends (after ``scheme://``)
_AUTHORITY_END = re.compile(r"[/?#]")


def shown_url(url: str) -> str:
    """A URL as the SDK shows it (a repr, an error): the password of its userinfo (``user:password@``) and the
    values of its credential query parameters (:data:`~agentmsg.clients._errors.CREDENTIAL_QUERY`, ``?key=``
    say) redacted."""
    scheme, sep, rest = url.partition("://")
    end = _AUTHORITY_END.search(rest)
    authority, after = (rest[: end.start()], rest[end.start() :]) if end else (rest, "")
    userinfo, at, host = authority.rpartition("@")
    if sep and at and ":" in userinfo:
        url = f"{scheme}://{userinfo.partition(':')[0]}:{REDACTED}@{host}{after}"
    base, sep, query = url.partition("?")
    if not sep:
        return url
    parts = []
    for part in query.split("&"):
        name, eq, _value = part.partition("=")
        parts.append(
            f"{name}={REDACTED}" if eq and urllib.parse.unquote_plus(name).lower() in CREDENTIAL_QUERY else part
        )
    return f"{base}?{'&'.join(parts)}"


@attrs.frozen
class Outgoing:
    """The HTTP request to send for a formatted request: ``POST url`` with ``headers`` and ``content``. Its repr
    shows neither the headers (the API key is one) nor a credential in the URL's query."""

    url: str = attrs.field(repr=lambda u: repr(shown_url(u)))
    headers: httpx.Headers | dict[str, str] = attrs.field(repr=lambda h: "{" + ", ".join(map(repr, h)) + "}")
    content: bytes = attrs.field(repr=lambda c: f"<{len(c)} bytes>")


def request_url(base_url: str, request: FormattedRequest, model: str | None) -> str:
    """The URL of a request: its path (``{model}`` filled in, quoted as one path segment: a ``/`` or ``..`` in the
    name cannot lead out of the path) after the base URL. A base URL with a query (an ``?api-version=`` say) keeps it
    after the path, joined with the path's own query."""
    path = str(request.path or "")
    if "{model}" in path:
        path = path.replace("{model}", urllib.parse.quote(str(request.model or model or ""), safe=""))
    if "?" not in base_url:
        return base_url + path
    base, _, base_query = base_url.partition("?")
    path, _, path_query = path.partition("?")
    return f"{base.rstrip('/')}{path}?{'&'.join(q for q in (base_query, path_query) if q)}"


def _prepared(headers: dict[str, str]) -> httpx.Headers | None:
    """``headers`` as httpx holds them (each name and value encoded), or None when httpx cannot encode one (then
    the dict is sent, and httpx refuses it as the request is built)."""
    try:
        return httpx.Headers(headers)
    except (UnicodeEncodeError, TypeError):
        return None


#: The content encodings a request accepts: those the client inflates a bounded piece at a time
ACCEPT_ENCODING: Final = "gzip, deflate"


def request_headers(
    spec: Spec, api_key: str | None, request: FormattedRequest, extra: Mapping[str, str]
) -> dict[str, str]:
    """The headers of a request: JSON content, the accept type of a stream or a whole reply, the content encodings
    the client inflates in bounded pieces (:data:`ACCEPT_ENCODING`), the spec's headers,
    the request's own, the API key as the spec sends it, then ``extra`` (the caller's ``headers=``). Each layer
    replaces a header of the one before, whatever the case of its name. Raises :class:`AuthenticationError`
    for a missing key or one no header can carry, :class:`BadRequestError` for an extra name or value no header
    can carry; neither quotes the value."""
    provider = spec.name
    if not api_key:
        raise AuthenticationError(f"no API key: pass api_key= or set {' or '.join(spec.env)}", provider=provider)
    if not (api_key.isascii() and api_key.isprintable()):
        raise AuthenticationError(
            "the API key holds a character an HTTP header cannot carry (a non-breaking space, a line"
            " break?): check api_key= or the environment variable",
            provider=provider,
        )
    if api_key != api_key.strip():
        # h11 refuses the header, and its error quotes the value: the key would be in the message.
        raise AuthenticationError(
            "the API key has leading or trailing whitespace: check api_key= or the environment variable",
            provider=provider,
        )
    h = {
        "content-type": "application/json",
        "accept": "text/event-stream" if request.stream else "application/json",
        # what the client inflates in bounded pieces (_stream.py): httpx would otherwise also ask for br and zstd
        # where their packages are installed, and decode each network read of them whole (a bomb held at once)
        "accept-encoding": ACCEPT_ENCODING,
    }
    h.update((k.lower(), v) for k, v in spec.headers.items())
    h.update((k.lower(), v) for k, v in (request.headers or {}).items())
    if spec.auth == "bearer":
        h["authorization"] = f"Bearer {api_key}"
    else:
        h[spec.auth.lower()] = api_key
    for name, value in extra.items():
        if not (isinstance(name, str) and HEADER_NAME.fullmatch(name)):
            # httpx would raise UnicodeEncodeError (a non-ASCII name), h11 refuse it as a bad value (a space, a
            # line break), or .lower() fail (no string): none said which header was wrong.
            raise BadRequestError(
                f"headers={{{name!r}: ...}}: the name is no HTTP header name (a token of ASCII letters, digits"
                " and !#$%&'*+-.^_`|~): nothing was sent",
                provider=provider,
            )
        if not (isinstance(value, str) and value.isascii() and value.isprintable() and value == value.strip()):
            # httpx would raise UnicodeEncodeError (its repr quotes the value: a key, maybe) or h11 refuse it.
            raise BadRequestError(
                f"headers={{{name!r}: ...}}: the value is no HTTP header value (non-ASCII, a control character"
                " or line break, leading or trailing whitespace): nothing was sent",
                provider=provider,
            )
        h[name.lower()] = value
    return h


_T = TypeVar("_T")

#: The ``headers=`` a client takes: what httpx takes (a mapping or a sequence of pairs, of str or of bytes)
HeadersGiven = (
    Mapping[str, str]
    | Mapping[bytes, bytes]
    | Sequence[tuple[str, str]]
    | Sequence[tuple[bytes, bytes]]
    | httpx.Headers
)

#: The ``kind`` of the ValidationError a bad client setting raises
SETTINGS = "client settings"


def retries_setting(name: str, value: object) -> int:
    """``max_retries``: a whole number, 0 (never retry) or more."""
    return require_count(value, name, 0, f"{name} is a whole number of retries, 0 or more", SETTINGS)


def backoff_setting(name: str, value: object) -> float:
    """``backoff``: finite seconds, 0 (retry at once) or more."""
    return require_seconds(
        value, name, f"{name} is finite seconds, 0 or more", infinite=False, zero=True, kind=SETTINGS
    )


def retry_after_setting(name: str, value: object) -> float:
    """``max_retry_after``: seconds, 0 (never wait as the server asks) or more; ``inf``: no cap."""
    said = f"{name} is seconds, 0 or more (inf: no cap)"
    return require_seconds(value, name, said, infinite=True, zero=True, kind=SETTINGS)


def timeout_setting(name: str, value: object) -> httpx.Timeout | None:
    """``timeout``: None (the http_client's own), finite seconds above 0, or an ``httpx.Timeout`` whose each
    timeout (connect, read, write, pool) is None (no limit, httpx's meaning) or finite seconds above 0; each at
    most :data:`~agentmsg.clients._retry.LONGEST_WAIT` (``threading.TIMEOUT_MAX``: about 292 years). (A socket
    refused a negative or nan one, and inf, with a bare ValueError or OverflowError at the call; 0 made every
    read fail at once; the sync client's socket and pool waits refused one past that longest wait, 1e10 say, with
    a bare OverflowError at the call.)"""
    if value is None:
        return None
    if isinstance(value, httpx.Timeout):
        for part in ("connect", "read", "write", "pool"):
            each = getattr(value, part)
            if each is not None:
                _timeout_seconds(each, f"{name}/{part}", f"{name}.{part} is None or finite seconds above 0")
        return value
    return httpx.Timeout(_timeout_seconds(value, name, f"{name} is None, finite seconds above 0 or an httpx.Timeout"))


#: The longest timeout, said (``threading.TIMEOUT_MAX``'s whole seconds: about 292 years; 49 days on Windows)
_LONGEST: Final = f"{int(LONGEST_WAIT)} (threading.TIMEOUT_MAX)"


def _timeout_seconds(value: object, name: str, said: str) -> float:
    """A timeout's seconds: finite, above 0 (:func:`~agentmsg.errors.require_seconds`) and at most
    :data:`~agentmsg.clients._retry.LONGEST_WAIT` (rule ``maximum``), at ``/<name>``."""
    seconds = require_seconds(value, name, said, infinite=False, kind=SETTINGS)
    if seconds > LONGEST_WAIT:
        said = f"{said}, at most {_LONGEST}, not {short_repr(value)}"
        raise ValidationError.single(f"/{name}", "maximum", said, SETTINGS)
    return seconds


def text_setting(name: str, value: object) -> str | None:
    """``model``, ``api_key``, ``name``: a string or None. (A key of bytes or an int failed at the call with a bare
    AttributeError; a name of 1 was taken and put in every reply.) The error says the type, never the value: the
    API key may be it."""
    if value is not None and not isinstance(value, str):
        raise wrong_type(f"/{name}", f"{name} is a string or None", value, SETTINGS)
    return value


def headers_setting(value: object) -> dict[str, str]:
    """``headers``: None, a mapping of header names to values or a sequence of (name, value) pairs, each a string or
    bytes, as httpx takes them (bytes read as Latin-1, byte for byte, as httpx sends them); the names and values
    themselves are checked with each request (:func:`request_headers`). Anything else raised a bare TypeError or
    ValueError (a text, a number) or failed at the call. A name given twice (names compared without case) is
    refused, rule ``duplicate``: the last value alone was sent."""
    said = "headers is a mapping of header names to values (str or bytes) or a sequence of (name, value) pairs"
    if value is None:
        return {}
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = list(value)
    else:
        raise wrong_type("/headers", said, value, SETTINGS)
    found: dict[str, str] = {}
    names: dict[str, str] = {}  # each name given, in lower case: the name as given first
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise wrong_type(f"/headers/{index}", f"{said}; this item is no (name, value) pair", pair, SETTINGS)
        name, each = pair
        if not isinstance(name, (str, bytes)):
            raise wrong_type("/headers", f"{said}; a name is no str or bytes", name, SETTINGS)
        name = name.decode("latin-1") if isinstance(name, bytes) else name
        if not isinstance(each, (str, bytes)):
            raise wrong_type(pointer_of(["headers", name]), f"{said}; this value is no str or bytes", each, SETTINGS)
        first = names.get(name.lower())
        if first is not None:
            # (one value was sent, the last, the others dropped unsaid: httpx sends each of repeated pairs)
            raise ValidationError.single(
                pointer_of(["headers", name]),
                "duplicate",
                f"headers= names {name!r:.80} twice (as {first!r:.80} before; names are compared without case): give"
                " it once (a list of values joined with ', ')",
                SETTINGS,
            )
        names[name.lower()] = name
        found[name] = each.decode("latin-1") if isinstance(each, bytes) else each
    return found


class Setting(Generic[_T]):
    """A client setting: an attribute checked whenever it is set, at construction and after (each client's
    settings may change between calls). A bad value raises :class:`~agentmsg.ValidationError` (kind
    :data:`SETTINGS`) whose pointer names the setting (``/backoff``) and whose rule says what it broke:
    ``type`` (no number, a bool, nan), ``minimum`` / ``exclusiveMinimum`` (too small), ``maximum`` (inf where
    not allowed)."""

    def __init__(self, check: Callable[[str, object], _T]) -> None:
        self.check = check
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> _T: ...
    def __get__(self, obj: object, owner: type) -> Setting[_T] | _T:
        if obj is None:
            return self
        value: _T = obj.__dict__[self.name]
        return value

    def __set__(self, obj: object, value: object) -> None:
        obj.__dict__[self.name] = self.check(self.name, value)


#: The http clients whose ``build_request`` is httpx's own: :meth:`BaseClient._built` makes their requests
_PLAIN: Final = (httpx.Client, httpx.AsyncClient)
_Http = TypeVar("_Http", httpx.Client, httpx.AsyncClient)


class _Cookies(httpx.Cookies):
    """The cookie jar of a client's own http client (:func:`own_http`): httpx's, the responses that set no cookie
    passed by. httpx's client gives each response to ``extract_cookies``, which wraps it and its request for
    ``http.cookiejar`` (an ``email.message.Message`` of every header, a ``urllib.request.Request`` of the URL) to
    find in most no ``Set-Cookie`` nor ``Set-Cookie2`` header, the only two it reads: about 230,000 instructions a
    request (5% of a recorded streamed reply's). A response with one (any header whose name begins ``Set-Cookie``)
    goes to httpx's, as before."""

    def extract_cookies(self, response: httpx.Response) -> None:
        for key, _ in response.headers.raw:
            if key[:10].lower() == b"set-cookie":
                super().extract_cookies(response)
                return


def own_http(cls: type[_Http], timeout: httpx.Timeout) -> _Http:
    """A client's own http client (``httpx.Client`` or ``httpx.AsyncClient``), with its ``timeout``, its cookies in a
    :class:`_Cookies` (set where httpx keeps them: the ``cookies`` setter copies them into its own class)."""
    http = cls(timeout=timeout)
    if type(getattr(http, "_cookies", None)) is httpx.Cookies:  # (where httpx keeps them; else its own jar, as is)
        http._cookies = _Cookies()
    return http


#: The headers httpx puts in a request itself (from its URL and content): a request given one of them is built by
#: httpx each time (:meth:`BaseClient._built`)
_AUTO: Final = frozenset({b"host", b"content-length", b"transfer-encoding"})


#: What :meth:`BaseClient._built` keeps for a URL it sent to lately: the http client, the URL (parsed), the request's
#: headers, the http client's (a copy of its list) and the headers of the request httpx made of them (None: a
#: request made from them differed from httpx's)
_Template = tuple[Any, httpx.URL, Any, list[tuple[bytes, bytes]], httpx.Headers | None]
_NO_TEMPLATES: Final[dict[str, _Template]] = {}


def _keep(owner: dict[str, Any], name: str, url: str, value: Any) -> None:
    """Keep ``value`` for ``url`` in ``owner[name]``, a dict of what the client made for the URLs it sent to lately
    (:data:`URLS_KEPT`): once full, a new dict, not cleared in place (another thread may be reading it)."""
    kept: dict[str, Any] = owner.get(name) or {}
    if len(kept) >= URLS_KEPT:
        kept = {}
    kept[url] = value
    owner[name] = kept


def _extensions(trace: Any) -> dict[str, Any] | None:
    return None if trace is None else {"trace": trace}


def _from_template(
    http: httpx.Client | httpx.AsyncClient,
    url: httpx.URL,
    template: httpx.Headers,
    content: bytes,
    timeout: Any,
    trace: Any,
) -> httpx.Request:
    """A request of ``content`` to ``url`` with the headers of ``template`` (its ``Content-Length`` put in) and the
    extensions ``build_request`` gives it (``trace``, then the timeout: ``http``'s own for ``USE_CLIENT_DEFAULT``)."""
    limit = (http.timeout if timeout is httpx.USE_CLIENT_DEFAULT else timeout).as_dict()  # (build_request's copy's)
    extensions = {"timeout": limit} if trace is None else {"trace": trace, "timeout": limit}
    request = httpx.Request("POST", url, headers=template, stream=httpx.ByteStream(content), extensions=extensions)
    request.headers["Content-Length"] = str(len(content))
    request.read()
    return request


class BaseClient:
    """What :class:`~agentmsg.clients.Client` and :class:`~agentmsg.clients.AsyncClient` share: the settings (each
    an attribute, which may be changed between calls), the formatter, the stream parser, the request to send and
    the decisions after a failed attempt (the retry policy, the error to raise)."""

    #: the provider of a class made for one (the deprecated ``OpenAIClient``: ``openai``), else None
    _pinned_provider: ClassVar[str | None] = None

    # The numeric settings, checked whenever set (:class:`Setting`):
    #: retries after the first attempt: a whole number, 0 or more
    max_retries = Setting(retries_setting)
    #: the first retry's backoff, in seconds: finite, 0 or more (doubled at each attempt up to 8 s)
    backoff = Setting(backoff_setting)
    #: the longest wait a server's Retry-After is honoured for, in seconds: 0 or more, ``inf`` for no cap
    max_retry_after = Setting(retry_after_setting)
    #: None: the http_client's own timeout (DEFAULT_TIMEOUT for the client's own http_client); else an
    #: httpx.Timeout (seconds given are made one), each of its timeouts None (no limit) or finite and above 0
    timeout = Setting(timeout_setting)
    # The settings of text, checked whenever set:
    #: the model of every call that names none: a string, or None (the provider's default, where it has one)
    model = Setting(text_setting)
    #: the API key: a string, or None (then read from the provider's environment variables)
    api_key = Setting(text_setting)
    #: the name given to the replies' messages: a string, or None
    name = Setting(text_setting)

    def __init__(
        self,
        provider: str | None = None,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 60.0,
        name: str | None = None,
        headers: HeadersGiven | None = None,
        format_options: FormatOptions | Mapping[str, Any] | None = None,
        think_tags: bool | str = False,
    ) -> None:
        pinned = type(self)._pinned_provider
        if provider is None:
            provider = pinned
        elif pinned is not None and provider != pinned:
            said = f"{type(self).__name__} is for {pinned}, got provider {provider!r:.60}"
            raise ValidationError.single("/provider", "enum", said, SETTINGS)
        if provider is None:
            raise ValidationError.single(
                "/provider", "required", f"a provider is required: one of {', '.join(providers.NAMES)}", SETTINGS
            )
        if not isinstance(provider, str) or provider not in providers.NAMES:
            raise unknown_choice(provider, "provider", providers.NAMES, "provider", SETTINGS)
        self.provider = provider
        self.entry = providers.get(provider)  # the formatter and parsers, for this provider's variant
        self.spec = self.entry.spec
        self.model = model
        self.api_key = (
            api_key if api_key is not None else next((os.environ[e] for e in self.spec.env if os.environ.get(e)), None)
        )
        if base_url is not None and not isinstance(base_url, str):
            raise wrong_type("/base_url", "base_url is an http:// or https:// URL (a string)", base_url, SETTINGS)
        self.base_url = (base_url or self.spec.base_url).rstrip("/")
        if self.base_url != self.base_url.strip():
            # (a pasted URL's space: one at the end was taken, percent-encoded, and every call POSTed to /v1%20/...;
            # one at the start was refused as no http URL; a tab or a line break in httpx's words)
            said = f"base_url {shown_url(str(base_url))!r} has whitespace at its start or end: remove it"
            raise ValidationError.single("/base_url", "format", said, SETTINGS)
        try:
            url = httpx.URL(self.base_url)
        except httpx.InvalidURL as exc:
            shown = Redactor(credentials(None, {}, self.base_url))
            said = shown(f"base_url {shown_url(str(base_url))!r} is not a URL: {exc}")
            raise ValidationError.single("/base_url", "format", said, SETTINGS) from None
        if url.scheme not in ("http", "https") or not url.host:
            said = f"base_url {shown_url(str(base_url))!r} is not an http:// or https:// URL"
            raise ValidationError.single("/base_url", "format", said, SETTINGS)
        if url.port is not None and url.port > MAX_PORT:
            # httpx takes any number and connects to it modulo 65536: another port, another server maybe, got the
            # request and its key (the async client, and one past a C long, raised a bare error at the call)
            said = f"base_url {shown_url(str(base_url))!r} has a port past {MAX_PORT}"
            raise ValidationError.single("/base_url", "format", said, SETTINGS)
        if "#" in self.base_url:
            # the request's path is put after the base URL: it went into the fragment, which is never sent (every
            # call POSTed to the base URL itself; after a query, the path's own query lost in it)
            said = f"base_url {shown_url(str(base_url))!r} has a fragment (#...), where the request's path would go"
            raise ValidationError.single("/base_url", "format", said, SETTINGS)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.name = name
        self.extra_headers = headers_setting(headers)
        self.format_options = format_options
        # (1 or 0.0, equal to True or False, was taken as them)
        if not (isinstance(think_tags, bool) or (type(think_tags) is str and think_tags in THINK_TAG_MODES)):
            said = f"think_tags={think_tags!r:.60}: expected False, True or 'open'"
            raise ValidationError.single("/think_tags", "enum", said, SETTINGS)
        #: ``<think>`` text in the replies read as reasoning (docs/streams.md): False, True or "open"
        self.think_tags = think_tags

    def __repr__(self) -> str:
        """The provider, model and base URL: never the API key, nor a credential in the URL or ``headers=``."""
        return f"{type(self).__name__}({self.provider!r}, model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    def _redactor(self) -> Redactor:
        """The redaction of the credentials the client sends now (its ``api_key``, a credential ``headers=``
        value, a ``?key=`` of its ``base_url``): every error it raises and every error or problem its replies
        say goes through it (settings may change between calls: made again when they did)."""
        state = (self.api_key, tuple(self.extra_headers.items()), self.base_url)
        cached = self.__dict__.get("_redaction")
        if cached is None or cached[0] != state:
            cached = (state, Redactor(credentials(self.api_key, self.extra_headers, self.base_url)))
            self.__dict__["_redaction"] = cached
        return cached[1]

    def _scrub(self, exc: BaseException) -> BaseException:
        """``exc`` (raised by a call) with the client's credentials redacted, in place."""
        return self._redactor().error(exc)

    #: the HTTP client the calls go through (the shells' own, or the ``http_client`` given)
    http: httpx.Client | httpx.AsyncClient
    #: whether ``close()`` / ``aclose()`` was called
    _client_closed: bool = False

    def _closed_by(self) -> bool | None:
        """Whether the client is closed (True: its ``close()`` / ``aclose()``) or only its HTTP client (False: the
        ``http_client`` given, its caller closed it); None while both are open."""
        if self._client_closed:
            return True
        return False if self.http.is_closed else None

    def _refuse_if_closed(self) -> None:
        """Raise :class:`ClientClosedError` when the client or its HTTP client is closed: nothing is sent."""
        closed = self._closed_by()
        if closed is not None:
            raise client_closed(self.provider, closed)

    def format(
        self,
        messages: Sequence[Msg],
        *,
        stream: bool,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> FormattedRequest:
        """The formatter's request (``.body``, ``.diagnostics``, ``.path``, ...) for these messages."""
        kwargs: dict[str, Any] = dict(params)
        if self.format_options is not None:
            kwargs.setdefault("options", self.format_options)
        return self.entry.format_request(
            messages,
            model=kwargs.pop("model", self.model),
            tools=tools,
            tool_choice=tool_choice,
            stream=stream,
            **kwargs,
        )

    def parser(self, request: FormattedRequest, started_at: float) -> StreamParser:
        """The provider's stream parser for a request, with the options the request asks for (the registry's
        ``parser_options``: incremental or cumulative output, say)."""
        opts = self._options(started_at)
        opts.update(self.entry.parser_options(request))
        return self.entry.stream_parser(**opts)

    def _options(self, started_at: float) -> dict[str, Any]:
        opts: dict[str, Any] = {"started_at": started_at}
        redactor = self._redactor()
        if redactor:
            opts["redact"] = redactor
        if self.name is not None:
            opts["name"] = self.name
        if self.think_tags:
            opts["think_tags"] = self.think_tags
        return opts

    @property
    def _timeout(self) -> Any:
        return self.timeout if self.timeout is not None else httpx.USE_CLIENT_DEFAULT

    def _outgoing(self, request: FormattedRequest, copy: bool = True) -> Outgoing:
        """The HTTP request to send (raises before anything is sent when the key or a header cannot be). ``copy``
        False: its headers are the ones kept (:meth:`_headers`), for httpx to copy (:meth:`_built`)."""
        url = request_url(self.base_url, request, self.model)
        return Outgoing(url, self._headers(request, copy), request.body_bytes())

    def _built(self, http: httpx.Client | httpx.AsyncClient, out: Outgoing, trace: Any = None) -> httpx.Request:
        """The request ``http.build_request("POST", ...)`` makes of ``out`` (``trace``: httpcore's trace extension, or
        none), with the client's ``timeout``. httpx's own client (not a subclass), without cookies or params, and
        headers httpx can encode: the request is made from the headers the last one to its URL had (the http client's
        merged with the request's, ``Host`` before and ``Content-Length`` after, as httpx orders them), its length put
        in. ``build_request`` merged and normalized them again for every request (the client's headers copied, each of
        the request's looked up and replaced, all of them encoded again: about 8 us of a streamed reply's request). They
        are kept for each URL sent to lately (:data:`URLS_KEPT`, as :meth:`_url` keeps them: a client calling a few
        Gemini models, each in the path, had one kept, and each model's request found the other's, built it with httpx
        and then again from its headers), for the http client, its headers, the request's (by identity: the ones
        :meth:`_headers` keeps, ``out`` made with ``copy=False``) and the URL (by identity: :meth:`_url`'s), once a
        request made so has been found equal to httpx's own (its headers, URL, content and extensions) and neither gave
        a header httpx puts in itself (``Host``, ``Content-Length``, ``Transfer-Encoding``); otherwise (or any other
        client) ``build_request`` makes each."""
        url = self._url(out.url)
        timeout = self._timeout
        headers, content = out.headers, out.content
        pool: list[tuple[bytes, bytes]] | None = None  # the http client's headers, when the request may be made so
        if type(http) in _PLAIN and type(headers) is httpx.Headers and content and not http.params and not http.cookies:
            pool = http.headers.raw
            kept = self.__dict__.get("_templates", _NO_TEMPLATES).get(out.url)
            if kept is not None and kept[0] is http and kept[1] is url and kept[2] is headers and kept[3] == pool:
                if kept[4] is not None:
                    return _from_template(http, url, kept[4], content, timeout, trace)
                pool = None  # (a request made so differed from httpx's: httpx makes each)
        built: httpx.Request = http.build_request(
            "POST", url, headers=headers, content=content, timeout=timeout, extensions=_extensions(trace)
        )
        if pool is not None:
            made = _from_template(http, url, built.headers, content, timeout, trace)
            same = (
                isinstance(headers, httpx.Headers)
                and _AUTO.isdisjoint(
                    k.lower() for part in (pool, headers.raw) for k, _ in part
                )  # (none given: httpx's)
                and made.method == built.method
                and made.url == built.url
                and made.headers.raw == built.headers.raw
                and made.content == built.content
                and made.extensions == built.extensions
            )
            template = (http, url, headers, pool, httpx.Headers(built.headers) if same else None)
            _keep(self.__dict__, "_templates", out.url, template)
        return built

    def _url(self, url: str) -> httpx.URL:
        """``url`` (an :class:`Outgoing`'s) as httpx parses it, kept for the URLs sent lately (:data:`URLS_KEPT`;
        a client calling a few models, each in the path for Gemini): the request is built from the parsed URL,
        which httpx takes as it is, where from the string it parsed it again for every request (its host, port
        and path checked, each character looked at: about 100,000 instructions, a twentieth of a recorded
        reply). The same string is the same URL; another one is parsed (and refused, ``httpx.InvalidURL``,
        where building the request refused it)."""
        kept: dict[str, httpx.URL] = self.__dict__.get("_parsed_urls") or {}
        parsed = kept.get(url)
        if parsed is None:
            parsed = httpx.URL(url)
            _keep(self.__dict__, "_parsed_urls", url, parsed)
        return parsed

    def _headers(self, request: FormattedRequest, copy: bool = True) -> httpx.Headers | dict[str, str]:
        """The headers of a request (:func:`request_headers`, checked against ``base_url``). They are the same for
        every request of the client's settings now (the spec, ``api_key``, ``base_url``, ``headers=``), of its
        kind (streamed or not) and of the same headers of its own (a formatter's: Anthropic's version, the same
        for every request): made and checked once for them (about 8 us a request), each request given a copy;
        settings or a request's own headers that changed make them again. The copy is an ``httpx.Headers`` made
        from the one kept (a copy of its list), which httpx takes as it is: from a dict it encodes and lowers each
        name and value again, for every request (about 3 us of a streamed reply's request); ``copy`` False: the one
        kept itself, for a caller that only gives it to httpx, which copies it (:meth:`_built`). Headers httpx
        cannot encode are given as the dict, for httpx to refuse when the request is built, as it did."""
        stream = bool(request.stream)
        own = request.headers
        # (the spec's headers too: a frozen Spec holds a dict, which may change in place and still compare equal)
        state = (
            self.spec,
            tuple(self.spec.headers.items()),
            self.api_key,
            self.base_url,
            tuple(self.extra_headers.items()),
            tuple(own.items()) if own else (),
        )
        made = self.__dict__.setdefault("_made_headers", [None, None])
        cached = made[stream]
        if cached is None or cached[0] != state:
            checked = self._checked_headers(request)
            cached = made[stream] = (state, checked, _prepared(checked))
        prepared = cached[2]
        if prepared is None:
            return dict(cached[1])
        return httpx.Headers(prepared) if copy else prepared

    def _checked_headers(self, request: FormattedRequest) -> dict[str, str]:
        headers = request_headers(self.spec, self.api_key, request, self.extra_headers)
        if "authorization" in headers and "@" in urllib.parse.urlsplit(self.base_url).netloc:
            # httpx makes a URL's user:password an Authorization: Basic header, in place of the one sent here
            raise BadRequestError(
                "base_url has a user:password@, which httpx sends as Authorization: Basic in place of the"
                " Authorization header the API key (or headers=) goes in: nothing was sent (a proxy's"
                " credentials go in the http_client's proxy=)",
                provider=self.provider,
            )
        return headers

    def _retry_policy(self) -> RetryPolicy:
        """The retry policy of the client's settings now (``max_retries``, ``backoff``, ``max_retry_after``): made
        once for them (a frozen RetryPolicy, about 3 us to make), again when they changed."""
        state = (self.max_retries, self.backoff, self.max_retry_after)
        cached = self.__dict__.get("_policy")
        if cached is None or cached[0] != state:
            cached = self.__dict__["_policy"] = (
                state,
                RetryPolicy(max_retries=state[0], backoff=state[1], max_retry_after=state[2]),
            )
        return cached[1]

    def _failed(self, policy: RetryPolicy, attempt: int, exc: httpx.HTTPError) -> float:
        """Seconds to wait before retrying a request that got no response (connection failure or timeout);
        raises when no retry is left, and at once for a response that is no valid HTTP (:func:`not_http`). (A
        response a caller's event hook refused: :meth:`_hook_refused`.)"""
        if isinstance(exc, httpx.HTTPStatusError):
            return self._hook_refused(policy, attempt, exc)
        broken = not_http(self.provider, exc)  # (the server's protocol error: never retried)
        if broken is not None:
            raise broken from exc
        delay = policy.after_failure(attempt)
        if delay is None:
            raise no_response(self.provider, exc) from exc
        return delay

    def _hook_refused(self, policy: RetryPolicy, attempt: int, exc: httpx.HTTPStatusError) -> float:
        """:meth:`_refused` for a response a caller's ``http_client`` event hook refused (``raise_for_status()``):
        judged by its status as if no hook had run, not retried as a failed connection. httpx closed the response:
        its body is what the hook read of it (``response.read()`` first), else none."""
        response = exc.response
        try:
            body, broke = response.content[:ERROR_BODY_MAX], None
        except httpx.ResponseNotRead:
            body, broke = b"", "the http_client's response hook closed it unread"
        return self._refused(policy, attempt, response, body, broke)

    def _refused(
        self, policy: RetryPolicy, attempt: int, response: httpx.Response, body: bytes, broke: str | None = None
    ) -> float:
        """Seconds to wait before retrying a request answered with an error status worth retrying; raises the
        provider's error otherwise (a redirect, never followed, included). ``broke``: why the error body's read
        failed (``body`` is what arrived before)."""
        status, headers = response.status_code, response.headers
        if status < 400:
            raise redirected(self.provider, status, body, headers)
        delay = policy.after_response(attempt, status, headers)
        if delay is None:
            raise error_for_status(self.provider, status, body, headers, broke, response.reason_phrase)
        return delay
