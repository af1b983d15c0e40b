"""Prompt-cache markers: reading them from a conversation, and placing them in a request.

The marker is one metadata key, AgentScope Java's ``_cache_control`` (``MARKER``): on a message, ``true`` (the
message's last block is a breakpoint) or ``{"blocks": [j, ...], "ttl": "5m" | "1h", "name": "..."}``; on a tool
definition (a key beside ``name``), the same value marks the tool list up to that tool. Text and media blocks have no
metadata in the schema (and AgentScope Java drops keys it does not know from a block), so a block is marked from its
message's metadata, by index: the map survives a trip through Java whole.

Each provider says what it does with a marker (its field table's ``metadata._cache_control`` row):

* Anthropic: ``cache_control: {"type": "ephemeral", "ttl"?}`` on the marked block (a tool definition, a system block,
  a message block; walking back to the nearest block that takes one: a thinking block or an empty text does not), at
  most four breakpoints (:func:`place`: the tools' and system prompt's first, then the latest; the rest are
  ``cache-breakpoint-dropped``); a ``1h`` breakpoint after a ``5m`` one is refused by the API (``cache-ttl-order``);
* DashScope (both modes): ``cache_control: {"type": "ephemeral"}`` on the last content part of the marked message
  (content in its list form), at most four; one lifetime (five minutes: a ``ttl`` is ``cache-ttl-dropped``); a tool
  definition takes none (a marker in the messages caches the tools before them: ``cache-breakpoint-dropped``);
* Gemini: a marker with a ``name`` (or the ``cached_content`` parameter) names an explicit cache, ``cachedContent``;
  what it holds is not sent (``cached-content-used``); without one, Gemini caches implicitly (``cache-automatic``);
* OpenAI gpt-5.6 and later: ``prompt_cache_breakpoint: {"mode": "explicit"}`` on the marked message's last content
  part, at most four, the request's lifetime (a ``ttl`` is ``cache-ttl-dropped``);
* other OpenAI models, DeepSeek: the provider caches prompt prefixes on its own (``cache-automatic``); OpenAI takes a
  ``prompt_cache_key`` parameter, passed through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, Final

import attrs

from agentmsg.errors import ValidationError
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request.context import Context

__all__ = [
    "LIMIT",
    "MARKER",
    "TTLS",
    "Breakpoint",
    "Mark",
    "automatic",
    "message_marks",
    "parse_mark",
    "place",
    "tool_mark",
]

#: The metadata key of a prompt-cache marker (AgentScope Java's ``MessageMetadataKeys.CACHE_CONTROL``)
MARKER: Final = "_cache_control"
#: The lifetimes a marker may ask for
TTLS: Final = ("5m", "1h")
#: The most breakpoints Anthropic and DashScope take in one request
LIMIT: Final = 4


@attrs.frozen
class Mark:
    """A marker read: ``blocks`` (indexes into the message's content; None: its last block), ``ttl``, ``name``."""

    blocks: tuple[int, ...] | None = None
    ttl: str | None = None
    name: str | None = None


def parse_mark(value: Any) -> Mark | str | None:
    """The :class:`Mark` a marker value means, None for no marker (absent, ``false``), or a string saying why the
    value is no marker (a message built in code is not checked against the schema)."""
    if value is None or value is False:
        return None
    if value is True:
        return Mark()
    if not isinstance(value, Mapping):
        return f"a cache marker is true or an object, not {type(value).__name__}"
    extra = sorted(set(value) - {"blocks", "ttl", "name"})
    if extra:
        return f"a cache marker takes blocks, ttl and name, not {', '.join(map(repr, extra))}"
    blocks = value.get("blocks")
    if blocks is not None and (
        not isinstance(blocks, list)
        or not blocks
        or not all(type(j) is int and j >= 0 for j in blocks)  # (bool is no index)
    ):
        return "a cache marker's blocks are a non-empty list of block indexes"
    ttl = value.get("ttl")
    if ttl is not None and ttl not in TTLS:
        return f"a cache marker's ttl is one of {', '.join(TTLS)}, not {ttl!r}"
    name = value.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        return "a cache marker's name is a non-empty string"
    return Mark(tuple(sorted(set(blocks))) if blocks is not None else None, ttl, name)


_metadata = attrgetter("metadata")


def tool_mark(tool: Mapping[str, Any], spec: Mapping[str, Any], i: int) -> tuple[str, Mark] | None:
    """Tool definition ``i``'s prompt-cache marker (``_cache_control`` beside its name, or beside ``type: function``:
    in ``spec``, its ``function`` object, or the definition itself) as (its pointer, the :class:`Mark`), None for
    none, checked (a value that is no marker is refused, rule ``type``, as a marker with ``blocks`` or a ``name``).
    Read by the formatters (``normalize_tools``) and by ``agentmsg.context.place_cache_markers`` alike."""
    pointer = f"/tools/{i}/{MARKER}"
    value = tool.get(MARKER)
    if value is None and spec is not tool:
        value = spec.get(MARKER)
        pointer = f"/tools/{i}/function/{MARKER}"
    mark = parse_mark(value)
    if isinstance(mark, str):
        raise ValidationError.single(pointer, "type", mark)
    if mark is not None and (mark.blocks is not None or mark.name is not None):
        raise ValidationError.single(pointer, "type", "a tool's cache marker takes a ttl only (true, or {ttl})")
    return None if mark is None else (pointer, mark)


def message_marks(ctx: Context, messages: Sequence[Msg]) -> dict[int, Mark] | None:
    """The markers of ``messages`` (message index -> :class:`Mark`), None when there is none; a value that is no
    marker is said (``cache-breakpoint-dropped``) and left out. One dictionary lookup per message that holds metadata."""
    if not any(map(_metadata, messages)):  # (the usual conversation holds no message metadata: one pass in C)
        return None
    found: dict[int, Mark] | None = None
    for i, msg in enumerate(messages):
        meta = msg.metadata
        if meta and MARKER in meta:
            mark = parse_mark(meta[MARKER])
            if isinstance(mark, str):
                ctx.report(f"/{i}/metadata/{MARKER}", "cache-breakpoint-dropped", f"{mark}: not sent")
            elif mark is not None:
                if found is None:
                    found = {}
                found[i] = mark
    return found


def block_indexes(mark: Mark, content: Sequence[Any]) -> frozenset[int]:
    """The block indexes a marker marks in a message holding ``content`` (an index beyond it is kept: said when
    placed)."""
    if mark.blocks is None:
        return frozenset((len(content) - 1,)) if content else frozenset()
    return frozenset(mark.blocks)


@attrs.define
class Breakpoint:
    """One marker as a request places it: ``pointer`` (into the conversation, ``/3/metadata/_cache_control`` or
    ``/tools/0/_cache_control``), ``ttl``, ``part`` (the request's dict that takes the marker, None: no part takes
    it, ``why`` says), ``stable`` (on a tool or a system prompt: kept first)."""

    pointer: str
    ttl: str | None
    part: dict[str, Any] | None
    stable: bool = False
    why: str = ""


def place(
    ctx: Context,
    points: Iterable[Breakpoint],
    put: Callable[[dict[str, Any], str | None], None],
    *,
    limit: int = LIMIT,
    ttl_order: bool = False,
) -> list[Breakpoint]:
    """Put the breakpoints of a request (given in request order) on their parts with ``put(part, ttl)``: the ones
    with no part are said (``cache-breakpoint-dropped``, their ``why``); two on one part are one; beyond ``limit``,
    the tools' and system prompt's are kept first, then the latest others, and the rest are said
    (``cache-breakpoint-dropped``). ``ttl_order``: a ``1h`` breakpoint after a ``5m`` one is said (``cache-ttl-order``,
    an error: Anthropic refuses it). Returns the breakpoints placed, in request order."""
    usable: list[Breakpoint] = []
    seen: dict[int, Breakpoint] = {}
    for p in points:
        if p.part is None:
            ctx.report(p.pointer, "cache-breakpoint-dropped", f"{p.why}: the cache marker is not sent")
            continue
        same = seen.get(id(p.part))
        if same is not None:  # (two markers walked back to one part: one breakpoint, the longer lifetime)
            if p.ttl == "1h":
                same.ttl = "1h"
            continue
        seen[id(p.part)] = p
        usable.append(p)
    if len(usable) > limit:
        stable = [k for k, p in enumerate(usable) if p.stable]
        rest = [k for k, p in enumerate(usable) if not p.stable]
        keep = set(stable[-limit:])
        room = limit - len(keep)
        keep.update(rest[len(rest) - room :] if room > 0 else [])
        for k, p in enumerate(usable):
            if k not in keep:
                ctx.report(
                    p.pointer,
                    "cache-breakpoint-dropped",
                    f"{ctx.provider} takes at most {limit} cache breakpoints: kept the tools' and system prompt's,"
                    " then the latest; this one is not sent",
                )
        usable = [p for k, p in enumerate(usable) if k in keep]
    short = False
    for p in usable:
        put(p.part, p.ttl)  # type: ignore[arg-type]
        if ttl_order:
            if p.ttl == "1h" and short:
                ctx.report(
                    p.pointer,
                    "cache-ttl-order",
                    f"a 1h cache breakpoint after a 5m one: {ctx.provider} refuses the request (longer lifetimes first)",
                )
            short = short or p.ttl != "1h"
    return usable


def automatic(ctx: Context, marks: Mapping[int, Mark] | None, tools: Sequence[Any], why: str) -> None:
    """Say once (``cache-automatic``, at the first marker) that the provider caches on its own and takes no marker."""
    pointer = None
    if tools:
        pointer = next((t.cache[0] for t in tools if t.cache is not None), None)  # (where the marker is)
    if pointer is None and marks:
        pointer = f"/{min(marks)}/metadata/{MARKER}"
    if pointer is not None:
        ctx.report(pointer, "cache-automatic", f"{why}: cache markers are not sent")


def is_system(msg: Msg) -> bool:
    return msg.role is MsgRole.SYSTEM


def points(
    ctx: Context,
    messages: Sequence[Msg],
    cuts: Iterable[tuple[int, int | None, Any]],
    part_of: Callable[[Any], dict[str, Any] | None] | None = None,
) -> list[Breakpoint]:
    """The breakpoints of the messages' markers from a walk's cuts ((message index, block index or None, part)),
    in request order: the system prompt's first (Anthropic sends it before the messages), then the others as the walk
    made them. ``part_of`` turns a part the walk recorded into the request's dict (the system prompt's texts)."""
    marks: Mapping[int, Mark] = ctx.cache_marks or {}
    system: list[Breakpoint] = []
    others: list[Breakpoint] = []
    for i, j, part in cuts:
        mark = marks[i]
        msg = messages[i]
        pointer = f"/{i}/metadata/{MARKER}"
        why = ""
        if part is not None and part_of is not None:
            part = part_of(part)
        if part is None:
            if j is not None and j >= len(msg.content):
                pointer += f"/blocks/{mark.blocks.index(j) if mark.blocks else 0}"
                why = f"message {i} has no block {j}"
            else:
                why = "nothing there takes a marker (a thinking block, an empty text, or a block not sent)"
        stable = is_system(msg)
        (system if stable else others).append(Breakpoint(pointer, mark.ttl, part, stable, why))
    return system + others


def anthropic_put(part: dict[str, Any], ttl: str | None) -> None:
    """Anthropic's marker: ``cache_control: {"type": "ephemeral", "ttl"?}``."""
    part["cache_control"] = {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def tool_points(tools: Sequence[Any], parts: Sequence[dict[str, Any]] | None, why: str = "") -> list[Breakpoint]:
    """The breakpoints of the tools' markers (``parts``: the tool definitions as sent, in order; None: the provider
    takes no marker on a tool, ``why`` says)."""
    out = []
    for k, t in enumerate(tools):
        if t.cache is not None:
            pointer, mark = t.cache
            part = parts[k] if parts is not None and k < len(parts) else None
            out.append(Breakpoint(pointer, mark.ttl, part, True, why))
    return out


def chat_put(
    typed: bool, key: str = "cache_control", value: Any = None
) -> Callable[[dict[str, Any], str | None], None]:
    """The marker on a chat message (an entry of ``messages``): ``key: value`` on its last content part, the content
    in its list form (``typed``: OpenAI-style ``{"type": "text", ...}`` parts, else DashScope native ``{"text": ...}``).
    Default: DashScope's ``cache_control: {"type": "ephemeral"}``."""
    marker = {"type": "ephemeral"} if value is None else value

    def put(entry: dict[str, Any], ttl: str | None) -> None:
        content = entry["content"]
        if isinstance(content, str):
            part: dict[str, Any] = {"type": "text", "text": content} if typed else {"text": content}
            entry["content"] = [part]
        else:
            part = content[-1]
        part[key] = dict(marker)

    return put


def one_lifetime(ctx: Context, found: Iterable[Breakpoint], lifetime: str | None = "5m") -> list[Breakpoint]:
    """A provider whose cache has one lifetime: a breakpoint asking for another is said (``cache-ttl-dropped``);
    ``lifetime`` None: a breakpoint takes no lifetime of its own (OpenAI: the request's)."""
    out = []
    for p in found:
        if p.ttl is not None and p.ttl != lifetime and p.part is not None:
            why = (
                f"{ctx.provider}'s cache lives {lifetime} (renewed on each hit)"
                if lifetime is not None
                else f"{ctx.provider}'s breakpoints take the request's lifetime (prompt_cache_options.ttl)"
            )
            ctx.report(p.pointer, "cache-ttl-dropped", f"{why}: the marker's ttl {p.ttl} is not sent")
            p.ttl = None
        out.append(p)
    return out


def place_chat(ctx: Context, messages: Sequence[Msg], cuts: Any, tools: Sequence[Any], typed: bool) -> None:
    """DashScope's markers (both modes): on the marked messages' last content parts, at most four, one lifetime; a
    tool definition takes none."""
    why = f"{ctx.provider} takes no marker on a tool definition (a marker in the messages caches the tools before them)"
    found = tool_points(tools, None, why) + one_lifetime(ctx, points(ctx, messages, cuts))
    place(ctx, found, chat_put(typed))


#: OpenAI's explicit breakpoint on a content part (gpt-5.6 and later: provider-fields.md 1.4)
OPENAI_BREAKPOINT: Final = {"mode": "explicit"}


def place_openai(ctx: Context, messages: Sequence[Msg], cuts: Any, tools: Sequence[Any]) -> None:
    """OpenAI's explicit breakpoints (gpt-5.6 and later): ``prompt_cache_breakpoint: {"mode": "explicit"}`` on the
    marked messages' last content parts, at most four (the API writes the latest ones); a breakpoint takes the
    request's lifetime; a tool definition takes none (a breakpoint in the messages covers the tools before them)."""
    why = f"{ctx.provider} takes no breakpoint on a tool definition (one in the messages covers the tools before them)"
    found = tool_points(tools, None, why) + one_lifetime(ctx, points(ctx, messages, cuts), None)
    place(ctx, found, chat_put(True, "prompt_cache_breakpoint", OPENAI_BREAKPOINT))
