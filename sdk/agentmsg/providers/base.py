"""The provider contract: what a provider module gives, and what is written once for all of them.

A provider is one module of this package (``openai.py``, ``anthropic.py``, ...; ``docs/adding-a-provider.md``
walks through one), written in one order:

1. its **spec**: a :class:`Spec` per registry name (who it is, how to reach it: base URL, key variables,
   auth and version headers, default model);
2. its **request** side: ``format_request(messages, ...)``, which builds the body through
   :func:`~agentmsg.providers._request.context.run_format` (the skeleton every provider shares);
3. its **payload reader**: ``Reader``, a :class:`~agentmsg.providers._response.reader.PayloadReader` that reads
   a whole reply (``reply``) and each payload of a stream (``chunk``) by driving the one
   :class:`~agentmsg.providers._response.builder.StreamBuilder`;
4. its :class:`Entry` objects (``PROVIDERS``), one per spec, which the registry (:func:`agentmsg.providers.get`)
   hands out as a :class:`Provider`. ``parse_response``, ``response_events``, ``parse_stream`` and the stream
   parser are written once, on :class:`Entry`; the module's functions of those names are the entry's.

The clients (``agentmsg.clients``) and the CLI name no provider: they read all they need from the
:class:`Spec` and the :class:`Provider` the registry gives.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from agentmsg.message import Msg
from agentmsg.providers._request.context import FormatOptions, FormattedRequest
from agentmsg.providers._request.structured import StructuredOutputLike
from agentmsg.providers._response.parser import StreamParser, read_response, response_message, run_parser
from agentmsg.providers._response.think import make_builder
from agentmsg.providers.spec import Auth, CacheMarkers, CountEndpoint, OwnTools, Spec, StreamFlag, TokenProfile

if TYPE_CHECKING:
    from agentmsg.providers._response.reader import PayloadReader

__all__ = [
    "Auth",
    "CacheMarkers",
    "CountEndpoint",
    "Entry",
    "OwnTools",
    "Provider",
    "Spec",
    "StreamFlag",
    "TokenProfile",
]

#: A response body as the parsers take it: JSON text (bytes or str) or the parsed object
Body = bytes | str | Mapping[str, Any]


@runtime_checkable
class Provider(Protocol):
    """What :func:`agentmsg.providers.get` hands out for a registry name: one provider (or one variant of it),
    with its spec, its formatter and its parsers."""

    @property
    def spec(self) -> Spec: ...

    @property
    def name(self) -> str: ...

    def format_request(
        self,
        messages: Sequence[Msg],
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        multi_agent: bool = False,
        agent_name: str | None = None,
        stream: bool = False,
        strict: bool = False,
        options: FormatOptions | Mapping[str, Any] | None = None,
        structured_output: StructuredOutputLike | None = None,
        **params: Any,
    ) -> FormattedRequest: ...

    def response_events(self, body: Body, **options: Any) -> list[dict[str, Any]]: ...

    def parse_response(self, body: Body, *, choice: int = 0, **options: Any) -> Msg: ...

    def stream_parser(self, **options: Any) -> StreamParser: ...

    def parse_stream(self, chunks: Iterable[bytes | str] | bytes | str, **options: Any) -> Iterator[dict[str, Any]]: ...

    def _other(self, options: dict[str, Any]) -> Provider:
        """Deprecated: the provider a ``variant=`` keyword names (a registry name), in place of this one."""
        from agentmsg.providers import get

        variant = options.pop("variant")
        warnings.warn(
            f"variant= on a registry entry is deprecated: use get({variant!r})", DeprecationWarning, stacklevel=3
        )
        return get(variant)

    def parser_options(self, request: FormattedRequest) -> dict[str, Any]: ...

    def StreamParser(self, **options: Any) -> StreamParser:
        """Deprecated: :meth:`stream_parser` (warns)."""
        ...


def _no_parser_options(request: FormattedRequest) -> dict[str, Any]:
    return {}


@attrs.frozen
class Entry:
    """The :class:`Provider` of one spec: the module's formatter and reader, with everything else written once.

    ``formatter``: the module's ``format_request`` for this spec. ``reader``: the module's ``Reader``.
    ``request_options``: the parser options a request asks for (DashScope: incremental output or not), read
    by the clients from the request they sent. ``module``: the provider module's name."""

    spec: Spec
    formatter: Callable[..., FormattedRequest]
    reader: type[PayloadReader]
    module_name: str
    request_options: Callable[[FormattedRequest], dict[str, Any]] = _no_parser_options

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def module(self) -> ModuleType:
        """The provider module (``agentmsg.providers.<name>``)."""
        return importlib.import_module(self.module_name)

    def format_request(
        self,
        messages: Sequence[Msg],
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        multi_agent: bool = False,
        agent_name: str | None = None,
        stream: bool = False,
        strict: bool = False,
        options: FormatOptions | Mapping[str, Any] | None = None,
        structured_output: StructuredOutputLike | None = None,
        **params: Any,
    ) -> FormattedRequest:
        """The provider's request for a conversation (a list of :class:`~agentmsg.Msg`): ``body`` (the exact JSON
        body), ``diagnostics`` (every rewriting or lossy step), ``path``, ``headers``, ``model``. Without ``model``
        the request names the spec's ``default_model``. ``params``: generation parameters (``temperature``,
        ``max_tokens``, ...), mapped to the provider's names; see the provider module's ``format_request``.
        ``structured_output``: a reply that is one JSON object (a JSON Schema, a ``StructuredOutput`` or a pydantic
        model class), mapped to the provider's structured output; the reply's JSON lands in its metadata
        ``_structured_output`` (docs/formatters.md, "Structured output"). Raises :class:`~agentmsg.ValidationError` for bad input, refused media, and with ``strict`` for every
        lossy or error diagnostic."""
        if "variant" in params:
            return self._other(params).format_request(
                messages,
                model=model,
                tools=tools,
                tool_choice=tool_choice,
                multi_agent=multi_agent,
                agent_name=agent_name,
                stream=stream,
                strict=strict,
                options=options,
                structured_output=structured_output,
                **params,
            )
        if structured_output is not None:
            params["structured_output"] = structured_output
        return self.formatter(
            messages,
            model=model,
            tools=tools,
            tool_choice=tool_choice,
            multi_agent=multi_agent,
            agent_name=agent_name,
            stream=stream,
            strict=strict,
            options=options,
            **params,
        )

    def stream_parser(self, **options: Any) -> StreamParser:
        """An incremental parser of this provider's stream: ``feed(chunk)`` and ``close()`` return the events
        they complete; ``problems`` what it fixed or left out. ``options``: the reader's own (see the spec's
        ``stream_flags``) and the :class:`StreamBuilder`'s (``name``, ``provider``, ``started_at``, ...)."""
        if "variant" in options:
            return self._other(options).stream_parser(**options)
        return StreamParser(self.reader, self.spec, **options)

    def parse_stream(self, chunks: Iterable[bytes | str] | bytes | str, **options: Any) -> Iterator[dict[str, Any]]:
        """A streamed body (all of it, or its chunks as they arrive) -> agent events, as they complete; never
        raises for bad input (problems are ``CUSTOM agentmsg.problem`` events)."""
        return run_parser(self.stream_parser(**options), chunks)

    def response_events(self, body: Body, **options: Any) -> list[dict[str, Any]]:
        """A non-streaming response body (JSON text or parsed) -> the agent events of the reply, as its stream
        would give them (choice i > 0 under ``source: choice/i``). Raises :class:`~agentmsg.ValidationError` for a
        body that is not such a response."""
        if "variant" in options:
            return self._other(options).response_events(body, **options)
        title = self.spec.title
        what = f"a{'n' if title[:1] in 'AEIOU' else ''} {title} response"
        return read_response(body, what, lambda obj: self._events(obj, dict(options)), arrays=self.reader.arrays)

    def _events(self, obj: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
        own = {k: options.pop(k) for k in self.reader.options if k in options}
        b = make_builder(options.pop("provider", self.spec.families[0]), **options)
        self.reader(b, self.spec, **own).reply(obj)
        return b.drain()

    def parse_response(self, body: Body, *, choice: int = 0, **options: Any) -> Msg:
        """The assistant message of a non-streaming response (choice ``choice``): the events of
        :meth:`response_events`, reduced by the one Reducer. Raises :class:`~agentmsg.ValidationError` for a body
        that is not such a response, or has no such choice."""
        if "variant" in options:
            return self._other(options).parse_response(body, choice=choice, **options)
        return response_message(self.response_events(body, **options), choice, f"the {self.spec.title} response")

    def _other(self, options: dict[str, Any]) -> Provider:
        """Deprecated: the provider a ``variant=`` keyword names (a registry name), in place of this one."""
        from agentmsg.providers import get

        variant = options.pop("variant")
        warnings.warn(
            f"variant= on a registry entry is deprecated: use get({variant!r})", DeprecationWarning, stacklevel=3
        )
        return get(variant)

    def parser_options(self, request: FormattedRequest) -> dict[str, Any]:
        """The parser options ``request`` asks for (the clients read its reply, streamed or whole, with them): the
        request's own (``FormattedRequest.parser_options``: structured output) and the provider's
        (``request_options``)."""
        return {**request.parser_options, **self.request_options(request)}

    def StreamParser(self, **options: Any) -> StreamParser:
        """Deprecated: :meth:`stream_parser`."""
        warnings.warn("Provider.StreamParser() is deprecated: use stream_parser()", DeprecationWarning, stacklevel=2)
        return self.stream_parser(**options)

    def __getattr__(self, attr: str) -> Any:
        """Deprecated: a provider module's other attributes, reached through its registry entry (use
        ``entry.module.<attr>``)."""
        if attr.startswith("_"):
            raise AttributeError(attr)
        value = getattr(self.module, attr, None)
        if value is None:
            raise AttributeError(f"provider {self.spec.name!r} ({self.module_name}) has no {attr!r}")
        warnings.warn(
            f"get({self.spec.name!r}).{attr} is deprecated: use get({self.spec.name!r}).module.{attr}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
