"""Build the formatter golden vectors: the same inputs for every provider, the expected request
written from agentmsg's formatter (reviewed by hand when they change: `git diff` shows every change).

    python tests/conformance/formatters/build_vectors.py          # rewrite the vectors
    python tests/conformance/formatters/build_vectors.py --check  # exit 1 if a vector would change

The format is described in tests/conformance/README.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from agentmsg import (  # noqa: E402
    AssistantMessage,
    AudioBlock,
    Base64Source,
    DataBlock,
    HintBlock,
    ImageBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
    VideoBlock,
    encode_messages,
)
from agentmsg.errors import Problem  # noqa: E402
from agentmsg.providers import NAMES, get  # noqa: E402

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
TS = "2026-01-01 12:00:00.000"
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def diagnostic(p: Problem) -> dict[str, Any]:
    """A diagnostic as a vector pins it: its pointer and rule, and every place when it is said once for several."""
    d: dict[str, Any] = {"pointer": p.pointer, "rule": p.rule}
    if p.other_pointers:
        d["pointers"] = list(p.pointers)
    return d


def _ids(msgs: list[Any]) -> list[Any]:
    """Fixed ids and timestamps, so the input JSON is stable."""
    for k, m in enumerate(msgs):
        m.id = f"m{k}"
        m.timestamp = TS
    return msgs


def case_chat_basic() -> dict[str, Any]:
    return {
        "description": "system, user and assistant text; a generation parameter",
        "messages": [
            SystemMessage("You are a helpful assistant."),
            UserMessage("Hello!"),
            AssistantMessage("Hi there."),
        ],
        "params": {"temperature": 0.5},
    }


def case_tool_loop() -> dict[str, Any]:
    return {
        "description": "signed Anthropic thinking, two parallel tool calls, their results in two TOOL messages, an answer; tools and tool_choice",
        "messages": [
            SystemMessage("You are a helpful assistant."),
            UserMessage("Weather in Paris and Rome?", name="alice"),
            AssistantMessage(
                [
                    ThinkingBlock(
                        thinking="Two cities: two calls.",
                        metadata={"signature": "EqQBCkYIBxgCKkA", "provider": "anthropic"},
                    ),
                    TextBlock(text="Let me check both."),
                    ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}, content='{"city": "Paris"}'),
                    ToolUseBlock(id="call_2", name="get_weather", input={"city": "Rome"}),
                ],
                name="Friday",
            ),
            ToolResultMessage(ToolResultBlock(id="call_1", name="get_weather", output="Sunny, 25°C", state="success")),
            ToolResultMessage(ToolResultBlock(id="call_2", name="get_weather", output="Rain, 18°C", state="success")),
            AssistantMessage("Paris is sunny; Rome is rainy.", name="Friday"),
        ],
        "tools": [WEATHER],
        "tool_choice": "auto",
    }


def case_media() -> dict[str, Any]:
    return {
        "description": "image URL with sizing, inline image, wav audio, PDF, video URL",
        "messages": [
            UserMessage(
                [
                    TextBlock(text="What is in these?"),
                    ImageBlock(source=URLSource(url="https://example.com/cat.jpg"), max_pixels=1003520),
                    ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
                    AudioBlock(source=Base64Source(media_type="audio/wav", data="UklGRiQAAABXQVZF")),
                    DataBlock(
                        source=Base64Source(media_type="application/pdf", data="JVBERi0xLjQK"),
                        id="d1",
                        name="report.pdf",
                    ),
                    VideoBlock(source=URLSource(url="https://example.com/clip.mp4"), fps=2.0),
                ]
            )
        ],
    }


def case_tool_result_image() -> dict[str, Any]:
    return {
        "description": "a tool result holding text and an image",
        "messages": [
            UserMessage("Take a screenshot."),
            AssistantMessage([ToolUseBlock(id="toolu_01", name="screenshot", input={})]),
            ToolResultMessage(
                ToolResultBlock(
                    id="toolu_01",
                    name="screenshot",
                    output=[
                        TextBlock(text="Here it is."),
                        ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
                    ],
                    state="success",
                )
            ),
            AssistantMessage("I see a single pixel."),
        ],
    }


def _debate() -> list[Any]:
    return [
        SystemMessage("You are Bob, in a debate with Alice."),
        UserMessage("Topic: is Python fast enough?", name="moderator"),
        AssistantMessage("Yes, for most things.", name="Alice"),
        AssistantMessage([ToolUseBlock(id="call_b", name="get_weather", input={"city": "Oslo"})], name="Bob"),
        ToolResultMessage(ToolResultBlock(id="call_b", name="get_weather", output="Cold", state="success"), name="Bob"),
        AssistantMessage("Fast enough, and it is cold in Oslo.", name="Bob"),
        AssistantMessage("Agreed.", name="Alice"),
    ]


def case_multi_agent_prefix() -> dict[str, Any]:
    return {
        "description": "multi-agent, prefix layout: other speakers as user turns '[Name]: text'; Bob keeps his turns",
        "messages": _debate(),
        "tools": [WEATHER],
        "multi_agent": True,
        "agent_name": "Bob",
    }


def case_multi_agent_history() -> dict[str, Any]:
    return {
        "description": "multi-agent, history layout: runs of other speakers folded into <history> user turns",
        "messages": _debate(),
        "tools": [WEATHER],
        "multi_agent": True,
        "agent_name": "Bob",
        "options": {"multi_agent_layout": "history"},
    }


def case_foreign_reasoning_text() -> dict[str, Any]:
    return {
        "description": "reasoning from another provider demoted to text (option reasoning=text)",
        "messages": [
            UserMessage("Why?"),
            AssistantMessage(
                [ThinkingBlock(thinking="Because of X.", metadata={"provider": "elsewhere"}), TextBlock(text="X.")]
            ),
            UserMessage("Thanks."),
        ],
        "options": {"reasoning": "text"},
    }


def case_orphans_repaired() -> dict[str, Any]:
    return {
        "description": "an unanswered tool call and a result that answers nothing, repaired (option repair)",
        "messages": [
            UserMessage("Check Oslo."),
            AssistantMessage([ToolUseBlock(id="call_x", name="get_weather", input={"city": "Oslo"})]),
            UserMessage("Never mind."),
            ToolResultMessage(ToolResultBlock(id="call_late", name="get_weather", output="Cold", state="success")),
            AssistantMessage("OK."),
        ],
        "tools": [WEATHER],
        "options": {"repair": True},
    }


def case_hint() -> dict[str, Any]:
    return {
        "description": "a hint in the assistant turn that calls a tool: sent after the tool result",
        "messages": [
            UserMessage("Weather in Oslo?"),
            AssistantMessage(
                [
                    HintBlock(id="h1", hint="Answer in Celsius.", source="system"),
                    ToolUseBlock(id="c1", name="get_weather", input={"city": "Oslo"}),
                ]
            ),
            ToolResultMessage(ToolResultBlock(id="c1", name="get_weather", output="-3", state="success")),
            AssistantMessage("-3°C."),
        ],
        "tools": [WEATHER],
    }


def case_ids_and_names() -> dict[str, Any]:
    return {
        "description": "tool-call ids and names other providers minted (Kimi-style), speaker names with spaces",
        "messages": [
            UserMessage("Go.", name="Alice Smith"),
            AssistantMessage(
                [ToolUseBlock(id="functions.get_weather:0", name="get_weather", input={"city": "Oslo"})],
                name="Agent 007",
            ),
            ToolResultMessage(
                ToolResultBlock(id="functions.get_weather:0", name="get_weather", output="Cold", state="error")
            ),
        ],
        "tools": [WEATHER],
    }


def case_tool_ids_at_the_limits() -> dict[str, Any]:
    ids = ["a.b", "a_b", "c" * 40, "d" * 41]
    failed: list[TextBlock | ImageBlock] = [
        TextBlock(text="boom"),
        ImageBlock(source=Base64Source(media_type="image/png", data=PNG)),
    ]
    return {
        "description": "tool-call ids that clash once sanitized (a.b, a_b), at OpenAI's 40-character limit and one"
        " over; a failed result of text and an image",
        "messages": [
            UserMessage("Check four cities."),
            AssistantMessage(
                [ToolUseBlock(id=i, name="get_weather", input={"city": c}) for i, c in zip(ids, "NORP", strict=True)]
            ),
            ToolResultMessage(
                [
                    ToolResultBlock(id=ids[0], name="get_weather", output="Sunny", state="success"),
                    ToolResultBlock(id=ids[1], name="get_weather", output=failed, state="error"),
                    ToolResultBlock(id=ids[2], name="get_weather", output="Rain", state="success"),
                    ToolResultBlock(id=ids[3], name="get_weather", output="Snow", state="success"),
                ]
            ),
            AssistantMessage("Mostly fine."),
        ],
        "tools": [WEATHER],
    }


def case_empty_content() -> dict[str, Any]:
    return {
        "description": "empty text blocks and a message with nothing to send",
        "messages": [
            UserMessage([TextBlock(text=""), TextBlock(text="Hi")]),
            AssistantMessage([TextBlock(text="")]),
            UserMessage("Anyone?"),
        ],
    }


def case_tools_schema() -> dict[str, Any]:
    return {
        "description": "a tool schema with keywords outside Gemini's subset; tool_choice required; parallel tool calls off",
        "messages": [UserMessage("Search for cats.")],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Search the web",
                    "parameters": {
                        "$schema": "https://json-schema.org/draft/2020-12/schema",
                        "type": "object",
                        "properties": {
                            "q": {"type": "string", "minLength": 1},
                            "lang": {"const": "en"},
                            "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
                        },
                        "required": ["q"],
                        "additionalProperties": False,
                        "$defs": {"tag": {"type": "string", "enum": ["news", "images"]}},
                    },
                },
            }
        ],
        "tool_choice": "required",
        "params": {"parallel_tool_calls": False},
    }


def case_gemini_signatures() -> dict[str, Any]:
    return {
        "description": "Gemini thought signatures on thinking and function calls, a foreign signature dropped",
        "messages": [
            UserMessage("Plan a trip."),
            AssistantMessage(
                [
                    ThinkingBlock(thinking="", metadata={"signature": "c2lnbmF0dXJl", "provider": "gemini"}),
                    ToolUseBlock(
                        id="a",
                        name="get_weather",
                        input={"city": "Nice"},
                        metadata={"thoughtSignature": "Q2lRQkFTag==", "provider": "gemini"},
                    ),
                    ToolUseBlock(
                        id="b",
                        name="get_weather",
                        input={"city": "Rome"},
                        metadata={"thoughtSignature": "b3RoZXI=", "provider": "openai"},
                    ),
                ]
            ),
            ToolResultMessage(
                [
                    ToolResultBlock(id="a", name="get_weather", output="Sunny", state="success"),
                    ToolResultBlock(id="b", name="get_weather", output="Rain", state="success"),
                ]
            ),
        ],
        "tools": [WEATHER],
    }


def case_merged_thinking() -> dict[str, Any]:
    def signed(text: str, signature: str, provider: str) -> ThinkingBlock:
        return ThinkingBlock(thinking=text, metadata={"signature": signature, "provider": provider})

    return {
        "description": "two consecutive assistant messages (a continuation), each opening with signed thinking "
        "(Anthropic's and Gemini's): merged into one turn, every thinking block in its place, as the model produced it",
        "messages": [
            UserMessage("Plan a trip."),
            AssistantMessage(
                [
                    signed("First leg.", "EqQBCkYIBxgCKkA", "anthropic"),
                    signed("First leg.", "c2lnbmF0dXJl", "gemini"),
                    TextBlock(text="Nice first."),
                ]
            ),
            AssistantMessage(
                [
                    signed("Second leg.", "EqQBCkYIBxgCKkB", "anthropic"),
                    signed("Second leg.", "b3RoZXI=", "gemini"),
                    TextBlock(text="Then Rome."),
                ]
            ),
        ],
    }


def case_reasoning_current_turn() -> dict[str, Any]:
    return {
        "description": "unsigned reasoning without provenance in an earlier turn and in the current tool loop",
        "messages": [
            UserMessage("Q1"),
            AssistantMessage([ThinkingBlock(thinking="old thought"), TextBlock(text="A1")]),
            UserMessage("Q2"),
            AssistantMessage(
                [
                    ThinkingBlock(thinking="new thought"),
                    ToolUseBlock(id="c", name="get_weather", input={"city": "Oslo"}),
                ]
            ),
            ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="Cold", state="success")),
        ],
        "tools": [WEATHER],
        "stream": True,
    }


def case_reasoning_tool_turns() -> dict[str, Any]:
    return {
        "description": "reasoning of an earlier turn that called tools (DeepSeek sends it in every later request), "
        "and of an earlier turn that did not",
        "messages": [
            UserMessage("Q1"),
            AssistantMessage(
                [ThinkingBlock(thinking="t1"), ToolUseBlock(id="c", name="get_weather", input={"city": "Oslo"})]
            ),
            ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="Cold", state="success")),
            AssistantMessage([ThinkingBlock(thinking="t2"), TextBlock(text="A1")]),
            UserMessage("Q2"),
            AssistantMessage([ThinkingBlock(thinking="t3"), TextBlock(text="A2")]),
            UserMessage("Q3"),
        ],
        "tools": [WEATHER],
    }


def case_strict_refused() -> dict[str, Any]:
    return {
        "description": "strict: a lossy step (reasoning from another provider) is an error",
        "messages": [
            UserMessage("Q"),
            AssistantMessage([ThinkingBlock(thinking="x", metadata={"provider": "elsewhere"})]),
        ],
        "strict": True,
    }


CASES = {name[5:].replace("_", "-"): fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
INPUT_KEYS = ("model", "tools", "tool_choice", "multi_agent", "agent_name", "stream", "strict", "options", "params")


def build(provider: str, case: dict[str, Any]) -> dict[str, Any]:
    messages = _ids(case["messages"])
    inputs: dict[str, Any] = {"messages": json.loads(encode_messages(messages))}
    for key in INPUT_KEYS:
        if key in case:
            inputs[key] = case[key]
    kwargs = {k: v for k, v in inputs.items() if k not in ("messages", "params")}
    kwargs.update(case.get("params", {}))
    try:
        request = get(provider).format_request(messages, **kwargs)
    except ValidationError as exc:
        expected: dict[str, Any] = {"error": [diagnostic(p) for p in exc.problems]}
    else:
        expected = {
            "model": request.model,
            "path": request.path,
            "headers": dict(request.headers),
            "body": request.body,
            "diagnostics": [diagnostic(p) for p in request.diagnostics],
        }
    return {"description": case["description"], "provider": provider, "input": inputs, "expected": expected}


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed = []
    for provider in NAMES:
        folder = HERE / provider
        folder.mkdir(exist_ok=True)
        for name, fn in CASES.items():
            path = folder / f"{name}.json"
            text = render(build(provider, fn()))
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                changed.append(str(path.relative_to(HERE)))
                if not check:
                    path.write_text(text, encoding="utf-8")
    if changed:
        print(("would change: " if check else "written: ") + ", ".join(changed))
    return 1 if check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
