"""A binary stream whose first bytes were read ahead, to tell what a file holds before reading it
(:func:`agentmsg.check`'s kind, ``agentmsg events``' refusal of an event stream), and are served again: nothing is
read twice from the stream, which may be a pipe. Public as ``agentmsg.Peeked`` (the CLI takes it from there)."""

from __future__ import annotations

from agentmsg._wire.records import Readable

__all__ = ["Peeked"]


class Peeked:
    """A binary stream whose first bytes (``head``: up to ``size`` bytes, fewer only at the stream's end) were read
    ahead and are served again: ``read`` and ``readline`` as on the stream, no copies of what remains of the head.
    A :class:`~agentmsg._wire.records.Readable` itself (what ``agentmsg.read_records`` reads)."""

    def __init__(self, stream: Readable, size: int) -> None:
        self._stream = stream
        self.head = stream.read(size) or b""
        self._at = 0

    def read(self, size: int = -1, /) -> bytes:
        head, at = self.head, self._at
        if at >= len(head):
            return self._stream.read(size)
        end = len(head) if size < 0 else min(len(head), at + size)
        self._at = end
        out = head[at:end]
        if size < 0:
            return out + self._stream.read()
        return out

    def readline(self, size: int = -1, /) -> bytes:
        head, at = self.head, self._at
        if at >= len(head):
            return self._stream.readline(size)
        nl = head.find(b"\n", at)
        end = len(head) if nl < 0 else nl + 1
        if size >= 0:
            end = min(end, at + size)
        self._at = end
        out = head[at:end]
        if end == len(head) and not out.endswith(b"\n") and (size < 0 or len(out) < size):
            out += self._stream.readline(size - len(out) if size >= 0 else -1)  # the line goes on after the head
        return out
