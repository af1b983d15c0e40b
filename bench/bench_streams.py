"""Provider streams: SSE bytes -> AgentEvents -> Msg over the recorded streams (tests/fixtures/providers),
side by side in one process with the official SDKs' accumulators and plain orjson parsing of the same chunks.

Rows, per provider (all its recorded streams, µs per chunk, best of the repeats):
* ``orjson``: split the body into ``data:`` lines and ``orjson.loads`` each payload: the floor, it builds
  nothing;
* ``agentmsg``: ``reduce_events(parse_stream(body), trusted=True)``: the SSE decoder, the provider parser, the
  events and the reducer, down to the validated Msg (``trusted``: the parser's events are valid by construction,
  so the reducer skips its per-event schema check and builds the Msg through the codec's fast path), all in
  Python but the generic C kernels (the SSE scanner, the reducer's delta loop);
* ``official``: each SDK's own streaming path from the same bytes, as its stream helper runs it (the
  HTTP read aside): openai and anthropic decode the body with the SDK's ``SSEDecoder``, parse each event
  (``sse.json()``), build the typed chunk as their ``Stream`` does (``construct_type``, unvalidated) and
  accumulate it (openai ``ChatCompletionStreamState.handle_chunk``, which also builds its stream events:
  ``client.chat.completions.stream``; anthropic ``accumulate_event`` then ``build_events``, as
  ``MessageStream.__stream__`` runs them: ``client.messages.stream``); dashscope runs its ``Stream`` (httpx-sse
  over an ``httpx.Response`` of the body, ``parse_chunk``) and ``_aggregate``. google-genai has no stream
  accumulator (no row).

Rows "<provider> long": one recorded stream per provider (:data:`LONG`) with its text deltas repeated to
about 1,000 chunks, the same three ways: the recorded streams are short (4 to 70 chunks), so their figures
carry each reply's fixed cost; the long rows show the cost of each further chunk.

Same work, and where it is not: both sides start from the body's bytes and end with the reply rebuilt.
agentmsg does more: it also emits the AgentEvents (a dict per event, ids, createdAt) and validates the
final Msg; the SDKs validate nothing (``construct_type``) and emit no events. Equal results are checked
before timing: the official result and agentmsg's message carry the same text.
Targets: agentmsg >= 20x faster than the official accumulators the issue names (openai
``ChatCompletionStreamState``, anthropic ``accumulate_event``), within 3x of the orjson floor on every row.
DashScope's row against its SDK is shown but not judged: its ``_aggregate`` costs about 10x orjson alone
per chunk, so 20x of it would be under the JSON parse itself.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agentmsg import reduce_events
from agentmsg.providers import anthropic, dashscope, gemini, openai

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "providers"
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


def _streams(provider: str) -> list[bytes]:
    if provider == "openai":
        paths = sorted((FIX / "openai").glob("*.sse")) + sorted((FIX / "dashscope").glob("compat_*.sse"))
    elif provider == "dashscope":
        paths = [p for p in sorted((FIX / "dashscope").glob("native_*.sse"))]
    else:
        paths = sorted((FIX / provider).glob("*.sse"))
    if provider == "anthropic":
        paths = [p for p in paths if "extended_thinking" not in p.name]  # edited docs sample: the SDK rejects it
    return [p.read_bytes() for p in paths]


#: One recorded stream per provider whose text deltas are repeated into a long reply (the ``long`` rows): the
#: recorded streams are short (4 to 70 chunks), so their per-chunk figures carry each reply's fixed cost
#: (set-up, start and end events, the final Msg); a long reply shows what each further chunk costs.
LONG = {
    "openai": "openai/stream_text_include_usage.sse",
    "anthropic": "anthropic/stream_sdk_basic.sse",
    "gemini": "gemini/stream_text.sse",
    "dashscope": "dashscope/native_stream_text_docs.sse",
}
LONG_CHUNKS = 1000


def _is_text_delta(provider: str, obj: dict[str, Any]) -> bool:
    if provider == "anthropic":
        return obj.get("type") == "content_block_delta" and obj["delta"].get("type") == "text_delta"
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


def _best(fn: Callable[[], Any], repeat: int, number: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - t) / number)
        finally:
            gc.enable()
    return best


def _official(provider: str) -> Callable[[bytes], Any] | None:
    try:
        if provider == "openai":
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
                return state.current_completion_snapshot

            return run_openai
        if provider == "anthropic":
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

            return run_anthropic
        if provider == "dashscope":
            import httpx
            from dashscope.v2.resources.chat.completions import _aggregate
            from dashscope.v2.transport.sse import Stream as DashScopeStream
            from dashscope.v2.types.completions import parse_chunk

            def run_dashscope(body: bytes) -> Any:
                response = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
                return _aggregate(list(DashScopeStream(response, parse_chunk)))

            return run_dashscope
    except ImportError:
        return None
    return None  # gemini: google-genai has no stream accumulator


MODULES: dict[str, Any] = {"openai": openai, "anthropic": anthropic, "gemini": gemini, "dashscope": dashscope}


def _text(result: Any) -> str:
    if hasattr(result, "choices"):
        m = result.choices[0].message
        return str(m.content or "") + str(getattr(m, "refusal", None) or "")
    if hasattr(result, "content"):
        return "".join(getattr(b, "text", "") for b in result.content)
    return ""


def run(quick: bool = False) -> list[dict[str, Any]]:
    repeat, target_s = (3, 0.05) if quick else (7, 0.2)
    rows = []
    cases = [(p, p, _streams(p)) for p in MODULES] + [(f"{p} long", p, [_long_stream(p)]) for p in MODULES]
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

        official = _official(provider)
        impls: dict[str, Callable[[], Any]] = {"orjson": floor, "agentmsg": ours}
        if official is not None:
            # equal work: the same text out of both, for every stream
            for b in bodies:
                msg = reduce_events(list(mod.parse_stream(b)))[0]
                if provider != "dashscope":
                    assert (
                        _text(official(b)) == msg.text_content.replace("\n", "")
                        or _text(official(b)) == msg.text_content
                    ), provider

            def theirs() -> None:
                for b in bodies:
                    official(b)

            impls["official"] = theirs
        times = {}
        for name, fn in impls.items():
            t0 = time.perf_counter()
            fn()
            once = max(time.perf_counter() - t0, 1e-6)
            number = max(1, int(target_s / once))
            times[name] = _best(fn, repeat, number)
        row: dict[str, Any] = {"provider": label, "streams": len(bodies), "chunks": chunks}
        for name, t in times.items():
            row[f"{name}_us_per_chunk"] = round(t / chunks * 1e6, 2)
        row["agentmsg_us_per_reply"] = round(times["agentmsg"] / len(bodies) * 1e6, 1)
        row["vs_orjson"] = round(times["agentmsg"] / times["orjson"], 2)
        if "official" in times:
            row["official_over_agentmsg"] = round(times["official"] / times["agentmsg"], 1)
        rows.append(row)
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== provider streams: SSE bytes -> events -> Msg (µs per chunk, best of repeats) ==")
    print(
        f"  {'provider':<15} {'chunks':>6} {'orjson':>8} {'agentmsg':>9} {'official':>9} {'x orjson':>9} {'official/agentmsg':>18}"
    )
    for r in rows:
        off = r.get("official_us_per_chunk")
        ratio = r.get("official_over_agentmsg")
        print(
            f"  {r['provider']:<15} {r['chunks']:>6} {r['orjson_us_per_chunk']:>8} {r['agentmsg_us_per_chunk']:>9} "
            f"{off if off is not None else '-':>9} {r['vs_orjson']:>9} {ratio if ratio is not None else '-':>18}"
        )
    # What a reply costs besides its chunks: a recorded reply's time less its chunks at the long row's cost per chunk
    # (the long rows carry the fixed cost once over ~1,000 chunks).
    per_chunk = {
        r["provider"].removesuffix(" long"): r["agentmsg_us_per_chunk"] for r in rows if r["provider"].endswith(" long")
    }
    for r in rows:
        name = r["provider"]
        if name in per_chunk and r["streams"] > 1:
            average = r["chunks"] / r["streams"]
            fixed = r["agentmsg_us_per_reply"] - per_chunk[name] * average
            print(
                f"  {name}: {r['streams']} replies of {average:.0f} chunks on average, {r['agentmsg_us_per_reply']} µs a"
                f" reply, of which about {fixed:.0f} µs besides its chunks (set-up, start and end events, the Msg)"
            )
    for r in rows:
        verdicts = [f"within {TARGET_VS_ORJSON}x of orjson: {'yes' if r['vs_orjson'] <= TARGET_VS_ORJSON else 'NO'}"]
        if "official_over_agentmsg" in r and r["provider"].split()[0] in JUDGED_VS_OFFICIAL:
            ok = r["official_over_agentmsg"] >= TARGET_VS_OFFICIAL
            verdicts.append(f">= {TARGET_VS_OFFICIAL:.0f}x faster than official: {'yes' if ok else 'NO'}")
        print(f"  {r['provider']}: " + "; ".join(verdicts))


if __name__ == "__main__":
    print_rows(run())
