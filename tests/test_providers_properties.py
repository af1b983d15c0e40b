"""Property tests over generated conversations: for every provider, formatting either raises the SDK's
ValidationError or gives a body its oracle accepts, deterministically; diagnostics use known rules and
point into the input; signed reasoning reaches Anthropic byte for byte."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg import (
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
)
from agentmsg.providers import NAMES, RULES, get
from tests._support.budget import examples
from tests.oracles import check

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
ident = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=10)
b64 = st.sampled_from(["", "AAAA", "iVBORw0KGgo=", "UklGRiQAAABXQVZF"])
mime = st.sampled_from(
    [
        "image/png",
        "image/jpeg",
        "image/heic",
        "audio/wav",
        "audio/mpeg",
        "audio/ogg",
        "video/mp4",
        "application/pdf",
        "text/plain",
        "application/zip",
    ]
)
urls = st.sampled_from(
    [
        "https://example.com/a.png",
        "https://example.com/b.mp3",
        "https://example.com/c",
        "gs://bucket/x.mp4",
        "oss://b/y.jpg",
    ]
)
sources = st.builds(URLSource, url=urls, mime_type=st.none() | mime) | st.builds(
    Base64Source, media_type=mime, data=b64
)
pixels = st.none() | st.integers(0, 10**6)
media = st.one_of(
    st.builds(ImageBlock, source=sources, min_pixels=pixels, max_pixels=pixels),
    st.builds(AudioBlock, source=sources),
    st.builds(VideoBlock, source=sources, fps=st.none() | st.floats(0.1, 30), max_frames=pixels),
    st.builds(DataBlock, source=sources, name=st.none() | ident),
)
call_ids = st.sampled_from(["call_1", "call_2", "functions.f:0", "toolu_9", "", "x" * 80, "call 3"])
tool_names = st.sampled_from(["get_weather", "search", "bad name!", "ns.tool"])
signed = st.fixed_dictionaries(
    {},
    optional={
        "signature": ident,
        "provider": st.sampled_from(["anthropic", "openai", "gemini", "dashscope", "deepseek"]),
        "redacted": st.booleans(),
        "redactedData": ident,
    },
)
thinking = st.builds(ThinkingBlock, thinking=text, metadata=st.none() | signed)
tool_use = st.builds(
    ToolUseBlock,
    id=call_ids,
    name=tool_names,
    input=st.dictionaries(ident, st.integers(min_value=-(2**63), max_value=2**64 - 1) | text, max_size=2),
    content=st.none() | st.sampled_from(['{"a": 1}', "{", "[]"]),
    metadata=st.fixed_dictionaries(
        {},
        optional={
            "thoughtSignature": st.sampled_from(["c2ln", "QUJD"]),
            "provider": st.sampled_from(["gemini", "openai"]),
        },
    ),
)
tool_result = st.builds(
    ToolResultBlock,
    id=call_ids,
    name=st.none() | tool_names,
    output=st.lists(st.builds(TextBlock, text=text) | media, max_size=3),
    state=st.sampled_from(["success", "error", "running", "denied"]),
)
user = st.builds(UserMessage, st.lists(st.builds(TextBlock, text=text) | media, max_size=3), name=st.none() | ident)
assistant = st.builds(
    AssistantMessage,
    st.lists(
        st.builds(TextBlock, text=text) | thinking | tool_use | st.builds(HintBlock, hint=text) | tool_result | media,
        max_size=4,
    ),
    name=st.none() | st.sampled_from(["Bob", "Alice", "Agent 7"]),
)
tool_msg = st.builds(ToolResultMessage, st.lists(tool_result, min_size=1, max_size=3))
system = st.builds(SystemMessage, st.lists(st.builds(TextBlock, text=text), max_size=2))
conversations = st.lists(st.one_of(user, assistant, tool_msg, system), max_size=8)
kwargs = st.fixed_dictionaries(
    {},
    optional={
        "multi_agent": st.booleans(),
        "agent_name": st.sampled_from(["Bob", "Alice"]),
        "stream": st.booleans(),
        "options": st.fixed_dictionaries(
            {},
            optional={
                "repair": st.booleans(),
                "reasoning": st.sampled_from(["drop", "text"]),
                "multi_agent_layout": st.sampled_from(["prefix", "history"]),
                "missing_thought_signature": st.sampled_from(["auto", "omit", "skip"]),
            },
        ),
    },
)
TOOLS = [
    {"name": n, "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    for n in ("get_weather", "search", "bad name!")
]


@pytest.mark.parametrize("provider", NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=conversations, kw=kwargs)
def test_any_conversation_formats_or_is_refused(provider: str, msgs: list[Any], kw: dict[str, Any]) -> None:
    fmt = get(provider).format_request
    try:
        request = fmt(msgs, tools=TOOLS, **kw)
    except ValidationError as exc:
        assert exc.problems and all(p.pointer == "" or p.pointer.startswith("/") for p in exc.problems)
        return
    again = fmt(msgs, tools=TOOLS, **kw)
    assert again.body_bytes() == request.body_bytes() and again.diagnostics == request.diagnostics
    for p in request.diagnostics:
        assert p.rule in RULES
        head = p.pointer.split("/")[1]
        assert head in ("tools", "tool_choice", "params") or int(head) < len(msgs)
    problems = check(provider, request)
    assert not problems, problems


@settings(max_examples=80, deadline=None)
@given(sig=st.text(min_size=1, max_size=200), thought=text, data=st.text(min_size=1, max_size=50))
def test_signed_reasoning_reaches_anthropic_byte_for_byte(sig: str, thought: str, data: str) -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                TextBlock(text="first"),
                ThinkingBlock(thinking=thought, metadata={"signature": sig, "provider": "anthropic"}),
                ThinkingBlock(thinking="", metadata={"redacted": True, "redactedData": data}),
                ToolUseBlock(id="c", name="get_weather", input={}),
            ]
        ),
        ToolResultMessage(ToolResultBlock(id="c", name="get_weather", output="ok", state="success")),
    ]
    request = get("anthropic").format_request(msgs, tools=TOOLS)
    content = json.loads(request.body_bytes())["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": thought, "signature": sig}
    assert content[1] == {"type": "redacted_thinking", "data": data}


_JSON_STRING_PIECES = [r"\ud83d", r"\ude00", r"\uD83D", r"\uDE00", r"\\", r"\\ud83d", "a", r"\n", r"\u00e9", "é", r"\""]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_JSON_STRING_PIECES), max_size=12))
def test_lone_surrogate_escapes_become_replacement_characters(pieces: list[str]) -> None:
    """What a payload with lone surrogate escapes is read as (providers/_response/parser.py): the string JSON's
    grammar gives (the stdlib reader, which keeps lone surrogates), each lone one as U+FFFD; pairs whole."""
    import re

    from agentmsg.providers._response.parser import _without_lone_surrogates

    data = '{"a":"' + "".join(pieces) + '"}'
    expected = re.sub("[\ud800-\udfff]", "\ufffd", json.loads(data)["a"])
    fixed = _without_lone_surrogates(data)
    assert orjson.loads(data if fixed is None else fixed)["a"] == expected


def _general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off the fast paths of user messages (a message of texts and usual images built in one pass, a
    usual image part made without its pointer): every user message then goes through Walk.user_parts and each
    media block through the provider's media resolution."""
    from agentmsg.providers._request import chat as _chat
    from agentmsg.providers._request import walk as _walk

    monkeypatch.setattr(_chat.ChatWalk, "_usual_user_parts", lambda self, blocks: None)
    for cls in (_walk.Walk, *_subclasses(_walk.Walk)):
        if "inline_image" in vars(cls):
            monkeypatch.setattr(cls, "inline_image", lambda self, block: None)


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


