"""The examples of docs/*.md run as written, and so do the `agentmsg` commands shown in README.md and the docs
(tests/project/test_readme.py runs the README's Python). The names a snippet takes from its surrounding text (a
provider's reply, a conversation, tools) are given here; clients and `agentmsg chat` talk to the local replay
server (or an httpx mock transport) instead of the provider; `agentmsg serve` is only checked to take its
arguments. Each command's output has the shape its comment says (one message JSON per line, events as JSON
lines, ...), and a transcript (a ```text block starting `$ agentmsg`) prints what it shows. A snippet runs with
DeprecationWarning as an error: the docs use no deprecated name. A block that cannot run offline is marked in
the markdown, on the line before its fence, `<!-- docs-test: not run: WHY -->`: the test skips it saying WHY.
The formatter examples of docs/formatters.md are checked against the conformance vectors they show."""

from __future__ import annotations

import inspect
import json
import re
import shlex
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    UserMessage,
    emit_events,
    encode_messages,
    reduce_events,
)
from agentmsg.cli import build_parser, main
from agentmsg.testing import ReplayServer, Reply
from tests._support.events import jsonl_lines

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
FIX = ROOT / "tests" / "fixtures" / "providers"
TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]
# What a provider's reply and stream are, for the commands and snippets that name one.
REPLY = {"openai": "openai/chat_completion_text.json", "anthropic": "anthropic/message_text.json"}
STREAM = {"openai": "openai/stream_parallel_tool_calls.sse", "anthropic": "anthropic/stream_thinking_signature.sse"}


NOT_RUN = re.compile(r"<!-- docs-test: not run: (.+?) -->\n")


def fenced_marked(path: Path, *langs: str) -> list[tuple[str, str | None]]:
    """Each fenced block of ``langs`` with the reason it is not run (the marker on the line before its fence),
    or None."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if m.group(1) in langs:
            marker = NOT_RUN.search(text, 0, m.start())
            found.append((m.group(2), marker.group(1) if marker and marker.end() == m.start() else None))
    return found


def fenced(path: Path, *langs: str) -> list[str]:
    return [source for source, _ in fenced_marked(path, *langs)]


def conversation() -> list[Any]:
    reply = AssistantMessage(
        [
            ThinkingBlock(thinking="I need the weather tool.", metadata={"signature": "EqQB", "provider": "anthropic"}),
            TextBlock(text="Let me check."),
            ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
        ],
        name="Friday",
    )
    result = ToolResultMessage([ToolResultBlock(id="call_1", name="get_weather", output=[TextBlock(text="sunny")])])
    return [UserMessage("What's the weather in Paris?", name="alice"), reply, result]


# ---- Python ---------------------------------------------------------------------------------------------


def _parsers(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sse_body = (FIX / STREAM["openai"]).read_bytes()
    ns.update(body=(FIX / REPLY["openai"]).read_bytes(), sse_body=sse_body)
    ns["chunks"] = [sse_body[i : i + 7] for i in range(0, len(sse_body), 7)]
    run_block(ns)
    assert ns["msg"].text_content and len(ns["live"]) == len(ns["events"])


def _client(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns.update(messages=conversation()[:1], tools=TOOLS)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    stream_body, whole = (FIX / STREAM["anthropic"]).read_bytes(), (FIX / REPLY["anthropic"]).read_bytes()
    with ReplayServer() as server:
        server.add("/v1/messages", Reply(body=stream_body, sse=True), Reply(body=whole))
        old = 'model="claude-sonnet-4-5")'
        assert old in ns["source"]
        ns["source"] = ns["source"].replace(old, f'model="claude-sonnet-4-5", base_url="{server.url}")')
        run_block(ns)
    assert ns["stream"].done and ns["stream"].message.content and ns["msg"].text_content


def _tool_loop(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/streams.md: the agent loop over recorded replies calls the tool, sends its result back and ends on
    the answer."""
    (tmp_path / "recorded").mkdir()
    for name, fixture in (("tool_use.sse", "stream_sdk_tool_use.sse"), ("answer.sse", "stream_sdk_basic.sse")):
        (tmp_path / "recorded" / name).write_bytes((FIX / "anthropic" / fixture).read_bytes())
    run_block(ns)
    assert [m.role.value for m in ns["conversation"]] == ["USER", "ASSISTANT", "TOOL", "ASSISTANT"]
    assert len(ns["server"].requests) == 2 and ns["conversation"][-1].text_content
    sent = ns["sent"]["messages"]
    assert sent[-1]["role"] == "user" and sent[-1]["content"][0]["type"] == "tool_result"
    assert sent[-1]["content"][0]["tool_use_id"] == ns["conversation"][1].blocks(ToolUseBlock)[0].id


