"""What a user's type checker sees: the public API used as the README and docs show it type-checks under
``mypy --strict`` with precise types, no ``Any`` where the SDK knows the type, and the usual mistakes
flagged (``--warn-unused-ignores``, part of strict, fails a ``type: ignore`` that is not needed). mypy is in
the test extra: this runs against the source tree (``make pytest``) and the installed wheel alike."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy.api", reason="mypy (the test extra) is not installed")

import agentmsg
import agentmsg_models
from tests.conftest import ROOT

# one worker for the module, so that its one mypy run (about 4 s of CPU) is not made again by another worker
pytestmark = pytest.mark.xdist_group("typing")

USER_CODE = """
from __future__ import annotations

from typing import Any, assert_type

from agentmsg import (AssistantMessage, ContentBlock, GenerateReason, Msg, Problem, TextBlock, ThinkingBlock,
                      ToolResultBlock, ToolResultMessage, ToolUseBlock, UserMessage)
import httpx

from agentmsg.clients import AsyncClient, Client
from agentmsg.providers import FormattedRequest, get

reply = AssistantMessage([ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"})])
assert_type(reply.blocks(ToolUseBlock), list[ToolUseBlock])
assert_type(reply.blocks("tool_use"), list[ToolUseBlock])  # as the README shows it
assert_type(reply.blocks("ToolUseBlock"), list[ToolUseBlock])
assert_type(reply.first_block("thinking"), ThinkingBlock | None)
assert_type(reply.first_block("text"), TextBlock | None)
some: str = "text"
assert_type(reply.blocks(some), list[ContentBlock])
name: str = reply.blocks("tool_use")[0].name

# The README's tool result: output given as a string (a TextBlock), a dict or blocks; state as its value.
results = ToolResultMessage([
    ToolResultBlock(id="call_1", name="get_weather", output="sunny"),
    ToolResultBlock(id="call_1", output={"type": "text", "text": "sunny"}, state="success"),
    ToolResultBlock(id="call_1", output=[TextBlock(text="sunny"), "and warm"]),
])
assert_type(results.blocks("tool_result")[0].output, list[ContentBlock])

# The seed's factories and the generate reason at construction (README).
assert_type(ToolResultBlock.error("call_1", "Connection timeout"), ToolResultBlock)
assert_type(ToolResultBlock.text("call_1", "get_weather", [TextBlock(text="sunny")]), ToolResultBlock)
ToolResultBlock.error("call_1")  # type: ignore[call-overload]
ToolResultBlock.error("call_1", "f", "x", name="g")  # type: ignore[call-overload]
assert_type(AssistantMessage("x", generate_reason=GenerateReason.MAX_ITERATIONS).generate_reason, GenerateReason)
AssistantMessage("x", generate_reason=3)  # type: ignore[arg-type]

provider = get("anthropic")
conversation = [UserMessage("What's the weather in Paris?"), reply, results]
assert_type(provider.format_request(conversation, model="claude-sonnet-4-5"), FormattedRequest)
assert_type(provider.parse_response(b"{}"), Msg)
parser = provider.stream_parser()
assert_type(parser.feed(b"data: {}\\n\\n"), list[dict[str, Any]])
assert_type(parser.close(), list[dict[str, Any]])
assert_type(parser.problems, list[Problem])
provider.format_request("What's the weather?", model="m")  # type: ignore[arg-type]
provider.format_request(UserMessage("hi"), model="m")  # type: ignore[arg-type]

client = Client("anthropic", model="claude-sonnet-4-5")
with client.stream(conversation) as stream:
    assert_type(stream.diagnostics, tuple[Problem, ...])
assert_type(client.call(conversation), Msg)
Client("anthropic", modle="claude-sonnet-4-5")  # type: ignore[call-arg]
Client("anthropic", max_retries="3")  # type: ignore[arg-type]
AsyncClient("anthropic", http_client=httpx.Client())  # type: ignore[arg-type]
client.send(conversation)  # type: ignore[arg-type]
client.call(conversation, tool_choice=3)  # type: ignore[arg-type]

# Code written against the names that moved (they warn at run time: tests/clients/test_deprecated.py,
# tests/providers/shared/test_registry.py) still type-checks, as precisely.
from agentmsg.clients import AnthropicClient

assert_type(provider.StreamParser().feed(b"data: {}\\n\\n"), list[dict[str, Any]])
assert_type(AnthropicClient(model="claude-sonnet-4-5").call(conversation), Msg)  # (was Any: the class is made at run time)
"""


# An ASGI app of agentmsg is one to Starlette and FastAPI's types too (their ``ASGIApp``: scope and messages
# are MutableMappings, and a callable taking a plainer ``send`` than theirs is no ASGIApp to mypy).
WEB_CODE = """
from __future__ import annotations

from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentmsg.web import EventEndpoint, viewer_app

events: list[dict[str, object]] = [{"type": "AGENT_START", "id": "e1"}]
endpoint: ASGIApp = EventEndpoint(events)
viewer: ASGIApp = viewer_app(events)
viewer_app(events).routes  # type: ignore[attr-defined]  # an ASGI app, not Any (an unused ignore fails)
Starlette(routes=[Route("/events", EventEndpoint(events)), Mount("/viewer", viewer)])
FastAPI().mount("/events", EventEndpoint(events))


async def per_request(scope: Scope, receive: Receive, send: Send) -> None:  # an endpoint made per request
    body = await Request(scope, receive).body()
    await EventEndpoint([{"type": "AGENT_START", "id": body.decode()}], replay=None)(scope, receive, send)
"""


#: the files of user code mypy checks, by name
SOURCES = {"user_code.py": USER_CODE, "web_code.py": WEB_CODE}


@pytest.fixture(scope="module")
def mypy_strict(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One ``mypy --strict`` run over every file of ``SOURCES`` (once for the module, each test reads its file's
    errors). Its cache is kept in ``.make/`` (make clean removes it), one per Python environment: a cold run
    analyses agentmsg and its dependencies, most of its time (about 4 s of CPU, 9 s on a loaded 2-core machine);
    a warm one reads what did not change (0.25 s), which mypy's incremental mode tells by each file's hash."""
    folder = tmp_path_factory.mktemp("typing")
    for name, source in SOURCES.items():
        (folder / name).write_text(source, encoding="utf-8")
    env = dict(os.environ)
    # The agentmsg this test imports (a source tree on PYTHONPATH, or the install mypy finds by itself).
    roots = {str(Path(m.__file__ or "").resolve().parent.parent) for m in (agentmsg, agentmsg_models)}
    env["MYPYPATH"] = os.pathsep.join(sorted(r for r in roots if "site-packages" not in r))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.11",
            "--cache-dir",
            str(ROOT / ".make" / "mypy-typing" / hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]),
            *SOURCES,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=280,
        check=False,
    )


def test_user_code_sees_precise_types(mypy_strict: subprocess.CompletedProcess[str]) -> None:
    _type_checks(mypy_strict, "user_code.py")


def test_asgi_apps_are_starlette_asgi_apps(mypy_strict: subprocess.CompletedProcess[str]) -> None:
    _type_checks(mypy_strict, "web_code.py")


def _type_checks(done: subprocess.CompletedProcess[str], name: str) -> None:
    """mypy said nothing of ``name``, and ran: every error it gave (exit status 1) is in another file of
    ``SOURCES`` (whose test fails); none is of agentmsg itself, nor did mypy fail (exit status 2)."""
    said = done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if line.startswith(f"{name}:")], said
    assert all(line.split(":", 1)[0] in SOURCES for line in errors), said
    assert done.returncode == 0 or (done.returncode == 1 and errors), said
