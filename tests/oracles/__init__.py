"""Independent oracles for formatted provider requests (shared/reference/provider-oracles.md).

Every request body a test produces goes through :func:`check` (tests call :func:`formatted`, which
formats and checks in one step):

* ``openai``: OpenAI's OpenAPI spec, ``CreateChatCompletionRequest``, in closed mode (unknown keys
  are errors), validated by python-jsonschema;
* ``deepseek`` / ``dashscope-compatible``: the same closed schema after removing the documented
  extensions of that provider (``reasoning_content``, DashScope's ``enable_thinking``, ``top_k``,
  video parts and Qwen-VL sizing hints, ... whose shapes are checked by hand here);
* ``anthropic``: Anthropic's request schema ``CreateMessageParams`` (closed);
* ``gemini``: the google-genai types (pydantic, ``extra='forbid'``) for each top-level field, plus
  the rules the types do not hold: roles ``user``/``model``, no empty ``parts``, exactly one data
  field per part, camelCase keys;
* ``dashscope`` (native): the dashscope package's own request building: our messages are read into
  its canonical model (``normalize_messages``, closed part models) and rebuilt by ``NativeProtocol``;
  the result must equal our body, and the endpoint must be multimodal when there is media.
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import json
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

SPECS = Path(__file__).resolve().parent / "specs"


# ---- OpenAPI documents --------------------------------------------------------------------------


def _fix_nullable(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _fix_nullable(v) for k, v in node.items()}
        if node.pop("nullable", None) is True:
            return {"anyOf": [node, {"type": "null"}]}
        return node
    if isinstance(node, list):
        return [_fix_nullable(v) for v in node]
    return node


def _allof_targets(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        for branch in node.get("allOf", []) or []:
            ref = branch.get("$ref") if isinstance(branch, dict) else None
            if isinstance(ref, str):
                out.add(ref.rsplit("/", 1)[-1])
        for v in node.values():
            _allof_targets(v, out)
    elif isinstance(node, list):
        for v in node:
            _allof_targets(v, out)


def _close(node: Any, open_here: bool = False) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k == "allOf" and isinstance(v, list):
                out[k] = [_close(b, open_here=True) for b in v]
            elif k in ("properties", "patternProperties", "$defs") and isinstance(v, dict):
                out[k] = {pk: _close(pv) for pk, pv in v.items()}
            else:
                out[k] = _close(v)
        is_object = out.get("type") == "object" or "properties" in out or "allOf" in out
        if is_object and not open_here and "additionalProperties" not in out and "unevaluatedProperties" not in out:
            out["unevaluatedProperties"] = False
        return out
    if isinstance(node, list):
        return [_close(v) for v in node]
    return node


@functools.cache
def _openapi(name: str, closed: bool) -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    doc = json.loads((SPECS / name).read_text(encoding="utf-8"))
    doc = _fix_nullable(doc)
    if closed:
        schemas = doc["components"]["schemas"]
        composed: set[str] = set()
        _allof_targets(schemas, composed)
        doc["components"]["schemas"] = {k: _close(v, open_here=k in composed) for k, v in schemas.items()}
    uri = f"urn:spec:{name}"
    registry = Registry().with_resource(uri, Resource.from_contents(doc, default_specification=DRAFT202012))

    def validator(schema_name: str) -> Any:
        return Draft202012Validator({"$ref": f"{uri}#/components/schemas/{schema_name}"}, registry=registry)

    return validator


def _schema_errors(validator: Any, instance: Any) -> list[str]:
    from jsonschema.exceptions import best_match

    errors = list(validator.iter_errors(instance))
    if not errors:
        return []
    best = best_match(errors)
    out = [f"{'/'.join(map(str, best.absolute_path))}: {best.message[:300]}"]
    out += [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5] if e is not best]
    return out


def openai_errors(body: Mapping[str, Any]) -> list[str]:
    return _schema_errors(
        _openapi("openai-chat-completions.components.json", True)("CreateChatCompletionRequest"), body
    )


def anthropic_errors(body: Mapping[str, Any]) -> list[str]:
    """Anthropic's request schema (the docs' OpenAPI document of 2025-09); ``output_config`` (structured output,
    GA after that document) against the anthropic SDK's own request type, ``OutputConfigParam``."""
    rest = dict(body)
    problems = []
    if "output_config" in rest:
        problems = anthropic_output_config_errors(rest.pop("output_config"))
    spec = _openapi("anthropic-messages-docs-2025-09.openapi.json", False)("CreateMessageParams")
    return problems + _schema_errors(spec, rest)


