"""Placing prompt-cache markers where they pay: :func:`place_cache_markers`.

A marker is message metadata ``_cache_control`` (AgentScope Java's key; ``true`` or ``{"blocks", "ttl", "name"}``)
or the same key on a tool definition; each provider's formatter sends it its own way (docs/context.md, Prompt
caching). A breakpoint pays where what comes before it is sent again unchanged in the next requests: the tool
definitions, the system prompt, and the conversation up to the newest user turn (the last stable turn). The
providers that take markers (their spec's ``cache_markers``, providers/spec.py: where they take them, which
lifetimes, which models) take at most four (:data:`~agentmsg.providers._request.cache.LIMIT`); the others (OpenAI
before gpt-5.6, DeepSeek, Gemini without an explicit cache) cache prefixes on their own, and get none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from agentmsg.blocks import HintBlock, TextBlock, ThinkingBlock, ToolUseBlock
from agentmsg.errors import ValidationError
from agentmsg.message import Msg, MsgRole, members
from agentmsg.providers._request.cache import LIMIT, MARKER, TTLS, Mark, parse_mark, tool_mark

if TYPE_CHECKING:
    from agentmsg.providers.base import Provider

__all__ = ["CacheMarker", "CachePlacement", "place_cache_markers"]


@attrs.frozen
class CacheMarker:
    """One marker placed: ``where`` (``tools``, ``system`` or ``turn``), ``pointer`` (``/tools/3`` or ``/5``: the
    tool definition or message that holds it, in the result), and ``value`` (the marker set there)."""

    where: str
    pointer: str
    value: Any


@attrs.frozen
class CachePlacement:
    """What :func:`place_cache_markers` made: ``messages`` and ``tools`` (new lists; the marked messages and tool
    definitions are copies, the others the ones given), ``placed`` (the markers it set, in request order) and
    ``notes`` (why it placed fewer: the provider caches on its own, markers already there, a prefix too short)."""

    messages: list[Msg]
    tools: list[dict[str, Any]] | None
    placed: tuple[CacheMarker, ...] = ()
    notes: tuple[str, ...] = ()


def place_cache_markers(
    messages: Sequence[Msg],
    *,
    provider: str | Provider,
    tools: Sequence[Mapping[str, Any]] | None = None,
    ttl: str | None = None,
    limit: int = LIMIT,
    count: Callable[[Sequence[Msg]], int] | None = None,
    min_tokens: int = 1024,
    model: str | None = None,
) -> CachePlacement:
    """Mark, for ``provider`` (a registry name or a Provider, as ``get`` gives; what it takes is its spec's
    ``cache_markers``), the prefixes worth caching: the tool definitions (the last tool, where it takes a marker
    there: Anthropic; DashScope takes none, and its system prompt's marker caches the tools before it), the system
    prompt (the last of the leading system messages) and the last stable turn (the message before the newest user
    message), each on its last block that takes a marker (not reasoning, a hint or an empty text), with ``ttl``
    (``5m`` or ``1h``, where it takes lifetimes: Anthropic; the others have one lifetime). The markers already in
    the conversation count against ``limit`` (four: Anthropic's and DashScope's) and are kept; none is placed twice.
    ``count`` (a token counter for the provider, ``count(messages) -> int``) with ``min_tokens``: a prefix shorter
    than that (the providers do not cache it) gets no marker. ``model``: OpenAI's gpt-5.6 and later take explicit
    breakpoints (on messages, not tools), the other OpenAI models none. Nothing given is changed: the result holds
    new lists and copies. Raises :class:`~agentmsg.UnknownNameError` (a KeyError too) for a name the registry does
    not hold (as ``get``, ``count_tokens`` and ``trim`` do), and :class:`~agentmsg.ValidationError` naming an argument of the wrong kind (a ``limit`` that is
    no int >= 0, a ``count`` that gives no number) and a tool's marker that is none, as the formatters refuse it."""
    if ttl is not None and ttl not in TTLS:
        raise ValidationError.single("/ttl", "enum", f"ttl is one of {', '.join(TTLS)}, not {ttl!r}")
    for arg, given in (("limit", limit), ("min_tokens", min_tokens)):
        if isinstance(given, bool) or not isinstance(given, int) or given < 0:
            raise ValidationError.single(f"/{arg}", "type", f"{arg} is an int >= 0, not {given!r}")
    if count is not None and not callable(count):
        raise ValidationError.single("/count", "type", f"count is a function of the messages, not {count!r}")
    msgs = list(members(messages))  # (a plain-string role, a caller's block subclass: as their members, in a copy)
    if tools is not None and (
        isinstance(tools, (str, bytes, Mapping))
        or not isinstance(tools, Sequence)
        or not all(isinstance(t, Mapping) for t in tools)
    ):
        raise ValidationError.single("/tools", "type", "tools must be a list of tool definitions")
    tool_list = [dict(t) for t in tools] if tools is not None else None
    for k, t in enumerate(tool_list or ()):  # (a value that is no marker: refused as the formatters refuse it)
        spec = t.get("function")
        spec = spec if isinstance(spec, Mapping) else t
        if MARKER in t or MARKER in spec:
            tool_mark(t, spec, k)
    from agentmsg.context.count import provider_of

    spec = provider_of(provider, model).spec  # (an unknown name: UnknownNameError, as count_tokens and trim raise it)
    name, rule = spec.name, spec.cache_markers
    if rule is None or not rule.takes(model):
        return CachePlacement(
            msgs,
            tool_list,
            notes=(f"{name} caches prompt prefixes on its own (or takes no marker): no marker placed",),
        )
    takes = rule.tools
    notes: list[str] = []
    if ttl is not None and not rule.lifetimes:
        notes.append(f"{name}'s cache has one lifetime: ttl {ttl} not set")
        ttl = None
    value: Any = True if ttl is None else {"ttl": ttl}
    taken = _existing(msgs, tool_list or [], rule.blocks, notes)
    room = limit - taken
    if taken:
        notes.append(f"{taken} breakpoint(s) already in the conversation or tools, kept")
    placed: list[CacheMarker] = []

    def pays(end: int) -> bool:
        """Whether the prefix up to message ``end`` (excluded) is long enough to be cached."""
        if count is None:
            return True
        tokens = count(msgs[:end])
        if isinstance(tokens, bool) or not isinstance(tokens, (int, float)):
            raise ValidationError.single(
                "/count", "type", f"count returns a number of tokens, not {type(tokens).__name__}"
            )
        if not 0 <= tokens < math.inf:  # (NaN, which compares false to any length, and below 0 or infinite)
            raise ValidationError.single("/count", "minimum", f"count returns a number of tokens >= 0, not {tokens!r}")
        if tokens >= min_tokens:
            return True
        notes.append(f"the prefix up to message {end - 1} is under {min_tokens} tokens: not marked")
        return False

    # the tools (Anthropic), the system prompt, the last stable turn: in request order, the most stable first
    if tool_list and takes and room > 0:
        k = len(tool_list) - 1
        if not any(_tool_mark(t) is not None for t in tool_list):
            tool_list[k] = {**tool_list[k], MARKER: value}
            placed.append(CacheMarker("tools", f"/tools/{k}", value))
            room -= 1
    system = _leading_system(msgs)
    if system is not None and room > 0 and not _marked(msgs[system].metadata) and pays(system + 1):
        mark = _mark_for(msgs[system], value)
        if mark is not None:
            msgs[system] = _with_marker(msgs[system], mark)
            placed.append(CacheMarker("system", f"/{system}", mark))
            room -= 1
    stable = _last_stable(msgs)
    if stable is not None and stable != system and room > 0:
        if _marked(msgs[stable].metadata):
            notes.append(f"message {stable} (the last stable turn) is marked already")
        elif pays(stable + 1):
            mark = _mark_for(msgs[stable], value, rule.blocks)
            if mark is None:
                notes.append(f"message {stable} has no block that takes a marker")
            else:
                msgs[stable] = _with_marker(msgs[stable], mark)
                placed.append(CacheMarker("turn", f"/{stable}", mark))
                room -= 1
    if room <= 0 and len(placed) < 3:
        notes.append(f"{name} takes at most {limit} breakpoints: no room for more")
    if rule.lifetimes_in_order and placed:
        placed = _lifetimes_in_order(msgs, tool_list or [], placed, notes, rule.blocks)
    return CachePlacement(msgs, tool_list, tuple(placed), tuple(notes))


def _ttl(value: Any) -> str:
    mark = parse_mark(value)
    return mark.ttl or "5m" if mark is not None and not isinstance(mark, str) else "5m"


def _lifetimes_in_order(
    msgs: list[Msg], tools: list[dict[str, Any]], placed: list[CacheMarker], notes: list[str], per_block: bool
) -> list[CacheMarker]:
    """A provider whose spec says ``lifetimes_in_order`` (Anthropic) refuses a 1h breakpoint after a 5m one (request
    order: tools, system, messages). A marker placed here (``placed`` is in request order) takes the lifetime of the
    markers already there when its own would break that order: 5m after a 5m one, else 1h before a 1h one (said in
    the notes)."""

    def order(pointer: str) -> tuple[int, int]:
        if pointer.startswith("/tools/"):
            return (0, int(pointer.rsplit("/", 1)[1]))
        i = int(pointer[1:])
        return (1 if msgs[i].role is MsgRole.SYSTEM else 2, i)

    ours = {p.pointer for p in placed}
    given: list[tuple[tuple[int, int], str]] = []
    for k, t in enumerate(tools):
        mark = _tool_mark(t)
        if f"/tools/{k}" not in ours and mark is not None:
            given.append((order(f"/tools/{k}"), _ttl(mark)))
    for i, m in enumerate(msgs):
        if f"/{i}" not in ours and _marked(m.metadata) and _sent(m, per_block):  # (one sent nowhere binds none)
            given.append((order(f"/{i}"), _ttl(m.metadata[MARKER])))
    out = []
    for p in placed:
        at = order(p.pointer)
        ttl = _ttl(p.value)
        want = ttl
        if any(o < at and t == "5m" for o, t in given):  # (a 1h here would be refused; a later 1h is so already)
            want = "5m"
        elif any(o > at and t == "1h" for o, t in given):
            want = "1h"
        given.append((at, want))  # (the helper's own markers, in request order, bind the later ones too)
        if want != ttl:
            value = {**(p.value if isinstance(p.value, dict) else {}), "ttl": want}
            notes.append(f"{p.pointer}: ttl {want}, as the markers already there ask (longer lifetimes first)")
            p = CacheMarker(p.where, p.pointer, value)
            if p.where == "tools":
                k = int(p.pointer.rsplit("/", 1)[1])
                tools[k] = {**tools[k], MARKER: value}
            else:
                i = int(p.pointer[1:])
                msgs[i] = msgs[i].copy(metadata={**msgs[i].metadata, MARKER: value})
        out.append(p)
    return out


def _marked(meta: Mapping[str, Any] | None) -> bool:
    if not meta or MARKER not in meta:
        return False
    mark = parse_mark(meta[MARKER])
    return mark is not None and not isinstance(mark, str)


def _existing(msgs: Sequence[Msg], tools: Sequence[Mapping[str, Any]], per_block: bool, notes: list[str]) -> int:
    """The breakpoints the conversation and tools hold already, counted as the request sends them: a tool's marker
    one, a message's one per distinct block it lands on where the provider marks blocks (``per_block``: Anthropic;
    a named block that takes no marker walks back to the nearest one before it that does, :func:`_lands_on`), else
    one for the message (a marker naming only blocks beyond it: none, the formatter sends it nowhere). A block named
    twice, or two named blocks that land on one, is one breakpoint, as the formatters merge them (a duplicate index
    is said in ``notes``)."""
    n = 0
    for i, m in enumerate(msgs):
        meta = m.metadata
        if not meta or MARKER not in meta:
            continue
        mark = parse_mark(meta[MARKER])
        if mark is None or isinstance(mark, str):
            continue
        named = meta[MARKER].get("blocks") if mark.blocks is not None else None
        if named is not None and mark.blocks is not None and len(named) != len(mark.blocks):
            twice = sorted(j for j, times in Counter(named).items() if times > 1)
            notes.append(
                f"message {i}'s marker names block(s) {', '.join(map(str, twice))} more than once: one breakpoint each"
            )
        n += _breakpoints(m.content, mark, per_block)
    return n + sum(_tool_mark(t) is not None for t in tools)


def _breakpoints(content: Sequence[Any], mark: Mark, per_block: bool) -> int:
    """The breakpoints a message's marker (parsed: :func:`parse_mark`) makes in the request. Where markers go per
    block (Anthropic): one per distinct block it lands on (:func:`_lands_on`), a whole-message marker on the last part
    that takes one (:func:`_takes_marker`), so a message of none (empty, blank texts, reasoning alone) makes none.
    Where a marker goes on the message's last content part: one, unless it names only blocks beyond the content (a
    whole-message marker counts even on calls alone: DashScope's multimodal request sends it on their
    ``[{"text": ""}]``, its text request does not, and counting one not sent only leaves room unused)."""
    if mark.blocks is None:
        return int(not per_block or any(_takes_marker(b) for b in content))
    if per_block:
        return len(_lands_on(content, mark.blocks))
    return int(any(j < len(content) for j in mark.blocks))


def _sent(msg: Msg, per_block: bool) -> bool:
    """Whether the marker a message holds is sent (a breakpoint of the request, :func:`_breakpoints`)."""
    mark = parse_mark(msg.metadata[MARKER])
    return mark is not None and not isinstance(mark, str) and _breakpoints(msg.content, mark, per_block) > 0


def _lands_on(content: Sequence[Any], blocks: Sequence[int]) -> set[int]:
    """The blocks the breakpoints of a marker naming ``blocks`` land on, as the block-marking formatter (Anthropic's
    walk, ``Walk.cut``) places them: each named block, or when it takes no marker (reasoning, a hint, a text empty or
    of whitespace alone: :func:`_takes_marker`) the nearest before it that does; none for a block beyond the content
    or with none before it."""
    named = set(blocks)
    out = set()
    last = -1  # the last block so far that takes a marker
    for k, b in enumerate(content):
        if _takes_marker(b):
            last = k
        if k in named and last >= 0:
            out.add(last)
    return out


def _takes_marker(block: Any) -> bool:
    """Whether a block is a part of the request a marker can go on: not reasoning, a hint, or a text empty or of
    whitespace alone (the formatters leave it out)."""
    t = type(block)
    return not (t is ThinkingBlock or t is HintBlock or (t is TextBlock and not block.text.strip()))


def _tool_mark(tool: Mapping[str, Any]) -> Any:
    """A tool definition's marker (its ``_cache_control``, on the tool or, in OpenAI's form, on its ``function``), or
    None when it has none: the helper reads both forms alike, as the formatters do."""
    for holder in (tool, tool.get("function")):
        if isinstance(holder, Mapping) and _marked(holder):
            return holder[MARKER]
    return None


def _leading_system(msgs: Sequence[Msg]) -> int | None:
    """The last system message before the first other message (the system prompt's end), or None."""
    last = None
    for i, m in enumerate(msgs):
        if m.role is not MsgRole.SYSTEM:
            break
        last = i
    return last


def _last_stable(msgs: Sequence[Msg]) -> int | None:
    """The message before the newest user message (what the next requests send again unchanged), or None."""
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role is MsgRole.USER:
            return i - 1 if i > 0 else None
    return None


def _mark_for(msg: Msg, value: Any, per_block: bool = True) -> Any:
    """The marker for a message: ``value`` when its last block takes one, else the same naming the last block that
    does (reasoning, hints and empty text take none; a tool call none either where a marker goes on the message's
    last content part, not per block (``per_block`` False, the chat family: a call is no content part, and the
    formatter drops a marker on a message of calls alone), None when none does."""
    content: list[Any] = msg.content
    for j in range(len(content) - 1, -1, -1):
        b = content[j]
        if not _takes_marker(b) or (not per_block and type(b) is ToolUseBlock):
            continue
        if j == len(content) - 1:
            return value
        return {**(value if isinstance(value, dict) else {}), "blocks": [j]}
    return None


def _with_marker(msg: Msg, mark: Any) -> Msg:
    return msg.copy(metadata={**msg.metadata, MARKER: mark})
