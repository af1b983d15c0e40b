"""The message API: constructors, role rules, codecs, accessors."""

from __future__ import annotations

import collections
import dataclasses
import re
import types
from collections.abc import Callable
from datetime import timezone
from typing import Any

import attrs
import orjson
import pytest

import agentmsg
from agentmsg import (
    AssistantMessage,
    Base64Source,
    DataBlock,
    GenerateReason,
    ImageBlock,
    Msg,
    MsgRole,
    Problem,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
)

JAVA_USER = '{"id":"m1","name":"Alice","role":"USER","content":[{"type":"text","text":"hi"}],"metadata":{},"timestamp":"2025-01-01 12:00:00.000","usage":null}'
JAVA_CASE5 = (
    '{"id":"chatcmpl-1","name":"Friday","role":"ASSISTANT","content":[{"type":"thinking","thinking":"think","metadata":null},'
    '{"type":"text","text":"Hello"},{"type":"tool_use","id":"call_a","name":"f","input":{"x":1},"content":"{\\"x\\":1}","metadata":{},"state":"pending"},'
    '{"type":"tool_use","id":"call_b","name":"g","input":{},"content":"{}","metadata":{},"state":"pending"}],'
    '"metadata":{"_chat_usage":{"inputTokens":7,"outputTokens":3,"cachedTokens":0,"time":0.0,"totalTokens":10}},'
    '"timestamp":"2025-01-01 12:00:00.000","usage":{"inputTokens":7,"outputTokens":3,"cachedTokens":0,"time":0.0,"totalTokens":10}}'
)


def test_plain_string_becomes_text_block_and_id_timestamp_are_filled() -> None:
    m = UserMessage("hello", name="alice")
    assert m.role is MsgRole.USER
    assert m.content == [TextBlock(text="hello")]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", m.id)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", m.timestamp or "")
    assert m.created_at is not None and m.created_at.tzinfo is timezone.utc
    assert m.metadata == {} and m.usage is None
    assert UserMessage("a").id != UserMessage("a").id


def test_messages_sharing_an_id_are_unequal_when_any_other_field_differs() -> None:
    """``Msg.__eq__`` compares every field. Each pair shares its id (and time), so the check fails if ``__eq__``
    ignored the field that differs: two fresh messages would differ by their random ids alone."""
    m = AssistantMessage(
        "hi",
        name="Friday",
        id="m1",
        metadata={"k": 1},
        timestamp="2025-01-01 12:00:00.000",
        usage={"inputTokens": 1, "outputTokens": 2},
    )
    same = Msg.from_json(m.to_json())
    assert same == m and (same != m) is False and same is not m
    changes: dict[str, Any] = {
        "role": "USER",
        "content": [TextBlock(text="ho")],
        "name": "Jarvis",
        "metadata": {"k": 2},
        "timestamp": "2025-01-01 12:00:00.001",
        "usage": {"inputTokens": 1, "outputTokens": 3},
        "unknown_keys": {"future": 1},
        "id": "m2",
    }
    assert set(changes) == {a.name for a in attrs.fields(Msg)}  # every field is tried
    for field, value in changes.items():
        other = m.copy(**{field: value})
        assert (other.id == m.id) == (field != "id")
        assert other != m and (other == m) is False, field
        assert m.copy(**{field: getattr(m, field)}) == m, field


def test_java_key_order_and_null_conventions_on_write() -> None:
    m = AssistantMessage(
        [ThinkingBlock(thinking="t"), ToolUseBlock(id="c", name="f")],
        name=None,
        id="x",
        timestamp="2025-01-01 00:00:00.000",
    )
    assert m.to_json() == (
        '{"id":"x","name":null,"role":"ASSISTANT","content":[{"type":"thinking","thinking":"t","metadata":null},'
        '{"type":"tool_use","id":"c","name":"f","input":{},"content":null,"metadata":{},"state":"pending"}],'
        '"metadata":{},"timestamp":"2025-01-01 00:00:00.000","usage":null}'
    )


@pytest.mark.parametrize("text", [JAVA_USER, JAVA_CASE5])
def test_java_output_round_trips_byte_for_byte(text: str) -> None:
    m = Msg.from_json(text)
    assert m.to_json() == text
    assert m.to_json_bytes() == text.encode()
    assert Msg.from_json(text.encode()) == m


def test_decode_returns_role_pinned_class() -> None:
    assert type(Msg.from_json(JAVA_USER)) is UserMessage
    assert type(Msg.from_json(JAVA_CASE5)) is AssistantMessage
    assert type(UserMessage.from_json(JAVA_USER)) is UserMessage
    with pytest.raises(ValidationError) as info:
        AssistantMessage.from_json(JAVA_USER)
    assert info.value.problems[0].pointer == "/role"


@pytest.mark.parametrize(
    ("cls", "block"),
    [
        (UserMessage, ThinkingBlock(thinking="x")),
        (UserMessage, ToolUseBlock(id="c", name="f")),
        (SystemMessage, ImageBlock(source=URLSource(url="https://a/x.png"))),
        (SystemMessage, ToolResultBlock(id="c")),
    ],
)
def test_role_rules_at_construction(cls: type[UserMessage] | type[SystemMessage], block: Any) -> None:
    with pytest.raises(ValidationError) as info:
        cls(["ok", block])
    (problem,) = info.value.problems
    assert problem.pointer == "/content/1/type"
    assert problem.rule == "role-content"
    assert "may only contain" in problem.message and problem.message.endswith(f"got {block.type!r}")
    assert isinstance(info.value, ValueError)


def test_role_rules_allow_what_java_allows() -> None:
    AssistantMessage([TextBlock(text="a"), ThinkingBlock(thinking="t"), ToolResultBlock(id="c", name="f")])
    ToolResultMessage([ThinkingBlock(thinking="t"), ToolResultBlock(id="c")])
    UserMessage([DataBlock(source=Base64Source(media_type="image/png", data="AAAA"))])
    SystemMessage("You are helpful.")
    Msg("ASSISTANT", "roles are uppercase, as on the wire")


def test_lowercase_roles_are_rejected_with_a_hint_everywhere() -> None:
    makes: tuple[Callable[[], Msg], ...] = (
        lambda: Msg("user", "x"),
        lambda: UserMessage("x").copy(role="assistant"),
        lambda: Msg.from_json('{"id":"m","role":"USer","content":[]}'),
    )
    for make in makes:
        with pytest.raises(ValidationError) as info:
            make()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("/role", "enum")
        assert "uppercase" in problem.message
    # AgentScope Python writes "user": readers read it uppercase with a note, strict readers refuse it
    notes: list[Problem] = []
    assert Msg.from_json('{"id":"m","role":"user","content":[]}', notes=notes).role == "USER"
    assert [(p.pointer, p.rule) for p in notes] == [("/role", "legacy-key")]
    with pytest.raises(ValidationError) as info:
        Msg.from_json('{"id":"m","role":"user","content":[]}', strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/role", "legacy-key")]


def test_constructor_rejects_bad_values_with_pointer() -> None:
    with pytest.raises(ValidationError) as info:  # the block's own constructor checks it
        ImageBlock(source=Base64Source(media_type="image/png", data="data:image/png;base64,AA"))
    assert info.value.problems[0].pointer == "/source/data"
    with pytest.raises(ValidationError) as info:  # as a dict inside a message: pointer into the message
        UserMessage([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "data:,"}}])
    assert info.value.problems[0].pointer == "/content/0/source/data"
    with pytest.raises(ValidationError):
        Msg("BOSS", "x")
    with pytest.raises(ValidationError):
        Msg(None, "x")
    with pytest.raises(ValidationError):
        UserMessage(role="SYSTEM", content="x")
    with pytest.raises(ValidationError):
        UserMessage([object()])  # type: ignore[list-item]