def anthropic_output_config_errors(config: Any) -> list[str]:
    """The anthropic SDK's ``OutputConfigParam`` (a TypedDict) as a closed type: validated by pydantic, which
    leaves out keys the type does not declare, so the value must come back unchanged."""
    require("anthropic")
    from anthropic.types import OutputConfigParam
    from pydantic import TypeAdapter
    from pydantic import ValidationError as PydanticError

    try:
        back = TypeAdapter(OutputConfigParam).validate_python(config)
    except PydanticError as exc:
        return [f"output_config: {str(exc)[:600]}"]
    return [] if back == config else [f"output_config: keys OutputConfigParam does not declare: {config} -> {back}"]


# ---- OpenAI-compatible extensions ---------------------------------------------------------------

_DASHSCOPE_TOP = (
    "enable_thinking",
    "thinking_budget",
    "top_k",
    "enable_search",
    "search_options",
    "repetition_penalty",
    "vl_high_resolution_images",
)
_DEEPSEEK_TOP = ("thinking",)


def _strip_extensions(body: Mapping[str, Any], provider: str) -> tuple[dict[str, Any], list[str]]:
    """(body without the provider's documented extensions, problems in the extensions' shapes)."""
    out = copy.deepcopy(dict(body))
    problems: list[str] = []
    top = _DASHSCOPE_TOP if provider == "dashscope-compatible" else _DEEPSEEK_TOP
    for key in top:
        out.pop(key, None)
    for i, m in enumerate(out.get("messages", [])):
        if (
            m.get("role") == "assistant"
            and "reasoning_content" in m
            and not isinstance(m.pop("reasoning_content"), str)
        ):
            problems.append(f"messages/{i}/reasoning_content: not a string")
        content = m.get("content")
        if provider != "dashscope-compatible" or not isinstance(content, list):
            continue
        kept = []
        for j, part in enumerate(content):
            part = dict(part)
            for hint in ("min_pixels", "max_pixels", "fps", "total_pixels"):
                value = part.pop(hint, None)
                if value is not None and not isinstance(value, (int, float)):
                    problems.append(f"messages/{i}/content/{j}/{hint}: not a number")
            # DashScope's explicit cache marker on a content part (provider-fields.md 4.4): ephemeral is the only type
            marker = part.pop("cache_control", None)
            if marker is not None and marker != {"type": "ephemeral"}:
                problems.append(f"messages/{i}/content/{j}/cache_control: not {{'type': 'ephemeral'}}: {marker}")
            if part.get("type") == "video_url":
                video = part.get("video_url")
                if set(part) != {"type", "video_url"} or not isinstance(video, dict) or set(video) != {"url"}:
                    problems.append(f"messages/{i}/content/{j}: bad video_url part {part}")
                continue  # not in OpenAI's schema: checked here
            kept.append(part)
        m["content"] = kept or [{"type": "text", "text": ""}]
    return out, problems


# ---- Gemini ---------------------------------------------------------------------------------------

_GEMINI_TOP = {
    "contents": "list[Content]",
    "systemInstruction": "Content",
    "tools": "list[Tool]",
    "toolConfig": "ToolConfig",
    "generationConfig": "GenerationConfig",
    "safetySettings": "list[SafetySetting]",
    "cachedContent": "str",
}
_PART_DATA = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)


@functools.cache
def _gemini_adapters() -> dict[str, Any]:
    from google.genai import types
    from pydantic import TypeAdapter

    return {
        "contents": TypeAdapter(list[types.Content]),
        "systemInstruction": TypeAdapter(types.Content),
        "tools": TypeAdapter(list[types.Tool]),
        "toolConfig": TypeAdapter(types.ToolConfig),
        "generationConfig": TypeAdapter(types.GenerationConfig),
        "safetySettings": TypeAdapter(list[types.SafetySetting]),
        "cachedContent": TypeAdapter(str),
    }


def _snake_keys(node: Any, path: str, out: list[str], free: bool = False) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if not free and "_" in k.strip("_"):
                out.append(f"{path}/{k}: snake_case key (REST JSON is camelCase)")
            if not free and path.endswith(("/functionCall", "/functionResponse")) and k in ("args", "response"):
                continue  # a call's args and a function's response are the caller's own JSON, at every depth
            # free-form maps: a declaration's response schema and schema properties (names -> schemas)
            _snake_keys(v, f"{path}/{k}", out, free=k in ("args", "response", "properties") and not free)
    elif isinstance(node, list):
        for j, v in enumerate(node):
            _snake_keys(v, f"{path}/{j}", out)


