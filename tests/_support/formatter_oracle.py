"""The documented differences between AgentScope's formatters (the oracle) and agentmsg's, as data the oracle test
reads (tests/conformance/test_java_formatters.py): one normalizer per rule of the table in
docs/java-compatibility.md ("Formatter values"), keyed by the rule's id.

A normalizer sees one comparison: a formatter vector's conversation formatted by the oracle and by agentmsg, in one
mode (``chat``, or ``multi``: AgentScope's multi-agent formatter against agentmsg's history layout). It rewrites the
oracle's request where, and only where, its rule applies: the pattern it describes, at the place it names, most of
them only where agentmsg says the diagnostic the table gives for it (the pointer of that diagnostic tells which input
block). Where the oracle and agentmsg carry the same information in different places (a hint, a tool result's media),
the normalizer checks that they do before it moves the oracle's to agentmsg's place. It returns how many changes it
made: the test requires every rule to apply somewhere (no stale rule) and, after every rule has run, the two
requests to be equal: any other difference is either a bug or a new rule for the table."""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

PROMPT = "# Conversation History\nThe content between <history></history> tags contains your conversation history\n"
REPAIR_TEXT = "Error: the tool call was not answered (interrupted)."
OPENAI_FAMILY = ("openai", "deepseek", "dashscope-compatible")
JAVA = (*OPENAI_FAMILY, "anthropic")
PYTHON = ("gemini", "dashscope")


@dataclass
class Comparison:
    """One vector's conversation in one mode: the input messages (JSON), agentmsg's diagnostics and request, the
    oracle's request (``theirs``, rewritten by the rules)."""

    provider: str
    case: str
    mode: str
    messages: list[dict[str, Any]]
    diagnostics: list[tuple[str, str]]
    ours: dict[str, Any]
    theirs: dict[str, Any]
    path: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    media_counts: dict[str, int] | None = None
    applied: dict[str, int] = field(default_factory=dict)

    def said(self, rule: str) -> list[str]:
        """The pointers at which agentmsg said ``rule``."""
        return [p for p, r in self.diagnostics if r == rule]

    def block(self, pointer: str) -> dict[str, Any]:
        """The input block at ``/i/content/j`` (``/i/content/j/output/k`` too)."""
        parts = pointer.strip("/").split("/")
        value: Any = self.messages
        for p in parts:
            value = value[int(p)] if isinstance(value, list) else value[p]
        return value  # type: ignore[no-any-return]

    def turns(self, side: str) -> list[dict[str, Any]]:
        body = self.ours if side == "ours" else self.theirs
        if self.provider == "gemini":
            return body["contents"]  # type: ignore[no-any-return]
        if self.provider == "dashscope":
            return body["input"]["messages"]  # type: ignore[no-any-return]
        return body["messages"]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Rule:
    """A documented difference: where it applies (the oracle's providers and the modes), the field, what the oracle
    sends, what agentmsg sends, the diagnostic agentmsg says it with, why agentmsg's is right; its normalizer."""

    id: str
    providers: tuple[str, ...]
    modes: tuple[str, ...]
    field: str
    oracle: str
    agentmsg: str
    diagnostic: str
    why: str
    fn: Callable[[Comparison], int]


