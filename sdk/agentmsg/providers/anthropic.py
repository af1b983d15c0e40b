"""anthropic request formatter (in progress), response and stream parsers (issue 10)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from agentmsg import reduce_events
from agentmsg.message import Msg

from ._format import FormattedRequest
from ._stream import BaseStreamParser, StreamBuilder, as_object, run_parser, safe_int, usage_dict

__all__ = ["StreamParser", "format_request", "parse_response", "parse_stream", "response_events"]

# ---- request (issue 9) ----------------------------------------------------------------------------


def format_request(messages: Sequence[Msg], **kwargs: Any) -> FormattedRequest:
    raise NotImplementedError("anthropic formatter: in progress")


# ---- response (issue 10) --------------------------------------------------------------------------
# An Anthropic Messages response becomes the events its stream would give, reduced by the one Reducer.


_NORMAL_STOP = ("end_turn", "stop_sequence")


def _usage(u: Mapping[str, Any]) -> dict[str, Any] | None:
    """Anthropic counts cached input apart from ``input_tokens``: inputTokens is their sum (every input
    token, as the other providers count it) and cachedTokens the cache reads."""
    parts = [safe_int(u.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    total_in = sum(p for p in parts if p is not None) if parts[0] is not None else None
    return usage_dict(total_in, u.get("output_tokens"), parts[2])


def _finish(b: StreamBuilder, reason: Any) -> None:
    if isinstance(reason, str) and reason:
        b.finish(0, reason, tool_calls=reason == "tool_use", normal=reason in _NORMAL_STOP)


def _error(b: StreamBuilder, obj: Mapping[str, Any]) -> None:
    err = as_object(obj.get("error"))
    b.error(str(err.get("message") or err), kind=str(err.get("type") or "provider_error"))


def _block(b: StreamBuilder, index: Any, block: Mapping[str, Any], whole: bool) -> None:
    """A content block: whole (non-streaming) or as content_block_start gives it."""
    slot = f"b{index}"
    kind = block.get("type")
    if kind == "text":
        b.text(block.get("text") or "", slot=slot)
    elif kind == "thinking":
        sig = block.get("signature")
        b.thinking(block.get("thinking") or "", slot=slot, signature=sig if isinstance(sig, str) else None)
    elif kind == "redacted_thinking":
        b.thinking("", slot=slot, redacted=str(block.get("data") or ""))
    elif kind == "tool_use":
        args = None
        if whole:
            args = orjson.dumps(block.get("input") if block.get("input") is not None else {}).decode()
        b.tool_call(slot, call_id=block.get("id"), name=block.get("name"), arguments=args)
        if whole:
            b.end_tool_call(slot)
        return
    else:
        b.problem("enum", f"content block type {kind!r} is not supported: skipped")
        return
    if whole:
        b.end_block(slot)


def response_events(body: bytes | str | Mapping[str, Any], **options: Any) -> list[dict[str, Any]]:
    """The AgentEvents of a non-streaming Messages response."""
    obj = orjson.loads(body) if isinstance(body, (bytes, str)) else body
    if not isinstance(obj, Mapping):
        raise TypeError("an Anthropic response is a JSON object")
    b = StreamBuilder(options.pop("provider", "anthropic"), **options)
    if obj.get("type") == "error":
        _error(b, obj)
    else:
        b.identify(obj.get("id"), obj.get("model"))
        if isinstance(obj.get("usage"), dict):
            b.set_usage(_usage(obj["usage"]))
        b.choice(0)
        for index, block in enumerate(obj.get("content") or ()):
            if isinstance(block, dict):
                _block(b, index, block, whole=True)
        _finish(b, obj.get("stop_reason") or "end_turn")
    b.close()
    return b.drain()


def parse_response(body: bytes | str | Mapping[str, Any], **options: Any) -> Msg:
    """The assistant message of a Messages response: text, thinking with its signature, redacted
    thinking, tool calls, usage, stop reason mapped to the generate reason."""
    return reduce_events(response_events(body, **options))[0]


# ---- stream (issue 10) ----------------------------------------------------------------------------


class StreamParser(BaseStreamParser):
    """Messages SSE -> AgentEvents, incrementally: blocks by ``index``; thinking with ``signature_delta``
    (signature-only deltas), redacted thinking, ``input_json_delta`` fragments routed to their tool_use;
    ``ping`` and unknown event types ignored; an ``error`` event mid-stream ends the reply interrupted
    with everything kept."""

    provider = "anthropic"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._usage: dict[str, Any] = {}
        self._inputs: dict[str, str] = {}  # tool_use slot -> its start input (used when no delta comes)

    def payload(self, event: str, obj: dict[str, Any]) -> None:
        b = self.builder
        kind = obj.get("type", event)
        if kind == "content_block_delta":
            delta = obj["delta"]
            dkind = delta.get("type")
            slot = f"b{obj.get('index')}"
            if dkind == "text_delta":
                b.text(delta.get("text") or "", slot=slot)
            elif dkind == "input_json_delta":
                b.tool_call(slot, arguments=delta.get("partial_json") or "")
            elif dkind == "thinking_delta":
                b.thinking(delta.get("thinking") or "", slot=slot)
            elif dkind == "signature_delta":
                b.thinking("", slot=slot, signature=delta.get("signature") or "")
            # citations_delta and unknown delta types carry nothing the message keeps
        elif kind == "content_block_start":
            block = obj["content_block"]
            slot = f"b{obj.get('index')}"
            if block.get("type") == "tool_use":
                start_input = block.get("input")
                self._inputs[slot] = orjson.dumps(start_input if start_input is not None else {}).decode()
            _block(b, obj.get("index"), block, whole=False)
        elif kind == "content_block_stop":
            slot = f"b{obj.get('index')}"
            if b.open_call(slot):
                b.end_tool_call(slot, default_arguments=self._inputs.pop(slot, None))
            else:
                b.end_block(slot)
        elif kind == "message_start":
            m = obj.get("message") or {}
            b.identify(m.get("id"), m.get("model"))
            self._add_usage(m.get("usage"))
            b.choice(0)
        elif kind == "message_delta":
            self._add_usage(obj.get("usage"))
            delta = obj.get("delta") or {}
            _finish(b, delta.get("stop_reason"))
        elif kind == "message_stop":
            self.done = True
            b.close()
        elif kind == "error":
            _error(b, obj)
        # ping and unknown event types: nothing to do

    def _add_usage(self, u: Any) -> None:
        if isinstance(u, dict):
            self._usage.update((k, v) for k, v in u.items() if v is not None)  # cumulative counts: last wins
            self.builder.set_usage(_usage(self._usage))


def parse_stream(chunks: Iterable[bytes | str] | bytes | str, **options: Any) -> Iterator[dict[str, Any]]:
    """AgentEvents of a Messages SSE body (whole, or an iterable of chunks as they arrive)."""
    return run_parser(StreamParser(**options), chunks)
