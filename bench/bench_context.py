"""`make bench` section ``context``: how close the offline token counts are to the providers' official counts, and
counting a long conversation in time linear in its length.

- **corpus**: tests/fixtures/context/corpus.json, real requests with the count the provider returned for them
  (pydantic-ai's recorded cassettes: OpenAI ``prompt_tokens``, Anthropic ``input_tokens`` + cache, Gemini
  ``promptTokenCount``). Per provider: the relative error of ``count_tokens`` (signed mean, mean, 90th percentile,
  max) and the error the count states. DashScope and DeepSeek have no official count in any recording at hand:
  their rows say so.
- **conformance**: the conformance conversations (tests/conformance/formatters/<provider>/*.json) have no official
  counts; their row compares the count with the tokens of the text the provider's formatter puts in its body (the
  string values of ``format_request(...).body``, o200k), a cross-check of the block walk against the formatter.
- **linear**: counting a conversation of 1,000 and of 10,000 messages (text, thinking, tool calls and results);
  the ratio of the two times should be about 10.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from agentmsg import (
    AudioBlock,
    DataBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from agentmsg.context import count_tokens
from agentmsg.context._tokenizers import counter
from agentmsg.providers import NAMES, get

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "context" / "corpus.json"
CONFORMANCE = ROOT / "tests" / "conformance" / "formatters"
_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DataBlock)
#: the linear rows' target: time(10k) / time(1k)
TARGET_LINEAR = 13.0


def corpus_cases() -> list[dict[str, Any]]:
    """The corpus, its messages as Msg."""
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    out = []
    for c in data["cases"]:
        msgs = [Msg.from_dict({"id": f"m{i}", "metadata": {}, **m}) for i, m in enumerate(c["messages"])]
        out.append({**c, "msgs": msgs})
    return out


def corpus_rows() -> list[dict[str, Any]]:
    by: dict[str, list[tuple[float, float | None, str]]] = {}
    for c in corpus_cases():
        n = count_tokens(c["msgs"], provider=c["provider"], model=c["model"], tools=c["tools"])
        by.setdefault(c["provider"], []).append(((n.total - c["official"]) / c["official"], n.error, n.method))
    rows = []
    for provider in NAMES:
        errs = by.get(provider)
        if not errs:
            rows.append({"group": "corpus", "provider": provider, "cases": 0})
            continue
        rel = [e for e, _, _ in errs]
        absolute = sorted(abs(e) for e in rel)
        stated = [s for _, s, _ in errs if s is not None]
        rows.append(
            {
                "group": "corpus",
                "provider": provider,
                "cases": len(errs),
                "method": sorted({m for _, _, m in errs})[0],
                "signed": statistics.mean(rel),
                "mean": statistics.mean(absolute),
                "p90": absolute[int(0.9 * (len(absolute) - 1))],
                "max": absolute[-1],
                "within": sum(1 for e, s, _ in errs if abs(e) <= (s or 0.0)) / len(errs),
                "stated": statistics.median(stated) if stated else None,
            }
        )
    return rows


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in ("model", "role", "type", "id", "tool_call_id", "signature", "thoughtSignature", "data"):
                _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _has_media(blocks: Any) -> bool:
    return any(type(b) in _MEDIA or (type(b) is ToolResultBlock and _has_media(b.output)) for b in blocks)


def _framing(provider: str, body: dict[str, Any]) -> int:
    """The framing count_tokens adds (none of it is text in the body): the provider's per message, for each message,
    turn or item the body sends and its hoisted system prompt (count_tokens frames what the request sends)."""
    tokens = get(provider).spec.tokens
    listed = body.get("messages") or body.get("contents") or body.get("input") or []
    if isinstance(listed, dict):  # (DashScope native: input.messages)
        listed = listed.get("messages") or []
    hoisted = any(key in body for key in ("system", "systemInstruction", "instructions"))
    return (tokens.per_message if tokens is not None else 3) * (len(listed) + hoisted)


def conformance_rows() -> list[dict[str, Any]]:
    o200k = counter("o200k_base")
    rows = []
    for provider in NAMES:
        files = sorted((CONFORMANCE / provider).glob("*.json"))
        ours = body = n = 0
        for f in files:
            case = json.loads(f.read_text(encoding="utf-8"))
            spec = case.get("input") or {}
            try:
                msgs = [Msg.from_dict(m) for m in spec.get("messages") or []]
                if any(_has_media(m.content) for m in msgs):
                    continue  # media are priced by rate, not text: the body's text says nothing of them
                tools = spec.get("tools")
                counted = count_tokens(msgs, provider=provider, tools=tools)
                req = get(provider).format_request(msgs, tools=tools)
            except Exception:  # a vector of bad input (its formatter refuses it): nothing to compare
                continue
            texts: list[str] = []
            _strings(req.body.get("messages") or req.body.get("contents") or req.body.get("input") or [], texts)
            _strings(req.body.get("system") or req.body.get("systemInstruction") or [], texts)
            ours += counted.total - counted.tools - counted.overhead - _framing(provider, req.body)
            body += sum(o200k.count(t) for t in texts)
            n += 1
        rows.append({"group": "conformance", "provider": provider, "cases": n, "count": ours, "body_text": body})
    return rows


def long_conversation(n: int) -> list[Msg]:
    """n messages: a user question, the assistant's reasoning and tool call, the result, the answer, repeated."""
    out: list[Msg] = [Msg(role="SYSTEM", content=[TextBlock(text="You are a careful assistant with tools.")])]
    i = 0
    while len(out) < n:
        cid = f"call_{i}"
        out.append(Msg(role="USER", content=[TextBlock(text=f"Question {i}: what is the weather in city {i}?")]))
        out.append(
            Msg(
                role="ASSISTANT",
                content=[
                    ThinkingBlock(thinking=f"I should look up city {i} with the tool.", metadata={"signature": "c2ln"}),
                    ToolUseBlock(id=cid, name="get_weather", input={"city": f"city {i}", "unit": "celsius"}),
                ],
            )
        )
        out.append(
            Msg(
                role="TOOL",
                content=[ToolResultBlock(id=cid, name="get_weather", output=[TextBlock(text=f"{i % 30} C, clear")])],
            )
        )
        out.append(Msg(role="ASSISTANT", content=[TextBlock(text=f"It is {i % 30} C and clear in city {i}.")]))
        i += 1
    return out[:n]


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def linear_rows(quick: bool) -> list[dict[str, Any]]:
    repeat = 1 if quick else 3
    rows = []
    small, large = long_conversation(1_000), long_conversation(10_000)
    for provider in ("openai", "anthropic", "dashscope"):
        t1 = _best(lambda: count_tokens(small, provider=provider), repeat)
        t10 = _best(lambda: count_tokens(large, provider=provider), repeat)
        rows.append({"group": "linear", "provider": provider, "s_1k": t1, "s_10k": t10, "ratio": t10 / t1})
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    # (first use of every vocabulary outside the timed loops)
    for provider in NAMES:
        count_tokens(long_conversation(4), provider=provider)
    return corpus_rows() + conformance_rows() + linear_rows(quick)


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("\n== context: offline count vs the providers' official counts (recorded requests) ==")
    print(
        f"  {'provider':<21} {'cases':>5}  {'method':<22} {'signed':>7} {'mean':>6} {'p90':>6} {'max':>6}  stated  within"
    )
    for r in rows:
        if r["group"] != "corpus":
            continue
        if not r["cases"]:
            print(f"  {r['provider']:<21} {0:>5}  no official count in any recording at hand (not measured)")
            continue
        stated = "-" if r["stated"] is None else f"{r['stated']:.2f}"
        print(
            f"  {r['provider']:<21} {r['cases']:>5}  {r['method']:<22} {r['signed']:+7.3f} {r['mean']:6.3f}"
            f" {r['p90']:6.3f} {r['max']:6.3f}  {stated:>6}  {r['within']:5.0%}"
        )
    print(
        "\n== context: conformance conversations without media (no official counts): count less framing vs the"
        " formatted body's text (o200k) =="
    )
    for r in rows:
        if r["group"] == "conformance":
            ratio = r["count"] / r["body_text"] if r["body_text"] else float("nan")
            print(
                f"  {r['provider']:<21} {r['cases']:>3} conversations  count {r['count']:>6}  body text {r['body_text']:>6}  {ratio:5.2f}x"
            )
    print("\n== context: counting a long conversation (time linear in its length) ==")
    for r in rows:
        if r["group"] == "linear":
            print(
                f"  {r['provider']:<21} 1,000 msgs {r['s_1k'] * 1000:8.1f} ms   10,000 msgs {r['s_10k'] * 1000:8.1f} ms"
                f"   ratio {r['ratio']:5.2f}"
            )


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r["group"] == "linear":
            out.append(
                {
                    "row": f"count_tokens {r['provider']}: 10k / 1k messages",
                    "value": r["ratio"],
                    "target": f"<= {TARGET_LINEAR:g}",
                    "met": r["ratio"] <= TARGET_LINEAR,
                }
            )
    return out
