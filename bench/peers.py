"""The Msg schema (schemas/*.schema.json) as a pydantic v2 model and as msgspec Structs, for the benchmark.

Both peers check what their library expresses without custom Python per value:

* closed objects (pydantic ``extra="forbid"``, msgspec ``forbid_unknown_fields=True``); the block and
  source unions discriminated on ``type``; required keys; types; enums (roles, tool states);
* ``minLength`` (message id, source url / mime_type / media_type), ``minimum: 0`` (usage, sizing), the
  timestamp patterns (Java ``yyyy-MM-dd HH:mm:ss.SSS`` or RFC 3339) and the base64 alphabet pattern;
* camelCase wire names (``minPixels``, ``inputTokens``) over snake_case attributes. pydantic also
  accepts the snake_case spellings the schema allows for image/video sizing (``AliasChoices``);
  msgspec has one name per field and rejects them;
* the role rules (USER: text/data/image/audio/video; SYSTEM: text only), as a pydantic
  ``model_validator`` and in msgspec ``__post_init__``.

They do not check what agentmsg's JSON Schema validation also checks: value types of the declared
metadata keys (``agentscope_generate_reason`` enum, thinking ``signature``, ...) and "no null values"
in message metadata. That is a little less work for the peers, never more.

Both write what agentmsg writes (the schema's null/omit policy, as AgentScope Java): a nullable field
is written as ``null``; a non-nullable optional field (url ``mime_type``, sizing, data ``id``/``name``,
usage counters) is omitted when unset (pydantic ``exclude_if``, msgspec ``omit_defaults``); defaults
(``metadata: {}``, ``state``) are written. Field order is the schema's, so encoded bytes match too.
"""

from __future__ import annotations

import platform
import sys
from typing import Annotated, Any, Literal, Union

import msgspec
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

USER_BLOCKS = frozenset({"text", "data", "image", "audio", "video"})
CallState = Literal["pending", "asking", "allowed", "submitted", "finished"]
ResultState = Literal["success", "error", "interrupted", "denied", "running"]
Role = Literal["USER", "ASSISTANT", "SYSTEM", "TOOL"]
TIMESTAMP = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?: [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
    r"|[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2}))$"
)
BASE64 = r"^[A-Za-z0-9+/]*={0,2}$"


def agentscope_missing(module: str | None) -> str:
    """Why AgentScope Python is not in a comparison: ``not installed``, and why where pip cannot install it."""
    if sys.version_info < (3, 11):  # the bench extra installs agentscope only there (pyproject.toml)
        return f"not installed: agentscope 2.0.10 needs Python 3.11+ (this is {platform.python_version()})"
    return f"not installed ({module}); pip install -e '.[bench]'"


def check_roles(role: str, types: list[str]) -> None:
    if role == "USER":
        if any(t not in USER_BLOCKS for t in types):
            raise ValueError("USER messages may only contain text, data, image, audio and video blocks")
    elif role == "SYSTEM" and any(t != "text" for t in types):
        raise ValueError("SYSTEM messages may only contain text blocks")


# ---- pydantic v2 ----------------------------------------------------------------------------------
_C = ConfigDict(extra="forbid", validate_by_name=False, validate_by_alias=True, serialize_by_alias=True)


def _is_none(value: Any) -> bool:
    return value is None


def _omit(alias: str | None = None, alt: str | None = None, **constraints: Any) -> Any:
    """An optional, non-nullable field: absent when unset, omitted on output when None."""
    if alias is None:
        return Field(None, exclude_if=_is_none, **constraints)
    validation = AliasChoices(alias, alt) if alt else alias
    return Field(None, validation_alias=validation, serialization_alias=alias, exclude_if=_is_none, **constraints)


NonNeg = Annotated[int, Field(ge=0)]


class PURLSource(BaseModel):
    model_config = _C
    type: Literal["url"]
    url: str = Field(min_length=1)
    mime_type: str | None = _omit(min_length=1)


class PBase64Source(BaseModel):
    model_config = _C
    type: Literal["base64"]
    media_type: str = Field(min_length=1)
    data: str = Field(pattern=BASE64)


PSource = Annotated[Union[PURLSource, PBase64Source], Field(discriminator="type")]


class PText(BaseModel):
    model_config = _C
    type: Literal["text"]
    text: str


class PThinking(BaseModel):
    model_config = _C
    type: Literal["thinking"]
    thinking: str
    metadata: dict[str, Any] | None = None


class PImage(BaseModel):
    model_config = _C
    type: Literal["image"]
    source: PSource
    min_pixels: NonNeg | None = _omit("minPixels", "min_pixels")
    max_pixels: NonNeg | None = _omit("maxPixels", "max_pixels")


class PAudio(BaseModel):
    model_config = _C
    type: Literal["audio"]
    source: PSource


