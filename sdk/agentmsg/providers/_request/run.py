"""The skeleton of every provider's ``format_request``, written once: :func:`run_format`.

A provider's formatter is its ``build`` function: given the call's :class:`Context`, the checked messages,
the normalized tools and tool choice, it walks the conversation and returns a :class:`Draft` (body, path,
model, headers). Checking the arguments, the context and its media session, the diagnostics and ``strict``
are done here, the same for every provider.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from agentmsg.errors import ValidationError
from agentmsg.message import Msg
from agentmsg.providers._request.cache import automatic, message_marks
from agentmsg.providers._request.context import (
    Context,
    FormatOptions,
    FormattedRequest,
    as_options,
    check_call,
    check_messages,
)
from agentmsg.providers._request.fields import COMMON, REPORTED, checks, scan
from agentmsg.providers._request.structured import as_structured_output
from agentmsg.providers._request.tools import (
    ToolChoice,
    ToolDef,
    check_own_choice,
    check_tools,
    normalize_tool_choice,
    normalize_tools,
    say_dropped_keys,
)

if TYPE_CHECKING:
    from agentmsg.providers.spec import Spec

__all__ = ["Build", "Draft", "run_format", "usable_choice"]


@attrs.define(kw_only=True)
class Draft:
    """What a provider's ``build`` makes of a conversation: the JSON ``body``, the endpoint ``path`` (relative
    to the spec's base URL), the ``model`` and the non-auth ``headers`` the request needs. (Read once, by
    ``run_format``: not frozen, whose ``__init__`` sets each field through ``object.__setattr__``, twice the time.)"""

    body: dict[str, Any]
    path: str
    model: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    #: the parser options the reply needs (structured output: ``_request/structured.py``)
    parser_options: Mapping[str, Any] = attrs.field(factory=dict)


_CACHE = operator.attrgetter("cache")

#: ``build(ctx, messages, tools, tool_choice) -> Draft``: a provider's request, its diagnostics said on ``ctx``
Build = Callable[[Context, Sequence[Msg], list[ToolDef], "ToolChoice | None"], Draft]


def run_format(
    spec: Spec,
    messages: Sequence[Msg],
    build: Build,
    *,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
    stream: bool,
    strict: bool,
    options: FormatOptions | Mapping[str, Any] | None,
    families: Sequence[str] | None = None,
    id_max: int = 0,
    id_bad: Callable[[str], Any] | None = None,
    tool_name_ok: Callable[[str], Any] | None = None,
    structured_output: Any = None,
    model: Any = None,
    params: Mapping[str, Any] | None = None,
) -> FormattedRequest:
    """A provider's request for ``messages``: the arguments checked (:class:`~agentmsg.ValidationError` naming
    the one at fault), ``build`` run under a :class:`Context` for ``spec`` (its media session closed however it
    ends), and with ``strict`` every lossy or error diagnostic raised. ``families``: the reasoning this request
    replays natively (default the spec's); ``id_max``, ``id_bad``, ``tool_name_ok``: which tool-call ids and tool
    names the provider takes as they are (the others are mapped, alike in call and result). ``structured_output``:
    what the call asks the reply to be (``_request/structured.py``), on ``ctx.structured`` for ``build``, which
    maps it (a provider whose ``build`` does not says so: ``param-dropped``). After ``build``, the fields of the
    conversation no walk carried or said are said (``_request/fields.py``, from the spec's field table): of the messages
    the walk did not look at inline (``ctx.quick``), or whose look found something. ``model`` and ``params``: the
    call's, checked here before ``build`` uses them (``check_call``)."""
    msgs = check_messages(messages)
    check_call(model, params or {})
    structured = None if structured_output is None else as_structured_output(structured_output)
    opts = as_options(options)
    if tools is None and tool_choice is None:  # (the usual call: no tools, nothing of theirs to check)
        tool_defs: list[ToolDef] = []
        choice = None
    else:
        tool_defs, choice = _tools_checked(spec, tools, tool_choice)
    ctx = Context(
        spec.name,
        spec.families if families is None else families,
        opts,
        msgs,
        id_max=id_max,
        id_bad=id_bad,
        tool_name_ok=tool_name_ok,
    )
    if tool_defs:
        say_dropped_keys(ctx, tool_defs)
    if choice is not None and choice.mode == "tool" and choice.own is None and not choice.by_type:
        choice = _choice_of_its_kind(ctx, choice, tool_defs)
    ctx.structured = structured
    ctx.cache_marks = message_marks(ctx, msgs)
    table = spec.fields if spec.fields is not None else COMMON
    ctx.quick = checks(table).quick
    try:
        draft = build(ctx, msgs, tool_defs, choice)
    finally:
        ctx.close_media()
    if structured is not None and "structured_output" not in draft.parser_options:
        ctx.report("/structured_output", "param-dropped", f"{spec.name} takes no structured output: not asked for")
    if ctx.cache_marks or any(map(_CACHE, tool_defs)):  # (a tool's cache is a pair or None; no generator)
        _cache_said(ctx, table, tool_defs, spec.title)
    scan(ctx, msgs, table, ctx.unscanned)
    diagnostics = ctx.finish(strict)
    return FormattedRequest(
        body=draft.body,
        diagnostics=diagnostics,
        model=draft.model,
        path=draft.path,
        headers=draft.headers,
        stream=stream,
        parser_options=draft.parser_options,
    )


def _tools_checked(
    spec: Spec, tools: Sequence[Mapping[str, Any]] | None, tool_choice: str | Mapping[str, Any] | None
) -> tuple[list[ToolDef], ToolChoice | None]:
    """The call's tool definitions and tool choice, normalized and checked against ``spec``'s provider
    (:class:`~agentmsg.ValidationError` naming the one at fault)."""
    tool_defs = normalize_tools(tools)
    check_tools(tool_defs, spec)
    choice = normalize_tool_choice(tool_choice)
    if choice is not None and choice.own is not None:
        check_own_choice(choice, tool_defs, spec)
    elif choice is not None and choice.mode == "tool" and all(t.name != choice.name for t in tool_defs):
        # (every provider refuses such a request: said here, where it is, not as the provider's 400)
        defined = ", ".join(repr(t.name[:40]) for t in tool_defs[:10]) or "none"
        raise ValidationError.single(
            "/tool_choice",
            "enum",
            f"tool_choice names tool {choice.name!r:.80}, which tools does not define ({defined})",
        )
    return tool_defs, choice


def _choice_of_its_kind(ctx: Context, choice: ToolChoice, tool_defs: list[ToolDef]) -> ToolChoice:
    """A tool choice naming a tool as the other kind (a function choice naming an OpenAI custom tool, a custom choice
    naming a function tool), which the API would refuse or the provider would force by name alone: sent as the kind
    the tool is, said ``tool-choice-changed``."""
    named = next((t for t in tool_defs if t.name == choice.name and t.native is None), None)
    if named is None or (named.custom is not None) == choice.custom:
        return choice
    kind, given = ("custom", "function") if named.custom is not None else ("function", "custom")
    ctx.report(
        "/tool_choice",
        "tool-choice-changed",
        f"tool_choice names {choice.name!r:.80} as a {given} tool; it is a {kind} tool: sent as a {kind} choice",
    )
    return attrs.evolve(choice, custom=named.custom is not None)


def _cache_said(ctx: Context, table: Any, tool_defs: list[ToolDef], title: str) -> None:
    """A provider whose table says it caches on its own (``metadata._cache_control`` reported ``cache-automatic``, the
    common row) and whose ``build`` said nothing of the markers: said here, once, so that a new provider's markers are
    never dropped in silence."""
    row = table["message"].get("metadata._cache_control")
    if row is None or row.how != REPORTED or "cache-automatic" not in row.rules:
        return
    if not any(d[1] == "cache-automatic" for d in ctx.diagnostics):
        automatic(ctx, ctx.cache_marks, tool_defs, f"{title} caches prompt prefixes on its own")


def usable_choice(ctx: Context, choice: ToolChoice | None, tools: Sequence[ToolDef]) -> ToolChoice | None:
    """The tool choice to send: none without tools (said, ``param-dropped``), unless it is ``none``."""
    if choice is not None and not tools and choice.mode != "none":
        ctx.report("/tool_choice", "param-dropped", "tool_choice without tools is not sent")
        return None
    return choice