def gemini_errors(body: Mapping[str, Any]) -> list[str]:
    from pydantic import ValidationError as PydanticError

    problems = []
    adapters = _gemini_adapters()
    for key, value in body.items():
        adapter = adapters.get(key)
        if adapter is None:
            problems.append(f"{key}: not a generateContent request field")
            continue
        try:
            adapter.validate_json(json.dumps(value))
        except PydanticError as exc:
            problems.append(f"{key}: {str(exc)[:600]}")
    if "contents" not in body:
        problems.append("contents: missing")
    for i, content in enumerate(body.get("contents", [])):
        if content.get("role") not in ("user", "model"):
            problems.append(f"contents/{i}/role: {content.get('role')!r} is not user or model")
        parts = content.get("parts")
        if not parts:
            problems.append(f"contents/{i}/parts: empty")
        for j, part in enumerate(parts or []):
            data = [k for k in _PART_DATA if k in part]
            if len(data) != 1:
                problems.append(f"contents/{i}/parts/{j}: {len(data)} data fields {data}")
            if "text" in part and part["text"] == "" and "thoughtSignature" not in part:
                problems.append(f"contents/{i}/parts/{j}: empty text")
    system = body.get("systemInstruction")
    if system is not None and not system.get("parts"):
        problems.append("systemInstruction/parts: empty")
    _snake_keys({k: v for k, v in body.items() if k != "generationConfig"}, "", problems)
    return problems


# ---- DashScope native (differential against the dashscope package) ------------------------------


def dashscope_errors(body: Mapping[str, Any], path: str, headers: Mapping[str, str], stream: bool) -> list[str]:
    from dashscope.v2.protocols.native import NativeProtocol
    from dashscope.v2.types.messages import has_media_parts, normalize_messages

    problems = []
    if set(body) != {"model", "input", "parameters"} or set(body["input"]) != {"messages"}:
        return [f"envelope keys {sorted(body)} / input {sorted(body.get('input', {}))}"]
    messages = body["input"]["messages"]
    for i, m in enumerate(messages):
        for j, part in enumerate(m.get("content") if isinstance(m.get("content"), list) else []):
            kinds = [k for k in ("text", "image", "audio", "video") if k in part]
            if len(kinds) != 1:
                problems.append(f"input/messages/{i}/content/{j}: {kinds} media keys")
    try:
        canon = normalize_messages(copy.deepcopy(messages))
    except Exception as exc:  # the package's own validation
        return [*problems, f"dashscope normalize_messages rejected the messages: {exc}"]
    params = dict(body["parameters"])
    if params.pop("result_format", None) != "message":
        problems.append("parameters/result_format is not 'message'")
    if params.pop("incremental_output", False) is not stream:
        problems.append("parameters/incremental_output does not match stream")
    known = {
        "tools",
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
        "seed",
        "repetition_penalty",
        "presence_penalty",
        "enable_thinking",
        "response_format",
        "top_k",
        "tool_choice",
        "n",
        "logprobs",
        "top_logprobs",
        "thinking_budget",
        "enable_search",
        "search_options",
        "parallel_tool_calls",
    }
    extra = {k: params.pop(k) for k in list(params) if k not in known}
    dumped = [m.model_dump(exclude_none=True) for m in canon]
    media = has_media_parts(canon)
    if media and not path.endswith("multimodal-generation/generation"):
        problems.append(f"media parts sent to {path}")
    if path.endswith("text-generation/generation"):
        for i, m in enumerate(messages):
            content = m.get("content")
            # a list of text parts is the explicit cache's form (provider-fields.md 4.4: the docs' Generation.call
            # example marks a part with cache_control), only with a marker
            cached = (
                isinstance(content, list)
                and all(set(p) <= {"text", "cache_control"} for p in content)
                and any("cache_control" in p for p in content)
            )
            if not isinstance(content, str) and not cached:
                problems.append(f"input/messages/{i}/content: text generation takes string content")
    ref = NativeProtocol().build_chat_request(
        model=body["model"], messages=dumped, stream=stream, extra_parameters=extra or None, path=path, **params
    )
    mine = {"path": path, "body": body, "headers": dict(headers)}
    theirs = {"path": ref.path, "body": ref.body, "headers": dict(ref.headers)}
    if json.loads(json.dumps(mine, sort_keys=True)) != json.loads(json.dumps(theirs, sort_keys=True)):
        problems.append(
            "NativeProtocol rebuilds a different request:\n  ours:   "
            + json.dumps(mine, sort_keys=True)[:1500]
            + "\n  theirs: "
            + json.dumps(theirs, sort_keys=True)[:1500]
        )
    return problems