def test_dict_blocks_are_decoded_at_construction() -> None:
    m = UserMessage([{"type": "text", "text": "a"}, "b"])
    assert m.content == [TextBlock(text="a"), TextBlock(text="b")]
    with pytest.raises(ValidationError) as info:
        UserMessage([{"type": "text"}])
    assert info.value.problems[0].pointer == "/content/0"


def test_accessors() -> None:
    m = Msg.from_json(JAVA_CASE5)
    assert m.text_content == "Hello"
    assert [b.id for b in m.blocks(ToolUseBlock)] == ["call_a", "call_b"]
    assert [b.id for b in m.blocks("tool_use")] == ["call_a", "call_b"]
    assert m.first_block(ThinkingBlock) == ThinkingBlock(thinking="think")
    assert m.first_block(ImageBlock) is None
    assert m.has_blocks("thinking") and not m.has_blocks(ToolResultBlock)
    assert m.generate_reason is GenerateReason.MODEL_STOP
    assert m.chat_usage is not None and m.chat_usage.total_tokens == 10
    assert UserMessage(["a", "b", ImageBlock(source=URLSource(url="https://a/x.png")), "c"]).text_content == "a\nb\nc"
    assert UserMessage([]).text_content == ""
    with pytest.raises(ValueError):
        m.blocks("nope")


def test_generate_reason_and_legacy_usage() -> None:
    m = AssistantMessage(
        "x", metadata={"agentscope_generate_reason": "TOOL_CALLS", "_chat_usage": {"inputTokens": 1, "outputTokens": 2}}
    )
    assert m.generate_reason is GenerateReason.TOOL_CALLS
    assert m.chat_usage is not None and (m.chat_usage.input_tokens, m.chat_usage.output_tokens) == (1, 2)


@attrs.define
class Plan:
    goal: str
    steps: list[str]


def test_structured_output() -> None:
    m = AssistantMessage("done", metadata={"_structured_output": {"goal": "g", "steps": ["a", "b"]}})
    assert m.has_structured_output()
    assert m.structured_output(Plan) == Plan(goal="g", steps=["a", "b"])
    with pytest.raises(ValidationError):
        AssistantMessage("x").structured_output(Plan)
    with pytest.raises(ValidationError):
        AssistantMessage("x", metadata={"_structured_output": {"goal": "g"}}).structured_output(Plan)


@dataclasses.dataclass
class Step:
    n: int


@dataclasses.dataclass
class Steps:
    goal: str
    steps: list[Step]


def test_structured_output_read_as_a_dict_a_class_or_a_callable() -> None:
    """``structured_output()`` is a copy of the object; ``cls`` may be an attrs class or a dataclass (cattrs), a
    pydantic model, a TypedDict or plain class (keyword arguments), or a callable taking the object. A value that
    does not fit is a ValidationError with a problem per value, at its pointer."""
    data = {"goal": "g", "steps": [{"n": 1}, {"n": 2}]}
    m = AssistantMessage("done", metadata={"_structured_output": data})
    got = m.structured_output()
    assert got == data
    got["goal"] = "changed"  # a copy: the message keeps its own
    assert m.metadata["_structured_output"]["goal"] == "g"
    assert m.structured_output(Steps) == Steps("g", [Step(1), Step(2)])
    assert m.structured_output(lambda d: len(d["steps"])) == 2
    bad = AssistantMessage("x", metadata={"_structured_output": {"goal": "g", "steps": [{"n": 1}, {"n": "two"}]}})
    with pytest.raises(ValidationError) as exc:
        bad.structured_output(Steps)
    assert [(p.pointer, p.rule) for p in exc.value.problems] == [
        ("/metadata/_structured_output/steps/1/n", "structured-output")
    ]
    pytest.importorskip("pydantic")
    from pydantic import BaseModel

    class PSteps(BaseModel):
        goal: str
        steps: list[int]

    with pytest.raises(ValidationError) as exc:
        m.structured_output(PSteps)
    assert [p.pointer for p in exc.value.problems] == [
        "/metadata/_structured_output/steps/0",
        "/metadata/_structured_output/steps/1",
    ]
    assert AssistantMessage("x", metadata={"_structured_output": {"goal": "g", "steps": [3]}}).structured_output(
        PSteps
    ) == PSteps(goal="g", steps=[3])
    with pytest.raises(ValidationError) as exc:
        AssistantMessage("x").structured_output()
    assert (exc.value.problems[0].pointer, exc.value.problems[0].rule) == ("/metadata/_structured_output", "required")
    with pytest.raises(TypeError):
        m.structured_output(3)  # type: ignore[call-overload]


def test_copy_with_changes() -> None:
    m = Msg.from_json(JAVA_USER)
    renamed = m.copy(name="Bob")
    assert renamed.name == "Bob" and renamed.id == m.id and m.name == "Alice"
    assert type(renamed) is UserMessage
    promoted = m.copy(role="ASSISTANT", content=[ThinkingBlock(thinking="t")])
    assert type(promoted) is AssistantMessage
    with pytest.raises(ValidationError):
        m.copy(content=[ThinkingBlock(thinking="t")])  # USER may not think
    with pytest.raises(TypeError):
        m.copy(colour="red")


def test_copy_keeps_a_null_timestamp_and_can_clear_one() -> None:
    """A message read without a timestamp (null, or no key: AgentScope Java 1.x, a hand-written one) got one from
    ``copy()``, the time of the copy, though it was told to change nothing (``m.copy() == m`` was False), and
    ``copy(timestamp=None)`` set it to now rather than to null, which the schema allows. The copy keeps the
    timestamp it has or is given, null included; the id and the rest as before."""
    m = Msg.from_json('{"id":"m1","role":"USER","content":[{"type":"text","text":"hi"}]}')
    assert m.timestamp is None
    same = m.copy()
    assert same.timestamp is None and same == m and same.to_json() == m.to_json()
    assert m.copy(name="Bob").timestamp is None
    dated = Msg.from_json(JAVA_USER)
    cleared = dated.copy(timestamp=None)
    assert cleared.timestamp is None and type(cleared) is UserMessage
    assert cleared.copy(timestamp="2025-01-02 00:00:00.000").timestamp == "2025-01-02 00:00:00.000"
    assert dated.copy().timestamp == dated.timestamp
    with pytest.raises(ValidationError) as info:
        dated.copy(timestamp="yesterday")
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/timestamp", "timestamp")]


def test_unknown_keys_are_kept_and_strict_rejects_them() -> None:
    text = '{"id":"x","role":"USER","future":1,"content":[{"type":"text","text":"a","annotations":[]},{"type":"image","source":{"type":"url","url":"u","mimeType":"x"}}]}'
    m = Msg.from_json(text)
    assert m.unknown_keys == {"future": 1}
    assert m.content[0].unknown_keys == {"annotations": []}
    assert m.to_dict()["content"][1] == {"type": "image", "source": {"type": "url", "url": "u", "mimeType": "x"}}
    assert [p.pointer for p in agentmsg.find_unknown_keys(m)] == [
        "/content/0/annotations",
        "/content/1/source/mimeType",
        "/future",
    ]
    with pytest.raises(ValidationError) as info:
        Msg.from_json(text, strict=True)
    assert {p.pointer for p in info.value.problems} == {"", "/content/0", "/content/1/source"}
    assert {p.rule for p in info.value.problems} == {"additionalProperties"}
    with pytest.raises(ValidationError):  # other rules still apply
        Msg.from_json('{"id":"x","role":"BOSS","future":1,"content":[]}')


