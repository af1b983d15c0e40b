"""A reply's field of another JSON type than its provider writes (an object where a list goes, a string where an
object goes, an item of a list that is no object, a number where text goes) is said, and the rest of the reply read:
never emptied unsaid (docs/streams.md). An audit that mutated every recorded reply found such fields read as empty,
their content gone without a word, in every provider; each case here is one of them."""

from __future__ import annotations

import collections
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentmsg import reduce_events
from agentmsg.providers import get

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "providers"


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIX / name).read_text("utf-8"))  # type: ignore[no-any-return]


def _notes(events: list[dict[str, Any]]) -> list[str]:
    return [e["value"]["message"] for e in events if e.get("type") == "CUSTOM" and isinstance(e.get("value"), dict)]


def _set(path: str, value: Any) -> Callable[[Any], None]:
    """A mutation: the value at ``path`` (keys and indexes, ``/``-separated; a last ``+`` appends) set to ``value``."""

    def mutate(obj: Any) -> None:
        *head, last = path.split("/")
        for key in head:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        if last == "+":
            obj.append(value)
        else:
            obj[int(last) if isinstance(obj, list) else last] = value

    return mutate


#: (provider, fixture, mutation, the words the note says, a text of the reply that is still read, or None)
WHOLE: list[tuple[str, str, str, Any, str, str | None]] = [
    ("openai", "openai/chat_completion_text.json", "choices", {"x": 1}, "choices is not an array", None),
    ("openai", "openai/chat_completion_text.json", "choices/0/message", "Hello", "message is not an object", None),
    ("openai", "openai/chat_completion_text.json", "choices/+", "PROBE", "choices is not an object", "PROBE-TEXT"),
    (
        "openai",
        "openai/chat_completion_single_tool_call.json",
        "choices/0/message/tool_calls/+",
        7,
        "tool call is",
        None,
    ),
    ("anthropic", "anthropic/message_text.json", "content", "Hello", "content is not an array", None),
    (
        "anthropic",
        "anthropic/message_text.json",
        "content/+",
        "PROBE",
        "content block 1 is a JSON string",
        "PROBE-TEXT",
    ),
    (
        "gemini",
        "gemini/generate_content_text.json",
        "candidates/0/content/parts",
        {"text": "x"},
        "parts is not an",
        None,
    ),
    (
        "gemini",
        "gemini/generate_content_text.json",
        "candidates/0/content/parts/+",
        5,
        "a part of candidate",
        "PROBE-TEXT",
    ),
    ("gemini", "gemini/generate_content_text.json", "candidates/0/content/parts/0/text", 5, "text (candidate 0)", None),
    ("gemini", "gemini/generate_content_text.json", "candidates/+", "x", "candidates is not an object", "PROBE-TEXT"),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message",
        "x",
        "not an object",
        None,
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/content",
        5,
        "content is",
        None,
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/content/+",
        "x",
        "holds a",
        "PROBE-TEXT",
    ),
    (
        "openai-responses",
        "openai-responses/response_text.json",
        "output/0/content",
        {"x": 1},
        "content is not an",
        None,
    ),
    (
        "openai-responses",
        "openai-responses/response_text.json",
        "output/0/content/0/annotations",
        {},
        "annotations is",
        "PROBE-TEXT",
    ),
    (
        "openai-responses",
        "openai-responses/response_text.json",
        "output/+",
        "x",
        "output item 1 is a JSON",
        "PROBE-TEXT",
    ),
    (
        "openai-responses",
        "openai-responses/response_text.json",
        "error",
        {"message": "PROBE-ERR"},
        "PROBE-ERR",
        "PROBE-TEXT",
    ),
    ("openai-responses", "openai-responses/response_text.json", "id", 7, "the response's id is not", "PROBE-TEXT"),
    ("openai-responses", "openai-responses/response_text.json", "model", 7, "the response's model is", "PROBE-TEXT"),
    ("anthropic", "anthropic/message_text.json", "stop_reason", {"x": 1}, "stop_reason is not a string", "PROBE-TEXT"),
    ("anthropic", "anthropic/message_text.json", "content/0/type", [], "content block 0's type is a JSON array", None),
    ("anthropic", "anthropic/message_thinking_signature.json", "content/0/signature", 7, "signature is not", None),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/finish_reason",
        7,
        "finish_reason",
        None,
    ),
    (
        "gemini",
        "gemini/generate_content_thinking_gemini3.json",
        "candidates/0/content/parts/0/thoughtSignature",
        7,
        "thoughtSignature is",
        None,
    ),
    (
        "gemini",
        "gemini/generate_content_text.json",
        "candidates/0/finishMessage",
        7777,
        "the finish message is not kept",
        None,
    ),
    (
        "openai",
        "openai/chat_completion_single_tool_call.json",
        "choices/0/message/tool_calls/0/type",
        "x",
        "read as function",
        None,
    ),
    (
        "openai",
        "openai/chat_completion_single_tool_call.json",
        "choices/0/message/tool_calls/+",
        {"id": "c2", "type": "computer", "computer": {"action": "PROBE"}},
        'a tool call of type "computer" is not kept: {"id":"c2","type":"computer","computer":{"action":"PROBE"}}',
        None,
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/tool_calls",
        {"x": 1},
        "choice 0's tool_calls is not an array",
        "PROBE-TEXT",
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/tool_calls",
        [7, {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        "an item of choice 0's tool_calls is not an object (a JSON number)",
        "PROBE-TEXT",
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/tool_calls",
        [{"id": "c1", "type": "x", "function": {"name": "f", "arguments": "{}"}}],
        'tool calls of type "x" are read as function calls',
        None,
    ),
    (
        "dashscope",
        "dashscope/native_multimodal_response_docs.json",
        "output/choices/0/message/tool_calls",
        [{"id": "c2", "type": "computer", "computer": {"action": "PROBE"}}],
        'a tool call of type "computer" is not kept: {"id":"c2","type":"computer","computer":{"action":"PROBE"}}',
        None,
    ),
    (
        "openai-responses",
        "openai-responses/response_reasoning_summary_encrypted.json",
        "output/0/summary/0/type",
        "summary_image",
        'reasoning summary parts of type "summary_image" are read as summary_text parts',
        None,
    ),
    (
        "openai-responses",
        "openai-responses/response_reasoning_summary_encrypted.json",
        "output/0/summary/+",
        {"type": "summary_audio", "data": "PROBE"},
        'a reasoning summary part of type "summary_audio" is not kept: {"type":"summary_audio","data":"PROBE"}',
        None,
    ),
]


def _probe_text(provider: str, body: dict[str, Any]) -> None:
    """The reply's first text made ``PROBE-TEXT``, to find it read after the mutation."""
    paths = {
        "openai": "choices/0/message/content",
        "anthropic": "content/0/text",
        "gemini": "candidates/0/content/parts/0/text",
        "dashscope": "output/choices/0/message/content/0/text",
        "openai-responses": "output/0/content/0/text",
    }
    _set(paths[provider], "PROBE-TEXT")(body)


@pytest.mark.parametrize(
    ("provider", "fixture", "path", "value", "said", "kept"), WHOLE, ids=[f"{c[0]}:{c[2]}" for c in WHOLE]
)
def test_a_field_of_another_type_in_a_whole_reply_is_said_and_the_rest_read(
    provider: str, fixture: str, path: str, value: Any, said: str, kept: str | None
) -> None:
    body = _load(fixture)
    if kept is not None:
        _probe_text(provider, body)
    _set(path, copy.deepcopy(value))(body)
    events = get(provider).response_events(json.dumps(body).encode())
    notes = _notes(events)
    assert any(said in note for note in notes), notes
    msg = get(provider).parse_response(json.dumps(body).encode())
    assert any(said in n["message"] for n in msg.metadata.get("agentmsg_notes", [])), msg.metadata
    if kept is not None:
        assert kept in msg.text_content, msg.to_dict()


def _sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


#: (provider, stream body, the words the note says, a text of the reply that is still read)
STREAMS: list[tuple[str, bytes, str, str]] = [
    (
        "openai",
        _sse(
            {"id": "c", "model": "m", "choices": ["x", {"index": 0, "delta": {"content": "KEEP"}}]},
            {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        )
        + b"data: [DONE]\n\n",
        "an item of a chunk's choices is not an object",
        "KEEP",
    ),
    (
        "gemini",
        _sse(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "KEEP"}, 5]}}], "modelVersion": "m"},
            {"candidates": [{"content": {"role": "model", "parts": {"text": "x"}}, "finishReason": "STOP"}]},
        ),
        "a part of candidate 0 is a JSON number",
        "KEEP",
    ),
    (
        "openai-responses",
        _sse(
            {"type": "response.created", "response": {"id": "r", "model": "m", "status": "in_progress", "output": []}},
            {"kind": "a proxy's wrapper"},
            {
                "type": "response.output_text.delta",
                "item_id": "i",
                "output_index": 0,
                "content_index": 0,
                "delta": "KEEP",
            },
            {"type": "response.completed", "response": {"id": "r", "model": "m", "status": "completed", "output": []}},
        ),
        "1 payload(s) of no Responses event shape (no type) were skipped",
        "KEEP",
    ),
]


