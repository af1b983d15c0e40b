"""Tool definitions and tool choice, per provider.

Callers pass tools as JSON Schema function definitions, in either of two shapes::

    {"name": "get_weather", "description": "...", "parameters": {...JSON Schema...}}
    {"type": "function", "function": {"name": ..., "description": ..., "parameters": ..., "strict": true}}

(``input_schema`` is accepted for ``parameters``.) An OpenAI custom tool (GPT-5: free-text input, optionally
constrained by a grammar) is given as OpenAI has it::

    {"type": "custom", "custom": {"name": ..., "description": ..., "format": {"type": "grammar", ...}}}

(or with ``name``, ``description`` and ``format`` beside ``"type": "custom"``). Only a provider whose spec says
so (``custom_tools``) takes one; every other refuses it (:class:`~agentmsg.ValidationError`, rule ``enum``): it has
no tool whose input is free text.

A provider's own tool (a server or built-in tool, given as that provider has it: its spec's ``own_tools`` recognizes
it, in the provider's module) goes to that provider as given, in its place (Gemini: an entry of its own beside the
``functionDeclarations`` one), and every other refuses it (:class:`~agentmsg.ValidationError`, rule ``enum``,
:func:`refuse_native`): a function of its name would be another tool, which the application never defined.
:func:`check_tools` makes these refusals, that of two tools of one name and that of a ``type`` no tool has
(:func:`refuse_other_types`), for the formatters and the token count alike. A definition that is a mapping but no
dict is read once, as its dict; one that cannot be read is refused (rule ``json-value``, at its pointer).

``tool_choice`` is ``"auto"``, ``"none"``, ``"required"`` (``"any"`` is the same), or one tool:
``{"name": X}``, ``{"type": "function", "function": {"name": X}}``, ``{"type": "tool", "name": X}`` or
``{"type": "custom", "custom": {"name": X}}``; a provider's own tool by its type (``{"type": T}``), where its spec
says its tool_choice names one so (``OwnTools.by_type``); a tool_choice object of a provider's own
(``OwnTools.choice``), sent as given by that provider where a tool of the request is the one it forces
(:func:`check_own_choice`), refused (rule ``enum``) elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import attrs
import orjson

from agentmsg._codec.jsontext import (
    check_value_size,
    deeper_than,
    depth_error,
    exact_key,
    plainly_written,
    unwritten_at,
)
from agentmsg._codec.limits import limits
from agentmsg.errors import ValidationError, short_repr, with_article
from agentmsg.providers._request.cache import MARKER, TTLS, Mark, tool_mark
from agentmsg.providers._request.context import Context

if TYPE_CHECKING:
    from agentmsg.providers.spec import OwnTools, Spec

__all__ = [
    "ToolChoice",
    "ToolDef",
    "check_own_choice",
    "check_tools",
    "gemini_schema",
    "native_chosen",
    "normalize_tool_choice",
    "normalize_tools",
    "refuse_duplicate_names",
    "refuse_native",
    "refuse_other_types",
    "say_dropped_keys",
]


class ToolDef(NamedTuple):
    """A tool definition as the formatters read it (a named tuple: made once per tool and call, about 5x cheaper
    than a frozen attrs class, whose fields are each set through ``object.__setattr__``)."""

    name: str
    description: str | None
    parameters: dict[str, Any]
    strict: bool | None
    pointer: str
    #: An OpenAI custom tool's ``format``, checked, a grammar flat (``{}`` when it gives none: _custom_format); None
    #: for a function tool
    custom: dict[str, Any] | None = None
    #: the tool's prompt-cache marker (its ``_cache_control`` key: the tools up to this one are a breakpoint) and
    #: that key's pointer, or None
    cache: tuple[str, Mark] | None = None
    #: the keys of the definition (and of its ``function`` or ``custom`` object) that nothing maps, as (pointer, key):
    #: not sent by any provider, each said ``tool-key-dropped`` (:func:`say_dropped_keys`)
    dropped: tuple[tuple[str, str], ...] = ()
    #: a provider's own tool (its spec's ``own_tools`` recognizes it): that provider's registry name and its definition
    #: as given (less a ``_cache_control`` marker), sent as it is; None for a function or custom tool
    native: tuple[str, dict[str, Any]] | None = None
    #: the definition's ``type`` when it is none a tool has (not ``function``, ``custom``, nor any provider's own
    #: tool's): :func:`check_tools` refuses it (rule ``enum``); None for every other definition
    other_type: Any = None


@attrs.frozen
class ToolChoice:
    mode: str  # auto | none | required | tool
    name: str | None = None
    custom: bool = False  # the tool named is an OpenAI custom tool ({"type": "custom", ...})
    by_type: bool = False  # named by the type of a provider's own tool ({"type": ...}), not by a name
    #: a tool_choice object of a provider's own (its spec's ``OwnTools.choice``): that provider's registry name and the
    #: object as given, sent so where a tool of the request is the one it forces (``OwnTools.chooses``); None else
    own: tuple[str, dict[str, Any]] | None = None


_EMPTY_PARAMS: Final = {"type": "object", "properties": {}}
#: The levels a request body puts around a tool definition at most (Gemini: body, tools, a tool, its declarations,
#: a declaration): a definition nested deeper than ``limits.max_depth`` less these could not be written
TOOL_ROOM: Final = 6
#: the keys of a function tool's definition that are mapped (its ``function`` object's too; ``type`` only when it is
#: ``function``); of an OpenAI custom tool's (beside ``type: custom``, or in its ``custom`` object)
_FUNCTION_KEYS: Final = frozenset({"name", "description", "parameters", "input_schema", "strict", MARKER})
_FLAT_KEYS: Final = _FUNCTION_KEYS | {"type"}
#: the ``type`` of a flat function tool: ``function``, or ``custom`` as Anthropic spells a client tool (:func:`_client_tool`)
_TYPED: Final = ("function", "custom")
_WRAPPER_KEYS: Final = frozenset({"type", "function", MARKER})
_CUSTOM_KEYS: Final = frozenset({"name", "description", "format"})
_CUSTOM_FLAT_KEYS: Final = _CUSTOM_KEYS | {"type"}
_CUSTOM_WRAPPER_KEYS: Final = frozenset({"type", "custom"})
#: the keys of a custom tool's format: of a text one; of a grammar (beside its type, or in its ``grammar`` object)
_TEXT_FORMAT_KEYS: Final = frozenset({"type"})
_GRAMMAR_KEYS: Final = frozenset({"syntax", "definition"})
_GRAMMAR_SYNTAXES: Final = ("lark", "regex")
_WHY: Final = "no provider field maps it (or a key given beside it takes its place)"


def _own_tools() -> Iterator[tuple[str, OwnTools]]:
    """The registry's providers with tools of their own (``Spec.own_tools``), as (registry name, their tools). (Read at
    call time, for a definition that may be one: the registry imports this module.)"""
    from agentmsg.providers import providers

    for p in providers():
        if p.spec.own_tools is not None:
            yield p.spec.name, p.spec.own_tools


def _native(tool: Mapping[str, Any]) -> tuple[str, str] | None:
    """The provider whose own tool the definition is (its registry name), and the tool's name, as its spec's
    ``own_tools`` recognizes it; None for any other definition."""
    for name, own in _own_tools():
        if (tool_name := own.recognize(tool)) is not None:
            return name, tool_name
    return None


def _whose(provider: str) -> str:
    """How a refusal names a provider's own tool: ``an Anthropic``, ``a Gemini`` (its spec's title)."""
    from agentmsg.providers import get

    return with_article(get(provider).spec.title)


def normalize_tools(tools: Any) -> list[ToolDef]:
    if tools is None:
        return []
    # (`type(...) is list` / `is dict` first: an ABC's isinstance is a Python frame, about 1,500 instructions)
    if type(tools) is not list and (isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence)):
        raise ValidationError.single("/tools", "type", "tools must be a list of tool definitions")
    out = []
    for i, tool in enumerate(tools):
        try:
            out.append(_tool_def(tool, i))
        except ValidationError:
            raise
        except Exception as exc:  # (a mapping whose get, [] or keys raises, or whose keys lie: no JSON object)
            raise ValidationError.single(
                f"/tools/{i}",
                "json-value",
                f"the tool definition could not be read as a JSON object: {short_repr(exc)}",
            ) from exc
    return out


def _tool_def(tool: Any, i: int) -> ToolDef:
    """The :class:`ToolDef` of definition ``tool`` (``/tools/i``), checked. (A mapping that is no dict is read as
    its dict, once: a recognizer or a check never calls its methods again.)"""
    pointer = at = f"/tools/{i}"
    if type(tool) is not dict:
        if not isinstance(tool, Mapping):
            raise ValidationError.single(pointer, "type", "a tool definition must be an object")
        tool = dict(tool)
    room = limits.max_depth - TOOL_ROOM
    if not plainly_written(tool, room):
        try:  # (one sharing its members, written past limits.max_bytes: the same 1 MiB string a thousand times)
            check_value_size(tool, None, room)
        except ValidationError as exc:
            raise exc.under(pointer) from None
        # (NaN or an infinity: orjson would write null, another definition; bytes, a lone surrogate, a key that is no
        # string or int: the body could not be written, as too deep a definition could not; refused here, at the
        # leaf's pointer, so that the formatter and the count refuse it alike, not body_bytes alone)
        if (found := unwritten_at(tool, room, check_keys=True)) is not None:
            raise ValidationError.single(pointer + found[0], found[1], found[2])
        if deeper_than(tool, room, finite=True):
            raise depth_error(None, pointer)
    spec = tool
    kind = tool.get("type")
    if kind == "function" and isinstance(tool.get("function"), Mapping):
        spec = tool["function"]
        pointer += "/function"
    elif kind == "custom" and not _client_tool(tool):
        return _custom_tool(tool, pointer)
    elif "name" not in tool and ("functionDeclarations" in tool or "function_declarations" in tool):
        raise ValidationError.single(
            pointer,
            "type",
            "Gemini's tools wrapper ({functionDeclarations: [...]}) is not a tool definition: give each "
            "declaration in it as a tool ({name, description, parameters}); the Gemini formatter wraps them",
        )
    # (a provider's own tool, as the registry's specs recognize one; a plain function tool, with a name and no
    # type, is none: the registry is not asked)
    elif kind != "function" and (kind is not None or "name" not in tool) and (native := _native(tool)) is not None:
        cache = tool_mark(tool, tool, i) if MARKER in tool else None
        definition = {k: v for k, v in tool.items() if k != MARKER}
        return ToolDef(native[1], None, {}, None, pointer, cache=cache, native=(native[0], definition))
    name, description = _named(spec, pointer)
    params = spec.get("parameters", spec.get("input_schema"))
    if params is None:
        params = dict(_EMPTY_PARAMS)
    if type(params) is not dict and not isinstance(params, Mapping):
        raise ValidationError.single(pointer + "/parameters", "type", "parameters must be a JSON Schema object")
    strict = spec.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise ValidationError.single(pointer + "/strict", "type", "strict must be a boolean")
    # (tool_mark only for a tool with a marker key: its pointer's text and the call cost ~1% of a format call)
    cache = tool_mark(tool, spec, i) if MARKER in tool or (spec is not tool and MARKER in spec) else None
    dropped = _dropped(tool, spec, at, pointer)
    if cache is None and spec is tool and "cache_control" in tool and (cache := _anthropic_mark(tool, at)):
        dropped = tuple(d for d in dropped if d[0] != cache[0])  # (read as the marker: not dropped)
    # (a type that is neither a function tool's nor any provider's own: check_tools refuses it, naming the types)
    other = kind if kind is not None and kind not in _TYPED else None
    # (every field by position: keywords make the named tuple's __new__ cost ~1% of a format call)
    return ToolDef(name, description, dict(params), strict, pointer, None, cache, dropped, None, other)


def _dropped(tool: Mapping[str, Any], spec: Mapping[str, Any], at: str, pointer: str) -> tuple[tuple[str, str], ...]:
    """The keys of a function tool's definition (at ``at``) and of its ``function`` object (``spec``, at ``pointer``)
    that nothing reads, as (pointer, key): those outside :data:`_FUNCTION_KEYS`, ``input_schema`` beside
    ``parameters``, the object's ``_cache_control`` beside the definition's."""
    if spec is tool:
        known = _FLAT_KEYS if tool.get("type") in _TYPED else _FUNCTION_KEYS
        if tool.keys() <= known and ("input_schema" not in tool or "parameters" not in tool):
            return ()  # (the usual definition: one subset check in C, not a pointer built per key)
        out = _unknown(tool, at, known)
    else:
        out = _unknown(tool, at, _WRAPPER_KEYS)
        out += _unknown(spec, pointer, _FUNCTION_KEYS if tool.get(MARKER) is None else _FUNCTION_KEYS - {MARKER})
    if "input_schema" in spec and "parameters" in spec:
        out.append((f"{pointer}/input_schema", "input_schema"))
    return tuple(out)


def _unknown(obj: Mapping[str, Any], at: str, known: frozenset[str]) -> list[tuple[str, str]]:
    return [(f"{at}/{_esc(str(k))}", str(k)) for k in obj if k not in known]


def say_dropped_keys(ctx: Context, tools: list[ToolDef]) -> None:
    """Say each key of the tool definitions that is not sent (``tool-key-dropped``, lossy), at its pointer: a key no
    provider maps (another provider's spelling, a message's ``role``) is never dropped in silence."""
    for t in tools:
        for pointer, key in t.dropped:
            ctx.report(pointer, "tool-key-dropped", f"tool definition key {key!r} not sent: {_WHY}")


def check_tools(tools: list[ToolDef], spec: Spec) -> None:
    """Refuse the tool definitions ``spec``'s provider does not take (:class:`~agentmsg.ValidationError`, naming the
    first): two of one name (:func:`refuse_duplicate_names`), an OpenAI custom tool where its spec takes none
    (``custom_tools``, :func:`refuse_custom`), another provider's own tool (:func:`refuse_native`; its spec's
    ``own_tools`` are its own). The one check of them: the formatters' (``run_format``) and the token count's, which
    counts the request the formatter would send."""
    refuse_other_types(tools, spec)
    refuse_duplicate_names(tools)
    if not spec.custom_tools:
        refuse_custom(tools, spec.name)
    refuse_native(tools, spec.name, spec.name if spec.own_tools is not None else None)


def refuse_other_types(tools: list[ToolDef], spec: Spec) -> None:
    """Refuse a definition whose ``type`` no tool has (rule ``enum``: ``computer_use_9999``, ``7``), naming the
    types ``spec``'s provider takes: sent as a function of its name, it would be another tool than the one meant (a
    provider's own tool of a newer version, mistyped), whose definition the provider never sees."""
    for t in tools:
        if t.other_type is not None:
            own = spec.own_tools
            types = "'function'" + (" or 'custom' (free-text input)" if spec.custom_tools else "")
            if own is not None and own.types:
                types += f"; {spec.title}'s own tools: {own.types}"
            raise ValidationError.single(
                t.pointer + "/type",
                "enum",
                f"tool type {short_repr(t.other_type)} is none {spec.name} has (nor any provider agentmsg knows): "
                f"expected {types}",
            )


