"""Structured output: one option, :class:`StructuredOutput`, mapped to what each provider's API takes.

``format_request(messages, structured_output=...)`` takes a :class:`StructuredOutput`, a JSON Schema (a mapping),
or a class with ``model_json_schema()`` (a pydantic model). Each provider module maps it in its ``build`` with the
functions below, and says where it can only approximate it:

* OpenAI Chat Completions, DashScope (both modes): ``response_format`` ``{"type": "json_schema", "json_schema":
  {name, description, schema, strict}}`` (DashScope: ``parameters.response_format`` natively);
* DeepSeek: ``response_format`` ``{"type": "json_object"}``, the schema not sent (``structured-output-approximated``);
* Anthropic: ``output_config.format`` ``{"type": "json_schema", "schema"}``;
* Gemini: ``generationConfig.responseMimeType`` ``application/json`` and ``responseJsonSchema``;
* ``mode="tool"`` (any provider; older Anthropic models, DeepSeek with a schema): one tool whose parameters are the
  schema, forced (``structured-output-as-tool``); the reply's JSON is that call's input.

A ``response_format`` given as a generation parameter is read as the same request: sent as it is where the API
takes it (the OpenAI family, DashScope), mapped where it does not (``response-format-mapped``: Anthropic, Gemini;
DeepSeek's ``json_schema``, approximated), never copied where it is invalid. JSON mode (``{"type": "json_object"}``,
or a :class:`StructuredOutput` without a schema) asks for any JSON object.

The request then carries a parser option (``FormattedRequest.parser_options``: ``structured_output``, where the
reply's JSON is), which the provider's reader gets from the clients (``Provider.parser_options``): the reply's
JSON lands in its metadata ``_structured_output``, streamed or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from agentmsg._codec.jsontext import (
    deeper_than,
    depth_error,
    has_lone_surrogate,
    plainly_written,
    surrogate_words,
    unwritten_at,
)
from agentmsg._codec.limits import limits
from agentmsg.blocks import TextBlock
from agentmsg.errors import ValidationError
from agentmsg.message import Msg
from agentmsg.providers._request.context import Context
from agentmsg.providers._request.tools import TOOL_ROOM, ToolChoice, ToolDef

__all__ = ["StructuredOutput", "StructuredOutputLike", "as_structured_output"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
POINTER: Final = "/structured_output"
PARAM: Final = "/params/response_format"
#: The levels a request body puts around a schema at most: a tool definition's (``TOOL_ROOM``) and one more, the
#: forced tool's parameters (``mode="tool"``; a native schema has fewer around it: DashScope's, 5). A schema nested
#: deeper than ``limits.max_depth`` less these is refused, on every provider alike, as a tool definition is
SCHEMA_ROOM: Final = TOOL_ROOM + 1


@attrs.frozen
class StructuredOutput:
    """Ask for a reply that is one JSON object matching ``schema`` (a JSON Schema whose root is an object; None:
    any JSON object, the providers' JSON mode). ``name`` and ``description`` name it where the API does (OpenAI's
    ``json_schema``, the forced tool of ``mode="tool"``); ``strict``: OpenAI's strict schema adherence (the schema
    must then be in its strict subset: every property required, ``additionalProperties: false``; agentmsg sends it
    as given). ``mode``: ``"native"`` (the provider's own structured output) or ``"tool"`` (a forced tool call whose
    input is the output: models without native structured output). The schema is sent as given: each API takes
    its own subset of JSON Schema (docs/formatters.md)."""

    schema: Mapping[str, Any] | None = attrs.field(default=None)
    name: str = attrs.field(default="response", kw_only=True)
    description: str | None = attrs.field(default=None, kw_only=True)
    strict: bool = attrs.field(default=True, kw_only=True)
    mode: Literal["native", "tool"] = attrs.field(default="native", kw_only=True)

    def __attrs_post_init__(self) -> None:
        schema = self.schema
        if schema is not None:
            if not isinstance(schema, Mapping):
                raise ValidationError.single(
                    POINTER + "/schema", "type", f"a JSON Schema is an object, got {type(schema).__name__}"
                )
            _refuse_unwritten(schema)
            kind = schema.get("type")
            if kind is not None and kind != "object":
                raise ValidationError.single(
                    POINTER + "/schema/type",
                    "type",
                    f"structured output is a JSON object (metadata _structured_output holds one), not {kind!r}: wrap"
                    " the value in an object",
                )
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValidationError.single(
                POINTER + "/name", "type", f"name {self.name!r}: 1 to 64 letters, digits, '_' or '-' (OpenAI's rule)"
            )
        if self.description is not None and not isinstance(self.description, str):
            raise ValidationError.single(POINTER + "/description", "type", "description must be a string")
        if self.description is not None and has_lone_surrogate(self.description):  # (body_bytes alone refused it)
            raise ValidationError.single(
                POINTER + "/description",
                "lone-surrogate",
                surrogate_words(self.description) + ": no JSON body carries it",
            )
        if not isinstance(self.strict, bool):
            raise ValidationError.single(POINTER + "/strict", "type", "strict must be a boolean")
        if self.mode not in ("native", "tool"):
            raise ValidationError.single(POINTER + "/mode", "enum", f"mode {self.mode!r}: 'native' or 'tool'")


def _refuse_unwritten(schema: Mapping[str, Any]) -> None:
    """Refuse a NaN or an infinity in a schema (rule ``json-value``, at its pointer), which orjson writes as ``null`` (a
    ``"maximum": NaN`` went out as ``null``, without a word), a leaf the request writer refuses (bytes, a set), or a
    string or key with a lone UTF-16 surrogate (``lone-surrogate``: only ``body_bytes`` raised), as a tool definition's
    are (``tools.py``); and a schema nested deeper than ``limits.max_depth`` less :data:`SCHEMA_ROOM`
    (:class:`~agentmsg.SizeLimitError`, rule ``max-depth``, at ``/structured_output/schema``: format_request took it
    and only ``body_bytes`` refused it). (Walked with pointers only when the quick test, one C pass, says there may be
    one.)"""
    room = limits.max_depth - SCHEMA_ROOM
    if plainly_written(schema, room):  # (a Mapping that is no dict: orjson says no, and it is walked)
        return
    found = unwritten_at(schema, room, check_keys=True)
    if found is not None:
        raise ValidationError.single(POINTER + "/schema" + found[0], found[1], found[2])
    if deeper_than(schema if type(schema) is dict else dict(schema), room, finite=True):
        raise depth_error(None, POINTER + "/schema")


#: What ``structured_output=`` takes: a StructuredOutput, a JSON Schema, or a class with ``model_json_schema()``
StructuredOutputLike = StructuredOutput | Mapping[str, Any] | type


def as_structured_output(value: Any) -> StructuredOutput | None:
    """The :class:`StructuredOutput` a ``structured_output=`` argument asks for (:class:`~agentmsg.ValidationError`,
    pointer ``/structured_output``, for one it cannot be)."""
    if value is None:
        return value
    if isinstance(value, StructuredOutput):
        if value.schema is not None:  # (checked when made; again here, as the limits and the schema are now)
            _refuse_unwritten(value.schema)
        return value
    if isinstance(value, Mapping):
        return StructuredOutput(value)
    to_schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(to_schema):
        schema = to_schema()
        name = (_NAME.fullmatch(value.__name__) and value.__name__) or "response"
        # strict only when the schema is closed (extra="forbid"): pydantic's default schema is not in OpenAI's strict
        # subset, which the API refuses (agentmsg does not rewrite a schema: pass a StructuredOutput to choose)
        return StructuredOutput(schema, name=name, strict=schema.get("additionalProperties") is False)
    raise ValidationError.single(
        POINTER,
        "type",
        "structured_output is a StructuredOutput, a JSON Schema (a mapping) or a class with model_json_schema(), got"
        f" {type(value).__name__}",
    )


# ---- what a request asks for --------------------------------------------------------------------------


@attrs.frozen
class Asked:
    """The structured output a request asks for: ``output`` (None: only a raw ``response_format`` of no JSON, or one
    this module does not know) and ``raw`` (the ``response_format`` given as a parameter, as given), with the
    pointer that names it."""

    output: StructuredOutput | None
    raw: Mapping[str, Any] | None
    pointer: str


def asked(ctx: Context, params: dict[str, Any]) -> Asked | None:
    """What the call asks for: ``structured_output`` (on ``ctx``) or a ``response_format`` parameter (taken out of
    ``params``). Both at once are refused (rule ``conflict``)."""
    raw = params.pop("response_format", None)
    output = ctx.structured
    if output is not None:
        if raw is not None:
            raise ValidationError.single(
                PARAM, "conflict", "give structured_output or a response_format parameter, not both"
            )
        return Asked(output, None, POINTER)
    if raw is None:
        return None
    return Asked(_from_response_format(raw), raw if isinstance(raw, Mapping) else None, PARAM)


def _from_response_format(raw: Any) -> StructuredOutput | None:
    """The structured output an OpenAI-shaped ``response_format`` asks for (None: ``text``, or a shape this module
    does not know, which the OpenAI family gets as it is and the others do not)."""
    if not isinstance(raw, Mapping):
        raise ValidationError.single(PARAM, "type", f"response_format is an object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "json_object":
        return StructuredOutput(None)
    if kind == "json_schema":
        spec = raw.get("json_schema")
        if not isinstance(spec, Mapping):
            raise ValidationError.single(PARAM + "/json_schema", "required", "a json_schema response_format names one")
        try:
            return StructuredOutput(
                spec.get("schema") or {},
                name=spec.get("name", "response"),
                description=spec.get("description"),
                strict=bool(spec.get("strict")),
            )
        except ValidationError as exc:  # (of its class: a schema too deep is a SizeLimitError here too)
            raise type(exc)(
                [attrs.evolve(p, pointer=p.pointer.replace(POINTER, PARAM + "/json_schema", 1)) for p in exc.problems]
            ) from None
    return None


def text_reading() -> dict[str, Any]:
    """The parser options of a request whose reply's JSON is its text."""
    return {"structured_output": {"from": "text"}}