def test_lenient_is_deprecated_and_changes_nothing() -> None:
    text = '{"id":"x","role":"USER","future":1,"content":[]}'
    with pytest.warns(DeprecationWarning, match="lenient"):
        m = Msg.from_json(text, lenient=True)
    assert m == Msg.from_json(text) and m.unknown_keys == {"future": 1}
    with pytest.warns(DeprecationWarning):
        assert Msg.from_dict(orjson.loads(text), lenient=True) == m


def test_snake_case_sizing_is_read_and_camel_case_wins() -> None:
    m = Msg.from_json(
        '{"id":"x","role":"USER","content":[{"type":"image","source":{"type":"url","url":"u"},"min_pixels":1,"minPixels":2,"max_pixels":3}]}'
    )
    assert m.to_dict()["content"][0] == {
        "type": "image",
        "source": {"type": "url", "url": "u"},
        "minPixels": 2,
        "maxPixels": 3,
    }


def test_validate_and_is_valid() -> None:
    agentmsg.validate(orjson.loads(JAVA_USER))
    assert agentmsg.is_valid({"type": "text", "text": "x"}, kind="content-block")
    assert not agentmsg.is_valid({"type": "text"}, kind="content-block")
    with pytest.raises(ValueError, match="unknown kind"):
        agentmsg.validate({}, kind="nope")


@pytest.mark.parametrize(
    "call", [agentmsg.validate, agentmsg.is_valid, agentmsg.find_unknown_keys], ids=lambda f: f.__name__
)
@pytest.mark.parametrize(("kind", "rule"), [("conversation", "enum"), ("nope", "enum"), (1, "type"), (["msg"], "type")])
def test_a_kind_that_names_no_schema_is_a_validation_error(call: Any, kind: Any, rule: str) -> None:
    """An unknown kind raised a bare ValueError (a kind that is no string: an unhashable TypeError from the table);
    now the SDK's error at /kind naming the known kinds, a ValueError still. is_valid raises it too: a False would
    say the instance is wrong when the call is."""
    with pytest.raises(agentmsg.ValidationError) as info:
        call({"role": "USER", "content": "x"}, kind)
    assert isinstance(info.value, ValueError)
    [problem] = info.value.problems
    assert (problem.pointer, problem.rule) == ("/kind", rule)
    assert "chat-usage, content-block, event, generate-reason, msg, source" in problem.message


def test_block_codecs() -> None:
    block = agentmsg.block_from_json(
        '{"type":"data","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"name":"a.pdf"}'
    )
    assert isinstance(block, DataBlock) and block.id is None
    assert (
        agentmsg.block_to_json(block)
        == '{"type":"data","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"name":"a.pdf"}'
    )
    assert re.fullmatch(r"[0-9a-f]{32}", agentmsg.new_data_block_id())


def test_thinking_extension_accessors() -> None:
    signed = ThinkingBlock(thinking="", metadata={"signature": "sig", "provider": "anthropic"})
    assert agentmsg.thinking_signature(signed) == "sig" and agentmsg.thinking_provider(signed) == "anthropic"
    assert not agentmsg.is_redacted(signed)  # never inferred from empty text
    assert agentmsg.is_redacted(ThinkingBlock(thinking="", metadata={"redacted": True, "redactedData": "x"}))
    call = ToolUseBlock(id="c", name="f", metadata={"thoughtSignature": "ts"})
    assert agentmsg.tool_call_signature(call) == "ts"
    m = AssistantMessage([signed, call])
    assert Msg.from_json(m.to_json()) == m


@pytest.mark.parametrize("bad", [None, 1, {"metadata": {"signature": "s"}}, TextBlock(text="x")])
def test_the_block_accessors_refuse_what_is_not_their_block(bad: Any) -> None:
    """thinking_signature, thinking_provider, is_redacted and tool_call_signature given a non-block (or another
    block) raised a bare AttributeError from ``.metadata``; now a ValidationError naming the argument."""
    accessors: list[Callable[[Any], object]] = [
        agentmsg.thinking_signature,
        agentmsg.thinking_provider,
        agentmsg.is_redacted,
        agentmsg.tool_call_signature,
    ]
    for accessor in accessors:
        with pytest.raises(ValidationError) as info:
            accessor(bad)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/block", "type")], accessor


@pytest.mark.parametrize(("kind", "rule"), [(1, "type"), (None, "type"), ("nope", "enum")])
def test_blocks_refuse_a_kind_that_names_no_block_type(kind: Any, rule: str) -> None:
    """``msg.blocks(1)`` raised a bare TypeError from isinstance; an unknown tag, a bare ValueError. Both are a
    ValidationError at ``/kind`` now (a ValueError still)."""
    m = UserMessage("hi")
    for call in (m.blocks, m.first_block):
        with pytest.raises(ValidationError) as info:
            call(kind)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/kind", rule)]
        assert isinstance(info.value, ValueError)


def test_blocks_take_a_tuple_or_a_union_of_block_classes() -> None:
    """``blocks`` and ``first_block`` look for blocks with isinstance, so a tuple or a union of classes found
    them all, until the check of ``kind`` refused what is not one class."""
    m = AssistantMessage([TextBlock(text="a"), ThinkingBlock(thinking="t"), TextBlock(text="b")])
    kinds: list[Any] = [(ThinkingBlock, TextBlock), ThinkingBlock | TextBlock]  # (typed as one class: runtime's)
    for kind in kinds:
        assert m.blocks(kind) == list(m.content)
        assert m.first_block(kind) is m.content[0]
    with pytest.raises(ValidationError) as info:
        m.blocks((TextBlock, 1))  # type: ignore[call-overload]
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/kind", "type")]


def test_timestamps() -> None:
    assert agentmsg.parse_timestamp("2025-01-01 12:00:00.123").isoformat() == "2025-01-01T12:00:00.123000+00:00"
    assert agentmsg.parse_timestamp("2025-01-01T12:00:00.123456789+08:00").utcoffset() is not None
    assert agentmsg.parse_timestamp("2025-01-01T12:00:00Z").tzinfo is not None
    assert UserMessage("x", timestamp="2025-01-01T12:00:00Z").timestamp == "2025-01-01T12:00:00Z"


def test_conversation_codec() -> None:
    msgs = [Msg.from_json(JAVA_USER), Msg.from_json(JAVA_CASE5), SystemMessage("be brief", id="s", timestamp=None)]
    data = agentmsg.encode_messages(msgs)
    assert data == b"[" + b",".join(m.to_json_bytes() for m in msgs) + b"]"
    assert agentmsg.decode_messages(data) == msgs
    assert [type(m) for m in agentmsg.decode_messages(data)] == [UserMessage, AssistantMessage, SystemMessage]
    bad = data.replace(
        b'"role":"SYSTEM","content":[{"type":"text"', b'"role":"SYSTEM","content":[{"type":"thinking"'
    ).replace(b'"text":"be brief"', b'"thinking":"be brief"')
    with pytest.raises(ValidationError) as info:
        agentmsg.decode_messages(bad)
    assert info.value.problems[0].pointer == "/2/content/0/type"
    with pytest.raises(ValidationError):
        agentmsg.decode_messages(JAVA_USER)  # an object, not an array


