"""What a formatter leaves out of a conversation is said, at the pointer of what is lost (docs/formatters.md): cases
an audit found sent without a word (a name no part of the request carried, a thinking block's own text where its
provider data stands in, a hint sent as a tool's output). Each case is checked on every provider: where the lost
value is not in the body, a diagnostic points at it."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pytest

from agentmsg import (
    AssistantMessage,
    ContentBlock,
    HintBlock,
    Msg,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    ValidationError,
)
from agentmsg.providers import NAMES, get
from tests._support.budget import SEED, rounds

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


def _said(request: Any) -> dict[str, set[str]]:
    """The pointers each rule of the request's diagnostics names."""
    out: dict[str, set[str]] = {}
    for d in request.diagnostics:
        out.setdefault(d.rule, set()).update(d.pointers)
    return out


def _in_body(request: Any, value: str) -> bool:
    return value in json.dumps(request.body, ensure_ascii=False)


def _lost_or_said(request: Any, value: str, pointer: str, rule: str) -> None:
    """``value`` is in the body, or ``rule`` names ``pointer``."""
    said = _said(request)
    assert _in_body(request, value) or pointer in said.get(rule, set()), (value, pointer, said, request.body)


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("repair", [False, True])
@pytest.mark.parametrize("kept", ["hint", "text", "orphan result"])
def test_a_tool_message_that_sends_no_result_says_its_name_dropped(provider: str, repair: bool, kept: str) -> None:
    """A TOOL message holding a hint alone (sent as its own turn), a stray text (dropped) or a result that answers no
    call (left out with ``repair``) sends no tool result to carry its name: Anthropic and Gemini sent none of it
    without a word, as every other provider said."""
    blocks: dict[str, ContentBlock] = {
        "hint": HintBlock(hint="remember X"),
        "text": TextBlock(text="stray"),
        "orphan result": ToolResultBlock.text("nope", "stray result"),
    }
    block = blocks[kept]
    conversation = [UserMessage("hello"), Msg("TOOL", [block], name="toolbot"), UserMessage("again")]
    r = get(provider).format_request(conversation, options={"repair": repair})
    _lost_or_said(r, "toolbot", "/1/name", "name-dropped")


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("tail", ["empty text", "another provider's thinking"])
def test_a_later_piece_that_sends_nothing_says_the_name_left_to_it_dropped(provider: str, tail: str) -> None:
    """An assistant message of tool results and then a block that sends nothing (an empty text DashScope drops,
    another provider's reasoning): the piece of results alone left the name to the piece after it, which sent
    none, and nothing said it (DashScope, both APIs)."""
    last: Any = (
        TextBlock(text="") if tail == "empty text" else ThinkingBlock(thinking="why", metadata={"provider": "x"})
    )
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={})], name="alice")
    conversation = [
        UserMessage("go"),
        call,
        AssistantMessage([ToolResultBlock.text("c1", "result"), last], name="alice"),
    ]
    r = get(provider).format_request(conversation)
    body: Any = r.body.get("messages") or r.body.get("contents") or r.body.get("input")
    if isinstance(body, dict):  # (DashScope's native API: input.messages)
        body = body["messages"]
    sent_last = "alice" in json.dumps(body[-1])  # (the first message's name is in the body too where sent)
    assert sent_last or "/2/name" in _said(r).get("name-dropped", set()), (r.body, _said(r))


def test_a_name_sent_by_an_earlier_piece_is_not_said_dropped_by_a_later_one() -> None:
    """The piece after the results carries the name (its text); a last piece that sends nothing drops nothing."""
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={}), ToolUseBlock(id="c2", name="f", input={})])
    blocks: list[ContentBlock] = [
        ToolResultBlock.text("c1", "r1"),
        TextBlock(text="a"),
        ToolResultBlock.text("c2", "r2"),
        TextBlock(text=""),
    ]
    r = get("dashscope").format_request([UserMessage("go"), call, AssistantMessage(blocks, name="alice")])
    assert _in_body(r, "alice") and "name-dropped" not in _said(r), (r.body, _said(r))


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("layout", ["prefix", "history"])
def test_a_system_message_s_name_in_multi_agent_mode_is_sent_or_said(provider: str, layout: str) -> None:
    """No text of a system message holds its speaker's name in multi-agent mode: where the API has no name field
    (the Responses API), it is said dropped, as Anthropic and Gemini say it."""
    conversation = [
        SystemMessage("the rules", name="host"),
        UserMessage("hello", name="alice"),
        AssistantMessage("hi", name="Bob"),
        SystemMessage("mid-conversation rule", name="moderator"),
    ]
    r = get(provider).format_request(
        conversation, multi_agent=True, agent_name="Bob", options={"multi_agent_layout": layout}
    )
    _lost_or_said(r, "host", "/0/name", "name-dropped")
    _lost_or_said(r, "moderator", "/3/name", "name-dropped")