#: The table of docs/java-compatibility.md ("Formatter values"), in the order the rules run: a rule may need another's
#: work done first (Gemini's field names before anything reads them, empty text out before texts are joined, turns
#: merged before they are compared). id -> (providers, modes, field, the oracle sends, agentmsg sends, agentmsg says,
#: why agentmsg's); the test requires each rule to apply to exactly these providers and modes.
TABLE: dict[str, tuple[tuple[str, ...], tuple[str, ...], str, str, str, str, str]] = {
    "python-gemini-snake-case": (
        ("gemini",),
        ("chat", "multi"),
        "field names",
        "google-genai's snake_case (`function_call`, `inline_data`, `mime_type`)",
        "the REST API's camelCase (`functionCall`, `inlineData`, `mimeType`)",
        "none (same request)",
        "agentmsg writes the REST body itself; the SDK turns snake_case into these names",
    ),
    "java-openai-stream-false": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("chat", "multi"),
        "`stream`",
        '`"stream": false` on every request',
        "`stream` only when streaming",
        "none (same request)",
        "false is the API's default",
    ),
    "java-anthropic-system-twice": (
        ("anthropic",),
        ("chat", "multi"),
        "system prompt",
        "in `system` **and** again as the first user turn",
        "in `system` once",
        "none (nothing rewritten)",
        "the prompt twice is a Java bug: the model reads the system prompt as a user turn too",
    ),
    "java-deepseek-system-as-user": (
        ("deepseek",),
        ("chat", "multi"),
        "system messages",
        "sent as `user` messages (DeepSeekFormatter 2.0.0)",
        "`system` messages",
        "none (nothing rewritten)",
        "DeepSeek's API takes system messages; a system prompt with user authority is another request",
    ),
    "python-gemini-system-as-user": (
        ("gemini",),
        ("chat", "multi"),
        "system prompt",
        "the first user turn",
        "`systemInstruction`",
        "none (the provider's field; a later one: `system-hoisted`)",
        "Gemini's place for a system prompt",
    ),
    "thinking-not-replayed": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("chat", "multi"),
        "reasoning",
        "sent: Java OpenAI as `reasoning_content` (OpenAI takes none) or a `[Thinking]: ` history line, Java Anthropic as a plain text block (signature lost), Python Gemini as a thought part without its signature",
        "not sent: OpenAI takes none; another provider's reasoning is not replayed; multi-agent: other speakers' reasoning",
        "`thinking-dropped`",
        "reasoning goes back only where the provider takes it and only to the provider that made it (docs/formatters.md, reasoning replay policy)",
    ),
    "thinking-demoted-to-text": (
        ("openai", "deepseek", "dashscope-compatible", "dashscope", "gemini"),
        ("chat",),
        'reasoning (option `reasoning="text"`)',
        "as reasoning (`reasoning_content`, a thought part) or pruned",
        "as the turn's text, before the answer",
        "`thinking-demoted`",
        "the caller asked for another provider's reasoning as text; AgentScope has no such option",
    ),
    "signature-not-sent": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("chat", "multi"),
        "a call's Gemini `thoughtSignature`",
        "`function.thought_signature`",
        "left out",
        "`signature-dropped`",
        "OpenAI's request schema refuses the field; DeepSeek and DashScope have none",
    ),
    "name-sanitized": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("chat", "multi"),
        "`name`",
        "as given (`Alice Smith`), or none (DeepSeek)",
        "`[A-Za-z0-9_-]{1,64}`: `Alice_Smith`",
        "`name-sanitized`",
        "OpenAI answers 400 to a name outside that pattern",
    ),
    "hint-placed": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("chat", "multi"),
        "hint blocks",
        "Java: in the assistant turn's text; Python: a user turn before the tool calls",
        "its own turn after the message's tool results (system: OpenAI, DeepSeek; user: DashScope; user text: Anthropic, Gemini)",
        "`hint-placed`",
        "a hint is a system-authority reminder; between a call and its result it breaks the providers' pairing",
    ),
    "repaired-orphans": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("chat", "multi"),
        "unanswered calls, orphaned results (option `repair`)",
        "sent as they are (the providers refuse them)",
        "a synthetic error result after the call; the orphan left out",
        "`tool-use-repaired`, `tool-result-dropped`",
        "the caller asked for a request the provider accepts; AgentScope has no such option",
    ),
    "empty-text-not-sent": (
        ("dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("chat",),
        "empty text",
        "empty text blocks and messages",
        "left out",
        "`empty-text-dropped`, `empty-message-dropped`",
        "these providers refuse empty text",
    ),
    "python-dashscope-content-parts": (
        ("dashscope",),
        ("chat", "multi"),
        "content",
        'compatible mode\'s parts (`{"type": "text"}`, `image_url`, ...); a tool-calling turn `null`',
        'native: a string (text generation; texts joined by `\\n`; a tool-calling turn `""`) or `{"text"}`/`{"image"}`/`{"audio"}`/`{"video"}` parts (multimodal)',
        "none (same messages)",
        "AgentScope Python 2.x calls compatible mode; agentmsg's `dashscope` is the native API",
    ),
    "media-pdf-sent": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic"),
        ("chat",),
        "a PDF",
        "`[Media - unsupported MIME type: ...]` / `[Media - processing failed: ...]` text",
        "OpenAI's `file` part, Anthropic's `document`; elsewhere its placeholder `[data: report.pdf (application/pdf)]`",
        "`media-unsupported` (placeholder)",
        "both providers take PDFs; a placeholder says which file was not sent",
    ),
    "media-unsupported-sent-by-oracle": (
        ("openai", "deepseek"),
        ("chat",),
        "media the provider does not take",
        "sent anyway: `video_url` to OpenAI, `image_url`/`input_audio` to DeepSeek",
        "a placeholder naming it (`[video: https://...]`)",
        "`media-unsupported`",
        "the provider refuses the request otherwise (OpenAI has no video; DeepSeek takes text only)",
    ),
    "media-dropped-silently": (
        ("anthropic", "dashscope"),
        ("chat",),
        "audio and video (Anthropic), a PDF (DashScope)",
        "left out without a word",
        "a placeholder naming it",
        "`media-unsupported`",
        "no silent loss",
    ),
    "media-url-downloaded": (
        ("gemini",),
        ("chat",),
        "a media URL",
        "downloaded and sent inline (`inlineData`)",
        "`fileData` with the URL and MIME type (a video's fps in `videoMetadata`)",
        "none (Gemini fetches it)",
        "no download without the caller's media policy (docs/formatters.md)",
    ),
    "media-sizing-sent": (
        ("dashscope-compatible", "dashscope"),
        ("chat",),
        "Qwen-VL sizing hints",
        "left out",
        "`max_pixels`, `fps`, ... beside the medium",
        "none (sent)",
        "DashScope takes them; elsewhere both leave them out and agentmsg says `media-option-dropped`",
    ),
    "media-audio-type": (
        ("dashscope",),
        ("chat",),
        "inline audio",
        "`data:;base64,...` (no MIME type)",
        "`data:audio/wav;base64,...`",
        "none",
        "the MIME type tells the format",
    ),
    "text-only-content-string": (
        ("deepseek",),
        ("chat", "multi"),
        "user content",
        "a part list for several text blocks",
        "one string, the texts joined by `\\n`",
        "none (same text)",
        "DeepSeek's contents are strings",
    ),
    "name-field-sent": (
        ("deepseek", "dashscope"),
        ("chat", "multi"),
        "`name`",
        "none (DeepSeekFormatter 2.0.0 strips names; AgentScope Python's DashScope formatter sends none)",
        "the speaker's name",
        "none (sent)",
        "both APIs take a name on system, user and assistant messages",
    ),
    "gemini-signatures-replayed": (
        ("gemini",),
        ("chat", "multi"),
        "Gemini's own thought signatures",
        "thought parts without `thoughtSignature`; empty signed thinking skipped; calls without signatures",
        "`thoughtSignature` on thought parts and beside each `functionCall`; a signature-only block as an empty thought part",
        "none (replayed as Gemini gave them)",
        "Gemini 3 refuses a current turn's call without its signature",
    ),
    "java-openai-first-result-only": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("chat", "multi"),
        "tool results",
        "only the first result of a message holding several",
        "one tool message per result",
        "none (nothing dropped)",
        "the provider refuses a request with unanswered calls",
    ),
    "tool-result-media-fallback": (
        ("openai", "dashscope-compatible", "dashscope"),
        ("chat", "multi"),
        "media in a tool result",
        "Java: media parts inside the tool message (OpenAI refuses them); Python: a `<system-reminder>` user turn with an identifier",
        "the tool message names them (`[image: image/png]`); a user message `Media returned by tool call ID:` with the media follows the results",
        "`tool-result-media-fallback`",
        "a tool message takes text only there",
    ),
    "tool-result-media-in-response": (
        ("gemini",),
        ("chat", "multi"),
        "media in a tool result",
        "an identifier in the output, the media in a `<system-reminder>` user turn",
        "`functionResponse.parts`",
        "none (the provider's field)",
        "Gemini takes media in a function response",
    ),
    "tool-result-media-text-only": (
        ("deepseek",),
        ("chat", "multi"),
        "media in a tool result",
        "media parts inside the tool message",
        "named in the tool message, nothing more",
        "`media-unsupported`",
        "DeepSeek takes text only (the fix of this work: no user message of placeholders)",
    ),
    "java-openai-history-part-list": (
        ("openai", "dashscope-compatible"),
        ("multi",),
        "history turn",
        "a part list of one text part",
        "a string",
        "none (same message)",
        "the same message",
    ),
    "java-openai-history-trailing-newline": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("multi",),
        "history turn",
        "ends `</history>\\n`",
        "ends `</history>`",
        "none",
        "AgentScope's other formatters (and Python's) end so",
    ),
    "java-openai-history-prompt-every-run": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("multi",),
        "history prompt",
        "before every run of other speakers",
        "before the first run only",
        "none",
        "AgentScope's other formatters (and Python's) say it once",
    ),
    "java-openai-history-names": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("multi",),
        "history lines",
        "`Name: ` only in a run of several named messages",
        "every line labelled; an unnamed speaker by its role (`User: `)",
        "none (layout)",
        "the model always knows who spoke, as with AgentScope's other formatters",
    ),
    "java-anthropic-history-role-label": (
        ("anthropic",),
        ("multi",),
        "history lines of an unnamed speaker",
        "the role's enum name: `USER: `",
        "the role in title case: `User: `",
        "none (layout)",
        "one label for an unnamed speaker in every layout and provider",
    ),
    "multi-tool-turn-labelled": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("multi",),
        "another speaker's tool-calling turn",
        "its text as it is",
        "`[Name]: text` (the turn stays an assistant turn)",
        "none (layout: docs/formatters.md, Multi-agent)",
        "the speaker stays known where the turn cannot be folded into the history",
    ),
    "history-media-labelled-in-place": (
        ("openai", "deepseek", "dashscope-compatible", "anthropic", "gemini", "dashscope"),
        ("multi",),
        "media in a history run",
        "unlabelled: Java OpenAI in place; Java Anthropic images only (other media left out silently); Python Gemini in place (URLs downloaded); Python DashScope after `</history>`",
        "the speaker's label (`User:`) then the medium, in place; `</history>` last",
        "media rules as in chat (`media-unsupported` for placeholders)",
        "who sent each medium stays known, and nothing is dropped silently",
    ),
    "java-anthropic-parallel-calls-split": (
        ("anthropic",),
        ("chat", "multi"),
        "parallel tool calls",
        "split into alternating assistant(call)/user(result) pairs",
        "the calls in one turn, their results in the next",
        "`turns-merged` when the results came in several messages",
        "the model's turn goes back as the model made it",
    ),
    "turns-merged": (
        ("anthropic", "gemini"),
        ("chat", "multi"),
        "consecutive turns of one role",
        "sent one by one",
        "merged into one turn",
        "`turns-merged`",
        "strictly alternating turns; Gemini needs all responses to parallel calls in one turn",
    ),
    "java-anthropic-thinking-as-text": (
        ("anthropic",),
        ("chat",),
        "Anthropic's signed thinking",
        "a plain text block, the signature dropped",
        "a `thinking` block with its `signature`, in place",
        "none (replayed as Anthropic gave it)",
        "Anthropic needs the signed block back in tool loops; as text, reasoning becomes answer",
    ),
    "tool-result-error-state": (
        ("anthropic", "gemini"),
        ("chat", "multi"),
        "a failed tool result",
        "sent as a success",
        '`is_error: true` (Anthropic), `response: {"error": ...}` (Gemini)',
        "none (the provider's field)",
        "the model learns the call failed",
    ),
    "tool-id-mapped": (
        ("openai", "anthropic"),
        ("chat", "multi"),
        "tool-call ids",
        "as given (Anthropic: `functions.get_weather:0`; OpenAI: 41 characters), and the provider answers 400",
        "mapped, alike in call and result: `[^A-Za-z0-9_-]` to `_`, cut to leave room for `_` and 10 hex digits of"
        " its SHA-256 within the limit (OpenAI 40 characters, Anthropic 64)",
        "`tool-id-mapped`",
        "Anthropic ids must match `[A-Za-z0-9_-]+`; OpenAI's are at most 40 characters",
    ),
    "anthropic-parallel-tool-use-off": (
        ("anthropic",),
        ("chat", "multi"),
        "`parallel_tool_calls=False`",
        "left out",
        "`tool_choice.disable_parallel_tool_use: true`",
        "none (mapped)",
        "Anthropic's field for it",
    ),
    "tool-choice-required-unsupported": (
        ("dashscope-compatible",),
        ("chat", "multi"),
        '`tool_choice: "required"`',
        '`"required"`',
        '`"auto"`',
        "`tool-choice-changed`",
        "DashScope has no `required`",
    ),
    "java-openai-tool-call-content-empty": (
        ("openai", "deepseek", "dashscope-compatible"),
        ("chat", "multi"),
        "content of a tool-calling turn without text",
        '`""`',
        "`null`",
        "none",
        "OpenAI's documented value (content is optional with `tool_calls`)",
    ),
}

