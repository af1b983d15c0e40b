"""The live path: a provider's stream over loopback HTTP, read by agentmsg's clients, by the official SDKs'
streaming helpers and by the floor, side by side, sync and async.

A server in its own process (bench/live_server.py: its CPU is not counted) serves each provider's recorded
streams (the ones every side reads to the same reply: replies.RECORDED) and a long one (bench_streams.LONG:
one recorded stream's text deltas repeated to about 1,000 chunks), each SSE event written as its own HTTP
chunk, the same bytes for every client. Each side sends the same conversation (a system prompt, a user
question, one tool), reads the whole stream and ends with the reply:

* ``floor``: httpx (``httpx.Client`` / ``httpx.AsyncClient``, the timeout agentmsg's clients use) posts a
  request body formatted beforehand, streams the response (``iter_raw``: the server sends no content encoding,
  and agentmsg's clients read so too), splits the ``data:`` lines and
  hands each payload's ``orjson.loads`` to the caller (a generator): parsing the chunk's JSON and nothing else;
* ``agentmsg``: ``Client.stream`` / ``AsyncClient.stream`` (formats the request, then the SSE decoder, the
  provider's parser, the AgentEvents and the reducer), iterating every event, then ``.message`` (the
  validated Msg); the public API only, so the rows measure whatever the client becomes;
* ``official``: openai ``client.chat.completions.stream(...)`` then ``get_final_completion()`` (the Responses API:
  ``client.responses.stream(...)`` then ``get_final_response()``), anthropic
  ``client.messages.stream(...)`` then ``get_final_message()``, google-genai ``models.generate_content_stream``
  (it has no accumulator: the side collects each chunk's text, thoughts and function calls, as a caller
  does; its async client reads with aiohttp where aiohttp is installed, its default), DashScope's
  ``dashscope.Client(protocol="native").chat.completions.create(stream=True)`` then its aggregate (shown, not
  judged: the target names the other three); ``AsyncOpenAI``, ``AsyncAnthropic``, ``client.aio``,
  ``dashscope.AsyncClient`` for async; every client created once and reused (a warm keep-alive connection).

Before timing, every side reads every stream once and the results are compared: the floor and the official
helpers see every chunk (their chunk counts equal the stream's payloads), agentmsg gives the same events as
``parse_stream`` of the whole body (so it read every chunk), and every side that keeps a reply ends with the
same text, thinking and tool calls (name and arguments).

Cases (rows per provider and sync/async): ``long`` (the ~1,000-chunk stream back to back: CPU per chunk, what
each further chunk costs; reads seldom wait), ``paced`` (the same stream, ``--pace-us`` apart: each event its
own read and wake-up for every side, as a model's tokens arrive) and ``recorded`` (the recorded streams, one
request each: CPU per reply, each reply's fixed cost included). Measured per request: CPU time of this process
(``time.process_time``: every thread of the client side; the server is another process) from the call to the
end of the reply, and wall time and CPU from the call to the first event the caller gets (it includes building
and sending the request and the server's answer; best and median over every request of a provider and mode).
Best of the repeats (interleaved across the sides; the long case at least 9: its runs are short), the garbage collector off while timing. Targets, reported
and never asserted: agentmsg's CPU at most 1.3x the floor's, and the official helper's at least 5x agentmsg's,
sync and async, every row. The second has a ceiling: agentmsg does at least the floor's work, so official/agentmsg
is at most official/floor. A ``paced`` or ``recorded`` row whose ceiling is under 5 (each event's wake-up, or each
request's HTTP round, costs every side the same and dominates) cannot meet it: it is shown as "out of reach
(ceiling X)", not judged; the ``long`` rows (what each further chunk costs) are judged whatever their ceiling.

``--instructions`` (and ``bench/run.py --instructions``) also counts the instructions of the ``recorded`` and
``long`` cases under valgrind (callgrind; bench/_callgrind.py, shared with bench_formatters.py): per provider and
mode one child process runs every side, the server in its own process (not under valgrind, not counted), a
warm-up round of the recorded replies (checked as above), the collector off, then each side's recorded replies
``INSTRUCTION_ROUNDS`` times and the long stream once, each inside ``sys.call_tracing``, the only calls counted.
The table shows Ir per reply and per chunk and the same targets, judged on instructions. Both measures are shown:
instructions are deterministic, blind to the other processes of a shared machine and to the memory hierarchy
(a cache miss counts as a hit), so a ratio of them is the same from run to run; CPU time is what a user's machine
spends, caches and wake-ups included, and moves with the machine's load. Under valgrind the client runs some
50 times slower than the server, so each read finds more of the stream waiting than at full speed: fewer reads
per chunk, alike for every side. A run takes minutes per provider (the official helpers' long stream is
most of it): openai, gemini and anthropic took 15 minutes on a shared 2-core VM.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_streams
from replies import (
    PROVIDERS,
    GeminiAccumulator,
    Reply,
    agentmsg_reply,
    anthropic_reply,
    openai_reply,
    recorded,
    responses_reply,
)

from agentmsg import SystemMessage, UserMessage
from agentmsg.providers import get

HERE = Path(__file__).resolve().parent
TARGET_VS_FLOOR = 1.3
TARGET_VS_OFFICIAL = 5.0
JUDGED_VS_OFFICIAL = (
    "openai",
    "anthropic",
    "gemini",
    "openai-responses",
)  # the helpers the target names; DashScope's is shown
#: Microseconds the server waits between two events of the ``paced`` case (``--pace-us``): the client has
#: read the event before the next comes, as a model's tokens do, so each event is its own read and wake-up for
#: every side. The other cases send the events back to back (each still its own write and HTTP chunk).
DEFAULT_PACE_US = 200.0
CASES = ("long", "paced", "recorded")

#: The floor's httpx timeout: the one agentmsg's clients give their own httpx client (600 s, 10 s to connect).
HTTP_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


@dataclass
class LiveStream:
    """One stream the server serves: requested by its ``name`` as the model."""

    name: str
    provider: str
    case: str  # one of CASES
    body: bytes
    events: list[bytes] = field(default_factory=list)  # the SSE events, each with its blank line
    payloads: int = 0  # JSON payloads (data: lines but [DONE])
    pings: int = 0  # Anthropic's ping events
    pace_us: float = 0.0  # the server's wait between two events


def _split(body: bytes) -> list[bytes]:
    sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
    return [e + sep for e in body.split(sep) if e.strip()]


def live_streams(pace_us: float = DEFAULT_PACE_US) -> dict[str, LiveStream]:
    """Every stream of the bench, by name (the same in the server and in the bench)."""
    out: dict[str, LiveStream] = {}
    for provider in PROVIDERS:
        long = bench_streams._long_stream(provider)
        bodies = [(f"bench-{provider}-long", "long", long), (f"bench-{provider}-paced", "paced", long)]
        bodies += [(f"bench-{provider}-{n}", "recorded", body) for n, body in recorded(provider)]
        for name, case, body in bodies:
            events = _split(body)
            out[name] = LiveStream(
                name,
                provider,
                case,
                body,
                events,
                payloads=len(bench_streams._payloads(body)),
                pings=sum(1 for e in events if e.startswith(b"event: ping") or b"\nevent: ping" in e),
                pace_us=pace_us if case == "paced" else 0.0,
            )
    return out


# ---- the conversation every side sends --------------------------------------------------------------

SYSTEM = "You are a helpful assistant."
QUESTION = "What is the weather in Paris? Answer in one sentence."
TOOL = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
    },
}
AM_MESSAGES = [SystemMessage(SYSTEM), UserMessage(QUESTION)]
MAX_TOKENS = 1024


# ---- the sides ------------------------------------------------------------------------------------------
# A side's open(name) is a context manager giving (events, finish): an iterator of what the caller gets and a
# function giving the reply once it has been read. The async sides' aopen(name) gives an async iterator.

Opened = tuple[Iterator[Any], Callable[[], Any]]
AOpened = tuple[AsyncIterator[Any], Callable[[], Any]]


def _split_lines(pending: bytes, chunk: bytes) -> tuple[list[bytes], bytes]:
    lines = (pending + chunk if pending else chunk).split(b"\n")
    return lines, lines.pop()


class Floor:
    """httpx + the ``data:`` lines + orjson.loads of each payload, nothing else."""

    label = "floor"

    def __init__(self, url: str, provider: str) -> None:
        self.url, self.provider = url, provider
        self.requests: dict[str, tuple[str, bytes]] = {}  # by model: formatted beforehand (the check run)
        self.headers = {"content-type": "application/json", "accept": "text/event-stream", "authorization": "Bearer k"}
        self.http = httpx.Client(timeout=HTTP_TIMEOUT)
        self.ahttp = httpx.AsyncClient(timeout=HTTP_TIMEOUT)

    def _request(self, name: str) -> tuple[str, bytes]:
        request = self.requests.get(name)
        if request is None:
            formatted = get(self.provider).format_request(AM_MESSAGES, model=name, tools=[TOOL], stream=True)
            request = self.requests[name] = (self.url + str(formatted.path), formatted.body_bytes())
        return request

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        url, body = self._request(name)
        with self.http.stream("POST", url, content=body, headers=self.headers) as response:
            yield self._payloads(response.iter_raw()), lambda: None

    @staticmethod
    def _payloads(chunks: Iterator[bytes]) -> Iterator[Any]:
        loads = orjson.loads
        pending = b""
        for chunk in chunks:
            lines, pending = _split_lines(pending, chunk)
            for line in lines:
                if line[:5] == b"data:":
                    data = line[5:].strip()
                    if data[:1] == b"{":
                        yield loads(data)

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        url, body = self._request(name)
        async with self.ahttp.stream("POST", url, content=body, headers=self.headers) as response:
            yield self._apayloads(response.aiter_raw()), lambda: None

    @staticmethod
    async def _apayloads(chunks: AsyncIterator[bytes]) -> AsyncIterator[Any]:
        loads = orjson.loads
        pending = b""
        async for chunk in chunks:
            lines, pending = _split_lines(pending, chunk)
            for line in lines:
                if line[:5] == b"data:":
                    data = line[5:].strip()
                    if data[:1] == b"{":
                        yield loads(data)

    def close(self) -> None:
        self.http.close()

    async def aclose(self) -> None:
        await self.ahttp.aclose()


class AgentmsgSide:
    """``Client.stream`` / ``AsyncClient.stream``: every AgentEvent, then ``.message``."""

    label = "agentmsg"

    def __init__(self, url: str, provider: str) -> None:
        from agentmsg.clients import AsyncClient, Client

        self.client = Client(provider, base_url=url, api_key="k", model="bench")
        self.aclient = AsyncClient(provider, base_url=url, api_key="k", model="bench")

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        with self.client.stream(AM_MESSAGES, tools=[TOOL], model=name) as stream:
            yield iter(stream), lambda: stream.message

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        async with self.aclient.stream(AM_MESSAGES, tools=[TOOL], model=name) as stream:
            yield aiter(stream), lambda: stream.message

    reply = staticmethod(agentmsg_reply)

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.aclient.aclose()


class _Official:
    """What the official sides share: their clients closed at the end."""

    label = "official"
    version = "?"
    client: Any
    aclient: Any

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        closing = getattr(self.aclient, "aclose", None) or self.aclient.close
        await closing()


class OpenAISide(_Official):
    """openai ``client.chat.completions.stream(...)``, then ``get_final_completion()``."""

    def __init__(self, url: str) -> None:
        import openai

        self.version = f"openai {openai.__version__}"
        self.client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        self.aclient = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        self.messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        self.tools = [{"type": "function", "function": TOOL}]

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        with self.client.chat.completions.stream(model=name, messages=self.messages, tools=self.tools) as stream:
            yield iter(stream), stream.get_final_completion

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        async with self.aclient.chat.completions.stream(model=name, messages=self.messages, tools=self.tools) as s:
            final: list[Any] = []

            async def events() -> AsyncIterator[Any]:
                async for e in s:
                    yield e
                final.append(await s.get_final_completion())

            yield events(), lambda: final[0]

    @staticmethod
    def chunks(events: list[Any]) -> int:
        return sum(1 for e in events if e.type == "chunk")

    reply = staticmethod(openai_reply)


class ResponsesSide(_Official):
    """openai ``client.responses.stream(...)`` (the Responses API's helper), then ``get_final_response()``."""

    def __init__(self, url: str) -> None:
        import openai

        self.version = f"openai {openai.__version__}"
        self.client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        self.aclient = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        self.input = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        self.tools = [{"type": "function", **TOOL, "strict": False}]

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        with self.client.responses.stream(model=name, input=self.input, tools=self.tools) as stream:
            yield iter(stream), lambda: (stream.get_final_response(), stream._state)

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        async with self.aclient.responses.stream(model=name, input=self.input, tools=self.tools) as s:
            final: list[Any] = []

            async def events() -> AsyncIterator[Any]:
                async for e in s:
                    yield e
                final.append((await s.get_final_response(), s._state))

            yield events(), lambda: final[0]

    @staticmethod
    def chunks(events: list[Any]) -> int:
        return len(events)

    reply = staticmethod(responses_reply)


ANTHROPIC_RAW = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)


