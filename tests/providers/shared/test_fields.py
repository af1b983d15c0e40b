"""Every field of the conversation reaches each provider's request, or is said: the field tables
(``providers/_request/fields.py``, each spec's ``fields``) walked against the schemas, and each provider's
formatter held to its table.

* The schemas (``agentmsg.schema_documents()``) declare the fields; each provider's table must name every one of
  them (a message's, each block type's, the declared keys of their metadata maps, a media source's) and nothing
  else. A field added to a schema fails here until the table says what each provider does with it.
* Each field, set to a value that can be found, is formatted for each provider: ``sent`` is in the body;
  ``reported`` is said with its rule at the field (or the whole block is, with a lossy rule); ``mapped`` is in the
  body or said so; ``not sent`` is in neither. A key the schema does not declare is said (``unknown-key-dropped``)
  on a message, every block type and a media source. Every body also passes its provider's oracle.
"""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentmsg
from agentmsg import Msg
from agentmsg.providers import NAMES, RULES, get
from agentmsg.providers._request.fields import COMMON, MAPPED, NOT_SENT, REPORTED, SENT, Handling
from tests.oracles import check

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA="
SIG = "c2lnbmF0dXJlLXByb2Jl"  # base64 ("signature-probe"): a signature Gemini takes too


def table(name: str) -> dict[str, dict[str, Handling]]:
    fields = get(name).spec.fields
    return {k: dict(v) for k, v in (fields if fields is not None else COMMON).items()}


