"""Sharp edges a new user hits with the public API: each test is a mistake or a common use that used to go
wrong (a garbled error, a silent wrong result, an imprecise type) and what it does now."""

from __future__ import annotations

import copy
import inspect
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    Msg,
    Reducer,
    SizeLimitError,
    TextBlock,
    UserMessage,
    ValidationError,
    decode_messages,
    emit_events,
    encode_messages,
    encode_sse,
    reduce_events,
    reduce_stream,
)
from agentmsg.cli import main as cli_main
from agentmsg.clients import SPECS, AnthropicClient, AsyncAnthropicClient, Client, OpenAIClient
from agentmsg.errors import Problem
from agentmsg.events import read_events
from agentmsg.events import stream as stream_module
from agentmsg.providers import get


@pytest.mark.parametrize("cls", [ValidationError, SizeLimitError])
def test_validation_errors_pickle_and_copy(cls: type[ValidationError]) -> None:
    """Exception's reduce rebuilt the error from its text, taken for its problems: one per character."""
    original = cls([Problem("/content/0/type", "role-content", "USER may not hold thinking")], "msg")
    original.__notes__ = ["while reading conversation.json"]  # (add_note: Python 3.11+)
    for again in (pickle.loads(pickle.dumps(original)), copy.copy(original), copy.deepcopy(original)):
        assert type(again) is cls
        assert again.problems == original.problems and again.kind == "msg"
        assert str(again) == str(original) == "invalid msg: /content/0/type: USER may not hold thinking [role-content]"
        assert again.__notes__ == ["while reading conversation.json"]


@pytest.mark.parametrize(
    ("value", "pointer", "says"),
    [
        ("hello", "", "got str"),  # was written as ["h","e","l","l","o"]
        (b"[]", "", "got bytes"),
        (UserMessage("hi"), "", "got UserMessage"),  # was a bare TypeError: not iterable
        ({"role": "USER", "content": []}, "", "got dict"),
        (3, "", "got int"),
        (
            [UserMessage("hi"), {"role": "USER", "content": []}],
            "/1",
            "got dict (Msg.from_dict reads one)",
        ),  # was written
        ((m for m in [UserMessage("hi"), "hello"]), "/1", "got str"),
    ],
)
def test_encode_messages_takes_only_messages(value: Any, pointer: str, says: str) -> None:
    with pytest.raises(ValidationError) as info:
        encode_messages(value)
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == (pointer, "type") and says in problem.message


def test_encode_messages_takes_any_iterable_of_messages() -> None:
    msgs = [UserMessage("hi"), AssistantMessage("hello")]
    assert decode_messages(encode_messages(iter(msgs))) == decode_messages(encode_messages(tuple(msgs))) == msgs


def test_clients_made_for_one_provider() -> None:
    assert OpenAIClient(api_key="k").provider == "openai" and AsyncAnthropicClient(api_key="k").provider == "anthropic"
    assert OpenAIClient("openai", api_key="k").provider == "openai"
    with pytest.raises(ValueError, match="AnthropicClient is for anthropic, got provider 'openai'"):
        AnthropicClient("openai", api_key="k")  # was a bare TypeError (the provider given twice)
    with pytest.raises(ValueError, match="a provider is required: one of openai, "):
        Client(api_key="k")


def test_a_stream_given_as_text_is_read_as_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """encode_sse returns a str, and reduce_stream(encode_sse(events)) is the natural call: a str was read as
    an iterable of one-character chunks (the same messages, about 150 times slower), and a lone surrogate in
    it was a bare UnicodeEncodeError."""
    reply = AssistantMessage("hello world " * 2000)
    events = emit_events(reply, chunk_size=10)
    chunks: list[int] = []
    real = stream_module._chunks

    def counted(source: Any) -> Any:
        for chunk in real(source):
            chunks.append(len(chunk))
            yield chunk

    monkeypatch.setattr(stream_module, "_chunks", counted)
    for text in (encode_sse(events), "".join(json.dumps(e) + "\n" for e in events)):
        chunks.clear()
        assert [m.content for m in reduce_stream(text)] == [reply.content]
        assert len(chunks) <= len(text.encode()) // stream_module.CHUNK + 2  # was one per character
        assert [e["type"] for e in read_events(text)] == [e["type"] for e in events]

    reducer = Reducer()
    (msg,) = reduce_stream(
        '{"type": "TEXT_BLOCK_DELTA", "id": "e1", "blockId": "t", "delta": "\ud800"}\n', reducer=reducer
    )
    assert set(msg.text_content) == {"\ufffd"} and [p.rule for p in reducer.problems][:1] == ["utf-8"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"type": "TEXT_BLOCK_DELTA"}\n', "got str (JSON text: reduce_stream reads"),
        (b'{"type": "TEXT_BLOCK_DELTA"}\n', "got bytes (JSON text"),
        ({"type": "AGENT_START", "id": "e1", "replyId": "r"}, "got dict (one event: feed(event)"),
    ],
)
def test_events_given_as_text_or_one_event_are_a_mistake_not_a_stream(value: Any, says: str) -> None:
    """Reduced to nothing before (each character or key a problem no caller of reduce_events can see)."""
    for call in (lambda: reduce_events(value), lambda: Reducer().feed_many(value)):
        with pytest.raises(ValidationError) as info:
            call()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("", "type") and says in problem.message
    assert reduce_events(iter(emit_events(AssistantMessage("hi"))))[0].text_content == "hi"  # any iterable


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
@pytest.mark.parametrize("key", ["functionDeclarations", "function_declarations"])
def test_gemini_shaped_tools_say_what_to_give(provider: str, key: str) -> None:
    """Was: /tools/0/name: a tool needs a non-empty string name (the wrapper has none)."""
    tools = [{key: [{"name": "get_weather", "parameters": {"type": "object"}}]}]
    with pytest.raises(ValidationError) as info:
        get(provider).format_request([UserMessage("hi")], model="m", tools=tools)
    (problem,) = info.value.problems
    assert problem.pointer == "/tools/0" and "Gemini's tools wrapper" in problem.message
    assert "give each declaration in it as a tool" in problem.message
    ok = get(provider).format_request([UserMessage("hi")], model="m", tools=tools[0][key])  # as it says
    assert "get_weather" in ok.body_bytes().decode()