class AnthropicSide(_Official):
    """anthropic ``client.messages.stream(...)``, then ``get_final_message()``."""

    def __init__(self, url: str) -> None:
        import anthropic

        self.version = f"anthropic {anthropic.__version__}"
        self.client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        self.aclient = anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0)
        self.kwargs = {
            "max_tokens": MAX_TOKENS,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [{"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["parameters"]}],
        }

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        with self.client.messages.stream(model=name, **self.kwargs) as stream:
            yield iter(stream), stream.get_final_message

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        async with self.aclient.messages.stream(model=name, **self.kwargs) as s:
            final: list[Any] = []

            async def events() -> AsyncIterator[Any]:
                async for e in s:
                    yield e
                final.append(await s.get_final_message())

            yield events(), lambda: final[0]

    @staticmethod
    def chunks(events: list[Any]) -> int:
        return sum(1 for e in events if e.type in ANTHROPIC_RAW)

    reply = staticmethod(anthropic_reply)


class GeminiSide(_Official):
    """google-genai ``client.models.generate_content_stream`` / ``client.aio``: every chunk, each chunk's texts,
    thoughts and function calls collected (google-genai has no accumulator)."""

    def __init__(self, url: str) -> None:
        from google import genai
        from google.genai import types

        # its async client makes an aiohttp session class on first use, which aiohttp warns about: not ours to fix
        warnings.filterwarnings("ignore", "Inheritance class AiohttpClientSession", DeprecationWarning)
        self.client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
        self.aclient = self.client.aio
        aiohttp = getattr(self.client._api_client, "_use_aiohttp", lambda: False)()  # its async transport
        self.version = f"google-genai {genai.__version__} (async over {'aiohttp' if aiohttp else 'httpx'})"
        self.config = types.GenerateContentConfig(
            system_instruction=SYSTEM,
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=TOOL["name"],
                            description=TOOL["description"],
                            parameters_json_schema=TOOL["parameters"],
                        )
                    ]
                )
            ],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        acc = GeminiAccumulator()
        stream = self.client.models.generate_content_stream(model=name, contents=QUESTION, config=self.config)

        def events() -> Iterator[Any]:
            for chunk in stream:
                acc.add(chunk)
                yield chunk

        try:
            yield events(), lambda: acc.reply
        finally:
            stream.close()

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        acc = GeminiAccumulator()
        stream = await self.client.aio.models.generate_content_stream(model=name, contents=QUESTION, config=self.config)

        async def events() -> AsyncIterator[Any]:
            async for chunk in stream:
                acc.add(chunk)
                yield chunk

        try:
            yield events(), lambda: acc.reply
        finally:
            await stream.aclose()

    @staticmethod
    def chunks(events: list[Any]) -> int:
        return len(events)

    @staticmethod
    def reply(reply: Reply) -> Reply:
        return reply