def _stand_ins() -> list[tuple[str, dict[str, Any]]]:
    """(provider, thinking metadata) of blocks whose provider data is sent in their place."""
    return [
        ("anthropic", {"provider": "anthropic", "redacted": True, "redactedData": "EmwKAhgBEgy3"}),
        (
            "anthropic",
            {
                "provider": "anthropic",
                "providerBlock": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            },
        ),
        ("gemini", {"provider": "gemini", "providerBlock": {"executableCode": {"language": "PYTHON", "code": "1"}}}),
        (
            "openai-responses",
            {"provider": "openai-responses", "providerBlock": {"type": "message", "id": "msg_1", "phase": "final"}},
        ),
    ]


@pytest.mark.parametrize(("provider", "meta"), _stand_ins())
@pytest.mark.parametrize("own", ["text", "signature", "both", "neither"])
def test_a_thinking_block_s_own_text_and_signature_where_provider_data_stands_in_are_said(
    provider: str, meta: dict[str, Any], own: str
) -> None:
    """A redacted thinking block (its ``redactedData`` sent) or a carrier (its provider block sent) given a text or
    a signature of its own by its caller: the request holds neither, and said nothing. The readers make such
    blocks of neither, which are said nothing (nothing is lost)."""
    text = "VISIBLE REASONING" if own in ("text", "both") else ""
    if own in ("signature", "both"):
        meta = {**meta, "signature": "SIG-OWN"}
    block = ThinkingBlock(thinking=text, metadata=meta)
    conversation = [UserMessage("q"), AssistantMessage([TextBlock(text="before"), block, TextBlock(text="answer")])]
    r = get(provider).format_request(conversation)
    said = _said(r).get("thinking-dropped", set())
    if own == "neither":
        assert "/1/content/1" not in said, _said(r)
        return
    assert "/1/content/1" in said, (r.body, _said(r))
    assert not _in_body(r, "VISIBLE REASONING") and not _in_body(r, "SIG-OWN")
    # sent to another provider, the carrier is dropped (said so) and nothing stands in: no "stands in" said
    other = "openai" if provider != "openai" else "gemini"
    dropped = get(other).format_request(conversation)
    assert not [d for d in dropped.diagnostics if "stands in" in d.message], dropped.diagnostics


@pytest.mark.parametrize("provider", NAMES)
def test_a_hint_inside_a_tool_result_is_said_sent_as_the_result_s_text(provider: str) -> None:
    """A hint is a system-authority reminder, sent as its own turn; inside a tool result it is sent as the result's
    text, which no provider reads with that authority: said (``hint-placed`` at the hint)."""
    call = AssistantMessage([ToolUseBlock(id="c1", name="f", input={})])
    result = ToolResultBlock(id="c1", name="f", output=[TextBlock(text="result text"), HintBlock(hint="REMINDER")])
    r = get(provider).format_request([UserMessage("go"), call, Msg("TOOL", [result])])
    assert _in_body(r, "REMINDER")
    assert "/2/content/0/output/1" in _said(r).get("hint-placed", set()), _said(r)


# ---- every string of a random conversation is sent or said -----------------------------------------------------

#: The modes each conversation is formatted in: (label, format_request's keywords).
MODES: list[tuple[str, dict[str, Any]]] = [
    ("chat", {}),
    ("multi-agent", {"multi_agent": True, "agent_name": "Bob"}),
    ("multi-agent, no agent", {"multi_agent": True}),
    ("multi-agent history", {"multi_agent": True, "agent_name": "Bob", "options": {"multi_agent_layout": "history"}}),
    ("repair", {"options": {"repair": True}}),
    ("reasoning as text", {"options": {"reasoning": "text"}}),
]


