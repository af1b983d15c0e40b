"""The inbound direction: what a front end POSTs, read into agentmsg messages (``agentmsg.ui.ai_sdk.read_request``,
``agentmsg.ui.agui.read_input``). The oracles are the front ends' own schemas: every body read here is first
accepted by the ``ai`` package's ``validateUIMessages`` or by ``@ag-ui/core``'s ``RunAgentInputSchema`` and the
Python ``ag-ui-protocol`` package's ``RunAgentInput`` (and every body refused here is refused by them too, unless
the test says it is agentmsg's role rules that refuse it). The round trips: what agentmsg's endpoint streams, as
each protocol's own client builds it into messages, posted back, reads to the blocks agentmsg's reducer made."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentmsg import Msg, Problem, SizeLimitError, ValidationError, limits
from agentmsg.ui import agui, ai_sdk
from agentmsg.web import EventEndpoint
from tests._support.jsclient import NODE
from tests.conftest import ROOT

TS = ROOT / "tests" / "typescript"
SCRIPT = TS / "ui-request-oracle.mjs"
HAVE_NODE = NODE is not None and (TS / "node_modules" / "ai").is_dir() and (TS / "node_modules" / "@ag-ui").is_dir()
needs_node = pytest.mark.skipif(
    not HAVE_NODE, reason="node or tests/typescript/node_modules not installed: make ts-deps"
)

PNG = "iVBORw0KGgo="


def oracle(tmp_path: Path, ai: list[Any] = (), ag: list[Any] = ()) -> dict[str, list[list[Any]]]:  # type: ignore[assignment]
    """The front ends' schemas on each body: ``{"ai": [[ok, error], ...], "agui": [[ok, issues], ...]}``."""
    path = tmp_path / "bodies.json"
    path.write_text(json.dumps({"ai": list(ai), "agui": list(ag)}), encoding="utf-8")
    assert NODE is not None
    done = subprocess.run([str(NODE), str(SCRIPT), str(path)], cwd=TS, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def python_ag_ui_accepts(body: Any) -> bool:
    core = pytest.importorskip("ag_ui.core")
    try:
        core.RunAgentInput.model_validate(body)
    except Exception:
        return False
    return True


def dicts(msgs: list[Msg]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in msgs]


def rules(exc: ValidationError) -> list[tuple[str, str]]:
    return [(p.pointer, p.rule) for p in exc.problems]


# ---------------------------------------------------------------------------------------------------------------
# AI SDK: useChat's request

CHAT: dict[str, Any] = {
    "id": "chat-1",
    "trigger": "submit-message",
    "messageId": None,
    "tenant": "acme",  # the app's own key (the transport's ``body`` option)
    "messages": [
        {"id": "s1", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
        {
            "id": "u1",
            "role": "user",
            "metadata": {"sentAt": 1},
            "parts": [
                {"type": "text", "text": "Weather in Paris? See the photo."},
                {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}", "filename": "p.png"},
                {
                    "type": "file",
                    "mediaType": "application/pdf",
                    "url": "https://example.com/a.pdf",
                    "filename": "a.pdf",
                },
            ],
        },
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "Look it up.", "state": "done"},
                {
                    "type": "tool-weather",
                    "toolCallId": "c1",
                    "state": "output-available",
                    "input": {"city": "Paris"},
                    "output": "18C",
                },
                {
                    "type": "tool-forecast",
                    "toolCallId": "c2",
                    "state": "output-error",
                    "input": {},
                    "errorText": "down",
                },
                {
                    "type": "dynamic-tool",
                    "toolName": "rm",
                    "toolCallId": "c3",
                    "state": "output-denied",
                    "input": {"p": "/"},
                    "approval": {"id": "ap1", "approved": False},
                },
                {
                    "type": "tool-ask",
                    "toolCallId": "c4",
                    "state": "approval-requested",
                    "input": {"q": 1},
                    "approval": {"id": "ap2"},
                },
                {"type": "tool-slow", "toolCallId": "c5", "state": "input-streaming", "input": {"par": "ti"}},
                {
                    "type": "tool-json",
                    "toolCallId": "c6",
                    "state": "output-available",
                    "input": {},
                    "output": {"t": 18},
                },
                {"type": "step-start"},
                {"type": "source-url", "sourceId": "src1", "url": "https://meteo.example", "title": "Meteo"},
                {"type": "source-document", "sourceId": "src2", "mediaType": "application/pdf", "title": "Report"},
                {"type": "data-weather", "id": "d1", "data": {"city": "Paris", "temp": 18}},
                {"type": "text", "text": "18C and sunny.", "state": "done"},
            ],
        },
    ],
}


