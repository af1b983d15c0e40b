"""``agentmsg.errors``: the SDK's exceptions as users handle them."""

from __future__ import annotations

import copy
import pickle

import pytest

from agentmsg import (
    SizeLimitError,
    ValidationError,
)
from agentmsg.errors import Problem


@pytest.mark.parametrize("cls", [ValidationError, SizeLimitError])
def test_validation_errors_pickle_and_copy(cls: type[ValidationError]) -> None:
    """Exception's reduce rebuilt the error from its text, taken for its problems: one per character."""
    original = cls([Problem("/content/0/type", "role-content", "USER may not hold thinking")], "msg")
    original.__notes__ = ["while reading conversation.json"]  # (add_note: Python 3.11+)
    for again in (pickle.loads(pickle.dumps(original)), copy.copy(original), copy.deepcopy(original)):
        assert type(again) is cls
        assert again.problems == original.problems and again.kind == "msg"
        assert str(again) == str(original) == "invalid msg: /content/0/type: USER may not hold thinking [role-content]"
        assert again.__notes__ == ["while reading conversation.json"]
