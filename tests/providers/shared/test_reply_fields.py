"""Every field of a provider's replies is where its reader's table says (``REPLY_FIELDS`` in each provider module,
providers/_response/fields.py; docs/streams.md shows them): each row's field is given to the reader in a whole
reply (a stream's events are the same events: the one builder writes both, tests/providers/shared/test_recorded.py
compares them) and ``kept`` and ``mapped`` fields are found in the message, a ``not kept`` field is said
(``agentmsg.not-kept``) and a ``not read`` field is neither. A row without a probe here fails: a reader's table
cannot say what no test checks."""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from agentmsg.providers import MODULES, get
from agentmsg.providers._response.fields import KEPT, MAPPED, NOT_KEPT, NOT_READ

Probe = tuple[Callable[[dict[str, Any]], None], str | None]

BASE: dict[str, dict[str, Any]] = {
    "openai": {
        "id": "chatcmpl-base",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    },
    "anthropic": {
        "id": "msg_base",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "hello"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    },
    "gemini": {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "hello"}]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
        "modelVersion": "gemini-x",
        "responseId": "resp-base",
    },
    "dashscope": {
        "output": {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}]},
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
        "request_id": "req-base",
    },
}
BASE["openai_responses"] = {
    "id": "resp_base",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "gpt-x",
    "output": [
        {
            "type": "message",
            "id": "msg_base",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
}
PROVIDER = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "dashscope": "dashscope",
    "openai_responses": "openai-responses",
}


def put(path: str, value: Any, token: str | None) -> Probe:
    """Set ``path`` (dotted; a number is a list index) in the base reply to ``value``."""

    def mutate(reply: dict[str, Any]) -> None:
        node: Any = reply
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate, token


def add_block(block: dict[str, Any], token: str | None, key: str = "content") -> Probe:
    def mutate(reply: dict[str, Any]) -> None:
        reply[key].append(block)

    return mutate, token


def add_part(part: dict[str, Any], token: str | None) -> Probe:
    def mutate(reply: dict[str, Any]) -> None:
        reply["candidates"][0]["content"]["parts"].append(part)

    return mutate, token


def replace(reply: dict[str, Any], token: str | None) -> Probe:
    """The whole reply another one (an error response)."""

    def mutate(base: dict[str, Any]) -> None:
        base.clear()
        base.update(copy.deepcopy(reply))

    return mutate, token


def both(*probes: Probe) -> Probe:
    def mutate(reply: dict[str, Any]) -> None:
        for m, _ in probes:
            m(reply)

    return mutate, next((t for _, t in probes if t is not None), None)


MSG = "choices.0.message"
# A reply's text with <think> tags: read as a thinking block only with the parser option think_tags (OPTIONS)
THOUGHT, THINKING = "<think>probe-reasoning</think>probe-answer", '"thinking": "probe-reasoning"'
PROBES: dict[str, dict[str, Probe]] = {
    "openai": {
        "id": put("id", "chatcmpl-probe", "chatcmpl-probe"),
        "model": put("model", "gpt-probe", "gpt-probe"),
        "object": put("object", "chat.completion.probe", "chat.completion.probe"),
        "created": put("created", 1712345678, "1712345678"),
        "system_fingerprint": put("system_fingerprint", "fp_probe", "fp_probe"),
        "metadata": put("metadata", {"purpose": "probe-meta"}, "probe-meta"),
        "service_tier": put("service_tier", "tier-probe", "tier-probe"),
        "obfuscation": put("obfuscation", "pad-probe", "pad-probe"),
        "usage.prompt_tokens": put("usage.prompt_tokens", 4711, "4711"),
        "usage.completion_tokens": put("usage.completion_tokens", 4712, "4712"),
        "usage.total_tokens": put("usage", {"total_tokens": 4713}, "4713"),
        "usage.prompt_tokens_details.cached_tokens|usage.prompt_cache_hit_tokens|usage.cached_tokens": put(
            "usage.prompt_cache_hit_tokens", 2, '"cachedTokens": 2'
        ),
        "usage.prompt_tokens_details.cache_write_tokens|usage.prompt_tokens_details.cache_creation_input_tokens": put(
            "usage.prompt_tokens_details", {"cache_write_tokens": 4723}, '"cacheCreationInputTokens": 4723'
        ),
        "usage.completion_tokens_details.reasoning_tokens": put(
            "usage.completion_tokens_details", {"reasoning_tokens": 1}, '"reasoningTokens": 1'
        ),
        "usage.prompt_tokens_details.*, usage.completion_tokens_details.*, usage.prompt_cache_miss_tokens": put(
            "usage.prompt_cache_miss_tokens", 4714, "4714"
        ),
        "x_groq.usage|choices[].usage": both(
            put("usage", None, None), put("choices.0.usage", {"prompt_tokens": 4715, "completion_tokens": 1}, "4715")
        ),
        "choices[].index": put("choices.0.index", 2, "chatcmpl-base-2"),
        "choices[].finish_reason": put("choices.0.finish_reason", "probe_finish", "probe_finish"),
        "choices[].logprobs": put("choices.0.logprobs", {"content": [{"token": "h", "logprob": -0.1}]}, None),
        "choices[].content_filter_results": put(
            "choices.0.content_filter_results", {"hate": {"filtered": False}}, None
        ),
        "choices[].stop_reason|choices[].matched_stop": put("choices.0.stop_reason", "</probe>", None),
        "choices[].message.role": put(f"{MSG}.role", "assistant", None),
        "choices[].message.content": put(f"{MSG}.content", "probe-text", "probe-text"),
        "choices[].message.content (think_tags)": put(f"{MSG}.content", THOUGHT, THINKING),
        "choices[].message.content[] (parts)": put(
            f"{MSG}.content",
            [{"type": "thinking", "thinking": "probe-think"}, {"type": "text", "text": "t"}],
            "probe-think",
        ),
        "choices[].message.refusal": put(f"{MSG}.refusal", "probe-refusal", "probe-refusal"),
        "choices[].message.reasoning_content|choices[].message.reasoning": put(
            f"{MSG}.reasoning_content", "probe-reasoning", "probe-reasoning"
        ),
        "choices[].message.tool_calls[]": put(
            f"{MSG}.tool_calls",
            [{"id": "call_probe", "type": "function", "function": {"name": "probe_fn", "arguments": "{}"}}],
            "probe_fn",
        ),
        "choices[].message.tool_calls[].extra_content.google.thought_signature": put(
            f"{MSG}.tool_calls",
            [
                {
                    "id": "call_probe",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                    "extra_content": {"google": {"thought_signature": "c2ln"}},
                }
            ],
            "c2ln",
        ),
        "choices[].message.function_call": put(
            f"{MSG}.function_call", {"name": "probe_legacy", "arguments": "{}"}, "probe_legacy"
        ),
        "choices[].message.audio": put(
            f"{MSG}.audio", {"id": "audio_probe", "data": "UklGRg==", "transcript": "probe-said"}, "probe-said"
        ),
        "choices[].message.audio.expires_at": put(f"{MSG}.audio", {"id": "audio_probe", "expires_at": 1712345}, None),
        "choices[].message.images": put(
            f"{MSG}.images", [{"type": "image_url", "image_url": {"url": "https://x/probe.png"}}], "probe.png"
        ),
        "choices[].message.annotations": put(
            f"{MSG}.annotations",
            [{"type": "url_citation", "url_citation": {"url": "https://x/probe-cite"}}],
            "probe-cite",
        ),
        "choices[].message.reasoning_details": put(
            f"{MSG}.reasoning_details", [{"type": "reasoning.text", "text": "r"}], None
        ),
        "choices[].messages": put(
            "choices.0",
            {"index": 0, "messages": [{"role": "assistant", "content": "probe-legacy-text"}], "finish_reason": "stop"},
            "probe-legacy-text",
        ),
        "prompt_filter_results": put("prompt_filter_results", [{"prompt_index": 0}], None),
        "moderation": put("moderation", {"flagged": True}, None),
        "citations|search_results": put("citations", ["https://x"], None),
        "error": both(
            put("choices", [], None), put("error", {"message": "probe-error", "type": "server_error"}, "probe-error")
        ),
    },
    "anthropic": {
        "id": put("id", "msg_probe", "msg_probe"),
        "model": put("model", "claude-probe", "claude-probe"),
        "type|role": put("role", "assistant", None),
        "content[] text": put("content.0.text", "probe-text", "probe-text"),
        "content[] text (think_tags)": put("content.0.text", THOUGHT, THINKING),
        "content[] text .citations": put(
            "content.0.citations", [{"type": "char_location", "cited_text": "probe-cited"}], "probe-cited"
        ),
        "content[] thinking": add_block(
            {"type": "thinking", "thinking": "probe-think", "signature": "c2ln"}, "probe-think"
        ),
        "content[] redacted_thinking": add_block({"type": "redacted_thinking", "data": "cHJvYmU="}, "cHJvYmU="),
        "content[] tool_use": add_block(
            {"type": "tool_use", "id": "toolu_p", "name": "probe_tool", "input": {}}, "probe_tool"
        ),
        "content[] tool_use .caller|.toolset_name": add_block(
            {"type": "tool_use", "id": "toolu_p", "name": "t", "input": {}, "toolset_name": "probe-set"}, None
        ),
        "content[] server_tool_use, web_search_tool_result, mcp_tool_use, ... (a *_tool_use or *_tool_result)": add_block(
            {"type": "server_tool_use", "id": "srvtoolu_p", "name": "web_search", "input": {"query": "probe-q"}},
            "probe-q",
        ),
        "content[] compaction|fallback|mcp_tool_listing": add_block(
            {"type": "compaction", "content": "probe-summary"}, None
        ),
        "stop_reason": put("stop_reason", "max_tokens", "max_tokens"),
        "stop_sequence": put("stop_sequence", "</probe>", None),
        "stop_details": put("stop_details", {"type": "refusal", "category": "x"}, None),
        "container": put("container", {"id": "container_probe", "expires_at": "2030-01-01T00:00:00Z"}, None),
        "context_management|input_transformations|diagnostics": put(
            "context_management", {"applied_edits": [{"type": "x"}]}, None
        ),
        "usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens": put(
            "usage.cache_creation_input_tokens", 4700, '"inputTokens": 4703'
        ),
        "usage.cache_read_input_tokens": put("usage.cache_read_input_tokens", 4716, '"cachedTokens": 4716'),
        "usage.cache_creation_input_tokens": put(
            "usage.cache_creation_input_tokens", 4724, '"cacheCreationInputTokens": 4724'
        ),
        "usage.output_tokens": put("usage.output_tokens", 4717, "4717"),
        "usage.output_tokens_details.thinking_tokens": put(
            "usage.output_tokens_details", {"thinking_tokens": 1}, '"reasoningTokens": 1'
        ),
        "usage.cache_creation, usage.server_tool_use, usage.iterations, usage.fallback_credit, usage.service_tier,"
        " usage.speed, usage.inference_geo": put("usage.server_tool_use", {"web_search_requests": 4718}, "4718"),
        "error": replace(
            {"type": "error", "error": {"type": "overloaded_error", "message": "probe-error"}}, "probe-error"
        ),
    },
    "gemini": {
        "responseId": put("responseId", "resp-probe", "resp-probe"),
        "modelVersion": put("modelVersion", "gemini-probe", "gemini-probe"),
        "createTime|modelStatus": put("createTime", "2031-01-01T00:00:00Z", "2031-01-01"),
        "candidates[].index": put("candidates.0.index", 2, "resp-base-2"),
        "candidates[].content.parts[].text": put("candidates.0.content.parts.0.text", "probe-text", "probe-text"),
        "candidates[].content.parts[].text (think_tags)": put("candidates.0.content.parts.0.text", THOUGHT, THINKING),
        "candidates[].content.parts[].thought": add_part({"text": "probe-think", "thought": True}, "probe-think"),
        "candidates[].content.parts[].thoughtSignature": put(
            "candidates.0.content.parts.0.thoughtSignature", "c2lnbg==", "c2lnbg=="
        ),
        "candidates[].content.parts[].functionCall": add_part(
            {"functionCall": {"name": "probe_fn", "args": {}}}, "probe_fn"
        ),
        "candidates[].content.parts[].inlineData|fileData": add_part(
            {"fileData": {"mimeType": "image/png", "fileUri": "https://x/probe.png", "displayName": "probe-label"}},
            "probe-label",
        ),
        "candidates[].content.parts[].videoMetadata|mediaResolution|partMetadata": add_part(
            {"text": "seen", "partMetadata": {"probe": "meta"}}, None
        ),
        "candidates[].content.parts[].executableCode|codeExecutionResult|toolCall|toolResponse": add_part(
            {"executableCode": {"language": "PYTHON", "code": "print('probe-code')"}}, "probe-code"
        ),
        "candidates[].content.role": put("candidates.0.content.role", "model", None),
        "candidates[].finishReason": put("candidates.0.finishReason", "MAX_TOKENS", "MAX_TOKENS"),
        "candidates[].finishMessage": put("candidates.0.finishMessage", "probe-why", None),
        "candidates[].groundingMetadata|citationMetadata|urlContextMetadata": put(
            "candidates.0.groundingMetadata", {"webSearchQueries": ["probe-q"]}, "probe-q"
        ),
        "candidates[].logprobsResult|avgLogprobs|safetyRatings|continuationToken": put(
            "candidates.0.avgLogprobs", -0.5, None
        ),
        "promptFeedback.blockReason": both(
            put("candidates", [], None), put("promptFeedback", {"blockReason": "SAFETY"}, "SAFETY")
        ),
        "promptFeedback.blockReason (beside candidates)": put(
            "promptFeedback", {"blockReason": "SAFETY", "blockReasonMessage": "probe-block"}, "probe-block"
        ),
        "promptFeedback.blockReasonMessage|promptFeedback.safetyRatings": put(
            "promptFeedback", {"safetyRatings": [{"category": "HARM_CATEGORY_X", "probability": "LOW"}]}, None
        ),
        "usageMetadata.promptTokenCount, usageMetadata.toolUsePromptTokenCount": put(
            "usageMetadata.toolUsePromptTokenCount", 4700, '"inputTokens": 4703'
        ),
        "usageMetadata.candidatesTokenCount, usageMetadata.thoughtsTokenCount": put(
            "usageMetadata.thoughtsTokenCount", 4700, '"outputTokens": 4702'
        ),
        "usageMetadata.thoughtsTokenCount": put("usageMetadata.thoughtsTokenCount", 4725, '"reasoningTokens": 4725'),
        "usageMetadata.cachedContentTokenCount": put("usageMetadata.cachedContentTokenCount", 2, '"cachedTokens": 2'),
        "usageMetadata.totalTokenCount": put("usageMetadata", {"totalTokenCount": 4719}, "4719"),
        "usageMetadata.*TokensDetails, usageMetadata.serviceTier, usageMetadata.trafficType": put(
            "usageMetadata.promptTokensDetails", [{"modality": "TEXT", "tokenCount": 4720}], "4720"
        ),
        "candidates[].tokenCount": put("candidates.0.tokenCount", 4799, "4799"),
        "error": put("error", {"code": 503, "message": "probe-error", "status": "UNAVAILABLE"}, "probe-error"),
        "error.details": put(
            "error",
            {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED", "details": [{"retryDelay": "probe-retry"}]},
            "probe-retry",
        ),
    },
    "dashscope": {
        "request_id|requestId": put("request_id", "req-probe", "req-probe"),
        "output.model_name": put("output.model_name", "qwen-probe", "qwen-probe"),
        "output.choices[].message.content": put("output.choices.0.message.content", "probe-text", "probe-text"),
        "output.choices[].message.content (think_tags)": put("output.choices.0.message.content", THOUGHT, THINKING),
        "output.choices[].message.content[] .ocr_result, ...": put(
            "output.choices.0.message.content", [{"text": "t", "ocr_result": {"words": []}}], None
        ),
        "output.choices[].message.reasoning_content": put(
            "output.choices.0.message.reasoning_content", "probe-reasoning", "probe-reasoning"
        ),
        "output.choices[].message.tool_calls[]": put(
            "output.choices.0.message.tool_calls",
            [{"id": "call_p", "type": "function", "function": {"name": "probe_fn", "arguments": "{}"}}],
            "probe_fn",
        ),
        "output.choices[].message.role": put("output.choices.0.message.role", "assistant", None),
        "output.choices[].finish_reason": put("output.choices.0.finish_reason", "length", '"length"'),
        "output.choices[].logprobs": put("output.choices.0.logprobs", {"content": [{"token": "h"}]}, None),
        "output.text|output.finish_reason": put(
            "output", {"text": "probe-legacy", "finish_reason": "stop"}, "probe-legacy"
        ),
        "output.text|output.finish_reason (beside output.choices)": put("output.text", "probe-beside", "probe-beside"),
        "output.thoughts": put(
            "output.thoughts", [{"action_type": "reasoning", "thought": "probe-app-reasoning"}], "probe-app-reasoning"
        ),
        "output.search_info": put(
            "output.search_info", {"search_results": [{"index": 1, "url": "https://x/probe-source"}]}, "probe-source"
        ),
        "output.tool_info|task_metric|task_metrics|audio|doc_references|workflow_message|session_id": put(
            "output.tool_info", [{"type": "code_interpreter", "code_interpreter": {"code": "1"}}], None
        ),
        "usage.input_tokens|usage.prompt_tokens": put("usage.input_tokens", 4711, "4711"),
        "usage.output_tokens|usage.completion_tokens": put("usage.output_tokens", 4712, "4712"),
        "usage.total_tokens": put("usage", {"total_tokens": 4713}, "4713"),
        "usage.prompt_tokens_details.cached_tokens|usage.cached_tokens": put(
            "usage.cached_tokens", 2, '"cachedTokens": 2'
        ),
        "usage.prompt_tokens_details.cache_creation_input_tokens": put(
            "usage.prompt_tokens_details", {"cache_creation_input_tokens": 4726}, '"cacheCreationInputTokens": 4726'
        ),
        "usage.output_tokens_details.reasoning_tokens": put(
            "usage.output_tokens_details", {"reasoning_tokens": 1}, '"reasoningTokens": 1'
        ),
        "usage.models[]": put(
            "usage",
            {"models": [{"input_tokens": 4700, "output_tokens": 1}, {"input_tokens": 21, "output_tokens": 1}]},
            "4721",
        ),
        "usage.input_tokens_details, usage.output_tokens_details.*, usage.image_tokens, usage.plugins": put(
            "usage.image_tokens", 4722, "4722"
        ),
        "code|message": both(
            put("code", "InternalError", None), put("message", "probe-error", "probe-error"), put("output", None, None)
        ),
        "code|message (beside an output)": put("message", "probe-status", "probe-status"),
    },
}

_TEXT = "output.0.content.0"
_RS = {"type": "reasoning", "id": "rs_probe", "summary": [{"type": "summary_text", "text": "probe-summary"}]}
PROBES["openai_responses"] = {
    "id": put("id", "resp_probe", "resp_probe"),
    "model": put("model", "gpt-probe", "gpt-probe"),
    "object|created_at|completed_at|service_tier|billing|access_programs|image": put(
        "billing", {"payer": "probe-payer"}, "probe-payer"
    ),
    "instructions|tools|tool_choice|text|reasoning|store|temperature|top_p|max_output_tokens|truncation"
    "|parallel_tool_calls|metadata|previous_response_id|user|prompt|prompt_cache_key|prompt_cache_retention|prompt_cache_options"
    "|safety_identifier|background|conversation|max_tool_calls|top_logprobs": put(
        "instructions", "probe-instructions", "probe-instr"
    ),
    "status": put("status", "cancelled", "cancelled"),
    "incomplete_details.reason": both(
        put("status", "incomplete", None),
        put("incomplete_details", {"reason": "max_output_tokens"}, "max_output_tokens"),
    ),
    "error": both(
        put("status", "failed", None),
        put("error", {"code": "server_error", "message": "probe-error"}, "probe-error"),
        put("output", [], None),
    ),
    "error.misalignment": both(
        put("status", "failed", None),
        put(
            "error",
            {"code": "misalignment_policy_violation", "message": "m", "misalignment": {"review_target": "probe-rt"}},
            "probe-rt",
        ),
        put("output", [], None),
    ),
    "output[] message .content[] output_text": put(_TEXT + ".text", "probe-text", "probe-text"),
    "output[] message .content[] output_text (think_tags)": put(_TEXT + ".text", THOUGHT, THINKING),
    "output[] message .content[] output_text .annotations": put(
        _TEXT + ".annotations",
        [{"type": "url_citation", "url": "https://probe.example", "title": "t", "start_index": 0, "end_index": 1}],
        "https://probe.example",
    ),
    "output[] message .content[] (a part of another type)": put(
        "output.0.content",
        [{"type": "output_text", "text": "hello", "annotations": []}, {"type": "output_audio", "transcript": "probe"}],
        None,
    ),
    "output[] message .content[] output_text .logprobs": put(
        _TEXT + ".logprobs", [{"token": "h", "logprob": -0.1, "bytes": [104], "top_logprobs": []}], None
    ),
    "output[] message .content[] refusal": add_block(
        {
            "type": "message",
            "id": "msg_r",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "probe-no"}],
        },
        "probe-no",
        key="output",
    ),
    "output[] message .phase": put("output.0.phase", "commentary", '"phase": "commentary"'),
    "output[] message .id|.status|.role": put("output.0.id", "msg_probe", "msg_probe"),
    "output[] reasoning .summary[]": add_block(_RS, "probe-summary", key="output"),
    "output[] reasoning .content[]": add_block(
        {
            "type": "reasoning",
            "id": "rs_c",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "probe-raw"}],
        },
        '"reasoningText": true',
        key="output",
    ),
    "output[] reasoning .encrypted_content": add_block(
        {**_RS, "encrypted_content": "gAAAAprobe"}, '"signature": "gAAAAprobe"', key="output"
    ),
    "output[] reasoning .id": add_block(_RS, '"itemId": "rs_probe"', key="output"),
    "output[] function_call": add_block(
        {"type": "function_call", "id": "fc_1", "call_id": "call_probe", "name": "f", "arguments": "{}"},
        "call_probe",
        key="output",
    ),
    "output[] function_call .id|.status": add_block(
        {"type": "function_call", "id": "fc_probe", "call_id": "call_1", "name": "f", "arguments": "{}"},
        "fc_probe",
        key="output",
    ),
    "output[] function_call .namespace|.caller": add_block(
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}", "namespace": "probe-ns"},
        None,
        key="output",
    ),
    "output[] web_search_call, file_search_call, code_interpreter_call, ... (other item types)": add_block(
        {"type": "web_search_call", "id": "ws_1", "status": "completed"}, None, key="output"
    ),
    "moderation|input_transformations|prompt_cache_diagnostics": put(
        "input_transformations",
        [{"id": "rs_1", "action": "removed", "reason": "model_mismatch", "type": "reasoning"}],
        None,
    ),
    "tool_usage": put("tool_usage", {"web_search": {"num_requests": 4798}}, "4798"),
    "usage.input_tokens": put("usage.input_tokens", 4711, "4711"),
    "usage.output_tokens": put("usage.output_tokens", 4712, "4712"),
    "usage.total_tokens": put("usage", {"total_tokens": 4713}, "4713"),
    "usage.input_tokens_details.cached_tokens": put(
        "usage.input_tokens_details", {"cached_tokens": 2}, '"cachedTokens": 2'
    ),
    "usage.input_tokens_details.cache_write_tokens": put(
        "usage.input_tokens_details", {"cache_write_tokens": 4723}, '"cacheCreationInputTokens": 4723'
    ),
    "usage.output_tokens_details.reasoning_tokens": put(
        "usage.output_tokens_details", {"reasoning_tokens": 1}, '"reasoningTokens": 1'
    ),
    "sequence_number|obfuscation": put("sequence_number", 4799, "4799"),
}


