"""The parser option ``think_tags`` (``providers/_response/think.py``): ``<think>...</think>`` in a reply's text read as
thinking blocks, in every provider's stream and whole replies alike, whatever the chunk boundaries; the default path
untouched. The recorded replies with tags are in tests/providers/openai/test_think_recorded.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import Msg, TextBlock, ThinkingBlock, reduce_events
from agentmsg.providers import get
from agentmsg.providers._response.builder import StreamBuilder
from agentmsg.providers._response.think import ThinkTagBuilder
from tests._support.budget import examples
from tests._support.providers import ANT_START, dsc, ev, gem_sse, oai, one, split

Blocks = list[tuple[str, str]]


def blocks(msg: Msg) -> Blocks:
    """The message's content as (type, text) pairs."""
    out = []
    for b in msg.content:
        if isinstance(b, ThinkingBlock):
            out.append(("thinking", b.thinking))
        else:
            out.append((b.type, getattr(b, "text", "")))
    return out


def reference(text: str, mode: bool | str) -> Blocks:
    """The documented reading of a whole text, written independently of the streaming splitter: the text between
    the tags is thinking (its surrounding whitespace left out), the text after ``</think>`` starts at its first
    non-space character, an unclosed ``<think>`` runs to the end; ``"open"``: the reply starts inside, a ``<think>``
    that opens it anyway left out."""
    inside = mode == "open"
    if inside and text.lstrip().startswith("<think>"):
        text = text.lstrip()[len("<think>") :]
    out: Blocks = []
    pos, after_tag = 0, False
    while True:
        tag = "</think>" if inside else "<think>"
        at = text.find(tag, pos)
        piece = text[pos:] if at < 0 else text[pos:at]
        piece = piece.strip() if inside else piece.lstrip() if after_tag else piece
        if piece:
            out.append(("thinking" if inside else "text", piece))
        if at < 0:
            return out
        pos, inside, after_tag = at + len(tag), not inside, True


# ---- each provider's stream and whole reply ------------------------------------------------------------------