@pytest.mark.oracle
@needs_node
def test_the_ai_package_accepts_the_chat_and_every_part_is_kept(tmp_path: Path) -> None:
    assert oracle(tmp_path, ai=[CHAT])["ai"] == [[True, None]]
    request = ai_sdk.read_request(CHAT)
    assert (request.chat_id, request.trigger, request.message_id, request.extra) == (
        "chat-1", "submit-message", None, {"tenant": "acme"},
    )  # fmt: skip
    system, user, assistant = dicts(request.messages)
    assert (system["role"], system["content"]) == ("SYSTEM", [{"type": "text", "text": "Be brief."}])
    assert user["role"] == "USER" and user["id"] == "u1"
    assert [b["type"] for b in user["content"]] == ["text", "image", "data"]
    assert user["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert user["content"][2]["source"] == {
        "type": "url",
        "url": "https://example.com/a.pdf",
        "mime_type": "application/pdf",
    }
    assert user["content"][2]["name"] == "a.pdf"
    assert user["metadata"] == {
        "ai_sdk_parts": [{"at": 1, "keys": {"filename": "p.png"}}],
        "ai_sdk_metadata": {"sentAt": 1},
    }
    blocks = assistant["content"]
    assert [(b["type"], b.get("id"), b.get("state")) for b in blocks] == [
        ("thinking", None, None),
        ("tool_use", "c1", "pending"), ("tool_result", "c1", "success"),
        ("tool_use", "c2", "pending"), ("tool_result", "c2", "error"),
        ("tool_use", "c3", "pending"), ("tool_result", "c3", "denied"),
        ("tool_use", "c4", "asking"),
        ("tool_use", "c5", "pending"),
        ("tool_use", "c6", "pending"), ("tool_result", "c6", "success"),
        ("text", None, None),
    ]  # fmt: skip
    assert blocks[0]["thinking"] == "Look it up."
    assert (blocks[1]["name"], blocks[1]["input"]) == ("weather", {"city": "Paris"})
    assert blocks[2]["output"] == [{"type": "text", "text": "18C"}]
    assert blocks[4]["output"] == [{"type": "text", "text": "down"}]
    assert (blocks[5]["name"], blocks[6]["output"]) == ("rm", [])
    assert blocks[10]["output"] == [{"type": "text", "text": '{"t":18}'}]
    kept = assistant["metadata"]["ai_sdk_parts"]
    assert [k["at"] for k in kept] == [0, 4, 5, 6, 8, 9, 10, 11]
    assert kept[0] == {"at": 0, "part": {"type": "step-start"}}
    # (a dynamic-tool part, a call as a tool-NAME part is: its type kept, which told the two apart)
    assert kept[1] == {"at": 4, "keys": {"approval": {"id": "ap1", "approved": False}, "type": "dynamic-tool"}}
    assert kept[3] == {"at": 6, "keys": {"state": "input-streaming"}}
    assert {"at": 9, "part": CHAT["messages"][2]["parts"][9]} in kept
    assert {"at": 11, "part": CHAT["messages"][2]["parts"][11]} in kept
    # each kind said once per message, with the pointer of the part in the body
    said = {(n.pointer, n.rule) for n in request.notes}
    assert ("/messages/2/parts/0", "ui-mapped") in said
    assert ("/messages/2/parts/9", "ui-mapped") in said
    assert ("/messages/2/parts/11", "ui-mapped") in said
    assert ("/messages/2/parts/8", "ui-mapped") not in said  # (a second step-start: said once)
    assert ("/messages/1/metadata", "ui-mapped") in said
    assert all(isinstance(n, Problem) for n in request.notes)


def test_a_part_s_own_keys_never_hide_its_place() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "data-x", "data": 1, "at": 99, "part": "mine"}]
    request = ai_sdk.read_request({"messages": [{"id": "a", "role": "assistant", "parts": parts}]})
    assert request.messages[0].metadata["ai_sdk_parts"] == [{"at": 1, "part": parts[1]}]


def test_a_local_file_posted_is_a_url_nothing_reads() -> None:
    body = _with(["messages", 0, "parts", 0], {"type": "file", "mediaType": "image/png", "url": "file:///etc/passwd"})
    (msg,) = ai_sdk.read_request(body).messages
    assert msg.to_dict()["content"] == [
        {"type": "image", "source": {"type": "url", "url": "file:///etc/passwd", "mime_type": "image/png"}}
    ]
    from agentmsg import providers

    with pytest.raises(ValidationError) as caught:  # (safe by default: formatters read no local file unless allowed)
        providers.get("openai").format_request([msg], model="gpt-4o")
    assert [p.rule for p in caught.value.problems] == ["media-local-refused"]


