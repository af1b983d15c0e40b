"""Server-sent events (text/event-stream): the generic codec, with no knowledge of what the data holds.

:class:`SSEDecoder` parses a stream incrementally, as the WHATWG spec says: LF, CRLF or CR line ends
(also split across chunks), a leading BOM, comment lines, multi-line ``data``, ``retry``, the last event
id. :func:`encode_event` writes one event. Agent events over SSE are in :mod:`agentmsg.events.sse`;
provider streams use the same decoder.
"""

from __future__ import annotations

import codecs
from typing import Any

import attrs
import orjson


@attrs.define
class SSEEvent:
    """One dispatched SSE event."""

    data: str
    event: str = "message"
    id: str = ""  # the last event id in effect when this event was dispatched
    retry: int | None = None

    def json(self) -> Any:
        return orjson.loads(self.data)


def encode_event(data: str, *, id: str | None = None, event: str | None = None, retry: int | None = None) -> str:
    """One SSE event block (ends with a blank line). Multi-line ``data`` becomes several ``data:`` lines."""
    head = ""
    if id:
        head += f"id: {id}\n"
    if event:
        head += f"event: {event}\n"
    if retry is not None:
        head += f"retry: {retry}\n"
    body = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"{head}{body}\n"


class SSEDecoder:
    """Incremental text/event-stream parser. ``feed(chunk)`` returns the events completed by the chunk;
    chunks may split anything, even a CRLF or a UTF-8 sequence."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        self._pending_cr = False
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self.last_event_id = ""

    def feed(self, chunk: str | bytes) -> list[SSEEvent]:
        text = self._utf8.decode(chunk) if isinstance(chunk, (bytes, bytearray)) else chunk
        if not self._started and text:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if not text:
            return []  # nothing decoded yet (an empty chunk, part of a UTF-8 sequence): state unchanged
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        buffer = self._buffer + text
        out: list[SSEEvent] = []
        start = 0
        length = len(buffer)
        cr = lf = -2  # next CR / LF at or after start (-1: none left), searched again only once passed
        while True:
            if cr != -1 and cr < start:
                cr = buffer.find("\r", start)
            if lf != -1 and lf < start:
                lf = buffer.find("\n", start)
            if cr < 0 and lf < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            else:
                end = cr
                if cr + 1 < length:
                    nxt = cr + 2 if buffer[cr + 1] == "\n" else cr + 1
                else:
                    nxt = cr + 1
                    self._pending_cr = True
            self._line(buffer[start:end], out)
            start = nxt
        self._buffer = buffer[start:]
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream. Per the spec an event not followed by a blank line is discarded."""
        self._utf8.decode(b"", final=True)
        self._buffer = ""
        self._data = []
        return []

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event or "message", self.last_event_id, self._retry))
            self._data, self._event, self._retry = [], "", None
            return
        if line[0] == ":":
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\x00" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