# ---- entry points -------------------------------------------------------------------------------


# Oracle packages whose pinned version needs a newer Python than agentmsg's own 3.10: pyproject.toml installs
# them only there (an environment marker), so on an older Python the tests that use them skip, saying why.
NEEDS_NEWER_PYTHON: dict[str, tuple[str, tuple[int, int]]] = {
    "google.genai": ("google-genai 3.4.0, the Gemini oracle,", (3, 11)),
    "agentscope": ("agentscope 2.0.10, the Gemini and DashScope formatter-value oracle,", (3, 11)),
}


def responses_errors(body: Mapping[str, Any]) -> list[str]:
    """The OpenAI Responses request body against the ``openai`` package's ``ResponseCreateParams`` (streaming or
    not, as the body says), made strict (``strict_typeddict.strict_adapter``: closed TypedDicts, lists, strict
    JSON)."""
    import pydantic
    from openai.types.responses import response_create_params as params

    from tests.oracles.strict_typeddict import strict_adapter

    tp = params.ResponseCreateParamsStreaming if body.get("stream") else params.ResponseCreateParamsNonStreaming
    try:
        strict_adapter(tp).validate_json(json.dumps(body), strict=True)
    except pydantic.ValidationError as exc:
        return [f"{'/'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()][:20]
    return []


def missing(module: str) -> str | None:
    """Why the oracle package ``module`` cannot be used here (None when it is installed).

    Only a package that is not installed is missing: one that is installed but fails to import fails the
    test that imports it."""
    try:
        if importlib.util.find_spec(module) is not None:
            return None
    except ModuleNotFoundError:  # a parent package (``google``) is not installed
        pass
    for prefix, (what, oldest) in NEEDS_NEWER_PYTHON.items():
        if (module == prefix or module.startswith(prefix + ".")) and sys.version_info[:2] < oldest:
            return (
                f"{what} needs Python {oldest[0]}.{oldest[1]}+ (this is {platform.python_version()}): "
                f"pyproject.toml installs it only there"
            )
    return f"oracle package {module!r} is not installed (pip install -e '.[oracles]')"


def require(module: str) -> Any:
    """The oracle package ``module``, imported; the calling test skips, saying why, when it is not installed."""
    reason = missing(module)
    if reason is not None:
        pytest.skip(reason)
    return importlib.import_module(module)


#: Oracle checks left out because the oracle package needs a newer Python than this one: reason -> the tests
#: that ran without them (said at the end of the run, tests/conftest.py; see usable).
NOT_CHECKED: dict[str, set[str]] = {}


def usable(module: str) -> bool:
    """Whether the oracle package ``module`` can check here. One that needs a newer Python
    (NEEDS_NEWER_PYTHON) leaves its check out, recorded in NOT_CHECKED, and the test goes on: what it asserts
    of agentmsg itself holds on every Python. Any other missing package skips the test, as require does."""
    reason = missing(module)
    if reason is None:
        return True
    if any(module == p or module.startswith(p + ".") for p in NEEDS_NEWER_PYTHON):
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        NOT_CHECKED.setdefault(reason, set()).add(test)
        return False
    pytest.skip(reason)


def check(provider: str, request: Any) -> list[str]:
    """The oracle's problems with a FormattedRequest for ``provider`` ([] when it passes; also when the
    oracle needs a newer Python than this one, which is recorded: see ``usable``)."""
    body = request.body
    if provider == "openai":
        require("jsonschema")
        return openai_errors(body)
    if provider in ("deepseek", "dashscope-compatible"):
        require("jsonschema")
        stripped, problems = _strip_extensions(body, provider)
        return problems + openai_errors(stripped)
    if provider == "anthropic":
        require("jsonschema")
        return anthropic_errors(body)
    if provider == "gemini":
        return gemini_errors(body) if usable("google.genai") else []
    if provider == "dashscope":
        require("dashscope")
        return dashscope_errors(body, request.path, request.headers, request.stream)
    if provider == "openai-responses":
        require("openai")
        return responses_errors(body)
    raise KeyError(provider)


def formatted(provider: str, messages: Any, **kwargs: Any) -> Any:
    """Format with the registry entry ``provider`` and assert that its oracle accepts the body."""
    from agentmsg.providers import get

    request = get(provider).format_request(messages, **kwargs)
    problems = check(provider, request)
    assert not problems, (
        f"{provider} oracle rejects the body:\n" + "\n".join(problems) + "\n" + json.dumps(request.body)[:3000]
    )
    return request
