"""The command line is built on the public API only, and names no provider: what it knows of providers (their
names, API-key variables, stream parser flags) comes from the registry. Also the public names it uses that no
other test reaches directly (``agentmsg.read_records``, ``agentmsg.events.sniff_format``, the CUSTOM event
names, ``agentmsg.providers.is_sse_body`` / ``without_http_heads``)."""

from __future__ import annotations

import ast
import importlib
import io
import json
from pathlib import Path

import pytest

import agentmsg
from agentmsg import Problem, TextBlock, read_records, reduce_events
from agentmsg.cli import main
from agentmsg.events import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT, sniff_format
from agentmsg.providers import get, is_sse_body, providers, without_http_heads

CLI = Path(agentmsg.__file__).parent / "cli"

#: The modules the CLI may import from: the package faces (their ``__all__``), and its own modules.
FACES = {
    "agentmsg",
    "agentmsg.blocks",
    "agentmsg.clients",
    "agentmsg.context",
    "agentmsg.conversation",
    "agentmsg.errors",
    "agentmsg.events",
    "agentmsg.message",
    "agentmsg.providers",
    "agentmsg.ui",
    "agentmsg.web",
}


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names imported from it) of every import in a file, at any depth (function bodies too);
    relative imports resolved against ``agentmsg.cli``."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = "agentmsg.cli".rsplit(".", node.level - 1)[0]
                module = f"{base}.{module}" if module else base
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def _private(module: str) -> bool:
    """A dotted path with a private part (``_io``, ``_wire``; not ``__future__`` or another dunder)."""
    return any(part.startswith("_") and not part.endswith("__") for part in module.split("."))


def test_the_cli_imports_only_public_names() -> None:
    """Every import of every CLI module is a public name of a package face (``agentmsg``, ``agentmsg.events``,
    ``agentmsg.providers`` ...: in its ``__all__``), or the CLI's own module; none reaches a private module
    (a path part starting with ``_``) or ``agentmsg_models``, at the top of a module or inside a function."""
    wrong: list[str] = []
    files = sorted(CLI.glob("*.py"))
    assert len(files) >= 8  # every command module is looked at
    for path in files:
        for line, module, names in _imports(path):
            where = f"{path.name}:{line}: {module}"
            root = module.split(".")[0]
            if root == "agentmsg_models":
                wrong.append(f"{where}: generated models (take them from agentmsg)")
            if root != "agentmsg":
                if _private(module):
                    wrong.append(f"{where}: a private module")
                continue
            if module == "agentmsg.cli" or module.startswith("agentmsg.cli."):
                continue  # the CLI's own modules (agentmsg.cli._io: its I/O helpers)
            if module not in FACES:
                why = "a private module" if _private(module) else f"not a package face ({', '.join(sorted(FACES))})"
                wrong.append(f"{where}: {why}")
                continue
            public = getattr(importlib.import_module(module), "__all__", None)
            for name in names:
                if (name not in public) if public is not None else name.startswith("_"):
                    wrong.append(f"{where}: {name} is not in its __all__")
    assert wrong == []


def test_the_pin_sees_a_private_import() -> None:
    """The walk above finds imports inside functions and tells private paths from dunders."""
    assert _private("agentmsg._wire.sse") and _private("agentmsg.providers._response.builder")
    assert not _private("__future__") and not _private("agentmsg.events")
    found = _imports(CLI / "chat.py")
    assert any(module == "agentmsg.clients" and "Client" in names for _, module, names in found)  # (in run())


def test_the_cli_reads_ahead_with_the_wires_stream() -> None:
    """``agentmsg events`` told messages from events with ``cli/_io.Peeked``, a copy of ``_wire/peek.Peeked``
    (which ``agentmsg.check`` uses) made because the CLI takes public names only: the one class is public as
    ``agentmsg.Peeked``, and the CLI takes it from there."""
    from agentmsg._wire.peek import Peeked
    from agentmsg.cli import _io, events

    assert agentmsg.Peeked is Peeked and vars(events)["Peeked"] is Peeked  # (imported, not re-exported)
    assert not hasattr(_io, "Peeked")


def _vendor_words() -> set[str]:
    """What names a provider, from the registry: each registry name and its parts, the first word of its title,
    its API-key variables and the provider family of its replies."""
    words: set[str] = set()
    for provider in providers():
        spec = provider.spec
        words.update(part for part in spec.name.split("-") if part != "compatible")
        words.add(spec.title.split()[0])
        words.update(spec.env)
        words.update(spec.families)
    return {w.lower() for w in words}


