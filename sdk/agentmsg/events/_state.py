"""What the reducer remembers: text accumulators, open blocks and tool calls, one reply, and the
reducer's whole mutable state. Every change to what is *open* goes through :class:`Reply`'s methods,
which keep the delta routing tables (:attr:`Reply.routes`) in step, so no reader ever rebuilds them."""

from __future__ import annotations

from typing import Any

from agentmsg.errors import Problem, SizeLimitError, ValidationError
from agentmsg.events._dedupe import DedupeWindow

JOIN_EVERY = 512  # compact a block's fragments once this many are pending

TEXT_DELTA, THINKING_DELTA, CALL_DELTA = "TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA"


class Text:
    """A text accumulator: fragments are joined in groups so memory stays close to the text size (a
    Python str per fragment costs ~50 bytes) without re-copying what was joined. Hot loops call
    :attr:`append` (``parts.append``) and rely on :meth:`sync`; everything else calls :meth:`add`."""

    __slots__ = ("append", "chunks", "parts")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.chunks: list[str] = []
        self.append = self.parts.append

    def add(self, s: str) -> None:
        parts = self.parts
        parts.append(s)
        if len(parts) >= JOIN_EVERY:
            self.flush()

    def sync(self) -> None:
        if len(self.parts) >= JOIN_EVERY:
            self.flush()

    def flush(self) -> None:
        self.chunks.append("".join(self.parts))
        self.parts.clear()  # the same list object: bound ``append``s stay valid

    @property
    def received(self) -> bool:
        """Whether any fragment (even an empty one) was added."""
        return bool(self.parts or self.chunks)

    def value(self) -> str:
        if self.parts:
            self.flush()
        chunks = self.chunks
        if len(chunks) > 1:
            self.chunks = chunks = ["".join(chunks)]
        return chunks[0] if chunks else ""


class Block:
    """A content block being built: ``kind`` is text | thinking | data | whole | tool_use | hint."""

    __slots__ = ("block", "extra", "kind", "meta", "name", "open", "origin", "pad", "redacted", "signature", "text")

    def __init__(self, kind: str, origin: int) -> None:
        self.kind = kind
        self.origin = origin  # index of the event that started it (problems found later point there)
        self.text = Text()
        self.open = True
        self.meta: Any = None
        self.extra: dict[str, Any] = {}
        self.block: Any = None
        self.name: str | None = None
        self.signature: Text | None = None
        self.redacted: Text | None = None
        self.pad = 0  # data blocks: '=' padding characters received (nothing may follow them)


class ToolResult:
    __slots__ = ("id", "meta", "name", "open", "origin", "output", "state", "text")

    def __init__(self, call_id: str, name: str | None, origin: int) -> None:
        self.id = call_id
        self.name = name
        self.origin = origin
        self.output: list[Any] = []  # dicts of finished output blocks
        self.text: Text | None = None  # the text block being streamed
        self.open = True
        self.state = "running"
        self.meta: dict[str, Any] = {}

    def flush_text(self) -> None:
        if self.text is not None:
            self.output.append({"type": "text", "text": self.text.value()})
            self.text = None

    def output_dicts(self) -> list[Any]:
        out = list(self.output)
        if self.text is not None:
            out.append({"type": "text", "text": self.text.value()})
        return out