def refuse_duplicate_names(tools: list[ToolDef]) -> None:
    """Refuse two tools of one name in a request: each provider refuses it (and a call could name either). (A system
    prompt listing tools takes them as given.)"""
    first: dict[str, str] = {}
    for t in tools:
        if t.native is not None and "name" not in t.native[1]:
            continue  # (named by its type, as two MCP servers are: the provider says whether it takes both)
        before = first.setdefault(t.name, t.pointer)
        if before != t.pointer:
            raise ValidationError.single(
                t.pointer + "/name",
                "conflict",
                f"a tool is named {t.name!r} already ({before}): tool names are unique in a request",
            )


def _client_tool(tool: Mapping[str, Any]) -> bool:
    """A ``type: custom`` definition that is Anthropic's client tool (``{"type": "custom", "name", "input_schema"}``,
    as Anthropic spells a function tool), not an OpenAI custom tool: it has an ``input_schema`` and no ``format`` or
    ``custom`` object, which an OpenAI custom tool would have in its place (its input is text)."""
    return "input_schema" in tool and "format" not in tool and "custom" not in tool


def _anthropic_mark(tool: Mapping[str, Any], at: str) -> tuple[str, Mark] | None:
    """A tool definition's ``cache_control`` as Anthropic spells one (``{"type": "ephemeral", "ttl"?: "5m" | "1h"}``),
    read as the definition's prompt-cache marker (each provider then does with it what it does with a marker);
    None for any other value, which stays a dropped key (``tool-key-dropped``)."""
    value = tool["cache_control"]
    if not isinstance(value, Mapping) or value.get("type") != "ephemeral" or not value.keys() <= {"type", "ttl"}:
        return None
    ttl = value.get("ttl")
    if ttl is not None and ttl not in TTLS:
        return None
    return f"{at}/cache_control", Mark(ttl=ttl)


