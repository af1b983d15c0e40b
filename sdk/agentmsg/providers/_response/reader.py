"""The part of a provider's response side that the provider writes: its :class:`PayloadReader`.

A provider module defines one ``Reader(PayloadReader)``. It reads the provider's decoded JSON payloads and
drives a :class:`~agentmsg.providers._response.builder.StreamBuilder`, which writes the AgentEvents; the one
:class:`agentmsg.Reducer` folds them into the message. The same reader serves both ways a reply comes:

* a whole (non-streaming) response: :meth:`PayloadReader.reply` reads it, then the reply is closed;
* a stream: the one :class:`~agentmsg.providers._response.parser.StreamParser` frames the body, decodes each
  payload and hands it to :meth:`PayloadReader.chunk`; :meth:`PayloadReader.end` when no payload comes.

Everything a reader needs beyond the builder is here: the provider's end of stream (:attr:`PayloadReader.done`,
:meth:`PayloadReader.end_at_error`), payloads of no shape it knows (:attr:`PayloadReader.foreign`,
:meth:`PayloadReader.say_foreign`) and the text route the parser may read without the reader
(:meth:`PayloadReader.route_text`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from agentmsg._native import speedups

if TYPE_CHECKING:
    from agentmsg.providers._response.builder import StreamBuilder
    from agentmsg.providers.spec import Spec

__all__ = ["PayloadReader"]

#: Whether the parser can read a routed text payload in C (``agentmsg._speedups.json_string_between``)
_ROUTES = getattr(speedups, "json_string_between", None) is not None


class PayloadReader(ABC):
    """One provider's payloads -> builder calls, for one reply.

    ``options`` (class attribute): the keyword options the reader takes itself (DashScope's ``incremental``);
    every other option of a parser or response reader goes to the :class:`StreamBuilder`."""

    options: ClassVar[tuple[str, ...]] = ()
    #: whether a whole response may also be a JSON array of responses (Gemini's stream read without SSE)
    arrays: ClassVar[bool] = False

    def __init__(self, builder: StreamBuilder, spec: Spec, **options: Any) -> None:
        self.b = builder
        self.spec = spec
        self.done = False  # the provider's end-of-stream signal was seen (a payload after it is said, not read)
        self.foreign = 0  # payloads of no shape this reader knows, skipped (see say_foreign)
        self.route: tuple[bytes, bytes, str, str] | None = None  # the text payloads' shape (see route_text)

    # ---- what a provider writes ---------------------------------------------------------------------

    @abstractmethod
    def reply(self, obj: Any) -> None:
        """A whole (non-streaming) response, read as the events its stream would give, and closed
        (``self.b.close(...)``). Raise :class:`~agentmsg.ValidationError` (rule ``shape``) for a body that is
        not this provider's response; a KeyError, TypeError... is reported as rule ``shape`` too."""

    @abstractmethod
    def chunk(self, event: str, obj: dict[str, Any]) -> None:
        """One decoded stream payload (a JSON object) and its SSE event name (``""`` when none). A KeyError,
        TypeError, AttributeError or ValueError raised here skips the payload, said as problem ``type``."""

    def end(self) -> None:
        """No payload comes after the last one (the body or the transport ended, or the provider's error):
        emit what is held, and say what was skipped (:meth:`say_foreign`)."""
        self.say_foreign("no shape this reader knows")

    # ---- what a reader may call ----------------------------------------------------------------------

    def end_at_error(self) -> None:
        """The provider's error (said already, :meth:`StreamBuilder.error`) ends the reply, as the SDKs' streams
        raise or stop there: what came before is kept, the reply closes interrupted, and a payload after it is
        skipped and said once (problem ``order``), as one after ``[DONE]`` is."""
        self.done = True
        self.end()
        self.b.close()

    def say_foreign(self, shape: str) -> None:
        """The payloads of no shape the reader knows (:attr:`foreign`: another provider's, or a wrapper around the
        provider's own), which it skipped: said once, when no more comes (problem ``type``); when nothing else
        came, the body is not this provider's stream?"""
        n, self.foreign = self.foreign, 0
        if n:
            name = self.spec.name
            alone = (
                ""
                if self.b.opened()
                else f", and nothing else: not a{'n' if name[:1] in 'aeiou' else ''} {name} stream?"
            )
            self.b.problem("type", f"{n} payload(s) of {shape} were skipped{alone}", foreign=bool(alone))

    def route_text(self, head: bytes, tail: bytes, slot: str, event: str) -> None:
        """What :meth:`chunk` says of the payload it is reading: a payload whose bytes are exactly ``head``, a JSON
        string and ``tail`` would be read as ``builder.text(<the string>, slot=slot)`` and nothing else (the
        provider's common text delta, for the block now open). Until another payload comes, the parser reads such
        payloads so, with no orjson and no :meth:`chunk` call: the string is read by the generic C kernel
        ``agentmsg._speedups.json_string_between``, which leaves what it does not read exactly as orjson does to
        orjson. ``event``: the SSE event name such payloads come under (``chunk``'s). Any other payload ends the
        route before it is read. Without the C kernels, nothing."""
        if _ROUTES:
            self.route = (head, tail, slot, event)