# ---- the schemas' fields --------------------------------------------------------------------------


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The local definitions a property refers to (``$ref``, or the branches of an ``anyOf``)."""
    refs = [node, *list(node.get("anyOf", []))]
    out = []
    for r in refs:
        ref = r.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            out.append(doc["$defs"][ref.rpartition("/")[2]])
    return out


def _object_fields(doc: dict[str, Any], node: dict[str, Any]) -> set[str]:
    """The keys an object declares, and ``metadata.<key>`` for each declared key of its metadata map."""
    fields = set(node["properties"])
    for target in _resolve(doc, node["properties"].get("metadata", {})):
        if target.get("x-agentmsg-map"):
            fields |= {f"metadata.{k}" for k in target.get("properties", {})}
    return fields


def schema_fields() -> dict[str, set[str]]:
    """Object (``message``, a block type, ``source``) -> every field the schemas declare for it."""
    docs = agentmsg.schema_documents()
    out: dict[str, set[str]] = {}
    msg = docs["msg.schema.json"]
    out["message"] = _object_fields(msg, msg)
    blocks = docs["content-block.schema.json"]
    for branch in blocks["anyOf"]:
        node = blocks["$defs"][branch["$ref"].rpartition("/")[2]]
        out[node["properties"]["type"]["const"]] = _object_fields(blocks, node)
    source = docs["source.schema.json"]
    out["source"] = set().union(
        *(set(source["$defs"][b["$ref"].rpartition("/")[2]]["properties"]) for b in source["anyOf"])
    )
    return out


@pytest.mark.parametrize("provider", NAMES)
def test_the_table_names_every_field_the_schemas_declare(provider: str) -> None:
    """A field added to a schema (a block's, a metadata map's declared key, a source's) fails here until the table
    says what this provider does with it; a field the schemas no longer declare fails too."""
    declared = schema_fields()
    fields = table(provider)
    problems = []
    for kind, names in sorted(declared.items()):
        known = set(fields.get(kind, {}))
        problems += [f"{kind}.{n}: not in {provider}'s field table" for n in sorted(names - known)]
        problems += [f"{kind}.{n}: in {provider}'s table, not in the schemas" for n in sorted(known - names)]
    problems += [f"{kind}: in {provider}'s table, not in the schemas" for kind in sorted(set(fields) - set(declared))]
    assert not problems, "\n".join(problems)
    for kind, handled in fields.items():
        for name, h in handled.items():
            assert all(rule in RULES for rule in h.rules), (provider, kind, name, h.rules)
            if h.how == REPORTED:
                assert h.rules, (provider, kind, name)


# ---- each field through each formatter ------------------------------------------------------------


def _user(content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "u", "role": "USER", "content": content, "metadata": {}, **extra}


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "a", "role": "ASSISTANT", "content": content, "metadata": {}}


def _call() -> dict[str, Any]:
    return {"type": "tool_use", "id": "call_probe", "name": "probe_tool", "input": {"q": "probe-input"}}


def _result(**extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "id": "call_probe", "name": "probe_result_name", "output": [], **extra}


def base(kind: str, family: str) -> tuple[list[dict[str, Any]], str]:
    """A conversation holding one object of ``kind`` (the provider's own, where it matters) and its pointer."""
    if kind == "message":
        return [_user([{"type": "text", "text": "hello"}])], "/0"
    if kind == "text":
        return [_user([{"type": "text", "text": "probe-text"}])], "/0/content/0"
    media = {
        "image": {"type": "image", "source": {"type": "url", "url": "https://example.com/probe.png"}},
        "audio": {"type": "audio", "source": {"type": "base64", "media_type": "audio/wav", "data": WAV}},
        "video": {"type": "video", "source": {"type": "url", "url": "https://example.com/probe.mp4"}},
        "data": {"type": "data", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        "source": {"type": "image", "source": {"type": "url", "url": "https://example.com/probe.png"}},
    }
    if kind in media:
        pointer = "/0/content/1" + ("/source" if kind == "source" else "")
        return [_user([{"type": "text", "text": "Look."}, media[kind]])], pointer
    question = _user([{"type": "text", "text": "q"}])
    if kind == "thinking":
        thinking = {
            "type": "thinking",
            "thinking": "probe-thinking",
            "metadata": {"provider": family, "signature": SIG},
        }
        return [question, _assistant([thinking, {"type": "text", "text": "a"}])], "/1/content/0"
    answer = {"id": "t", "role": "TOOL", "content": [_result(output=[{"type": "text", "text": "probe-output"}])]}
    if kind == "tool_use":
        return [question, _assistant([_call()]), answer], "/1/content/0"
    if kind == "tool_result":
        return [question, _assistant([_call()]), answer], "/2/content/0"
    if kind == "hint":
        hint = {"type": "hint", "hint": "probe-hint"}
        return [question, _assistant([{"type": "text", "text": "a"}, hint])], "/1/content/1"
    raise KeyError(kind)


#: (object, field) -> (value, the text of it the body holds when sent: None when it cannot be told apart)
PROBES: dict[tuple[str, str], tuple[Any, str | None]] = {
    ("message", "id"): ("probe-message-id", "probe-message-id"),
    ("message", "name"): ("probe_name", "probe_name"),
    ("message", "timestamp"): ("2031-02-03 04:05:06.000", "2031-02-03"),
    ("message", "usage"): ({"inputTokens": 987654, "outputTokens": 1}, "987654"),
    ("message", "metadata.agentscope_generate_reason"): ("TOOL_CALLS", None),
    ("message", "metadata._structured_output"): ({"probe_so": "probe-so-value"}, "probe-so-value"),
    ("message", "metadata._chat_usage"): ({"inputTokens": 987653, "outputTokens": 1}, "987653"),
    ("message", "metadata.agentmsg_grounding"): (
        {"provider": "openai", "annotations": [{"type": "url_citation", "url_citation": {"url": "https://x/probe-g"}}]},
        "probe-g",
    ),
    ("text", "text"): ("probe-text", "probe-text"),
    ("thinking", "thinking"): ("probe-thinking", "probe-thinking"),
    ("thinking", "metadata.signature"): (SIG, SIG),
    ("thinking", "metadata.redactedData"): ("cHJvYmUtcmVkYWN0ZWQ=", "cHJvYmUtcmVkYWN0ZWQ="),
    ("thinking", "metadata.reasoningDetails"): ([{"type": "probe-details"}], "probe-details"),
    ("thinking", "metadata.providerBlock"): (
        {"type": "server_tool_use", "id": "srvtoolu_probe", "name": "web_search", "input": {"query": "probe-server"}},
        "probe-server",
    ),
    ("thinking", "metadata.citations"): (
        [{"type": "char_location", "cited_text": "probe-cited", "document_index": 0, "start_char_index": 0}],
        "probe-cited",
    ),
    ("image", "minPixels"): (123457, "123457"),
    ("image", "maxPixels"): (123458, "123458"),
    ("video", "fps"): (2.75, "2.75"),
    ("video", "maxFrames"): (123459, "123459"),
    ("video", "minPixels"): (123461, "123461"),
    ("video", "maxPixels"): (123462, "123462"),
    ("video", "totalPixels"): (123463, "123463"),
    ("data", "id"): ("probe-data-id", "probe-data-id"),
    ("data", "name"): ("probe-name.png", "probe-name.png"),
    ("tool_use", "id"): ("call_probe", "call_probe"),
    ("tool_use", "name"): ("probe_tool", "probe_tool"),
    ("tool_use", "input"): ({"q": "probe-input"}, "probe-input"),
    ("tool_use", "content"): ('{"q": "probe-content"}', "probe-content"),
    ("tool_use", "metadata.argumentsError"): ("probe-arguments-error", "probe-arguments-error"),
    ("tool_use", "state"): ("finished", None),
    ("tool_result", "id"): ("call_probe", "call_probe"),
    ("tool_result", "name"): ("probe_result_name", "probe_result_name"),
    ("tool_result", "output"): ([{"type": "text", "text": "probe-output"}], "probe-output"),
    ("tool_result", "state"): ("error", None),
    ("tool_result", "metadata.agentscope_suspended"): (True, None),
    ("hint", "id"): ("probe-hint-id", "probe-hint-id"),
    ("hint", "hint"): ("probe-hint", "probe-hint"),
    ("hint", "source"): ("probe-hint-source", "probe-hint-source"),
    ("source", "url"): ("https://example.com/probe.png", "https://example.com/probe.png"),
    ("source", "mime_type"): ("image/png", None),
}


def _probe(kind: str, field: str, family: str) -> tuple[Any, str | None]:
    """The value a field is set to, and the text of it the body holds when sent."""
    if (kind, field) in PROBES:
        return PROBES[(kind, field)]
    if field == "type" or field == "content" or field == "role" or (field == "source" and kind != "hint"):
        return None, None  # (the object's kind, or what the rows of its parts cover: set by base())
    if field == "metadata":
        return {"probe_meta": "probe-meta-value"}, "probe-meta-value"
    if field == "metadata.provider":
        return family, None
    if field == "metadata.thoughtSignature":
        return SIG, SIG
    if field == "metadata.redacted":
        return True, None
    if field.startswith("metadata."):
        key = field.removeprefix("metadata.")
        value = {"agentscope_synthetic": True, "_bypass_multiagent_history_merge": True, "_cache_control": True}
        if key in value:
            return value[key], None
        if key in (
            "agentscope_confirm_results",
            "agentmsg_hitl",
            "agentmsg_errors",
            "agentmsg_notes",
            "agentmsg_reduce_errors",
        ):
            return [], None
        if key == "agentmsg_refusal":
            return True, None
        return f"probe-{key}", f"probe-{key}"
    if kind == "source" and field in ("media_type", "data"):
        return None, None  # (an inline source: the data block's and audio block's rows)
    raise KeyError((kind, field))


def _set(obj: dict[str, Any], field: str, value: Any) -> None:
    if field == "metadata":
        obj["metadata"] = {**(obj.get("metadata") or {}), **value}
    elif field.startswith("metadata."):
        meta = obj.get("metadata") or {}
        meta[field.removeprefix("metadata.")] = value
        if field == "metadata.redacted":
            meta["redactedData"] = "cHJvYmUtcmVkYWN0ZWQ="
        if field == "metadata.redactedData":  # (redacted reasoning holds both)
            meta["redacted"] = True
        obj["metadata"] = meta
    else:
        obj[field] = value


def _at(messages: list[dict[str, Any]], pointer: str) -> dict[str, Any]:
    node: Any = messages
    for part in pointer.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node  # type: ignore[no-any-return]


def cases() -> Iterator[tuple[str, str, str]]:
    for provider in NAMES:
        for kind, fields in sorted(table(provider).items()):
            for field in sorted(fields):
                yield provider, kind, field


def _escape(field: str) -> str:
    return field.replace("~", "~0").replace("/", "~1").replace(".", "/", 1) if field.startswith("metadata.") else field


@pytest.mark.parametrize(("provider", "kind", "field"), list(cases()))
def test_each_field_is_carried_or_said(provider: str, kind: str, field: str) -> None:
    family = get(provider).spec.families[0]
    handling = table(provider)[kind][field]
    value, text = _probe(kind, field, family)
    messages, pointer = base(kind, family)
    if value is not None:
        _set(_at(messages, pointer), field, copy.deepcopy(value))
    msgs = [Msg.from_dict(m) for m in messages]
    request = get(provider).format_request(msgs, model="m")
    problems = check(provider, request)
    assert not problems, f"{provider} oracle rejects the body:\n" + "\n".join(problems)
    body = json.dumps(request.body, ensure_ascii=False)
    at = f"{pointer}/{_escape(field)}"
    said_here = [d.rule for d in request.diagnostics if d.pointer == at]
    # the whole object left out or replaced (a placeholder, reasoning not replayed): its fields with it
    said_above = [d.rule for d in request.diagnostics if at.startswith(d.pointer + "/") and RULES[d.rule][0] == "lossy"]
    carried = text is not None and text in body
    why = f"{provider} {kind}.{field} ({handling.how}): body {body[:600]}; diagnostics {request.diagnostics_dicts()}"
    assert all(rule in handling.rules for rule in said_here), why
    if handling.how == SENT:
        assert text is None or carried, why
        assert not said_here, why
    elif handling.how == REPORTED:
        assert said_here or said_above, why
        assert not carried, why
    elif handling.how == MAPPED:
        assert text is None or carried or said_here or said_above, why
    else:
        assert handling.how == NOT_SENT
        assert not carried and not said_here, why


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("kind", sorted(COMMON))
def test_a_key_the_schema_does_not_declare_is_said(provider: str, kind: str) -> None:
    family = get(provider).spec.families[0]
    messages, pointer = base(kind, family)
    _at(messages, pointer)["x_probe/key"] = "probe-unknown-value"
    msgs = [Msg.from_dict(m) for m in messages]
    request = get(provider).format_request(msgs, model="m")
    assert "probe-unknown-value" not in json.dumps(request.body)
    said = [(d.pointer, d.rule) for d in request.diagnostics]
    assert (f"{pointer}/x_probe~1key", "unknown-key-dropped") in said, said
    # in a tool result's output too
    if kind == "text":
        messages, pointer = base("tool_result", family)
        _at(messages, pointer)["output"][0]["x_probe"] = 1
        request = get(provider).format_request([Msg.from_dict(m) for m in messages], model="m")
        assert (f"{pointer}/output/0/x_probe", "unknown-key-dropped") in [
            (d.pointer, d.rule) for d in request.diagnostics
        ]


AGENTSCOPE_V2 = Path(__file__).resolve().parents[2] / "fixtures" / "agentscope_python" / "v2"


def _agentscope_v2(names: list[str], count: int) -> list[Msg]:
    """``count`` messages, ``names``' AgentScope Python 2.x fixtures over and over, read with the legacy reader."""
    read = [Msg.from_json((AGENTSCOPE_V2 / f"{n}.json").read_text(), notes=[]) for n in names]
    return [read[i % len(read)] for i in range(count)]


_AS_V2 = ["user_text", "assistant_text", "assistant_thinking", "assistant_tool_call", "assistant_tool_result_text"]


@pytest.mark.parametrize("provider", NAMES)
def test_unknown_keys_are_said_once_per_key_and_place(provider: str) -> None:
    """AgentScope Python 2.x messages hold keys with no home in the schema (``finished_at``, a block's ``id`` and
    ``created_at``, a tool call's ``suggested_rules``): said once per key and place, not once per message (a
    1,000-message conversation said 3,000 of them), pointed at the first, counting and listing those that hold it,
    and not called a newer producer's."""
    r = get(provider).format_request(_agentscope_v2(_AS_V2, 5), model="m")
    said = [d for d in r.diagnostics if d.rule == "unknown-key-dropped"]
    assert [d.pointer for d in said] == [
        "/0/finished_at",
        "/0/content/0/id",
        "/0/content/0/created_at",
        "/3/content/1/suggested_rules",
    ], said
    by = {d.pointer: d.message for d in said}
    assert all("newer producer" not in m and "not in the schema" in m for m in by.values()), by
    assert "(`finished_at`)" in by["/0/finished_at"] and "on 2 messages (messages 0, 1;" in by["/0/finished_at"]
    created = by["/0/content/0/created_at"]
    assert "`content/*/created_at`" in created and "text, thinking, tool_use and tool_result blocks" in created
    assert "on 7 blocks (/0/content/0, /1/content/0, /2/content/0, /2/content/1, /3/content/0, /3/content/1," in created
    assert "on " not in by["/3/content/1/suggested_rules"]  # (one block: nothing to count)
    big = get(provider).format_request(_agentscope_v2(_AS_V2, 1000), model="m")
    many = {d.pointer: d.message for d in big.diagnostics if d.rule == "unknown-key-dropped"}
    assert list(many) == list(by)
    assert "on 400 messages (messages 0, 1, 5, 6, 10, 11, 15, 16, 20, 21, 25, 26," in many["/0/finished_at"]
    assert ", 45, 46, ...; the first is pointed at)" in many["/0/finished_at"]
    assert "on 1400 blocks (" in many["/0/content/0/created_at"]
    finished = next(d for d in big.diagnostics if d.pointer == "/0/finished_at")
    assert finished.count == 400 and finished.pointers[-1] == "/996/finished_at"  # every one, not the 20 listed
    assert all(len(m) <= 400 and "characters left out" not in m for m in many.values()), many


def test_unknown_keys_of_each_place_are_said_apart() -> None:
    """The same key on a message, a block, a block in a tool result's output and a media source: four places,
    four diagnostics; ``strict`` raises each of them."""
    msgs = [
        Msg.from_dict(
            {
                "id": "m0",
                "role": "USER",
                "x": 1,
                "content": [
                    {"type": "text", "text": "hi", "x": 1},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png", "x": 1}},
                ],
            }
        ),
        Msg.from_dict(
            {"id": "m1", "role": "ASSISTANT", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]}
        ),
        Msg.from_dict(
            {
                "id": "m2",
                "role": "TOOL",
                "x": 2,
                "content": [
                    {"type": "tool_result", "id": "c1", "output": [{"type": "text", "text": "ok", "x": 3}]},
                ],
            }
        ),
    ]
    r = get("anthropic").format_request(msgs, model="m")
    said = {d.pointer: d.message for d in r.diagnostics if d.rule == "unknown-key-dropped"}
    assert list(said) == ["/0/x", "/0/content/0/x", "/0/content/1/source/x", "/2/content/0/output/0/x"], said
    assert "on 2 messages (messages 0, 2;" in said["/0/x"]
    assert "media source of image blocks (`content/*/source/x`)" in said["/0/content/1/source/x"]
    assert "(`content/*/output/*/x`)" in said["/2/content/0/output/0/x"]
    with pytest.raises(agentmsg.ValidationError) as caught:
        get("anthropic").format_request(msgs, model="m", strict=True)
    raised = [(p.pointer, p.rule) for p in caught.value.problems if p.rule == "unknown-key-dropped"]
    assert raised == [(p, "unknown-key-dropped") for p in said]
    assert "on 2 messages (messages 0, 2;" in str(caught.value)


def test_a_field_the_table_does_not_know_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block field the table does not name (one new in the schema, before the table says what to do with it) is
    said whenever it holds a value: never dropped in silence."""
    from agentmsg.providers._request import fields as F

    spec = get("anthropic").spec
    trimmed = {kind: dict(v) for kind, v in (spec.fields or F.COMMON).items()}
    del trimmed["hint"]["id"]  # as if `id` were new
    monkeypatch.setattr(type(spec), "fields", property(lambda self: trimmed), raising=False)
    msgs = [
        Msg.from_dict(_user([{"type": "text", "text": "q"}])),
        Msg.from_dict(_assistant([{"type": "text", "text": "a"}, {"type": "hint", "hint": "h", "id": "h1"}])),
    ]
    request = get("anthropic").format_request(msgs)
    assert ("/1/content/1/id", "field-dropped") in [(d.pointer, d.rule) for d in request.diagnostics]
    unset = [msgs[0], Msg.from_dict(_assistant([{"type": "text", "text": "a"}, {"type": "hint", "hint": "h"}]))]
    assert "field-dropped" not in [d.rule for d in get("anthropic").format_request(unset).diagnostics]


def probe_conversations(provider: str) -> list[list[Msg]]:
    """A conversation for each field probe and unknown key of the provider's table, then all of them in one."""
    spec = get(provider).spec
    family = spec.families[0]
    conversations: list[list[Msg]] = []
    for name, kind, field in cases():
        if name != provider:
            continue
        value, _ = _probe(kind, field, family)
        messages, pointer = base(kind, family)
        if value is not None:
            _set(_at(messages, pointer), field, copy.deepcopy(value))
        conversations.append([Msg.from_dict(m) for m in messages])
    for kind in sorted(COMMON):
        messages, pointer = base(kind, family)
        _at(messages, pointer)["x_probe"] = 1
        conversations.append([Msg.from_dict(m) for m in messages])
    conversations.append([m for c in conversations for m in c])
    return conversations


@pytest.mark.parametrize("provider", NAMES)
def test_the_pass_says_what_a_full_look_at_each_message_says(provider: str) -> None:
    """scan looks at a message in full (fields._message) only when its quick look finds something: the same
    diagnostics, in the same order, as the full look at every message, for every field probe and unknown key of
    the table (each in a conversation of its own, then all of them in one)."""
    from agentmsg.providers._request import fields
    from agentmsg.providers._request.context import Context, FormatOptions

    spec = get(provider).spec
    every_table = table(provider)
    conversations = probe_conversations(provider)
    said = 0
    for msgs in conversations:
        quick = Context(provider, spec.families, FormatOptions(), msgs)
        fields.scan(quick, msgs, every_table)
        full = Context(provider, spec.families, FormatOptions(), msgs)
        checks = fields.checks(every_table)
        unknown = fields._Unknown()
        for i, msg in enumerate(msgs):
            fields._message(full, i, msg, checks, unknown)
        unknown.say(full)
        assert quick.diagnostics == full.diagnostics
        said += len(full.diagnostics)
    assert said  # (the probes say something)


@pytest.mark.parametrize("provider", NAMES)
def test_the_walk_looks_at_the_usual_messages_as_the_pass_would(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walks look at the usual messages' fields as they send their blocks (fields.Quick) and leave the pass only
    the others: the request's diagnostics are those of the pass over every message, in the same order, for every
    field probe and unknown key of the table (alone, then all in one conversation)."""
    from agentmsg.providers._request import run

    fmt = get(provider).format_request
    conversations = probe_conversations(provider)
    looked = [fmt(msgs, model="m").diagnostics for msgs in conversations]
    monkeypatch.setattr(run, "checks", lambda table: types.SimpleNamespace(quick=None))  # the pass at every message
    assert [fmt(msgs, model="m").diagnostics for msgs in conversations] == looked
