"""What a run of the command line imports: the module of the command it runs, not every command's (CI runs
``agentmsg validate FILE`` once per file, scripts call the CLI many times: each import is start-up time). The
structure is checked, in a fresh interpreter, through ``sys.modules``; no time is measured."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import pytest

from agentmsg.providers import MODULES

COMMAND_MODULES = {
    f"agentmsg.cli.{module}"
    for module in ("validate", "schema", "events", "format", "count", "trim", "parse", "chat", "serve")
}
#: what validating a message needs none of: the HTTP client, the web endpoint and viewer, the UI protocols, token
#: counts, the providers (a conversation is formatted for one; a message or events file is not)
HEAVY = {
    "httpx",
    "agentmsg.clients",
    "agentmsg.web",
    "agentmsg.ui",
    "agentmsg.ui.agui",
    "agentmsg.ui.ai_sdk",
    "agentmsg.context",
    "agentmsg.providers",
}

_RUN = """
import json, sys
from agentmsg.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # (never: main returns its exit status)
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _ran(*argv: str, env: Mapping[str, str | None] | None = None) -> tuple[int, str, set[str]]:
    """The exit status and stdout of ``agentmsg ARGV`` run in a fresh interpreter (the environment changed by
    ``env``: None unsets), and every module it imported."""
    changed = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, timeout=120, check=False, env=changed
    )
    report = json.loads(done.stderr.splitlines()[-1])
    return report["code"], done.stdout, set(report["modules"])


def _imported(*argv: str) -> tuple[int, set[str]]:
    """The exit status of ``agentmsg ARGV`` run in a fresh interpreter, and every module it imported."""
    code, _, modules = _ran(*argv)
    return code, modules


#: the message the files of these runs hold (one; a conversation of it)
MESSAGE: Final[dict[str, object]] = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
}


@pytest.fixture(scope="module")
def msg_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "msg.json"
    path.write_text(json.dumps(MESSAGE), encoding="utf-8")
    return path


#: what ``agentmsg --help`` and ``--version`` need none of either: the JSON parser, the models, the schemas, events
LISTING_ONLY = {"msgspec", "cattrs", "agentmsg._codec.jsontext", "agentmsg._codec.schemas", "agentmsg.events"}


def test_help_imports_no_command_module() -> None:
    code, modules = _imported("--help")
    assert code == 0
    assert modules & COMMAND_MODULES == set()
    assert modules & HEAVY == set()
    assert modules & LISTING_ONLY == set()


def test_version_imports_nothing_of_the_sdk() -> None:
    code, modules = _imported("--version")
    assert code == 0
    assert modules & (COMMAND_MODULES | HEAVY | LISTING_ONLY) == set()


def test_validate_imports_its_own_module_alone(msg_file: Path) -> None:
    code, modules = _imported("validate", str(msg_file))
    assert code == 0
    assert modules & COMMAND_MODULES == {"agentmsg.cli.validate"}
    assert modules & HEAVY == set()


#: what a file of messages needs none of: the event package (the reducer, the emitter, the stream readers) and the
#: message classes (a conversation is decoded into them to be formatted)
EVENTS_AND_MESSAGES = {"agentmsg.events", "agentmsg.events.reducer", "agentmsg.conversation", "agentmsg.message"}


def test_validate_of_a_message_file_imports_no_events_or_message_classes(msg_file: Path) -> None:
    """The file checker imported agentmsg.events (for its SSE sniffer, reducer and two constants) and
    agentmsg.conversation, and the SARIF/JUnit report agentmsg.events (for its cap), whatever the file: a third
    of ``validate FILE``'s start-up (best of 10: 230 -> 160 ms wall)."""
    code, out, modules = _ran("validate", str(msg_file))
    assert (code, out) == (0, "")
    assert modules & EVENTS_AND_MESSAGES == set()


#: an event stream cut inside its reply, as JSON Lines; the same as SSE; a conversation with a tool call unanswered
_EVENT = {"type": "AGENT_START", "id": "e1", "createdAt": "2026-11-22T10:34:38Z", "replyId": "r1", "name": "F"}
_CALL = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
_CONVERSATION: list[dict[str, object]] = [
    {"id": "a", "name": None, "role": "ASSISTANT", "content": [_CALL], "metadata": {}}
]
ACROSS = {
    "cut.jsonl": (json.dumps(_EVENT) + "\n", "[incomplete_stream]"),
    "cut.sse": (f"data: {json.dumps(_EVENT)}\n\n", "[incomplete_stream]"),
    "orphan.json": (json.dumps(_CONVERSATION), "[tool-use-orphan]"),
}