def _named(spec: Mapping[str, Any], pointer: str) -> tuple[str, str | None]:
    """A tool definition's name (required, non-empty) and description (optional), checked."""
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ValidationError.single(pointer + "/name", "required", "a tool needs a non-empty string name")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise ValidationError.single(pointer + "/description", "type", "description must be a string")
    return name, description


def _custom_tool(tool: Mapping[str, Any], pointer: str) -> ToolDef:
    """An OpenAI custom tool definition (``{"type": "custom", "custom": {...}}``, or its keys beside the type)."""
    spec = tool
    at = pointer
    if "custom" in tool:
        spec = tool["custom"]
        pointer += "/custom"
        if not isinstance(spec, Mapping):
            raise ValidationError.single(pointer, "type", "a custom tool's definition must be an object")
    name, description = _named(spec, pointer)
    # (a custom tool takes no cache marker: its _cache_control is dropped as any other key)
    dropped = _unknown(tool, at, _CUSTOM_FLAT_KEYS if spec is tool else _CUSTOM_WRAPPER_KEYS)
    if spec is not tool:
        dropped += _unknown(spec, pointer, _CUSTOM_KEYS)
    fmt = _custom_format(spec.get("format"), pointer + "/format", dropped)
    return ToolDef(name, description, {}, None, pointer, fmt, dropped=tuple(dropped))


