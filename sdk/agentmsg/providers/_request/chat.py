"""The walk shared by providers whose requests are a flat list of role messages with
``tool_calls`` and ``tool`` messages (OpenAI Chat Completions and its compatible family, DashScope
native).

SYSTEM -> ``system``; USER -> ``user``; the current agent's ASSISTANT -> ``assistant`` with
``tool_calls`` (reasoning in the variant's reasoning field); each tool result -> a ``tool`` message.
Media a tool message cannot carry, and hints, are sent after the batch of tool messages, once no
call is open. A provider module subclasses :class:`ChatWalk` for its part shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from agentmsg.blocks import HintBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from agentmsg.message import Msg, MsgRole
from agentmsg.providers._request import context as F
from agentmsg.providers._request.context import CITATIONS, PROVIDER_BLOCK, Context
from agentmsg.providers._request.walk import Walk, split_at

_USER, _ASSISTANT, _TOOL = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.TOOL
_dumps = orjson.dumps


class ChatWalk(Walk):
    """One pass over the conversation, building the ``messages`` array.

    Class attributes a provider sets: ``reasoning_field`` (assistant field for replayed reasoning,
    or None), ``reasoning_current_turn_only``, ``send_name`` (``name`` field on messages),
    ``hint_role`` (role of the turn a hint becomes), ``tool_name_field`` (``name`` on tool messages),
    ``tool_only_content`` (assistant ``content`` when there are only tool calls)."""

    reasoning_field: str | None = None
    reasoning_current_turn_only = False
    send_name = True
    hint_role = "system"
    tool_name_field = False
    tool_only_content: Any = None
    #: True: text content is sent as a string (else as ``[{"text": ...}]``, DashScope multimodal)
    plain = True
    #: the provider takes media in a user message: a tool result's media follow the results in one (else, a text-only
    #: provider, they are only named in the tool message, said media-unsupported)
    takes_media = True
    #: leave out empty text blocks and messages left with nothing to send (reported)
    drop_empty = False
    #: a call marked ``toolType: "custom"`` (an OpenAI custom tool's: free-text input) is sent back as one
    #: (``type: "custom"``, ``custom: {name, input}``); else it is a function call like any other
    custom_calls = False
    #: a call's Gemini thought signature (metadata ``thoughtSignature``, provider gemini or none) is sent as Google's
    #: OpenAI-compatible endpoint gives it and asks it back: ``extra_content.google.thought_signature``
    google_signatures = False
    #: a refusal (:func:`refusal_at`: OpenAI's ``message.refusal`` as the parser keeps it) goes back in the assistant
    #: message's ``refusal`` field, where the provider gave it; else it is text like any other
    refusals = False
    #: (not typed_text, tool_only_content, read once a message at most: OpenAI's walk, which sets the others itself,
    #: stays below 30 attributes, at 28: Walk.hot_flags; tool_name_field is read once a TOOL message, as the usual one
    #: of every turn)
    hot_flags = (
        *Walk.hot_flags,
        "plain",
        "tool_name_field",
        "reasoning_field",
        "reasoning_current_turn_only",
        "drop_empty",
        "custom_calls",
        "google_signatures",
        "refusals",
    )

    def __init__(self, ctx: Context, multi: bool, agent: str | None) -> None:
        assert ctx.id_bad is None, "chat providers limit the length of tool-call ids only"
        super().__init__(ctx, multi, agent)
        self.name = ctx.provider
        self.out: list[dict[str, Any]] = []
        #: speaker names sent as they are (send_name, and the provider's pattern takes them): the hot paths
        #: test this set, and call :meth:`_name` (which fills it) for the other names
        self.names_as_is: set[str] = set()
        self.no_reasoning: tuple[str, str] | None = None  # (made by run)
        self.last_user = -1
        #: reasoning_current_turn_only: messages before the last user message whose turn (from a user message
        #: to the next) called tools: their reasoning is still sent (DeepSeek's thinking mode requires the
        #: reasoning of a tool-calling turn in every later request, and refuses the request without it)
        self.tool_turns: set[int] = set()

    marks_whole = True

    def mark_begin(self) -> int:
        return len(self.out)

    def mark_end(self, i: int, msg: Msg, begin: int) -> None:
        """A marked message's breakpoint: the last message it put in the request that has content (the marker goes
        on its last content part: :func:`~.cache.chat_put`); a block index beyond its content is said."""
        mark = self.marks[i]  # type: ignore[index]
        content = msg.content
        if mark.blocks is not None:
            beyond = [j for j in mark.blocks if j >= len(content)]
            self.cuts.extend((i, j, None) for j in beyond)
            if len(beyond) == len(mark.blocks):
                return
        entries = self.out[begin:]
        self.cut(i, None, entries)

    def cacheable(self, part: Any) -> bool:
        content = part.get("content")
        return bool(content) and (isinstance(content, (str, list)))

    # ---- hooks (OpenAI shapes by default) ----

    def text_part(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def media_part(self, block: Any, pointer: str) -> dict[str, Any]:
        raise NotImplementedError

    def user_content(self, parts: list[dict[str, Any]]) -> Any:
        """Content of a user message from its parts (a lone text part becomes a string)."""
        if len(parts) == 1 and parts[0].get("type") == "text":
            return parts[0]["text"]
        return parts

    def text_content(self, text: str) -> Any:
        """Content of a message holding text only: the string, or ``[{"text": ...}]`` unless ``plain``
        (the hot paths write the same expression inline)."""
        return text if self.plain else [{"text": text}]

    # ---- walk ----

    def run(self, msgs: Sequence[Msg], start: int = 0) -> list[dict[str, Any]]:
        # what is said of the current agent's reasoning when the provider takes none (no reasoning field, not demoted:
        # thinking-dropped), else None: made once (the flags are set by now), said of each block as it is sent
        if self.reasoning_field is None and not self.demote:
            self.no_reasoning = (_NO_REASONING, self.name)
        if self.reasoning_current_turn_only:
            self.tool_turns.update(F.tool_turns(msgs))
            self.last_user = F.current_turn(msgs)
        return super().run(msgs, start)

    def text_turn(self, role: MsgRole, text: str, msg: Msg, i: int) -> bool:
        if not text and self.drop_empty:
            return False
        if self.refusals and role is _ASSISTANT and REFUSAL in msg.metadata and msg.metadata[REFUSAL] is True:
            return False  # (a refusal: assistant_message sends it)
        entry: dict[str, Any] = {
            "role": "user" if role is _USER else "assistant",
            "content": text if self.plain else [{"text": text}],
        }
        name = msg.name
        if name:
            if name in self.names_as_is:
                entry["name"] = name
            else:
                self._name(msg, i, entry)
        self.out.append(entry)
        return True

    def fold(self, group: list[tuple[int, Msg]]) -> bool:
        parts = F.history_parts(group, self.ctx, not self.history_seen, self.text_part, self.media_part, self._hint)
        if not parts:
            return False
        self.out.append({"role": "user", "content": self.user_content(parts)})
        return True

    def send_deferred(self) -> None:
        self.out.extend(self.deferred)
        self.deferred.clear()

    def result(self) -> list[dict[str, Any]]:
        return self.out

    # ---- roles ----

    def _name(self, msg: Msg, i: int, entry: dict[str, Any]) -> None:
        name = msg.name
        if name:
            if self.send_name:
                if name in self.names_as_is:
                    entry["name"] = name
                    return
                sent = entry["name"] = self.ctx.speaker_name(name, f"/{i}/name")
                if sent == name:
                    self.names_as_is.add(name)
            elif not self.multi:
                self.ctx.names_dropped.append(i)

    def system_message(self, msg: Msg, i: int) -> None:
        texts = []
        blocks: list[Any] = msg.content
        for j, b in enumerate(blocks):
            if type(b) is TextBlock:
                if not b.text and self.drop_empty:  # as in the other messages
                    self.ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty system text not sent")
                    continue
                texts.append(b.text)
            else:
                self.ctx.report(f"/{i}/content/{j}", "block-dropped", f"{b.type} block in a system message")
        if not texts and self.drop_empty:
            self.ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this system message")
            return
        entry: dict[str, Any] = {"role": "system", "content": self.text_content("\n".join(texts))}
        if self.multi and msg.name and not self.send_name:  # (no text of a system message holds its speaker's name)
            self.ctx.names_dropped.append(i)
        else:
            self._name(msg, i, entry)
        self.out.append(entry)

    def user_text(self, text: str) -> Any:
        if not text and self.drop_empty:
            return None
        return {"type": "text", "text": text} if self.typed_text else self.text_part(text)

    def user_media(self, block: Any, pointer: str) -> Any:
        return self.media_part(block, pointer)

    def user_message(self, msg: Msg, i: int, prefix: bool) -> bool:
        parts = None if prefix else self.usual_user_parts(msg.content)
        looked = parts is not None  # (the usual parts: looked at as they were made)
        if parts is None:
            parts = self.user_parts(msg, i, prefix)
            if not parts:
                return False
        entry: dict[str, Any] = {"role": "user", "content": self.user_content(parts)}
        name = msg.name
        if name:
            if name in self.names_as_is:  # as _name does, without the call
                entry["name"] = name
            else:
                self._name(msg, i, entry)
        self.out.append(entry)
        return looked

    def assistant_message(self, msg: Msg, i: int) -> bool:
        ctx = self.ctx
        quick = self.quick
        # looked at as the blocks are sent (Quick): texts and calls have nothing but unknown keys to say
        looked = quick.text and quick.call and quick.thinking is not None
        thinking_keys = quick.thinking
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[tuple[ToolResultBlock, int]] = []
        other = self.multi and not F.is_current_agent(msg, self.agent)
        drop = self.drop_empty
        id_max = ctx.id_max  # the chat family limits the length of tool-call ids only
        tool_names = ctx.tool_name_cache
        open_calls = ctx.open_calls
        blocks: list[Any] = msg.content
        stop = 0  # where the next piece starts (0: none)
        # (refusal_at reads the mark: a message of no metadata holds no refusal)
        refusal_j = refusal_at(msg) if self.refusals and not other and msg.metadata else -1
        refusal: str | None = None
        # reasoning of the current agent that the provider takes none of (no field, not demoted): dropped, said so
        no_reasoning = None if other else self.no_reasoning
        # reasoning of the current agent that the provider keeps in its reasoning field (not pruned, not redacted)
        keep_reasoning = (
            self.reasoning_field is not None
            and not other
            and not (self.reasoning_current_turn_only and i < self.last_user and i not in self.tool_turns)
        )
        j = ctx.before_piece  # the block's index (counted: cheaper than an enumerate per message)
        if j >= 0:  # (a later piece: Walk.next_piece)
            blocks = blocks[j + 1 :]
        for b in blocks:
            j += 1
            t = type(b)
            # (each kind reads its unknown keys in its own branch: a line that reads an attribute of blocks of one
            # class is one CPython specializes; read before the dispatch, of every class, it is the generic lookup)
            if t is ToolUseBlock:
                if b.unknown_keys:
                    looked = False
                cid = b.id
                name = b.name
                sent = cid if not id_max or 0 < len(cid) <= id_max else ctx.sent_id(cid, (i, j))
                tool = tool_names.get(name) or ctx.tool_name(name, f"/{i}/content/{j}/name")
                meta = b.metadata
                if meta and self.custom_calls and meta.get("toolType") == "custom":
                    # an OpenAI custom tool's call: its free-text input (content) back as it came
                    calls.append({"id": sent, "type": "custom", "custom": {"name": tool, "input": custom_input(b)}})
                else:
                    if b.content is None:
                        try:
                            arguments = _dumps(b.input).decode()
                        except TypeError:  # integers beyond 64 bits
                            arguments = F.json_text(b.input)
                    else:
                        arguments = F.tool_arguments(b, ctx, f"/{i}/content/{j}")[1]
                    calls.append({"id": sent, "type": "function", "function": {"name": tool, "arguments": arguments}})
                open_calls[cid] = (sent, tool, name, i, j)
                if meta and meta.get("thoughtSignature"):
                    signature = meta["thoughtSignature"]
                    if self.google_signatures and type(signature) is str and meta.get("provider") in (None, "gemini"):
                        # Gemini's, through Google's OpenAI-compatible endpoint: back where it came (which asks for it)
                        calls[-1]["extra_content"] = {"google": {"thought_signature": signature}}
                    else:
                        ctx.report(
                            f"/{i}/content/{j}", "signature-dropped", f"{self.name} has no field for a call's signature"
                        )
            elif t is TextBlock:
                if b.unknown_keys:
                    looked = False
                if j == refusal_j:  # (refusal_at finds a text block)
                    refusal = b.text
                elif b.text or not drop:
                    texts.append(b.text)
                else:
                    ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty text block not sent")
            elif t is ThinkingBlock:
                meta = b.metadata
                if b.unknown_keys or (meta and thinking_keys and not thinking_keys.isdisjoint(meta)):
                    looked = False
                if meta and (PROVIDER_BLOCK in meta or CITATIONS in meta):  # provider data kept in its place
                    # (no chat provider's reply carries such data: dropped, its text and all, and said by carrier)
                    self.carrier(meta, i, j, None, other)
                    continue
                origin = meta.get("provider") if meta else None
                if origin is not None and origin not in ctx.families and not other and not self.demote:
                    ctx.diagnostics.append(((i, j), "thinking-dropped", (F.FOREIGN_DROPPED, origin, self.name)))
                elif no_reasoning and (origin is None or origin in ctx.families):  # the provider takes none
                    ctx.diagnostics.append(((i, j), "thinking-dropped", no_reasoning))
                elif (
                    keep_reasoning
                    and (origin is None or origin in ctx.families)
                    and (not meta or meta.get("redacted") is not True)
                ):  # (as _thinking keeps it: in the reasoning field, its signature said unsent)
                    if meta and meta.get("signature") is not None:
                        ctx.diagnostics.append(((i, j), "signature-dropped", (_NO_SIGNATURE, self.name)))
                    reasoning.append(b.thinking)
                else:
                    self._thinking(b, i, j, reasoning, texts, other)
            elif t is ToolResultBlock:
                results.append((b, j))
                looked = False
                stop = split_at(msg.content, j)
                if stop:  # (more of the reply after the results: the next piece, its own message after them)
                    hints: list[Any] = msg.content
                    for k in range(j + 1, stop):  # (the hints right after the results)
                        self._hint(hints[k], i, k)
                    break
            elif t is HintBlock:
                self._hint(b, i, j)
                looked = False
            else:
                looked = False
                label = F.block_label(b)
                ctx.report(
                    f"/{i}/content/{j}",
                    "media-unsupported",
                    f"{b.type} in an assistant turn sent as a text placeholder",
                )
                texts.append(label)
        if other:
            if (texts or stop) and ctx.before_piece < 0:  # (each piece's first text is labelled; said once a message)
                F.prefix_name(ctx, msg, i)
            if texts:
                texts[0] = f"[{F.speaker_label(msg)}]: {texts[0]}"
        if texts:
            text = texts[0] if len(texts) == 1 else "\n".join(texts)
            content = text if self.plain else [{"text": text}]
        else:
            content = self.tool_only_content if calls else self.text_content("")
            if type(content) is list:  # (each message its own: a marker placed on one part marked every message's)
                content = [dict(part) for part in content]
        entry: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            entry["refusal"] = refusal
            if not texts and not calls:
                del entry["content"]  # (the refusal is the message: content "" would be an answer of no text)
        name = msg.name
        if name:
            if results and not (texts or calls or reasoning or refusal is not None):
                # results alone: tool messages, of no name field (as tool_message says); unless a piece after them
                # has it
                if not stop:
                    ctx.names_dropped.append(i)
                else:
                    ctx.name_owed = i
            elif name in self.names_as_is:
                entry["name"] = name
            else:
                self._name(msg, i, entry)
        if reasoning:
            entry[self.reasoning_field or "reasoning_content"] = "\n".join(reasoning)
        if calls:
            entry["tool_calls"] = calls
        if texts or calls or reasoning or refusal is not None:
            self.out.append(entry)
            if ctx.name_owed == i:  # (sent with this piece)
                ctx.name_owed = -1
        elif not results:
            if not drop:
                self.out.append(entry)
                ctx.name_owed = -1
            elif ctx.before_piece < 0:  # (a later piece left out: the pieces before it sent their results)
                ctx.report(f"/{i}", "empty-message-dropped", "nothing to send in this message")
            elif ctx.name_owed == i:  # (the name the piece before it, of results alone, left to it: sent by none)
                ctx.names_dropped.append(i)
        if results:  # (a test of the list: cheaper than iterating the usual empty one)
            for b, j in results:
                self._result(b, i, j)
            if stop:
                return self.next_piece(msg, i, stop) and looked
        return looked

    def text_only(self, msg: Msg) -> bool:
        return Walk.text_only(self, msg) and not (self.refusals and msg.metadata.get(REFUSAL) is True)

    def between(self, msg: Msg, i: int) -> bool:
        """The text goes into the content of the assistant message that holds the calls, after its text (joined by
        ``\\n``, as the texts of one message), so the tool messages follow that message."""
        out = self.out
        entry = out[-1] if out else None
        if entry is None or entry.get("role") != "assistant" or "tool_calls" not in entry:
            return False
        texts = self.between_texts(msg, i, self.drop_empty)
        if texts:
            content = entry.get("content")
            held = content if self.plain else content[0]["text"] if content else ""
            entry["content"] = self.text_content("\n".join([held, *texts] if held else texts))
        return True

    def _thinking(self, b: ThinkingBlock, i: int, j: int, reasoning: list[str], texts: list[str], other: bool) -> None:
        ctx = self.ctx
        pointer = (i, j)  # (made /i/content/j when the diagnostics are read, as the messages: Context.report)
        if other:
            ctx.report(pointer, "thinking-dropped", "reasoning of another agent is not sent")
            return
        meta = b.metadata
        origin = F.reasoning_origin(b)
        if origin is not None and origin not in ctx.families:
            if F.foreign_reasoning(ctx, b, pointer, origin, self.demote) == F.DEMOTE:
                texts.append(b.thinking)
            return
        if self.reasoning_field is None:
            if self.demote and b.thinking:
                ctx.report(pointer, "thinking-demoted", (_DEMOTED, self.name))
                texts.append(b.thinking)
            else:
                ctx.report(pointer, "thinking-dropped", (_NO_REASONING, self.name))
            return
        if meta and meta.get("redacted") is True:
            ctx.report(pointer, "thinking-dropped", (_REDACTED, self.name))
            return
        if self.reasoning_current_turn_only and i < self.last_user and i not in self.tool_turns:
            ctx.report(pointer, "thinking-pruned", (_PRUNED, self.name))
            return
        if meta and meta.get("signature") is not None:
            ctx.report(pointer, "signature-dropped", (_NO_SIGNATURE, self.name))
        reasoning.append(b.thinking)

    def tool_message(self, msg: Msg, i: int) -> bool:
        ctx = self.ctx
        looked = self.quick.result  # (the usual results, looked at as they are sent: Quick)
        open_calls = ctx.open_calls
        plain = self.plain
        named = self.tool_name_field
        out = self.out  # (out.append per result: 3.11 specializes that call, not the read of a bound method)
        blocks: list[Any] = msg.content
        j = -1  # the block's index (counted: cheaper than an enumerate per message)
        for b in blocks:
            j += 1
            t = type(b)
            if t is ToolResultBlock:
                call = open_calls.pop(b.id, None)
                output = b.output
                if (
                    call is not None
                    and len(output) == 1
                    and type(first := output[0]) is TextBlock
                    and b.state == "success"
                ):  # the usual result, one text block, answering an open call
                    text = first.text
                    entry = {"role": "tool", "content": text if plain else [{"text": text}], "tool_call_id": call[0]}
                    if named:
                        entry["name"] = call[1]
                    out.append(entry)
                    if b.unknown_keys or first.unknown_keys:
                        looked = False
                else:
                    self._result(b, i, j, call)
                    looked = False
            elif t is HintBlock:
                self._hint(b, i, j)
                looked = False
            else:
                looked = False
                ctx.report(
                    f"/{i}/content/{j}", "block-dropped", f"{b.type} block outside a tool result in a TOOL message"
                )
        if msg.name:  # a tool message has no name field (a DashScope one's name is the tool's)
            ctx.names_dropped.append(i)
        return looked

    def _result(self, b: ToolResultBlock, i: int, j: int, call: Any = False) -> None:
        """A tool message for one result; ``call`` is the open call it answers when the caller popped
        it already (None: an orphan)."""
        ctx = self.ctx
        cid = b.id
        if call is False:
            call = ctx.open_calls.pop(cid, None)
        if call is None:
            pointer = f"/{i}/content/{j}"
            ctx.report(pointer, "tool-result-orphan", f"tool result {cid!r} answers no open tool call")
            if ctx.options.repair:
                ctx.report(pointer, "tool-result-dropped", f"orphaned tool result {cid!r} left out")
                return
        if b.state in F.ERROR_STATES:  # a tool message has text only: no is_error, no error response
            ctx.report(f"/{i}/content/{j}", "tool-result-state-dropped", f"{self.name} takes no {b.state} state")
        output: list[Any] = b.output
        media: list[tuple[Any, str]] = []
        if len(output) == 1 and type(output[0]) is TextBlock:
            text = output[0].text
        elif output:
            text = F.text_of_blocks(output, ctx, f"/{i}/content/{j}/output", media)
        else:
            text = ""
        call_id = call[0] if call is not None else ctx.sent_id(cid, f"/{i}/content/{j}")
        if media:
            text = F.name_media(output, text, {id(m): F.block_label(m) for m, _ in media})  # (in their places)
            if self.takes_media:
                parts: list[dict[str, Any]] = []
                for m, p in media:
                    part = self.media_part(m, p)
                    if "text" in part:  # a placeholder (said media-unsupported): the tool message names it already
                        continue
                    ctx.report(
                        p, "tool-result-media-fallback", f"{m.type} sent in a user message after the tool results"
                    )
                    parts.append(part)
                if parts:
                    parts.insert(0, self.text_part(F.TOOL_MEDIA_HEAD.format(call_id)))
                    self.deferred.append({"role": "user", "content": parts})
            else:  # text only: a user message could hold nothing but the labels the tool message already has
                for _, p in media:
                    ctx.report(
                        p, "media-unsupported", f"{self.name} takes no media (text only); named in a text placeholder"
                    )
        entry: dict[str, Any] = {"role": "tool", "content": self.text_content(text), "tool_call_id": call_id}
        if self.tool_name_field:
            if call is not None:
                entry["name"] = call[1]
            else:  # an orphan: the result's own tool name
                tool = b.name or ""
                mapped = ctx.tool_name_cache.get(tool)
                entry["name"] = (
                    mapped if mapped is not None else (ctx.tool_name(tool, f"/{i}/content/{j}/name") if tool else tool)
                )
        self.out.append(entry)

    def _hint(self, b: HintBlock, i: int, j: int) -> None:
        if not b.hint and self.drop_empty:  # as an empty text block
            self.ctx.report(f"/{i}/content/{j}", "empty-text-dropped", "empty hint not sent")
            return
        role = self.hint_role
        self.ctx.report(f"/{i}/content/{j}", "hint-placed", f"hint sent as a {role} message after this turn")
        self.deferred.append({"role": role, "content": self.text_content(b.hint)})

    def repair(self, sent: str, tool: str) -> None:
        entry: dict[str, Any] = {"role": "tool", "content": self.text_content(F.REPAIR_TEXT), "tool_call_id": sent}
        if self.tool_name_field:
            entry["name"] = tool
        self.out.append(entry)

    def placeholder(self, b: Any, pointer: str, what: str) -> dict[str, Any]:
        label = F.block_label(b)
        self.ctx.report(pointer, "media-unsupported", f"{self.name} takes no {what}; sent as a text placeholder")
        return self.text_part(label)


_DEMOTED = "{} takes no reasoning; sent as text"
_NO_REASONING = "{} takes no reasoning in requests"
_REDACTED = "redacted reasoning cannot be sent to {}"
_PRUNED = "{} takes reasoning of the current turn and of turns that called tools"
_NO_SIGNATURE = "{} has no field for a reasoning signature"

#: message metadata: the model declined (the reducer sets it from MODEL_CALL_END ``metadata.refusal``)
REFUSAL = "agentmsg_refusal"


def custom_input(b: ToolUseBlock) -> str:
    """The free-text input of an OpenAI custom tool's call (metadata ``toolType: "custom"``), as the provider takes it
    back (Chat Completions' ``custom.input``, a Responses ``custom_tool_call``'s ``input``): the call's raw text
    (``content``) as it came; for a call of no text, the JSON of its input (nothing when that is empty)."""
    if b.content is not None:
        return b.content
    return F.json_text(b.input) if b.input else ""


def refusal_at(msg: Msg) -> int:
    """The index of the block of ``msg`` that is an OpenAI refusal, or -1. OpenAI gives a refusal in a field of its
    own (``message.refusal``), which the parser keeps as a text block of its own after the content's text, the
    message marked ``agentmsg_refusal: true``: that block is the message's last text block, when it is marked so
    (a stream keeps the order its deltas came: content text after the refusal is that last block, and no mark on
    the block tells them apart; docs/streams.md)
    and is not Anthropic's refusal (its stop reason ``refusal``, ``agentmsg_finish_reason``: there the text is the
    answer the model gave before it was stopped, not a refusal message). An empty text is no refusal (the parser
    makes no empty block)."""
    meta = msg.metadata
    if meta.get(REFUSAL) is not True or meta.get("agentmsg_finish_reason") == "refusal":
        return -1
    blocks: list[Any] = msg.content
    for j in range(len(blocks) - 1, -1, -1):
        b = blocks[j]
        if type(b) is TextBlock:
            return j if b.text else -1
    return -1


def copy_hints(block: Any, part: dict[str, Any], names: tuple[str, ...]) -> None:
    """Copy Qwen-VL sizing hints (``min_pixels``, ``fps``, ...) of a block onto a part."""
    for name in names:
        value = getattr(block, name, None)
        if value is not None:
            part[name] = value