@pytest.mark.parametrize(("provider", "body", "said", "kept"), STREAMS, ids=[c[0] for c in STREAMS])
def test_a_field_of_another_type_in_a_stream_is_said_and_the_rest_read(
    provider: str, body: bytes, said: str, kept: str
) -> None:
    events = list(get(provider).parse_stream(body))
    assert any(said in note for note in _notes(events)), _notes(events)
    (msg,) = reduce_events(events)
    assert kept in msg.text_content, msg.to_dict()


def test_an_error_beside_the_choices_of_a_whole_reply_is_the_providers_error_as_in_a_stream() -> None:
    """OpenRouter's finish_reason "error": the choices carry what came, the error says why it stopped. A stream's
    chunk said it (the reply INTERRUPTED, its error kept); a whole reply dropped the error without a word."""
    body = _load("openai/chat_completion_text.json")
    body["error"] = {"message": "PROBE-ERR upstream failed", "code": "server_error"}
    whole = get("openai").parse_response(json.dumps(body).encode())
    chunk = {**body, "object": "chat.completion.chunk"}
    chunk["choices"] = [{"index": 0, "delta": {"content": whole.text_content}, "finish_reason": "error"}]
    (streamed,) = reduce_events(get("openai").parse_stream(_sse(chunk)))
    for msg in (whole, streamed):
        assert msg.text_content and msg.generate_reason is not None
        assert "PROBE-ERR" in json.dumps(msg.to_dict()), msg.to_dict()
    assert whole.generate_reason == streamed.generate_reason