def test_blocks_are_normalised_the_same_way_in_every_constructor() -> None:
    result = ToolResultBlock(id="c1", name="f", output="sunny")
    assert result.output == [TextBlock(text="sunny")]
    assert agentmsg.block_to_json(result).count('"type":"text"') == 1
    assert ToolResultBlock(id="c", output=["a", {"type": "text", "text": "b"}]).output == [
        TextBlock(text="a"),
        TextBlock(text="b"),
    ]
    assert ToolResultBlock(id="c", output=None).output == []
    with pytest.raises(ValidationError) as info:
        ToolResultBlock(id="c", output=[{"type": "text"}])
    assert info.value.problems[0].pointer == "/output/0"
    with pytest.raises(ValidationError) as info:
        ToolResultBlock(id="c", output=[5])  # type: ignore[list-item]
    assert (info.value.problems[0].pointer, info.value.problems[0].rule) == ("/output/0", "type")
    image = ImageBlock(source={"type": "url", "url": "https://a/x.png"})  # type: ignore[arg-type]
    assert image.source == URLSource(url="https://a/x.png")
    with pytest.raises(ValidationError) as info:
        ImageBlock(source={"type": "url"})  # type: ignore[arg-type]
    assert info.value.problems[0].pointer.startswith("/source")


@pytest.mark.parametrize(
    ("build", "pointer", "wrong"),
    [
        (lambda: agentmsg.ImageBlock(type="audio", source=URLSource(url="u"), min_pixels=5), "/type", "'audio'"),  # type: ignore[arg-type]
        (lambda: agentmsg.VideoBlock(type="data", source=URLSource(url="u"), fps=3.0), "/type", "'data'"),  # type: ignore[arg-type]
        (lambda: TextBlock(type="thinking", text="x"), "/type", "'thinking'"),  # type: ignore[arg-type]
        (lambda: ToolUseBlock(type="tool_result", id="c", name="f", input={}), "/type", "'tool_result'"),  # type: ignore[arg-type]
        (lambda: TextBlock(type=5, text="x"), "/type", "5"),  # type: ignore[arg-type]
        (
            lambda: ImageBlock(
                source=Base64Source(type="url", media_type="image/png", data="AAAA", unknown_keys={"url": "x"})  # type: ignore[arg-type]
            ),
            "/type",  # (the source's own constructor refuses it, as a block's does: kind source)
            "'url'",
        ),
        (lambda: ImageBlock(source=URLSource(type="base64", url="u")), "/type", "'base64'"),  # type: ignore[arg-type]
    ],
    ids=[
        "image-as-audio",
        "video-as-data",
        "text-as-thinking",
        "tool-use-as-result",
        "int",
        "base64-as-url",
        "url-as-b64",
    ],
)
def test_a_constructor_given_another_type_tag_refuses_it_at_its_pointer(build: Any, pointer: str, wrong: str) -> None:
    """``ImageBlock(type="audio", ...)`` was built, written as an audio block and read back as an AudioBlock (its
    ``minPixels`` an unknown key); ``VideoBlock(type="data", fps=3.0)`` came back a DataBlock; a Base64Source with
    ``type="url"`` (and a ``url`` unknown key) came back a URLSource: a silent change of class. Other tags were
    refused with another branch's complaint (``"thinking" is a required property``). A block's or a source's
    ``type`` is its class's: anything else is refused at its pointer, rule ``const``, naming both."""
    with pytest.raises(ValidationError) as info:
        build()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "const")]
    assert wrong in info.value.problems[0].message


@pytest.mark.parametrize("cls", list(agentmsg.blocks.BLOCK_CLASSES.values()), ids=list(agentmsg.blocks.BLOCK_CLASSES))
def test_a_blocks_type_set_after_construction_to_another_tag_is_refused(cls: Any) -> None:
    """``b = TextBlock(text="x"); b.type = "image"`` was taken: the block was written as ``{"type":"image",...}`` and
    read back as another class (or refused), and only a message's constructor would have looked at it again. Now
    the assignment is refused as the constructor refuses that tag (``const`` at ``/type``), the block unchanged; its
    own tag may be set again. Read and written as before (the C writer reads the tag's slot as it did)."""
    block: Any = agentmsg.Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [_SAMPLE_BLOCKS[cls.__name__]]})
    block = block.content[0]
    assert type(block) is cls
    before = agentmsg.block_to_json(block)
    tag = block.type
    for other in [*(t for t in agentmsg.blocks.BLOCK_CLASSES if t != tag), 5, None]:
        with pytest.raises(ValidationError) as info:
            block.type = other
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/type", "const")]
        assert repr(other) in info.value.problems[0].message
        assert block.type == tag and agentmsg.block_to_json(block) == before
    block.type = tag
    assert agentmsg.block_to_json(block) == before
    assert type(agentmsg.block_from_json(before)) is cls
    assert agentmsg.block_to_dict(attrs.evolve(block)) == agentmsg.block_to_dict(block)


@pytest.mark.parametrize(
    "source",
    [{"type": "url", "url": "https://e.com/a.png"}, {"type": "base64", "media_type": "image/png", "data": "AAAA"}],
    ids=["url", "base64"],
)
@pytest.mark.parametrize("block", ["image", "audio", "video", "data"])
def test_a_sources_type_set_after_construction_to_another_tag_is_refused(source: dict[str, Any], block: str) -> None:
    """``block.source.type = "base64"`` on a URL source was taken: the message was written with a ``base64`` source
    holding a ``url`` (which no reader takes: ``"data" is a required property``). A source's ``type`` is held to its
    class's tag as a block's is: refused as set (``const`` at ``/type``, kind ``source``, the same words), the
    source unchanged; its own tag may be set again."""
    msg = agentmsg.Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [{"type": block, "source": source}]})
    src: Any = msg.content[0].source  # type: ignore[union-attr]
    before = msg.to_json()
    tag = src.type
    for other in ["base64" if tag == "url" else "url", "image", 5, None]:
        with pytest.raises(ValidationError) as info:
            src.type = other
        assert info.value.kind == "source"
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/type", "const")]
        assert info.value.problems[0].message == (
            f"a {type(src).__name__}'s type is {tag!r}, got {other!r} (build the class of that type instead)"
        )
        assert src.type == tag and msg.to_json() == before
    src.type = tag
    assert msg.to_json() == before and agentmsg.Msg.from_json(before) == msg
    assert attrs.evolve(src) == src


_SAMPLE_BLOCKS: dict[str, dict[str, Any]] = {
    "TextBlock": {"type": "text", "text": "x"},
    "ThinkingBlock": {"type": "thinking", "thinking": "t"},
    "HintBlock": {"type": "hint", "hint": "h"},
    "ToolUseBlock": {"type": "tool_use", "id": "c", "name": "f", "input": {"a": 1}},
    "ToolResultBlock": {"type": "tool_result", "id": "c", "output": [{"type": "text", "text": "ok"}]},
    "ImageBlock": {"type": "image", "source": {"type": "url", "url": "https://e.com/a.png"}},
    "AudioBlock": {"type": "audio", "source": {"type": "url", "url": "https://e.com/a.mp3"}},
    "VideoBlock": {"type": "video", "source": {"type": "url", "url": "https://e.com/a.mp4"}},
    "DataBlock": {"type": "data", "source": {"type": "url", "url": "https://e.com/a.bin"}},
}


@pytest.mark.parametrize("unordered", [{"a", "b", "c"}, frozenset({"a", "b"})], ids=["set", "frozenset"])
def test_blocks_given_as_a_set_are_refused(unordered: Any) -> None:
    """``UserMessage({"a", "b", "c"})`` was built with its text blocks in the set's order, which is its strings'
    hashes': another process (another PYTHONHASHSEED) built another message from the same call. Content and a
    tool result's output are ordered: a set is refused (rule ``type``, saying why), as bytes are."""
    with pytest.raises(ValidationError) as info:
        UserMessage(unordered)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/content", "type")]
    assert "no order" in info.value.problems[0].message
    with pytest.raises(ValidationError) as info:
        ToolResultBlock(id="c1", output=unordered)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/output", "type")]


