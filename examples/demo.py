"""agentmsg demo: build messages of every kind, validate them, round-trip them, print them.

Run with `make demo` (or `python examples/demo.py` once installed).
"""

from __future__ import annotations

import agentmsg
from agentmsg import (
    AssistantMessage,
    AudioBlock,
    Base64Source,
    ChatUsage,
    DataBlock,
    HintBlock,
    ImageBlock,
    Msg,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolResultState,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
    VideoBlock,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="


def build() -> list[Msg]:
    return [
        SystemMessage("You are a helpful assistant.", name="system"),
        UserMessage(
            [
                TextBlock(text="What's in these files?"),
                ImageBlock(source=URLSource(url="https://example.com/cat.png"), min_pixels=3136, max_pixels=1003520),
                DataBlock(
                    source=Base64Source(media_type="image/png", data=PNG),
                    id=agentmsg.new_data_block_id(),
                    name="dot.png",
                ),
                AudioBlock(source=URLSource(url="https://example.com/hello.mp3", mime_type="audio/mpeg")),
                VideoBlock(source=URLSource(url="https://example.com/clip.mp4"), fps=2.0, max_frames=16),
            ],
            name="Alice",
        ),
        AssistantMessage(
            [
                ThinkingBlock(
                    thinking="I should look at the weather tool.",
                    metadata={"signature": "EqQBCkYIBx...", "provider": "anthropic", "model": "claude-sonnet-4-5"},
                ),
                TextBlock(text="Let me check the weather."),
                ToolUseBlock(
                    id="call_1",
                    name="get_weather",
                    input={"city": "Paris"},
                    content='{"city": "Paris"}',
                    metadata={"thoughtSignature": "CiQBcsja..."},
                ),
            ],
            name="Friday",
            metadata={"agentscope_generate_reason": "TOOL_CALLS"},
            usage=ChatUsage(input_tokens=120, output_tokens=42, cached_tokens=0, time=0.8, total_tokens=162),
        ),
        ToolResultMessage(
            ToolResultBlock(
                id="call_1", name="get_weather", output=[TextBlock(text="Sunny, 25°C")], state=ToolResultState.SUCCESS
            ),
            name="Friday",
        ),
        AssistantMessage(
            [
                HintBlock(id="h1", hint="Keep answers short.", source="system"),
                TextBlock(text="It is sunny and 25°C in Paris."),
            ],
            name="Friday",
            metadata={"_structured_output": {"city": "Paris", "temperature_c": 25}},
        ),
    ]


def main() -> None:
    print("== agentmsg demo ==\n")
    for msg in build():
        text = msg.to_json()
        back = Msg.from_json(text)
        assert back == msg and back.to_json() == text, "round trip must be exact"
        agentmsg.validate(msg.to_dict())
        kinds = ", ".join(type(b).__name__ for b in msg.content)
        print(f"{type(back).__name__:<18} {msg.role.value:<9} name={msg.name!s:<7} blocks=[{kinds}]")
        print(f"  text_content: {msg.text_content!r}")
        if msg.usage:
            print(
                f"  usage: in={msg.usage.input_tokens} out={msg.usage.output_tokens}  generate_reason={msg.generate_reason.value}"
            )
        print(f"  json ({len(text)} bytes): {text[:150]}{'...' if len(text) > 150 else ''}\n")

    print("== reading what AgentScope Java writes ==")
    java = '{"id":"m1","name":"Alice","role":"USER","content":[{"type":"text","text":"hi"}],"metadata":{},"timestamp":"2025-01-01 12:00:00.000","usage":null}'
    m = Msg.from_json(java)
    print(f"{type(m).__name__}: {m.text_content!r}; byte-identical on write: {m.to_json() == java}\n")

    print("== rules are enforced, with JSON pointers ==")
    bad = '{"id":"m2","role":"SYSTEM","content":[{"type":"thinking","thinking":"hmm"},{"type":"image","source":{"type":"url"}}]}'
    try:
        Msg.from_json(bad)
    except ValidationError as exc:
        for problem in exc.problems:
            print(f"  {problem.pointer}: {problem.message}  [{problem.rule}]")
    try:
        UserMessage([ThinkingBlock(thinking="users do not think here")])
    except ValidationError as exc:
        print(f"  constructor: {exc}")

    print("\n== the same reply as an event stream, and back ==")
    reply = build()[2]
    events = agentmsg.emit_events(reply, chunk_size=12)
    print(f"{len(events)} events: " + ", ".join(e["type"] for e in events[:9]) + ", ...")
    sse = agentmsg.encode_sse(events)
    (back,) = agentmsg.reduce_stream(sse.encode())
    assert back == reply, "reduce(emit(m)) must give m back"
    print(f"SSE ({len(sse)} bytes) reduced back to the identical {type(back).__name__}: {back.text_content!r}")
    print("\nall messages validated and round-tripped exactly.")

    import formatters  # examples/formatters.py: the same conversation for every provider

    formatters.main(build())


if __name__ == "__main__":
    main()