@pytest.mark.oracle
@needs_node
def test_a_data_url_s_header_the_block_has_no_place_for_is_kept(tmp_path: Path) -> None:
    """A file part's data: URL is read into a base64 block of the part's ``mediaType``. What its header says besides
    (a media type of its own, parameters such as ``name=``) was lost without a note; it is kept in
    ``ai_sdk_parts`` (``keys.url``: the header, the base64 being the block's), with a note. A header that says
    nothing more adds nothing."""
    parts = [
        {"type": "file", "mediaType": "application/pdf", "url": f"data:application/pdf;name=r.pdf;base64,{PNG}"},
        {"type": "file", "mediaType": "image/png", "url": f"data:image/jpeg;base64,{PNG}"},
        {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"},
    ]
    body = {"messages": [{"id": "u", "role": "user", "parts": parts}]}
    assert oracle(tmp_path, ai=[body])["ai"] == [[True, None]]
    request = ai_sdk.read_request(body)
    (msg,) = dicts(request.messages)
    assert [b["source"] for b in msg["content"]] == [
        {"type": "base64", "media_type": "application/pdf", "data": PNG},
        {"type": "base64", "media_type": "image/png", "data": PNG},
        {"type": "base64", "media_type": "image/png", "data": PNG},
    ]
    assert msg["metadata"]["ai_sdk_parts"] == [
        {"at": 0, "keys": {"url": "data:application/pdf;name=r.pdf;base64,"}},
        {"at": 1, "keys": {"url": "data:image/jpeg;base64,"}},
    ]
    assert [(n.pointer, n.rule) for n in request.notes] == [("/messages/0/parts/0", "ui-mapped")]


def test_a_key_of_a_uimessage_is_kept_and_pointed_at_escaped() -> None:
    body = _with(["messages", 0, "a/b~"], 1)
    request = ai_sdk.read_request(body)
    assert request.messages[0].metadata["ai_sdk_keys"] == {"a/b~": 1}
    assert [(n.pointer, n.rule) for n in request.notes] == [("/messages/0/a~1b~0", "ui-mapped")]
    with pytest.raises(ValidationError) as caught:
        ai_sdk.read_request(_with(["messages", 0, "parts", 0], {"type": "file", "mediaType": 1, "url": "x"}))
    assert rules(caught.value) == [("/messages/0/parts/0/mediaType", "type")]


def test_the_chat_reads_from_its_json_text_alike() -> None:
    text = json.dumps(CHAT)
    assert dicts(ai_sdk.read_request(text).messages) == dicts(ai_sdk.read_request(text.encode()).messages)
    assert dicts(ai_sdk.read_request(text).messages) == dicts(ai_sdk.read_request(CHAT).messages)


def _with(path: list[Any], value: Any, body: dict[str, Any] | None = None) -> dict[str, Any]:
    out = copy.deepcopy(
        body
        if body is not None
        else {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    )
    at: Any = out
    for key in path[:-1]:
        at = at[key]
    if value is _DELETE:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


_DELETE = object()

#: bodies the ai package refuses, and the pointer and rule agentmsg refuses each by
BAD_CHATS: list[tuple[dict[str, Any], str, str]] = [
    (_with(["messages"], []), "/messages", "minItems"),
    (_with(["messages"], "hi"), "/messages", "type"),
    (_with(["messages"], _DELETE), "", "required"),
    (_with(["messages", 0], "hi"), "/messages/0", "type"),
    (_with(["messages", 0, "id"], 7), "/messages/0/id", "type"),
    (_with(["messages", 0, "role"], "bot"), "/messages/0/role", "enum"),
    (_with(["messages", 0, "parts"], []), "/messages/0/parts", "minItems"),
    (_with(["messages", 0, "parts", 0], {"type": "telepathy"}), "/messages/0/parts/0/type", "enum"),
    (_with(["messages", 0, "parts", 0], {"type": "text"}), "/messages/0/parts/0", "required"),
    (_with(["messages", 0, "parts", 0], {"type": "text", "text": 1}), "/messages/0/parts/0/text", "type"),
    (
        _with(["messages", 0, "parts", 0], {"type": "text", "text": "a", "state": "half"}),
        "/messages/0/parts/0/state",
        "enum",
    ),
    (_with(["messages", 0, "parts", 0], {"type": "file", "url": "https://x"}), "/messages/0/parts/0", "required"),
    (_with(["messages", 0, "parts", 0], {"type": "source-url", "url": "https://x"}), "/messages/0/parts/0", "required"),
    (
        _with(
            ["messages", 0],
            {
                "id": "a",
                "role": "assistant",
                "parts": [{"type": "tool-f", "toolCallId": "c", "state": "done", "input": {}}],
            },
        ),
        "/messages/0/parts/0/state",
        "enum",
    ),
    (
        _with(
            ["messages", 0],
            {
                "id": "a",
                "role": "assistant",
                "parts": [{"type": "tool-f", "toolCallId": "c", "state": "output-error", "input": {}}],
            },
        ),
        "/messages/0/parts/0",
        "required",
    ),
    (
        _with(
            ["messages", 0],
            {
                "id": "a",
                "role": "assistant",
                "parts": [{"type": "dynamic-tool", "toolCallId": "c", "state": "input-available", "input": {}}],
            },
        ),
        "/messages/0/parts/0",
        "required",
    ),
]


@pytest.mark.oracle
@needs_node
def test_what_the_ai_package_refuses_raises_with_its_pointer_and_rule(tmp_path: Path) -> None:
    verdicts = oracle(tmp_path, ai=[b for b, _, _ in BAD_CHATS if "messages" in b])["ai"]
    assert all(ok is False for ok, _ in verdicts), verdicts
    for body, pointer, rule in BAD_CHATS:
        with pytest.raises(ValidationError) as caught:
            ai_sdk.read_request(body)
        assert (pointer, rule) in rules(caught.value), (body, caught.value)
        assert caught.value.kind == "ai-sdk chat request"


@pytest.mark.oracle
@needs_node
def test_what_agentmsg_role_rules_refuse_is_refused_by_rule(tmp_path: Path) -> None:
    bodies = [
        _with(["messages", 0, "parts", 0], {"type": "reasoning", "text": "hm"}),
        _with(
            ["messages", 0, "parts", 0], {"type": "tool-f", "toolCallId": "c", "state": "input-available", "input": {}}
        ),
        _with(
            ["messages", 0, "role"],
            "system",
            _with(["messages", 0, "parts", 0], {"type": "file", "mediaType": "image/png", "url": "https://x/p.png"}),
        ),
    ]
    assert oracle(tmp_path, ai=bodies)["ai"] == [[True, None]] * 3  # the AI SDK lets a part be in any role
    for body in bodies:
        with pytest.raises(ValidationError) as caught:
            ai_sdk.read_request(body)
        assert rules(caught.value) == [("/messages/0/parts/0", "role-content")]


@pytest.mark.oracle
@needs_node
def test_media_agentmsg_cannot_hold_is_refused_at_the_body_s_own_path(tmp_path: Path) -> None:
    """Media the front ends' schemas take and an agentmsg source refuses (base64 that is not, an empty media type or
    URL) is refused naming the key of the posted body, not the source agentmsg builds from it: the pointer was
    ``/messages/0/content/1/source/data``, a path neither body has (the AI SDK part is ``parts/1``, its key ``url``;
    AG-UI's key is ``value``)."""
    step = {"type": "step-start"}
    chats = [
        ({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,@@"}, "/url", "pattern"),
        ({"type": "file", "mediaType": "", "url": "https://x/a"}, "/mediaType", "minLength"),
    ]
    chat_bodies = [{"messages": [{"id": "a", "role": "assistant", "parts": [step, part]}]} for part, _, _ in chats]
    sources = [
        ({"type": "data", "value": "@@", "mimeType": "image/png"}, "/value", "pattern"),
        ({"type": "data", "value": PNG, "mimeType": ""}, "/mimeType", "minLength"),
        ({"type": "url", "value": ""}, "/value", "minLength"),
    ]
    runs = [
        {
            "threadId": "t",
            "runId": "r",
            "messages": [{"id": "u", "role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "source": src}]}],
        }
        for src, _, _ in sources
    ]  # fmt: skip
    verdicts = oracle(tmp_path, ai=chat_bodies, ag=runs)
    assert verdicts == {"ai": [[True, None]] * len(chats), "agui": [[True, None]] * len(runs)}
    for body, (_, key, rule) in zip(chat_bodies, chats, strict=True):
        with pytest.raises(ValidationError) as caught:
            ai_sdk.read_request(body)
        assert rules(caught.value) == [("/messages/0/parts/1" + key, rule)]
    for run, (_, key, rule) in zip(runs, sources, strict=True):
        with pytest.raises(ValidationError) as caught:
            agui.read_input(run)
        assert rules(caught.value) == [("/messages/0/content/1/source" + key, rule)]


def test_every_problem_is_said_at_once() -> None:
    body = {
        "messages": [{"id": 1, "role": "bot", "parts": [{"type": "x"}]}, {"id": "u", "role": "user", "parts": "no"}]
    }
    with pytest.raises(ValidationError) as caught:
        ai_sdk.read_request(body)
    assert rules(caught.value) == [
        ("/messages/0/id", "type"), ("/messages/0/role", "enum"), ("/messages/0/parts/0/type", "enum"),
        ("/messages/1/parts", "type"),
    ]  # fmt: skip


@pytest.mark.parametrize("reader", [ai_sdk.read_request, agui.read_input])
def test_bad_bodies_raise_the_sdks_own_error(reader: Any) -> None:
    for body, rule in [("{", "json"), ("[]", "type"), (b"12", "type"), ([1], "type")]:
        with pytest.raises(ValidationError) as caught:
            reader(body)
        assert [p.rule for p in caught.value.problems] == [rule]
    deep: Any = "x"
    for _ in range(limits.max_depth + 5):
        deep = [deep]
    for too_deep in ({"messages": deep, "threadId": deep}, '{"messages":' + "[" * 100_000 + "]" * 100_000 + "}"):
        with pytest.raises(SizeLimitError) as caught:
            reader(too_deep)
        assert [p.rule for p in caught.value.problems] == ["max-depth"]
    old = limits.max_bytes
    limits.max_bytes = 1000
    try:
        with pytest.raises(SizeLimitError) as caught:
            reader(json.dumps({"messages": [], "x": "y" * 2000}))
        assert [p.rule for p in caught.value.problems] == ["max-bytes"]
    finally:
        limits.max_bytes = old


def test_a_long_chat_reads_part_by_part() -> None:
    parts = [{"type": "text", "text": f"t{i}"} for i in range(50_000)]
    parts += [{"type": "step-start"} for _ in range(50_000)]
    request = ai_sdk.read_request({"messages": [{"id": "a", "role": "assistant", "parts": parts}]})
    (msg,) = request.messages
    assert len(msg.content) == 50_000
    assert len(msg.metadata["ai_sdk_parts"]) == 50_000
    assert len(request.notes) == 1  # (said once per kind and message)
    bad = [{"type": "nope"}] * 50_000
    with pytest.raises(ValidationError) as caught:
        ai_sdk.read_request({"messages": [{"id": "a", "role": "assistant", "parts": bad}]})
    assert len(caught.value.problems) == 50_000
    assert len(str(caught.value).splitlines()) < 30  # (its text lists the first ones)


# ---------------------------------------------------------------------------------------------------------------
# AG-UI: RunAgentInput

RUN: dict[str, Any] = {
    "threadId": "th1",
    "runId": "r2",
    "parentRunId": "r1",
    "state": {"step": 2},
    "tools": [{"name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object"}}],
    "context": [{"description": "user's city", "value": "Paris"}],
    "forwardedProps": {"model": "small"},
    "messages": [
        {"id": "d1", "role": "developer", "content": "Be brief."},
        {"id": "s1", "role": "system", "content": "You are Friday."},
        {
            "id": "u1",
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather? See the photo."},
                {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}},
                {
                    "type": "document",
                    "source": {"type": "url", "value": "https://example.com/a.pdf", "mimeType": "application/pdf"},
                },
            ],
        },
        {"id": "rs1", "role": "reasoning", "content": "Look it up.", "encryptedValue": "sig"},
        {
            "id": "a1",
            "role": "assistant",
            "content": "Let me check.",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{bad"}},
            ],
        },
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "18C"},
        {"id": "t2", "role": "tool", "toolCallId": "c2", "content": "", "error": "bad arguments"},
        {"id": "act1", "role": "activity", "activityType": "PLAN", "content": {"steps": ["look"]}},
        {"id": "u2", "role": "user", "content": "Thanks", "name": "Ann"},
    ],
}


@pytest.mark.oracle
@needs_node
def test_ag_ui_accepts_the_run_input_and_every_message_is_kept(tmp_path: Path) -> None:
    assert oracle(tmp_path, ag=[RUN])["agui"] == [[True, None]]
    assert python_ag_ui_accepts(RUN)
    run = agui.read_input(RUN)
    assert (run.thread_id, run.run_id, run.parent_run_id) == ("th1", "r2", "r1")
    assert (run.state, run.tools, run.context, run.forwarded_props) == (
        RUN["state"], RUN["tools"], RUN["context"], RUN["forwardedProps"],
    )  # fmt: skip
    assert run.activities == [RUN["messages"][7]]
    developer, system, user, assistant, tool1, tool2, user2 = dicts(run.messages)
    assert (developer["role"], developer["metadata"]) == ("SYSTEM", {"ag_ui": {"role": "developer"}})
    assert system["content"] == [{"type": "text", "text": "You are Friday."}]
    assert [b["type"] for b in user["content"]] == ["text", "image", "data"]
    assert user["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert user["content"][2]["source"] == {
        "type": "url",
        "url": "https://example.com/a.pdf",
        "mime_type": "application/pdf",
    }
    assert assistant["id"] == "a1"
    thinking, text, call1, call2 = assistant["content"]
    assert (thinking["thinking"], thinking["metadata"]["signature"]) == ("Look it up.", "sig")
    assert text == {"type": "text", "text": "Let me check."}
    assert (call1["id"], call1["name"], call1["input"], call1["content"]) == (
        "c1",
        "get_weather",
        {"city": "Paris"},
        '{"city":"Paris"}',
    )
    assert (call2["input"], call2["content"]) == ({}, "{bad")
    assert call2["metadata"]["argumentsError"]
    assert tool1["role"] == "TOOL"
    assert tool1["content"] == [
        {
            "type": "tool_result",
            "id": "c1",
            "name": "get_weather",
            "output": [{"type": "text", "text": "18C"}],
            "metadata": {},
            "state": "success",
        }
    ]
    assert tool2["content"][0]["state"] == "error"
    assert tool2["content"][0]["output"][-1] == {"type": "text", "text": "bad arguments"}
    assert (user2["name"], user2["content"]) == ("Ann", [{"type": "text", "text": "Thanks"}])
    said = {(n.pointer, n.rule) for n in run.notes}
    assert {("/messages/0/role", "ui-mapped"), ("/messages/3", "ui-mapped"), ("/messages/7", "ui-mapped")} <= said


def test_a_tool_result_state_agentmsg_sent_comes_back() -> None:
    """agentmsg's AG-UI encoder sends a tool result's state (AG-UI's tool message has only ``error``) in its
    metadata, which HttpAgent keeps on the message it builds."""
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    meta = {"agentmsg": {"id": "e15", "replyId": "t", "state": "interrupted"}}
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "a", "role": "assistant", "toolCalls": [call]},
            {"id": "c-result", "role": "tool", "toolCallId": "c", "content": "half", "metadata": meta},
            {
                "id": "d-result",
                "role": "tool",
                "toolCallId": "c",
                "content": "x",
                "metadata": {"agentmsg": {"state": "x"}},
            },
        ],
    }
    assert python_ag_ui_accepts(body)
    _, tool, other = agui.read_input(body).messages
    assert tool.to_dict()["content"][0]["state"] == "interrupted"
    assert tool.metadata["ag_ui"] == {"metadata": meta}  # (kept as it came, too)
    assert other.to_dict()["content"][0]["state"] == "success"  # (no state of agentmsg's: AG-UI's default)


