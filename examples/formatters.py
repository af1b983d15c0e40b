"""agentmsg demo, formatters: one conversation as the request body of every provider, with the
diagnostics each formatter reports (run by `make demo` through demo.py, or on its own)."""

from __future__ import annotations

import json
from typing import Any

from agentmsg import AudioBlock, Msg, ValidationError
from agentmsg.providers import NAMES, RULES, get

TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def _short(value: Any, limit: int = 900) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def main(conversation: list[Msg]) -> None:
    print("\n== the conversation as a request for every provider ==")
    try:
        get("openai").format_request(conversation, tools=TOOLS)
    except ValidationError as exc:
        p = exc.problems[0]
        print(f"media safety, openai: {p.pointer}: {p.message} [{p.rule}]")
    # OpenAI needs the bytes of the audio URL and downloads are off: format without that block
    msgs = [m.copy(content=[b for b in m.content if not isinstance(b, AudioBlock)]) for m in conversation]
    print("(formatting without the audio URL block)")
    for name in NAMES:
        request = get(name).format_request(msgs, tools=TOOLS, tool_choice="auto")
        print(f"\n-- {name}: POST {request.path}  model={request.model}  headers={dict(request.headers)}")
        print(f"   body: {_short(request.body)}")
        for p in request.diagnostics:
            print(f"   {p.pointer:<22} {p.rule:<28} {RULES[p.rule][0]:<8} {p.message}")
    print("\n-- multi-agent (prefix layout), Friday is the current agent, for anthropic:")
    request = get("anthropic").format_request(msgs, multi_agent=True, agent_name="Friday", tools=TOOLS)
    print(f"   messages: {_short(request.body['messages'], 600)}")


if __name__ == "__main__":
    import demo

    main(demo.build())