RULES: dict[str, Rule] = {}


def rule(rule_id: str) -> Callable[[Callable[[Comparison], int]], Callable[[Comparison], int]]:
    def register(fn: Callable[[Comparison], int]) -> Callable[[Comparison], int]:
        assert rule_id not in RULES, rule_id
        RULES[rule_id] = Rule(rule_id, *TABLE[rule_id], fn=fn)
        return fn

    return register


def table_markdown() -> str:
    """The rule table as docs/java-compatibility.md has it."""
    rows = [
        "| rule | providers | modes | field | the oracle sends | agentmsg sends | agentmsg says | why agentmsg's |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in RULES.values():
        cells = [
            f"`{r.id}`",
            ", ".join(r.providers),
            ", ".join(r.modes),
            r.field,
            r.oracle,
            r.agentmsg,
            r.diagnostic,
            r.why,
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def apply(c: Comparison) -> None:
    """Every rule for the comparison's provider and mode, in the table's order."""
    for r in RULES.values():
        if c.provider in r.providers and c.mode in r.modes:
            n = r.fn(c)
            if n:
                c.applied[r.id] = c.applied.get(r.id, 0) + n


# ---- helpers ----------------------------------------------------------------------------------------------------


def _texts_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _is_history(text: Any) -> bool:
    return isinstance(text, str) and "<history>" in text


def _labels(c: Comparison) -> set[str]:
    """How agentmsg labels the speakers of the conversation: a message's name, or its role in title case."""
    return {m.get("name") or m["role"].title() for m in c.messages}


def _call_ids(msg: dict[str, Any]) -> list[str]:
    return [b["id"] for b in msg["content"] if b["type"] == "tool_use"]


# ---- representation: the same request written another way ----------------------------------------------------


@rule("java-openai-stream-false")
def _stream_false(c: Comparison) -> int:
    """OpenAIRequest always writes stream: false; agentmsg writes stream only when it streams (false is the
    default)."""
    if c.theirs.get("stream") is False and "stream" not in c.ours:
        del c.theirs["stream"]
        return 1
    return 0


@rule("java-openai-tool-call-content-empty")
def _tool_call_content(c: Comparison) -> int:
    """A tool-calling assistant turn without text: Java content "", agentmsg content null (OpenAI's documented
    value: content is required unless tool_calls is given)."""
    n = 0
    for theirs, ours in zip(c.turns("theirs"), c.turns("ours"), strict=False):
        if theirs.get("tool_calls") and theirs.get("content") == "" and ours.get("content") is None:
            theirs["content"] = None
            n += 1
    return n


@rule("python-dashscope-content-parts")
def _dashscope_parts(c: Comparison) -> int:
    """AgentScope Python 2.x writes DashScope's OpenAI-compatible shape (it calls compatible mode): text as
    [{"type": "text"}] parts, media as image_url / input_audio / video_url parts, a tool-calling turn's content
    null. The native API agentmsg writes takes the same messages with a string content (text generation: the texts
    joined by a newline; a tool-calling turn ""), or {"text"} / {"image"} / {"audio"} / {"video"} parts
    (multimodal)."""
    n = 0
    multimodal = "multimodal-generation" in c.path
    for m in c.turns("theirs"):
        content = m.get("content")
        if content is None and m.get("tool_calls"):
            m["content"] = [{"text": ""}] if multimodal else ""
            n += 1
        elif isinstance(content, list):
            if not multimodal and all(p.get("type") == "text" for p in content):
                m["content"] = "\n".join(p["text"] for p in content)
            else:
                m["content"] = [_native_part(p) for p in content]
            n += 1
        elif isinstance(content, str) and multimodal:
            m["content"] = [{"text": content}]
            n += 1
    return n


def _native_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"text": part["text"]}
    if kind == "image_url":
        return {"image": part["image_url"]["url"]}
    if kind == "video_url":
        return {"video": part["video_url"]["url"]}
    if kind == "input_audio":
        return {"audio": part["input_audio"]["data"]}
    return part


@rule("python-gemini-snake-case")
def _snake_case(c: Comparison) -> int:
    """AgentScope Python writes google-genai's snake_case field names (function_call, inline_data, mime_type,
    ...), which the SDK turns into the REST API's camelCase; agentmsg writes the REST body itself."""
    names = {
        "function_call": "functionCall",
        "function_response": "functionResponse",
        "inline_data": "inlineData",
        "mime_type": "mimeType",
        "file_data": "fileData",
        "file_uri": "fileUri",
    }
    n = 0
    for d in list(_walk(c.turns("theirs"))):
        for old, new in names.items():
            if old in d:
                d[new] = d.pop(old)
                n += 1
    return n


# ---- system prompts ---------------------------------------------------------------------------------------------


@rule("java-anthropic-system-twice")
def _anthropic_system_twice(c: Comparison) -> int:
    """AnthropicChatModel puts the first system message in the top-level system parameter and the formatter also
    sends it as the first user turn: the prompt twice. agentmsg sends it once, as system."""
    turns = c.turns("theirs")
    system = c.theirs.get("system")
    if system and turns and turns[0]["role"] == "user" and _texts_of(turns[0]["content"]) == [system]:
        del turns[0]
        return 1
    return 0


@rule("java-deepseek-system-as-user")
def _deepseek_system(c: Comparison) -> int:
    """DeepSeekFormatter 2.0.0 sends every system message as a user message; DeepSeek's API takes system messages
    (agentmsg keeps them)."""
    n = 0
    for theirs, ours in zip(c.turns("theirs"), c.turns("ours"), strict=False):
        if theirs["role"] == "user" and ours["role"] == "system" and theirs["content"] == ours["content"]:
            theirs["role"] = "system"
            n += 1
    return n


@rule("python-gemini-system-as-user")
def _gemini_system(c: Comparison) -> int:
    """AgentScope Python sends a system message as the first user turn; agentmsg sends it as systemInstruction,
    Gemini's place for it."""
    turns = c.turns("theirs")
    first = c.messages[0] if c.messages else None
    if first and first["role"] == "SYSTEM" and "systemInstruction" in c.ours and turns:
        text = "\n".join(b["text"] for b in first["content"] if b["type"] == "text")
        if turns[0] == {"role": "user", "parts": [{"text": text}]}:
            del turns[0]
            c.theirs["systemInstruction"] = {"parts": [{"text": text}]}
            return 1
    return 0


# ---- reasoning ---------------------------------------------------------------------------------------------------


def _thinking_texts(c: Comparison, rule_name: str) -> list[tuple[int, str]]:
    """(message index, thinking text) of every thinking block at which agentmsg said ``rule_name``."""
    out = []
    for pointer in c.said(rule_name):
        b = c.block(pointer)
        if b.get("type") == "thinking":
            out.append((int(pointer.split("/")[1]), b["thinking"]))
    return out


@rule("thinking-not-replayed")
def _thinking_dropped(c: Comparison) -> int:
    """Reasoning agentmsg does not send, said thinking-dropped: OpenAI takes none; reasoning from another provider
    (metadata provider) is not replayed; a Gemini signature-only block has no text to send elsewhere; in
    multi-agent mode, other speakers' reasoning. AgentScope sends it: Java's OpenAI formatters as
    reasoning_content (which OpenAI does not take) or, folded into a history, a "[Thinking]: " line; Java's
    Anthropic formatter as a plain text block (it has no thinking blocks: the signature is lost); AgentScope
    Python's Gemini formatter as a thought part without its signature. Each is removed where agentmsg said it."""
    n = 0
    for _, text in _thinking_texts(c, "thinking-dropped"):
        n += _remove_thinking(c, text)
    return n


def _remove_thinking(c: Comparison, text: str) -> int:
    for m in c.turns("theirs"):
        if m.get("reasoning_content") == text:
            del m["reasoning_content"]
            return 1
        lines = (m.get("reasoning_content") or "").split("\n")
        if text in lines and len(lines) > 1:  # AgentScope Python joins a turn's thinking blocks with newlines
            lines.remove(text)
            m["reasoning_content"] = "\n".join(lines)
            return 1
        if m.get("role") in ("assistant", "model"):
            parts = m.get("content") if c.provider == "anthropic" else m.get("parts")
            if isinstance(parts, list):
                for k, p in enumerate(parts):
                    if p == {"text": text, "type": "text"} or p == {"thought": True, "text": text}:
                        del parts[k]
                        return 1
        for k, t in enumerate(_texts_of(m.get("content")) + _texts_of(m.get("parts"))):
            if _is_history(t):
                lines = t.split("\n")
                for j, line in enumerate(lines):
                    if line == f"[Thinking]: {text}" or line.endswith(f": [Thinking]: {text}"):
                        del lines[j]
                        _set_text(m, k, "\n".join(lines))
                        return 1
    return 0


def _set_text(m: dict[str, Any], k: int, text: str) -> None:
    """Set the k-th text of a turn (as _texts_of lists them)."""
    key = "parts" if "parts" in m else "content"
    if isinstance(m[key], str):
        m[key] = text
        return
    texts = [p for p in m[key] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    texts[k]["text"] = text


@rule("thinking-demoted-to-text")
def _thinking_demoted(c: Comparison) -> int:
    """Option reasoning='text': another provider's reasoning goes as the turn's text (said thinking-demoted).
    AgentScope sends it as reasoning (reasoning_content, a thought part) or not at all (DeepSeek's and DashScope's
    pruning): here the oracle's turn gets it as text before the rest, as agentmsg sends it."""
    n = 0
    for i, text in _thinking_texts(c, "thinking-demoted"):
        answer = "\n".join(b["text"] for b in c.messages[i]["content"] if b["type"] == "text")
        for m in c.turns("theirs"):
            if m.get("role") not in ("assistant", "model"):
                continue
            if c.provider == "gemini":
                if m["parts"] and m["parts"][0] == {"thought": True, "text": text}:
                    m["parts"][0] = {"text": text}
                    n += 1
                    break
            elif _texts_of(m.get("content")) == [answer]:
                m["content"] = f"{text}\n{answer}"
                m.pop("reasoning_content", None)
                n += 1
                break
    return n


@rule("signature-not-sent")
def _signature_dropped(c: Comparison) -> int:
    """A Gemini thought signature on a function call (metadata thoughtSignature), said signature-dropped by
    agentmsg: OpenAI's API, DeepSeek's and DashScope's have no field for it (OpenAI's request schema refuses
    function.thought_signature, which Java's OpenAI formatter sends)."""
    n = 0
    for pointer in c.said("signature-dropped"):
        b = c.block(pointer)
        if b.get("type") != "tool_use":
            continue
        for m in c.turns("theirs"):
            for call in m.get("tool_calls") or []:
                if call["id"] == b["id"] and "thought_signature" in call["function"]:
                    del call["function"]["thought_signature"]
                    n += 1
    return n


@rule("java-anthropic-thinking-as-text")
def _anthropic_thinking_text(c: Comparison) -> int:
    """Java's Anthropic formatter sends a thinking block as a plain text block, without its signature (and
    Anthropic refuses unsigned reasoning as thinking); agentmsg replays Anthropic's own signed thinking as it
    came, a thinking block with its signature, in its place."""
    n = 0
    for m in c.messages:
        for b in m["content"]:
            meta = b.get("metadata") or {}
            if b["type"] != "thinking" or not meta.get("signature") or meta.get("provider") not in (None, "anthropic"):
                continue
            plain = {"text": b["thinking"], "type": "text"}
            for theirs in c.turns("theirs"):
                if theirs["role"] == "assistant" and plain in theirs["content"]:
                    signed = {"type": "thinking", "thinking": b["thinking"], "signature": meta["signature"]}
                    theirs["content"][theirs["content"].index(plain)] = signed
                    n += 1
                    break
    return n


# ---- turns and tool calls ---------------------------------------------------------------------------------------


@rule("java-openai-first-result-only")
def _first_result_only(c: Comparison) -> int:
    """Java's OpenAI formatter sends only the first tool result of a message that holds several (the others are
    lost, and the provider refuses the unanswered calls); agentmsg sends one tool message per result. The oracle
    gets the missing ones, in Java's tool message shape, after the one before them."""
    n = 0
    for m in c.messages:
        results = [b for b in m["content"] if b["type"] == "tool_result"]
        for before, later in itertools.pairwise(results):
            theirs = c.turns("theirs")
            if any(t.get("tool_call_id") == later["id"] for t in theirs):
                continue
            at = next((j for j, t in enumerate(theirs) if t.get("tool_call_id") == before["id"]), None)
            if at is None:
                continue
            theirs.insert(at + 1, {"role": "tool", "content": _java_tool_content(later), "tool_call_id": later["id"]})
            n += 1
    return n


@rule("java-anthropic-parallel-calls-split")
def _parallel_split(c: Comparison) -> int:
    """Java's Anthropic formatter splits an assistant turn with parallel tool calls, answered by the results that
    follow, into alternating assistant(call) / user(result) pairs: the model's turn is not replayed as it made it.
    agentmsg keeps the calls in one turn and their results in the next (said turns-merged when the results came
    in several messages). The oracle's pairs are joined back."""
    turns = c.turns("theirs")
    n = 0
    k = 0
    while k + 3 < len(turns):
        a, r, a2, r2 = turns[k : k + 4]
        if (
            a["role"] == "assistant"
            and a2["role"] == "assistant"
            and all(p["type"] == "tool_use" for p in a2["content"])
            and r["role"] == r2["role"] == "user"
            and all(p["type"] == "tool_result" for p in r["content"] + r2["content"])
            and a["content"]
            and a["content"][-1]["type"] == "tool_use"
        ):
            a["content"] += a2["content"]
            r["content"] += r2["content"]
            del turns[k + 2 : k + 4]
            n += 1
            continue
        k += 1
    return n


@rule("turns-merged")
def _turns_merged(c: Comparison) -> int:
    """Anthropic and Gemini take strictly alternating turns: agentmsg merges consecutive turns of one role into one
    (said turns-merged); AgentScope sends them one by one (Anthropic merges them so itself; Gemini needs all the
    responses to parallel calls in one turn). The oracle's consecutive turns of one role are merged where agentmsg
    said so."""
    if not c.said("turns-merged") and not _split_results(c):
        return 0
    turns = c.turns("theirs")
    key = "parts" if c.provider == "gemini" else "content"
    n = 0
    k = 1
    while k < len(turns):
        if turns[k]["role"] == turns[k - 1]["role"]:
            turns[k - 1][key] = turns[k - 1][key] + turns[k][key]
            del turns[k]
            n += 1
        else:
            k += 1
    return n


def _split_results(c: Comparison) -> bool:
    """AgentScope Python's Gemini formatter gives each function response of one message its own turn."""
    return c.provider == "gemini" and any(sum(b["type"] == "tool_result" for b in m["content"]) > 1 for m in c.messages)


@rule("tool-result-error-state")
def _error_state(c: Comparison) -> int:
    """A result whose state is error, denied or interrupted: agentmsg sends Anthropic's is_error: true and Gemini's
    error response (response.error); AgentScope sends it as a success."""
    n = 0
    for m in c.messages:
        for b in m["content"]:
            if b["type"] != "tool_result" or b.get("state") not in ("error", "denied", "interrupted"):
                continue
            for d in _walk(c.turns("theirs")):
                if d.get("type") == "tool_result" and d.get("tool_use_id") == b["id"] and "is_error" not in d:
                    d["is_error"] = True
                    n += 1
                fr = d.get("functionResponse")
                if isinstance(fr, dict) and fr.get("id") == b["id"] and "output" in fr["response"]:
                    fr["response"] = {"error": fr["response"]["output"]}
                    n += 1
    return n


@rule("tool-id-mapped")
def _tool_id_mapped(c: Comparison) -> int:
    """A tool-call id the provider refuses (Anthropic: [A-Za-z0-9_-]+) is mapped by agentmsg, alike in call and
    result (said tool-id-mapped); AgentScope sends it as it is, and the provider answers 400. The oracle's id is
    replaced by agentmsg's mapping, computed here from the documented rule."""
    n = 0
    for pointer in c.said("tool-id-mapped"):
        original = c.block(pointer)["id"]
        mapped = _mapped_id(original, 40 if c.provider == "openai" else 64)
        for d in _walk(c.turns("theirs")):
            for key in ("id", "tool_use_id", "tool_call_id"):
                if d.get(key) == original:
                    d[key] = mapped
                    n += 1
    return n


def _mapped_id(original: str, limit: int) -> str:
    digest = hashlib.sha256(original.encode()).hexdigest()[:10]
    return re.sub(r"[^A-Za-z0-9_-]", "_", original)[: limit - 11] + "_" + digest


@rule("anthropic-parallel-tool-use-off")
def _parallel_off(c: Comparison) -> int:
    """parallel_tool_calls=False: agentmsg sends Anthropic's tool_choice.disable_parallel_tool_use; Java 2.0.0's
    Anthropic formatter leaves the option out (GenerateOptions.parallelToolCalls is not read)."""
    choice = c.theirs.get("tool_choice")
    if isinstance(choice, dict) and c.params.get("parallel_tool_calls") is False:
        choice["disable_parallel_tool_use"] = True
        return 1
    return 0


@rule("tool-choice-required-unsupported")
def _required(c: Comparison) -> int:
    """DashScope has no tool_choice "required": agentmsg sends "auto" (said tool-choice-changed); Java's OpenAI
    formatter sends "required"."""
    if c.said("tool-choice-changed") and c.theirs.get("tool_choice") == "required":
        c.theirs["tool_choice"] = "auto"
        return 1
    return 0


# ---- names, hints, repairs, empty content -----------------------------------------------------------------------


@rule("name-sanitized")
def _name_sanitized(c: Comparison) -> int:
    """OpenAI-style name fields must match [A-Za-z0-9_-]{1,64}: agentmsg replaces the other characters with '_'
    (said name-sanitized); Java 2.0.0's OpenAI formatter sends the name as it is ("Alice Smith": a 400), and
    DeepSeekFormatter 2.0.0 sends no name at all."""
    n = 0
    for pointer in c.said("name-sanitized"):
        i = int(pointer.split("/")[1])
        name = c.messages[i]["name"]
        sent = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]
        content = json.dumps(_message_text(c.messages[i]))
        for theirs in c.turns("theirs"):
            if theirs.get("name") == name:
                theirs["name"] = sent
                n += 1
            elif c.provider == "deepseek" and "name" not in theirs and theirs["role"] != "tool":
                ours = [m for m in c.turns("ours") if m.get("name") == sent]
                if ours and json.dumps(theirs.get("content")) in (content, json.dumps(ours[0].get("content"))):
                    theirs["name"] = sent
                    n += 1
    return n


def _message_text(msg: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in msg["content"] if b["type"] == "text")


@rule("hint-placed")
def _hint_placed(c: Comparison) -> int:
    """A hint block is sent as its own turn after the message that holds it and after that message's tool results
    (said hint-placed): a system message (OpenAI, DeepSeek), a user message (DashScope, both modes), user text
    (Anthropic, Gemini). Java puts its text into the assistant turn's text; AgentScope Python sends it as a user
    turn before the assistant's tool calls. The oracle's hint is moved to agentmsg's place: taken out where it is
    (checked to be the hint's exact text), put where agentmsg's is."""
    n = 0
    for pointer in c.said("hint-placed"):
        i = int(pointer.split("/")[1])
        text = c.block(pointer)["hint"]
        if not _take_hint(c, text):
            continue
        theirs = c.turns("theirs")
        calls = set(_call_ids(c.messages[i]))
        at = max((k for k, t in enumerate(theirs) if _answers(t, calls)), default=None)
        if at is None:
            continue
        if c.provider in ("anthropic", "gemini"):
            key = "parts" if c.provider == "gemini" else "content"
            theirs[at][key].append(_text_part(c, text))
        else:
            role = "system" if c.provider in ("openai", "deepseek") else "user"
            theirs.insert(at + 1, {"role": role, "content": text})
        n += 1
    return n


def _answers(turn: dict[str, Any], calls: set[str]) -> bool:
    """Whether the turn answers one of the tool calls: a tool message, Anthropic results, Gemini responses."""
    if turn.get("tool_call_id") in calls:
        return True
    return any(_result_in(turn, call) for call in calls)


def _take_hint(c: Comparison, text: str) -> bool:
    turns = c.turns("theirs")
    for k, m in enumerate(turns):
        if m.get("role") == "assistant" and m.get("content") == text:
            m["content"] = "" if m.get("tool_calls") else None
            return True
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for j, p in enumerate(m["content"]):
                if p == {"text": text, "type": "text"}:
                    del m["content"][j]
                    return True
        if _hint_turn(m, text):
            del turns[k]
            return True
    return False


def _hint_turn(m: dict[str, Any], text: str) -> bool:
    return m.get("role") in ("user", "system") and (
        m.get("content") in (text, [{"type": "text", "text": text}], [{"text": text}])
        or m.get("parts") == [{"text": text}]
    )


@rule("repaired-orphans")
def _repaired(c: Comparison) -> int:
    """Option repair: an unanswered tool call gets a synthetic error result right after it (said
    tool-use-repaired) and a result that answers no call is left out (said tool-result-dropped); AgentScope has no
    such option and sends the conversation as it is (which the providers refuse). The oracle gets agentmsg's
    repair: the orphaned result taken out, the synthetic result put where agentmsg's is."""
    n = 0
    for pointer in c.said("tool-result-dropped"):
        orphan = c.block(pointer)["id"]
        turns = c.turns("theirs")
        for k, m in enumerate(turns):
            if m.get("tool_call_id") == orphan or _only_result_for(m, orphan):
                del turns[k]
                n += 1
                break
    for pointer in c.said("tool-use-repaired"):
        call = c.block(pointer)["id"]
        tool = c.block(pointer)["name"]
        theirs = c.turns("theirs")
        a = next((k for k, t in enumerate(theirs) if call in _calls_in(t)), None)
        if a is None:
            continue
        if c.provider in ("anthropic", "gemini"):  # the result part opens the next user turn
            key = "parts" if c.provider == "gemini" else "content"
            if a + 1 < len(theirs) and theirs[a + 1]["role"] == "user":
                theirs[a + 1][key].insert(0, _repair_part(c, call, tool))
            else:
                theirs.insert(a + 1, {"role": "user", key: [_repair_part(c, call, tool)]})
        else:  # a tool message right after the call
            theirs.insert(a + 1, _repair_message(c, call, tool))
        n += 1
    return n


def _java_tool_content(result: dict[str, Any]) -> Any:
    """What Java's OpenAI formatter sends as a tool message's content: the text, or text and image parts when the
    output holds media."""
    output = result["output"]
    if not any(b["type"] in MEDIA for b in output):
        return "\n".join(b["text"] for b in output if b["type"] == "text")
    parts: list[dict[str, Any]] = []
    for b in output:
        if b["type"] == "text":
            parts.append({"type": "text", "text": b["text"]})
        elif b["type"] == "image":
            src = b["source"]
            url = src["url"] if src.get("type") == "url" else f"data:{src['media_type']};base64,{src['data']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _calls_in(turn: dict[str, Any]) -> list[str]:
    """The ids of the tool calls an assistant turn makes (any provider's shape)."""
    ids = [call["id"] for call in turn.get("tool_calls") or []]
    parts = turn.get("content") if isinstance(turn.get("content"), list) else turn.get("parts")
    for p in parts or []:
        if isinstance(p, dict) and p.get("type") == "tool_use":
            ids.append(p["id"])
        elif isinstance(p, dict) and "functionCall" in p:
            ids.append(p["functionCall"].get("id"))
    return ids


def _repair_message(c: Comparison, call: str, tool: str) -> dict[str, Any]:
    """agentmsg's documented synthetic result, a tool message (OpenAI family, DashScope with the tool's name)."""
    if c.provider == "dashscope":
        return {"role": "tool", "content": REPAIR_TEXT, "tool_call_id": call, "name": tool}
    return {"role": "tool", "content": REPAIR_TEXT, "tool_call_id": call}


def _repair_part(c: Comparison, call: str, tool: str) -> dict[str, Any]:
    """agentmsg's documented synthetic result, an error result part (Anthropic, Gemini)."""
    if c.provider == "gemini":
        return {"functionResponse": {"id": call, "name": tool, "response": {"error": REPAIR_TEXT}}}
    return {
        "type": "tool_result",
        "tool_use_id": call,
        "content": [{"type": "text", "text": REPAIR_TEXT}],
        "is_error": True,
    }


def _result_in(m: dict[str, Any], call: str) -> bool:
    for p in m.get("content") or m.get("parts") or []:
        if isinstance(p, dict) and (
            p.get("tool_use_id") == call or (p.get("functionResponse") or {}).get("id") == call
        ):
            return True
    return False


def _only_result_for(m: dict[str, Any], call: str) -> bool:
    parts = m.get("content") if isinstance(m.get("content"), list) else m.get("parts")
    return isinstance(parts, list) and len(parts) == 1 and _result_in(m, call)


@rule("empty-text-not-sent")
def _empty_text(c: Comparison) -> int:
    """Anthropic, Gemini and DashScope (both modes) refuse empty text: agentmsg leaves out an empty text block (said
    empty-text-dropped) and a message left with nothing (said empty-message-dropped); AgentScope sends them."""
    n = 0
    if not (c.said("empty-text-dropped") or c.said("empty-message-dropped")):
        return 0
    turns = c.turns("theirs")
    for m in list(turns):
        key = "parts" if "parts" in m else "content"
        if isinstance(m.get(key), list):
            kept = [
                p
                for p in m[key]
                if not (isinstance(p, dict) and p.get("text") == "" and len(p) <= 2 and p.get("type", "text") == "text")
            ]
            if len(kept) != len(m[key]):
                n += len(m[key]) - len(kept)
                m[key] = kept
        if m.get(key) in ([], "", None) and not m.get("tool_calls"):
            turns.remove(m)
            n += 1
        elif (
            c.provider in OPENAI_FAMILY and isinstance(m.get(key), list) and len(m[key]) == 1 == len(_texts_of(m[key]))
        ):
            m[key] = m[key][0]["text"]  # Java writes a message of one text block as a string
    return n


@rule("text-only-content-string")
def _deepseek_string(c: Comparison) -> int:
    """DeepSeek takes text only, content a string: agentmsg joins a message's texts with a newline (as AgentScope
    joins an assistant's); Java sends a user message of several text blocks as a part list."""
    n = 0
    for m in c.turns("theirs"):
        content = m.get("content")
        if m["role"] == "user" and isinstance(content, list) and all(p.get("type") == "text" for p in content):
            m["content"] = "\n".join(p["text"] for p in content)
            n += 1
    return n


# ---- media ------------------------------------------------------------------------------------------------------

MEDIA = ("image", "audio", "video", "data")


def _kind(block: dict[str, Any]) -> str:
    """image, audio, video or pdf (a data block names its kind by its MIME type)."""
    if block["type"] != "data":
        return str(block["type"])
    media_type = block["source"].get("media_type") or block["source"].get("mime_type") or ""
    return "pdf" if media_type == "application/pdf" else media_type.split("/")[0]


#: (provider, kind) -> how many parts the oracle sends for such a block (1 unless it drops it without a word)
ORACLE_DROPS = {("anthropic", "audio"), ("anthropic", "video"), ("dashscope", "pdf")}


def _label(block: dict[str, Any]) -> str:
    """agentmsg's documented placeholder for a medium (docs/formatters.md): [kind: URL or MIME type], a named data
    block's name first."""
    source = block["source"]
    what = source["url"] if source.get("type") == "url" else str(source["media_type"]).lower()
    if block.get("name"):
        what = f"{block['name']} ({what})"
    return f"[{block['type']}: {what}]"


def _pdf_part(c: Comparison, block: dict[str, Any]) -> Any:
    """agentmsg's documented part for a PDF: OpenAI's file part, Anthropic's document block, else a placeholder."""
    data = block["source"].get("data")
    if c.provider == "openai" and data:
        return {
            "type": "file",
            "file": {"filename": block.get("name"), "file_data": f"data:application/pdf;base64,{data}"},
        }
    if c.provider == "anthropic" and data:
        document = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}
        return {**document, "title": block["name"]} if block.get("name") else document
    return _text_part(c, _label(block))


