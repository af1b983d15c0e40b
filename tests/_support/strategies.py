"""Hypothesis strategies for messages, blocks and their constructor arguments (mutations: mutators.py).

Wider than the valid-message strategies of valid.py: timestamps in both accepted forms and near misses (13th
months, 30 February, leap seconds, offsets, lowercase ``t``/``z``, 0-9 fraction digits), every declared metadata
key with well- and ill-typed values, unknown keys at every level, long text, unicode, 64-bit integer bounds.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    AudioBlock,
    Base64Source,
    DataBlock,
    HintBlock,
    ImageBlock,
    Msg,
    MsgRole,
    TextBlock,
    ThinkingBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)

INT_EDGES = [0, 1, -1, 2**31 - 1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)]
text = st.text(max_size=40) | st.text(st.characters(codec="utf-8"), min_size=200, max_size=2000)
short = st.text(max_size=12)
ident = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
ints = st.integers(-(2**63), 2**64 - 1) | st.sampled_from(INT_EDGES)
scalars = st.none() | st.booleans() | ints | st.floats(allow_nan=False, allow_infinity=False) | text
json_value = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(short, inner, max_size=4), max_leaves=12
)
non_null = json_value.filter(lambda v: v is not None)


# ---- timestamps --------------------------------------------------------------------------------------


@st.composite
def java_timestamps(draw: st.DrawFn, valid: bool = True) -> str:
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(1, 12) if valid else st.integers(0, 13))
    day = draw(st.integers(1, 28) if valid else st.integers(0, 32))
    hour = draw(st.integers(0, 23) if valid else st.integers(0, 24))
    minute = draw(st.integers(0, 59))
    # (second 60, a leap second, is a real time only at 23:59 UTC, where the form is read: the schema's pattern)
    second = draw(st.integers(0, 60 if not valid or (hour, minute) == (23, 59) else 59))
    fraction = draw(st.none() | st.text("0123456789", min_size=1, max_size=9 if valid else 10))
    out = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
    return out + (f".{fraction}" if fraction is not None else "")


@st.composite
def rfc3339_timestamps(draw: st.DrawFn) -> str:
    year, month, day = draw(st.integers(1, 9999)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
    hour, minute, second = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    t = draw(st.sampled_from("Tt"))
    fraction = draw(st.none() | st.text("0123456789", min_size=1, max_size=9))
    zone = draw(
        st.sampled_from(["Z", "z"])
        | st.builds(
            lambda s, h, m: f"{s}{h:02d}:{m:02d}", st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)
        )
    )
    return (
        f"{year:04d}-{month:02d}-{day:02d}{t}{hour:02d}:{minute:02d}:{second:02d}"
        + (f".{fraction}" if fraction else "")
        + zone
    )


timestamps = st.none() | java_timestamps() | rfc3339_timestamps()
odd_timestamps = (
    java_timestamps(valid=False)
    | st.sampled_from(
        [
            "2025-02-30 10:00:00",
            "2025-13-45 99:99:99",
            "2016-12-31T23:59:60Z",
            "2025-01-01T12:00:00",
            "2025-01-01 12:00:00Z",
            "yesterday",
            "",
            "2025-01-01 12:00:00.0000000000",
            "2025-01-01T12:00:00+24:00",
        ]
    )
    | text
)

# ---- metadata (every declared key, well and ill typed) ------------------------------------------------

_REASONS = list(agentmsg.GenerateReason)
MSG_METADATA_VALUES: dict[str, Any] = {
    "agentscope_generate_reason": st.sampled_from([r.value for r in _REASONS]),
    "agentscope_confirm_results": st.lists(st.dictionaries(short, json_value, max_size=2), max_size=2),
    "agentscope_confirm_request_reply_id": ident,
    "agentscope_external_execution_request_reply_id": ident,
    "agentscope_synthetic": st.booleans(),
    "agentscope_reminder_kind": short,
    "_bypass_multiagent_history_merge": st.booleans(),
    "_structured_output": st.dictionaries(short, json_value, max_size=3),
    "_chat_usage": st.fixed_dictionaries(
        {},
        optional={
            "inputTokens": st.integers(0, 10**6),
            "outputTokens": st.integers(0, 10**6),
            "time": st.floats(0, 100),
        },
    ),
    "_cache_control": st.booleans(),
    "agentmsg_hitl": st.lists(st.dictionaries(short, json_value, max_size=2), max_size=2),
    "agentmsg_finish_reason": short,
    "agentmsg_model": short,
    "agentmsg_stop_reason": short,
    "agentmsg_refusal": st.just(True),
    "agentmsg_errors": st.lists(st.dictionaries(short, json_value, max_size=2), max_size=2),
    "agentmsg_notes": st.lists(st.dictionaries(short, json_value, max_size=2), max_size=2),
    "agentmsg_reduce_errors": st.lists(short, max_size=3),
    "agentmsg_grounding": st.fixed_dictionaries(
        {"provider": st.sampled_from(["openai", "gemini", "dashscope"])},
        optional={"annotations": st.lists(json_value, max_size=2), "groundingMetadata": json_value},
    ),
}
DECLARED = set(agentmsg.schema_documents()["msg.schema.json"]["$defs"]["MsgMetadata"]["properties"])
assert set(MSG_METADATA_VALUES) == DECLARED, "a declared metadata key without a strategy"
msg_metadata = st.fixed_dictionaries({}, optional=MSG_METADATA_VALUES).flatmap(
    lambda declared: st.dictionaries(short.filter(lambda k: k not in DECLARED), non_null, max_size=3).map(
        lambda free: {**declared, **free}
    )
)
thinking_metadata = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "signature": ident,
        "redacted": st.booleans(),
        "redactedData": ident,
        "provider": st.sampled_from(["anthropic", "openai", "gemini", "dashscope"]),
        "model": ident,
        "reasoningDetails": st.lists(json_value, max_size=2),
        "providerBlock": st.dictionaries(short, json_value, max_size=2),
        "citations": st.lists(json_value, max_size=2),
        "vendor": json_value,
    },
)
tool_use_metadata = st.fixed_dictionaries(
    {}, optional={"thoughtSignature": ident, "provider": ident, "argumentsError": short, "extra": json_value}
)
tool_result_metadata = st.fixed_dictionaries({}, optional={"agentscope_suspended": st.booleans(), "extra": non_null})
unknown_keys = st.none() | st.dictionaries(
    st.sampled_from(["future", "newerKey", "futureTokens", "x_vendor", "annotations"]),
    json_value,
    max_size=2,
)

# ---- blocks and messages (constructed with the SDK) ----------------------------------------------------

b64 = st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode())
sources = st.builds(
    URLSource, url=ident, mime_type=st.none() | st.just("image/png"), unknown_keys=unknown_keys
) | st.builds(
    Base64Source,
    media_type=st.sampled_from(["image/png", "audio/wav", "application/pdf"]),
    data=b64,
    unknown_keys=unknown_keys,
)
pixels = st.none() | st.integers(0, 2**31 - 1) | st.sampled_from([0, 2**31 - 1])  # (Java's Integer: the schema's range)
media = st.one_of(
    st.builds(ImageBlock, source=sources, min_pixels=pixels, max_pixels=pixels, unknown_keys=unknown_keys),
    st.builds(AudioBlock, source=sources, unknown_keys=unknown_keys),
    st.builds(
        VideoBlock,
        source=sources,
        fps=st.none() | st.floats(0, 240) | st.integers(0, 240),
        max_frames=pixels,
        min_pixels=pixels,
        max_pixels=pixels,
        total_pixels=pixels,
        unknown_keys=unknown_keys,
    ),
    st.builds(DataBlock, source=sources, id=st.none() | ident, name=st.none() | ident, unknown_keys=unknown_keys),
)
user_blocks = st.builds(TextBlock, text=text, unknown_keys=unknown_keys) | media
tool_use = st.builds(
    ToolUseBlock,
    id=ident,
    name=ident,
    input=st.dictionaries(short, json_value, max_size=3),
    content=st.none() | text,
    metadata=tool_use_metadata,
    state=st.sampled_from(list(ToolCallState)),
    unknown_keys=unknown_keys,
)


def _results(inner: Any) -> Any:
    return st.builds(
        ToolResultBlock,
        id=ident,
        name=st.none() | ident,
        output=st.lists(inner, max_size=3),
        metadata=tool_result_metadata,
        state=st.sampled_from(list(ToolResultState)),
        unknown_keys=unknown_keys,
    )


any_block = st.recursive(
    user_blocks
    | st.builds(ThinkingBlock, thinking=text, metadata=thinking_metadata, unknown_keys=unknown_keys)
    | tool_use
    | st.builds(HintBlock, hint=text, id=st.none() | ident, source=st.none() | ident, unknown_keys=unknown_keys),
    _results,
    max_leaves=6,
)
usage = st.none() | st.builds(
    agentmsg.ChatUsage,
    # (at most 2^31-1, Java's int, with the output count too: Java adds the two in an int for totalTokens)
    input_tokens=st.none() | st.integers(0, 2**31 - 1 - 10**9),
    output_tokens=st.none() | st.integers(0, 10**9),
    cached_tokens=st.none() | st.integers(0, 10**9),
    time=st.none() | st.floats(0, 1e6) | st.integers(0, 10**6),
    total_tokens=st.none() | st.integers(0, 10**9),
    cache_creation_input_tokens=st.none() | st.integers(0, 10**9),
    reasoning_tokens=st.none() | st.integers(0, 10**9),
    unknown_keys=unknown_keys,
)


@st.composite
def messages(draw: st.DrawFn, role: MsgRole | None = None) -> Msg:
    """A random message: of any role, or of ``role`` when given."""
    role = draw(st.sampled_from(list(MsgRole))) if role is None else role
    blocks = {MsgRole.USER: user_blocks, MsgRole.SYSTEM: st.builds(TextBlock, text=text)}.get(role, any_block)
    return Msg(
        role,
        draw(st.lists(blocks, max_size=5)),
        name=draw(st.none() | text),
        id=draw(ident),
        metadata=draw(msg_metadata),
        timestamp=draw(timestamps),
        usage=draw(usage),
        unknown_keys=draw(unknown_keys),
    )