@pytest.mark.oracle
@needs_node
def test_a_content_part_s_keys_no_block_holds_are_kept_with_a_note(tmp_path: Path) -> None:
    """An AG-UI content part's ``id`` and ``metadata``, a file source's ``provider`` and a source's own keys have no
    block field: they are kept in the message metadata ``ag_ui_parts`` at the part's index, with a note (they were
    dropped without a word)."""
    parts = [
        {"type": "text", "text": "See.", "id": "p1", "metadata": {"lang": "en"}},
        {
            "type": "image",
            "id": "p2",
            "metadata": {"alt": "a cat"},
            "source": {"type": "file", "value": "file-abc", "provider": "openai", "mimeType": "image/png"},
        },
        {"type": "document", "source": {"type": "data", "value": PNG, "mimeType": "application/pdf", "name": "a"}},
        {"type": "text", "text": "plain"},
    ]
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "u", "role": "user", "content": parts},
            {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "c", "content": [{"type": "text", "text": "ok", "id": "o1"}]},
        ],
    }  # fmt: skip
    assert oracle(tmp_path, ag=[body])["agui"] == [[True, None]]
    assert python_ag_ui_accepts(body)
    run = agui.read_input(body)
    user, _, tool = run.messages
    assert [b["type"] for b in dicts([user])[0]["content"]] == ["text", "image", "data", "text"]
    assert user.metadata["ag_ui_parts"] == [
        {"at": 0, "keys": {"id": "p1", "metadata": {"lang": "en"}}},
        {"at": 1, "keys": {"id": "p2", "metadata": {"alt": "a cat"}, "source": {"provider": "openai"}}},
        {"at": 2, "keys": {"source": {"name": "a"}}},
    ]
    assert tool.metadata["ag_ui_parts"] == [{"at": 0, "keys": {"id": "o1"}}]
    said = {(n.pointer, n.rule) for n in run.notes}
    assert {("/messages/0/content/0", "ui-mapped"), ("/messages/2/content/0", "ui-mapped")} <= said


