"""Types of the optional C speed-ups (_speedups.c): see agentmsg._converter.dumps_json and
agentmsg._sse.SSEDecoder._simple_events."""

from collections.abc import Callable, Sequence
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
    cls: Callable[[str, str, str], Any],
    /,
) -> tuple[int, int, str]: ...
