"""Helpers of the provider tests (tests/providers/, tests/wire/, tests/cli/): stream bodies written as providers
write them, the recorded fixtures and their readers, reductions that must report nothing, comparable forms of a
message, shared conversations and tools, and the Hypothesis strategies of the synthetic streams."""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import orjson
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    AssistantMessage,
    ImageBlock,
    Reducer,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    reduce_events,
)
from agentmsg.cli import main
from agentmsg.providers import gemini, openai
from agentmsg.providers.base import Entry
from tests._support.budget import examples
from tests.conftest import ROOT
from tests.oracles import formatted

FIX = ROOT / "tests" / "fixtures" / "providers"


def sse(*payloads: Any, done: bool = True) -> bytes:
    out = b"".join(b"data: " + (p if isinstance(p, bytes) else orjson.dumps(p)) + b"\n\n" for p in payloads)
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": index, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


def ev(kind: str, **data: Any) -> bytes:
    """One Anthropic SSE event (``event:`` and ``data:`` lines)."""
    return f"event: {kind}\ndata: ".encode() + orjson.dumps({"type": kind, **data}) + b"\n\n"


CITE = {"type": "char_location", "cited_text": "sky", "document_index": 0}


def cited_response(message_id: str) -> dict[str, Any]:
    """A whole Anthropic response whose one text block ("blue") has a citation."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "blue", "citations": [CITE]}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }


def reduce_ok(events: list[dict[str, Any]]) -> agentmsg.AssistantMessage:
    for e in events:
        agentmsg.validate(e, "event")
    r = Reducer()
    r.feed_many(events)
    (msg,) = r.finish()
    assert r.problems == []
    return msg


B = TypeVar("B")


def all_of(kind: type[B], blocks: Iterable[object]) -> list[B]:
    """The blocks, each asserted to be a ``kind`` (a message's content is a union of nine block types: this is
    where a test says which one it reads)."""
    out = list(blocks)
    assert all(isinstance(b, kind) for b in out), [type(b).__name__ for b in out]
    return [b for b in out if isinstance(b, kind)]


def one(kind: type[B], block: object) -> B:
    """The block, asserted to be a ``kind``."""
    assert isinstance(block, kind), type(block).__name__
    return block


def said_texts(blocks: Iterable[object]) -> list[tuple[str, str]]:
    """(type, its thinking or text) of each block, asserted to be a thinking or a text block."""
    out: list[tuple[str, str]] = []
    for b in blocks:
        if isinstance(b, ThinkingBlock):
            out.append((b.type, b.thinking))
        else:
            t = one(TextBlock, b)
            out.append((t.type, t.text))
    return out


def calls(msg: agentmsg.Msg) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.input) for c in msg.blocks("tool_use")]


def tc(index: int, id: object = None, name: object = None, args: object = None) -> dict[str, Any]:
    """A tool-call delta of an OpenAI chunk: its fields as given (any JSON: tests send wrong types too), None left out."""
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    out: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        out["id"] = id
    return out


def custom(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["name"], e["value"]["rule"]) for e in events if e["type"] == "CUSTOM"]


def run_cli(*argv: str) -> tuple[int, str]:
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


BIG = "123456789012345678901234567890"


def said(events: list[dict[str, Any]], name: str = "agentmsg.problem") -> list[str]:
    return [e["value"]["rule"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


def gem(*parts: Any, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "responseId": "r1", **extra}


def _nameless(provider: str, name: Any, whole: bool) -> Any:
    """A reply with one tool call (arguments {"a": 1}) whose function name is ``name`` (None: no name key)."""
    named = {} if name is None else {"name": name}
    if provider == "openai":
        call = {"index": 0, "id": "call_1", "type": "function", "function": {**named, "arguments": '{"a": 1}'}}
        if whole:
            del call["index"]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return {
                "id": "c1",
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }
        return sse(chunk({"tool_calls": [call]}), chunk({}, "tool_calls"))
    if provider == "anthropic":
        block = {"type": "tool_use", "id": "t1", **named, "input": {}}
        if whole:
            return {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [{**block, "input": {"a": 1}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        return (
            ev("message_start", message={"id": "m1", "model": "c", "role": "assistant", "content": []})
            + ev("content_block_start", index=0, content_block=block)
            + ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"a": 1}'})
            + ev("content_block_stop", index=0)
            + ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 1})
            + ev("message_stop")
        )
    if provider == "gemini":
        body = gem({"functionCall": {**named, "args": {"a": 1}}}, finish="STOP")
        return body if whole else sse(body, done=False)
    call = {"index": 0, "id": "call_1", "type": "function", "function": {**named, "arguments": '{"a": 1}'}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    body = {"output": {"choices": [{"message": message, "finish_reason": "tool_calls"}]}, "request_id": "q"}
    return body if whole else b"data:" + orjson.dumps(body) + b"\n\n"


def _no_counts(events: list[dict[str, Any]]) -> list[str]:
    """The fields said to be no token count (each problem's rule is type)."""
    problems = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    assert all(p["rule"] == "type" and p["message"].endswith(": not kept") for p in problems), problems
    return [p["message"].split(" is no token count (")[0] for p in problems]


_PCM = bytes(range(256)) * 3 + b"\x01\x02"  # raw pcm16 (no header): 770 bytes, not a multiple of 3


def _audio_response(raw: bytes, content: str | None = None, transcript: str = "Hello there") -> dict[str, Any]:
    audio = {"id": "audio_1", "data": base64.b64encode(raw).decode(), "expires_at": 1729, "transcript": transcript}
    message = {"role": "assistant", "content": content, "audio": audio}
    return {"id": "c", "model": "gpt-audio", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="


TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def rules(request: Any) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in request.diagnostics]


def places(request: Any) -> list[tuple[str, str]]:
    """Every place a diagnostic is said of (a diagnostic said once for several: each of its ``pointers``)."""
    return [(q, p.rule) for p in request.diagnostics for q in p.pointers]


def agent_conversation(turns: int) -> list[Any]:
    """``turns`` agent turns of 4 messages: a named user question (with an image at every other turn), the agent's
    signed reasoning and two tool calls, their results, its answer."""
    msgs: list[Any] = []
    for t in range(turns):
        image = ImageBlock(source=URLSource(url=f"https://example.com/{t}.png", mime_type="image/png"))
        msgs.append(UserMessage([TextBlock(text=f"question {t}"), *([image] if t % 2 == 0 else [])], name="alice"))
        msgs.append(
            AssistantMessage(
                [
                    ThinkingBlock(thinking=f"thought {t}", metadata={"signature": "c2lnbmF0dXJl"}),
                    ToolUseBlock(id=f"call_{t}_a", name="get_weather", input={"city": "Oslo"}),
                    ToolUseBlock(id=f"call_{t}_b", name="get_weather", input={"city": "Rome"}),
                ],
                name="Friday",
            )
        )
        msgs.append(
            ToolResultMessage(
                [
                    ToolResultBlock(id=f"call_{t}_a", name="get_weather", output="cold", state="success"),
                    ToolResultBlock(id=f"call_{t}_b", name="get_weather", output="warm", state="error"),
                ],
            )
        )
        msgs.append(AssistantMessage(f"answer {t}", name="Friday"))
    return msgs


def tool_loop(signature: str = "EqQBCkYIBxgCKkA", provider: str = "anthropic") -> list[Any]:
    return [
        SystemMessage("You are helpful."),
        UserMessage("Weather in Paris and Rome?"),
        AssistantMessage(
            [
                ThinkingBlock(thinking="Two cities.", metadata={"signature": signature, "provider": provider}),
                ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
                ToolUseBlock(id="call_2", name="get_weather", input={"city": "Rome"}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="call_1", name="get_weather", output="Sunny", state="success")),
        ToolResultMessage(ToolResultBlock(id="call_2", name="get_weather", output="Rain", state="success")),
        AssistantMessage("Paris sunny, Rome rain."),
    ]


def data(payload: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


def oai(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return data({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra})


def gem_sse(text: str, finish: str | None = None) -> bytes:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return data({"candidates": [cand], "responseId": "g1", "modelVersion": "gemini-x"})


def dsc(content: str, finish: str = "null", event: str = "result") -> bytes:
    payload = {"output": {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}]}}
    return (
        f"event:{event}\n:HTTP_STATUS/200\n".encode()
        + b"data:"
        + orjson.dumps({**payload, "request_id": "r1"})
        + b"\n\n"
    )


ANT_START = ev(
    "message_start", message={"id": "msg_1", "model": "claude", "content": [], "usage": {"input_tokens": 3}}
) + ev("content_block_start", index=0, content_block={"type": "text", "text": ""})


def once(text: str) -> None:
    """``text`` is JSON whose objects hold each key once (a repeated key was written: the text said two values)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        assert len(keys) == len(set(keys)), f"a key written twice: {text!r}"
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)


def _thinking(n: str) -> ThinkingBlock:
    return ThinkingBlock(thinking=f"step {n}", metadata={"signature": f"sig{n}", "provider": "anthropic"})


def _call(n: str) -> ToolUseBlock:
    return ToolUseBlock(id=f"toolu_{n}", name="f", input={})


def _merged(provider: str, *messages: list[Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The first assistant turn of ``q`` + consecutive assistant ``messages`` (merged into it), and the diagnostics."""
    from tests.oracles import formatted

    r = formatted(provider, [UserMessage("q"), *(AssistantMessage(blocks) for blocks in messages)])
    turn = r.body["messages" if provider == "anthropic" else "contents"][1]
    shown = []
    for p in turn["content" if provider == "anthropic" else "parts"]:
        kind = p.get("type") or ("thought" if p.get("thought") else "text")
        shown.append((kind, p.get("thinking") or p.get("text") or ""))
    return shown, [(d.pointer, d.rule) for d in r.diagnostics]


def _run(parser: Any, body: bytes) -> tuple[AssistantMessage, list[str]]:
    events = parser.feed(body) + parser.close()
    return reduce_ok(events), [p.rule for p in parser.problems]


OUTSIDE = ROOT / "tests" / "fixtures" / "outside"


def _signed_call(index: int | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {
        "extra_content": {"google": {"thought_signature": "Eo4GCosG"}},
        "function": {"arguments": '{"q":"x"}', "name": "task"},
        "id": "FL1tqiJ9",
        "type": "function",
    }
    if index is not None:
        call["index"] = index
    return call


FIXTURES = ROOT / "tests" / "fixtures" / "providers"


def entry(name: str) -> Entry:
    """The registry entry of a name (every registry name's provider is an :class:`Entry` of its module)."""
    from agentmsg.providers import get

    provider = get(name)
    assert isinstance(provider, Entry), provider
    return provider


def module(name: str) -> Any:
    """The provider module of a registry name (or of a fixtures folder, named as the registry names providers)."""
    return entry(name).module


def parser_for(path: Path) -> Any:
    """The provider module that reads a fixture: its folder's registry name's (DeepSeek's is the OpenAI module), or
    the OpenAI module for a ``compat_`` fixture (an OpenAI-compatible server's reply, in its vendor's folder)."""
    return module("openai" if path.name.startswith("compat_") else path.parent.name)


STREAMS = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in (".sse", ".jsonl"))


def same_reader(name: str) -> tuple[str, ...]:
    """The registry names whose entries read with ``name``'s reader, in registry order (``openai``'s: its
    OpenAI-compatible variants too): the names the CLI's hints name for a reply or stream of that shape (``try
    --provider openai/deepseek/...``)."""
    from agentmsg.providers import NAMES

    reader = entry(name).reader
    return tuple(other for other in NAMES if entry(other).reader is reader)


def reader_groups() -> tuple[tuple[str, ...], ...]:
    """The registry's names grouped by the reader they share (:func:`same_reader`), in registry order."""
    from agentmsg.providers import NAMES

    return tuple(dict.fromkeys(same_reader(name) for name in NAMES))


def ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def reduce_checked(events: list[dict[str, Any]], source: str | None = None) -> agentmsg.AssistantMessage:
    for e in events:
        agentmsg.validate(e, "event")
    r = Reducer(source=source)
    r.feed_many(events)
    msgs = r.finish()
    assert r.problems == []
    assert len(msgs) == 1
    agentmsg.validate(msgs[0].to_dict())
    return msgs[0]


def comparable(msg: agentmsg.Msg, *, minted_ids: bool = False) -> dict[str, Any]:
    """What must agree between a streamed and a whole reply: blocks (raw tool arguments compared parsed),
    usage (without time) and the generate reason."""
    d = msg.to_dict()
    blocks = []
    for b in d["content"]:
        b = dict(b)
        if b["type"] == "tool_use":
            if b["content"] is not None:
                with contextlib.suppress(orjson.JSONDecodeError):
                    b["content"] = orjson.loads(b["content"])
            b["metadata"] = {k: v for k, v in b["metadata"].items() if k != "argumentsError"}
            if minted_ids:
                b.pop("id")
        blocks.append(b)
    usage = {k: v for k, v in (d["usage"] or {}).items() if k != "time"}
    meta = d["metadata"]
    return {
        "content": blocks,
        "usage": usage,
        "reason": meta.get("agentscope_generate_reason"),
        "finish_reason": meta.get("agentmsg_finish_reason"),  # the provider's raw reason, streamed or whole
        "grounding": meta.get("agentmsg_grounding"),  # the reply's citations and grounding, streamed or whole
    }


def sse_payloads(data: bytes) -> list[tuple[str, Any]]:
    from agentmsg._wire.sse import SSEDecoder

    d = SSEDecoder()
    out = [(e.event, e.data) for e in d.feed(data)] + [(e.event, e.data) for e in d.feed(b"\n\n")]
    return [(ev, orjson.loads(x)) for ev, x in out if x != "[DONE]"]


def recorded_payloads(path: Path) -> list[Any]:
    """A recorded stream's payloads, cut as the SDK cuts them: ``.jsonl`` one per line, at LF only
    (:func:`tests._support.events.read_jsonl`); else SSE (:func:`sse_payloads`: lines end at CR, LF or CRLF, an
    event's data lines are joined). bytes.splitlines also ended a JSON line at a CR alone, which is JSON space."""
    from tests._support.events import read_jsonl

    data = path.read_bytes()
    if path.suffix == ".jsonl":
        return read_jsonl(data)
    return [p for _, p in sse_payloads(data)]


def _write(objs: list[Any], shape: str) -> bytes:
    if shape == "array-pretty":
        return json.dumps(objs, indent=2, ensure_ascii=False).encode()
    if shape == "array-compact":
        return orjson.dumps(objs)
    if shape == "gemini":  # streamGenerateContent without alt=sse: "[{...}\n,\r\n{...}\n]"
        return b"[" + b"\n,\r\n".join(json.dumps(o, indent=2).encode() for o in objs) + b"]"
    return b"\n".join(json.dumps(o, indent=1, ensure_ascii=False).encode() for o in objs)  # "objects"


def _gemini_calls(ids: tuple[str | None, ...]) -> dict[str, Any]:
    parts = []
    for n, call_id in enumerate(ids):
        call: dict[str, Any] = {"name": "get_weather", "args": {"city": f"c{n}"}}
        if call_id is not None:
            call["id"] = call_id
        parts.append({"functionCall": call})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "responseId": "resp-1",
        "modelVersion": "gemini-2.5-flash",
    }


def _gemini_replies(ids: tuple[str | None, ...]) -> list[agentmsg.AssistantMessage]:
    """The reply whole and streamed (one chunk per part)."""
    body = _gemini_calls(ids)
    whole = gemini.parse_response(body)
    assert isinstance(whole, agentmsg.AssistantMessage), whole
    cand = body["candidates"][0]
    chunks = [
        {**body, "candidates": [{**cand, "content": {"role": "model", "parts": [part]}, "finishReason": None}]}
        for part in cand["content"]["parts"]
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    sse = b"".join(
        b"data: " + orjson.dumps({k: v for k, v in c.items() if v is not None}) + b"\r\n\r\n" for c in chunks
    )
    streamed = reduce_ok(list(gemini.parse_stream(sse)))
    return [whole, streamed]


def _answered(reply: agentmsg.AssistantMessage) -> list[Any]:
    calls = reply.blocks("tool_use")
    results = [ToolResultBlock(id=c.id, name=c.name, output=f"sunny {k}", state="success") for k, c in enumerate(calls)]
    return [UserMessage("Weather?"), reply, ToolResultMessage(results)]


def _openai_refusals() -> list[agentmsg.AssistantMessage]:
    """OpenAI's refusal (message.refusal, content null), whole and streamed."""
    whole = openai.parse_response((FIX / "openai" / "chat_completion_refusal.json").read_bytes())
    assert isinstance(whole, agentmsg.AssistantMessage), whole
    streamed = reduce_ok(list(openai.parse_stream((FIX / "openai" / "stream_refusal.sse").read_bytes())))
    return [whole, streamed]


def _assistant(provider: str, reply: agentmsg.Msg) -> tuple[dict[str, Any], Any]:
    request = formatted(provider, [UserMessage("Do it."), reply, UserMessage("Please?")])
    body = request.body
    messages = body.get("messages") or body.get("contents") or body["input"]["messages"]
    return messages[1], request


text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


ANY_TOOLS = [
    {"name": n, "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    for n in ("get_weather", "search", "bad name!")
]


SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Any character (surrogates aside): ASCII, accents, CJK, emoji (4 UTF-8 bytes), combining marks, controls,
# quotes and backslashes, U+2028: the text is what JSON and SSE framing must carry whole.
CHARS = st.characters(codec="utf-8", exclude_categories=["Cs"])


TEXT = st.one_of(
    st.text(CHARS, max_size=40),
    st.text(st.sampled_from('ab é中😀\n"\\\u0301\u2028'), max_size=30),
)


IDENT = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), min_size=1, max_size=12
)


TOOL_NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_-0123456789"), min_size=1, max_size=20)


JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(CHARS, max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(CHARS, max_size=6), inner, max_size=3),
    max_leaves=8,
)