def _custom_format(fmt: Any, pointer: str, dropped: list[tuple[str, str]]) -> dict[str, Any]:
    """A custom tool's ``format``, checked and in one spelling: ``{}`` (none: free text), ``{type: text}``, or a grammar
    flat (``{type: grammar, syntax, definition}``, as the Responses API has it; Chat Completions nests the last two in
    ``grammar``, and either is taken). Each formatter writes it as its API spells it: one given as it came went to the
    other API as neither takes it (a nested grammar to Chat's, a flat one to the Responses API, or a format of another
    type), a body the API refuses. Keys beside those are dropped and said (``dropped``), as a definition's are."""
    if fmt is None:
        return {}
    if not isinstance(fmt, Mapping):
        raise ValidationError.single(pointer, "type", "a custom tool's format must be an object")
    if not fmt:
        return {}
    kind = fmt.get("type")
    if kind == "text":
        dropped += _unknown(fmt, pointer, _TEXT_FORMAT_KEYS)
        return {"type": "text"}
    if kind != "grammar":
        raise ValidationError.single(
            pointer + "/type", "enum", f"a custom tool's format type is 'text' or 'grammar', not {short_repr(kind)}"
        )
    grammar, at = fmt, pointer
    if "grammar" in fmt:  # (Chat Completions' spelling)
        grammar, at = fmt["grammar"], pointer + "/grammar"
        if not isinstance(grammar, Mapping):
            raise ValidationError.single(at, "type", "a custom tool's grammar must be an object (syntax, definition)")
        both = _GRAMMAR_KEYS.intersection(fmt)
        if both:
            raise ValidationError.single(
                f"{pointer}/{min(both)}", "conflict", f"a custom tool's grammar {min(both)} beside its grammar object"
            )
        dropped += _unknown(fmt, pointer, frozenset({"type", "grammar"}))
        dropped += _unknown(grammar, at, _GRAMMAR_KEYS)
    else:
        dropped += _unknown(fmt, pointer, _GRAMMAR_KEYS | {"type"})
    syntax, definition = grammar.get("syntax"), grammar.get("definition")
    if syntax not in _GRAMMAR_SYNTAXES:
        rule = "required" if syntax is None else "enum"
        raise ValidationError.single(
            at + "/syntax", rule, f"a custom tool's grammar syntax is 'lark' or 'regex', not {short_repr(syntax)}"
        )
    if not isinstance(definition, str):
        rule = "required" if definition is None else "type"
        raise ValidationError.single(
            at + "/definition",
            rule,
            f"a custom tool's grammar definition must be a string, not {short_repr(definition)}",
        )
    return {"type": "grammar", "syntax": syntax, "definition": definition}