@pytest.mark.parametrize(
    ("provider", "fixture", "path"),
    [
        ("openai", "openai/chat_completion_text.json", "usage/prompt_tokens"),
        ("anthropic", "anthropic/message_text.json", "usage/input_tokens"),
        ("gemini", "gemini/generate_content_text.json", "usageMetadata/promptTokenCount"),
    ],
)
def test_an_integer_of_more_digits_than_python_reads_costs_a_whole_reply_nothing_else(
    provider: str, fixture: str, path: str
) -> None:
    """A count of 5,000 digits (past the 4,300 Python's int() reads): the whole reply was refused as "not a JSON
    null" at no pointer (the fast parser's None read as the body); a stream's payload keeps its reply and says the
    count. Now the whole reply is read so too: its text kept, the count said and left out."""
    body = json.dumps(_load(fixture))
    path_value = _load(fixture)
    _set(path, 424242)(path_value)
    text = json.dumps(path_value).replace("424242", "9" * 5000)
    assert text != body
    msg = get(provider).parse_response(text.encode())
    assert msg.text_content == get(provider).parse_response(body.encode()).text_content != ""
    notes = [n["message"] for n in msg.metadata.get("agentmsg_notes", [])]
    assert any(path.split("/")[-1] in note and "no token count" in note for note in notes), notes


@pytest.mark.parametrize(
    ("provider", "fixture"),
    [
        ("openai", "openai/chat_completion_text.json"),
        ("anthropic", "anthropic/message_text.json"),
        ("gemini", "gemini/generate_content_text.json"),
        ("dashscope", "dashscope/native_multimodal_response_docs.json"),
        ("openai-responses", "openai-responses/response_text.json"),
    ],
)
def test_a_parsed_reply_of_dict_subclasses_reads_as_its_dicts(provider: str, fixture: str) -> None:
    """A caller's parsed body may be made of OrderedDicts (``object_pairs_hook``): the type checks that say a field
    of another JSON type took them for no object, and emptied the reply while saying "not an object (a JSON
    object)". They read as the plain dicts do."""
    text = (FIX / fixture).read_text("utf-8")
    plain = get(provider).parse_response(json.loads(text))
    ordered = get(provider).parse_response(json.loads(text, object_pairs_hook=collections.OrderedDict))
    assert ordered.to_dict()["content"] == plain.to_dict()["content"] != []
    assert "agentmsg_notes" not in ordered.metadata


