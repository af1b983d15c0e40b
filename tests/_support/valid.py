"""Hypothesis strategies for valid messages and blocks: every value they make is accepted, so a test of a
round trip or of the emitter can assert equality (strategies.py makes wider and invalid ones)."""

from __future__ import annotations

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

text = st.text(max_size=30)
ident = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
json_scalar = (
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | text
)
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)
non_null = json_value.filter(lambda v: v is not None)
b64 = st.binary(max_size=12).map(lambda b: __import__("base64").b64encode(b).decode())
sources = st.builds(URLSource, url=ident, mime_type=st.none() | st.just("image/png")) | st.builds(
    Base64Source, media_type=st.sampled_from(["image/png", "audio/wav", "application/pdf"]), data=b64
)
pixels = st.none() | st.integers(0, 10**7)
media = st.one_of(
    st.builds(ImageBlock, source=sources, min_pixels=pixels, max_pixels=pixels),
    st.builds(AudioBlock, source=sources),
    st.builds(
        VideoBlock,
        source=sources,
        fps=st.none() | st.floats(0, 120),
        max_frames=pixels,
        min_pixels=pixels,
        max_pixels=pixels,
        total_pixels=pixels,
    ),
    st.builds(DataBlock, source=sources, id=st.none() | ident, name=st.none() | ident),
)
user_blocks = st.builds(TextBlock, text=text) | media
thinking_meta = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "signature": ident,
        "provider": st.sampled_from(["anthropic", "openai", "gemini"]),
        "redacted": st.booleans(),
        "vendor": json_value,
    },
)
tool_use = st.builds(
    ToolUseBlock,
    id=ident,
    name=ident,
    input=st.dictionaries(text, json_value, max_size=3),
    content=st.none() | text,
    metadata=st.fixed_dictionaries({}, optional={"thoughtSignature": ident, "x": json_value}),
    state=st.sampled_from(list(ToolCallState)),
)
tool_result = st.builds(
    ToolResultBlock,
    id=ident,
    name=st.none() | ident,
    output=st.lists(user_blocks, max_size=3),
    metadata=st.fixed_dictionaries({}, optional={"agentscope_suspended": st.booleans()}),
    state=st.sampled_from(list(ToolResultState)),
)
any_block = (
    user_blocks
    | st.builds(ThinkingBlock, thinking=text, metadata=thinking_meta)
    | tool_use
    | tool_result
    | st.builds(HintBlock, hint=text, id=st.none() | ident, source=st.none() | ident)
)
usage = st.none() | st.builds(
    agentmsg.ChatUsage,
    input_tokens=st.none() | st.integers(0, 10**6),
    output_tokens=st.none() | st.integers(0, 10**6),
    cached_tokens=st.none() | st.integers(0, 10**6),
    time=st.none() | st.floats(0, 1e4),
    total_tokens=st.none() | st.integers(0, 10**6),
)
# Free-form keys only: the schema's declared metadata keys have types of their own.
DECLARED = set(agentmsg.schema_documents()["msg.schema.json"]["$defs"]["MsgMetadata"]["properties"])
metadata = st.dictionaries(text.filter(lambda k: k not in DECLARED), non_null, max_size=3)


@st.composite
def messages(draw: st.DrawFn) -> Msg:
    role = draw(st.sampled_from(list(MsgRole)))
    blocks = {MsgRole.USER: user_blocks, MsgRole.SYSTEM: st.builds(TextBlock, text=text)}.get(role, any_block)
    return Msg(
        role,
        draw(st.lists(blocks, max_size=5)),
        name=draw(st.none() | text),
        id=draw(ident),
        metadata=draw(metadata),
        timestamp=draw(st.none() | st.just("2025-01-01 12:00:00.000") | st.just("2025-01-01T12:00:00.5+08:00")),
        usage=draw(usage),
    )


@st.composite
def assistant_messages(draw: st.DrawFn) -> Msg:
    return Msg(
        MsgRole.ASSISTANT,
        draw(st.lists(any_block, max_size=6)),
        name=draw(st.none() | ident),
        id=draw(ident),
        metadata=draw(metadata),
        timestamp=draw(st.none() | st.just("2025-01-01 12:00:00.000")),
        usage=draw(usage),
    )
