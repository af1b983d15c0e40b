"""A value built on first use, once, whatever the threads: what ``import agentmsg`` leaves to the first decode."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar, cast

__all__ = ["Once"]

T = TypeVar("T")


class Once(Generic[T]):
    """``once()`` is ``build()``'s value: built by the first call (threads calling meanwhile wait for that build;
    none builds it twice), then kept. ``done`` and ``value`` read it with no call (a hot path's check:
    ``value if once.done else once()``)."""

    __slots__ = ("_build", "_lock", "done", "value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self.done = False
        self.value: T | None = None

    def __call__(self) -> T:
        if not self.done:
            with self._lock:
                if not self.done:
                    self.value = self._build()
                    self.done = True
        return cast(T, self.value)