@pytest.mark.parametrize("name", sorted(ACROSS))
def test_validate_imports_what_the_rules_across_a_file_need_when_it_has_them(name: str, tmp_path: Path) -> None:
    """An event stream (JSON Lines or SSE) and a conversation still get the rules across their instances in a
    fresh interpreter, the event package and the message classes imported then (the command's other tests run
    in a child of an interpreter that has imported every command module: a name imported nowhere would pass)."""
    text, rule = ACROSS[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, modules = _ran("validate", str(tmp_path / name))
    assert code == 1 and rule in out, out
    assert ("agentmsg.events" if name.startswith("cut") else "agentmsg.conversation") in modules
    code, out, _ = _ran("validate", "--output-format", "sarif", str(tmp_path / name))
    assert code == 1 and rule.strip("[]") in out, out


def test_validate_still_checks_the_provider_it_is_given(msg_file: Path) -> None:
    """``--provider``'s choices are the registry's, read when the option is given (or listed)."""
    code, modules = _imported("validate", "--provider", "anthropic", str(msg_file))
    assert code == 0 and "agentmsg.providers" in modules
    done = subprocess.run(
        [sys.executable, "-m", "agentmsg", "validate", "--provider", "nope", str(msg_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "argument --provider: invalid choice: 'nope' (choose from 'openai', " in done.stderr


def test_a_command_help_page_imports_that_command_alone() -> None:
    code, modules = _imported("format", "--help")
    assert code == 0
    assert modules & COMMAND_MODULES == {"agentmsg.cli.format"}
    code, modules = _imported("reduce", "--help")  # events.py builds reduce and events both
    assert code == 0
    assert modules & COMMAND_MODULES == {"agentmsg.cli.events"}


def test_the_parser_built_on_demand_is_the_whole_one() -> None:
    """``agentmsg --help`` lists the commands from COMMANDS; a command's parser, built when it is named, is the one
    :func:`build_parser` builds with every command (the same help, in the same place)."""
    from agentmsg.cli import COMMANDS, _parser, build_parser

    assert {f"agentmsg.cli.{module}" for module, _ in COMMANDS.values()} == COMMAND_MODULES
    whole = build_parser()
    lazy, commands = _parser()
    assert lazy.format_help() == whole.format_help()
    every = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    assert list(every.choices) == list(commands.choices) == list(COMMANDS)
    for name in COMMANDS:
        commands.build(name)
        assert commands.choices[name].format_help() == every.choices[name].format_help(), name
    assert lazy.format_help() == whole.format_help()


#: the provider modules (the registry's table, read without importing them: each is imported on its first use;
#: tests/providers/shared/test_contract.py holds the table to the package's files)
PROVIDER_MODULES = {f"agentmsg.providers.{module}" for module in MODULES}


@pytest.mark.parametrize("command", ["format", "validate", "count", "trim"])
def test_a_help_page_lists_the_providers_without_importing_them(command: str) -> None:
    """``--provider``'s choices are the registry's names, from its table: listing them imported every provider
    module (``format --help`` 323 -> 215 ms, best of 10). (``parse --help`` and ``chat --help`` list each
    provider's stream flags and key variables, which are in the modules.)"""
    assert len(PROVIDER_MODULES) > 1  # (the table, read)
    code, modules = _imported(command, "--help")
    assert code == 0
    assert modules & PROVIDER_MODULES == set()


@pytest.mark.parametrize("command", ["format", "count"])
def test_a_command_given_a_provider_imports_its_module_alone(command: str, tmp_path: Path) -> None:
    """``format --provider openai`` imported all five provider modules (the registry loaded whole on the first
    ``get``): it imports the one serving the name."""
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([MESSAGE]), encoding="utf-8")
    code, modules = _imported(command, "--provider", "openai", str(conversation))
    assert code == 0
    assert modules & PROVIDER_MODULES == {"agentmsg.providers.openai"}


#: a whole OpenAI Chat Completions reply
REPLY: Final = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}
DASHSCOPE_STREAM = Path(__file__).parents[1] / "fixtures/providers/dashscope/native_stream_text_docs.sse"


def test_parse_given_a_provider_imports_its_module_alone(tmp_path: Path) -> None:
    """``parse --provider openai`` imported all five provider modules: its parser offers every provider's stream
    flags (DashScope's ``--incremental``), which are in their modules. Its parser is built in two phases (the
    provider read first, then its own flags), so a run imports the one module serving the name; a stream flag
    (of the provider named) still reaches it."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps(REPLY), encoding="utf-8")
    code, out, modules = _ran("parse", "--provider", "openai", str(reply))
    assert code == 0 and json.loads(out)["content"] == [{"type": "text", "text": "hi"}]
    assert modules & PROVIDER_MODULES == {"agentmsg.providers.openai"}
    code, out, modules = _ran("parse", "--provider=dashscope", "--incremental", "--stream", str(DASHSCOPE_STREAM))
    assert code == 0 and json.loads(out)["role"] == "ASSISTANT"
    assert modules & PROVIDER_MODULES == {"agentmsg.providers.dashscope"}


def test_chat_given_a_provider_imports_its_module_alone() -> None:
    """``chat``'s page names every provider's key variables: its parser, built from the provider named, imports
    that provider's module alone (here with no key set: it says so and calls no one)."""
    code, _, modules = _ran("chat", "--provider", "anthropic", "hi", env={"ANTHROPIC_API_KEY": None})
    assert code == 1
    assert modules & PROVIDER_MODULES == {"agentmsg.providers.anthropic"}


def test_a_flag_of_another_provider_is_still_said_naming_it(tmp_path: Path) -> None:
    """A command line the parser of the provider named does not take is parsed by every provider's: another
    provider's flag is said as it was, naming the provider that offers it, and an argument left over (before
    the command too) with the usage line of every provider's flags."""
    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps(REPLY), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "agentmsg", "parse", "--provider", "openai", "--incremental", str(reply)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (2, "agentmsg: --incremental is for --provider dashscope, not openai\n")
    for argv in (
        ["parse", "--provider", "openai", str(reply), "extra"],
        ["--x", "parse", "--provider", "openai", str(reply)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "agentmsg", *argv], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 2 and "[--cumulative | --incremental]" in done.stderr, done.stderr


def test_an_option_abbreviated_is_read_as_every_providers_parser_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--c`` is ambiguous to the parser of every provider (``--choice``, DashScope's ``--cumulative``), but not to
    the parser of a provider without that flag: ``parse --provider openai --c 1`` was taken as ``--choice 1`` by
    that parser on trial, where the parser of every provider refuses it. An abbreviation is read by the parser of
    every provider, whichever provider is named: refused where it is ambiguous there, taken where it is not."""
    from agentmsg.cli import main

    reply = tmp_path / "reply.json"
    reply.write_text(json.dumps(REPLY), encoding="utf-8")
    assert main(["parse", "--provider", "openai", "--c", "0", str(reply)]) == 2
    assert "error: ambiguous option: --c could match --choice, --cumulative" in capsys.readouterr().err
    assert main(["parse", "--provider", "openai", "--cho", "0", str(reply)]) == 0
    assert json.loads(capsys.readouterr().out)["content"] == [{"type": "text", "text": "hi"}]


def test_format_imports_no_http_client(msg_file: Path) -> None:
    """Formatting downloads no media unless allowed: neither httpx nor the cookie jar its client is given is
    imported (http.cookiejar brings urllib.request, http.client and ssl)."""
    code, modules = _imported("format", "--provider", "openai", str(msg_file))
    assert code == 0
    assert modules & {"httpx", "http.cookiejar", "urllib.request", "agentmsg.clients"} == set()


def test_import_agentmsg_leaves_the_file_checker_until_it_is_used() -> None:
    """``agentmsg.check`` and its kin are imported when first used: ``import agentmsg`` (every user's, and every
    CLI command's start) paid for the file checker's kinds and rules (import 171 -> 158 ms when made lazy)."""
    code = (
        "import sys, agentmsg\n"
        "assert 'agentmsg._wire.check' not in sys.modules\n"
        "report = agentmsg.check(b'{}')\n"
        "assert 'agentmsg._wire.check' in sys.modules and type(report).__name__ == 'CheckReport'\n"
        "from agentmsg import Finding, iter_check\n"
        "assert agentmsg.Finding is Finding and callable(iter_check)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