usual_image = st.builds(
    ImageBlock,
    source=st.builds(Base64Source, media_type=st.sampled_from(["image/png", "image/jpeg", "image/heic"]), data=b64),
    min_pixels=st.none() | st.none() | st.just(1024),
)
usual_text = st.builds(TextBlock, text=st.text(min_size=1, max_size=10) | st.text(min_size=1, max_size=10) | text)
# mostly the usual user message (texts and base64 images), sometimes one the fast path leaves to user_parts
usual_user = st.builds(
    UserMessage,
    st.lists(usual_text | usual_image | usual_text | usual_image | media, min_size=1, max_size=4),
    name=st.none() | st.sampled_from(["alice", "Bob", "bad name!"]),
)


@pytest.mark.parametrize("provider", NAMES)
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    msgs=st.lists(st.one_of(usual_user, usual_user, usual_user, assistant, tool_msg), min_size=1, max_size=5), kw=kwargs
)
def test_user_fast_paths_give_what_the_general_way_gives(provider: str, msgs: list[Any], kw: dict[str, Any]) -> None:
    """The same body and diagnostics (or the same refusal) with the fast paths of user messages as without."""
    fmt = get(provider).format_request
    try:
        fast: Any = fmt(msgs, **kw)
    except ValidationError as exc:
        fast = exc.problems
    with pytest.MonkeyPatch.context() as mp:
        _general_way(mp)
        try:
            general: Any = fmt(msgs, **kw)
        except ValidationError as exc:
            general = exc.problems
    assert fast == general
