"""The clients' exceptions: one small hierarchy, each carrying the provider's own message."""

from __future__ import annotations

from typing import Any

from agentmsg.errors import AgentmsgError

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AgentmsgError",
    "AuthenticationError",
    "BadRequestError",
    "BrokenStreamError",
    "ProviderError",
    "RateLimitError",
    "ServerError",
]


#: Characters of the provider's message an error's text shows (a traceback, a log line); ``.message`` keeps it whole.
MESSAGE_SHOWN = 2000


class ProviderError(AgentmsgError):
    """A provider call failed (an :class:`~agentmsg.AgentmsgError`). ``message`` is the provider's own message (from its error body when it
    sent one), ``status_code`` the HTTP status (None before any response), ``provider`` the registry
    name, ``body`` the parsed error body (or its text), ``request_id`` the provider's request id. The error's
    text (``str(error)``) shows the message's first :data:`MESSAGE_SHOWN` characters."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        body: Any = None,
        request_id: str | None = None,
    ) -> None:
        self.message = message
        self.provider = provider
        self.status_code = status_code
        self.body = body
        self.request_id = request_id
        where = f"{provider} {status_code}" if status_code is not None else provider
        shown = (
            message if len(message) <= MESSAGE_SHOWN else f"{message[:MESSAGE_SHOWN]}... ({len(message):,} characters:"
        )
        if shown is not message:
            shown += " the whole in .message)"
        super().__init__(f"{where}: {shown}")

    def __reduce__(self) -> Any:
        # Exception's own reduce calls cls(*args), which lacks the keyword-only provider: a ProviderError
        # could not be pickled (a process pool, a task queue) nor copied.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[ProviderError], args: tuple[Any, ...], state: dict[str, Any]) -> ProviderError:
    err = Exception.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class AuthenticationError(ProviderError):
    """401 / 403: the API key is missing, wrong or not allowed."""


class RateLimitError(ProviderError):
    """429 after the retries: too many requests or tokens."""


class BadRequestError(ProviderError):
    """400, 404, 409, 413, 422 ...: the provider refused the request itself (retrying will not help)."""


class ServerError(ProviderError):
    """5xx after the retries (also Anthropic's 529 overloaded)."""


class APIConnectionError(ProviderError):
    """No response: the connection failed (after the retries)."""


class APITimeoutError(APIConnectionError):
    """No response within the timeout (after the retries)."""


class BrokenStreamError(ProviderError):
    """The stream started, then broke: a disconnect, a read timeout, a provider error mid-stream, or an
    unreadable body. Nothing received is lost: ``partial`` is the message reduced from everything that
    arrived (generate reason INTERRUPTED), ``events`` the closing events that mark it."""

    def __init__(self, message: str, *, partial: Any = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.partial = partial
