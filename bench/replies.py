"""What the stream benchmarks share: which recorded streams every side reads to the same reply, and each
side's reply reduced to what is compared (text, thinking, tool calls), so that equal work is checked the
same way in bench_streams.py (bytes in memory) and bench_live.py (over HTTP)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "providers"

#: The recorded streams every side reads to the same reply, per provider (tests/fixtures/providers/<provider>/).
RECORDED: dict[str, list[str]] = {
    "openai": [
        "stream_parallel_tool_calls",
        "stream_refusal",
        "stream_single_tool_call",
        "stream_text_include_usage",
    ],
    "anthropic": [
        "stream_docs_basic",
        "stream_docs_tool_use",
        "stream_sdk_basic",
        "stream_sdk_refusal",
        "stream_sdk_tool_use",
        "stream_thinking_signature",
        "stream_tool_use_no_args",
    ],
    "gemini": [
        "stream_function_call",
        "stream_function_call_thought_signature",
        "stream_text",
        "stream_thinking",
        "stream_thinking_gemini3",
    ],
    "dashscope": [
        "native_stream_text_docs",
        "native_stream_thinking_docs",
        "native_multimodal_stream_thinking_docs",
    ],
    "openai-responses": [
        "stream_function_call_2025-03_no_sequence_number",
        "stream_reasoning_commentary_function_call",
        "stream_text_after_tool_output",
    ],
}
#: The recorded streams left out, and why: each side would do different work on them.
LEFT_OUT = {
    "openai/stream_n3_multiple_choices": "three choices: the SDK keeps all three, agentmsg the first",
    "openai/stream_logprobs": "the SDK keeps the log probabilities, agentmsg says it does not",
    "openai/stream_finish_length": "the SDK's stream helper raises LengthFinishReasonError there (tools given)",
    "anthropic/stream_docs_extended_thinking": "an edited docs sample the SDK rejects",
    "anthropic/stream_sdk_incomplete_partial_json": "cut short: a broken stream, not a reply",
    "gemini/stream_function_call_partial_args": "partial arguments: google-genai leaves assembling them to the caller",
    "gemini/stream_function_call_no_args_partial": "partial arguments: google-genai leaves assembling them to the caller",
    "dashscope/compat_*": "the OpenAI-compatible mode: the openai rows' work",
    "openai-responses/*.jsonl": "recorded without their SSE framing",
    "openai-responses/stream_reasoning_text_openrouter": "OpenRouter's: its reasoning item's id differs in its completed copy",
}
PROVIDERS = tuple(RECORDED)


def recorded(provider: str) -> list[tuple[str, bytes]]:
    """The provider's recorded streams of :data:`RECORDED`: (name, body)."""
    return [(n, (FIX / provider / f"{n}.sse").read_bytes()) for n in RECORDED[provider]]


@dataclass
class Reply:
    """What a side ended with, as compared: the text, the thinking, the tool calls (name, arguments)."""

    text: str = ""
    thinking: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def key(self) -> tuple[str, str, list[tuple[str, Any]]]:
        return (self.text, self.thinking, self.calls)


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value) if value else {}
        except orjson.JSONDecodeError:
            return value
    return dict(value) if value is not None else {}


def agentmsg_reply(msg: Any) -> Reply:
    r = Reply()
    for b in msg.content:
        kind = getattr(b, "type", None)
        if kind == "text":
            r.text += b.text
        elif kind == "thinking":
            r.thinking += b.thinking
        elif kind == "tool_use":
            r.calls.append((b.name, _args(b.input)))
    return r


def openai_reply(completion: Any) -> Reply:
    """An openai ChatCompletion (``get_final_completion()``) or a DashScope one (its aggregate)."""
    m = completion.choices[0].message
    r = Reply(text=(m.content or "") + (getattr(m, "refusal", None) or ""))
    r.thinking = getattr(m, "reasoning_content", None) or ""
    for c in m.tool_calls or []:
        r.calls.append((c.function.name, _args(c.function.arguments)))
    return r


def anthropic_reply(message: Any) -> Reply:
    r = Reply()
    for b in message.content:
        if b.type == "text":
            r.text += b.text
        elif b.type == "thinking":
            r.thinking += b.thinking
        elif b.type == "tool_use":
            r.calls.append((b.name, _args(b.input)))
    return r


def responses_reply(result: Any) -> Reply:
    """openai ``client.responses.stream(...)``: (``get_final_response()``, the helper's accumulator state). The texts
    and calls are the accumulator's (what the deltas said: the long stream repeats them, its completed response
    does not), the thinking the final response's reasoning summaries (which the accumulator does not gather)."""
    final, state = result
    snapshot = state._ResponseStreamState__current_snapshot
    r = Reply()
    for item in snapshot.output:
        if item.type == "message":
            r.text += "".join(getattr(c, "text", None) or getattr(c, "refusal", "") for c in item.content)
        elif item.type == "function_call":
            r.calls.append((item.name, _args(item.arguments)))
    for item in final.output:
        if item.type == "reasoning":
            r.thinking += "".join(s.text for s in item.summary or ()) + "".join(c.text for c in item.content or ())
    return r


class GeminiAccumulator:
    """What a caller of google-genai's stream keeps of each chunk (it has no accumulator): the texts, the
    thoughts and the function calls of the first candidate's parts."""

    def __init__(self) -> None:
        self.reply = Reply()

    def add(self, chunk: Any) -> None:
        cands = chunk.candidates
        content = cands[0].content if cands else None
        for part in (content.parts if content is not None else None) or ():
            if part.text is not None:
                if part.thought:
                    self.reply.thinking += part.text
                else:
                    self.reply.text += part.text
            elif part.function_call is not None:
                self.reply.calls.append((part.function_call.name, _args(part.function_call.args)))