def _sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def _thinking_stream(*deltas: dict[str, Any]) -> bytes:
    """An Anthropic stream of one thinking block with these thinking deltas."""
    message = {k: v for k, v in BASE["anthropic"].items() if k != "content"} | {"content": []}
    return _sse(
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    )


#: The rows of fields only a stream has (a delta's): the stream the probe reads (parse_stream), and the token, as in
#: PROBES. The field comes on the second delta, after one without it (which the C kernels may route).
STREAM_PROBES: dict[str, dict[str, tuple[bytes, str | None]]] = {
    "anthropic": {
        "thinking_delta.estimated_tokens": (
            _thinking_stream(
                {"type": "thinking_delta", "thinking": "probe-"},
                {"type": "thinking_delta", "thinking": "think", "estimated_tokens": 4798},
            ),
            "4798",
        ),
    },
}


#: The parser options a row is about (its field is read so only with them): the probe's reply is read with them, and
#: without them its token must not be found (the option is what maps it).
OPTIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("openai", "choices[].message.content (think_tags)"): {"think_tags": True},
    ("anthropic", "content[] text (think_tags)"): {"think_tags": True},
    ("gemini", "candidates[].content.parts[].text (think_tags)"): {"think_tags": True},
    ("dashscope", "output.choices[].message.content (think_tags)"): {"think_tags": True},
    ("openai_responses", "output[] message .content[] output_text (think_tags)"): {"think_tags": True},
}


