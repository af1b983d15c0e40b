"""dashscope request formatter (in progress), response and stream parsers (issue 10)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentmsg.message import Msg

from ._format import FormattedRequest

__all__ = ["format_request"]

# ---- request (issue 9) ----------------------------------------------------------------------------


def format_request(messages: Sequence[Msg], **kwargs: Any) -> FormattedRequest:
    raise NotImplementedError("dashscope formatter: in progress")


# ---- response (issue 10) --------------------------------------------------------------------------

# ---- stream (issue 10) ----------------------------------------------------------------------------
