"""Provider streams from a body's bytes to the reply, in memory (no HTTP: bench_live.py has the live path),
side by side in one process: agentmsg, the official SDKs' own stream code and plain orjson parsing.

Every side starts from the same bytes, reads every chunk and ends with the reply:

* ``orjson``: split the body into ``data:`` lines and ``orjson.loads`` each payload: the floor, it builds
  nothing;
* ``agentmsg``: ``reduce_events(parse_stream(body), trusted=True)``: the SSE decoder, the provider's parser,
  the AgentEvents and the reducer, down to the validated Msg (``trusted``: the parser's events are valid by
  construction, so the reducer skips its per-event schema check). Since the provider and reducer code in C
  is gone, a whole body goes through the same Python parser as the live client; only generic C kernels
  remain (the SSE scanner, the reducer's delta loop; ``AGENTMSG_PURE_PYTHON=1`` turns them off). The rows say
  what that costs per chunk (long rows) and per reply (recorded rows);
* ``official``: each SDK's own stream code from the same bytes, as its stream helper runs it (the HTTP read
  aside), down to its final object: openai decodes with its ``SSEDecoder``, builds each typed chunk as its
  ``Stream`` does (``construct_type``, unvalidated), accumulates it (``ChatCompletionStreamState.handle_chunk``,
  which also builds the helper's events) and ends with ``get_final_completion()``
  (``client.chat.completions.stream``); anthropic decodes with its ``SSEDecoder``, builds each event, runs
  ``accumulate_event`` and ``build_events`` as ``MessageStream.__stream__`` does (``client.messages.stream``),
  ending with the snapshot (``get_final_message()``); google-genai reads the SSE segments
  (``HttpResponse.segments``), then per chunk what ``generate_content_stream`` does (``json.dumps`` /
  ``json.loads``, ``_GenerateContentResponse_from_mldev``, ``GenerateContentResponse._from_response``, a
  validated pydantic model), and the caller collects each chunk's texts, thoughts and calls (it has no
  accumulator); DashScope runs its ``Stream`` (httpx-sse over an ``httpx.Response`` of the body,
  ``parse_chunk``) and ``_aggregate`` (``get_final_message()``).

The streams: per provider, the recorded ones every side reads to the same reply (replies.RECORDED; the ones
left out and why: replies.LEFT_OUT), and a "long" one (:data:`LONG`: one recorded stream with its text deltas
repeated to about 1,000 chunks): the recorded streams are short (2 to 30 chunks), so their figures carry each
reply's fixed cost; the long rows show the cost of each further chunk.

Equal work is checked before timing: for every stream, the official side's reply and agentmsg's message hold
the same text, thinking and tool calls (name and arguments), and the official side read every chunk.
agentmsg does more: it also emits the AgentEvents (a dict per event, ids, createdAt) and validates the final
Msg; openai and anthropic build unvalidated objects and emit their helper's events.

Times: CPU time of this thread, the sides interleaved, best of the repeats, the garbage collector off while
timing. Targets (unchanged from the earlier stream rows): agentmsg >= 20x faster than the openai and
anthropic accumulators, within 3x of the orjson floor.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from typing import Any

import orjson
import replies
from replies import (
    PROVIDERS,
    GeminiAccumulator,
    Reply,
    agentmsg_reply,
    anthropic_reply,
    openai_reply,
    recorded,
)

from agentmsg import reduce_events
from agentmsg.providers import anthropic, dashscope, gemini, openai, openai_responses

FIX = replies.FIX
TARGET_VS_OFFICIAL = 20.0
JUDGED_VS_OFFICIAL = ("openai", "anthropic")  # the accumulators the 20x target names
TARGET_VS_ORJSON = 3.0


def _payloads(body: bytes) -> list[bytes]:
    out = []
    for line in body.splitlines():
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                out.append(data)
    return out


#: One recorded stream per provider whose text deltas are repeated into a long reply (the ``long`` rows): the
#: recorded streams are short (2 to 30 chunks), so their per-chunk figures carry each reply's fixed cost
#: (set-up, start and end events, the final Msg); a long reply shows what each further chunk costs.
LONG = {
    "openai": "openai/stream_text_include_usage.sse",
    "anthropic": "anthropic/stream_sdk_basic.sse",
    "gemini": "gemini/stream_text.sse",
    "dashscope": "dashscope/native_stream_text_docs.sse",
    "openai-responses": "openai-responses/stream_text_after_tool_output.sse",
}
LONG_CHUNKS = 1000


def _is_text_delta(provider: str, obj: dict[str, Any]) -> bool:
    if provider == "anthropic":
        return obj.get("type") == "content_block_delta" and obj["delta"].get("type") == "text_delta"
    if provider == "openai-responses":
        return obj.get("type") == "response.output_text.delta"
    if provider == "gemini":
        cand = (obj.get("candidates") or [{}])[0]
        parts = (cand.get("content") or {}).get("parts") or []
        return not cand.get("finishReason") and bool(parts) and all(set(p) == {"text"} for p in parts)
    choice = ((obj.get("output") or {}) if provider == "dashscope" else obj).get("choices") or [{}]
    if provider == "dashscope":
        return choice[0].get("finish_reason") == "null"
    delta = choice[0].get("delta") or {}
    return bool(delta.get("content")) and not choice[0].get("finish_reason") and set(delta) == {"content"}


def _long_stream(provider: str) -> bytes:
    """The recorded stream ``LONG[provider]`` with its text deltas repeated to about ``LONG_CHUNKS`` chunks
    (the same events, in the same framing: the reply just says more)."""
    body = (FIX / LONG[provider]).read_bytes()
    sep = b"\r\n\r\n" if b"\r\n" in body else b"\n\n"
    events = [e for e in body.split(sep) if e.strip()]
    deltas = [i for i, e in enumerate(events) if (p := _payloads(e)) and _is_text_delta(provider, orjson.loads(p[0]))]
    first, last = deltas[0], deltas[-1]
    middle = [events[i] for i in deltas]
    reps = max(1, LONG_CHUNKS // len(middle))
    return sep.join(events[:first] + middle * reps + events[last + 1 :]) + sep


def _best(fns: dict[str, Callable[[], Any]], repeat: int, target_s: float) -> dict[str, float]:
    """Seconds of this thread's CPU per call of each function, best of ``repeat`` rounds; the functions
    interleaved (machine drift hits all alike), each round ``target_s`` long, the garbage collector off."""
    clock = time.thread_time
    number = {}
    for name, fn in fns.items():
        t = clock()
        fn()
        number[name] = max(1, int(target_s / max(clock() - t, 1e-6)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            gc.disable()
            try:
                t = clock()
                for _ in range(number[name]):
                    fn()
                best[name] = min(best[name], (clock() - t) / number[name])
            finally:
                gc.enable()
    return best


def _official(provider: str) -> tuple[Callable[[bytes], Any], Callable[[Any], Reply], str] | None:
    """The official SDK's stream code from a body, what its result is compared as, and the SDK's name."""
    try:
        if provider == "openai":
            import openai
            from openai._models import construct_type as openai_construct
            from openai._streaming import SSEDecoder as OpenAISSE
            from openai.lib.streaming.chat import ChatCompletionStreamState
            from openai.types.chat import ChatCompletionChunk

            def run_openai(body: bytes) -> Any:
                state: Any = ChatCompletionStreamState()
                for sse in OpenAISSE().iter_bytes(iter((body,))):
                    if sse.data.startswith("[DONE]"):
                        break
                    state.handle_chunk(openai_construct(type_=ChatCompletionChunk, value=sse.json()))
                return state.get_final_completion()

            return run_openai, openai_reply, f"openai {openai.__version__}"
        if provider == "anthropic":
            import anthropic
            from anthropic._models import construct_type as anthropic_construct
            from anthropic._streaming import SSEDecoder as AnthropicSSE
            from anthropic.lib.streaming._messages import accumulate_event, build_events
            from anthropic.types import RawMessageStreamEvent

            def run_anthropic(body: bytes) -> Any:
                snapshot = None
                bufs: dict[int, bytes] = {}
                for sse in AnthropicSSE().iter_bytes(iter((body,))):
                    if sse.event in ("ping", "error", None) or not sse.data:
                        continue
                    event = anthropic_construct(type_=RawMessageStreamEvent, value=sse.json())
                    snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
                    build_events(event=event, message_snapshot=snapshot)  # as MessageStream.__stream__ does
                return snapshot

            return run_anthropic, anthropic_reply, f"anthropic {anthropic.__version__}"
        if provider == "gemini":
            import httpx
            from google import genai
            from google.genai import types
            from google.genai._api_client import HttpResponse
            from google.genai.models import _GenerateContentResponse_from_mldev

            config = {"config": {"response_schema": None, "response_json_schema": None, "include_all_fields": None}}

            def run_gemini(body: bytes) -> Any:
                acc = GeminiAccumulator()
                response = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
                for segment in HttpResponse(headers={}, response_stream=response).segments():
                    chunk = json.loads(json.dumps(segment))  # as request_streamed then _generate_content_stream do
                    acc.add(
                        types.GenerateContentResponse._from_response(
                            response=_GenerateContentResponse_from_mldev(chunk, None, None), kwargs=config
                        )
                    )
                return acc.reply

            return run_gemini, lambda reply: reply, f"google-genai {genai.__version__}"
        if provider == "dashscope":
            import dashscope
            import httpx
            from dashscope.v2.resources.chat.completions import _aggregate
            from dashscope.v2.transport.sse import Stream as DashScopeStream
            from dashscope.v2.types.completions import parse_chunk

            def run_dashscope(body: bytes) -> Any:
                response = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
                return _aggregate(list(DashScopeStream(response, parse_chunk)))

            return run_dashscope, openai_reply, f"dashscope {getattr(dashscope, '__version__', '?')}"
    except ImportError:
        return None
    return None


MODULES: dict[str, Any] = {
    "openai": openai,
    "anthropic": anthropic,
    "gemini": gemini,
    "dashscope": dashscope,
    "openai-responses": openai_responses,
}


def _check(provider: str, label: str, bodies: list[bytes], official: Callable[[bytes], Any], reply: Any) -> None:
    """Equal work: the official result and agentmsg's message hold the same reply, for every stream."""
    for i, body in enumerate(bodies):
        mine = agentmsg_reply(reduce_events(MODULES[provider].parse_stream(body), trusted=True)[0])
        theirs = reply(official(body))
        if theirs.key() != mine.key():
            raise AssertionError(f"{label} stream {i}: different replies\n  agentmsg {mine}\n  official {theirs}")