def rows() -> list[tuple[str, str]]:
    return [(m, f.path) for m in MODULES for f in importlib.import_module(f"agentmsg.providers.{m}").REPLY_FIELDS]


def test_every_row_has_a_probe_and_every_probe_a_row() -> None:
    tables = {m: {f.path for f in importlib.import_module(f"agentmsg.providers.{m}").REPLY_FIELDS} for m in MODULES}
    probed = {m: set(PROBES.get(m, {})) | set(STREAM_PROBES.get(m, {})) for m in {*PROBES, *STREAM_PROBES}}
    assert probed == tables
    assert not any(set(PROBES.get(m, {})) & set(STREAM_PROBES[m]) for m in STREAM_PROBES)
    assert set(OPTIONS) <= {(m, p) for m, paths in tables.items() for p in paths}


@pytest.mark.parametrize(("module", "path"), rows())
def test_each_reply_field_is_where_its_row_says(module: str, path: str) -> None:
    row = next(f for f in importlib.import_module(f"agentmsg.providers.{module}").REPLY_FIELDS if f.path == path)
    options = OPTIONS.get((module, path), {})
    if path in STREAM_PROBES.get(module, {}):  # a field only a stream has
        body, token = STREAM_PROBES[module][path]
        events = list(get(PROVIDER[module]).parse_stream(body, **options))
    else:
        mutate, token = PROBES[module][path]
        reply = copy.deepcopy(BASE[module])
        mutate(reply)
        events = get(PROVIDER[module]).response_events(json.dumps(reply), **options)
    notes = [e["value"]["message"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.not-kept"]
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    from agentmsg import reduce_events

    sources = sorted({e.get("source") or "" for e in events})
    text = json.dumps([m.to_dict() for s in sources for m in reduce_events(events, source=s or None)])
    text += json.dumps([e for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.error"])
    why = f"{module} {path} ({row.how}): notes {notes}; problems {problems}; message {text[:800]}"
    assert not problems, why
    if row.how in (KEPT, MAPPED):
        assert token is None or token in text, why
    elif row.how == NOT_KEPT:  # (said, with the value when the probe names one)
        assert notes and (token is None or any(token in n for n in notes)), why
    else:
        assert row.how == NOT_READ
        assert not notes and (token is None or token not in text), why
    if options:
        plain = reduce_events(get(PROVIDER[module]).response_events(json.dumps(reply)))
        assert token is not None and token not in json.dumps([m.to_dict() for m in plain]), why
    # the base reply itself says nothing
    base_events = get(PROVIDER[module]).response_events(json.dumps(BASE[module]))
    assert not [e for e in base_events if e["type"] == "CUSTOM"]


def test_dashscope_text_format_reads_think_tags_as_its_messages_do() -> None:
    """DashScope's think_tags row says ``output.text`` (``result_format: text``) too: the same thinking block."""
    reply = {"output": {"text": THOUGHT, "finish_reason": "stop"}, "usage": {"input_tokens": 3}, "request_id": "q"}
    msg = get("dashscope").parse_response(json.dumps(reply), think_tags=True)
    assert [(b.type, getattr(b, b.type)) for b in msg.content] == [
        ("thinking", "probe-reasoning"),
        ("text", "probe-answer"),
    ]
    assert [b.type for b in get("dashscope").parse_response(json.dumps(reply)).content] == ["text"]


def test_every_field_of_the_openai_sdks_response_has_a_row() -> None:
    """Each field of the openai SDK's Response (openai.types.responses.Response) is in the Responses reader's table:
    a field the API adds (prompt_cache_options, an echo of the request) gets a row saying what becomes of it."""
    import re

    from openai.types.responses import Response

    from agentmsg.providers import openai_responses

    table = {
        re.split(r"[ .\[]", spelling.strip())[0]
        for row in openai_responses.REPLY_FIELDS
        for spelling in row.path.split("|")
    }
    assert sorted(set(Response.model_fields) - table) == []