def test_message_constructors_decode_nested_dicts_and_reject_non_mappings() -> None:
    m = AssistantMessage("a", usage={"inputTokens": 1})
    assert m.chat_usage is not None and m.chat_usage.input_tokens == 1
    assert Msg.from_json(m.to_json()) == m
    tool = ToolResultMessage([{"type": "tool_result", "id": "c", "output": [{"type": "text", "text": "x"}]}])
    (result,) = tool.content
    assert isinstance(result, ToolResultBlock) and result.output == [TextBlock(text="x")]
    assert Msg.from_json(tool.to_json()) == tool
    for bad in (["ab"], 5, "x"):
        with pytest.raises(ValidationError) as info:
            UserMessage("hi", metadata=bad)  # type: ignore[arg-type]
        assert (info.value.problems[0].pointer, info.value.problems[0].rule) == ("/metadata", "type")
    with pytest.raises(ValidationError) as info:
        AssistantMessage("a", usage=5)  # type: ignore[arg-type]
    assert info.value.problems[0].pointer == "/usage"
    with pytest.raises(ValidationError) as info:
        AssistantMessage("a", usage={"inputTokens": -1})
    assert info.value.problems[0].pointer == "/usage/inputTokens"


def test_created_at_never_crashes() -> None:
    leap = UserMessage("x", timestamp="2016-12-31T23:59:60Z").created_at
    assert leap is not None and leap.isoformat() == "2017-01-01T00:00:00+00:00"
    with pytest.raises(ValidationError) as info:  # (no real date: refused as it is read)
        Msg.from_json('{"id":"m","role":"USER","content":[],"timestamp":"2025-02-30 10:00:00"}')
    assert info.value.problems[0].rule == "timestamp"
    m = Msg.from_json('{"id":"m","role":"USER","content":[],"timestamp":"0000-01-01 10:00:00"}')
    with pytest.raises(ValidationError) as info:  # (a year Python's datetime has no room for)
        _ = m.created_at
    assert info.value.problems[0].rule == "timestamp"
    with pytest.raises(ValidationError) as info:
        Msg.from_json('{"id":"m","role":"USER","content":[],"timestamp":"2025-13-45 99:99:99"}')
    assert info.value.problems[0].rule == "timestamp" and "yyyy-MM-dd" in info.value.problems[0].message


def test_one_block_table_covers_the_schema() -> None:
    from agentmsg.blocks import BLOCK_CLASSES

    enum = agentmsg.schema_documents()["content-block.schema.json"]["properties"]["type"]["enum"]
    assert list(BLOCK_CLASSES) == enum
    for tag, cls in BLOCK_CLASSES.items():
        assert getattr(agentmsg, cls.__name__) is cls and cls.__module__ == "agentmsg.blocks"
        assert type(agentmsg.block_from_dict(agentmsg.block_to_dict(_minimal(tag)))) is cls


def _minimal(tag: str) -> Any:
    from agentmsg.blocks import BLOCK_CLASSES

    source = URLSource(url="https://a/b")
    extra: dict[str, Any] = {
        "text": {"text": ""},
        "thinking": {"thinking": ""},
        "tool_use": {"id": "c", "name": "f"},
        "tool_result": {"id": "c"},
        "hint": {"hint": ""},
    }.get(tag, {"source": source})
    return BLOCK_CLASSES[tag](**extra)


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


@pytest.mark.parametrize(
    "value",
    [None, 1, {"type": "text", "text": "x"}, [TextBlock(text="x")], UserMessage("hi")],
    ids=["None", "int", "dict", "list", "message"],
)
def test_what_is_no_block_is_refused_by_block_to_dict_and_block_to_json(value: Any) -> None:
    """block_to_json(None) returned 'null', block_to_json of a dict, a list or a message wrote it as it was;
    block_to_dict raised attrs' NotAnAttrsClassError for those, and returned a message's own dict for a Msg."""
    for write in (agentmsg.block_to_dict, agentmsg.block_to_json):
        with pytest.raises(ValidationError) as info:
            write(value)
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("", "type") and type(value).__name__ in problem.message
    assert agentmsg.block_to_json(TextBlock(text="x")) == '{"type":"text","text":"x"}'


def test_a_message_made_cyclic_after_construction_is_refused_with_the_pointer() -> None:
    """Issue 28 (class 2): metadata made to hold itself made to_json() loop for ever, growing ~55 MB/s. The writer's
    error path is bounded: rule ``cycle``, the pointer where the value comes back; a value shared (not a cycle) is
    written as before."""
    from agentmsg import AssistantMessage, TextBlock, ToolUseBlock, ValidationError

    msg = AssistantMessage(content=[TextBlock(text="hi")], metadata={"a": 1})
    msg.metadata["self"] = msg.metadata
    with pytest.raises(ValidationError) as info:
        msg.to_json()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/metadata/self", "cycle")]
    assert info.value.kind == "msg"

    block = ToolUseBlock(id="c1", name="f", input={})
    loop: list[object] = [1]
    loop.append(loop)
    msg = AssistantMessage(content=[TextBlock(text="x"), block])
    block.input["k"] = [loop]
    with pytest.raises(ValidationError) as info:
        msg.to_json_bytes()
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/content/1/input/k/0/1", "cycle")]

    shared = {"v": [1, 2]}
    msg = AssistantMessage(content=[TextBlock(text="x")], metadata={"a": shared, "b": shared})
    assert '"a":{"v":[1,2]},"b":{"v":[1,2]}' in msg.to_json()


def test_repr_never_raises_on_a_message_changed_after_construction() -> None:
    """Issue 28 (class 2): ``repr`` raised AttributeError for a role set to 5, TypeError for content set to None."""
    from agentmsg import AssistantMessage, TextBlock

    for field, value in [("role", 5), ("content", None), ("content", 3), ("id", object()), ("name", [[1]])]:
        msg = AssistantMessage(content=[TextBlock(text="hi")])
        setattr(msg, field, value)
        assert repr(msg).startswith("AssistantMessage(")
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    msg = AssistantMessage(content=[TextBlock(text="hi")])
    msg.id = deep  # type: ignore[assignment]
    assert "id=[[[[[[[...]]]]]]]," in repr(msg)  # (cut at its depth: once named only by its type)


NON_FINITE = [float("nan"), float("inf"), -float("inf")]


@pytest.mark.parametrize("bad", NON_FINITE, ids=["nan", "inf", "-inf"])
def test_nan_put_in_a_free_form_field_after_construction_is_refused(bad: float) -> None:
    """Issue 28 (class 2): NaN or an infinity put into metadata (or a tool's input, unknown keys) after construction
    was written as ``null`` without a word, C and pure Python alike. Every writer refuses it, naming where."""
    from agentmsg import AssistantMessage, TextBlock, ToolUseBlock, block_to_dict, block_to_json, emit_events

    cases: list[tuple[Any, str]] = []
    msg = AssistantMessage(content=[TextBlock(text="hi")], metadata={"ok": 1.5})
    msg.metadata["x"] = bad
    cases.append((msg, "/metadata/x"))
    call = ToolUseBlock(id="c1", name="f", input={"a": [1, {"b": 2}]})
    msg = AssistantMessage(content=[TextBlock(text="hi"), call])
    call.input["a"][1]["b"] = bad
    cases.append((msg, "/content/1/input/a/1/b"))
    msg = AssistantMessage(content=[TextBlock(text="hi")])
    msg.unknown_keys = {"extra": [bad]}
    cases.append((msg, "/extra/0"))
    for msg, pointer in cases:
        for write in (msg.to_json, msg.to_json_bytes, msg.to_dict, lambda m=msg: emit_events(m)):
            with pytest.raises(ValidationError) as info:
                write()
            assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "json-value")], write
            assert info.value.kind == "msg"
    with pytest.raises(ValidationError) as info:
        block_to_json(call)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/input/a/1/b", "json-value")]
    with pytest.raises(ValidationError) as info:
        block_to_dict(call)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/input/a/1/b", "json-value")]
    call.input["a"][1]["b"] = None  # a null the caller put there is written as before
    assert '"input":{"a":[1,{"b":null}]}' in cases[1][0].to_json()