def test_a_tool_call_s_keys_no_tool_use_holds_are_kept_with_a_note(tmp_path: Path) -> None:
    """A tool call's keys besides ``id``, ``type``, ``function`` and its ``encryptedValue`` (its ``metadata``, a key
    of a newer producer, one its ``function`` has beside ``name`` and ``arguments``): kept in the tool_use metadata
    ``ag_ui``, keyed as in the call, with a note (all but ``metadata`` were dropped without a word)."""
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": "{}", "strict": True},
        "encryptedValue": "sig",
        "metadata": {"lang": "en"},
        "index": 0,
    }
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "a", "role": "assistant", "toolCalls": [call]}]}
    if HAVE_NODE:
        assert oracle(tmp_path, ag=[body])["agui"] == [[True, None]]
    assert python_ag_ui_accepts(body)
    run = agui.read_input(body)
    (use,) = run.messages[0].to_dict()["content"]
    assert use["metadata"] == {
        "thoughtSignature": "sig",
        "ag_ui": {"metadata": {"lang": "en"}, "index": 0, "function": {"strict": True}},
    }
    assert [(n.pointer, n.rule) for n in run.notes] == [("/messages/0/toolCalls/0", "ui-mapped")]


def test_a_null_of_a_key_ag_ui_does_not_declare_is_kept_with_the_others(tmp_path: Path) -> None:
    """A null of a key AG-UI declares (a message's ``name``, a call's ``metadata``) is that optional key left out;
    a null of a key it does not declare is data, kept in the metadata ``ag_ui`` with the other keys and a note, on a
    message, a tool call and its function alike (it was dropped, as if the key were absent)."""
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "f", "arguments": "{}", "strict": None},
        "metadata": None,
        "index": None,
    }
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "u", "role": "user", "content": "hi", "name": None, "tag": None},
            {"id": "a", "role": "assistant", "toolCalls": [call], "trace": None, "encryptedValue": None},
        ],
    }
    assert python_ag_ui_accepts(body)
    run = agui.read_input(body)
    user, assistant = dicts(run.messages)
    assert (user["name"], user["metadata"]) == (None, {"ag_ui": {"tag": None}})
    assert assistant["metadata"] == {"ag_ui": {"trace": None}}
    assert assistant["content"][0]["metadata"] == {"ag_ui": {"index": None, "function": {"strict": None}}}
    assert sorted((n.pointer, n.rule) for n in run.notes) == [
        ("/messages/0", "ui-mapped"),
        ("/messages/1", "ui-mapped"),
        ("/messages/1/toolCalls/0", "ui-mapped"),
    ]


