"""Types of the optional C speed-ups (_speedups.c): see agentmsg._codec.converter.dumps_json,
agentmsg._wire.sse.SSEDecoder._simple_events and
agentmsg.events.reducer.Reducer._feed_many."""

from collections.abc import Callable, Iterator, Sequence
from typing import Any

def make_plan(cls: type, fields: Sequence[tuple[str, str, bool]], unknown_name: str | None, /) -> object: ...
def encode(
    value: object,
    plans: dict[type, object],
    fallback: Callable[[Any], Any],
    dumps: Callable[[Any], bytes],
    /,
) -> bytes | None: ...
def sse_scan(
    chunk: bytes,
    pos: int,
    crlf: bool,
    limit: int,
    max_line: int,
    last_id: str,
    out: list[Any],
    cls: Callable[[Any, str, str], Any],
    raw: bool = False,
    /,
) -> tuple[int, int, str]: ...
def fold_events(it: Iterator[Any], st: Any, join_every: int, /) -> tuple[int, Any]: ...
