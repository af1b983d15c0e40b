"""Synthetic but realistic AgentScope event streams for the benchmarks (JSONL bytes)."""

from __future__ import annotations

import random

import orjson

TS = "2026-11-22T10:34:38.563248392Z"


def make_stream(deltas: int, *, seed: int = 1) -> bytes:
    """One agent reply with ``deltas`` delta events: text, thinking and four interleaved parallel tool
    calls (about 50/20/30 %), bracketed by Java-style START/END events, one JSON object per line."""
    rng = random.Random(seed)
    words = ["the", "weather", "in", "Paris", "is", "sunny", "and", "warm", "today", "—", "25°C", "so", "enjoy"]
    out: list[bytes] = []
    n = 0

    def emit(event: dict[str, object]) -> None:
        nonlocal n
        n += 1
        event["id"] = f"{n:032x}"
        event["createdAt"] = TS
        out.append(orjson.dumps(event))

    reply, model = "a" * 32, "b" * 32
    emit({"type": "AGENT_START", "replyId": reply, "name": "Friday", "sessionId": "s1"})
    emit({"type": "MODEL_CALL_START", "replyId": model})
    emit({"type": "THINKING_BLOCK_START", "replyId": model, "blockId": "thinking"})
    emit({"type": "TEXT_BLOCK_START", "replyId": model, "blockId": "text"})
    calls = [f"call_{i}" for i in range(4)]
    for c in calls:
        emit({"type": "TOOL_CALL_START", "replyId": model, "toolCallId": c, "toolCallName": "get_weather"})
        emit(
            {
                "type": "TOOL_CALL_DELTA",
                "replyId": model,
                "toolCallId": c,
                "toolCallName": "get_weather",
                "delta": '{"log":"',
            }
        )
    for _ in range(deltas):
        r = rng.random()
        if r < 0.5:
            emit({"type": "TEXT_BLOCK_DELTA", "replyId": model, "blockId": "text", "delta": rng.choice(words) + " "})
        elif r < 0.7:
            emit(
                {
                    "type": "THINKING_BLOCK_DELTA",
                    "replyId": model,
                    "blockId": "thinking",
                    "delta": rng.choice(words) + " ",
                }
            )
        else:
            c = rng.choice(calls)
            emit(
                {
                    "type": "TOOL_CALL_DELTA",
                    "replyId": model,
                    "toolCallId": c,
                    "toolCallName": "get_weather",
                    "delta": rng.choice(words),
                }
            )
    for c in calls:
        emit(
            {"type": "TOOL_CALL_DELTA", "replyId": model, "toolCallId": c, "toolCallName": "get_weather", "delta": '"}'}
        )
        emit({"type": "TOOL_CALL_END", "replyId": model, "toolCallId": c, "toolCallName": "get_weather"})
    emit({"type": "THINKING_BLOCK_END", "replyId": model, "blockId": "thinking"})
    emit({"type": "TEXT_BLOCK_END", "replyId": model, "blockId": "text"})
    emit(
        {
            "type": "MODEL_CALL_END",
            "replyId": model,
            "usage": {
                "inputTokens": 100,
                "outputTokens": deltas,
                "cachedTokens": 0,
                "time": 1.0,
                "totalTokens": 100 + deltas,
            },
        }
    )
    emit({"type": "AGENT_END", "replyId": reply})
    return b"\n".join(out) + b"\n"