def test_an_assistant_s_empty_content_and_a_call_without_type_are_read_as_the_protocol_reads_them(
    tmp_path: Path,
) -> None:
    """Both oracles accept an assistant's ``content: ""``: it is an empty text block, as a user's or system's, so it
    is told from no content (it read to no block, the same as absent). A call without ``type``: ag-ui-protocol
    defaults it to function, @ag-ui/core refuses it; read as a function call, with a note (it went unsaid)."""
    call = {"id": "c", "function": {"name": "f", "arguments": "{}"}}
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "a1", "role": "assistant", "content": ""},
            {"id": "a2", "role": "assistant"},
            {"id": "a3", "role": "assistant", "content": "", "toolCalls": [call]},
        ],
    }
    assert python_ag_ui_accepts(body)
    typed = {**body, "messages": body["messages"][:2]}
    if HAVE_NODE:
        (ok_typed, _), (ok_untyped, _) = oracle(tmp_path, ag=[typed, body])["agui"]
        assert (ok_typed, ok_untyped) == (True, False)  # (@ag-ui/core: a call's type is required)
    run = agui.read_input(body)
    empty, absent, with_call = dicts(run.messages)
    assert empty["content"] == [{"type": "text", "text": ""}]
    assert absent["content"] == []
    assert [b["type"] for b in with_call["content"]] == ["text", "tool_use"]
    assert [(n.pointer, n.rule) for n in run.notes] == [("/messages/2/toolCalls/0", "ui-mapped")]


def test_a_call_s_arguments_that_are_no_json_object_are_noted_with_the_rule_they_break() -> None:
    """Arguments kept as text (``argumentsError``, the runtime-neutral text of the conformance vectors) get a note
    at them naming the rule the JSON reader found broken: an integer beyond 64 bits is ``integer-range`` at its
    pointer in the arguments, not a syntax error (nothing said why; the metadata says "not valid JSON")."""
    big = '{"n": 123456789012345678901234567890}'
    calls = [
        {"id": c, "type": "function", "function": {"name": "f", "arguments": a}}
        for c, a in (("c1", big), ("c2", "{bad"), ("c3", "[1]"))
    ]
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": f"a{i}", "role": "assistant", "toolCalls": [c]} for i, c in enumerate(calls)],
    }
    assert python_ag_ui_accepts(body)
    run = agui.read_input(body)
    uses = [m.to_dict()["content"][0] for m in run.messages]
    assert [(u["content"], u["input"]) for u in uses] == [(big, {}), ("{bad", {}), ("[1]", {})]
    assert [u["metadata"]["argumentsError"] for u in uses] == [
        "arguments are not valid JSON",
        "arguments are not valid JSON",
        "arguments are JSON but not an object: array",
    ]
    notes = [(n.pointer, n.rule) for n in run.notes]
    assert notes == [(f"/messages/{i}/toolCalls/0/function/arguments", "ui-mapped") for i in range(3)]
    big_note, bad_note, array_note = (n.message for n in run.notes)
    assert "rule integer-range at /n" in big_note and "64-bit range" in big_note
    assert "rule json" in bad_note and "rule type" in array_note