class Reply:
    """One agent reply being reduced.

    ``by_block``: open text/thinking/data blocks by blockId; ``by_call``: tool calls by toolCallId (open
    or closed: Java continues a call id within one model call); ``by_result``: open tool results.
    ``routes``: per delta type, id -> the :class:`Text` of the open block of that kind, i.e. where a
    plain text, thinking or tool-call delta goes. It is the one routing table, used by the handlers and
    by the fast paths alike, and only :meth:`open_block`/:meth:`close_block`/:meth:`open_call`/
    :meth:`close_call` change it."""

    __slots__ = (
        "blocks",
        "by_block",
        "by_call",
        "by_result",
        "calls",
        "errors",
        "explicit",
        "fallback_id",
        "finish_reason",
        "hitl",
        "meta",
        "model",
        "model_open",
        "msg_id",
        "name",
        "notes",
        "notes_omitted",
        "origin",
        "reason",
        "refusal",
        "result",
        "routes",
        "stop_reason",
        "texts",
        "thinkings",
        "timestamp",
        "trusted",
        "usage",
    )

    def __init__(self, explicit: bool, origin: int, first_id: Any) -> None:
        self.explicit = explicit  # opened by AGENT_START
        self.origin = origin  # index of the event that opened the reply
        # The message id when the stream names none (docs/events.md rule 8): from the opening event's id,
        # else its index, so that the same stream gives the same message in every runtime.
        self.fallback_id = f"msg-{first_id}" if type(first_id) is str and first_id else f"msg-{origin}"
        self.blocks: list[Any] = []  # Block | ToolResult in start order
        self.by_block: dict[str, Block] = {}
        self.by_call: dict[str, Block] = {}
        self.by_result: dict[str, ToolResult] = {}
        self.texts: dict[str, Text] = {}  # open text blocks: routes[TEXT_DELTA]
        self.thinkings: dict[str, Text] = {}  # open thinking blocks: routes[THINKING_DELTA]
        self.calls: dict[str, Text] = {}  # open tool calls: routes[CALL_DELTA]
        self.routes = {TEXT_DELTA: self.texts, THINKING_DELTA: self.thinkings, CALL_DELTA: self.calls}
        self.msg_id: str | None = None
        self.name: str | None = None
        self.timestamp: str | None = None
        self.usage: dict[str, Any] | None = None
        self.reason: str | None = None
        self.meta: dict[str, Any] = {}
        self.hitl: list[Any] = []
        self.result: Any = None  # AGENT_RESULT's message dict
        self.model_open = 0
        # What the reply ended with (metadata agentmsg_finish_reason, _model, _stop_reason, _errors).
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.refusal = False  # metadata agentmsg_refusal
        self.errors: list[dict[str, Any]] = []
        # The producers' notes (CUSTOM agentmsg.problem / agentmsg.not-kept values): metadata agentmsg_notes,
        # the first MAX_NOTES kept, the rest counted.
        self.notes: list[dict[str, Any]] = []
        self.notes_omitted = 0
        # Every event other than a plain delta came from a producer that guarantees valid events parsed
        # from JSON text (Reducer.feed_many(trusted=True)): the message may take the codec's fast path.
        self.trusted = True

    # ---- what is open: the only place that changes it --------------------------------------------

    def open_count(self) -> int:
        return len(self.by_block) + len(self.calls) + len(self.by_result)

    def open_block(self, block_id: str, b: Block) -> None:
        self.by_block[block_id] = b
        if b.kind == "text":
            self.texts[block_id] = b.text
        elif b.kind == "thinking":
            self.thinkings[block_id] = b.text
        self.blocks.append(b)

    def close_block(self, block_id: str) -> Block:
        b = self.by_block.pop(block_id)
        b.open = False
        self.texts.pop(block_id, None)
        self.thinkings.pop(block_id, None)
        b.text.sync()
        return b

    def open_call(self, call_id: str, b: Block, *, new: bool) -> None:
        b.open = True
        self.calls[call_id] = b.text
        if new:
            self.by_call[call_id] = b
            self.blocks.append(b)

    def close_call(self, call_id: str) -> None:
        b = self.by_call[call_id]
        b.open = False
        self.calls.pop(call_id, None)
        b.text.sync()

    def open_result(self, t: ToolResult) -> None:
        self.by_result[t.id] = t
        self.blocks.append(t)

    def close_result(self, call_id: str) -> None:
        self.by_result.pop(call_id).open = False

    def oldest_open(self) -> tuple[str, str]:
        """(table, id) of the open block, tool call or tool result started first (tables keep the
        order things were opened in, so only each table's first entry is a candidate)."""
        firsts: list[tuple[int, str, str]] = []
        if self.by_block:
            key = next(iter(self.by_block))
            firsts.append((self.by_block[key].origin, "block", key))
        if self.calls:
            key = next(iter(self.calls))
            firsts.append((self.by_call[key].origin, "call", key))
        if self.by_result:
            key = next(iter(self.by_result))
            firsts.append((self.by_result[key].origin, "result", key))
        _, table, key = min(firsts)
        return table, key

    def sync(self) -> None:
        """After hot loops appended through the routes: compact what is pending."""
        for table in self.routes.values():
            for text in table.values():
                if len(text.parts) >= JOIN_EVERY:
                    text.flush()


