"""The same Msg schema as a pydantic v2 model and as msgspec Structs, for the benchmark.

Both check what their libraries can express of the schema: closed objects, types, enums, the
discriminated block and source unions, camelCase sizing, and the role rules (a model validator /
``__post_init__``). Neither checks the schema's patterns (timestamps, base64)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec
from pydantic import BaseModel, ConfigDict, Field, model_validator

USER_BLOCKS = {"text", "data", "image", "audio", "video"}
CallState = Literal["pending", "asking", "allowed", "submitted", "finished"]
ResultState = Literal["success", "error", "interrupted", "denied", "running"]
Role = Literal["USER", "ASSISTANT", "SYSTEM", "TOOL"]


def _check_roles(role: str, types: list[str]) -> None:
    if role == "USER" and any(t not in USER_BLOCKS for t in types):
        raise ValueError("USER messages may only contain text, data, image, audio and video blocks")
    if role == "SYSTEM" and any(t != "text" for t in types):
        raise ValueError("SYSTEM messages may only contain text blocks")


# ---- pydantic v2 ----------------------------------------------------------------------------------
C = ConfigDict(extra="forbid", populate_by_name=True)


class PUrl(BaseModel):
    model_config = C
    type: Literal["url"]
    url: str
    mime_type: str | None = None


class PB64(BaseModel):
    model_config = C
    type: Literal["base64"]
    media_type: str
    data: str


PSource = Annotated[PUrl | PB64, Field(discriminator="type")]


class PText(BaseModel):
    model_config = C
    type: Literal["text"]
    text: str


class PThinking(BaseModel):
    model_config = C
    type: Literal["thinking"]
    thinking: str
    metadata: dict[str, Any] | None = None


class PImage(BaseModel):
    model_config = C
    type: Literal["image"]
    source: PSource
    minPixels: int | None = Field(None, ge=0)
    maxPixels: int | None = Field(None, ge=0)


class PAudio(BaseModel):
    model_config = C
    type: Literal["audio"]
    source: PSource


class PVideo(BaseModel):
    model_config = C
    type: Literal["video"]
    source: PSource
    fps: float | None = None
    maxFrames: int | None = None
    minPixels: int | None = None
    maxPixels: int | None = None
    totalPixels: int | None = None


class PData(BaseModel):
    model_config = C
    type: Literal["data"]
    source: PSource
    id: str | None = None
    name: str | None = None


class PToolUse(BaseModel):
    model_config = C
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any] = {}
    content: str | None = None
    metadata: dict[str, Any] = {}
    state: CallState = "pending"


class PToolResult(BaseModel):
    model_config = C
    type: Literal["tool_result"]
    id: str
    name: str | None = None
    output: list[PBlock] = []
    metadata: dict[str, Any] = {}
    state: ResultState = "running"


class PHint(BaseModel):
    model_config = C
    type: Literal["hint"]
    id: str | None = None
    hint: str
    source: str | None = None


PBlock = Annotated[
    PText | PThinking | PImage | PAudio | PVideo | PData | PToolUse | PToolResult | PHint, Field(discriminator="type")
]
PToolResult.model_rebuild()


class PUsage(BaseModel):
    model_config = C
    inputTokens: int | None = None
    outputTokens: int | None = None
    cachedTokens: int | None = None
    time: float | None = None
    totalTokens: int | None = None


class PMsg(BaseModel):
    model_config = C
    id: str = Field(min_length=1)
    name: str | None = None
    role: Role
    content: list[PBlock]
    metadata: dict[str, Any] = {}
    timestamp: str | None = None
    usage: PUsage | None = None

    @model_validator(mode="after")
    def _roles(self) -> PMsg:
        _check_roles(self.role, [b.type for b in self.content])
        return self


# ---- msgspec ----------------------------------------------------------------------------------------
class MUrl(msgspec.Struct, tag_field="type", tag="url", forbid_unknown_fields=True, omit_defaults=True):
    url: str
    mime_type: str | None = None


class MB64(msgspec.Struct, tag_field="type", tag="base64", forbid_unknown_fields=True):
    media_type: str
    data: str


MSource = Union[MUrl, MB64]


class MText(msgspec.Struct, tag_field="type", tag="text", forbid_unknown_fields=True):
    text: str


class MThinking(msgspec.Struct, tag_field="type", tag="thinking", forbid_unknown_fields=True):
    thinking: str
    metadata: dict[str, Any] | None = None


class MImage(
    msgspec.Struct, tag_field="type", tag="image", forbid_unknown_fields=True, omit_defaults=True, rename="camel"
):
    source: MSource
    min_pixels: Annotated[int, msgspec.Meta(ge=0)] | None = None
    max_pixels: Annotated[int, msgspec.Meta(ge=0)] | None = None


class MAudio(msgspec.Struct, tag_field="type", tag="audio", forbid_unknown_fields=True):
    source: MSource


class MVideo(
    msgspec.Struct, tag_field="type", tag="video", forbid_unknown_fields=True, omit_defaults=True, rename="camel"
):
    source: MSource
    fps: float | None = None
    max_frames: int | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    total_pixels: int | None = None


class MData(msgspec.Struct, tag_field="type", tag="data", forbid_unknown_fields=True, omit_defaults=True):
    source: MSource
    id: str | None = None
    name: str | None = None


class MToolUse(msgspec.Struct, tag_field="type", tag="tool_use", forbid_unknown_fields=True):
    id: str
    name: str
    input: dict[str, Any] = {}
    content: str | None = None
    metadata: dict[str, Any] = {}
    state: CallState = "pending"


class MToolResult(msgspec.Struct, tag_field="type", tag="tool_result", forbid_unknown_fields=True):
    id: str
    name: str | None = None
    output: list[MBlock] = []
    metadata: dict[str, Any] = {}
    state: ResultState = "running"


class MHint(msgspec.Struct, tag_field="type", tag="hint", forbid_unknown_fields=True):
    hint: str
    id: str | None = None
    source: str | None = None


MBlock = Union[MText, MThinking, MImage, MAudio, MVideo, MData, MToolUse, MToolResult, MHint]


class MUsage(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    time: float | None = None
    total_tokens: int | None = None


class MMsg(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    role: Role
    content: list[MBlock]
    name: str | None = None
    metadata: dict[str, Any] = {}
    timestamp: str | None = None
    usage: MUsage | None = None

    def __post_init__(self) -> None:
        _check_roles(self.role, [type(b).__struct_config__.tag for b in self.content])  # type: ignore[misc]