def _set_role(m: Any) -> None:
    m.role = 5


def _set_id(m: Any) -> None:
    m.id = 5


def _set_text(m: Any) -> None:
    m.content[0].text = object()


def _set_content(m: Any) -> None:
    m.content = None


def _append_str(m: Any) -> None:
    m.content.append("oops")


def _set_usage(m: Any) -> None:
    m.usage = "lots"


def _set_role_value(m: Any) -> None:
    m.role = "BOSS"


def _set_lowercase_role(m: Any) -> None:
    m.role = "assistant"


def _set_state_value(m: Any) -> None:
    m.content[1].state = "weird"


def _set_name(m: Any) -> None:
    m.name = ["n"]


def _set_state(m: Any) -> None:
    m.content[1].state = 3


@pytest.mark.parametrize(
    ("change", "pointer", "rules"),
    [
        (_set_role, "/role", {"enum", "type"}),
        (_set_id, "/id", {"type"}),
        (_set_text, "/content/0/text", {"json-value"}),
        (_set_content, "/content", {"type"}),
        (_append_str, "/content/2", {"anyOf", "type", "oneOf"}),
        (_set_usage, "/usage", {"type", "anyOf", "oneOf"}),
        (_set_name, "/name", {"type", "anyOf", "oneOf"}),
        (_set_state, "/content/1/state", {"enum", "type"}),
        (_set_role_value, "/role", {"enum"}),
        (_set_lowercase_role, "/role", {"enum"}),
        (_set_state_value, "/content/1/state", {"enum"}),
    ],
)
def test_a_field_set_to_a_wrong_type_after_construction_is_refused(change: Any, pointer: str, rules: set[str]) -> None:
    """Issue 28 (class 2): a field set to a value of the wrong type after construction was written as JSON the SDK
    then refused (``"role":5``), or to_dict, emit_events and validate(m.to_dict()) raised a bare TypeError or
    NotAnAttrsClassError. Each refuses with a ValidationError naming the field and the rule, C and pure Python
    alike, and nothing is written."""
    from agentmsg import AssistantMessage, TextBlock, ToolUseBlock, emit_events

    msg = AssistantMessage(content=[TextBlock(text="hi"), ToolUseBlock(id="c1", name="f", input={})])
    change(msg)
    calls: list[Callable[[], object]] = [
        msg.to_json,
        msg.to_json_bytes,
        msg.to_dict,
        lambda: agentmsg.validate(msg.to_dict()),
    ]
    if change not in (_set_role, _set_role_value, _set_lowercase_role):  # (emit_events says so first, rule "role")
        calls.append(lambda: emit_events(msg))
    for call in calls:
        with pytest.raises(ValidationError) as info:
            call()
        found = {p.rule for p in info.value.problems if p.pointer == pointer}
        assert found and found <= rules, (call, info.value.problems)
        assert info.value.kind == "msg"


def test_fields_of_the_right_type_are_still_written_as_given() -> None:
    """The type checks refuse only what the schema does not allow: a role given as its string, a str subclass, an
    integer where a number goes, None where the field is nullable, are written as before."""
    from agentmsg import AssistantMessage, ChatUsage, TextBlock

    msg = AssistantMessage(content=[TextBlock(text="hi")])
    msg.role = "ASSISTANT"  # type: ignore[assignment]
    msg.name = None
    msg.usage = ChatUsage(input_tokens=3, output_tokens=2, time=1)
    data = orjson.loads(msg.to_json())
    assert data["role"] == "ASSISTANT" and data["usage"]["time"] == 1 and data["name"] is None
    assert msg.to_dict()["usage"]["time"] == 1


def _timestamp_in_no_form(m: Any) -> None:
    m.timestamp = "yesterday"


def _negative_tokens(m: Any) -> None:
    m.usage.input_tokens = -1


def _tokens_beyond_java_int(m: Any) -> None:
    m.usage.output_tokens = 2**31


def _empty_id(m: Any) -> None:
    m.id = ""


def _thinking_in_user(m: Any) -> None:
    m.role = "USER"


@pytest.mark.parametrize(
    ("change", "pointer", "rule"),
    [
        (_timestamp_in_no_form, "/timestamp", "timestamp"),
        (_negative_tokens, "/usage/inputTokens", "minimum"),
        (_tokens_beyond_java_int, "/usage/outputTokens", "maximum"),
        (_empty_id, "/id", "minLength"),
        (_thinking_in_user, "/content/0/type", "role-content"),
    ],
)
def test_a_value_of_the_right_type_against_the_schema_is_written_and_refused_on_reading(
    change: Any, pointer: str, rule: str
) -> None:
    """What the README says of a message changed after construction: the writers check a field's kind, not the
    schema's other rules (they said they refused whatever the schema does not allow, and wrote these); reading
    the JSON back refuses it, and so does validate(msg.to_dict())."""
    from agentmsg import AssistantMessage, ThinkingBlock

    msg = AssistantMessage([ThinkingBlock(thinking="t")], usage={"inputTokens": 1, "outputTokens": 2})
    change(msg)
    text = msg.to_json()
    for read in (lambda: Msg.from_json(text), lambda: agentmsg.validate(msg.to_dict())):
        with pytest.raises(ValidationError) as info:
            read()
        assert (pointer, rule) in {(p.pointer, p.rule) for p in info.value.problems}


def _content_as_dicts(m: Any) -> None:
    m.content = [{"type": "text", "text": "hi"}]


def _usage_as_dict(m: Any) -> None:
    m.usage = {"inputTokens": 1, "outputTokens": 2}


def _block_unknown_keys_as_pairs(m: Any) -> None:
    m.content[1].unknown_keys = [("future", 1)]


@pytest.mark.parametrize(
    ("change", "pointer", "holds"),
    [
        (_content_as_dicts, "/content/0", "a dict"),
        (_usage_as_dict, "/usage", "a dict"),
        (_block_unknown_keys_as_pairs, "/content/1", "a list"),
    ],
)
def test_a_field_set_to_its_json_form_after_construction_is_refused_at_its_pointer(
    change: Any, pointer: str, holds: str
) -> None:
    """A field set to a value whose JSON the schema allows but which is not what the field holds (a block as a
    dict, usage as a dict, unknown keys as pairs) was refused at pointer "" as "cannot be written as JSON: Type is
    not JSON serializable: AssistantMessage", naming neither the field nor what it held."""
    from agentmsg import AssistantMessage, TextBlock, ToolUseBlock

    msg = AssistantMessage(content=[TextBlock(text="hi"), ToolUseBlock(id="c1", name="f", input={})])
    change(msg)
    for call in (msg.to_json, msg.to_json_bytes, msg.to_dict):
        with pytest.raises(ValidationError) as info:
            call()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule, info.value.kind) == (pointer, "type", "msg"), problem
        assert f"holds {holds}," in problem.message and "serializable" not in problem.message, problem


def _message_unknown_id(m: Any) -> None:
    m.unknown_keys = {"future": 1, "id": "other"}


