"""The examples of docs/*.md run as written, and so do the `agentmsg` commands shown in README.md and the docs
(tests/project/test_readme.py runs the README's Python). The names a snippet takes from its surrounding text (a
provider's reply, a conversation, tools) are given here; clients and `agentmsg chat` talk to the local replay
server instead of the provider; `agentmsg serve` is only checked to take its arguments. docs/events.md is left
to its own tests. The formatter examples of docs/formatters.md are checked against the conformance vectors
they show."""

from __future__ import annotations

import inspect
import json
import re
import shlex
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
)
from agentmsg.cli import build_parser, main
from agentmsg.testing import ReplayServer, Reply

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "events.md")
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


def fenced(path: Path, *langs: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [m.group(2) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M) if m.group(1) in langs]


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


def _formatter(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns["messages"] = conversation()
    run_block(ns)
    assert ns["request"].path == "/v1/messages" and ns["request"].body["tool_choice"] == {"type": "auto"}


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
    if "placed" in ns:
        assert [(m.where, m.value) for m in ns["placed"].placed] == [("turn", {"ttl": "5m"})]


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


def _official_count(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/context.md: Client.count_tokens, its reply the recorded count_tokens reply (a mock transport)."""
    import httpx

    reply = (ROOT / "tests" / "fixtures" / "context" / "replies" / "anthropic_count_tokens.json").read_bytes()
    http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, content=reply)))
    ns.update(messages=[UserMessage("Hello")], tools=TOOLS, http=http)
    ns["source"] = ns["source"].replace('Client("anthropic")', 'Client("anthropic", api_key="k", http_client=http)')
    run_block(ns)
    assert ns["official"].total == 1114


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
    import asyncio

    async def async_summarize(removed: list[Any]) -> str:
        return f"{len(removed)} earlier messages asked for the weather"

    ns.update(
        messages=_long_conversation(),
        my_llm_summary=lambda removed: f"{len(removed)} messages",
        async_summarize=async_summarize,
        asyncio=asyncio,
    )
    run_block(ns)
    assert ns["cut"].summary is not None and ns["cut"].messages[0] is ns["cut"].summary


def _agui(ns: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/ag-ui.md: a reply's events through the encoder (what ``send`` sends is what the decoder reads) come
    back as the same message."""
    import agentmsg
    from agentmsg import AssistantMessage, emit_events

    msg = AssistantMessage(["Paris is sunny."], id="m1")
    sent: list[Any] = []
    ns.update(agentmsg=agentmsg, agent_events=emit_events(msg), send=sent.append, ag_ui_events=sent)
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


def run_block(ns: dict[str, Any]) -> None:
    exec(ns.pop("source"), ns)


# (doc, a word only that block holds, setup that runs it through run_block)
SETUPS: list[tuple[str, str, Callable[[dict[str, Any], Path, pytest.MonkeyPatch], None]]] = [
    ("streams.md", "StreamParser()", _parsers),
    ("streams.md", "client.stream(", _client),
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
    ("context.md", "official = Client(", _official_count),
    ("context.md", "cut.diagnostics", _trim),
    ("context.md", "def summarize(", _trim_summary),
    ("ag-ui.md", 'get("ag-ui").encoder()', _agui),
    ("ai-sdk.md", "ai_sdk.encode_sse(events)", _ai_sdk),
]
PY_BLOCKS = [(p.name, i, b) for p in DOCS for i, b in enumerate(fenced(p, "python"))]


@pytest.mark.parametrize(("doc", "index", "source"), PY_BLOCKS, ids=[f"{d}#{i}" for d, i, _ in PY_BLOCKS])
def test_the_python_examples_of_the_docs_run(
    doc: str, index: int, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setups = [s for d, word, s in SETUPS if d == doc and word in source]
    assert len(setups) == 1, f"{doc}: Python block {index} has no setup in tests/project/test_docs.py (add one)"
    monkeypatch.chdir(tmp_path)
    setups[0]({"source": source}, tmp_path, monkeypatch)


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


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[f"{d}:{line[:60]}" for d, line in COMMANDS])
def test_the_commands_of_the_docs_run(doc: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    msgs = conversation()
    (tmp_path / "msg.json").write_bytes(msgs[1].to_json_bytes())
    (tmp_path / "conversation.json").write_bytes(encode_messages(msgs))
    (tmp_path / "events.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in emit_events(msgs[1])))
    for argv in _argvs(line):
        command = argv[0]
        if command == "serve":  # it would serve until stopped: its arguments only
            args = build_parser().parse_args(argv)
            assert Path(args.file).is_file()
            continue
        provider = argv[argv.index("--provider") + 1] if "--provider" in argv else None
        if provider in REPLY:
            (tmp_path / "reply.json").write_bytes((FIX / REPLY[provider]).read_bytes())
            (tmp_path / "body.sse").write_bytes((FIX / STREAM[provider]).read_bytes())
        if command == "chat":
            assert provider == "openai", line
            monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            with ReplayServer() as server:
                server.add("/chat/completions", Reply(body=(FIX / STREAM[provider]).read_bytes(), sse=True))
                assert main([*argv, "--base-url", server.url]) == 0, (doc, argv)
            continue
        assert main(argv) == 0, (doc, argv)


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
