"""agentmsg._codec.lazy.Once: what ``import agentmsg`` leaves to the first decode is built once, whatever the
threads, and a value of None counts as built."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agentmsg._codec.lazy import Once

pytestmark = pytest.mark.no_kernel


def test_threads_that_ask_at_once_get_one_build() -> None:
    builds: list[int] = []
    started = threading.Event()

    def build() -> list[int]:
        started.set()
        time.sleep(0.05)  # (the others arrive while it builds: they wait, none builds again)
        builds.append(1)
        return builds

    once = Once(build)
    assert not once.done and once.value is None
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(once())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1] and all(g is builds for g in got)
    assert once.done and once.value is builds and once() is builds


def test_none_is_a_value_built_once() -> None:
    calls: list[None] = []
    once: Once[None] = Once(lambda: calls.append(None))
    assert once() is None and once() is None
    assert once.done and calls == [None]


def test_a_build_that_raises_is_tried_again() -> None:
    tries: list[int] = []

    def build() -> int:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("not yet")
        return 7

    once = Once(build)
    with pytest.raises(RuntimeError):
        once()
    assert not once.done
    assert once() == 7 and once() == 7 and len(tries) == 2


def test_a_first_build_that_fails_midway_is_built_whole_by_the_next() -> None:
    """A first decode that fails inside the build (deep in the caller's stack: RecursionError) is built again by the
    next, whole: the build had taken the union tables and late names it was filling off their lists, so the message
    hook it kept decoded every later message with an empty content table (a bare ``KeyError: 'text'``)."""
    from agentmsg import TextBlock, message
    from agentmsg._codec.converter import Codec
    from agentmsg_models import msg as generated

    codec = Codec(message._BUILD_AS, message._BY_ROLE)
    compile_hook = codec.hook
    failed: list[type] = []

    def hook(cls: type) -> Any:
        if not failed and generated.Msg in codec.structure_hooks and not codec._compiling:  # (binding: the tables)
            failed.append(cls)
            raise RecursionError("maximum recursion depth exceeded")
        return compile_hook(cls)

    codec.hook = hook  # type: ignore[method-assign]
    with pytest.raises(RecursionError):
        codec.hook(generated.Msg)
    assert failed
    wire = message.AssistantMessage(name="a", content=[TextBlock(text="hi")]).to_dict()
    assert codec.hook(generated.Msg)(wire).to_dict() == wire
