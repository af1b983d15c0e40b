"""A provider's spec: who it is and how to reach it (base URL, key variables, auth and version headers,
default model, the formatter's field table, how its tokens are counted), with no code. Each provider module
starts with its specs; the clients and the CLI read them from the registry (:func:`agentmsg.providers.get`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from agentmsg.providers._request.fields import Handling

__all__ = ["Auth", "CacheMarkers", "CountEndpoint", "OwnTools", "Spec", "StreamFlag", "TokenProfile", "own_tool_name"]

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

    ``path``: the endpoint after the base URL (``{model}`` filled with the request's model, quoted as one path
    segment). ``keep``: the keys of the formatted body sent (empty: all of them). ``wrap``: the body is sent under
    this key, with ``model`` set to the model (Gemini's ``generateContentRequest``). ``collections``: the resource
    collections a model is named in (Gemini's ``models`` and ``tunedModels``): a model ``C/NAME`` for a C among them
    is NAME of C, any other name one of the first; ``{model}`` in ``path`` is then ``C/NAME`` (NAME quoted as one
    path segment) and a wrapped body's ``model`` ``C/NAME``. ``reply``: the keys leading to the count in the JSON
    reply. ``source``: where the endpoint and its shapes are documented. ``model_prefix`` (deprecated: name the
    ``collections``): without ``collections``, a wrapped body's ``model`` is this prefix and the model."""

    path: str
    reply: tuple[str, ...]
    keep: tuple[str, ...] = ()
    wrap: str | None = None
    collections: tuple[str, ...] = ()
    source: str = ""
    model_prefix: str = ""

    def __attrs_post_init__(self) -> None:
        if self.model_prefix:
            warnings.warn(
                "CountEndpoint(model_prefix=...) is deprecated: name the collections a model is named in"
                " (collections=(...)), which also give the path its collection",
                DeprecationWarning,
                stacklevel=3,
            )


@attrs.frozen(kw_only=True)
class CacheMarkers:
    """How a provider takes prompt-cache markers (message metadata ``_cache_control``), as
    ``agentmsg.context.place_cache_markers`` places them (docs/context.md, Prompt caching).

    ``tools``: it takes one on a tool definition (else its system prompt's marker caches the tools before it).
    ``lifetimes``: it takes a marker's ``ttl`` (``5m`` or ``1h``; else its cache has one lifetime and the ttl is not
    set). ``lifetimes_in_order``: it refuses a longer lifetime after a shorter one (in request order: tools, system,
    messages), so a marker placed takes the lifetime the markers already there ask. ``models``: only the models this
    accepts take markers (a request that names no model then gets none; None: every model does). ``blocks``: each
    block a marker names is a breakpoint of its own (Anthropic's ``cache_control`` on a block); else a marked message
    is one breakpoint, on its last content part, whichever blocks its marker names (the chat family's walks:
    ``marks_whole``)."""

    tools: bool = False
    blocks: bool = False
    lifetimes: bool = False
    lifetimes_in_order: bool = False
    models: Callable[[str], bool] | None = None

    def takes(self, model: str | None) -> bool:
        """Whether a request for ``model`` takes markers."""
        return self.models is None or (model is not None and self.models(model))


@attrs.frozen(kw_only=True)
class OwnTools:
    """A provider's own tools (server or built-in tools), given as the provider has them: its formatter sends one as
    given, in its place, and every other provider refuses it (``providers/_request/tools.py``, rule ``enum``,
    naming the tool and whose it is: the spec's ``title``).

    ``recognize``: the tool's name (its ``name``, else its type or key: :func:`own_tool_name`) when a tool
    definition is one of them, else None; it is asked of a definition that is neither a function tool (``type``
    absent with a ``name``, or ``function``) nor an OpenAI custom tool, and of no other. ``types``: how a refusal of
    a tool ``type`` no provider has (rule ``enum``) names the types of these tools. ``by_type``: a ``tool_choice`` names one of them by its
    type (``{"type": T}``, read as naming the tool ``recognize`` gives for ``{"type": T}``). ``forced``: the types
    of them that its ``tool_choice`` can force by type (each other one named is refused); without ``by_type`` its
    formatter says how a choice naming one is sent (by name, or refused). ``choice``: a ``tool_choice`` object of
    the provider's own that forces one of them by more than its type (the Responses API's ``{"type": "mcp",
    "server_label": L}``): how a refusal names what it forces (``the MCP server 'L'``), else None; sent as given where
    ``chooses`` says a definition of the request (one of these tools, as given) is the one it forces, refused (rule
    ``enum``) where none is and by every other provider."""

    recognize: Callable[[Mapping[str, Any]], str | None]
    types: str = ""
    by_type: bool = False
    forced: frozenset[str] = frozenset()
    choice: Callable[[Mapping[str, Any]], str | None] | None = None
    chooses: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = None