def _sized(c: Comparison, block: dict[str, Any], part: Any) -> Any:
    """The oracle's part with the sizing hints agentmsg sends (DashScope: max_pixels, min_pixels, fps, ...)."""
    hints = {"max_pixels": block.get("maxPixels"), "min_pixels": block.get("minPixels"), "fps": block.get("fps")}
    hints = {k: v for k, v in hints.items() if v is not None}
    return {**part, **hints} if hints and isinstance(part, dict) else part


def _media_rule(c: Comparison, i: int, j: int, block: dict[str, Any], theirs: Any) -> tuple[str, Any] | None:
    """The media rule that applies to the oracle's part for block j of message i (None: it sent none), and the part
    agentmsg's documented rule sends in its place (computed from the block, never read from agentmsg's request);
    None when no media rule applies."""
    kind, p = _kind(block), c.provider
    unsupported = f"/{i}/content/{j}" in c.said("media-unsupported")
    placeholder = _text_part(c, _label(block))
    if theirs is None:
        if unsupported and (p, kind) in ORACLE_DROPS:
            return "media-dropped-silently", placeholder
        return None
    text = theirs.get("text") if isinstance(theirs, dict) else None
    if kind == "pdf" and isinstance(text, str) and text.startswith("[Media - "):
        # Java's own placeholder: agentmsg sends the PDF where the provider takes it, else its placeholder (said)
        expected = _pdf_part(c, block)
        return ("media-pdf-sent", expected) if expected != placeholder or unsupported else None
    if unsupported and kind in ("image", "audio", "video"):
        # the provider takes no such media (DeepSeek: text only; OpenAI: no video): the oracle sends it anyway
        return "media-unsupported-sent-by-oracle", placeholder
    source = block["source"]
    if p == "gemini" and isinstance(theirs, dict) and "inlineData" in theirs and source.get("type") == "url":
        mime = theirs["inlineData"]["mimeType"]
        if theirs["inlineData"]["data"] == base64.b64encode(_url_bytes(source["url"])).decode():
            expected = {"fileData": {"mimeType": mime, "fileUri": source["url"]}}
            if block.get("fps") is not None:
                expected["videoMetadata"] = {"fps": block["fps"]}
            return "media-url-downloaded", expected
    if p in ("dashscope", "dashscope-compatible") and _sized(c, block, theirs) != theirs:
        return "media-sizing-sent", _sized(c, block, theirs)
    if p == "dashscope" and kind == "audio" and source.get("type") == "base64":
        data = source["data"]
        if theirs == {"audio": f"data:;base64,{data}"}:
            return "media-audio-type", {"audio": f"data:{source['media_type']};base64,{data}"}
    return None


