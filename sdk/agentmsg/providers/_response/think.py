"""``<think>...</think>`` in a reply's text, read as reasoning: the parser option ``think_tags``.

Reasoning models served over OpenAI-compatible endpoints without a reasoning parser (DeepSeek-R1 distills and QwQ on
vLLM, SGLang, TensorRT-LLM, llama.cpp, older Ollama) send their chain of thought in the answer's text, between
``<think>`` and ``</think>``. With ``think_tags=True`` a parser or response reader (every provider's: the option is
the builder's, not a reader's) gives that text as thinking blocks and the rest as text; ``think_tags="open"`` is for
a chat template that puts ``<think>`` in the prompt (DeepSeek-R1's and QwQ's current ones), whose replies open inside
the reasoning and only close it: the text before ``</think>`` is the reasoning.

The tags are found in the text as it streams: a tag cut between two fragments (``<th`` + ``ink>``) is held until the
next fragment says whether it is one, so every way of cutting a reply gives the same message, which is also the
message of the whole reply (:class:`ThinkTagBuilder` reads a whole reply's text as one fragment). The whitespace
around the tags is the template's, not the model's: the reasoning's leading and trailing whitespace and the text's
leading whitespace after ``</think>`` are left out, so ``<think>\\n\\n</think>\\n\\nHello`` (a model that did not
reason) is one text block ``Hello``. A tag inside the reasoning other than ``</think>`` is reasoning text; an
unclosed ``<think>`` (the reply cut, or ended by a stop sequence) leaves its text as reasoning.

Without the option nothing here runs: the parser builds the plain :class:`StreamBuilder`
(:func:`make_builder`), so the default path costs nothing more than the option's look-up when a parser is made.
"""

from __future__ import annotations

from typing import Any

from agentmsg.providers._response.builder import StreamBuilder, _Choice

__all__ = ["THINK_TAG_MODES", "ThinkTagBuilder", "make_builder"]

OPEN = "<think>"
CLOSE = "</think>"
#: The values of the option that turn it on: tags in pairs, or a reply that opens inside the reasoning
THINK_TAG_MODES = (True, "open")
#: Text slots that are never the model's answer text (a refusal, an audio transcript): read as they come
_PLAIN_SLOTS = frozenset(("refusal", "transcript"))


def make_builder(provider: str, think_tags: Any = False, **options: Any) -> StreamBuilder:
    """The builder of one reply: a :class:`ThinkTagBuilder` when ``think_tags`` is on, else the plain
    :class:`StreamBuilder`. Another value of ``think_tags`` than False, None, True and ``"open"`` raises ValueError."""
    if think_tags is False or think_tags is None:
        return StreamBuilder(provider, **options)
    if think_tags is not True and think_tags != "open":
        raise ValueError(f"think_tags={think_tags!r}: expected False, True or 'open'")
    return ThinkTagBuilder(provider, opened=think_tags == "open", **options)