def refuse_custom(tools: list[ToolDef], provider: str) -> None:
    """A provider with no custom tools refuses one (rule ``enum``), naming it: it has no tool whose input is
    free text, and sent as a function its calls would not fit."""
    for t in tools:
        if t.custom is not None:
            raise ValidationError.single(
                t.pointer,
                "enum",
                f"{provider} has no custom tools (free-text input, OpenAI's): give {t.name!r} as a function tool",
            )


def refuse_native(tools: list[ToolDef], provider: str, own: str | None = None) -> None:
    """Refuse a tool of another API's own (rule ``enum``), naming it and its API: ``own``, the API whose own tools the
    provider sends as given (None: it has none). Sent as a function of its name, the model would call a tool the
    application never defined, and the provider's tool would be gone."""
    for t in tools:
        if t.native is not None and t.native[0] != own:
            raise ValidationError.single(
                t.pointer,
                "enum",
                f"{t.name!r} is {_whose(t.native[0])} tool, which {provider} does not have (a function of that "
                "name would be another tool): give it only to that provider",
            )


def check_own_choice(choice: ToolChoice, tools: list[ToolDef], spec: Spec) -> None:
    """Refuse a tool_choice of a provider's own (``choice.own``, rule ``enum``) unless ``spec``'s provider is that one
    and a tool of the request is the one it forces (its spec's ``OwnTools.chooses``)."""
    assert choice.own is not None
    provider, given = choice.own
    own = spec.own_tools
    if provider != spec.name or own is None or own.chooses is None:
        raise ValidationError.single(
            "/tool_choice",
            "enum",
            f"tool_choice forces {choice.name}, as {_whose(provider)} request does; {spec.name} has no such tool "
            "choice: give it only to that provider",
        )
    if not any(t.native is not None and t.native[0] == provider and own.chooses(given, t.native[1]) for t in tools):
        raise ValidationError.single(
            "/tool_choice",
            "enum",
            f"tool_choice forces {choice.name}, which no tool of the request is: give that tool in tools",
        )


def native_chosen(choice: ToolChoice | None, tools: list[ToolDef]) -> ToolDef | None:
    """The provider's own tool that ``choice`` names, if it names one: by its type, or by a name no function tool
    has (a function of the name a built-in tool has by its type is the one a name forces)."""
    if choice is None or choice.mode != "tool":
        return None
    named = [t for t in tools if t.name == choice.name]
    if not choice.by_type and any(t.native is None for t in named):
        return None
    return next((t for t in named if t.native is not None), None)


