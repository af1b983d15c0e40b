"""The provider tour (part of `make demo`), offline.

A local replay server (agentmsg.testing) plays recorded provider streams over real HTTP on loopback.
For each provider: the client formats the conversation, streams the reply as AgentEvents (shown as they
arrive), the one Reducer folds them into the message, and the continued conversation (with the tool's
result) is formatted for every other provider, with the formatter's diagnostics. Last, a stream cut
mid-way: everything received is kept and the reply is marked INTERRUPTED.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentmsg import (
    Msg,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolResultState,
    UserMessage,
)
from agentmsg.clients import BrokenStreamError, Client
from agentmsg.providers import get
from agentmsg.testing import ReplayServer, Reply

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "providers"

# provider -> (recorded stream, what the user asked in that recording)
TOUR = {
    "openai": ("openai/stream_parallel_tool_calls.sse", "What's the weather in Edinburgh, and AAPL's price?"),
    "anthropic": ("anthropic/stream_thinking_signature.sse", "Now divide that by 5."),
    "gemini": ("gemini/stream_function_call_partial_args.sse", "Weather in Boston and San Francisco?"),
    "dashscope": ("dashscope/native_stream_reasoning_tool_call_sdkprint.jsonl", "杭州天气怎么样？"),
    "dashscope-compatible": ("dashscope/compat_stream_reasoning.sse", "How many r's are in strawberry?"),
}
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
ALL = ["openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"]


def short(text: str, n: int = 70) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def show_event(e: dict[str, Any], out: Any) -> None:
    t = e["type"]
    if e.get("source"):
        return
    if t.endswith("_DELTA"):
        piece = e.get("delta") or ("<signature>" if e.get("signature") else "")
        out.write(piece if t != "THINKING_BLOCK_DELTA" else piece.replace("\n", " "))
        return
    if t in ("TEXT_BLOCK_START", "THINKING_BLOCK_START"):
        out.write(f"\n    {t.split('_')[0].lower()}: ")
    elif t == "TOOL_CALL_START":
        sig = " (signed)" if e.get("thoughtSignature") else ""
        out.write(f"\n    tool call {e['toolCallName']}{sig} [{e['toolCallId'][:18]}]: ")
    elif t in ("MODEL_CALL_END", "REQUEST_STOP", "CUSTOM"):
        detail = e.get("usage") or e.get("generateReason") or e.get("value")
        out.write(f"\n    {t} {detail}")
    out.flush()


def describe(msg: Msg) -> str:
    parts = []
    for b in msg.to_dict()["content"]:
        if b["type"] == "text":
            parts.append(f"text {short(b['text'], 40)!r}")
        elif b["type"] == "thinking":
            sig = " +signature" if (b["metadata"] or {}).get("signature") else ""
            parts.append(f"thinking ({len(b['thinking'])} chars{sig})")
        elif b["type"] == "tool_use":
            parts.append(f"tool_use {b['name']}({short(b['content'] or '', 40)})")
    reason = msg.generate_reason.value if msg.generate_reason else "MODEL_STOP"
    return f"[{', '.join(parts)}] reason={reason} usage={msg.to_dict()['usage']}"


def continued(convo: list[Msg], reply: Msg) -> list[Msg]:
    results = [
        ToolResultBlock(id=c.id, name=c.name, output=[TextBlock(text="sunny, 21°C")], state=ToolResultState.SUCCESS)
        for c in reply.blocks("tool_use")
    ]
    follow: list[Msg] = [*convo, reply]
    if results:
        follow.append(ToolResultMessage(results))
    else:
        follow.append(UserMessage("Thanks! And in one word?"))
    return follow


def main() -> int:
    out = sys.stdout
    print("\n=== provider tour: replay server on loopback, clients over httpx, events -> one Msg ===")
    with ReplayServer() as server:
        for provider, (fixture, question) in TOUR.items():
            convo: list[Msg] = [SystemMessage("You are a helpful assistant."), UserMessage(question, name="alice")]
            client = Client(provider, base_url=server.url, api_key="demo-key", name="Friday")
            request = client.format(convo, stream=True, tools=TOOLS)
            path = request.path  # where the request goes, relative to the base URL
            server.add(path, Reply(body=(FIX / fixture).read_bytes(), sse=True, chunk_size=256, delay=0.001))
            print(f"\n--- {provider}: POST {path.split('?')[0]} ({len(request.diagnostics)} diagnostics) ---")
            with client.stream(convo, tools=TOOLS) as stream:
                for event in stream:
                    show_event(event, out)
            reply = stream.message
            assert reply is not None
            print(f"\n  message: {describe(reply)}")
            follow = continued(convo, reply)
            print("  the continued conversation, formatted for every provider:")
            for target in ALL:
                try:
                    req = get(target).format_request(follow, tools=TOOLS)
                except Exception as exc:  # a formatter that refuses the conversation says why
                    print(f"    {target:<21} refused: {exc}")
                    continue
                rules = sorted({p.rule for p in req.diagnostics})
                print(f"    {target:<21} {len(req.body_bytes()):>6} bytes  diagnostics: {', '.join(rules) or 'none'}")
            client.close()

        print("\n--- a stream cut mid-way (the server drops the connection) ---")
        body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
        server.add("/chat/completions", Reply(body=body, sse=True, chunk_size=200, disconnect_after=len(body) // 2))
        client = Client("openai", base_url=server.url, api_key="demo-key")
        try:
            with client.stream([UserMessage("Weather in San Francisco?")]) as stream:
                for _ in stream:
                    pass
        except BrokenStreamError as exc:
            print(f"  BrokenStreamError: {exc.message}")
            print(f"  kept: {describe(exc.partial)}")
        client.close()
    print("\nreplay server stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
