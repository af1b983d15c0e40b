"""The module the clients were written in before they were split by concern (see the package's docstring): the
names imported from it before keep working."""

from __future__ import annotations

from agentmsg.clients._async import AsyncClient, AsyncReplyStream
from agentmsg.clients._config import DEFAULT_TIMEOUT
from agentmsg.clients._errors import ERROR_BODY_MAX
from agentmsg.clients._sync import Client, ReplyStream

__all__ = ["DEFAULT_TIMEOUT", "ERROR_BODY_MAX", "AsyncClient", "AsyncReplyStream", "Client", "ReplyStream"]