def test_usage_dict_with_attribute_names_is_refused_by_constructors() -> None:
    """{"input_tokens": 5} was kept as an unknown key: usage.input_tokens None, the count lost in silence."""
    with pytest.raises(ValidationError) as info:
        AssistantMessage("hi", usage={"input_tokens": 5, "outputTokens": 2})
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == (
        "/usage/input_tokens",
        "wire-name",
    ) and "'inputTokens'" in problem.message
    usage = AssistantMessage("hi", usage={"inputTokens": 5, "outputTokens": 2}).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (5, 2)
    # Readers keep such a key as they keep every key the schema does not declare (another producer's).
    read = Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [], "usage": {"input_tokens": 5}})
    assert read.usage is not None and read.usage.unknown_keys == {"input_tokens": 5}


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: emit_events([AssistantMessage("hi")]), "got list: one message at a time"),  # AttributeError
        (lambda: emit_events({"role": "ASSISTANT", "content": []}), "got dict: Msg.from_dict reads one"),
        (lambda: encode_sse(AssistantMessage("hi")), "got AssistantMessage: a message's events are emit_events"),
        (lambda: encode_sse(emit_events(AssistantMessage("hi"))[0]), "got dict: one event: encode_sse_event"),
    ],
)
def test_emitting_the_wrong_thing_says_what_to_call(call: Any, says: str) -> None:
    """Bare AttributeError / TypeError before (and a dict given to encode_sse: one problem per key)."""
    with pytest.raises(ValidationError) as info:
        call()
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == ("", "type") and says in problem.message


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: agentmsg.validate(UserMessage("hi")), "a UserMessage is not a JSON value (its to_dict() is)"),
        (lambda: Msg.from_dict(UserMessage("hi")), "a UserMessage is not a JSON value (its to_dict() is)"),  # type: ignore[arg-type]
        (lambda: agentmsg.block_from_dict(TextBlock(text="x")), "(agentmsg.block_to_dict(block) is)"),  # type: ignore[arg-type]
        (lambda: UserMessage("hi", metadata={"b": TextBlock(text="x")}), "(agentmsg.block_to_dict(block) is)"),
    ],
)
def test_an_sdk_object_given_for_json_says_what_gives_its_json(call: Any, says: str) -> None:
    """``agentmsg.validate(msg)`` after mutating it (the README says validate re-checks) said only that a
    UserMessage is not a JSON value."""
    with pytest.raises(ValidationError) as info:
        call()
    (problem,) = info.value.problems
    assert problem.rule == "json-value" and says in problem.message


@pytest.mark.parametrize("provider", sorted(SPECS))
def test_chat_without_an_api_key_names_the_variable_to_set(
    provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said 'pass api_key= or set ...' (a Python keyword a command line has not); --help said nothing of
    the key."""
    for spec in SPECS.values():
        for name in spec.env:
            monkeypatch.delenv(name, raising=False)
    assert cli_main(["chat", "--provider", provider, "--base-url", "http://127.0.0.1:9", "hi"]) == 1
    err = capsys.readouterr().err
    assert err == f"agentmsg: {provider}: no API key: set {' or '.join(SPECS[provider].env)}\n"
    assert cli_main(["chat", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(f"{name}" in help_text for name in SPECS[provider].env)


def test_every_public_name_is_documented() -> None:
    """A new user looks a name up in the README and docs/, and in help(): OpenAIClient, block_to_json,
    thinking_provider, FormattedRequest, LOSSY, SSEEvent ... were in neither, or had no docstring."""
    import agentmsg.clients
    import agentmsg.events
    import agentmsg.providers

    root = Path(__file__).resolve().parent.parent
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