def test_a_reasoning_message_s_id_is_kept_when_its_block_opens_the_next_message() -> None:
    """A reasoning message's thinking block opens the assistant message after it: the reasoning message's own id,
    which the assistant message's id replaces, is kept in the block's metadata ``ag_ui.id`` (it was dropped); alone
    (no assistant message after it) it is the message's id."""
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {"id": "rs1", "role": "reasoning", "content": "Look it up.", "encryptedValue": "sig"},
            {"id": "a1", "role": "assistant", "content": "Sunny."},
            {"id": "rs2", "role": "reasoning", "content": "Done."},
        ],
    }
    assert python_ag_ui_accepts(body)
    run = agui.read_input(body)
    merged, alone = dicts(run.messages)
    assert merged["id"] == "a1"
    assert merged["content"][0]["metadata"] == {"signature": "sig", "ag_ui": {"id": "rs1"}}
    assert (alone["id"], alone["content"][0].get("metadata")) == ("rs2", None)
    assert ("/messages/0", "ui-mapped") in [(n.pointer, n.rule) for n in run.notes]


BAD_RUNS: list[tuple[dict[str, Any], str, str]] = [
    (_with(["threadId"], _DELETE, RUN), "", "required"),
    (_with(["runId"], 5, RUN), "/runId", "type"),
    (_with(["messages"], {}, RUN), "/messages", "type"),
    (_with(["messages", 0, "role"], "robot", RUN), "/messages/0/role", "enum"),
    (_with(["messages", 1, "content"], 3, RUN), "/messages/1/content", "type"),
    (_with(["messages", 2, "content", 1, "type"], "hologram", RUN), "/messages/2/content/1/type", "enum"),
    (_with(["messages", 2, "content", 1, "source", "type"], "ftp", RUN), "/messages/2/content/1/source/type", "enum"),
    (
        _with(["messages", 2, "content", 1, "source", "mimeType"], _DELETE, RUN),
        "/messages/2/content/1/source",
        "required",
    ),
    (
        _with(["messages", 4, "toolCalls", 0, "function"], {"name": "f"}, RUN),
        "/messages/4/toolCalls/0/function",
        "required",
    ),
    (_with(["messages", 5, "toolCallId"], _DELETE, RUN), "/messages/5", "required"),
    (_with(["messages", 7, "content"], "plan", RUN), "/messages/7/content", "type"),
    (_with(["messages", 3, "content"], _DELETE, RUN), "/messages/3", "required"),  # (a reasoning message, signed)
    (_with(["messages", 3, "content"], ["Look it up."], RUN), "/messages/3/content", "type"),
    (_with(["tools", 0, "description"], _DELETE, RUN), "/tools/0", "required"),
    (_with(["context", 0], "Paris", RUN), "/context/0", "type"),
]


def test_a_signed_reasoning_message_without_its_text_is_refused_by_rule() -> None:
    """A reasoning message with an ``encryptedValue`` and no string ``content``: the reader put the signature on its
    first block, which it had not, and raised IndexError where the body is refused (rule ``required`` or
    ``type``, as @ag-ui/core's schema refuses it: BAD_RUNS)."""
    for content, pointer, rule in ((_DELETE, "/messages/3", "required"), (7, "/messages/3/content", "type")):
        with pytest.raises(ValidationError) as caught:
            agui.read_input(_with(["messages", 3, "content"], content, RUN))
        assert rules(caught.value) == [(pointer, rule)]


@pytest.mark.oracle
@needs_node
def test_what_ag_ui_refuses_raises_with_its_pointer_and_rule(tmp_path: Path) -> None:
    verdicts = oracle(tmp_path, ag=[b for b, _, _ in BAD_RUNS])["agui"]
    assert all(ok is False for ok, _ in verdicts), verdicts
    for body, pointer, rule in BAD_RUNS:
        assert not python_ag_ui_accepts(body), body
        with pytest.raises(ValidationError) as caught:
            agui.read_input(body)
        assert (pointer, rule) in rules(caught.value), (pointer, caught.value)
        assert caught.value.kind == "ag-ui run input"


# ---------------------------------------------------------------------------------------------------------------
# Round trips: streamed by agentmsg, built by the front end's own client, posted back


@pytest.mark.oracle
@needs_node
def test_a_reply_the_ai_package_built_reads_back_to_the_reduced_blocks() -> None:
    from tests.ui.test_ai_sdk_oracle import one_reply_streams, parts_of_message, read_with_ai, reduced

    streams = one_reply_streams()
    results = read_with_ai([events for _, events in streams])
    for (name, events), got in zip(streams, results, strict=True):
        (msg,), _ = reduced(events)
        ui = got["message"]
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        request = ai_sdk.read_request({"id": "chat-1", "messages": [user, ui], "trigger": "submit-message"})
        back = request.messages[1].to_dict()
        assert back["id"] == ui["id"] and back["role"] == "ASSISTANT", name
        # the same parts, as the UI shows them (what the UIMessage has no place for rides on transient chunks:
        # a thinking signature, a tool call's state, hints; the differences docs/ai-sdk.md names)
        assert parts_of_message(back) == parts_of_message(msg), name
        assert all(n.rule == "ui-mapped" for n in request.notes), name