class DashScopeSide(_Official):
    """DashScope's ``dashscope.Client().chat.completions.create(stream=True)`` (the native protocol), every
    chunk, then the SDK's aggregate of them (``get_final_message``'s)."""

    def __init__(self, url: str) -> None:
        import dashscope
        from dashscope.v2.resources.chat.completions import _aggregate

        self.version = f"dashscope {getattr(dashscope, '__version__', '?')}"
        self.client = dashscope.Client(api_key="k", base_url=url, protocol="native", max_retries=0)
        self.aclient = dashscope.AsyncClient(api_key="k", base_url=url, protocol="native", max_retries=0)
        self.aggregate = _aggregate
        self.messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        self.tools = [{"type": "function", "function": TOOL}]

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        stream = self.client.chat.completions.create(model=name, messages=self.messages, tools=self.tools, stream=True)
        kept: list[Any] = []

        def events() -> Iterator[Any]:
            for chunk in stream:
                kept.append(chunk)
                yield chunk

        try:
            yield events(), lambda: self.aggregate(kept)
        finally:
            stream.close()

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        stream = await self.aclient.chat.completions.create(
            model=name, messages=self.messages, tools=self.tools, stream=True
        )
        kept: list[Any] = []

        async def events() -> AsyncIterator[Any]:
            async for chunk in stream:
                kept.append(chunk)
                yield chunk

        try:
            yield events(), lambda: self.aggregate(kept)
        finally:
            await stream.aclose()

    @staticmethod
    def chunks(events: list[Any]) -> int:
        return len(events)

    reply = staticmethod(openai_reply)


