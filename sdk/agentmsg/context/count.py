"""Counting a conversation's input tokens for a provider, offline.

:func:`count_tokens` walks the messages block by block, in one pass (time linear in the conversation), and prices
each block as the provider's formatter sends it: text and reasoning through the provider's tokenizer where one runs
offline (``_tokenizers.py``), tool calls as their name and JSON arguments, tool results as their output, media at
the provider's documented rate (``_media.py``), plus the provider's framing per message and per request, and the
tool definitions. It walks the blocks rather than counting the body ``format_request`` builds because the count is
given per message (``TokenCount.messages``, which trimming relies on) and a provider's body does not map back to
the messages: system prompts are hoisted, consecutive turns merged, tool results regrouped.

Where the provider's own tokenizer is not available offline (Claude, Gemini, DeepSeek) the count is an estimate:
OpenAI's o200k vocabulary scaled by a factor measured against the providers' official counts, with the relative
error measured on the same corpus as its stated bound (``bench/run.py --only context`` prints both). The providers'
own counting endpoints are reached through the clients (``Client.count_tokens``).
"""

from __future__ import annotations

import base64
import binascii
import copy
import math
from collections.abc import Callable, Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from agentmsg.blocks import (
    AudioBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from agentmsg.context import _media
from agentmsg.context._frames import AS_TEXT, REASONING, Frames, dropping, kept, reasoning_sent, sent_by
from agentmsg.context._tokenizers import TextCounter, counter
from agentmsg.errors import ValidationError
from agentmsg.message import Msg, MsgRole, members
from agentmsg.providers._request.common import mime_of
from agentmsg.providers._request.context import (
    ERROR_STATES,
    MEDIA,
    REPAIR_TEXT,
    TOOL_MEDIA_HEAD,
    FormatOptions,
    as_options,
    block_label,
    current_turn,
    has_result,
    has_tool_use,
    is_carrier,
    is_current_agent,
    is_history_message,
    json_text,
    name_media,
    reasoning_item,
    speaker_label,
    text_before,
    tool_turns,
)
from agentmsg.providers._request.tools import ToolDef, check_tools, normalize_tools
from agentmsg.providers._request.walk import pieces
from agentmsg.providers.spec import TokenProfile

if TYPE_CHECKING:
    from agentmsg.providers.base import Provider

__all__ = ["ProviderCount", "TokenCount", "count_tokens"]

#: the roles, read once (an enum member's lookup on its class costs about ten times a global's)
_USER, _ASSISTANT, _SYSTEM, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM, MsgRole.TOOL


@attrs.frozen(kw_only=True)
class TokenCount:
    """A conversation's input tokens for one provider and model.

    ``total``: every token of the request (``sum(messages) + tools + overhead``). ``messages``: each message's
    tokens, in the order given (its content and its framing). ``tools``: the tool definitions. ``overhead``: the
    request's own framing (the reply's priming, a tool-use system prompt). ``method``: ``tokenizer:<name>`` (the
    provider's own vocabulary, run offline) or ``estimate``. ``error``: the stated relative error bound of the
    count (``0.1``: within 10% of the provider's count), None when every part is counted exactly. ``missing``: the
    package (its pip name: ``bpe-openai``, the extra ``agentmsg[count]``; ``dashscope``) whose vocabulary would count
    the text exactly, when the provider's own tokenizer runs offline but that package is not installed (the text is
    then a character estimate); None otherwise, and always for a provider whose tokenizer is not public (Anthropic,
    Gemini, DeepSeek: estimates whatever is installed)."""

    total: int
    messages: tuple[int, ...]
    tools: int
    overhead: int
    method: str
    error: float | None
    missing: str | None = None

    def __attrs_post_init__(self) -> None:
        if sum(self.messages) + self.tools + self.overhead != self.total:
            raise ValueError("a TokenCount's messages, tools and overhead must sum to its total")

    def to_dict(self) -> dict[str, Any]:
        """The count as JSON-ready data."""
        return {
            "total": self.total,
            "messages": list(self.messages),
            "tools": self.tools,
            "overhead": self.overhead,
            "method": self.method,
            "error": self.error,
            "missing": self.missing,
        }


@attrs.frozen(kw_only=True)
class ProviderCount:
    """The count a provider's own counting endpoint gave (``Client.count_tokens``): ``total`` input tokens for
    ``model``, and the whole ``reply`` (Gemini's ``cachedContentTokenCount`` and ``promptTokensDetails``, say)."""

    total: int
    provider: str
    model: str | None
    reply: dict[str, Any] = attrs.field(repr=False)


# ---- profiles: each provider's spec says how it frames and prices a request (``Spec.tokens``) -------------------

#: the error stated for a medium whose size or length was not read (priced at the defaults of _media.py)
_UNKNOWN_MEDIA_ERROR: Final = 1.0
#: the error stated for a medium priced by a documented formula from its real size
_MEDIA_ERROR: Final = 0.1
#: the error stated for the character estimate (no tokenizer installed): its worst case against o200k on the corpus
_CHARS_ERROR: Final = 0.5
#: the error stated for a reasoning item sent back (the Responses API), counted as its summary: the model also reads
#: the reasoning its encrypted content holds, of a size not known
_REASONING_ITEM_ERROR: Final = 1.0
#: the error stated for a tool result's error flag (``TokenProfile.per_error``), whose rendering is not published
_ERROR_FLAG_ERROR: Final = 1.0
#: tokens a data block is priced at when its content is not read (not text, not a PDF)
_DEFAULT_FILE_TOKENS: Final = 1000


#: a provider whose spec has no profile of its own (``Spec.tokens`` None): an o200k estimate, within 50%
_GENERIC: Final = TokenProfile(vocab="o200k_base", own=False, text_error=0.5)


# ---- the walk ----------------------------------------------------------------------------------------------------


class _Tally:
    """The parts of one count and the error each carries (tokens x relative error)."""

    __slots__ = ("drop", "model", "options", "placeholder", "profile", "text", "unsure", "words")

    def __init__(self, text: TextCounter, profile: TokenProfile, model: str | None, options: FormatOptions) -> None:
        self.text = text
        self.profile = profile
        self.model = model
        self.options = options
        #: the formatter's rule for the media it sends as a text placeholder (``TokenProfile.media_placeholder``)
        self.placeholder = profile.media_placeholder
        self.drop = dropping(profile)  # which texts (and hints) the request leaves out
        #: sum of tokens x their relative error, outside the text's own error
        self.unsure = 0.0
        count = text.count
        scale = profile.scale if not profile.own else 1.0
        #: the tokens of a text: the vocabulary's count, scaled where it is an estimate (the counter itself where it
        #: is not: no call in between, for the count's most frequent call)
        self.words: Callable[[str], int] = count if scale == 1.0 else lambda s: math.ceil(count(s) * scale)

    def sent_as_text(self, block: Any, in_result: bool) -> bool:
        """Whether the formatter sends the medium ``block`` as the text placeholder naming it (``in_result``: in a
        tool result's output), by its own rule (``TokenProfile.media_placeholder``)."""
        placeholder = self.placeholder
        return placeholder is not None and placeholder(block, in_result, self.options) is not None

    def unsure_tokens(self, tokens: int, error: float) -> int:
        self.unsure += tokens * error
        return tokens

    def error_flags(self, k: int) -> int:
        """The tokens of the error flag ``k`` error results are sent with (``TokenProfile.per_error``)."""
        return self.unsure_tokens(k * self.profile.per_error, _ERROR_FLAG_ERROR) if self.profile.per_error else 0

    # -- media --

    def image(self, block: Any) -> int:
        size = _media.image_size(block.source)
        known = size is not None
        w, h = size if size is not None else _media.DEFAULT_SIZE
        tokens = _media.image_tokens(self.profile.image, w, h, self.model, block.min_pixels, block.max_pixels)
        return self.unsure_tokens(tokens, _MEDIA_ERROR if known else _UNKNOWN_MEDIA_ERROR)

    def timed(self, block: Any, per_second: float) -> int:
        seconds = _media.media_seconds(block.source)
        known = seconds is not None
        tokens = math.ceil((seconds if seconds is not None else _media.DEFAULT_SECONDS) * per_second)
        sure = known and self.profile.timed_documented
        return self.unsure_tokens(tokens, _MEDIA_ERROR if sure else _UNKNOWN_MEDIA_ERROR)

    def data(self, block: Any) -> int:
        mime = mime_of(block.source) or ""
        main = mime.split("/", 1)[0]
        if main == "image":
            return self.image(_AsImage(block.source))
        if main == "audio":
            return self.timed(block, self.profile.audio_per_second)
        if main == "video":
            return self.timed(block, self.profile.video_per_second)
        raw = _decoded(block.source)
        if raw is not None and (main == "text" or mime in _TEXT_MIMES):
            return self.words(raw.decode("utf-8", "replace")) + self.profile.per_result
        if raw is not None and mime == "application/pdf":
            pages = _media.pdf_pages(raw)
            return self.unsure_tokens(pages * self.profile.pdf_per_page, 0.35)
        return self.unsure_tokens(_DEFAULT_FILE_TOKENS, _UNKNOWN_MEDIA_ERROR)


@attrs.frozen
class _AsImage:
    """A data block holding an image, priced as an image block with no pixel hints."""

    source: Any
    min_pixels: int | None = None
    max_pixels: int | None = None


_TEXT_MIMES: Final = frozenset({"application/json", "application/xml", "application/x-yaml", "application/yaml"})


def _decoded(source: Any) -> bytes | None:
    data = _media.inline_base64(source)
    if data is None:
        return None
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # (an integer beyond 64 bits, which a tool's schema may hold and format_request sends)
        return json_text(value)


def _blocks(
    t: _Tally,
    blocks: Sequence[Any],
    thinking: bool,
    assistant: bool = False,
    joined: bool = False,
    user: bool = False,
    output: bool = False,
    label: str = "",
    families: Container[str] = (),
    demote: bool | None = None,
) -> int:
    """The tokens of a message's blocks; ``joined``: its texts (and placeholders) are sent as one text, joined by
    newlines (the chat family's assistant and system messages); ``user``: a user message, whose turn sends texts,
    media and hints only (every formatter leaves out a tool call, a tool result or reasoning there, said
    ``block-dropped`` or ``thinking-dropped``: ``Walk.user_parts``); ``output``: a tool result's output, whose hints
    are text of it, not framed; ``label``: the speaker's ``[Name]: `` the multi-agent prefix layout puts before the
    first text (of the joined text; in a user turn before the first medium too, as a text of its own:
    ``Walk.user_parts``); ``families``: the target provider's (reasoning from another provider is not sent as
    reasoning); ``demote``: the option ``reasoning="text"``, which sends such reasoning (not empty) as text in its
    place, and the provider's own that its formatter sends as no reasoning (:func:`reasoning_sent`: OpenAI Chat's,
    Anthropic's unsigned; None: neither, the blocks of no assistant message). Reasoning the formatter leaves out
    (Anthropic's unsigned, Gemini's empty unsigned one, a redacted one) is not counted."""
    if len(blocks) == 1 and not label and type(blocks[0]) is TextBlock:  # (the usual message: one text, as below)
        text = blocks[0].text
        return t.words(text) if not t.drop or kept(text, t.drop) else 0
    p = t.profile
    placeholders = p.text_only or (assistant and not p.assistant_media)
    texts: list[str] | None = [] if joined else None
    n = 0
    for b in blocks:
        kind = type(b)
        if label and texts is None and (kind is TextBlock or (user and kind in MEDIA)):
            if kind is TextBlock:  # (the speaker's label starts the first text)
                n += t.words(label + b.text)
                label = ""
                continue
            n += t.words(label.rstrip())  # (a text of its own before a medium)
            label = ""
        if kind in MEDIA and (placeholders or t.sent_as_text(b, output)):  # (sent as the text naming it)
            if texts is not None:
                texts.append(block_label(b))
            else:
                n += t.words(block_label(b))
        elif kind is TextBlock:
            if texts is not None:
                if b.text or not p.drop_empty:  # (DashScope leaves an empty one out before joining them)
                    texts.append(b.text)
            elif t.drop == 0 or kept(b.text, t.drop):  # (else left out: the turn family's blank text)
                n += t.words(b.text)
        elif kind is ThinkingBlock:
            if demote is not None and (thinking or demote):  # (else none is sent, or none counted)
                how = reasoning_sent(b, p, families, demote)
                if how == AS_TEXT:  # (reasoning="text": a text in its place)
                    if texts is not None:
                        texts.append(b.thinking)
                    else:
                        n += t.words(b.thinking)
                elif how == REASONING and thinking:
                    n += t.words(b.thinking)
        elif kind is ToolUseBlock:
            if not user:
                n += t.words(b.name) + t.words(_dumps(b.input) if b.content is None else b.content) + p.per_call
        elif kind is ToolResultBlock:
            if not user:
                n += (_result_text(t, b.id, b.output) if p.result_text else _output(t, b.output)) + p.per_result
                if p.per_error and b.state in ERROR_STATES:  # (sent with the error flag)
                    n += t.error_flags(1)
        elif kind is HintBlock:
            if output:  # (text of the output, a part of its own: ``_output``)
                if kept(b.hint, t.drop):
                    n += t.words(b.hint)
            elif kept(b.hint, dropping(p)):  # (else left out, as an empty text: ``Walk._hint``)
                n += t.words(b.hint) + (0 if p.hint_parts else p.per_message)
        elif kind is ImageBlock:
            n += t.image(b)
        elif kind is AudioBlock:
            n += t.timed(b, p.audio_per_second)
        elif kind is VideoBlock:
            n += t.timed(b, p.video_per_second)
        elif kind is DataBlock:
            n += t.data(b)
        elif isinstance(b, str):
            n += t.words(b)
    if texts:
        n += t.words(label + (texts[0] if len(texts) == 1 else "\n".join(texts)))
    return n


def _items(
    t: _Tally,
    blocks: Sequence[Any],
    families: Container[str],
    label: str = "",
    multi: bool = False,
    demote: bool = False,
) -> int:
    """The tokens of an assistant message sent as items (``TokenProfile.items``: the Responses API), as its formatter
    sends them: an item for each run of texts (non-empty ones, joined by newlines; a medium's placeholder among them),
    each call, each reasoning item sent back (its parts from consecutive blocks of one item id, :func:`reasoning_item`;
    one without its encrypted content is not sent), each tool result; a call, a reasoning item or a carrier ends the
    run of texts before it. Each item is framed as a message, and so is each hint (sent after the turn). ``label``:
    another agent's message in the multi-agent prefix layout, its ``[Name]: `` before its first text that is sent,
    and none of its reasoning sent; ``multi``: a multi-agent request, where a message of one empty text is left out
    as any empty text (no short way for the usual message: ``Walk.run``); ``demote``: the option ``reasoning="text"``:
    reasoning from another provider, and the provider's own of no reasoning item, is text of the run of texts
    (:func:`reasoning_sent`)."""
    p = t.profile
    per_message = p.per_message
    if len(blocks) == 1 and type(blocks[0]) is TextBlock and not multi:  # (the usual message: one item, even empty)
        return per_message + t.words(blocks[0].text)
    n = 0
    texts: list[str] = []  # the run of texts of the message item not sent yet

    def flush() -> int:
        """The tokens of the message item the run of texts makes (none without texts); the run is emptied."""
        if not texts:
            return 0
        tokens = per_message + t.words("\n".join(texts))
        texts.clear()
        return tokens

    other = bool(label)  # (another agent's reasoning: not sent)
    items: list[list[Any]] = []  # each reasoning item: [item id, tokens of its parts, whether it is encrypted]
    after_item = False  # the item sent last is the last of ``items`` (a thinking block of its id joins it)
    for b in blocks:
        kind = type(b)
        if kind is TextBlock:
            if b.text:
                texts.append(label + b.text if label else b.text)
                label = ""
            continue
        if kind is ThinkingBlock:
            if is_carrier(b.metadata):  # (back on the message item before it, which it ends)
                if texts:
                    n += flush()
                    after_item = False
                continue
            part = None if other else reasoning_item(b, families)
            if part is None:  # (not sent: the formatter says why; demoted to text with reasoning="text")
                if demote and not other and reasoning_sent(b, p, families, True) == AS_TEXT:
                    texts.append(b.thinking)
                continue
            if not after_item or items[-1][0] != part[0]:
                n += flush()
                items.append([part[0], 0, False])
                after_item = True
            item = items[-1]
            item[1] += t.words(b.thinking)
            item[2] = item[2] or part[1] is not None
            continue
        if kind is HintBlock:
            n += t.words(b.hint) + per_message
        elif kind is ToolUseBlock:
            n += flush()
            args = _dumps(b.input) if b.content is None else b.content
            n += per_message + t.words(b.name) + t.words(args) + p.per_call
            after_item = False
        elif kind is ToolResultBlock:  # (a function_call_output item after the message's items)
            n += per_message + _blocks(t, b.output, False, output=True) + p.per_result
        elif kind in MEDIA:
            texts.append(block_label(b))
    n += flush()
    for _, tokens, encrypted in items:
        if encrypted:
            n += t.unsure_tokens(per_message + tokens, _REASONING_ITEM_ERROR)
    return n


def _output(t: _Tally, output: Sequence[Any]) -> int:
    """A tool result's output where it is not sent as one text (``result_text``), as ``result_join`` says: its texts
    and hints joined by newlines into one text (Gemini's; the Responses API's when it holds texts alone), its media
    priced after it; else each a part of its own (:func:`_blocks`, which leaves out a blank one where the request
    does: Anthropic's)."""
    join = t.profile.result_join
    if join == "parts" or (join == "texts" and any(type(b) is not TextBlock for b in output)):
        return _blocks(t, output, False, output=True)
    text, rest = _joined(output)
    if rest:  # (a medium sent as its placeholder joins the output text, after a newline if it has any: Gemini's)
        names: dict[int, str] = {}
        left: list[Any] = []
        for b in rest:
            if type(b) in MEDIA and t.sent_as_text(b, True):
                names[id(b)] = block_label(b)
            else:
                left.append(b)
        parts = {id(b) for b in left if type(b) in MEDIA}
        if parts and text and text_before(output, parts):  # (the text names the parts too: tool-result-media-reordered)
            names.update((k, block_label(b)) for b in left if (k := id(b)) in parts)
        if names:
            text = name_media(output, text, names)
            rest = left
    return t.words(text) + (_blocks(t, rest, False, output=True) if rest else 0)


def _joined(output: Sequence[Any]) -> tuple[str, list[Any]]:
    """A tool result's output as a request joins it into one text: its texts and hints joined by newlines, and its
    other blocks in order (:func:`_output` and :func:`_result_text` price them their ways)."""
    if len(output) == 1 and type(output[0]) is TextBlock:
        return output[0].text, []
    texts = []
    rest = []
    for b in output:
        kind = type(b)
        if kind is TextBlock:
            texts.append(b.text)
        elif kind is HintBlock:
            texts.append(b.hint)
        else:
            rest.append(b)
    return "\n".join(texts), rest


def _result_text(t: _Tally, call_id: str, output: Sequence[Any]) -> int:
    """A tool result as the chat family sends it (``result_text``): one text, its texts and hints joined by newlines
    and then its media's placeholders; where the provider takes media, they follow the results in a user message of
    their own, after a line naming the call."""
    text, rest = _joined(output)
    if not rest:
        return t.words(text)
    media = [b for b in rest if type(b) in MEDIA]
    n = t.words(name_media(output, text, {id(b): block_label(b) for b in media}))
    if media and not t.profile.text_only:
        sent = [b for b in media if not t.sent_as_text(b, False)]  # (a placeholder: named in the text already)
        if sent:
            n += t.profile.per_message + t.words(TOOL_MEDIA_HEAD.format(call_id)) + _blocks(t, sent, False)
    return n


#: the stated error of a provider's own tool (a server or built-in tool: its spec's ``own_tools``),
#: counted as its definition's JSON: the provider expands it as it sees fit (its own prompt), unpublished
_NATIVE_TOOL_ERROR: Final = 1.0


def _tool_defs(t: _Tally, tools: list[ToolDef]) -> int:
    if not tools:
        return 0
    p = t.profile
    n = p.tools_base
    own = 0
    for tool in tools:
        if tool.native is not None:  # (a provider's own tool, sent as given: its JSON, an estimate)
            own += t.words(_dumps(tool.native[1])) + p.per_tool
        elif p.tool_style == "typescript":
            n += t.words(_typescript(tool)) + p.per_tool
        else:
            shown: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
            if tool.description:
                shown["description"] = tool.description
            n += t.words(_dumps(shown)) + p.per_tool
    if p.tools_scale != 1.0:  # (measured on function declarations: an own tool's rendering is unknown, not scaled)
        n = math.ceil(n * p.tools_scale)
    return t.unsure_tokens(n, p.tools_error) + (t.unsure_tokens(own, _NATIVE_TOOL_ERROR) if own else 0)


def _typescript(tool: ToolDef) -> str:
    """A function definition as OpenAI shows it to the model: ``// description`` then
    ``type name = (_: {...}) => any;`` with each parameter's description as a comment."""
    lines = []
    if tool.description:
        lines.append(f"// {tool.description}")
    props = tool.parameters.get("properties")
    if isinstance(props, Mapping) and props:
        required = tool.parameters.get("required")
        if not isinstance(required, list):  # (no list of names, which the formatter sends as it is: none required)
            required = ()
        lines.append(f"type {tool.name} = (_: {{")
        for key, schema in props.items():
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                lines.append(f"// {schema['description']}")
            opt = "" if key in required else "?"
            lines.append(f"{key}{opt}: {_ts_type(schema)},")
        lines.append("}) => any;")
    else:
        lines.append(f"type {tool.name} = () => any;")
    return "\n".join(lines)


def _ts_type(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(_dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"{_ts_type(schema.get('items'))}[]"
    if kind == "object":
        props = schema.get("properties")
        if isinstance(props, Mapping):
            inner = ", ".join(f"{k}: {_ts_type(v)}" for k, v in props.items())
            return f"{{{inner}}}"
        return "object"
    if kind == "integer":
        return "number"
    if isinstance(kind, str):
        return kind
    return "any"


def _last_user_turn(messages: Sequence[Msg], drop: int, multi: bool, agent: str | None, history: bool) -> int:
    """The index of the last message the request sends as a user turn holding more than tool results (-1: none):
    where Anthropic's current turn starts (``thinking="current"``; a user turn of results alone continues the turn's
    tool loop). As the formatter shapes the request (:class:`~agentmsg.context._frames.Frames`): a user message with
    nothing to send (blank texts, where ``drop`` leaves them out) opens none; in multi-agent mode another speaker's
    turn is a user turn (a user message, another agent's assistant message of no call and no result), its first
    text sent with its label even when empty, and in the ``history`` layout a run of them is one user turn, opened by
    the first that sends a text or a medium; a hint of another message is a text of the user turn after it. (A user
    message the formatter leaves out, or another agent's turn, counted the current turn's thinking as an earlier
    turn's: a request of 1,239 tokens counted 36.)"""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        blocks: list[Any] = m.content
        if history and is_history_message(m, agent):
            if any(type(b) is TextBlock or type(b) in MEDIA for b in blocks):
                return i
            continue
        if m.role is _USER:
            labelled = multi
        elif multi and m.role is _ASSISTANT and not is_current_agent(m, agent) and not has_tool_use(m):
            if has_result(m):
                continue
            labelled = True
        else:
            # (a hint of an assistant or tool message is sent as a text of the user turn after it, once no call is
            # open: that turn holds more than results, and the message's thinking is an earlier turn's)
            if any(type(b) is HintBlock and kept(b.hint, drop) for b in blocks):
                return i
            continue
        for b in blocks:
            kind = type(b)
            if kind is TextBlock:
                if labelled or kept(b.text, drop):
                    return i
                labelled = False
            elif kind is HintBlock:
                if kept(b.hint, drop):
                    return i
            elif kind is not ToolResultBlock and kind is not ThinkingBlock:  # (a medium, a call: sent)
                return i
    return -1


class _Fold:
    """The text of the folded runs of other speakers' turns (multi-agent ``history`` layout) as ``history_parts``
    sends it: ``[prompt]<history>``, one line ``Name: text`` per text block, a line ``Name:`` before each medium (the
    text so far one part, the medium the next), ``</history>``; the prompt in the first run that sends a line alone.
    Each message is given the tokens of its own lines (:meth:`add`); what the parts' text costs beyond them (the
    prompt, the tags, the joining newlines) goes to the first message of the run that sends one (:meth:`close`), so
    the run's count is the tokens of the text it sends, exactly where the tokenizer is the provider's."""

    __slots__ = ("first", "lined", "lines", "prompt", "sent", "t")

    def __init__(self, t: _Tally, prompt: str) -> None:
        self.t = t
        self.prompt = prompt
        self.first = -1  # the message whose count carries the run's text beyond its lines (-1: no line yet)
        self.lines: list[str] = []  # the lines of the text part being built
        self.lined = 0  # the tokens of the run's lines, as given to their messages
        self.sent = 0  # the tokens of the run's text parts made so far

    def add(self, i: int, blocks: Sequence[Any], name: str) -> int:
        """The tokens of message ``i`` of the run (``name``: its speaker label): its lines, media and hints."""
        t = self.t
        n = 0
        for b in blocks:
            kind = type(b)
            if kind is TextBlock:
                line = f"{name}: {b.text}"
            elif kind in MEDIA:
                line = f"{name}:"
            else:
                if kind is HintBlock:
                    n += _blocks(t, (b,), False)
                continue
            if self.first < 0:
                self.first = i
                self.lines.append(self.prompt + "<history>")
            self.lines.append(line)
            k = t.words(line)
            self.lined += k
            n += k
            if kind is not TextBlock:  # (the text so far is a part, the medium the next)
                self.sent += t.words("\n".join(self.lines))
                self.lines = []
                n += _blocks(t, (b,), False, user=True)
        return n

    def close(self, counts: list[int]) -> None:
        """The run is over: its last text part (up to ``</history>``) made, what its parts cost beyond its lines
        added to the count of its first message that sent one. A run that sent no line sends nothing."""
        if self.first < 0:
            return
        self.lines.append("</history>")
        self.sent += self.t.words("\n".join(self.lines))
        counts[self.first] += self.sent - self.lined
        self.first = -1
        self.lines = []
        self.lined = self.sent = 0
        self.prompt = ""  # (only the first run that sends a line has it)


def _pieces(msg: Msg, cuts: list[tuple[int, int]]) -> list[Msg]:
    """The pieces of an assistant message of several model calls (:func:`~agentmsg.providers._request.walk.pieces`),
    each a copy of it holding its blocks, counted as the walks send them: a message each."""
    out = []
    for start, stop in cuts:
        piece = copy.copy(msg)
        piece.content = msg.content[start:stop]
        out.append(piece)
    return out


def provider_of(provider: Any, model: Any = None) -> Provider:
    """The Provider of ``provider`` (a registry name or a Provider: UnknownNameError, a KeyError too, for an
    unknown name), with ``model`` checked: a bad argument of the context functions is refused naming it (a
    ValidationError, rule ``type``), not a bare AttributeError from deep inside."""
    from agentmsg.providers import get

    if model is not None and not isinstance(model, str):
        raise ValidationError.single("/model", "type", f"model is a model name (a str) or None, not {model!r}")
    return get(provider)  # (neither a name nor a Provider: a ValidationError there)


def count_tokens(
    messages: Sequence[Msg],
    *,
    provider: str | Provider,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    options: FormatOptions | Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    agent_name: str | None = None,
) -> TokenCount:
    """The input tokens of a conversation for a provider (a registry name: ``openai``, ``anthropic``, ``gemini``,
    ``dashscope``, ``deepseek``, ``dashscope-compatible``; or a Provider, as ``get`` gives), offline, in one pass
    over the messages, as its spec's token profile says (``Spec.tokens``).

    ``model`` picks the vocabulary and image method where the provider has several (the profile's ``vocabs`` and
    ``models``; OpenAI: cl100k for gpt-4 and gpt-3.5, the patch method for gpt-4.1-mini/-nano). ``tools``: the tool
    definitions, as ``format_request`` takes them. ``options``: the formatter's options, as ``format_request`` takes
    them (:class:`~agentmsg.providers.FormatOptions` or a mapping): with ``repair`` the error result of each call left
    unanswered is counted (framed, on the message before which the formatter sends it, or on the last), and a result
    that answers no call is not. ``multi_agent`` and ``agent_name``: the multi-agent request, as ``format_request``
    takes them, in the layout the options say (``multi_agent_layout``): ``prefix``, each other speaker's turn a user
    turn whose first text starts ``[Name]: `` (another agent's calls and results sent as its own, its reasoning not);
    ``history``, each run of other speakers' turns one user turn, ``history_prompt`` (the first) and ``<history>``,
    a line ``Name: text`` per text and ``</history>``, counted on its messages (the prompt, tags and newlines on the
    first). Reasoning from another provider is not counted as reasoning (no formatter sends it so), nor is the
    provider's own reasoning its formatter leaves out (OpenAI Chat's, Anthropic's unsigned, a redacted one); with
    ``reasoning="text"`` each of them that the formatter sends as text in its place is counted as that text. Returns
    a :class:`TokenCount` (per message, tools, framing, the method and its stated error). Raises
    :class:`~agentmsg.UnknownNameError` (a KeyError too) for an unknown provider and
    :class:`~agentmsg.ValidationError` for tools that are not definitions or that the provider's formatter refuses (as
    it refuses them: two of one name, another provider's own tool, a custom tool it does not take), for options that are not the formatter's
    (``/options``), and for a provider or model of the wrong type (naming it)."""
    return _count(messages, False, provider, model, tools, options, multi_agent, agent_name)


def count_members(
    messages: Sequence[Msg],
    *,
    provider: str | Provider,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    options: FormatOptions | Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    agent_name: str | None = None,
    repairs: list[int] | None = None,
) -> TokenCount:
    """:func:`count_tokens` of messages that :func:`~agentmsg.message.members` gave (each role a MsgRole member, each
    block of an agentmsg class), not checked again: what :func:`agentmsg.context.trim` counts with, as it reads the
    messages once, for its plan and its counts alike. ``repairs``: a list of one 0 per message, where each message's
    share of the repair option's error results is added (counted in its count: those sent before it, and on the last
    one those sent after it), so that what a message sends itself can be told (trim's: a message that sends nothing
    but counts a repair result goes with the call it follows)."""
    return _count(messages, True, provider, model, tools, options, multi_agent, agent_name, repairs)


def _count(
    messages: Sequence[Msg],
    checked: bool,
    provider: str | Provider,
    model: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    options: FormatOptions | Mapping[str, Any] | None,
    multi_agent: bool,
    agent_name: str | None,
    repairs: list[int] | None = None,
) -> TokenCount:
    """:func:`count_tokens`; ``checked``: the messages are :func:`~agentmsg.message.members`' already; ``repairs``:
    :func:`count_members`'."""
    spec = provider_of(provider, model).spec
    profile = (spec.tokens or _GENERIC).for_model(model)
    opts = as_options(options)
    if not checked:
        messages = members(messages)  # (refuses what is no list of messages, naming the item)
    defs = normalize_tools(tools)
    check_tools(defs, spec)  # (the request counted is the formatter's: what it refuses is refused, as it refuses it)
    # (the vocabulary after the checks: refusing bad input loads none, which costs a fresh process 1-2 s)
    text = counter(profile.vocab_for(model))
    t = _Tally(text, profile, model, opts)
    current = -1
    called: frozenset[int] = frozenset()
    mode = profile.thinking
    multi = bool(multi_agent)
    history = multi and opts.multi_agent_layout == "history"
    if mode == "current":
        current = _last_user_turn(messages, dropping(profile), multi, agent_name, history)
    elif mode == "tool_turns":  # (as the formatter sends it back: reasoning_current_turn_only)
        current, called = current_turn(messages), tool_turns(messages)
    recent = mode == "current" or mode == "tool_turns"
    items = profile.items  # an assistant message is sent as items (_items), its reasoning as reasoning items
    families = spec.families
    per_message = profile.per_message
    per_name = profile.per_name
    counts: list[int] = []
    result_text, text_only = profile.result_text, profile.text_only  # (the chat family joins a message's texts)
    demote = opts.reasoning == "text"  # (reasoning from another provider, or unsent own, sent as text)
    frames = Frames(profile, messages, opts.repair, multi, agent_name, history, families, demote)
    fold = _Fold(t, opts.history_prompt) if history else None
    repair = newline = -1  # the tokens of a repair result and of a joining newline (-1: not counted yet)
    of, append, every = frames.of, counts.append, mode == "all"  # (read once: the loop runs per message)
    for i, whole in enumerate(messages):
        # (a message of several model calls is sent as pieces, each framed as a message of its own: split_at)
        cuts = pieces(whole.content) if whole.role is _ASSISTANT and len(whole.content) > 1 else None
        for k, msg in enumerate((whole,) if cuts is None else _pieces(whole, cuts)):
            role = msg.role
            framed = of(i, msg, k > 0)  # (the messages, turns or items the request opens for it: 0 when merged)
            extra = 0  # what the request sends for it beyond its blocks, or leaves out of them
            if frames.repaired:  # (the error results the repair option sent before it)
                repair = repair if repair >= 0 else t.words(REPAIR_TEXT) + profile.per_result
                share = frames.repaired * repair + t.error_flags(frames.repaired)
                extra += share
                if repairs is not None:  # (with the frames they open, counted in framed)
                    repairs[i] += share + frames.repairs_framed * per_message
            if frames.newline:
                newline = newline if newline >= 0 else t.words("\n")
                extra += newline
            if frames.dropped:  # (results the repair option left out, as the blocks count them, and their error)
                unsure = t.unsure
                for b in frames.dropped:
                    extra -= _blocks(t, (b,), False) + (per_message if items and role is _ASSISTANT else 0)
                counted_again = t.unsure - unsure  # (their error, added again by the blocks just counted)
                t.unsure = unsure - counted_again  # (and taken back, as their tokens are)
            label = ""
            if multi:
                if fold is not None:
                    if frames.folded:  # (another speaker's turn, folded into the history turn)
                        append(framed * per_message + extra + fold.add(i, msg.content, speaker_label(msg)))
                        continue
                    fold.close(counts)
                if frames.prefixed or frames.other:
                    label = f"[{speaker_label(msg)}]: "
                    role = _USER if frames.prefixed else role
            if items and role is _ASSISTANT and frames.own:  # (each item framed; no speaker name is sent)
                append(_items(t, msg.content, families, label, multi, demote) + (framed - 1) * per_message + extra)
                continue
            thinking = every or (recent and (i > current or i in called))
            user = role is _USER
            # (its texts sent as one: the chat family's assistant and system messages, the Responses API's system ones)
            joined = (result_text and (not user or text_only) and role is not _TOOL) or (items and role is _SYSTEM)
            n = (
                framed * per_message
                + extra
                + _blocks(
                    t,
                    msg.content if role is _USER or role is _ASSISTANT else sent_by(role, msg.content),
                    thinking and not (user or label),
                    role is _ASSISTANT,
                    joined,
                    user,
                    label=label,
                    families=families,
                    demote=None if user or label else demote,
                )
            )
            if per_name and msg.name and frames.own:  # (a speaker name goes on a message of its own)
                n += per_name
            append(n)
        if cuts is not None:  # (the pieces' counts: the message's)
            counts[i:] = [sum(counts[i:])]
    if fold is not None:
        fold.close(counts)
    framed = frames.end()  # (the repair results of the calls open at the end, and the hints after them)
    if framed or frames.repaired:
        repair = repair if repair >= 0 else t.words(REPAIR_TEXT) + profile.per_result
        share = framed * per_message + frames.repaired * repair + t.error_flags(frames.repaired)
        counts[-1] += share
        if repairs is not None and frames.repaired:  # (the hints' frames with them: they go with the last message)
            repairs[-1] += share
    tool_tokens = _tool_defs(t, defs)
    overhead = profile.priming
    total = sum(counts) + tool_tokens + overhead
    exact = text.exact and profile.own
    method = f"tokenizer:{text.name}" if exact else "estimate"
    text_error = 0.0 if exact else (profile.text_error if text.exact else _CHARS_ERROR)
    error = None if exact and t.unsure == 0 else round(text_error + t.unsure / max(total, 1), 3)
    return TokenCount(
        total=total,
        messages=tuple(counts),
        tools=tool_tokens,
        overhead=overhead,
        method=method,
        error=error,
        missing=text.missing if profile.own else None,
    )


def profiled() -> tuple[str, ...]:
    """The registry names whose spec has a token profile (``Spec.tokens``; every provider of the registry)."""
    from agentmsg.providers import NAMES, get

    return tuple(name for name in NAMES if get(name).spec.tokens is not None)
