"""A tour of agentmsg, one screen per idea (`make demo`, or `python examples/demo.py` once installed).

1. messages: built, validated, written as AgentScope Java writes them, read back
2. validation: every problem at once, with a JSON pointer and a rule name
3. events: a reply as the AgentEvents an agent streams, folded back by the reducer
4. formatters: one conversation as every provider's request, with what each could not send as given
5. clients: streamed replies over HTTP, from a local replay server of recorded provider streams
6. a cut stream: what arrived is kept, marked INTERRUPTED

Offline: the provider replies are recordings (tests/fixtures/providers) played on 127.0.0.1. The screen
shows long bodies shortened; every body, event and message is written in full to a scratch folder the tour
names at the end (``--out DIR`` picks it). ``--full`` also prints them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

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
from agentmsg.clients import BrokenStreamError, Client
from agentmsg.providers import NAMES, RULES, get
from agentmsg.testing import ReplayServer, Reply

WIDTH = 100  # no line of the tour is longer
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "providers"
# provider -> (a recorded stream that ends where its reply ends, what the user asked in it). Not the
# recordings their README marks TRUNCATED or elided: their replies read as cut.
RECORDINGS = {
    "anthropic": ("anthropic/stream_thinking_signature.sse", "Now divide that by 5."),
    "openai": ("openai/stream_parallel_tool_calls.sse", "What's the weather in Edinburgh, and AAPL's price?"),
    "gemini": ("gemini/stream_function_call_partial_args.sse", "Weather in Boston and San Francisco?"),
    "dashscope": ("dashscope/native_stream_reasoning_tool_call_sdkprint.jsonl", "杭州天气怎么样？"),
    "dashscope-compatible": ("dashscope/compat_stream_text_docs.sse", "你是谁？"),
}
CUT = ("openai/stream_text_include_usage.sse", "Weather in San Francisco?")
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
JAVA = (
    '{"id":"m1","name":"Alice","role":"USER","content":[{"type":"text","text":"hi"}],"metadata":{},'
    '"timestamp":"2025-01-01 12:00:00.000","usage":null}'
)
BAD = (
    '{"id":"m2","role":"SYSTEM","content":[{"type":"thinking","thinking":"hmm"},'
    '{"type":"image","source":{"type":"url"}}]}'
)


def build() -> list[Msg]:
    """A conversation with a block of every kind."""
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


# ---- output --------------------------------------------------------------------------------------------


def columns(text: str) -> int:
    """The columns ``text`` takes on a terminal (East Asian wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def short(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` columns (cut with an ellipsis)."""
    text = " ".join(text.split())
    if columns(text) <= width:
        return text
    while columns(text) > width - 1:
        text = text[:-1]
    return text + "…"


def pad(text: str, width: int) -> str:
    return text + " " * (width - columns(text))


def say(text: str = "", indent: int = 3, hang: int = 2) -> None:
    """Print ``text`` indented, wrapped at WIDTH (continuation lines ``hang`` further in)."""
    lead = " " * indent
    print(textwrap.fill(text, WIDTH, initial_indent=lead, subsequent_indent=lead + " " * hang) if text else "")


def listing(names: Iterable[str], indent: int = 5) -> None:
    """Names separated by commas, as many to a line as fit (runs of one name as ``NAME xN``)."""
    items = [name if n == 1 else f"{name} x{n}" for name, n in ((k, len(list(g))) for k, g in groupby(names))]
    say(", ".join(items), indent, hang=0)


class Tour:
    """Sections on screen; the full output in files under ``out`` (printed too with ``full``)."""

    def __init__(self, out: Path, full: bool) -> None:
        self.out, self.full = out, full

    def section(self, number: int, title: str) -> None:
        print(f"\n{number}. {title}")

    def save(self, name: str, data: str | bytes) -> Path:
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        return path

    def point(self, what: str, path: Path) -> None:
        """Where the full output is; with ``full``, the files themselves."""
        say(f"{what}: {path}{'/' if path.is_dir() else ''}")
        if self.full:
            for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
                if file.is_file():
                    print(f"   --- {file.relative_to(self.out)}")
                    print(textwrap.indent(file.read_text(encoding="utf-8").rstrip("\n"), "   "))


def pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def block_names(msg: Msg) -> str:
    return ", ".join(block.type for block in msg.content)


def summary(msg: Msg) -> str:
    """A reply in a few words: its blocks, shortened."""
    parts = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            parts.append(f"text {short(block.text, 40)!r}")
        elif isinstance(block, ThinkingBlock):
            signed = ", signed" if agentmsg.thinking_signature(block) else ""
            parts.append(f"thinking ({len(block.thinking)} chars{signed})")
        elif isinstance(block, ToolUseBlock):
            signed = " (signed)" if agentmsg.tool_call_signature(block) else ""
            parts.append(f"{block.name}(){signed}")
    return ", ".join(parts)


# ---- 1. messages ---------------------------------------------------------------------------------------


def messages(tour: Tour, conversation: list[Msg]) -> None:
    tour.section(1, "Messages: role-pinned constructors, validated, written as AgentScope Java writes them")
    for msg in conversation:
        text = msg.to_json()
        back = Msg.from_json(text)
        assert back == msg and back.to_json() == text, "a message reads back equal, and writes the same bytes"
        agentmsg.validate(msg.to_dict(), kind="msg")
        extra = ""
        if msg.generate_reason is not None and msg.usage is not None:
            extra = f"{msg.generate_reason.value}, {msg.usage.input_tokens}+{msg.usage.output_tokens} tokens"
        elif "_structured_output" in msg.metadata:
            extra = "with structured output"
        print(f"   {type(back).__name__:<18} {block_names(msg):<35} {len(text):>4} bytes  {extra}".rstrip())
    say("each one: Msg.from_json(msg.to_json()) is equal and writes the same bytes; valid against schemas/")
    java = Msg.from_json(JAVA)
    say(f"JSON from AgentScope Java, {short(JAVA, 54)}")
    say(f"reads as a {type(java).__name__} and is written back byte for byte: {java.to_json() == JAVA}", 5)
    tour.point("the messages in full", tour.save("1-messages.json", pretty([m.to_dict() for m in conversation])))


# ---- 2. validation -------------------------------------------------------------------------------------


def problems(exc: ValidationError) -> None:
    for p in exc.problems:
        say(f"{p.pointer:<17} [{p.rule}] {p.message}", 5, hang=18)


def validation(tour: Tour) -> None:
    tour.section(2, "Validation: every problem at once, each with a JSON pointer and a rule name")
    say(f"Msg.from_json('{short(BAD, 72)}')")
    try:
        Msg.from_json(BAD)
        raise AssertionError("a SYSTEM message with thinking is refused")
    except ValidationError as exc:
        say(f"raises ValidationError (a ValueError) with {len(exc.problems)} problems:")
        problems(exc)
    say("constructors check too: Msg('user', 'hi') and UserMessage([ThinkingBlock(...)]) raise")
    attempts: list[Callable[[], Msg]] = [
        lambda: Msg("user", "hi"),
        lambda: UserMessage([ThinkingBlock(thinking="users do not think")]),
    ]
    for attempt in attempts:
        try:
            attempt()
            raise AssertionError("refused")
        except ValidationError as exc:
            problems(exc)


# ---- 3. events -----------------------------------------------------------------------------------------


def events(tour: Tour, reply: Msg) -> None:
    tour.section(3, "Events: a reply as the AgentEvents an agent streams, and the reducer that folds them back")
    emitted = agentmsg.emit_events(reply, chunk_size=12)
    say(f"emit_events(reply, chunk_size=12), the assistant message of 1: {len(emitted)} events")
    listing(e["type"] for e in emitted)
    sse = agentmsg.encode_sse(emitted)
    (back,) = agentmsg.reduce_stream(sse.encode())
    assert back == reply, "reduce(emit(m)) gives m back"
    say(f"as Server-Sent Events, {len(sse):,} bytes; reduce_stream() of those bytes gives back an equal message")
    tour.point("the events in full", tour.save("3-events.sse", sse))


# ---- 4. formatters -------------------------------------------------------------------------------------


def who(providers: Sequence[str]) -> str:
    """Which providers, in few words."""
    others = [n for n in NAMES if n not in providers]
    if not others:
        return "all"
    text = "all but " + ", ".join(others) if len(others) < len(providers) else ", ".join(providers)
    return text if len(text) <= 40 else f"{len(providers)} of the {len(NAMES)} providers"  # (the row stays short)


def where(pointers: Iterable[str]) -> str:
    """The blocks (or messages) pointed at, without the option a pointer may end with, in order, the blocks
    of one message together: ``/1/content/{1,3}``."""
    blocks: dict[str, set[int]] = {}
    for pointer in pointers:
        parts = pointer.split("/")  # "", message, "content", block, option...
        if len(parts) >= 4 and parts[2] == "content":
            blocks.setdefault(f"/{parts[1]}/content/", set()).add(int(parts[3]))
        else:
            blocks.setdefault("/".join(parts[:3]), set())
    shown = []
    for head in sorted(blocks, key=lambda h: int(h.split("/")[1])):
        found = [str(n) for n in sorted(blocks[head])]
        shown.append(head + (found[0] if len(found) == 1 else "{" + ",".join(found) + "}" if found else ""))
    return ", ".join(shown)


def formatters(tour: Tour, conversation: list[Msg]) -> None:
    tour.section(4, "Formatters: one conversation, every provider's request, and what could not be sent as given")
    try:
        get("openai").format_request(conversation, tools=TOOLS)
        raise AssertionError("openai needs the audio's bytes")
    except ValidationError as exc:
        p = exc.problems[0]
        say(f"openai refuses the conversation of 1 as it is: {p.pointer} [{p.rule}] {p.message}")
    convo = [m.copy(content=[b for b in m.content if not isinstance(b, AudioBlock)]) for m in conversation]
    say("so here it goes without its audio block, with one tool; get(provider).format_request(...):")
    print(f"   {'provider':<21} {'POST':<48} {'body':>7}  diagnostics")
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (kind, rule) -> [(provider, pointer)]
    for name in NAMES:
        request = get(name).format_request(convo, tools=TOOLS, tool_choice="auto")
        body = request.body_bytes()
        print(f"   {name:<21} {request.path:<48} {len(body):>5} B  {len(request.diagnostics)}")
        for p in request.diagnostics:
            found.setdefault((RULES[p.rule][0], p.rule), []).append((name, p.pointer))
        record = {
            "method": "POST",
            "path": request.path,
            "headers": dict(request.headers),
            "diagnostics": request.diagnostics_dicts(),
            "body": request.body,
        }
        tour.save(f"4-requests/{name}.json", pretty(record))
    say("the diagnostics, each rule once: its kind, where in the conversation, which providers report it")
    for (kind, rule), hits in found.items():
        providers = list(dict.fromkeys(name for name, _ in hits))
        print(f"     {kind:<8} {rule:<21} {where(p for _, p in hits):<30} {who(providers)}")
    say("(lossy: not sent as given; rewrite: sent in another shape or place; agentmsg.providers.RULES)")
    tour.point("each request in full, with every diagnostic's message", tour.out / "4-requests")


# ---- 5. clients ----------------------------------------------------------------------------------------


class Live:
    """Events shown as they arrive: a block's start opens a line, its deltas continue it, wrapped at WIDTH."""

    INDENT = 5

    def __init__(self) -> None:
        self.column = 0

    def line(self, text: str) -> None:
        if self.column:
            sys.stdout.write("\n")
        sys.stdout.write(" " * self.INDENT + text)
        self.column = self.INDENT + columns(text)
        sys.stdout.flush()

    def more(self, text: str) -> None:
        for char in " ".join(text.split("\n")):
            if self.column >= WIDTH or (char == " " and self.column >= WIDTH - 10):
                sys.stdout.write("\n" + " " * (self.INDENT + 2))
                self.column = self.INDENT + 2
                if char == " ":
                    continue
            sys.stdout.write(char)
            self.column += columns(char)
        sys.stdout.flush()

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind.endswith("_DELTA"):
            self.more(event.get("delta") or "")
            if event.get("signature"):
                self.more(" [signature]")
        elif kind in ("TEXT_BLOCK_START", "THINKING_BLOCK_START"):
            self.line(f"{kind.split('_')[0].lower()}: ")
        elif kind == "TOOL_CALL_START":
            self.line(f"tool call {event['toolCallName']}: ")
        elif kind == "MODEL_CALL_END":
            usage = event.get("usage") or {}
            self.line(f"{kind}, tokens in {usage.get('inputTokens')} / out {usage.get('outputTokens')}")

    def end(self) -> None:
        if self.column:
            print()
        self.column = 0


def conversation_for(question: str) -> list[Msg]:
    return [SystemMessage("You are a helpful assistant."), UserMessage(question, name="alice")]


def stream(tour: Tour, server: ReplayServer, provider: str, live: bool) -> Msg:
    """The recording played for ``provider``'s streaming endpoint, read through ``Client.stream``."""
    fixture, question = RECORDINGS[provider]
    convo = conversation_for(question)
    path = get(provider).format_request(convo, tools=TOOLS, stream=True).path
    pace = 0.01 if live else 0.0  # the one shown live arrives as a stream would
    server.add(path, Reply(body=(FIXTURES / fixture).read_bytes(), sse=True, chunk_size=64, delay=pace))
    received = []
    shown = Live()
    with Client(provider, base_url=server.url, api_key="demo-key", name="Friday") as client:
        with client.stream(convo, tools=TOOLS) as reply:
            for event in reply:
                received.append(event)
                if live:
                    shown.show(event)
        msg = reply.message
    shown.end()
    assert msg is not None and reply.done
    assert msg.generate_reason is not agentmsg.GenerateReason.INTERRUPTED, f"{fixture}: the whole reply arrives"
    tour.save(f"5-streams/{provider}.events.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in received))
    tour.save(f"5-streams/{provider}.message.json", pretty(msg.to_dict()))
    return msg


def ended(msg: Msg) -> str:
    """How the reply ended: the provider's finish reason."""
    stop = msg.generate_reason or agentmsg.GenerateReason.MODEL_STOP
    return f"ended: {msg.metadata.get('agentmsg_finish_reason') or stop.value}"


def clients(tour: Tour, server: ReplayServer) -> None:
    tour.section(5, "Clients: a streamed reply over HTTP, AgentEvents as it arrives, then one message")
    say(f"a replay server on {server.url} plays recorded provider streams (agentmsg.testing)")
    first, *others = RECORDINGS
    say(f"{first}, asked {RECORDINGS[first][1]!r}; Client({first!r}, base_url=...).stream(conversation):")
    reply = stream(tour, server, first, live=True)
    say(f"stream.message: {summary(reply)}; {ended(reply)}")
    say("the same code for the others, each against its own recording:")
    for provider in others:
        msg = stream(tour, server, provider, live=False)
        print(f"     {provider:<21} {pad(short(summary(msg), 50), 51)} {ended(msg)}")
    follow = [*conversation_for(RECORDINGS[first][1]), reply, UserMessage("And times 2?")]
    rules = {n: {p.rule for p in get(n).format_request(follow).diagnostics} for n in (first, "openai")}
    assert "thinking-dropped" not in rules[first] and "thinking-dropped" in rules["openai"]
    say(
        f"the reply continues the conversation on any provider: {first} gets its signed thinking back,"
        " openai cannot take it (thinking-dropped)"
    )
    tour.point("every event received and every message", tour.out / "5-streams")


# ---- 6. a cut stream -----------------------------------------------------------------------------------


def cut_stream(tour: Tour, server: ReplayServer) -> None:
    tour.section(6, "A cut stream: what arrived is kept, marked INTERRUPTED")
    fixture, question = CUT
    body = (FIXTURES / fixture).read_bytes()
    (whole,) = agentmsg.reduce_events(get("openai").parse_stream(body))
    server.add("/chat/completions", Reply(body=body, sse=True, chunk_size=200, disconnect_after=len(body) // 2))
    say(f"openai, asked {question!r}; the server hangs up half-way through the recording")
    with Client("openai", base_url=server.url, api_key="demo-key") as client:
        try:
            with client.stream([UserMessage(question)]) as reply:
                for _ in reply:
                    pass
            raise AssertionError("the stream breaks")
        except BrokenStreamError as exc:
            say(f"raises BrokenStreamError: {exc.message}", hang=4)
            partial: Msg = exc.partial
    text = partial.text_content
    assert partial.generate_reason is agentmsg.GenerateReason.INTERRUPTED
    say(f"error.partial (also stream.message): {partial.generate_reason.value}, {summary(partial)}")
    say(f"{len(text)} of the reply's {len(whole.text_content)} characters had arrived; none is lost", 5)
    tour.point("the message kept", tour.save("6-cut-stream.message.json", pretty(partial.to_dict())))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--full", action="store_true", help="print every body, event and message in full too")
    parser.add_argument("--out", type=Path, help="the folder for the full output (default: a new temporary one)")
    args = parser.parse_args(argv)
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="agentmsg-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    tour = Tour(out, full=args.full)
    print(f"agentmsg {agentmsg.__version__}: a tour in six screens (examples/demo.py), offline")
    conversation = build()
    messages(tour, conversation)
    validation(tour)
    events(tour, conversation[2])
    formatters(tour, conversation)
    with ReplayServer() as server:
        clients(tour, server)
        cut_stream(tour, server)
    print(f"\nthe full output: {out}/ (or: make demo DEMO_ARGS=--full)")
    print("next: README.md (Quickstart), docs/, agentmsg --help")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