def normalize_tool_choice(choice: Any) -> ToolChoice | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        mode = {"auto": "auto", "none": "none", "required": "required", "any": "required"}.get(choice)
        if mode is None:
            raise ValidationError.single(
                "/tool_choice", "enum", f"tool_choice {choice!r}: expected auto, none, required or a tool"
            )
        return ToolChoice(mode)
    if isinstance(choice, Mapping):
        if choice.get("type") not in (None, "function", "custom", "tool"):
            for provider, own in _own_tools():  # (one of a provider's own, forcing its tool by more than its type)
                if own.choice is not None and (what := own.choice(choice)) is not None:
                    return ToolChoice("tool", what, own=(provider, dict(choice)))
        name = choice.get("name")
        fn = choice.get("function")
        if name is None and isinstance(fn, Mapping):
            name = fn.get("name")
        custom = choice.get("type") == "custom"
        if custom and name is None and isinstance(choice.get("custom"), Mapping):
            name = choice["custom"].get("name")
        if isinstance(name, str) and name:
            return ToolChoice("tool", name, custom)
        kind = choice.get("type")
        if isinstance(kind, str) and kind in ("auto", "none", "any", "required"):
            return normalize_tool_choice(kind)
        if isinstance(kind, str) and any(  # (a provider's own tool, by its type, where its tool_choice names one so)
            own.by_type and own.recognize({"type": kind}) is not None for _, own in _own_tools()
        ):
            return ToolChoice("tool", kind, by_type=True)
    raise ValidationError.single("/tool_choice", "type", f"tool_choice not understood: {short_repr(choice)}")


# ---- per provider ---------------------------------------------------------------------------------


def _declaration(t: ToolDef, ctx: Context) -> dict[str, Any]:
    """The name (as sent) and description of a tool, the start of every provider's declaration."""
    decl: dict[str, Any] = {"name": ctx.tool_name(t.name, t.pointer + "/name")}
    if t.description is not None:
        decl["description"] = t.description
    return decl


def openai_tools(tools: list[ToolDef], ctx: Context, *, strict_field: bool = True) -> list[dict[str, Any]]:
    """Function tools, and OpenAI custom tools where the spec takes them (:func:`check_tools` refused the rest)."""
    out = []
    for t in tools:
        if t.custom is not None:
            decl = _declaration(t, ctx)
            if t.custom.get("type") == "grammar":  # (Chat Completions nests a grammar: custom_tool_param.py)
                decl["format"] = {"type": "grammar", "grammar": {k: t.custom[k] for k in ("syntax", "definition")}}
            elif t.custom:
                decl["format"] = dict(t.custom)
            out.append({"type": "custom", "custom": decl})
            continue
        fn = _declaration(t, ctx)
        fn["parameters"] = t.parameters
        if t.strict is not None:
            if strict_field:
                fn["strict"] = t.strict
            else:
                ctx.report(t.pointer + "/strict", "param-dropped", f"{ctx.provider} takes no per-tool strict flag")
        out.append({"type": "function", "function": fn})
    return out


def openai_tool_choice(choice: ToolChoice, ctx: Context, *, required: bool = True) -> Any:
    if choice.mode == "tool":
        if choice.custom:
            return {"type": "custom", "custom": {"name": ctx.tool_name(choice.name or "", "/tool_choice")}}
        return {"type": "function", "function": {"name": ctx.tool_name(choice.name or "", "/tool_choice")}}
    if choice.mode == "required" and not required:
        ctx.report("/tool_choice", "tool-choice-changed", f"{ctx.provider} has no 'required' tool choice; sent 'auto'")
        return "auto"
    return choice.mode


def anthropic_tools(tools: list[ToolDef], ctx: Context) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        if t.native is not None:  # (a server or client tool of Anthropic's own: as given)
            out.append(t.native[1])
            continue
        tool = _declaration(t, ctx)
        schema = t.parameters
        if schema.get("type") != "object":
            ctx.report(
                t.pointer + "/parameters",
                "schema-keyword-converted",
                "Anthropic input_schema must be an object schema; wrapped as type object",
            )
            schema = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
        tool["input_schema"] = schema
        if t.strict is not None:
            ctx.report(t.pointer + "/strict", "param-dropped", "Anthropic takes no per-tool strict flag")
        out.append(tool)
    return out


def anthropic_tool_choice(choice: ToolChoice | None, parallel: bool | None, ctx: Context) -> dict[str, Any] | None:
    if choice is None:
        if parallel is False:
            return {"type": "auto", "disable_parallel_tool_use": True}
        return None
    if choice.mode == "tool":
        out: dict[str, Any] = {"type": "tool", "name": ctx.tool_name(choice.name or "", "/tool_choice")}
    elif choice.mode == "required":
        out = {"type": "any"}
    else:
        out = {"type": choice.mode}
    if parallel is False and choice.mode != "none":
        out["disable_parallel_tool_use"] = True
    return out