def _whole(provider: str, text: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
    if provider == "gemini":
        parts = [{"text": text}]
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        return {"candidates": [candidate], "responseId": "g1", "modelVersion": "gemini-x"}  # (as gem_sse's)
    if provider == "dashscope":
        message = {"role": "assistant", "content": text}
        return {"output": {"choices": [{"message": message, "finish_reason": "stop"}]}, "request_id": "r1"}
    message = {"role": "assistant", "content": text}
    return {"id": "c1", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def _stream(provider: str, parts: list[str]) -> bytes:
    if provider == "anthropic":
        deltas = b"".join(ev("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in parts)
        end = ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2})
        return ANT_START + deltas + ev("content_block_stop", index=0) + end + ev("message_stop")
    if provider == "gemini":
        return b"".join(gem_sse(p) for p in parts) + gem_sse("", "STOP")
    if provider == "dashscope":
        return b"".join(dsc(p) for p in parts) + dsc("", "stop")
    return b"".join(oai(p) for p in parts if p) + oai(finish="stop") + b"data: [DONE]\n\n"


PROVIDERS = ["openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"]
_OPTIONS = {"dashscope": {"incremental": True}}


def streamed(provider: str, parts: list[str], mode: bool | str = True, **options: Any) -> Msg:
    body = _stream(provider, parts)
    options = {**_OPTIONS.get(provider, {}), **options}
    (msg,) = reduce_events(list(get(provider).parse_stream(body, think_tags=mode, **options)))
    return msg


def whole(provider: str, text: str, mode: bool | str = True) -> Msg:
    return get(provider).parse_response(_whole(provider, text), think_tags=mode)


REPLY = "<think>\nThe user greets me.\nI answer.\n</think>\n\nHello! How can I help?"
CUT_TAGS = ["<th", "ink>\nThe user greets me.\nI ans", "wer.\n</", "think", ">\n", "\nHello! How can I help?"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_reads_the_tags_streamed_and_whole_alike(provider: str) -> None:
    want = [("thinking", "The user greets me.\nI answer."), ("text", "Hello! How can I help?")]
    assert "".join(CUT_TAGS) == REPLY
    stream = streamed(provider, CUT_TAGS)
    reply = whole(provider, REPLY)
    assert blocks(stream) == blocks(reply) == want
    assert stream.content == reply.content  # provenance metadata too
    assert stream.generate_reason == reply.generate_reason


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_the_option_the_tags_are_text(provider: str) -> None:
    body = _stream(provider, CUT_TAGS)
    options = _OPTIONS.get(provider, {})
    (stream,) = reduce_events(list(get(provider).parse_stream(body, **options)))
    assert blocks(stream) == blocks(get(provider).parse_response(_whole(provider, REPLY))) == [("text", REPLY)]
    assert type(get(provider).stream_parser(think_tags=False).builder) is StreamBuilder
    assert type(get(provider).stream_parser().builder) is StreamBuilder  # the default path: the plain builder
    assert type(get(provider).stream_parser(think_tags=True).builder) is ThinkTagBuilder


@pytest.mark.parametrize(
    ("text", "mode", "want"),
    [
        # the seed's example, which AgentScope Java 2.0.0 leaves as one text block (agentscope-java-wire.md 4.1)
        ("<think>a</think>Hello", True, [("thinking", "a"), ("text", "Hello")]),
        ("<think>\n\n</think>\n\nHello", True, [("text", "Hello")]),  # a model that did not reason
        ("Hi <think>x</think> there", True, [("text", "Hi "), ("thinking", "x"), ("text", "there")]),
        (
            "<think>a</think>b<think>c</think>d",
            True,
            [("thinking", "a"), ("text", "b"), ("thinking", "c"), ("text", "d")],
        ),
        ("<think>\nstill thinking when the reply ended", True, [("thinking", "still thinking when the reply ended")]),
        ("a</think>b", True, [("text", "a</think>b")]),  # a closing tag alone is text
        ("1 < 2 <thinking> <th", True, [("text", "1 < 2 <thinking> <th")]),  # near misses are text, held or not
        ("<think>a<think>b</think>c", True, [("thinking", "a<think>b"), ("text", "c")]),
        ("<think>  keep  inner  space  </think>x", True, [("thinking", "keep  inner  space"), ("text", "x")]),
        ("reasoning\n</think>\n\nanswer", "open", [("thinking", "reasoning"), ("text", "answer")]),
        ("\n<think>\nreasoning</think>answer", "open", [("thinking", "reasoning"), ("text", "answer")]),
        ("all reasoning", "open", [("thinking", "all reasoning")]),
        ("</think>\n\nno reasoning", "open", [("text", "no reasoning")]),
        ("r</think>a<think>s</think>b", "open", [("thinking", "r"), ("text", "a"), ("thinking", "s"), ("text", "b")]),
    ],
)
def test_what_the_tags_give(text: str, mode: bool | str, want: Blocks) -> None:
    assert reference(text, mode) == want
    assert blocks(whole("openai", text, mode)) == want
    for size in (1, 2, 3, 5):
        parts = [text[i : i + size] for i in range(0, len(text), size)]
        assert blocks(streamed("openai", parts, mode)) == want, size


def test_a_tag_cut_at_every_point_of_a_reply() -> None:
    """Every way of cutting the reply in two, and every way of cutting it in three around each tag (the tag's
    pieces in three payloads: ``<th`` + ``in`` + ``k>``), gives the whole reply's message."""
    want = blocks(whole("openai", REPLY))
    for i in range(len(REPLY) + 1):
        assert blocks(streamed("openai", [REPLY[:i], REPLY[i:]])) == want, i
    for tag in ("<think>", "</think>"):
        at = REPLY.index(tag)
        for i in range(max(0, at - 1), at + len(tag) + 1):
            for j in range(i, at + len(tag) + 2):
                parts = [REPLY[:i], REPLY[i:j], REPLY[j:]]
                assert blocks(streamed("openai", parts)) == want, (i, j)


_PIECES = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<",
        "</",
        "<th",
        "ink>",
        "think",
        ">",
        "/",
        " ",
        "\n",
        "\t",
        "a",
        "b c",
        "好",
        "😊",
        "<thinking>",
    ]
)


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), text=st.lists(_PIECES, max_size=24).map("".join), mode=st.sampled_from([True, "open"]))
def test_any_text_cut_anywhere_is_the_whole_reply(data: st.DataObject, text: str, mode: bool | str) -> None:
    """Texts built of tags, their pieces and whitespace, cut at any points: the stream gives the whole reply's
    message, which is the reference reading of the text."""
    parts = data.draw(split(text))
    want = reference(text, mode)
    assert blocks(whole("openai", text, mode)) == want
    assert blocks(streamed("openai", parts, mode)) == want
    provider = data.draw(st.sampled_from(["anthropic", "gemini", "dashscope"]))
    assert blocks(streamed(provider, parts, mode)) == want