ARGS_OBJECT = st.dictionaries(st.text(CHARS, max_size=8), JSON_VALUE, max_size=4)


COUNT = st.integers(0, 100_000)


@st.composite
def split(draw: st.DrawFn, s: str) -> list[str]:
    """``s`` cut at arbitrary code-point boundaries; repeated cuts give empty fragments."""
    cuts = sorted(draw(st.lists(st.integers(0, len(s)), max_size=min(len(s) + 2, 8))))
    bounds = [0, *cuts, len(s)]
    return [s[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def json_text(draw: st.DrawFn, value: Any) -> str:
    """A JSON value as a provider might write it: compact UTF-8, or Python's spaced, ASCII-escaped form."""
    if draw(st.booleans()):
        return orjson.dumps(value).decode()
    return json.dumps(value)


def cut_body(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def same_message(msg: agentmsg.Msg) -> dict[str, Any]:
    """A message for comparing two parses of one body: everything but the time it was read."""
    d = msg.to_dict()
    d.pop("timestamp", None)
    if d.get("usage"):
        d["usage"] = {k: v for k, v in d["usage"].items() if k != "time"}
    return d


def every_choice(events: list[dict[str, Any]], *, notes: bool = True) -> list[dict[str, Any]]:
    """The message of every choice, in index order (choice i > 0 under ``source: choice/i``); ``notes=False``:
    without metadata ``agentmsg_notes`` (for a test that compares the notes, the CUSTOM events, on their own)."""
    sources = sorted({e.get("source") or "" for e in events}, key=lambda s: int(s.rsplit("/", 1)[1]) if s else -1)
    out = [same_message(m) for s in sources for m in reduce_events(events, source=s or None)]
    if not notes:
        for m in out:
            m["metadata"].pop("agentmsg_notes", None)
    return out


def cli_messages(provider: str, data: bytes) -> list[dict[str, Any]]:
    """``agentmsg parse --provider P --stream FILE --choice all``, in process: one message per choice."""
    from agentmsg.cli import main

    fd, path = tempfile.mkstemp(suffix=".sse")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["parse", "--provider", provider, "--stream", "--choice", "all", path])
    finally:
        os.unlink(path)
    assert code == 0, out.getvalue()
    return [same_message(agentmsg.Msg.from_json(line)) for line in out.getvalue().split("\n") if line]


@st.composite
def sse_body(draw: st.DrawFn, payloads: list[tuple[str | None, Any]]) -> bytes:
    """SSE as servers write it: ``data: `` or ``data:``, LF or CRLF lines, keep-alive comments, JSON compact
    UTF-8 or ASCII-escaped (``[DONE]`` as is), the last blank line there or not (a saved body)."""
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = draw(st.sampled_from([b"data: ", b"data:"]))
    ascii_json = draw(st.booleans())
    out = []
    for event, payload in payloads:
        if draw(st.integers(0, 7)) == 0:
            out.append(b": keep-alive" + eol + eol)
        text = (
            payload.encode()
            if isinstance(payload, str)
            else json.dumps(payload).encode()
            if ascii_json
            else orjson.dumps(payload)
        )
        head = b"event: " + event.encode() + eol if event else b""
        out.append(head + data + text + eol + eol)
    body = b"".join(out)
    if draw(st.booleans()):
        body = body[: -len(eol)]  # a saved body often lacks the last blank line (not the last line end)
    return body


def route_events(mod: Any, body: bytes | list[bytes], *, routes: bool) -> list[dict[str, Any]]:
    """A provider module's events of a stream (whole, or its chunks), read with the C text routes or without them
    (``PayloadReader.route_text``: every payload through orjson and the reader's ``chunk``); ids, times and minted
    reply ids made comparable."""
    import types
    import uuid
    from unittest import mock

    from agentmsg.providers._response import builder as _builder
    from agentmsg.providers._response import parser as _stream

    n = itertools.count()
    minted = itertools.count()
    saved = _stream._string_between
    _stream._string_between = saved if routes else None
    # A reply id minted where the payload gave none is random, and so are the tool-call ids derived from it: the
    # same ones in both reads (a payload edited to an id of another type made the two reads' call ids differ)
    minting = types.SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(minted)))
    try:
        with mock.patch.object(_builder, "uuid", minting):
            out = list(mod.parse_stream(body, id_factory=lambda: str(next(n)), clock=lambda: "T"))
    finally:
        _stream._string_between = saved
    return out


def same_with_and_without_routes(mod: Any, whole: bytes, *chunkings: list[bytes], label: str = "") -> None:
    """The events of ``whole`` and of each of its ``chunkings`` (the same body cut into chunks), read with the C
    text routes, are those the Python path reads from ``whole``, their keys in the same order (the JSON written of
    them: dicts compare equal whatever their order)."""
    want = route_events(mod, whole, routes=False)
    keys = [list(e) for e in want]
    readings: list[bytes | list[bytes]] = [whole, *chunkings]
    for chunks in readings:
        got = route_events(mod, chunks, routes=True)
        where = label if isinstance(chunks, bytes) else f"{label}, cut {[len(c) for c in chunks]}"
        assert got == want, where
        assert [list(e) for e in got] == keys, where