def _formatter(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns["messages"] = conversation()
    run_block(ns)
    from agentmsg import Problem

    request = ns["request"]  # what the comments say of each attribute
    assert request.path == "/v1/messages" and request.body["tool_choice"] == {"type": "auto"}
    assert request.headers == {"anthropic-version": "2023-06-01"} and request.model == "claude-sonnet-4-5"
    assert orjson.loads(request.body_bytes()) == request.body and b", " not in request.body_bytes()
    assert isinstance(request.diagnostics, tuple) and all(isinstance(p, Problem) for p in request.diagnostics)


def _structured_request(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns["messages"] = [UserMessage("Where is the Eiffel Tower? Answer in JSON.")]
    run_block(ns)
    assert ns["request"].parser_options == {"structured_output": {"from": "text"}}
    assert ns["request"].body["response_format"]["json_schema"]["name"] == "City"


def _structured_reply(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reply of the recorded json_schema response (a mock transport serves it to the client)."""
    import dataclasses

    import httpx

    from agentmsg.clients import Client

    body = (FIX / "openai" / "chat_completion_json_schema_structured_output.json").read_bytes()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))

    @dataclasses.dataclass
    class City:
        city: str
        country: str

    ns.update(
        client=Client("openai", api_key="k", http_client=httpx.Client(transport=transport)),
        messages=[UserMessage("Where were the 1968 Olympics? Answer in JSON.")],
        schema={"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}},
        City=City,
    )
    source = ns["source"]
    ns["source"] = source.replace("msg.structured_output()", "as_dict = msg.structured_output()").replace(
        "msg.structured_output(City)", "city = msg.structured_output(City)"
    )
    run_block(ns)
    assert ns["as_dict"] == {"city": "Mexico City", "country": "Mexico"}
    assert ns["city"] == City("Mexico City", "Mexico")


def _system_prompt(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns["tools"] = TOOLS
    run_block(ns)
    text = ns["prompt"].text_content
    assert ns["request"].body["messages"][0] == {"role": "system", "content": text}
    shown = re.search(r"```text\n(.*?)```", (ROOT / "docs" / "formatters.md").read_text(encoding="utf-8"), re.S)
    assert shown is not None and shown.group(1) == text + "\n"  # the prompt the page shows


def _cache_markers(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/context.md, Prompt caching: the marked request, then the helper's placement (it runs on the page's own
    conversation and tools, so the marked request's names are the helper's)."""
    if "conversation" not in ns and "place_cache_markers" in ns["source"]:
        first = next(b for b in fenced(ROOT / "docs" / "context.md", "python") if "_cache_control" in b)
        exec(compile(first, "context.md (the marked request)", "exec"), ns)
    run_block(ns)
    request = ns["request"]
    assert request.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    # what the page's comments say: the 1h breakpoint after 5m ones; the helper's marker takes their 5m
    assert [(p.pointer, p.rule) for p in request.diagnostics] == [("/1/metadata/_cache_control", "cache-ttl-order")]
    if "placed" in ns:  # as the comments show: one marker, the marked message a copy, the others the ones given
        from agentmsg.context import CacheMarker

        placed = ns["placed"]
        assert placed.placed == (CacheMarker(where="turn", pointer="/2", value={"ttl": "5m"}),)
        assert [m is c for m, c in zip(placed.messages, ns["conversation"], strict=True)] == [True, True, False, True]
        assert placed.tools is not ns["tools"] and placed.tools[-1]["_cache_control"]


def _think_tags(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "<think>\nThe user greets me.\n</think>\n\nHello!"  # the reply the snippet's comment shows
    reply = {"role": "assistant", "content": text}
    ns["body"] = {"id": "c1", "model": "m", "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]}
    run_block(ns)
    assert [b.type for b in ns["msg"].content] == ["thinking", "text"]
    assert (ns["msg"].content[0].thinking, ns["msg"].text_content) == ("The user greets me.", "Hello!")


def _provider_module(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/adding-a-provider.md: the example module runs, is a provider the contract accepts, and what the page
    shows it gives holds (the second block runs after the module's)."""
    module, *_ = fenced(ROOT / "docs" / "adding-a-provider.md", "python")
    source = ns.pop("source")
    ns["source"] = module
    run_block(ns)
    assert ns["PROVIDERS"] and ns["Reader"].__mro__[1].__name__ == "PayloadReader"
    if source != module:
        ns["source"] = source
        run_block(ns)
        assert ns["streamed"] == ns["msg"] or ns["streamed"].text_content == ns["msg"].text_content


def _count(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/context.md: count_tokens on a conversation with tools; its parts sum to its total."""
    ns.update(messages=[UserMessage("What is the weather in Paris?")], tools=TOOLS)
    run_block(ns)
    n = ns["n"]
    assert n.method == "estimate" and n.error and len(n.messages) == 1 and n.tools > 0


def _check_api(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ci.md: agentmsg.check on a conversation with a thinking block in a USER message, and on valid JSONL
    (also read by iter_check in a with block)."""
    data = tmp_path / "data"
    data.mkdir()
    bad = UserMessage("hi").to_dict() | {"content": [{"type": "thinking", "thinking": "x"}]}
    (data / "conversation.json").write_text(json.dumps([UserMessage("hi").to_dict(), bad]), encoding="utf-8")
    (data / "messages.jsonl").write_text(UserMessage("hi").to_json() + "\n", encoding="utf-8")
    run_block(ns)
    assert ns["report"].kind == "conversation" and [f.at for f in ns["report"].problems] == ["/1/content/0/type"]
    assert ns["first"] is None and ns["findings"].kind == "msg"  # (the with block: the valid JSONL's first problem)


def _official_count(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/context.md: Client.count_tokens, its reply the recorded count_tokens reply (a mock transport)."""
    import httpx

    reply = (ROOT / "tests" / "fixtures" / "context" / "replies" / "anthropic_count_tokens.json").read_bytes()
    http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, content=reply)))
    ns.update(messages=[UserMessage("Hello")], tools=TOOLS, http=http)
    ns["source"] = ns["source"].replace('Client("anthropic")', 'Client("anthropic", api_key="k", http_client=http)')
    run_block(ns)
    assert ns["official"].total == 1114
    # the page's list of the providers with no counting endpoint, whose clients refuse before sending
    from agentmsg.clients import BadRequestError, Client
    from agentmsg.providers import providers

    sent: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    http = httpx.Client(transport=httpx.MockTransport(server))
    without = [p.spec.name for p in providers() if p.spec.counting is None]
    assert without == ["openai", "deepseek", "dashscope-compatible", "openai-responses"]
    for name in without:
        with pytest.raises(BadRequestError, match="no token-counting endpoint"):
            Client(name, api_key="k", http_client=http).count_tokens(ns["messages"])
    assert sent == []


def _long_conversation() -> list[Any]:
    msgs: list[Any] = []
    for i in range(300):
        msgs += [UserMessage(f"Question {i}: " + "what is the weather like? " * 10), *conversation()[1:]]
        msgs[-2] = AssistantMessage([ToolUseBlock(id=f"call_{i}", name="get_weather", input={"city": "Paris"})])
        msgs[-1] = ToolResultMessage(
            [ToolResultBlock(id=f"call_{i}", name="get_weather", output=[TextBlock(text="sunny")])]
        )
    return msgs


def _trim(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns.update(messages=_long_conversation(), tools=TOOLS)
    run_block(ns)
    assert ns["cut"].removed and ns["cut"].tokens <= 8_000 and ns["cut"].diagnostics[0].rule == "trim-removed"


def _trim_summary(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/context.md: the user's summarizers (a sync and an async one) are the page's placeholders."""

    async def async_summarize(removed: list[Any]) -> str:
        return f"{len(removed)} earlier messages asked for the weather"

    ns.update(
        messages=_long_conversation(),
        my_llm_summary=lambda removed: f"{len(removed)} messages",
        async_summarize=async_summarize,
    )
    run_block(ns)
    assert ns["cut"].summary is not None and ns["cut"].messages[0] is ns["cut"].summary


def _agui(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ag-ui.md: a reply's events through the encoder (what ``send`` sends is what the decoder reads) come
    back as the same message."""
    from agentmsg import AssistantMessage, emit_events

    msg = AssistantMessage(["Paris is sunny."], id="m1")
    sent: list[Any] = []
    ns.update(agent_events=emit_events(msg), send=sent.append, ag_ui_events=sent)  # (its imports its own)
    run_block(ns)
    assert sent[0]["type"] == "RUN_STARTED" and sent[-1]["type"] == "RUN_FINISHED"
    assert [m.to_dict() for m in ns["messages"]] == [msg.to_dict()]


def _ai_sdk(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ai-sdk.md: a reply's events as UI chunks, as the response body, and back: the same message."""
    from agentmsg import AssistantMessage, reduce_events

    msg = AssistantMessage(["Paris is sunny."], id="m1")
    ns["events"] = emit_events(msg)
    run_block(ns)
    assert ns["chunks"][0] == {"type": "start", "messageId": "m1"} or ns["chunks"][1]["type"] == "start"
    assert ns["body"].endswith(b"data: [DONE]\n\n")
    assert [m.to_dict() for m in reduce_events(ns["events"])] == [msg.to_dict()]
    assert ns["enc"].feed(ns["events"][0]) and ns["dec"].strict


def _reducing(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/events.md: the events of a reply (the conversation's) read from a file, given as dicts, fed one, as
    JSON lines and many; each way gives the reply back."""
    reply = conversation()[1]
    events = emit_events(reply)
    (tmp_path / "events.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    ns.update(
        list_of_event_dicts=events,
        event=events[0],
        data=b"".join(orjson.dumps(e) + b"\n" for e in events[1:4]),
        events=events[4:],
    )
    run_block(ns)
    want = [reply.to_dict()]
    assert [m.to_dict() for m in ns["messages"]] == want  # reduce_events, after reduce_stream gave the same
    r = ns["r"]
    assert [m.to_dict() for m in r.finish()] == want and r.problems == [] and r.check_results() == []
    assert r.snapshot() is None  # between replies


def _chat_endpoint(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/web.md: an endpoint made per request streams, in the AI SDK's protocol, the reply to what that request
    posted (the body read first), served by uvicorn."""
    import http.client

    from agentmsg import AssistantMessage, reduce_events
    from agentmsg.ui import ai_sdk
    from tests.web._http import serving

    class Agent:
        async def stream(self, messages: list[Any]) -> Any:
            question = messages[-1]
            assert question.role.value == "USER"
            for event in emit_events(AssistantMessage([f"You asked {question.text_content}"], id="m1")):
                yield event

    ns["my_agent"] = Agent()
    run_block(ns)
    answers = []
    with serving(ns["app"]) as port:
        for question in ("first?", "second?"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                chat: dict[str, Any] = {"id": "c1", "trigger": "submit-message", "messageId": None}
                chat["messages"] = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": question}]}]
                conn.request("POST", "/api/chat", body=orjson.dumps(chat))  # (what useChat posts)
                resp = conn.getresponse()
                assert resp.status == 200 and resp.getheader("x-vercel-ai-ui-message-stream") == "v1"
                answers.append(reduce_events(ai_sdk.decode(ai_sdk.iter_chunks(resp.read())))[0].text_content)
            finally:
                conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:  # no chat: refused with the pointer and rule, before any agent runs
            conn.request("POST", "/api/chat", body=orjson.dumps({"question": "first?"}))
            resp = conn.getresponse()
            assert resp.status == 400 and "[required]" in resp.read().decode()
        finally:
            conn.close()
    assert answers == ["You asked first?", "You asked second?"]


def _ai_sdk_request(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ai-sdk.md: what useChat posts, read into messages."""
    parts = [{"type": "step-start"}, {"type": "text", "text": "Sunny."}]
    ns["body"] = orjson.dumps(
        {
            "id": "c1",
            "trigger": "submit-message",
            "tenant": "acme",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]},
                {"id": "a1", "role": "assistant", "parts": parts},
            ],
        }
    )
    run_block(ns)
    chat = ns["chat"]
    assert [m.text_content for m in chat.messages] == ["Weather?", "Sunny."]
    assert (chat.chat_id, chat.trigger, chat.extra) == ("c1", "submit-message", {"tenant": "acme"})
    assert [n.rule for n in chat.notes] == ["ui-mapped"]


def _agui_input(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ag-ui.md: what an AG-UI client posts (RunAgentInput), read."""
    ns["body"] = {
        "threadId": "th1",
        "runId": "r1",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "Weather?"}],
    }
    run_block(ns)
    run = ns["run"]
    assert [m.text_content for m in run.messages] == ["Weather?"]
    assert (run.thread_id, run.run_id, run.notes) == ("th1", "r1", [])


def run_block(ns: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # users copy these: no deprecated name in them
        exec(ns.pop("source"), ns)


# (doc, a word only that block holds, setup that runs it through run_block)
SETUPS: list[tuple[str, str, Callable[[dict[str, Any], Path, pytest.MonkeyPatch], None]]] = [
    ("streams.md", "StreamParser()", _parsers),
    ("streams.md", "client.stream(", _client),
    ("streams.md", "ReplayServer() as server", _tool_loop),
    ("formatters.md", "MediaPolicy(allowed_roots", _formatter),
    ("formatters.md", 'StructuredOutput(schema, name="City")', _structured_request),
    ("formatters.md", "msg.structured_output(City)", _structured_reply),
    ("streams.md", "think_tags=True)", _think_tags),
    ("context.md", "_cache_control", _cache_markers),
    ("context.md", "place_cache_markers(conversation", _cache_markers),
    ("formatters.md", "long_term_memory=", _system_prompt),
    ("adding-a-provider.md", "class Reader(PayloadReader)", _provider_module),
    ("adding-a-provider.md", "reduce_events(parse_stream(sse))", _provider_module),
    ("context.md", "n = count_tokens(", _count),
    ("ci.md", "agentmsg.check(", _check_api),
    ("context.md", "official = Client(", _official_count),
    ("context.md", "cut.diagnostics", _trim),
    ("context.md", "def summarize(", _trim_summary),
    ("ag-ui.md", 'get("ag-ui").encoder()', _agui),
    ("ai-sdk.md", "ai_sdk.encode_sse(events)", _ai_sdk),
    ("events.md", "r.feed_jsonl(data)", _reducing),
    ("web.md", "class Chat:", _chat_endpoint),
    ("ai-sdk.md", "ai_sdk.read_request(body)", _ai_sdk_request),
    ("ag-ui.md", "agui.read_input(body)", _agui_input),
]
PY_BLOCKS = [(p.name, i, b, why) for p in DOCS for i, (b, why) in enumerate(fenced_marked(p, "python"))]


@pytest.mark.parametrize(("doc", "index", "source", "not_run"), PY_BLOCKS, ids=[f"{d}#{i}" for d, i, _, _ in PY_BLOCKS])
def test_the_python_examples_of_the_docs_run(
    doc: str, index: int, source: str, not_run: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not_run is not None:
        pytest.skip(f"{doc}: Python block {index} is marked not run: {not_run}")
    setups = [s for d, word, s in SETUPS if d == doc and word in source]
    assert len(setups) == 1, f"{doc}: Python block {index} has no setup in tests/project/test_docs.py (add one)"
    monkeypatch.chdir(tmp_path)
    setups[0]({"source": source}, tmp_path, monkeypatch)


def test_a_block_marked_not_run_is_skipped_with_its_reason(tmp_path: Path) -> None:
    """The marker is read on the line right before the fence only: a marker further up marks nothing."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: not run: needs a live Gemini key -->\n```python\nlive()\n```\n\n"
        "<!-- docs-test: not run: stale -->\ntext\n```python\nrun()\n```\n",
        encoding="utf-8",
    )
    assert fenced_marked(page, "python") == [("live()\n", "needs a live Gemini key"), ("run()\n", None)]


def _free_names(source: str) -> set[str]:
    """The names a block reads and neither imports, assigns nor defines."""
    import ast
    import builtins

    bound: set[str] = set(dir(builtins))
    read: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound


def test_the_examples_import_the_modules_they_use() -> None:
    """A module a snippet uses is imported in it, and so is a function or class of agentmsg's API: the setups
    give a snippet the names its text stands for (a conversation, tools, a reply), never a module or agentmsg's
    own name. (docs/ag-ui.md used agentmsg, docs/context.md asyncio and README's read_records example agentmsg,
    each without importing it; docs/context.md's place_cache_markers example the providers' get, imported only
    by the block before it: a NameError when copied.)"""
    import importlib
    import sys
    import types

    api: set[str] = set()
    for name in API_MODULES:
        module = importlib.import_module(name)
        api.update(n for n in module.__all__ if not isinstance(getattr(module, n), types.ModuleType))
    imported = set(sys.stdlib_module_names) | {"agentmsg", "httpx", "orjson", "fastapi", "starlette", "pydantic"}
    imported |= api
    missing = [
        (path.name, i, sorted(_free_names(source) & imported))
        for path in [ROOT / "README.md", *DOCS]
        for i, source in enumerate(fenced(path, "python"))
        if _free_names(source) & imported
    ]
    assert missing == []


# The modules whose functions and classes a snippet imports (a name of theirs is never one the text stands for).
API_MODULES = (
    "agentmsg",
    "agentmsg.clients",
    "agentmsg.context",
    "agentmsg.events",
    "agentmsg.providers",
    "agentmsg.testing",
    "agentmsg.ui",
    "agentmsg.web",
)


# ---- commands -------------------------------------------------------------------------------------------


def _commands() -> list[tuple[str, str]]:
    out = []
    for path in [ROOT / "README.md", *DOCS]:
        for block in fenced(path, "sh"):
            out += [(path.name, line) for line in block.splitlines() if line.startswith("agentmsg ")]
    return out


def _argvs(line: str) -> list[list[str]]:
    """The command as shown without its optional [...] parts, and with all of them (the first alternative of
    a|b that is neither `...` nor N; N alone a number); FILE... one file."""
    line = line.replace("FILE...", "msg.json")

    def expand(m: re.Match[str]) -> str:
        words = []
        for word in m.group(1).split():
            alternatives = [a for a in word.split("|") if a not in ("...", "N")]
            words.append(alternatives[0] if alternatives else "2")
        return " ".join(words)

    bare = shlex.split(re.sub(r"\[[^\]]*\]", "", line), comments=True)
    full = shlex.split(re.sub(r"\[([^\]]*)\]", expand, line), comments=True)
    return [bare[1:]] if bare == full else [bare[1:], full[1:]]


COMMANDS = _commands()


CHILD = AssistantMessage("Sunny in Paris.", name="Weather")  # a subagent's reply, forwarded as source parent/child


def _inputs(tmp_path: Path) -> None:
    """The files the commands name: a message, a conversation, and events.jsonl holding the reply's events
    and a subagent's (source parent/child)."""
    msgs = conversation()
    (tmp_path / "msg.json").write_bytes(msgs[1].to_json_bytes())
    (tmp_path / "conversation.json").write_bytes(encode_messages(msgs))
    child = [{**e, "source": "parent/child"} for e in emit_events(CHILD)]
    events = [*emit_events(msgs[1]), *child]
    (tmp_path / "events.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))


def _json_lines(text: str) -> list[Any]:
    return [orjson.loads(line) for line in jsonl_lines(text)]


def _output(argv: list[str], out: str, err: str) -> None:
    """What each command prints is what its comment in the docs says: messages one JSON per line, events as
    JSON lines or SSE, a body and its diagnostics, a count, a conversation, the schemas."""
    from agentmsg import Msg, reduce_stream
    from agentmsg.events import read_events

    command, reply = argv[0], conversation()[1]
    if command == "reduce":  # one message JSON per line: the reply, or the subagent's with --source
        want = CHILD if "--source" in argv else reply
        assert [Msg.from_json(line).content for line in out.splitlines()] == [want.content] and err == ""
    elif command == "events":  # the message's events, as JSONL or SSE
        events = list(read_events(out.encode()))
        assert events[0]["type"] == "AGENT_START" and events[-1]["type"] == "AGENT_END"
        assert out.startswith("id: " if "--sse" in argv else "{")
        if "--chunk-size" in argv:  # text deltas in pieces of at most N characters
            size = int(argv[argv.index("--chunk-size") + 1])
            deltas = [e["delta"] for e in events if e["type"].endswith("_BLOCK_DELTA")]
            assert len(deltas) > 2 and max(map(len, deltas)) == size
        assert [m.content for m in reduce_stream(out)] == [reply.content] and err == ""
    elif command == "validate":  # a valid file: nothing said
        assert out == err == ""
    elif command == "schema":
        if argv == ["schema"]:  # the list: name and $id, one a line
            assert all(re.fullmatch(r"[a-z-]+\thttps://\S+\.schema\.json", line) for line in out.splitlines())
        else:  # one schema (--bundle: with every schema it uses)
            schema = json.loads(out)
            assert schema["$schema"].endswith("2020-12/schema") and ("--bundle" not in argv or schema["$defs"])
    elif command == "format":  # the body on stdout, one JSON line per diagnostic on stderr
        assert json.loads(out)["messages"]
        assert all(set(d) - {"pointers"} == {"pointer", "rule", "kind", "message"} for d in _json_lines(err))
    elif command == "count":  # one JSON object: provider, model and the count's fields
        n = json.loads(out)
        assert set(n) == {"provider", "model", "total", "messages", "tools", "overhead", "method", "error", "missing"}
        assert sum(n["messages"]) + n["tools"] + n["overhead"] == n["total"] and len(n["messages"]) == 3
    elif command == "trim":  # the trimmed conversation in the input's form (it fits: all of it, nothing removed)
        assert len(json.loads(out)) == len(conversation())
        from agentmsg.providers import RULES  # (what is said: the formatter's diagnostics of the request, no removal)

        assert all(d["rule"] in RULES and d["kind"] == RULES[d["rule"]][0] for d in _json_lines(err))
    elif command == "parse":  # one message JSON line (--choice all: one a line), or with --events the events
        lines = out.splitlines()
        if "--events" in argv:
            assert [e["type"] for e in _json_lines(out)][:: len(lines) - 1] == ["AGENT_START", "AGENT_END"]
        else:
            assert len(lines) == 1 and Msg.from_json(lines[0]).content
        assert err == ""
    elif command == "chat":  # the reply live, its tool calls marked, then the usage
        assert "[tool call] " in out and "[usage] " in out
    else:
        raise AssertionError(f"no output check for agentmsg {command}: add one to _output")


def _serve(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`agentmsg serve`: the address it says (the comment's http://127.0.0.1:8000/ by default; here a free one),
    the page, and /events: the events of the file (--drop-every N: N, then the connection closes; --protocol
    ag-ui: AG-UI's). uvicorn's server is not run: its app is asked through httpx's ASGI transport."""
    import asyncio

    import httpx

    from agentmsg import reduce_stream

    uvicorn = pytest.importorskip("uvicorn", reason="agentmsg serve needs the web extra")
    args = build_parser().parse_args(argv)
    assert Path(args.file).is_file()
    if "--port" not in argv:
        assert (args.host, args.port) == ("127.0.0.1", 8000)  # what the docs' comment says it listens on
    argv = list(argv)  # a free port, never one another test may hold (in place: an option given twice is refused)
    if "--port" in argv:
        argv[argv.index("--port") + 1] = "0"
    else:
        argv += ["--port", "0"]

    async def ask(app: Any) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return [await client.get("/"), await client.get("/events")]

    got: list[httpx.Response] = []  # asked while the server would run (the file is closed after)
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: got.extend(asyncio.run(ask(server.config.app))))
    capsys.readouterr()
    assert main(argv) == 0 and len(got) == 2
    assert re.match(r"agentmsg serve: viewer at http://127\.0\.0\.1:\d+/ ", capsys.readouterr().err)
    page, events = got
    assert page.status_code == events.status_code == 200 and page.headers["content-type"].startswith("text/html")
    data = [line for line in events.text.splitlines() if line.startswith("data: ")]
    if args.drop_every:
        assert len(data) == args.drop_every and "event: end" not in events.text
    elif args.protocol == "ag-ui":
        assert json.loads(data[0][6:])["type"] == "RUN_STARTED" and json.loads(data[-1][6:])["type"] == "RUN_FINISHED"
    else:
        assert [m.content for m in reduce_stream(events.text)] == [conversation()[1].content]
        assert events.text.endswith("event: end\ndata: {}\n\n")  # the whole file, not the source's error


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[f"{d}:{line[:60]}" for d, line in COMMANDS])
def test_the_commands_of_the_docs_run(
    doc: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path)
    for argv in _argvs(line):
        command = argv[0]
        if command == "serve":  # it would serve until stopped: what it serves, taken from the server it starts
            _serve(argv, monkeypatch, capsys)
            continue
        provider = argv[argv.index("--provider") + 1] if "--provider" in argv else None
        if provider in REPLY:
            (tmp_path / "reply.json").write_bytes((FIX / REPLY[provider]).read_bytes())
            (tmp_path / "body.sse").write_bytes((FIX / STREAM[provider]).read_bytes())
        capsys.readouterr()
        if command == "chat":
            assert provider == "openai", line
            monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            with ReplayServer() as server:
                server.add("/chat/completions", Reply(body=(FIX / STREAM[provider]).read_bytes(), sse=True))
                assert main([*argv, "--base-url", server.url]) == 0, (doc, argv)
        else:
            assert main(argv) == 0, (doc, argv)
        out, err = capsys.readouterr()
        _output(argv, out, err)


# ---- transcripts: a ```text block that starts `$ agentmsg ...` shows what the command prints -------------------

AGUI_RUN = [  # run.sse of docs/ag-ui.md: a reply's text, then a tool call that names its parent message
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me check."},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "get_weather", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": '{"city": "Paris"}'},
    {"type": "TOOL_CALL_END", "toolCallId": "call_1"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
]
TRANSCRIPT_FILES = {"run.sse": b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in AGUI_RUN)}
TRANSCRIPTS = [(p.name, block) for p in DOCS for block in fenced(p, "text") if block.startswith("$ agentmsg ")]


@pytest.mark.parametrize(("doc", "block"), TRANSCRIPTS, ids=[f"{d}:{b.splitlines()[0][2:60]}" for d, b in TRANSCRIPTS])
def test_the_transcripts_of_the_docs_print_what_they_show(
    doc: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line shown (stdout's and stderr's; `...` elides) is a line printed, and nothing else is."""
    monkeypatch.chdir(tmp_path)
    command, *shown = block.splitlines()
    argv = shlex.split(command[2:])[1:]
    for name in argv:
        if name in TRANSCRIPT_FILES:
            (tmp_path / name).write_bytes(TRANSCRIPT_FILES[name])
    assert main(argv) == 0, (doc, command)
    out, err = capsys.readouterr()
    printed = [*out.splitlines(), *err.splitlines()]
    patterns = [re.compile(".*".join(map(re.escape, line.split("...")))) for line in shown]
    assert len(printed) == len(shown), (printed, shown)
    for pattern in patterns:
        match = next((line for line in printed if pattern.fullmatch(line)), None)
        assert match is not None, (pattern.pattern, printed)
        printed.remove(match)


# ---- the formatter examples -----------------------------------------------------------------------------


def test_the_formatter_examples_are_the_vectors_bodies() -> None:
    """Each `## Example: NAME` of docs/formatters.md shows, per provider, the path, the diagnostics and the body
    of the vector tests/conformance/formatters/PROVIDER/NAME.json (tool definitions elided)."""
    doc = (ROOT / "docs" / "formatters.md").read_text(encoding="utf-8")
    shown = 0
    for example in re.finditer(r"^## Example: `([^`]+)`(.*?)(?=^## |\Z)", doc, re.S | re.M):
        name = example.group(1)
        sections = re.finditer(
            r"^### (\S+)\n\n`POST ([^`]+)`.*?; diagnostics: (.*?)\n\n```json\n(.*?)```", example.group(2), re.S | re.M
        )
        for section in sections:
            provider, path, diagnostics, body = section.groups()
            vector = json.loads((ROOT / "tests/conformance/formatters" / provider / f"{name}.json").read_text("utf-8"))
            expected = vector["expected"]
            assert path == expected["path"], (name, provider)
            said = ", ".join(f"`{d['pointer']}` {d['rule']}" for d in expected["diagnostics"]) or "none"
            assert diagnostics == said, (name, provider)
            want = expected["body"]
            for holder in (want, want.get("parameters")):
                if isinstance(holder, dict) and "tools" in holder:
                    holder["tools"] = None
            assert json.loads(body.replace("[/* get_weather */]", "null")) == want, (name, provider)
            shown += 1
    assert shown >= 12


def test_the_field_tables_are_the_datas() -> None:
    """docs/formatters.md's field tables ("Fields: what each provider sends") are written from the tables the
    formatters and tests/providers/shared/test_fields.py use: what the page says is what the code does."""
    from agentmsg.providers._request.fields import docs_tables

    doc = (ROOT / "docs" / "formatters.md").read_text(encoding="utf-8")
    shown = doc.split("<!-- fields:begin -->\n", 1)[1].split("<!-- fields:end -->", 1)[0]
    assert shown == docs_tables(), (
        "docs/formatters.md's field tables differ from the data: write them again between the fields markers with"
        " python -c 'from agentmsg.providers._request.fields import docs_tables; print(docs_tables(), end=\"\")'"
    )


def test_the_reply_field_tables_are_the_datas() -> None:
    """docs/streams.md's reply-field tables are written from each provider module's REPLY_FIELDS, which
    tests/providers/shared/test_reply_fields.py checks against the readers."""
    from agentmsg.providers._response.fields import docs_tables

    doc = (ROOT / "docs" / "streams.md").read_text(encoding="utf-8")
    shown = doc.split("<!-- reply-fields:begin -->\n", 1)[1].split("<!-- reply-fields:end -->", 1)[0]
    assert shown == docs_tables(), (
        "docs/streams.md's reply-field tables differ from the data: write them again between the reply-fields"
        " markers with python -c 'from agentmsg.providers._response.fields import docs_tables;"
        ' print(docs_tables(), end="")\''
    )


def test_the_provider_lists_name_every_provider() -> None:
    """The lists of providers in the docs name every registry name (openai-responses was missing from each):
    docs/formatters.md's table with each one's module and its default models, docs/context.md's names."""
    import importlib

    from agentmsg.providers import MODULES, NAMES

    module_of = {
        entry.spec.name: (entry.spec, module)
        for module in MODULES
        for entry in importlib.import_module(f"agentmsg.providers.{module}").PROVIDERS
    }
    assert sorted(module_of) == sorted(NAMES)
    formatters = (ROOT / "docs" / "formatters.md").read_text(encoding="utf-8")
    context = (ROOT / "docs" / "context.md").read_text(encoding="utf-8")
    defaults = " ".join(formatters.split("Without `model` the request names", 1)[1].split("says which")[0].split())
    names = " ".join(context.split("`provider` is a registry name (", 1)[1].split(");", 1)[0].split())
    for name in NAMES:
        spec, module = module_of[name]
        assert f"| `{name}` | `providers/{module}.py`" in formatters, name
        assert f"`{spec.default_model}`" in defaults, name
        assert f"`{name}`" in names, name
    # README's layout table names every provider module (openai_responses was missing)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("| `sdk/agentmsg/providers/` | one module per provider (", 1)[1].split(")", 1)[0]
    assert sorted(re.findall(r"`(\w+)`", layout)) == sorted(MODULES)
    # README's two prose lists of the formatters (its summary and "Provider formatters") name every provider's
    # title, parentheses dropped ("DashScope compatible mode"); the OpenAI Responses API was missing from the
    # summary. A title inside a longer one ("DashScope" in "DashScope compatible mode") must be there on its own
    # too: each is taken out once found, the longest first.
    titles = sorted((" ".join(re.sub(r"[()]", "", spec.title).split()) for spec, _ in module_of.values()), key=len)
    lists = {
        "summary": readme.split("formatters for ", 1)[1].split(", chat and multi-agent", 1)[0],
        "Provider formatters": readme.split("formats a conversation for ", 1)[1].split(", chat or multi-agent", 1)[0],
    }
    for where, prose in lists.items():
        prose = " ".join(prose.split())
        for title in reversed(titles):
            assert title in prose, f"README's {where} list of the formatters leaves out {title}: {prose!r}"
            prose = prose.replace(title, "", 1)


def test_every_public_name_is_documented() -> None:
    """A new user looks a name up in the README and docs/, and in help(): OpenAIClient, block_to_json,
    thinking_provider, FormattedRequest, LOSSY, SSEEvent ... were in neither, or had no docstring."""
    import agentmsg.clients
    import agentmsg.events
    import agentmsg.providers

    root = Path(__file__).resolve().parents[2]
    text = "".join(p.read_text(encoding="utf-8") for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    for module in (agentmsg, agentmsg.providers, agentmsg.clients, agentmsg.events):
        names: list[str] = module.__all__
        assert [n for n in names if f"{n}" not in text] == [], module.__name__
        undocumented = [
            n
            for n in names
            if (inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n)))
            and not (getattr(module, n).__doc__ or "").strip()
        ]
        assert undocumented == [], module.__name__


def test_the_example_provider_keeps_the_contract_and_needs_no_other_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/adding-a-provider.md's acme.py, registered here as a module with a registry line (no other file edited):
    it has the sections and ``__all__`` tests/providers/shared/test_contract.py asks of a provider module, its reader
    refuses what is no Acme reply and its stream parser reads a whole reply, and the clients and the CLI reach it."""
    import sys
    import types

    from agentmsg import providers
    from agentmsg.clients import Client
    from agentmsg.errors import ValidationError
    from tests.providers.shared.test_contract import SECTIONS

    source = fenced(ROOT / "docs" / "adding-a-provider.md", "python")[0]
    headings = [h for h in re.findall(r"^# ---- (.+?) -+$", source, re.M)]
    assert headings == list(SECTIONS)
    module = types.ModuleType("acme_doc_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, "acme.py", "exec"), module.__dict__)
    for name in ("format_request", "parse_response", "response_events", "parse_stream", "StreamParser"):
        assert name in module.__all__
    assert module.REPLY_FIELDS
    with pytest.raises(ValidationError):  # an agentmsg message is no Acme reply
        module.parse_response(UserMessage("Hi").to_dict())
    whole = b'{"id": "r1", "model": "acme-1", "text": "Hello!", "stop": "end", "usage": {"in": 3, "out": 2}}'
    assert reduce_events(module.parse_stream(whole))[0].text_content == "Hello!"
    (entry,) = module.PROVIDERS
    monkeypatch.setitem(providers._load(), "acme", entry)
    with ReplayServer() as server:
        server.add("/chat", Reply(body=whole))
        with Client("acme", base_url=server.url, api_key="k") as client:
            assert client.call([UserMessage("Hi")]).text_content == "Hello!"
        assert server.requests[-1].json()["model"] == "acme-1"
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([UserMessage("Hi").to_dict()]))
    reply = tmp_path / "reply.json"
    reply.write_bytes(whole)
    capsys.readouterr()
    assert main(["format", "--provider", "acme", str(conversation)]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == [{"role": "user", "content": "Hi"}]
    assert main(["parse", "--provider", "acme", str(reply)]) == 0
    assert "Hello!" in capsys.readouterr().out


def test_the_example_provider_passes_the_shared_tests_that_hold_no_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared tests format and count for every registry name: docs/adding-a-provider.md's acme.py, registered,
    passes those that hold no per-provider row (its oracle is none here). The page's example, followed, failed three:
    it left structured output unmapped (``param-dropped``; tests/providers/shared/test_structured.py asks every
    provider for it), its body had no key of its own for a parameter to clash with, and its token profile framed
    tool results unlike the messages its requests send (tests/context/test_count.py)."""
    import sys
    import types

    from agentmsg import providers
    from agentmsg.providers import StructuredOutput
    from tests import oracles
    from tests.context import test_count
    from tests.providers.shared import test_request

    source = fenced(ROOT / "docs" / "adding-a-provider.md", "python")[0]
    module = types.ModuleType("acme_doc_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, "acme.py", "exec"), module.__dict__)
    (entry,) = module.PROVIDERS
    monkeypatch.setitem(providers._load(), "acme", entry)
    check = oracles.check
    monkeypatch.setattr(oracles, "check", lambda name, request: [] if name == "acme" else check(name, request))

    test_request.test_a_parameter_never_replaces_what_the_request_has("acme")
    for case in sorted(test_count._odd_conversations()):
        for mode in sorted(test_count._MODES):
            for repair in (False, True):
                test_count.test_the_counts_framing_is_the_requests_structure("acme", case, repair, mode)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    ask = [UserMessage("Where? Answer in JSON.")]
    as_text = entry.format_request(ask, structured_output=StructuredOutput(schema, name="City"))
    assert [d.rule for d in as_text.diagnostics] == []
    assert as_text.parser_options == {"structured_output": {"from": "text"}}
    as_tool = entry.format_request(ask, structured_output=StructuredOutput(schema, name="City", mode="tool"))
    assert [d.rule for d in as_tool.diagnostics] == ["structured-output-as-tool"]
    assert as_tool.parser_options == {"structured_output": {"from": "tool", "name": "City"}}