# ---- the text held back keeps its place ------------------------------------------------------------------------


def _oai_chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> bytes:
    return oai(choices=[{"index": index, "delta": delta, "finish_reason": finish}])


def test_a_tag_beginning_before_a_tool_call_stays_before_it() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = (
        _oai_chunk({"content": "1 <"})
        + _oai_chunk({"tool_calls": [call]})
        + _oai_chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    (msg,) = reduce_events(list(get("openai").parse_stream(body, think_tags=True)))
    reply = {"role": "assistant", "content": "1 <", "tool_calls": [call]}
    response = {"id": "c1", "model": "m", "choices": [{"index": 0, "message": reply, "finish_reason": "tool_calls"}]}
    assert [b.type for b in msg.content] == ["text", "tool_use"] and one(TextBlock, msg.content[0]).text == "1 <"
    assert msg.content == get("openai").parse_response(response, think_tags=True).content


def test_a_cut_stream_keeps_a_tag_beginning_as_text() -> None:
    body = oai("Hello <th")  # and then nothing: no finish, no [DONE]
    (msg,) = reduce_events(list(get("openai").parse_stream(body, think_tags=True)))
    assert blocks(msg) == [("text", "Hello <th")]
    assert msg.generate_reason.value == "INTERRUPTED"


def test_choices_are_read_apart() -> None:
    body = (
        _oai_chunk({"content": "<th"}, index=0)
        + _oai_chunk({"content": "x <"}, index=1)
        + _oai_chunk({"content": "ink>a</think>b"}, index=0)
        + _oai_chunk({"content": "think>y"}, index=1)
        + _oai_chunk({}, "stop", index=0)
        + _oai_chunk({}, "stop", index=1)
        + b"data: [DONE]\n\n"
    )
    events = list(get("openai").parse_stream(body, think_tags=True))
    assert blocks(reduce_events(events)[0]) == [("thinking", "a"), ("text", "b")]
    assert blocks(reduce_events(events, source="choice/1")[0]) == [("text", "x "), ("thinking", "y")]


def test_a_reasoning_field_and_tags_give_blocks_of_their_own() -> None:
    body = (
        _oai_chunk({"reasoning_content": "field"})
        + _oai_chunk({"content": "<think>tag</think>answer"})
        + oai(finish="stop")
    )
    (msg,) = reduce_events(list(get("deepseek").parse_stream(body, think_tags=True)))
    assert blocks(msg) == [("thinking", "field"), ("thinking", "tag"), ("text", "answer")]


def test_a_refusal_is_never_read_for_tags() -> None:
    response = {
        "id": "c1",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "refusal": "<think>no</think>"}, "finish_reason": "stop"}
        ],
    }
    assert blocks(get("openai").parse_response(response, think_tags=True)) == [("text", "<think>no</think>")]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="think_tags"):
        get("openai").stream_parser(think_tags="yes")
    with pytest.raises(ValueError, match="think_tags"):
        get("openai").parse_response(_whole("openai", "x"), think_tags="closed")