SIZING = ("max_pixels", "min_pixels", "fps", "total_pixels", "max_frames", "videoMetadata")


def _url_bytes(url: str) -> bytes:
    from tests._support.agentscope_python import url_bytes

    return url_bytes(url)


def _media_turns(c: Comparison) -> Iterator[tuple[int, dict[str, Any]]]:
    """(input index, the oracle's turn) of each chat-mode user message that holds media, found by its first text."""
    for i, m in enumerate(c.messages):
        if m["role"] != "USER" or not any(b["type"] in MEDIA for b in m["content"]):
            continue
        first = next((b["text"] for b in m["content"] if b["type"] == "text"), None)
        for t in c.turns("theirs"):
            parts = t.get("parts") or t.get("content")
            if isinstance(parts, list) and first in [p.get("text") for p in parts if isinstance(p, dict)]:
                yield i, t
                break


def _align_media(c: Comparison, rule_id: str) -> int:
    """Walk each media message block by block, the oracle's parts in order; where a media rule applies to the
    oracle's part for a block, it becomes the part agentmsg's rule sends. Done once for all the media rules (the
    first asks); each gets the count of the blocks it applied to."""
    if c.media_counts is None:
        c.media_counts = {}
        for i, theirs_turn in _media_turns(c):
            key = "parts" if "parts" in theirs_turn else "content"
            theirs = theirs_turn[key]
            b = 0
            out: list[Any] = []
            changed = False
            for j, block in enumerate(c.messages[i]["content"]):
                kind = _kind(block) if block["type"] in MEDIA else None
                t_count = 0 if kind and (c.provider, kind) in ORACLE_DROPS else 1
                t = theirs[b] if t_count and b < len(theirs) else None
                b += t_count
                explained = None if kind is None else _media_rule(c, i, j, block, t)
                if explained is not None:
                    out.append(explained[1])
                    c.media_counts[explained[0]] = c.media_counts.get(explained[0], 0) + 1
                    changed = True
                elif t_count:
                    out.append(t)
            if changed:
                theirs_turn[key] = out + theirs[b:]
    return c.media_counts.get(rule_id, 0)