@pytest.mark.oracle
@needs_node
def test_a_reply_ag_ui_client_built_reads_back_to_the_reduced_blocks() -> None:
    from tests.web.test_agui_client import REPLY, run_agents

    (run,) = run_agents([EventEndpoint(REPLY)])
    assert run["errors"] == []
    from agentmsg import Reducer

    reducer = Reducer()
    for e in REPLY:
        reducer.feed(e)
    (msg,) = reducer.finish()
    body = {"threadId": "th1", "runId": "r2", "messages": run["messages"], "tools": [], "context": []}
    assert python_ag_ui_accepts(body)
    got = agui.read_input(body)
    blocks = [b for m in dicts(got.messages) for b in m["content"]]
    want = msg.to_dict()["content"]
    strip = ("state", "metadata")
    assert [{k: v for k, v in b.items() if k not in strip} for b in blocks] == [
        {k: v for k, v in b.items() if k not in strip} for b in want
    ]
    assert blocks[0]["metadata"]["signature"] == want[0]["metadata"]["signature"]
    # AG-UI holds the tool's result in a tool message of its own: a TOOL message here
    assert [m.role.value for m in got.messages] == ["ASSISTANT", "TOOL"]
    # the reasoning message opens the assistant message after it; what it held besides its text is in its block
    reasoning = run["messages"][0]
    assert blocks[0]["metadata"]["ag_ui"] == {"metadata": reasoning["metadata"], "id": reasoning["id"]}


def test_a_tool_part_whose_tool_returned_nothing_reads_to_an_empty_result(tmp_path: Path) -> None:
    """A tool that returns nothing (``undefined``) leaves its part in state ``output-available`` without ``output``
    once useChat posts it (JSON.stringify drops the key); ``validateUIMessages`` accepts it, and so does
    ``read_request``: the call and a ``success`` result with no output."""
    part = {"type": "tool-notify", "toolCallId": "c", "state": "output-available", "input": {"to": "ops"}}
    body = {"messages": [{"id": "a", "role": "assistant", "parts": [part, {"type": "text", "text": "Sent."}]}]}
    if HAVE_NODE:
        assert oracle(tmp_path, ai=[body])["ai"] == [[True, None]]
    (message,) = dicts(ai_sdk.read_request(body).messages)
    use, result, text = message["content"]
    assert (use["type"], use["id"], use["name"], use["input"]) == ("tool_use", "c", "notify", {"to": "ops"})
    assert (result["type"], result["id"], result["output"], result["state"]) == ("tool_result", "c", [], "success")
    assert text == {"type": "text", "text": "Sent."}


def test_a_tool_input_that_is_no_json_object_is_noted_with_the_rule_it_breaks(tmp_path: Path) -> None:
    """A tool part's ``input`` that is no JSON object (text that is no JSON, JSON text of an integer beyond 64 bits,
    an array) is kept as the call's raw arguments with ``argumentsError``, as AG-UI's arguments are, and gets the
    same note at the input naming the rule the JSON reader found broken (nothing said why)."""
    big = '{"n": 123456789012345678901234567890}'

    def tool(call_id: str, given: Any) -> dict[str, Any]:
        return {"type": "tool-f", "toolCallId": call_id, "state": "input-available", "input": given}

    given = (big, "{bad", [1], None)  # (null: the JSON value, which the ai package's schema takes; it read as {})
    messages = [{"id": f"m{i}", "role": "assistant", "parts": [tool(f"c{i}", g)]} for i, g in enumerate(given)]
    body = {"messages": [*messages, {"id": "m4", "role": "assistant", "parts": [tool("c4", {"n": 1})]}]}
    if HAVE_NODE:
        assert oracle(tmp_path, ai=[body])["ai"] == [[True, None]]
    request = ai_sdk.read_request(body)
    uses = [m["content"][0] for m in dicts(request.messages)]
    assert [(u.get("content"), u["input"]) for u in uses] == [
        (big, {}), ("{bad", {}), ("[1]", {}), ("null", {}), (None, {"n": 1}),
    ]  # fmt: skip
    assert [u.get("metadata", {}).get("argumentsError") for u in uses] == [
        "arguments are not valid JSON",
        "arguments are not valid JSON",
        "arguments are JSON but not an object: array",
        "arguments are JSON but not an object: null",  # (as the stream decoder reads a tool-input-available's null)
        None,
    ]
    assert [(n.pointer, n.rule) for n in request.notes] == [
        (f"/messages/{i}/parts/0/input", "ui-mapped") for i in range(4)
    ]
    big_note, bad_note, array_note, null_note = (n.message for n in request.notes)
    assert "rule integer-range at /n" in big_note and "64-bit range" in big_note
    assert "rule json" in bad_note and "rule type" in array_note and "rule type" in null_note


def test_a_tool_output_that_is_no_text_is_read_as_its_json_text_with_a_note(tmp_path: Path) -> None:
    """A tool's ``output`` is any JSON value; a tool_result holds blocks: an object, a number or null is its JSON text
    in a text block, which a string of that text reads to as well, so the reader says it (rule ``ui-mapped``, at the
    output) where it said nothing; a string, or agentmsg's own blocks, goes without saying."""

    def tool(call_id: str, output: Any) -> dict[str, Any]:
        return {"type": "tool-f", "toolCallId": call_id, "state": "output-available", "input": {}, "output": output}

    parts = [tool("a", {"temp": 18}), tool("b", '{"temp": 18}'), tool("c", [{"type": "text", "text": "18"}])]
    body = {"messages": [{"id": "m", "role": "assistant", "parts": parts}]}
    if HAVE_NODE:
        assert oracle(tmp_path, ai=[body])["ai"] == [[True, None]]
    request = ai_sdk.read_request(body)
    results = [b for b in dicts(request.messages)[0]["content"] if b["type"] == "tool_result"]
    assert [r["output"] for r in results] == [
        [{"type": "text", "text": '{"temp":18}'}],
        [{"type": "text", "text": '{"temp": 18}'}],
        [{"type": "text", "text": "18"}],
    ]
    assert [(n.pointer, n.rule) for n in request.notes] == [("/messages/0/parts/0/output", "ui-mapped")]
