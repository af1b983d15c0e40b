"""Types of the optional C writer (_speedups.c): see agentmsg._converter.dumps_json."""

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