def _media(rule_id: str) -> Callable[[Comparison], int]:
    def fn(c: Comparison) -> int:
        return _align_media(c, rule_id)

    return fn


for _rule_id in (
    "media-pdf-sent",
    "media-unsupported-sent-by-oracle",
    "media-dropped-silently",
    "media-url-downloaded",
    "media-sizing-sent",
    "media-audio-type",
):
    rule(_rule_id)(_media(_rule_id))


# ---- what agentmsg sends that the oracle leaves out -------------------------------------------------------------


@rule("name-field-sent")
def _names(c: Comparison) -> int:
    """A message's name: agentmsg sends it in the name field where the API has one (DeepSeek's and DashScope's
    messages do); DeepSeekFormatter 2.0.0 strips every name, AgentScope Python's DashScope formatter sends none."""
    n = 0
    for theirs in c.turns("theirs"):
        if "name" in theirs or theirs["role"] == "tool" or any(_is_history(x) for x in _texts_of(theirs["content"])):
            continue
        calls = set(_calls_in(theirs))
        for m in c.messages:
            same = m["role"] == theirs["role"].upper() and (
                (calls and calls == set(_call_ids(m))) or (not calls and theirs["content"] == _message_text(m))
            )
            if same and m.get("name"):
                theirs["name"] = _name_sent(m["name"])
                n += 1
                break
    return n