def _block_unknown_type(m: Any) -> None:
    m.content[0].unknown_keys = {"type": "thinking"}


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        (_message_unknown_id, "/id"),
        (_block_unknown_type, "/content/0/type"),
    ],
)
def test_unknown_keys_set_to_a_declared_key_after_construction_are_refused(change: Any, pointer: str) -> None:
    """The constructors refuse a declared key in unknown_keys; set after construction, it replaced the field in what
    the writers wrote: a message written with another id than its own, a text block written as a thinking block."""
    from agentmsg import AssistantMessage, TextBlock, ToolUseBlock

    msg = AssistantMessage(id="m", content=[TextBlock(text="hi"), ToolUseBlock(id="c1", name="f", input={})])
    change(msg)
    for call in (msg.to_json, msg.to_json_bytes, msg.to_dict):
        with pytest.raises(ValidationError) as info:
            call()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule, info.value.kind) == (pointer, "unknown-key", "msg"), problem
        assert "set the field, not unknown_keys" in problem.message


def _containers(value: Any) -> list[Any]:
    """Every dict and list in a parsed JSON value (the value itself too)."""
    out, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            out.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    return out


def _model_containers(msg: Msg) -> list[Any]:
    """Every dict and list a message holds in its free-form values (metadata, tool inputs, unknown keys)."""
    held: list[Any] = [msg.metadata, msg.unknown_keys or {}, msg.content]
    for block in msg.content:
        held.extend(v for v in (getattr(block, "input", None), getattr(block, "metadata", None)) if v is not None)
        held.append(block.unknown_keys or {})
    return [c for value in held for c in _containers(value)]


def test_to_dict_and_from_dict_share_no_mutable_container() -> None:
    """``to_dict()`` returned the message's own metadata (and tool inputs, unknown keys), and ``from_dict(d)`` kept
    the caller's: changing one changed the other in silence. Neither shares a dict or list any more, at any depth,
    and what they hold is equal to what it was."""
    use = ToolUseBlock(id="c1", name="f", input={"a": {"b": [1, {"c": 2}]}}, metadata={"m": [1]})
    msg = AssistantMessage(
        [TextBlock(text="hi"), use],
        metadata={"trace": {"tags": ["x", {"y": []}]}, "empty": {}},
        unknown_keys={"later": {"q": [1]}},
    )
    out = msg.to_dict()
    held = {id(c) for c in _model_containers(msg)}
    assert not held & {id(c) for c in _containers(out)}
    out["metadata"]["trace"]["tags"].append("changed")
    out["metadata"]["empty"]["k"] = 1
    out["content"][1]["input"]["a"]["b"][1]["c"] = 3
    out["later"]["q"].clear()
    assert msg.metadata == {"trace": {"tags": ["x", {"y": []}]}, "empty": {}}
    assert use.input == {"a": {"b": [1, {"c": 2}]}}
    assert msg.unknown_keys == {"later": {"q": [1]}}
    assert agentmsg.block_to_dict(use)["input"] is not use.input

    given = msg.to_dict()
    read = Msg.from_dict(given)
    assert read == msg
    assert not {id(c) for c in _containers(given)} & {id(c) for c in _model_containers(read)}
    given["metadata"]["trace"]["tags"].clear()
    given["content"][1]["input"]["a"] = None
    assert read == msg


def _block_containers(block: Any) -> list[Any]:
    """Every dict and list a block holds in its free-form values, its output's blocks and its source included."""
    held: list[Any] = [block.unknown_keys or {}]
    held.extend(v for v in (getattr(block, "input", None), getattr(block, "metadata", None)) if v is not None)
    source = getattr(block, "source", None)
    if source is not None:
        held.append(source.unknown_keys or {})
    out = [c for value in held for c in _containers(value)]
    for inner in getattr(block, "output", None) or []:
        out.extend(_block_containers(inner))
    return out


def test_block_and_source_readers_copy_and_constructors_keep() -> None:
    """``block_from_dict(d)`` (and ``source_from_dict``) kept the caller's nested dicts and lists, while
    ``Msg.from_dict`` copies them: the readers now copy alike, and the constructors keep what they are given (the
    block's documented attrs semantics)."""
    from agentmsg.blocks import source_from_dict

    given: dict[str, Any] = {
        "type": "tool_result",
        "id": "c1",
        "name": "f",
        "output": [{"type": "tool_use", "id": "c2", "name": "g", "input": {"a": [1, {"b": 2}]}, "later": {"x": []}}],
        "metadata": {"m": [1]},
        "extra": {"q": [1]},
    }
    read = agentmsg.block_from_dict(given)
    assert isinstance(read, ToolResultBlock)
    assert not {id(c) for c in _containers(given)} & {id(c) for c in _block_containers(read)}
    given["output"][0]["input"]["a"].clear()
    given["metadata"]["m"].append(2)
    given["extra"]["q"] = None
    assert agentmsg.block_to_dict(read)["output"][0]["input"] == {"a": [1, {"b": 2}]}
    assert read.metadata == {"m": [1]} and read.unknown_keys == {"extra": {"q": [1]}}

    image: dict[str, Any] = {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/a.png", "later": {"k": [1]}},
    }
    block = agentmsg.block_from_dict(image)
    assert isinstance(block, ImageBlock) and isinstance(block.source, URLSource)
    assert (block.source.unknown_keys or {})["later"] is not image["source"]["later"]
    source = source_from_dict(image["source"])
    assert source.unknown_keys == {"later": {"k": [1]}}
    assert source.unknown_keys["later"] is not image["source"]["later"]

    arguments = {"a": [1]}
    built = ToolUseBlock(id="c3", name="f", input={"args": arguments})
    assert built.input["args"] is arguments
    assert "keeps the containers" in (ToolUseBlock.__doc__ or "")