def _partial(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` may begin ``tag`` (0 when none): the tag has one ``<``, its first
    character, so only the text from the last ``<`` of the tail can."""
    at = text.rfind("<", max(0, len(text) - len(tag) + 1))
    return len(text) - at if at >= 0 and tag.startswith(text[at:]) else 0


class _Split:
    """Where one text slot of one choice is: in the reasoning or not, and what is held back."""

    __slots__ = ("held", "inside", "lead", "strip", "ws")

    def __init__(self, opened: bool) -> None:
        self.inside = opened  # in the reasoning
        self.lead = opened  # ("open") nothing read yet: a <think> the reply repeats is the template's own
        self.held = ""  # the end of the text so far, which may begin a tag
        self.strip = opened  # leave out the whitespace that follows (a tag's, or the reply's start in "open")
        self.ws = ""  # the reasoning's whitespace so far at its end, sent when more reasoning follows it


class ThinkTagBuilder(StreamBuilder):
    """A :class:`StreamBuilder` that reads ``<think>...</think>`` in the text it is given as reasoning (see the module
    docstring). Only :meth:`text` reads differently; the builder's other calls first give the text held back (a
    tag's beginning that turned out to be text), so that it keeps its place before what they add."""

    __slots__ = ("_opened", "_splits")

    def __init__(self, provider: str, *, opened: bool = False, **options: Any) -> None:
        super().__init__(provider, **options)
        self._opened = opened
        self._splits: dict[tuple[int, str], _Split] = {}

    # ---- the text ----------------------------------------------------------------------------------------------

    def text(self, delta: str, *, choice: int = 0, slot: str = "text", ends: str | None = None) -> None:
        if not delta or type(delta) is not str or slot in _PLAIN_SLOTS:
            super().text(delta, choice=choice, slot=slot, ends=ends)
            return
        if ends is not None:
            StreamBuilder.end_block(self, ends, choice)
        split = self._splits.get((choice, slot))
        if split is None:
            split = self._splits[(choice, slot)] = _Split(self._opened)
        if "<" not in delta and not split.held and not split.lead:  # the common fragment: no tag can begin in it
            if split.inside or split.strip:
                self._emit(split, delta, choice, slot)
            else:
                StreamBuilder.text(self, delta, choice=choice, slot=slot)
            return
        rest = split.held + delta
        split.held = ""
        while rest:
            if split.lead:  # ("open") a reply that repeats the template's <think> opens with it: left out
                lead = rest.lstrip()
                if lead.startswith(OPEN):
                    split.lead = False
                    rest = lead[len(OPEN) :]
                    continue
                if OPEN.startswith(lead):
                    split.held = rest  # (all whitespace, or the tag's beginning: the next fragment says)
                    return
                split.lead = False
            tag = CLOSE if split.inside else OPEN
            at = rest.find(tag)
            if at < 0:
                keep = _partial(rest, tag)
                if keep:
                    split.held = rest[-keep:]
                    rest = rest[:-keep]
                self._emit(split, rest, choice, slot)
                return
            self._emit(split, rest[:at], choice, slot)
            rest = rest[at + len(tag) :]
            if split.inside:  # </think>: the reasoning is over, its trailing whitespace the template's
                split.ws = ""
                StreamBuilder.end_block(self, _thinking_slot(slot), choice)
            else:  # <think>: the text so far is a block of its own
                StreamBuilder.end_block(self, slot, choice)
            split.inside = not split.inside
            split.strip = True

    def _emit(self, split: _Split, piece: str, choice: int, slot: str) -> None:
        if split.strip:
            piece = piece.lstrip()
            if not piece:
                return
            split.strip = False
        if not split.inside:
            StreamBuilder.text(self, piece, choice=choice, slot=slot)
            return
        piece = split.ws + piece
        words = piece.rstrip()
        split.ws = piece[len(words) :]
        if words:
            StreamBuilder.thinking(self, words, choice=choice, slot=_thinking_slot(slot))

    def _flush(self, choice: int | None, slot: str | None = None) -> None:
        """The text held back for a tag that did not come (of ``choice``, or every choice; of ``slot``, or every
        slot), given as what it is: text, or reasoning."""
        for (at, where), split in self._splits.items():
            if split.held and (choice is None or at == choice) and (slot is None or where == slot):
                held, split.held = split.held, ""
                split.lead = False
                self._emit(split, held, at, where)

    # ---- the builder's other calls: what was held back comes first ---------------------------------------------

    def thinking(self, delta: str, *, choice: int = 0, **options: Any) -> None:
        self._flush(choice)
        super().thinking(delta, choice=choice, **options)

    def tool_call(self, key: Any, *, choice: int = 0, **options: Any) -> None:
        self._flush(choice)
        super().tool_call(key, choice=choice, **options)

    def media(self, block: dict[str, Any], *, choice: int = 0) -> None:
        self._flush(choice)
        super().media(block, choice=choice)

    def data(self, raw: bytes, *, choice: int = 0, **options: Any) -> None:
        self._flush(choice)
        super().data(raw, choice=choice, **options)

    def end_block(self, slot: str, c: _Choice | int = 0, *, metadata: dict[str, Any] | None = None) -> None:
        index = c if isinstance(c, int) else (0 if c.source is None else int(c.source.rpartition("/")[2]))
        self._flush(index, slot)
        super().end_block(slot, c, metadata=metadata)

    def finish(
        self, choice: int, finish_reason: Any, *, tool_calls: bool = False, normal: bool = False, over: bool = True
    ) -> None:
        self._flush(choice)
        super().finish(choice, finish_reason, tool_calls=tool_calls, normal=normal, over=over)

    def error(self, message: str, *, kind: str = "provider_error", choice: int | None = None, **info: Any) -> None:
        self._flush(choice)
        super().error(message, kind=kind, choice=choice, **info)

    def close(self, *, ended: bool = False) -> None:
        if not self.closed:
            self._flush(None)
        super().close(ended=ended)


def _thinking_slot(slot: str) -> str:
    """The slot of the reasoning read from a text slot's tags: its own, apart from the provider's reasoning field
    (``thinking``), which a provider may end when text comes (``ends``)."""
    return "think-tags" if slot == "text" else f"{slot}/think-tags"