def _name_sent(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


@rule("gemini-signatures-replayed")
def _gemini_signatures(c: Comparison) -> int:
    """Gemini's own thought signatures (thinking metadata signature, a call's thoughtSignature, provider gemini):
    agentmsg replays them on the thought part and beside the functionCall, and sends a signature-only thinking
    block as an empty thought part carrying it, as Gemini returned them (Gemini 3 refuses a current turn's call
    without its signature); AgentScope Python sends thought parts without signatures and skips empty thinking."""
    n = 0
    for m in c.messages:
        for b in m["content"]:
            meta = b.get("metadata") or {}
            pointer = f"/{c.messages.index(m)}/content/{m['content'].index(b)}"
            if b["type"] == "tool_use" and meta.get("thoughtSignature") and pointer not in c.said("signature-dropped"):
                for d in _walk(c.turns("theirs")):
                    if (d.get("functionCall") or {}).get("id") == b["id"] and "thoughtSignature" not in d:
                        d["thoughtSignature"] = meta["thoughtSignature"]
                        n += 1
            elif b["type"] == "thinking" and meta.get("signature") and meta.get("provider") in (None, "gemini"):
                signed = {"text": b["thinking"], "thought": True, "thoughtSignature": meta["signature"]}
                if f"/{c.messages.index(m)}/content/{m['content'].index(b)}" in c.said("thinking-dropped"):
                    continue
                for t in c.turns("theirs"):
                    if {"thought": True, "text": b["thinking"]} in t["parts"]:
                        t["parts"][t["parts"].index({"thought": True, "text": b["thinking"]})] = signed
                        n += 1
                        break
                else:
                    calls = set(_call_ids(m))
                    if b["thinking"] == "" and m["content"].index(b) == 0 and calls:
                        # skipped by AgentScope: agentmsg sends it first in the turn, an empty thought part
                        for theirs in c.turns("theirs"):
                            if calls & set(_calls_in(theirs)):
                                theirs["parts"].insert(0, signed)
                                n += 1
                                break
    return n


@rule("tool-result-media-fallback")
def _result_media_fallback(c: Comparison) -> int:
    """Media in a tool result, where the provider's tool message takes text only: agentmsg's tool message names
    them ("[image: image/png]") and the media follow in a user message after the batch of results, "Media returned
    by tool call ID:" (said tool-result-media-fallback). Java's OpenAI formatter sends them as parts of the tool
    message (which OpenAI refuses); AgentScope Python promotes them into a user message wrapped in
    <system-reminder> text with an identifier. The oracle gets agentmsg's placement, where its media are
    agentmsg's."""
    n = 0
    multimodal = "multimodal-generation" in c.path
    for pointer in {p.rsplit("/output/", 1)[0] for p in c.said("tool-result-media-fallback")}:
        block = c.block(pointer)
        call = block["id"]
        theirs = c.turns("theirs")
        j = next((j for j, t in enumerate(theirs) if t.get("tool_call_id") == call), None)
        if j is None:
            continue
        content = theirs[j]["content"]
        if isinstance(content, list) and len(content) == 1 and set(content[0]) == {"text"}:
            content = content[0]["text"]  # DashScope multimodal: the text as its one part
        promoted = next(
            (k for k in range(j + 1, len(theirs)) if "<system-reminder>The multimodal" in json.dumps(theirs[k])), None
        )
        if isinstance(content, list):  # Java: the media inside the tool message
            media = [p for p in content if _is_media_part(p)]
            texts = [p["text"] for p in content if p.get("type") == "text"]
        elif isinstance(content, str) and "<system-reminder>" in content and promoted is not None:
            media = [p for p in theirs[promoted]["content"] if _is_media_part(p)]  # AgentScope Python: promoted
            texts = [content.split("\n<system-reminder>")[0]]
            del theirs[promoted]
        else:
            continue
        output = block["output"]
        if texts != [b["text"] for b in output if b["type"] == "text"][: len(texts)] or not media:
            continue
        labels = [_label(b) for b in output if b["type"] in MEDIA]
        text = "\n".join([*texts, *labels])
        tool: dict[str, Any] = {
            "role": "tool",
            "content": [{"text": text}] if multimodal else text,
            "tool_call_id": call,
        }
        if c.provider == "dashscope":
            tool["name"] = block["name"]
            media = [_native_part(p) for p in media]
        after = {"role": "user", "content": [_text_part(c, f"Media returned by tool call {call}:"), *media]}
        theirs[j] = tool
        end = j + 1  # after the batch of tool results
        while end < len(theirs) and theirs[end]["role"] == "tool":
            end += 1
        theirs.insert(end, after)
        n += 1
    return n


def _is_media_part(p: Any) -> bool:
    return isinstance(p, dict) and any(
        k in p for k in ("image_url", "image", "input_audio", "audio", "video", "video_url")
    )


@rule("tool-result-media-in-response")
def _result_media_gemini(c: Comparison) -> int:
    """Media in a tool result to Gemini: agentmsg sends them in functionResponse.parts (Gemini's multimodal
    function responses), the response's output the result's text; AgentScope Python puts an identifier in the
    output and promotes the media into a user turn wrapped in <system-reminder> text."""
    n = 0
    for m in c.messages:
        for b in m["content"]:
            if b["type"] != "tool_result" or not any(x["type"] in MEDIA for x in b["output"]):
                continue
            theirs = c.turns("theirs")
            for j, t in enumerate(theirs):
                mine = next((p for p in t["parts"] if (p.get("functionResponse") or {}).get("id") == b["id"]), None)
                if mine is None or "<system-reminder>" not in json.dumps(mine) or j + 1 >= len(theirs):
                    continue
                promoted = [p for p in theirs[j + 1]["parts"] if "inlineData" in p or "fileData" in p]
                response = mine["functionResponse"]["response"]
                key = next(iter(response))
                texts = "\n".join(x["text"] for x in b["output"] if x["type"] == "text")
                if response[key].split("\n<system-reminder>")[0] == texts and promoted:
                    fr = {**mine["functionResponse"], "response": {key: texts}, "parts": promoted}
                    t["parts"][t["parts"].index(mine)] = {"functionResponse": fr}
                    del theirs[j + 1]
                    n += 1
                break
    return n


@rule("tool-result-media-text-only")
def _result_media_text_only(c: Comparison) -> int:
    """Media in a tool result to DeepSeek, which takes text only: agentmsg's tool message names them ("[image:
    image/png]", said media-unsupported) and nothing follows; Java sends them as parts of the tool message."""
    n = 0
    for pointer in {p.rsplit("/output/", 1)[0] for p in c.said("media-unsupported") if "/output/" in p}:
        block = c.block(pointer)
        texts = [b["text"] for b in block["output"] if b["type"] == "text"]
        labels = [_label(b) for b in block["output"] if b["type"] in MEDIA]
        for t in c.turns("theirs"):
            listed = t.get("tool_call_id") == block["id"] and isinstance(t["content"], list)
            if listed and [p["text"] for p in t["content"] if p.get("type") == "text"] == texts:
                t["content"] = "\n".join([*texts, *labels])
                n += 1
    return n


# ---- multi-agent: AgentScope's history layout -------------------------------------------------------------------


def _history_turns(c: Comparison, side: str) -> list[dict[str, Any]]:
    return [
        t
        for t in c.turns(side)
        if t["role"] == "user" and any(_is_history(x) for x in _texts_of(t.get("content")) + _texts_of(t.get("parts")))
    ]


@rule("java-openai-history-part-list")
def _history_parts(c: Comparison) -> int:
    """OpenAIMultiAgentFormatter sends a history turn as a part list even when it holds one text part; agentmsg
    sends a string then (the same message)."""
    n = 0
    for t in _history_turns(c, "theirs"):
        content = t["content"]
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            t["content"] = content[0]["text"]
            n += 1
    return n


@rule("java-openai-history-trailing-newline")
def _history_newline(c: Comparison) -> int:
    """OpenAIMultiAgentFormatter ends a history with "</history>\n"; agentmsg (and AgentScope's other formatters)
    with "</history>"."""
    n = 0
    for t in _history_turns(c, "theirs"):
        for k, text in enumerate(_texts_of(t["content"])):
            if text.endswith("</history>\n"):
                _set_text(t, k, text[:-1])
                n += 1
    return n


@rule("java-openai-history-prompt-every-run")
def _history_prompt(c: Comparison) -> int:
    """OpenAIMultiAgentFormatter puts the history prompt before every run of other speakers' turns; agentmsg (as
    AgentScope's other formatters) before the first run only."""
    n = 0
    for t in _history_turns(c, "theirs")[1:]:
        for k, text in enumerate(_texts_of(t["content"])):
            if text.startswith(PROMPT + "<history>"):
                _set_text(t, k, text[len(PROMPT) :])
                n += 1
    return n


@rule("java-openai-history-names")
def _history_names(c: Comparison) -> int:
    """OpenAIMultiAgentFormatter prefixes a history line with "Name: " only when the run holds several messages and
    the message has a name; agentmsg labels every line, an unnamed speaker by its role in title case (as
    AgentScope's other formatters label every line). The oracle's line gets agentmsg's label where it is one of the
    conversation's speakers' and the rest of the line is the same."""
    n = 0
    labels = _labels(c)
    for theirs, ours in zip(_history_turns(c, "theirs"), _history_turns(c, "ours"), strict=False):
        t_texts, o_texts = _texts_of(theirs["content"]), _texts_of(ours["content"])
        for k, (t, o) in enumerate(zip(t_texts, o_texts, strict=False)):
            t_lines, o_lines = t.split("\n"), o.split("\n")
            if len(t_lines) != len(o_lines):
                continue
            fixed = [
                ol if tl != ol and any(ol == f"{label}: {tl}" for label in labels) else tl
                for tl, ol in zip(t_lines, o_lines, strict=True)
            ]
            if fixed != t_lines:
                n += sum(a != b for a, b in zip(fixed, t_lines, strict=True))
                _set_text(theirs, k, "\n".join(fixed))
    return n


@rule("java-anthropic-history-role-label")
def _history_role_label(c: Comparison) -> int:
    """AnthropicMultiAgentFormatter labels an unnamed speaker's history line by its role's enum name ("USER: ");
    agentmsg by the role in title case ("User: "), as it labels such a speaker everywhere."""
    unnamed = {m["role"] for m in c.messages if not m.get("name")}
    n = 0
    for t in _history_turns(c, "theirs"):
        for k, text in enumerate(_texts_of(t["content"])):
            lines = text.split("\n")
            fixed = [
                next((f"{r.title()}: {line[len(r) + 2 :]}" for r in unnamed if line.startswith(f"{r}: ")), line)
                for line in lines
            ]
            if fixed != lines:
                n += sum(a != b for a, b in zip(fixed, lines, strict=True))
                _set_text(t, k, "\n".join(fixed))
    return n


@rule("multi-tool-turn-labelled")
def _tool_turn_labelled(c: Comparison) -> int:
    """Multi-agent: a tool-calling assistant turn of another speaker (every speaker, without agent_name) stays an
    assistant turn, and agentmsg keeps its speaker in its text: "[Name]: text" (docs/formatters.md, Multi-agent);
    AgentScope sends the text as it is."""
    n = 0
    for m in c.messages:
        if m["role"] != "ASSISTANT" or not _call_ids(m):
            continue
        label = m.get("name") or "Assistant"
        first = next((b["text"] for b in m["content"] if b["type"] == "text" and b["text"]), None)
        if first is None:
            continue
        for t in c.turns("theirs"):
            if t["role"] not in ("assistant", "model"):
                continue
            key = "parts" if "parts" in t else "content"
            if t[key] == first:
                t[key] = f"[{label}]: {first}"
                n += 1
            elif isinstance(t[key], list):
                for p in t[key]:
                    if isinstance(p, dict) and p.get("text") == first:
                        p["text"] = f"[{label}]: {first}"
                        n += 1
    return n


#: (provider, kind) -> the oracle's multi-agent formatter leaves such a block of a history out
HISTORY_DROPS = {
    ("anthropic", "audio"),
    ("anthropic", "video"),
    ("anthropic", "pdf"),
    ("dashscope", "pdf"),
}


@rule("history-media-labelled-in-place")
def _history_media(c: Comparison) -> int:
    """Media in a run of other speakers' turns (history layout): agentmsg ends the text so far with the speaker's
    label ("User:"), sends the medium (or its placeholder, said) as its own part, in place, and closes with a
    "</history>" part. AgentScope sends the media unlabelled: Java's OpenAI formatter in place, Java's Anthropic
    formatter images only (other media of a history left out without a word), AgentScope Python's Gemini formatter
    in place (URLs downloaded), its DashScope formatter after "</history>" (a PDF left out). The oracle's turn is
    taken for agentmsg's when its text lines are agentmsg's but for the labels and each of its media is agentmsg's
    but for the documented media rules (media-*)."""
    n = 0
    for theirs, ours in zip(_history_turns(c, "theirs"), _history_turns(c, "ours"), strict=False):
        key = "parts" if "parts" in ours else "content"
        o_parts, t_parts = ours[key], theirs[key]
        speakers = [m for m in c.messages if any(b["type"] in MEDIA for b in m["content"])]
        if len(speakers) != 1 or not isinstance(t_parts, list):
            continue
        msg = speakers[0]
        i = c.messages.index(msg)
        label = (msg.get("name") or msg["role"].title()) + ":"
        if isinstance(o_parts, str):  # DeepSeek, text only: the same parts joined by newlines
            lines = o_parts.split("\n")
            o_media = [_text_part(c, lines[k + 1]) for k, line in enumerate(lines[:-1]) if line == label]
            o_parts = [_text_part(c, line) for line in lines if _text_part(c, line) not in o_media]
            o_parts += o_media
        elif len(o_parts) < 3:
            continue
        else:
            o_media = o_parts[1:-1:2]  # text + label, then (medium, label) pairs, then "</history>"
            if o_parts[2:-1:2] != [_text_part(c, label)] * (len(o_media) - 1):
                continue
            if _texts_of([o_parts[-1]]) != ["</history>"]:
                continue
        t_media = [
            p
            for p in t_parts
            if _is_media_part(p)
            or "inlineData" in p
            or "fileData" in p
            or "file" in p
            or "source" in p
            or (p.get("text") or "").startswith("[Media - ")
        ]
        blocks = [(j, b) for j, b in enumerate(msg["content"]) if b["type"] in MEDIA]
        k = 0
        ok = True
        for (j, b), o in zip(blocks, o_media, strict=True):
            dropped = (c.provider, _kind(b)) in HISTORY_DROPS
            t = None if dropped else (t_media[k] if k < len(t_media) else None)
            k += 0 if dropped else 1
            if t is not None and isinstance(t, dict) and (t.get("text") or "").endswith("\n"):
                t = {**t, "text": t["text"][:-1]}
            if c.provider == "dashscope" and t is not None:
                t = _native_part(t)
            if dropped:
                expected = _media_history_dropped(c, i, j, b)
            else:
                explained = _media_rule(c, i, j, b, t)
                expected = t if explained is None else explained[1]
            if o != expected:
                ok = False
                break
        t_text = "\n".join(x for p in t_parts if p not in t_media for x in _texts_of([p]))
        o_text = "\n".join(x for p in o_parts if p not in o_media for x in _texts_of([p]))
        plain = [line for line in o_text.split("\n") if line != label]
        t_lines = [line for line in t_text.split("\n") if line]
        o_lines = [line for line in plain if line]
        if c.provider in OPENAI_FAMILY and len(o_lines) == len(t_lines):  # names as java-openai-history-names
            t_lines = [
                o if any(o == f"{x}: {t}" for x in _labels(c)) else t for t, o in zip(t_lines, o_lines, strict=True)
            ]
        if ok and k == len(t_media) and o_lines == t_lines:
            if isinstance(ours[key], str):
                theirs[key] = ours[key]
            else:  # agentmsg's layout, its pieces checked above: text + label, (medium, label)..., "</history>"
                pieces = [_text_part(c, _texts_of([ours[key][0]])[0])]
                for medium in o_media:
                    pieces += [copy.deepcopy(medium), _text_part(c, label)]
                theirs[key] = [*pieces[:-1], _text_part(c, "</history>")]
            n += 1
    return n


def _media_history_dropped(c: Comparison, i: int, j: int, block: dict[str, Any]) -> Any:
    """A medium the oracle's multi-agent formatter leaves out of a history: agentmsg's documented part for it (the
    PDF itself where the provider takes one, else its placeholder, said media-unsupported)."""
    if _kind(block) == "pdf" and _pdf_part(c, block) != _text_part(c, _label(block)):
        return _pdf_part(c, block)
    return _text_part(c, _label(block)) if f"/{i}/content/{j}" in c.said("media-unsupported") else None


def _text_part(c: Comparison, text: str) -> dict[str, Any]:
    return {"text": text} if c.provider in ("gemini", "dashscope") else {"type": "text", "text": text}


assert set(RULES) == set(TABLE), sorted(set(RULES) ^ set(TABLE))
RULES = {rule_id: RULES[rule_id] for rule_id in TABLE}


if __name__ == "__main__":
    print(table_markdown(), end="")