def gemini_tools(tools: list[ToolDef], ctx: Context) -> list[dict[str, Any]]:
    """One ``functionDeclarations`` entry, where the first function tool is, and each of Gemini's own tools as an
    entry of its own, as given, in its place."""
    decls: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for t in tools:
        if t.native is not None:
            out.append(t.native[1])
            continue
        if not decls:
            out.append({"functionDeclarations": decls})
        decl = _declaration(t, ctx)
        if t.parameters.get("properties") or t.parameters.get("type") not in (None, "object"):
            decl["parameters"] = _gemini_parameters(t, ctx)
        else:
            # an object with no properties: Gemini wants no parameters at all
            extra = [k for k in t.parameters if k not in ("type", "properties", "required", "additionalProperties")]
            for k in extra:
                ctx.report(f"{t.pointer}/parameters/{k}", "schema-keyword-dropped", f"{k!r} of a parameterless tool")
        if t.strict is not None:
            ctx.report(t.pointer + "/strict", "param-dropped", "Gemini takes no per-tool strict flag")
        decls.append(decl)
    return out


#: Gemini's schemas of the tool parameters converted lately, by (the parameters' ``exact_key``, their pointer): the
#: schema as JSON and what its conversion said. At most _CONVERTED_MAX, cleared when full.
_CONVERTED: dict[tuple[bytes, str], tuple[bytes, tuple[tuple[Any, ...], ...]]] = {}
_CONVERTED_MAX: Final = 256


def _gemini_parameters(t: ToolDef, ctx: Context) -> dict[str, Any]:
    """Gemini's schema of tool ``t``'s parameters: :func:`gemini_schema`, a pure function of them and their pointer
    (which says each step on ``ctx``), converted once for parameters of the exact JSON types (an agent sends its tools
    with every request: their ``exact_key`` and a read of the schema's JSON cost about half the conversion), then
    read from its JSON, a schema of the request's own each time (the cache holds none of a caller's values, nor a
    body's), its steps said again."""
    pointer = t.pointer + "/parameters"
    key = exact_key(t.parameters)
    if key is None:
        return gemini_schema(t.parameters, pointer, ctx)
    known = _CONVERTED.get((key, pointer))
    if known is not None:
        ctx.diagnostics.extend(known[1])
        schema: dict[str, Any] = orjson.loads(known[0])
        return schema
    said = len(ctx.diagnostics)
    schema = gemini_schema(t.parameters, pointer, ctx)
    if len(_CONVERTED) >= _CONVERTED_MAX:
        _CONVERTED.clear()
    _CONVERTED[(key, pointer)] = (orjson.dumps(schema), tuple(ctx.diagnostics[said:]))
    return schema


def gemini_tool_config(choice: ToolChoice, ctx: Context, tools: list[ToolDef]) -> dict[str, Any]:
    if native_chosen(choice, tools) is not None:  # (allowedFunctionNames names function declarations only)
        raise ValidationError.single(
            "/tool_choice",
            "enum",
            f"tool_choice names {choice.name!r}, a Gemini tool of its own: Gemini forces function declarations only",
        )
    if choice.mode == "tool":
        return {
            "functionCallingConfig": {
                "mode": "ANY",
                "allowedFunctionNames": [ctx.tool_name(choice.name or "", "/tool_choice")],
            }
        }
    mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice.mode]
    return {"functionCallingConfig": {"mode": mode}}


# ---- Gemini's schema subset -----------------------------------------------------------------------

_GEMINI_TYPES: Final = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
# keywords copied as they are (camelCase on the wire, as in JSON Schema)
_GEMINI_PLAIN: Final = frozenset(
    {
        "format",
        "title",
        "description",
        "nullable",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "minProperties",
        "maxProperties",
        "default",
        "example",
        "propertyOrdering",
    }
)
#: the keys of a schema node sent as it is but for its type's name (a parameter's usual schema): :func:`_leaf`
_LEAF_KEYS: Final = _GEMINI_PLAIN | {"type"}
_MAX_DEPTH: Final = 64