def run(quick: bool = False) -> list[dict[str, Any]]:
    repeat, target_s = (3, 0.05) if quick else (7, 0.2)
    rows = []
    cases = [(p, p, [b for _, b in recorded(p)]) for p in PROVIDERS]
    cases += [(f"{p} long", p, [_long_stream(p)]) for p in PROVIDERS]
    for label, provider, bodies in cases:
        mod = MODULES[provider]
        chunks = sum(len(_payloads(b)) for b in bodies)

        def floor() -> None:
            for b in bodies:
                for p in _payloads(b):
                    orjson.loads(p)

        def ours() -> None:
            for b in bodies:
                reduce_events(mod.parse_stream(b), trusted=True)

        impls: dict[str, Callable[[], Any]] = {"orjson": floor, "agentmsg": ours}
        found = _official(provider)
        if found is not None:
            official, reply, version = found
            _check(provider, label, bodies, official, reply)

            def theirs() -> None:
                for b in bodies:
                    official(b)

            impls["official"] = theirs
        times = _best(impls, repeat, target_s)
        row: dict[str, Any] = {"provider": label, "streams": len(bodies), "chunks": chunks}
        for name, t in times.items():
            row[f"{name}_us_per_chunk"] = round(t / chunks * 1e6, 2)
        row["agentmsg_us_per_reply"] = round(times["agentmsg"] / len(bodies) * 1e6, 1)
        row["vs_orjson"] = round(times["agentmsg"] / times["orjson"], 2)
        if "official" in times:
            row["official_over_agentmsg"] = round(times["official"] / times["agentmsg"], 1)
            row["official_version"] = version
        rows.append(row)
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== provider streams in memory: SSE bytes -> reply (CPU µs per chunk, best of repeats; no HTTP) ==")
    print(
        f"  {'provider':<15} {'replies':>7} {'chunks':>6} {'orjson':>8} {'agentmsg':>9} {'official':>9}"
        f" {'µs/reply':>9} {'x orjson':>9} {'official/agentmsg':>18}"
    )
    for r in rows:
        off = r.get("official_us_per_chunk")
        ratio = r.get("official_over_agentmsg")
        print(
            f"  {r['provider']:<15} {r['streams']:>7} {r['chunks']:>6} {r['orjson_us_per_chunk']:>8}"
            f" {r['agentmsg_us_per_chunk']:>9} {off if off is not None else '-':>9} {r['agentmsg_us_per_reply']:>9}"
            f" {r['vs_orjson']:>9} {ratio if ratio is not None else '-':>18}"
        )
    versions = sorted({r["official_version"] for r in rows if "official_version" in r})
    print(f"  official: {', '.join(versions)}")
    # What whole-body parsing costs now that it runs in Python: per further chunk (the long rows) and per
    # recorded reply; what a reply costs besides its chunks (its time less its chunks at the long row's rate).
    per_chunk = {
        r["provider"].removesuffix(" long"): r["agentmsg_us_per_chunk"] for r in rows if r["provider"].endswith(" long")
    }
    print("  agentmsg's whole-body parsing (parse_stream(bytes) + reduce_events, the Python parser, no C fast path):")
    for r in rows:
        name = r["provider"]
        if name in per_chunk:
            average = r["chunks"] / r["streams"]
            fixed = r["agentmsg_us_per_reply"] - per_chunk[name] * average
            print(
                f"    {name:<10} {per_chunk[name]:.2f} µs a further chunk; a recorded reply ({average:.0f} chunks on"
                f" average) {r['agentmsg_us_per_reply']:.0f} µs, of which about {fixed:.0f} µs besides its chunks"
                " (set-up, start and end events, the Msg)"
            )
    for t in targets(rows):
        print(f"  {t['row']}: {t['value']:.2f}, target {t['target']}: {'met' if t['met'] else 'MISSED'}")


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target of each row: what it is about, the measured ratio, the target, met."""
    out = []
    for r in rows:
        out.append(
            {
                "row": f"{r['provider']}: agentmsg / orjson",
                "value": r["vs_orjson"],
                "target": f"<= {TARGET_VS_ORJSON:g}",
                "met": r["vs_orjson"] <= TARGET_VS_ORJSON,
            }
        )
        if "official_over_agentmsg" in r and r["provider"].split()[0] in JUDGED_VS_OFFICIAL:
            out.append(
                {
                    "row": f"{r['provider']}: official / agentmsg",
                    "value": r["official_over_agentmsg"],
                    "target": f">= {TARGET_VS_OFFICIAL:g}",
                    "met": r["official_over_agentmsg"] >= TARGET_VS_OFFICIAL,
                }
            )
    return out


if __name__ == "__main__":
    print_rows(run())
