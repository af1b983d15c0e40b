"""A provider's spec: who it is and how to reach it (base URL, key variables, auth and version headers,
default model, the formatter's field table), with no code. Each provider module starts with its specs; the
clients and the CLI read them from the registry (:func:`agentmsg.providers.get`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from agentmsg.providers._request.fields import Handling

__all__ = ["Auth", "CountEndpoint", "Spec", "StreamFlag"]

#: How the API key is sent: ``Authorization: Bearer <key>``, or the key as the value of that header
Auth = Literal["bearer", "x-api-key", "x-goog-api-key"]


@attrs.frozen(kw_only=True)
class StreamFlag:
    """A stream parser option that ``agentmsg parse`` offers as a flag (DashScope's ``--incremental``):
    ``flag`` sets the parser keyword ``option`` to ``value``."""

    flag: str
    option: str
    value: Any
    help: str


@attrs.frozen(kw_only=True)
class CountEndpoint:
    """A provider's token-counting endpoint, as the clients' ``count_tokens`` reaches it: the body is the
    formatter's request body for the same messages, reshaped.

    ``path``: the endpoint after the base URL (``{model}`` filled with the request's model). ``keep``: the keys of
    the formatted body sent (empty: all of them). ``wrap``: the body is sent under this key, with ``model`` set to
    ``model_prefix`` + the model (Gemini's ``generateContentRequest``). ``reply``: the keys leading to the count in
    the JSON reply. ``source``: where the endpoint and its shapes are documented."""

    path: str
    reply: tuple[str, ...]
    keep: tuple[str, ...] = ()
    wrap: str | None = None
    model_prefix: str = ""
    source: str = ""


@attrs.frozen(kw_only=True)
class Spec:
    """Everything about one registry name but its code: who the provider is and how to reach it.

    ``name``: the registry name (``openai``, ``deepseek``, ...). ``title``: how messages name it
    (``OpenAI``). ``base_url``: the API's root, to which a request's path is appended. ``env``: the API-key
    environment variables, the first one set wins. ``auth``: how the key is sent. ``headers``: headers every
    request carries (the API version). ``default_model``: the model of a request that names none.
    ``families``: the reasoning provenance (thinking metadata ``provider``) this provider replays natively; the
    first is the one its replies are marked with. ``stream_flags``: parser options the CLI offers.
    ``client_class``: the name of the deprecated client class pinned to this provider (``OpenAIClient``).
    ``fields``: the formatter's field table (``providers/_request/fields.py``). ``counting``: the provider's
    token-counting endpoint (None: it has none; ``agentmsg.context.count_tokens`` counts offline)."""

    name: str
    title: str
    base_url: str
    env: tuple[str, ...]
    auth: Auth
    default_model: str
    families: tuple[str, ...]
    headers: Mapping[str, str] = attrs.field(factory=dict)
    stream_flags: tuple[StreamFlag, ...] = ()
    client_class: str = ""
    #: what the formatter does with each field of a conversation: sent, mapped, reported or not sent (None: the
    #: common table, ``providers/_request/fields.py``; docs/formatters.md's field tables are written from it)
    fields: Mapping[str, Mapping[str, Handling]] | None = None
    counting: CountEndpoint | None = None