class BareSocket:
    """A reference, not a client: the same request over a plain socket (kept open), each ``recv`` handed to the
    caller as it comes, no HTTP parsing, no JSON: what reading the stream costs this machine by itself (with the
    paced case: the wake-up after each wait). It is timed beside the sides, and not checked (it reads bytes)."""

    label = "socket"

    def __init__(self, url: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.address = (host, int(port))
        self.sock: socket.socket | None = None
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    def _request(self, name: str) -> bytes:
        body = orjson.dumps({"model": name})
        return (
            b"POST /bench HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
            % (
                len(body),
                body,
            )
        )

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[Opened]:
        if self.sock is None:
            self.sock = socket.create_connection(self.address)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = self.sock
        sock.sendall(self._request(name))

        def reads() -> Iterator[bytes]:
            while True:
                data = sock.recv(65536)
                yield data
                if not data or data.endswith(b"0\r\n\r\n"):  # the chunked body's end (not in the streams' data)
                    return

        yield reads(), lambda: None

    @contextlib.asynccontextmanager
    async def aopen(self, name: str) -> AsyncIterator[AOpened]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(*self.address)
        reader, writer = self.streams
        writer.write(self._request(name))

        async def reads() -> AsyncIterator[bytes]:
            while True:
                data = await reader.read(65536)
                yield data
                if not data or data.endswith(b"0\r\n\r\n"):
                    return

        yield reads(), lambda: None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()

    async def aclose(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            await self.streams[1].wait_closed()


def official_side(provider: str, url: str) -> Any:
    """The official SDK's side for a provider, or a string saying why there is none."""
    makers: dict[str, Callable[[str], Any]] = {
        "openai": OpenAISide,
        "anthropic": AnthropicSide,
        "gemini": GeminiSide,
        "dashscope": DashScopeSide,
        "openai-responses": ResponsesSide,
    }
    try:
        return makers[provider](url)
    except ImportError as exc:
        return f"not installed ({exc.name})"


# ---- running a side ---------------------------------------------------------------------------------------


@dataclass
class Run:
    cpu: float  # seconds of process CPU, the call to the reply
    ttfe: float  # seconds of wall time, the call to the first event
    cpu_first: float  # seconds of process CPU, the call to the first event
    events: list[Any] | None  # what the caller got (kept only when checking)
    result: Any


def run_sync(side: Any, name: str, keep: bool = False) -> Run:
    c0, t0 = time.process_time(), time.perf_counter()
    with side.open(name) as (events, finish):
        first = next(events)
        ttfe, cpu_first = time.perf_counter() - t0, time.process_time() - c0
        if keep:
            got = [first, *events]
        else:
            for _ in events:
                pass
        result = finish()
    return Run(time.process_time() - c0, ttfe, cpu_first, got if keep else None, result)


async def run_async(side: Any, name: str, keep: bool = False) -> Run:
    c0, t0 = time.process_time(), time.perf_counter()
    async with side.aopen(name) as (events, finish):
        first = await anext(events)
        ttfe, cpu_first = time.perf_counter() - t0, time.process_time() - c0
        if keep:
            got = [first, *[e async for e in events]]
        else:
            async for _ in events:
                pass
        result = finish()
    return Run(time.process_time() - c0, ttfe, cpu_first, got if keep else None, result)


# ---- equal work -------------------------------------------------------------------------------------------


def _event_key(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e.get("type"), e.get("delta"), e.get("toolCallName"), e.get("blockId") is not None)


def check(provider: str, stream: LiveStream, mode: str, runs: dict[str, Run], sides: dict[str, Any]) -> None:
    """The sides did the same work on one stream: every chunk read, the same reply. Raises AssertionError."""
    where = f"{provider} {mode} {stream.name}"
    floor = runs["floor"]
    assert floor.events is not None
    if len(floor.events) != stream.payloads:
        raise AssertionError(f"{where}: the floor read {len(floor.events)} payloads of {stream.payloads}")
    ours = runs["agentmsg"]
    assert ours.events is not None
    expected = [_event_key(e) for e in get(provider).parse_stream(stream.body)]
    if [_event_key(e) for e in ours.events] != expected:
        raise AssertionError(f"{where}: agentmsg's events differ from parse_stream's of the whole body")
    mine = agentmsg_reply(ours.result)
    if "official" in runs:
        side = sides["official"]
        theirs = runs["official"]
        assert theirs.events is not None
        chunks = side.chunks(theirs.events)
        if chunks != stream.payloads - stream.pings:
            raise AssertionError(
                f"{where}: the official helper gave {chunks} chunks of {stream.payloads - stream.pings}"
            )
        other = side.reply(theirs.result)
        if other.key() != mine.key():
            raise AssertionError(f"{where}: different replies\n  agentmsg {mine}\n  official {other}")


# ---- the bench ----------------------------------------------------------------------------------------------


class ServerProcess:
    """bench/live_server.py in a child process; ends with :meth:`stop` (or with this process)."""

    def __init__(self, pace_us: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "live_server.py"), "--pace-us", str(pace_us)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the bench's server did not start (it said {line!r})")
        self.url = f"http://127.0.0.1:{int(line)}"

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _measure(
    sides: dict[str, Any], streams: list[LiveStream], mode: str, repeat: int, loop: Any, firsts: dict[str, list[Run]]
) -> dict[str, float]:
    """Seconds of CPU for all ``streams``, best of ``repeat`` rounds (the sides interleaved), per side; each
    request's Run also goes to ``firsts`` (its time to first event)."""
    cpu = {k: float("inf") for k in sides}
    for _ in range(repeat):
        for key, side in sides.items():
            gc.collect()
            gc.disable()
            try:
                total = 0.0
                for s in streams:
                    run = run_sync(side, s.name) if mode == "sync" else loop.run_until_complete(run_async(side, s.name))
                    total += run.cpu
                    firsts[key].append(run)
            finally:
                gc.enable()
            cpu[key] = min(cpu[key], total)
    return cpu


def _close_sides(sides: Iterable[Any], loop: asyncio.AbstractEventLoop) -> None:
    """Each side's sync and async clients closed (the async ones on ``loop``)."""
    for side in sides:
        side.close()
        loop.run_until_complete(side.aclose())


def _stop(loop: asyncio.AbstractEventLoop, server: ServerProcess) -> None:
    """The end of a run: ``loop``'s async generators finished and the loop closed, the server stopped."""
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    server.stop()


#: Repeats of the long case at least (quick or not): its runs take ~10 ms a side, and best of 3 moved its ratios by
#: +-0.1 from one run of the bench to the next
LONG_REPEAT = 9


def run(
    quick: bool = False, pace_us: float = DEFAULT_PACE_US, providers: tuple[str, ...] = PROVIDERS
) -> list[dict[str, Any]]:
    """The rows: per provider, mode and case the CPU figures; per provider and mode the times to first event."""
    repeat = 3 if quick else 7
    streams = live_streams(pace_us)
    server = ServerProcess(pace_us)
    rows: list[dict[str, Any]] = []
    loop = asyncio.new_event_loop()
    try:
        for provider in providers:
            sides: dict[str, Any] = {
                "floor": Floor(server.url, provider),
                "agentmsg": AgentmsgSide(server.url, provider),
            }
            official = official_side(provider, server.url)
            if isinstance(official, str):
                rows.append({"provider": provider, "official": official})
            else:
                sides["official"] = official
            bare = BareSocket(server.url)
            mine = [s for s in streams.values() if s.provider == provider]
            for mode in ("sync", "async"):
                for s in mine:  # equal work, and every connection warm
                    if s.case == "paced":
                        continue  # (the long stream, paced)
                    runs = {
                        k: run_sync(side, s.name, keep=True)
                        if mode == "sync"
                        else loop.run_until_complete(run_async(side, s.name, keep=True))
                        for k, side in sides.items()
                    }
                    check(provider, s, mode, runs, sides)
                timed = {**sides, "socket": bare}
                firsts: dict[str, list[Run]] = {k: [] for k in timed}
                for case in CASES:
                    chosen = [s for s in mine if s.case == case]
                    # (a long run is short: best of more repeats, so that one row is not one noisy round's)
                    cpu = _measure(
                        timed, chosen, mode, max(repeat, LONG_REPEAT) if case == "long" else repeat, loop, firsts
                    )
                    chunks = sum(s.payloads for s in chosen)
                    per = chunks if case != "recorded" else len(chosen)
                    row: dict[str, Any] = {
                        "provider": provider,
                        "case": case,
                        "mode": mode,
                        "replies": len(chosen),
                        "chunks": chunks,
                        "unit": "µs/chunk" if case != "recorded" else "µs/reply",
                        "pace_us": chosen[0].pace_us,
                    }
                    for key, t in cpu.items():
                        row[key] = t / per * 1e6
                    row["vs_floor"] = cpu["agentmsg"] / cpu["floor"]
                    if "official" in cpu:
                        row["official_over_agentmsg"] = cpu["official"] / cpu["agentmsg"]
                        row["official_version"] = sides["official"].version
                    rows.append(row)
                ttfe: dict[str, Any] = {"provider": provider, "mode": mode, "ttfe": True}
                for key, got in firsts.items():
                    if key == "socket":
                        continue
                    ttfe[f"{key}_best_ms"] = min(r.ttfe for r in got) * 1e3
                    ttfe[f"{key}_median_ms"] = statistics.median(r.ttfe for r in got) * 1e3
                    ttfe[f"{key}_cpu_ms"] = min(r.cpu_first for r in got) * 1e3
                rows.append(ttfe)
            _close_sides((*sides.values(), bare), loop)
    finally:
        _stop(loop, server)
    return rows


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None or value != value else format(value, spec)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _ceiling(r: dict[str, Any]) -> float:
    """The most official/agentmsg can be: official/floor (agentmsg does at least the floor's work)."""
    return float(r["official"] / r["floor"])


def _out_of_reach(r: dict[str, Any]) -> bool:
    """A paced or recorded row whose ceiling is under the target (see the module's notes): not judged."""
    return r["case"] != "long" and _ceiling(r) < TARGET_VS_OFFICIAL


def _row_verdicts(r: dict[str, Any]) -> list[str]:
    """A row's verdicts as its table prints them: x floor, then off/am where the row has an official side."""
    verdicts = [_verdict(r["vs_floor"] <= TARGET_VS_FLOOR)]
    if "official_over_agentmsg" in r:
        verdicts.append(_official_verdict(r))
    return verdicts


def _official_verdict(r: dict[str, Any]) -> str:
    if r["provider"] not in JUDGED_VS_OFFICIAL:
        return "(not judged)"
    if _out_of_reach(r):
        return f"out of reach (ceiling {_ceiling(r):.1f})"
    return _verdict(r["official_over_agentmsg"] >= TARGET_VS_OFFICIAL)


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target of each row: what it is about, the measured ratio, the target, met (None: shown, not judged) and,
    for a row the target is out of reach of, the verdict to show."""
    out = []
    for r in rows:
        if "case" not in r:
            continue
        name = f"{r['provider']} {r['case']} {r['mode']}"
        what = "Ir" if r.get("measure") == "instructions" else "CPU"
        out.append(
            {
                "row": f"{name}: agentmsg {what} / floor",
                "value": r["vs_floor"],
                "target": f"<= {TARGET_VS_FLOOR:g}",
                "met": r["vs_floor"] <= TARGET_VS_FLOOR,
            }
        )
        if "official_over_agentmsg" in r:
            judged = r["provider"] in JUDGED_VS_OFFICIAL and not _out_of_reach(r)
            target: dict[str, Any] = {
                "row": f"{name}: official {what} / agentmsg",
                "value": r["official_over_agentmsg"],
                "target": f">= {TARGET_VS_OFFICIAL:g} (ceiling {_ceiling(r):.1f})",
                "met": r["official_over_agentmsg"] >= TARGET_VS_OFFICIAL if judged else None,
            }
            if r["provider"] in JUDGED_VS_OFFICIAL and not judged:
                target["verdict"] = _official_verdict(r)
            out.append(target)
    return out


def print_rows(rows: list[dict[str, Any]]) -> None:
    data = [r for r in rows if "case" in r]
    pace = max((r["pace_us"] for r in data), default=0)
    print(
        "\n== live path: a stream over loopback HTTP -> the reply; client CPU (process time, best of repeats); "
        f"long: ~1,000 chunks back to back, paced: the same {pace:g} µs apart, recorded: the recorded replies =="
    )
    print(
        f"  {'provider':<10} {'case':<8} {'mode':<5} {'chunks':>6} {'unit':<8} {'socket':>7} {'floor':>8} {'agentmsg':>9}"
        f" {'official':>9} {'x floor':>8} {'off/am':>7} {'ceiling':>7}  targets: x floor <= {TARGET_VS_FLOOR},"
        f" off/am >= {TARGET_VS_OFFICIAL:g} (ceiling: off/floor, the most off/am can be)"
    )
    for r in data:
        verdicts = _row_verdicts(r)
        print(
            f"  {r['provider']:<10} {r['case']:<8} {r['mode']:<5} {r['chunks']:>6} {r['unit']:<8}"
            f" {_fmt(r.get('socket')):>7} {_fmt(r['floor']):>8}"
            f" {_fmt(r['agentmsg']):>9} {_fmt(r.get('official')):>9} {_fmt(r['vs_floor']):>8}"
            f" {_fmt(r.get('official_over_agentmsg'), '.1f'):>7}"
            f" {_fmt(_ceiling(r) if 'official' in r else None, '.1f'):>7}  {', '.join(verdicts)}"
        )
    for r in rows:
        if "official" in r and "case" not in r:
            print(f"  {r['provider']}: no official row: {r['official']}")
    versions = sorted({r["official_version"] for r in data if "official_version" in r})
    print(f"  official helpers: {', '.join(versions)}; the 5x target names {', '.join(JUDGED_VS_OFFICIAL)}")
    print(
        "  socket: a reference, not a side: the same stream read with a bare socket (no HTTP parsing, no JSON): what"
        " the reads and wake-ups alone cost this machine; not judged"
    )
    firsts = [r for r in rows if r.get("ttfe")]
    if firsts:
        print("  time to first event, ms (wall: best / median over every request of the rows above; CPU: best):")
        for r in firsts:
            cells = [
                f"{side} {_fmt(r[f'{side}_best_ms'], '.2f')} / {_fmt(r[f'{side}_median_ms'], '.2f')}"
                f" (CPU {_fmt(r[f'{side}_cpu_ms'], '.2f')})"
                for side in ("floor", "agentmsg", "official")
                if f"{side}_best_ms" in r
            ]
            print(f"    {r['provider']:<10} {r['mode']:<5} " + "; ".join(cells))


# ---- where agentmsg's CPU goes (--profile) ------------------------------------------------------------------


def _parts(
    provider: str, stream: LiveStream, http: httpx.Client, url: str, body: bytes
) -> dict[str, Callable[[], Any]]:
    """The pieces of agentmsg's sync live path, each alone: the HTTP read, the parser, the reducer (fed one event
    at a time, as the client feeds them, and the whole body at once, as bench_streams' rows do)."""
    from agentmsg import Reducer, reduce_events

    entry = get(provider)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}

    def http_only() -> None:
        with http.stream("POST", url, content=body, headers=headers) as response:
            for _ in response.iter_raw():
                pass

    def parse_only() -> None:
        parser = entry.StreamParser()
        for event in stream.events:
            parser.feed(event)
        parser.close()

    def parse_reduce() -> None:
        parser, reducer = entry.StreamParser(), Reducer()
        for event in stream.events:
            events = parser.feed(event)
            if events:
                reducer.feed_many(events, trusted=True)
        reducer.feed_many(parser.close(), trusted=True)
        reducer.finish()

    def whole_body() -> None:
        reduce_events(entry.parse_stream(stream.body), trusted=True)

    return {
        "HTTP read (httpx iter_raw)": http_only,
        "parser.feed": parse_only,
        "parser + reducer": parse_reduce,
        "parser + reducer, the whole body at once": whole_body,
    }


#: Where a function's self time goes in the profile: the first of these found in its file's path.
AREAS = (
    ("agentmsg/clients", "agentmsg client (clients/)"),
    ("agentmsg/providers", "agentmsg provider parser and builder (providers/)"),
    ("agentmsg/_wire", "agentmsg SSE framing (_wire/)"),
    ("agentmsg/events", "agentmsg reducer (events/)"),
    ("agentmsg", "agentmsg, other"),
    ("asyncio", "asyncio (tasks, futures, the loop)"),
    ("h11", "HTTP: h11, httpcore, httpx"),
    ("httpcore", "HTTP: h11, httpcore, httpx"),
    ("httpx", "HTTP: h11, httpcore, httpx"),
    ("anyio", "HTTP: h11, httpcore, httpx"),
    ("bench_live", "the bench's loop"),
    ("contextlib", "the bench's loop"),
)


def _area(file: str) -> str | None:
    path = file.replace("\\", "/")
    return next((name for key, name in AREAS if key in path), None)


def _print_profile(stats: dict[Any, Any], measured: float, chunks: int, mode: str, top: int) -> None:
    """Self time by area (a built-in's time goes to its callers' areas, in proportion) and the top agentmsg
    functions, each as its share of the measured CPU per chunk."""
    total = sum(v[2] for v in stats.values())
    areas: dict[str, float] = {}
    for (file, _line, _func), (_cc, _nc, tottime, _cum, callers) in stats.items():
        area = _area(file)
        if area is not None:
            areas[area] = areas.get(area, 0.0) + tottime
            continue
        spread = sum(c[2] for c in callers.values()) or 1.0  # a built-in: to its callers' areas
        for (cfile, _cl, _cf), c in callers.items():
            name = _area(cfile) or "other (sockets, selectors, builtins)"
            areas[name] = areas.get(name, 0.0) + tottime * c[2] / spread
    print(f"  cProfile, {mode}: self time by area, as µs of the {measured:.1f} µs per chunk measured")
    for name, t in sorted(areas.items(), key=lambda kv: kv[1], reverse=True):
        print(f"    {t / total * measured:6.2f} µs  {t / total:5.1%}  {name}")
    ours = [(k, v) for k, v in stats.items() if "agentmsg" in k[0]]
    print(f"  cProfile, {mode}: agentmsg's top functions by self time")
    for (file, line, func), (_cc, ncalls, tottime, _cum, _callers) in sorted(ours, key=lambda kv: -kv[1][2])[:top]:
        where = f"{file.split('agentmsg/')[-1]}:{line} {func}"
        print(f"    {tottime / total * measured:6.2f} µs  {ncalls / chunks:5.2f} calls/chunk  {where}")


def profile(providers: tuple[str, ...], top: int = 15) -> None:
    """Where agentmsg's CPU per chunk goes on the long stream, sync and async: the pieces timed alone (HTTP read,
    parser, reducer; the client's own share is what is left), then cProfile's top functions by self time, each
    given as its share of the measured CPU per chunk (cProfile adds a cost to every call: read them as shares)."""
    import cProfile
    import pstats

    streams = live_streams()
    server = ServerProcess(0.0)
    loop = asyncio.new_event_loop()
    try:
        for provider in providers:
            stream = streams[f"bench-{provider}-long"]
            chunks = stream.payloads
            floor, ours = Floor(server.url, provider), AgentmsgSide(server.url, provider)
            url, body = floor._request(stream.name)
            parts = _parts(provider, stream, floor.http, url, body)
            clock = time.process_time

            def best(fn: Callable[[], Any], repeat: int = 15) -> float:
                fn()
                times = []
                for _ in range(repeat):
                    gc.collect()
                    gc.disable()
                    t = clock()
                    fn()
                    times.append(clock() - t)
                    gc.enable()
                return min(times) / chunks * 1e6

            figures = {name: best(fn) for name, fn in parts.items()}
            figures["floor (HTTP + orjson.loads)"] = best(lambda: run_sync(floor, stream.name))
            figures["agentmsg Client.stream"] = best(lambda: run_sync(ours, stream.name))
            figures["agentmsg AsyncClient.stream"] = best(lambda: loop.run_until_complete(run_async(ours, stream.name)))
            figures["floor async"] = best(lambda: loop.run_until_complete(run_async(floor, stream.name)))
            sync_rest = (
                figures["agentmsg Client.stream"] - figures["HTTP read (httpx iter_raw)"] - figures["parser + reducer"]
            )
            print(f"\n== {provider}: the long stream ({chunks} chunks), CPU µs per chunk, best of 15 ==")
            for name, value in figures.items():
                print(f"  {name:<40} {value:8.2f}")
            print(
                f"  {'reducer (parser + reducer - parser)':<40} {figures['parser + reducer'] - figures['parser.feed']:8.2f}"
            )
            print(f"  {'client, sync (total - HTTP - parse/reduce)':<40} {sync_rest:8.2f}")
            print(
                f"  {'async client over sync client':<40}"
                f" {figures['agentmsg AsyncClient.stream'] - figures['agentmsg Client.stream']:8.2f}"
            )
            measured = {"sync": figures["agentmsg Client.stream"], "async": figures["agentmsg AsyncClient.stream"]}
            for mode in ("sync", "async"):
                prof = cProfile.Profile()
                runs = 20
                prof.enable()
                for _ in range(runs):
                    if mode == "sync":
                        run_sync(ours, stream.name)
                    else:
                        loop.run_until_complete(run_async(ours, stream.name))
                prof.disable()
                stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
                _print_profile(stats, measured[mode], runs * chunks, mode, top)
            _close_sides((floor, ours), loop)
    finally:
        _stop(loop, server)


# ---- instruction counts (--instructions) --------------------------------------------------------------------

#: Rounds of the recorded replies counted per side, after the warm-up round (the long stream: one run): an
#: instruction count needs no best-of-repeats, only enough replies that each reply's share is the reply's own
INSTRUCTION_ROUNDS = 2


def _side(key: str, provider: str, url: str) -> Any:
    if key == "floor":
        return Floor(url, provider)
    if key == "agentmsg":
        return AgentmsgSide(url, provider)
    return official_side(provider, url)


def instructions_child(provider: str, mode: str, keys: list[str]) -> None:
    """Under callgrind (bench/_callgrind.py): the server in its own process (not under valgrind), every side
    built, a warm-up round (every recorded reply once, every side, with the equal-work check of the CPU rows; not
    the long stream: the official helpers' run of it is most of the child's time, and its first chunks' one-off
    costs are spread over ~1,000), then per side two measured phases: the recorded replies
    ``INSTRUCTION_ROUNDS`` times, the long stream once."""
    import _callgrind

    streams = [s for s in live_streams(0.0).values() if s.provider == provider and s.case == "recorded"]
    recorded_names = [s.name for s in streams]
    long_name = f"bench-{provider}-long"
    server = ServerProcess(0.0)
    loop = asyncio.new_event_loop()
    try:
        sides = {key: _side(key, provider, server.url) for key in keys}
        if any(isinstance(side, str) for side in sides.values()):
            raise SystemExit(f"{provider}: no official side: {sides['official']}")

        def one(side: Any, name: str, keep: bool = False) -> Run:
            if mode == "sync":
                return run_sync(side, name, keep)
            return loop.run_until_complete(run_async(side, name, keep))

        for s in streams:
            check(provider, s, mode, {k: one(side, s.name, keep=True) for k, side in sides.items()}, sides)
        for side in sides.values():

            def replies(side: Any = side) -> None:
                for _ in range(INSTRUCTION_ROUNDS):
                    for name in recorded_names:
                        one(side, name)

            _callgrind.measured(replies)
            _callgrind.measured(lambda side=side: one(side, long_name))
        _close_sides(sides.values(), loop)
    finally:
        _stop(loop, server)


def instructions(providers: tuple[str, ...] = PROVIDERS) -> list[dict[str, Any]]:
    """Instructions per reply (the recorded replies) and per chunk (the long stream) of every side, per provider
    and mode: one valgrind run per provider and mode (every side in it), the runs in a thread pool. [] without
    valgrind."""
    import _callgrind

    if not _callgrind.available():
        return []
    streams = live_streams(0.0)
    jobs: list[tuple[str, str, tuple[str, ...]]] = []
    versions: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for provider in providers:
        official = official_side(provider, "http://127.0.0.1:9")  # installed? (it connects to nothing)
        keys: tuple[str, ...] = ("floor", "agentmsg")
        if isinstance(official, str):
            rows.append({"provider": provider, "official": official, "measure": "instructions"})
        else:
            keys += ("official",)
            versions[provider] = official.version
            official.close()
            asyncio.run(official.aclose())
        jobs += [(provider, mode, keys) for mode in ("sync", "async")]

    def counter(job: tuple[str, str, tuple[str, ...]]) -> list[float]:
        provider, mode, keys = job
        args = [__file__, "--instructions-child", provider, mode, *keys]
        return _callgrind.count(args, phases=2 * len(keys))

    counts = _callgrind.count_all(jobs, counter)
    for (provider, mode, keys), got in counts.items():
        mine = [s for s in streams.values() if s.provider == provider]
        replies = sum(1 for s in mine if s.case == "recorded") * INSTRUCTION_ROUNDS
        chunks = streams[f"bench-{provider}-long"].payloads
        per = {"recorded": replies, "long": chunks}
        for phase, case in enumerate(("recorded", "long")):
            row: dict[str, Any] = {
                "provider": provider,
                "case": case,
                "mode": mode,
                "measure": "instructions",
                "replies": replies if case == "recorded" else 1,
                "chunks": chunks if case == "long" else sum(s.payloads for s in mine if s.case == "recorded"),
                "unit": "Ir/chunk" if case == "long" else "Ir/reply",
            }
            for k, key in enumerate(keys):
                row[key] = got[2 * k + phase] / per[case]
            row["vs_floor"] = row["agentmsg"] / row["floor"]
            if "official" in row:
                row["official_over_agentmsg"] = row["official"] / row["agentmsg"]
                row["official_version"] = versions[provider]
            rows.append(row)
    order = {("long", "sync"): 0, ("long", "async"): 1, ("recorded", "sync"): 2, ("recorded", "async"): 3}
    rows.sort(key=lambda r: (providers.index(r["provider"]), order.get((r.get("case"), r.get("mode")), -1)))
    return rows


def print_instructions(rows: list[dict[str, Any]]) -> None:
    """The instruction rows, as the CPU table (the same targets, judged on instructions)."""
    if not rows:
        print("\n(the live rows' instruction counts need valgrind on PATH: skipped)")
        return
    print(
        "\n== live path: instructions (valgrind callgrind, the measured requests only; the server not counted); "
        f"long: Ir per chunk of the ~1,000-chunk stream, recorded: Ir per reply, {INSTRUCTION_ROUNDS} rounds =="
    )
    print(
        f"  {'provider':<16} {'case':<8} {'mode':<5} {'unit':<8} {'floor':>11} {'agentmsg':>11} {'official':>11}"
        f" {'x floor':>8} {'off/am':>7} {'ceiling':>7}  targets on instructions: x floor <= {TARGET_VS_FLOOR},"
        f" off/am >= {TARGET_VS_OFFICIAL:g}"
    )
    for r in rows:
        if "case" not in r:
            print(f"  {r['provider']}: no official row: {r['official']}")
            continue
        verdicts = _row_verdicts(r)
        print(
            f"  {r['provider']:<16} {r['case']:<8} {r['mode']:<5} {r['unit']:<8} {_fmt(r['floor'], ',.0f'):>11}"
            f" {_fmt(r['agentmsg'], ',.0f'):>11} {_fmt(r.get('official'), ',.0f'):>11} {_fmt(r['vs_floor']):>8}"
            f" {_fmt(r.get('official_over_agentmsg'), '.1f'):>7}"
            f" {_fmt(_ceiling(r) if 'official' in r else None, '.1f'):>7}  {', '.join(verdicts)}"
        )


#: run.py's table of targets for the instruction rows: the same targets, the rows say they are on instructions
instruction_targets = targets


if __name__ == "__main__":
    if sys.argv[1:2] == ["--instructions-child"]:
        instructions_child(sys.argv[2], sys.argv[3], sys.argv[4:])
        raise SystemExit(0)
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--pace-us", type=float, default=DEFAULT_PACE_US, help="the paced case's wait between events")
    parser.add_argument("--provider", action="append", choices=PROVIDERS, help="only this provider (repeatable)")
    parser.add_argument("--profile", action="store_true", help="where agentmsg's CPU per chunk goes, not the rows")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions per reply and chunk (valgrind; minutes)"
    )
    args = parser.parse_args()
    chosen = tuple(args.provider or PROVIDERS)
    if args.profile:
        profile(chosen)
    else:
        print_rows(run(args.quick, args.pace_us, chosen))
        if args.instructions:
            print_instructions(instructions(chosen))