def own_tool_name(tool: Mapping[str, Any], kind: str) -> str:
    """The name of a provider's own tool of type ``kind``, as its ``recognize`` gives it: its ``name`` (a non-empty
    string), else its type."""
    name = tool.get("name")
    return name if isinstance(name, str) and name else kind


@attrs.frozen(kw_only=True)
class TokenProfile:
    """How a provider frames and prices a request, in tokens: what ``agentmsg.context.count_tokens`` counts a
    conversation with, offline (docs/context.md). The figures are the provider's documented ones or measured
    against its official counts (``bench/run.py --only context``; tests/fixtures/context).

    ``vocab``: the vocabulary text is counted with (``o200k_base``, ``qwen``). ``own``: it is the provider's own
    (else the count is an estimate, scaled by ``scale``, stated within ``text_error``). ``per_message``: framing of
    each message (role markers); ``per_name``: a speaker name sent; ``priming``: the reply's start, once per
    request; ``per_call``/``per_result``: framing of a tool call and of a tool result; ``thinking``: which
    reasoning is sent and counted (``none``; ``all``; ``current``: only after the last user turn, as Anthropic
    counts it; ``tool_turns``: after the last user turn and in every turn that called tools, as DeepSeek's thinking
    mode takes it back; ``items``: the provider's own reasoning items, as the Responses API takes them back by their
    id with their encrypted content, ``items``); ``tools_base``: a request with tools (a tool-use system prompt); ``per_tool``: each definition's
    framing; ``tool_style``: ``typescript`` (OpenAI renders functions as a TypeScript namespace) or ``json``.
    ``image``: the image pricing method (``openai``, ``anthropic``, ``gemini``, ``qwen``: agentmsg/context/_media.py).
    ``models``: model families that differ from this profile, as (name prefixes, the fields that change).
    ``vocabs``: models counted with another vocabulary, as (model names, the vocabulary): a name matches a model
    of that name (any case), and a name ending in ``*`` each model that starts with what comes before it (OpenAI's
    ``gpt-4`` and ``gpt-3.5`` with ``cl100k_base``). ``result_messages``: each tool result is sent as a message of
    its own (the OpenAI family's ``tool`` messages), framed as one (``per_message`` each, not once for the message
    that holds the results). ``text_only``: media are sent as a text placeholder naming them (DeepSeek), counted as
    that text; ``assistant_media``: media in an assistant turn are sent (else as placeholders: every provider but
    Gemini). ``result_text``: a tool result is sent as one text, its texts joined by newlines and its media named
    in it, the media sent again after the results in a user message (the chat family: OpenAI, DashScope).
    ``items``: an assistant message is sent as items in its blocks' order (the Responses API): each run of texts one
    message item (joined by newlines), each call a function call item, each reasoning item sent back one (one
    without its encrypted content is not sent: no request is stored), each framed as a message (``per_message``).
    ``hint_parts``: a hint is sent as a text part of the user turn after it (the turn family: Anthropic, Gemini), not
    framed; else as a message of its own, framed as one. ``turns``: the request is alternating turns (Anthropic,
    Gemini): the messages that send parts of one role one after another (a user turn: USER and TOOL messages, tool
    results, hints) are one turn, framed once, and every system message goes to the one system prompt, framed once.
    ``leading_system``: the leading system messages are sent as one instruction (the Responses API), framed once.
    ``drop_empty``: an empty text is not sent (DashScope; the turn family leaves out blank texts too); a user message
    left with nothing to send is not sent, nor framed, by any provider. ``own_reasoning``: what the formatter makes of
    the provider's own reasoning in an assistant message (``agentmsg.context._frames.reasoning_sent``): ``field``
    reasoning in a field of its own (DeepSeek, DashScope; redacted: left out); ``text`` none, but with the option
    ``reasoning="text"`` as text in its place (OpenAI Chat: ``reasoning_field`` None); ``signed`` a thinking block when
    signed, a redacted one with its data, else left out or with ``reasoning="text"`` text (Anthropic); ``thought`` a
    thought part, but redacted or empty and unsigned (Gemini); ``items`` a reasoning item's part (``reasoning_item``),
    else left out or with ``reasoning="text"`` text, redacted never (the Responses API). ``valid_signature``: with
    ``thought``, whether a signature is one the formatter sends (Gemini's base64 check, in its module); None: any.
    ``result_join``: how a tool result's output is sent where it is not one text (``result_text``): ``parts``, each
    text (and hint) a part of its own, a blank one left out where the request leaves out blank texts (Anthropic);
    ``texts``, its texts joined by newlines into one text when it holds texts alone, else parts (the Responses API);
    ``all``, its texts and hints joined by newlines into one text, its media parts after it (Gemini). ``per_error``:
    the error flag an error result is sent with (an error, denied or interrupted state, and the error result the
    ``repair`` option adds: Anthropic's ``is_error: true``; 0 where the request carries none), its rendering not
    published: counted with error 1.0. ``media_placeholder``: the formatter's own rule (in its module) for which media
    it sends as a text placeholder naming them, ``(block, in a tool result, the request's FormatOptions) -> reason``
    (None: the medium is sent), so that the count prices the placeholder sent, not the medium; None: every medium is
    sent (outside ``text_only`` and ``assistant_media``)."""

    vocab: str
    own: bool
    scale: float = 1.0
    text_error: float = 0.0
    per_message: int = 3
    per_name: int = 0
    priming: int = 3
    per_call: int = 3
    per_result: int = 3
    thinking: Literal["none", "all", "current", "tool_turns", "items"] = "none"
    tools_base: int = 0
    per_tool: int = 0
    tool_style: Literal["typescript", "json"] = "json"
    #: stated relative error of the tool definitions' count (their rendering is not published)
    tools_error: float = 0.15
    #: the tool definitions' tokens as a share of their rendering's (measured)
    tools_scale: float = 1.0
    image: str = "openai"
    audio_per_second: float = 32.0
    video_per_second: float = 263.0
    pdf_per_page: int = 2250
    #: the audio and video rates are the provider's documented ones (Gemini's 32/s and 263/s; else they are Gemini's,
    #: borrowed, and a duration read still leaves error 1.0)
    timed_documented: bool = False
    models: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()
    vocabs: tuple[tuple[tuple[str, ...], str], ...] = ()
    result_messages: bool = False
    text_only: bool = False
    assistant_media: bool = True
    result_text: bool = False
    items: bool = False
    hint_parts: bool = False
    turns: bool = False
    leading_system: bool = False
    drop_empty: bool = False
    own_reasoning: Literal["field", "text", "signed", "thought", "items"] = "field"
    valid_signature: Callable[[str], bool] | None = None
    result_join: Literal["parts", "texts", "all"] = "parts"
    per_error: int = 0
    media_placeholder: Callable[[Any, bool, Any], str | None] | None = None

    def for_model(self, model: str | None) -> TokenProfile:
        """This profile as it applies to ``model`` (the first of :attr:`models` whose prefix it has, else as is)."""
        if model:
            m = model.lower()
            for prefixes, changes in self.models:
                if m.startswith(prefixes):
                    return attrs.evolve(self, **changes)
        return self

    def vocab_for(self, model: str | None) -> str:
        """The vocabulary ``model``'s text is counted with (the first of :attr:`vocabs` that names it, else
        :attr:`vocab`)."""
        if model:
            m = model.lower()
            for names, vocab in self.vocabs:
                for name in names:
                    if m == name if not name.endswith("*") else m.startswith(name[:-1]):
                        return vocab
        return self.vocab


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
    ``user_first``: the provider refuses a conversation whose first turn (after the system prompt) is an assistant
    turn, and ``signature_chain``: it checks the signature chain of the current turn's reasoning (the thinking before
    the turn's first call comes back with it); ``agentmsg.context.trim`` keeps to both. ``cache_markers``: how it takes
    prompt-cache markers (None: it caches prefixes on its own, or takes none; ``agentmsg.context.place_cache_markers``
    places none). ``own_tools``: the provider's own tools (server or built-in tools), an :class:`OwnTools` (None: it
    has none; one given to it is refused). ``custom_tools``: it takes OpenAI custom tools (free-text input, GPT-5),
    sent and their calls sent back as such (else one given to it is refused: ``providers/_request/tools.py``).
    ``fields``: the formatter's field table (``providers/_request/fields.py``). ``counting``: the provider's
    token-counting endpoint (None: it has none; ``agentmsg.context.count_tokens`` counts offline). ``tokens``: how
    ``agentmsg.context.count_tokens`` counts its requests offline (None: an o200k estimate stated within 50%)."""

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
    tokens: TokenProfile | None = None
    user_first: bool = False
    signature_chain: bool = False
    cache_markers: CacheMarkers | None = None
    own_tools: OwnTools | None = None
    custom_tools: bool = False