def reading(asked: Asked | None) -> dict[str, Any]:
    """The parser options of a request whose reply's JSON is its text (nothing when no JSON is asked for)."""
    return text_reading() if asked is not None and asked.output is not None else {}


# ---- per provider -------------------------------------------------------------------------------------


def openai_response_format(output: StructuredOutput) -> dict[str, Any]:
    """OpenAI's ``response_format`` for a structured output (``json_schema``, or ``json_object`` without a schema)."""
    if output.schema is None:
        return {"type": "json_object"}
    spec: dict[str, Any] = {"name": output.name}
    if output.description is not None:
        spec["description"] = output.description
    spec["schema"] = dict(output.schema)
    spec["strict"] = output.strict
    return {"type": "json_schema", "json_schema": spec}


def chat_response_format(
    ctx: Context, asked: Asked, msgs: Sequence[Msg], *, json_schema: bool = True
) -> dict[str, Any] | None:
    """The ``response_format`` of an OpenAI-shaped API (the OpenAI family, DashScope native): the parameter as given,
    or the structured output's; ``json_schema=False`` (DeepSeek) sends a schema as JSON mode, said
    (``structured-output-approximated``). JSON mode asks that a message mention JSON (the APIs refuse the request
    otherwise): said when none does (``json-unprompted``)."""
    output = asked.output
    if asked.raw is not None and (output is None or output.schema is None or json_schema):
        value: dict[str, Any] = dict(asked.raw)
    elif output is None:
        return None
    elif output.schema is not None and not json_schema:
        ctx.report(
            asked.pointer,
            "structured-output-approximated",
            f"{ctx.provider} has JSON mode only (response_format json_object): the schema is not sent, so not enforced;"
            " describe it in the prompt",
        )
        value = {"type": "json_object"}
    else:
        value = openai_response_format(output)
    if value.get("type") == "json_object" and not _mentions_json(msgs):
        ctx.report(
            asked.pointer,
            "json-unprompted",
            f"JSON mode: no message mentions JSON, which {ctx.provider} requires (it refuses the request)",
        )
    return value