class PVideo(BaseModel):
    model_config = _C
    type: Literal["video"]
    source: PSource
    fps: float | None = _omit(ge=0)
    max_frames: NonNeg | None = _omit("maxFrames", "max_frames")
    min_pixels: NonNeg | None = _omit("minPixels", "min_pixels")
    max_pixels: NonNeg | None = _omit("maxPixels", "max_pixels")
    total_pixels: NonNeg | None = _omit("totalPixels", "total_pixels")


class PData(BaseModel):
    model_config = _C
    type: Literal["data"]
    source: PSource
    id: str | None = _omit()
    name: str | None = _omit()


class PToolUse(BaseModel):
    model_config = _C
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    content: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: CallState = "pending"


class PToolResult(BaseModel):
    model_config = _C
    type: Literal["tool_result"]
    id: str
    name: str | None = None
    output: list[PBlock] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: ResultState = "running"


class PHint(BaseModel):
    model_config = _C
    type: Literal["hint"]
    id: str | None = None
    hint: str
    source: str | None = None


PBlock = Annotated[
    Union[PText, PThinking, PImage, PAudio, PVideo, PData, PToolUse, PToolResult, PHint],
    Field(discriminator="type"),
]
PToolResult.model_rebuild()


class PUsage(BaseModel):
    model_config = _C
    input_tokens: NonNeg | None = _omit("inputTokens")
    output_tokens: NonNeg | None = _omit("outputTokens")
    cached_tokens: NonNeg | None = _omit("cachedTokens")
    time: float | None = _omit(ge=0)
    total_tokens: NonNeg | None = _omit("totalTokens")


class PMsg(BaseModel):
    model_config = _C
    id: str = Field(min_length=1)
    name: str | None = None
    role: Role
    content: list[PBlock]
    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: Annotated[str, Field(pattern=TIMESTAMP)] | None = None
    usage: PUsage | None = None

    @model_validator(mode="after")
    def _role_rules(self) -> PMsg:
        check_roles(self.role, [b.type for b in self.content])
        return self


# ---- msgspec ----------------------------------------------------------------------------------------
# kw_only keeps the schema's key order (required fields may follow optional ones); omit_defaults only on
# structs whose every optional field is "omitted when unset" in the schema's policy.
class _S(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, tag_field="type"):
    pass


NonNegM = Annotated[int, msgspec.Meta(ge=0)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class MURLSource(_S, tag="url", omit_defaults=True):
    url: NonEmpty
    mime_type: NonEmpty | None = None


class MBase64Source(_S, tag="base64"):
    media_type: NonEmpty
    data: Annotated[str, msgspec.Meta(pattern=BASE64)]


MSource = Union[MURLSource, MBase64Source]


class MText(_S, tag="text"):
    text: str


class MThinking(_S, tag="thinking"):
    thinking: str
    metadata: dict[str, Any] | None = None


class MImage(_S, tag="image", omit_defaults=True, rename="camel"):
    source: MSource
    min_pixels: NonNegM | None = None
    max_pixels: NonNegM | None = None


class MAudio(_S, tag="audio"):
    source: MSource


class MVideo(_S, tag="video", omit_defaults=True, rename="camel"):
    source: MSource
    fps: Annotated[float, msgspec.Meta(ge=0)] | None = None
    max_frames: NonNegM | None = None
    min_pixels: NonNegM | None = None
    max_pixels: NonNegM | None = None
    total_pixels: NonNegM | None = None


class MData(_S, tag="data", omit_defaults=True):
    source: MSource
    id: str | None = None
    name: str | None = None


class MToolUse(_S, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any] = {}
    content: str | None = None
    metadata: dict[str, Any] = {}
    state: CallState = "pending"


class MToolResult(_S, tag="tool_result"):
    id: str
    name: str | None = None
    output: list[MBlock] = []
    metadata: dict[str, Any] = {}
    state: ResultState = "running"


class MHint(_S, tag="hint", kw_only=True):
    id: str | None = None
    hint: str
    source: str | None = None


MBlock = Union[MText, MThinking, MImage, MAudio, MVideo, MData, MToolUse, MToolResult, MHint]


class MUsage(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, rename="camel"):
    input_tokens: NonNegM | None = None
    output_tokens: NonNegM | None = None
    cached_tokens: NonNegM | None = None
    time: Annotated[float, msgspec.Meta(ge=0)] | None = None
    total_tokens: NonNegM | None = None


class MMsg(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: NonEmpty
    name: str | None = None
    role: Role
    content: list[MBlock]
    metadata: dict[str, Any] = {}
    timestamp: Annotated[str, msgspec.Meta(pattern=TIMESTAMP)] | None = None
    usage: MUsage | None = None

    def __post_init__(self) -> None:
        role = self.role
        if role == "USER" or role == "SYSTEM":
            check_roles(role, [b.__struct_config__.tag for b in self.content])  # type: ignore[misc]