def test_every_fragment_of_a_streamed_call_of_a_new_kind_is_kept_in_a_note() -> None:
    """A call of a kind with no ``function`` names its type on its first fragment only: the later fragments (no
    type) started a call of no name, its payload lost, and a second such call of the reply was lost unsaid (the
    note was one per type). Each fragment is now a note with its JSON; no call is made."""

    def calls(*fragments: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": {"tool_calls": list(fragments)} if fragments else {}, "finish_reason": finish}
        return {"id": "c", "model": "m", "choices": [choice]}

    body = (
        _sse(
            calls({"index": 0, "id": "call_1", "type": "computer", "computer": {"action": "click"}}),
            calls({"index": 0, "computer": {"x": 10}}),
            calls({"index": 1, "id": "call_2", "type": "computer", "computer": {"action": "SECOND"}}),
            calls(finish="stop"),
        )
        + b"data: [DONE]\n\n"
    )
    events = list(get("openai").parse_stream(body))
    notes = _notes(events)
    assert [n for n in notes if "click" in n or '"x":10' in n or "SECOND" in n] == notes and len(notes) == 3, notes
    assert not [e for e in events if e["type"].startswith("TOOL_CALL")], events


def test_a_choice_that_is_no_object_leaves_the_others_at_their_positions() -> None:
    """DashScope: ``["junk", {message}]`` read the real choice as choice 0 (counted after the junk was left out): it
    keeps its position, 1, as it had before the junk was said."""
    body = {"request_id": "r", "output": {"choices": ["junk", {"message": {"role": "assistant", "content": "hello"}}]}}
    events = list(get("dashscope").parse_stream(_sse(body)))
    text = [e for e in events if e["type"] == "TEXT_BLOCK_DELTA"]
    assert [(e["delta"], e.get("source")) for e in text] == [("hello", "choice/1")], events


#: a reply of each provider whose kinds (a type, a role, a status, a finish reason) are each made another JSON value
KINDS: list[tuple[str, str]] = [
    ("openai", "openai/chat_completion_custom_tool_call.json"),
    ("openai", "openai/stream_parallel_tool_calls.sse"),
    ("anthropic", "anthropic/message_code_execution.json"),
    ("anthropic", "anthropic/stream_code_execution_cache_usage.sse"),
    ("gemini", "gemini/generate_content_server_tool_calls.json"),
    ("gemini", "gemini/stream_code_execution.sse"),
    ("dashscope", "dashscope/native_multimodal_response_docs.json"),
    ("dashscope", "dashscope/native_multimodal_stream_thinking_docs.sse"),
    ("openai-responses", "openai-responses/response_reasoning_summary_encrypted.json"),
    ("openai-responses", "openai-responses/stream_reasoning_commentary_function_call.sse"),
]
_KIND_KEYS = frozenset({"type", "role", "object", "status", "finish_reason", "stop_reason", "finishReason"})
#: Python's words for a JSON value: what a note must not say of what the provider sent (None for null, True for
#: true, {'a': [1]} for {"a":[1]})
_PYTHON_WORDS = ("None", "True", "False", "{'", "['")


def _kind_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        own = [(*path, k) for k in value if k in _KIND_KEYS]
        return own + [p for k, v in value.items() for p in _kind_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _kind_paths(v, (*path, i))]
    return []


def _with(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


@pytest.mark.parametrize(("provider", "fixture"), KINDS, ids=[c[1] for c in KINDS])
def test_a_kind_of_another_json_type_is_said_in_json_not_in_pythons_words(provider: str, fixture: str) -> None:
    """A type, role, status or finish reason that is null, true or an object is named in JSON in what the reply says
    of it (``content block type null``, not ``None``; ``{"a":[1]}``, not ``{'a': [1]}``): the words of the note are
    the provider's, not the reader's language's."""
    text = (FIX / fixture).read_bytes()
    bodies: list[bytes] = []
    if fixture.endswith(".json"):
        obj = json.loads(text)
        bodies = [json.dumps(_with(obj, p, v)).encode() for p in _kind_paths(obj) for v in (None, True, {"a": [1]})]
    else:
        lines = text.split(b"\n")
        for n, line in enumerate(lines):
            if line.startswith(b"data:") and line[5:].strip()[:1] == b"{":
                obj = json.loads(line[5:])
                for p in _kind_paths(obj):
                    for v in (None, True, {"a": [1]}):
                        changed = b"data: " + json.dumps(_with(obj, p, v)).encode()
                        bodies.append(b"\n".join([*lines[:n], changed, *lines[n + 1 :]]))
    assert len(bodies) >= 6
    for body in bodies:
        events = list(get(provider).parse_stream(body))
        said = [note for note in _notes(events) if any(word in note for word in _PYTHON_WORDS)]
        assert not said, (body[:300], said)


def test_every_call_of_a_new_kind_and_its_fragments_are_kept_in_notes() -> None:
    """DashScope keeps each call of a kind it has no rule for, and each later fragment of one, in a note of its own
    (as OpenAI's reader does): the note was keyed by the kind, so a second such call was dropped unsaid, and a later
    fragment, naming no kind, became a call of no name."""

    def chunk(calls: list[Any], reason: str = "null") -> dict[str, Any]:
        message = {"role": "assistant", "content": "", "tool_calls": calls}
        return {"output": {"choices": [{"finish_reason": reason, "message": message}]}, "request_id": "r"}

    whole = chunk([{"id": "c1", "type": "computer", "computer": {"a": "FIRST"}}, {"id": "c2", "type": "computer",
                   "computer": {"a": "SECOND"}}], "tool_calls")  # fmt: skip
    notes = _notes(get("dashscope").response_events(json.dumps(whole).encode()))
    assert [("FIRST" in n, "SECOND" in n) for n in notes if "of type" in n] == [(True, False), (False, True)]
    streamed = _sse(
        chunk([{"index": 0, "id": "c1", "type": "computer", "computer": {"a": "FIRST"}}]),
        chunk([{"index": 0, "computer": {"a": "LATER"}}]),
        chunk([], "tool_calls"),
    )
    events = list(get("dashscope").parse_stream(streamed))
    assert not [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert any(n.startswith("a fragment of that tool call is not kept") and "LATER" in n for n in _notes(events))


def _reasoning_stream(part: dict[str, Any]) -> bytes:
    item = {"type": "reasoning", "id": "rs_1", "summary": [part]}
    response = {"id": "r", "model": "m", "status": "completed", "output": [item]}
    return _sse(
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "summary": []}},
        {"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
         "part": {k: v for k, v in part.items() if k != "data"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    )  # fmt: skip


def test_a_reasoning_part_of_a_new_kind_is_one_note_each_and_streamed_as_whole() -> None:
    """A Responses reasoning part of a kind with no rule and no text: each is kept in a note of its own (keyed by the
    kind, a second one was dropped unsaid), and a streamed one opens no empty summary block, which would be sent
    back as an empty summary_text part the reply never had (a whole reply's did not)."""
    item = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_audio", "data": "FIRST"},
            {"type": "summary_audio", "data": "SECOND"}]}  # fmt: skip
    body = {"id": "r", "object": "response", "model": "m", "status": "completed", "output": [item]}
    notes = _notes(get("openai-responses").response_events(json.dumps(body).encode()))
    assert [("FIRST" in n, "SECOND" in n) for n in notes if "of type" in n] == [(True, False), (False, True)]
    part = {"type": "summary_audio", "data": "PROBE"}
    whole = get("openai-responses").parse_response(
        json.dumps({**body, "output": [{**item, "summary": [part]}]}).encode()
    )
    (streamed,) = reduce_events(get("openai-responses").parse_stream(_reasoning_stream(part)))
    assert streamed.to_dict()["content"] == whole.to_dict()["content"]
    assert not any("summaryText" in (b.get("metadata") or {}) for b in streamed.to_dict()["content"])


def test_a_block_start_over_an_open_block_of_no_string_kind_names_it_in_json() -> None:
    """The kind of the open block a content_block_start comes over is named in JSON too (it said 'None')."""
    stream = b"".join(
        b"event: " + kind.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"
        for kind, payload in (
            ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
             "model": "x", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": None}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}}),
        )
    )  # fmt: skip
    said = [n for n in _notes(list(get("anthropic").parse_stream(stream))) if "has not stopped" in n]
    assert said and "whose null block" in said[0], said