def _mentions_json(msgs: Sequence[Msg]) -> bool:
    for msg in msgs:
        blocks: list[Any] = msg.content
        for b in blocks:
            if type(b) is TextBlock and "json" in b.text.lower():
                return True
    return False


def anthropic_output_config(ctx: Context, asked: Asked, given: Any) -> dict[str, Any] | None:
    """Anthropic's ``output_config`` with the structured output's ``format`` (``given``: an ``output_config``
    parameter, whose other keys, ``effort`` say, are kept). A ``response_format`` parameter is mapped
    (``response-format-mapped``)."""
    output = asked.output
    if output is None:
        _raw_not_sent(ctx, asked)
        return None
    if asked.raw is not None:
        ctx.report(PARAM, "response-format-mapped", "response_format sent as Anthropic's output_config.format")
    config = dict(given) if isinstance(given, Mapping) else {}
    if "format" in config:
        raise ValidationError.single(
            "/params/output_config/format", "conflict", "give structured_output or output_config.format, not both"
        )
    config["format"] = {"type": "json_schema", "schema": dict(output.schema or {})}
    return config


def gemini_generation(ctx: Context, asked: Asked, generation: dict[str, Any]) -> bool:
    """Gemini's ``generationConfig`` fields for the structured output (``responseMimeType``, ``responseJsonSchema``),
    added to ``generation``; True when the reply is JSON. A ``response_format`` parameter is mapped
    (``response-format-mapped``)."""
    output = asked.output
    if output is None:
        _raw_not_sent(ctx, asked)
        return False
    for key in ("responseMimeType", "responseSchema", "responseJsonSchema"):
        if key in generation:
            raise ValidationError.single(
                asked.pointer, "conflict", f"give structured output once: {key} is given as a parameter too"
            )
    if asked.raw is not None:
        ctx.report(PARAM, "response-format-mapped", "response_format sent as Gemini's responseMimeType (and schema)")
    generation["responseMimeType"] = "application/json"
    if output.schema is not None:
        generation["responseJsonSchema"] = dict(output.schema)
    return True


