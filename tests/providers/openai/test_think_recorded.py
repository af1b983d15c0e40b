"""``think_tags`` on recorded replies of reasoning models served over an OpenAI-compatible endpoint (Qwen3-8B,
DeepSeek-R1-Distill-Qwen-7B and QwQ-32B on grps-trtllm: tests/fixtures/providers/openai/README.md). The recordings
are whole replies and the first chunks of their streams; each reply is streamed again in the recorded chunk shape,
cut at every point of its text, and must give the whole reply's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Msg, reduce_events
from agentmsg.providers import get
from tests._support.providers import FIX, said_texts

DIR = FIX / "openai"
#: fixture -> the mode its chat template needs: "open" when the template put <think> in the prompt
RECORDED = {
    "compat_think_qwen3.json": True,
    "compat_think_r1_distill_empty.json": True,
    "compat_think_r1_distill_stop.json": True,
    "compat_think_open_r1_distill.json": "open",
    "compat_think_open_r1_distill_stop.json": "open",
    "compat_think_open_qwq.json": "open",
}
HEAD = orjson.loads((DIR / "compat_think_qwen3_stream_head.txt").read_bytes().splitlines()[1][len(b"data: ") :])


def blocks(msg: Msg) -> list[tuple[str, str]]:
    return said_texts(msg.content)


def content(name: str) -> str:
    text: str = orjson.loads((DIR / name).read_bytes())["choices"][0]["message"]["content"]
    return text


def restream(name: str, parts: list[str]) -> bytes:
    """The recorded reply as its server streams it: the recorded chunk shape (grps-trtllm's, the stream heads'), a
    role on the first, one ``delta.content`` each, then the finish reason and ``[DONE]``."""
    reply = orjson.loads((DIR / name).read_bytes())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**HEAD, "id": reply["id"], "model": reply["model"]}
        body["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return b"data: " + orjson.dumps(body) + b"\n\n"

    first = [chunk({"role": "assistant", "content": parts[0]})] if parts else []
    rest = [chunk({"content": p}) for p in parts[1:] if p]
    return b"".join([*first, *rest, chunk({}, reply["choices"][0]["finish_reason"]), b"data: [DONE]\n\n"])


def parsed(name: str, mode: bool | str) -> Msg:
    return get("openai").parse_response((DIR / name).read_bytes(), think_tags=mode)


def streamed(body: bytes, mode: bool | str) -> Msg:
    (msg,) = reduce_events(list(get("openai").parse_stream(body, think_tags=mode)))
    return msg


def test_the_recorded_replies_give_reasoning_and_answer() -> None:
    qwen3 = blocks(parsed("compat_think_qwen3.json", True))
    assert [kind for kind, _ in qwen3] == ["thinking", "text"]
    assert qwen3[0][1].startswith("好的，用户问") and qwen3[0][1].endswith("现在把这些整理成一个自然流畅的回答。")
    assert qwen3[1][1].startswith("你好！我是通义千问") and qwen3[1][1].endswith("😊")
    # <think>\n\n</think>: the model did not reason, and the message holds no empty thinking block
    assert blocks(parsed("compat_think_r1_distill_empty.json", True)) == [
        ("text", content("compat_think_r1_distill_empty.json").split("</think>\n\n")[1])
    ]
    # ended by a stop sequence in the reasoning: no </think>, all reasoning
    assert blocks(parsed("compat_think_r1_distill_stop.json", True)) == [
        ("thinking", "嗯，用户发来的信息是“重复1234#END#")
    ]


@pytest.mark.parametrize("name", [n for n, mode in RECORDED.items() if mode == "open"])
def test_a_template_that_opens_the_reasoning_needs_open(name: str) -> None:
    """DeepSeek-R1's and QwQ's current templates put ``<think>`` in the prompt: the reply only closes it."""
    text = content(name)
    assert "<think>" not in text
    reasoning, closed, answer = text.partition("</think>")
    want = [("thinking", reasoning.strip())] + ([("text", answer.lstrip())] if closed else [])
    assert blocks(parsed(name, "open")) == want
    assert blocks(parsed(name, True)) == [("text", text)]  # in pairs, a closing tag alone is text


@pytest.mark.parametrize(("name", "mode"), RECORDED.items())
def test_the_recorded_replies_streamed_cut_anywhere_give_the_same_message(name: str, mode: bool | str) -> None:
    """Every cut of the reply's text in two, and its text one character a chunk (finer than any tokenizer): the
    message of the whole reply, blocks and their provenance."""
    want = parsed(name, mode)
    text = content(name)
    for i in range(len(text) + 1):
        msg = streamed(restream(name, [text[:i], text[i:]]), mode)
        assert msg.content == want.content, i
    msg = streamed(restream(name, list(text)), mode)
    assert msg.content == want.content
    assert msg.generate_reason == want.generate_reason and msg.usage is None  # (the restream has no usage)


def test_the_recorded_stream_heads_begin_the_recorded_replies() -> None:
    """The recorded first chunks (printed one line each, without the blank lines between events: read one by one
    and said) begin what the whole reply gives: Qwen3's reasoning, and R1's empty one (no block)."""
    (qwen3,) = reduce_events(
        list(get("openai").parse_stream((DIR / "compat_think_qwen3_stream_head.txt").read_bytes(), think_tags=True))
    )
    assert blocks(qwen3) == [("thinking", "好的")]
    assert blocks(parsed("compat_think_qwen3.json", True))[0][1].startswith("好的")
    r1_head = (DIR / "compat_think_r1_distill_stream_head.txt").read_bytes()
    assert [orjson.loads(line[6:])["choices"][0]["delta"]["content"] for line in r1_head.splitlines()] == [
        "<think>",
        "\n\n",
        "</think>",
    ]
    (r1,) = reduce_events(list(get("openai").parse_stream(r1_head, think_tags=True)))
    assert blocks(r1) == []


def test_without_the_option_the_recorded_replies_are_text() -> None:
    for name in RECORDED:
        assert blocks(get("openai").parse_response((DIR / name).read_bytes())) == [("text", content(name))]


def _names() -> list[Path]:
    return sorted(DIR.glob("compat_think_*"))


def test_every_think_fixture_is_tested_and_listed() -> None:
    readme = (DIR / "README.md").read_text(encoding="utf-8")
    for path in _names():
        assert f"`{path.name}`" in readme, path.name
        assert path.name in RECORDED or path.suffix == ".txt", path.name