def test_the_cli_names_no_provider() -> None:
    """A new provider is a registry entry: the CLI's source names none (its help lists them from the registry)."""
    words = _vendor_words()
    assert {"openai", "anthropic", "gemini", "dashscope", "deepseek"} <= words
    named = [
        f"{path.name}:{number}: {word}"
        for path in sorted(CLI.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for word in sorted(words)
        if word in line.lower()
    ]
    assert named == []


def test_chat_help_lists_every_key_variable_of_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # (a name wrapped at its hyphen)
    for provider in providers():
        spec = provider.spec
        said = f"{' or '.join(spec.env)} ("
        assert said in text, spec.name
        names = text.split(said, 1)[1].split(")", 1)[0].split(", ")
        assert spec.name in names, spec.name


def _flags() -> dict[str, list[str]]:
    """Each stream flag of the registry, with the providers that offer it."""
    found: dict[str, list[str]] = {}
    for provider in providers():
        for flag in provider.spec.stream_flags:
            found.setdefault(flag.flag, []).append(provider.spec.name)
    return found


def test_parse_offers_the_stream_flags_of_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    flags = _flags()
    assert flags  # (DashScope's --incremental / --cumulative)
    assert main(["parse", "--help"]) == 0
    text = capsys.readouterr().out
    for provider in providers():
        for flag in provider.spec.stream_flags:
            assert flag.flag in text and " ".join(flag.help.split()) in " ".join(text.split()), flag


def test_a_stream_flag_the_provider_does_not_offer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Said before the file is read (it does not exist here), naming the providers the flag is for."""
    for flag, offering in _flags().items():
        other = next(p.spec.name for p in providers() if p.spec.name not in offering)
        assert main(["parse", "--provider", other, "--stream", flag, str(tmp_path / "missing")]) == 2
        err = capsys.readouterr().err
        assert err == f"agentmsg: {flag} is for --provider {' or '.join(offering)}, not {other}\n"


def _native_chunk(text: str, finish: str = "null") -> str:
    choice = {"message": {"role": "assistant", "content": text}, "finish_reason": finish}
    return "data:" + json.dumps({"output": {"choices": [choice]}, "request_id": "r1"}) + "\n\n"


def test_dashscope_stream_flags_set_its_parser_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DashScope native's --incremental / --cumulative (from its spec) reach its stream parser: a cumulative
    stream (each chunk the text so far) read as each flag says, as ``parse_stream(incremental=...)`` reads it."""
    body = tmp_path / "cumulative.sse"
    body.write_text(_native_chunk("Hel") + _native_chunk("Hello") + _native_chunk("Hello!", "stop"))
    got = {}
    for flag in ("", "--incremental", "--cumulative"):
        assert main(["parse", "--provider", "dashscope", "--stream", *([flag] if flag else []), str(body)]) == 0
        got[flag] = agentmsg.Msg.from_json(capsys.readouterr().out).content
    assert got == {
        "": [TextBlock(text="Hello!")],
        "--incremental": [TextBlock(text="HelHelloHello!")],
        "--cumulative": [TextBlock(text="Hello!")],
    }
    for offered in get("dashscope").spec.stream_flags:
        events = get("dashscope").parse_stream(body.read_bytes(), **{offered.option: offered.value})
        assert reduce_events(list(events))[0].content == got[offered.flag]


def test_the_custom_event_names_are_the_wire_names() -> None:
    """The names the provider parsers send their errors, problems and notes under (docs/streams.md)."""
    assert (ERROR_EVENT, PROBLEM_EVENT, NOT_KEPT_EVENT) == ("agentmsg.error", "agentmsg.problem", "agentmsg.not-kept")
    body = b'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: {nope\n\n'
    names = [e.get("name") for e in get("openai").parse_stream(body) if e["type"] == "CUSTOM"]
    assert PROBLEM_EVENT in names and ERROR_EVENT in names  # a payload not read; the stream cut (no finish)


def test_sniff_format_tells_the_formats_read_events_reads() -> None:
    assert sniff_format(b"data: {}\n\n") == "sse"
    assert sniff_format(b"\xef\xbb\xbf\n  : a comment\n") == "sse"
    assert sniff_format(b'{"type": "AGENT_START"}\n') == "jsonl"
    assert sniff_format(b'[{"type": "AGENT_START"}]') == "values"
    assert sniff_format(b'{\n  "type": "AGENT_START"\n}\n') == "values"  # pretty-printed, one after another
    assert sniff_format(b"a log line\n") == "jsonl"
    for undecided in (b"", b"  \n", b"da", b"{"):
        assert sniff_format(undecided) is None, undecided
    assert sniff_format(b" " * 70_000 + b"data: {}\n\n") == "jsonl"  # (blanks beyond 64 KiB: no SSE)


def test_is_sse_body_and_without_http_heads() -> None:
    """A provider reply saved to a file: a stream or a whole response, with or without its ``curl -i`` head."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
    assert is_sse_body(b"data: {}\n\n") and is_sse_body(b'error: {"error": {"message": "x"}}\n\n')
    assert is_sse_body(head + b"data: {}\n\n")
    assert not is_sse_body(b'{"id": "r"}') and not is_sse_body(head + b'{"id": "r"}')
    assert without_http_heads(b'{"id": "r"}') == (b'{"id": "r"}', [])
    body, notes = without_http_heads(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{}")
    assert body == b"{}" and len(notes) == 1 and "HTTP/1.1 200 OK" in notes[0]


def test_read_records_reads_a_value_an_array_and_json_lines() -> None:
    """The records reader the CLI's validate, events and format use: its fields by name, bytes or a file."""
    (one,) = read_records(b'\xef\xbb\xbf{"a": 1}')
    assert (one.pointer, one.value, one.problem, one.line) == ("", {"a": 1}, None, 1)
    assert [(r.pointer, r.value, r.line) for r in read_records(b"[1, 2]")] == [("/0", 1, 1), ("/1", 2, 1)]
    assert [(r.pointer, r.line) for r in read_records(b"[\n1,\n2\n]\n")] == [("/0", 2), ("/1", 3)]
    records = list(read_records(io.BytesIO(b'{"a": 1}\n\n{"a": \n{"a": 3}\n')))
    assert [(r.pointer, r.value, r.line) for r in records] == [
        ("/0", {"a": 1}, 1),
        ("/1", None, 3),
        ("/2", {"a": 3}, 4),
    ]
    problem = records[1].problem
    assert isinstance(problem, Problem) and problem.rule == "json" and "line 3 column" in problem.message
    (nothing,) = read_records(b"\x00\x01")
    assert nothing.problem is not None and nothing.problem.message == "not valid JSON: it starts with b'\\x00'"


def test_read_records_keeps_to_the_limits() -> None:
    """A record beyond ``limits.max_bytes`` is said (``max-bytes``) and the next one still read."""
    saved = agentmsg.limits.max_bytes
    agentmsg.limits.max_bytes = 64
    try:
        records = list(read_records(b'{"a": 1}\n{"b": "' + b"x" * 100 + b'"}\n{"c": 3}\n'))
    finally:
        agentmsg.limits.max_bytes = saved
    assert [(r.pointer, r.value) for r in records] == [("/0", {"a": 1}), ("/1", None), ("/2", {"c": 3})]
    assert records[1].problem is not None and records[1].problem.rule == "max-bytes"


@pytest.mark.parametrize("command", ["format", "parse", "count", "trim", "chat"])
def test_every_provider_option_takes_a_provider_registered_after_the_cli_was_imported(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--provider`` takes the registry's names as they are when the command runs: a provider registered after the
    CLI's modules were imported (here one defined in this test) is offered (each took a copy of the names at import,
    so the registry and the CLI could disagree)."""
    import attrs

    from agentmsg import providers as registry
    from agentmsg.providers.base import Entry

    importlib.import_module(f"agentmsg.cli.{command}")  # (imported first: the names it saw then were all it took)
    base = get("openai")
    assert isinstance(base, Entry)
    spec = attrs.evolve(base.spec, name="acme-late", title="Acme")
    entry = Entry(spec, base.module.format_request, base.module.Reader, "agentmsg.providers.openai")
    monkeypatch.setitem(registry._load(), "acme-late", entry)
    capsys.readouterr()
    assert main([command, "--help"]) == 0
    assert ",acme-late}" in capsys.readouterr().out  # (the --provider choices)
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([agentmsg.UserMessage("Hi").to_dict()]))
    if command in ("format", "count"):
        assert main([command, "--provider", "acme-late", str(conversation)]) == 0
