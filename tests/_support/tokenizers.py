"""The tokenizer packages made missing, as where ``agentmsg[count]`` (bpe-openai) and dashscope are not installed:
``importlib.util.find_spec`` finds neither, and the vocabularies already loaded are forgotten, then (the packages
back) forgotten again so that the next count loads the real ones."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agentmsg.context import _tokenizers


def _forget() -> None:
    _tokenizers._bpe_openai.cache_clear()
    _tokenizers._qwen.cache_clear()


@contextmanager
def without_tokenizer_packages() -> Iterator[None]:
    """Inside: bpe-openai and dashscope are not installed, as far as the counters see."""
    modules = {name.replace("-", "_") for name in _tokenizers.PACKAGES.values()}
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in modules else real(name, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.util, "find_spec", find_spec)
        _forget()
        try:
            yield
        finally:
            _forget()