class State:
    """The reducer's whole mutable state; handlers and fast paths work on it."""

    __slots__ = (
        "count",
        "cut",
        "default_name",
        "done",
        "ended",
        "event_id",
        "max_open",
        "max_problems",
        "omitted",
        "parsed",
        "problems",
        "reply",
        "results",
        "source",
        "strict",
        "trusted",
        "unchecked",
        "window",
    )

    def __init__(
        self,
        strict: bool,
        source: str | None,
        dedupe_window: int | None,
        name: str | None,
        max_open: int,
        max_problems: int | None,
        /,
    ) -> None:
        # (positional: a class called with keywords builds a dict of them and unpacks it again, a tenth of the
        # reducer's set-up; the reducer makes one per reply)
        self.strict = strict
        self.source = source
        self.default_name = name
        self.problems: list[Problem] = []
        self.omitted = 0  # problems beyond max_problems: counted, not kept
        self.max_problems = max_problems
        self.max_open = max_open
        self.count = 0  # events fed (including skipped ones and unparsable lines)
        self.done: list[Any] = []  # AssistantMessage per completed reply
        self.results: list[Any] = []  # per completed reply: its AGENT_RESULT message dict, or None
        self.reply: Reply | None = None
        #: the index of the AGENT_END that ended the last reply (None before any): between replies after it, an event
        #: that would only open an empty reply is skipped (rule after-end)
        self.ended: int | None = None
        self.window = DedupeWindow(dedupe_window)
        self.event_id: Any = None  # the id of the event being applied (names a reply it opens)
        self.trusted = False  # the events being fed are valid by construction (Reducer.feed_many(trusted=True))
        #: the events came from agentmsg's own stream parsers, fed by ``Reducer._trusted_feed`` (a client's stream;
        #: its closing events by ``feed_many(trusted=True)``, whose promise is the same): values parsed from JSON
        #: text, so none shares its members (the message is not walked for that); an untrusted feed ends it
        self.parsed = False
        #: events came as Python objects (feed / feed_many, not from JSON text the codec read, nor trusted): their
        #: text may hold lone surrogates, so the message's text is checked too before it is built
        self.unchecked = False
        self.cut: Any = None  # the message finish() closed because the stream ended inside its reply

    def problem(
        self, index: int, pointer: str, rule: str, message: str, *, limit: bool = False, schema: str | None = None
    ) -> None:
        """Record a problem with event ``index`` (raises :class:`ValidationError` when strict;
        :class:`SizeLimitError` for a limit). ``schema``: the schema keyword's location, for problems the
        event schema found."""
        problem = Problem(f"/{index}{pointer}", rule, message, schema)
        if self.strict:
            raise (SizeLimitError if limit else ValidationError)([problem], "event")
        self.add(problem)

    def add(self, problem: Problem) -> None:
        if self.max_problems is not None and len(self.problems) >= self.max_problems:
            self.omitted += 1
        else:
            self.problems.append(problem)

    def current(self) -> Reply:
        reply = self.reply
        if reply is None:
            reply = self.reply = Reply(explicit=False, origin=self.count - 1, first_id=self.event_id)
        return reply