def _raw_not_sent(ctx: Context, asked: Asked) -> None:
    """A ``response_format`` that asks for no JSON: ``text`` (the provider's default: nothing to send), or a type
    this module does not know (not sent)."""
    raw = asked.raw or {}
    if raw.get("type") == "text":
        ctx.report(PARAM, "response-format-mapped", f"response_format text is {ctx.provider}'s default: not sent")
    else:
        ctx.report(PARAM, "param-dropped", f"{ctx.provider} has no response_format {raw.get('type')!r}: not sent")


def as_tool(
    ctx: Context, asked: Asked, tools: list[ToolDef], choice: ToolChoice | None, why: str = ""
) -> tuple[list[ToolDef], ToolChoice, dict[str, Any]]:
    """The structured output as one more tool, forced (``structured-output-as-tool``): (tools, tool choice, parser
    options). A tool choice given is replaced (``tool-choice-changed``); a tool of the same name is refused."""
    output = asked.output
    assert output is not None
    if any(t.name == output.name for t in tools):
        raise ValidationError.single(
            POINTER + "/name", "conflict", f"a tool is named {output.name!r} already: name the structured output apart"
        )
    schema = dict(output.schema) if output.schema is not None else {"type": "object"}
    tool = ToolDef(output.name, output.description, schema, None, POINTER)
    ctx.report(
        asked.pointer,
        "structured-output-as-tool",
        f"structured output asked of {ctx.provider} as a forced call of tool {output.name!r}{why}: the reply's JSON is"
        " its input",
    )
    if choice is not None and not (choice.mode == "tool" and choice.name == output.name):
        ctx.report("/tool_choice", "tool-choice-changed", f"the structured output's tool {output.name!r} is forced")
    sent = ctx.tool_name(output.name, POINTER + "/name")
    return [*tools, tool], ToolChoice("tool", output.name), {"structured_output": {"from": "tool", "name": sent}}
