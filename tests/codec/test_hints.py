"""The converter resolves a class's field types once (every hook compiled for the class reads them: at
``import agentmsg`` that was 163 resolutions of 27 classes, each evaluating every string annotation again)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

import agentmsg
from agentmsg._codec import converter
from agentmsg.blocks import SDK_CLASS_OF
from agentmsg.message import MESSAGE_CLASSES

CLASSES = [*SDK_CLASS_OF, *SDK_CLASS_OF.values(), *MESSAGE_CLASSES.values(), agentmsg.ChatUsage]


def test_field_types_are_resolved_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    resolved = {cls: converter._hints(cls) for cls in CLASSES}
    assert all(resolved[cls] == converter._resolve_hints(cls) for cls in CLASSES)

    def again(cls: type) -> dict[str, Any]:
        raise AssertionError(f"{cls.__name__}'s field types resolved again")

    monkeypatch.setattr(converter, "_resolve_hints", again)
    for cls in CLASSES:
        hints = converter._hints(cls)
        assert hints == resolved[cls]
        hints.clear()  # each caller gets its own dict: the one kept is not changed
        assert converter._hints(cls) == resolved[cls]


def test_a_callers_class_is_not_kept() -> None:
    class Mine(agentmsg.UserMessage):
        pass

    assert converter._hints(Mine) == converter._hints(agentmsg.UserMessage)
    assert Mine in converter._HINTS
    count = len(converter._HINTS)
    del Mine
    gc.collect()
    assert len(converter._HINTS) == count - 1