@pytest.mark.parametrize("writer", ["C", "Python"])
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ((1, 2), "a tuple is not a JSON value"),
        (TextBlock(text="x"), "a TextBlock is not a JSON value (agentmsg.block_to_dict(block) is)"),
        (float("nan"), "nan is not a JSON number"),
        (object(), "a object is not a JSON value"),
    ],
    ids=["tuple", "block", "nan", "object"],
)
def test_writers_refuse_in_free_form_values_what_constructors_refuse(
    bad: Any, message: str, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tuple or a block object put into metadata (or a tool's input, or unknown keys) after construction was
    written by ``to_json`` and ``to_dict`` (a tuple as an array, a block as its dict), though every constructor
    refuses both. The writers refuse what the constructors refuse: the same error, rule and message, at the value's
    own pointer; with the C writer and without it."""
    from agentmsg._codec import converter

    if writer == "Python":
        monkeypatch.setattr(converter, "_native_encode", None)
    with pytest.raises(ValidationError) as given:
        AssistantMessage("hi", metadata={"t": {"deep": [bad]}})
    first = given.value.problems[0]
    assert (first.pointer, first.rule, first.message) == ("/metadata/t/deep/0", "json-value", message)
    for place, pointer in [("metadata", "/metadata/t/deep/0"), ("input", "/content/1/input/b"), ("unknown", "/v")]:
        use = ToolUseBlock(id="c1", name="f", input={"a": 1})
        msg = AssistantMessage([TextBlock(text="hi"), use], metadata={"t": {"deep": []}}, unknown_keys={"u": 1})
        if place == "metadata":
            msg.metadata["t"]["deep"].append(bad)
        elif place == "input":
            use.input["b"] = bad
        else:
            msg.unknown_keys = {"u": 1, "v": bad}
        writes: list[Any] = [msg.to_json, msg.to_dict, msg.to_json_bytes, lambda m=msg: agentmsg.encode_messages([m])]
        for write in writes:
            with pytest.raises(ValidationError) as found:
                write()
            problem = found.value.problems[0]
            assert problem.rule == "json-value" and problem.message == message
            assert problem.pointer in (pointer, "/0" + pointer)
    member = AssistantMessage("hi", metadata={"r": GenerateReason.MAX_ITERATIONS})  # (enum members: their values)
    assert member.to_dict()["metadata"] == orjson.loads(member.to_json())["metadata"] == {"r": "MAX_ITERATIONS"}


def test_the_python_writer_holds_a_long_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the C writer, ``to_json_bytes`` of a message holding 4 MiB of text peaked (tracemalloc) at about 16
    times its JSON: orjson sets aside about 12 bytes per character of a string before escaping it, and keeps a
    non-ASCII string's UTF-8 on the string. Long strings are written a slice at a time: the same bytes as orjson
    writes whole (escapes, multi-byte characters and surrogate pairs across the slices' edges), about one JSON's
    worth of memory, and the same error for a lone surrogate far into a long text."""
    import tracemalloc

    from agentmsg._codec import converter

    monkeypatch.setattr(converter, "_native_encode", None)
    text = 'word é"\n\\€😀\x01 ' * (300_000)  # (4.5 MB of JSON; no slice's edge falls on the same character)
    msg = AssistantMessage(
        [ThinkingBlock(thinking=text[:70_000]), TextBlock(text="short"), TextBlock(text=text)],
        metadata={"m": text[:100]},
    )
    want = orjson.dumps(msg, default=converter.json_default)
    tracemalloc.start()
    try:
        got = msg.to_json_bytes()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == want
    assert peak < 1.5 * len(got), f"{peak / len(got):.2f} bytes held per byte of JSON"
    msg.content[2].text = text[:99_999] + "\ud800" + text[:10]  # type: ignore[union-attr]
    with pytest.raises(ValidationError) as found:
        msg.to_json_bytes()
    assert (found.value.problems[0].pointer, found.value.problems[0].rule) == ("/content/2/text", "lone-surrogate")


@pytest.mark.parametrize("unknown_key", [False, True], ids=["known-keys", "unknown-key"])
@pytest.mark.parametrize("reader", ["Msg.from_json", "block_from_json"])
def test_text_the_fast_path_does_not_take_is_checked_once(
    reader: str, unknown_key: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text the decode fast path does not take (a str of more than a quarter of ``limits.max_bytes`` characters:
    past 64 Mi characters by default) was checked for what cannot be written back twice: by the parser, then
    again before the schema (a round trip through orjson, with a UTF-8 copy of every long string). A message of
    escaped emoji peaked (tracemalloc) at 7 times its text; 256 MB of it at 1.75 GB, where 64 MB took 0.12 GB.
    Now about twice its text, as the fast path, whatever its keys."""
    import tracemalloc

    text = '"' + "\\ud83d\\ude00\\n\\u0000" * 50_000 + '"'
    block = '{"type":"text","text":' + text + (',"later":1}' if unknown_key else "}")
    data = block if reader == "block_from_json" else '{"id":"m1","role":"USER","content":[' + block + '],"metadata":{}}'
    read: Callable[[str], Any] = agentmsg.block_from_json if reader == "block_from_json" else Msg.from_json
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 2 * len(data))  # (within it, but not a quarter of it)
    read(data)  # (the first call builds the validators)
    tracemalloc.start()
    try:
        got = read(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (got.text if reader == "block_from_json" else got.text_content) == "😀\n\x00" * 50_000
    assert peak < 3 * len(data), f"{peak / len(data):.2f} bytes held per byte of JSON"


_TEXT = {"type": "text", "text": "x"}
_MAPPINGS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "mappingproxy": types.MappingProxyType,
    "UserDict": collections.UserDict,
    "OrderedDict": collections.OrderedDict,
}


@pytest.mark.parametrize("mapping", list(_MAPPINGS), ids=list(_MAPPINGS))
def test_readers_and_constructors_read_any_mapping_where_they_take_one(mapping: str) -> None:
    wrap = _MAPPINGS[mapping]
    msg = {"id": "m", "role": "ASSISTANT", "content": [_TEXT], "usage": {"inputTokens": 1, "outputTokens": 2}}
    expected = Msg.from_dict(msg)
    assert Msg.from_dict(wrap(msg)) == expected
    assert AssistantMessage.from_dict(wrap(msg)) == expected
    assert agentmsg.block_from_dict(wrap(_TEXT)) == TextBlock(text="x")
    url = {"type": "url", "url": "https://example.com/a.png"}
    assert agentmsg.blocks.source_from_dict(wrap(url)) == agentmsg.blocks.source_from_dict(url)
    assert UserMessage(wrap(_TEXT)).content == UserMessage([wrap(_TEXT)]).content == [TextBlock(text="x")]
    usage = AssistantMessage("x", usage=wrap({"inputTokens": 1, "outputTokens": 2})).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (1, 2)
    image = agentmsg.ImageBlock(source=wrap(url))
    assert image.source == agentmsg.blocks.source_from_dict(url)


def test_a_mapping_read_is_copied_and_nested_ones_are_still_no_json_values() -> None:
    data: dict[str, Any] = {"id": "m", "role": "USER", "content": [_TEXT], "metadata": {"a": [1]}}
    msg = Msg.from_dict(types.MappingProxyType(data))
    data["metadata"]["a"].append(2)
    assert msg.metadata == {"a": [1]}  # shares no container with the caller's, as from a dict
    with pytest.raises(ValidationError) as caught:
        Msg.from_dict(types.MappingProxyType({**data, "metadata": types.MappingProxyType({})}))
    ((pointer, rule),) = [(p.pointer, p.rule) for p in caught.value.problems]
    assert (pointer, rule) == ("/metadata", "json-value")


@pytest.mark.parametrize("mapping", list(_MAPPINGS), ids=list(_MAPPINGS))
def test_validate_reads_a_mapping_given_as_the_readers_read_it(mapping: str) -> None:
    """agentmsg.validate refused a mapping given that is no dict ("a mappingproxy is not a JSON value", json-value
    at ""), and so did is_valid and find_unknown_keys, where Msg.from_dict, block_from_dict, source_from_dict and
    the reducer read it as its dict (read_legacy_keys returned it unread: a lowercase role without its note). Now
    they read it as its dict too; a mapping nested in it is refused as from_dict refuses it, same pointer and rule."""
    from agentmsg.events import Reducer

    wrap = _MAPPINGS[mapping]
    msg = {"id": "m", "role": "USER", "content": [_TEXT], "extra": 1}
    Msg.from_dict(wrap(msg))
    agentmsg.validate(wrap(msg))
    assert agentmsg.is_valid(wrap(msg)) and agentmsg.find_unknown_keys(wrap(msg)) == agentmsg.find_unknown_keys(msg)
    agentmsg.validate(wrap(_TEXT), "content-block")
    url = {"type": "url", "url": "https://example.com/a.png"}
    agentmsg.validate(wrap(url), "source")
    agentmsg.validate(wrap({"inputTokens": 1, "outputTokens": 2}), "chat-usage")
    event = {"type": "AGENT_START", "id": "e", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", "name": "a"}
    reducer = Reducer()
    reducer.feed(wrap(event))
    assert reducer.problems == []
    agentmsg.validate(wrap(event), "event")
    python = {"id": "m", "role": "user", "content": "hi"}
    assert agentmsg.read_legacy_keys(wrap(python)) == agentmsg.read_legacy_keys(python)
    assert agentmsg.read_legacy_keys(wrap(python))[1]  # (its notes: the role and the text content)
    nested = {**msg, "metadata": wrap({})}
    for given in (nested, wrap(nested)):
        with pytest.raises(ValidationError) as read:
            Msg.from_dict(given)
        with pytest.raises(ValidationError) as validated:
            agentmsg.validate(given)
        assert (
            [(p.pointer, p.rule) for p in validated.value.problems]
            == [(p.pointer, p.rule) for p in read.value.problems]
            == [("/metadata", "json-value")]
        )