def gemini_schema(schema: Mapping[str, Any], pointer: str, ctx: Context) -> dict[str, Any]:
    """Convert a JSON Schema to Gemini's OpenAPI-subset ``Schema``. Local ``$ref`` are inlined,
    ``const`` becomes ``enum``, ``oneOf`` becomes ``anyOf``, type lists become ``nullable`` or
    ``anyOf``; every keyword that cannot be kept is reported."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        value = schema.get(key)
        if value is not None and isinstance(value, Mapping):  # (no ABC's isinstance, a Python frame, for none)
            defs.update({f"#/{key}/{k}": v for k, v in value.items()})
    return _convert(schema, pointer, ctx, defs, (), root=True)


def _convert(
    schema: Any, pointer: str, ctx: Context, defs: dict[str, Any], stack: tuple[str, ...], root: bool = False
) -> dict[str, Any]:
    # (`type(...) is dict` first: an ABC's isinstance is a Python frame, about 1,500 instructions)
    if type(schema) is not dict and not isinstance(schema, Mapping):
        ctx.report(pointer, "schema-keyword-dropped", "a boolean or non-object schema has no Gemini form; sent {}")
        return {}
    if len(stack) > _MAX_DEPTH:
        ctx.report(pointer, "schema-keyword-dropped", "schema nested too deeply; sent {}")
        return {}
    if type(schema) is dict and schema.keys() <= _LEAF_KEYS:
        # (a parameter's usual schema, plain keywords and a type's name: sent as the loop below sends it, its type
        # first, in one subset check and three dict operations, not a dispatch per key)
        typ = schema.get("type")
        if typ is None and "type" not in schema:
            return dict(schema)
        mapped = _GEMINI_TYPES.get(typ) if type(typ) is str else None
        if mapped is not None:
            leaf = {"type": mapped}
            leaf.update(schema)
            leaf["type"] = mapped
            return leaf
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref)
        if target is None or ref in stack or not isinstance(target, Mapping):
            if target is None or ref in stack:
                why = f"{'recursive' if ref in stack else 'unresolvable'} $ref {ref!r} has no Gemini form"
            else:  # (a boolean schema, or no schema: it has no keywords to inline)
                why = f"$ref {ref!r} names a boolean or non-object schema, which has no Gemini form"
            ctx.report(pointer + "/$ref", "schema-keyword-dropped", why)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return _convert(rest, pointer, ctx, defs, stack) if rest else {}
        ctx.report(pointer + "/$ref", "schema-keyword-converted", f"$ref {ref!r} inlined")
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _convert(merged, pointer, ctx, defs, (*stack, ref))
    out: dict[str, Any] = {}
    typ = schema.get("type")
    nullable = False
    if isinstance(typ, list):
        kinds = [t for t in typ if t != "null"]
        nullable = len(kinds) != len(typ)
        if len(kinds) == 1:
            typ = kinds[0]
            ctx.report(pointer + "/type", "schema-keyword-converted", "type list sent as type + nullable")
        elif kinds:
            ctx.report(pointer + "/type", "schema-keyword-converted", "type list sent as anyOf")
            rest = {k: v for k, v in schema.items() if k != "type"}
            out["anyOf"] = [
                _convert({**rest, "type": k}, f"{pointer}/type/{j}", ctx, defs, stack) for j, k in enumerate(kinds)
            ]
            if nullable:
                out["nullable"] = True
            return out
        else:
            typ = "null"
    if typ is not None:
        mapped = _GEMINI_TYPES.get(typ) if isinstance(typ, str) else None
        if mapped is None:
            ctx.report(pointer + "/type", "schema-keyword-dropped", f"type {typ!r} unknown")
        else:
            out["type"] = mapped
    for key, value in schema.items():
        # (the plain keywords first, then each other keyword by its name: the keys are tested in the order they are
        # most often met, each key of a node once)
        if key in _GEMINI_PLAIN:
            out[key] = value
        elif key == "type":
            continue
        elif key == "properties" and (type(value) is dict or isinstance(value, Mapping)):
            at = pointer + "/properties/"
            props = out["properties"] = {}
            for k, v in value.items():
                # (a name with nothing to escape, the usual one, as it is: no call to _esc)
                name = k if type(k) is str and "/" not in k and "~" not in k else _esc(k)
                props[k] = _convert(v, at + name, ctx, defs, stack)
        elif key == "required" and isinstance(value, list):
            out["required"] = list(value)
        elif key == "items":
            if type(value) is dict or isinstance(value, Mapping):
                out["items"] = _convert(value, pointer + "/items", ctx, defs, stack)
            else:
                ctx.report(pointer + "/items", "schema-keyword-dropped", "tuple-form items have no Gemini form")
        elif key == "enum" and isinstance(value, list):
            if all(isinstance(v, str) for v in value):
                out["enum"] = list(value)
            else:
                ctx.report(pointer + "/enum", "schema-keyword-dropped", "Gemini enums are strings only")
        elif key == "const":
            if isinstance(value, str):
                out["enum"] = [value]
                ctx.report(pointer + "/const", "schema-keyword-converted", "const sent as a one-value enum")
            else:
                ctx.report(pointer + "/const", "schema-keyword-dropped", "non-string const has no Gemini form")
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            if key == "oneOf":
                ctx.report(pointer + "/oneOf", "schema-keyword-converted", "oneOf sent as anyOf")
            out["anyOf"] = [_convert(v, f"{pointer}/{key}/{j}", ctx, defs, stack) for j, v in enumerate(value)]
        elif root and key in ("$defs", "definitions"):
            ctx.report(f"{pointer}/{key}", "schema-keyword-converted", f"{key} inlined where referenced")
        else:
            ctx.report(f"{pointer}/{_esc(key)}", "schema-keyword-dropped", f"{key!r} is not in Gemini's schema subset")
    if nullable:
        out["nullable"] = True
    return out


def _esc(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")