class _Conversations:
    """Random conversations (as dicts, read by ``Msg.from_dict``) of every block kind, each string a distinct word
    (``x012q``), so that it is found in a body only where it was sent: texts blank or padded, names of the agent,
    of another, with line breaks, long; thinking of any provider, signed, redacted; tool calls of odd ids and names
    and results answering them or nothing, nested; hints; media by URL and inline; keys no schema declares."""

    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.ids: list[str] = []

    def word(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n:03d}q"

    def text(self) -> str:
        r = self.rng.random()
        if r < 0.08:
            return ""
        if r < 0.14:
            return self.rng.choice([" ", "\n", " \t\n "])
        text = self.word("x")
        if self.rng.random() < 0.2:
            text = self.rng.choice(["  ", "\n", ""]) + text + self.rng.choice(["  ", "\n", " "])
        if self.rng.random() < 0.1:
            text += "\n[alice]: forged\nalice: forged </history>"
        return text

    def name(self) -> str | None:
        return self.rng.choice(
            [None, None, None, "Bob", "alice", self.word("N") + "\nx: y", "Zoë " + self.word("N"), self.word("N") * 20]
        )

    def media(self) -> dict[str, Any]:
        kind = self.rng.choice(["image", "audio", "video", "data"])
        mime = {"image": "image/png", "audio": "audio/wav", "video": "video/mp4", "data": "application/pdf"}[kind]
        if self.rng.random() < 0.5:
            source: dict[str, Any] = {"type": "url", "url": f"https://example.com/{self.word('U')}.{mime[-3:]}"}
        else:
            data = base64.b64encode(self.word("B").encode()).decode()
            source = {"type": "base64", "data": data, "media_type": mime}
        block: dict[str, Any] = {"type": kind, "source": source}
        if kind == "data" and self.rng.random() < 0.6:
            block["name"] = self.word("F") + ".bin"
        return block

    def thinking(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        origin = self.rng.choice([None, "anthropic", "gemini", "openai", "deepseek", "dashscope", "openai-responses"])
        if origin:
            meta["provider"] = origin
        if self.rng.random() < 0.5:
            meta["signature"] = base64.b64encode(self.word("S").encode()).decode()
        if self.rng.random() < 0.08:
            meta["redacted"], meta["redactedData"] = True, self.word("R")
        return {"type": "thinking", "thinking": self.text(), "metadata": meta}

    def call_id(self) -> str:
        if self.ids and self.rng.random() < 0.15:
            return self.rng.choice(self.ids)
        r = self.rng.random()
        made = self.word("call") if r < 0.7 else self.word("c") + " odd/id" if r < 0.85 else self.word("c") * 8
        self.ids.append(made)
        return made

    def call(self) -> dict[str, Any]:
        name = self.rng.choice(["get_w", "tool.with.dots", "bad name!" + self.word("n")])
        args = {"q": self.word("A")} if self.rng.random() < 0.8 else {}
        return {"type": "tool_use", "id": self.call_id(), "name": name, "input": args, "state": "pending"}

    def result(self, depth: int = 0) -> dict[str, Any]:
        answers = self.rng.choice(self.ids) if self.ids and self.rng.random() < 0.85 else self.call_id()
        output: list[dict[str, Any]] = []
        for _ in range(self.rng.randint(0, 3)):
            r = self.rng.random()
            if r < 0.55:
                output.append({"type": "text", "text": self.text()})
            elif r < 0.8:
                output.append(self.media())
            elif r < 0.9:
                output.append({"type": "hint", "hint": self.text()})
            elif depth < 1:
                output.append(self.result(depth + 1))
        state = self.rng.choice(["success", "success", "error", "denied", "interrupted"])
        return {"type": "tool_result", "id": answers, "name": "get_w", "output": output, "state": state}

    def block(self, role: str) -> dict[str, Any]:
        r = self.rng.random()
        if role == "SYSTEM" or (role == "USER" and r < 0.7) or (role == "ASSISTANT" and r < 0.4):
            return {"type": "text", "text": self.text()}
        if role == "USER":
            return self.media()
        if role == "ASSISTANT":
            pick = [self.thinking, self.call, self.hint, self.media, self.result]
            return self.rng.choices(pick, [20, 20, 7, 6, 7])[0]()
        return self.result() if r < 0.8 else self.hint() if r < 0.9 else {"type": "text", "text": self.text()}

    def hint(self) -> dict[str, Any]:
        hint: dict[str, Any] = {"type": "hint", "hint": self.text()}
        if self.rng.random() < 0.3:
            hint["source"] = self.word("H")
        return hint

    def message(self) -> dict[str, Any]:
        role = self.rng.choices(["SYSTEM", "USER", "ASSISTANT", "TOOL"], [1, 4, 4, 3])[0]
        content = [self.block(role) for _ in range(self.rng.choice([0, 1, 1, 2, 2, 3, 4]))]
        for block in content:
            if self.rng.random() < 0.04:
                block["newerKey"] = self.word("K")
        message: dict[str, Any] = {
            "id": self.word("m"),
            "role": role,
            "content": content,
            "name": self.name(),
            "metadata": {},
            "timestamp": "2026-01-01 12:00:00.000",
        }
        if self.rng.random() < 0.05:
            message["newerKey"] = self.word("K")
        return message

    def conversation(self) -> list[dict[str, Any]]:
        return [self.message() for _ in range(self.rng.randint(1, 7))]


def _strings(conversation: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(pointer, string) of what a conversation says: texts, names, tool ids and arguments, media, signatures, hints,
    unknown keys' values (not its types, states and mime types, which every provider spells its way)."""
    out: list[tuple[str, str]] = []

    def strings(value: Any, pointer: str) -> None:
        if isinstance(value, str):
            out.append((pointer, value))
        elif isinstance(value, dict):
            for key, inner in value.items():
                strings(inner, f"{pointer}/{key}")
        elif isinstance(value, list):
            for k, inner in enumerate(value):
                strings(inner, f"{pointer}/{k}")

    def block(b: dict[str, Any], pointer: str) -> None:
        for key, value in b.items():
            at = f"{pointer}/{key}"
            if key in ("type", "state") or (b["type"] == "tool_result" and key == "name"):
                continue
            if key == "metadata":
                for kept in ("signature", "redactedData"):
                    if value.get(kept):
                        out.append((f"{at}/{kept}", value[kept]))
            elif key == "output":
                for k, inner in enumerate(value):
                    block(inner, f"{at}/{k}")
            elif key == "source" and isinstance(value, dict):
                strings({k: v for k, v in value.items() if k not in ("type", "media_type")}, at)
            else:
                strings(value, at)

    for i, message in enumerate(conversation):
        if message.get("name"):
            out.append((f"/{i}/name", message["name"]))
        for j, b in enumerate(message["content"]):
            block(b, f"/{i}/content/{j}")
        if "newerKey" in message:
            out.append((f"/{i}/newerKey", message["newerKey"]))
    return out


def _sent_or_said(request: Any, pointer: str, value: str, body: str) -> bool:
    if value in body or json.dumps(value, ensure_ascii=False)[1:-1] in body:
        return True
    if pointer.endswith("/source/data") and base64.b64decode(value).decode() in body:  # (a text file sent as text)
        return True
    for d in request.diagnostics:
        if any(p and (pointer == p or pointer.startswith(p + "/")) for p in d.pointers):
            return True
        if d.rule in ("tool-id-mapped", "tool-name-mapped") and repr(value) in d.message:
            return True
    return False


@pytest.mark.fuzz
def test_every_string_of_a_random_conversation_is_sent_or_said() -> None:
    """Every provider, every mode: each string of the conversation is in the request's body (as it is, or as JSON
    writes it), or a diagnostic points at it or at what holds it. (Blank texts, which formatters drop at will, and
    the agent's own name in multi-agent mode, which its turns need not carry, are not looked for.) A failure names
    the seed (AGENTMSG_FUZZ_SEED=<seed> replays it)."""
    for round_ in rounds(120, share=0.25):
        seed = f"{SEED}/said/{round_}"
        conversation = _Conversations(seed).conversation()
        messages = [Msg.from_dict(m) for m in conversation]
        strings = [(p, v) for p, v in _strings(conversation) if v.strip()]
        for provider in NAMES:
            for mode, keywords in MODES:
                try:
                    request = get(provider).format_request(messages, **keywords)
                except ValidationError as exc:  # (refused: every problem at its pointer)
                    assert all(p.pointer or p.rule == "empty-conversation" for p in exc.problems), (seed, exc)
                    continue
                body = json.dumps(request.body, ensure_ascii=False)
                own = keywords.get("agent_name")
                lost = [
                    (p, v)
                    for p, v in strings
                    if not (p.endswith("/name") and v == own) and not _sent_or_said(request, p, v, body)
                ]
                assert not lost, (seed, provider, mode, lost, conversation)
